package auth_test

// Tests of email verification (PROTOCOL.md section 8) over HTTP: the three
// endpoints in each transfer mode, the st-ev claim, required mode's 403,
// the tokens and the send cooldown.

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/emailverification"
	"github.com/latchkit/auth/mailer"
	"github.com/latchkit/auth/provider"
	"github.com/latchkit/auth/store/memstore"
	"github.com/latchkit/auth/thirdparty"
)

// newVerifying is a server with email verification in mode m, the routes
// of addRoutes and /api/unverified-ok, which any session may reach.
func newVerifying(t *testing.T, mode emailverification.Mode, cfg auth.Config) *authtest.Server {
	t.Helper()
	cfg.EmailVerification.Mode = mode
	s := authtest.NewServer(t, cfg)
	addRoutes(s)
	s.Mux.Handle("/api/unverified-ok", s.Auth.RequireSession(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"ok":true}`))
	}), auth.AllowUnverifiedEmail()))
	s.Mux.Handle("/api/verified-only", s.Auth.RequireSession(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"ok":true}`))
	}), auth.VerifiedEmail()))
	// Rules compose: the stricter holds, and a zero Rule says nothing.
	s.Mux.Handle("/api/both-rules", s.Auth.RequireSession(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"ok":true}`))
	}), auth.AllowUnverifiedEmail(), auth.VerifiedEmail()))
	s.Mux.Handle("/api/zero-rule", s.Auth.RequireSession(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"ok":true}`))
	}), auth.Rule{}))
	return s
}

// claimOf reads st-ev from the client's front-token: present, and its v.
func claimOf(t testing.TB, c *authtest.Client) (present, verified bool) {
	t.Helper()
	ev, ok := decodeFrontToken(t, c.FrontToken).UP["st-ev"].(map[string]any)
	if !ok {
		return false, false
	}
	v, isBool := ev["v"].(bool)
	if _, isNum := ev["t"].(float64); !isBool || !isNum || len(ev) != 2 {
		t.Fatalf("st-ev is %v, want {v: bool, t: number}", ev)
	}
	return true, v
}

func wantClaim(t testing.TB, c *authtest.Client, verified bool) {
	t.Helper()
	present, v := claimOf(t, c)
	if !present || v != verified {
		t.Fatalf("st-ev present %v, v %v; want v %v", present, v, verified)
	}
}

// verificationToken asks for a verification email with c and returns the
// token of the link that arrives as message n (1-based).
func verificationToken(t testing.TB, s *authtest.Server, c *authtest.Client, n int) string {
	t.Helper()
	if res := c.SendVerificationEmail(); res.StatusCode != http.StatusOK || res.Status != "OK" {
		t.Fatalf("send verification email: %d %s", res.StatusCode, res.Body)
	}
	msgs := s.Mailbox.WaitFor(t, n, 5*time.Second)
	link, tok := authtest.VerificationLink(t, msgs[n-1])
	if !strings.HasPrefix(link, s.AuthConfig.AppURL+"/auth/verify-email?token=") || !strings.HasSuffix(link, "&tenantId=public") {
		t.Errorf("link %s, want %s/auth/verify-email?token=…&tenantId=public", link, s.AuthConfig.AppURL)
	}
	return tok
}

const invalidClaimBody = `{"message":"invalid claim","claimValidationErrors":[{"id":"st-ev","reason":{"message":"wrong value","expectedValue":true,"actualValue":false}}]}`

func TestEmailVerificationFlow(t *testing.T) {
	for _, m := range authtest.Modes {
		t.Run(m.String(), func(t *testing.T) {
			t.Parallel()
			var events eventLog
			events.changed = make(chan struct{})
			s := newVerifying(t, emailverification.Optional, auth.Config{OnEvent: events.record})
			c, u := s.SignedIn(m)
			wantClaim(t, c, false)
			if res := c.IsEmailVerified(); res.Status != "OK" || res.JSON["isVerified"] != false {
				t.Fatalf("is verified: %d %s", res.StatusCode, res.Body)
			}
			wantClaim(t, c, false)
			wantSession(t, c, u.ID) // optional: nothing enforced
			tok := verificationToken(t, s, c, 1)
			events.waitFor(t, auth.EventEmailVerificationSent, 1, 5*time.Second)

			res := c.VerifyEmail(tok)
			if res.StatusCode != http.StatusOK || string(res.Body) != `{"status":"OK"}` {
				t.Fatalf("verify: %d %s, want 200 {\"status\":\"OK\"}", res.StatusCode, res.Body)
			}
			// The same answer brings the session's claim up to date,
			// with the access token's expiry kept.
			wantClaim(t, c, true)
			if ft := decodeFrontToken(t, c.FrontToken); ft.UID != u.ID {
				t.Errorf("front-token uid %s, want %s", ft.UID, u.ID)
			}
			wantSession(t, c, u.ID)
			if res := c.IsEmailVerified(); res.JSON["isVerified"] != true {
				t.Errorf("is verified after the link: %s", res.Body)
			}
			if res := c.SendVerificationEmail(); res.Status != "EMAIL_ALREADY_VERIFIED_ERROR" {
				t.Errorf("send after verification: %s, want EMAIL_ALREADY_VERIFIED_ERROR", res.Body)
			}
			if res := c.Refresh(); res.Status != "OK" {
				t.Fatalf("refresh: %d %s", res.StatusCode, res.Body)
			}
			wantClaim(t, c, true)
			got, _ := s.Auth.UserByID(t.Context(), u.ID)
			if !got.LoginMethods[0].EmailVerified {
				t.Error("the login method is not verified in the store")
			}
			if n := len(events.of(auth.EventEmailVerified)); n != 1 {
				t.Errorf("%d EventEmailVerified, want 1", n)
			}
			if res := c.VerifyEmail(tok); res.Status != "EMAIL_VERIFICATION_INVALID_TOKEN_ERROR" {
				t.Errorf("second use of the token: %s, want EMAIL_VERIFICATION_INVALID_TOKEN_ERROR", res.Body)
			}
		})
	}
}

func TestEmailVerificationRequired(t *testing.T) {
	for _, m := range authtest.Modes {
		t.Run(m.String(), func(t *testing.T) {
			t.Parallel()
			s := newVerifying(t, emailverification.Required, auth.Config{})
			c, u := s.SignedIn(m)
			wantClaim(t, c, false)
			for _, path := range []string{"/api/session", "/api/any", "/api/optional", "/api/verified-only", "/api/both-rules", "/api/zero-rule"} {
				res := c.Get(path)
				if res.StatusCode != http.StatusForbidden || string(res.Body) != invalidClaimBody {
					t.Errorf("GET %s unverified: %d %s, want 403 %s", path, res.StatusCode, res.Body, invalidClaimBody)
				}
				if res.Header.Get("front-token") == "remove" || res.IssuedTokens() {
					t.Errorf("GET %s: the 403 touched the tokens", path)
				}
			}
			if res := c.Get("/api/unverified-ok"); res.StatusCode != http.StatusOK {
				t.Errorf("exempt route: %d %s", res.StatusCode, res.Body)
			}
			// Refresh and sign-out never check the claim.
			if res := c.Refresh(); res.Status != "OK" {
				t.Fatalf("refresh unverified: %d %s", res.StatusCode, res.Body)
			}
			tok := verificationToken(t, s, c, 1)

			// The link opened elsewhere, with no session.
			other := s.NewClient(m)
			if res := other.VerifyEmail(tok); res.Status != "OK" || res.IssuedTokens() {
				t.Fatalf("verify without a session: %d %s", res.StatusCode, res.Body)
			}
			// Within 10 s the false claim is trusted; after, the
			// middleware reads the store and rewrites the claim.
			s.Clock.Advance(5 * time.Second)
			if res := c.Get("/api/session"); res.StatusCode != http.StatusForbidden {
				t.Errorf("false claim 5 s old: %d, want 403 until it is 10 s old", res.StatusCode)
			}
			s.Clock.Advance(6 * time.Second)
			res := c.Get("/api/session")
			if res.StatusCode != http.StatusOK || res.JSON["userId"] != u.ID {
				t.Fatalf("after verification elsewhere: %d %s, want 200", res.StatusCode, res.Body)
			}
			wantClaim(t, c, true)
			wantSession(t, c, u.ID)
			if res := c.SignOut(); res.Status != "OK" {
				t.Errorf("sign-out: %s", res.Body)
			}
		})
	}
}

// A verified email stops counting as one when the app takes it back; the
// claim follows at the next refresh, and the send endpoint puts a stale
// claim right at once.
func TestEmailVerificationTakenBack(t *testing.T) {
	s := newVerifying(t, emailverification.Required, auth.Config{})
	c, u := s.SignedInVerified(authtest.Header)
	wantClaim(t, c, true)
	wantSession(t, c, u.ID)
	if err := s.Auth.SetEmailVerified(t.Context(), u.LoginMethods[0].ID, false); err != nil {
		t.Fatal(err)
	}
	if res := c.SendVerificationEmail(); res.Status != "OK" {
		t.Fatalf("send: %s", res.Body)
	}
	wantClaim(t, c, false)
	if res := c.Get("/api/session"); res.StatusCode != http.StatusForbidden {
		t.Errorf("after the claim turned false: %d, want 403", res.StatusCode)
	}
	c2, _ := s.SignedInVerified(authtest.Cookie)
	if err := s.Auth.SetEmailVerified(t.Context(), decodeFrontToken(t, c2.FrontToken).UP["rsub"].(string), false); err != nil {
		t.Fatal(err)
	}
	if res := c2.Refresh(); res.Status != "OK" {
		t.Fatalf("refresh: %s", res.Body)
	}
	wantClaim(t, c2, false)
	if err := s.Auth.SetEmailVerified(t.Context(), "nobody", true); err == nil {
		t.Error("SetEmailVerified of an unknown login: nil error")
	}
}

func TestVerificationTokenRefused(t *testing.T) {
	for _, m := range authtest.Modes {
		t.Run(m.String(), func(t *testing.T) {
			t.Parallel()
			s := newVerifying(t, emailverification.Optional, auth.Config{})
			c, u := s.SignedIn(m)
			tok := verificationToken(t, s, c, 1)
			for name, bad := range map[string]string{
				"unknown":   strings.Repeat("A", 43),
				"empty":     "",
				"malformed": "not a token!",
				"truncated": tok[:len(tok)-1],
			} {
				if res := c.VerifyEmail(bad); res.StatusCode != http.StatusOK || string(res.Body) != `{"status":"EMAIL_VERIFICATION_INVALID_TOKEN_ERROR"}` {
					t.Errorf("%s token: %d %s", name, res.StatusCode, res.Body)
				}
			}
			// Expired at exactly its lifetime, one day by default.
			s.Clock.Advance(emailverification.DefaultTokenLifetime)
			if res := c.Refresh(); res.Status != "OK" {
				t.Fatalf("refresh: %s", res.Body)
			}
			if res := c.VerifyEmail(tok); res.Status != "EMAIL_VERIFICATION_INVALID_TOKEN_ERROR" {
				t.Errorf("expired token: %s", res.Body)
			}
			got, _ := s.Auth.UserByID(t.Context(), u.ID)
			if got.LoginMethods[0].EmailVerified {
				t.Error("a refused token verified the email")
			}
		})
	}
}

// A token is bound to the email it was sent to: once the provider reports
// another address, the link verifies nothing.
func TestVerificationTokenVoidedByEmailChange(t *testing.T) {
	p := authtest.NewProvider(t)
	s := newVerifying(t, emailverification.Optional, auth.Config{ThirdParty: thirdparty.Config{Providers: []provider.Provider{p.Provider()}}})
	p.SetIdentity("sub-1", "old@example.com", false)
	c := s.NewClient(authtest.Header)
	if res := c.SignInWithProvider(p); res.Status != "OK" {
		t.Fatalf("sign-in: %s", res.Body)
	}
	wantClaim(t, c, false)
	tok := verificationToken(t, s, c, 1)
	p.SetIdentity("sub-1", "new@example.com", false)
	if res := s.NewClient(authtest.Header).SignInWithProvider(p); res.Status != "OK" {
		t.Fatalf("second sign-in: %s", res.Body)
	}
	if res := c.VerifyEmail(tok); res.Status != "EMAIL_VERIFICATION_INVALID_TOKEN_ERROR" {
		t.Errorf("token for the old email: %s, want EMAIL_VERIFICATION_INVALID_TOKEN_ERROR", res.Body)
	}
	if res := c.IsEmailVerified(); res.JSON["isVerified"] != false {
		t.Errorf("is verified: %s", res.Body)
	}
}

// Of racing submissions of one token exactly one verifies.
func TestVerificationTokenRace(t *testing.T) {
	for _, m := range authtest.Modes {
		t.Run(m.String(), func(t *testing.T) {
			t.Parallel()
			var events eventLog
			events.changed = make(chan struct{})
			s := newVerifying(t, emailverification.Optional, auth.Config{OnEvent: events.record})
			c, _ := s.SignedIn(m)
			tok := verificationToken(t, s, c, 1)
			const n = 16
			clients := make([]*authtest.Client, n)
			for i := range clients {
				clients[i] = s.NewClient(m)
			}
			statuses := make([]string, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() { statuses[i] = clients[i].VerifyEmail(tok).Status })
			}
			wg.Wait()
			ok := 0
			for _, st := range statuses {
				switch st {
				case "OK":
					ok++
				case "EMAIL_VERIFICATION_INVALID_TOKEN_ERROR":
				default:
					t.Errorf("status %q", st)
				}
			}
			if ok != 1 {
				t.Errorf("%d of %d racing submissions verified, want 1", ok, n)
			}
			if got := len(events.of(auth.EventEmailVerified)); got != 1 {
				t.Errorf("%d EventEmailVerified, want 1", got)
			}
		})
	}
}

func TestVerificationEmailCooldown(t *testing.T) {
	for _, m := range authtest.Modes {
		t.Run(m.String(), func(t *testing.T) {
			t.Parallel()
			s := newVerifying(t, emailverification.Optional, auth.Config{})
			c, _ := s.SignedIn(m)
			verificationToken(t, s, c, 1)
			res := c.SendVerificationEmail()
			if res.StatusCode != http.StatusOK || res.Status != "GENERAL_ERROR" || !strings.Contains(res.Message, "try again in 60 seconds") {
				t.Errorf("second send at once: %d %s, want GENERAL_ERROR asking to wait 60 seconds", res.StatusCode, res.Body)
			}
			// Another user has an allowance of their own.
			c2, _ := s.SignedIn(m)
			verificationToken(t, s, c2, 2)
			s.Clock.Advance(time.Minute)
			verificationToken(t, s, c, 3)
			time.Sleep(50 * time.Millisecond)
			if n := len(s.Mailbox.Messages()); n != 3 {
				t.Errorf("%d emails, want 3", n)
			}
		})
	}
}

// A provider that vouches for the email makes the session verified from
// the start: no mail, no page.
func TestThirdPartyVerifiedEmailNeedsNoMail(t *testing.T) {
	for _, m := range authtest.Modes {
		t.Run(m.String(), func(t *testing.T) {
			t.Parallel()
			p := authtest.NewProvider(t)
			s := newVerifying(t, emailverification.Required, auth.Config{ThirdParty: thirdparty.Config{Providers: []provider.Provider{p.Provider()}}})
			p.SetIdentity("sub-v", "v@example.com", true)
			c := s.NewClient(m)
			res := c.SignInWithProvider(p)
			if res.Status != "OK" {
				t.Fatalf("sign-in: %s", res.Body)
			}
			wantClaim(t, c, true)
			wantSession(t, c, decodeFrontToken(t, c.FrontToken).UID)
			if res := c.SendVerificationEmail(); res.Status != "EMAIL_ALREADY_VERIFIED_ERROR" {
				t.Errorf("send: %s, want EMAIL_ALREADY_VERIFIED_ERROR", res.Body)
			}
			time.Sleep(50 * time.Millisecond)
			if n := len(s.Mailbox.Messages()); n != 0 {
				t.Errorf("%d emails, want none", n)
			}
		})
	}
}

// Completing a password reset from the emailed link verifies the email.
func TestResetVerifiesEmail(t *testing.T) {
	s := newVerifying(t, emailverification.Required, auth.Config{})
	_, u := s.SignedIn(authtest.Cookie)
	tok := requestToken(t, s, u.Email, 1)
	c := s.NewClient(authtest.Cookie)
	if res := c.ResetPassword(tok, "a new password 1"); res.Status != "OK" {
		t.Fatalf("reset: %s", res.Body)
	}
	if res := c.SignIn(u.Email, "a new password 1"); res.Status != "OK" {
		t.Fatalf("sign-in: %s", res.Body)
	}
	wantClaim(t, c, true)
	wantSession(t, c, u.ID)
}

// Off, the default: no claim, no routes.
func TestEmailVerificationOff(t *testing.T) {
	s := authtest.NewServer(t, auth.Config{})
	c, _ := s.SignedIn(authtest.Header)
	if present, _ := claimOf(t, c); present {
		t.Error("st-ev in an access token with verification off")
	}
	for _, res := range []*authtest.Response{c.SendVerificationEmail(), c.IsEmailVerified(), c.VerifyEmail("x")} {
		if res.StatusCode != http.StatusNotFound {
			t.Errorf("verification route with verification off: %d, want 404", res.StatusCode)
		}
	}
}

// VerifiedEmail works whatever the mode, off included: it reads
// the store.
func TestRequireVerifiedEmailWhenOff(t *testing.T) {
	s := newVerifying(t, emailverification.Off, auth.Config{})
	c, u := s.SignedIn(authtest.Header)
	for _, path := range []string{"/api/verified-only", "/api/both-rules"} {
		if res := c.Get(path); res.StatusCode != http.StatusForbidden || string(res.Body) != invalidClaimBody {
			t.Errorf("%s unverified: %d %s", path, res.StatusCode, res.Body)
		}
	}
	if res := c.Get("/api/zero-rule"); res.StatusCode != http.StatusOK {
		t.Errorf("a zero Rule with verification off: %d %s, want 200", res.StatusCode, res.Body)
	}
	wantSession(t, c, u.ID)
	if err := s.Auth.SetEmailVerified(t.Context(), u.LoginMethods[0].ID, true); err != nil {
		t.Fatal(err)
	}
	if res := c.Get("/api/verified-only"); res.StatusCode != http.StatusOK {
		t.Errorf("verified: %d %s", res.StatusCode, res.Body)
	}
}

func TestEmailVerificationConfig(t *testing.T) {
	for name, cfg := range map[string]auth.Config{
		"unknown mode": {EmailVerification: emailverification.Config{Mode: "sometimes"}},
		"no mailer":    {AppURL: "https://app.example", EmailVerification: emailverification.Config{Mode: emailverification.Optional}},
		"bad URL": {AppURL: "https://app.example", Email: auth.EmailConfig{Mailer: authtest.NewMailbox()},
			EmailVerification: emailverification.Config{Mode: emailverification.Optional, URL: "/relative"}},
		"negative lifetime": {AppURL: "https://app.example", Email: auth.EmailConfig{Mailer: authtest.NewMailbox()},
			EmailVerification: emailverification.Config{Mode: emailverification.Optional, TokenLifetime: -time.Hour}},
		"template without text": {AppURL: "https://app.example", Email: auth.EmailConfig{Mailer: authtest.NewMailbox()},
			EmailVerification: emailverification.Config{Mode: emailverification.Optional, Email: &mailer.Template{}}},
	} {
		cfg.Store = memstore.New()
		if _, err := auth.New(cfg); err == nil || !strings.Contains(err.Error(), "EmailVerification") {
			t.Errorf("%s: New = %v, want an error naming Config.EmailVerification", name, err)
		}
	}
}

// Bad input on the verification endpoints is a 4xx with a message, and
// neither sends mail nor verifies anything.
func TestEmailVerificationBadInput(t *testing.T) {
	st := memstore.New()
	s := newVerifying(t, emailverification.Optional, auth.Config{Store: st, MaxBodyBytes: 1024})
	c, u := s.SignedIn(authtest.Header)
	bearer := "Bearer " + c.AccessToken
	cases := []struct {
		name, method, path, body string
		header                   http.Header
		code                     int
		msg                      string
	}{
		{"send without a session", "POST", "/auth/user/email/verify/token", "{}", nil, 401, "unauthorised"},
		{"send with a bad token", "POST", "/auth/user/email/verify/token", "{}", hdr("Authorization", "Bearer x.y.z"), 401, "try refresh token"},
		{"send with a non-JSON body", "POST", "/auth/user/email/verify/token", "nope", hdr("Authorization", bearer), 400, "the request body must be a JSON object"},
		{"send with trailing data", "POST", "/auth/user/email/verify/token", "{} {}", hdr("Authorization", bearer), 400, "unexpected data after the JSON object"},
		{"send with a huge body", "POST", "/auth/user/email/verify/token", "{\"a\":\"" + strings.Repeat("x", 2000) + "\"}", hdr("Authorization", bearer), 413, ""},
		{"status without a session", "GET", "/auth/user/email/verify", "", nil, 401, "unauthorised"},
		{"verify with no body", "POST", "/auth/user/email/verify", "", nil, 400, "the request body must be a JSON object"},
		{"verify with an array", "POST", "/auth/user/email/verify", "[]", nil, 400, "the request body must be a JSON object"},
		{"verify without a token", "POST", "/auth/user/email/verify", `{"method":"token"}`, nil, 400, "Please provide the email verification token"},
		{"verify with a null token", "POST", "/auth/user/email/verify", `{"method":"token","token":null}`, nil, 400, "Please provide the email verification token"},
		{"verify with a number", "POST", "/auth/user/email/verify", `{"method":"token","token":42}`, nil, 400, "The email verification token must be a string"},
		{"verify with an object", "POST", "/auth/user/email/verify", `{"method":"token","token":{}}`, nil, 400, "The email verification token must be a string"},
		{"verify with a bad session", "POST", "/auth/user/email/verify", `{"method":"token","token":"abc"}`, hdr("Authorization", "Bearer x.y.z"), 401, "try refresh token"},
		{"wrong method", "PUT", "/auth/user/email/verify", "{}", nil, 405, "method not allowed"},
	}
	for _, tc := range cases {
		h := hdr("rid", "emailverification", "Content-Type", "application/json")
		for k, v := range tc.header {
			h[k] = v
		}
		res := send(t, s, tc.method, tc.path, tc.body, h)
		if res.StatusCode != tc.code || tc.msg != "" && res.Message != tc.msg {
			t.Errorf("%s: %d %s, want %d %q", tc.name, res.StatusCode, res.Body, tc.code, tc.msg)
		}
	}
	time.Sleep(50 * time.Millisecond)
	if n := len(s.Mailbox.Messages()); n != 0 {
		t.Errorf("%d emails after bad requests, want none", n)
	}
	logins, _ := st.Logins(context.Background(), u.ID)
	if len(logins) != 1 || logins[0].EmailVerified {
		t.Errorf("logins after bad requests: %+v", logins)
	}
}

// No verification token, access or refresh token reaches the log, and a
// mailer that fails is logged and reported, never silent.
func TestEmailVerificationLogHygiene(t *testing.T) {
	var logs logCapture
	events := newEventLog()
	traced := newSpanTrace(t)
	failing := mailerFunc(func(context.Context, mailer.Message) error { return errors.New("smtp: 451 try later") })
	s := newVerifying(t, emailverification.Optional, traced.config(auth.Config{Logger: logs.logger(), OnEvent: events.record}))
	traced.mount(s)
	c, _ := s.SignedIn(authtest.Header)
	tok := verificationToken(t, s, c, 1)
	if res := c.VerifyEmail(tok); res.Status != "OK" {
		t.Fatalf("verify: %s", res.Body)
	}
	access, refresh := c.Tokens()
	logs.wantNoSecrets(t, tok, access, refresh)

	broken := newVerifying(t, emailverification.Optional, traced.config(auth.Config{
		Logger: logs.logger(), OnEvent: events.record,
		Email: auth.EmailConfig{Mailer: failing, Attempts: 1},
	}))
	traced.mount(broken)
	c2, _ := broken.SignedIn(authtest.Cookie)
	if res := c2.SendVerificationEmail(); res.Status != "OK" {
		t.Fatalf("send: %s", res.Body)
	}
	events.waitFor(t, auth.EventMailFailed, 1, 5*time.Second)
	if recs := logs.records(t, "auth: verification email not sent"); len(recs) != 1 || recs[0]["step"] != "sending the verification email" {
		t.Errorf("log records of the failure: %v", recs)
	}
	spans := traced.text(t, s, broken)
	for _, sec := range []string{tok, access, refresh, "@"} {
		if strings.Contains(spans, sec) {
			t.Errorf("a span holds %q:\n%s", sec[:min(len(sec), 12)], spans)
		}
	}
}

type mailerFunc func(context.Context, mailer.Message) error

func (f mailerFunc) Send(ctx context.Context, m mailer.Message) error { return f(ctx, m) }
