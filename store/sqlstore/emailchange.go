package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/latchkit/auth/store"
)

// Email changes and their reverts are rows of auth_codes of their user,
// with the address moved from in data; CreateCode, Code, DeleteUser and
// DeleteExpired treat them as any code of a user.
//
// Locks: using one locks the code's user, then the code, then the user's
// logins of the old address, the order of VerifyEmail. Logins of other
// users, which it only reads, are not locked: their users' locks come
// first for every method that changes them. A login of another user that
// takes a moved login's new key meanwhile makes the move fail on the key's
// unique index (ErrConflict).

// ChangeEmail implements store.Store in one transaction. Deleting the
// user's change codes is what uses this one up: of racing calls, one
// deletes it and the others, which waited on the user's lock, find none.
func (s *Store) ChangeEmail(ctx context.Context, kind store.CodeKind, hash store.TokenHash, now time.Time) (store.Code, []store.Login, error) {
	// Besides the change codes, the links mailed to the address the user
	// leaves: a reset or a recovery would act on the new one.
	kinds := []store.CodeKind{store.CodeEmailChange, store.CodeReset, store.CodePasskeyRecovery}
	switch kind {
	case store.CodeEmailChange:
	case store.CodeEmailRevert:
		// A revert undoes the change its links were sent for: any other
		// revert link of the user has nothing left to undo.
		kinds = append(kinds, store.CodeEmailRevert)
	default:
		return store.Code{}, nil, store.ErrNotFound
	}
	var out store.Code
	var moved []store.Login
	err := s.inTx(ctx, func(q querier) error {
		c, err := s.lockUserCode(ctx, q, kind, hash, now)
		if err != nil {
			return err
		}
		logins, err := s.loginsToMove(ctx, q, c.UserID, string(c.Data), c.Email)
		if err != nil {
			return err
		}
		if err := s.moveLogins(ctx, q, logins, c.Email); err != nil {
			return err
		}
		for _, k := range kinds {
			if _, err := q.ExecContext(ctx, s.q.deleteUserKind, c.UserID, string(k)); err != nil {
				return err
			}
		}
		for _, l := range logins {
			if _, err := q.ExecContext(ctx, s.q.deleteLoginVerifications, l.ID); err != nil {
				return err
			}
		}
		out, moved = c, logins
		return nil
	})
	if err != nil {
		return store.Code{}, nil, wrap("changing an email", err)
	}
	return out, moved, nil
}

// lockUserCode locks the user of the code of kind with the given hash,
// then the code, and returns the code; ErrNotFound if it does not exist
// or has expired at now.
func (s *Store) lockUserCode(ctx context.Context, q querier, kind store.CodeKind, hash store.TokenHash, now time.Time) (store.Code, error) {
	var userID sql.NullString
	err := q.QueryRowContext(ctx, s.q.codeUser, hash[:], string(kind)).Scan(&userID)
	if errors.Is(err, sql.ErrNoRows) || err == nil && !userID.Valid {
		return store.Code{}, store.ErrNotFound
	} else if err != nil {
		return store.Code{}, err
	}
	if err := s.lockUser(ctx, q, userID.String); err != nil {
		return store.Code{}, err
	}
	c, err := scanCeremony(q.QueryRowContext(ctx, s.q.codeForUpdate, hash[:], string(kind)), kind)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return store.Code{}, store.ErrNotFound // used up by a racing call
	case err != nil:
		return store.Code{}, err
	case c.UserID != userID.String || ms(c.ExpiresAt) <= ms(now):
		// A code of another user is one this call holds no lock for.
		return store.Code{}, store.ErrNotFound
	}
	return c, nil
}

// loginsToMove locks the logins of user userID at address from and
// returns those that move with it to address to, after checking that
// they may: ErrNotFound if there are none, ErrEmailOwned if a login of
// another user has to, ErrConflict if a login other than the one moving
// holds a new key.
func (s *Store) loginsToMove(ctx context.Context, q querier, userID, from, to string) ([]store.Login, error) {
	all, err := queryLogins(ctx, q, s.q.addressLoginsForUpdate, userID, from)
	if err != nil {
		return nil, err
	}
	var moving []store.Login
	for _, l := range all {
		if store.MovesWithEmail(l.Method) {
			moving = append(moving, l)
		}
	}
	if len(moving) == 0 {
		return nil, store.ErrNotFound
	}
	if err := s.addressFree(ctx, q, moving, userID, to); err != nil {
		return nil, err
	}
	for _, l := range moving {
		k := store.KeyForEmail(l.LoginKey, to)
		holder, err := scanLogin(q.QueryRowContext(ctx, s.q.login, keyArgs(k)...))
		if err == nil && holder.ID != l.ID {
			return nil, store.ErrConflict
		} else if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, err
		}
	}
	return moving, nil
}

// addressFree returns ErrEmailOwned if a login of a user other than
// userID has the address to in the tenant of one of the moving logins:
// another tenant's users are other people.
func (s *Store) addressFree(ctx context.Context, q querier, moving []store.Login, userID, to string) error {
	checked := make(map[string]bool)
	for _, l := range moving {
		if checked[l.Tenant] {
			continue
		}
		checked[l.Tenant] = true
		var one int
		err := q.QueryRowContext(ctx, s.q.addressHeldByOther, l.Tenant, to, userID).Scan(&one)
		if err == nil {
			return store.ErrEmailOwned
		} else if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
	}
	return nil
}

// moveLogins gives each of logins the address to and the key that
// follows it, verified and unproven, and leaves each as updated. The
// owned_email column goes with the old address: a moved login owns
// nothing until it claims the new one.
func (s *Store) moveLogins(ctx context.Context, q querier, logins []store.Login, to string) error {
	for i, l := range logins {
		k := store.KeyForEmail(l.LoginKey, to)
		_, err := q.ExecContext(ctx, s.q.moveLogin, k.Method, k.ThirdParty, k.Subject, to, l.ID)
		if isUniqueViolation(err) {
			return store.ErrConflict // a key taken since loginsToMove read it
		} else if err != nil {
			return err
		}
		l.LoginKey, l.Email = k, to
		l.EmailVerified, l.EmailProven, l.OwnsEmail = true, false, false
		logins[i] = l
	}
	return nil
}

// queryLogins runs a query of loginColumns on q; its rows are closed
// before it returns, so that q can run the next statement of a
// transaction.
func queryLogins(ctx context.Context, q querier, query string, args ...any) ([]store.Login, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.Login
	for rows.Next() {
		l, err := scanLogin(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	return out, rows.Err()
}
