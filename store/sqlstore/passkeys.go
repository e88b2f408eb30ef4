package sqlstore

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/latchkit/auth/store"
)

// Passkeys are logins whose material is a column of auth_logins, and
// their ceremonies and recovery links rows of auth_codes, with their data.
//
// Locks: using a ceremony with an update of a passkey's material locks the
// passkey's user, then the passkey (lockLogin), then the code, the order
// of every method that changes a user's records, so that it cannot
// deadlock with them; without an update it locks only the code. A
// recovery link locks every recovery link of its address, in the order of
// their hashes, as it deletes them all.

// UseCeremony implements store.Store in one transaction: with an update,
// the passkey's lock and read, the code's lock and read, the update and
// the delete; without one, the last two. The delete is what uses the code
// up: of racing calls, one deletes it and the others, which waited on its
// lock, find none.
func (s *Store) UseCeremony(ctx context.Context, kind store.CodeKind, hash store.TokenHash, now time.Time, update *store.MaterialUpdate) (store.Code, error) {
	var lock, del string
	switch kind {
	case store.CodePasskeyOptions:
		lock, del = s.q.ceremonyForUpdate, s.q.deleteCode
	case store.CodePasskeyRecovery:
		lock, del = s.q.recoveriesForUpdate, s.q.deleteAddressRecoveries
	default:
		return store.Code{}, store.ErrNotFound
	}
	var out store.Code
	err := s.inTx(ctx, func(q querier) error {
		var l store.Login
		if update != nil {
			var err error
			if l, err = s.lockLogin(ctx, q, update.LoginID); err != nil {
				return err
			}
		}
		c, err := s.lockCeremony(ctx, q, lock, kind, hash)
		if err != nil {
			return err
		}
		if ms(c.ExpiresAt) <= ms(now) {
			return store.ErrNotFound
		}
		if update != nil {
			if !bytes.Equal(l.Material, update.Old) {
				return store.ErrConflict // the counter moved meanwhile
			}
			if _, err := q.ExecContext(ctx, s.q.setMaterial, orNull(update.New), update.LoginID); err != nil {
				return err
			}
		}
		arg := any(hash[:])
		if kind == store.CodePasskeyRecovery {
			arg = c.Email
		}
		if _, err := q.ExecContext(ctx, del, arg); err != nil {
			return err
		}
		out = c
		return nil
	})
	if err != nil {
		return store.Code{}, wrap("using a passkey ceremony", err)
	}
	return out, nil
}

// lockCeremony runs lock, which locks the passkey code of kind with the
// given hash (and for a recovery link, the others of its address), and
// returns that code, or ErrNotFound.
func (s *Store) lockCeremony(ctx context.Context, q querier, lock string, kind store.CodeKind, hash store.TokenHash) (store.Code, error) {
	rows, err := q.QueryContext(ctx, lock, hash[:])
	if err != nil {
		return store.Code{}, err
	}
	defer rows.Close()
	var out store.Code
	found := false
	for rows.Next() {
		c, err := scanCeremony(rows, kind)
		if err != nil {
			return store.Code{}, err
		}
		if c.Hash == hash {
			out, found = c, true
		}
	}
	if err := rows.Err(); err != nil {
		return store.Code{}, err
	}
	if !found {
		return store.Code{}, store.ErrNotFound
	}
	return out, nil
}

// scanCeremony reads the ceremonyColumns of a passkey code of kind.
func scanCeremony(row scanner, kind store.CodeKind) (store.Code, error) {
	c := store.Code{Kind: kind}
	var h []byte
	var userID *string
	var created, expires int64
	if err := row.Scan(&h, &c.Tenant, &userID, &c.LoginID, &c.Email, &c.Data, &created, &expires); err != nil {
		return store.Code{}, err
	}
	if len(h) != len(c.Hash) {
		return store.Code{}, fmt.Errorf("a code's hash of %d bytes", len(h))
	}
	copy(c.Hash[:], h)
	if userID != nil {
		c.UserID = *userID
	}
	c.CreatedAt, c.ExpiresAt = fromMS(created), fromMS(expires)
	return c, nil
}
