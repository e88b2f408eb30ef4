package sqlstore

import (
	"context"
	"database/sql"
	"slices"
	"sync"
	"time"
)

// The connection pool New sets up on a *sql.DB whose number of open
// connections the application left unbounded (database/sql's default):
// connections opened as the load needs them, up to a bound, and closed
// again once the load no longer uses them. A statement of the store holds
// a connection for well under a millisecond, so a few connections serve a
// busy instance, and the bound keeps ten instances, however hard a burst
// presses, within PostgreSQL's default max_connections of 100, less the 3
// it reserves for superusers. An application that sets its own bound with
// SetMaxOpenConns before calling New keeps its settings. The package doc
// ("Connection pool") says which settings an operator may change, and
// why.
const (
	// DefaultMaxOpenConns bounds the connections one Store opens. Requests
	// beyond it wait for a connection, up to their context's deadline.
	DefaultMaxOpenConns = 9
	// DefaultMaxIdleConns is how many connections may stay open between
	// requests: as many as may be open, so that a steady load, whose
	// concurrency rises and falls from one moment to the next, does not
	// close connections as it gives them back only to open them again a
	// moment later (a process each, for PostgreSQL). It is
	// DefaultConnMaxIdleTime that closes what the load stopped using.
	DefaultMaxIdleConns = DefaultMaxOpenConns
	// DefaultConnMaxIdleTime closes a connection unused this long.
	// database/sql hands out the connection given back last, so a light
	// load keeps reusing the same few connections, and the others, opened
	// for a burst, go this long after it: the pool holds about as many
	// connections as the load of the last half-minute used at once.
	DefaultConnMaxIdleTime = 30 * time.Second
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

// write runs f, a single statement that writes, on q with ctx: as
// retrying does elsewhere, and on SQLite together with the writes queued
// meanwhile (see commitQueued).
func (s *Store) write(ctx context.Context, f func(ctx context.Context, q querier) error) error {
	if s.writes == nil {
		return retrying(ctx, func() error { return f(ctx, s.db) })
	}
	w := &queuedWrite{ctx: ctx, f: f, done: make(chan error, 1)}
	s.queued.add(w)
	for {
		select {
		case err := <-w.done:
			return unavailable(err)
		case s.writes <- struct{}{}:
			// The writer's turn: commit what is queued, this write
			// among it unless the turn before took it.
			s.commitQueued()
			s.writes.unlock()
		case <-ctx.Done():
			if s.queued.remove(w) {
				return ctx.Err()
			}
			// Taken by the writer: its answer comes soon.
			return unavailable(<-w.done)
		}
	}
}

// A queuedWrite is a write waiting for its turn; done gets its outcome
// once it committed, or did not.
type queuedWrite struct {
	ctx  context.Context
	f    func(ctx context.Context, q querier) error
	done chan error
}

// writeQueue holds the writes waiting for SQLite's writer.
type writeQueue struct {
	mu     sync.Mutex
	writes []*queuedWrite
}

func (q *writeQueue) add(w *queuedWrite) {
	q.mu.Lock()
	q.writes = append(q.writes, w)
	q.mu.Unlock()
}

// remove takes w out of the queue, and reports whether it was there.
func (q *writeQueue) remove(w *queuedWrite) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	for i, v := range q.writes {
		if v == w {
			q.writes = slices.Delete(q.writes, i, i+1)
			return true
		}
	}
	return false
}

// take empties the queue, and returns what it held.
func (q *writeQueue) take() []*queuedWrite {
	q.mu.Lock()
	defer q.mu.Unlock()
	ws := q.writes
	q.writes = nil
	return ws
}

// commitQueued runs the queued writes and commits them in one
// transaction, under the write lock: one sync of the log for all of them,
// where each of them alone would wait for its own (synchronous=FULL syncs
// at every commit). Each write runs inside a savepoint, so a write that
// fails changes nothing and the others still commit; none is answered
// before the commit. The statements run without the requests' deadlines:
// SQLite interrupts a statement whose context ends and rolls back the
// whole transaction with it, and the writes of the others. A request
// whose context ended before its turn is answered with its error.
func (s *Store) commitQueued() {
	ws := s.queued.take()
	switch len(ws) {
	case 0:
		return
	case 1:
		w := ws[0]
		w.done <- w.f(context.WithoutCancel(w.ctx), s.db)
		return
	}
	errs := s.commitTogether(ws)
	for i, w := range ws {
		w.done <- errs[i]
	}
}

// commitTogether runs ws in one transaction and returns the outcome of
// each. It fails closed: unless the transaction commits, every write gets
// an error, so that none is answered as done when it is not, and none as
// failed when it was committed.
func (s *Store) commitTogether(ws []*queuedWrite) []error {
	errs := make([]error, len(ws))
	fail := func(err error) []error {
		for i := range errs {
			if errs[i] == nil {
				errs[i] = err
			}
		}
		return errs
	}
	bg := context.Background()
	conn, err := s.db.Conn(bg)
	if err != nil {
		return fail(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(bg, "BEGIN IMMEDIATE"); err != nil {
		return fail(err)
	}
	for i, w := range ws {
		if errs[i] = w.ctx.Err(); errs[i] != nil {
			continue
		}
		if errs[i], err = inSavepoint(bg, conn, w); err != nil {
			// Either SQLite ended the transaction (it does on some
			// errors, as a full disk), or it is still open with a
			// savepoint we could not close, and the writes before
			// this one released into it: a COMMIT now would write
			// what is answered as failed. End it.
			conn.ExecContext(bg, "ROLLBACK")
			return fail(err)
		}
	}
	if _, err := conn.ExecContext(bg, "COMMIT"); err != nil {
		conn.ExecContext(bg, "ROLLBACK")
		return fail(err)
	}
	return errs
}

// inSavepoint runs w on conn inside a savepoint, which it rolls back to
// if w fails, and releases. It returns w's error, and the error of the
// savepoint's own statements, after which the transaction must not commit.
func inSavepoint(ctx context.Context, conn *sql.Conn, w *queuedWrite) (werr, err error) {
	if _, err := conn.ExecContext(ctx, "SAVEPOINT queued_write"); err != nil {
		return nil, err
	}
	werr = w.f(context.WithoutCancel(w.ctx), conn)
	if werr != nil {
		if _, err := conn.ExecContext(ctx, "ROLLBACK TO queued_write"); err != nil {
			return werr, err
		}
	}
	_, err = conn.ExecContext(ctx, "RELEASE queued_write")
	return werr, err
}
