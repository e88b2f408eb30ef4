package sqlstore_test

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/emailpassword"
	"github.com/latchkit/auth/internal/sqltest"
	"github.com/latchkit/auth/roles"
	"github.com/latchkit/auth/store"
	"github.com/latchkit/auth/store/sqlstore"
)

// Run with (PostgreSQL and MySQL cases need AUTH_TEST_POSTGRES and
// AUTH_TEST_MYSQL):
//
//	go test -run '^$' -bench . -benchtime 3s ./store/sqlstore/

// countedBackend is a database whose driver calls the round-trip tests
// and the benchmarks count. On MySQL parameters are interpolated: one
// round trip per statement instead of prepare, execute, close.
type countedBackend struct {
	name    string
	dialect sqlstore.Dialect
	driver  string
	dsn     func(testing.TB) string
}

var countedBackends = []countedBackend{
	{"sqlite", sqlstore.SQLite, "sqlite", func(tb testing.TB) string {
		return sqltest.SQLiteDSN(filepath.Join(tb.TempDir(), "auth.db"))
	}},
	{"postgres", sqlstore.Postgres, "pgx", sqltest.PostgresDSN},
	{"mysql", sqlstore.MySQL, "mysql", func(tb testing.TB) string {
		cfg, err := mysql.ParseDSN(sqltest.MySQLDSN(tb))
		if err != nil {
			tb.Fatal(err)
		}
		cfg.InterpolateParams = true
		return cfg.FormatDSN()
	}},
}

// open opens a counted, migrated store on a fresh database.
func (be countedBackend) open(tb testing.TB) (*sqlstore.Store, *sqltest.Counter) {
	db, c := sqltest.Counted(tb, be.driver, be.dsn(tb))
	return migrated(tb, db, be.dialect), c
}

// migrated opens a store on db, with room for every benchmark caller's
// connection, and migrates it.
func migrated(tb testing.TB, db *sql.DB, d sqlstore.Dialect) *sqlstore.Store {
	tb.Helper()
	db.SetMaxIdleConns(32)
	st, err := sqlstore.New(db, d)
	if err != nil {
		tb.Fatal(err)
	}
	if err := st.Migrate(context.Background()); err != nil {
		tb.Fatal(err)
	}
	return st
}

// nexter is what a benchmark worker asks for its next iteration.
type nexter interface{ Next() bool }

// loop counts down b.N iterations for a single caller.
type loop struct{ n int }

func (l *loop) Next() bool { l.n--; return l.n >= 0 }

// parallel runs worker in exactly callers goroutines. RunParallel starts
// parallelism × GOMAXPROCS of them, so one caller is a plain loop.
func parallel(b *testing.B, callers int, worker func(pb nexter)) {
	if callers == 1 {
		worker(&loop{n: b.N})
		return
	}
	b.SetParallelism(callers / runtime.GOMAXPROCS(0))
	b.RunParallel(func(pb *testing.PB) { worker(pb) })
}

var seq atomic.Int64

// session creates a user with a session and returns its handle and the
// session's first refresh token hash.
func session(b *testing.B, st store.Store, now time.Time) (string, store.TokenHash) {
	n := seq.Add(1)
	ctx := context.Background()
	uid := fmt.Sprintf("u%d", n)
	login := store.Login{LoginKey: store.EmailPasswordKey(uid + "@example.com"), Email: uid + "@example.com", PasswordHash: "x", CreatedAt: now}
	if err := st.CreateUser(ctx, store.User{ID: uid, TimeJoined: now}, login); err != nil {
		b.Fatal(err)
	}
	tok := sha256.Sum256([]byte(uid))
	if err := st.CreateSession(ctx, store.Session{Handle: "s" + uid, UserID: uid, CreatedAt: now, RefreshedAt: now,
		ExpiresAt: now.Add(time.Hour)}, tok, 0); err != nil {
		b.Fatal(err)
	}
	return "s" + uid, tok
}

func next(cur store.TokenHash, i int) store.TokenHash {
	return sha256.Sum256(append(cur[:], byte(i), byte(i>>8), byte(i>>16), byte(i>>24)))
}

// BenchmarkRotate is the store's rotation alone: the floor under a
// refresh.
func BenchmarkRotate(b *testing.B) {
	for _, be := range countedBackends {
		for _, callers := range []int{1, 16} {
			b.Run(fmt.Sprintf("%s/callers=%d", be.name, callers), func(b *testing.B) {
				st, count := be.open(b)
				now := time.Now()
				start := count.Load()
				b.ResetTimer()
				parallel(b, callers, func(pb nexter) {
					handle, cur := session(b, st, now)
					for i := 0; pb.Next(); i++ {
						nx := next(cur, i)
						if _, err := st.RotateRefreshToken(context.Background(), store.Rotation{
							Handle: handle, Generation: int64(i), Presented: cur, Next: nx, NextKey: "k", Now: now, ExpiresAt: now.Add(time.Hour),
						}); err != nil {
							b.Error(err)
							return
						}
						cur = nx
					}
				})
				b.ReportMetric(float64(count.Load()-start)/float64(b.N), "trips/op")
			})
		}
	}
}

// BenchmarkRefresh is a whole refresh through the handler (no network):
// rotation plus signing plus the HTTP answer; "+roles" has roles on and
// the user an admin, so that each refresh also reads the user's roles and
// permissions.
func BenchmarkRefresh(b *testing.B) {
	for _, be := range countedBackends {
		for _, withRoles := range []bool{false, true} {
			for _, callers := range []int{1, 16} {
				name := be.name
				if withRoles {
					name += "+roles"
				}
				b.Run(fmt.Sprintf("%s/callers=%d", name, callers), func(b *testing.B) {
					benchRefresh(b, be, withRoles, callers)
				})
			}
		}
	}
}

func benchRefresh(b *testing.B, be countedBackend, withRoles bool, callers int) {
	st, count := be.open(b)
	var rr *roles.Recipe
	if withRoles {
		rr = roles.New(roles.Config{})
	}
	a := newAuth(b, st, rr)
	if rr != nil {
		if _, err := rr.CreateRole(context.Background(), "admin", "posts:read", "posts:write"); err != nil {
			b.Fatal(err)
		}
	}
	var start int64
	b.ResetTimer()
	parallel(b, callers, func(pb nexter) {
		refresh, userID := signUpUser(b, a, fmt.Sprintf("bench%d@example.com", seq.Add(1)))
		if rr != nil {
			if _, err := rr.Give(context.Background(), userID, "admin"); err != nil {
				b.Error(err)
				return
			}
		}
		atomic.CompareAndSwapInt64(&start, 0, count.Load())
		for pb.Next() {
			req := httptest.NewRequest("POST", "/auth/session/refresh", nil)
			req.Header.Set("Authorization", "Bearer "+refresh)
			req.Header.Set("st-auth-mode", "header")
			rec := httptest.NewRecorder()
			a.ServeHTTP(rec, req)
			if rec.Code != 200 {
				b.Errorf("refresh: %d %s", rec.Code, rec.Body)
				return
			}
			refresh = rec.Header().Get("st-refresh-token")
		}
	})
	b.ReportMetric(float64(count.Load()-start)/float64(b.N), "trips/op")
}

// BenchmarkSignUp is a sign-up through the handler with cheap hashing, so
// the store's part shows: a user, a session, its first token.
func BenchmarkSignUp(b *testing.B) {
	for _, be := range countedBackends {
		for _, callers := range []int{1, 16} {
			b.Run(fmt.Sprintf("%s/callers=%d", be.name, callers), func(b *testing.B) {
				st, count := be.open(b)
				a := newAuth(b, st, nil)
				a.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/auth/jwt/jwks.json", nil)) // make the signing key
				signUp(b, a)
				start := count.Load()
				b.ResetTimer()
				parallel(b, callers, func(pb nexter) {
					for pb.Next() {
						signUp(b, a)
					}
				})
				b.ReportMetric(float64(count.Load()-start)/float64(b.N), "trips/op")
			})
		}
	}
}

// BenchmarkSignIn is a password sign-in through the handler with cheap
// hashing, so the store's part shows: statements per sign-in and, on
// PostgreSQL running on this machine, the database's CPU time per sign-in
// (every postgres process, from /proc).
//
//	go test -run '^$' -bench 'SignIn/postgres' -benchtime 2000x -count 3 ./store/sqlstore/
func BenchmarkSignIn(b *testing.B) {
	for _, be := range countedBackends {
		b.Run(be.name, func(b *testing.B) {
			st, count := be.open(b)
			a := newAuth(b, st, nil)
			a.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/auth/jwt/jwks.json", nil)) // make the signing key
			email := fmt.Sprintf("bench%d@example.com", seq.Add(1))
			signUpAs(b, a, email)
			signIn(b, a, email)
			start := count.Load()
			cpu0, measured := sqltest.PostgresCPU()
			b.ResetTimer()
			for range b.N {
				signIn(b, a, email)
			}
			b.StopTimer()
			b.ReportMetric(float64(count.Load()-start)/float64(b.N), "trips/op")
			if cpu1, ok := sqltest.PostgresCPU(); be.name == "postgres" && measured && ok {
				b.ReportMetric(float64((cpu1-cpu0).Microseconds())/float64(b.N), "pg-µs/op")
			}
		})
	}
}

// signIn signs email in, with signUp's password, in header mode.
func signIn(b *testing.B, a *auth.Auth, email string) {
	req := httptest.NewRequest("POST", "/auth/signin", strings.NewReader(
		`{"formFields":[{"id":"email","value":"`+email+`"},{"id":"password","value":"bench password 1"}]}`))
	req.Header.Set("st-auth-mode", "header")
	rec := httptest.NewRecorder()
	a.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"status":"OK"`) {
		b.Fatalf("sign-in: %d %s", rec.Code, rec.Body)
	}
}

func newAuth(b *testing.B, st store.Store, rr *roles.Recipe) *auth.Auth {
	cfg := auth.Config{
		Store: st,
		EmailPassword: emailpassword.Config{
			Hashing:             emailpassword.Hashing{Memory: 64, Iterations: 1, Parallelism: 1},
			InsecureWeakHashing: true,
		},
		// As the load harness runs the demo: a benchmark refreshes each
		// session far past the per-session allowance.
		RateLimits: auth.RateLimits{
			SessionRefreshes:   auth.Rate{Burst: math.MaxInt32, Every: time.Millisecond},
			ClientNewPasswords: auth.Rate{Burst: math.MaxInt32, Every: time.Millisecond},
		},
	}
	if rr != nil {
		cfg.Roles = rr
	}
	a, err := auth.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return a
}

// signUp signs a new user up in header mode and returns the refresh token.
func signUp(b *testing.B, a *auth.Auth) string {
	refresh, _ := signUpUser(b, a, fmt.Sprintf("bench%d@example.com", seq.Add(1)))
	return refresh
}

// signUpAs signs email up in header mode and returns the refresh token.
func signUpAs(b *testing.B, a *auth.Auth, email string) string {
	refresh, _ := signUpUser(b, a, email)
	return refresh
}

// signUpUser signs email up in header mode and returns the refresh token
// and the user's id.
func signUpUser(b *testing.B, a *auth.Auth, email string) (refresh, userID string) {
	req := httptest.NewRequest("POST", "/auth/signup", strings.NewReader(
		`{"formFields":[{"id":"email","value":"`+email+`"},{"id":"password","value":"bench password 1"}]}`))
	req.Header.Set("st-auth-mode", "header")
	rec := httptest.NewRecorder()
	a.ServeHTTP(rec, req)
	var answer struct {
		User struct {
			ID string `json:"id"`
		} `json:"user"`
	}
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &answer) != nil {
		b.Fatalf("sign-up: %d %s", rec.Code, rec.Body)
	}
	return rec.Header().Get("st-refresh-token"), answer.User.ID
}

// BenchmarkSession is the read RequireSession makes per request with
// CheckSessionInStore (and no SessionCheckCache).
func BenchmarkSession(b *testing.B) {
	for _, be := range countedBackends {
		for _, callers := range []int{1, 16} {
			b.Run(fmt.Sprintf("%s/callers=%d", be.name, callers), func(b *testing.B) {
				st, count := be.open(b)
				now := time.Now()
				session(b, st, now)
				handle := fmt.Sprintf("su%d", seq.Load())
				start := count.Load()
				b.ResetTimer()
				parallel(b, callers, func(pb nexter) {
					for pb.Next() {
						if _, err := st.Session(context.Background(), handle, now); err != nil {
							b.Error(err)
							return
						}
					}
				})
				b.ReportMetric(float64(count.Load()-start)/float64(b.N), "trips/op")
			})
		}
	}
}

// BenchmarkListUsers reads a page of 100 users, oldest first, from the
// start of the list and from a cursor near its end, and newest first:
// with the index on (time_joined, id) the three cost the same, whatever
// the number of users.
// It lists 1,000 users, and as many more as AUTH_BENCH_USERS says (say
// 1000000; seeding takes minutes).
func BenchmarkListUsers(b *testing.B) {
	sizes := []int{1000}
	if n, err := strconv.Atoi(os.Getenv("AUTH_BENCH_USERS")); err == nil && n > 1000 {
		sizes = append(sizes, n)
	}
	for _, be := range countedBackends {
		for _, users := range sizes {
			b.Run(fmt.Sprintf("%s/users=%d", be.name, users), func(b *testing.B) {
				db, count := sqltest.Counted(b, be.driver, be.dsn(b))
				st := migrated(b, db, be.dialect)
				joined := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
				id := func(i int) string { return fmt.Sprintf("bu%09d", i) }
				seedUsers(b, db, users, func(i int) string {
					// Two users a millisecond, so that ties are broken by id.
					return fmt.Sprintf("('%s', %d)", id(i), joined+int64(i/2))
				})
				deep := store.UserCursor(store.User{ID: id(users - 200), TimeJoined: time.UnixMilli(joined + int64((users-200)/2))})
				for _, c := range []struct {
					name, after string
					newest      bool
				}{{"first", "", false}, {"deep", deep, false}, {"newest", "", true}} {
					b.Run(c.name, func(b *testing.B) {
						start := count.Load()
						for b.Loop() {
							page, err := st.ListUsers(context.Background(), store.UserQuery{After: c.after, Newest: c.newest, Limit: 100})
							if err != nil || len(page.Users) != 100 {
								b.Fatalf("a page: %d users, %v", len(page.Users), err)
							}
						}
						b.ReportMetric(float64(count.Load()-start)/float64(b.N), "trips/op")
					})
				}
			})
		}
	}
}

// seedUsers inserts n users, whose rows row makes, a thousand a
// statement: CreateUser, a transaction each, would take the benchmark's
// time many times over at a million.
func seedUsers(tb testing.TB, db *sql.DB, n int, row func(i int) string) {
	tb.Helper()
	for i := 0; i < n; i += 1000 {
		rows := make([]string, 0, 1000)
		for j := i; j < min(n, i+1000); j++ {
			rows = append(rows, row(j))
		}
		if _, err := db.Exec(`INSERT INTO auth_users (id, time_joined) VALUES ` + strings.Join(rows, ", ")); err != nil {
			tb.Fatal(err)
		}
	}
}
