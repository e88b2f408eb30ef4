package sqlstore

import (
	"context"
	"database/sql"
	"time"
)

// The connection pool New sets up on a *sql.DB whose number of open
// connections the application left unbounded (database/sql's default).
// Three instances at the bound, however hard a burst presses, hold 75
// connections: within PostgreSQL's default max_connections of 100, less
// the 3 it reserves for superusers. An application that sets its own
// bound with SetMaxOpenConns before calling New keeps its settings.
const (
	// DefaultMaxOpenConns bounds the connections one Store opens. Requests
	// beyond it wait for a connection, up to their context's deadline.
	DefaultMaxOpenConns = 25
	// DefaultMaxIdleConns is how many connections stay open between
	// requests: all of them, so that a steady load does not open and
	// close connections, which costs PostgreSQL a process each.
	DefaultMaxIdleConns = DefaultMaxOpenConns
	// DefaultConnMaxIdleTime closes a connection unused this long, so a
	// pool shrinks back after a burst.
	DefaultConnMaxIdleTime = time.Minute
)

// boundPool applies the defaults above to db if its open connections are
// unbounded.
func boundPool(db *sql.DB) {
	if db.Stats().MaxOpenConnections != 0 {
		return
	}
	db.SetMaxOpenConns(DefaultMaxOpenConns)
	db.SetMaxIdleConns(DefaultMaxIdleConns)
	db.SetConnMaxIdleTime(DefaultConnMaxIdleTime)
}

// writeLock, on SQLite, lets one write at a time through to the database.
// SQLite has a single write lock: writers that meet it wait in its busy
// handler, which polls with sleeps of up to 100 ms, so under contention a
// write can wait far longer than the writes ahead of it take. Queued here
// instead, each starts the moment the one before it ends. Reads do not
// queue: in WAL mode they go on beside the writer, on the pool's other
// connections. The lock is nil on the other databases, which lock rows.
type writeLock chan struct{}

func newWriteLock(d Dialect) writeLock {
	if d != SQLite {
		return nil
	}
	return make(writeLock, 1)
}

// lock waits for the write lock, or for ctx to end.
func (l writeLock) lock(ctx context.Context) error {
	if l == nil {
		return nil
	}
	select {
	case l <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (l writeLock) unlock() {
	if l != nil {
		<-l
	}
}

// write runs f, a single statement that writes, under the write lock and
// as retrying does.
func (s *Store) write(ctx context.Context, f func() error) error {
	if err := s.writes.lock(ctx); err != nil {
		return err
	}
	defer s.writes.unlock()
	return retrying(ctx, f)
}
