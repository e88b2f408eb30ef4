package sqlstore

import "context"

// MigrateTo applies the migrations up to version last, so that a test can
// make a database as an earlier release left it.
func (s *Store) MigrateTo(ctx context.Context, last int) error { return s.migrate(ctx, last) }
