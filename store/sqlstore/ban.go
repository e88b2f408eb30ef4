package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/latchkit/auth/store"
)

var _ store.Banner = (*Store)(nil)

// BanUser implements store.Banner: the ban, the epoch and the end of the
// sessions in one transaction, which takes the user's row first, as a
// reset does, so a session insert either comes before it or sees the ban.
func (s *Store) BanUser(ctx context.Context, userID string, b store.Ban) ([]string, error) {
	var handles []string
	err := s.inTx(ctx, func(q querier) error {
		if err := s.lockUser(ctx, q, userID); err != nil {
			return err
		}
		until := sql.NullInt64{Int64: ms(b.Until), Valid: !b.Until.IsZero()}
		if _, err := q.ExecContext(ctx, s.q.banUser, ms(b.At), until, b.Reason, b.By, userID); err != nil {
			return err
		}
		var err error
		handles, err = s.revokeUser(ctx, q, userID, store.EndBanned)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil, err
	} else if err != nil {
		return nil, unavailable(fmt.Errorf("sqlstore: banning a user: %w", err))
	}
	return handles, nil
}

// UnbanUser implements store.Banner.
func (s *Store) UnbanUser(ctx context.Context, userID string) (store.Ban, error) {
	var lifted store.Ban
	err := s.inTx(ctx, func(q querier) error {
		u, err := s.readLockedUser(ctx, q, userID)
		if err != nil {
			return err
		}
		lifted = u.Ban
		_, err = q.ExecContext(ctx, s.q.unbanUser, userID)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return store.Ban{}, err
	} else if err != nil {
		return store.Ban{}, unavailable(fmt.Errorf("sqlstore: lifting a ban: %w", err))
	}
	return lifted, nil
}

// readLockedUser locks the user's row and reads it, or returns
// store.ErrNotFound.
func (s *Store) readLockedUser(ctx context.Context, q querier, userID string) (store.User, error) {
	u, err := scanUser(q.QueryRowContext(ctx, s.q.userForUpdate, userID))
	if errors.Is(err, sql.ErrNoRows) {
		return store.User{}, store.ErrNotFound
	}
	return u, err
}
