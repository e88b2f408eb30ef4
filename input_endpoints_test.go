package auth_test

// Hostile input on the endpoints of third-party sign-in and email
// verification, over HTTP on a server with every feature on, as the
// older endpoints get it in input_test.go: a 4xx with a JSON message, or
// the protocol's answer, never a 5xx or a hang, and nothing written,
// mailed or sent to the provider.
//
// The server with every feature on (fullFixture) and the list of its
// endpoints (fullEndpoints) are here; the fuzz, log and enumeration
// suites use them too. TestInputEndpointsListed keeps the list in step with
// the routes auth.go serves, so that a new endpoint cannot miss these
// suites unnoticed.

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/dashboard"
	"github.com/latchkit/auth/emailverification"
	"github.com/latchkit/auth/passkey"
	"github.com/latchkit/auth/passwordless"
	"github.com/latchkit/auth/provider"
	"github.com/latchkit/auth/roles"
	"github.com/latchkit/auth/store"
	"github.com/latchkit/auth/store/memstore"
)

// An endpoint is one route of the handler, under the base path.
type endpoint struct {
	method, path, rid string
}

// fullEndpoints are the routes a server with every feature on serves:
// email and password with reset, the email-exists check, sessions, the
// JWKS (EdDSA), email verification, third-party sign-in with a
// provider that posts its callback ("apple"), passwordless sign-in
// by code and link, to email addresses and phone numbers, passkeys
// with recovery by a mailed link, and multi-factor authentication with
// TOTP and recovery codes, and changing the account's email.
// /user/email/verify and /mfa/recovery-codes
// serve two methods and are listed once for each.
var fullEndpoints = []endpoint{
	{"POST", "/signup", "emailpassword"},
	{"POST", "/signin", "emailpassword"},
	{"GET", "/emailpassword/email/exists", "emailpassword"},
	{"GET", "/signup/email/exists", "emailpassword"},
	{"POST", "/user/password/reset/token", "emailpassword"},
	{"POST", "/user/password/reset", "emailpassword"},
	{"POST", "/user/password/change", "emailpassword"},
	{"POST", "/session/refresh", "session"},
	{"POST", "/signout", "session"},
	{"POST", "/user/delete", "session"},
	{"POST", "/user/email/change", "emailchange"},
	{"POST", "/user/email/change/verify", "emailchange"},
	{"POST", "/user/email/change/undo", "emailchange"},
	{"GET", "/jwt/jwks.json", ""},
	{"POST", "/user/email/verify/token", "emailverification"},
	{"POST", "/user/email/verify", "emailverification"},
	{"GET", "/user/email/verify", "emailverification"},
	{"GET", "/loginmethods", "multitenancy"},
	{"GET", "/authorisationurl", "thirdparty"},
	{"POST", "/signinup", "thirdparty"},
	{"POST", "/callback/apple", ""},
	{"POST", "/signinup/code", "passwordless"},
	{"POST", "/signinup/code/resend", "passwordless"},
	{"POST", "/signinup/code/consume", "passwordless"},
	{"GET", "/passwordless/email/exists", "passwordless"},
	{"GET", "/passwordless/phonenumber/exists", "passwordless"},
	{"GET", "/signup/phonenumber/exists", "passwordless"},
	{"POST", "/webauthn/options/register", "webauthn"},
	{"POST", "/webauthn/options/signin", "webauthn"},
	{"POST", "/webauthn/signup", "webauthn"},
	{"POST", "/webauthn/signin", "webauthn"},
	{"GET", "/webauthn/email/exists", "webauthn"},
	{"POST", "/user/webauthn/reset/token", "webauthn"},
	{"POST", "/user/webauthn/reset", "webauthn"},
	{"GET", "/webauthn/credential/list", "webauthn"},
	{"POST", "/webauthn/credential", "webauthn"},
	{"POST", "/webauthn/credential/remove", "webauthn"},
	{"PUT", "/mfa/info", "multifactorauth"},
	{"POST", "/mfa/recovery-codes", "multifactorauth"},
	{"GET", "/mfa/recovery-codes", "multifactorauth"},
	{"POST", "/mfa/recovery-code/verify", "multifactorauth"},
	{"POST", "/totp/device", "totp"},
	{"GET", "/totp/device/list", "totp"},
	{"POST", "/totp/device/remove", "totp"},
	{"POST", "/totp/device/verify", "totp"},
	{"POST", "/totp/verify", "totp"},
	// Organisations (the library's own routes), on the public tenant's
	// path, where the tenant routes refuse every session as of another.
	{"POST", "/tenant/invitations", ""},
	{"POST", "/tenant/invitation/accept", ""},
	{"GET", "/tenant/members", ""},
	{"POST", "/tenant/members/remove", ""},
	{"POST", "/tenant/switch", ""},
	{"POST", "/tenant/discover", ""},
	{"GET", "/user/tenants", ""},
	// The dashboard's shell and API (package dashboard), which answer
	// without rid.
	{"GET", "/dashboard", ""},
	{"GET", "/dashboard/", ""},
	{"GET", "/dashboard/roles", ""},
	{"GET", "/dashboard/tenants", ""},
	{"POST", "/dashboard/api/key/validate", ""},
	{"POST", "/dashboard/api/signout", ""},
	{"POST", "/dashboard/api/analytics", ""},
	{"GET", "/dashboard/api/users", ""},
	{"GET", "/dashboard/api/users/count", ""},
	{"GET", "/dashboard/api/search/tags", ""},
	{"GET", "/dashboard/api/tenants", ""},
	{"GET", "/dashboard/api/tenant", ""},
	{"POST", "/dashboard/api/tenant", ""},
	{"DELETE", "/dashboard/api/tenant", ""},
	{"PUT", "/dashboard/api/tenant/first-factor", ""},
	{"PUT", "/dashboard/api/tenant/required-secondary-factor", ""},
	{"GET", "/dashboard/api/thirdparty/config", ""},
	{"PUT", "/dashboard/api/thirdparty/config", ""},
	{"DELETE", "/dashboard/api/thirdparty/config", ""},
	{"GET", "/dashboard/api/user", ""},
	{"PUT", "/dashboard/api/user", ""},
	{"DELETE", "/dashboard/api/user", ""},
	{"POST", "/dashboard/api/user/emailpassword", ""},
	{"POST", "/dashboard/api/user/passwordless", ""},
	{"GET", "/dashboard/api/user/email/verify", ""},
	{"PUT", "/dashboard/api/user/email/verify", ""},
	{"POST", "/dashboard/api/user/email/verify/token", ""},
	{"GET", "/dashboard/api/user/metadata", ""},
	{"PUT", "/dashboard/api/user/metadata", ""},
	{"GET", "/dashboard/api/user/sessions", ""},
	{"POST", "/dashboard/api/user/sessions", ""},
	{"PUT", "/dashboard/api/user/password", ""},
	{"GET", "/dashboard/api/user/unlink", ""},
	{"GET", "/dashboard/api/userroles/roles", ""},
	{"PUT", "/dashboard/api/userroles/role", ""},
	{"DELETE", "/dashboard/api/userroles/role", ""},
	{"GET", "/dashboard/api/userroles/role/permissions", ""},
	{"PUT", "/dashboard/api/userroles/role/permissions/remove", ""},
	{"GET", "/dashboard/api/userroles/user/roles", ""},
	{"PUT", "/dashboard/api/userroles/user/roles", ""},
	{"DELETE", "/dashboard/api/userroles/user/roles", ""},
}

// allowedMethods are the methods each path of fullEndpoints answers,
// HEAD with GET and OPTIONS everywhere.
func allowedMethods() map[string][]string {
	out := map[string][]string{}
	for _, ep := range fullEndpoints {
		if !slices.Contains(out[ep.path], "OPTIONS") {
			out[ep.path] = append(out[ep.path], "OPTIONS")
		}
		out[ep.path] = append(out[ep.path], ep.method)
		if ep.method == "GET" {
			out[ep.path] = append(out[ep.path], "HEAD")
		}
	}
	return out
}

// TestInputEndpointsListed compares fullEndpoints with the routes the
// handler with every feature on serves (asked of the built handler). A
// route added by any feature fails this test until it is listed, and so
// given its share of the input, fuzz, log and enumeration suites.
func TestInputEndpointsListed(t *testing.T) {
	served := map[string]bool{}
	for _, r := range auth.Routes(newFullFixture(t, auth.Config{}).Auth) {
		served[r] = true
	}
	listed := map[string]bool{}
	for _, ep := range fullEndpoints {
		listed[ep.method+" "+strings.Replace(ep.path, "/callback/apple", "/callback/<id>", 1)] = true
	}
	for r := range served {
		if !listed[r] {
			t.Errorf("the handler serves %s, which fullEndpoints does not list: list it, and cover it in the input, fuzz, log and enumeration suites", r)
		}
	}
	for r := range listed {
		if !served[r] {
			t.Errorf("fullEndpoints lists %s, which the handler no longer serves", r)
		}
	}
}

// ---- the server with every feature on ----

// idpTraffic is the transport between the server and the fake provider.
// It counts the code exchanges, with what each presented, and keeps
// every secret that went over it: codes, verifiers, the client's
// credentials, and the tokens the provider issued.
type idpTraffic struct {
	mu        sync.Mutex
	exchanges []url.Values // the forms posted to the token endpoint
	secrets   map[string]string
}

func (tr *idpTraffic) keep(label, v string) {
	if v != "" {
		tr.secrets[v] = label
	}
}

func (tr *idpTraffic) RoundTrip(req *http.Request) (*http.Response, error) {
	exchange := req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/token")
	if exchange {
		body, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		req = req.Clone(req.Context())
		req.Body = io.NopCloser(bytes.NewReader(body))
		form, _ := url.ParseQuery(string(body))
		tr.mu.Lock()
		tr.exchanges = append(tr.exchanges, form)
		for _, k := range []string{"code", "code_verifier", "client_secret"} {
			tr.keep(k+" posted to the provider", form.Get(k))
		}
		if h := req.Header.Get("Authorization"); h != "" {
			tr.keep("client's Authorization header at the provider", strings.TrimPrefix(h, "Basic "))
		}
		tr.mu.Unlock()
	}
	res, err := http.DefaultTransport.RoundTrip(req)
	if err != nil || !exchange {
		return res, err
	}
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		return nil, err
	}
	res.Body = io.NopCloser(bytes.NewReader(body))
	var answer map[string]any
	json.Unmarshal(body, &answer)
	tr.mu.Lock()
	for _, k := range []string{"access_token", "id_token", "refresh_token"} {
		if v, ok := answer[k].(string); ok {
			tr.keep("provider's "+k, v)
		}
	}
	tr.mu.Unlock()
	return res, nil
}

// exchanged returns the token requests so far.
func (tr *idpTraffic) exchanged() []url.Values {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return slices.Clone(tr.exchanges)
}

// secretValues returns the secrets seen so far, by value, with labels.
func (tr *idpTraffic) secretValues() map[string]string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return maps.Clone(tr.secrets)
}

// formPosted is a provider whose redirect back is a form post, as
// Apple's is.
type formPosted struct{ provider.Provider }

func (formPosted) FormPost() bool { return true }

// fakeIdP is the fake OpenID provider of authtest and the two providers
// a server talks to it through: "authtest", an OpenID provider, and
// "apple", which posts its callback to the server's relay. Both go
// through traffic.
type fakeIdP struct {
	*authtest.Provider
	traffic   *idpTraffic
	providers []provider.Provider
}

func newFakeIdP(tb testing.TB) *fakeIdP {
	tb.Helper()
	fake := authtest.NewProvider(tb)
	traffic := &idpTraffic{secrets: map[string]string{fake.ClientSecret: "client secret"}}
	hc := &http.Client{Transport: traffic, Timeout: 10 * time.Second}
	oidc := func(id string) provider.Provider {
		p, err := provider.OIDC(provider.OIDCConfig{
			ID: id, Name: "Fake " + id, Issuer: fake.URL,
			ClientID: fake.ClientID, ClientSecret: fake.ClientSecret, HTTPClient: hc,
		})
		if err != nil {
			tb.Fatal(err)
		}
		return p
	}
	return &fakeIdP{Provider: fake, traffic: traffic,
		providers: []provider.Provider{oidc(authtest.ProviderID), formPosted{oidc("apple")}}}
}

// withEverything turns every feature on in cfg: EdDSA keys (served at
// the JWKS), email verification, the providers of idp, passwordless
// sign-in by code and link, with a TextSender (a *plTexts) for phone
// numbers, passkeys, and MFA with TOTP and passkeys as second factors
// that each user may set up (none required, so that a sign-in's session
// passes protected routes as it does without MFA). Passkeys need the app
// on a domain name, so the AppURL is pkApp unless cfg has one. Roles are
// on where the store keeps them, with none given: every token carries
// st-role and st-perm.
func (idp *fakeIdP) withEverything(cfg auth.Config) auth.Config {
	cfg.SigningAlgorithm = auth.EdDSA
	if cfg.AppURL == "" {
		cfg.AppURL = pkApp
	}
	if cfg.Passkeys == nil {
		cfg.Passkeys = passkey.New(passkey.Config{})
	}
	if cfg.EmailVerification.Mode == "" {
		cfg.EmailVerification.Mode = emailverification.Optional
	}
	if cfg.Passwordless.Flow == passwordless.Off {
		cfg.Passwordless.Flow = passwordless.CodeAndLink
	}
	if cfg.Passwordless.TextSender == nil {
		cfg.Passwordless.TextSender = newPLTexts()
	}
	if cfg.MFA.Required == nil && cfg.MFA.Factors == nil {
		cfg.MFA.Factors = []string{auth.FactorTOTP, auth.FactorWebAuthn}
	}
	cfg.EmailChange.Enabled = true
	if cfg.BeforeDeleteUser == nil {
		// The route is served, and deletes nobody: the suites' sessions
		// are fresh, and the route reads no body.
		cfg.BeforeDeleteUser = func(context.Context, string) error { return errors.New("not in this fixture") }
	}
	if _, keeps := cfg.Store.(store.RoleStore); cfg.Roles == nil && (cfg.Store == nil || keeps) {
		cfg.Roles = roles.New(roles.Config{})
	}
	if _, lists := cfg.Store.(store.UserLister); cfg.Dashboard == nil && (cfg.Store == nil || lists) {
		cfg.Dashboard = dashboard.New(dashboard.Config{APIKey: dashKey})
	}
	cfg.ThirdParty.Providers = append(cfg.ThirdParty.Providers, idp.providers...)
	if _, keeps := cfg.Store.(store.TenantStore); cfg.Store == nil || keeps {
		cfg.Tenants.Enabled = true
	}
	return cfg
}

// fullStore counts, besides the writes textColumnStore counts, those of
// third-party, passwordless and passkey sign-in, and of second factors. What email verification writes
// shows in the mail sent and in the logins' EmailVerified, which the
// tests look at.
type fullStore struct {
	*textColumnStore
	store.RoleStore   // the memory store's, uncounted: no request writes roles
	store.UserLister  // the memory store's, for the dashboard's API
	store.TenantStore // the memory store's, for tenants and organisations
}

func (s fullStore) SignInUp(ctx context.Context, l store.Login, newUser store.User) (store.Login, bool, error) {
	got, created, err := s.textColumnStore.Store.SignInUp(ctx, l, newUser)
	return got, created, s.counted(err)
}

// UsePasswordlessCode writes when a code is used, and when a wrong one
// is counted against its flow.
func (s fullStore) UsePasswordlessCode(ctx context.Context, flow, code store.TokenHash, now time.Time, maxAttempts int) (store.Code, error) {
	f, err := s.textColumnStore.Store.UsePasswordlessCode(ctx, flow, code, now, maxAttempts)
	if err == nil || maxAttempts > 0 && (errors.Is(err, store.ErrWrongCode) || errors.Is(err, store.ErrCodeExpired)) {
		s.writes.Add(1)
	}
	return f, err
}

// UseCeremony writes when it uses a ceremony up.
func (s fullStore) UseCeremony(ctx context.Context, kind store.CodeKind, hash store.TokenHash, now time.Time, update *store.MaterialUpdate) (store.Code, error) {
	c, err := s.textColumnStore.Store.UseCeremony(ctx, kind, hash, now, update)
	return c, s.counted(err)
}

func (s fullStore) LinkLogin(ctx context.Context, l store.Login) error {
	if err := sqlText(l.Email); err != nil {
		return err
	}
	return s.counted(s.textColumnStore.Store.LinkLogin(ctx, l))
}

// UpdateLoginMaterial writes a user's second factors.
func (s fullStore) UpdateLoginMaterial(ctx context.Context, loginID string, old, new []byte) error {
	return s.counted(s.textColumnStore.Store.UpdateLoginMaterial(ctx, loginID, old, new))
}

// UpdateSessionFactors writes the factors a session completed.
func (s fullStore) UpdateSessionFactors(ctx context.Context, handle string, old, new []byte, now time.Time) error {
	return s.counted(s.textColumnStore.Store.UpdateSessionFactors(ctx, handle, old, new, now))
}

func (s fullStore) DeleteLogin(ctx context.Context, id string) ([]string, error) {
	if err := sqlText(id); err != nil {
		return nil, err
	}
	handles, err := s.textColumnStore.Store.DeleteLogin(ctx, id)
	return handles, s.counted(err)
}

// fullFixture is an inFixture with every feature on and the fake
// provider behind its two providers. Its client follows no redirect (the
// relay's is the answer under test) and gives up on a request after 20
// seconds: a hang fails the test. The signing key is made and the
// provider's discovery document fetched before the test starts, so that
// neither counts as the work of a request under test.
type fullFixture struct {
	*inFixture
	idp *fakeIdP
}

func newFullFixture(tb testing.TB, cfg auth.Config) *fullFixture {
	tb.Helper()
	idp := newFakeIdP(tb)
	cfg = idp.withEverything(cfg)
	mem := memstore.New()
	st := &textColumnStore{Store: mem}
	cfg.Store = fullStore{st, mem, mem, mem}
	s := authtest.NewServer(tb, cfg)
	hc := *s.Client()
	hc.Timeout = 20 * time.Second
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	issueVerifier(tb, s.NewClient(authtest.Header), authtest.ProviderID, callbackPage(s, authtest.ProviderID))
	return &fullFixture{inFixture: &inFixture{Server: s, store: st, mem: mem, hc: &hc}, idp: idp}
}

// unlimited are rate limits no test reaches.
func unlimited() auth.RateLimits {
	r := auth.Rate{Burst: 1 << 30, Every: time.Nanosecond}
	return auth.RateLimits{SignInFailures: r, ClientSignInFailures: r, AccountSignInFailures: r, ResetEmails: r,
		ClientResetRequests: r, ClientNewPasswords: r, ClientEmailChecks: r, SessionRefreshes: r,
		ClientThirdPartySignIns: r, VerificationEmails: r, PasswordlessSends: r, ClientPasswordlessSends: r,
		PasswordlessFailures: r, ClientPasskeyCeremonies: r, ClientDashboardFailures: r}
}

// callbackPage is the redirect URI of provider id: the SDK's callback page
// on the app's origin, or for "apple" the server's relay, which is the
// same URL when the API is served from the app's origin, as here.
func callbackPage(s *authtest.Server, id string) string {
	return s.AuthConfig.AppURL + "/auth/callback/" + id
}

// issueVerifier asks for provider id's authorisation URL with redirect, as
// the SDK does, and returns it with the verifier.
func issueVerifier(tb testing.TB, c *authtest.Client, id, redirect string) (authURL, verifier string) {
	tb.Helper()
	res := c.Get("/auth/authorisationurl?" + url.Values{"thirdPartyId": {id}, "redirectURIOnProviderDashboard": {redirect}}.Encode())
	authURL, _ = res.JSON["urlWithQueryParams"].(string)
	verifier, _ = res.JSON["pkceCodeVerifier"].(string)
	if res.StatusCode != http.StatusOK || res.Status != "OK" || authURL == "" || verifier == "" {
		tb.Fatalf("authorisationurl for %s: %d %s", id, res.StatusCode, res.Body)
	}
	return authURL, verifier
}

// sdkSignInUp is the /signinup body the SDK posts.
func sdkSignInUp(id, redirect string, params map[string]string, verifier string) map[string]any {
	return map[string]any{
		"thirdPartyId": id,
		"redirectURIInfo": map[string]any{
			"redirectURIOnProviderDashboard": redirect,
			"redirectURIQueryParams":         params,
			"pkceCodeVerifier":               verifier,
		},
		"clientType": "web",
	}
}

// relayState is the state the SDK gives a provider that posts its
// callback: base64 of JSON naming the frontend page to relay to.
func relayState(frontend string) string {
	b, _ := json.Marshal(map[string]string{"frontendRedirectURI": frontend, "stateForAuthProvider": "sdk-state"})
	return base64.StdEncoding.EncodeToString(b)
}

// providerMessage is the answer of /signinup when the provider fails.
const providerMessage = `{"status":"GENERAL_ERROR","message":"Sign-in with the provider failed. Please try again."}`

// drainMail waits until the outbox has sent everything queued, and
// returns how many messages the Mailbox got. The server sends no more
// mail after it.
func (f *fullFixture) drainMail(t *testing.T) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := f.Auth.Close(ctx); err != nil {
		t.Fatal(err)
	}
	return len(f.Mailbox.Messages())
}

// ---- every endpoint: methods ----

// Every endpoint answers OPTIONS with its methods, and every other
// method with 405, its methods in Allow, and a message; under the public
// tenant's path too.
func TestInputEveryEndpointMethods(t *testing.T) {
	f := newFullFixture(t, auth.Config{})
	for path, allowed := range allowedMethods() {
		for _, prefix := range []string{"/auth", "/auth/public"} {
			r := f.send(t, "OPTIONS", prefix+path, nil, nil)
			got := strings.Split(r.header.Get("Allow"), ", ")
			if r.code != http.StatusNoContent || !sameSet(got, slices.DeleteFunc(slices.Clone(allowed), func(m string) bool { return m == "HEAD" })) {
				t.Errorf("OPTIONS %s%s: %d, Allow %q; want 204 and %v", prefix, path, r.code, got, allowed)
			}
			for _, method := range []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "TRACE", "CONNECTX", "FOO", "get", "post"} {
				if slices.Contains(allowed, method) {
					continue
				}
				before := f.store.writes.Load()
				r := f.send(t, method, prefix+path, strings.NewReader(`{"formFields":[]}`), hdr("Content-Type", "application/json"))
				if method == "HEAD" {
					if r.code != http.StatusMethodNotAllowed {
						t.Errorf("HEAD %s%s: %d, want 405", prefix, path, r.code)
					}
				} else {
					r.wantMessage(t, http.StatusMethodNotAllowed, "method not allowed")
				}
				if r.header.Get("Allow") == "" {
					t.Errorf("%s %s%s: 405 without Allow", method, prefix, path)
				}
				wantNoTokens(t, r.response())
				if n := f.store.writes.Load() - before; n != 0 {
					t.Errorf("%s %s%s: %d store writes", method, prefix, path, n)
				}
			}
		}
	}
}

func sameSet(a, b []string) bool {
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}

// ---- every endpoint that reads a JSON body ----

// garbageBody is a body that is not one JSON object, or is too large or
// too deep, whatever the endpoint looks for inside.
type garbageBody struct {
	name    string
	body    string
	header  http.Header // replaces the JSON Content-Type
	chunked bool
	code    int // 400 or 413
	// optional: an endpoint whose body may be empty and is ignored
	// (/user/email/verify/token) accepts it.
	optional bool
}

func garbageBodies() []garbageBody {
	bad := func(name, body string) garbageBody {
		return garbageBody{name: name, body: body, code: http.StatusBadRequest}
	}
	big := func(name, body string) garbageBody {
		return garbageBody{name: name, body: body, code: http.StatusRequestEntityTooLarge}
	}
	ignored := func(name, body string) garbageBody {
		return garbageBody{name: name, body: body, code: http.StatusBadRequest, optional: true}
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(`{"thirdPartyId":"authtest","token":"x"}`))
	zw.Close()
	tenMB := strings.Repeat("a1", 5<<20)
	return []garbageBody{
		ignored("empty body", ""),
		ignored("whitespace only", " \r\n\t "),
		ignored("top-level null", "null"),
		ignored("2000 nested objects in an unknown key", `{"x":`+strings.Repeat(`{"a":`, 2000)+"1"+strings.Repeat("}", 2000)+`}`),
		bad("not JSON", "thirdPartyId=authtest&token=x"),
		bad("truncated JSON", `{"thirdPartyId":"authtest","token":`),
		bad("top-level array", `[{}]`),
		bad("top-level string", `"{}"`),
		bad("top-level number", "42"),
		bad("top-level true", "true"),
		bad("object then object", `{}{}`),
		bad("object then word", `{} x`),
		bad("object then brace", `{}}`),
		bad("byte order mark", "\xef\xbb\xbf{}"),
		bad("raw NUL byte after the object", "{}\x00"),
		bad("raw control character in a string", "{\"token\":\"a\x01b\"}"),
		bad("invalid UTF-8", "{\"token\":\"\xff\xfe\"}"),
		{name: "gzip-encoded body", body: gz.String(), header: hdr("Content-Type", "application/json", "Content-Encoding", "gzip"), code: http.StatusBadRequest},
		bad("15000 open brackets", `{"x":`+strings.Repeat("[", 15000)),
		big("100000 brackets", `{"x":`+strings.Repeat("[", 100000)),
		big("10 MB value", `{"x":"`+tenMB+`"}`),
		{name: "10 MB value, chunked", body: `{"x":"` + tenMB + `"}`, chunked: true, code: http.StatusRequestEntityTooLarge},
	}
}

// jsonEndpoint is an endpoint that reads a JSON object, with what a
// request needs besides its body.
type jsonEndpoint struct {
	path    string
	header  func() http.Header
	ignores bool // the body may be empty and is ignored
	// options: the body may be empty and is ignored, and the answer is a
	// ceremony's options, stored (one write).
	options bool
	// device: the body may be empty and is ignored, and the answer is a
	// new TOTP device, stored (one write).
	device bool
}

// TestInputJSONGarbage sends every garbage body to every endpoint that
// reads a JSON object: 400 or 413 with a message (or, for the bodies an
// endpoint ignores, its usual answer), nothing written, mailed, or sent to
// the provider.
func TestInputJSONGarbage(t *testing.T) {
	f := newFullFixture(t, auth.Config{RateLimits: unlimited()})
	c, _ := f.SignedIn(authtest.Header)
	// An authenticator app is added only at a verified address; the
	// verification route wants one that is not.
	verified, _ := f.SignedInVerified(authtest.Header)
	rid := func(r string) func() http.Header {
		return func() http.Header { return hdr("Content-Type", "application/json", "rid", r) }
	}
	withSessionOf := func(c *authtest.Client, r string) func() http.Header {
		return func() http.Header {
			return hdr("Content-Type", "application/json", "rid", r, "Authorization", "Bearer "+c.AccessToken, "st-auth-mode", "header")
		}
	}
	withSession := func(r string) func() http.Header { return withSessionOf(c, r) }
	endpoints := []jsonEndpoint{
		{path: "/auth/signup", header: rid("emailpassword")},
		{path: "/auth/signin", header: rid("emailpassword")},
		{path: "/auth/user/password/reset/token", header: rid("emailpassword")},
		{path: "/auth/user/password/reset", header: rid("emailpassword")},
		{path: "/auth/user/password/change", header: withSession("emailpassword")},
		{path: "/auth/user/email/change", header: withSession("emailchange")},
		{path: "/auth/user/email/change/verify", header: rid("emailchange")},
		{path: "/auth/user/email/change/undo", header: rid("emailchange")},
		{path: "/auth/signinup", header: rid("thirdparty")},
		{path: "/auth/user/email/verify", header: rid("emailverification")},
		{path: "/auth/signinup/code", header: rid("passwordless")},
		{path: "/auth/signinup/code/resend", header: rid("passwordless")},
		{path: "/auth/signinup/code/consume", header: rid("passwordless")},
		{path: "/auth/user/email/verify/token", ignores: true, header: func() http.Header {
			return hdr("Content-Type", "application/json", "rid", "emailverification", "Authorization", "Bearer "+c.AccessToken, "st-auth-mode", "header")
		}},
		{path: "/auth/webauthn/options/register", header: rid("webauthn")},
		{path: "/auth/webauthn/options/signin", header: rid("webauthn"), options: true},
		{path: "/auth/webauthn/signup", header: rid("webauthn")},
		{path: "/auth/webauthn/signin", header: rid("webauthn")},
		{path: "/auth/user/webauthn/reset/token", header: rid("webauthn")},
		{path: "/auth/user/webauthn/reset", header: rid("webauthn")},
		{path: "/auth/webauthn/credential", header: withSession("webauthn")},
		{path: "/auth/webauthn/credential/remove", header: withSession("webauthn")},
		{path: "/auth/totp/device", header: withSessionOf(verified, "totp"), device: true},
		{path: "/auth/totp/device/remove", header: withSession("totp")},
		{path: "/auth/totp/device/verify", header: withSession("totp")},
		{path: "/auth/totp/verify", header: withSession("totp")},
		{path: "/auth/mfa/recovery-code/verify", header: withSession("multifactorauth")},
	}
	accepted, mails := 0, len(f.Mailbox.Messages())
	for _, ep := range endpoints {
		for _, tc := range garbageBodies() {
			t.Run(ep.path+"/"+tc.name, func(t *testing.T) {
				var body io.Reader = strings.NewReader(tc.body)
				if tc.chunked {
					body = chunked{body}
				}
				header := ep.header()
				for k, v := range tc.header {
					header[k] = v
				}
				before, exchanges := f.store.writes.Load(), len(f.idp.traffic.exchanged())
				r := f.send(t, "POST", ep.path, body, header)
				if ep.options && tc.optional {
					if r.code != http.StatusOK || r.status != "OK" || r.json["webauthnGeneratedOptionsId"] == nil {
						t.Errorf("got %d %s, want the body ignored and options made", r.code, r.body)
					}
					if n := f.store.writes.Load() - before; n != 1 {
						t.Errorf("%d store writes, want 1: the options", n)
					}
					wantNoTokens(t, r.response())
					return
				}
				if ep.device && tc.optional {
					if r.code != http.StatusOK || r.status != "OK" || r.json["secret"] == nil {
						t.Errorf("got %d %s, want the body ignored and a device made", r.code, r.body)
					}
					if n := f.store.writes.Load() - before; n != 1 {
						t.Errorf("%d store writes, want 1: the device", n)
					}
					wantNoTokens(t, r.response())
					return
				}
				if ep.ignores && tc.optional {
					if r.code != http.StatusOK || r.status != "OK" {
						t.Errorf("got %d %s, want the body ignored and a link sent", r.code, r.body)
					}
					// The link's code is written off the request path: wait
					// for its mail, so the write is not counted against the
					// next request.
					accepted++
					mails++
					f.Mailbox.WaitFor(t, mails, 5*time.Second)
					return
				}
				r.wantMessage(t, tc.code, "")
				wantNoTokens(t, r.response())
				if n := f.store.writes.Load() - before; n != 0 {
					t.Errorf("%d store writes", n)
				}
				if n := len(f.idp.traffic.exchanged()) - exchanges; n != 0 {
					t.Errorf("%d code exchanges at the provider", n)
				}
			})
		}
	}
	if got := f.drainMail(t); got != accepted {
		t.Errorf("%d emails, want %d: one for each body the send endpoint ignored, none for the others", got, accepted)
	}
}

// Bodies declared larger than the cap are refused before a byte of them
// is read, on every endpoint that reads a body; the dashboard's API
// refuses one without its key unread too, 401, and does not wait for it.
func TestInputOversizeBodiesRefusedUnread(t *testing.T) {
	f := newFullFixture(t, auth.Config{})
	for _, ep := range fullEndpoints {
		dash := strings.HasPrefix(ep.path, "/dashboard/")
		bodied := ep.method == "POST" || dash && ep.method == "PUT" // PUT /mfa/info reads none
		if !bodied || ep.path == "/session/refresh" || ep.path == "/signout" || ep.path == "/mfa/recovery-codes" || ep.path == "/user/delete" ||
			ep.path == "/tenant/switch" {
			continue // refresh, sign-out, new recovery codes, deleting the account and switching tenants read no body
		}
		for _, length := range []int{100 << 10, 1 << 40} {
			for _, key := range []bool{true, false} {
				if !key && !dash {
					continue
				}
				t.Run(fmt.Sprintf("%s %s/%d/key %t", ep.method, ep.path, length, key), func(t *testing.T) {
					head := fmt.Sprintf("%s /auth%s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n", ep.method, ep.path, length)
					want := http.StatusRequestEntityTooLarge
					switch {
					case dash && key:
						head += "Authorization: Bearer " + dashKey + "\r\n"
					case dash:
						want = http.StatusUnauthorized
					}
					wantRefusedUnread(t, f.rawRequest(t, head, `{"thirdPartyId":`), want)
				})
			}
		}
	}
}

// wantRefusedUnread checks a refusal of a body the server did not read:
// its status, and a message.
func wantRefusedUnread(t *testing.T, res *http.Response, want int) {
	t.Helper()
	if res.StatusCode != want {
		t.Errorf("got %d, want %d", res.StatusCode, want)
	}
	var m struct{ Message string }
	if err := json.NewDecoder(res.Body).Decode(&m); err != nil || m.Message == "" {
		t.Errorf("body: %v %+v, want a message", err, m)
	}
}

// Under a larger body cap, nesting deeper than the decoder goes is still
// a 400, on the endpoints of third-party sign-in and verification.
func TestInputDeepNestingUnderLargeCap(t *testing.T) {
	f := newFullFixture(t, auth.Config{MaxBodyBytes: 1 << 20, RateLimits: unlimited()})
	c, _ := f.SignedIn(authtest.Header)
	for name, body := range map[string]string{
		"100000 open brackets":  `{"x":` + strings.Repeat("[", 100000),
		"100000 nested arrays":  `{"x":` + strings.Repeat("[", 100000) + strings.Repeat("]", 100000) + "}",
		"50000 nested objects":  `{"x":` + strings.Repeat(`{"a":`, 50000) + "1" + strings.Repeat("}", 50000) + "}",
		"code 20000 deep":       `{"thirdPartyId":"authtest","redirectURIInfo":{"redirectURIQueryParams":{"code":` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `}}}`,
		"token 20000 deep":      `{"method":"token","token":` + strings.Repeat(`{"a":`, 20000) + "1" + strings.Repeat("}", 20000) + "}",
		"100000 unknown keys":   "{" + strings.Repeat(`"k":1,`, 100000) + `"token":"x"}`,
		"params 100000 entries": `{"thirdPartyId":"authtest","redirectURIInfo":{"redirectURIQueryParams":{` + strings.Repeat(`"c":"1",`, 100000) + `"code":""}}}`,
	} {
		t.Run(name, func(t *testing.T) {
			for _, path := range []string{"/auth/signinup", "/auth/user/email/verify", "/auth/user/email/verify/token"} {
				r := f.send(t, "POST", path, strings.NewReader(body), hdr("Content-Type", "application/json", "Authorization", "Bearer "+c.AccessToken))
				switch {
				case r.code == http.StatusBadRequest:
					r.wantMessage(t, http.StatusBadRequest, "")
				case r.code == http.StatusOK && slices.Contains([]string{"EMAIL_VERIFICATION_INVALID_TOKEN_ERROR", "OK"}, r.status) && path != "/auth/signinup":
				default:
					t.Errorf("%s: %d %s, want 400 or a refusal", path, r.code, r.body)
				}
				wantNoTokens(t, r.response())
			}
		})
	}
}

// ---- third-party sign-in ----

func TestInputAuthorisationURL(t *testing.T) {
	f := newFullFixture(t, auth.Config{})
	good := callbackPage(f.Server, authtest.ProviderID)
	q := func(kv ...string) string {
		v := url.Values{}
		for i := 0; i < len(kv); i += 2 {
			v.Add(kv[i], kv[i+1])
		}
		return "?" + v.Encode()
	}
	const (
		noID       = "Please provide the thirdPartyId as a GET param"
		noRedirect = "Please provide the redirectURIOnProviderDashboard as a GET param"
		tooLong    = "a parameter is too long"
	)
	long := strings.Repeat("a", 3000)
	for _, tc := range []struct {
		name, query string
		header      http.Header
		code        int
		msg         string
	}{
		{"plain", q("thirdPartyId", authtest.ProviderID, "redirectURIOnProviderDashboard", good), nil, 200, ""},
		{"the relay of apple", q("thirdPartyId", "apple", "redirectURIOnProviderDashboard", callbackPage(f.Server, "apple")), nil, 200, ""},
		{"clientType and unknown parameters", q("thirdPartyId", authtest.ProviderID, "redirectURIOnProviderDashboard", good, "clientType", "\x00web", "x", long), nil, 200, ""},
		{"100 KB of unknown parameter", q("thirdPartyId", authtest.ProviderID, "redirectURIOnProviderDashboard", good) + "&x=" + strings.Repeat("b", 100<<10), nil, 200, ""},
		{"hostile credentials", q("thirdPartyId", authtest.ProviderID, "redirectURIOnProviderDashboard", good),
			hdr("Authorization", "Bearer a.b.c", "Authorization", "Basic eDp5", "Cookie", "sAccessToken=%zz; sRefreshToken=x"), 200, ""},
		{"a JSON body, ignored", q("thirdPartyId", authtest.ProviderID, "redirectURIOnProviderDashboard", good), hdr("Content-Type", "application/json"), 200, ""},
		{"repeated thirdPartyId, the first counts", q("thirdPartyId", authtest.ProviderID, "thirdPartyId", "nope", "redirectURIOnProviderDashboard", good), nil, 200, ""},
		{"no query", "", nil, 400, noID},
		{"only the redirect URI", q("redirectURIOnProviderDashboard", good), nil, 400, noID},
		{"only the provider", q("thirdPartyId", authtest.ProviderID), nil, 400, noRedirect},
		{"empty values", q("thirdPartyId", "", "redirectURIOnProviderDashboard", ""), nil, 400, noID},
		{"parameter in another case", q("ThirdPartyId", authtest.ProviderID, "redirectURIOnProviderDashboard", good), nil, 400, noID},
		{"parameter with brackets", q("thirdPartyId[]", authtest.ProviderID, "redirectURIOnProviderDashboard", good), nil, 400, noID},
		{"broken percent-encoding", "?thirdPartyId=%zz" + authtest.ProviderID + "&redirectURIOnProviderDashboard=" + url.QueryEscape(good), nil, 400, noID},
		{"semicolon separator", "?thirdPartyId=" + authtest.ProviderID + ";x=1&redirectURIOnProviderDashboard=" + url.QueryEscape(good), nil, 400, noID},
		{"unknown provider", q("thirdPartyId", "nope", "redirectURIOnProviderDashboard", good), nil, 400, "the provider nope could not be found in the configuration"},
		{"provider in another case", q("thirdPartyId", strings.ToUpper(authtest.ProviderID), "redirectURIOnProviderDashboard", good), nil, 400, ""},
		{"provider with a path", q("thirdPartyId", "../"+authtest.ProviderID, "redirectURIOnProviderDashboard", good), nil, 400, ""},
		{"provider with a NUL byte", q("thirdPartyId", authtest.ProviderID+"\x00", "redirectURIOnProviderDashboard", good), nil, 400, ""},
		{"provider of invalid UTF-8", "?thirdPartyId=%ff%fe&redirectURIOnProviderDashboard=" + url.QueryEscape(good), nil, 400, ""},
		{"3000-byte provider", q("thirdPartyId", long, "redirectURIOnProviderDashboard", good), nil, 400, tooLong},
		{"3000-byte redirect URI", q("thirdPartyId", authtest.ProviderID, "redirectURIOnProviderDashboard", good+"/"+long), nil, 400, tooLong},
		{"redirect URI elsewhere", q("thirdPartyId", authtest.ProviderID, "redirectURIOnProviderDashboard", "https://evil.example/auth/callback/authtest"), nil, 400, ""},
		{"redirect URI of another provider", q("thirdPartyId", authtest.ProviderID, "redirectURIOnProviderDashboard", callbackPage(f.Server, "apple")), nil, 400, ""},
		{"the frontend page for apple", q("thirdPartyId", "apple", "redirectURIOnProviderDashboard", good), nil, 400, ""},
		{"redirect URI with CR LF", q("thirdPartyId", authtest.ProviderID, "redirectURIOnProviderDashboard", good+"\r\nSet-Cookie: x=1"), nil, 400, ""},
		{"redirect URI with a NUL byte", q("thirdPartyId", authtest.ProviderID, "redirectURIOnProviderDashboard", good+"\x00"), nil, 400, ""},
		{"redirect URI javascript:", q("thirdPartyId", authtest.ProviderID, "redirectURIOnProviderDashboard", "javascript:alert(1)//"+good), nil, 400, ""},
		{"redirect URI relative", q("thirdPartyId", authtest.ProviderID, "redirectURIOnProviderDashboard", "/auth/callback/authtest"), nil, 400, ""},
		{"redirect URI of invalid UTF-8", "?thirdPartyId=authtest&redirectURIOnProviderDashboard=" + url.QueryEscape(good) + "%ff", nil, 400, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, exchanges := f.store.writes.Load(), len(f.idp.traffic.exchanged())
			r := f.send(t, "GET", "/auth/authorisationurl"+tc.query, strings.NewReader(`{"thirdPartyId":"nope"}`), tc.header)
			if tc.code == http.StatusOK {
				u, _ := r.json["urlWithQueryParams"].(string)
				v, _ := r.json["pkceCodeVerifier"].(string)
				if r.code != http.StatusOK || r.status != "OK" || !strings.HasPrefix(u, f.idp.URL+"/authorize?") || v == "" {
					t.Errorf("got %d %s, want OK with the provider's URL and a verifier", r.code, r.body)
				}
			} else {
				r.wantMessage(t, tc.code, tc.msg)
			}
			wantNoTokens(t, r.response())
			if n := f.store.writes.Load() - before; n != 0 {
				t.Errorf("%d store writes", n)
			}
			if n := len(f.idp.traffic.exchanged()) - exchanges; n != 0 {
				t.Errorf("%d code exchanges", n)
			}
		})
	}
}

// signInUpCase is a /signinup body and its answer: 400 with msg ("" for
// any), or for 200 the exact body msg, when the made-up code gets as far
// as the provider (exchanges says whether it is sent there: not when it
// was presented before, or when the callback names another issuer).
type signInUpCase struct {
	name      string
	body      any
	code      int
	msg       string
	exchanges int
}

func TestInputSignInUp(t *testing.T) {
	f := newFullFixture(t, auth.Config{RateLimits: unlimited()})
	c := f.NewClient(authtest.Header)
	redirect := callbackPage(f.Server, authtest.ProviderID)
	_, v := issueVerifier(t, c, authtest.ProviderID, redirect)
	_, appleV := issueVerifier(t, c, "apple", callbackPage(f.Server, "apple"))
	n := 0
	good := func(edit func(b, info, params map[string]any)) map[string]any {
		n++
		params := map[string]any{"code": fmt.Sprintf("made-up-code-%d", n), "state": "sdk-state"}
		info := map[string]any{"redirectURIOnProviderDashboard": redirect, "redirectURIQueryParams": params, "pkceCodeVerifier": v}
		b := map[string]any{"thirdPartyId": authtest.ProviderID, "redirectURIInfo": info, "clientType": "web"}
		if edit != nil {
			edit(b, info, params)
		}
		return b
	}
	const (
		noID       = "Please provide the thirdPartyId in request body"
		noInfo     = "Please provide one of redirectURIInfo or oAuthTokens in the request body"
		noRedirect = "Please provide the redirectURIOnProviderDashboard in request body"
		notObject  = "the request body must be a JSON object"
		params     = "redirectURIQueryParams must be an object"
		noCode     = "redirectURIQueryParams.code must be a non-empty string"
		codeString = "redirectURIQueryParams.code must be a string"
		noVerifier = "Please provide the pkceCodeVerifier in request body"
		notIssued  = "the pkceCodeVerifier was not issued for this sign-in, or has expired"
		tooLong    = "a parameter is too long"
	)
	bad := func(name, msg string, edit func(b, info, params map[string]any)) signInUpCase {
		return signInUpCase{name, good(edit), http.StatusBadRequest, msg, 0}
	}
	reaches := func(name string, body any, exchanges int) signInUpCase {
		return signInUpCase{name, body, http.StatusOK, providerMessage, exchanges}
	}
	sdk := good(nil)
	long := strings.Repeat("x", 3000)
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	cases := []signInUpCase{
		bad("no thirdPartyId", noID, func(b, _, _ map[string]any) { delete(b, "thirdPartyId") }),
		bad("empty thirdPartyId", noID, func(b, _, _ map[string]any) { b["thirdPartyId"] = "" }),
		bad("null thirdPartyId", noID, func(b, _, _ map[string]any) { b["thirdPartyId"] = nil }),
		bad("thirdPartyId a number", notObject, func(b, _, _ map[string]any) { b["thirdPartyId"] = 7 }),
		bad("thirdPartyId an array", notObject, func(b, _, _ map[string]any) { b["thirdPartyId"] = []string{authtest.ProviderID} }),
		bad("thirdPartyId an object", notObject, func(b, _, _ map[string]any) { b["thirdPartyId"] = map[string]any{"id": authtest.ProviderID} }),
		bad("unknown provider", "the provider nope could not be found in the configuration", func(b, _, _ map[string]any) { b["thirdPartyId"] = "nope" }),
		bad("provider in another case", "", func(b, _, _ map[string]any) { b["thirdPartyId"] = strings.ToUpper(authtest.ProviderID) }),
		bad("provider with a NUL byte", "", func(b, _, _ map[string]any) { b["thirdPartyId"] = authtest.ProviderID + "\x00" }),
		bad("3000-byte provider", tooLong, func(b, _, _ map[string]any) { b["thirdPartyId"] = long }),
		bad("no redirectURIInfo", noInfo, func(b, _, _ map[string]any) { delete(b, "redirectURIInfo") }),
		bad("null redirectURIInfo", noInfo, func(b, _, _ map[string]any) { b["redirectURIInfo"] = nil }),
		bad("redirectURIInfo a string", notObject, func(b, _, _ map[string]any) { b["redirectURIInfo"] = "x" }),
		bad("redirectURIInfo an array", notObject, func(b, info, _ map[string]any) { b["redirectURIInfo"] = []any{info} }),
		bad("oAuthTokens", "oAuthTokens are not accepted: send redirectURIInfo", func(b, _, _ map[string]any) {
			b["oAuthTokens"] = map[string]any{"access_token": "x", "id_token": "y"}
		}),
		bad("oAuthTokens a string", "oAuthTokens are not accepted: send redirectURIInfo", func(b, _, _ map[string]any) { b["oAuthTokens"] = "x" }),
		bad("no redirect URI", noRedirect, func(_, info, _ map[string]any) { delete(info, "redirectURIOnProviderDashboard") }),
		bad("empty redirect URI", noRedirect, func(_, info, _ map[string]any) { info["redirectURIOnProviderDashboard"] = "" }),
		bad("redirect URI a number", notObject, func(_, info, _ map[string]any) { info["redirectURIOnProviderDashboard"] = 1 }),
		bad("redirect URI elsewhere", "", func(_, info, _ map[string]any) {
			info["redirectURIOnProviderDashboard"] = "https://evil.example/auth/callback/authtest"
		}),
		bad("3000-byte redirect URI", tooLong, func(_, info, _ map[string]any) { info["redirectURIOnProviderDashboard"] = redirect + "/" + long }),
		bad("redirect URI spelt otherwise", "", func(_, info, _ map[string]any) {
			// The verifier was issued for the redirect URI byte for
			// byte.
			info["redirectURIOnProviderDashboard"] = "HTTPS" + strings.TrimPrefix(redirect, "https")
		}),
		bad("no query parameters", params, func(_, info, _ map[string]any) { delete(info, "redirectURIQueryParams") }),
		bad("null query parameters", params, func(_, info, _ map[string]any) { info["redirectURIQueryParams"] = nil }),
		bad("query parameters a string", params, func(_, info, _ map[string]any) { info["redirectURIQueryParams"] = "code=1" }),
		bad("query parameters an array", params, func(_, info, p map[string]any) { info["redirectURIQueryParams"] = []any{p} }),
		bad("no code", noCode, func(_, _, p map[string]any) { delete(p, "code") }),
		bad("empty code", noCode, func(_, _, p map[string]any) { p["code"] = "" }),
		bad("null code", noCode, func(_, _, p map[string]any) { p["code"] = nil }),
		bad("code a number", codeString, func(_, _, p map[string]any) { p["code"] = 42 }),
		bad("code an array", codeString, func(_, _, p map[string]any) { p["code"] = []string{"c"} }),
		bad("code an object", codeString, func(_, _, p map[string]any) { p["code"] = map[string]any{} }),
		bad("code 1e99999", "", func(_, _, p map[string]any) { p["code"] = raw("1e99999") }),
		bad("iss a number", "redirectURIQueryParams.iss must be a string", func(_, _, p map[string]any) { p["iss"] = 1 }),
		bad("3000-byte code", tooLong, func(_, _, p map[string]any) { p["code"] = long }),
		bad("3000-byte iss", tooLong, func(_, _, p map[string]any) { p["iss"] = long }),
		bad("no verifier", noVerifier, func(_, info, _ map[string]any) { delete(info, "pkceCodeVerifier") }),
		bad("empty verifier", noVerifier, func(_, info, _ map[string]any) { info["pkceCodeVerifier"] = "" }),
		bad("verifier a number", notObject, func(_, info, _ map[string]any) { info["pkceCodeVerifier"] = 1 }),
		bad("verifier made up", notIssued, func(_, info, _ map[string]any) { info["pkceCodeVerifier"] = strings.Repeat("a", 64) }),
		bad("verifier of another provider", notIssued, func(_, info, _ map[string]any) { info["pkceCodeVerifier"] = appleV }),
		bad("verifier and a space", notIssued, func(_, info, _ map[string]any) { info["pkceCodeVerifier"] = v + " " }),
		bad("verifier twice", notIssued, func(_, info, _ map[string]any) { info["pkceCodeVerifier"] = v + v }),
		bad("verifier cut", notIssued, func(_, info, _ map[string]any) { info["pkceCodeVerifier"] = v[:len(v)-1] }),
		bad("verifier with padding", notIssued, func(_, info, _ map[string]any) { info["pkceCodeVerifier"] = v + "=" }),
		bad("verifier upper-cased", notIssued, func(_, info, _ map[string]any) { info["pkceCodeVerifier"] = strings.ToUpper(v) }),
		bad("verifier with a NUL byte", notIssued, func(_, info, _ map[string]any) { info["pkceCodeVerifier"] = v + "\x00" }),
		bad("3000-byte verifier", tooLong, func(_, info, _ map[string]any) { info["pkceCodeVerifier"] = v + long }),
		// Odd but well-formed: the made-up code gets as far as the
		// provider, which refuses it.
		reaches("the SDK's body", sdk, 1),
		reaches("unknown keys", good(func(b, info, p map[string]any) {
			// The linking flag false: true asks for the session's user
			// (TestLinkWithSession), and without a session is a 401.
			b["shouldTryLinkingWithSessionUser"], b["tenantId"], b["__proto__"] = false, "other", map[string]any{"admin": true}
			info["x"], p["user"] = []any{1, nil}, `{"name":{"firstName":"A"}}`
		}), 1),
		reaches("null oAuthTokens", good(func(b, _, _ map[string]any) { b["oAuthTokens"] = nil }), 1),
		reaches("iss of the provider", good(func(_, _, p map[string]any) { p["iss"] = f.idp.URL }), 1),
		reaches("iss of another issuer", good(func(_, _, p map[string]any) { p["iss"] = "https://evil.example" }), 0),
		reaches("a code presented before", sdk, 0),
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(tc.body)
			if err != nil {
				t.Fatal(err)
			}
			before, exchanges := f.store.writes.Load(), len(f.idp.traffic.exchanged())
			r := f.send(t, "POST", "/auth/signinup", bytes.NewReader(b), hdr("Content-Type", "application/json", "rid", "thirdparty"))
			if tc.code == http.StatusOK {
				if r.code != http.StatusOK || string(r.body) != tc.msg {
					t.Errorf("got %d %s, want 200 %s", r.code, r.body, tc.msg)
				}
			} else {
				r.wantMessage(t, tc.code, tc.msg)
			}
			if n := len(f.idp.traffic.exchanged()) - exchanges; n != tc.exchanges {
				t.Errorf("%d code exchanges at the provider, want %d", n, tc.exchanges)
			}
			wantNoTokens(t, r.response())
			if n := f.store.writes.Load() - before; n != 0 {
				t.Errorf("%d store writes", n)
			}
		})
	}
	// Each made-up code that reached the provider did so with the
	// verifier and redirect URI that were issued together.
	for _, ex := range f.idp.traffic.exchanged() {
		if ex.Get("code_verifier") != v || ex.Get("redirect_uri") != redirect {
			t.Errorf("the provider was asked to redeem %q with verifier %q and redirect URI %q", ex.Get("code"), ex.Get("code_verifier"), ex.Get("redirect_uri"))
		}
	}
	// Nothing was harmed: sign-in with the provider works.
	if res := f.NewClient(authtest.Header).SignInWithProvider(f.idp.Provider); res.Status != "OK" {
		t.Errorf("sign-in after the hostile requests: %d %s", res.StatusCode, res.Body)
	}
}

// A verifier changed in any one character is not the server's: refused
// before the provider is asked, whichever character and whatever it
// became.
func TestInputPKCEVerifierOneCharacterOff(t *testing.T) {
	f := newFullFixture(t, auth.Config{RateLimits: unlimited()})
	c := f.NewClient(authtest.Header)
	redirect := callbackPage(f.Server, authtest.ProviderID)
	_, v := issueVerifier(t, c, authtest.ProviderID, redirect)
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~"
	accepted := 0
	for i := range len(v) {
		for _, ch := range []byte(alphabet) {
			if ch == v[i] {
				continue
			}
			w := v[:i] + string(ch) + v[i+1:]
			body, _ := json.Marshal(sdkSignInUp(authtest.ProviderID, redirect, map[string]string{"code": "made-up"}, w))
			req := httptest.NewRequest("POST", "/auth/signinup", bytes.NewReader(body))
			rec := httptest.NewRecorder()
			f.Mux.ServeHTTP(rec, req)
			if rec.Code != http.StatusBadRequest {
				if accepted++; accepted <= 3 {
					t.Errorf("verifier %q, character %d changed to %q: %d %s, want 400", w, i, ch, rec.Code, rec.Body)
				}
			}
		}
	}
	if accepted > 0 {
		t.Errorf("%d verifiers one character off the issued %q were accepted", accepted, v)
	}
	if n := len(f.idp.traffic.exchanged()); n != 0 {
		t.Errorf("%d code exchanges with verifiers the server did not issue", n)
	}
}

// TestInputFormPostCallback posts hostile callbacks to the relay of a
// provider that posts its callback: it answers 303 to the frontend, or
// 400 or 413 with a message, and writes nothing and sets no cookie.
func TestInputFormPostCallback(t *testing.T) {
	f := newFullFixture(t, auth.Config{})
	app := f.AuthConfig.AppURL
	page := callbackPage(f.Server, "apple")
	state := relayState(page)
	stateOf := func(v any) string {
		b, _ := json.Marshal(v)
		return base64.StdEncoding.EncodeToString(b)
	}
	form := func(kv ...string) string {
		v := url.Values{}
		for i := 0; i < len(kv); i += 2 {
			v.Add(kv[i], kv[i+1])
		}
		return v.Encode()
	}
	formHdr := hdr("Content-Type", "application/x-www-form-urlencoded", "Origin", "https://appleid.apple.com", "Sec-Fetch-Site", "cross-site")
	bad := "the state of the callback is not one the frontend made"
	const foreign = "" // any message: what the relay says of a foreign page may change
	for _, tc := range []struct {
		name, body string
		header     http.Header
		chunked    bool
		code       int
		msg        string
	}{
		{"Apple's callback", form("code", "c1", "state", state, "user", `{"name":{"firstName":"A"}}`, "id_token", "an.id.token"), formHdr, false, 303, ""},
		{"state as URL-safe base64", form("code", "c1", "state", strings.TrimRight(base64.URLEncoding.EncodeToString([]byte(`{"frontendRedirectURI":"`+page+`"}`)), "=")), formHdr, false, 303, ""},
		{"an error instead of a code", form("error", "user_cancelled_authorize", "error_description", "\r\nx", "state", state), formHdr, false, 303, ""},
		{"repeated state, the first counts", form("code", "c", "state", state, "state", "garbage"), formHdr, false, 303, ""},
		{"no state", form("code", "c"), formHdr, false, 400, bad},
		{"empty state", form("code", "c", "state", ""), formHdr, false, 400, bad},
		{"state not base64", form("code", "c", "state", "%%%"), formHdr, false, 400, bad},
		{"state not JSON", form("code", "c", "state", base64.StdEncoding.EncodeToString([]byte("not json"))), formHdr, false, 400, bad},
		{"state a JSON array", form("code", "c", "state", stateOf([]string{page})), formHdr, false, 400, bad},
		{"state without frontendRedirectURI", form("code", "c", "state", stateOf(map[string]any{"x": page})), formHdr, false, 400, bad},
		{"frontendRedirectURI a number", form("code", "c", "state", stateOf(map[string]any{"frontendRedirectURI": 1})), formHdr, false, 400, bad},
		{"state 2000 deep", form("code", "c", "state", base64.StdEncoding.EncodeToString([]byte(strings.Repeat("[", 2000)+strings.Repeat("]", 2000)))), formHdr, false, 400, bad},
		{"state in the query only", form("code", "c"), formHdr, false, 400, bad},
		{"frontend elsewhere", form("code", "c", "state", relayState("https://evil.example/auth/callback/apple")), formHdr, false, 400, foreign},
		{"frontend with userinfo", form("code", "c", "state", relayState(strings.Replace(page, "https://", "https://evil.example@", 1))), formHdr, false, 400, foreign},
		{"frontend with a fragment", form("code", "c", "state", relayState(page+"#x")), formHdr, false, 400, foreign},
		{"frontend over http", form("code", "c", "state", relayState(strings.Replace(page, "https://", "http://", 1))), formHdr, false, 400, foreign},
		{"frontend javascript:", form("code", "c", "state", relayState("javascript:alert(1)//"+app)), formHdr, false, 400, foreign},
		{"frontend relative", form("code", "c", "state", relayState("/auth/callback/apple")), formHdr, false, 400, foreign},
		{"frontend with CR LF", form("code", "c", "state", relayState(page+"\r\nSet-Cookie: x=1")), formHdr, false, 400, ""},
		{"frontend on a sibling host", form("code", "c", "state", relayState(strings.Replace(page, "://", "://x.", 1))), formHdr, false, 400, foreign},
		{"a JSON body", `{"code":"c","state":"` + state + `"}`, hdr("Content-Type", "application/json"), false, 400, ""},
		{"a multipart body", "--b\r\nContent-Disposition: form-data; name=\"state\"\r\n\r\n" + state + "\r\n--b--\r\n", hdr("Content-Type", "multipart/form-data; boundary=b"), false, 400, ""},
		{"no Content-Type", form("code", "c", "state", state), nil, false, 400, ""},
		{"semicolon separators", "code=c;state=" + url.QueryEscape(state), formHdr, false, 400, ""},
		{"broken percent-encoding", "code=%zz&state=" + url.QueryEscape(state), formHdr, false, 400, ""},
		{"20 KB code", form("code", strings.Repeat("c", 20<<10), "state", state), formHdr, false, 413, ""},
		{"10 MB, chunked", form("code", strings.Repeat("c", 10<<20), "state", state), formHdr, true, 413, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var body io.Reader = strings.NewReader(tc.body)
			if tc.chunked {
				body = chunked{body}
			}
			path := "/auth/callback/apple"
			if tc.name == "state in the query only" {
				path += "?state=" + url.QueryEscape(state)
			}
			before := f.store.writes.Load()
			r := f.send(t, "POST", path, body, tc.header)
			if tc.code == http.StatusSeeOther {
				loc, err := url.Parse(r.header.Get("Location"))
				if r.code != http.StatusSeeOther || err != nil || loc.Scheme+"://"+loc.Host != app || loc.Query().Has("id_token") || len(r.body) != 0 {
					t.Errorf("got %d to %q, body %q; want 303 to the app without the id_token", r.code, r.header.Get("Location"), r.body)
				}
			} else {
				r.wantMessage(t, tc.code, tc.msg)
			}
			if sc := r.header.Values("Set-Cookie"); len(sc) != 0 {
				t.Errorf("Set-Cookie %q", sc)
			}
			wantNoTokens(t, r.response())
			if n := f.store.writes.Load() - before; n != 0 {
				t.Errorf("%d store writes", n)
			}
		})
	}
	if n := len(f.idp.traffic.exchanged()); n != 0 {
		t.Errorf("the relay made %d code exchanges", n)
	}
}

// ---- email verification ----

// TestInputVerification sends hostile requests to the three
// verification endpoints. None sends mail, verifies anything or uses up
// the token that was mailed, which works afterwards.
func TestInputVerification(t *testing.T) {
	f := newFullFixture(t, auth.Config{RateLimits: unlimited()})
	c, u := f.SignedIn(authtest.Header)
	tok := verificationToken(t, f.Server, c, 1)
	access, refresh := c.Tokens()
	verify := func(token string) string { return `{"method":"token","token":` + token + `}` }
	const (
		missing   = "Please provide the email verification token"
		notString = "The email verification token must be a string"
		invalid   = `{"status":"EMAIL_VERIFICATION_INVALID_TOKEN_ERROR"}`
	)
	jsonHdr := func(kv ...string) http.Header {
		return hdr(append([]string{"Content-Type", "application/json", "rid", "emailverification"}, kv...)...)
	}
	withSession := jsonHdr("Authorization", "Bearer "+access, "st-auth-mode", "header")
	type vcase struct {
		name, method, path, body string
		header                   http.Header
		code                     int
		want                     string // the message, or for 200 the whole body ("" for any)
	}
	cases := []vcase{
		// Sending a link needs a session; a hostile one is refused.
		{"send without a session", "POST", "/auth/user/email/verify/token", "{}", jsonHdr(), 401, "unauthorised"},
		{"send with the refresh token", "POST", "/auth/user/email/verify/token", "{}", jsonHdr("Authorization", "Bearer "+refresh), 401, ""},
		// Is-verified: a session, or 401; the query and the body are
		// ignored.
		{"status without a session", "GET", "/auth/user/email/verify", "", jsonHdr(), 401, "unauthorised"},
		{"status with the refresh token", "GET", "/auth/user/email/verify", "", jsonHdr("Authorization", "Bearer "+refresh), 401, ""},
		{"status with junk query and body", "GET", "/auth/user/email/verify?token=" + tok + "&x=%zz&" + strings.Repeat("y", 10<<10), "{", withSession, 200, `{"status":"OK","isVerified":false}`},
		// Verify: the token must be a string; any string but the
		// mailed one is invalid.
		{"no token", "POST", "/auth/user/email/verify", `{"method":"token"}`, jsonHdr(), 400, missing},
		{"null token", "POST", "/auth/user/email/verify", verify("null"), jsonHdr(), 400, missing},
		{"token in another case", "POST", "/auth/user/email/verify", `{"method":"token","Token":` + js(tok) + `}`, jsonHdr(), 400, missing},
		{"token a number", "POST", "/auth/user/email/verify", verify("42"), jsonHdr(), 400, notString},
		{"token true", "POST", "/auth/user/email/verify", verify("true"), jsonHdr(), 400, notString},
		{"token an array", "POST", "/auth/user/email/verify", verify("[" + js(tok) + "]"), jsonHdr(), 400, notString},
		{"token an object", "POST", "/auth/user/email/verify", verify(`{"token":` + js(tok) + `}`), jsonHdr(), 400, notString},
		{"token repeated, invalid last", "POST", "/auth/user/email/verify", verify(js(tok) + `,"token":1`), jsonHdr(), 400, notString},
		{"token in the query only", "POST", "/auth/user/email/verify?token=" + tok, `{"method":"token"}`, jsonHdr(), 400, missing},
		{"empty token", "POST", "/auth/user/email/verify", verify(`""`), jsonHdr(), 200, invalid},
		{"token with a NUL byte", "POST", "/auth/user/email/verify", verify(js(tok + "\x00")), jsonHdr(), 200, invalid},
		{"token with a space", "POST", "/auth/user/email/verify", verify(js(" " + tok)), jsonHdr(), 200, invalid},
		{"token cut", "POST", "/auth/user/email/verify", verify(js(tok[:len(tok)-1])), jsonHdr(), 200, invalid},
		{"token with padding", "POST", "/auth/user/email/verify", verify(js(tok + "=")), jsonHdr(), 200, invalid},
		{"token percent-encoded", "POST", "/auth/user/email/verify", verify(js(url.QueryEscape(tok + "+"))), jsonHdr(), 200, invalid},
		{"token in another case", "POST", "/auth/user/email/verify", verify(js(strings.ToUpper(tok))), jsonHdr(), 200, invalid},
		{"token with a character of standard base64", "POST", "/auth/user/email/verify", verify(js("+" + tok[1:])), jsonHdr(), 200, invalid},
		{"10 KB token", "POST", "/auth/user/email/verify", verify(js(strings.Repeat("A", 10<<10))), jsonHdr(), 200, invalid},
		{"forged token", "POST", "/auth/user/email/verify", verify(js(base64.RawURLEncoding.EncodeToString(make([]byte, 32)))), jsonHdr(), 200, invalid},
		{"a reset-shaped token with a session", "POST", "/auth/user/email/verify", verify(js(lhRandomToken())), withSession, 200, invalid},
		// A session that comes along must be good, before the token
		// is looked at.
		{"the token with a forged session", "POST", "/auth/user/email/verify", verify(js(tok)), jsonHdr("Authorization", "Bearer a.b.c"), 401, "try refresh token"},
		{"the token with the refresh token as session", "POST", "/auth/user/email/verify", verify(js(tok)), jsonHdr("Authorization", "Bearer "+refresh), 401, ""},
		{"the token with a garbage cookie", "POST", "/auth/user/email/verify", verify(js(tok)), jsonHdr("Cookie", "sAccessToken=%zz"), 401, "try refresh token"},
		{"the token as a form", "POST", "/auth/user/email/verify", "method=token&token=" + tok, hdr("Content-Type", "application/x-www-form-urlencoded"), 400, ""},
		{"the token and 20 KB", "POST", "/auth/user/email/verify", `{"x":"` + strings.Repeat("x", 20<<10) + `","token":` + js(tok) + `}`, jsonHdr(), 413, ""},
	}
	for _, hc := range hostileCredentials() {
		h := jsonHdr()
		for k, vs := range hc.header(access) {
			h[k] = vs
		}
		cases = append(cases, vcase{"hostile credentials on send: " + hc.name, "POST", "/auth/user/email/verify/token", "{}", h, 401, hc.access},
			vcase{"hostile credentials on status: " + hc.name, "GET", "/auth/user/email/verify", "", h, 401, hc.access})
		// Without any credential the link may be opened, in another
		// browser: only those with one go to the verify endpoint.
		if hc.access != "unauthorised" {
			cases = append(cases, vcase{"hostile credentials: " + hc.name, "POST", "/auth/user/email/verify", verify(js(tok)), h, 401, hc.access})
		}
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := f.store.writes.Load()
			r := f.send(t, tc.method, tc.path, strings.NewReader(tc.body), tc.header)
			if tc.code == http.StatusOK {
				if r.code != http.StatusOK || tc.want != "" && string(r.body) != tc.want {
					t.Errorf("got %d %s, want 200 %s", r.code, r.body, tc.want)
				}
			} else {
				r.wantMessage(t, tc.code, tc.want)
				wantNoTokens(t, r.response())
			}
			if n := f.store.writes.Load() - before; n != 0 {
				t.Errorf("%d store writes", n)
			}
		})
	}
	// The mailed token was not used up: the link works now, once.
	if lm, _ := f.Auth.UserByID(t.Context(), u.ID); lm.LoginMethods[0].EmailVerified {
		t.Fatal("the email was verified by a hostile request")
	}
	if res := f.NewClient(authtest.Header).VerifyEmail(tok); res.StatusCode != http.StatusOK || string(res.Body) != okBody {
		t.Errorf("the mailed link after the hostile requests: %d %s", res.StatusCode, res.Body)
	}
	if got := f.drainMail(t); got != 1 {
		t.Errorf("%d emails, want only the one link asked for", got)
	}
}

// ---- login methods ----

func TestInputLoginMethods(t *testing.T) {
	f := newFullFixture(t, auth.Config{})
	plain := f.send(t, "GET", "/auth/loginmethods", nil, nil)
	if plain.code != http.StatusOK || plain.status != "OK" {
		t.Fatalf("loginmethods: %d %s", plain.code, plain.body)
	}
	for _, tc := range []struct {
		name, path string
		header     http.Header
	}{
		{"public tenant", "/auth/public/loginmethods", nil},
		{"clientType", "/auth/loginmethods?clientType=web", nil},
		{"junk query", "/auth/loginmethods?clientType=%zz&tenantId=../../x&" + strings.Repeat("a", 10<<10), nil},
		{"hostile credentials", "/auth/loginmethods", hdr("Authorization", "Bearer a.b.c", "Authorization", "x", "Cookie", "sAccessToken=%zz")},
		{"a JSON body", "/auth/loginmethods", hdr("Content-Type", "application/json", "rid", "multitenancy")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := f.send(t, "GET", tc.path, strings.NewReader(`{"thirdParty":{"enabled":false}}`), tc.header)
			if r.code != http.StatusOK || !bytes.Equal(r.body, plain.body) {
				t.Errorf("got %d %s, want %s", r.code, r.body, plain.body)
			}
			wantNoTokens(t, r.response())
		})
	}
}

// ---- passwordless sign-in ----

const (
	plNeitherOrBoth = "Please provide exactly one of email or phoneNumber"
	plNotObject     = "the request body must be a JSON object"
	plNotBool       = "shouldTryLinkingWithSessionUser must be a boolean"
	plNoIDs         = "Please provide a deviceId and a preAuthSessionId"
	plNoPre         = "Please provide the preAuthSessionId"
	plOneOf         = "Please provide one of (linkCode) or (deviceId+userInputCode) and not both"
	plTooLong       = "a parameter is too long"
)

// plInput is a hostile request to a passwordless endpoint and its answer:
// a 4xx with msg (any message if ""), or a 200 with the body msg (a
// GENERAL_ERROR with any message if msg is "GENERAL_ERROR"; a started
// flow if "OK").
type plInput struct {
	name, body string
	code       int
	msg        string
}

func plJSON(kv ...any) string {
	m := map[string]any{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// plCheck checks an answer against what a plInput wants.
func plCheck(t *testing.T, r inReply, code int, msg string) {
	t.Helper()
	switch {
	case code != http.StatusOK:
		r.wantMessage(t, code, msg)
	case msg == "GENERAL_ERROR":
		if r.code != http.StatusOK || r.status != "GENERAL_ERROR" || r.message == "" {
			t.Errorf("got %d %s, want a GENERAL_ERROR with a message", r.code, r.body)
		}
	case msg == "OK":
		if r.code != http.StatusOK || r.status != "OK" || r.json["deviceId"] == nil {
			t.Errorf("got %d %s, want a flow started", r.code, r.body)
		}
	default:
		if r.code != http.StatusOK || string(r.body) != msg {
			t.Errorf("got %d %s, want 200 %s", r.code, r.body, msg)
		}
	}
	wantNoTokens(t, r.response())
}

// TestInputPasswordlessCreateCode sends hostile bodies to /signinup/code:
// a 400 or 413 with a message, or GENERAL_ERROR for an address that is
// none, writing and sending nothing; the odd but well-formed ones start a
// flow, and the message goes to the address normalised.
func TestInputPasswordlessCreateCode(t *testing.T) {
	f := newFullFixture(t, auth.Config{RateLimits: unlimited()})
	texts := f.AuthConfig.Passwordless.TextSender.(*plTexts)
	long := strings.Repeat("a", 300) + "@example.com"
	cases := []plInput{
		{"empty object", `{}`, 400, plNeitherOrBoth},
		{"null email", `{"email":null}`, 400, plNeitherOrBoth},
		{"null email and phone number", `{"email":null,"phoneNumber":null}`, 400, plNeitherOrBoth},
		{"email and phone number", plJSON("email", "a@example.com", "phoneNumber", "+14155550100"), 400, plNeitherOrBoth},
		{"email a number", `{"email":5}`, 400, plNotObject},
		{"email an array", `{"email":["a@example.com"]}`, 400, plNotObject},
		{"email an object", `{"email":{"address":"a@example.com"}}`, 400, plNotObject},
		{"email true", `{"email":true}`, 400, plNotObject},
		{"email repeated, a number last", `{"email":"a@example.com","email":1}`, 400, plNotObject},
		{"phone number a number", `{"phoneNumber":14155550100}`, 400, plNotObject},
		{"linking flag a string", plJSON("email", "a@example.com", "shouldTryLinkingWithSessionUser", "yes"), 400, plNotBool},
		{"linking flag a number", plJSON("email", "a@example.com", "shouldTryLinkingWithSessionUser", 1), 400, plNotBool},
		{"20 KB email", plJSON("email", strings.Repeat("a", 20<<10)+"@example.com"), 413, ""},
		{"empty email", `{"email":""}`, 200, "GENERAL_ERROR"},
		{"blank email", `{"email":" \t "}`, 200, "GENERAL_ERROR"},
		{"not an email", plJSON("email", "not an email"), 200, `{"status":"GENERAL_ERROR","message":"Email is invalid"}`},
		{"a name and an address", plJSON("email", "Ann <a@example.com>"), 200, `{"status":"GENERAL_ERROR","message":"Email is invalid"}`},
		{"two addresses", plJSON("email", "a@example.com,b@example.com"), 200, `{"status":"GENERAL_ERROR","message":"Email is invalid"}`},
		{"a header injected", plJSON("email", "a@example.com\r\nBcc: x@evil.example"), 200, `{"status":"GENERAL_ERROR","message":"Email is invalid"}`},
		{"a NUL byte", plJSON("email", "a@example.com\x00"), 200, `{"status":"GENERAL_ERROR","message":"Email is invalid"}`},
		{"a bidi override", plJSON("email", "a\u202e@example.com"), 200, `{"status":"GENERAL_ERROR","message":"Email is invalid"}`},
		{"300 bytes", plJSON("email", long), 200, `{"status":"GENERAL_ERROR","message":"Email is invalid"}`},
		{"empty phone number", plJSON("phoneNumber", ""), 200, `{"status":"GENERAL_ERROR","message":"Phone number is invalid"}`},
		{"phone number of letters", plJSON("phoneNumber", "+1 CALL NOW"), 200, `{"status":"GENERAL_ERROR","message":"Phone number is invalid"}`},
		{"phone number and a NUL", plJSON("phoneNumber", "+14155550100\x00"), 200, `{"status":"GENERAL_ERROR","message":"Phone number is invalid"}`},
		{"phone number of 40 digits", plJSON("phoneNumber", "+"+strings.Repeat("1", 40)), 200, `{"status":"GENERAL_ERROR","message":"Phone number is invalid"}`},
		{"phone number without a plus", plJSON("phoneNumber", "14155550100"), 200, `{"status":"GENERAL_ERROR","message":"Phone number is invalid"}`},
		// Odd but well-formed: a flow starts.
		{"the SDK's body", plJSON("email", "pl-sdk@example.com", "shouldTryLinkingWithSessionUser", false), 200, "OK"},
		{"upper case and spaces", plJSON("email", "  PL-Upper@Example.COM "), 200, "OK"},
		{"linking flag true", plJSON("email", "pl-flag@example.com", "shouldTryLinkingWithSessionUser", true), 200, "OK"},
		{"linking flag null", plJSON("email", "pl-null@example.com", "shouldTryLinkingWithSessionUser", nil), 200, "OK"},
		{"unknown keys", `{"email":"pl-keys@example.com","tenantId":"other","userContext":{"a":[1]},"__proto__":{"admin":true}}`, 200, "OK"},
		{"a phone number with spaces", plJSON("phoneNumber", "+44 20 7946 0958"), 200, "OK"},
	}
	started := map[string]bool{}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := f.store.writes.Load()
			r := f.send(t, "POST", "/auth/signinup/code", strings.NewReader(tc.body), hdr("Content-Type", "application/json", "rid", "passwordless"))
			plCheck(t, r, tc.code, tc.msg)
			n := f.store.writes.Load() - before
			if tc.msg == "OK" {
				started[tc.name] = true
				if n == 0 {
					t.Error("a flow started without a store write")
				}
			} else if n != 0 {
				t.Errorf("%d store writes", n)
			}
		})
	}
	if got := f.drainMail(t); got != 5 {
		t.Errorf("%d emails, want one for each flow started for an email address", got)
	}
	for _, m := range f.Mailbox.Messages() {
		if a := m.To.Address; a != strings.ToLower(a) || !strings.HasPrefix(a, "pl-") {
			t.Errorf("a message went to %q", a)
		}
	}
	if msgs := texts.all(); len(msgs) != 1 || msgs[0].To != "+442079460958" {
		t.Errorf("text messages %+v, want one to +442079460958", msgs)
	}
}

// plInputFlow starts a flow on f for a new address and returns it with
// the address, its code and its link code.
func plInputFlow(t *testing.T, f *fullFixture) (plFlow, string, string, string) {
	t.Helper()
	email := f.NewEmail()
	before := len(f.Mailbox.Messages())
	fl := plCreate(t, f.NewClient(authtest.Header), email)
	m := plMail(t, f.Server, email, before)
	u, _ := url.Parse(plLinkOf(t, m))
	return fl, email, plCodeOf(t, m), u.Fragment
}

// plStillWhole checks that a flow is as new: a wrong code is its
// counted+1st failure, and its code signs in.
func plStillWhole(t *testing.T, f *fullFixture, fl plFlow, code string, counted int) {
	t.Helper()
	c := f.NewClient(authtest.Header)
	if res := plConsume(c, fl, plOther(code)); string(res.Body) != plWrong(counted+1) {
		t.Errorf("a wrong code afterwards: %s, want %s", res.Body, plWrong(counted+1))
	}
	if res := plConsume(c, fl, code); res.Status != "OK" {
		t.Errorf("the flow's code afterwards: %d %s, want OK", res.StatusCode, res.Body)
	}
}

// TestInputPasswordlessConsume sends hostile bodies to
// /signinup/code/consume, each against a flow of its own: a 400 with a
// message, or the protocol's answer. Ids that are not the server's, or do
// not belong together, name no flow (RESTART_FLOW_ERROR) and count
// nothing; a typed code that is not the flow's is a wrong code, counted;
// a link code that is not the flow's counts nothing. Afterwards the flow
// has exactly the failures counted, and its code signs in.
func TestInputPasswordlessConsume(t *testing.T) {
	f := newFullFixture(t, auth.Config{RateLimits: unlimited()})
	other, _, _, otherLink := plInputFlow(t, f)
	type ccase struct {
		name    string
		body    func(fl plFlow, code, link string) string
		code    int
		msg     string
		counted int
	}
	long := strings.Repeat("7", 3000)
	typed := func(pre, device, code any) string {
		return plJSON("preAuthSessionId", pre, "deviceId", device, "userInputCode", code)
	}
	byLink := func(pre, link any) string { return plJSON("preAuthSessionId", pre, "linkCode", link) }
	unpadded := func(s string) string { return strings.TrimRight(s, "=") }
	short := base64.StdEncoding.EncodeToString(make([]byte, 31))
	cases := []ccase{
		{"empty object", func(plFlow, string, string) string { return `{}` }, 400, plNoPre, 0},
		{"preAuthSessionId alone", func(fl plFlow, _, _ string) string { return plJSON("preAuthSessionId", fl.pre) }, 400, plOneOf, 0},
		{"without the code", func(fl plFlow, _, _ string) string { return plJSON("preAuthSessionId", fl.pre, "deviceId", fl.device) }, 400, plOneOf, 0},
		{"without the device", func(fl plFlow, c, _ string) string { return plJSON("preAuthSessionId", fl.pre, "userInputCode", c) }, 400, plOneOf, 0},
		{"code and link", func(fl plFlow, c, l string) string {
			return plJSON("preAuthSessionId", fl.pre, "deviceId", fl.device, "userInputCode", c, "linkCode", l)
		}, 400, plOneOf, 0},
		{"typed code and link", func(fl plFlow, c, l string) string {
			return plJSON("preAuthSessionId", fl.pre, "userInputCode", c, "linkCode", l)
		}, 400, plOneOf, 0},
		{"null link code", func(fl plFlow, _, _ string) string { return byLink(fl.pre, nil) }, 400, plOneOf, 0},
		{"null preAuthSessionId", func(fl plFlow, c, _ string) string { return typed(nil, fl.device, c) }, 400, plNoPre, 0},
		{"preAuthSessionId a number", func(fl plFlow, c, _ string) string { return typed(1, fl.device, c) }, 400, plNotObject, 0},
		{"code a number", func(fl plFlow, c, _ string) string {
			return `{"preAuthSessionId":"` + fl.pre + `","deviceId":"` + fl.device + `","userInputCode":` + c + `}`
		}, 400, plNotObject, 0},
		{"device an array", func(fl plFlow, c, _ string) string { return typed(fl.pre, []string{fl.device}, c) }, 400, plNotObject, 0},
		{"link code an object", func(fl plFlow, _, l string) string { return byLink(fl.pre, map[string]string{"l": l}) }, 400, plNotObject, 0},
		{"linking flag a string", func(fl plFlow, _, l string) string {
			return plJSON("preAuthSessionId", fl.pre, "linkCode", l, "shouldTryLinkingWithSessionUser", "x")
		}, 400, plNotBool, 0},
		{"3000-digit code", func(fl plFlow, _, _ string) string { return typed(fl.pre, fl.device, long) }, 400, plTooLong, 0},
		{"3000-byte link code", func(fl plFlow, _, _ string) string { return byLink(fl.pre, long) }, 400, plTooLong, 0},
		// Ids that name no flow of this server.
		{"preAuthSessionId made up", func(fl plFlow, c, _ string) string { return typed("x", fl.device, c) }, 200, plRestart, 0},
		{"preAuthSessionId empty", func(fl plFlow, c, _ string) string { return typed("", fl.device, c) }, 200, plRestart, 0},
		{"preAuthSessionId padded", func(fl plFlow, c, _ string) string { return typed(fl.pre+"=", fl.device, c) }, 200, plRestart, 0},
		{"preAuthSessionId and a NUL", func(fl plFlow, c, _ string) string { return typed(fl.pre+"\x00", fl.device, c) }, 200, plRestart, 0},
		{"preAuthSessionId upper-cased", func(fl plFlow, c, _ string) string { return typed(strings.ToUpper(fl.pre), fl.device, c) }, 200, plRestart, 0},
		{"preAuthSessionId 3000 bytes", func(fl plFlow, c, _ string) string { return typed(long, fl.device, c) }, 200, plRestart, 0},
		{"device empty", func(fl plFlow, c, _ string) string { return typed(fl.pre, "", c) }, 200, plRestart, 0},
		{"device unpadded", func(fl plFlow, c, _ string) string { return typed(fl.pre, unpadded(fl.device), c) }, 200, plRestart, 0},
		{"device not base64", func(fl plFlow, c, _ string) string { return typed(fl.pre, "!!!!", c) }, 200, plRestart, 0},
		{"device of 31 bytes", func(fl plFlow, c, _ string) string { return typed(fl.pre, short, c) }, 200, plRestart, 0},
		{"device of another flow", func(fl plFlow, c, _ string) string { return typed(fl.pre, other.device, c) }, 200, plRestart, 0},
		{"device and preAuthSessionId of another flow", func(_ plFlow, c, _ string) string { return typed(other.pre, other.device, c) }, 200, "", 0},
		{"device 3000 bytes", func(fl plFlow, c, _ string) string { return typed(fl.pre, long, c) }, 200, plRestart, 0},
		// Link codes that are not the flow's: refused, not counted.
		{"link code empty", func(fl plFlow, _, _ string) string { return byLink(fl.pre, "") }, 200, plRestart, 0},
		{"link code made up", func(fl plFlow, _, _ string) string { return byLink(fl.pre, lhRandomToken()) }, 200, plRestart, 0},
		{"link code of another flow", func(fl plFlow, _, _ string) string { return byLink(fl.pre, otherLink) }, 200, plRestart, 0},
		{"link code under another flow's id", func(_ plFlow, _, l string) string { return byLink(other.pre, l) }, 200, plRestart, 0},
		{"the typed code as link code", func(fl plFlow, c, _ string) string { return byLink(fl.pre, c) }, 200, plRestart, 0},
		{"link code cut", func(fl plFlow, _, l string) string { return byLink(fl.pre, l[:len(l)-1]) }, 200, plRestart, 0},
		{"link code padded", func(fl plFlow, _, l string) string { return byLink(fl.pre, l+"=") }, 200, plRestart, 0},
		{"link code preAuthSessionId empty", func(_ plFlow, _, l string) string { return byLink("", l) }, 200, plRestart, 0},
		// Typed codes that are not the flow's: wrong, counted.
		{"code empty", func(fl plFlow, _, _ string) string { return typed(fl.pre, fl.device, "") }, 200, plWrong(1), 1},
		{"code of five digits", func(fl plFlow, c, _ string) string { return typed(fl.pre, fl.device, c[:5]) }, 200, plWrong(1), 1},
		{"code and a NUL", func(fl plFlow, c, _ string) string { return typed(fl.pre, fl.device, c+"\x00") }, 200, plWrong(1), 1},
		{"code in full-width digits", func(fl plFlow, c, _ string) string {
			return typed(fl.pre, fl.device, strings.Map(func(r rune) rune { return r - '0' + '０' }, c))
		}, 200, plWrong(1), 1},
		{"the link code typed", func(fl plFlow, _, l string) string { return typed(fl.pre, fl.device, l) }, 200, plWrong(1), 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fl, _, code, link := plInputFlow(t, f)
			before := f.store.writes.Load()
			r := f.send(t, "POST", "/auth/signinup/code/consume", strings.NewReader(tc.body(fl, code, link)),
				hdr("Content-Type", "application/json", "rid", "passwordless"))
			if tc.msg == "" {
				// The other flow's own ids with this flow's code: a wrong
				// code there, counted there.
				if r.status != "INCORRECT_USER_INPUT_CODE_ERROR" {
					t.Errorf("got %d %s, want a wrong code of the other flow", r.code, r.body)
				}
				wantNoTokens(t, r.response())
			} else {
				plCheck(t, r, tc.code, tc.msg)
			}
			if n := f.store.writes.Load() - before; n != int64(tc.counted) && tc.msg != "" {
				t.Errorf("%d store writes, want %d", n, tc.counted)
			}
			plStillWhole(t, f, fl, code, tc.counted)
		})
	}
	// Odd but well-formed bodies sign in.
	for name, body := range map[string]func(fl plFlow, code, link string) string{
		"unknown keys and the linking flag": func(fl plFlow, c, _ string) string {
			return plJSON("preAuthSessionId", fl.pre, "deviceId", fl.device, "userInputCode", c,
				"shouldTryLinkingWithSessionUser", false, "tenantId", "other", "userContext", map[string]any{"x": 1})
		},
		"the code between spaces": func(fl plFlow, c, _ string) string { return typed(fl.pre, fl.device, "  "+c+"\t") },
		"the link, linking flag null": func(fl plFlow, _, l string) string {
			return plJSON("preAuthSessionId", fl.pre, "linkCode", l, "shouldTryLinkingWithSessionUser", nil)
		},
	} {
		t.Run(name, func(t *testing.T) {
			fl, email, code, link := plInputFlow(t, f)
			r := f.send(t, "POST", "/auth/signinup/code/consume", strings.NewReader(body(fl, code, link)),
				hdr("Content-Type", "application/json", "rid", "passwordless", "st-auth-mode", "header"))
			plWantUser(t, r.response(), email, true)
		})
	}
}

// TestInputPasswordlessResend sends hostile bodies to
// /signinup/code/resend: a 400 with a message, or RESTART_FLOW_ERROR for
// ids that name no flow; nothing is sent or written, and the flow is
// whole afterwards.
func TestInputPasswordlessResend(t *testing.T) {
	f := newFullFixture(t, auth.Config{RateLimits: unlimited()})
	other, _, _, _ := plInputFlow(t, f)
	resend := func(device, pre any) string { return plJSON("deviceId", device, "preAuthSessionId", pre) }
	cases := []struct {
		name string
		body func(fl plFlow) string
		code int
		msg  string
	}{
		{"empty object", func(plFlow) string { return `{}` }, 400, plNoIDs},
		{"device alone", func(fl plFlow) string { return plJSON("deviceId", fl.device) }, 400, plNoIDs},
		{"preAuthSessionId alone", func(fl plFlow) string { return plJSON("preAuthSessionId", fl.pre) }, 400, plNoIDs},
		{"null device", func(fl plFlow) string { return resend(nil, fl.pre) }, 400, plNoIDs},
		{"device a number", func(fl plFlow) string { return resend(7, fl.pre) }, 400, plNotObject},
		{"preAuthSessionId an array", func(fl plFlow) string { return resend(fl.device, []string{fl.pre}) }, 400, plNotObject},
		{"linking flag a string", func(fl plFlow) string {
			return plJSON("deviceId", fl.device, "preAuthSessionId", fl.pre, "shouldTryLinkingWithSessionUser", "x")
		}, 400, plNotBool},
		{"device empty", func(fl plFlow) string { return resend("", fl.pre) }, 200, plRestart},
		{"device unpadded", func(fl plFlow) string { return resend(strings.TrimRight(fl.device, "="), fl.pre) }, 200, plRestart},
		{"device of another flow", func(fl plFlow) string { return resend(other.device, fl.pre) }, 200, plRestart},
		{"device 3000 bytes", func(fl plFlow) string { return resend(strings.Repeat("A", 3000), fl.pre) }, 200, plRestart},
		{"preAuthSessionId made up", func(fl plFlow) string { return resend(fl.device, "x") }, 200, plRestart},
		{"preAuthSessionId of another flow", func(fl plFlow) string { return resend(fl.device, other.pre) }, 200, plRestart},
		{"preAuthSessionId 3000 bytes", func(fl plFlow) string { return resend(fl.device, strings.Repeat("A", 3000)) }, 200, plRestart},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fl, _, code, _ := plInputFlow(t, f)
			before, mails := f.store.writes.Load(), len(f.Mailbox.Messages())
			r := f.send(t, "POST", "/auth/signinup/code/resend", strings.NewReader(tc.body(fl)),
				hdr("Content-Type", "application/json", "rid", "passwordless"))
			plCheck(t, r, tc.code, tc.msg)
			if n := f.store.writes.Load() - before; n != 0 {
				t.Errorf("%d store writes", n)
			}
			plStillWhole(t, f, fl, code, 0)
			if n := len(f.Mailbox.Messages()) - mails; n != 0 {
				t.Errorf("%d messages sent", n)
			}
		})
	}
}

// TestInputPasswordlessExists sends hostile queries to the three exists
// endpoints: a 400 with a message when the parameter is missing or
// repeated, and otherwise exists false, for an address that is none, and
// nothing looked up that a text column would refuse.
func TestInputPasswordlessExists(t *testing.T) {
	f := newFullFixture(t, auth.Config{RateLimits: unlimited()})
	for _, tc := range []struct {
		name, path string
		code       int
		msg        string
	}{
		{"email: no query", "/auth/passwordless/email/exists", 400, "Please provide the email as a GET param"},
		{"email: repeated", "/auth/passwordless/email/exists?email=a%40example.com&email=b%40example.com", 400, "Please provide the email as a GET param"},
		{"email: in another case", "/auth/passwordless/email/exists?Email=a%40example.com", 400, "Please provide the email as a GET param"},
		{"email: empty", "/auth/passwordless/email/exists?email=", 200, `{"status":"OK","exists":false}`},
		{"email: not one", "/auth/passwordless/email/exists?email=nobody", 200, `{"status":"OK","exists":false}`},
		{"email: a NUL byte", "/auth/passwordless/email/exists?email=a%40example.com%00", 200, `{"status":"OK","exists":false}`},
		{"email: invalid UTF-8", "/auth/passwordless/email/exists?email=%ff%40example.com", 200, `{"status":"OK","exists":false}`},
		{"email: broken percent-encoding", "/auth/passwordless/email/exists?email=%zz", 400, "Please provide the email as a GET param"},
		{"email: 4 KB", "/auth/passwordless/email/exists?email=" + strings.Repeat("a", 4<<10) + "%40example.com", 200, `{"status":"OK","exists":false}`},
		{"phone: no query", "/auth/passwordless/phonenumber/exists", 400, "Please provide the phoneNumber as a GET param"},
		{"phone: repeated", "/auth/passwordless/phonenumber/exists?phoneNumber=%2B1&phoneNumber=%2B2", 400, "Please provide the phoneNumber as a GET param"},
		{"phone: letters", "/auth/passwordless/phonenumber/exists?phoneNumber=call+me", 200, `{"status":"OK","exists":false}`},
		{"phone: a NUL byte", "/auth/passwordless/phonenumber/exists?phoneNumber=%2B14155550100%00", 200, `{"status":"OK","exists":false}`},
		{"phone: unknown", "/auth/passwordless/phonenumber/exists?phoneNumber=%2B14155550100", 200, `{"status":"OK","exists":false}`},
		{"old phone path: no query", "/auth/signup/phonenumber/exists", 400, "Please provide the phoneNumber as a GET param"},
		{"old phone path: invalid UTF-8", "/auth/signup/phonenumber/exists?phoneNumber=%2B1%ff", 200, `{"status":"OK","exists":false}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := f.store.writes.Load()
			r := f.send(t, "GET", tc.path, nil, hdr("rid", "passwordless"))
			plCheck(t, r, tc.code, tc.msg)
			if n := f.store.writes.Load() - before; n != 0 {
				t.Errorf("%d store writes", n)
			}
		})
	}
}

// A server that signs in by code alone refuses a link code, one that
// signs in by link alone a typed code, and one without a TextSender a
// phone number: 400s with a message, nothing written.
func TestInputPasswordlessWrongKind(t *testing.T) {
	for _, tc := range []struct {
		flow       passwordless.Flow
		path, body string
		msg        string
	}{
		{passwordless.Code, "/auth/signinup/code/consume", byLinkBody, "this server signs in by code only: send the deviceId and userInputCode"},
		{passwordless.Link, "/auth/signinup/code/consume", byCodeBody, "this server signs in by link only: send the linkCode"},
		{passwordless.CodeAndLink, "/auth/signinup/code", `{"phoneNumber":"+14155550100"}`, "this server signs in by email only: send email, not phoneNumber"},
	} {
		t.Run(string(tc.flow)+tc.path, func(t *testing.T) {
			f := newInFixture(t, auth.Config{Passwordless: passwordless.Config{Flow: tc.flow}})
			r := f.send(t, "POST", tc.path, strings.NewReader(tc.body), hdr("Content-Type", "application/json", "rid", "passwordless"))
			r.wantMessage(t, http.StatusBadRequest, tc.msg)
			wantNoTokens(t, r.response())
			if n := f.store.writes.Load(); n != 0 {
				t.Errorf("%d store writes", n)
			}
		})
	}
}

// Bodies of the two ways to consume, with well-formed ids of no flow.
var (
	byLinkBody = `{"preAuthSessionId":"` + strings.Repeat("A", 43) + `","linkCode":"` + strings.Repeat("B", 43) + `"}`
	byCodeBody = `{"preAuthSessionId":"` + strings.Repeat("A", 43) + `","deviceId":"` + base64.StdEncoding.EncodeToString(make([]byte, 32)) + `","userInputCode":"123456"}`
)

// ---- passkeys ----

// pkInput is a hostile request to a passkey endpoint and its answer: a
// 4xx with msg (any message if ""), or a 200 with the body msg ("OK" for
// options made, which are written).
type pkInput struct {
	name, body string
	code       int
	msg        string
}

// pkInputCheck checks an answer against what a pkInput wants, and the
// store writes it made: one for options made, none otherwise.
func pkInputCheck(t *testing.T, f *fullFixture, r inReply, before int64, code int, msg string) {
	t.Helper()
	writes := f.store.writes.Load() - before
	switch {
	case code != http.StatusOK:
		r.wantMessage(t, code, msg)
	case msg == "OK":
		if r.code != http.StatusOK || r.status != "OK" || r.json["webauthnGeneratedOptionsId"] == nil {
			t.Errorf("got %d %s, want options", r.code, r.body)
		}
		writes--
	default:
		if r.code != http.StatusOK || string(r.body) != msg {
			t.Errorf("got %d %s, want 200 %s", r.code, r.body, msg)
		}
	}
	if writes != 0 {
		t.Errorf("%d store writes besides any options", writes)
	}
	wantNoTokens(t, r.response())
}

const (
	pkNeitherOrBoth = "Please provide the email or the recoverAccountToken"
	pkInvalidEmail  = `{"status":"INVALID_EMAIL_ERROR","err":"Email is invalid"}`
	pkTokenInvalid  = `{"status":"RECOVER_ACCOUNT_TOKEN_INVALID_ERROR"}`
	pkNoCeremony    = "Please provide the webauthnGeneratedOptionsId and the credential"
)

// TestInputPasskeyRegisterOptions sends hostile bodies to
// /webauthn/options/register: a 400 or 413 with a message, or the
// protocol's refusal, writing nothing; the odd but well-formed ones get
// options, for the address normalised.
func TestInputPasskeyRegisterOptions(t *testing.T) {
	f := newFullFixture(t, auth.Config{RateLimits: unlimited()})
	long := strings.Repeat("a", 300) + "@example.com"
	token := lhRandomToken()
	for _, tc := range []pkInput{
		{"empty object", `{}`, 400, pkNeitherOrBoth},
		{"null email", `{"email":null}`, 400, pkNeitherOrBoth},
		{"email and token", plJSON("email", "a@example.com", "recoverAccountToken", token), 400, pkNeitherOrBoth},
		{"null email and token", `{"email":null,"recoverAccountToken":null}`, 400, pkNeitherOrBoth},
		{"email a number", `{"email":5}`, 400, plNotObject},
		{"email an array", `{"email":["a@example.com"]}`, 400, plNotObject},
		{"email an object", `{"email":{"address":"a@example.com"}}`, 400, plNotObject},
		{"token a number", `{"recoverAccountToken":5}`, 400, plNotObject},
		{"20 KB email", plJSON("email", strings.Repeat("a", 20<<10)+"@example.com"), 413, ""},
		{"empty email", `{"email":""}`, 200, `{"status":"INVALID_EMAIL_ERROR","err":"Field is not optional"}`},
		{"not an email", plJSON("email", "not an email"), 200, pkInvalidEmail},
		{"a name and an address", plJSON("email", "Ann <a@example.com>"), 200, pkInvalidEmail},
		{"a header injected", plJSON("email", "a@example.com\r\nBcc: x@evil.example"), 200, pkInvalidEmail},
		{"a NUL byte", plJSON("email", "a@example.com\x00"), 200, pkInvalidEmail},
		{"a bidi override", plJSON("email", "a\u202e@example.com"), 200, pkInvalidEmail},
		{"300 bytes", plJSON("email", long), 200, pkInvalidEmail},
		{"empty token", `{"recoverAccountToken":""}`, 200, pkTokenInvalid},
		{"a token nobody issued", plJSON("recoverAccountToken", token), 200, pkTokenInvalid},
		{"a token with a NUL byte", plJSON("recoverAccountToken", token+"\x00"), 200, pkTokenInvalid},
		{"a 3000-byte token", plJSON("recoverAccountToken", strings.Repeat("A", 3000)), 200, pkTokenInvalid},
		// Odd but well-formed: options.
		{"the SDK's body", plJSON("email", "pk-sdk@example.com"), 200, "OK"},
		{"upper case and spaces", plJSON("email", "  PK-Upper@Example.COM "), 200, "OK"},
		{"a display name, ignored", plJSON("email", "pk-name@example.com", "displayName", 5), 200, "OK"},
		{"unknown keys", `{"email":"pk-keys@example.com","tenantId":"other","userContext":{"a":[1]},"__proto__":{"admin":true}}`, 200, "OK"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := f.store.writes.Load()
			r := f.send(t, "POST", "/auth/webauthn/options/register", strings.NewReader(tc.body), hdr("Content-Type", "application/json", "rid", "webauthn"))
			pkInputCheck(t, f, r, before, tc.code, tc.msg)
			if tc.msg == "OK" {
				user, _ := r.json["user"].(map[string]any)
				if name, _ := user["name"].(string); name != strings.ToLower(name) || strings.TrimSpace(name) != name || !strings.HasPrefix(name, "pk-") {
					t.Errorf("options for user.name %q, want the address normalised", name)
				}
			}
		})
	}
}

// TestInputPasskeyCeremonies sends hostile option ids, recipe user ids
// and tokens to the endpoints that finish a ceremony, with a credential
// that is well-formed but answers no options of the server: the
// protocol's refusal, writing nothing.
func TestInputPasskeyCeremonies(t *testing.T) {
	f := newFullFixture(t, auth.Config{RateLimits: unlimited()})
	c, u := f.SignedInVerified(authtest.Header)
	a := f.NewAuthenticator()
	reg := pkRegisterOptions(t, f.NewClient(authtest.Header), "pk-ceremonies@example.com")
	regCred := pkRegister(t, a, reg)
	si := pkSignInOptions(t, f.NewClient(authtest.Header))
	other := pkServer(t, auth.Config{})
	_, stranger, _ := pkSignUp(t, other, authtest.Header, "pk-stranger@example.com")
	assertion := pkAssert(t, stranger, si)
	body := func(path, id string, extra ...any) string {
		m := map[string]any{"webauthnGeneratedOptionsId": id}
		if path == "/webauthn/signin" {
			m["credential"] = json.RawMessage(assertion)
		} else {
			m["credential"] = json.RawMessage(regCred)
		}
		for i := 0; i < len(extra); i += 2 {
			m[extra[i].(string)] = extra[i+1]
		}
		b, _ := json.Marshal(m)
		return string(b)
	}
	ids := map[string]string{
		"empty":                 "",
		"a NUL byte":            reg.id + "\x00",
		"3000 bytes":            strings.Repeat("a", 3000),
		"a made-up UUID":        "00000000-0000-0000-0000-000000000000",
		"another case":          strings.ToUpper(reg.id),
		"with spaces":           " " + reg.id + " ",
		"a bidi override":       "\u202e" + reg.id,
		"a lone surrogate":      "\\udc00",
		"the sign-in options'":  si.id,
		"the register options'": reg.id,
	}
	tok := lhRandomToken()
	for name, id := range ids {
		for _, tc := range []struct {
			path, body, want string
		}{
			{"/webauthn/signin", body("/webauthn/signin", id), `{"status":"INVALID_CREDENTIALS_ERROR"}`},
			{"/webauthn/signup", body("/webauthn/signup", id), `{"status":"OPTIONS_NOT_FOUND_ERROR"}`},
			{"/user/webauthn/reset", body("/user/webauthn/reset", id, "token", tok), pkTokenInvalid},
			{"/webauthn/credential", body("/webauthn/credential", id, "recipeUserId", u.ID), `{"status":"OPTIONS_NOT_FOUND_ERROR"}`},
		} {
			want := tc.want
			switch {
			case name == "the sign-in options'" && tc.path != "/webauthn/signin" && tc.path != "/user/webauthn/reset":
				want = `{"status":"INVALID_OPTIONS_ERROR"}` // options of another ceremony
			case name == "the register options'" && tc.path == "/webauthn/signup":
				// The credential answers them: a sign-up, tested
				// elsewhere; here it must not be made.
				continue
			case name == "the register options'" && tc.path == "/webauthn/credential":
				want = `{"status":"GENERAL_ERROR","message":"Email mismatch"}`
			}
			t.Run(name+tc.path, func(t *testing.T) {
				before := f.store.writes.Load()
				r := f.send(t, "POST", "/auth"+tc.path, strings.NewReader(tc.body), hdr("Content-Type", "application/json", "rid", "webauthn",
					"st-auth-mode", "header", "Authorization", "Bearer "+c.AccessToken))
				pkInputCheck(t, f, r, before, http.StatusOK, want)
			})
		}
	}
	// recipeUserId and token of the wrong kind, or naming nothing.
	for _, tc := range []pkInput{
		{"no recipeUserId", body("", reg.id), 400, "Please provide the recipeUserId"},
		{"recipeUserId a number", body("", reg.id, "recipeUserId", 5), 400, plNotObject},
		{"recipeUserId of nobody", body("", reg.id, "recipeUserId", "nobody"), 200, `{"status":"GENERAL_ERROR","message":"User not found"}`},
		{"recipeUserId with a NUL byte", body("", reg.id, "recipeUserId", u.ID+"\x00"), 200, `{"status":"GENERAL_ERROR","message":"User not found"}`},
		{"recipeUserId of another user", body("", reg.id, "recipeUserId", "pk-ceremonies"), 200, `{"status":"GENERAL_ERROR","message":"User not found"}`},
		{"no webauthnGeneratedOptionsId", `{"credential":{},"recipeUserId":"x"}`, 400, pkNoCeremony},
	} {
		t.Run("credential: "+tc.name, func(t *testing.T) {
			before := f.store.writes.Load()
			r := f.send(t, "POST", "/auth/webauthn/credential", strings.NewReader(tc.body), hdr("Content-Type", "application/json", "rid", "webauthn",
				"st-auth-mode", "header", "Authorization", "Bearer "+c.AccessToken))
			pkInputCheck(t, f, r, before, tc.code, tc.msg)
		})
	}
	for _, tc := range []pkInput{
		{"no token", body("", reg.id), 200, pkTokenInvalid},
		{"token a number", body("", reg.id, "token", 5), 400, plNotObject},
		{"token null", body("", reg.id, "token", nil), 200, pkTokenInvalid},
		{"token empty", body("", reg.id, "token", ""), 200, pkTokenInvalid},
		{"token with a NUL byte", body("", reg.id, "token", tok+"\x00"), 200, pkTokenInvalid},
		{"token of 3000 bytes", body("", reg.id, "token", strings.Repeat("A", 3000)), 200, pkTokenInvalid},
	} {
		t.Run("recovery: "+tc.name, func(t *testing.T) {
			before := f.store.writes.Load()
			r := f.send(t, "POST", "/auth/user/webauthn/reset", strings.NewReader(tc.body), hdr("Content-Type", "application/json", "rid", "webauthn"))
			pkInputCheck(t, f, r, before, tc.code, tc.msg)
		})
	}
	// The options are whole: they sign up.
	up := f.NewClient(authtest.Header)
	pkSignedIn(t, "the register options after the hostile requests", f.Server, up, up.PasskeySignUp(reg.id, regCred))
}

// TestInputPasskeyRemove sends hostile credential ids to
// /webauthn/credential/remove: a 400 with a message, or
// CREDENTIAL_NOT_FOUND_ERROR, writing nothing, and nothing looked up that
// a text column would refuse.
func TestInputPasskeyRemove(t *testing.T) {
	f := newFullFixture(t, auth.Config{RateLimits: unlimited()})
	c, a, _ := pkSignUp(t, f.Server, authtest.Header, "pk-remove@example.com")
	id := pkCredID(a)
	const notFound = `{"status":"CREDENTIAL_NOT_FOUND_ERROR"}`
	for _, tc := range []pkInput{
		{"no id", `{}`, 400, "Please provide the webauthnCredentialId"},
		{"null id", `{"webauthnCredentialId":null}`, 400, "Please provide the webauthnCredentialId"},
		{"empty id", `{"webauthnCredentialId":""}`, 400, "Please provide the webauthnCredentialId"},
		{"id a number", `{"webauthnCredentialId":1}`, 400, plNotObject},
		{"id an array", plJSON("webauthnCredentialId", []string{id}), 400, plNotObject},
		{"id with a NUL byte", plJSON("webauthnCredentialId", id+"\x00"), 200, notFound},
		{"id of a lone surrogate", `{"webauthnCredentialId":"\udc00"}`, 200, notFound},
		{"id of 3000 bytes", plJSON("webauthnCredentialId", strings.Repeat("A", 3000)), 200, notFound},
		{"id with padding", plJSON("webauthnCredentialId", id+"="), 200, notFound},
		{"id in standard base64", plJSON("webauthnCredentialId", strings.NewReplacer("-", "+", "_", "/").Replace(id)+"x"), 200, notFound},
		{"id of another relying party's form", plJSON("webauthnCredentialId", "evil.example/"+id), 200, notFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := f.store.writes.Load()
			r := f.send(t, "POST", "/auth/webauthn/credential/remove", strings.NewReader(tc.body), hdr("Content-Type", "application/json", "rid", "webauthn",
				"st-auth-mode", "header", "Authorization", "Bearer "+c.AccessToken))
			pkInputCheck(t, f, r, before, tc.code, tc.msg)
		})
	}
	pkSignedIn(t, "the passkey after the hostile removals", f.Server, f.NewClient(authtest.Header), f.NewClient(authtest.Header).SignInWithPasskey(a))
}

// TestInputPasskeyRecoveryRequest sends hostile bodies to
// /user/webauthn/reset/token: a 400 or 413 with a message, or
// GENERAL_ERROR for an address that is none, and the same OK for every
// address that is one; nothing written, and no mail but to the passkey
// user.
func TestInputPasskeyRecoveryRequest(t *testing.T) {
	f := newFullFixture(t, auth.Config{RateLimits: unlimited()})
	pkSignUp(t, f.Server, authtest.Header, "pk-recover@example.com")
	const invalid = `{"status":"GENERAL_ERROR","message":"Email is invalid"}`
	for _, tc := range []pkInput{
		{"empty object", `{}`, 400, "Please provide the email"},
		{"null email", `{"email":null}`, 400, "Please provide the email"},
		{"email a number", `{"email":5}`, 400, plNotObject},
		{"email an array", `{"email":["pk-recover@example.com"]}`, 400, plNotObject},
		{"formFields, as the password reset", `{"formFields":[{"id":"email","value":"pk-recover@example.com"}]}`, 400, "Please provide the email"},
		{"20 KB email", plJSON("email", strings.Repeat("a", 20<<10)+"@example.com"), 413, ""},
		{"empty email", `{"email":""}`, 200, `{"status":"GENERAL_ERROR","message":"Field is not optional"}`},
		{"not an email", plJSON("email", "pk-recover"), 200, invalid},
		{"a header injected", plJSON("email", "pk-recover@example.com\r\nBcc: x@evil.example"), 200, invalid},
		{"a NUL byte", plJSON("email", "pk-recover@example.com\x00"), 200, invalid},
		{"two addresses", plJSON("email", "pk-recover@example.com,x@evil.example"), 200, invalid},
		{"unknown", plJSON("email", "pk-nobody@example.com"), 200, `{"status":"OK"}`},
		{"unknown keys", `{"email":"pk-nobody@example.com","tenantId":"x","__proto__":{}}`, 200, `{"status":"OK"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := f.store.writes.Load()
			r := f.send(t, "POST", "/auth/user/webauthn/reset/token", strings.NewReader(tc.body), hdr("Content-Type", "application/json", "rid", "webauthn"))
			pkInputCheck(t, f, r, before, tc.code, tc.msg)
		})
	}
	if got := f.drainMail(t); got != 0 {
		t.Errorf("%d emails, want none", got)
	}
}

// TestInputPasskeyEmailExists sends hostile queries to
// /webauthn/email/exists: a 400 with a message when the parameter is
// missing or repeated, and otherwise exists false, for an address that
// is none, and nothing looked up that a text column would refuse.
func TestInputPasskeyEmailExists(t *testing.T) {
	f := newFullFixture(t, auth.Config{RateLimits: unlimited()})
	pkSignUp(t, f.Server, authtest.Header, "pk-exists@example.com")
	const no, yes = `{"status":"OK","exists":false}`, `{"status":"OK","exists":true}`
	for _, tc := range []pkInput{
		{"no query", "", 400, "Please provide the email as a GET param"},
		{"repeated", "?email=pk-exists%40example.com&email=b%40example.com", 400, "Please provide the email as a GET param"},
		{"in another case", "?Email=pk-exists%40example.com", 400, "Please provide the email as a GET param"},
		{"broken percent-encoding", "?email=%zz", 400, "Please provide the email as a GET param"},
		{"empty", "?email=", 200, no},
		{"not one", "?email=nobody", 200, no},
		{"a NUL byte", "?email=pk-exists%40example.com%00", 200, no},
		{"invalid UTF-8", "?email=pk-exists%ff%40example.com", 200, no},
		{"4 KB", "?email=" + strings.Repeat("a", 4<<10) + "%40example.com", 200, no},
		{"the passkey user's, upper case", "?email=PK-Exists%40Example.com", 200, yes},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := f.store.writes.Load()
			r := f.send(t, "GET", "/auth/webauthn/email/exists"+tc.body, nil, hdr("rid", "webauthn"))
			pkInputCheck(t, f, r, before, tc.code, tc.msg)
		})
	}
}

// ---- multi-factor authentication ----

// inMFARoutes are the endpoints of multi-factor authentication among
// fullEndpoints: every one needs a session.
func inMFARoutes() []endpoint {
	var out []endpoint
	for _, ep := range fullEndpoints {
		if ep.rid == "totp" || ep.rid == "multifactorauth" {
			out = append(out, ep)
		}
	}
	return out
}

// inMFAFixture is a fullFixture whose users must complete TOTP after
// signing in.
func inMFAFixture(t *testing.T) *fullFixture {
	t.Helper()
	return newFullFixture(t, auth.Config{RateLimits: unlimited(), MFA: auth.MFAConfig{Required: []string{auth.FactorTOTP}}})
}

// inMFASend sends body (none if "") to an MFA endpoint of f with c's
// session in header mode, and keeps a rewritten access token as the SDKs
// do.
func inMFASend(t *testing.T, f *fullFixture, c *authtest.Client, method, path, body string) inReply {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	rid := "totp"
	if strings.HasPrefix(path, "/mfa/") {
		rid = "multifactorauth"
	}
	r := f.send(t, method, "/auth"+path, rd, hdr("Content-Type", "application/json", "rid", rid,
		"Authorization", "Bearer "+c.AccessToken, "st-auth-mode", "header"))
	if v := r.header.Get("St-Access-Token"); v != "" {
		c.AccessToken = v
	}
	if v := r.header.Get("Front-Token"); v != "" && v != "remove" {
		c.FrontToken = v
	}
	return r
}

// inMFAInput is a hostile body for an MFA endpoint and its answer: a 4xx
// with the message want (any if ""), or a 200 with the status want. A
// wrong code (INVALID_TOTP_ERROR, INVALID_RECOVERY_CODE_ERROR) is the
// first of a run: the case starts past any lockout, and the answer
// counts it as the first failure, in one write.
type inMFAInput struct {
	name, body string
	code       int
	want       string
}

const (
	inMFANoDevice    = "Please provide the deviceName"
	inMFANoTOTP      = "Please provide the totp"
	inMFANoCode      = "Please provide the code, a recovery code"
	inMFABadName     = "deviceName must be a non-empty string of at most 100 bytes"
	inMFAUnsatisfied = `{"message":"invalid claim","claimValidationErrors":[{"id":"st-mfa","reason":{"message":"MFA requirement for auth is not satisfied"}}]}`
)

// inMFARun sends the cases to path with c's session and checks each answer:
// a 4xx writes nothing and issues no tokens; a wrong code writes its
// count, once.
func inMFARun(t *testing.T, f *fullFixture, c *authtest.Client, path string, cases []inMFAInput) {
	t.Helper()
	for _, tc := range cases {
		t.Run(path+"/"+tc.name, func(t *testing.T) {
			counted := tc.want == "INVALID_TOTP_ERROR" || tc.want == "INVALID_RECOVERY_CODE_ERROR"
			if counted {
				// Past any lockout and run of earlier wrong codes.
				f.Clock.Advance(15*time.Minute + time.Second)
				if res := c.Refresh(); res.Status != "OK" {
					t.Fatalf("refresh: %d %s", res.StatusCode, res.Body)
				}
			}
			before := f.store.writes.Load()
			r := inMFASend(t, f, c, http.MethodPost, path, tc.body)
			writes := f.store.writes.Load() - before
			switch {
			case tc.code != http.StatusOK:
				r.wantMessage(t, tc.code, tc.want)
			case r.code != http.StatusOK || r.status != tc.want:
				t.Errorf("got %d %s, want 200 %s", r.code, r.body, tc.want)
			case counted && (r.json["currentNumberOfFailedAttempts"] != float64(1) || r.json["maxNumberOfFailedAttempts"] != float64(5)):
				t.Errorf("got %s, want the first of 5 failures", r.body)
			}
			if counted {
				writes--
			}
			if writes != 0 {
				t.Errorf("%d store writes", writes)
			}
			wantNoTokens(t, r.response())
		})
	}
}

// inMFAWrongCode is a six-digit code that no step near now has for secret.
func inMFAWrongCode(f *fullFixture, secret string) string {
	now := f.AuthConfig.Now()
	near := []string{authtest.TOTPCode(secret, now.Add(-30*time.Second)), authtest.TOTPCode(secret, now), authtest.TOTPCode(secret, now.Add(30*time.Second))}
	for n := 314159; ; n++ {
		if w := fmt.Sprintf("%06d", n%1_000_000); !slices.Contains(near, w) {
			return w
		}
	}
}

// inMFAOtherDigits writes a code in another script's digits: Unicode says
// they are digits, and none is a code.
func inMFAOtherDigits(code string, zero rune) string {
	return strings.Map(func(r rune) rune { return zero + (r - '0') }, code)
}

// inMFAHostileCodes are wrong codes that are not six ASCII digits, and
// six digits that are not the code, built on the right code; each is
// INVALID_TOTP_ERROR, counted.
func inMFAHostileCodes(right, wrong string) []inMFAInput {
	cases := []struct{ name, code string }{
		{"empty", ""},
		{"five digits", right[:5]},
		{"seven digits", right + "0"},
		{"the code twice", right + right},
		{"letters", "abcdef"},
		{"a sign", "+" + right[1:]},
		{"an inner space", right[:3] + " " + right[3:]},
		{"a NUL byte after", right + "\x00"},
		{"a NUL byte inside", right[:3] + "\x00" + right[4:]},
		{"fullwidth digits", inMFAOtherDigits(right, '０')},
		{"Arabic-Indic digits", inMFAOtherDigits(right, '٠')},
		{"10 KB", strings.Repeat(right, 10<<10/6)},
		{"wrong digits", wrong},
	}
	var out []inMFAInput
	for _, tc := range cases {
		out = append(out, inMFAInput{tc.name, plJSON("totp", tc.code), 200, "INVALID_TOTP_ERROR"})
	}
	return append(out, inMFAInput{"a lone surrogate", `{"totp":"\udc00` + right[1:] + `"}`, 200, "INVALID_TOTP_ERROR"})
}

// inMFAPasses checks whether c's session passes a protected route: 200, or
// 403 with the st-mfa claim error.
func inMFAPasses(t *testing.T, c *authtest.Client, want bool) {
	t.Helper()
	res := c.Get("/api/session")
	switch {
	case want && res.StatusCode != http.StatusOK:
		t.Errorf("protected route: %d %s, want 200", res.StatusCode, res.Body)
	case !want && (res.StatusCode != http.StatusForbidden || string(res.Body) != inMFAUnsatisfied):
		t.Errorf("protected route: %d %s, want 403 %s", res.StatusCode, res.Body, inMFAUnsatisfied)
	}
}

// TestInputMFANoSession sends every MFA endpoint a well-formed body with
// no session, a malformed access token, a refresh token in its place and
// a session signed out and revoked: 401 with the SDKs' message, nothing
// written, no tokens issued.
func TestInputMFANoSession(t *testing.T) {
	f := newFullFixture(t, auth.Config{RateLimits: unlimited(), CheckSessionInStore: true})
	c, _ := f.SignedIn(authtest.Header)
	refresh := c.RefreshToken
	// A revoked session's access token: the store check refuses it.
	gone, _ := f.SignedIn(authtest.Header)
	if err := f.Auth.RevokeSession(t.Context(), handleOf(t, gone)); err != nil {
		t.Fatal(err)
	}
	goneAccess := gone.AccessToken
	body := plJSON("deviceName", "phone", "totp", "123456", "code", "abcd-efgh-ijkl-mnop")
	for _, ep := range inMFARoutes() {
		for _, tc := range []struct {
			name   string
			header http.Header
			msg    string
		}{
			{"no session", hdr(), "unauthorised"},
			{"a malformed access token", hdr("Authorization", "Bearer a.b.c"), "try refresh token"},
			{"a malformed cookie", hdr("Cookie", "sAccessToken=%zz"), "try refresh token"},
			{"the refresh token", hdr("Authorization", "Bearer "+refresh), "try refresh token"},
			{"a revoked session", hdr("Authorization", "Bearer "+goneAccess), "unauthorised"},
		} {
			t.Run(ep.method+" "+ep.path+"/"+tc.name, func(t *testing.T) {
				h := hdr("Content-Type", "application/json", "rid", ep.rid, "st-auth-mode", "header")
				maps.Copy(h, tc.header)
				before := f.store.writes.Load()
				r := f.send(t, ep.method, "/auth"+ep.path, strings.NewReader(body), h)
				if ep.method == "HEAD" {
					return
				}
				r.wantMessage(t, http.StatusUnauthorized, tc.msg)
				if r.header.Get(auth.ReasonHeader) == "" {
					t.Errorf("401 without %s", auth.ReasonHeader)
				}
				if n := f.store.writes.Load() - before; n != 0 {
					t.Errorf("%d store writes", n)
				}
				if res := r.response(); res.IssuedTokens() {
					t.Errorf("tokens issued: %v", r.header)
				}
			})
		}
	}
}

// TestInputTOTPDeviceCreate sends hostile bodies to /totp/device: a 400
// with a message, writing nothing, or a device made (one write) under
// the name as sent, trimmed; never more than ten devices.
func TestInputTOTPDeviceCreate(t *testing.T) {
	f := inMFAFixture(t)
	c, _ := f.SignedInVerified(authtest.Header)
	long := strings.Repeat("é", 50) // 100 bytes
	made := func(name, want string) inMFAInput { return inMFAInput{name, plJSON("deviceName", want), 200, "OK"} }
	for _, tc := range []inMFAInput{
		{"no body", "", 200, "OK"},
		{"an empty object", "{}", 200, "OK"},
		{"null name", `{"deviceName":null}`, 200, "OK"},
		made("a name", "phone"),
		made("unicode", "Téléphone de Zoë 📱"),
		made("a NUL byte", "tab\x00let"),
		made("100 bytes", long),
		{"a lone surrogate", `{"deviceName":"\udc00 key"}`, 200, "OK"},
		{"unknown fields", `{"deviceName":"phone","totp":"123456","secret":"AAAA"}`, 200, "OK"},
		{"101 bytes", plJSON("deviceName", long+"x"), 400, inMFABadName},
		{"10 KB", plJSON("deviceName", strings.Repeat("d", 10<<10)), 400, inMFABadName},
		{"empty", `{"deviceName":""}`, 400, inMFABadName},
		{"blank", `{"deviceName":" \t\n "}`, 400, inMFABadName},
		{"a number", `{"deviceName":5}`, 400, plNotObject},
		{"true", `{"deviceName":true}`, 400, plNotObject},
		{"an array", `{"deviceName":["phone"]}`, 400, plNotObject},
		{"an object", `{"deviceName":{"name":"phone"}}`, 400, plNotObject},
		{"a top-level array", `[{"deviceName":"phone"}]`, 400, plNotObject},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := f.store.writes.Load()
			r := inMFASend(t, f, c, http.MethodPost, "/totp/device", tc.body)
			writes := f.store.writes.Load() - before
			if tc.code != http.StatusOK {
				r.wantMessage(t, tc.code, tc.want)
				if writes != 0 {
					t.Errorf("%d store writes", writes)
				}
				wantNoTokens(t, r.response())
				return
			}
			secret, _ := r.json["secret"].(string)
			qr, _ := r.json["qrCodeString"].(string)
			name, _ := r.json["deviceName"].(string)
			var sent struct{ DeviceName *string }
			json.Unmarshal([]byte(tc.body), &sent)
			switch {
			case r.code != http.StatusOK || r.status != "OK" || len(secret) != 32 || !strings.HasPrefix(qr, "otpauth://totp/") || !strings.Contains(qr, "secret="+secret):
				t.Errorf("got %d %s, want a device", r.code, r.body)
			case sent.DeviceName != nil && name != strings.TrimSpace(*sent.DeviceName):
				t.Errorf("device %q, want %q", name, *sent.DeviceName)
			case sent.DeviceName == nil && name != "TOTP Device 0":
				t.Errorf("device %q, want the default name", name)
			}
			if writes != 1 {
				t.Errorf("%d store writes, want 1", writes)
			}
			wantNoTokens(t, r.response())
		})
	}
	// Up to ten devices, set up or not; a name set up is taken.
	list := inMFASend(t, f, c, http.MethodGet, "/totp/device/list", "")
	devices, _ := list.json["devices"].([]any)
	for i := len(devices); i < 10; i++ {
		if r := inMFASend(t, f, c, http.MethodPost, "/totp/device", plJSON("deviceName", fmt.Sprintf("spare %d", i))); r.status != "OK" {
			t.Fatalf("device %d: %s", i+1, r.body)
		}
	}
	before := f.store.writes.Load()
	r := inMFASend(t, f, c, http.MethodPost, "/totp/device", plJSON("deviceName", "one too many"))
	if r.code != http.StatusOK || r.status != "GENERAL_ERROR" || r.message == "" || f.store.writes.Load() != before {
		t.Errorf("an eleventh device: %d %s, want GENERAL_ERROR with a message and nothing written", r.code, r.body)
	}
	r = inMFASend(t, f, c, http.MethodPost, "/totp/device", plJSON("deviceName", "phone"))
	secret, _ := r.json["secret"].(string)
	if r.status != "OK" {
		t.Fatalf("device again: %s", r.body)
	}
	if r := inMFASend(t, f, c, http.MethodPost, "/totp/device/verify", plJSON("deviceName", "phone", "totp", authtest.TOTPCode(secret, f.AuthConfig.Now()))); r.status != "OK" {
		t.Fatalf("verify: %s", r.body)
	}
	for _, name := range []string{"phone", " phone "} {
		before := f.store.writes.Load()
		r := inMFASend(t, f, c, http.MethodPost, "/totp/device", plJSON("deviceName", name))
		if r.code != http.StatusOK || string(r.body) != `{"status":"DEVICE_ALREADY_EXISTS_ERROR"}` || f.store.writes.Load() != before {
			t.Errorf("a device set up, again as %q: %d %s, want DEVICE_ALREADY_EXISTS_ERROR and nothing written", name, r.code, r.body)
		}
	}
}

// TestInputTOTPVerify sends hostile bodies to /totp/device/verify and
// /totp/verify: a 400 with a message, writing nothing; the protocol's
// refusal, which counts a wrong code once and nothing else; and never a
// session let through, until the right code, typed with spaces around
// it, sets the device up. A code accepted is refused again, uncounted.
func TestInputTOTPVerify(t *testing.T) {
	f := inMFAFixture(t)
	c, _ := f.SignedInVerified(authtest.Header)
	r := inMFASend(t, f, c, http.MethodPost, "/totp/device", plJSON("deviceName", "phone"))
	secret, _ := r.json["secret"].(string)
	if r.status != "OK" || secret == "" {
		t.Fatalf("device: %s", r.body)
	}
	right := authtest.TOTPCode(secret, f.AuthConfig.Now())
	withName := func(name, code any) string { return plJSON("deviceName", name, "totp", code) }

	// Before the device is set up, nobody's code passes /totp/verify.
	inMFARun(t, f, c, "/totp/verify", []inMFAInput{
		{"no device set up", plJSON("totp", right), 200, "UNKNOWN_USER_ID_ERROR"},
	})
	cases := []inMFAInput{
		{"no body", "", 400, plNotObject},
		{"an empty object", "{}", 400, inMFANoDevice},
		{"no device", plJSON("totp", right), 400, inMFANoDevice},
		{"an empty device", withName("", right), 400, inMFANoDevice},
		{"a null device", `{"deviceName":null,"totp":"` + right + `"}`, 400, inMFANoDevice},
		{"no code", plJSON("deviceName", "phone"), 400, inMFANoTOTP},
		{"a null code", `{"deviceName":"phone","totp":null}`, 400, inMFANoTOTP},
		{"the code a number", `{"deviceName":"phone","totp":` + right + `}`, 400, plNotObject},
		{"the code an array", withName("phone", []string{right}), 400, plNotObject},
		{"the code an object", withName("phone", map[string]string{"totp": right}), 400, plNotObject},
		{"the code true", `{"deviceName":"phone","totp":true}`, 400, plNotObject},
		{"the device a number", withName(5, right), 400, plNotObject},
		{"the device an array", withName([]string{"phone"}, right), 400, plNotObject},
		{"duplicate keys, the last null", `{"deviceName":"phone","totp":"` + right + `","totp":null}`, 400, inMFANoTOTP},
		{"an unknown device", withName("tablet", right), 200, "UNKNOWN_DEVICE_ERROR"},
		{"the device in another case", withName("PHONE", right), 200, "UNKNOWN_DEVICE_ERROR"},
		{"the device with a NUL byte", withName("phone\x00", right), 200, "UNKNOWN_DEVICE_ERROR"},
		{"the device padded", withName(" phone", right), 200, "UNKNOWN_DEVICE_ERROR"},
		{"a device of 10 KB", withName(strings.Repeat("p", 10<<10), right), 200, "UNKNOWN_DEVICE_ERROR"},
	}
	for _, tc := range inMFAHostileCodes(right, inMFAWrongCode(f, secret)) {
		var code string
		json.Unmarshal([]byte(strings.Replace(tc.body, `"totp"`, `"code"`, 1)), &struct{ Code *string }{&code})
		tc.body = withName("phone", code)
		cases = append(cases, tc)
	}
	inMFARun(t, f, c, "/totp/device/verify", cases)
	inMFAPasses(t, c, false)

	// The right code, typed with white space around it: the device is
	// set up and the session passes; the same code again is refused,
	// and not counted.
	right = authtest.TOTPCode(secret, f.AuthConfig.Now())
	r = inMFASend(t, f, c, http.MethodPost, "/totp/device/verify", withName("phone", " \t"+right+"\n"))
	if r.code != http.StatusOK || string(r.body) != `{"status":"OK","wasAlreadyVerified":false}` {
		t.Fatalf("the right code: %d %s", r.code, r.body)
	}
	inMFAPasses(t, c, true)
	for _, path := range []string{"/totp/device/verify", "/totp/verify"} {
		before := f.store.writes.Load()
		r := inMFASend(t, f, c, http.MethodPost, path, withName("phone", right))
		if r.code != http.StatusOK || string(r.body) != `{"status":"INVALID_TOTP_ERROR","currentNumberOfFailedAttempts":0,"maxNumberOfFailedAttempts":5}` || f.store.writes.Load() != before {
			t.Errorf("%s, the code again: %d %s, want INVALID_TOTP_ERROR, uncounted, nothing written", path, r.code, r.body)
		}
	}

	// /totp/verify in a new session of the user.
	c2 := f.NewClient(authtest.Header)
	if res := c2.SignIn(enumEmailOf(t, f.Server, c), authtest.Password); res.Status != "OK" {
		t.Fatalf("sign-in: %s", res.Body)
	}
	inMFAPasses(t, c2, false)
	cases = []inMFAInput{
		{"no body", "", 400, plNotObject},
		{"an empty object", "{}", 400, inMFANoTOTP},
		{"a null code", `{"totp":null}`, 400, inMFANoTOTP},
		{"the code a number", `{"totp":` + right + `}`, 400, plNotObject},
		{"the code an array", plJSON("totp", []string{right}), 400, plNotObject},
		{"the code an object", plJSON("totp", map[string]string{"totp": right}), 400, plNotObject},
		{"the code false", `{"totp":false}`, 400, plNotObject},
		{"a top-level string", `"` + right + `"`, 400, plNotObject},
	}
	cases = append(cases, inMFAHostileCodes(right, inMFAWrongCode(f, secret))...)
	inMFARun(t, f, c2, "/totp/verify", cases)
	inMFAPasses(t, c2, false)
	f.Clock.Advance(30 * time.Second)
	if r := inMFASend(t, f, c2, http.MethodPost, "/totp/verify", plJSON("totp", authtest.TOTPCode(secret, f.AuthConfig.Now())+" ")); string(r.body) != `{"status":"OK"}` {
		t.Fatalf("the next code: %d %s", r.code, r.body)
	}
	inMFAPasses(t, c2, true)
}

// TestInputTOTPDeviceRemove sends hostile bodies to /totp/device/remove:
// a 400 with a message, writing nothing, or the device removed when the
// name is exactly its own.
func TestInputTOTPDeviceRemove(t *testing.T) {
	f := inMFAFixture(t)
	c, _ := f.SignedInVerified(authtest.Header)
	const name = "Téléphone 📱"
	if r := inMFASend(t, f, c, http.MethodPost, "/totp/device", plJSON("deviceName", name)); r.status != "OK" {
		t.Fatalf("device: %s", r.body)
	}
	notThere := `{"status":"OK","didDeviceExist":false}`
	for _, tc := range []inMFAInput{
		{"no body", "", 400, plNotObject},
		{"an empty object", "{}", 400, inMFANoDevice},
		{"null", `{"deviceName":null}`, 400, inMFANoDevice},
		{"empty", `{"deviceName":""}`, 400, inMFANoDevice},
		{"a number", `{"deviceName":1}`, 400, plNotObject},
		{"an array", plJSON("deviceName", []string{name}), 400, plNotObject},
		{"an object", plJSON("deviceName", map[string]string{"name": name}), 400, plNotObject},
		{"unknown", plJSON("deviceName", "tablet"), 200, notThere},
		{"padded", plJSON("deviceName", " "+name), 200, notThere},
		{"in another normal form", plJSON("deviceName", "Te\u0301le\u0301phone 📱"), 200, notThere},
		{"with a NUL byte", plJSON("deviceName", name+"\x00"), 200, notThere},
		{"10 KB", plJSON("deviceName", strings.Repeat("n", 10<<10)), 200, notThere},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := f.store.writes.Load()
			r := inMFASend(t, f, c, http.MethodPost, "/totp/device/remove", tc.body)
			if tc.code != http.StatusOK {
				r.wantMessage(t, tc.code, tc.want)
			} else if r.code != http.StatusOK || string(r.body) != tc.want {
				t.Errorf("got %d %s, want %s", r.code, r.body, tc.want)
			}
			if n := f.store.writes.Load() - before; n != 0 {
				t.Errorf("%d store writes", n)
			}
			wantNoTokens(t, r.response())
		})
	}
	if r := inMFASend(t, f, c, http.MethodPost, "/totp/device/remove", plJSON("deviceName", name)); string(r.body) != `{"status":"OK","didDeviceExist":true}` {
		t.Errorf("the device by its name: %d %s", r.code, r.body)
	}
}

// TestInputRecoveryCodes sends hostile bodies to
// /mfa/recovery-code/verify: a 400 with a message, writing nothing, or
// INVALID_RECOVERY_CODE_ERROR, counted once; a code works once, typed in
// capitals with spaces for dashes, and presented again is refused
// uncounted. New codes need the MFA requirement met; the bodies of the
// endpoints that read none are ignored.
func TestInputRecoveryCodes(t *testing.T) {
	f := inMFAFixture(t)
	c, u := f.SignedInVerified(authtest.Header)
	if r := inMFASend(t, f, c, http.MethodPost, "/mfa/recovery-codes", "{}"); r.code != http.StatusForbidden || string(r.body) != inMFAUnsatisfied {
		t.Errorf("new codes before the second factor: %d %s, want 403", r.code, r.body)
	}
	c.SetUpTOTP()
	r := inMFASend(t, f, c, http.MethodPost, "/mfa/recovery-codes", "not JSON at all")
	var codes []string
	for _, v := range r.json["codes"].([]any) {
		codes = append(codes, v.(string))
	}
	if r.code != http.StatusOK || r.status != "OK" || len(codes) != 10 {
		t.Fatalf("new codes: %d %s", r.code, r.body)
	}
	if r := inMFASend(t, f, c, http.MethodGet, "/mfa/recovery-codes", `{"remaining":99}`); string(r.body) != `{"status":"OK","remaining":10}` {
		t.Errorf("count: %d %s", r.code, r.body)
	}
	if r := inMFASend(t, f, c, http.MethodPut, "/mfa/info", "[not JSON"); r.code != http.StatusOK || r.status != "OK" {
		t.Errorf("/mfa/info with a body it does not read: %d %s", r.code, r.body)
	}

	c2 := f.NewClient(authtest.Header)
	if res := c2.SignIn(u.Email, authtest.Password); res.Status != "OK" {
		t.Fatalf("sign-in: %s", res.Body)
	}
	code := codes[0]
	cases := []inMFAInput{
		{"no body", "", 400, plNotObject},
		{"an empty object", "{}", 400, inMFANoCode},
		{"null", `{"code":null}`, 400, inMFANoCode},
		{"65 bytes", plJSON("code", strings.Repeat("a", 65)), 400, inMFANoCode},
		{"10 KB", plJSON("code", strings.Repeat(code, 10<<10/19)), 400, inMFANoCode},
		{"a number", `{"code":1234}`, 400, plNotObject},
		{"an array", plJSON("code", []string{code}), 400, plNotObject},
		{"an object", plJSON("code", map[string]string{"code": code}), 400, plNotObject},
		{"true", `{"code":true}`, 400, plNotObject},
		{"empty", `{"code":""}`, 200, "INVALID_RECOVERY_CODE_ERROR"},
		{"a TOTP code", `{"code":"123456"}`, 200, "INVALID_RECOVERY_CODE_ERROR"},
		{"one character off", plJSON("code", code[:len(code)-1]+string(rune(code[len(code)-1])^1)), 200, "INVALID_RECOVERY_CODE_ERROR"},
		{"with a NUL byte", plJSON("code", code+"\x00"), 200, "INVALID_RECOVERY_CODE_ERROR"},
		{"in fullwidth letters", plJSON("code", strings.Map(func(r rune) rune {
			if r >= 'a' && r <= 'z' {
				return r - 'a' + 'ａ'
			}
			return r
		}, code)), 200, "INVALID_RECOVERY_CODE_ERROR"},
		{"64 bytes", plJSON("code", strings.Repeat("a", 64)), 200, "INVALID_RECOVERY_CODE_ERROR"},
		{"a lone surrogate", `{"code":"\udc00` + code[1:] + `"}`, 200, "INVALID_RECOVERY_CODE_ERROR"},
	}
	inMFARun(t, f, c2, "/mfa/recovery-code/verify", cases)
	inMFAPasses(t, c2, false)

	typed := strings.ToUpper(strings.ReplaceAll(code, "-", " "))
	r = inMFASend(t, f, c2, http.MethodPost, "/mfa/recovery-code/verify", plJSON("code", typed))
	if r.code != http.StatusOK || string(r.body) != `{"status":"OK","remaining":9}` {
		t.Fatalf("the code in capitals with spaces: %d %s", r.code, r.body)
	}
	inMFAPasses(t, c2, true)
	c3 := f.NewClient(authtest.Header)
	if res := c3.SignIn(u.Email, authtest.Password); res.Status != "OK" {
		t.Fatalf("sign-in: %s", res.Body)
	}
	// The code used, again: refused, and not counted.
	before := f.store.writes.Load()
	r = inMFASend(t, f, c3, http.MethodPost, "/mfa/recovery-code/verify", plJSON("code", code))
	if r.code != http.StatusOK || string(r.body) != `{"status":"INVALID_RECOVERY_CODE_ERROR","currentNumberOfFailedAttempts":0,"maxNumberOfFailedAttempts":5}` || f.store.writes.Load() != before {
		t.Errorf("a code used, again: %d %s, want INVALID_RECOVERY_CODE_ERROR uncounted, nothing written", r.code, r.body)
	}
	inMFAPasses(t, c3, false)
}
