package main

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/emailverification"
	"github.com/latchkit/auth/passwordless"
)

// TestParseOptionsDev checks what -dev turns on, that the flags it sets
// still win, and where it refuses to start.
func TestParseOptionsDev(t *testing.T) {
	none := func(string) string { return "" }
	o, err := parseOptions(nil, none)
	if err != nil {
		t.Fatal(err)
	}
	if o.dev || o.devProvider != nil || o.mfaOffered != nil || o.features().Dev {
		t.Errorf("without -dev: dev %v, provider %v, MFA offered %v, features %+v; want all off", o.dev, o.devProvider, o.mfaOffered, o.features())
	}

	for name, parse := range map[string]func() (options, error){
		"-dev": func() (options, error) { return parseOptions([]string{"-dev", "-addr", "127.0.0.1:8123"}, none) },
		"DEMO_DEV=true": func() (options, error) {
			return parseOptions([]string{"-addr", "127.0.0.1:8123"}, func(k string) string { return map[string]string{"DEMO_DEV": "true"}[k] })
		},
		"-addr localhost": func() (options, error) { return parseOptions([]string{"-dev", "-addr", "localhost:8123"}, none) },
	} {
		o, err := parse()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !o.dev || o.emailVerification != emailverification.Optional || !o.accountLinking ||
			o.passwordless != passwordless.CodeAndLink || !o.passkeys || o.mfa != nil ||
			!slices.Equal(o.mfaOffered, []string{auth.FactorTOTP, auth.FactorWebAuthn}) {
			t.Errorf("%s: %+v; want verification optional, linking, code-and-link, passkeys, TOTP and passkeys offered, none required", name, o)
		}
		if o.appURL != "http://localhost:8123" {
			t.Errorf("%s: app URL %q, want http://localhost:8123", name, o.appURL)
		}
		if o.devProvider == nil || len(o.providers) != 1 || o.providers[0].ID() != devProviderID || o.providers[0].Name() != devProviderName {
			t.Errorf("%s: providers %v; want the development provider alone", name, o.providers)
		} else if got := o.devProvider.iss.URL; got != "http://localhost:8123/dev/oidc" {
			t.Errorf("%s: issuer %q, want http://localhost:8123/dev/oidc", name, got)
		}
		want := features{EmailVerification: "optional", AccountLinking: true, Passwordless: "code-and-link", Passkeys: true, Dev: true, Account: true}
		if f := o.features(); !reflect.DeepEqual(f, want) {
			t.Errorf("%s: features %+v, want %+v", name, f, want)
		}
	}

	// Flags and their environment twins win over -dev.
	for _, c := range []struct {
		args  []string
		env   map[string]string
		check func(o options) bool
	}{
		{[]string{"-mfa", "totp"}, nil, func(o options) bool {
			return slices.Equal(o.mfa, []string{auth.FactorTOTP}) && o.mfaOffered == nil
		}},
		{[]string{"-mfa", "off"}, nil, func(o options) bool { return o.mfa == nil && o.mfaOffered == nil }},
		{[]string{"-passwordless", "code"}, nil, func(o options) bool { return o.passwordless == passwordless.Code }},
		{nil, map[string]string{"DEMO_PASSWORDLESS": "link"}, func(o options) bool { return o.passwordless == passwordless.Link }},
		{[]string{"-email-verification", "required"}, nil, func(o options) bool {
			return o.emailVerification == emailverification.Required
		}},
		{[]string{"-account-linking=false"}, nil, func(o options) bool { return !o.accountLinking }},
		{[]string{"-passkeys=false"}, nil, func(o options) bool {
			return !o.passkeys && slices.Equal(o.mfaOffered, []string{auth.FactorTOTP})
		}},
		{[]string{"-app-url", "http://localhost:9999"}, nil, func(o options) bool {
			return o.appURL == "http://localhost:9999" && o.devProvider.iss.URL == "http://localhost:9999/dev/oidc"
		}},
	} {
		o, err := parseOptions(append([]string{"-dev"}, c.args...), func(k string) string { return c.env[k] })
		if err != nil || !c.check(o) {
			t.Errorf("-dev %q with env %v: %+v, %v", c.args, c.env, o, err)
		}
	}

	// Only on loopback.
	for _, addr := range []string{"0.0.0.0:8080", "192.0.2.1:80", ":8080", "[::]:8080", "example.com:8080"} {
		_, err := parseOptions([]string{"-dev", "-addr", addr}, none)
		if err == nil || !strings.Contains(err.Error(), "-dev") || !strings.Contains(err.Error(), "loopback") {
			t.Errorf("-dev -addr %s: %v; want an error that -dev needs a loopback address", addr, err)
		}
	}
	// Its provider's issuer is on the app URL: http must be on loopback.
	if _, err := parseOptions([]string{"-dev", "-app-url", "http://app.example:8080"}, none); err == nil || !strings.Contains(err.Error(), "-dev") {
		t.Errorf("-dev -app-url http://app.example:8080: %v; want an error naming -dev", err)
	}

	// A real provider turns the development one off.
	for _, real := range [][]string{
		{"-oidc-issuer", "https://id.example.com", "-oidc-client-id", "app"},
		{"-google-client-id", "g-id", "-google-client-secret", "g-secret"},
		{"-github-client-id", "gh-id", "-github-client-secret", "gh-secret"},
	} {
		o, err := parseOptions(append([]string{"-dev"}, real...), none)
		if err != nil {
			t.Fatalf("-dev %q: %v", real, err)
		}
		if o.devProvider != nil || len(o.providers) != 1 || o.providers[0].ID() == devProviderID {
			t.Errorf("-dev %q: providers %v, dev provider %v; want the real one alone", real, o.providers, o.devProvider)
		}
	}
}

// TestDevOff checks that without -dev nothing is served under /dev/ and
// /api/config does not say dev.
func TestDevOff(t *testing.T) {
	d := newTestDemo(t, nil)
	for _, path := range []string{
		"/dev/outbox", "/dev/outbox.json", "/dev/oidc/.well-known/openid-configuration",
		"/dev/oidc/jwks", "/dev/oidc/authorize?client_id=demo", "/dev/",
	} {
		if r := d.do("GET", path, "", "", nil); r.status != http.StatusNotFound {
			t.Errorf("GET %s without -dev: %d, want 404", path, r.status)
		}
	}
	if r := d.do("POST", "/dev/oidc/token", "", "", nil); r.status != http.StatusNotFound {
		t.Errorf("POST /dev/oidc/token without -dev: %d, want 404", r.status)
	}
	r := d.do("GET", "/api/config", "", "", nil)
	if _, ok := r.json["dev"]; ok || r.status != 200 {
		t.Errorf("/api/config without -dev: %d %s; want no dev", r.status, r.body)
	}
}

// TestDevProviderEndpoints checks the discovery document, the JWKS and
// the page, as a client of the provider sees them.
func TestDevProviderEndpoints(t *testing.T) {
	d := newTestDemo(t, nil, "-dev")
	issuer := d.o.appURL + "/dev/oidc"
	r := d.do("GET", "/dev/oidc/.well-known/openid-configuration", "", "", nil)
	if r.status != 200 || r.json["issuer"] != issuer || r.json["token_endpoint"] != issuer+"/token" ||
		r.json["authorization_endpoint"] != issuer+"/authorize" || r.json["jwks_uri"] != issuer+"/jwks" {
		t.Errorf("discovery: %d %s", r.status, r.body)
	}
	r = d.do("GET", "/dev/oidc/jwks", "", "", nil)
	var jwks struct {
		Keys []struct{ Kty, Alg, Kid, N, E string }
	}
	if err := json.Unmarshal(r.body, &jwks); err != nil || len(jwks.Keys) != 1 || jwks.Keys[0].Kty != "RSA" || jwks.Keys[0].Alg != "RS256" || jwks.Keys[0].N == "" {
		t.Errorf("JWKS: %d %s", r.status, r.body)
	}
	if r := d.do("GET", "/api/config", "", "", nil); r.json["dev"] != true {
		t.Errorf("/api/config with -dev: %s, want dev true", r.body)
	}

	// Requests it cannot send back are refused on the spot.
	good := url.Values{"client_id": {"demo"}, "response_type": {"code"}, "redirect_uri": {callbackURL(d.o.appURL, devProviderID)}}
	for name, change := range map[string]func(url.Values){
		"unknown client":          func(q url.Values) { q.Set("client_id", "other") },
		"unregistered redirect":   func(q url.Values) { q.Set("redirect_uri", "http://evil.example/cb") },
		"implicit flow":           func(q url.Values) { q.Set("response_type", "token") },
		"plain PKCE":              func(q url.Values) { q.Set("code_challenge", "x"); q.Set("code_challenge_method", "plain") },
		"redirect with fragment":  func(q url.Values) { q.Set("redirect_uri", q.Get("redirect_uri")+"#x") },
		"no redirect URI at all":  func(q url.Values) { q.Del("redirect_uri") },
		"another app's callback ": func(q url.Values) { q.Set("redirect_uri", callbackURL(d.o.appURL, "oidc")) },
	} {
		q := url.Values{}
		for k, v := range good {
			q[k] = slices.Clone(v)
		}
		change(q)
		if r := d.do("GET", "/dev/oidc/authorize?"+q.Encode(), "", "", nil); r.status != http.StatusBadRequest {
			t.Errorf("authorize, %s: %d %s, want 400", name, r.status, r.body)
		}
	}
	page := d.do("GET", "/dev/oidc/authorize?"+good.Encode(), "", "", nil)
	body := string(page.body)
	if page.status != 200 || !strings.Contains(body, "Development only") || !strings.Contains(body, `<label for="email">`) ||
		!strings.Contains(body, "email_verified") {
		t.Errorf("authorize page: %d %s", page.status, body)
	}
	if csp := page.header.Get("Content-Security-Policy"); !strings.Contains(csp, "form-action 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") {
		t.Errorf("authorize page CSP: %q", csp)
	}
}

// devFlow is one sign-in with the development provider, as the page and
// a browser make it: the authorisation URL from the library, the
// provider's page, its form, and the redirect back.
type devFlow struct {
	d        *testDemo
	authURL  *url.URL
	verifier string
	request  string     // the page's request id
	back     url.Values // the redirect's query: code, state, iss
}

var devRequestField = regexp.MustCompile(`name="request" value="([^"]+)"`)

// noRedirects is a client that shows redirects rather than follows them.
var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// startDev asks the library for an authorisation URL and opens the
// provider's page.
func (d *testDemo) startDev() *devFlow {
	d.t.Helper()
	au := d.do("GET", "/auth/authorisationurl?"+url.Values{
		"thirdPartyId": {devProviderID}, "redirectURIOnProviderDashboard": {callbackURL(d.o.appURL, devProviderID)},
	}.Encode(), "thirdparty", "", nil)
	var res struct{ URLWithQueryParams, PKCECodeVerifier string }
	if err := json.Unmarshal(au.body, &res); err != nil || au.status != 200 {
		d.t.Fatalf("/auth/authorisationurl: %d %s", au.status, au.body)
	}
	u, err := url.Parse(res.URLWithQueryParams)
	if err != nil || !strings.HasPrefix(u.String(), d.o.appURL+"/dev/oidc/authorize?") {
		d.t.Fatalf("authorisation URL %q, want the development provider's", res.URLWithQueryParams)
	}
	// The app URL is http://localhost:PORT; the test server listens on
	// 127.0.0.1:PORT, which is the same listener.
	page, err := http.Get(d.url + u.RequestURI())
	if err != nil {
		d.t.Fatal(err)
	}
	b, _ := io.ReadAll(page.Body)
	page.Body.Close()
	m := devRequestField.FindSubmatch(b)
	if page.StatusCode != 200 || m == nil {
		d.t.Fatalf("provider page: %d %s", page.StatusCode, b)
	}
	return &devFlow{d: d, authURL: u, verifier: res.PKCECodeVerifier, request: string(m[1])}
}

// submit posts the page's form, from the page's origin, and returns the
// answer.
func (f *devFlow) submit(form url.Values, origin string) *http.Response {
	f.d.t.Helper()
	form.Set("request", f.request)
	req, _ := http.NewRequest("POST", f.d.url+"/dev/oidc/authorize", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	res, err := noRedirects.Do(req)
	if err != nil {
		f.d.t.Fatal(err)
	}
	return res
}

// signIn types email and name, ticks email_verified or not, and follows
// the provider's redirect back to the app's callback page.
func (f *devFlow) signIn(email, name string, verified bool) *devFlow {
	f.d.t.Helper()
	form := url.Values{"email": {email}, "name": {name}}
	if verified {
		form.Set("email_verified", "on")
	}
	res := f.submit(form, f.d.o.appURL)
	res.Body.Close()
	loc, err := res.Location()
	if res.StatusCode != http.StatusSeeOther || err != nil || !strings.HasPrefix(loc.String(), callbackURL(f.d.o.appURL, devProviderID)+"?") {
		f.d.t.Fatalf("provider form: %s to %v, want a redirect to the callback page", res.Status, loc)
	}
	// The callback page is the demo's page, served there.
	if r := f.d.do("GET", loc.RequestURI(), "", "", nil); r.status != 200 {
		f.d.t.Fatalf("callback page: %d", r.status)
	}
	f.back = loc.Query()
	return f
}

// finish posts the redirect's query to /auth/signinup, as the callback
// page does, with the PKCE verifier.
func (f *devFlow) finish(verifier string) reply {
	f.d.t.Helper()
	params := map[string]string{}
	for k := range f.back {
		params[k] = f.back.Get(k)
	}
	return f.d.do("POST", "/auth/signinup", "thirdparty", "", map[string]any{
		"thirdPartyId": devProviderID,
		"redirectURIInfo": map[string]any{
			"redirectURIOnProviderDashboard": callbackURL(f.d.o.appURL, devProviderID),
			"redirectURIQueryParams":         params,
			"pkceCodeVerifier":               verifier,
		},
	})
}

// devSignIn signs in with the development provider as email.
func (d *testDemo) devSignIn(email, name string, verified bool) reply {
	d.t.Helper()
	f := d.startDev().signIn(email, name, verified)
	return f.finish(f.verifier)
}

// TestDevProviderSignIn drives sign-in with the development provider over
// HTTP: the page's form, the callback, /auth/signinup and /api/me, with
// email_verified true and false under -dev's account linking.
func TestDevProviderSignIn(t *testing.T) {
	d := newTestDemo(t, nil, "-dev")
	const ada = "ada@example.com"
	access, _ := okSession(t, "password sign-up", d.do("POST", "/auth/signup", "emailpassword", "", credentials(ada, authtest.Password)))
	owner := d.do("GET", "/api/me", "", access, nil).field("userId")

	// A verified email joins the user of the password login with the
	// address.
	a1, _ := okSession(t, "provider sign-in, verified", d.devSignIn(ada, "Ada Lovelace", true))
	me := d.do("GET", "/api/me", "", a1, nil)
	if me.field("userId") != owner || me.field("email") != ada || me.json["emailVerified"] != true {
		t.Errorf("/api/me after the verified provider sign-in: %s; want the password user %s, verified", me.body, owner)
	}

	// An unverified email joins no one: where a login that proved the
	// address owns it (a passwordless sign-up), it is refused; beside a
	// password, which proves nothing, it is a user of its own.
	const grace = "grace@example.com"
	device, pre := d.createCode(grace)
	code := d.outboxMail(grace, "Your sign-in ").Code
	okSession(t, "passwordless sign-up", d.do("POST", "/auth/signinup/code/consume", "passwordless", "",
		map[string]any{"preAuthSessionId": pre, "deviceId": device, "userInputCode": code}))
	if r := d.devSignIn(grace, "Not Grace", false); r.field("status") != "SIGN_IN_UP_NOT_ALLOWED" || r.header.Get("st-access-token") != "" {
		t.Errorf("provider sign-in of an owned email, unverified: %d %s; want SIGN_IN_UP_NOT_ALLOWED", r.status, r.body)
	}
	const hal = "hal@example.com"
	h0, _ := okSession(t, "password sign-up of hal", d.do("POST", "/auth/signup", "emailpassword", "", credentials(hal, authtest.Password)))
	halPassword := d.do("GET", "/api/me", "", h0, nil).field("userId")
	h1, _ := okSession(t, "provider sign-in of hal, unverified", d.devSignIn(hal, "", false))
	if me := d.do("GET", "/api/me", "", h1, nil); me.json["emailVerified"] != false || me.field("userId") == halPassword {
		t.Errorf("/api/me of hal's unverified provider login: %s; want another user than %s, unverified", me.body, halPassword)
	}

	// An unverified email no one owns is a new user, with the email
	// unverified; the same identity again is the same user.
	b1, _ := okSession(t, "provider sign-up, unverified", d.devSignIn("bob@example.com", "", false))
	bob := d.do("GET", "/api/me", "", b1, nil)
	if bob.field("userId") == owner || bob.field("email") != "bob@example.com" || bob.json["emailVerified"] != false {
		t.Errorf("/api/me of bob: %s; want a new user, unverified", bob.body)
	}
	b2, _ := okSession(t, "provider sign-in again", d.devSignIn("bob@example.com", "", false))
	if again := d.do("GET", "/api/me", "", b2, nil); again.field("userId") != bob.field("userId") {
		t.Errorf("signing in twice as bob: users %s and %s, want one", bob.field("userId"), again.field("userId"))
	}

	// The page offers the identities used before in this run, the
	// last of each email.
	page := d.do("GET", d.startDev().authURL.RequestURI(), "", "", nil)
	if !strings.Contains(string(page.body), "Sign in again as") || !strings.Contains(string(page.body), "&lt;bob@example.com&gt;") ||
		!strings.Contains(string(page.body), "Ada Lovelace &lt;ada@example.com&gt; — email verified") {
		t.Errorf("provider page after two identities: %s", page.body)
	}
}

// TestDevProviderRefuses checks that the provider refuses what a real one
// refuses: a code twice, a wrong PKCE verifier, a form from another
// origin, a page used or made up, a wrong client secret.
func TestDevProviderRefuses(t *testing.T) {
	d := newTestDemo(t, nil, "-dev")

	f := d.startDev().signIn("carol@example.com", "Carol", true)
	okSession(t, "first use of a code", f.finish(f.verifier))
	if r := f.finish(f.verifier); r.field("status") == "OK" || r.header.Get("st-access-token") != "" {
		t.Errorf("the same code again: %d %s; want it refused", r.status, r.body)
	}

	f = d.startDev().signIn("carol@example.com", "Carol", true)
	if r := f.finish(f.verifier + "x"); r.field("status") == "OK" || r.header.Get("st-access-token") != "" {
		t.Errorf("a wrong PKCE verifier: %d %s; want it refused", r.status, r.body)
	}

	// The token endpoint itself, as the library calls it.
	token := func(f *devFlow, secret, redirect, verifier string) reply {
		form := url.Values{"grant_type": {"authorization_code"}, "code": {f.back.Get("code")},
			"redirect_uri": {redirect}, "code_verifier": {verifier},
			"client_id": {"demo"}, "client_secret": {secret}}
		res, err := http.PostForm(d.url+"/dev/oidc/token", form)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		r := reply{status: res.StatusCode, header: res.Header}
		r.body, _ = io.ReadAll(res.Body)
		json.Unmarshal(r.body, &r.json)
		return r
	}
	secret := d.o.devProvider.iss.ClientSecret
	callback := callbackURL(d.o.appURL, devProviderID)
	f = d.startDev().signIn("dan@example.com", "Dan", true)
	if r := token(f, "wrong", callback, f.verifier); r.status != http.StatusUnauthorized || r.field("error") != "invalid_client" {
		t.Errorf("wrong client secret: %d %s, want 401 invalid_client", r.status, r.body)
	}
	f = d.startDev().signIn("dan@example.com", "Dan", true)
	if r := token(f, secret, callback+"x", f.verifier); r.status != http.StatusBadRequest || r.field("error") != "invalid_grant" {
		t.Errorf("another redirect URI: %d %s, want 400 invalid_grant", r.status, r.body)
	}
	// The library would catch a wrong verifier by the nonce it derives
	// from it; the provider refuses it first.
	f = d.startDev().signIn("dan@example.com", "Dan", true)
	if r := token(f, secret, callback, f.verifier+"x"); r.status != http.StatusBadRequest || r.field("error") != "invalid_grant" {
		t.Errorf("a wrong PKCE verifier at the token endpoint: %d %s, want 400 invalid_grant", r.status, r.body)
	}
	f = d.startDev().signIn("dan@example.com", "Dan", true)
	r := token(f, secret, callback, f.verifier)
	idToken := r.field("id_token")
	if r.status != 200 || idToken == "" {
		t.Fatalf("token: %d %s", r.status, r.body)
	}
	var claims map[string]any
	payload, _ := base64.RawURLEncoding.DecodeString(strings.Split(idToken, ".")[1])
	json.Unmarshal(payload, &claims)
	nonce := f.authURL.Query().Get("nonce")
	if claims["iss"] != d.o.appURL+"/dev/oidc" || claims["aud"] != "demo" || claims["email"] != "dan@example.com" ||
		claims["email_verified"] != true || claims["name"] != "Dan" || claims["nonce"] != nonce || nonce == "" ||
		claims["sub"] != devSubject("dan@example.com") || !strings.HasPrefix(devSubject("dan@example.com"), "dev-") ||
		claims["exp"] == nil || claims["iat"] == nil {
		t.Errorf("ID token claims: %v", claims)
	}
	if r := token(f, secret, callback, f.verifier); r.status != http.StatusBadRequest || r.field("error") != "invalid_grant" {
		t.Errorf("the code again at the token endpoint: %d %s, want 400 invalid_grant", r.status, r.body)
	}

	// The form.
	f = d.startDev()
	for _, origin := range []string{"http://evil.example", "null"} {
		res := f.submit(url.Values{"email": {"eve@example.com"}, "email_verified": {"on"}}, origin)
		res.Body.Close()
		if res.StatusCode != http.StatusForbidden {
			t.Errorf("form post from %s: %s, want 403", origin, res.Status)
		}
	}
	req, _ := http.NewRequest("POST", d.url+"/dev/oidc/authorize", strings.NewReader(url.Values{"request": {f.request}, "email": {"eve@example.com"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	if res, err := noRedirects.Do(req); err != nil || res.StatusCode != http.StatusForbidden {
		t.Errorf("form post with Sec-Fetch-Site cross-site: %v %v, want 403", res.Status, err)
	}
	res := f.submit(url.Values{"email": {"not an email"}}, d.o.appURL)
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(string(b), `role="alert"`) || !strings.Contains(string(b), `aria-invalid="true"`) {
		t.Errorf("form with a bad email: %s %s; want the page again with the error announced", res.Status, b)
	}
	f.signIn("erin@example.com", "", true) // the same page still works
	if res := f.submit(url.Values{"email": {"erin@example.com"}}, d.o.appURL); res.StatusCode != http.StatusBadRequest {
		t.Errorf("a used page posted again: %s, want 400", res.Status)
	}
	f.request = "made-up"
	if res := f.submit(url.Values{"email": {"erin@example.com"}}, d.o.appURL); res.StatusCode != http.StatusBadRequest {
		t.Errorf("a made-up request id: %s, want 400", res.Status)
	}

	// Cancel sends the browser back with access_denied.
	f = d.startDev()
	res = f.submit(url.Values{"cancel": {"1"}}, d.o.appURL)
	res.Body.Close()
	loc, _ := res.Location()
	if res.StatusCode != http.StatusSeeOther || loc == nil || loc.Query().Get("error") != "access_denied" {
		t.Errorf("cancel: %s to %v, want a redirect with access_denied", res.Status, loc)
	}
}
