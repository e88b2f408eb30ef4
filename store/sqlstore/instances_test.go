package sqlstore_test

import (
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
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

// sharedBackend is a database that several *sql.DB can open: the DSN of a
// fresh one, and the driver and dialect to open it with.
type sharedBackend struct {
	name    string
	driver  string
	dialect sqlstore.Dialect
	dsn     func(testing.TB) string
}

var sharedBackends = []sharedBackend{
	{"sqlite-file", "sqlite", sqlstore.SQLite, sqltest.SQLiteFileDSN},
	{"postgres", "pgx", sqlstore.Postgres, sqltest.PostgresDSN},
	{"mysql", "mysql", sqlstore.MySQL, sqltest.MySQLDSN},
}

// cluster is three instances of an application on one database: each an
// *auth.Auth behind its own test server, with its own *sql.DB and Store,
// all on one clock.
type cluster struct {
	t     *testing.T
	srv   [3]*authtest.Server
	clock *authtest.Clock
	users atomic.Int64
}

// newCluster opens the database of b three times, migrates it from the
// three stores at once, as instances starting together do, and starts an
// Auth on each.
func newCluster(t *testing.T, b sharedBackend, cfg auth.Config) *cluster {
	t.Helper()
	dsn := b.dsn(t)
	var stores [3]*sqlstore.Store
	for i := range stores {
		db, err := sql.Open(b.driver, dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		if stores[i], err = sqlstore.New(db, b.dialect); err != nil {
			t.Fatal(err)
		}
	}
	var errs [3]error
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, st := range stores {
		wg.Go(func() {
			<-start
			errs[i] = st.Migrate(t.Context())
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("instance %d: concurrent Migrate: %v", i, err)
		}
	}
	c := &cluster{t: t, clock: authtest.NewClock(authtest.Start)}
	for i, st := range stores {
		cfg := cfg
		cfg.Store, cfg.Now = st, c.clock.Now
		c.srv[i] = authtest.NewServer(t, cfg)
	}
	return c
}

// newEmail returns an email no other call on the cluster returned. (The
// servers' own NewEmail would repeat across instances.)
func (c *cluster) newEmail() string {
	return fmt.Sprintf("user%d@example.com", c.users.Add(1))
}

// signUp signs a new user up on instance i, in mode m, and returns the
// client holding the session and the user's id.
func (c *cluster) signUp(i int, m authtest.Mode) (*authtest.Client, string, string) {
	c.t.Helper()
	cl := c.srv[i].NewClient(m)
	email := c.newEmail()
	res := cl.SignUp(email, authtest.Password)
	if res.StatusCode != http.StatusOK || res.Status != "OK" {
		c.t.Fatalf("instance %d: sign-up of %s: %d %s", i, email, res.StatusCode, res.Body)
	}
	user, _ := res.JSON["user"].(map[string]any)
	id, _ := user["id"].(string)
	if id == "" {
		c.t.Fatalf("instance %d: sign-up answer has no user id: %s", i, res.Body)
	}
	return cl, email, id
}

// signIn signs in on instance i in mode m.
func (c *cluster) signIn(i int, m authtest.Mode, email string) *authtest.Client {
	c.t.Helper()
	cl := c.srv[i].NewClient(m)
	if res := cl.SignIn(email, authtest.Password); res.StatusCode != http.StatusOK || res.Status != "OK" {
		c.t.Fatalf("instance %d: sign-in of %s: %d %s", i, email, res.StatusCode, res.Body)
	}
	return cl
}

// on returns a client of instance i, in mode m, holding the given tokens:
// the same user agent, talking to another instance behind a load
// balancer.
func (c *cluster) on(i int, m authtest.Mode, access, refresh string) *authtest.Client {
	cl := c.srv[i].NewClient(m)
	cl.SetTokens(access, refresh)
	return cl
}

// session reads /api/session on instance i with an access token (header
// mode) and returns the answer.
func (c *cluster) session(i int, access string) *authtest.Response {
	c.t.Helper()
	return c.on(i, authtest.Header, access, "").Get("/api/session")
}

// wantSession asserts that an access token is accepted on instance i for
// the given user.
func (c *cluster) wantSession(i int, access, userID string) {
	c.t.Helper()
	res := c.session(i, access)
	got, _ := res.JSON["userId"].(string)
	if res.StatusCode != http.StatusOK || got != userID {
		c.t.Fatalf("instance %d: /api/session: %d %s, want 200 for user %s", i, res.StatusCode, res.Body, userID)
	}
}

// refresh presents a refresh token to instance i in header mode and
// returns the answer.
func (c *cluster) refresh(i int, tok string) *authtest.Response {
	c.t.Helper()
	return c.on(i, authtest.Header, "", tok).Refresh()
}

// wantRefresh asserts that refreshing tok on instance i is answered with
// status and message ("" for 200).
func (c *cluster) wantRefresh(i int, tok string, status int, message string) *authtest.Response {
	c.t.Helper()
	res := c.refresh(i, tok)
	if res.StatusCode != status || res.Message != message {
		c.t.Fatalf("instance %d: refresh: %d %s, want %d %q", i, res.StatusCode, res.Body, status, message)
	}
	return res
}

// kid returns the key id in the header of an access token.
func kid(t *testing.T, access string) string {
	t.Helper()
	head, _, _ := strings.Cut(access, ".")
	b, err := base64.RawURLEncoding.DecodeString(head)
	var h struct {
		Kid string `json:"kid"`
	}
	if err != nil || json.Unmarshal(b, &h) != nil || h.Kid == "" {
		t.Fatalf("access token without a kid: %q", access)
	}
	return h.Kid
}

// TestInstances runs three instances of an application on one database and
// drives them as a load balancer would: each request of a user to any of
// them. Whatever one instance does, the others see at once, because the
// database is all they share.
func TestInstances(t *testing.T) {
	for _, b := range sharedBackends {
		t.Run(b.name, func(t *testing.T) {
			t.Run("round robin", func(t *testing.T) { testRoundRobin(t, b) })
			t.Run("concurrent refresh", func(t *testing.T) { testConcurrentRefresh(t, b) })
			t.Run("theft", func(t *testing.T) { testTheftAcrossInstances(t, b) })
			t.Run("revoke all sessions", func(t *testing.T) { testRevokeAcrossInstances(t, b) })
			t.Run("signing keys", func(t *testing.T) { testSigningKeysAcrossInstances(t, b) })
		})
	}
}

// testRoundRobin signs up on one instance, signs in on the next and uses
// and refreshes the session on the third, in every transfer mode.
func testRoundRobin(t *testing.T, b sharedBackend) {
	c := newCluster(t, b, auth.Config{})
	for round := range 6 {
		m := authtest.Modes[round%len(authtest.Modes)]
		up, in, use := round%3, (round+1)%3, (round+2)%3

		_, email, userID := c.signUp(up, m)
		signedIn := c.signIn(in, m, email)
		access, refresh := signedIn.Tokens()
		if access == "" || refresh == "" {
			t.Fatalf("round %d (%v): sign-in on %d handed out no tokens", round, m, in)
		}

		// The third instance knows the session: its access token
		// verifies there, and its refresh token refreshes there.
		third := c.on(use, m, access, refresh)
		res := third.Get("/api/session")
		if got, _ := res.JSON["userId"].(string); res.StatusCode != http.StatusOK || got != userID {
			t.Fatalf("round %d (%v): /api/session on %d with a session from %d: %d %s", round, m, use, in, res.StatusCode, res.Body)
		}
		handle, _ := res.JSON["sessionHandle"].(string)
		if res := third.Refresh(); res.StatusCode != http.StatusOK || res.Status != "OK" {
			t.Fatalf("round %d (%v): refresh on %d of a session from %d: %d %s", round, m, use, in, res.StatusCode, res.Body)
		}
		access2, refresh2 := third.Tokens()
		if access2 == access || refresh2 == refresh || access2 == "" || refresh2 == "" {
			t.Fatalf("round %d (%v): refresh on %d did not hand out new tokens", round, m, use)
		}

		// The refreshed pair works on the first instance, and all
		// three list the session (sign-up's and sign-in's: two).
		back := c.on(up, m, access2, "")
		res = back.Get("/api/session")
		if got, _ := res.JSON["sessionHandle"].(string); res.StatusCode != http.StatusOK || got != handle {
			t.Fatalf("round %d (%v): /api/session on %d after a refresh on %d: %d %s, want session %s", round, m, up, use, res.StatusCode, res.Body, handle)
		}
		for i, s := range c.srv {
			sessions, err := s.Auth.Sessions(t.Context(), userID)
			if err != nil || len(sessions) != 2 {
				t.Fatalf("round %d: instance %d lists %d sessions (%v), want 2", round, i, len(sessions), err)
			}
		}
		// Move on in time, so that later rounds are later.
		c.clock.Advance(time.Minute)
	}
}

// refreshResult is one answer to a concurrent refresh.
type refreshResult struct {
	instance int
	status   int
	message  string
	refresh  string // the new refresh token of a 200
	err      error
}

// rawRefresh presents a refresh token to a server in header mode. Unlike
// authtest.Client it is safe to call from any goroutine: it reports
// transport errors instead of failing the test.
func rawRefresh(s *authtest.Server, tok string) (status int, message, next string, err error) {
	req, err := http.NewRequest(http.MethodPost, s.URL+"/auth/session/refresh", nil)
	if err != nil {
		return 0, "", "", err
	}
	req.Header.Set("rid", "session")
	req.Header.Set("st-auth-mode", "header")
	req.Header.Set("Authorization", "Bearer "+tok)
	res, err := s.Client().Do(req)
	if err != nil {
		return 0, "", "", err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		return 0, "", "", err
	}
	var msg struct {
		Message string `json:"message"`
	}
	json.Unmarshal(body, &msg)
	return res.StatusCode, msg.Message, res.Header.Get("st-refresh-token"), nil
}

// refreshAtOnce presents tok n times at once, spread over the three
// instances, and returns the answers.
func (c *cluster) refreshAtOnce(tok string, n int) []refreshResult {
	results := make([]refreshResult, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for g := range n {
		wg.Go(func() {
			<-start
			r := &results[g]
			r.instance = g % 3
			r.status, r.message, r.refresh, r.err = rawRefresh(c.srv[r.instance], tok)
		})
	}
	close(start)
	wg.Wait()
	return results
}

// testConcurrentRefresh presents one refresh token to all three instances
// at once, as a client that refreshes in parallel (or a thief racing its
// victim) would. Exactly one request wins; every other is answered 401,
// never 5xx; the losers that find the token superseded report theft,
// which ends the session, so no lineage survives; and in no case do two.
func testConcurrentRefresh(t *testing.T, b sharedBackend) {
	const (
		rounds     = 5
		goroutines = 30
	)
	c := newCluster(t, b, auth.Config{})
	for round := range rounds {
		cl, _, _ := c.signUp(round%3, authtest.Header)
		_, tok := cl.Tokens()

		results := c.refreshAtOnce(tok, goroutines)

		var won []refreshResult
		thefts, unauthorised := 0, 0
		for _, r := range results {
			switch {
			case r.err != nil:
				t.Fatalf("round %d: refresh on %d: %v", round, r.instance, r.err)
			case r.status == http.StatusOK && r.refresh != "":
				won = append(won, r)
			case r.status == http.StatusUnauthorized && r.message == "token theft detected":
				thefts++
			case r.status == http.StatusUnauthorized && r.message == "unauthorised":
				unauthorised++
			default:
				t.Fatalf("round %d: refresh on %d: %d %q; want 200 with a token, or 401 \"token theft detected\" or \"unauthorised\"",
					round, r.instance, r.status, r.message)
			}
		}
		t.Logf("round %d: %d won, %d theft, %d unauthorised", round, len(won), thefts, unauthorised)
		if len(won) != 1 {
			t.Fatalf("round %d: %d of %d concurrent refreshes of one token succeeded, want exactly 1", round, len(won), goroutines)
		}
		if thefts == 0 {
			t.Errorf("round %d: no loser reported token theft: the first request after the winner presents a superseded token", round)
		}

		// At most one lineage survives: try every token the winners
		// were given, each on another instance than the one that issued
		// it. As theft was detected, the session is gone altogether.
		alive := 0
		for _, r := range won {
			if res := c.refresh((r.instance+1)%3, r.refresh); res.StatusCode == http.StatusOK {
				alive++
			} else if res.StatusCode != http.StatusUnauthorized {
				t.Fatalf("round %d: refresh with a winner's token: %d %s", round, res.StatusCode, res.Body)
			}
		}
		if alive > 1 || thefts > 0 && alive > 0 {
			t.Fatalf("round %d: %d lineages still refresh after %d theft reports, want none (and never more than one)", round, alive, thefts)
		}
	}
}

// testTheftAcrossInstances refreshes on one instance and replays the old
// token on another: theft, detected by the second instance, ends the
// session for the third.
func testTheftAcrossInstances(t *testing.T, b sharedBackend) {
	c := newCluster(t, b, auth.Config{})
	for round := range 3 {
		a, bb, cc := round%3, (round+1)%3, (round+2)%3
		cl, _, userID := c.signUp(a, authtest.Header)
		_, old := cl.Tokens()
		if res := cl.Refresh(); res.StatusCode != http.StatusOK {
			t.Fatalf("round %d: refresh on %d: %d %s", round, a, res.StatusCode, res.Body)
		}
		access, next := cl.Tokens()
		c.wantSession(cc, access, userID)

		res := c.wantRefresh(bb, old, http.StatusUnauthorized, "token theft detected")
		if res.Header.Get("front-token") != "remove" {
			t.Errorf("round %d: theft on %d did not tell the client to forget its session", round, bb)
		}
		c.wantRefresh(cc, next, http.StatusUnauthorized, "unauthorised")
		c.wantRefresh(a, next, http.StatusUnauthorized, "unauthorised")
		for i, s := range c.srv {
			if sessions, err := s.Auth.Sessions(t.Context(), userID); err != nil || len(sessions) != 0 {
				t.Fatalf("round %d: instance %d lists %d sessions (%v) after theft, want none", round, i, len(sessions), err)
			}
		}
	}
}

// testRevokeAcrossInstances revokes every session of a user through one
// instance's Go API; the others refuse to refresh any of them.
func testRevokeAcrossInstances(t *testing.T, b sharedBackend) {
	c := newCluster(t, b, auth.Config{})
	cl, email, userID := c.signUp(0, authtest.Header)
	clients := []*authtest.Client{cl, c.signIn(1, authtest.Header, email), c.signIn(2, authtest.Header, email)}
	// Another user, whose session must survive.
	other, _, _ := c.signUp(1, authtest.Header)

	n, err := c.srv[1].Auth.RevokeAllSessions(t.Context(), userID)
	if err != nil || n != 3 {
		t.Fatalf("RevokeAllSessions on instance 1: %d, %v; want 3 sessions ended", n, err)
	}
	for _, cl := range clients {
		_, tok := cl.Tokens()
		for j := range c.srv {
			c.wantRefresh(j, tok, http.StatusUnauthorized, "unauthorised")
		}
	}
	_, tok := other.Tokens()
	c.wantRefresh(2, tok, http.StatusOK, "")
	// The user can sign in again, on any instance.
	again := c.signIn(2, authtest.Header, email)
	access, _ := again.Tokens()
	c.wantSession(0, access, userID)
}

// testSigningKeysAcrossInstances: one signing key, made by whichever
// instance signs first, serves all three; when it stops signing, the next
// instance to sign makes a new one that the others pick up, and tokens
// signed with the old one keep working until they expire.
func testSigningKeysAcrossInstances(t *testing.T, b sharedBackend) {
	const keyLifetime = time.Hour
	c := newCluster(t, b, auth.Config{SigningKeyLifetime: keyLifetime, AccessTokenLifetime: time.Hour})

	clA, email, userID := c.signUp(0, authtest.Header)
	accessA, _ := clA.Tokens()
	k1 := kid(t, accessA)
	for i := range c.srv {
		c.wantSession(i, accessA, userID)
	}
	for i := 1; i < 3; i++ {
		access, _ := c.signIn(i, authtest.Header, email).Tokens()
		if k := kid(t, access); k != k1 {
			t.Fatalf("instance %d signs with key %s, instance 0 with %s: want one shared key", i, k, k1)
		}
		for j := range c.srv {
			c.wantSession(j, access, userID)
		}
	}

	// Just before the key stops signing, instance 0 signs a token with it.
	c.clock.Advance(keyLifetime - time.Minute)
	oldAccess, _ := c.signIn(0, authtest.Header, email).Tokens()
	if k := kid(t, oldAccess); k != k1 {
		t.Fatalf("before the key lifetime ends: key %s, want %s", k, k1)
	}
	issued := c.clock.Now()

	// Past the lifetime: instance 1 signs with a new key, which the
	// other two verify, and then sign with themselves.
	c.clock.Advance(2 * time.Minute)
	clB := c.signIn(1, authtest.Header, email)
	newAccess, _ := clB.Tokens()
	k2 := kid(t, newAccess)
	if k2 == k1 {
		t.Fatalf("instance 1 still signs with key %s after its lifetime", k1)
	}
	for i := range c.srv {
		c.wantSession(i, newAccess, userID)
		c.wantSession(i, oldAccess, userID)
	}
	for _, i := range []int{0, 2} {
		access, _ := c.signIn(i, authtest.Header, email).Tokens()
		if k := kid(t, access); k != k2 {
			t.Fatalf("instance %d signs with key %s after instance 1 made %s: want the shared new key", i, k, k2)
		}
	}

	// The old key's token works until it expires, then nowhere; the new
	// key's token still does.
	c.clock.Advance(issued.Add(time.Hour - time.Second).Sub(c.clock.Now()))
	for i := range c.srv {
		c.wantSession(i, oldAccess, userID)
	}
	c.clock.Advance(10 * time.Second)
	for i := range c.srv {
		if res := c.session(i, oldAccess); res.StatusCode != http.StatusUnauthorized || res.Message != "try refresh token" {
			t.Fatalf("instance %d: /api/session with an expired token of the old key: %d %s, want 401 try refresh token", i, res.StatusCode, res.Body)
		}
		c.wantSession(i, newAccess, userID)
	}
	// The session of the old token refreshes, on any instance, into a
	// token of the new key.
	_, refresh := clA.Tokens()
	res := c.wantRefresh(2, refresh, http.StatusOK, "")
	if k := kid(t, res.Header.Get("st-access-token")); k != k2 {
		t.Fatalf("refresh after the rotation signs with %s, want %s", k, k2)
	}
}

// TestMigrateRace starts several instances on a new database at once, each
// migrating it, as a deployment of several replicas does: every Migrate
// succeeds, each step is applied once, and the schema works.
func TestMigrateRace(t *testing.T) {
	const (
		rounds    = 20
		instances = 4
	)
	for _, b := range sharedBackends {
		t.Run(b.name, func(t *testing.T) {
			steps, err := sqlstore.Migrations(b.dialect)
			if err != nil {
				t.Fatal(err)
			}
			for round := range rounds {
				migrateRace(t, b, round, instances, len(steps))
			}
		})
	}
}

// migrateRace is one round of TestMigrateRace. It closes its pools when
// it returns, so that the rounds do not add up to more connections than
// a server allows.
func migrateRace(t *testing.T, b sharedBackend, round, instances, steps int) {
	dsn := b.dsn(t)
	dbs := make([]*sql.DB, instances)
	errs := make([]error, instances)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range dbs {
		db, err := sql.Open(b.driver, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		dbs[i] = db
		st, err := sqlstore.New(db, b.dialect)
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			<-start
			errs[i] = st.Migrate(t.Context())
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("round %d: instance %d of %d migrating at once: %v", round, i, instances, err)
		}
	}
	var n int
	if err := dbs[0].QueryRow("SELECT COUNT(*) FROM auth_schema_migrations").Scan(&n); err != nil || n != steps {
		t.Fatalf("round %d: %d migrations recorded (%v), want %d", round, n, err, steps)
	}
	st, _ := sqlstore.New(dbs[instances-1], b.dialect)
	login := store.Login{LoginKey: store.EmailPasswordKey("a@example.com"), Email: "a@example.com", CreatedAt: authtest.Start}
	if err := st.CreateUser(t.Context(), store.User{ID: "u1", TimeJoined: authtest.Start}, login); err != nil {
		t.Fatalf("round %d: the migrated schema: %v", round, err)
	}
}
