package sqlstore

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/latchkit/auth/store"
)

// Passwordless flows and their codes are rows of auth_codes with no user:
// a flow's row counts its wrong codes (attempts), and a code's names its
// flow (flow) and carries the flow's address (email), so that the flows of
// an address and their codes are found through one index, (kind, email).
//
// Locks: using a code locks every flow of its address, in the order of
// their hashes, before it reads the code or writes anything, and adding a
// code locks its flow; neither takes another lock while it waits, so they
// cannot deadlock with each other, and a code is added either before a
// use of its flow, which then deletes it, or after, finding no flow.

// createPasswordless adds a passwordless flow, or a code of a live flow
// with the flow's address.
func (s *Store) createPasswordless(ctx context.Context, c store.Code) error {
	insert := func(q querier, email string, flow any) error {
		n, err := affected(q.ExecContext(ctx, s.q.insertCode, c.Hash[:], string(c.Kind), c.Tenant, nil, "", email, flow,
			orNull(c.Data), ms(c.CreatedAt), ms(c.ExpiresAt)))
		if err == nil && n == 0 {
			err = store.ErrConflict
		}
		return err
	}
	if c.Kind == store.CodePasswordlessFlow {
		// A flow depends on no other row: one statement.
		return retrying(ctx, func() error { return insert(s.db, c.Email, nil) })
	}
	return s.inTx(ctx, func(q querier) error {
		var email string
		var expires int64
		err := q.QueryRowContext(ctx, s.q.flowForUpdate, c.Flow[:]).Scan(&email, &expires)
		if errors.Is(err, sql.ErrNoRows) {
			return store.ErrNotFound
		} else if err != nil {
			return err
		}
		if expires <= ms(c.CreatedAt) {
			return store.ErrNotFound
		}
		return insert(q, email, c.Flow[:])
	})
}

// UsePasswordlessCode implements store.Store in one transaction: a
// statement that locks the flows of the address and reads the code, and
// at most one that writes. A wrong code's count commits with the
// refusal.
func (s *Store) UsePasswordlessCode(ctx context.Context, flow, code store.TokenHash, now time.Time, maxAttempts int) (store.Code, error) {
	var out store.Code
	var refused error
	err := s.inTx(ctx, func(q querier) error {
		out, refused = store.Code{}, nil
		f, flows, codeExpires, err := s.lockAddressFlows(ctx, q, flow, code)
		if err != nil {
			return err
		}
		if ms(f.ExpiresAt) <= ms(now) {
			return store.ErrNotFound
		}
		out = f
		switch {
		case codeExpires.Valid && codeExpires.Int64 > ms(now):
			return s.deleteFlows(ctx, q, f.Email, flows)
		case codeExpires.Valid:
			refused = store.ErrCodeExpired
		default:
			refused = store.ErrWrongCode
		}
		if maxAttempts <= 0 {
			return nil
		}
		out.Attempts++
		if out.Attempts >= maxAttempts {
			return s.deleteFlows(ctx, q, f.Email, [][]byte{flow[:]})
		}
		_, err = q.ExecContext(ctx, s.q.countAttempt, flow[:])
		return err
	})
	switch {
	case errors.Is(err, store.ErrNotFound):
		return store.Code{}, err
	case err != nil:
		return store.Code{}, fmt.Errorf("sqlstore: using a passwordless code: %w", err)
	}
	return out, refused
}

// lockAddressFlows locks every passwordless flow of the address of the
// flow with hash flow, and returns that flow, the hashes of them all, and
// the expiry of code if it is a code of the flow (otherwise NULL). It
// returns ErrNotFound if there is no such flow.
func (s *Store) lockAddressFlows(ctx context.Context, q querier, flow, code store.TokenHash) (store.Code, [][]byte, sql.NullInt64, error) {
	var f store.Code
	var codeExpires sql.NullInt64
	rows, err := q.QueryContext(ctx, s.q.addressFlowsForUpdate, code[:], flow[:], flow[:])
	if err != nil {
		return f, nil, codeExpires, err
	}
	defer rows.Close()
	var hashes [][]byte
	found := false
	for rows.Next() {
		var hash []byte
		var tenant, email string
		var attempts int
		var created, expires int64
		var ce sql.NullInt64
		if err := rows.Scan(&hash, &tenant, &email, &attempts, &created, &expires, &ce); err != nil {
			return f, nil, codeExpires, err
		}
		hashes = append(hashes, hash)
		if bytes.Equal(hash, flow[:]) {
			found = true
			f = store.Code{Hash: flow, Kind: store.CodePasswordlessFlow, Tenant: tenant, Email: email, Attempts: attempts,
				CreatedAt: fromMS(created), ExpiresAt: fromMS(expires)}
			codeExpires = ce
		}
	}
	if err := rows.Err(); err != nil {
		return f, nil, codeExpires, err
	}
	if !found {
		return f, nil, codeExpires, store.ErrNotFound
	}
	return f, hashes, codeExpires, nil
}

// deleteFlows deletes the passwordless flows of the address email with the
// given hashes, which the transaction has locked, and their codes, in one
// statement that reaches them through the index on (kind, email).
func (s *Store) deleteFlows(ctx context.Context, q querier, email string, hashes [][]byte) error {
	list := strings.Repeat("?, ", len(hashes)-1) + "?"
	query := `DELETE FROM auth_codes WHERE kind IN ('` + string(store.CodePasswordlessFlow) + `', '` +
		string(store.CodePasswordless) + `') AND email = ? AND (hash IN (` + list + `) OR flow IN (` + list + `))`
	if s.dialect == Postgres {
		query = rebindQuery(query)
	}
	args := make([]any, 0, 1+2*len(hashes))
	args = append(args, email)
	for range 2 {
		for _, h := range hashes {
			args = append(args, h)
		}
	}
	_, err := q.ExecContext(ctx, query, args...)
	return err
}
