package memstore

import (
	"context"

	"github.com/latchkit/auth/store"
)

var _ store.Banner = (*Store)(nil)

// BanUser implements store.Banner.
func (s *Store) BanUser(_ context.Context, userID string, b store.Ban) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u, ok := s.users[userID]
	if !ok {
		return nil, store.ErrNotFound
	}
	u.Ban = b
	s.users[userID] = u
	return s.endSessions(userID, store.EndBanned), nil
}

// UnbanUser implements store.Banner.
func (s *Store) UnbanUser(_ context.Context, userID string) (store.Ban, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u, ok := s.users[userID]
	if !ok {
		return store.Ban{}, store.ErrNotFound
	}
	lifted := u.Ban
	u.Ban = store.Ban{}
	s.users[userID] = u
	return lifted, nil
}
