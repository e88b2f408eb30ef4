package auth_test

// Tests of the third-party endpoints (PROTOCOL.md section 7) against a
// scripted provider: what the handler does with what a provider answers.
// How each provider is talked to is tested in package provider, and the
// whole flow against a real OpenID provider in thirdparty_oidc_test.go.

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/provider"
	"github.com/latchkit/auth/store/memstore"
	"github.com/latchkit/auth/thirdparty"
)

// scripted is a provider whose Exchange answers with the identity (or the
// error) its test sets, and records what it was asked.
type scripted struct {
	id       string
	formPost bool

	mu        sync.Mutex
	identity  provider.Identity
	err       error
	exchanges []provider.ExchangeRequest
	authURLs  []provider.AuthRequest
}

func (p *scripted) ID() string     { return p.id }
func (p *scripted) Name() string   { return "Scripted " + p.id }
func (p *scripted) FormPost() bool { return p.formPost }

func (p *scripted) AuthURL(_ context.Context, r provider.AuthRequest) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.authURLs = append(p.authURLs, r)
	q := url.Values{"redirect_uri": {r.RedirectURI}, "code_challenge": {r.CodeChallenge}, "nonce": {r.Nonce}}
	return "https://idp.example.com/authorize?" + q.Encode(), p.err
}

func (p *scripted) Exchange(_ context.Context, r provider.ExchangeRequest) (provider.Identity, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.exchanges = append(p.exchanges, r)
	return p.identity, p.err
}

func (p *scripted) set(id provider.Identity, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.identity, p.err = id, err
}

func (p *scripted) exchanged() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.exchanges)
}

// tpServer is a server with one scripted provider, "idp".
func tpServer(t *testing.T, cfg auth.Config) (*authtest.Server, *scripted) {
	t.Helper()
	p := &scripted{id: "idp", identity: provider.Identity{Subject: "sub-1", Email: "Someone@Example.com", EmailVerified: true}}
	cfg.ThirdParty.Providers = append(cfg.ThirdParty.Providers, p)
	return authtest.NewServer(t, cfg), p
}

// callbackURL is the SDK's callback page for a provider on the server's
// own origin, the redirect URI every test uses unless it tests another.
func callbackURL(s *authtest.Server, id string) string {
	return s.AuthConfig.AppURL + "/auth/callback/" + id
}

// authorisationURL asks for the provider's URL and returns the verifier.
func authorisationURL(t *testing.T, c *authtest.Client, id, redirect string) string {
	t.Helper()
	res := c.Get("/auth/authorisationurl?" + url.Values{"thirdPartyId": {id}, "redirectURIOnProviderDashboard": {redirect}}.Encode())
	if res.Status != "OK" {
		t.Fatalf("authorisationurl: %d %s", res.StatusCode, res.Body)
	}
	v, _ := res.JSON["pkceCodeVerifier"].(string)
	return v
}

// signInUpBody is the body the SDK posts to /signinup.
func signInUpBody(id, redirect, code, verifier string) map[string]any {
	return map[string]any{
		"thirdPartyId": id,
		"redirectURIInfo": map[string]any{
			"redirectURIOnProviderDashboard": redirect,
			"redirectURIQueryParams":         map[string]any{"code": code, "state": "sdk-state"},
			"pkceCodeVerifier":               verifier,
		},
		"clientType": "web",
	}
}

// signInWithProvider runs the SDK's two requests for c, with a code of
// its own.
func signInWithProvider(t *testing.T, s *authtest.Server, c *authtest.Client, id, code string) *authtest.Response {
	t.Helper()
	redirect := callbackURL(s, id)
	v := authorisationURL(t, c, id, redirect)
	return c.Do("POST", "/auth/signinup", signInUpBody(id, redirect, code, v))
}

func TestThirdPartySignUpThenSignIn(t *testing.T) {
	t.Parallel()
	for _, m := range authtest.Modes {
		t.Run(m.String(), func(t *testing.T) {
			t.Parallel()
			var events []auth.Event
			var mu sync.Mutex
			s, p := tpServer(t, auth.Config{OnEvent: func(_ context.Context, e auth.Event) {
				mu.Lock()
				events = append(events, e)
				mu.Unlock()
			}})
			c := s.NewClient(m)
			res := signInWithProvider(t, s, c, "idp", "code-1")
			if res.Status != "OK" || res.JSON["createdNewRecipeUser"] != true {
				t.Fatalf("first sign-in: %d %s, want OK with createdNewRecipeUser true", res.StatusCode, res.Body)
			}
			user, _ := res.JSON["user"].(map[string]any)
			uid, _ := user["id"].(string)
			wantTokens(t, s, res, m, uid)
			wantSession(t, c, uid)

			methods, _ := user["loginMethods"].([]any)
			if len(methods) != 1 {
				t.Fatalf("loginMethods %v, want one", user["loginMethods"])
			}
			lm := methods[0].(map[string]any)
			tp, _ := lm["thirdParty"].(map[string]any)
			if lm["recipeId"] != "thirdparty" || lm["email"] != "someone@example.com" || lm["verified"] != true ||
				tp["id"] != "idp" || tp["userId"] != "sub-1" {
				t.Errorf("login method %v: want thirdparty idp/sub-1, someone@example.com, verified", lm)
			}
			if tps, _ := user["thirdParty"].([]any); len(tps) != 1 {
				t.Errorf("user thirdParty %v, want the one identity", user["thirdParty"])
			}

			// The exchange got what the authorisation URL was made with.
			p.mu.Lock()
			ar, er := p.authURLs[0], p.exchanges[0]
			p.mu.Unlock()
			if er.Code != "code-1" || er.RedirectURI != ar.RedirectURI || er.Nonce != ar.Nonce || er.Nonce == "" || ar.CodeChallenge == "" {
				t.Errorf("exchange %+v does not match the authorisation %+v", er, ar)
			}

			// Again, another code, another device: the same user, and
			// the email the provider reports now.
			p.set(provider.Identity{Subject: "sub-1", Email: "new@example.com"}, nil)
			c2 := s.NewClient(m)
			res = signInWithProvider(t, s, c2, "idp", "code-2")
			if res.Status != "OK" || res.JSON["createdNewRecipeUser"] != false {
				t.Fatalf("second sign-in: %d %s, want OK with createdNewRecipeUser false", res.StatusCode, res.Body)
			}
			if got := res.JSON["user"].(map[string]any)["id"]; got != uid {
				t.Errorf("second sign-in as %v, want the same user %s", got, uid)
			}
			u, err := s.Auth.UserByID(t.Context(), uid)
			if err != nil {
				t.Fatal(err)
			}
			if len(u.LoginMethods) != 1 || u.LoginMethods[0].ThirdPartyID != "idp" || u.LoginMethods[0].ThirdPartyUserID != "sub-1" ||
				u.LoginMethods[0].Email != "new@example.com" || u.LoginMethods[0].EmailVerified {
				t.Errorf("Go API login methods %+v: want idp/sub-1 with the new, unverified email", u.LoginMethods)
			}

			mu.Lock()
			defer mu.Unlock()
			var kinds []string
			for _, e := range events {
				if e.Kind == auth.EventSignUp || e.Kind == auth.EventSignIn {
					kinds = append(kinds, fmt.Sprintf("%s:%s/%s", e.Kind, e.Method, e.ThirdPartyID))
				}
			}
			want := "sign_up:thirdparty/idp sign_in:thirdparty/idp sign_in:thirdparty/idp"
			if strings.Join(kinds, " ") != want {
				t.Errorf("events %q, want %q", kinds, want)
			}
		})
	}
}

func TestThirdPartyLegacyShape(t *testing.T) {
	t.Parallel()
	s, _ := tpServer(t, auth.Config{})
	c := s.NewClient(authtest.Header)
	c.Header = http.Header{"Fdi-Version": {"1.17"}}
	res := signInWithProvider(t, s, c, "idp", "code-1")
	user, _ := res.JSON["user"].(map[string]any)
	tp, _ := user["thirdParty"].(map[string]any)
	if res.Status != "OK" || res.JSON["createdNewUser"] != true || user["email"] != "someone@example.com" || tp["id"] != "idp" || tp["userId"] != "sub-1" {
		t.Errorf("legacy sign-in: %s", res.Body)
	}
}

// Two users: a provider's user and a password user with the same email,
// and neither can sign in as the other.
func TestThirdPartyNeverMergesSilently(t *testing.T) {
	t.Parallel()
	s, _ := tpServer(t, auth.Config{})
	pw := s.NewClient(authtest.Header)
	if res := pw.SignUp("someone@example.com", authtest.Password); res.Status != "OK" {
		t.Fatalf("sign-up: %s", res.Body)
	}
	c := s.NewClient(authtest.Header)
	res := signInWithProvider(t, s, c, "idp", "code-1")
	if res.Status != "OK" || res.JSON["createdNewRecipeUser"] != true {
		t.Fatalf("provider sign-in: %s", res.Body)
	}
	social := res.JSON["user"].(map[string]any)["id"].(string)
	byEmail, err := s.Auth.UserByEmail(t.Context(), "someone@example.com")
	if err != nil || byEmail.ID == social {
		t.Errorf("the password user %+v and the provider's user %s must be two users (%v)", byEmail, social, err)
	}

	// A provider's user has no password to sign in with.
	s2, _ := tpServer(t, auth.Config{})
	c2 := s2.NewClient(authtest.Header)
	if res := signInWithProvider(t, s2, c2, "idp", "code-1"); res.Status != "OK" {
		t.Fatalf("provider sign-in: %s", res.Body)
	}
	if res := s2.NewClient(authtest.Header).SignIn("someone@example.com", authtest.Password); res.Status != "WRONG_CREDENTIALS_ERROR" {
		t.Errorf("password sign-in as a provider's user: %s, want WRONG_CREDENTIALS_ERROR", res.Body)
	}
}

func TestThirdPartyProviderAnswers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		identity provider.Identity
		err      error
		want     string
	}{
		{"error", provider.Identity{}, fmt.Errorf("%w: token endpoint answered 500", provider.ErrExchange), `{"status":"GENERAL_ERROR","message":"Sign-in with the provider failed. Please try again."}`},
		{"bad ID token", provider.Identity{}, fmt.Errorf("%w: audience", provider.ErrIDToken), `{"status":"GENERAL_ERROR","message":"Sign-in with the provider failed. Please try again."}`},
		{"timeout", provider.Identity{}, fmt.Errorf("%w: %w", provider.ErrExchange, context.DeadlineExceeded), `{"status":"GENERAL_ERROR","message":"Sign-in with the provider failed. Please try again."}`},
		{"not allowed", provider.Identity{}, fmt.Errorf("%w: hosted domain", provider.ErrNotAllowed), `{"status":"SIGN_IN_UP_NOT_ALLOWED","reason":"Cannot sign in / up due to security reasons. Please try a different login method or contact support. (ERR_CODE_006)"}`},
		{"no email", provider.Identity{Subject: "sub-1"}, nil, `{"status":"NO_EMAIL_GIVEN_BY_PROVIDER"}`},
		{"unusable email", provider.Identity{Subject: "sub-1", Email: "a\u200b@example.com", EmailVerified: true}, nil, `{"status":"NO_EMAIL_GIVEN_BY_PROVIDER"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st := memstore.New()
			s, p := tpServer(t, auth.Config{Store: st})
			p.set(tc.identity, tc.err)
			c := s.NewClient(authtest.Header)
			redirect := callbackURL(s, "idp")
			p.set(provider.Identity{}, nil) // the authorisation URL works
			v := authorisationURL(t, c, "idp", redirect)
			p.set(tc.identity, tc.err)
			res := c.Do("POST", "/auth/signinup", signInUpBody("idp", redirect, "code-1", v))
			wantReply(t, tc.name, res.StatusCode, res.Body, http.StatusOK, tc.want)
			if res.IssuedTokens() {
				t.Errorf("%s: tokens issued", tc.name)
			}
			if logins, _ := st.LoginsByEmail(t.Context(), "someone@example.com"); len(logins) != 0 {
				t.Errorf("%s: a user was written", tc.name)
			}
		})
	}
}

// A code is redeemed once: a second /signinup with it never reaches the
// provider and starts no session, even while the first is in flight.
func TestThirdPartyCodeReplay(t *testing.T) {
	t.Parallel()
	s, p := tpServer(t, auth.Config{})
	redirect := callbackURL(s, "idp")
	c := s.NewClient(authtest.Header)
	v := authorisationURL(t, c, "idp", redirect)
	body := signInUpBody("idp", redirect, "the-code", v)

	const n = 8
	replies := make([]*authtest.Response, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { replies[i] = s.NewClient(authtest.Header).Do("POST", "/auth/signinup", body) })
	}
	wg.Wait()
	ok := 0
	for _, res := range replies {
		switch res.Status {
		case "OK":
			ok++
		case "GENERAL_ERROR":
			if res.IssuedTokens() {
				t.Errorf("a replayed code issued tokens")
			}
		default:
			t.Errorf("replay: %d %s", res.StatusCode, res.Body)
		}
	}
	if ok != 1 || p.exchanged() != 1 {
		t.Errorf("%d racing submissions of one code: %d OK and %d exchanges at the provider, want 1 and 1", n, ok, p.exchanged())
	}
}

func TestThirdPartyVerifier(t *testing.T) {
	t.Parallel()
	other := &scripted{id: "other", identity: provider.Identity{Subject: "x", Email: "x@example.com"}}
	s, p := tpServer(t, auth.Config{ThirdParty: thirdparty.Config{Providers: []provider.Provider{other}}})
	c := s.NewClient(authtest.Header)
	redirect := callbackURL(s, "idp")
	v := authorisationURL(t, c, "idp", redirect)
	if len(v) < 43 || len(v) > 128 || strings.Trim(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~") != "" {
		t.Errorf("verifier %q is not an RFC 7636 verifier", v)
	}
	tampered := []byte(v)
	tampered[5] ^= 1
	for _, tc := range []struct{ name, id, redirect, verifier string }{
		{"another provider's", "other", callbackURL(s, "other"), v},
		{"tampered", "idp", redirect, string(tampered)},
		{"made up", "idp", redirect, strings.Repeat("a", 64)},
	} {
		res := c.Do("POST", "/auth/signinup", signInUpBody(tc.id, tc.redirect, "code-"+tc.name, tc.verifier))
		if res.StatusCode != http.StatusBadRequest || res.IssuedTokens() {
			t.Errorf("%s verifier: %d %s, want 400", tc.name, res.StatusCode, res.Body)
		}
	}
	s.Clock.Advance(15*time.Minute + time.Second)
	res := c.Do("POST", "/auth/signinup", signInUpBody("idp", redirect, "late", v))
	if res.StatusCode != http.StatusBadRequest {
		t.Errorf("expired verifier: %d %s, want 400", res.StatusCode, res.Body)
	}
	if p.exchanged() != 0 || other.exchanged() != 0 {
		t.Errorf("a provider was asked to redeem a code with a verifier we did not issue")
	}
}

func TestThirdPartyBadRequests(t *testing.T) {
	t.Parallel()
	st := memstore.New()
	s, p := tpServer(t, auth.Config{Store: st, AllowedOrigins: []string{"https://app.example.com"}})
	c := s.NewClient(authtest.Header)
	good := callbackURL(s, "idp")
	v := authorisationURL(t, c, "idp", good)
	if got := authorisationURL(t, c, "idp", "https://app.example.com/auth/callback/idp"); got == "" {
		t.Error("an allowed origin's callback page was refused")
	}

	for _, q := range []struct{ query, msg string }{
		{"redirectURIOnProviderDashboard=" + url.QueryEscape(good), "Please provide the thirdPartyId as a GET param"},
		{"thirdPartyId=idp", "Please provide the redirectURIOnProviderDashboard as a GET param"},
		{"thirdPartyId=nope&redirectURIOnProviderDashboard=" + url.QueryEscape(good), "the provider nope could not be found in the configuration"},
	} {
		wantMessage(t, c.Get("/auth/authorisationurl?"+q.query), http.StatusBadRequest, q.msg)
	}
	for _, redirect := range []string{
		"https://evil.example.com/auth/callback/idp",
		strings.Replace(good, "https://", "http://", 1) + ".evil.example.com/auth/callback/idp",
		"http://app.example.com/auth/callback/idp",
		"https://app.example.com/auth/callback/other",
		"https://app.example.com/auth/callback/idp#frag",
		"https://user@app.example.com/auth/callback/idp",
		"https://app.example.com/auth/callback/idp?next=/x",
		"/auth/callback/idp",
		"javascript:alert(1)",
		"https://app.example.com/" + strings.Repeat("a", 3000),
	} {
		res := c.Get("/auth/authorisationurl?" + url.Values{"thirdPartyId": {"idp"}, "redirectURIOnProviderDashboard": {redirect}}.Encode())
		if res.StatusCode != http.StatusBadRequest {
			t.Errorf("authorisationurl with redirect %q: %d %s, want 400", redirect, res.StatusCode, res.Body)
		}
		res = c.Do("POST", "/auth/signinup", signInUpBody("idp", redirect, "c", v))
		if res.StatusCode != http.StatusBadRequest {
			t.Errorf("signinup with redirect %q: %d %s, want 400", redirect, res.StatusCode, res.Body)
		}
	}

	body := func(edit func(map[string]any)) map[string]any {
		b := signInUpBody("idp", good, "code", v)
		edit(b)
		return b
	}
	info := func(b map[string]any) map[string]any { return b["redirectURIInfo"].(map[string]any) }
	for _, tc := range []struct {
		name string
		body any
		msg  string
	}{
		{"no thirdPartyId", body(func(b map[string]any) { delete(b, "thirdPartyId") }), "Please provide the thirdPartyId in request body"},
		{"no redirect URI", body(func(b map[string]any) { delete(info(b), "redirectURIOnProviderDashboard") }), "Please provide the redirectURIOnProviderDashboard in request body"},
		{"oAuthTokens", map[string]any{"thirdPartyId": "idp", "oAuthTokens": map[string]any{"access_token": "x"}}, "oAuthTokens are not accepted: send redirectURIInfo"},
		{"no code", body(func(b map[string]any) { delete(info(b)["redirectURIQueryParams"].(map[string]any), "code") }), "redirectURIQueryParams.code must be a non-empty string"},
		{"code not a string", body(func(b map[string]any) { info(b)["redirectURIQueryParams"].(map[string]any)["code"] = 42 }), "redirectURIQueryParams.code must be a string"},
		{"params not an object", body(func(b map[string]any) { info(b)["redirectURIQueryParams"] = "code=1" }), "redirectURIQueryParams must be an object"},
		{"no verifier", body(func(b map[string]any) { delete(info(b), "pkceCodeVerifier") }), "Please provide the pkceCodeVerifier in request body"},
		{"thirdPartyId not a string", body(func(b map[string]any) { b["thirdPartyId"] = 7 }), "the request body must be a JSON object"},
		{"long code", body(func(b map[string]any) {
			info(b)["redirectURIQueryParams"].(map[string]any)["code"] = strings.Repeat("c", 3000)
		}), "a parameter is too long"},
	} {
		res := c.Do("POST", "/auth/signinup", tc.body)
		wantMessage(t, res, http.StatusBadRequest, tc.msg)
	}
	if p.exchanged() != 0 {
		t.Errorf("%d exchanges for refused requests, want 0", p.exchanged())
	}
	if logins, _ := st.LoginsByEmail(t.Context(), "someone@example.com"); len(logins) != 0 {
		t.Error("a refused request wrote a user")
	}
}

func TestThirdPartyAuthorisationURLProviderDown(t *testing.T) {
	t.Parallel()
	s, p := tpServer(t, auth.Config{})
	p.set(provider.Identity{}, fmt.Errorf("%w: discovery answered 503", provider.ErrDiscovery))
	res := s.NewClient(authtest.Header).Get("/auth/authorisationurl?" + url.Values{"thirdPartyId": {"idp"}, "redirectURIOnProviderDashboard": {callbackURL(s, "idp")}}.Encode())
	wantReply(t, "authorisationurl, provider down", res.StatusCode, res.Body, http.StatusOK,
		`{"status":"GENERAL_ERROR","message":"Sign-in with the provider failed. Please try again."}`)
}

func TestLoginMethods(t *testing.T) {
	t.Parallel()
	s, _ := tpServer(t, auth.Config{})
	res := s.NewClient(authtest.Header).Get("/auth/loginmethods")
	wantReply(t, "loginmethods", res.StatusCode, res.Body, http.StatusOK,
		`{"status":"OK","emailPassword":{"enabled":true},"thirdParty":{"enabled":true,"providers":[{"id":"idp","name":"Scripted idp"}]},"passwordless":{"enabled":false},"webauthn":{"enabled":false},"firstFactors":["emailpassword","thirdparty"]}`)
	plain := authtest.NewServer(t, auth.Config{})
	res = plain.NewClient(authtest.Header).Get("/auth/public/loginmethods")
	wantReply(t, "loginmethods without providers", res.StatusCode, res.Body, http.StatusOK,
		`{"status":"OK","emailPassword":{"enabled":true},"thirdParty":{"enabled":false,"providers":[]},"passwordless":{"enabled":false},"webauthn":{"enabled":false},"firstFactors":["emailpassword"]}`)
	if res := plain.NewClient(authtest.Header).Do("POST", "/auth/signinup", map[string]any{}); res.StatusCode != http.StatusNotFound {
		t.Errorf("signinup without providers: %d, want 404", res.StatusCode)
	}
}

// Apple posts its callback to the API, which relays it to the frontend
// page the SDK named in state.
func TestFormPostCallback(t *testing.T) {
	t.Parallel()
	apple := &scripted{id: "apple", formPost: true}
	s := authtest.NewServer(t, auth.Config{ThirdParty: thirdparty.Config{Providers: []provider.Provider{apple}}})
	front := s.AuthConfig.AppURL + "/auth/callback/apple"
	state := base64.StdEncoding.EncodeToString([]byte(`{"frontendRedirectURI":"` + front + `","stateForAuthProvider":"xyz"}`))
	post := func(form url.Values, site string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest("POST", s.URL+"/auth/callback/apple", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Sec-Fetch-Site", site)
		req.Header.Set("Origin", "https://appleid.apple.com")
		hc := s.Client()
		hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		res, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res
	}
	res := post(url.Values{"code": {"c1"}, "state": {state}, "user": {`{"name":{"firstName":"A"}}`}, "id_token": {"secret"}}, "cross-site")
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("callback: %d, want 303", res.StatusCode)
	}
	loc, _ := url.Parse(res.Header.Get("Location"))
	q := loc.Query()
	if loc.Scheme+"://"+loc.Host+loc.Path != front || q.Get("code") != "c1" || q.Get("state") != state ||
		q.Get("user") == "" || q.Has("id_token") {
		t.Errorf("relayed to %s: want the frontend page with code, state and user, and no id_token", loc)
	}
	if got := s.AuthConfig.AppURL + "/auth/callback/apple"; authorisationURL(t, s.NewClient(authtest.Header), "apple", s.AuthConfig.AppURL+"/auth/callback/apple") == "" {
		t.Errorf("%s refused", got)
	}

	evil := base64.StdEncoding.EncodeToString([]byte(`{"frontendRedirectURI":"https://evil.example.com/steal"}`))
	for name, form := range map[string]url.Values{
		"foreign frontend": {"code": {"c"}, "state": {evil}},
		"no state":         {"code": {"c"}},
		"garbage state":    {"code": {"c"}, "state": {"%%%"}},
	} {
		if res := post(form, "cross-site"); res.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: %d, want 400", name, res.StatusCode)
		}
	}
	big := url.Values{"code": {strings.Repeat("c", 20<<10)}, "state": {state}}
	if res := post(big, "cross-site"); res.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("oversized callback: %d, want 413", res.StatusCode)
	}
}

// Concurrent first sign-ins with one identity make one user.
func TestThirdPartyConcurrentFirstSignIns(t *testing.T) {
	t.Parallel()
	st := memstore.New()
	s, _ := tpServer(t, auth.Config{Store: st, RateLimits: auth.RateLimits{ClientThirdPartySignIns: auth.Rate{Burst: 100, Every: time.Second}}})
	const n = 16
	redirect := callbackURL(s, "idp")
	bodies := make([]map[string]any, n)
	for i := range n {
		bodies[i] = signInUpBody("idp", redirect, fmt.Sprintf("code-%d", i), authorisationURL(t, s.NewClient(authtest.Header), "idp", redirect))
	}
	var created atomic.Int32
	ids := make([]any, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			res := s.NewClient(authtest.Header).Do("POST", "/auth/signinup", bodies[i])
			if res.Status != "OK" {
				t.Errorf("sign-in %d: %s", i, res.Body)
				return
			}
			if res.JSON["createdNewRecipeUser"] == true {
				created.Add(1)
			}
			ids[i] = res.JSON["user"].(map[string]any)["id"]
		})
	}
	wg.Wait()
	if created.Load() != 1 {
		t.Errorf("%d of %d concurrent first sign-ins created a user, want 1", created.Load(), n)
	}
	for i := range ids {
		if ids[i] != ids[0] {
			t.Errorf("sign-in %d as %v, want %v", i, ids[i], ids[0])
		}
	}
	if logins, _ := st.LoginsByEmail(t.Context(), "someone@example.com"); len(logins) != 1 {
		t.Errorf("%d logins, want 1", len(logins))
	}
}

// /signinup is limited per client: each makes the server call a provider.
func TestThirdPartyLimitedPerClient(t *testing.T) {
	t.Parallel()
	s, p := tpServer(t, auth.Config{RateLimits: auth.RateLimits{ClientThirdPartySignIns: auth.Rate{Burst: 3, Every: time.Minute}}})
	c := s.NewClient(authtest.Header)
	redirect := callbackURL(s, "idp")
	v := authorisationURL(t, c, "idp", redirect)
	statuses := []int{}
	for i := range 5 {
		statuses = append(statuses, c.Do("POST", "/auth/signinup", signInUpBody("idp", redirect, fmt.Sprintf("code-%d", i), v)).StatusCode)
	}
	if fmt.Sprint(statuses) != "[200 200 200 429 429]" || p.exchanged() != 3 {
		t.Errorf("5 sign-ins from one client against a burst of 3: %v and %d exchanges, want [200 200 200 429 429] and 3", statuses, p.exchanged())
	}
	s.Clock.Advance(time.Minute)
	if res := c.Do("POST", "/auth/signinup", signInUpBody("idp", redirect, "code-later", v)); res.Status != "OK" {
		t.Errorf("a minute later: %d %s", res.StatusCode, res.Body)
	}
}

// A redirect URI listed in the configuration is accepted as it is, on
// any origin; one character off, it is not.
func TestThirdPartyListedRedirectURI(t *testing.T) {
	t.Parallel()
	const listed = "https://mobile.example.net/oauth/done"
	s, _ := tpServer(t, auth.Config{ThirdParty: thirdparty.Config{RedirectURIs: []string{listed}}})
	c := s.NewClient(authtest.Header)
	v := authorisationURL(t, c, "idp", listed)
	if res := c.Do("POST", "/auth/signinup", signInUpBody("idp", listed, "code-1", v)); res.Status != "OK" {
		t.Errorf("sign-in with a listed redirect URI: %d %s", res.StatusCode, res.Body)
	}
	res := c.Get("/auth/authorisationurl?" + url.Values{"thirdPartyId": {"idp"}, "redirectURIOnProviderDashboard": {listed + "/"}}.Encode())
	if res.StatusCode != http.StatusBadRequest {
		t.Errorf("a redirect URI one character off the listed one: %d, want 400", res.StatusCode)
	}
}
