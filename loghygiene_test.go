package auth_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/emailverification"
	"github.com/latchkit/auth/mailer"
	"github.com/latchkit/auth/otelauth"
	"github.com/latchkit/auth/passwordless"
	"github.com/latchkit/auth/store"
	"github.com/latchkit/auth/store/memstore"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// TestLogHygiene runs every flow of the library over HTTP, in every
// transfer mode, with a Logger that keeps every record from Debug up and
// otelauth installed, and checks that no record and no span holds a token
// any client ever held (or its SHA-256), a password used in the test, or
// a password hash (nor does a span hold an email address); nor any
// secret of third-party sign-in (the authorisation codes, PKCE verifiers,
// the client secret, the ID and access tokens the provider issued, an
// id_token posted to the form_post relay) or of email verification (the
// mailed tokens). It also checks that every sign-in attempt with a
// password emits exactly one event, through OnEvent and the log alike.
func TestLogHygiene(t *testing.T) {
	t.Parallel()
	t.Run("detector", testLogHygieneDetector)
	t.Run("span detector", testSpanHygieneDetector)
	for _, v := range []lhVariant{{
		name: "HS256",
		cfg:  auth.Config{},
	}, {
		name: "EdDSA+check+reuse+linking",
		cfg: auth.Config{
			SigningAlgorithm:    auth.EdDSA,
			CheckSessionInStore: true,
			RefreshReuseWindow:  30 * time.Second,
			AccountLinking:      true,
		},
	}} {
		for _, m := range authtest.Modes {
			t.Run(v.name+"/"+m.String(), func(t *testing.T) {
				t.Parallel()
				lhRunFlows(t, m, v)
			})
		}
	}
}

type lhVariant struct {
	name string
	cfg  auth.Config
}

// lhRunFlows is one server, one transfer mode: every flow, then the checks.
func lhRunFlows(t *testing.T, m authtest.Mode, v lhVariant) {
	ctx := t.Context()
	f := &lhFlow{
		t:       t,
		mode:    m,
		sink:    &lhSink{},
		events:  &lhEvents{changed: make(chan struct{})},
		secrets: &lhSecrets{byValue: map[string]string{}},
		mail:    &lhMailer{changed: make(chan struct{})},
		st:      &lhStore{Store: memstore.New()},
	}
	f.idp = newFakeIdP(t)
	cfg := v.cfg
	cfg.ThirdParty.Providers = f.idp.providers
	cfg.EmailVerification.Mode = emailverification.Optional
	cfg.EmailChange.Enabled = true
	cfg.Audit.Enabled = true
	cfg.Store = f.st
	cfg.Logger = slog.New(&lhHandler{sink: f.sink})
	cfg.OnEvent = f.events.record
	cfg.Email.Mailer = f.mail
	cfg.Email.Attempts = 2 // one retry, a second later, for the failing Mailer
	f.s = f.withOTel(cfg, authtest.NewServer)
	reuse := cfg.RefreshReuseWindow > 0

	const (
		pwFirst = "Hygiene-first-pw-41"
		pwWrong = "Hygiene-wrong-pw-42"
		pwNew   = "Hygiene-new-pw-43"
		pwNewer = "Hygiene-newer-pw-44"
		pwWeak  = "hygieneweakpasswordwithoutdigits"
	)
	pwLong := strings.Repeat("Hygiene-long-pw-45", 80) // over the 1 KiB cap
	for _, pw := range []string{pwFirst, pwWrong, pwNew, pwNewer, pwWeak, pwLong, authtest.Password} {
		f.secrets.add("password "+lhShort(pw), pw)
	}

	// Sign-up, email exists (both paths), the login methods and the keys, a
	// taken email, a weak password.
	c := f.s.NewClient(m)
	email := "owner-" + m.String() + "@example.com"
	f.want(f.do(c, http.MethodGet, "/auth/emailpassword/email/exists?email="+url.QueryEscape(email)), 200, "OK")
	owner := f.signUp(c, email, pwFirst)
	f.want(f.do(c, http.MethodGet, "/auth/emailpassword/email/exists?email="+url.QueryEscape(email)), 200, "OK")
	f.want(f.do(c, http.MethodGet, "/auth/signup/email/exists?email="+url.QueryEscape(email)), 200, "OK")
	f.want(f.do(c, http.MethodGet, "/auth/loginmethods"), 200, "OK")
	if cfg.SigningAlgorithm == auth.EdDSA {
		f.want(f.do(c, http.MethodGet, "/auth/jwt/jwks.json"), 200, "")
	}
	f.want(f.call(c, c.SignUp(email, pwFirst)), 200, "FIELD_ERROR")
	f.want(f.call(c, c.SignUp("weak-"+email, pwWeak)), 200, "FIELD_ERROR")
	f.want(f.call(c, c.Get("/api/session")), 200, "")

	// Refresh, twice; then replay: within the reuse window the immediate
	// predecessor still works, and a token two exchanges old is theft.
	_, r0 := c.Tokens()
	f.want(f.call(c, c.Refresh()), 200, "OK")
	_, r1 := c.Tokens()
	f.want(f.call(c, c.Refresh()), 200, "OK")
	if reuse {
		c.SetTokens("", r1)
		f.want(f.call(c, c.Refresh()), 200, "OK")
	}
	stolenAccess, _ := c.Tokens()
	c.SetTokens("", r0)
	f.want(f.call(c, c.Refresh()), 401, "token theft detected")
	// The thief's access token: refused at once with the store check.
	thief := f.s.NewClient(m)
	thief.SetTokens(stolenAccess, "")
	if cfg.CheckSessionInStore {
		f.want(f.call(thief, thief.Get("/api/session")), 401, "unauthorised")
	} else {
		f.want(f.call(thief, thief.Get("/api/session")), 200, "")
	}
	c.SetTokens("", r1)
	f.want(f.call(c, c.Refresh()), 401, "")

	// Sign-in: good, wrong password, unknown email, an over-long password,
	// a malformed email, a user without a password, a different case.
	f.signIn(c, email, pwFirst, owner.ID)
	f.signIn(f.s.NewClient(m), email, pwWrong, owner.ID)
	f.signIn(f.s.NewClient(m), "nobody-"+m.String()+"@example.com", pwFirst, "")
	f.signIn(f.s.NewClient(m), email, pwLong, owner.ID)
	f.signIn(f.s.NewClient(m), "not an email", pwFirst, "")
	noPW := socialUser("no-password-"+m.String(), "nopw-"+m.String()+"@example.com").addTo(t, f.st)
	// A user without a password login is nobody to the password check:
	// the failure names no user, as for an unknown email.
	f.signIn(f.s.NewClient(m), noPW.Email, pwFirst, "")
	c2 := f.s.NewClient(m)
	f.signIn(c2, strings.ToUpper(email), pwFirst, owner.ID)

	// A protected call with an expired access token, a refresh, a forged
	// access token, forged and unknown refresh tokens.
	f.s.Clock.Advance(time.Hour + 6*time.Second)
	f.want(f.call(c, c.Get("/api/session")), 401, "try refresh token")
	f.want(f.call(c, c.Refresh()), 200, "OK")
	f.want(f.call(c, c.Get("/api/session")), 200, "")
	access, _ := c.Tokens()
	forged := f.s.NewClient(m)
	forged.SetTokens(access[:len(access)-4]+"AAAA", "")
	f.want(f.call(forged, forged.Get("/api/session")), 401, "try refresh token")
	forged.SetTokens("", "not-a-refresh-token")
	f.want(f.call(forged, forged.Refresh()), 401, "unauthorised")
	unknownRefresh := lhRandomToken()
	f.secrets.token("unknown refresh token", unknownRefresh)
	forged.SetTokens("", unknownRefresh)
	f.want(f.call(forged, forged.Refresh()), 401, "unauthorised")

	// Store failures: a refresh and a sign-in answered 500, then a refresh
	// that works, as the token survived.
	f.st.failNext("RotateRefreshToken")
	f.want(f.call(c, c.Refresh()), 500, "internal error")
	f.want(f.call(c, c.Refresh()), 200, "OK")
	f.st.failNext("CreateSession")
	f.signIn(f.s.NewClient(m), email, pwFirst, owner.ID)

	// The Go API: list sessions, revoke one.
	n := f.events.count()
	c4 := f.s.NewClient(m)
	f.signIn(c4, email, pwFirst, owner.ID)
	handle := f.events.since(n)[0].SessionHandle
	sessions, err := f.s.Auth.Sessions(ctx, owner.ID)
	if err != nil || !slices.ContainsFunc(sessions, func(s auth.SessionInfo) bool { return s.Handle == handle }) {
		t.Fatalf("Sessions: %v, %v; want %s among them", sessions, err, handle)
	}
	if err := f.s.Auth.RevokeSession(ctx, handle); err != nil {
		t.Fatalf("RevokeSession: %v", err)
	}
	f.want(f.call(c4, c4.Refresh()), 401, "unauthorised")

	// Sign-out, then the session is gone.
	f.want(f.call(c, c.SignOut()), 200, "OK")
	f.want(f.call(c, c.Get("/api/session")), 401, "unauthorised")
	f.want(f.call(c, c.Refresh()), 401, "unauthorised")
	f.want(f.call(c, c.SignOut()), 401, "unauthorised")

	// Reset requests: known, unknown, no password, a failing Mailer, a
	// failing store lookup.
	failing := f.s.NewClient(m)
	failEmail := "fail-" + m.String() + "@example.com"
	f.signUp(failing, failEmail, pwFirst)
	other := f.s.NewClient(m)
	otherEmail := "other-" + m.String() + "@example.com"
	f.signUp(other, otherEmail, pwFirst)
	rc := f.s.NewClient(m)
	f.want(f.call(rc, rc.RequestPasswordReset(email)), 200, "OK")
	t1 := f.resetToken(1, email)
	f.want(f.call(rc, rc.RequestPasswordReset("nobody-"+m.String()+"@example.com")), 200, "OK")
	f.want(f.call(rc, rc.RequestPasswordReset(noPW.Email)), 200, "OK")
	f.want(f.call(rc, rc.RequestPasswordReset(failEmail)), 200, "OK")
	f.events.waitFor(t, auth.EventMailFailed, 1, 10*time.Second)
	f.st.failNext("Login")
	f.want(f.call(rc, rc.RequestPasswordReset(otherEmail)), 200, "OK")
	f.events.waitFor(t, auth.EventMailFailed, 2, 10*time.Second)
	f.want(f.call(rc, rc.RequestPasswordReset("not an email")), 200, "FIELD_ERROR")

	// Reset submissions: malformed, unknown and mistyped tokens, a weak
	// password, success, a replay.
	f.want(f.call(rc, rc.ResetPassword("not-a-reset-token", pwNew)), 200, "RESET_PASSWORD_INVALID_TOKEN_ERROR")
	unknownReset := lhRandomToken()
	f.secrets.token("unknown reset token", unknownReset)
	f.want(f.call(rc, rc.ResetPassword(unknownReset, pwNew)), 200, "RESET_PASSWORD_INVALID_TOKEN_ERROR")
	f.want(f.do(rc, http.MethodPost, "/auth/user/password/reset", map[string]any{
		"method": "token", "token": 12345,
		"formFields": []map[string]any{{"id": "password", "value": pwNew}},
	}), 400, "")
	f.want(f.call(rc, rc.ResetPassword(t1, pwWeak)), 200, "FIELD_ERROR")
	f.want(f.call(c2, c2.Refresh()), 200, "OK") // a live session, which the reset ends
	f.want(f.call(rc, rc.ResetPassword(t1, pwNew)), 200, "OK")
	f.userHash(email)
	f.want(f.call(rc, rc.ResetPassword(t1, pwNewer)), 200, "RESET_PASSWORD_INVALID_TOKEN_ERROR")
	f.want(f.call(c2, c2.Refresh()), 401, "unauthorised") // the reset ended the session
	f.signIn(f.s.NewClient(m), email, pwFirst, owner.ID)
	c3 := f.s.NewClient(m)
	f.signIn(c3, email, pwNew, owner.ID)
	f.want(f.call(c3, c3.Get("/api/session")), 200, "")

	// An expired reset token.
	f.want(f.call(rc, rc.RequestPasswordReset(email)), 200, "OK")
	t2 := f.resetToken(2, email)
	f.s.Clock.Advance(2 * time.Hour)
	f.want(f.call(rc, rc.ResetPassword(t2, pwNewer)), 200, "RESET_PASSWORD_INVALID_TOKEN_ERROR")

	// Reset requests past the per-email and per-client limits, if any.
	for i := range 25 {
		res := f.call(rc, rc.RequestPasswordReset(noPW.Email))
		if res.StatusCode == http.StatusTooManyRequests {
			t.Logf("reset request %d throttled: %s", i+1, res.Body)
			break
		}
		f.want(res, 200, "OK")
	}

	// Every session of a user, through the Go API.
	if _, err := f.s.Auth.RevokeAllSessions(ctx, owner.ID); err != nil {
		t.Fatalf("RevokeAllSessions: %v", err)
	}

	// Failed sign-ins for one email until throttled, if they ever are.
	throttled := false
	for range 15 {
		res := f.signIn(f.s.NewClient(m), "throttle-"+m.String()+"@example.com", pwWrong, "")
		if res.StatusCode == http.StatusTooManyRequests {
			throttled = true
			break
		}
	}
	if !throttled {
		t.Logf("15 failed sign-ins for one email were not throttled")
	}

	f.thirdPartyFlows(owner)
	f.verificationFlows(other, failing, otherEmail)
	f.emailChangeFlows()

	// Let the outbox finish, so every record it writes is in.
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := f.s.Auth.Close(cctx); err != nil {
		t.Fatalf("Close: %v", err)
	}

	// The secrets that never went over HTTP: reset tokens of every email
	// (the failed ones too), password hashes and signing keys.
	for _, msg := range f.mail.messages() {
		if tok := lhMailToken(msg); tok != "" {
			f.secrets.token("token mailed to "+msg.To.Address, tok)
		} else {
			t.Errorf("no token in the email to %s", msg.To.Address)
		}
	}
	for _, e := range []string{email, failEmail, otherEmail} {
		f.userHash(e)
	}
	for v, label := range f.idp.traffic.secretValues() {
		f.secrets.token(label, v)
	}
	keys, err := f.st.Store.SigningKeys(ctx, time.Time{})
	if err != nil || len(keys) == 0 {
		t.Fatalf("SigningKeys: %d, %v", len(keys), err)
	}
	for _, k := range keys {
		f.secrets.bytes("signing key "+k.ID, k.Material)
	}

	f.checkCoverage()
	f.checkNoLeaks()
}

// lhFlow drives one server and keeps what the checks need.
type lhFlow struct {
	t       *testing.T
	mode    authtest.Mode
	s       *authtest.Server
	idp     *fakeIdP
	st      *lhStore
	sink    *lhSink
	events  *lhEvents
	secrets *lhSecrets
	mail    *lhMailer
	spans   *tracetest.InMemoryExporter // otelauth's, by withOTel
}

// call takes the tokens a response hands out into the secrets, and
// returns it.
func (f *lhFlow) call(c *authtest.Client, res *authtest.Response) *authtest.Response {
	f.t.Helper()
	for _, h := range []string{"St-Access-Token", "St-Refresh-Token", "Front-Token"} {
		for _, v := range res.Header.Values(h) {
			if v != "remove" {
				f.secrets.token(h+" header", v)
			}
		}
	}
	for _, line := range res.Header.Values("Set-Cookie") {
		if ck, err := http.ParseSetCookie(line); err == nil && ck.Value != "" {
			f.secrets.token(ck.Name+" cookie", ck.Value)
			if v, err := url.PathUnescape(ck.Value); err == nil {
				f.secrets.token(ck.Name+" cookie", v)
			}
		}
	}
	for _, k := range []string{"accessToken", "refreshToken"} {
		if v, ok := res.JSON[k].(string); ok {
			f.secrets.token(k+" in body", v)
		}
	}
	access, refresh := c.Tokens()
	f.secrets.token("access token held", access)
	f.secrets.token("refresh token held", refresh)
	f.secrets.token("front-token held", c.FrontToken)
	return res
}

// do sends a request with the client's session and keeps its tokens.
func (f *lhFlow) do(c *authtest.Client, method, path string, body ...any) *authtest.Response {
	f.t.Helper()
	var b any
	if len(body) > 0 {
		b = body[0]
	}
	return f.call(c, c.Do(method, path, b))
}

// want checks a response's status code and its "status" (or, for errors,
// "message"); "" checks only the code.
func (f *lhFlow) want(res *authtest.Response, code int, status string) {
	f.t.Helper()
	got := res.Status
	if res.StatusCode != http.StatusOK {
		got = res.Message
	}
	if res.StatusCode != code || status != "" && got != status {
		f.t.Fatalf("answer %d %s, want %d %q", res.StatusCode, res.Body, code, status)
	}
}

// signUp signs a new user up and checks its two events.
func (f *lhFlow) signUp(c *authtest.Client, email, pw string) auth.User {
	f.t.Helper()
	e0 := f.events.count()
	f.want(f.call(c, c.SignUp(email, pw)), 200, "OK")
	var kinds []auth.EventKind
	for _, e := range f.events.since(e0) {
		if lhSyncKind(e.Kind) {
			kinds = append(kinds, e.Kind)
		}
	}
	if !slices.Equal(kinds, []auth.EventKind{auth.EventSignUp, auth.EventSignIn}) {
		f.t.Errorf("sign-up events %v, want [sign_up sign_in]", kinds)
	}
	u, err := f.s.Auth.UserByEmail(f.t.Context(), email)
	if err != nil {
		f.t.Fatal(err)
	}
	f.userHash(email)
	return u
}

// signIn signs in and checks that the attempt emitted exactly one event,
// of the kind its answer implies, to OnEvent and to the log alike.
func (f *lhFlow) signIn(c *authtest.Client, email, pw, userID string) *authtest.Response {
	f.t.Helper()
	e0, l0 := f.events.count(), f.sink.count()
	res := f.call(c, c.SignIn(email, pw))
	var evs []auth.Event
	for _, e := range f.events.since(e0) {
		if lhSyncKind(e.Kind) {
			evs = append(evs, e)
		}
	}
	var recs []lhRecord
	for _, r := range f.sink.since(l0) {
		if r.Message == "auth event" && lhSyncKind(auth.EventKind(r.attr("kind"))) {
			recs = append(recs, r)
		}
	}
	var want auth.EventKind
	switch {
	case res.StatusCode == http.StatusOK && res.Status == "OK":
		want = auth.EventSignIn
	case res.StatusCode == http.StatusOK && res.Status == "WRONG_CREDENTIALS_ERROR":
		want = auth.EventSignInFailed
	case res.StatusCode == http.StatusTooManyRequests:
		want = "sign_in_throttled" // auth.EventSignInThrottled, with rate limits
	default:
		// Not an attempt on the credentials (a malformed request) or an
		// internal error: at most one event.
		if len(evs) > 1 || len(recs) > 1 {
			f.t.Errorf("sign-in answered %d %s: %d events %v, %d event records", res.StatusCode, res.Body, len(evs), evs, len(recs))
		}
		f.t.Logf("sign-in answered %d %s emitted %d events, %d event records", res.StatusCode, lhShort(string(res.Body)), len(evs), len(recs))
		return res
	}
	if len(evs) != 1 || len(recs) != 1 {
		f.t.Errorf("sign-in as %s answered %d %s: %d events %v and %d \"auth event\" records, want one of each",
			email, res.StatusCode, res.Body, len(evs), evs, len(recs))
		return res
	}
	e, r := evs[0], recs[0]
	wantUser := userID
	if want == "sign_in_throttled" {
		wantUser = "" // refused before the lookup
	}
	if e.Kind != want || e.UserID != wantUser || (want == auth.EventSignIn) != (e.SessionHandle != "") || e.RemoteAddr == "" {
		f.t.Errorf("sign-in as %s answered %d %s: event %+v, want %s for user %q", email, res.StatusCode, res.Body, e, want, wantUser)
	}
	if r.attr("kind") != string(e.Kind) || r.attr("user_id") != e.UserID || r.attr("session") != e.SessionHandle ||
		r.attr("remote_addr") != e.RemoteAddr {
		f.t.Errorf("log record %v does not match the event %+v", r.Attrs, e)
	}
	return res
}

// resetToken waits for the nth email and returns its token.
func (f *lhFlow) resetToken(n int, to string) string {
	f.t.Helper()
	got := f.mail.waitFor(f.t, to, n, 10*time.Second)
	tok := lhMailToken(got[n-1])
	if tok == "" {
		f.t.Fatalf("no token in %q", got[n-1].Text)
	}
	f.secrets.token("reset token", tok)
	return tok
}

// thirdPartyFlows signs in with the fake provider in every way a sign-in
// can go: a sign-up and a sign-in, an unverified and a missing email,
// each fault of the provider, a replayed code, a verifier the server did
// not issue, through the form_post relay (and a relay refused), and with
// the password owner's email, which account linking joins or refuses.
func (f *lhFlow) thirdPartyFlows(owner auth.User) {
	f.t.Helper()
	m := f.mode.String()
	f.idp.SetIdentity("lh-sub-"+m, "tp-"+m+"@example.com", true)
	c := f.s.NewClient(f.mode)
	res, body := f.providerSignIn(c, authtest.ProviderID)
	f.want(res, 200, "OK")
	f.want(f.call(c, c.Get("/api/session")), 200, "")
	f.want(f.call(c, c.Refresh()), 200, "OK")
	// Another identity added to the signed-in user, then again: refused
	// from another user's session.
	f.idp.SetIdentity("lh-linked-"+m, "tp-linked-"+m+"@example.com", true)
	f.want(f.call(c, c.LinkWithProvider(f.idp.Provider)), 200, "OK")
	// The same body again: the code was used.
	f.want(f.do(f.s.NewClient(f.mode), http.MethodPost, "/auth/signinup", body), 200, "GENERAL_ERROR")
	// A verifier one character longer than the one issued.
	info := body["redirectURIInfo"].(map[string]any)
	info["pkceCodeVerifier"] = info["pkceCodeVerifier"].(string) + "x"
	f.want(f.do(f.s.NewClient(f.mode), http.MethodPost, "/auth/signinup", body), 400, "")
	res, _ = f.providerSignIn(f.s.NewClient(f.mode), authtest.ProviderID)
	f.want(res, 200, "OK")

	f.idp.SetIdentity("lh-unverified-"+m, "tp-unverified-"+m+"@example.com", false)
	res, _ = f.providerSignIn(f.s.NewClient(f.mode), authtest.ProviderID)
	f.want(res, 200, "")
	f.idp.SetIdentity("lh-no-email-"+m, "", false)
	res, _ = f.providerSignIn(f.s.NewClient(f.mode), authtest.ProviderID)
	f.want(res, 200, "NO_EMAIL_GIVEN_BY_PROVIDER")

	f.idp.SetIdentity("lh-sub-"+m, "tp-"+m+"@example.com", true)
	for _, fault := range []authtest.Fault{authtest.FaultStatus, authtest.FaultGarbage, authtest.FaultUnknownKey,
		authtest.FaultWrongIssuer, authtest.FaultWrongAudience, authtest.FaultExpired, authtest.FaultWrongNonce} {
		f.idp.SetFault(fault)
		res, _ := f.providerSignIn(f.s.NewClient(f.mode), authtest.ProviderID)
		f.want(res, 200, "GENERAL_ERROR")
	}
	f.idp.SetFault(authtest.NoFault)

	// Apple's way: the provider posts the code to the server's relay,
	// which sends the browser on to the frontend page.
	f.idp.SetIdentity("lh-apple-"+m, "apple-"+m+"@example.com", true)
	res, _ = f.providerSignIn(f.s.NewClient(f.mode), "apple")
	f.want(res, 200, "OK")
	if relayed := f.relay("a-code-for-elsewhere-"+lhRandomToken(), relayState("https://evil.example/auth/callback/apple")); relayed.StatusCode != http.StatusBadRequest {
		f.t.Errorf("relay to a foreign page: %d %s", relayed.StatusCode, relayed.Body)
	}

	// The password owner's email from a provider that verified it.
	f.idp.SetIdentity("lh-owner-"+m, owner.Email, true)
	res, _ = f.providerSignIn(f.s.NewClient(f.mode), authtest.ProviderID)
	f.want(res, 200, "")
}

// providerSignIn does what the SDK and the browser do to sign c in with
// provider id, and returns the answer of /signinup and the body posted
// there. For "apple" the code goes through the form_post relay.
func (f *lhFlow) providerSignIn(c *authtest.Client, id string) (*authtest.Response, map[string]any) {
	f.t.Helper()
	redirect := callbackPage(f.s, id)
	res := f.do(c, http.MethodGet, "/auth/authorisationurl?"+url.Values{"thirdPartyId": {id}, "redirectURIOnProviderDashboard": {redirect}}.Encode())
	f.want(res, 200, "OK")
	authURL, _ := res.JSON["urlWithQueryParams"].(string)
	verifier, _ := res.JSON["pkceCodeVerifier"].(string)
	f.secrets.token("PKCE verifier", verifier)
	back := f.idp.Authorize(f.t, authURL)
	f.secrets.token("authorisation code", back.Get("code"))
	if id == "apple" {
		relayed := f.relay(back.Get("code"), relayState(redirect))
		loc, err := url.Parse(relayed.Header.Get("Location"))
		if relayed.StatusCode != http.StatusSeeOther || err != nil {
			f.t.Fatalf("relay: %d %s to %q", relayed.StatusCode, relayed.Body, relayed.Header.Get("Location"))
		}
		back = loc.Query()
	}
	params := map[string]string{}
	for k := range back {
		params[k] = back.Get(k)
	}
	body := sdkSignInUp(id, redirect, params, verifier)
	return f.do(c, http.MethodPost, "/auth/signinup", body), body
}

// relay posts a form_post callback with code to the server, as the
// provider's page does in the browser, with the user's name and an ID
// token beside the code, as Apple posts them.
func (f *lhFlow) relay(code, state string) *authtest.Response {
	f.t.Helper()
	idToken := "eyJ" + lhRandomToken() + "." + lhRandomToken() + "." + lhRandomToken()
	f.secrets.token("id_token posted to the relay", idToken)
	f.secrets.token("code posted to the relay", code)
	form := url.Values{"code": {code}, "state": {state}, "id_token": {idToken},
		"user": {`{"name":{"firstName":"Ada","lastName":"Lovelace"}}`}}
	hc := *f.s.Client()
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	res, err := sendTo(&hc, f.s.URL, http.MethodPost, "/auth/callback/apple", form.Encode(),
		hdr("Content-Type", "application/x-www-form-urlencoded", "Origin", "https://appleid.apple.com", "Sec-Fetch-Site", "cross-site"))
	if err != nil {
		f.t.Fatalf("relay: %v", err)
	}
	return res
}

// verificationFlows asks for verification links and uses them: sent,
// asked again too soon, used, used again, made up, mailed to an address
// that fails, and expired.
func (f *lhFlow) verificationFlows(other, failing *authtest.Client, otherEmail string) {
	f.t.Helper()
	m := f.mode.String()
	for _, c := range []*authtest.Client{other, failing} {
		f.want(f.call(c, c.Refresh()), 200, "OK") // their access tokens expired an hour ago
	}
	f.want(f.call(other, other.IsEmailVerified()), 200, "OK")
	sent := len(f.events.of(auth.EventEmailVerificationSent))
	tok := f.verificationLink(other, otherEmail)
	f.want(f.call(other, other.SendVerificationEmail()), 200, "GENERAL_ERROR") // one a minute
	anon := f.s.NewClient(f.mode)
	unknown := lhRandomToken()
	f.secrets.token("unknown verification token", unknown)
	f.want(f.call(anon, anon.VerifyEmail(unknown)), 200, "EMAIL_VERIFICATION_INVALID_TOKEN_ERROR")
	f.want(f.call(anon, anon.VerifyEmail("not-a-verification-token")), 200, "EMAIL_VERIFICATION_INVALID_TOKEN_ERROR")
	f.want(f.do(anon, http.MethodPost, "/auth/user/email/verify", map[string]any{"method": "token", "token": 12345}), 400, "")
	f.want(f.call(other, other.VerifyEmail(tok)), 200, "OK")
	f.want(f.call(other, other.VerifyEmail(tok)), 200, "EMAIL_VERIFICATION_INVALID_TOKEN_ERROR")
	f.want(f.call(other, other.IsEmailVerified()), 200, "OK")
	f.want(f.call(other, other.SendVerificationEmail()), 200, "EMAIL_ALREADY_VERIFIED_ERROR")

	failed := len(f.events.of(auth.EventMailFailed))
	f.want(f.call(failing, failing.SendVerificationEmail()), 200, "OK")
	f.events.waitFor(f.t, auth.EventMailFailed, failed+1, 10*time.Second)

	late := f.s.NewClient(f.mode)
	lateEmail := "late-" + m + "@example.com"
	f.signUp(late, lateEmail, "Hygiene-late-pw-47")
	f.secrets.add("password late", "Hygiene-late-pw-47")
	lateTok := f.verificationLink(late, lateEmail)
	f.events.waitFor(f.t, auth.EventEmailVerificationSent, sent+2, 10*time.Second)
	f.s.Clock.Advance(2 * emailverification.DefaultTokenLifetime)
	f.want(f.call(anon, anon.VerifyEmail(lateTok)), 200, "EMAIL_VERIFICATION_INVALID_TOKEN_ERROR")
}

// emailChangeFlows changes a new user's address and undoes it, and tries
// tokens unknown and malformed.
func (f *lhFlow) emailChangeFlows() {
	m := f.mode.String()
	c := f.s.NewClient(f.mode)
	from, to, pw := "change-"+m+"@example.com", "changed-"+m+"@example.com", "Hygiene-change-pw-46"
	f.secrets.add("password change", pw)
	f.signUp(c, from, pw)
	anon := f.s.NewClient(f.mode)
	f.want(f.do(c, http.MethodPost, "/auth/user/email/change", map[string]any{"email": to}), 200, "OK")
	tok := lhMailToken(f.mail.waitFor(f.t, to, 1, 10*time.Second)[0])
	f.secrets.token("email change token", tok)
	f.want(f.do(anon, http.MethodPost, "/auth/user/email/change/verify", map[string]any{"token": tok}), 401, "")
	f.want(f.do(c, http.MethodPost, "/auth/user/email/change/verify", map[string]any{"token": tok}), 200, "OK")
	f.want(f.do(c, http.MethodPost, "/auth/user/email/change/verify", map[string]any{"token": tok}), 200, "EMAIL_CHANGE_INVALID_TOKEN_ERROR")
	undo := lhMailToken(f.mail.waitFor(f.t, from, 1, 10*time.Second)[0])
	f.secrets.token("email change undo token", undo)
	unknown := lhRandomToken()
	f.secrets.token("unknown email change token", unknown)
	f.want(f.do(anon, http.MethodPost, "/auth/user/email/change/undo", map[string]any{"token": unknown}), 200, "EMAIL_CHANGE_INVALID_TOKEN_ERROR")
	f.want(f.do(anon, http.MethodPost, "/auth/user/email/change/undo", map[string]any{"token": 12345}), 400, "")
	f.want(f.do(anon, http.MethodPost, "/auth/user/email/change/undo", map[string]any{"token": undo}), 200, "OK")
	f.want(f.call(c, c.Refresh()), 401, "")
}

// verificationLink asks for a link with c's session and returns the token
// of the message that arrives at to.
func (f *lhFlow) verificationLink(c *authtest.Client, to string) string {
	f.t.Helper()
	n := len(f.mail.to(to))
	f.want(f.call(c, c.SendVerificationEmail()), 200, "OK")
	got := f.mail.waitFor(f.t, to, n+1, 10*time.Second)
	tok := lhMailToken(got[n])
	if tok == "" {
		f.t.Fatalf("no token in %q", got[n].Text)
	}
	f.secrets.token("verification token", tok)
	return tok
}

// userHash adds a user's password hash, and its salt and key, to the
// secrets.
func (f *lhFlow) userHash(email string) {
	f.t.Helper()
	u, err := f.st.Store.Login(f.t.Context(), store.EmailPasswordKey(email))
	if err != nil {
		f.t.Fatal(err)
	}
	f.secrets.add("password hash of "+email, u.PasswordHash)
	if parts := strings.Split(u.PasswordHash, "$"); len(parts) == 6 {
		f.secrets.add("password hash salt of "+email, parts[4])
		f.secrets.add("password hash key of "+email, parts[5])
	}
}

// checkCoverage makes sure the flows happened: every kind of event, and
// the log records of internal and mail errors.
func (f *lhFlow) checkCoverage() {
	f.t.Helper()
	seen := map[auth.EventKind]int{}
	for _, e := range f.events.since(0) {
		seen[e.Kind]++
	}
	for _, k := range []auth.EventKind{auth.EventSignUp, auth.EventSignIn, auth.EventSignInFailed, auth.EventRefresh,
		auth.EventSignOut, auth.EventSessionRevoked, auth.EventTokenTheft, auth.EventResetEmailSent,
		auth.EventPasswordReset, auth.EventMailFailed, auth.EventEmailVerificationSent, auth.EventEmailVerified} {
		if seen[k] == 0 {
			f.t.Errorf("no %s event: the flows did not run as planned (%v)", k, seen)
		}
	}
	providerSignUps := 0
	for _, e := range f.events.since(0) {
		if e.Kind == auth.EventSignUp && e.ThirdPartyID != "" {
			providerSignUps++
		}
	}
	if providerSignUps < 2 {
		f.t.Errorf("%d sign-ups with a provider, want one through each provider", providerSignUps)
	}
	if n := len(f.idp.traffic.exchanged()); n < 8 {
		f.t.Errorf("%d code exchanges at the provider: the third-party flows did not run as planned", n)
	}
	msgs := map[string]int{}
	for _, r := range f.sink.since(0) {
		msgs[r.Message]++
	}
	for _, m := range []string{"auth event", "auth: internal error", "auth: reset email not sent",
		"auth: third-party sign-in failed", "auth: verification email not sent"} {
		if msgs[m] == 0 {
			f.t.Errorf("no %q log record (%v)", m, msgs)
		}
	}
	if msgs["auth event"] != len(f.events.since(0)) {
		f.t.Errorf("%d \"auth event\" records for %d events", msgs["auth event"], len(f.events.since(0)))
	}
	f.t.Logf("%d log records %v; %d events %v; %d secrets", f.sink.count(), msgs, f.events.count(), seen, f.secrets.len())
}

// checkNoLeaks looks for every secret in every record and span, and for
// email addresses in spans.
func (f *lhFlow) checkNoLeaks() {
	f.t.Helper()
	spans := f.spanRecords()
	for _, leak := range lhLeaks(append(append(f.sink.since(0), spans...), f.auditRecords()...), f.secrets) {
		f.t.Error(leak)
	}
	routes := 0
	for _, r := range spans {
		if strings.Contains(r.JSON, "@") {
			f.t.Errorf("%s holds an email address:\n%s", r.Message, r.JSON)
		}
		if strings.HasPrefix(r.Message, "span auth ") {
			routes++
		}
	}
	if f.s != nil && f.spans != nil {
		if routes == 0 {
			f.t.Errorf("no span of a request among %d spans: the flows did not go through otelauth", len(spans))
		}
		f.t.Logf("%d spans searched, %d of requests", len(spans), routes)
	}
}

// withOTel makes the flow's server with newServer from cfg with otelauth
// installed (store, metrics, events), the SDK's in-memory exporter
// keeping its spans, and mounts the handler wrapped by otelauth over the
// one the server mounted at /auth/: a pattern with a method is more
// specific than one without, so these take every request the flows
// send.
func (f *lhFlow) withOTel(cfg auth.Config, newServer func(testing.TB, auth.Config) *authtest.Server) *authtest.Server {
	f.t.Helper()
	traced := newSpanTrace(f.t)
	f.spans = traced.spans
	s := newServer(f.t, traced.config(cfg))
	traced.mount(s)
	return s
}

// records is every log record and every span.
func (f *lhFlow) records() []lhRecord {
	return append(f.sink.since(0), f.spanRecords()...)
}

// spanRecords is every span of otelauth as a record whose JSON is all
// the span holds that an exporter sends but ids and times (spanText). It
// closes the server first, so that every request's span has ended.
func (f *lhFlow) spanRecords() []lhRecord {
	f.t.Helper()
	if f.spans == nil {
		return nil
	}
	if f.s != nil {
		f.s.Close()
	}
	var recs []lhRecord
	for _, s := range f.spans.GetSpans() {
		recs = append(recs, lhRecord{Message: "span " + s.Name, JSON: spanText(s)})
	}
	return recs
}

// spanText is what an exporter sends of s but its ids and times: name,
// attributes, events with theirs, links' attributes and status.
func spanText(s tracetest.SpanStub) string {
	var b strings.Builder
	b.WriteString(s.Name)
	for _, a := range s.Attributes {
		fmt.Fprintf(&b, "\n%s=%s", a.Key, a.Value.String())
	}
	for _, e := range s.Events {
		b.WriteString("\nevent " + e.Name)
		for _, a := range e.Attributes {
			fmt.Fprintf(&b, " %s=%s", a.Key, a.Value.String())
		}
	}
	for _, l := range s.Links {
		for _, a := range l.Attributes {
			fmt.Fprintf(&b, "\nlink %s=%s", a.Key, a.Value.String())
		}
	}
	b.WriteString("\n" + s.Status.Description)
	return b.String()
}

// spanTrace is otelauth installed on the servers of a hygiene test that
// keeps its own log (third-party sign-in, email verification): config
// wires it into a Config, mount over a server's handler, and text is
// every span, for the test to search as it searches the log.
type spanTrace struct {
	spans *tracetest.InMemoryExporter
	tel   *otelauth.Telemetry
}

func newSpanTrace(t *testing.T) *spanTrace {
	t.Helper()
	st := &spanTrace{spans: tracetest.NewInMemoryExporter()}
	var err error
	if st.tel, err = otelauth.New(otelauth.Config{TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSyncer(st.spans))}); err != nil {
		t.Fatal(err)
	}
	return st
}

func (st *spanTrace) config(cfg auth.Config) auth.Config {
	if cfg.Store == nil {
		cfg.Store = memstore.New()
	}
	cfg.Store = st.tel.Store(cfg.Store)
	cfg.Metrics = st.tel.Metrics()
	cfg.OnEvent = st.tel.OnEvent(cfg.OnEvent)
	return cfg
}

// mount puts the handler wrapped by otelauth over the one s mounted at
// /auth/, as withOTel does.
func (st *spanTrace) mount(s *authtest.Server) {
	h := st.tel.Handler(s.Auth)
	for _, m := range []string{"GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"} {
		s.Mux.Handle(m+" /auth/", h)
	}
}

// text is every span so far, closing servers first so that their
// requests' spans have ended; it fails the test if no request's span is
// among them.
func (st *spanTrace) text(t *testing.T, servers ...*authtest.Server) string {
	t.Helper()
	for _, s := range servers {
		s.Close()
	}
	var b strings.Builder
	for _, s := range st.spans.GetSpans() {
		b.WriteString(spanText(s) + "\n")
	}
	if !strings.Contains(b.String(), "auth POST ") {
		t.Errorf("no span of a request: the flows did not go through otelauth")
	}
	return b.String()
}

// auditRecords reads the whole audit log, each entry as a record, and
// checks that it holds every event but the routine ones reported before.
func (f *lhFlow) auditRecords() []lhRecord {
	f.t.Helper()
	audited := 0
	for _, e := range f.events.since(0) {
		switch e.Kind {
		case auth.EventRefresh, auth.EventRefreshThrottled, auth.EventSessionRefused:
		default:
			audited++
		}
	}
	var recs []lhRecord
	q := store.AuditQuery{Limit: store.MaxUserPage}
	for {
		page, err := f.s.Auth.AuditLog(f.t.Context(), q)
		if err != nil {
			f.t.Fatalf("reading the audit log: %v", err)
		}
		for _, e := range page.Entries {
			b, _ := json.Marshal(e)
			recs = append(recs, lhRecord{Message: "audit entry " + e.Kind, JSON: string(b)})
		}
		if page.Next == "" {
			break
		}
		q.After = page.Next
	}
	if len(recs) < audited {
		f.t.Errorf("the audit log holds %d entries for %d events that are not routine", len(recs), audited)
	}
	return recs
}

// lhGenericSecrets are prefixes of password hashes: no record may hold one,
// whoever's it is.
var lhGenericSecrets = []string{"$argon2id$", "$argon2i$", "$2a$", "$2b$", "$2y$"}

// lhLeaks returns a description of each secret found in a record.
func lhLeaks(recs []lhRecord, secrets *lhSecrets) []string {
	var out []string
	values, labels := secrets.snapshot()
	for _, r := range recs {
		text := r.text()
		for i, v := range values {
			if strings.Contains(text, v) {
				out = append(out, fmt.Sprintf("log record %q holds the %s %q:\n%s", r.Message, labels[i], v, r.JSON))
			}
		}
		for _, p := range lhGenericSecrets {
			if strings.Contains(text, p) {
				out = append(out, fmt.Sprintf("log record %q holds a password hash (%q):\n%s", r.Message, p, r.JSON))
			}
		}
	}
	return out
}

func lhSyncKind(k auth.EventKind) bool {
	// Mail events come from the outbox, at any time.
	return k != auth.EventResetEmailSent && k != auth.EventMailFailed && k != auth.EventEmailVerificationSent
}

func lhShort(s string) string {
	if len(s) > 24 {
		return s[:24] + "..."
	}
	return s
}

func lhRandomToken() string {
	b := make([]byte, 32)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

var lhTokenInLink = regexp.MustCompile(`[?&]token=([^&\s"<>]+)`)

func lhMailToken(m mailer.Message) string {
	if sub := lhTokenInLink.FindStringSubmatch(m.Text); sub != nil {
		tok, _ := url.QueryUnescape(sub[1])
		return tok
	}
	return ""
}

// lhSecrets is what must never be logged, each with a label.
type lhSecrets struct {
	mu      sync.Mutex
	byValue map[string]string
}

func (s *lhSecrets) add(label, v string) {
	if len(v) < 8 { // too short to search for without false alarms; none of ours is
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.byValue[v]; !ok {
		s.byValue[v] = label
	}
}

// token adds a token, its signature if it is a JWT, and its SHA-256 in hex
// and base64.
func (s *lhSecrets) token(label, tok string) {
	if tok == "" {
		return
	}
	s.add(label, tok)
	if parts := strings.Split(tok, "."); len(parts) == 3 {
		s.add(label+" (JWT signature)", parts[2])
	}
	sum := sha256.Sum256([]byte(tok))
	s.bytes(label+" SHA-256", sum[:])
}

// bytes adds raw bytes in hex and base64.
func (s *lhSecrets) bytes(label string, b []byte) {
	s.add(label+" hex", hex.EncodeToString(b))
	s.add(label+" HEX", strings.ToUpper(hex.EncodeToString(b)))
	s.add(label+" base64", base64.StdEncoding.EncodeToString(b))
	s.add(label+" raw base64", base64.RawStdEncoding.EncodeToString(b))
	s.add(label+" base64url", base64.URLEncoding.EncodeToString(b))
	s.add(label+" raw base64url", base64.RawURLEncoding.EncodeToString(b))
}

func (s *lhSecrets) snapshot() (values, labels []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for v := range s.byValue {
		values = append(values, v)
	}
	slices.Sort(values)
	for _, v := range values {
		labels = append(labels, s.byValue[v])
	}
	return values, labels
}

func (s *lhSecrets) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.byValue)
}

// lhSink keeps every record a lhHandler handles.
type lhSink struct {
	mu      sync.Mutex
	records []lhRecord
}

func (s *lhSink) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.records)
}

func (s *lhSink) since(n int) []lhRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.records[n:])
}

// lhRecord is a record with its attributes flattened: the keys of nested
// groups are joined with dots, LogValuers are resolved.
type lhRecord struct {
	Level   slog.Level
	Message string
	Attrs   []lhAttr
	JSON    string // the record as slog's JSON handler writes it
}

type lhAttr struct {
	Key   string
	Value slog.Value
}

func (r lhRecord) attr(key string) string {
	for _, a := range r.Attrs {
		if a.Key == key {
			return a.Value.String()
		}
	}
	return ""
}

// text is everything in the record, each value in every form it could
// be printed in.
func (r lhRecord) text() string {
	var b strings.Builder
	b.WriteString(r.Message)
	b.WriteByte('\n')
	b.WriteString(r.JSON)
	for _, a := range r.Attrs {
		b.WriteString(a.Key)
		for _, s := range lhRenderings(a.Value) {
			b.WriteByte('\n')
			b.WriteString(s)
		}
	}
	return b.String()
}

func lhRenderings(v slog.Value) []string {
	out := []string{v.String()}
	if v.Kind() != slog.KindAny {
		return out
	}
	x := v.Any()
	out = append(out, fmt.Sprintf("%v", x), fmt.Sprintf("%+v", x), fmt.Sprintf("%#v", x), fmt.Sprintf("%x", x))
	if j, err := json.Marshal(x); err == nil {
		out = append(out, string(j))
	}
	if rv := reflect.ValueOf(x); rv.IsValid() && (rv.Kind() == reflect.Array || rv.Kind() == reflect.Slice) &&
		rv.Type().Elem().Kind() == reflect.Uint8 {
		b := make([]byte, rv.Len())
		for i := range b {
			b[i] = byte(rv.Index(i).Uint())
		}
		out = append(out, hex.EncodeToString(b), base64.StdEncoding.EncodeToString(b), base64.URLEncoding.EncodeToString(b))
	}
	return out
}

// lhHandler is a slog.Handler that keeps every record from Debug up, with
// all its attributes, those of With and WithGroup included.
type lhHandler struct {
	sink   *lhSink
	prefix string                            // the open groups, "a.b."
	attrs  []lhAttr                          // from WithAttrs, qualified
	chain  []func(slog.Handler) slog.Handler // WithAttrs and WithGroup, replayed on the JSON handler
}

func (h *lhHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelDebug }

func (h *lhHandler) Handle(ctx context.Context, r slog.Record) error {
	rec := lhRecord{Level: r.Level, Message: r.Message, Attrs: slices.Clone(h.attrs)}
	r.Attrs(func(a slog.Attr) bool {
		rec.Attrs = lhFlatten(rec.Attrs, h.prefix, a)
		return true
	})
	var buf bytes.Buffer
	var jh slog.Handler = slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug, AddSource: true})
	for _, f := range h.chain {
		jh = f(jh)
	}
	if err := jh.Handle(ctx, r.Clone()); err != nil {
		return err
	}
	rec.JSON = buf.String()
	h.sink.mu.Lock()
	defer h.sink.mu.Unlock()
	h.sink.records = append(h.sink.records, rec)
	return nil
}

func (h *lhHandler) WithAttrs(as []slog.Attr) slog.Handler {
	h2 := *h
	h2.attrs = slices.Clone(h.attrs)
	for _, a := range as {
		h2.attrs = lhFlatten(h2.attrs, h.prefix, a)
	}
	h2.chain = append(slices.Clone(h.chain), func(j slog.Handler) slog.Handler { return j.WithAttrs(as) })
	return &h2
}

func (h *lhHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	h2 := *h
	h2.prefix = h.prefix + name + "."
	h2.chain = append(slices.Clone(h.chain), func(j slog.Handler) slog.Handler { return j.WithGroup(name) })
	return &h2
}

func lhFlatten(dst []lhAttr, prefix string, a slog.Attr) []lhAttr {
	v := a.Value.Resolve()
	if v.Kind() == slog.KindGroup {
		p := prefix
		if a.Key != "" {
			p = prefix + a.Key + "."
		}
		for _, g := range v.Group() {
			dst = lhFlatten(dst, p, g)
		}
		return dst
	}
	return append(dst, lhAttr{Key: prefix + a.Key, Value: v})
}

// lhEvents records what OnEvent reports.
type lhEvents struct {
	mu      sync.Mutex
	list    []auth.Event
	changed chan struct{} // closed and replaced on every event
}

func (e *lhEvents) record(_ context.Context, ev auth.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.list = append(e.list, ev)
	close(e.changed)
	e.changed = make(chan struct{})
}

func (e *lhEvents) count() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.list)
}

// of returns the events of one kind so far.
func (e *lhEvents) of(kind auth.EventKind) []auth.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []auth.Event
	for _, ev := range e.list {
		if ev.Kind == kind {
			out = append(out, ev)
		}
	}
	return out
}

func (e *lhEvents) since(n int) []auth.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.list[n:])
}

func (e *lhEvents) waitFor(t testing.TB, kind auth.EventKind, n int, timeout time.Duration) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		e.mu.Lock()
		got, changed := 0, e.changed
		for _, ev := range e.list {
			if ev.Kind == kind {
				got++
			}
		}
		e.mu.Unlock()
		if got >= n {
			return
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("%d %s events after %v, want %d", got, kind, timeout, n)
		}
	}
}

// lhMailer keeps every message and fails, as an SMTP server refusing the
// recipient would, for recipients whose address starts with "fail".
type lhMailer struct {
	mu      sync.Mutex
	msgs    []mailer.Message
	changed chan struct{}
}

func (m *lhMailer) Send(_ context.Context, msg mailer.Message) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.msgs = append(m.msgs, msg)
	close(m.changed)
	m.changed = make(chan struct{})
	if strings.HasPrefix(msg.To.Address, "fail") {
		return fmt.Errorf("550 5.1.1 <%s>: mailbox unavailable", msg.To.Address)
	}
	return nil
}

// to returns the messages to one address so far.
func (m *lhMailer) to(address string) []mailer.Message {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []mailer.Message
	for _, msg := range m.msgs {
		if msg.To.Address == address {
			out = append(out, msg)
		}
	}
	return out
}

func (m *lhMailer) messages() []mailer.Message {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.msgs)
}

// waitFor waits until n messages to one address have come, and returns
// them.
func (m *lhMailer) waitFor(t testing.TB, to string, n int, timeout time.Duration) []mailer.Message {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		m.mu.Lock()
		var got []mailer.Message
		for _, msg := range m.msgs {
			if msg.To.Address == to {
				got = append(got, msg)
			}
		}
		changed := m.changed
		m.mu.Unlock()
		if len(got) >= n {
			return got
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("%d messages to %s after %v, want %d", len(got), to, timeout, n)
		}
	}
}

// lhStore is a memstore whose next call of a named method can be made to
// fail.
type lhStore struct {
	*memstore.Store
	mu   sync.Mutex
	fail string
}

var errLHInjected = errors.New("injected store failure")

func (s *lhStore) failNext(method string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = method
}

func (s *lhStore) failing(method string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail == method {
		s.fail = ""
		return true
	}
	return false
}

func (s *lhStore) Login(ctx context.Context, k store.LoginKey) (store.Login, error) {
	if s.failing("Login") {
		return store.Login{}, errLHInjected
	}
	return s.Store.Login(ctx, k)
}

func (s *lhStore) CreateSession(ctx context.Context, sess store.Session, refresh store.TokenHash, epoch int64) error {
	if s.failing("CreateSession") {
		return errLHInjected
	}
	return s.Store.CreateSession(ctx, sess, refresh, epoch)
}

func (s *lhStore) RotateRefreshToken(ctx context.Context, r store.Rotation) (store.Rotated, error) {
	if s.failing("RotateRefreshToken") {
		return store.Rotated{}, errLHInjected
	}
	return s.Store.RotateRefreshToken(ctx, r)
}

// lhValuer is a LogValuer, as a careless caller might log a token with.
type lhValuer string

func (v lhValuer) LogValue() slog.Value { return slog.StringValue(string(v)) }

// testLogHygieneDetector shows that the checks would see a secret however
// a record carried it: nested in groups, in With attributes, as a
// LogValuer, an error, a struct field, or a SHA-256 in a byte array.
func testLogHygieneDetector(t *testing.T) {
	t.Parallel()
	tok := lhRandomToken()
	sum := sha256.Sum256([]byte(tok))
	const pw = "Detector-pw-46"
	hash := "$argon2id$v=19$m=64,t=1,p=1$c2FsdHNhbHRzYWx0$a2V5a2V5a2V5a2V5a2V5a2V5"
	for _, tc := range []struct {
		name string
		log  func(l *slog.Logger)
		want bool
	}{
		{"clean", func(l *slog.Logger) { l.Info("auth event", "kind", "refresh", "user_id", "u1") }, false},
		{"string", func(l *slog.Logger) { l.Debug("x", "token", tok) }, true},
		{"message", func(l *slog.Logger) { l.Warn("refresh " + tok) }, true},
		{"nested groups", func(l *slog.Logger) {
			l.Info("x", slog.Group("req", slog.Group("auth", slog.String("bearer", "Bearer "+tok))))
		}, true},
		{"With and WithGroup", func(l *slog.Logger) { l.With("t", tok).WithGroup("g").Info("x", "k", 1) }, true},
		{"attrs inside WithGroup", func(l *slog.Logger) { l.WithGroup("g").With("t", tok).Info("x") }, true},
		{"LogValuer", func(l *slog.Logger) { l.Info("x", "t", lhValuer(tok)) }, true},
		{"error", func(l *slog.Logger) { l.Error("x", "error", fmt.Errorf("bad token %s", tok)) }, true},
		{"struct", func(l *slog.Logger) { l.Info("x", "req", struct{ Refresh string }{tok}) }, true},
		{"hash array", func(l *slog.Logger) { l.Info("x", "hash", store.TokenHash(sum)) }, true},
		{"hash slice", func(l *slog.Logger) { l.Info("x", "hash", sum[:]) }, true},
		{"hash hex", func(l *slog.Logger) { l.Info("x", "hash", hex.EncodeToString(sum[:])) }, true},
		{"hash base64", func(l *slog.Logger) { l.Info("x", "hash", base64.StdEncoding.EncodeToString(sum[:])) }, true},
		{"password", func(l *slog.Logger) { l.Info("x", slog.Group("form", "password", pw)) }, true},
		{"password hash", func(l *slog.Logger) { l.Info("x", "login", store.Login{PasswordHash: hash}) }, true},
		{"any argon2id hash", func(l *slog.Logger) { l.Info("x", "h", "$argon2id$v=19$other") }, true},
	} {
		sink := &lhSink{}
		secrets := &lhSecrets{byValue: map[string]string{}}
		secrets.token("token", tok)
		secrets.add("password", pw)
		secrets.add("password hash", hash)
		tc.log(slog.New(&lhHandler{sink: sink}).With("svc", "auth"))
		if sink.count() != 1 {
			t.Errorf("%s: %d records, want 1", tc.name, sink.count())
		}
		if leaks := lhLeaks(sink.since(0), secrets); (len(leaks) > 0) != tc.want {
			t.Errorf("%s: leaks %q, want found = %v", tc.name, leaks, tc.want)
		}
	}
}

// testSpanHygieneDetector shows that the checks would see a secret
// wherever a span carried it: its name, an attribute, an event's name or
// attribute, a link's attribute, its status; and an email address in any
// of them.
func testSpanHygieneDetector(t *testing.T) {
	t.Parallel()
	tok := lhRandomToken()
	sum := sha256.Sum256([]byte(tok))
	const pw = "Detector-pw-48"
	for _, tc := range []struct {
		name string
		span func(tr trace.Tracer)
		want bool
	}{
		{"clean", func(tr trace.Tracer) {
			_, s := tr.Start(context.Background(), "auth POST /signin", trace.WithAttributes(attribute.String("auth.outcome", "sign_in")))
			s.AddEvent("sign_in", trace.WithAttributes(attribute.String("auth.method", "emailpassword")))
			s.End()
		}, false},
		{"name", func(tr trace.Tracer) { _, s := tr.Start(context.Background(), "auth POST /"+tok); s.End() }, true},
		{"attribute", func(tr trace.Tracer) {
			_, s := tr.Start(context.Background(), "x", trace.WithAttributes(attribute.String("password", pw)))
			s.End()
		}, true},
		{"hash attribute", func(tr trace.Tracer) {
			_, s := tr.Start(context.Background(), "x", trace.WithAttributes(attribute.String("h", hex.EncodeToString(sum[:]))))
			s.End()
		}, true},
		{"event", func(tr trace.Tracer) {
			_, s := tr.Start(context.Background(), "x")
			s.AddEvent("refresh " + tok)
			s.End()
		}, true},
		{"event attribute", func(tr trace.Tracer) {
			_, s := tr.Start(context.Background(), "x")
			s.AddEvent("e", trace.WithAttributes(attribute.StringSlice("tokens", []string{"a", tok})))
			s.End()
		}, true},
		{"link", func(tr trace.Tracer) {
			_, s := tr.Start(context.Background(), "x", trace.WithLinks(trace.Link{Attributes: []attribute.KeyValue{attribute.String("t", tok)}}))
			s.End()
		}, true},
		{"status", func(tr trace.Tracer) {
			_, s := tr.Start(context.Background(), "x")
			s.SetStatus(codes.Error, "bad token "+tok)
			s.End()
		}, true},
		{"email", func(tr trace.Tracer) {
			_, s := tr.Start(context.Background(), "x", trace.WithAttributes(attribute.String("user", "ada@example.com")))
			s.End()
		}, true},
	} {
		f := &lhFlow{t: t, secrets: &lhSecrets{byValue: map[string]string{}}, spans: tracetest.NewInMemoryExporter()}
		f.secrets.token("token", tok)
		f.secrets.add("password", pw)
		tc.span(sdktrace.NewTracerProvider(sdktrace.WithSyncer(f.spans)).Tracer("detector"))
		recs := f.spanRecords()
		found := len(lhLeaks(recs, f.secrets)) > 0 || strings.Contains(recs[0].JSON, "@")
		if found != tc.want {
			t.Errorf("%s: found %v, want %v", tc.name, found, tc.want)
		}
	}
}

// lhTexts is a TextSender that keeps every message, and fails, as a
// provider refusing the number would, for numbers that end in 666.
type lhTexts struct {
	mu   sync.Mutex
	msgs []passwordless.TextMessage
}

func (p *lhTexts) SendText(_ context.Context, m passwordless.TextMessage) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.msgs = append(p.msgs, m)
	if strings.HasSuffix(m.To, "666") {
		return fmt.Errorf("21614: %s is not a mobile number", m.To)
	}
	return nil
}

func (p *lhTexts) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.msgs)
}

// waitFor waits until n messages have come and returns the nth.
func (p *lhTexts) waitFor(t testing.TB, n int) passwordless.TextMessage {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		p.mu.Lock()
		if len(p.msgs) >= n {
			m := p.msgs[n-1]
			p.mu.Unlock()
			return m
		}
		p.mu.Unlock()
	}
	t.Fatalf("fewer than %d text messages after 10s", n)
	return passwordless.TextMessage{}
}

func (s *lhStore) UsePasswordlessCode(ctx context.Context, flow, code store.TokenHash, now time.Time, maxAttempts int) (store.Code, error) {
	if s.failing("UsePasswordlessCode") {
		return store.Code{}, errLHInjected
	}
	return s.Store.UsePasswordlessCode(ctx, flow, code, now, maxAttempts)
}

func (s *lhStore) CreateCode(ctx context.Context, c store.Code) error {
	if s.failing("CreateCode") {
		return errLHInjected
	}
	return s.Store.CreateCode(ctx, c)
}

// lhPLCode finds a six-digit code standing on its own (not inside a
// longer run of letters and digits, as in an id, a hash or a time).
func lhPLCode(code string) *regexp.Regexp {
	return regexp.MustCompile(`(^|[^0-9A-Za-z])` + code + `([^0-9A-Za-z]|$)`)
}

// TestLogHygienePasswordless runs every passwordless flow over HTTP, in
// every transfer mode, with account linking off and on, a Logger that
// keeps every record from Debug up, and OnEvent: sign-up and sign-in by
// code and by link, wrong, expired, foreign and replayed codes, resends,
// both allowances, a Mailer and a TextSender that fail, store failures,
// malformed bodies and the exists endpoints. No record and no event
// holds a code (six digits on their own), a link, its link code (or the
// link code's hashes), or a device id in any encoding; nor any token a
// client held.
func TestLogHygienePasswordless(t *testing.T) {
	t.Parallel()
	t.Run("detector", testLogHygienePLDetector)
	for _, linking := range []bool{false, true} {
		for _, m := range authtest.Modes {
			t.Run(fmt.Sprintf("linking %v/%s", linking, m), func(t *testing.T) {
				t.Parallel()
				lhPasswordless(t, m, linking)
			})
		}
	}
}

func lhPasswordless(t *testing.T, m authtest.Mode, linking bool) {
	f := &lhFlow{
		t:       t,
		mode:    m,
		sink:    &lhSink{},
		events:  &lhEvents{changed: make(chan struct{})},
		secrets: &lhSecrets{byValue: map[string]string{}},
		mail:    &lhMailer{changed: make(chan struct{})},
		st:      &lhStore{Store: memstore.New()},
	}
	texts := &lhTexts{}
	cfg := auth.Config{
		Store: f.st, Logger: slog.New(&lhHandler{sink: f.sink}), OnEvent: f.events.record, Audit: auth.AuditConfig{Enabled: true},
		AccountLinking: linking, CheckSessionInStore: linking,
		Passwordless: passwordless.Config{Flow: passwordless.CodeAndLink, TextSender: texts},
	}
	cfg.Email.Mailer = f.mail
	cfg.Email.Attempts = 2
	f.s = f.withOTel(cfg, authtest.NewServer)
	var codes []string
	// start starts a flow for address with c and returns it with the code
	// and link that came, all of which are secrets.
	start := func(c *authtest.Client, address string) (plFlow, string, string) {
		t.Helper()
		n := len(f.mail.to(address))
		res := f.call(c, plPost(c, "/signinup/code", map[string]any{"email": address}))
		f.want(res, 200, "OK")
		fl := plStarted(t, res)
		msg := f.mail.waitFor(t, address, n+1, 10*time.Second)[n]
		code, link := plCodeOf(t, msg), plLinkOf(t, msg)
		f.plSecrets(fl, link)
		codes = append(codes, code)
		return fl, code, link
	}
	resent := func(c *authtest.Client, fl plFlow, address string) (string, string) {
		t.Helper()
		n := len(f.mail.to(address))
		f.want(f.call(c, plResend(c, fl)), 200, "OK")
		msg := f.mail.waitFor(t, address, n+1, 10*time.Second)[n]
		code, link := plCodeOf(t, msg), plLinkOf(t, msg)
		f.plSecrets(fl, link)
		codes = append(codes, code)
		return code, link
	}
	name := "pl-" + m.String()
	// wrong is the ith of some codes that none of the codes sent is.
	wrong := func(i int) string {
		for n := i*104729 + 7; ; n++ {
			if w := fmt.Sprintf("%06d", n%1_000_000); !slices.Contains(codes, w) {
				return w
			}
		}
	}

	// A password user first: with linking on, the passwordless sign-in
	// evicts and joins it.
	pw := f.s.NewClient(m)
	f.signUp(pw, name+"-owner@example.com", "Hygiene-pl-pw-48")
	f.secrets.add("password", "Hygiene-pl-pw-48")

	// Sign-up and sign-in by code, and by link in another browser.
	c := f.s.NewClient(m)
	fl, code, _ := start(c, name+"-owner@example.com")
	f.want(f.call(c, plConsume(c, fl, code)), 200, "OK")
	f.want(f.call(c, c.Get("/api/session")), 200, "")
	f.want(f.call(c, c.Refresh()), 200, "OK")
	fl, code, link := start(f.s.NewClient(m), name+"-owner@example.com")
	opener := f.s.NewClient(m)
	f.want(f.call(opener, plOpen(t, opener, link)), 200, "OK")
	f.want(f.call(opener, plOpen(t, opener, link)), 200, "RESTART_FLOW_ERROR")
	f.want(f.call(c, plConsume(c, fl, code)), 200, "RESTART_FLOW_ERROR")
	if linking {
		f.want(f.call(pw, pw.Refresh()), 401, "") // evicted by the join
	} else {
		f.want(f.call(pw, pw.Refresh()), 200, "OK")
	}

	// Wrong codes to the end of a flow, then its right code; a code of
	// another flow; a link under another flow's id.
	email := name + "-wrong@example.com"
	c = f.s.NewClient(m)
	fl, code, link = start(c, email)
	other, otherCode, _ := start(f.s.NewClient(m), email)
	f.want(f.call(c, plConsume(c, other, code)), 200, "INCORRECT_USER_INPUT_CODE_ERROR")
	f.want(f.call(c, plConsume(c, fl, otherCode)), 200, "INCORRECT_USER_INPUT_CODE_ERROR")
	f.want(f.call(c, plPost(c, "/signinup/code/consume", map[string]any{"preAuthSessionId": other.pre, "linkCode": strings.SplitN(link, "#", 2)[1]})), 200, "RESTART_FLOW_ERROR")
	for i := range 4 {
		f.want(f.call(c, plConsume(c, fl, wrong(i))), 200, "")
	}
	f.want(f.call(c, plConsume(c, fl, code)), 200, "RESTART_FLOW_ERROR")
	f.want(f.call(c, plResend(c, fl)), 200, "RESTART_FLOW_ERROR")

	// An expired code, a resend, the new code.
	email = name + "-late@example.com"
	c = f.s.NewClient(m)
	fl, code, _ = start(c, email)
	f.s.Clock.Advance(passwordless.DefaultCodeLifetime + time.Second)
	f.want(f.call(c, plConsume(c, fl, code)), 200, "EXPIRED_USER_INPUT_CODE_ERROR")
	code, _ = resent(c, fl, email)
	f.want(f.call(c, plConsume(c, fl, code)), 200, "OK")

	// Malformed bodies with live secrets in them.
	email = name + "-bad@example.com"
	c = f.s.NewClient(m)
	fl, code, link = start(c, email)
	lc := strings.SplitN(link, "#", 2)[1]
	f.want(f.call(c, plPost(c, "/signinup/code/consume", map[string]any{"preAuthSessionId": fl.pre, "deviceId": fl.device, "userInputCode": code, "linkCode": lc})), 400, "")
	f.want(f.call(c, plPost(c, "/signinup/code/consume", map[string]any{"preAuthSessionId": fl.pre, "deviceId": []string{fl.device}, "userInputCode": code})), 400, "")
	f.want(f.call(c, plPost(c, "/signinup/code/consume", map[string]any{"preAuthSessionId": fl.pre + "x", "deviceId": fl.device, "userInputCode": code})), 200, "RESTART_FLOW_ERROR")
	f.want(f.call(c, plPost(c, "/signinup/code/resend", map[string]any{"preAuthSessionId": fl.pre, "deviceId": fl.device + "x"})), 200, "RESTART_FLOW_ERROR")
	f.want(f.call(c, plPost(c, "/signinup/code/consume", map[string]any{"preAuthSessionId": fl.pre, "deviceId": fl.device, "userInputCode": strings.Repeat(code, 500)})), 400, "")

	// Store failures: the code's use, a new flow, a code's write.
	f.st.failNext("UsePasswordlessCode")
	f.want(f.call(c, plConsume(c, fl, code)), 500, "internal error")
	f.st.failNext("CreateSession")
	f.want(f.call(c, plConsume(c, fl, code)), 500, "internal error")
	fl, code, _ = start(c, email)
	f.st.failNext("CreateCode")
	f.want(f.call(c, plResend(c, fl)), 500, "internal error")
	f.st.failNext("CreateCode")
	f.want(f.call(c, plPost(c, "/signinup/code", map[string]any{"email": email})), 500, "internal error")
	f.want(f.call(c, plConsume(c, fl, code)), 200, "OK")

	// A Mailer and a TextSender that fail; a phone number that signs in.
	failed := len(f.events.of(auth.EventMailFailed))
	n := len(f.mail.to("fail-" + email))
	f.want(f.call(c, plPost(c, "/signinup/code", map[string]any{"email": "fail-" + email})), 200, "OK")
	msg := f.mail.waitFor(t, "fail-"+email, n+1, 10*time.Second)[n]
	codes = append(codes, plCodeOf(t, msg))
	f.secrets.add("link mailed to a failing address", plLinkOf(t, msg))
	f.secrets.token("link code mailed to a failing address", strings.SplitN(plLinkOf(t, msg), "#", 2)[1])
	f.events.waitFor(t, auth.EventMailFailed, failed+1, 10*time.Second)
	sent := texts.count()
	pc := f.s.NewClient(m)
	res := f.call(pc, plPost(pc, "/signinup/code", map[string]any{"phoneNumber": "+1 415 555 0666"}))
	f.want(res, 200, "OK")
	tm := texts.waitFor(t, sent+1)
	f.plSecrets(plStarted(t, res), tm.Link)
	codes = append(codes, tm.Code)
	f.events.waitFor(t, auth.EventMailFailed, failed+2, 10*time.Second)
	res = f.call(pc, plPost(pc, "/signinup/code", map[string]any{"phoneNumber": "+1 415 555 0100"}))
	fl = plStarted(t, res)
	tm = texts.waitFor(t, sent+3) // the failing number's retry came between
	f.plSecrets(fl, tm.Link)
	codes = append(codes, tm.Code)
	f.want(f.call(pc, plConsume(pc, fl, tm.Code)), 200, "OK")

	// Past the allowances: sends to one address, wrong codes for it.
	email = name + "-limits@example.com"
	c = f.s.NewClient(m)
	fl, code, _ = start(c, email)
	for range 4 {
		resent(c, fl, email)
	}
	f.want(f.call(c, plResend(c, fl)), 200, "GENERAL_ERROR")
	f.want(f.call(c, plPost(c, "/signinup/code", map[string]any{"email": email})), 200, "GENERAL_ERROR")
	for i := range 4 {
		f.want(f.call(c, plConsume(c, fl, wrong(10+i))), 200, "")
	}
	f.s.Clock.Advance(time.Hour)
	for i := 0; i < 10; i++ {
		fl, code, _ = start(c, email)
		for j := range 5 {
			res := f.call(c, plConsume(c, fl, wrong(20+5*i+j)))
			if res.Status == "GENERAL_ERROR" {
				i = 10
				break
			}
		}
		f.s.Clock.Advance(5 * time.Minute)
	}
	f.want(f.call(c, plConsume(c, fl, code)), 200, "")

	// The exists endpoints.
	for _, q := range []string{"/auth/passwordless/email/exists?email=" + url.QueryEscape(name+"-owner@example.com"),
		"/auth/passwordless/phonenumber/exists?phoneNumber=%2B14155550100", "/auth/signup/phonenumber/exists?phoneNumber=x"} {
		f.want(f.do(c, http.MethodGet, q), 200, "OK")
	}

	cctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := f.s.Auth.Close(cctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	// Every message sent, in case one was not read above.
	for _, msg := range f.mail.messages() {
		codes = append(codes, plCodeOf(t, msg))
		link := plLinkOf(t, msg)
		f.secrets.add("link mailed to "+msg.To.Address, link)
		f.secrets.token("link code mailed to "+msg.To.Address, strings.SplitN(link, "#", 2)[1])
	}

	// The flows happened as planned.
	seen := map[auth.EventKind]int{}
	for _, e := range f.events.since(0) {
		seen[e.Kind]++
	}
	for _, k := range []auth.EventKind{auth.EventPasswordlessCodeSent, auth.EventSignUp, auth.EventSignIn, auth.EventSignInFailed,
		auth.EventSignInThrottled, auth.EventMailFailed} {
		if seen[k] == 0 {
			t.Errorf("no %s event: the flows did not run as planned (%v)", k, seen)
		}
	}
	if linking && (seen[auth.EventAccountLinked] == 0 || seen[auth.EventSessionRevoked] == 0) {
		t.Errorf("with linking on, no join with eviction: %v", seen)
	}
	msgs := map[string]int{}
	for _, r := range f.sink.since(0) {
		msgs[r.Message]++
	}
	for _, want := range []string{"auth event", "auth: internal error", "auth: passwordless email not sent"} {
		if msgs[want] == 0 {
			t.Errorf("no %q log record (%v)", want, msgs)
		}
	}
	t.Logf("%d log records %v; %d events %v; %d codes, %d secrets", f.sink.count(), msgs, f.events.count(), seen, len(codes), f.secrets.len())

	// No secret in a record or an event.
	f.checkNoLeaks()
	events := f.events.since(0)
	values, labels := f.secrets.snapshot()
	for _, e := range events {
		text := fmt.Sprintf("%+v %#v", e, e)
		for i, v := range values {
			if strings.Contains(text, v) {
				t.Errorf("event %s holds the %s %q", e.Kind, labels[i], v)
			}
		}
	}
	slices.Sort(codes)
	for _, code := range slices.Compact(codes) {
		re := lhPLCode(code)
		for _, r := range f.records() {
			if re.MatchString(r.text()) {
				t.Errorf("log record %q holds the code %s:\n%s", r.Message, code, r.JSON)
			}
		}
		for _, e := range events {
			if re.MatchString(fmt.Sprintf("%+v %#v", e, e)) {
				t.Errorf("event %s holds the code %s", e.Kind, code)
			}
		}
	}
}

// plSecrets adds the secrets of a flow and one of its links: the device
// id in any encoding, the link, its link code and the link code's
// hashes.
func (f *lhFlow) plSecrets(fl plFlow, link string) {
	f.secrets.add("deviceId", fl.device)
	if b, err := base64.StdEncoding.DecodeString(fl.device); err == nil {
		f.secrets.bytes("deviceId bytes", b)
	}
	f.secrets.add("link", link)
	if _, lc, ok := strings.Cut(link, "#"); ok {
		f.secrets.token("link code", lc)
		h := sha256.Sum256([]byte("link\x00" + lc))
		f.secrets.bytes("link code's stored hash", h[:])
	}
}

// testLogHygienePLDetector shows that the checks of the passwordless run
// would see its secrets: a code on its own wherever it stands, but not
// six digits inside an id; a device id as bytes; a link; a link code's
// stored hash.
func testLogHygienePLDetector(t *testing.T) {
	t.Parallel()
	device := make([]byte, 32)
	rand.Read(device)
	lc := lhRandomToken()
	link := "https://app.example/auth/verify?preAuthSessionId=x&tenantId=public#" + lc
	stored := sha256.Sum256([]byte("link\x00" + lc))
	const code = "482913"
	for _, tc := range []struct {
		name string
		log  func(l *slog.Logger)
		want bool
	}{
		{"clean", func(l *slog.Logger) { l.Info("auth event", "kind", "sign_in_failed", "user_id", "u-a482913b") }, false},
		{"code in the message", func(l *slog.Logger) { l.Info("sent " + code) }, true},
		{"code as a number", func(l *slog.Logger) { l.Info("x", "code", 482913) }, true},
		{"code in JSON", func(l *slog.Logger) { l.Debug("x", "body", `{"userInputCode":"`+code+`"}`) }, true},
		{"code in a text message", func(l *slog.Logger) { l.Info("x", "msg", passwordless.TextMessage{Code: code}) }, true},
		{"device id bytes", func(l *slog.Logger) { l.Info("x", "device", device) }, true},
		{"device id", func(l *slog.Logger) { l.Info("x", "device", base64.StdEncoding.EncodeToString(device)) }, true},
		{"link", func(l *slog.Logger) { l.Warn("x", "error", fmt.Errorf("sending %s: refused", link)) }, true},
		{"stored hash", func(l *slog.Logger) { l.Info("x", "hash", store.TokenHash(stored)) }, true},
	} {
		sink := &lhSink{}
		secrets := &lhSecrets{byValue: map[string]string{}}
		f := &lhFlow{secrets: secrets}
		f.plSecrets(plFlow{device: base64.StdEncoding.EncodeToString(device)}, link)
		tc.log(slog.New(&lhHandler{sink: sink}))
		found := len(lhLeaks(sink.since(0), secrets)) > 0 || lhPLCode(code).MatchString(sink.since(0)[0].text())
		if found != tc.want {
			t.Errorf("%s: found %v, want %v", tc.name, found, tc.want)
		}
	}
}

// ---- passkeys ----

func (s *lhStore) UseCeremony(ctx context.Context, kind store.CodeKind, hash store.TokenHash, now time.Time, update *store.MaterialUpdate) (store.Code, error) {
	if s.failing("UseCeremony") {
		return store.Code{}, errLHInjected
	}
	return s.Store.UseCeremony(ctx, kind, hash, now, update)
}

// pkOptions adds the challenge of an options answer to the secrets, and
// returns the options.
func (f *lhFlow) pkOptions(res *authtest.Response) pkOptions {
	f.t.Helper()
	f.want(res, 200, "OK")
	o := pkOptionsOf(f.t, "options", res)
	ch, _ := res.JSON["challenge"].(string)
	if ch == "" {
		f.t.Fatalf("options without a challenge: %s", res.Body)
	}
	f.secrets.add("challenge", ch)
	if b, err := base64.RawURLEncoding.DecodeString(ch); err == nil {
		f.secrets.bytes("challenge bytes", b)
	}
	return o
}

// pkCred adds what a credential carries that must stay out of the log
// (its client data, decoded too, its signature, its attestation object),
// and returns it. Its id, a public identifier, may be logged.
func (f *lhFlow) pkCred(cred []byte) []byte {
	f.t.Helper()
	var c struct{ Response map[string]any }
	if err := json.Unmarshal(cred, &c); err != nil {
		f.t.Fatal(err)
	}
	for _, k := range []string{"clientDataJSON", "signature", "attestationObject"} {
		v, ok := c.Response[k].(string)
		if !ok {
			continue
		}
		f.secrets.add(k, v)
		if b, err := base64.RawURLEncoding.DecodeString(v); err == nil {
			f.secrets.bytes(k+" bytes", b)
			if k == "clientDataJSON" {
				f.secrets.add("clientDataJSON decoded", string(b))
			}
		}
	}
	return cred
}

// TestLogHygienePasskeys runs every passkey flow over HTTP, in every
// transfer mode, with account linking off and on, a Logger that keeps
// every record from Debug up, and OnEvent: sign-up, sign-in, a second
// passkey, the list and removal; replays, a clone's counter, another
// origin and relying party, an unknown credential, expired options,
// malformed credentials with live secrets in them, a taken email; store
// failures; recovery requested, used, used again, made up, for an
// unknown address, a failing Mailer, and an address another user holds.
// No record and no event holds a challenge, a credential's client data,
// signature or attestation object, a recovery token (or its hash), or a
// token any client held.
func TestLogHygienePasskeys(t *testing.T) {
	t.Parallel()
	t.Run("detector", testLogHygienePKDetector)
	for _, linking := range []bool{false, true} {
		for _, m := range authtest.Modes {
			t.Run(fmt.Sprintf("linking %v/%s", linking, m), func(t *testing.T) {
				t.Parallel()
				lhPasskeys(t, m, linking)
			})
		}
	}
}

func lhPasskeys(t *testing.T, m authtest.Mode, linking bool) {
	f := &lhFlow{
		t:       t,
		mode:    m,
		sink:    &lhSink{},
		events:  &lhEvents{changed: make(chan struct{})},
		secrets: &lhSecrets{byValue: map[string]string{}},
		mail:    &lhMailer{changed: make(chan struct{})},
		st:      &lhStore{Store: memstore.New()},
	}
	cfg := auth.Config{
		Store: f.st, Logger: slog.New(&lhHandler{sink: f.sink}), OnEvent: f.events.record, Audit: auth.AuditConfig{Enabled: true},
		AccountLinking: linking, CheckSessionInStore: linking,
	}
	cfg.Email.Mailer = f.mail
	cfg.Email.Attempts = 2
	f.s = f.withOTel(cfg, pkServer)
	ctx := t.Context()
	name := "pk-" + m.String()
	email := name + "@example.com"

	// Sign-up, and the address's existence before and after.
	exists := func(address string) {
		f.want(f.do(f.s.NewClient(m), http.MethodGet, "/auth/webauthn/email/exists?email="+url.QueryEscape(address)), 200, "OK")
	}
	exists(email)
	c := f.s.NewClient(m)
	a := f.s.NewAuthenticator()
	o := f.pkOptions(f.call(c, c.PasskeyRegisterOptions(email)))
	f.want(f.call(c, c.PasskeySignUp(o.id, f.pkCred(pkRegister(t, a, o)))), 200, "OK")
	exists(email)
	f.want(f.call(c, c.Get("/api/session")), 200, "")
	f.want(f.call(c, c.Refresh()), 200, "OK")

	// Sign-in; the assertion again, with its options and with new ones.
	signIn := func(c *authtest.Client, a *authtest.Authenticator, status string, opts ...authtest.CeremonyOption) (pkOptions, []byte) {
		t.Helper()
		o := f.pkOptions(f.call(c, c.PasskeySignInOptions()))
		cred := f.pkCred(pkAssert(t, a, o, opts...))
		f.want(f.call(c, c.PasskeySignIn(o.id, cred)), 200, status)
		return o, cred
	}
	in := f.s.NewClient(m)
	o, cred := signIn(in, a, "OK")
	f.want(f.call(in, in.PasskeySignIn(o.id, cred)), 200, "INVALID_CREDENTIALS_ERROR")
	fresh := f.pkOptions(f.call(in, in.PasskeySignInOptions()))
	f.want(f.call(in, in.PasskeySignIn(fresh.id, cred)), 200, "INVALID_CREDENTIALS_ERROR")

	// A clone's counter, another origin and relying party, a passkey the
	// server never saw, options past their five minutes.
	signIn(f.s.NewClient(m), a, "INVALID_CREDENTIALS_ERROR", authtest.WithCounter(0))
	signIn(f.s.NewClient(m), a, "INVALID_CREDENTIALS_ERROR", authtest.WithOrigin("https://evil.example"))
	signIn(f.s.NewClient(m), a, "INVALID_CREDENTIALS_ERROR", authtest.WithRPID("evil.example"))
	stranger := f.s.NewAuthenticator()
	if _, err := stranger.Register([]byte(`{"rp":{"id":"app.example.com"},"user":{"id":"c3RyYW5nZXI","name":"x"},"challenge":"AAAAAAAAAAAAAAAAAAAAAA"}`)); err != nil {
		t.Fatal(err)
	}
	signIn(f.s.NewClient(m), stranger, "INVALID_CREDENTIALS_ERROR")
	late := f.pkOptions(f.call(in, in.PasskeySignInOptions()))
	lateCred := f.pkCred(pkAssert(t, a, late))
	f.s.Clock.Advance(6 * time.Minute)
	f.want(f.call(in, in.PasskeySignIn(late.id, lateCred)), 200, "INVALID_CREDENTIALS_ERROR")

	// Malformed credentials with live secrets in them, to live options.
	o = f.pkOptions(f.call(in, in.PasskeySignInOptions()))
	good := f.pkCred(pkAssert(t, a, o))
	var live map[string]any
	json.Unmarshal(good, &live)
	resp := live["response"].(map[string]any)
	for _, tc := range pkMalformedCredentials(false) {
		res := f.call(in, in.PasskeySignIn(o.id, pkEdited(t, good, tc.edit)))
		if res.StatusCode != 400 && res.Status != "INVALID_CREDENTIALS_ERROR" {
			t.Errorf("%s: %d %s", tc.name, res.StatusCode, res.Body)
		}
	}
	f.want(f.do(in, http.MethodPost, "/auth/webauthn/signin", map[string]any{
		"webauthnGeneratedOptionsId": o.id, "credential": map[string]any{"id": 5, "response": resp}}), 400, "")
	f.want(f.do(in, http.MethodPost, "/auth/webauthn/signin", map[string]any{
		"webauthnGeneratedOptionsId": []string{o.id}, "credential": live}), 400, "")
	reg := f.pkOptions(f.call(in, in.PasskeyRegisterOptions(name+"-new@example.com")))
	regCred := f.pkCred(pkRegister(t, f.s.NewAuthenticator(), reg))
	for _, tc := range pkMalformedCredentials(true) {
		res := f.call(in, in.PasskeySignUp(reg.id, pkEdited(t, regCred, tc.edit)))
		if res.StatusCode != 400 && res.Status != "INVALID_CREDENTIALS_ERROR" {
			t.Errorf("%s: %d %s", tc.name, res.StatusCode, res.Body)
		}
	}
	f.want(f.call(in, in.PasskeySignIn(o.id, good)), 200, "OK")

	// A taken address.
	reg = f.pkOptions(f.call(in, in.PasskeyRegisterOptions(email)))
	f.want(f.call(in, in.PasskeySignUp(reg.id, f.pkCred(pkRegister(t, f.s.NewAuthenticator(), reg)))), 200, "EMAIL_ALREADY_EXISTS_ERROR")

	// A second passkey in the session, the list, removal.
	u, err := f.s.Auth.UserByID(ctx, userIDOf(t, in))
	if err != nil {
		t.Fatal(err)
	}
	b := f.s.NewAuthenticator()
	reg = f.pkOptions(f.call(in, in.PasskeyRegisterOptions(email)))
	f.want(f.do(in, http.MethodPost, "/auth/webauthn/credential", map[string]any{
		"webauthnGeneratedOptionsId": reg.id, "recipeUserId": u.LoginMethods[0].ID, "credential": json.RawMessage(f.pkCred(pkRegister(t, b, reg)))}), 200, "OK")
	f.want(f.call(in, in.ListPasskeys()), 200, "OK")
	signIn(f.s.NewClient(m), b, "OK")
	f.want(f.call(in, in.RemovePasskey(pkCredID(b))), 200, "OK")
	f.want(f.call(in, in.RemovePasskey(pkCredID(b))), 200, "CREDENTIAL_NOT_FOUND_ERROR")
	f.want(f.call(in, in.RemovePasskey(pkCredID(a))), 200, "GENERAL_ERROR")

	// Store failures: the options, the sign-in's look-up and its use.
	f.st.failNext("CreateCode")
	f.want(f.call(in, in.PasskeySignInOptions()), 500, "internal error")
	for _, method := range []string{"Login", "UseCeremony", "CreateSession"} {
		o := f.pkOptions(f.call(in, in.PasskeySignInOptions()))
		cred := f.pkCred(pkAssert(t, a, o))
		f.st.failNext(method)
		f.want(f.call(in, in.PasskeySignIn(o.id, cred)), 500, "internal error")
	}

	// Recovery: requested, used, used again; a made-up token; an unknown
	// address; a failing Mailer; an address another user holds.
	rc := f.s.NewClient(m)
	recoveryToken := func(address string, n int) string {
		t.Helper()
		f.want(f.call(rc, pkPost(rc, "/user/webauthn/reset/token", map[string]string{"email": address})), 200, "OK")
		tok := lhMailToken(f.mail.waitFor(t, address, n, 10*time.Second)[n-1])
		f.secrets.token("recovery token", tok)
		return tok
	}
	recoverWith := func(tok, status string) {
		t.Helper()
		res := f.call(rc, pkRecoveryOptions(rc, tok))
		if status == "RECOVER_ACCOUNT_TOKEN_INVALID_ERROR" {
			f.want(res, 200, status)
			return
		}
		o := f.pkOptions(res)
		f.want(f.call(rc, pkRecoverWith(rc, o, f.pkCred(pkRegister(t, f.s.NewAuthenticator(), o)), tok)), 200, status)
	}
	tok := recoveryToken(email, 1)
	spare := f.pkOptions(f.call(rc, pkRecoveryOptions(rc, tok)))
	recoverWith(tok, "OK")
	f.want(f.call(rc, pkRecoverWith(rc, spare, f.pkCred(pkRegister(t, f.s.NewAuthenticator(), spare)), tok)), 200, "RECOVER_ACCOUNT_TOKEN_INVALID_ERROR")
	recoverWith(tok, "RECOVER_ACCOUNT_TOKEN_INVALID_ERROR")
	madeUp := lhRandomToken()
	f.secrets.token("made-up recovery token", madeUp)
	recoverWith(madeUp, "RECOVER_ACCOUNT_TOKEN_INVALID_ERROR")
	f.want(f.call(in, in.Refresh()), 401, "") // the recovery ended the session
	f.want(f.call(rc, pkPost(rc, "/user/webauthn/reset/token", map[string]string{"email": "nobody-" + email})), 200, "OK")

	failing := "fail-" + email
	pkc := f.s.NewClient(m)
	o = f.pkOptions(f.call(pkc, pkc.PasskeyRegisterOptions(failing)))
	f.want(f.call(pkc, pkc.PasskeySignUp(o.id, f.pkCred(pkRegister(t, f.s.NewAuthenticator(), o)))), 200, "OK")
	failed := len(f.events.of(auth.EventMailFailed))
	f.want(f.call(rc, pkPost(rc, "/user/webauthn/reset/token", map[string]string{"email": failing})), 200, "OK")
	f.events.waitFor(t, auth.EventMailFailed, failed+1, 10*time.Second)

	held := "held-" + email
	o = f.pkOptions(f.call(pkc, pkc.PasskeyRegisterOptions(held)))
	f.want(f.call(pkc, pkc.PasskeySignUp(o.id, f.pkCred(pkRegister(t, f.s.NewAuthenticator(), o)))), 200, "OK")
	heldTok := recoveryToken(held, 1)
	other := f.signUp(f.s.NewClient(m), held, "Hygiene-pk-pw-49")
	f.secrets.add("password", "Hygiene-pk-pw-49")
	if err := f.s.Auth.SetEmailVerified(ctx, other.LoginMethods[0].ID, true); err != nil {
		t.Fatal(err)
	}
	f.want(f.call(rc, pkPost(rc, "/user/webauthn/reset/token", map[string]string{"email": held})), 200, "OK")
	recoverWith(heldTok, "RECOVER_ACCOUNT_NOT_ALLOWED")

	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := f.s.Auth.Close(cctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for _, msg := range f.mail.messages() {
		if tok := lhMailToken(msg); tok != "" {
			f.secrets.token("token mailed to "+msg.To.Address, tok)
		}
		if link := lhLinkIn(msg); link != "" {
			f.secrets.add("link mailed to "+msg.To.Address, link)
		}
	}

	// The flows happened as planned.
	seen := map[auth.EventKind]int{}
	for _, e := range f.events.since(0) {
		seen[e.Kind]++
	}
	for _, k := range []auth.EventKind{auth.EventSignUp, auth.EventSignIn, auth.EventSignInFailed, auth.EventPasskeyAdded,
		auth.EventPasskeyRemoved, auth.EventPasskeyCloneSuspected, auth.EventResetEmailSent, auth.EventSessionRevoked, auth.EventMailFailed} {
		if seen[k] == 0 {
			t.Errorf("no %s event: the flows did not run as planned (%v)", k, seen)
		}
	}
	msgs := map[string]int{}
	for _, r := range f.sink.since(0) {
		msgs[r.Message]++
	}
	for _, want := range []string{"auth event", "auth: internal error", "auth: passkey refused",
		"auth: passkey sign-in refused: its counter did not grow, the key may have been cloned",
		"auth: passkey recovery email withheld: another user holds the address"} {
		if msgs[want] == 0 {
			t.Errorf("no %q log record (%v)", want, msgs)
		}
	}
	t.Logf("%d log records %v; %d events %v; %d secrets", f.sink.count(), msgs, f.events.count(), seen, f.secrets.len())

	// No secret in a record or an event.
	f.checkNoLeaks()
	values, labels := f.secrets.snapshot()
	for _, e := range f.events.since(0) {
		text := fmt.Sprintf("%+v %#v", e, e)
		for i, v := range values {
			if strings.Contains(text, v) {
				t.Errorf("event %s holds the %s %q", e.Kind, labels[i], v)
			}
		}
	}
}

// userIDOf is the user ("sub") of a client's session.
func userIDOf(t testing.TB, c *authtest.Client) string {
	t.Helper()
	uid := decodeFrontToken(t, c.FrontToken).UID
	if uid == "" {
		t.Fatal("the client has no session")
	}
	return uid
}

// lhLinkIn is the first link of a message.
func lhLinkIn(m mailer.Message) string { return plLinkIn.FindString(m.Text) }

// testLogHygienePKDetector shows that the checks of the passkey run would
// see its secrets wherever a record carried them: a challenge as text or
// bytes, client data decoded, a signature or attestation object as bytes,
// a recovery token or its stored hash.
func testLogHygienePKDetector(t *testing.T) {
	t.Parallel()
	cd := `{"type":"webauthn.get","challenge":"Ym9ndXMtY2hhbGxlbmdlLTEyMw","origin":"https://app.example.com"}`
	sig := make([]byte, 70)
	rand.Read(sig)
	att := make([]byte, 200)
	rand.Read(att)
	tok := lhRandomToken()
	cred, _ := json.Marshal(map[string]any{"id": "Y3JlZGVudGlhbC1pZA", "response": map[string]string{
		"clientDataJSON": pkB64([]byte(cd)), "signature": pkB64(sig), "attestationObject": pkB64(att)}})
	stored := sha256.Sum256([]byte(tok))
	for _, tc := range []struct {
		name string
		log  func(l *slog.Logger)
		want bool
	}{
		{"clean", func(l *slog.Logger) {
			l.Info("auth: passkey refused", "error", "auth: the passkey response fails the checks: verification_error: Error validating challenge")
		}, false},
		{"the credential id", func(l *slog.Logger) { l.Info("x", "credential", "Y3JlZGVudGlhbC1pZA") }, false},
		{"the challenge", func(l *slog.Logger) { l.Info("x", "challenge", "Ym9ndXMtY2hhbGxlbmdlLTEyMw") }, true},
		{"client data decoded", func(l *slog.Logger) { l.Debug("x", "clientData", cd) }, true},
		{"client data as bytes", func(l *slog.Logger) { l.Debug("x", "clientData", []byte(cd)) }, true},
		{"a signature as bytes", func(l *slog.Logger) { l.Warn("x", "sig", sig) }, true},
		{"a signature in hex", func(l *slog.Logger) { l.Warn("x", "sig", fmt.Sprintf("%x", sig)) }, true},
		{"an attestation object", func(l *slog.Logger) { l.Info("x", "att", pkB64(att)) }, true},
		{"a recovery token", func(l *slog.Logger) { l.Warn("x", "error", fmt.Errorf("link ?token=%s", tok)) }, true},
		{"its stored hash", func(l *slog.Logger) { l.Info("x", "hash", store.TokenHash(stored)) }, true},
	} {
		sink := &lhSink{}
		f := &lhFlow{t: t, secrets: &lhSecrets{byValue: map[string]string{}}}
		f.pkCred(cred)
		f.secrets.add("challenge", "Ym9ndXMtY2hhbGxlbmdlLTEyMw")
		f.secrets.token("recovery token", tok)
		tc.log(slog.New(&lhHandler{sink: sink}))
		if found := len(lhLeaks(sink.since(0), f.secrets)) > 0; found != tc.want {
			t.Errorf("%s: found %v, want %v", tc.name, found, tc.want)
		}
	}
}

// ---- multi-factor authentication ----

func (s *lhStore) UpdateLoginMaterial(ctx context.Context, loginID string, old, new []byte) error {
	if s.failing("UpdateLoginMaterial") {
		return errLHInjected
	}
	return s.Store.UpdateLoginMaterial(ctx, loginID, old, new)
}

func (s *lhStore) UpdateSessionFactors(ctx context.Context, handle string, old, new []byte, now time.Time) error {
	if s.failing("UpdateSessionFactors") {
		return errLHInjected
	}
	return s.Store.UpdateSessionFactors(ctx, handle, old, new, now)
}

// totpSecret adds the secret of a new device's answer to the secrets,
// in every form it could be written in (base32 in either case, the raw
// key in hex and base64, the otpauth URI), and returns it.
func (f *lhFlow) totpSecret(res *authtest.Response) string {
	f.t.Helper()
	f.want(res, 200, "OK")
	secret, _ := res.JSON["secret"].(string)
	qr, _ := res.JSON["qrCodeString"].(string)
	key, err := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(secret)
	if err != nil || len(key) < 16 || qr == "" {
		f.t.Fatalf("a device without a secret: %s", res.Body)
	}
	f.secrets.add("TOTP secret", secret)
	f.secrets.add("TOTP secret, lower-case", strings.ToLower(secret))
	f.secrets.add("otpauth URI", qr)
	f.secrets.bytes("TOTP key", key)
	return secret
}

// recoveryCodes adds the codes of a new set to the secrets, as shown, as
// a person may type them (no dashes, capitals) and as the store keeps
// them (SHA-256 of the code without dashes), and returns them.
func (f *lhFlow) recoveryCodes(res *authtest.Response) []string {
	f.t.Helper()
	f.want(res, 200, "OK")
	var codes []string
	for _, v := range res.JSON["codes"].([]any) {
		code := v.(string)
		codes = append(codes, code)
		bare := strings.ReplaceAll(code, "-", "")
		f.secrets.add("recovery code", code)
		f.secrets.add("recovery code without dashes", bare)
		f.secrets.add("recovery code in capitals", strings.ToUpper(code))
		f.secrets.add("recovery code without dashes in capitals", strings.ToUpper(bare))
		sum := sha256.Sum256([]byte(bare))
		f.secrets.bytes("recovery code's stored hash", sum[:])
	}
	if len(codes) != 10 {
		f.t.Fatalf("%d recovery codes: %s", len(codes), res.Body)
	}
	return codes
}

// TestLogHygieneMFA runs TOTP and recovery codes over HTTP, in every
// transfer mode, with TOTP secrets sealed and not, a Logger that keeps
// every record from Debug up, and OnEvent: a device made, set up with a
// wrong code, an unknown device's and then the right one; the code
// replayed; a second device made and removed, the last refused; a
// session that completes TOTP with the next code; wrong codes to the
// lockout, and past it, a recovery code in the lockout; recovery codes
// made, counted, used typed in capitals, used again, made up; store
// failures on the way. No record and no event holds a TOTP secret (in
// base32 or as the key's bytes, or the otpauth URI), a TOTP code, right
// or wrong (six digits on their own), a recovery code in any form or its
// stored hash, nor any token a client held.
func TestLogHygieneMFA(t *testing.T) {
	t.Parallel()
	t.Run("detector", testLogHygieneMFADetector)
	for _, sealed := range []bool{false, true} {
		for _, m := range authtest.Modes {
			t.Run(fmt.Sprintf("sealed %v/%s", sealed, m), func(t *testing.T) {
				t.Parallel()
				lhMFA(t, m, sealed)
			})
		}
	}
}

func lhMFA(t *testing.T, m authtest.Mode, sealed bool) {
	f := &lhFlow{
		t:       t,
		mode:    m,
		sink:    &lhSink{},
		events:  &lhEvents{changed: make(chan struct{})},
		secrets: &lhSecrets{byValue: map[string]string{}},
		mail:    &lhMailer{changed: make(chan struct{})},
		st:      &lhStore{Store: memstore.New()},
	}
	cfg := auth.Config{
		Store: f.st, Logger: slog.New(&lhHandler{sink: f.sink}), OnEvent: f.events.record, Audit: auth.AuditConfig{Enabled: true},
		CheckSessionInStore: sealed,
		MFA:                 auth.MFAConfig{Required: []string{auth.FactorTOTP}},
	}
	if sealed {
		cfg.Secrets = []string{sealSecret(t)}
	}
	cfg.Email.Mailer = f.mail
	f.s = f.withOTel(cfg, authtest.NewServer)
	now := f.s.AuthConfig.Now
	var codes []string // every TOTP code sent, right or wrong
	code := func(secret string) string {
		c := authtest.TOTPCode(secret, now())
		codes = append(codes, c)
		return c
	}
	// wrong is the ith of some six-digit codes that no step near now has.
	wrong := func(secret string, i int) string {
		near := []string{authtest.TOTPCode(secret, now().Add(-30*time.Second)), authtest.TOTPCode(secret, now()), authtest.TOTPCode(secret, now().Add(30*time.Second))}
		for n := i*104729 + 11; ; n++ {
			if w := fmt.Sprintf("%06d", n%1_000_000); !slices.Contains(near, w) {
				codes = append(codes, w)
				return w
			}
		}
	}
	const pw = "Hygiene-mfa-pw-50"
	f.secrets.add("password", pw)
	email := "mfa-" + m.String() + "@example.com"

	// Sign-up: the session must complete TOTP; what it may set up.
	c := f.s.NewClient(m)
	f.signUp(c, email, pw)
	f.want(f.call(c, c.Get("/api/session")), 403, "invalid claim")
	f.want(f.call(c, c.MFAInfo()), 200, "OK")

	// A device, set up with a wrong code, an unknown device's and the
	// right one; the right code again, and a wrong one for the device
	// set up.
	secret := f.totpSecret(f.call(c, c.CreateTOTPDevice("phone")))
	f.want(f.call(c, c.VerifyTOTPDevice("phone", wrong(secret, 1))), 200, "INVALID_TOTP_ERROR")
	f.want(f.call(c, c.VerifyTOTPDevice("tablet", code(secret))), 200, "UNKNOWN_DEVICE_ERROR")
	right := code(secret)
	f.want(f.call(c, c.VerifyTOTPDevice("phone", right)), 200, "OK")
	f.want(f.call(c, c.Get("/api/session")), 200, "")
	f.want(f.call(c, c.VerifyTOTP(right)), 200, "INVALID_TOTP_ERROR")
	f.want(f.call(c, c.VerifyTOTPDevice("phone", wrong(secret, 2))), 200, "INVALID_TOTP_ERROR")
	f.want(f.do(c, http.MethodPost, "/auth/totp/device/verify", map[string]any{"deviceName": "phone", "totp": []string{right}}), 400, "")

	// A second device, listed and removed; the last is refused.
	tablet := f.totpSecret(f.call(c, c.CreateTOTPDevice("tablet")))
	f.s.Clock.Advance(30 * time.Second)
	f.want(f.call(c, c.VerifyTOTPDevice("tablet", code(tablet))), 200, "OK")
	f.want(f.do(c, http.MethodGet, "/auth/totp/device/list"), 200, "OK")
	f.want(f.do(c, http.MethodPost, "/auth/totp/device/remove", map[string]string{"deviceName": "tablet"}), 200, "OK")
	f.want(f.do(c, http.MethodPost, "/auth/totp/device/remove", map[string]string{"deviceName": "phone"}), 200, "GENERAL_ERROR")
	f.want(f.call(c, c.CreateTOTPDevice("phone")), 200, "DEVICE_ALREADY_EXISTS_ERROR")

	// Recovery codes: made, counted.
	recovery := f.recoveryCodes(f.call(c, c.NewRecoveryCodes()))
	f.want(f.do(c, http.MethodGet, "/auth/mfa/recovery-codes"), 200, "OK")

	// Another session: the next code completes TOTP.
	c2 := f.s.NewClient(m)
	f.signIn(c2, email, pw, userIDOf(t, c))
	f.want(f.call(c2, c2.Get("/api/session")), 403, "invalid claim")
	f.s.Clock.Advance(30 * time.Second)
	f.want(f.call(c2, c2.VerifyTOTP(code(secret))), 200, "OK")
	f.want(f.call(c2, c2.Get("/api/session")), 200, "")

	// Wrong codes to the lockout; a code and a recovery code in it.
	c3 := f.s.NewClient(m)
	f.signIn(c3, email, pw, userIDOf(t, c))
	for i := range 5 {
		f.want(f.call(c3, c3.VerifyTOTP(wrong(secret, 10+i))), 200, "INVALID_TOTP_ERROR")
	}
	f.want(f.call(c3, c3.VerifyTOTP(code(secret))), 200, "LIMIT_REACHED_ERROR")
	lockedGuess := "yyyy-yyyy-" + recovery[2][10:]
	f.secrets.add("recovery code guessed in the lockout", lockedGuess)
	f.want(f.call(c3, c3.UseRecoveryCode(lockedGuess)), 200, "LIMIT_REACHED_ERROR")
	f.want(f.call(c3, c3.Get("/api/session")), 403, "invalid claim")

	// Past the lockout: a made-up recovery code, a real one typed in
	// capitals with spaces, the same again.
	f.s.Clock.Advance(16 * time.Minute)
	f.want(f.call(c3, c3.Refresh()), 200, "OK")
	madeUp := "zzzz-zzzz-" + recovery[1][10:]
	f.secrets.add("made-up recovery code", madeUp)
	f.want(f.call(c3, c3.UseRecoveryCode(madeUp)), 200, "INVALID_RECOVERY_CODE_ERROR")
	f.want(f.call(c3, c3.UseRecoveryCode(strings.ToUpper(strings.ReplaceAll(recovery[0], "-", " ")))), 200, "OK")
	f.want(f.call(c3, c3.Get("/api/session")), 200, "")
	c4 := f.s.NewClient(m)
	f.signIn(c4, email, pw, userIDOf(t, c))
	f.want(f.call(c4, c4.UseRecoveryCode(recovery[0])), 200, "INVALID_RECOVERY_CODE_ERROR")
	f.want(f.do(c4, http.MethodPost, "/auth/mfa/recovery-code/verify", map[string]any{"code": []string{recovery[2]}}), 400, "")
	f.want(f.do(c4, http.MethodPost, "/auth/mfa/recovery-code/verify", map[string]any{"code": strings.Repeat(recovery[2], 4)}), 400, "")

	// Store failures: reading the second factors, writing a step, a
	// recovery code and a session's factors.
	f.st.failNext("Login")
	f.want(f.call(c4, c4.VerifyTOTP(code(secret))), 500, "internal error")
	f.s.Clock.Advance(30 * time.Second)
	f.st.failNext("UpdateLoginMaterial")
	f.want(f.call(c4, c4.VerifyTOTP(code(secret))), 500, "internal error")
	f.st.failNext("UpdateLoginMaterial")
	f.want(f.call(c4, c4.UseRecoveryCode(recovery[3])), 500, "internal error")
	f.st.failNext("UpdateSessionFactors")
	f.want(f.call(c4, c4.UseRecoveryCode(recovery[4])), 500, "internal error")
	// That code was spent, and the session did not complete the factor.
	f.want(f.call(c4, c4.MFAInfo()), 200, "OK")
	f.want(f.call(c4, c4.Get("/api/session")), 403, "invalid claim")
	f.want(f.call(c4, c4.UseRecoveryCode(recovery[5])), 200, "OK")
	f.want(f.call(c4, c4.Get("/api/session")), 200, "")
	f.recoveryCodes(f.call(c4, c4.NewRecoveryCodes()))

	cctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := f.s.Auth.Close(cctx); err != nil {
		t.Fatalf("Close: %v", err)
	}

	// The flows happened as planned.
	seen := map[auth.EventKind]int{}
	for _, e := range f.events.since(0) {
		seen[e.Kind]++
	}
	for _, k := range []auth.EventKind{auth.EventFactorCompleted, auth.EventFactorFailed, auth.EventFactorAdded,
		auth.EventFactorRemoved, auth.EventMFALocked, auth.EventRecoveryCodesCreated, auth.EventRecoveryCodeUsed} {
		if seen[k] == 0 {
			t.Errorf("no %s event: the flows did not run as planned (%v)", k, seen)
		}
	}
	msgs := map[string]int{}
	for _, r := range f.sink.since(0) {
		msgs[r.Message]++
	}
	for _, want := range []string{"auth event", "auth: internal error", "auth: TOTP locked after wrong codes"} {
		if msgs[want] == 0 {
			t.Errorf("no %q log record (%v)", want, msgs)
		}
	}
	t.Logf("%d log records %v; %d events %v; %d codes, %d secrets", f.sink.count(), msgs, f.events.count(), seen, len(codes), f.secrets.len())

	// No secret and no code in a record or an event.
	f.checkNoLeaks()
	events := f.events.since(0)
	values, labels := f.secrets.snapshot()
	for _, e := range events {
		text := fmt.Sprintf("%+v %#v", e, e)
		for i, v := range values {
			if strings.Contains(text, v) {
				t.Errorf("event %s holds the %s %q", e.Kind, labels[i], v)
			}
		}
	}
	slices.Sort(codes)
	for _, code := range slices.Compact(codes) {
		re := lhPLCode(code)
		for _, r := range f.records() {
			if re.MatchString(r.text()) {
				t.Errorf("log record %q holds the TOTP code %s:\n%s", r.Message, code, r.JSON)
			}
		}
		for _, e := range events {
			if re.MatchString(fmt.Sprintf("%+v %#v", e, e)) {
				t.Errorf("event %s holds the TOTP code %s", e.Kind, code)
			}
		}
	}
}

// testLogHygieneMFADetector shows that the checks of the MFA run would
// see its secrets wherever a record carried them: a TOTP secret in
// base32, lower-case or as the key's bytes, the otpauth URI, a code in a
// body, a recovery code with or without dashes, in capitals, and its
// stored hash; but not six digits inside an id.
func testLogHygieneMFADetector(t *testing.T) {
	t.Parallel()
	key := make([]byte, 20)
	rand.Read(key)
	secret := base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(key)
	qr := "otpauth://totp/app.example.com:ada%40example.com?digits=6&issuer=app.example.com&period=30&secret=" + secret
	const code, recovery = "482913", "abcd-efgh-ijkl-mn23"
	stored := sha256.Sum256([]byte("abcdefghijklmn23"))
	body, _ := json.Marshal(map[string]any{"status": "OK", "secret": secret, "qrCodeString": qr})
	for _, tc := range []struct {
		name string
		log  func(l *slog.Logger)
		want bool
	}{
		{"clean", func(l *slog.Logger) {
			l.Info("auth event", "kind", "factor_failed", "user_id", "u-a482913b", "method", "totp")
		}, false},
		{"the secret", func(l *slog.Logger) { l.Debug("x", "secret", secret) }, true},
		{"the secret lower-case", func(l *slog.Logger) { l.Debug("x", "secret", strings.ToLower(secret)) }, true},
		{"the key as bytes", func(l *slog.Logger) { l.Info("x", "device", struct{ Secret []byte }{key}) }, true},
		{"the key in hex", func(l *slog.Logger) { l.Info("x", "key", fmt.Sprintf("%x", key)) }, true},
		{"the URI", func(l *slog.Logger) { l.Warn("x", "error", fmt.Errorf("rendering %s", qr)) }, true},
		{"an answer", func(l *slog.Logger) { l.Debug("x", "body", string(body)) }, true},
		{"a code in a body", func(l *slog.Logger) { l.Debug("x", "body", `{"totp":"`+code+`"}`) }, true},
		{"a code as a number", func(l *slog.Logger) { l.Info("x", "totp", 482913) }, true},
		{"a recovery code", func(l *slog.Logger) { l.Info("x", "code", recovery) }, true},
		{"without dashes", func(l *slog.Logger) { l.Info("x", "code", "abcdefghijklmn23") }, true},
		{"in capitals", func(l *slog.Logger) { l.Info("x " + strings.ToUpper(recovery)) }, true},
		{"its stored hash", func(l *slog.Logger) { l.Info("x", "hash", hex.EncodeToString(stored[:])) }, true},
	} {
		sink := &lhSink{}
		f := &lhFlow{t: t, secrets: &lhSecrets{byValue: map[string]string{}}}
		f.totpSecret(&authtest.Response{StatusCode: 200, Status: "OK", Body: body, JSON: map[string]any{"secret": secret, "qrCodeString": qr}})
		f.recoveryCodes(&authtest.Response{StatusCode: 200, Status: "OK", JSON: map[string]any{"codes": slices.Repeat([]any{recovery}, 10)}})
		tc.log(slog.New(&lhHandler{sink: sink}))
		found := len(lhLeaks(sink.since(0), f.secrets)) > 0 || lhPLCode(code).MatchString(sink.since(0)[0].text())
		if found != tc.want {
			t.Errorf("%s: found %v, want %v", tc.name, found, tc.want)
		}
	}
}
