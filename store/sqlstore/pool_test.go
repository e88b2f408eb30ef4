package sqlstore_test

import (
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/latchkit/auth/internal/sqltest"
	"github.com/latchkit/auth/store"
	"github.com/latchkit/auth/store/sqlstore"
)

// Three instances, each with a pool that sql.Open left unbounded, take a
// burst of far more concurrent requests than connections. The server
// never holds more than 3 × DefaultMaxOpenConns of their connections.
// (Ten would fit in PostgreSQL's default max_connections of 100, but the
// test server is shared.)
func TestPoolBoundUnderBurst(t *testing.T) {
	const (
		instances = 3
		perInst   = 150 // concurrent callers per instance
		calls     = 10
	)
	dsn, count := countedPostgres(t)

	stores := make([]*sqlstore.Store, instances)
	dbs := make([]*sql.DB, instances)
	for i := range stores {
		db, err := sql.Open("pgx", dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		if stores[i], err = sqlstore.New(db, sqlstore.Postgres); err != nil {
			t.Fatal(err)
		}
		if got := db.Stats().MaxOpenConnections; got != sqlstore.DefaultMaxOpenConns {
			t.Fatalf("instance %d: MaxOpenConnections %d after New, want %d", i, got, sqlstore.DefaultMaxOpenConns)
		}
		dbs[i] = db
	}
	if err := stores[0].Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}

	var peak atomic.Int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			if n := int64(count()); n > peak.Load() {
				peak.Store(n)
			}
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()

	now := time.Now()
	var wg sync.WaitGroup
	var failed, unavailable atomic.Int64
	var firstErr atomic.Value
	fail := func(err error) {
		// The server is shared with whatever else runs: it may refuse a
		// connection for want of slots. That is an outage, not a bug.
		if errors.Is(err, store.ErrUnavailable) {
			unavailable.Add(1)
			return
		}
		failed.Add(1)
		firstErr.CompareAndSwap(nil, err)
	}
	start := make(chan struct{})
	for i, st := range stores {
		for g := range perInst {
			wg.Go(func() {
				<-start
				id := fmt.Sprintf("u%d-%d", i, g)
				l := store.Login{LoginKey: store.EmailPasswordKey(id + "@example.com"), Email: id + "@example.com", CreatedAt: now}
				if err := st.CreateUser(t.Context(), store.User{ID: id, TimeJoined: now}, l); err != nil {
					fail(err)
					return
				}
				for c := range calls {
					s := store.Session{Handle: fmt.Sprintf("%s-%d", id, c), UserID: id, LoginID: id,
						CreatedAt: now, RefreshedAt: now, ExpiresAt: now.Add(time.Hour)}
					if err := st.CreateSession(t.Context(), s, store.TokenHash{byte(c)}, 0); err != nil {
						fail(err)
					}
					if _, err := st.UserSessions(t.Context(), id, now); err != nil {
						fail(err)
					}
				}
			})
		}
	}
	close(start)
	wg.Wait()
	close(stop)
	<-sampled

	bound := instances * sqlstore.DefaultMaxOpenConns
	var waits int64
	for _, db := range dbs {
		waits += db.Stats().WaitCount
	}
	t.Logf("peak %d server connections of %d instances (bound %d); %d waits for a connection; %d calls found the server out of connections",
		peak.Load(), instances, bound, waits, unavailable.Load())
	if n := failed.Load(); n > 0 {
		t.Errorf("%d calls failed, the first with: %v", n, firstErr.Load())
	}
	if peak.Load() > int64(bound) {
		t.Errorf("peak of %d server connections, want at most %d", peak.Load(), bound)
	}
	if peak.Load() == 0 {
		t.Error("no connection of the instances was seen")
	}
	// Idle, the pools keep what they opened, within the bound, for
	// DefaultConnMaxIdleTime (TestPoolByNeed sees them go).
	if n := count(); n > bound {
		t.Errorf("%d idle connections after the burst, want at most %d", n, bound)
	}
}

// countedPostgres returns the DSN of a schema of the test's own on the
// server of AUTH_TEST_POSTGRES, with an application_name of the test's
// own, and a function that counts the server's connections of that name:
// others may share the server.
func countedPostgres(t *testing.T) (dsn string, count func() int) {
	t.Helper()
	u, err := url.Parse(sqltest.PostgresDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	app := fmt.Sprintf("authpool%d", time.Now().UnixNano())
	q := u.Query()
	q.Set("application_name", app)
	u.RawQuery = q.Encode()
	admin := sqltest.Postgres(t)
	admin.SetMaxOpenConns(1)
	return u.String(), func() int {
		var n int
		if err := admin.QueryRow("SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", app).Scan(&n); err != nil {
			t.Error(err)
		}
		return n
	}
}

// eventually polls cond until it holds, and fails the test if it does
// not within a generous time: for what database/sql or the server do in
// the background (closing connections), whose exact moment the test does
// not control.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("after 20s, still not: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A pool New set up opens connections as its load needs them, up to
// DefaultMaxOpenConns however many requests press, and closes them again
// once the load no longer uses them: a serial load keeps one connection,
// a burst opens the rest, and after it a serial load is back to one, then
// an idle pool to none. DefaultConnMaxIdleTime is shortened here once the
// burst is over, so that the test need not wait out its 30 seconds.
func TestPoolByNeed(t *testing.T) {
	dsn, count := countedPostgres(t)
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	st, err := sqlstore.New(db, sqlstore.Postgres)
	if err != nil {
		t.Fatal(err)
	}
	if got := db.Stats().MaxOpenConnections; got != sqlstore.DefaultMaxOpenConns {
		t.Fatalf("MaxOpenConnections %d after New, want %d", got, sqlstore.DefaultMaxOpenConns)
	}
	ctx := t.Context()
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	call := func(id string, c int) error {
		s := store.Session{Handle: fmt.Sprintf("%s-%d", id, c), UserID: id, LoginID: id,
			CreatedAt: now, RefreshedAt: now, ExpiresAt: now.Add(time.Hour)}
		if err := st.CreateSession(ctx, s, store.TokenHash{byte(c)}, 0); err != nil {
			return err
		}
		_, err := st.UserSessions(ctx, id, now)
		return err
	}
	newUser := func(id string) {
		l := store.Login{LoginKey: store.EmailPasswordKey(id + "@example.com"), Email: id + "@example.com", CreatedAt: now}
		if err := st.CreateUser(ctx, store.User{ID: id, TimeJoined: now}, l); err != nil {
			t.Fatal(err)
		}
	}
	newUser("serial")
	serial := 0
	serialCalls := func(n int) {
		for range n {
			serial++
			if err := call("serial", serial); err != nil {
				t.Fatal(err)
			}
		}
	}

	serialCalls(20)
	if s := db.Stats(); s.OpenConnections != 1 {
		t.Errorf("after calls one at a time, %d connections open, want 1", s.OpenConnections)
	}

	const callers, calls = 100, 10
	for g := range callers {
		newUser(fmt.Sprintf("u%d", g))
	}
	var peak atomic.Int64
	stop, sampled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			peak.Store(max(peak.Load(), int64(count())))
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	start := make(chan struct{})
	var wg sync.WaitGroup
	var failed atomic.Int64
	for g := range callers {
		wg.Go(func() {
			<-start
			for c := range calls {
				if err := call(fmt.Sprintf("u%d", g), c); err != nil {
					if failed.Add(1) == 1 {
						t.Errorf("a call of the burst: %v", err)
					}
				}
			}
		})
	}
	close(start)
	wg.Wait()
	close(stop)
	<-sampled

	s := db.Stats()
	t.Logf("burst of %d callers: peak %d server connections (bound %d), %d waits for a connection; %d open after it",
		callers, peak.Load(), sqlstore.DefaultMaxOpenConns, s.WaitCount, s.OpenConnections)
	if peak.Load() > sqlstore.DefaultMaxOpenConns {
		t.Errorf("peak of %d server connections, want at most %d", peak.Load(), sqlstore.DefaultMaxOpenConns)
	}
	// A request waits only when every connection the bound allows is
	// open and in use: the burst opened them all.
	if s.WaitCount == 0 {
		t.Errorf("no request of the burst waited for a connection: %+v", s)
	}
	if s.InUse != 0 || s.OpenConnections > sqlstore.DefaultMaxOpenConns {
		t.Errorf("after the burst: %d connections open, %d in use; want at most %d, none in use",
			s.OpenConnections, s.InUse, sqlstore.DefaultMaxOpenConns)
	}

	// The connections the burst opened go DefaultConnMaxIdleTime after
	// their last use, while calls one at a time keep using one.
	db.SetConnMaxIdleTime(100 * time.Millisecond)
	eventually(t, "one connection open under calls one at a time", func() bool {
		serialCalls(1)
		return db.Stats().OpenConnections == 1
	})
	eventually(t, "the server holding one connection of the pool", func() bool { return count() <= 1 })
	eventually(t, "no connection open once idle", func() bool { return db.Stats().OpenConnections == 0 })
	eventually(t, "the server holding no connection of the pool", func() bool { return count() == 0 })
	if s := db.Stats(); s.MaxIdleTimeClosed < int64(sqlstore.DefaultMaxOpenConns) || s.MaxIdleClosed != 0 {
		t.Errorf("%d connections closed idle too long, %d closed at the idle bound; want at least %d, and none",
			s.MaxIdleTimeClosed, s.MaxIdleClosed, sqlstore.DefaultMaxOpenConns)
	}
	// And the next request opens one again.
	serialCalls(1)
	if s := db.Stats(); s.OpenConnections != 1 {
		t.Errorf("after a quiet spell and one call, %d connections open, want 1", s.OpenConnections)
	}
}

// A pool the application bounded before New keeps its settings: here a
// bound of 3 with 1 kept idle, which New would have set otherwise.
func TestPoolOfTheApplication(t *testing.T) {
	db := sqltest.SQLiteFile(t)
	db.SetMaxOpenConns(3)
	db.SetMaxIdleConns(1)
	st, err := sqlstore.New(db, sqlstore.SQLite)
	if err != nil {
		t.Fatal(err)
	}
	if got := db.Stats().MaxOpenConnections; got != 3 {
		t.Fatalf("MaxOpenConnections %d after New, want the application's 3", got)
	}
	ctx := t.Context()
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	// The application's code holds its whole bound, so that a store call
	// must wait for a connection: a count of racing calls would depend on
	// the scheduler.
	var held []*sql.Conn
	for range 3 {
		c, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	done := make(chan error, 1)
	go func() {
		_, err := st.UserSessions(ctx, "nobody", time.Now())
		done <- err
	}()
	eventually(t, "a store call waiting for a connection", func() bool { return db.Stats().WaitCount > 0 })
	for _, c := range held {
		c.Close()
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	s := db.Stats()
	// The bound was reached (a call waited), and all but the one the
	// application keeps idle were closed as they were given back.
	if s.OpenConnections != 1 || s.MaxIdleClosed < 2 {
		t.Errorf("after the load: %d open, %d closed at the idle bound; want the application's 1 kept, at least 2 closed", s.OpenConnections, s.MaxIdleClosed)
	}
}
