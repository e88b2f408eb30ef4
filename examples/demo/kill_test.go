package main

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/latchkit/auth/internal/sqltest"
	"github.com/latchkit/auth/store"
	"github.com/latchkit/auth/store/sqlstore"
)

// killRounds is how often each kill scenario runs on each backend.
const killRounds = 10

// killBackend is a database the demo runs on: the -db value of a fresh
// one, and how the test opens it itself.
type killBackend struct {
	name    string
	db      func(testing.TB) string
	driver  string
	dialect sqlstore.Dialect
	dsn     func(db string) string // the -db value as a DSN of driver
}

var killBackends = []killBackend{
	{
		name:    "sqlite",
		db:      func(tb testing.TB) string { return "sqlite:" + filepath.Join(tb.TempDir(), "auth.db") },
		driver:  "sqlite",
		dialect: sqlstore.SQLite,
		dsn:     func(db string) string { return sqltest.SQLiteDSN(strings.TrimPrefix(db, "sqlite:")) },
	},
	{
		name:    "postgres",
		db:      sqltest.PostgresDSN, // skips without AUTH_TEST_POSTGRES
		driver:  "pgx",
		dialect: sqlstore.Postgres,
		dsn:     func(db string) string { return db },
	},
}

// TestKill kills the demo with SIGKILL the moment it has answered a
// sign-up, a refresh or a password reset with a 2xx, and then checks the
// database, directly or through a restarted demo, for exactly what the
// answer promised (SECURITY.md, "Faults"): the store commits before the
// response is written.
func TestKill(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: TestKill builds the demo and kills it with SIGKILL, a few dozen times")
	}
	bin := buildDemo(t)
	for _, b := range killBackends {
		t.Run(b.name, func(t *testing.T) {
			t.Run("sign-up", func(t *testing.T) { testKillAfterSignUp(t, bin, b) })
			t.Run("refresh", func(t *testing.T) { testKillAfterRefresh(t, bin, b) })
			t.Run("password reset", func(t *testing.T) { testKillAfterReset(t, bin, b) })
		})
	}
}

// buildDemo builds the demo with the go command on PATH.
func buildDemo(t *testing.T) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("%s needs the go command on PATH to build the demo: %v", t.Name(), err)
	}
	bin := filepath.Join(t.TempDir(), "demo")
	start := time.Now()
	out, err := exec.Command(goTool, "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	t.Logf("built the demo in %v", time.Since(start).Round(time.Millisecond))
	return bin
}

// demoProc is a running demo process.
type demoProc struct {
	t      *testing.T
	cmd    *exec.Cmd
	url    string      // http://127.0.0.1:PORT
	lines  chan string // its standard output, line by line
	done   chan struct{}
	stderr *syncBuffer
}

// syncBuffer is a bytes.Buffer safe for the writes of exec's copying
// goroutine and the reads of the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// startDemo starts the demo on db, on a free port, and waits until it
// listens. The process is killed when the test ends, if not before.
func startDemo(t *testing.T, bin, db string) *demoProc {
	t.Helper()
	cmd := exec.Command(bin, "-addr", "127.0.0.1:0", "-db", db)
	// The flags say everything; no DEMO_* variable of the environment
	// (DEMO_SMTP, say) may change where reset email goes.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "DEMO_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	d := &demoProc{t: t, cmd: cmd, lines: make(chan string, 4096), done: make(chan struct{}), stderr: &syncBuffer{}}
	cmd.Stderr = d.stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		s := bufio.NewScanner(stdout)
		for s.Scan() {
			d.lines <- s.Text()
		}
		// Wait only once the output has been read to its end.
		cmd.Wait()
		close(d.lines)
		close(d.done)
	}()
	t.Cleanup(d.kill)

	line := d.waitLine(15*time.Second, func(l string) bool { return strings.HasPrefix(l, "demo: listening on ") })
	addr, _, _ := strings.Cut(strings.TrimPrefix(line, "demo: listening on "), " ")
	if !strings.HasPrefix(addr, "http://127.0.0.1:") {
		t.Fatalf("demo: unexpected first line %q", line)
	}
	d.url = addr
	return d
}

// waitLine reads standard output until a line matches, and returns it.
func (d *demoProc) waitLine(timeout time.Duration, match func(string) bool) string {
	d.t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case l, ok := <-d.lines:
			if !ok {
				d.t.Fatalf("demo exited (%v) before the line wanted; stderr:\n%s", d.cmd.ProcessState, d.stderr)
			}
			if match(l) {
				return l
			}
		case <-deadline:
			d.t.Fatalf("demo: no line wanted after %v; stderr:\n%s", timeout, d.stderr)
		}
	}
}

// kill sends SIGKILL and waits for the process to end.
func (d *demoProc) kill() {
	d.cmd.Process.Kill()
	select {
	case <-d.done:
	case <-time.After(10 * time.Second):
		d.t.Errorf("demo: still running 10s after SIGKILL")
	}
}

// reply is an answer of the demo, read in full.
type reply struct {
	status int
	header http.Header
	body   []byte
	json   map[string]any
}

func (r reply) field(name string) string {
	s, _ := r.json[name].(string)
	return s
}

// post sends a JSON request in header mode, as a mobile client would.
func (d *demoProc) post(path, rid, bearer string, body any) reply {
	d.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			d.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(http.MethodPost, d.url+path, rd)
	if err != nil {
		d.t.Fatal(err)
	}
	req.Header.Set("rid", rid)
	req.Header.Set("st-auth-mode", "header")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	client := &http.Client{Timeout: 15 * time.Second}
	res, err := client.Do(req)
	if err != nil {
		d.t.Fatalf("POST %s: %v; stderr:\n%s", path, err, d.stderr)
	}
	defer res.Body.Close()
	r := reply{status: res.StatusCode, header: res.Header}
	if r.body, err = io.ReadAll(res.Body); err != nil {
		d.t.Fatalf("POST %s: reading the answer: %v", path, err)
	}
	json.Unmarshal(r.body, &r.json)
	return r
}

func credentials(email, password string) any {
	return map[string]any{"formFields": []map[string]string{{"id": "email", "value": email}, {"id": "password", "value": password}}}
}

func (d *demoProc) signUp(email, password string) reply {
	d.t.Helper()
	return d.post("/auth/signup", "emailpassword", "", credentials(email, password))
}

func (d *demoProc) signIn(email, password string) reply {
	d.t.Helper()
	return d.post("/auth/signin", "emailpassword", "", credentials(email, password))
}

func (d *demoProc) refresh(tok string) reply {
	d.t.Helper()
	return d.post("/auth/session/refresh", "session", tok, nil)
}

func (d *demoProc) requestReset(email string) reply {
	d.t.Helper()
	return d.post("/auth/user/password/reset/token", "emailpassword", "",
		map[string]any{"formFields": []map[string]string{{"id": "email", "value": email}}})
}

func (d *demoProc) resetPassword(token, password string) reply {
	d.t.Helper()
	return d.post("/auth/user/password/reset", "emailpassword", "", map[string]any{
		"method":     "token",
		"formFields": []map[string]string{{"id": "password", "value": password}},
		"token":      token,
	})
}

// resetToken reads the reset email to an address off the demo's standard
// output (the log mailer) and returns the token of its link.
func (d *demoProc) resetToken(email string) string {
	d.t.Helper()
	d.waitLine(15*time.Second, func(l string) bool { return strings.HasPrefix(l, "To: ") && strings.Contains(l, email) })
	link := d.waitLine(5*time.Second, func(l string) bool { return linkPattern.MatchString(l) })
	u, err := url.Parse(linkPattern.FindString(link))
	if err != nil || u.Query().Get("token") == "" {
		d.t.Fatalf("reset email to %s: no token in %q", email, link)
	}
	return u.Query().Get("token")
}

var linkPattern = regexp.MustCompile(`https?://[^\s"<>]+token=[^\s"<>]+`)

// okSession asserts a 200 "OK" that hands out tokens, and returns them.
func okSession(t *testing.T, what string, r reply) (access, refresh string) {
	t.Helper()
	access, refresh = r.header.Get("st-access-token"), r.header.Get("st-refresh-token")
	if r.status != http.StatusOK || r.field("status") != "OK" || access == "" || refresh == "" {
		t.Fatalf("%s: %d %s, want 200 OK with tokens", what, r.status, r.body)
	}
	return access, refresh
}

// wantAnswer asserts a status code and a "status" (200) or "message"
// (4xx) of the body.
func wantAnswer(t *testing.T, what string, r reply, status int, word string) {
	t.Helper()
	got := r.field("status")
	if status != http.StatusOK {
		got = r.field("message")
	}
	if r.status != status || got != word {
		t.Fatalf("%s: %d %s, want %d %q", what, r.status, r.body, status, word)
	}
}

// newEmail returns an address unique to the test run, lower-case as the
// library stores it.
func newEmail(what string, round int) string {
	return strings.ToLower(fmt.Sprintf("%s%d-%s@example.com", what, round, rand.Text()[:8]))
}

// openDirect opens the demo's database with a store of the test's own.
func openDirect(t *testing.T, b killBackend, db string) *sqlstore.Store {
	t.Helper()
	sqldb, err := sql.Open(b.driver, b.dsn(db))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sqldb.Close() })
	st, err := sqlstore.New(sqldb, b.dialect)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// testKillAfterSignUp: after the 200 of a sign-up, the user and its
// session are in the database, and the refresh token handed out is the
// session's current one.
func testKillAfterSignUp(t *testing.T, bin string, b killBackend) {
	db := b.db(t)
	for round := range killRounds {
		d := startDemo(t, bin, db)
		email := newEmail("signup", round)
		res := d.signUp(email, "old password 1")
		access, refresh := okSession(t, "sign-up", res)
		d.kill()

		user, _ := res.json["user"].(map[string]any)
		userID, _ := user["id"].(string)
		st := openDirect(t, b, db)
		ctx := t.Context()
		u, err := st.Login(ctx, store.EmailPasswordKey(email))
		if err != nil || u.UserID != userID {
			t.Fatalf("round %d: after SIGKILL, the user %s signed up as %s: %+v, %v", round, email, userID, u, err)
		}
		now := time.Now()
		next := sha256.Sum256([]byte(rand.Text()))
		s, err := st.RotateRefreshToken(ctx, store.Rotation{
			Handle: sessionHandle(t, access), Presented: sha256.Sum256([]byte(refresh)), Next: next, NextKey: "k",
			Now: now, ExpiresAt: now.Add(time.Hour),
		})
		if err != nil || s.Session.UserID != userID {
			t.Fatalf("round %d: after SIGKILL, the refresh token of the sign-up: %+v, %v; want it to rotate", round, s, err)
		}
	}
}

// sessionHandle reads the session handle out of an access token.
func sessionHandle(t *testing.T, access string) string {
	t.Helper()
	parts := strings.Split(access, ".")
	var claims struct {
		Handle string `json:"sessionHandle"`
	}
	if len(parts) != 3 {
		t.Fatalf("not an access token: %q", access)
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil || json.Unmarshal(b, &claims) != nil || claims.Handle == "" {
		t.Fatalf("no session handle in the access token: %v", err)
	}
	return claims.Handle
}

// testKillAfterRefresh: after the 200 of a refresh, the new token is the
// current one and the old one is superseded: a restarted demo refreshes
// the new one and calls the old one theft.
func testKillAfterRefresh(t *testing.T, bin string, b killBackend) {
	db := b.db(t)
	d := startDemo(t, bin, db)
	for round := range killRounds {
		_, old := okSession(t, "sign-up", d.signUp(newEmail("refresh", round), "old password 1"))
		_, next := okSession(t, "refresh", d.refresh(old))
		d.kill()

		d = startDemo(t, bin, db)
		// The new token first: presenting the old one would end the
		// session, and so hide whether the new one had been stored.
		okSession(t, fmt.Sprintf("round %d: after SIGKILL, a refresh with the token the last refresh handed out", round), d.refresh(next))
		wantAnswer(t, fmt.Sprintf("round %d: after SIGKILL, a refresh with the token the last refresh exchanged", round),
			d.refresh(old), http.StatusUnauthorized, "token theft detected")
	}
}

// testKillAfterReset: after the 200 of a password reset, the new password
// is stored, the old one and the reset token no longer work, and the
// sessions of the user have ended.
func testKillAfterReset(t *testing.T, bin string, b killBackend) {
	db := b.db(t)
	d := startDemo(t, bin, db)
	for round := range killRounds {
		email := newEmail("reset", round)
		_, refresh := okSession(t, "sign-up", d.signUp(email, "old password 1"))
		wantAnswer(t, "reset request", d.requestReset(email), http.StatusOK, "OK")
		token := d.resetToken(email)
		wantAnswer(t, "password reset", d.resetPassword(token, "new password 2"), http.StatusOK, "OK")
		d.kill()

		d = startDemo(t, bin, db)
		what := fmt.Sprintf("round %d: after SIGKILL following a password reset, ", round)
		okSession(t, what+"sign-in with the new password", d.signIn(email, "new password 2"))
		wantAnswer(t, what+"sign-in with the old password", d.signIn(email, "old password 1"), http.StatusOK, "WRONG_CREDENTIALS_ERROR")
		wantAnswer(t, what+"refresh of the session from before", d.refresh(refresh), http.StatusUnauthorized, "unauthorised")
		wantAnswer(t, what+"the reset token again", d.resetPassword(token, "third password 3"), http.StatusOK, "RESET_PASSWORD_INVALID_TOKEN_ERROR")
	}
}
