package auth_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/emailpassword"
	"github.com/latchkit/auth/mailer"
	"github.com/latchkit/auth/passkey"
	"github.com/latchkit/auth/passwordless"
	"github.com/latchkit/auth/provider"
	"github.com/latchkit/auth/roles"
	"github.com/latchkit/auth/store"
	"github.com/latchkit/auth/store/memstore"
	"github.com/latchkit/auth/thirdparty"
)

// Run with:
//
//	go test -run '^$' -bench . -benchmem .

const benchBody = `{"formFields":[{"id":"email","value":"bench@example.com"},{"id":"password","value":"bench password 1"}]}`

// discard is a ResponseWriter that keeps headers and drops the body, so a
// benchmark measures the handler and not a recorder.
type discard struct {
	h    http.Header
	code int
}

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(b []byte) (int, error) { return len(b), nil }
func (d *discard) WriteHeader(code int)        { d.code = code }
func (d *discard) reset()                      { clear(d.h); d.code = 200 }

// signedUp returns an Auth and the header-mode tokens of a fresh session.
func signedUp(b *testing.B, cfg auth.Config) (a *auth.Auth, access, refresh string) {
	b.Helper()
	if cfg.Store == nil {
		cfg.Store = memstore.New()
	}
	if cfg.EmailPassword.Hashing == (emailpassword.Hashing{}) {
		cfg.EmailPassword.Hashing = emailpassword.Hashing{Memory: 64, Iterations: 1, Parallelism: 1}
		cfg.EmailPassword.InsecureWeakHashing = true
	}
	a, err := auth.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	req := httptest.NewRequest("POST", "/auth/signup", strings.NewReader(benchBody))
	req.Header.Set("st-auth-mode", "header")
	rec := httptest.NewRecorder()
	a.ServeHTTP(rec, req)
	if rec.Code != 200 {
		b.Fatalf("sign-up: %d %s", rec.Code, rec.Body)
	}
	return a, rec.Header().Get("st-access-token"), rec.Header().Get("st-refresh-token")
}

// signedUpIn signs a new user up in tenant, which it creates, and returns
// their access token.
func signedUpIn(b *testing.B, a *auth.Auth, tenant string) string {
	b.Helper()
	if err := a.PutTenant(b.Context(), auth.Tenant{ID: tenant}); err != nil {
		b.Fatal(err)
	}
	req := httptest.NewRequest("POST", "/auth/"+tenant+"/signup", strings.NewReader(benchBody))
	req.Header.Set("st-auth-mode", "header")
	rec := httptest.NewRecorder()
	a.ServeHTTP(rec, req)
	if rec.Code != 200 || rec.Header().Get("st-access-token") == "" {
		b.Fatalf("sign-up in %s: %d %s", tenant, rec.Code, rec.Body)
	}
	return rec.Header().Get("st-access-token")
}

func BenchmarkRequireSession(b *testing.B) {
	mfa := auth.MFAConfig{Required: []string{auth.FactorTOTP}}
	for _, c := range []struct {
		name  string
		cfg   auth.Config
		rules []auth.Rule
		roles bool // roles on, the user an admin
	}{
		{"HS256", auth.Config{SigningAlgorithm: auth.HS256}, nil, false},
		{"EdDSA", auth.Config{SigningAlgorithm: auth.EdDSA}, nil, false},
		// The revocation check against memstore, uncached and cached:
		// what immediate revocation costs beyond the signature.
		{"HS256+CheckSessionInStore", auth.Config{CheckSessionInStore: true}, nil, false},
		{"HS256+CheckSessionInStore+Cache", auth.Config{CheckSessionInStore: true, SessionCheckCache: time.Second}, nil, false},
		// A session that completed TOTP: its token carries the st-mfa
		// claim, which the middleware checks; and a step-up route,
		// which also asks how long ago TOTP was.
		{"HS256+MFA", auth.Config{SigningAlgorithm: auth.HS256, MFA: mfa}, nil, false},
		{"HS256+MFA+FactorWithin", auth.Config{SigningAlgorithm: auth.HS256, MFA: mfa}, []auth.Rule{auth.FactorWithin(auth.FactorTOTP, 5*time.Minute)}, false},
		// A session whose token carries st-role and st-perm: without a
		// rule, and on a route that asks for a permission.
		{"HS256+Roles", auth.Config{SigningAlgorithm: auth.HS256}, nil, true},
		{"HS256+Roles+RequirePermission", auth.Config{SigningAlgorithm: auth.HS256}, []auth.Rule{roles.RequirePermission("posts:write")}, true},
		// And two claims of the application's own.
		{"HS256+Roles+TokenClaims", auth.Config{SigningAlgorithm: auth.HS256, TokenClaims: benchTokenClaims}, nil, true},
		// A session of the tenant acme, whose token's tId is acme: the
		// check is the public tenant's plain HS256 one.
		{"HS256+Tenant", auth.Config{SigningAlgorithm: auth.HS256, Tenants: auth.TenantsConfig{Enabled: true}}, nil, false},
	} {
		b.Run(c.name, func(b *testing.B) {
			cfg := c.cfg
			var rr *roles.Recipe
			if c.roles {
				rr = roles.New(roles.Config{})
				cfg.Roles = rr
			}
			a, access, refresh := signedUp(b, cfg)
			if cfg.Tenants.Enabled {
				access = signedUpIn(b, a, "acme")
			}
			if len(c.cfg.MFA.Required) > 0 {
				access = benchTOTP(b, a, access)
			}
			if rr != nil {
				access, _ = benchAdmin(b, a, rr, access, refresh)
			}
			h := a.RequireSession(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}), c.rules...)
			req := httptest.NewRequest("GET", "/api/me", nil)
			req.Header.Set("Authorization", "Bearer "+access)
			w := &discard{h: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				w.reset()
				h.ServeHTTP(w, req)
			}
			if w.code != 200 {
				b.Fatalf("status %d", w.code)
			}
		})
	}
}

// benchTOTP sets up a TOTP device in the session of access, which
// completes TOTP, and returns the session's new access token.
func benchTOTP(b *testing.B, a *auth.Auth, access string) string {
	b.Helper()
	call := func(path, body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("POST", "/auth"+path, strings.NewReader(body))
		req.Header.Set("st-auth-mode", "header")
		req.Header.Set("Authorization", "Bearer "+access)
		rec := httptest.NewRecorder()
		a.ServeHTTP(rec, req)
		if rec.Code != 200 || !strings.HasPrefix(rec.Body.String(), `{"status":"OK"`) {
			b.Fatalf("%s: %d %s", path, rec.Code, rec.Body)
		}
		return rec
	}
	var device struct{ DeviceName, Secret string }
	json.Unmarshal(call("/totp/device", "{}").Body.Bytes(), &device)
	body, _ := json.Marshal(map[string]string{"deviceName": device.DeviceName, "totp": authtest.TOTPCode(device.Secret, time.Now())})
	if access = call("/totp/device/verify", string(body)).Header().Get("st-access-token"); access == "" {
		b.Fatal("no access token after TOTP")
	}
	return access
}

// benchTokenClaims are two claims of the application's own, as a
// subscription plan and an organisation might be.
var benchTokenClaims = auth.TokenClaims{
	Names: []string{"plan", "org"},
	Values: func(context.Context, string, string) (map[string]any, error) {
		return map[string]any{"plan": "pro", "org": map[string]any{"id": 42, "name": "Example Ltd"}}, nil
	},
}

// benchAdmin gives the session's user the role admin, with two
// permissions, and refreshes the session, whose new tokens it returns.
func benchAdmin(b *testing.B, a *auth.Auth, rr *roles.Recipe, access, refresh string) (string, string) {
	b.Helper()
	ctx := b.Context()
	s, err := a.VerifyToken(ctx, access)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := rr.CreateRole(ctx, "admin", "posts:write", "posts:read"); err != nil {
		b.Fatal(err)
	}
	if _, err := rr.Give(ctx, s.UserID, "admin"); err != nil {
		b.Fatal(err)
	}
	req := httptest.NewRequest("POST", "/auth/session/refresh", nil)
	req.Header.Set("Authorization", "Bearer "+refresh)
	req.Header.Set("st-auth-mode", "header")
	rec := httptest.NewRecorder()
	a.ServeHTTP(rec, req)
	if rec.Code != 200 {
		b.Fatalf("refresh: %d %s", rec.Code, rec.Body)
	}
	return rec.Header().Get("st-access-token"), rec.Header().Get("st-refresh-token")
}

// benchKey signs up on a fresh memstore with HS256 and returns a real
// access token with the key material that signed it, for the baselines.
func benchKey(b *testing.B) (access string, key []byte) {
	b.Helper()
	st := memstore.New()
	_, access, _ = signedUp(b, auth.Config{Store: st, SigningAlgorithm: auth.HS256})
	// The store also keeps the key of the refresh tokens' MACs: the
	// access token's is the HS256 one.
	keys, err := st.SigningKeys(b.Context(), time.Now())
	if i := slices.IndexFunc(keys, func(k store.SigningKey) bool { return k.Algorithm == auth.HS256 }); err == nil && i >= 0 {
		return access, keys[i].Material
	}
	b.Fatalf("signing keys: %v, %d without an HS256 one", err, len(keys))
	return "", nil
}

// BenchmarkRawHMAC is the floor for HS256 verification: HMAC-SHA256 over
// the signing input of a real access token, compared with its signature
// (decoded once, outside the loop). No parsing, no claims.
func BenchmarkRawHMAC(b *testing.B) {
	access, key := benchKey(b)
	dot := strings.LastIndexByte(access, '.')
	input := []byte(access[:dot])
	sig, err := base64.RawURLEncoding.DecodeString(access[dot+1:])
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		m := hmac.New(sha256.New, key)
		m.Write(input)
		if !hmac.Equal(m.Sum(nil), sig) {
			b.Fatal("signature mismatch")
		}
	}
}

// BenchmarkGolangJWTParse is golang-jwt's generic path on the same token
// and key: jwt.Parse into MapClaims with the algorithm pinned.
func BenchmarkGolangJWTParse(b *testing.B) {
	access, key := benchKey(b)
	keyFunc := func(*jwt.Token) (any, error) { return key, nil }
	b.ReportAllocs()
	for b.Loop() {
		if _, err := jwt.Parse(access, keyFunc, jwt.WithValidMethods([]string{"HS256"})); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRefresh rotates a session's refresh token on memstore and
// signs a new access token: the signing cost of each algorithm shows here.
func BenchmarkRefresh(b *testing.B) {
	// One session refreshes b.N times: past its allowance.
	limits := auth.RateLimits{SessionRefreshes: auth.Rate{Burst: 1 << 30, Every: time.Nanosecond}}
	for _, c := range []struct {
		name  string
		cfg   auth.Config
		roles bool // roles on, the user an admin
	}{
		{auth.HS256, auth.Config{SigningAlgorithm: auth.HS256, RateLimits: limits}, false},
		{auth.EdDSA, auth.Config{SigningAlgorithm: auth.EdDSA, RateLimits: limits}, false},
		// A session that completed TOTP: each refresh carries its st-mfa
		// claim, reassessed against the user's second factors.
		{"HS256+MFA", auth.Config{SigningAlgorithm: auth.HS256, RateLimits: limits,
			MFA: auth.MFAConfig{Required: []string{auth.FactorTOTP}}}, false},
		// Each refresh reads the user's roles and permissions again.
		{"HS256+Roles", auth.Config{SigningAlgorithm: auth.HS256, RateLimits: limits}, true},
		{"HS256+Roles+TokenClaims", auth.Config{SigningAlgorithm: auth.HS256, RateLimits: limits, TokenClaims: benchTokenClaims}, true},
	} {
		b.Run(c.name, func(b *testing.B) {
			cfg := c.cfg
			var rr *roles.Recipe
			if c.roles {
				rr = roles.New(roles.Config{})
				cfg.Roles = rr
			}
			a, access, refresh := signedUp(b, cfg)
			if len(c.cfg.MFA.Required) > 0 {
				benchTOTP(b, a, access)
			}
			if rr != nil {
				_, refresh = benchAdmin(b, a, rr, access, refresh)
			}
			w := &discard{h: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				req := httptest.NewRequest("POST", "/auth/session/refresh", nil)
				req.Header.Set("Authorization", "Bearer "+refresh)
				req.Header.Set("st-auth-mode", "header")
				w.reset()
				a.ServeHTTP(w, req)
				if w.code != 200 {
					b.Fatalf("status %d", w.code)
				}
				refresh = w.h.Get("st-refresh-token")
			}
		})
	}
}

// BenchmarkSignIn uses the default argon2id parameters: the hash is the
// cost of a sign-in.
func BenchmarkSignIn(b *testing.B) {
	a, _, _ := signedUp(b, auth.Config{EmailPassword: emailpassword.Config{Hashing: emailpassword.Hashing{Memory: 19 * 1024, Iterations: 2, Parallelism: 1}}})
	w := &discard{h: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest("POST", "/auth/signin", strings.NewReader(benchBody))
		req.Header.Set("st-auth-mode", "header")
		w.reset()
		a.ServeHTTP(w, req)
		if w.code != 200 {
			b.Fatalf("status %d", w.code)
		}
	}
}

// BenchmarkSignUp is a sign-up with the default argon2id parameters: the
// hash, the user, the session and the answer.
func BenchmarkSignUp(b *testing.B) {
	// One client signs up every user: past the allowance of new
	// passwords a client has, which is not what is measured.
	a, _, _ := signedUp(b, auth.Config{
		EmailPassword: emailpassword.Config{Hashing: emailpassword.Hashing{Memory: 19 * 1024, Iterations: 2, Parallelism: 1}},
		RateLimits:    auth.RateLimits{ClientNewPasswords: auth.Rate{Burst: 1 << 30, Every: time.Nanosecond}},
	})
	w := &discard{h: http.Header{}}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		req := httptest.NewRequest("POST", "/auth/signup", strings.NewReader(
			`{"formFields":[{"id":"email","value":"new`+strconv.Itoa(i)+`@example.com"},{"id":"password","value":"bench password 1"}]}`))
		req.Header.Set("st-auth-mode", "header")
		w.reset()
		a.ServeHTTP(w, req)
		if w.code != 200 {
			b.Fatalf("status %d", w.code)
		}
	}
}

// BenchmarkSignOut ends a session per iteration; the sign-ins that make
// the sessions are outside the timer.
func BenchmarkSignOut(b *testing.B) {
	a, _, _ := signedUp(b, auth.Config{})
	w := &discard{h: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		req := httptest.NewRequest("POST", "/auth/signin", strings.NewReader(benchBody))
		req.Header.Set("st-auth-mode", "header")
		rec := httptest.NewRecorder()
		a.ServeHTTP(rec, req)
		out := httptest.NewRequest("POST", "/auth/signout", nil)
		out.Header.Set("Authorization", "Bearer "+rec.Header().Get("st-access-token"))
		w.reset()
		b.StartTimer()
		a.ServeHTTP(w, out)
		if w.code != 200 {
			b.Fatalf("status %d", w.code)
		}
	}
}

// BenchmarkResetRequest is the request endpoint alone: it answers once the
// email is queued; the outbox's work (lookup, token, mail) happens off the
// request path and is not timed.
func BenchmarkResetRequest(b *testing.B) {
	a, _, _ := signedUp(b, auth.Config{
		Email:  auth.EmailConfig{Mailer: mailer.Func(func(context.Context, mailer.Message) error { return nil })},
		AppURL: "https://app.example.com",
		// The request path only: no allowance runs out.
		RateLimits: auth.RateLimits{
			ResetEmails:         auth.Rate{Burst: 1 << 30, Every: time.Nanosecond},
			ClientResetRequests: auth.Rate{Burst: 1 << 30, Every: time.Nanosecond},
		},
	})
	defer a.Close(context.Background())
	w := &discard{h: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest("POST", "/auth/user/password/reset/token", strings.NewReader(
			`{"formFields":[{"id":"email","value":"bench@example.com"}]}`))
		w.reset()
		a.ServeHTTP(w, req)
		if w.code != 200 {
			b.Fatalf("status %d", w.code)
		}
	}
}

// instant is a provider that answers at once: the benchmarks below time
// the handler, not a provider's round trips.
type instant struct{ subject atomic.Int64 }

func (*instant) ID() string   { return "instant" }
func (*instant) Name() string { return "" }
func (*instant) AuthURL(_ context.Context, r provider.AuthRequest) (string, error) {
	return "https://idp.example.com/authorize?code_challenge=" + r.CodeChallenge, nil
}
func (p *instant) Exchange(_ context.Context, r provider.ExchangeRequest) (provider.Identity, error) {
	if r.Code == "returning" || strings.HasPrefix(r.Code, "returning-") {
		return provider.Identity{Subject: "returning", Email: "returning@example.com", EmailVerified: true}, nil
	}
	n := p.subject.Add(1)
	return provider.Identity{Subject: strconv.FormatInt(n, 10), Email: "new" + strconv.FormatInt(n, 10) + "@example.com"}, nil
}

// BenchmarkSignInUp is /signinup with the provider's round trips stubbed:
// the verifier's MAC, the code's replay check, the store's sign-in-or-up
// and the session. "signin" is a returning user, "signup" a new one each
// time; "acme/..." the same on a tenant whose one provider is its own
// (stubbed alike), on the tenant's path.
func BenchmarkSignInUp(b *testing.B) {
	for _, kind := range []string{"signin", "signup", "acme/signin", "acme/signup"} {
		b.Run(kind, func(b *testing.B) {
			const app = "https://app.example.com"
			a, err := auth.New(auth.Config{
				Store:      memstore.New(),
				AppURL:     app,
				ThirdParty: thirdparty.Config{Providers: []provider.Provider{&instant{}}},
				RateLimits: auth.RateLimits{ClientThirdPartySignIns: auth.Rate{Burst: 1 << 30, Every: time.Nanosecond}},
				Tenants:    auth.TenantsConfig{Enabled: true},
			})
			if err != nil {
				b.Fatal(err)
			}
			defer a.Close(context.Background())
			base := "/auth"
			if tenant, rest, ok := strings.Cut(kind, "/"); ok {
				base, kind = "/auth/"+tenant, rest
				err := a.PutTenant(b.Context(), auth.Tenant{ID: tenant, FirstFactors: []string{auth.FactorThirdParty},
					Providers: []auth.TenantProvider{{ID: "instant"}}})
				if err != nil {
					b.Fatal(err)
				}
			}
			redirect := app + "/auth/callback/instant"
			w := &discard{h: http.Header{}}
			req := httptest.NewRequest("GET", base+"/authorisationurl?thirdPartyId=instant&redirectURIOnProviderDashboard="+url.QueryEscape(redirect), nil)
			rec := httptest.NewRecorder()
			a.ServeHTTP(rec, req)
			var got struct{ PKCECodeVerifier string }
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || got.PKCECodeVerifier == "" {
				b.Fatalf("authorisationurl: %s", rec.Body)
			}
			body := func(code string) string {
				return `{"thirdPartyId":"instant","redirectURIInfo":{"redirectURIOnProviderDashboard":"` + redirect +
					`","redirectURIQueryParams":{"code":"` + code + `"},"pkceCodeVerifier":"` + got.PKCECodeVerifier + `"}}`
			}
			i := 0
			b.ReportAllocs()
			for b.Loop() {
				i++
				code := kind + "-" + strconv.Itoa(i)
				if kind == "signin" {
					code = "returning-" + strconv.Itoa(i)
				}
				req := httptest.NewRequest("POST", base+"/signinup", strings.NewReader(body(code)))
				req.Header.Set("st-auth-mode", "header")
				w.reset()
				a.ServeHTTP(w, req)
				if w.code != 200 || w.h.Get("St-Access-Token") == "" {
					b.Fatalf("status %d", w.code)
				}
			}
		})
	}
}

// BenchmarkPasswordless times the passwordless endpoints on memstore:
// "createCode" starts a flow (the two allowances, the flow and its code
// in the store, the email queued; the outbox's rendering and sending are
// off the request path), "consume/code" and "consume/link" sign a
// returning user in with a code or a link (the flow's read and the
// address's allowance for a code, the spending step, the user's sign-in
// and a new session). The flow each consume spends is made outside the
// timer.
func BenchmarkPasswordless(b *testing.B) {
	code := regexp.MustCompile(`(?m)^\s*([0-9]{6})\s*$`)
	link := regexp.MustCompile(`preAuthSessionId=([^&\s]+)&tenantId=public#(\S+)`)
	// The emails of the flows a consume spends, by flow; createCode's are
	// dropped.
	var (
		keep    atomic.Bool
		mu      sync.Mutex
		byFlow  = map[string]mailer.Message{}
		arrived = make(chan struct{}, 1)
	)
	a, err := auth.New(auth.Config{
		Store:  memstore.New(),
		AppURL: "https://app.example.com",
		Email: auth.EmailConfig{Mailer: mailer.Func(func(_ context.Context, m mailer.Message) error {
			if keep.Load() {
				mu.Lock()
				byFlow[link.FindStringSubmatch(m.Text)[1]] = m
				mu.Unlock()
				select {
				case arrived <- struct{}{}:
				default:
				}
			}
			return nil
		}), QueueSize: 1 << 20},
		Passwordless: passwordless.Config{Flow: passwordless.CodeAndLink},
		// The request path only: no allowance runs out.
		RateLimits: auth.RateLimits{
			PasswordlessSends:       auth.Rate{Burst: 1 << 30, Every: time.Nanosecond},
			ClientPasswordlessSends: auth.Rate{Burst: 1 << 30, Every: time.Nanosecond},
			PasswordlessFailures:    auth.Rate{Burst: 1 << 30, Every: time.Nanosecond},
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close(context.Background())
	const email = `{"email":"bench@example.com"}`
	start := func() (device, flow string, m mailer.Message) {
		rec := httptest.NewRecorder()
		a.ServeHTTP(rec, httptest.NewRequest("POST", "/auth/signinup/code", strings.NewReader(email)))
		var got struct{ DeviceID, PreAuthSessionID string }
		if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || got.DeviceID == "" {
			b.Fatalf("createCode: %d %s", rec.Code, rec.Body)
		}
		for {
			mu.Lock()
			m, ok := byFlow[got.PreAuthSessionID]
			delete(byFlow, got.PreAuthSessionID)
			mu.Unlock()
			if ok {
				return got.DeviceID, got.PreAuthSessionID, m
			}
			<-arrived
		}
	}
	keep.Store(true)
	// The user signs up once, outside every timer.
	device, flow, m := start()
	consume := func(body string) {
		req := httptest.NewRequest("POST", "/auth/signinup/code/consume", strings.NewReader(body))
		req.Header.Set("st-auth-mode", "header")
		w := &discard{h: http.Header{}}
		a.ServeHTTP(w, req)
		if w.code != 200 || w.h.Get("St-Access-Token") == "" {
			b.Fatalf("consume: status %d", w.code)
		}
	}
	codeBody := func(device, flow string, m mailer.Message) string {
		return `{"deviceId":"` + device + `","preAuthSessionId":"` + flow + `","userInputCode":"` + code.FindStringSubmatch(m.Text)[1] + `"}`
	}
	consume(codeBody(device, flow, m))

	b.Run("createCode", func(b *testing.B) {
		keep.Store(false)
		defer keep.Store(true)
		w := &discard{h: http.Header{}}
		b.ReportAllocs()
		for b.Loop() {
			w.reset()
			a.ServeHTTP(w, httptest.NewRequest("POST", "/auth/signinup/code", strings.NewReader(email)))
			if w.code != 200 {
				b.Fatalf("status %d", w.code)
			}
		}
	})
	b.Run("consume/code", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			b.StopTimer()
			body := codeBody(start())
			b.StartTimer()
			consume(body)
		}
	})
	b.Run("consume/link", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			b.StopTimer()
			_, _, m := start()
			l := link.FindStringSubmatch(m.Text)
			body := `{"preAuthSessionId":"` + l[1] + `","linkCode":"` + l[2] + `"}`
			b.StartTimer()
			consume(body)
		}
	})
}

// BenchmarkPasskeySignIn is a passkey sign-in on memstore: the sign-in
// options (a challenge stored as the ceremony), then the assertion
// checked by go-webauthn (an ES256 signature), the options used up with
// the counter's compare-and-swap, and a new session. The authenticator's
// signing is outside the timer; the two requests are inside.
func BenchmarkPasskeySignIn(b *testing.B) {
	const app = "https://app.example.com"
	a, err := auth.New(auth.Config{
		Store:      memstore.New(),
		AppURL:     app,
		Passkeys:   passkey.New(passkey.Config{}),
		RateLimits: auth.RateLimits{ClientPasskeyCeremonies: auth.Rate{Burst: 1 << 30, Every: time.Nanosecond}},
	})
	if err != nil {
		b.Fatal(err)
	}
	key := authtest.NewAuthenticator(app)
	post := func(path, body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("POST", path, strings.NewReader(body))
		req.Header.Set("st-auth-mode", "header")
		rec := httptest.NewRecorder()
		a.ServeHTTP(rec, req)
		if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"status":"OK"`) {
			b.Fatalf("%s: %d %s", path, rec.Code, rec.Body)
		}
		return rec
	}
	finish := func(options *httptest.ResponseRecorder, credential []byte) string {
		var o struct{ WebauthnGeneratedOptionsID string }
		if err := json.Unmarshal(options.Body.Bytes(), &o); err != nil {
			b.Fatal(err)
		}
		body, _ := json.Marshal(map[string]any{"webauthnGeneratedOptionsId": o.WebauthnGeneratedOptionsID, "credential": json.RawMessage(credential)})
		return string(body)
	}
	opts := post("/auth/webauthn/options/register", `{"email":"bench@example.com"}`)
	cred, err := key.Register(opts.Body.Bytes())
	if err != nil {
		b.Fatal(err)
	}
	post("/auth/webauthn/signup", finish(opts, cred))
	b.ReportAllocs()
	for b.Loop() {
		opts := post("/auth/webauthn/options/signin", "")
		b.StopTimer()
		assertion, err := key.Assert(opts.Body.Bytes())
		if err != nil {
			b.Fatal(err)
		}
		body := finish(opts, assertion)
		b.StartTimer()
		if rec := post("/auth/webauthn/signin", body); rec.Header().Get("St-Access-Token") == "" {
			b.Fatal("no session")
		}
	}
}
