package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/latchkit/auth/store"
)

var _ store.LegacyTokenStore = (*Store)(nil)

// LegacyTokenSession implements store.LegacyTokenStore: auth_refresh_tokens
// holds the tokens issued before tokens named their session (migration 8
// stopped writing it), so that those sessions keep working and a stolen
// one of their tokens is still theft until it expires.
func (s *Store) LegacyTokenSession(ctx context.Context, token store.TokenHash, now time.Time) (string, error) {
	var handle string
	var expires int64
	err := s.db.QueryRowContext(ctx, s.q.legacyToken, token[:]).Scan(&handle, &expires)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return "", store.ErrNotFound
	case err != nil:
		return "", fmt.Errorf("sqlstore: finding a refresh token's session: %w", unavailable(err))
	case expires <= ms(now):
		return "", store.ErrNotFound
	}
	return handle, nil
}
