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
// never holds more than 3 × DefaultMaxOpenConns of their connections, so
// three instances fit in PostgreSQL's default max_connections of 100.
func TestPoolBoundUnderBurst(t *testing.T) {
	const (
		instances = 3
		perInst   = 150 // concurrent callers per instance
		calls     = 10
	)
	dsn := sqltest.PostgresDSN(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	// A name of our own, to count our connections only: others may share
	// the server.
	app := fmt.Sprintf("authpool%d", time.Now().UnixNano())
	q := u.Query()
	q.Set("application_name", app)
	u.RawQuery = q.Encode()

	stores := make([]*sqlstore.Store, instances)
	dbs := make([]*sql.DB, instances)
	for i := range stores {
		db, err := sql.Open("pgx", u.String())
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

	admin := sqltest.Postgres(t)
	count := func() int {
		var n int
		if err := admin.QueryRow("SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", app).Scan(&n); err != nil {
			t.Error(err)
		}
		return n
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
	// Idle, the pools keep what they opened, within the bound, until
	// DefaultConnMaxIdleTime.
	if n := count(); n > bound {
		t.Errorf("%d idle connections after the burst, want at most %d", n, bound)
	}
}
