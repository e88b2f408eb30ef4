package sqlstore_test

import (
	"bytes"
	"database/sql"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/internal/sqltest"
	"github.com/latchkit/auth/store"
	"github.com/latchkit/auth/store/sqlstore"
)

// viaProxy opens a migrated PostgreSQL store whose connections go through
// a proxy the test can cut.
func viaProxy(t *testing.T) (*sqlstore.Store, *sqltest.Proxy) {
	t.Helper()
	dsn := sqltest.PostgresDSN(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	p := sqltest.NewProxy(t, u.Host)
	db, err := sql.Open("pgx", p.Via(dsn))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	st, err := sqlstore.New(db, sqlstore.Postgres)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	return st, p
}

// With the database out of reach, the store's reads and writes, single
// statements and transactions, fail with errors that match
// store.ErrUnavailable; when it is back, they succeed again without help.
func TestOutageStoreErrors(t *testing.T) {
	st, p := viaProxy(t)
	ctx := t.Context()
	now := time.Now()
	u := store.User{ID: "u1", TimeJoined: now}
	l := store.Login{LoginKey: store.LoginKey{Method: store.MethodEmailPassword, Subject: "a@example.com"}, Email: "a@example.com", PasswordHash: "h", CreatedAt: now}
	if err := st.CreateUser(ctx, u, l); err != nil {
		t.Fatal(err)
	}
	sess := store.Session{Handle: "s1", UserID: "u1", LoginID: "u1", CreatedAt: now, RefreshedAt: now, ExpiresAt: now.Add(time.Hour)}
	first := store.TokenHash{1}
	if err := st.CreateSession(ctx, sess, first, 0); err != nil {
		t.Fatal(err)
	}
	calls := []struct {
		name string
		call func() error
	}{
		{"Login", func() error {
			_, err := st.Login(ctx, store.LoginKey{Method: store.MethodEmailPassword, Subject: "a@example.com"})
			return err
		}},
		{"UserByID", func() error { _, err := st.UserByID(ctx, "u1"); return err }},
		{"Session", func() error { _, err := st.Session(ctx, "s1", now); return err }},
		{"SigningKeys", func() error { _, err := st.SigningKeys(ctx, now); return err }},
		{"CreateSession", func() error {
			s := sess
			s.Handle = "s2"
			return st.CreateSession(ctx, s, store.TokenHash{2}, 0)
		}},
		{"RotateRefreshToken", func() error {
			_, err := st.RotateRefreshToken(ctx, store.Rotation{Handle: "s1", Presented: first, Next: store.TokenHash{3},
				Now: now, ExpiresAt: now.Add(time.Hour)})
			return err
		}},
		{"RevokeUserSessions", func() error { _, err := st.RevokeUserSessions(ctx, "nobody"); return err }},
		{"TakeRateLimit", func() error {
			_, _, err := st.TakeRateLimit(ctx, "k", time.Second, 5, now)
			return err
		}},
	}

	// Idle connections in the pool, so that the cut breaks some too.
	for _, c := range calls[:4] {
		if err := c.call(); err != nil {
			t.Fatalf("%s before the outage: %v", c.name, err)
		}
	}
	p.Cut()
	for _, c := range calls {
		if err := c.call(); !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("%s during the outage: %v, want an error matching store.ErrUnavailable", c.name, err)
		}
	}
	p.Restore()
	for _, c := range calls {
		if err := c.call(); err != nil && c.name != "RotateRefreshToken" {
			t.Errorf("%s after the outage: %v", c.name, err)
		}
	}
}

// lockedBuffer is a log destination for many goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Sign-ins, refreshes and session checks run while the database goes away
// (every connection closed, new ones refused) and comes back. Every
// answer is what it would be without the outage, or a 503 with
// Retry-After that issues no tokens; none is a 500. Once the database is
// back the same requests succeed, with no restart.
func TestOutageUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("a few seconds of load")
	}
	st, p := viaProxy(t)
	var logs lockedBuffer
	srv := authtest.NewServer(t, auth.Config{
		Store:  st,
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	const workers = 16
	emails := make([]string, workers)
	for i := range emails {
		emails[i] = srv.NewEmail()
		if res := srv.NewClient(authtest.Cookie).SignUp(emails[i], authtest.Password); res.StatusCode != http.StatusOK || res.Status != "OK" {
			t.Fatalf("sign-up: %d %s", res.StatusCode, res.Body)
		}
	}

	var (
		down     atomic.Bool
		stop     atomic.Bool
		mu       sync.Mutex
		counts   = map[string]int{}
		problems []string
		unavail  atomic.Int64 // 503s while the database was down
		okAfter  atomic.Int64
		restored atomic.Bool
		wg       sync.WaitGroup
	)
	note := func(op string, res *authtest.Response) bool {
		key := op + " " + http.StatusText(res.StatusCode)
		mu.Lock()
		counts[key]++
		mu.Unlock()
		bad := func(why string) bool {
			mu.Lock()
			if len(problems) < 20 {
				problems = append(problems, op+": "+why+": "+string(res.Body))
			}
			mu.Unlock()
			return false
		}
		switch res.StatusCode {
		case http.StatusOK:
			if op == "sign-in" && res.Status != "OK" {
				return bad("200 with status " + res.Status)
			}
			if restored.Load() {
				okAfter.Add(1)
			}
			return true
		case http.StatusServiceUnavailable:
			if res.Header.Get("Retry-After") == "" {
				return bad("503 without Retry-After")
			}
			if res.IssuedTokens() {
				return bad("503 that issues tokens")
			}
			if down.Load() {
				unavail.Add(1)
			}
			return false
		case http.StatusUnauthorized:
			// A refresh whose rotation committed as the connection
			// broke leaves the client with the token it replaced.
			if op == "refresh" {
				return false
			}
		}
		return bad("unexpected status " + res.Status)
	}
	for w := range workers {
		wg.Go(func() {
			for !stop.Load() {
				cl := srv.NewClient(authtest.Cookie)
				if !note("sign-in", cl.SignIn(emails[w], authtest.Password)) {
					time.Sleep(5 * time.Millisecond)
					continue
				}
				for range 5 {
					if stop.Load() || !note("refresh", cl.Refresh()) {
						break
					}
					note("session", cl.Get("/api/session"))
				}
			}
		})
	}
	time.Sleep(500 * time.Millisecond)
	down.Store(true)
	p.Cut()
	time.Sleep(1500 * time.Millisecond)
	down.Store(false)
	p.Restore()
	restored.Store(true)
	deadline := time.Now().Add(10 * time.Second)
	for okAfter.Load() < 100 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)
	stop.Store(true)
	wg.Wait()

	t.Logf("answers: %v", counts)
	for _, p := range problems {
		t.Error(p)
	}
	if unavail.Load() == 0 {
		t.Error("no request was answered 503 while the database was down")
	}
	if okAfter.Load() < 100 {
		t.Errorf("%d successful answers after the database came back, want the store to recover", okAfter.Load())
	}
	if strings.Contains(logs.String(), "internal error") {
		t.Errorf("an outage logged as an internal error:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), "level=WARN msg=\"auth: store unavailable\"") {
		t.Errorf("the outage was not logged at Warn:\n%.2000s", logs.String())
	}

	// A fresh sign-in and refresh work as before.
	cl := srv.NewClient(authtest.Cookie)
	if res := cl.SignIn(emails[0], authtest.Password); res.StatusCode != http.StatusOK || res.Status != "OK" || !res.IssuedTokens() {
		t.Fatalf("sign-in after the outage: %d %s", res.StatusCode, res.Body)
	}
	if res := cl.Refresh(); res.StatusCode != http.StatusOK || !res.IssuedTokens() {
		t.Fatalf("refresh after the outage: %d %s", res.StatusCode, res.Body)
	}
}
