package auth_test

// Fault injection (SECURITY.md "Faults", SECURITY-NOTES.md 5.2): every flow
// is run once without faults to count its store calls, then once per call
// and per fault (an error, a delay or a panic, before or after the store
// commits) on a fresh server whose store is a faultstore around a memstore.
// Each run checks that the answer is a defined one, lets the client retry
// as a client would, and then, with faults off, checks the invariants
// through the HTTP API and the inner memstore:
//
//	(a) a session has at most one live refresh token, the newest one;
//	(b) a failure before a rotation commits leaves the presented token valid;
//	(c) a failure after it never yields two live tokens;
//	(d) a revoked session never refreshes;
//	(e) a reset token works once;
//	(f) no plaintext token or password reaches the store or the log;
//
// and that nobody is locked out: every user signs in with the password the
// store committed last.
//
// Presenting a refresh token changes what it tests (a superseded token
// revokes its session; a working one becomes the predecessor), so (a) is
// checked twice: once on a copy of the store per token, rebuilt from the
// faultstore's log, which sees every live token; and once through the API,
// newest token first, every older one after it must fail.
//
// TestFaultClientTimeout covers the third kind of fault SECURITY.md names,
// a store slower than the client's patience, and TestFaultStore the
// wrapper itself.
//
// A store that panics inside a handler is not recovered by the library:
// net/http recovers the handler's panic and closes the connection, so the
// client sees a transport error (EOF), never an answer. The sweep accepts
// that or a 500, and checks that the server survives and the invariants
// hold.

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/internal/faultstore"
	"github.com/latchkit/auth/internal/password"
	"github.com/latchkit/auth/store"
	"github.com/latchkit/auth/store/memstore"
)

// faultNewPassword is what the reset flows set.
const faultNewPassword = "fault new secret 9"

// faultPatience is how long a client waits in TestFaultClientTimeout, where
// the store takes longer than faultRequestTimeout.
const faultPatience = 200 * time.Millisecond

// faultDelay is the sleep of a Delay fault in the sweep: the answer must
// not change.
const faultDelay = time.Millisecond

// faultRequestTimeout bounds every request; reaching it is a hang.
const faultRequestTimeout = 10 * time.Second

// The tallies of the fault tests, logged (go test -v) when each ends.
var (
	faultRuns       atomic.Int64
	faultViolations atomic.Int64
	faultPanicSeen  sync.Map // what a client saw when the store panicked -> count (*atomic.Int64)
	faultFindings   sync.Map // a noteworthy, allowed outcome -> count (*atomic.Int64)
)

func faultTally(m *sync.Map, key string) {
	v, _ := m.LoadOrStore(key, new(atomic.Int64))
	v.(*atomic.Int64).Add(1)
}

func faultTallies(m *sync.Map) string {
	var lines []string
	m.Range(func(k, v any) bool {
		lines = append(lines, fmt.Sprintf("  %5d  %s", v.(*atomic.Int64).Load(), k))
		return true
	})
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// faultCombos are the faults tried at every call.
var faultCombos = []struct {
	kind faultstore.Kind
	when faultstore.When
}{
	{faultstore.Error, faultstore.Before},
	{faultstore.Error, faultstore.After},
	{faultstore.Delay, faultstore.Before},
	{faultstore.Delay, faultstore.After},
	{faultstore.Panic, faultstore.Before},
	{faultstore.Panic, faultstore.After},
}

// faultAnswer is the outcome of one request: a response, or the transport
// error a client saw.
type faultAnswer struct {
	res *authtest.Response
	err error
}

func (a faultAnswer) is(code int, status string) bool {
	return a.err == nil && a.res.StatusCode == code && a.res.Status == status
}

func (a faultAnswer) message(code int, msg string) bool {
	return a.err == nil && a.res.StatusCode == code && a.res.Message == msg
}

func (a faultAnswer) ok() bool { return a.is(http.StatusOK, "OK") }

func (a faultAnswer) String() string {
	if a.err != nil {
		return "transport error: " + a.err.Error()
	}
	return fmt.Sprintf("%d %s", a.res.StatusCode, bytes.TrimSpace(a.res.Body))
}

// faultEnv is one run: a server on a fresh memstore behind a faultstore,
// and what its clients were given.
type faultEnv struct {
	t      *testing.T
	mem    *memstore.Store
	fs     *faultstore.Store
	srv    *authtest.Server
	cfg    auth.Config
	log    *resetLog       // a slog destination the invariants scan for secrets
	mail   chan auth.Event // EventResetEmailSent and EventMailFailed
	prober *authtest.Client

	received map[store.TokenHash]string // refresh tokens handed to clients, by hash
	handleOf map[store.TokenHash]string // the session of each received token, per its front-token
	secrets  map[string]bool            // every token and password seen in plain text

	// patience, if set, is how long the client waits for the faulted
	// request before it gives up.
	patience time.Duration

	// What the flow under test used.
	plan      faultstore.Plan
	email     string // its user
	presented string // the refresh token the faulted refresh presented
	access    string // the access token the faulted sign-out presented
	resetTok  string // the reset token the faulted submission presented
}

func newFaultEnv(t *testing.T, configure func(*auth.Config)) *faultEnv {
	e := &faultEnv{
		t:        t,
		mem:      memstore.New(),
		log:      &resetLog{},
		mail:     make(chan auth.Event, 16),
		received: map[store.TokenHash]string{},
		handleOf: map[store.TokenHash]string{},
		secrets:  map[string]bool{authtest.Password: true, faultNewPassword: true},
	}
	e.fs = faultstore.New(e.mem)
	cfg := auth.Config{
		Store:  e.fs,
		Logger: slog.New(slog.NewTextHandler(e.log, &slog.HandlerOptions{Level: slog.LevelDebug})),
		OnEvent: func(_ context.Context, ev auth.Event) {
			if ev.Kind == auth.EventResetEmailSent || ev.Kind == auth.EventMailFailed {
				select {
				case e.mail <- ev:
				default:
				}
			}
		},
	}
	if configure != nil {
		configure(&cfg)
	}
	e.srv = authtest.NewServer(t, cfg)
	e.cfg = e.srv.AuthConfig
	e.prober = e.srv.NewClient(authtest.Header)
	return e
}

// violation reports a broken invariant or an undefined answer.
func (e *faultEnv) violation(format string, args ...any) {
	e.t.Helper()
	faultViolations.Add(1)
	e.t.Errorf("VIOLATION: "+format, args...)
}

// finding tallies an allowed outcome worth reporting.
func (e *faultEnv) finding(what string) { faultTally(&faultFindings, what) }

// send is authtest.Client's request, except that a transport error is an
// answer rather than a fatal error: a store that panics closes the
// connection. It keeps the tokens of the answer as the client does, and
// records them.
func (e *faultEnv) send(c *authtest.Client, method, path string, body []byte, rid, bearer string) faultAnswer {
	e.t.Helper()
	timeout := faultRequestTimeout
	if e.patience > 0 {
		timeout = e.patience
	}
	ctx, cancel := context.WithTimeout(e.t.Context(), timeout)
	defer cancel()
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, e.srv.URL+path, r)
	if err != nil {
		e.t.Fatal(err)
	}
	for k, v := range c.Header {
		req.Header[k] = v
	}
	req.Header.Set("rid", rid)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	switch c.Mode {
	case authtest.Header:
		req.Header.Set("st-auth-mode", "header")
	case authtest.Body:
		req.Header.Set("fg-auth-mode", "body")
	}
	if c.Mode != authtest.Cookie && bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	res, err := c.HTTP.Do(req)
	if err != nil {
		if ctx.Err() != nil && e.patience == 0 {
			e.violation("%s %s hung for %v", method, path, timeout)
		}
		return faultAnswer{err: err}
	}
	defer res.Body.Close()
	out := &authtest.Response{StatusCode: res.StatusCode, Header: res.Header}
	if out.Body, err = io.ReadAll(res.Body); err != nil {
		return faultAnswer{err: err}
	}
	if json.Unmarshal(out.Body, &out.JSON) == nil {
		out.Status, _ = out.JSON["status"].(string)
		out.Message, _ = out.JSON["message"].(string)
	}
	e.keep(c, res, out)
	return faultAnswer{res: out}
}

// keep does what the client does with the tokens of a response (the jar
// has kept the cookies already) and records every token for the checks.
func (e *faultEnv) keep(c *authtest.Client, res *http.Response, out *authtest.Response) {
	front := out.Header.Get("front-token")
	if front == "remove" {
		c.FrontToken, c.AccessToken, c.RefreshToken = "", "", ""
	} else if front != "" {
		c.FrontToken = front
	}
	var access, refresh string
	if v := out.Header.Get("st-access-token"); v != "" {
		access = v
	}
	if v := out.Header.Get("st-refresh-token"); v != "" {
		refresh = v
	}
	if v, ok := out.JSON["accessToken"].(string); ok {
		access = v
	}
	if v, ok := out.JSON["refreshToken"].(string); ok {
		refresh = v
	}
	for _, ck := range res.Cookies() {
		switch {
		case ck.Name == "sAccessToken" && ck.Value != "":
			access = ck.Value
		case ck.Name == "sRefreshToken" && ck.Value != "":
			refresh = ck.Value
		}
	}
	if c.Mode != authtest.Cookie {
		if access != "" {
			c.AccessToken = access
		}
		if refresh != "" {
			c.RefreshToken = refresh
		}
	}
	if access != "" {
		e.secrets[access] = true
	}
	if refresh != "" {
		e.secrets[refresh] = true
		h := sha256.Sum256([]byte(refresh))
		e.received[h] = refresh
		e.handleOf[h] = faultFrontHandle(front)
	}
}

// faultFrontHandle reads the session handle out of a front-token.
func faultFrontHandle(front string) string {
	b, err := base64.StdEncoding.DecodeString(front)
	if err != nil {
		return ""
	}
	var v struct {
		Up struct {
			SessionHandle string `json:"sessionHandle"`
		} `json:"up"`
	}
	json.Unmarshal(b, &v)
	return v.Up.SessionHandle
}

func (e *faultEnv) signUp(c *authtest.Client, email, pw string) faultAnswer {
	e.t.Helper()
	access, _ := c.Tokens()
	return e.send(c, http.MethodPost, "/auth/signup", authtest.Credentials(email, pw), "emailpassword", access)
}

func (e *faultEnv) signIn(c *authtest.Client, email, pw string) faultAnswer {
	e.t.Helper()
	access, _ := c.Tokens()
	return e.send(c, http.MethodPost, "/auth/signin", authtest.Credentials(email, pw), "emailpassword", access)
}

func (e *faultEnv) refresh(c *authtest.Client) faultAnswer {
	e.t.Helper()
	_, refresh := c.Tokens()
	return e.send(c, http.MethodPost, "/auth/session/refresh", nil, "session", refresh)
}

func (e *faultEnv) signOut(c *authtest.Client) faultAnswer {
	e.t.Helper()
	access, _ := c.Tokens()
	return e.send(c, http.MethodPost, "/auth/signout", nil, "session", access)
}

func (e *faultEnv) requestReset(c *authtest.Client, email string) faultAnswer {
	e.t.Helper()
	b, _ := json.Marshal(map[string]any{"formFields": []map[string]any{{"id": "email", "value": email}}})
	return e.send(c, http.MethodPost, "/auth/user/password/reset/token", b, "emailpassword", "")
}

func (e *faultEnv) submitReset(c *authtest.Client, tok, pw string) faultAnswer {
	e.t.Helper()
	b, _ := json.Marshal(map[string]any{
		"method":     "token",
		"formFields": []map[string]any{{"id": "password", "value": pw}},
		"token":      tok,
	})
	return e.send(c, http.MethodPost, "/auth/user/password/reset", b, "emailpassword", "")
}

// mustSignUp signs up the flow's user outside any fault.
func (e *faultEnv) mustSignUp(c *authtest.Client) {
	e.t.Helper()
	e.email = e.srv.NewEmail()
	if a := e.signUp(c, e.email, authtest.Password); !a.ok() {
		e.t.Fatalf("setup: sign-up: %v", a)
	}
}

// mailOutcome waits for the outbox to finish one reset request.
func (e *faultEnv) mailOutcome() (auth.Event, bool) {
	e.t.Helper()
	select {
	case ev := <-e.mail:
		return ev, true
	case <-time.After(faultRequestTimeout):
		e.violation("the outbox neither sent nor reported a reset email within %v", faultRequestTimeout)
		return auth.Event{}, false
	}
}

// mustResetToken requests a reset outside any fault and returns the
// mailed token.
func (e *faultEnv) mustResetToken(c *authtest.Client) string {
	e.t.Helper()
	before := len(e.srv.Mailbox.Messages())
	if a := e.requestReset(c, e.email); !a.ok() {
		e.t.Fatalf("reset request without faults: %v", a)
	}
	if ev, ok := e.mailOutcome(); !ok || ev.Kind != auth.EventResetEmailSent {
		e.t.Fatalf("reset request without faults: outcome %q", ev.Kind)
	}
	msgs := e.srv.Mailbox.WaitFor(e.t, before+1, faultRequestTimeout)
	_, tok := authtest.ResetLink(e.t, msgs[len(msgs)-1])
	e.secrets[tok] = true
	return tok
}

// committed reports whether a call of method made since the flow was
// armed committed in the inner store.
func (e *faultEnv) committed(method string) bool {
	for _, c := range e.fs.Armed() {
		if c.Method == method && c.Committed() {
			return true
		}
	}
	return false
}

// faultFlow is one flow under test.
type faultFlow struct {
	name  string
	modes []authtest.Mode
	// configure adjusts the Config of each run.
	configure func(*auth.Config)
	// setup runs before the fault is armed; c is the flow's client.
	setup func(e *faultEnv, c *authtest.Client)
	// run is the flow, with the fault armed.
	run func(e *faultEnv, c *authtest.Client) faultAnswer
	// offPath: the flow's store calls happen off the request path (the
	// outbox), so the answer never depends on them.
	offPath bool
	// tolerated are methods whose failure the flow rides over: their
	// Error faults leave the answer unchanged.
	tolerated map[string]bool
	// after runs with faults off: the client reacts to the answer as a
	// client would (retries), and flow-specific invariants are checked.
	after func(e *faultEnv, c *authtest.Client, a faultAnswer)
}

var faultModes = []authtest.Mode{authtest.Cookie, authtest.Header, authtest.Body}

func faultFlows() []faultFlow {
	signUp := faultFlow{
		name:  "signup",
		modes: faultModes,
		run: func(e *faultEnv, c *authtest.Client) faultAnswer {
			e.email = e.srv.NewEmail()
			return e.signUp(c, e.email, authtest.Password)
		},
		after: func(e *faultEnv, c *authtest.Client, a faultAnswer) {
			user, sess := e.committed("CreateUser"), e.committed("CreateSession")
			if a.ok() {
				if !user || !sess {
					e.violation("sign-up answered OK, but committed user %v, session %v", user, sess)
				}
				return
			}
			// The client tries again.
			r := e.signUp(c, e.email, authtest.Password)
			switch {
			case !user && !r.ok():
				e.violation("sign-up retry after a failure before the user was created: %v, want OK", r)
			case user && !r.is(http.StatusOK, "FIELD_ERROR"):
				e.violation("sign-up retry after the user was created: %v, want the email-taken FIELD_ERROR", r)
			case user:
				e.finding("sign-up failed after the user was committed: the retry says the email is taken; signing in works")
				if sess {
					e.finding("sign-up failed after its session was committed: a session nobody holds stays until it expires")
				}
			}
		},
	}

	signIn := faultFlow{
		name:  "signin",
		modes: faultModes,
		setup: func(e *faultEnv, c *authtest.Client) { e.mustSignUp(e.srv.NewClient(authtest.Header)) },
		run: func(e *faultEnv, c *authtest.Client) faultAnswer {
			return e.signIn(c, e.email, authtest.Password)
		},
		after: func(e *faultEnv, c *authtest.Client, a faultAnswer) {
			if a.ok() {
				if !e.committed("CreateSession") {
					e.violation("sign-in answered OK without committing a session")
				}
				return
			}
			if e.committed("CreateSession") {
				e.finding("sign-in failed after its session was committed: a session nobody holds stays until it expires")
			}
			if r := e.signIn(c, e.email, authtest.Password); !r.ok() {
				e.violation("sign-in retry: %v, want OK", r)
			}
		},
	}

	// signin-upgrade: the stored hash has other parameters, so a
	// successful sign-in also replaces it.
	upgrade := signIn
	upgrade.name = "signin-upgrade"
	upgrade.tolerated = map[string]bool{"UpdatePasswordHash": true}
	upgrade.setup = func(e *faultEnv, c *authtest.Client) {
		e.mustSignUp(e.srv.NewClient(authtest.Header))
		u, err := e.mem.Login(e.t.Context(), store.EmailPasswordKey(e.email))
		if err != nil {
			e.t.Fatal(err)
		}
		old := password.Hash(authtest.Password, password.Params{Memory: 32, Time: 1, Threads: 1})
		// Through the faultstore, so that its log stays complete.
		if err := e.fs.UpdatePasswordHash(e.t.Context(), u.UserID, u.PasswordHash, old); err != nil {
			e.t.Fatal(err)
		}
	}
	upgrade.after = func(e *faultEnv, c *authtest.Client, a faultAnswer) {
		signIn.after(e, c, a)
		u, err := e.mem.Login(e.t.Context(), store.EmailPasswordKey(e.email))
		if err != nil {
			e.t.Fatal(err)
		}
		p := e.cfg.Password.Hashing
		current := fmt.Sprintf("$argon2id$v=19$m=%d,t=%d,p=%d$", p.Memory, p.Iterations, p.Parallelism)
		if upgraded := e.committed("UpdatePasswordHash"); upgraded != strings.HasPrefix(u.PasswordHash, current) {
			e.violation("hash upgrade committed: %v, but the stored hash is %.40s", upgraded, u.PasswordHash)
		}
		if !e.committed("UpdatePasswordHash") {
			e.finding("hash upgrade failed: the old hash stays and is replaced at the next sign-in")
		}
	}

	refresh := func(name string, window time.Duration, keyRollover bool, modes []authtest.Mode) faultFlow {
		return faultFlow{
			name:  name,
			modes: modes,
			configure: func(cfg *auth.Config) {
				cfg.RefreshReuseWindow = window
			},
			setup: func(e *faultEnv, c *authtest.Client) {
				e.mustSignUp(c)
				if keyRollover {
					// The signing key stops signing: the refresh loads
					// the keys and adds one before it rotates.
					e.srv.Clock.Advance(auth.DefaultSigningKeyLifetime + time.Second)
				}
			},
			run: func(e *faultEnv, c *authtest.Client) faultAnswer {
				_, e.presented = c.Tokens()
				return e.refresh(c)
			},
			after: func(e *faultEnv, c *authtest.Client, a faultAnswer) {
				rotated := e.committed("RotateRefreshToken")
				if a.ok() {
					if !rotated {
						e.violation("refresh answered OK without committing the rotation")
					}
					return
				}
				// Everything that can fail for the library's own reasons
				// must come before the rotation: a failure after it is a
				// lost response.
				if fired, _ := e.fs.Fired(); rotated && fired.Injected && fired.Method != "RotateRefreshToken" {
					e.violation("the refresh failed at %s after the rotation had committed: %v", fired.Method, a)
				}
				if _, held := c.Tokens(); held != e.presented {
					e.violation("after a failed refresh the client no longer holds the token it presented")
					c.SetTokens("", e.presented)
				}
				// The client tries again with the token it holds.
				r := e.refresh(c)
				switch {
				case !rotated && !r.ok():
					// (b)
					e.violation("retry after a failure before the rotation committed: %v, want OK", r)
				case rotated && window > 0 && !r.ok():
					e.violation("retry inside the reuse window after a lost rotation: %v, want OK", r)
				case rotated && window == 0 && r.ok():
					// (c)
					e.violation("a superseded token refreshed again with no reuse window: two live tokens")
				case rotated && window == 0 && !r.message(http.StatusUnauthorized, "token theft detected"):
					e.violation("retry after a lost rotation with no reuse window: %v, want 401 token theft detected", r)
				case rotated && window == 0:
					e.finding("refresh response lost after the rotation committed, no reuse window: the retry is taken for theft and the session ends")
				case rotated:
					e.finding("refresh response lost after the rotation committed: the retry inside the reuse window recovers")
				}
			},
		}
	}

	signOut := func(name string, checkStore bool, modes []authtest.Mode) faultFlow {
		return faultFlow{
			name:      name,
			modes:     modes,
			configure: func(cfg *auth.Config) { cfg.CheckSessionInStore = checkStore },
			setup:     func(e *faultEnv, c *authtest.Client) { e.mustSignUp(c) },
			run: func(e *faultEnv, c *authtest.Client) faultAnswer {
				e.access, _ = c.Tokens()
				return e.signOut(c)
			},
			after: func(e *faultEnv, c *authtest.Client, a faultAnswer) {
				revoked := e.committed("RevokeSession")
				if a.ok() && !revoked {
					e.violation("sign-out answered OK without revoking the session")
				}
				if !a.ok() {
					r := e.signOut(c)
					switch {
					case checkStore && revoked:
						if !r.message(http.StatusUnauthorized, "unauthorised") {
							e.violation("sign-out retry of a revoked session, session check on: %v, want 401 unauthorised", r)
						}
					case !r.ok():
						e.violation("sign-out retry: %v, want OK", r)
					}
				}
				if checkStore {
					// (d) The access token stops at once.
					probe := e.srv.NewClient(authtest.Header)
					probe.AccessToken = e.access
					if r := e.send(probe, http.MethodGet, "/api/session", nil, "anti-csrf", e.access); !r.message(http.StatusUnauthorized, "unauthorised") {
						e.violation("access token of a signed-out session, session check on: %v, want 401 unauthorised", r)
					}
				}
			},
		}
	}

	resetRequest := faultFlow{
		name:    "reset-request",
		modes:   faultModes,
		offPath: true,
		setup:   func(e *faultEnv, c *authtest.Client) { e.mustSignUp(c) },
		run: func(e *faultEnv, c *authtest.Client) faultAnswer {
			a := e.requestReset(c, e.email)
			e.mailOutcome() // the flow includes the outbox's work
			return a
		},
		after: func(e *faultEnv, c *authtest.Client, a faultAnswer) {
			fired, _ := e.fs.Fired()
			msgs := e.srv.Mailbox.Messages()
			lost := e.plan.Call != 0 && e.plan.Kind != faultstore.Delay
			switch {
			case lost && len(msgs) != 0:
				e.violation("a reset email went out although the %s call failed", fired.Method)
			case !lost && len(msgs) != 1:
				e.violation("%d reset emails, want 1", len(msgs))
			}
			var tok string
			if len(msgs) == 0 {
				if fired.Method == "CreateResetToken" && fired.Committed() {
					e.finding("reset token committed but its email not sent: an orphan token nobody knows, voided by the next reset")
				}
				// No email: the user asks again.
				tok = e.mustResetToken(c)
			} else {
				_, tok = authtest.ResetLink(e.t, msgs[len(msgs)-1])
				e.secrets[tok] = true
			}
			// (e)
			if r := e.submitReset(c, tok, faultNewPassword); !r.ok() {
				e.violation("reset with the mailed token: %v, want OK", r)
			}
			if r := e.submitReset(c, tok, faultNewPassword); !r.is(http.StatusOK, "RESET_PASSWORD_INVALID_TOKEN_ERROR") {
				e.violation("second reset with one token: %v, want RESET_PASSWORD_INVALID_TOKEN_ERROR", r)
			}
		},
	}

	resetSubmit := faultFlow{
		name:  "reset-submit",
		modes: faultModes,
		setup: func(e *faultEnv, c *authtest.Client) {
			e.mustSignUp(c)
			e.resetTok = e.mustResetToken(e.srv.NewClient(authtest.Header))
		},
		run: func(e *faultEnv, c *authtest.Client) faultAnswer {
			return e.submitReset(e.srv.NewClient(authtest.Header), e.resetTok, faultNewPassword)
		},
		after: func(e *faultEnv, c *authtest.Client, a faultAnswer) {
			done := e.committed("ResetPassword")
			if a.ok() && !done {
				e.violation("reset answered OK without committing")
			}
			r := e.submitReset(e.srv.NewClient(authtest.Header), e.resetTok, faultNewPassword)
			switch {
			case done && !r.is(http.StatusOK, "RESET_PASSWORD_INVALID_TOKEN_ERROR"):
				// (e)
				e.violation("reset token used again after the reset committed: %v, want RESET_PASSWORD_INVALID_TOKEN_ERROR", r)
			case !done && !r.ok():
				e.violation("reset retry after a failure before it committed: %v, want OK", r)
			case !done:
				if r := e.submitReset(e.srv.NewClient(authtest.Header), e.resetTok, faultNewPassword); !r.is(http.StatusOK, "RESET_PASSWORD_INVALID_TOKEN_ERROR") {
					e.violation("third use of a reset token: %v, want RESET_PASSWORD_INVALID_TOKEN_ERROR", r)
				}
			case !a.ok():
				e.finding("reset failed after it committed: the new password is set, the retry says the token is invalid")
			}
		},
	}

	return []faultFlow{
		signUp,
		signIn,
		upgrade,
		refresh("refresh", 0, false, faultModes),
		refresh("refresh-window", 10*time.Second, false, faultModes),
		refresh("refresh-keyrollover", 0, true, faultModes),
		refresh("refresh-keyrollover-window", 10*time.Second, true, faultModes),
		signOut("signout", false, faultModes),
		signOut("signout-sessioncheck", true, faultModes),
		resetRequest,
		resetSubmit,
	}
}

// faultSummary logs the tallies so far, over every fault test run.
func faultSummary(t *testing.T) {
	t.Logf("so far: %d faults injected, %d invariant violations", faultRuns.Load(), faultViolations.Load())
	t.Logf("what a client saw when the store panicked inside a handler:\n%s", faultTallies(&faultPanicSeen))
	t.Logf("allowed outcomes worth knowing:\n%s", faultTallies(&faultFindings))
}

// TestFaultSweep runs every flow with a fault at each of its store calls.
func TestFaultSweep(t *testing.T) {
	t.Cleanup(func() { faultSummary(t) })
	for _, f := range faultFlows() {
		for _, m := range f.modes {
			t.Run(f.name+"/"+m.String(), func(t *testing.T) {
				t.Parallel()
				calls := faultCount(t, f, m)
				if len(calls) == 0 {
					t.Fatal("the flow made no store call")
				}
				t.Logf("%d store calls: %s", len(calls), strings.Join(calls, ", "))
				for k := range len(calls) {
					for _, fc := range faultCombos {
						p := faultstore.Plan{Call: k + 1, When: fc.when, Kind: fc.kind, Delay: faultDelay}
						t.Run(fmt.Sprintf("%d-%s-%s-%s", k+1, calls[k], fc.kind, fc.when), func(t *testing.T) {
							faultRun(t, f, m, &p, calls[k])
						})
					}
				}
			})
		}
	}
}

// faultCount runs a flow without faults, checks it, and returns the
// methods of the store calls it made.
func faultCount(t *testing.T, f faultFlow, m authtest.Mode) []string {
	var calls []string
	t.Run("fault-free", func(t *testing.T) {
		calls = faultRun(t, f, m, nil, "")
	})
	return calls
}

// faultRun runs flow f in mode m with the fault of p (none if p is nil) at
// a call of method, and checks the outcome. It returns the methods of the
// calls the flow made.
func faultRun(t *testing.T, f faultFlow, m authtest.Mode, p *faultstore.Plan, method string) []string {
	e := newFaultEnv(t, f.configure)
	c := e.srv.NewClient(m)
	if f.setup != nil {
		f.setup(e, c)
	}
	plan := faultstore.Plan{}
	if p != nil {
		plan = *p
	}
	e.plan = plan
	if plan.Kind == faultstore.Delay && plan.Delay >= faultRequestTimeout {
		e.patience = faultPatience
	}
	e.fs.Arm(plan)
	a := f.run(e, c)
	e.patience = 0
	ctx, cancel := context.WithTimeout(t.Context(), faultRequestTimeout)
	defer cancel()
	if err := e.fs.Wait(ctx); err != nil {
		e.violation("a store call of the flow never returned: %v", err)
	}
	e.fs.Disarm()
	calls := faultstore.Methods(e.fs.Armed())

	if p != nil {
		faultRuns.Add(1)
		fired, ok := e.fs.Fired()
		if !ok {
			t.Fatalf("the fault did not fire; the flow made %d calls: %v", len(calls), calls)
		}
		if fired.Method != method {
			t.Fatalf("call %d was %s in the fault-free run, %s now: the flow is not deterministic", p.Call, method, fired.Method)
		}
		faultCheckAnswer(e, f, p, method, a)
	} else if !a.ok() {
		t.Fatalf("fault-free run: %v", a)
	}
	f.after(e, c, a)
	e.checkInvariants()
	return calls
}

// faultCheckAnswer checks that the answer to a faulted request is a
// defined one.
func faultCheckAnswer(e *faultEnv, f faultFlow, p *faultstore.Plan, method string, a faultAnswer) {
	e.t.Helper()
	internal := a.message(http.StatusInternalServerError, "internal error")
	switch {
	case f.offPath:
		if !a.ok() {
			e.violation("the answer must not depend on the outbox's store calls: %v", a)
		}
	case p.Kind == faultstore.Delay && p.Delay >= faultRequestTimeout:
		// The client gives up; the server notices the closed connection
		// at the same moment and may still get its 503 onto the wire.
		if !errors.Is(a.err, context.DeadlineExceeded) && !a.message(http.StatusServiceUnavailable, "too many requests, try again shortly") {
			e.violation("a store slower than the client's patience: %v, want the client to give up (or a 503)", a)
		}
	case p.Kind == faultstore.Delay:
		if !a.ok() {
			e.violation("a slow store changed the answer: %v, want OK", a)
		}
	case p.Kind == faultstore.Error && f.tolerated[method]:
		if !a.ok() {
			e.violation("a failure of %s must not fail the flow: %v, want OK", method, a)
		}
	case p.Kind == faultstore.Error:
		if !internal {
			e.violation("a store error: %v, want 500 internal error", a)
		}
	case p.Kind == faultstore.Panic:
		switch {
		case a.err != nil:
			// net/http recovered the handler's panic and closed the
			// connection: the client gets no answer at all.
			faultTally(&faultPanicSeen, "transport error: "+faultErrTail(a.err))
		case internal:
			faultTally(&faultPanicSeen, "500 internal error")
		default:
			e.violation("a store panic: %v, want a transport error or 500 internal error", a)
		}
		// The server survived: it still answers.
		probe := e.srv.NewClient(authtest.Header)
		if r := e.send(probe, http.MethodGet, "/api/session", nil, "anti-csrf", ""); !r.message(http.StatusUnauthorized, "unauthorised") {
			e.violation("the server after a store panic: %v, want 401 unauthorised", r)
		}
	}
}

// faultErrTail is the part of a transport error after the URL, which
// changes with every server.
func faultErrTail(err error) string {
	s := err.Error()
	if i := strings.LastIndex(s, ": "); i >= 0 {
		return s[i+2:]
	}
	return s
}

// faultIssued is a refresh token the store committed.
type faultIssued struct {
	hash   store.TokenHash
	handle string
}

// checkInvariants checks, with faults off, the invariants of every session
// and user the run created.
func (e *faultEnv) checkInvariants() {
	e.t.Helper()
	ctx := e.t.Context()
	// Past any reuse window, a superseded token must never work.
	e.srv.Clock.Advance(auth.MaxRefreshReuseWindow + time.Second)

	// What the store committed, in order.
	calls := e.fs.Calls()
	handleOf := map[store.TokenHash]string{}
	var issued []faultIssued
	var handles []string
	revoked := map[string]string{}
	created := map[string]int{} // handle -> index of its CreateSession
	sessionsOf := map[string][]string{}
	resetUser := map[store.TokenHash]string{}
	var users []storedUser
	for i, c := range calls {
		switch c.Method {
		case "CreateUser":
			if c.Committed() {
				users = append(users, storedUser{c.Args[0].(store.User), c.Args[1].(store.Login)})
			}
		case "CreateSession":
			if c.Committed() {
				s, h := c.Args[0].(store.Session), c.Args[1].(store.TokenHash)
				handleOf[h] = s.Handle
				issued = append(issued, faultIssued{h, s.Handle})
				handles = append(handles, s.Handle)
				created[s.Handle] = i
				sessionsOf[s.UserID] = append(sessionsOf[s.UserID], s.Handle)
			}
		case "RotateRefreshToken":
			r := c.Args[0].(store.Rotation)
			switch {
			case c.Committed():
				handleOf[r.Next] = handleOf[r.Presented]
				issued = append(issued, faultIssued{r.Next, handleOf[r.Presented]})
			case c.Delegated && errors.Is(c.Err, store.ErrTokenReused):
				revoked[handleOf[r.Presented]] = "token theft detected"
			}
		case "RevokeSession":
			if c.Committed() {
				revoked[c.Args[0].(string)] = "signed out"
			}
		case "CreateResetToken":
			if c.Committed() {
				t := c.Args[0].(store.ResetToken)
				resetUser[t.Hash] = t.UserID
			}
		case "ResetPassword":
			if c.Committed() {
				for _, h := range sessionsOf[resetUser[c.Args[0].(store.TokenHash)]] {
					if created[h] < i {
						revoked[h] = "password reset"
					}
				}
			}
		}
	}
	// A token a client holds must be one the store committed, of the
	// session its front-token names.
	for h, handle := range e.handleOf {
		if got, ok := handleOf[h]; !ok {
			e.violation("a client was given a refresh token the store never committed")
		} else if got != handle {
			e.violation("a refresh token of session %s came with the front-token of session %s", got, handle)
		}
	}

	// (a), (c), (d) without destroying evidence: each token is tried on
	// its own copy of the store, rebuilt from the calls logged so far, so
	// that no attempt (a superseded token revokes its session; a working
	// one changes which token is the predecessor) hides what another
	// would show.
	for _, handle := range handles {
		why, isRevoked := revoked[handle]
		var live []int
		var tokens []store.TokenHash
		for _, it := range issued {
			if it.handle == handle {
				tokens = append(tokens, it.hash)
			}
		}
		for i, h := range tokens {
			if e.replay(calls).works(e, h) {
				live = append(live, i)
			}
		}
		switch {
		case len(live) > 1:
			e.violation("session %s has %d live refresh tokens (positions %v of %d, oldest first)", handle, len(live), live, len(tokens))
		case isRevoked && len(live) > 0:
			e.violation("session %s ended (%s) but its token %d of %d still refreshes", handle, why, live[0]+1, len(tokens))
		case !isRevoked && (len(live) == 0 || live[0] != len(tokens)-1):
			e.violation("live session %s: its newest token does not refresh (working: %v of %d, oldest first)", handle, live, len(tokens))
		}
	}

	// (a), (c), (d) through the API: per session, present the tokens
	// newest first and stop at the first that works; every other must
	// fail. A live session's newest token works; a revoked session's never
	// does. Tokens no client was given (lost responses) are presented in
	// the inner store.
	for _, handle := range handles {
		var tokens []store.TokenHash
		for _, it := range issued {
			if it.handle == handle {
				tokens = append(tokens, it.hash)
			}
		}
		slices.Reverse(tokens)
		why, isRevoked := revoked[handle]
		_, err := e.mem.Session(ctx, handle, e.srv.Clock.Now())
		switch {
		case isRevoked && err == nil:
			e.violation("session %s ended (%s) but is still in the store", handle, why)
		case !isRevoked && err != nil:
			e.violation("session %s was never ended but the store lost it: %v", handle, err)
		}
		var live []int
		var theft bool
		var successor string               // plain text, if the working token was presented over HTTP
		var successorHash *store.TokenHash // otherwise
		for i, h := range tokens {
			ok, stolen, next, nextHash := e.present(h)
			theft = theft || stolen
			if ok {
				live = append(live, i)
				if len(live) == 1 {
					successor, successorHash = next, nextHash
				}
			}
		}
		switch {
		case isRevoked && len(live) > 0:
			e.violation("session %s ended (%s) but its token %d (of %d, newest first) still refreshes", handle, why, live[0]+1, len(tokens))
		case !isRevoked && (len(live) == 0 || live[0] != 0):
			e.violation("live session %s: its newest token does not refresh (working: %v of %d)", handle, live, len(tokens))
		}
		if len(live) > 1 {
			e.violation("session %s has %d live refresh tokens (positions %v, newest first)", handle, len(live), live)
		}
		// (d) Presenting a superseded token ended the session: the token
		// the check itself was just given must not work either.
		if theft && len(live) > 0 {
			var ok bool
			if successorHash != nil {
				ok, _, _, _ = e.present(*successorHash)
			} else {
				ok, _, _, _ = e.present(sha256.Sum256([]byte(successor)))
			}
			if ok {
				e.violation("session %s refreshed after token theft was detected", handle)
			}
		}
	}

	// No lockout: every user signs in with the password committed last,
	// and not with the other.
	for _, u := range users {
		pw, other := authtest.Password, faultNewPassword
		for _, c := range calls {
			if c.Method == "ResetPassword" && c.Committed() && resetUser[c.Args[0].(store.TokenHash)] == u.User.ID {
				pw, other = faultNewPassword, authtest.Password
			}
		}
		c := e.srv.NewClient(authtest.Header)
		if r := e.signIn(c, u.Email, pw); !r.ok() {
			e.violation("user %s cannot sign in with the password last set: %v", u.Email, r)
		}
		if r := e.signIn(c, u.Email, other); !r.is(http.StatusOK, "WRONG_CREDENTIALS_ERROR") {
			e.violation("user %s signs in with a password not theirs: %v", u.Email, r)
		}
	}

	// (f) No plain text token or password in the store or the log.
	for _, u := range users {
		got, err := e.mem.Login(ctx, u.LoginKey)
		if err != nil {
			e.violation("user %s lost: %v", u.Email, err)
			continue
		}
		if !strings.HasPrefix(got.PasswordHash, "$argon2id$") {
			e.violation("user %s: stored password is not an argon2id hash: %.12q", u.Email, got.PasswordHash)
		}
		sessions, err := e.mem.UserSessions(ctx, u.User.ID, e.srv.Clock.Now())
		if err != nil {
			e.violation("sessions of %s: %v", u.Email, err)
		}
		e.scan("the memstore's user "+u.Email, fmt.Sprintf("%+v %+v", got, sessions))
	}
	for _, c := range e.fs.Calls() {
		e.scan("a call of "+c.Method, fmt.Sprintf("%+v", c.Args))
	}
	e.scan("the log", e.log.String())
}

// faultCopy is a memstore rebuilt from a faultstore's log.
type faultCopy struct{ *memstore.Store }

// replay rebuilds the inner store from the calls that reached it, in
// order, and checks that each answers as it did. The flows make their
// calls one at a time, so the log's order is the order they ran in.
func (e *faultEnv) replay(calls []faultstore.Call) faultCopy {
	e.t.Helper()
	ctx := e.t.Context()
	m := memstore.New()
	for _, c := range calls {
		if !c.Delegated {
			continue
		}
		var err error
		switch a := c.Args; c.Method {
		case "CreateUser":
			err = m.CreateUser(ctx, a[0].(store.User), a[1].(store.Login))
		case "UserByID":
			_, err = m.UserByID(ctx, a[0].(string))
		case "Login":
			_, err = m.Login(ctx, a[0].(store.LoginKey))
		case "Logins":
			_, err = m.Logins(ctx, a[0].(string))
		case "UpdatePasswordHash":
			err = m.UpdatePasswordHash(ctx, a[0].(string), a[1].(string), a[2].(string))
		case "CreateResetToken":
			err = m.CreateResetToken(ctx, a[0].(store.ResetToken))
		case "ResetToken":
			_, err = m.ResetToken(ctx, a[0].(store.TokenHash), a[1].(time.Time))
		case "ResetPassword":
			_, _, err = m.ResetPassword(ctx, a[0].(store.TokenHash), a[1].(string), a[2].(time.Time))
		case "CreateSession":
			err = m.CreateSession(ctx, a[0].(store.Session), a[1].(store.TokenHash), a[2].(int64))
		case "Session":
			_, err = m.Session(ctx, a[0].(string), a[1].(time.Time))
		case "UserSessions":
			_, err = m.UserSessions(ctx, a[0].(string), a[1].(time.Time))
		case "RotateRefreshToken":
			_, err = m.RotateRefreshToken(ctx, a[0].(store.Rotation))
		case "RevokeSession":
			err = m.RevokeSession(ctx, a[0].(string), a[1].(store.EndReason))
		case "RevokeUserSessions":
			_, err = m.RevokeUserSessions(ctx, a[0].(string))
		case "SigningKeys":
			_, err = m.SigningKeys(ctx, a[0].(time.Time))
		case "AddSigningKey":
			err = m.AddSigningKey(ctx, a[0].(store.SigningKey))
		case "DeleteExpired":
			err = m.DeleteExpired(ctx, a[0].(time.Time))
		default:
			e.t.Fatalf("replay: unknown method %s", c.Method)
		}
		if (err == nil) != (c.Err == nil) || err != nil && err.Error() != c.Err.Error() {
			e.t.Fatalf("replay of %s answered %v, the store %v: the log is incomplete", c.Method, err, c.Err)
		}
	}
	return faultCopy{m}
}

// works reports whether a refresh token with hash h would rotate now.
func (m faultCopy) works(e *faultEnv, h store.TokenHash) bool {
	e.t.Helper()
	var next store.TokenHash
	rand.Read(next[:])
	now := e.srv.Clock.Now()
	// With the configured reuse window, as the library asks: the clock is
	// past any window, so it must forgive nothing.
	_, err := m.RotateRefreshToken(e.t.Context(), store.Rotation{
		Presented: h, Next: next, Now: now, ExpiresAt: now.Add(e.cfg.RefreshTokenLifetime),
		ReuseWindow: e.cfg.RefreshReuseWindow,
	})
	if err != nil && !errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrTokenReused) {
		e.violation("rotation in a copy of the store: %v", err)
	}
	return err == nil
}

// present tries a refresh token as a refresh would: over HTTP if a client
// was given it, in the inner store if not (a token whose response was
// lost). It reports whether it worked, whether it was taken for theft, and
// the token it was exchanged for.
func (e *faultEnv) present(h store.TokenHash) (ok, theft bool, next string, nextHash *store.TokenHash) {
	e.t.Helper()
	if tok, known := e.received[h]; known {
		e.prober.SetTokens("", tok)
		r := e.refresh(e.prober)
		switch {
		case r.ok():
			_, next = e.prober.Tokens()
			return true, false, next, nil
		case r.message(http.StatusUnauthorized, "token theft detected"):
			return false, true, "", nil
		case r.message(http.StatusUnauthorized, "unauthorised"):
			return false, false, "", nil
		}
		e.violation("refresh with faults off: %v", r)
		return false, false, "", nil
	}
	var nh store.TokenHash
	rand.Read(nh[:])
	now := e.srv.Clock.Now()
	_, err := e.mem.RotateRefreshToken(e.t.Context(), store.Rotation{
		Presented: h, Next: nh, Now: now, ExpiresAt: now.Add(e.cfg.RefreshTokenLifetime),
	})
	switch {
	case err == nil:
		return true, false, "", &nh
	case errors.Is(err, store.ErrTokenReused):
		return false, true, "", nil
	case errors.Is(err, store.ErrNotFound):
		return false, false, "", nil
	}
	e.violation("rotation in the memstore: %v", err)
	return false, false, "", nil
}

// scan reports any secret in s, the record of where.
func (e *faultEnv) scan(where, s string) {
	e.t.Helper()
	for secret := range e.secrets {
		if i := strings.Index(s, secret); i >= 0 {
			what := "a token"
			if secret == authtest.Password || secret == faultNewPassword {
				what = "a password"
			}
			around := s[max(0, i-40):min(len(s), i+len(secret)+20)]
			e.violation("%s in plain text in %s: %q", what, where, strings.ReplaceAll(around, secret, "<"+what+">"))
		}
	}
}

// TestFaultClientTimeout: the store takes longer than the client waits,
// before or after it commits. The client gives up; the store call must end
// with the request (the faultstore's delay honours the context, as a real
// store's I/O would), and the state must be as after any other fault: a
// rotation or reset that did not commit leaves its token valid.
func TestFaultClientTimeout(t *testing.T) {
	flows := map[string]faultFlow{}
	for _, f := range faultFlows() {
		flows[f.name] = f
	}
	cases := []struct {
		flow, method string
		modes        []authtest.Mode
	}{
		{"refresh", "RotateRefreshToken", faultModes},
		{"refresh-window", "RotateRefreshToken", faultModes},
		{"signout", "RevokeSession", []authtest.Mode{authtest.Header}},
		{"reset-submit", "ResetPassword", []authtest.Mode{authtest.Header}},
	}
	t.Cleanup(func() { faultSummary(t) })
	for _, tc := range cases {
		f := flows[tc.flow]
		for _, m := range tc.modes {
			for _, when := range []faultstore.When{faultstore.Before, faultstore.After} {
				t.Run(fmt.Sprintf("%s/%s/%s-%s", tc.flow, m, tc.method, when), func(t *testing.T) {
					t.Parallel()
					p := faultstore.Plan{Call: 1, Method: tc.method, When: when, Kind: faultstore.Delay, Delay: time.Hour}
					faultRun(t, f, m, &p, tc.method)
				})
			}
		}
	}
}

// TestFaultStore checks the wrapper itself.
func TestFaultStore(t *testing.T) {
	ctx := t.Context()
	user := func(n int) storedUser {
		return passwordUser(fmt.Sprint("u", n), fmt.Sprint("u", n, "@example.com"), "$argon2id$x")
	}
	t.Run("counts one method", func(t *testing.T) {
		fs := faultstore.New(memstore.New())
		fs.Arm(faultstore.Plan{Call: 2, Method: "CreateUser", Kind: faultstore.Error, When: faultstore.Before})
		for n := 1; n <= 3; n++ {
			fs.Login(ctx, store.EmailPasswordKey("nobody@example.com"))
			err := fs.CreateUser(ctx, user(n).User, user(n).Login)
			if want := n == 2; errors.Is(err, faultstore.ErrInjected) != want {
				t.Errorf("CreateUser %d: %v, fault wanted: %v", n, err, want)
			}
		}
		if _, err := fs.Inner().UserByID(ctx, "u2"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("a Before fault must not reach the inner store: %v", err)
		}
		got := faultstore.Methods(fs.Armed())
		want := []string{"Login", "CreateUser", "Login", "CreateUser", "Login", "CreateUser"}
		if !slices.Equal(got, want) {
			t.Errorf("calls %v, want %v", got, want)
		}
		c, ok := fs.Fired()
		if !ok || c.Method != "CreateUser" || c.Delegated || c.Args[0].(store.User).ID != "u2" {
			t.Errorf("Fired: %+v %v", c, ok)
		}
	})
	t.Run("after commits", func(t *testing.T) {
		fs := faultstore.New(memstore.New())
		fs.Arm(faultstore.Plan{Call: 1, Kind: faultstore.Error, When: faultstore.After})
		if err := fs.CreateUser(ctx, user(1).User, user(1).Login); !errors.Is(err, faultstore.ErrInjected) {
			t.Errorf("CreateUser: %v, want the fault", err)
		}
		if _, err := fs.Inner().UserByID(ctx, "u1"); err != nil {
			t.Errorf("an After fault must come after the change: %v", err)
		}
		if c, _ := fs.Fired(); !c.Committed() {
			t.Errorf("Fired: %+v, want committed", c)
		}
		if _, err := fs.UserByID(ctx, "u1"); err != nil {
			t.Errorf("a fault fires once: %v", err)
		}
	})
	t.Run("panic", func(t *testing.T) {
		for _, when := range []faultstore.When{faultstore.Before, faultstore.After} {
			fs := faultstore.New(memstore.New())
			fs.Arm(faultstore.Plan{Call: 1, Kind: faultstore.Panic, When: when})
			func() {
				defer func() {
					if p, ok := recover().(faultstore.PanicValue); !ok || p.Method != "CreateUser" || p.When != when {
						t.Errorf("%s: recovered %v", when, p)
					}
				}()
				fs.CreateUser(ctx, user(1).User, user(1).Login)
			}()
			_, err := fs.UserByID(ctx, "u1")
			if committed := err == nil; committed != (when == faultstore.After) {
				t.Errorf("panic %s: committed %v", when, committed)
			}
			if n := fs.InFlight(); n != 0 {
				t.Errorf("panic %s: %d calls in flight", when, n)
			}
		}
	})
	t.Run("delay honours the context", func(t *testing.T) {
		fs := faultstore.New(memstore.New())
		fs.Arm(faultstore.Plan{Call: 1, Kind: faultstore.Delay, When: faultstore.Before, Delay: time.Hour})
		cctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
		defer cancel()
		start := time.Now()
		if err := fs.CreateUser(cctx, user(1).User, user(1).Login); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("CreateUser: %v, want the context's error", err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("the delay ignored the context: %v", d)
		}
		if _, err := fs.UserByID(ctx, "u1"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("a delay Before that ends with the context must not reach the store: %v", err)
		}
	})
	t.Run("concurrent", func(t *testing.T) {
		fs := faultstore.New(memstore.New())
		fs.Arm(faultstore.Plan{Call: 100, Kind: faultstore.Error, When: faultstore.Before})
		var wg sync.WaitGroup
		var faults atomic.Int64
		for g := range 8 {
			wg.Go(func() {
				for i := range 50 {
					if _, err := fs.Login(ctx, store.EmailPasswordKey(fmt.Sprint(g, "-", i))); errors.Is(err, faultstore.ErrInjected) {
						faults.Add(1)
					}
				}
			})
		}
		wg.Wait()
		if n := len(fs.Calls()); n != 400 || faults.Load() != 1 || fs.InFlight() != 0 {
			t.Errorf("%d calls, %d faults, %d in flight; want 400, 1, 0", n, faults.Load(), fs.InFlight())
		}
	})
}
