package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/latchkit/auth/store"
)

// The methods of account linking, user management and email verification.
// Each locks the user's row first, the order every method that changes a
// user's records takes (see queries.go), so that they cannot deadlock with
// sign-ins, resets and revocations.

// lockUser takes the row lock of a user, or returns ErrNotFound.
func (s *Store) lockUser(ctx context.Context, q querier, userID string) error {
	var one int
	err := q.QueryRowContext(ctx, s.q.userExists, userID).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return store.ErrNotFound
	}
	return err
}

// lockLogin finds a login by id, locks its user, then the login, and
// returns it; ErrNotFound if it does not exist.
func (s *Store) lockLogin(ctx context.Context, q querier, loginID string) (store.Login, error) {
	var userID string
	err := q.QueryRowContext(ctx, s.q.loginUser, loginID).Scan(&userID)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Login{}, store.ErrNotFound
	} else if err != nil {
		return store.Login{}, err
	}
	if err := s.lockUser(ctx, q, userID); err != nil {
		return store.Login{}, err
	}
	l, err := scanLogin(q.QueryRowContext(ctx, s.q.loginByIDForUpdate, loginID))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Login{}, store.ErrNotFound
	}
	return l, err
}

// wrap adds the method's name to an error that is not one of the
// contract's.
func wrap(what string, err error) error {
	for _, known := range []error{store.ErrNotFound, store.ErrConflict, store.ErrEmailOwned, store.ErrLastLogin} {
		if errors.Is(err, known) {
			return err
		}
	}
	if err == nil {
		return nil
	}
	return fmt.Errorf("sqlstore: %s: %w", what, err)
}

// newLoginFits returns ErrConflict if l's key or id is taken, then
// ErrNotFound if its user does not exist, and locks the user.
func (s *Store) newLoginFits(ctx context.Context, q querier, l store.Login) error {
	if l.ID == "" {
		return store.ErrConflict
	}
	if taken, err := s.loginKeyTaken(ctx, q, l); err != nil || taken {
		return cmp.Or(err, store.ErrConflict)
	}
	var one int
	if err := q.QueryRowContext(ctx, s.q.loginIDTaken, l.ID).Scan(&one); err == nil {
		return store.ErrConflict
	} else if !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	return s.lockUser(ctx, q, l.UserID)
}

// AttachLogin implements store.Store. The login owns nothing, so no
// owner of its email needs reading or locking.
func (s *Store) AttachLogin(ctx context.Context, l store.Login) error {
	return wrap("attaching a login", s.inTx(ctx, func(q querier) error {
		if err := s.newLoginFits(ctx, q, l); err != nil {
			return err
		}
		l.OwnsEmail = false
		return s.linkInsert(ctx, q, l)
	}))
}

// LinkLogin implements store.Store.
func (s *Store) LinkLogin(ctx context.Context, l store.Login) error {
	return wrap("linking a login", s.inTx(ctx, func(q querier) error {
		if err := s.newLoginFits(ctx, q, l); err != nil {
			return err
		}
		l.OwnsEmail = l.OwnsEmail && l.EmailProven && l.Email != ""
		if l.Email == "" {
			return s.linkInsert(ctx, q, l)
		}
		var owner string
		err := q.QueryRowContext(ctx, s.q.ownerOf, l.Tenant, l.Email).Scan(&owner)
		switch {
		case err != nil && !errors.Is(err, sql.ErrNoRows):
			return err
		case l.OwnsEmail && err == nil:
			return store.ErrEmailOwned
		case !l.OwnsEmail && (err != nil || owner != l.UserID):
			return store.ErrNotFound
		}
		return s.linkInsert(ctx, q, l)
	}))
}

// linkInsert is the insert of LinkLogin and AttachLogin. A concurrent
// insert of the same key or id, or a claim of the email, that committed
// meanwhile makes it affect nothing: insertLogin tells which key.
func (s *Store) linkInsert(ctx context.Context, q querier, l store.Login) error {
	err := s.insertLogin(ctx, q, l)
	if errors.Is(err, errLoginConflict) {
		return store.ErrConflict
	} else if err != nil {
		return err
	}
	return s.joinLoginTenant(ctx, q, l)
}

// ClaimEmail implements store.Store. Two logins of different users that
// claim one email lock different users; the unique index on owned_email
// decides between them.
func (s *Store) ClaimEmail(ctx context.Context, loginID string) (store.Login, error) {
	var out store.Login
	err := s.inTx(ctx, func(q querier) error {
		l, err := s.lockLogin(ctx, q, loginID)
		if err != nil {
			return err
		}
		if l.Email == "" || !l.EmailProven {
			return store.ErrNotFound
		}
		out = l
		if l.OwnsEmail {
			return nil
		}
		var owner string
		err = q.QueryRowContext(ctx, s.q.ownerOf, l.Tenant, l.Email).Scan(&owner)
		switch {
		case err == nil && owner == l.UserID:
			return nil
		case err == nil:
			return store.ErrEmailOwned
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}
		if _, err := q.ExecContext(ctx, s.q.claimEmail, loginID); isUniqueViolation(err) {
			return store.ErrEmailOwned
		} else if err != nil {
			return err
		}
		out.OwnsEmail = true
		return nil
	})
	if err != nil {
		return store.Login{}, wrap("claiming an email", err)
	}
	return out, nil
}

// SetEmailVerified implements store.Store.
func (s *Store) SetEmailVerified(ctx context.Context, loginID string, verified bool) (store.Login, error) {
	var out store.Login
	err := s.inTx(ctx, func(q querier) error {
		l, err := s.lockLogin(ctx, q, loginID)
		if err != nil {
			return err
		}
		if _, err := q.ExecContext(ctx, s.q.setVerified, verified, verified, loginID); err != nil {
			return err
		}
		follow := s.q.deleteLoginVerifications
		if !verified {
			follow = s.q.releaseEmail // only a proven login owns its email
			l.OwnsEmail = false
		}
		if _, err := q.ExecContext(ctx, follow, loginID); err != nil {
			return err
		}
		l.EmailVerified, l.EmailProven = verified, verified
		out = l
		return nil
	})
	if err != nil {
		return store.Login{}, wrap("setting an email's verification", err)
	}
	return out, nil
}

// DeleteLogin implements store.Store.
func (s *Store) DeleteLogin(ctx context.Context, loginID string) ([]string, error) {
	handles := []string{}
	err := s.inTx(ctx, func(q querier) error {
		handles = handles[:0]
		l, err := s.lockLogin(ctx, q, loginID)
		if err != nil {
			return err
		}
		// The user's lock keeps its other logins as they are until the
		// end of this transaction.
		var n int
		if err := q.QueryRowContext(ctx, s.q.otherWaysIn, l.UserID, loginID).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return store.ErrLastLogin
		}
		if handles, err = queryHandles(ctx, q, s.q.loginHandlesForUpdate, l.UserID, loginID); err != nil {
			return err
		}
		if _, err := q.ExecContext(ctx, s.q.endLoginSessions, l.UserID, loginID); err != nil {
			return err
		}
		for _, query := range []string{s.q.deleteLoginCodes, s.q.deleteLogin} {
			if _, err := q.ExecContext(ctx, query, loginID); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, wrap("deleting a login", err)
	}
	return handles, nil
}

// UpdateLoginMaterial implements store.Store in one conditional UPDATE of
// the login's row, which waits for no other lock, so it cannot deadlock
// with the transactions that lock the user first. When it changes no row,
// a read of the login says why.
func (s *Store) UpdateLoginMaterial(ctx context.Context, loginID string, old, new []byte) error {
	query, args := s.q.swapMaterial, []any{orNull(new), loginID, old}
	if len(old) == 0 {
		query, args = s.q.swapMaterialFromNone, args[:2]
	}
	var n int64
	err := retrying(ctx, func() (err error) {
		n, err = affected(s.db.ExecContext(ctx, query, args...))
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlstore: updating a login's material: %w", err)
	}
	if n > 0 {
		return nil
	}
	l, err := scanLogin(s.db.QueryRowContext(ctx, s.q.loginByID, loginID))
	if errors.Is(err, sql.ErrNoRows) {
		return store.ErrNotFound
	} else if err != nil {
		return fmt.Errorf("sqlstore: updating a login's material: %w", unavailable(err))
	}
	return swapMissed(l.Material, old, new)
}

// DeleteUser implements store.Store.
func (s *Store) DeleteUser(ctx context.Context, userID string) ([]string, error) {
	var handles []string
	err := s.inTx(ctx, func(q querier) error {
		if err := s.lockUser(ctx, q, userID); err != nil {
			return err
		}
		var err error
		if handles, err = s.revokeUser(ctx, q, userID, store.EndRevoked); err != nil {
			return err
		}
		// Ended sessions and the tokens kept from before tokens named
		// their session go too, and the roles it holds and its memberships in
		// every tenant: nothing of the user stays.
		for _, query := range []string{s.q.deleteUserTokens, s.q.deleteUserSessions,
			s.q.deleteUserCodes, s.q.deleteUserLogins, s.q.roles.deleteUser, s.q.tenants.deleteUser, s.q.deleteUser} {
			if _, err := q.ExecContext(ctx, query, userID); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, wrap("deleting a user", err)
	}
	if handles == nil {
		handles = []string{}
	}
	return handles, nil
}

// CreateCode implements store.Store. A code bound to a login locks the
// login's user, then the login, the order every method takes. Passwordless
// flows and codes belong to no user (see passwordless.go), and neither
// does a passkey ceremony that names none: one statement.
func (s *Store) CreateCode(ctx context.Context, c store.Code) error {
	switch {
	case c.Kind == store.CodePasswordlessFlow, c.Kind == store.CodePasswordless:
		return wrap("creating a code", s.createPasswordless(ctx, c))
	case c.Kind == store.CodePasskeyOptions && c.UserID == "" && c.LoginID == "":
		return wrap("creating a code", retrying(ctx, func() error {
			n, err := affected(s.db.ExecContext(ctx, s.q.insertCode, c.Hash[:], string(c.Kind), c.Tenant, nil, "", c.Email, nil,
				orNull(c.Data), ms(c.CreatedAt), ms(c.ExpiresAt)))
			if err == nil && n == 0 {
				err = store.ErrConflict
			}
			return err
		}))
	}
	return wrap("creating a code", s.inTx(ctx, func(q querier) error {
		if c.LoginID == "" {
			if err := s.lockUser(ctx, q, c.UserID); err != nil {
				return err
			}
		} else if l, err := s.lockLogin(ctx, q, c.LoginID); err != nil {
			return err
		} else if l.Email != c.Email || c.UserID != "" && c.UserID != l.UserID {
			return store.ErrNotFound
		} else {
			c.UserID = l.UserID
		}
		n, err := affected(q.ExecContext(ctx, s.q.insertCode, c.Hash[:], string(c.Kind), c.Tenant, c.UserID, c.LoginID, c.Email, nil,
			orNull(c.Data), ms(c.CreatedAt), ms(c.ExpiresAt)))
		if err != nil {
			return err
		}
		if n == 0 {
			return store.ErrConflict
		}
		return nil
	}))
}

// VerifyEmail implements store.Store. Deleting the login's tokens is what
// uses this one up: of racing calls, one deletes it and the others, which
// waited on its lock, find none.
func (s *Store) VerifyEmail(ctx context.Context, token store.TokenHash, now time.Time) (store.Login, error) {
	var out store.Login
	err := s.inTx(ctx, func(q querier) error {
		var userID string
		err := q.QueryRowContext(ctx, s.q.verificationUser, token[:]).Scan(&userID)
		if errors.Is(err, sql.ErrNoRows) {
			return store.ErrNotFound
		} else if err != nil {
			return err
		}
		if err := s.lockUser(ctx, q, userID); err != nil {
			return err
		}
		var loginID, email string
		var expires int64
		err = q.QueryRowContext(ctx, s.q.verificationForUpdate, token[:]).Scan(&loginID, &email, &expires)
		if errors.Is(err, sql.ErrNoRows) {
			return store.ErrNotFound // used up by a racing call
		} else if err != nil {
			return err
		}
		if expires <= ms(now) {
			return store.ErrNotFound
		}
		l, err := scanLogin(q.QueryRowContext(ctx, s.q.loginByIDForUpdate, loginID))
		if errors.Is(err, sql.ErrNoRows) || err == nil && l.Email != email {
			return store.ErrNotFound
		} else if err != nil {
			return err
		}
		if _, err := q.ExecContext(ctx, s.q.verifyEmail, loginID); err != nil {
			return err
		}
		if _, err := q.ExecContext(ctx, s.q.deleteLoginVerifications, loginID); err != nil {
			return err
		}
		l.EmailVerified = true
		out = l
		return nil
	})
	if err != nil {
		return store.Login{}, wrap("verifying an email", err)
	}
	return out, nil
}
