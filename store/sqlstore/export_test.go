package sqlstore

import "context"

// MigrateTo applies the migrations up to version last, so that a test can
// make a database as an earlier release left it.
func (s *Store) MigrateTo(ctx context.Context, last int) error { return s.migrate(ctx, last) }

// HoldWrites takes SQLite's write lock, as a transaction in progress
// would, until the returned function is called.
func (s *Store) HoldWrites() (release func()) {
	s.writes <- struct{}{}
	return s.writes.unlock
}

// QueuedWrites is how many writes wait for the write lock.
func (s *Store) QueuedWrites() int {
	s.queued.mu.Lock()
	defer s.queued.mu.Unlock()
	return len(s.queued.writes)
}
