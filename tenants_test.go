package auth_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/emailverification"
	"github.com/latchkit/auth/passwordless"
	"github.com/latchkit/auth/store"
)

// tenantServer is a server with tenants on and every way to sign in, and
// the tenant acme with the deployment's rules.
func tenantServer(t *testing.T, cfg auth.Config) (*authtest.Server, *authtest.Provider) {
	t.Helper()
	p := authtest.NewProvider(t)
	cfg.Tenants.Enabled = true
	cfg.ThirdParty.Providers = append(cfg.ThirdParty.Providers, p.Provider())
	if cfg.Passwordless.Flow == passwordless.Off {
		cfg.Passwordless = passwordless.Config{Flow: passwordless.CodeAndLink}
	}
	s := pkServer(t, cfg)
	if err := s.Auth.PutTenant(t.Context(), auth.Tenant{ID: "acme"}); err != nil {
		t.Fatal(err)
	}
	return s, p
}

// tenantClient is a new client of s in mode m that signs in to tenant.
func tenantClient(s *authtest.Server, m authtest.Mode, tenant string) *authtest.Client {
	c := s.NewClient(m)
	c.Tenant = tenant
	return c
}

// wantTenantSession checks an OK sign-in answer: a session in tenant of
// a user whose login methods are tenant's, and returns the user's id.
func wantTenantSession(t *testing.T, what string, res *authtest.Response, tenant string) string {
	t.Helper()
	if res.StatusCode != http.StatusOK || res.Status != "OK" || !res.IssuedTokens() {
		t.Fatalf("%s: %d %s, want OK with a session", what, res.StatusCode, res.Body)
	}
	ft := decodeFrontToken(t, res.Header.Get("Front-Token"))
	if ft.UP["tId"] != tenant {
		t.Errorf("%s: the access token's tId is %v, want %s", what, ft.UP["tId"], tenant)
	}
	var body struct {
		User struct {
			ID           string
			TenantIDs    []string
			LoginMethods []struct{ TenantIDs []string }
		}
	}
	if err := json.Unmarshal(res.Body, &body); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(body.User.TenantIDs, []string{tenant}) {
		t.Errorf("%s: the user's tenantIds are %v, want [%s]", what, body.User.TenantIDs, tenant)
	}
	for _, m := range body.User.LoginMethods {
		if !slices.Equal(m.TenantIDs, []string{tenant}) {
			t.Errorf("%s: a login method's tenantIds are %v, want [%s]", what, m.TenantIDs, tenant)
		}
	}
	return body.User.ID
}

// TestTenantsSignUpPerRecipe: for every way to sign in, the same identity
// in the public tenant and in acme is two users, each session carries
// its tenant, and the public user's credentials open nothing in acme.
func TestTenantsSignUpPerRecipe(t *testing.T) {
	for _, m := range authtest.Modes {
		t.Run(m.String(), func(t *testing.T) {
			s, p := tenantServer(t, auth.Config{})
			email := s.NewEmail()
			signUps := map[string]func(c *authtest.Client) *authtest.Response{
				"password": func(c *authtest.Client) *authtest.Response { return c.SignUp(email, "correct horse battery 9") },
				"code":     func(c *authtest.Client) *authtest.Response { return c.SignInWithCode("code-" + email) },
				"provider": func(c *authtest.Client) *authtest.Response { return c.SignInWithProvider(p) },
				"passkey": func(c *authtest.Client) *authtest.Response {
					return c.SignUpWithPasskey(s.NewAuthenticator(), "pk-"+email)
				},
				"magiclink": func(c *authtest.Client) *authtest.Response { return tenantMagicLink(t, s, c, "link-"+email) },
			}
			for name, signUp := range signUps {
				pub := wantTenantSession(t, name+" in public", signUp(tenantClient(s, m, "")), "public")
				acme := wantTenantSession(t, name+" in acme", signUp(tenantClient(s, m, "acme")), "acme")
				if pub == acme {
					t.Errorf("%s: one user %s in both tenants, want two", name, pub)
				}
				if name == "password" || name == "passkey" {
					continue // a second sign-up is refused; sign-in is TestTenantsCredentialsStayHome's
				}
				// Again: each tenant finds its own user.
				if again := wantTenantSession(t, name+" again in acme", signUp(tenantClient(s, m, "acme")), "acme"); again != acme {
					t.Errorf("%s: signing in again in acme found %s, want %s", name, again, acme)
				}
			}
		})
	}
}

// tenantMagicLink signs in with a magic link in c's tenant, checking that
// the link names it.
func tenantMagicLink(t *testing.T, s *authtest.Server, c *authtest.Client, email string) *authtest.Response {
	t.Helper()
	n := len(s.Mailbox.Messages())
	if res := c.CreateCode(email); res.Status != "OK" {
		t.Fatalf("createCode: %d %s", res.StatusCode, res.Body)
	}
	link := authtest.PasswordlessLink(t, s.Mailbox.WaitFor(t, n+1, 5*time.Second)[n])
	want := c.Tenant
	if want == "" {
		want = "public"
	}
	if !strings.Contains(link, "&tenantId="+want+"#") {
		t.Errorf("the magic link %s does not name the tenant %s", link, want)
	}
	return c.ConsumeLink(link)
}

// TestTenantsCredentialsStayHome: an account of the public tenant signs in
// nowhere else, and what one tenant mails opens nothing in another.
func TestTenantsCredentialsStayHome(t *testing.T) {
	for _, m := range authtest.Modes {
		t.Run(m.String(), func(t *testing.T) {
			s, _ := tenantServer(t, auth.Config{EmailVerification: emailverification.Config{Mode: emailverification.Optional}})
			email, pw := s.NewEmail(), "correct horse battery 9"
			pub := tenantClient(s, m, "")
			wantTenantSession(t, "sign-up in public", pub.SignUp(email, pw), "public")

			acme := tenantClient(s, m, "acme")
			if res := acme.SignIn(email, pw); res.Status != "WRONG_CREDENTIALS_ERROR" || res.IssuedTokens() {
				t.Errorf("the public account's password in acme: %d %s, want WRONG_CREDENTIALS_ERROR", res.StatusCode, res.Body)
			}
			// A reset asked for in acme mails nothing: there is no such
			// account there. One asked for in public carries its tenant,
			// and its token resets nothing in acme.
			n := len(s.Mailbox.Messages())
			acme.RequestPasswordReset(email)
			pub.RequestPasswordReset(email)
			msgs := s.Mailbox.WaitFor(t, n+1, 5*time.Second)
			link, tok := authtest.ResetLink(t, msgs[n])
			if !strings.Contains(link, "tenantId=public") {
				t.Errorf("the reset link %s does not name the public tenant", link)
			}
			if res := acme.ResetPassword(tok, "another horse battery 9"); res.Status != "RESET_PASSWORD_INVALID_TOKEN_ERROR" {
				t.Errorf("the public tenant's reset token in acme: %d %s, want RESET_PASSWORD_INVALID_TOKEN_ERROR", res.StatusCode, res.Body)
			}
			if res := pub.ResetPassword(tok, "another horse battery 9"); res.Status != "OK" {
				t.Errorf("the reset token in its own tenant: %d %s, want OK", res.StatusCode, res.Body)
			}

			// A code started in acme is no code in public.
			res := acme.CreateCode("otp-" + email)
			msgs = s.Mailbox.WaitFor(t, n+2, 5*time.Second)
			code := authtest.PasswordlessCode(t, msgs[n+1])
			device, _ := res.JSON["deviceId"].(string)
			flow, _ := res.JSON["preAuthSessionId"].(string)
			if res := tenantClient(s, m, "").ConsumeCode(device, flow, code); res.Status != "RESTART_FLOW_ERROR" || res.IssuedTokens() {
				t.Errorf("acme's code in public: %d %s, want RESTART_FLOW_ERROR", res.StatusCode, res.Body)
			}
			wantTenantSession(t, "acme's code in acme", acme.ConsumeCode(device, flow, code), "acme")
		})
	}
}

// TestTenantsVerificationLink: a verification link names the tenant of
// the login it verifies, and verifies nothing in another.
func TestTenantsVerificationLink(t *testing.T) {
	s, _ := tenantServer(t, auth.Config{EmailVerification: emailverification.Config{Mode: emailverification.Optional}})
	acme := tenantClient(s, authtest.Cookie, "acme")
	wantTenantSession(t, "sign-up in acme", acme.SignUp(s.NewEmail(), "correct horse battery 9"), "acme")
	n := len(s.Mailbox.Messages())
	if res := acme.SendVerificationEmail(); res.Status != "OK" {
		t.Fatalf("send verification: %d %s", res.StatusCode, res.Body)
	}
	link, tok := authtest.VerificationLink(t, s.Mailbox.WaitFor(t, n+1, 5*time.Second)[n])
	if !strings.Contains(link, "tenantId=acme") {
		t.Errorf("the verification link %s does not name acme", link)
	}
	if res := tenantClient(s, authtest.Header, "").VerifyEmail(tok); res.Status != "EMAIL_VERIFICATION_INVALID_TOKEN_ERROR" {
		t.Errorf("acme's verification token in public: %d %s", res.StatusCode, res.Body)
	}
	if res := tenantClient(s, authtest.Header, "acme").VerifyEmail(tok); res.Status != "OK" {
		t.Errorf("acme's verification token in acme: %d %s", res.StatusCode, res.Body)
	}
}

// TestTenantsRefreshKeepsTenant: a refresh keeps the session's tenant,
// whatever path it is sent to.
func TestTenantsRefreshKeepsTenant(t *testing.T) {
	for _, m := range authtest.Modes {
		t.Run(m.String(), func(t *testing.T) {
			s, _ := tenantServer(t, auth.Config{})
			c := tenantClient(s, m, "acme")
			wantTenantSession(t, "sign-up", c.SignUp(s.NewEmail(), "correct horse battery 9"), "acme")
			s.Clock.Advance(s.AuthConfig.AccessTokenLifetime + time.Second)
			c.Tenant = "" // the SDKs refresh without the segment
			res := c.Refresh()
			if res.StatusCode != http.StatusOK {
				t.Fatalf("refresh: %d %s", res.StatusCode, res.Body)
			}
			if ft := decodeFrontToken(t, res.Header.Get("Front-Token")); ft.UP["tId"] != "acme" {
				t.Errorf("the refreshed token's tId is %v, want acme", ft.UP["tId"])
			}
			if res := c.Get("/api/session"); res.StatusCode != http.StatusOK {
				t.Errorf("the refreshed session: %d %s", res.StatusCode, res.Body)
			}
		})
	}
}

// TestTenantsLoginMethods: GET /loginmethods answers each tenant's own
// first factors and providers.
func TestTenantsLoginMethods(t *testing.T) {
	s, p := tenantServer(t, auth.Config{})
	sso := authtest.NewProvider(t)
	sso.ID = "acme-sso"
	err := s.Auth.PutTenant(t.Context(), auth.Tenant{ID: "globex",
		FirstFactors: []string{auth.FactorThirdParty},
		Providers:    []auth.TenantProvider{{ID: sso.ID, Name: "Globex SSO", Issuer: sso.URL, ClientID: sso.ClientID, ClientSecret: sso.ClientSecret}},
	})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ path, want string }{
		{"/auth/loginmethods", `{"status":"OK","emailPassword":{"enabled":true},"thirdParty":{"enabled":true,"providers":[{"id":"authtest","name":"Authtest"}]},"passwordless":{"enabled":true},"webauthn":{"enabled":true},"firstFactors":["emailpassword","thirdparty","otp-email","link-email","webauthn"]}`},
		{"/auth/acme/loginmethods", `{"status":"OK","emailPassword":{"enabled":true},"thirdParty":{"enabled":true,"providers":[{"id":"authtest","name":"Authtest"}]},"passwordless":{"enabled":true},"webauthn":{"enabled":true},"firstFactors":["emailpassword","thirdparty","otp-email","link-email","webauthn"]}`},
		{"/auth/globex/loginmethods", `{"status":"OK","emailPassword":{"enabled":false},"thirdParty":{"enabled":true,"providers":[{"id":"acme-sso","name":"Globex SSO"}]},"passwordless":{"enabled":false},"webauthn":{"enabled":false},"firstFactors":["thirdparty"]}`},
		{"/auth/GLOBEX/loginmethods", `{"status":"OK","emailPassword":{"enabled":false},"thirdParty":{"enabled":true,"providers":[{"id":"acme-sso","name":"Globex SSO"}]},"passwordless":{"enabled":false},"webauthn":{"enabled":false},"firstFactors":["thirdparty"]}`},
	}
	for _, tc := range cases {
		res := send(t, s, http.MethodGet, tc.path, "", nil)
		wantReply(t, tc.path, res.StatusCode, res.Body, http.StatusOK, tc.want)
	}

	// globex signs in with its own provider only.
	c := tenantClient(s, authtest.Cookie, "globex")
	sso.SetIdentity("g-1", "ann@globex.example", true)
	wantTenantSession(t, "globex's provider", c.SignInWithProvider(sso), "globex")
	res := c.SignUp(s.NewEmail(), "correct horse battery 9")
	wantReply(t, "a password sign-up in globex", res.StatusCode, res.Body, http.StatusUnauthorized,
		`{"message":"A valid session is required to authenticate with secondary factors"}`)
	res = send(t, s, http.MethodGet, "/auth/globex/authorisationurl?thirdPartyId="+p.ID+"&redirectURIOnProviderDashboard=x", "", nil)
	if res.StatusCode != http.StatusBadRequest {
		t.Errorf("the deployment's provider in globex: %d %s, want 400", res.StatusCode, res.Body)
	}
	res = send(t, s, http.MethodGet, "/auth/acme/authorisationurl?thirdPartyId="+sso.ID+"&redirectURIOnProviderDashboard=x", "", nil)
	if res.StatusCode != http.StatusBadRequest {
		t.Errorf("globex's provider in acme: %d %s, want 400", res.StatusCode, res.Body)
	}
}

// TestTenantsUnknown: a path that names no tenant is a clean 404, and a
// route's own first segment is never read as a tenant.
func TestTenantsUnknown(t *testing.T) {
	s, _ := tenantServer(t, auth.Config{})
	for _, path := range []string{"/auth/nosuch/signin", "/auth/nosuch/loginmethods", "/auth/a_b/signin"} {
		res := send(t, s, http.MethodPost, path, `{}`, nil)
		if res.StatusCode != http.StatusNotFound {
			t.Errorf("%s: %d %s, want 404", path, res.StatusCode, res.Body)
		}
	}
	res := send(t, s, http.MethodGet, "/auth/nosuch/loginmethods", "", nil)
	wantReply(t, "an unknown tenant", res.StatusCode, res.Body, http.StatusNotFound, `{"message":"unknown tenant"}`)
	res = send(t, s, http.MethodGet, "/auth/public/loginmethods", "", nil)
	if res.StatusCode != http.StatusOK {
		t.Errorf("/auth/public/loginmethods: %d %s", res.StatusCode, res.Body)
	}
}

// TestTenantsConfig: what PutTenant refuses, and what it keeps.
func TestTenantsConfig(t *testing.T) {
	s, _ := tenantServer(t, auth.Config{Secrets: []string{sealSecret(t)}})
	ctx := t.Context()
	for _, bad := range []auth.Tenant{
		{ID: "public"}, {ID: "Acme"}, {ID: ""}, {ID: "dashboard"}, {ID: "appid-x"}, {ID: "a/b"},
		{ID: "t1", FirstFactors: []string{"sms"}},
		{ID: "t2", RequiredSecondFactors: []string{auth.FactorTOTP}}, // no MFA here
		{ID: "t3", Providers: []auth.TenantProvider{{ID: "nosuch"}}},
		{ID: "t4", Providers: []auth.TenantProvider{{ID: "x", Issuer: "http://idp.example", ClientID: "c"}}},
	} {
		if err := s.Auth.PutTenant(ctx, bad); err == nil {
			t.Errorf("PutTenant(%+v) took it", bad)
		}
	}
	want := auth.Tenant{ID: "initech", FirstFactors: []string{auth.FactorThirdParty},
		Providers: []auth.TenantProvider{{ID: "initech-sso", Issuer: "https://idp.initech.example", ClientID: "c", ClientSecret: "s3cret"}}}
	if err := s.Auth.PutTenant(ctx, want); err != nil {
		t.Fatal(err)
	}
	got, err := s.Auth.Tenant(ctx, "initech")
	if err != nil || got.Providers[0].ClientSecret != "s3cret" || !slices.Equal(got.FirstFactors, want.FirstFactors) {
		t.Errorf("Tenant: %+v %v, want %+v", got, err, want)
	}
	st, _ := s.AuthConfig.Store.(store.TenantStore).Tenant(ctx, "initech")
	if strings.Contains(string(st.Config), "s3cret") {
		t.Errorf("the client secret is in the clear in the store: %s", st.Config)
	}
	if _, err := s.Auth.Tenant(ctx, "nosuch"); err != auth.ErrUnknownTenant {
		t.Errorf("Tenant(nosuch): %v, want ErrUnknownTenant", err)
	}
	all, err := s.Auth.Tenants(ctx)
	if err != nil || len(all) != 2 || all[0].ID != "acme" || all[1].ID != "initech" {
		t.Errorf("Tenants: %+v %v, want acme and initech", all, err)
	}
	if err := s.Auth.DeleteTenant(ctx, "initech"); err != nil {
		t.Fatal(err)
	}
	res := send(t, s, http.MethodGet, "/auth/initech/loginmethods", "", nil)
	if res.StatusCode != http.StatusNotFound {
		t.Errorf("a deleted tenant's loginmethods: %d %s, want 404", res.StatusCode, res.Body)
	}
}

// TestTenantsSettings: a tenant's password policy and access-token
// lifetime hold in it, and not in the public tenant.
func TestTenantsSettings(t *testing.T) {
	s, _ := tenantServer(t, auth.Config{})
	err := s.Auth.PutTenant(t.Context(), auth.Tenant{ID: "acme", PasswordMinLength: 16, AccessTokenLifetime: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	short := "correct horse 9" // 15 characters
	res := tenantClient(s, authtest.Header, "acme").SignUp(s.NewEmail(), short)
	wantReply(t, "a short password in acme", res.StatusCode, res.Body, http.StatusOK,
		`{"status":"FIELD_ERROR","formFields":[{"id":"password","error":"Password must contain at least 16 characters"}]}`)
	pub := tenantClient(s, authtest.Header, "")
	wantTenantSession(t, "the same password in public", pub.SignUp(s.NewEmail(), short), "public")

	acme := tenantClient(s, authtest.Header, "acme")
	res = acme.SignUp(s.NewEmail(), short+"9")
	wantTenantSession(t, "a long enough password in acme", res, "acme")
	for what, c := range map[string]*authtest.Client{"acme": acme, "public": pub} {
		ft := decodeFrontToken(t, c.FrontToken)
		want := auth.DefaultAccessTokenLifetime
		if what == "acme" {
			want = 5 * time.Minute
		}
		if got := time.UnixMilli(ft.ATE).Sub(s.Clock.Now()); got != want {
			t.Errorf("%s's access token lasts %v, want %v", what, got, want)
		}
	}
	s.Clock.Advance(5*time.Minute + time.Second)
	if res := acme.Refresh(); res.StatusCode != http.StatusOK {
		t.Fatalf("acme's refresh: %d %s", res.StatusCode, res.Body)
	}
	if got := time.UnixMilli(decodeFrontToken(t, acme.FrontToken).ATE).Sub(s.Clock.Now()); got != 5*time.Minute {
		t.Errorf("acme's refreshed access token lasts %v, want 5m", got)
	}
}

// TestTenantsSignInPerRecipe: a password and a passkey sign in where they
// were made, and nowhere else; a passkey's recovery link names its tenant.
func TestTenantsSignInPerRecipe(t *testing.T) {
	for _, m := range authtest.Modes {
		t.Run(m.String(), func(t *testing.T) {
			s, _ := tenantServer(t, auth.Config{})
			email, pw := s.NewEmail(), "correct horse battery 9"
			users := map[string]string{}
			keys := map[string]*authtest.Authenticator{}
			for _, tenant := range []string{"", "acme"} {
				want := store.TenantID(tenant)
				users[want] = wantTenantSession(t, "password sign-up in "+want, tenantClient(s, m, tenant).SignUp(email, pw), want)
				keys[want] = s.NewAuthenticator()
				res := tenantClient(s, m, tenant).SignUpWithPasskey(keys[want], "pk-"+email)
				users["pk-"+want] = wantTenantSession(t, "passkey sign-up in "+want, res, want)
			}
			for _, tenant := range []string{"", "acme"} {
				want := store.TenantID(tenant)
				if got := wantTenantSession(t, "password sign-in in "+want, tenantClient(s, m, tenant).SignIn(email, pw), want); got != users[want] {
					t.Errorf("the password signed in to %s as %s, want %s", want, got, users[want])
				}
				if got := wantTenantSession(t, "passkey sign-in in "+want, tenantClient(s, m, tenant).SignInWithPasskey(keys[want]), want); got != users["pk-"+want] {
					t.Errorf("the passkey signed in to %s as %s, want %s", want, got, users["pk-"+want])
				}
			}
			if u, err := s.Auth.UserByEmail(auth.InTenant(t.Context(), "acme"), email); err != nil || u.ID != users["acme"] {
				t.Errorf("UserByEmail in acme: %v %v, want %s", u.ID, err, users["acme"])
			}
			if u, err := s.Auth.UserByEmail(t.Context(), email); err != nil || u.ID != users["public"] {
				t.Errorf("UserByEmail: %v %v, want the public tenant's %s", u.ID, err, users["public"])
			}
			res := tenantClient(s, m, "acme").SignInWithPasskey(keys["public"])
			if res.Status != "INVALID_CREDENTIALS_ERROR" || res.IssuedTokens() {
				t.Errorf("the public tenant's passkey in acme: %d %s, want INVALID_CREDENTIALS_ERROR", res.StatusCode, res.Body)
			}
			n := len(s.Mailbox.Messages())
			acme := tenantClient(s, m, "acme")
			if res := acme.Do(http.MethodPost, "/auth/acme/user/webauthn/reset/token", map[string]string{"email": "pk-" + email}); res.Status != "OK" {
				t.Fatalf("passkey recovery in acme: %d %s", res.StatusCode, res.Body)
			}
			link, _ := authtest.ResetLink(t, s.Mailbox.WaitFor(t, n+1, 5*time.Second)[n])
			if !strings.Contains(link, "/webauthn/recover?token=") || !strings.HasSuffix(link, "&tenantId=acme") {
				t.Errorf("acme's passkey recovery link %s does not name acme", link)
			}
		})
	}
}

// TestTenantsChangeReachesEveryInstance: a tenant's rules changed through
// one instance hold on another sharing the store within
// Config.Tenants.Refresh, and on the first at once; requests racing the
// change see the old rules or the new, never anything else.
func TestTenantsChangeReachesEveryInstance(t *testing.T) {
	one, _ := tenantServer(t, auth.Config{})
	two := authtest.NewServer(t, auth.Config{Store: one.AuthConfig.Store, Now: one.Clock.Now, AppURL: one.AuthConfig.AppURL,
		Tenants: auth.TenantsConfig{Enabled: true}, Passwordless: one.AuthConfig.Passwordless, ThirdParty: one.AuthConfig.ThirdParty})
	factors := func(s *authtest.Server) string {
		res := send(t, s, http.MethodGet, "/auth/acme/loginmethods", "", nil)
		var body struct{ FirstFactors []string }
		json.Unmarshal(res.Body, &body)
		return strings.Join(body.FirstFactors, ",")
	}
	before := factors(two)
	if before == auth.FactorEmailPassword {
		t.Fatalf("acme starts with %s alone: the change below would prove nothing", before)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if got := factors(one); got != before && got != auth.FactorEmailPassword {
					t.Errorf("acme's first factors during the change: %q", got)
					return
				}
			}
		}()
	}
	if err := one.Auth.PutTenant(t.Context(), auth.Tenant{ID: "acme", FirstFactors: []string{auth.FactorEmailPassword}}); err != nil {
		t.Fatal(err)
	}
	close(stop)
	wg.Wait()
	if got := factors(one); got != auth.FactorEmailPassword {
		t.Errorf("the instance that changed acme: %q, want emailpassword at once", got)
	}
	if got := factors(two); got != before {
		t.Errorf("another instance before Refresh: %q, want the rules it read, %q", got, before)
	}
	one.Clock.Advance(10 * time.Second)
	if got := factors(two); got != auth.FactorEmailPassword {
		t.Errorf("another instance after Refresh (10s): %q, want emailpassword", got)
	}
}
