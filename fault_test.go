package auth_test

// Fault injection (SECURITY.md "Faults", SECURITY-NOTES.md 5.2): every flow
// is run once without faults to count its store calls, then once per call
// and per fault (an error, a delay or a panic, before or after the store
// commits) on a fresh server whose store is a faultstore around a memstore.
// Each run checks that the answer is a defined one, lets the client retry
// as a client would, and then, with faults off, checks the invariants
// through the HTTP API and the inner memstore:
//
//	(a) a session has exactly one live refresh token, its newest
//	    generation; every older one is theft, of the kind its age says
//	    (previous, after the window, stale), and ends the session;
//	(b) a failure before a rotation commits leaves the presented token valid;
//	(c) a failure after it never yields two live tokens: a retry of the
//	    token just superseded gets, inside the reuse window, the very
//	    successor the lost exchange made (a Repeat, which changes nothing)
//	    and, without a window, is theft;
//	(d) an ended session never refreshes, and says why it ended;
//	(e) a reset token works once;
//	(f) no plaintext token (nor a token's secret part) or password reaches
//	    the store or the log;
//	(g) every 401 carries its reason, in the Auth-Reason header and the
//	    body alike, beside the message the SDKs know;
//	(h) the store is never half-rotated: each session is at the
//	    generation, expiry and refresh time of its last exchange in the
//	    log, and every rotation and revocation the log shows was answered
//	    as the store's contract says, given what was committed before;
//	(i) every refresh token a client holds is one the store committed,
//	    and names the session, generation, key and expiry it was committed
//	    with (read from the token's documented layout);
//	(j) at most one login owns an email, a login that owns its email has
//	    it proven, and a proven email is verified; with account linking
//	    off, no login owns one;
//	(k) every user has at least one login;
//	(l) nothing of a deleted user remains or works: no user, login or
//	    session in the store, no reset or verification token, and over
//	    HTTP no refresh or access token, password or link;
//	(m) an unlinked login signs in no more and the sessions it started no
//	    longer refresh, while the user's other logins and their sessions
//	    carry on;
//	(n) a verification token works at most once;
//	(o) after a join with eviction, the voided password signs in no more,
//	    and no session from before the join refreshes or opens a route;
//	(p) with faults off no answer is a 5xx: the only one a run may see is
//	    the injected fault's own;
//
// and that nobody is locked out: every user signs in with the password the
// store committed last (unless a join voided it, its login was unlinked or
// its user deleted), every third-party identity a flow used signs in again
// and reaches the user its login belongs to, the user that owns an email
// is one its owner reaches, a live session's newest token refreshes, and a
// lost response inside the reuse window costs nothing.
//
// The flows cover password sign-up and sign-in, refresh, sign-out, reset,
// third-party sign-in with account linking off and on (fault_linking_test.go:
// a join, a join with eviction, a refusal), sending and opening
// verification links, the Go API's Unlink and DeleteUser, passwordless
// sign-in (fault_passwordless_test.go: asking for a code and another,
// using a code or a link, a wrong code, and a join with eviction),
// passkeys (fault_passkey_test.go: sign-up, sign-in, a replayed and a
// clone's assertion, adding one in a session, and recovery), and
// multi-factor auth (fault_mfa_test.go: a TOTP device made and set up,
// a code and a wrong code, recovery codes made and used, /mfa/info,
// sign-in and refresh of sessions that must complete TOTP), and roles
// (fault_roles_test.go: a refresh of a session a role authorises, and a
// role taken, deleted or given and a permission removed while sessions
// hold tokens from before, each held to the bound of a change).
//
// TestFaultBreakage shows that the sweep has teeth: each of the breakages
// there (a store wrapper that breaks the contract, or a handler change
// simulated by a wrapper in front of the faultstore) must make it report
// a violation.
//
// Presenting a refresh token changes what it tests (a superseded token
// ends its session; a working one moves the session on), so (a) is checked
// twice: once on a copy of the store per token, rebuilt from the
// faultstore's log, which sees every token; and once through the API: the
// newest token, the newest again a moment later, every older one newest
// first, and the successor the check itself was given, each against what
// the store's rules say it must get. The store names a token by its
// session and generation: the test reads them from the token when a
// client holds it, and from the logged call that committed it otherwise
// (CreateSession makes generation 0; a Rotation of generation g, g+1).
//
// TestFaultClientTimeout covers the third kind of fault SECURITY.md names,
// a store slower than the client's patience, and TestFaultStore the
// wrapper itself.
//
// The library recovers a handler's panic (a store that panics) and answers
// 500; should one escape, net/http recovers it and closes the connection,
// so the client sees a transport error (EOF), never an answer. The sweep
// accepts either and tallies which, and checks that the server survives
// and the invariants hold.

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
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
// error a client saw; or, for a call of the Go API (api), the error it
// returned or the panic that came out of it.
type faultAnswer struct {
	res *authtest.Response
	err error

	api      bool
	panicked any
}

func (a faultAnswer) is(code int, status string) bool {
	return !a.api && a.err == nil && a.res.StatusCode == code && a.res.Status == status
}

func (a faultAnswer) message(code int, msg string) bool {
	return !a.api && a.err == nil && a.res.StatusCode == code && a.res.Message == msg
}

func (a faultAnswer) ok() bool {
	if a.api {
		return a.err == nil && a.panicked == nil
	}
	return a.is(http.StatusOK, "OK")
}

// reason is the Reason of a 401 (send has checked that the header and the
// body agree).
func (a faultAnswer) reason() auth.Reason {
	if a.api || a.err != nil {
		return ""
	}
	return auth.Reason(a.res.Header.Get(auth.ReasonHeader))
}

// refusal reports whether a is the 401 with message msg and the given
// reason.
func (a faultAnswer) refusal(msg string, reason auth.Reason) bool {
	return a.message(http.StatusUnauthorized, msg) && a.reason() == reason
}

// faultReasons are the reasons a 401 may carry, and faultRefusals the
// messages.
var (
	faultReasons = map[auth.Reason]bool{
		auth.ReasonNoToken: true, auth.ReasonMalformed: true, auth.ReasonExpired: true, auth.ReasonInvalid: true,
		auth.ReasonMissingRID: true, auth.ReasonUnknownToken: true, auth.ReasonSessionExpired: true,
		auth.ReasonSignedOut: true, auth.ReasonRevoked: true, auth.ReasonPasswordReset: true, auth.ReasonTokenTheft: true,
		auth.ReasonTheftPrevious: true, auth.ReasonTheftAfterWindow: true, auth.ReasonTheftStale: true,
	}
	faultRefusals = map[string]bool{"unauthorised": true, "try refresh token": true, "token theft detected": true}
)

func (a faultAnswer) String() string {
	switch {
	case a.api && a.panicked != nil:
		return fmt.Sprintf("panic: %v", a.panicked)
	case a.api && a.err != nil:
		return "error: " + a.err.Error()
	case a.api:
		return "nil error"
	case a.err != nil:
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
	log    *logCapture     // a slog destination the invariants scan for secrets
	mail   chan auth.Event // EventResetEmailSent, EventEmailVerificationSent, EventPasswordlessCodeSent and EventMailFailed
	prober *authtest.Client

	received map[store.TokenHash]string // refresh tokens handed to clients, by hash
	handleOf map[store.TokenHash]string // the session of each received token, per its front-token
	secrets  map[string]bool            // every token and password seen in plain text

	// patience, if set, is how long the client waits for the faulted
	// request before it gives up.
	patience time.Duration
	// armed is set while the fault is: the only time a 5xx may come.
	armed bool

	// provider is the fake OpenID provider of the third-party flows, and
	// identities the identities the flows signed in with that must sign
	// in again (see faultIdentity).
	provider   *authtest.Provider
	identities []faultIdentity

	// contacts are the addresses the passwordless flows signed in with,
	// each of which must sign in again by code (see faultContact).
	contacts []faultContact

	// broken, for a run of TestFaultBreakage, is the breakage in place
	// (from the moment the fault is armed), and caught counts the
	// violations it caused, which then fail nothing.
	broken   *faultBreakage
	breaking atomic.Bool
	caught   int

	// What the flow under test used.
	plan      faultstore.Plan
	email     string // its user
	presented string // the refresh token the faulted refresh presented
	access    string // the access token the faulted sign-out presented
	resetTok  string // the reset token the faulted submission presented

	userID    string             // the user the flow acts on
	loginID   string             // the login it unlinks
	subject   string             // the provider identity it signs in with
	signInUp  []byte             // the /signinup body prepared before the fault
	verifyTok string             // the verification token it opens
	pl        faultPLFlow        // the passwordless flow it uses
	pk        faultPasskey       // the passkeys it uses (fault_passkey_test.go)
	mfa       faultMFA           // the second factors it uses (fault_mfa_test.go)
	moveTo    string             // the address an email change moves to
	linking   string             // the provider identity a session adds
	ending    []*authtest.Client // sessions the flow must end
	lasting   []*authtest.Client // sessions it must leave alone
}

// newFaultEnv makes the server of one run of f, with the breakage
// broken in place if it is not nil.
func newFaultEnv(t *testing.T, f faultFlow, broken *faultBreakage) *faultEnv {
	e := &faultEnv{
		t:        t,
		mem:      memstore.New(),
		log:      &logCapture{},
		mail:     make(chan auth.Event, 16),
		received: map[store.TokenHash]string{},
		handleOf: map[store.TokenHash]string{},
		secrets:  map[string]bool{authtest.Password: true, faultNewPassword: true},
		broken:   broken,
	}
	var inner store.Store = e.mem
	if broken != nil && broken.store != nil {
		inner = broken.store(e.mem, &e.breaking)
	}
	e.fs = faultstore.New(inner)
	var outer store.Store = e.fs
	if broken != nil && broken.handler != nil {
		outer = broken.handler(e.fs, &e.breaking)
	}
	cfg := auth.Config{
		Store:  outer,
		Logger: slog.New(slog.NewTextHandler(e.log, &slog.HandlerOptions{Level: slog.LevelDebug})),
		OnEvent: func(_ context.Context, ev auth.Event) {
			switch ev.Kind {
			case auth.EventResetEmailSent, auth.EventEmailVerificationSent, auth.EventPasswordlessCodeSent, auth.EventMailFailed:
				select {
				case e.mail <- ev:
				default:
				}
			}
		},
	}
	if f.thirdParty {
		e.provider = authtest.NewProvider(t)
		cfg.ThirdParty.Providers = append(cfg.ThirdParty.Providers, e.provider.Provider())
	}
	if f.configure != nil {
		f.configure(&cfg)
	}
	e.srv = authtest.NewServer(t, cfg)
	e.cfg = e.srv.AuthConfig
	e.prober = e.srv.NewClient(authtest.Header)
	return e
}

// violation reports a broken invariant or an undefined answer. Under a
// breakage it is what the test wants, and is counted instead.
func (e *faultEnv) violation(format string, args ...any) {
	e.t.Helper()
	if e.broken != nil {
		if e.caught++; e.caught <= 3 {
			e.t.Logf("caught: "+format, args...)
		}
		return
	}
	faultViolations.Add(1)
	e.t.Errorf("VIOLATION: "+format, args...)
}

// faultAbort ends a run under a breakage that a check cannot go on from.
type faultAbort struct{}

// fatal reports a violation that the checks cannot go on from: it ends
// the test, or under a breakage only the run.
func (e *faultEnv) fatal(format string, args ...any) {
	e.t.Helper()
	if e.broken != nil {
		e.violation(format, args...)
		panic(faultAbort{})
	}
	e.violation(format, args...)
	e.t.FailNow()
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
	// (p)
	if res.StatusCode >= 500 && !e.armed {
		e.violation("%s %s with faults off: %d %s", method, path, res.StatusCode, bytes.TrimSpace(out.Body))
	}
	// Every 401 says why, in the header and in the body alike, beside a
	// message the SDKs know; no other answer carries a reason (account
	// linking's refusals carry the SDKs' text for the user in "reason").
	reason := out.Header.Get(auth.ReasonHeader)
	inBody, hasReason := out.JSON["reason"]
	if res.StatusCode == http.StatusUnauthorized {
		if reason == "" || inBody != reason || !faultReasons[auth.Reason(reason)] || len(out.JSON) != 2 || !faultRefusals[out.Message] {
			e.violation("%s %s: a 401 without a clean reason: %s %q, body %s", method, path, auth.ReasonHeader, reason, bytes.TrimSpace(out.Body))
		}
	} else if reason != "" || hasReason && !strings.HasSuffix(out.Status, "_NOT_ALLOWED") {
		e.violation("%s %s: a %d with a reason: %s %q, body %s", method, path, res.StatusCode, auth.ReasonHeader, reason, bytes.TrimSpace(out.Body))
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
		if _, ok := faultParseRefresh(refresh); ok {
			// Its secret and MAC alone: the rest (the session, the
			// generation) is public.
			e.secrets[refresh[faultRefreshSecretAt:]] = true
		}
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
		e.violation("the outbox neither sent nor reported an email within %v", faultRequestTimeout)
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
	// outbox), so the answer never depends on them; offPathMethods names
	// the methods of such calls in a flow that also makes calls on it.
	offPath        bool
	offPathMethods map[string]bool
	// status is the status of the answer without faults, if not OK.
	status string
	// api: the flow calls the Go API, not the HTTP API.
	api bool
	// thirdParty: the run's server has the fake OpenID provider.
	thirdParty bool
	// tolerated are methods whose failure the flow rides over: their
	// Error faults leave the answer unchanged.
	tolerated map[string]bool
	// toleratedFrom, if set, is a method from whose first call on the
	// flow rides over every failure (work that is only logged when it
	// fails): Error faults there leave the answer unchanged.
	toleratedFrom string
	// after runs with faults off: the client reacts to the answer as a
	// client would (retries), and flow-specific invariants are checked.
	after func(e *faultEnv, c *authtest.Client, a faultAnswer)
}

var faultModes = []authtest.Mode{authtest.Cookie, authtest.Header, authtest.Body}

// good reports whether a is the answer the flow gets without faults.
func (f faultFlow) good(a faultAnswer) bool {
	if f.status != "" {
		return a.is(http.StatusOK, f.status)
	}
	return a.ok()
}

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
		p := e.cfg.EmailPassword.Hashing
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
				presented, ok := faultParseRefresh(e.presented)
				if !ok {
					e.t.Fatalf("setup: the client's refresh token is not of the documented layout: %.12q", e.presented)
				}
				// The exchange the faulted request committed, if any: its
				// successor is generation presented.gen+1.
				var successor *store.Rotation
				for _, call := range e.fs.Armed() {
					if call.Method == "RotateRefreshToken" && call.Committed() && successor == nil {
						r := call.Args[0].(store.Rotation)
						successor = &r
					}
				}
				rotated := successor != nil
				if rotated && (successor.Handle != presented.handle || successor.Generation != presented.gen) {
					e.violation("the refresh rotated generation %d of session %s; the token presented is generation %d of %s",
						successor.Generation, successor.Handle, presented.gen, presented.handle)
				}
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
				// The client tries again a moment later, inside any
				// window, with the token it holds. A repeat must hand back
				// the token the exchange made, not one made now (which
				// would have another expiry).
				e.srv.Clock.Advance(time.Second)
				r := e.refresh(c)
				_, held := c.Tokens()
				got, _ := faultParseRefresh(held)
				switch {
				case !rotated && !r.ok():
					// (b)
					e.violation("retry after a failure before the rotation committed: %v, want OK", r)
				case !rotated && (got.handle != presented.handle || got.gen != presented.gen+1):
					e.violation("retry after a failure before the rotation committed gave generation %d of session %s, want %d of %s",
						got.gen, got.handle, presented.gen+1, presented.handle)
				case rotated && window > 0 && !r.ok():
					// No lockout: the window lets the retry recover.
					e.violation("retry inside the reuse window after a lost rotation: %v, want OK", r)
				case rotated && window > 0 && sha256.Sum256([]byte(held)) != successor.Next:
					// (c) One live token: the retry gets the very successor
					// the lost exchange made.
					e.violation("retry inside the reuse window after a lost rotation got another token than the exchange made (generation %d of %s): two live tokens",
						got.gen, got.handle)
				case rotated && window == 0 && r.ok():
					// (c)
					e.violation("a superseded token refreshed again with no reuse window: two live tokens")
				case rotated && window == 0 && !r.refusal("token theft detected", auth.ReasonTheftPrevious):
					e.violation("retry after a lost rotation with no reuse window: %v, want 401 token theft detected (%s)", r, auth.ReasonTheftPrevious)
				case rotated && window == 0:
					e.finding("refresh response lost after the rotation committed, no reuse window: the retry is taken for theft and the session ends")
				case rotated:
					e.finding("refresh response lost after the rotation committed: the retry inside the reuse window gets the same successor")
				}
				// The store agrees: a repeat changes nothing, theft ends
				// the session, a fresh exchange moves it on by one.
				st, err := e.mem.Session(e.t.Context(), presented.handle, e.srv.Clock.Now())
				var ended *store.EndedError
				switch {
				case rotated && window == 0:
					if !errors.As(err, &ended) || ended.Reason != store.EndTokenTheft {
						e.violation("session %s after a superseded token came back: %v, want it ended (%s)", presented.handle, err, store.EndTokenTheft)
					}
				case err != nil:
					e.violation("session %s after the retry: %v", presented.handle, err)
				case st.Generation != presented.gen+1:
					e.violation("session %s after the retry is at generation %d, want %d: one exchange, however many tries", presented.handle, st.Generation, presented.gen+1)
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
				for _, call := range e.fs.Armed() {
					if call.Method == "RevokeSession" && call.Args[1].(store.EndReason) != store.EndSignedOut {
						e.violation("sign-out ended its session for the reason %q, want %q", call.Args[1], store.EndSignedOut)
					}
				}
				if !a.ok() {
					r := e.signOut(c)
					switch {
					case checkStore && revoked:
						if !r.refusal("unauthorised", auth.ReasonSignedOut) {
							e.violation("sign-out retry of a revoked session, session check on: %v, want 401 unauthorised (%s)", r, auth.ReasonSignedOut)
						}
					case !r.ok():
						e.violation("sign-out retry: %v, want OK", r)
					}
				}
				if checkStore {
					// (d) The access token stops at once, and says why.
					probe := e.srv.NewClient(authtest.Header)
					probe.AccessToken = e.access
					if r := e.send(probe, http.MethodGet, "/api/session", nil, "anti-csrf", e.access); !r.refusal("unauthorised", auth.ReasonSignedOut) {
						e.violation("access token of a signed-out session, session check on: %v, want 401 unauthorised (%s)", r, auth.ReasonSignedOut)
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
				if fired.Method == "CreateCode" && fired.Committed() {
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

	return append([]faultFlow{
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
	}, slices.Concat(faultLinkingFlows(), faultPasswordlessFlows(), faultPasskeyFlows(), faultMFAFlows(), faultRolesFlows(), faultAccountFlows())...)
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
	calls, _ := faultRunBroken(t, f, m, p, method, nil)
	return calls
}

// faultRunBroken is faultRun with a breakage in place, if broken is not
// nil; it returns how many violations the breakage caused.
func faultRunBroken(t *testing.T, f faultFlow, m authtest.Mode, p *faultstore.Plan, method string, broken *faultBreakage) (calls []string, caught int) {
	e := newFaultEnv(t, f, broken)
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(faultAbort); !ok {
				panic(r)
			}
		}
		caught = e.caught
	}()
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
	e.breaking.Store(true)
	e.armed = true
	e.fs.Arm(plan)
	a := f.run(e, c)
	e.patience = 0
	ctx, cancel := context.WithTimeout(t.Context(), faultRequestTimeout)
	defer cancel()
	if err := e.fs.Wait(ctx); err != nil {
		e.violation("a store call of the flow never returned: %v", err)
	}
	e.fs.Disarm()
	e.armed = false
	calls = faultstore.Methods(e.fs.Armed())

	if p != nil {
		if broken == nil {
			faultRuns.Add(1)
		}
		fired, ok := e.fs.Fired()
		if !ok {
			t.Fatalf("the fault did not fire; the flow made %d calls: %v", len(calls), calls)
		}
		if fired.Method != method {
			t.Fatalf("call %d was %s in the fault-free run, %s now: the flow is not deterministic", p.Call, method, fired.Method)
		}
		faultCheckAnswer(e, f, p, method, calls, a)
	} else if !f.good(a) {
		e.fatal("fault-free run: %v", a)
	}
	f.after(e, c, a)
	e.checkInvariants()
	return calls, e.caught
}

// afterOwnership reports whether the faulted call, the k-th (from 1) of
// calls, is part of the round that follows a write making a login own its
// address (reading the address's logins, ending unproven logins'
// sessions): account linking logs its failure, since the round before the
// write ended what existed then, and answers as the write did.
func afterOwnership(calls []string, k int) bool {
	for i := k - 2; i >= 0 && i < len(calls); i-- {
		switch calls[i] {
		case "LinkLogin", "SignInUp", "ClaimEmail":
			return true
		case "LoginsByEmail", "RevokeUserSessions":
			continue
		}
		return false
	}
	return false
}

// faultCheckAnswer checks that the answer to a faulted request is a
// defined one.
func faultCheckAnswer(e *faultEnv, f faultFlow, p *faultstore.Plan, method string, calls []string, a faultAnswer) {
	e.t.Helper()
	internal := a.message(http.StatusInternalServerError, "internal error")
	switch {
	case f.offPath || f.offPathMethods[method]:
		if !f.good(a) {
			e.violation("the answer must not depend on the outbox's store calls: %v", a)
		}
	case p.Kind == faultstore.Delay && p.Delay >= faultRequestTimeout:
		// The client gives up; the server notices the closed connection
		// at the same moment and may still get its 503 onto the wire.
		if !errors.Is(a.err, context.DeadlineExceeded) && !a.message(http.StatusServiceUnavailable, "too many requests, try again shortly") {
			e.violation("a store slower than the client's patience: %v, want the client to give up (or a 503)", a)
		}
	case p.Kind == faultstore.Delay:
		if !f.good(a) {
			e.violation("a slow store changed the answer: %v, want what it is without faults", a)
		}
	case p.Kind == faultstore.Error && (f.tolerated[method] ||
		f.toleratedFrom != "" && slices.Contains(calls[:p.Call], f.toleratedFrom) ||
		(method == "LoginsByEmail" || method == "RevokeUserSessions") && afterOwnership(calls, p.Call)):
		if !f.good(a) {
			e.violation("a failure of %s must not fail the flow: %v, want what it is without faults", method, a)
		}
	case f.api && p.Kind == faultstore.Error:
		// The Go API hands the store's error to the application.
		if !errors.Is(a.err, faultstore.ErrInjected) || a.panicked != nil {
			e.violation("a store error under the Go API: %v, want the store's error", a)
		}
	case p.Kind == faultstore.Error:
		if !internal {
			e.violation("a store error: %v, want 500 internal error", a)
		}
	case f.api && p.Kind == faultstore.Panic:
		// Nothing recovers a panic in the application's own goroutine.
		if _, ok := a.panicked.(faultstore.PanicValue); !ok {
			e.violation("a store panic under the Go API: %v, want it to reach the caller", a)
		}
		faultTally(&faultPanicSeen, "Go API: the panic reached the caller")
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

// faultRefreshRaw is the length of a refresh token before base64, and
// faultRefreshSecretAt where its secret starts in the token, in
// characters: the layout internal/refreshtoken documents is version (1) | key id (12) | handle (16) | generation (8) |
// expiry (8) | secret (16) | MAC (16), 77 bytes in unpadded URL-safe
// base64. The first 45 bytes are 60 characters, so the secret and the MAC
// are the last 43 characters of the token exactly.
const (
	faultRefreshRaw      = 1 + 12 + 16 + 8 + 8 + 16 + 16
	faultRefreshSecretAt = (1 + 12 + 16 + 8 + 8) / 3 * 4
)

// faultRefresh is what a refresh token says of itself, read by the test
// from the documented layout (the library's parser is unexported).
type faultRefresh struct {
	keyID   string
	handle  string
	gen     int64
	expires time.Time
}

// faultParseRefresh reads a refresh token of the current format.
func faultParseRefresh(tok string) (faultRefresh, bool) {
	b, err := base64.RawURLEncoding.Strict().DecodeString(tok)
	if err != nil || len(b) != faultRefreshRaw || b[0] != 1 {
		return faultRefresh{}, false
	}
	h, err := uuid.FromBytes(b[13:29])
	if err != nil {
		return faultRefresh{}, false
	}
	return faultRefresh{
		keyID:   base64.RawURLEncoding.EncodeToString(b[1:13]),
		handle:  h.String(),
		gen:     int64(binary.BigEndian.Uint64(b[29:37])),
		expires: time.Unix(int64(binary.BigEndian.Uint64(b[37:45])), 0),
	}, true
}

// faultToken names a refresh token the store committed: generation gen of
// session handle.
type faultToken struct {
	handle string
	gen    int64
}

// faultSession is what the log says of a session: the hash of each
// generation's refresh token, and whether and why the session ended.
type faultSession struct {
	handle  string
	userID  string
	loginID string
	created int // the index of its CreateSession in the log

	tokens   []store.TokenHash // tokens[g] is generation g's
	keys     []string          // keys[g] made it: Rotation.NextKey ("" for generation 0: the log does not say)
	expiries []time.Time       // expiries[g] is the session's expiry when generation g was issued

	exchanged   time.Time       // the last exchange
	refreshedAt time.Time       // RefreshedAt as of the last exchange
	ended       store.EndReason // "" while the session is live
}

// gen is the session's current generation.
func (s *faultSession) gen() int64 { return int64(len(s.tokens) - 1) }

// faultLedger is what the store committed, read from the faultstore's log
// alone: it models the contract of store.SessionStore, not the memstore.
type faultLedger struct {
	sessions  map[string]*faultSession
	handles   []string // in order of creation
	tokens    map[store.TokenHash]faultToken
	users     []storedUser               // made with a password (CreateUser)
	userIDs   []string                   // every user a call may have made, in order
	resetUser map[store.TokenHash]string // reset token -> user

	emails    map[string]bool                // every email a login was given
	verify    map[store.TokenHash]store.Code // committed verification tokens
	verified  map[store.TokenHash]bool       // verification tokens used
	deleted   map[string]bool                // users deleted
	unlinked  map[string]bool                // logins removed
	loginUser map[string]string              // login id -> user id
	moved     bool                           // an email change committed: a login's key moved
}

// faultGone is the end of a session whose user was deleted: it is not
// found at all.
const faultGone store.EndReason = "(its user was deleted)"

// faultWant is what a rotation of a token of a session that ended for why
// answers.
func faultWant(why store.EndReason) string {
	if why == faultGone {
		return "not found"
	}
	return "ended: " + string(why)
}

// faultSessionGone checks what the store says of a session that ended for
// why: an EndedError with that reason, or for a deleted user's session
// nothing at all.
func faultSessionGone(err error, why store.EndReason) bool {
	var ended *store.EndedError
	if why == faultGone {
		return errors.Is(err, store.ErrNotFound) && !errors.As(err, &ended)
	}
	return errors.As(err, &ended) && ended.Reason == why
}

// faultOutcome names what a store answered a rotation.
func faultOutcome(err error) string {
	var ended *store.EndedError
	switch {
	case err == nil:
		return "OK"
	case errors.Is(err, store.ErrTokenReused):
		return "theft"
	case errors.As(err, &ended):
		if ended.Reason == "" {
			return "expired"
		}
		return "ended: " + string(ended.Reason)
	case errors.Is(err, store.ErrNotFound):
		return "not found"
	case errors.Is(err, store.ErrRateLimited):
		return "rate limited"
	}
	return "error: " + err.Error()
}

// faultReuse is the kind of reuse a token behind generations old is.
func faultReuse(behind int64, window time.Duration) store.Reuse {
	switch {
	case behind > 1:
		return store.ReuseStale
	case window > 0:
		return store.ReuseAfterWindow
	}
	return store.ReusePrevious
}

// faultTheftReason is the reason of the 401 that reports a reuse.
func faultTheftReason(r store.Reuse) auth.Reason {
	switch r {
	case store.ReusePrevious:
		return auth.ReasonTheftPrevious
	case store.ReuseAfterWindow:
		return auth.ReasonTheftAfterWindow
	case store.ReuseStale:
		return auth.ReasonTheftStale
	}
	return auth.Reason("theft of no kind: " + r.String())
}

// faultEndedReason is the reason of the 401 that refuses a session that
// ended for why.
func faultEndedReason(why store.EndReason) auth.Reason {
	switch why {
	case "":
		return auth.ReasonSessionExpired
	case store.EndSignedOut:
		return auth.ReasonSignedOut
	case store.EndPasswordReset:
		return auth.ReasonPasswordReset
	case store.EndTokenTheft:
		return auth.ReasonTokenTheft
	}
	// Revoked, or forgotten with its user: a token never tells whether
	// its account still exists.
	return auth.ReasonRevoked
}

// ledger reads the log, in order, and checks that the store answered each
// rotation and revocation as the contract says it must given what it had
// committed before.
func (e *faultEnv) ledger(calls []faultstore.Call) *faultLedger {
	e.t.Helper()
	l := &faultLedger{
		sessions:  map[string]*faultSession{},
		tokens:    map[store.TokenHash]faultToken{},
		resetUser: map[store.TokenHash]string{},
		emails:    map[string]bool{},
		verify:    map[store.TokenHash]store.Code{},
		verified:  map[store.TokenHash]bool{},
		deleted:   map[string]bool{},
		unlinked:  map[string]bool{},
		loginUser: map[string]string{},
	}
	addLogin := func(loginID, userID string) {
		if _, known := l.loginUser[loginID]; !known {
			l.loginUser[loginID] = userID
		}
	}
	endAll := func(userID string, before int, why store.EndReason) {
		for _, h := range l.handles {
			if s := l.sessions[h]; s.userID == userID && s.created < before && s.ended == "" {
				s.ended = why
			}
		}
	}
	for i, c := range calls {
		for _, arg := range c.Args {
			if lg, ok := arg.(store.Login); ok && lg.Email != "" {
				l.emails[lg.Email] = true
			}
		}
		switch c.Method {
		case "CreateUser":
			if c.Committed() {
				u := storedUser{c.Args[0].(store.User), c.Args[1].(store.Login)}
				l.users = append(l.users, u)
				l.userIDs = append(l.userIDs, u.User.ID)
				addLogin(cmp.Or(u.Login.ID, u.User.ID), u.User.ID)
			}
		case "SignInUp":
			if c.Committed() {
				// A new user, unless the login was there: then the
				// user id is no user's.
				u := c.Args[1].(store.User)
				l.userIDs = append(l.userIDs, u.ID)
				addLogin(cmp.Or(c.Args[0].(store.Login).ID, u.ID), u.ID)
			}
		case "LinkLogin", "AttachLogin":
			if c.Committed() {
				lg := c.Args[0].(store.Login)
				addLogin(lg.ID, lg.UserID)
			}
		case "LoginsByEmail":
			l.emails[c.Args[0].(string)] = true
		case "CreateCode":
			if c.Committed() {
				switch t := c.Args[0].(store.Code); t.Kind {
				case store.CodeVerification:
					l.verify[t.Hash] = t
				case store.CodeReset:
					l.resetUser[t.Hash] = t.UserID
				}
			}
		case "VerifyEmail":
			if c.Committed() {
				l.verified[c.Args[0].(store.TokenHash)] = true
			}
		case "DeleteLogin":
			if !c.Committed() {
				continue
			}
			id := c.Args[0].(string)
			l.unlinked[id] = true
			for _, h := range l.handles {
				if s := l.sessions[h]; s.loginID == id && s.created < i && s.ended == "" {
					s.ended = store.EndRevoked
				}
			}
		case "DeleteUser":
			if !c.Committed() {
				continue
			}
			id := c.Args[0].(string)
			l.deleted[id] = true
			for _, h := range l.handles {
				if s := l.sessions[h]; s.userID == id && s.created < i {
					s.ended = faultGone
				}
			}
		case "UserByID", "Login", "Logins", "UserByLogin", "ClaimEmail", "SetEmailVerified", "UpdatePasswordHash",
			"Code", "UsePasswordlessCode", "UseCeremony", "Session", "UserSessions", "SigningKeys", "AddSigningKey", "DeleteExpired", "LegacyTokenSession",
			"RateLimit", "TakeRateLimit", "RefundRateLimit", "ResetRateLimit",
			"UpdateLoginMaterial", "UpdateSessionFactors",
			"CreateRole", "RemovePermissions", "DeleteRole", "Roles", "RolePermissions", "RolesWithPermission",
			"GiveRole", "TakeRole", "UserRoles", "UsersWithRole":
			// Nothing a session's tokens depend on: roles decide what a
			// session may do, not whether it lives (fault_roles_test.go).
		case "CreateSession":
			if !c.Committed() {
				continue
			}
			s, h := c.Args[0].(store.Session), c.Args[1].(store.TokenHash)
			if _, dup := l.sessions[s.Handle]; dup {
				e.violation("session %s created twice", s.Handle)
				continue
			}
			if _, dup := l.tokens[h]; dup {
				e.violation("session %s starts with a refresh token the store committed before", s.Handle)
			}
			loginID := s.LoginID
			if loginID == "" {
				loginID = s.UserID
			}
			l.sessions[s.Handle] = &faultSession{
				handle: s.Handle, userID: s.UserID, loginID: loginID, created: i,
				tokens: []store.TokenHash{h}, keys: []string{""}, expiries: []time.Time{s.ExpiresAt},
				refreshedAt: s.RefreshedAt,
			}
			l.handles = append(l.handles, s.Handle)
			l.tokens[h] = faultToken{s.Handle, 0}
		case "RotateRefreshToken":
			if c.Delegated {
				l.rotation(e, c.Args[0].(store.Rotation), c.Err)
			}
		case "RevokeSession":
			if !c.Delegated {
				continue
			}
			handle, why := c.Args[0].(string), c.Args[1].(store.EndReason)
			s := l.sessions[handle]
			live := s != nil && s.ended == ""
			switch {
			case live && c.Err != nil:
				e.violation("RevokeSession of the live session %s: %v", handle, c.Err)
			case !live && !errors.Is(c.Err, store.ErrNotFound):
				e.violation("RevokeSession of session %s, which is no more: %v, want ErrNotFound", handle, c.Err)
			case live:
				s.ended = why
			}
		case "ResetPassword":
			if c.Committed() {
				endAll(l.resetUser[c.Args[0].(store.TokenHash)], i, store.EndPasswordReset)
			}
		case "ChangeEmail":
			// Nothing a session's tokens depend on; the password login
			// of the user it moved is under another key.
			l.moved = l.moved || c.Committed()
		case "RevokeUserSessions":
			if c.Committed() {
				endAll(c.Args[0].(string), i, store.EndRevoked)
			}
		default:
			e.t.Fatalf("ledger: %s is not modelled", c.Method)
		}
	}
	return l
}

// movedLogin is u with its password login as the store has it now, after
// an email change may have moved it to another address and key.
func (e *faultEnv) movedLogin(u storedUser) storedUser {
	logins, err := e.mem.Logins(e.t.Context(), u.User.ID)
	if err != nil {
		return u
	}
	for _, l := range logins {
		if l.ID == cmp.Or(u.Login.ID, u.User.ID) {
			u.LoginKey, u.Email = l.LoginKey, l.Email
		}
	}
	return u
}

// rotation checks one rotation the store answered with err, and records
// what it changed.
func (l *faultLedger) rotation(e *faultEnv, r store.Rotation, err error) {
	e.t.Helper()
	s := l.sessions[r.Handle]
	if r.Handle == "" {
		e.violation("a rotation without a handle: the library took a refresh token of its own for one of the old format")
	}
	if s != nil && (r.Generation < 0 || r.Generation > s.gen() || s.tokens[r.Generation] != r.Presented) {
		// The flows present only tokens the server made, so the
		// generation the library read from the token is the one the
		// store committed the token as.
		e.violation("a rotation of session %s named generation %d, but presented another token (the log has it at generation %d)", r.Handle, r.Generation, s.gen())
	}
	want, repeat := "not found", false
	switch {
	case s == nil:
	case s.ended != "":
		want = faultWant(s.ended)
	case !r.Now.Before(s.expiries[s.gen()]):
		want = "expired"
	case r.Presented == s.tokens[s.gen()]:
		want = "OK"
	case r.Generation >= s.gen():
	case s.gen()-r.Generation == 1 && r.ReuseWindow > 0 && r.Now.Sub(s.exchanged) < r.ReuseWindow:
		want, repeat = "OK", true
	default:
		want = "theft"
	}
	got := faultOutcome(err)
	if got != want {
		cur := int64(-1)
		if s != nil {
			cur = s.gen()
		}
		e.violation("the store answered %s to a rotation of generation %d of session %s, which it had committed at generation %d: want %s", got, r.Generation, r.Handle, cur, want)
	}
	switch {
	case s == nil:
	case got == "OK" && repeat:
		// Nothing changes: the current token is still the successor.
	case got == "OK":
		if _, dup := l.tokens[r.Next]; dup {
			e.violation("an exchange of session %s committed a successor the store had committed before", r.Handle)
		}
		l.tokens[r.Next] = faultToken{r.Handle, s.gen() + 1}
		s.tokens = append(s.tokens, r.Next)
		s.keys = append(s.keys, r.NextKey)
		s.expiries = append(s.expiries, r.ExpiresAt)
		s.exchanged, s.refreshedAt = r.Now, r.Now
	case got == "theft":
		s.ended = store.EndTokenTheft
	}
}

// faultProbe is what presenting a refresh token got, or should get.
type faultProbe struct {
	ok     bool
	msg    string      // the 401's message, if not ok
	reason auth.Reason // the 401's reason, if not ok

	// For a token presented in the inner store: repeat is the store's
	// Repeat. Otherwise next is the successor's hash.
	inner  bool
	repeat bool
	next   store.TokenHash
}

func (p faultProbe) String() string {
	switch {
	case p.ok && p.repeat:
		return "OK (repeat)"
	case p.ok:
		return "OK"
	}
	return fmt.Sprintf("401 %s (%s)", p.msg, p.reason)
}

// faultSim is what the API check expects of a session as it presents its
// tokens one after another: the store's rules, at one instant.
type faultSim struct {
	live   bool
	why    store.EndReason
	tokens []store.TokenHash // by generation, successors included
}

func (s *faultSim) gen() int64 { return int64(len(s.tokens) - 1) }

// expect says what presenting generation g must get, and ends the session
// if that is theft. A successful exchange's successor is the caller's to
// record.
func (s *faultSim) expect(g int64, window time.Duration) faultProbe {
	switch {
	case !s.live:
		return faultProbe{msg: "unauthorised", reason: faultEndedReason(s.why)}
	case g == s.gen():
		return faultProbe{ok: true}
	case s.gen()-g == 1 && window > 0:
		// Inside the window: the probes run within a second of the
		// exchange that superseded g, and the flows' windows are longer.
		return faultProbe{ok: true, repeat: true}
	}
	s.live, s.why = false, store.EndTokenTheft
	return faultProbe{msg: "token theft detected", reason: faultTheftReason(faultReuse(s.gen()-g, window))}
}

// checkInvariants checks, with faults off, the invariants of every session
// and user the run created.
func (e *faultEnv) checkInvariants() {
	e.t.Helper()
	ctx := e.t.Context()
	window := e.cfg.RefreshReuseWindow
	// Past any reuse window, a superseded token must never work.
	e.srv.Clock.Advance(auth.MaxRefreshReuseWindow + time.Second)
	now := e.srv.Clock.Now()

	// What the store committed, in order, and checked as it goes.
	calls := e.fs.Calls()
	l := e.ledger(calls)

	// A token a client holds must be one the store committed, and say of
	// itself what the store committed it as: its session (the one its
	// front-token names too), its generation, its key and its expiry.
	for h, tok := range e.received {
		it, ok := l.tokens[h]
		if !ok {
			e.violation("a client was given a refresh token the store never committed")
			continue
		}
		s := l.sessions[it.handle]
		rt, parsed := faultParseRefresh(tok)
		switch {
		case !parsed:
			e.violation("a client was given a refresh token not of the documented layout")
		case rt.handle != it.handle || rt.gen != it.gen:
			e.violation("a refresh token says it is generation %d of session %s; the store committed it as generation %d of %s", rt.gen, rt.handle, it.gen, it.handle)
		case rt.expires.Unix() != s.expiries[it.gen].Unix():
			e.violation("generation %d of session %s says it expires %v; the store had the session expire %v", it.gen, it.handle, rt.expires, s.expiries[it.gen])
		case it.gen > 0 && rt.keyID != s.keys[it.gen]:
			e.violation("generation %d of session %s was made with key %s; the store was told %s", it.gen, it.handle, rt.keyID, s.keys[it.gen])
		}
		if front := e.handleOf[h]; front != it.handle {
			e.violation("a refresh token of session %s came with the front-token of session %s", it.handle, front)
		}
	}

	// The store is never half-rotated: each session is where the log
	// says, at the generation, expiry and refresh time of its last
	// exchange, or ended for the reason it ended.
	for _, handle := range l.handles {
		s := l.sessions[handle]
		got, err := e.mem.Session(ctx, handle, now)
		switch {
		case s.ended != "" && !faultSessionGone(err, s.ended):
			e.violation("session %s ended (%s), but the store says: %+v, %v", handle, s.ended, got, err)
		case s.ended != "":
		case err != nil:
			e.violation("session %s was never ended, but the store says: %v", handle, err)
		case got.Generation != s.gen() || !got.ExpiresAt.Equal(s.expiries[s.gen()]) || !got.RefreshedAt.Equal(s.refreshedAt):
			e.violation("session %s is out of step with its exchanges: generation %d, refreshed %v, expires %v; the log says %d, %v, %v",
				handle, got.Generation, got.RefreshedAt, got.ExpiresAt, s.gen(), s.refreshedAt, s.expiries[s.gen()])
		}
	}

	// (a), (c), (d) without destroying evidence: each token is tried on
	// its own copy of the store, rebuilt from the calls logged so far, so
	// that no attempt (a superseded token ends its session; a working one
	// moves the session on) hides what another would show. Past the
	// window, a live session's newest token exchanges, and every older
	// one is theft of its kind; an ended session's tokens are refused
	// with the reason it ended.
	for _, handle := range l.handles {
		s := l.sessions[handle]
		for g, h := range s.tokens {
			res, err := e.replay(calls).rotate(e, handle, int64(g), h)
			got, want := faultOutcome(err), "theft"
			switch {
			case s.ended != "":
				want = faultWant(s.ended)
			case int64(g) == s.gen():
				want = "OK"
			}
			switch {
			case got != want && want == "OK":
				e.violation("live session %s: its newest token (generation %d) does not refresh: %s", handle, g, got)
			case got != want && s.ended != "" && got == "OK":
				e.violation("session %s ended (%s) but its token of generation %d (of %d) still refreshes", handle, s.ended, g, s.gen())
			case got != want && got == "OK":
				e.violation("session %s has two live refresh tokens: generation %d refreshes beside the newest, %d", handle, g, s.gen())
			case got != want:
				e.violation("session %s (ended: %q), its token of generation %d of %d, alone on a copy of the store: %s, want %s", handle, s.ended, g, s.gen(), got, want)
			case got == "OK" && (res.Repeat || res.Session.Handle != handle || res.Session.Generation != s.gen()+1):
				e.violation("session %s: its newest token did not move it on by one generation: %+v", handle, res)
			case got == "theft" && res.Reuse != faultReuse(s.gen()-int64(g), window):
				e.violation("session %s: generation %d, %d behind, was taken for theft of kind %v, want %v", handle, g, s.gen()-int64(g), res.Reuse, faultReuse(s.gen()-int64(g), window))
			}
		}
		if s.ended != "" {
			continue
		}
		// A token the store cannot place harms no session: forged tokens
		// of the current generation and the next are not found, and the
		// newest token still works after them.
		m := e.replay(calls)
		for _, g := range []int64{s.gen(), s.gen() + 1} {
			var forged store.TokenHash
			rand.Read(forged[:])
			if _, err := m.rotate(e, handle, g, forged); faultOutcome(err) != "not found" {
				e.violation("session %s: a forged token of generation %d: %v, want not found", handle, g, err)
			}
		}
		if _, err := m.rotate(e, handle, s.gen(), s.tokens[s.gen()]); err != nil {
			e.violation("session %s: after forged tokens, its newest token: %v", handle, err)
		}
	}

	// (a), (c), (d) through the API: per session, present the newest
	// token, the newest again a moment later (the retry of a lost
	// response: inside a window it gets the very same successor, without
	// one it is theft), then every older token newest first, then the
	// successor the check was given. Each must get what the store's rules
	// say, 401 reasons included. Tokens no client was given (lost
	// responses) are presented in the inner store.
	for _, handle := range l.handles {
		s := l.sessions[handle]
		sim := &faultSim{live: s.ended == "", why: s.ended, tokens: slices.Clone(s.tokens)}
		seq := []int64{s.gen(), s.gen()}
		for g := s.gen() - 1; g >= 0; g-- {
			seq = append(seq, g)
		}
		seq = append(seq, s.gen()+1)
		for i, g := range seq {
			if g > sim.gen() {
				break // the newest token got no successor
			}
			if i == 1 {
				// A repeat must hand back the token the exchange made, not
				// one made now.
				e.srv.Clock.Advance(time.Second)
			}
			want := sim.expect(g, window)
			got := e.present(handle, g, sim.tokens[g])
			switch {
			case got.ok != want.ok || got.msg != want.msg || got.reason != want.reason:
				what := fmt.Sprintf("session %s (ended: %q), generation %d of %d presented (step %d of %v)", handle, s.ended, g, s.gen(), i+1, seq)
				switch {
				case got.ok && !sim.live:
					e.violation("%s: refreshed a session that has ended", what)
				case got.ok:
					e.violation("%s: a superseded token refreshed: two live tokens", what)
				case want.ok:
					e.violation("%s: %v, want it to refresh: the user is locked out", what, got)
				default:
					e.violation("%s: %v, want %v", what, got, want)
				}
			case want.repeat && (got.inner && !got.repeat || !got.inner && got.next != sim.tokens[sim.gen()]):
				e.violation("session %s: the token just superseded, again inside the window, got another token than the exchange made: two live tokens", handle)
			case want.ok && !want.repeat && got.inner && got.repeat:
				e.violation("session %s: its newest token was answered as a repeat", handle)
			case want.ok && !want.repeat:
				if slices.Contains(sim.tokens, got.next) {
					e.violation("session %s: an exchange handed back a token it had handed out before", handle)
				}
				sim.tokens = append(sim.tokens, got.next)
			}
		}
		// The store agrees with the check.
		_, err := e.mem.Session(ctx, handle, e.srv.Clock.Now())
		switch {
		case sim.live && err != nil:
			e.violation("session %s, after the check: %v, want it live", handle, err)
		case !sim.live && !faultSessionGone(err, sim.why):
			e.violation("session %s, after the check: %v, want it ended (%s)", handle, err, sim.why)
		}
	}

	// No lockout: every user signs in with the password committed last,
	// and not with the other. A password whose login was unlinked (m) or
	// whose user was deleted (l) signs in no more, nor one a join voided
	// (o), whose user has the login that joined it to sign in with.
	for _, u := range l.users {
		pw, other := authtest.Password, faultNewPassword
		for _, c := range calls {
			if c.Method == "ResetPassword" && c.Committed() && l.resetUser[c.Args[0].(store.TokenHash)] == u.User.ID {
				pw, other = faultNewPassword, authtest.Password
			}
		}
		loginID := cmp.Or(u.Login.ID, u.User.ID)
		if l.moved {
			u = e.movedLogin(u)
		}
		gone := l.deleted[u.User.ID] || l.unlinked[loginID]
		got, err := e.mem.Login(ctx, u.LoginKey)
		c := e.srv.NewClient(authtest.Header)
		switch {
		case gone && (err == nil || !errors.Is(err, store.ErrNotFound)):
			e.violation("the password login of %s was removed (user deleted %v), but the store has %+v, %v", u.Email, l.deleted[u.User.ID], got, err)
		case gone || err == nil && got.PasswordHash == "":
			for _, p := range []string{pw, other} {
				if r := e.signIn(c, u.Email, p); r.ok() || r.err != nil {
					e.violation("user %s signs in with a password that was removed or voided: %v", u.Email, r)
				}
			}
		case err != nil:
			e.violation("user %s lost: %v", u.Email, err)
		case e.strangerUnder(got):
			// Under account linking, while another user holds the
			// address, an unproven password is refused until a reset
			// proves it.
			if r := e.signIn(c, u.Email, pw); !r.is(http.StatusOK, "SIGN_IN_NOT_ALLOWED") {
				e.violation("user %s, whose address another user holds, with its unproven password: %v, want SIGN_IN_NOT_ALLOWED", u.Email, r)
			}
		default:
			if r := e.signIn(c, u.Email, pw); !r.ok() {
				e.violation("user %s cannot sign in with the password last set: %v", u.Email, r)
			}
			if r := e.signIn(c, u.Email, other); !r.is(http.StatusOK, "WRONG_CREDENTIALS_ERROR") {
				e.violation("user %s signs in with a password not theirs: %v", u.Email, r)
			}
		}
		if !gone && err == nil && got.PasswordHash == "" {
			logins, _ := e.mem.Logins(ctx, u.User.ID)
			if !slices.ContainsFunc(logins, func(o store.Login) bool { return o.ID != got.ID }) {
				e.violation("user %s: the password was voided and the user has no other login: locked out", u.Email)
			}
		}
	}

	// (f) No plain text token or password in the store or the log.
	for _, u := range l.users {
		if l.deleted[u.User.ID] || l.unlinked[cmp.Or(u.Login.ID, u.User.ID)] {
			continue
		}
		got, err := e.mem.Login(ctx, u.LoginKey)
		if err != nil {
			continue // reported above
		}
		if got.PasswordHash != "" && !strings.HasPrefix(got.PasswordHash, "$argon2id$") {
			e.violation("user %s: stored password is not an argon2id hash: %.12q", u.Email, got.PasswordHash)
		}
		sessions, err := e.mem.UserSessions(ctx, u.User.ID, e.srv.Clock.Now())
		if err != nil {
			e.violation("sessions of %s: %v", u.Email, err)
		}
		e.scan("the memstore's user "+u.Email, fmt.Sprintf("%+v %+v", got, sessions))
	}
	e.checkAccounts(l)

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
		// The memstore's own method, with the arguments the log kept: the
		// error is its last result.
		var err error
		method := reflect.ValueOf(m).MethodByName(c.Method)
		switch {
		case !method.IsValid() && c.Method == "LegacyTokenSession":
			// As the faultstore answers for an inner store that kept no
			// tokens of the old format.
			err = store.ErrNotFound
		case !method.IsValid():
			e.t.Fatalf("replay: unknown method %s", c.Method)
		default:
			in := []reflect.Value{reflect.ValueOf(ctx)}
			for _, a := range c.Args {
				in = append(in, reflect.ValueOf(a))
			}
			out := method.Call(in)
			err, _ = out[len(out)-1].Interface().(error)
		}
		if (err == nil) != (c.Err == nil) || err != nil && err.Error() != c.Err.Error() {
			e.fatal("replay of %s answered %v, the store %v: the log is incomplete, or the store broke its contract", c.Method, err, c.Err)
		}
	}
	return faultCopy{m}
}

// rotate presents generation gen of session handle, with hash h, as the
// library would now, with the configured reuse window; the clock is past
// any window, so it must forgive nothing.
func (m faultCopy) rotate(e *faultEnv, handle string, gen int64, h store.TokenHash) (store.Rotated, error) {
	e.t.Helper()
	var next store.TokenHash
	rand.Read(next[:])
	now := e.srv.Clock.Now()
	return m.RotateRefreshToken(e.t.Context(), store.Rotation{
		Handle: handle, Generation: gen, Presented: h, Next: next, NextKey: "fault-probe",
		Now: now, ExpiresAt: now.Add(e.refreshLifetime()), ReuseWindow: e.cfg.RefreshReuseWindow,
	})
}

// refreshLifetime is the refresh token lifetime the server uses: the
// config as given, or the default.
func (e *faultEnv) refreshLifetime() time.Duration {
	if e.cfg.RefreshTokenLifetime > 0 {
		return e.cfg.RefreshTokenLifetime
	}
	return auth.DefaultRefreshTokenLifetime
}

// present tries generation gen of session handle, with hash h, as a
// refresh would: over HTTP if a client was given it, in the inner store
// if not (a token whose response was lost), naming the session and
// generation as the library would read them from the token. A successor
// over HTTP must be the next generation of the same session.
func (e *faultEnv) present(handle string, gen int64, h store.TokenHash) faultProbe {
	e.t.Helper()
	if tok, known := e.received[h]; known {
		e.prober.SetTokens("", tok)
		r := e.refresh(e.prober)
		switch {
		case r.ok():
			_, next := e.prober.Tokens()
			if rt, ok := faultParseRefresh(next); !ok || rt.handle != handle || rt.gen != gen+1 {
				e.violation("refreshing generation %d of session %s gave generation %d of session %q", gen, handle, rt.gen, rt.handle)
			}
			return faultProbe{ok: true, next: sha256.Sum256([]byte(next))}
		case r.err == nil && r.res.StatusCode == http.StatusUnauthorized:
			return faultProbe{msg: r.res.Message, reason: r.reason()}
		}
		e.violation("refresh with faults off: %v", r)
		return faultProbe{msg: r.String()}
	}
	var nh store.TokenHash
	rand.Read(nh[:])
	now := e.srv.Clock.Now()
	res, err := e.mem.RotateRefreshToken(e.t.Context(), store.Rotation{
		Handle: handle, Generation: gen, Presented: h, Next: nh, NextKey: "fault-probe",
		Now: now, ExpiresAt: now.Add(e.refreshLifetime()), ReuseWindow: e.cfg.RefreshReuseWindow,
	})
	p := faultProbe{inner: true}
	var ended *store.EndedError
	switch {
	case err == nil:
		p.ok, p.repeat = true, res.Repeat
		if !res.Repeat {
			p.next = nh
		}
		if res.Session.Handle != handle || res.Session.Generation != gen+1 {
			e.violation("rotating generation %d of session %s in the memstore: the session is now %s at generation %d", gen, handle, res.Session.Handle, res.Session.Generation)
		}
	case errors.Is(err, store.ErrTokenReused):
		p.msg, p.reason = "token theft detected", faultTheftReason(res.Reuse)
	case errors.As(err, &ended):
		p.msg, p.reason = "unauthorised", faultEndedReason(ended.Reason)
	case errors.Is(err, store.ErrNotFound):
		// An authentic, unexpired token of a session the store forgot:
		// the library answers it as revoked.
		p.msg, p.reason = "unauthorised", auth.ReasonRevoked
	default:
		e.violation("rotation in the memstore: %v", err)
		p.msg = err.Error()
	}
	return p
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
// rotation or reset that did not commit leaves its token valid, and a
// rotation that did is a lost response (inside the reuse window the retry
// gets the same successor; without one it is theft).
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
		{"thirdparty-signup", "SignInUp", []authtest.Mode{authtest.Header}},
		{"link-evict", "LinkLogin", []authtest.Mode{authtest.Header}},
		{"verify-session", "VerifyEmail", []authtest.Mode{authtest.Header}},
		{"passwordless-signup", "UsePasswordlessCode", []authtest.Mode{authtest.Header}},
		{"passwordless-evict", "LinkLogin", []authtest.Mode{authtest.Header}},
		{"passkey-signin", "UseCeremony", []authtest.Mode{authtest.Header}},
		{"passkey-recover-linking", "LinkLogin", []authtest.Mode{authtest.Header}},
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
