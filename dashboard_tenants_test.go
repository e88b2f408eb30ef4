package auth_test

import (
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/dashboard"
	"github.com/latchkit/auth/passwordless"
)

// dashTenantServer is dashServer with tenants on, MFA's TOTP factor if
// mfa, and the tenant acme with the deployment's rules.
func dashTenantServer(t *testing.T, mfa bool) (*authtest.Server, *eventLog) {
	t.Helper()
	cfg := auth.Config{Tenants: auth.TenantsConfig{Enabled: true}, Passwordless: passwordless.Config{Flow: passwordless.CodeAndLink}}
	if mfa {
		cfg.MFA.Factors = []string{auth.FactorTOTP}
	}
	s, _, ev := dashServer(t, cfg)
	if err := s.Auth.PutTenant(t.Context(), auth.Tenant{ID: "acme"}); err != nil {
		t.Fatal(err)
	}
	return s, ev
}

// dashIn sends a request to the API under tenant's segment, with the key.
func dashIn(t *testing.T, s *authtest.Server, tenant, method, path string, body any) *authtest.Response {
	t.Helper()
	return dashAs(t, s, method, "/auth/"+tenant+"/dashboard/api"+path, body, hdr("Authorization", "Bearer "+dashKey))
}

// jsonStrings is v, a JSON array of strings, or nil for null.
func jsonStrings(t *testing.T, v any) []string {
	t.Helper()
	if v == nil {
		return nil
	}
	list, ok := v.([]any)
	if !ok {
		t.Fatalf("%v is not a list", v)
	}
	out := []string{}
	for _, s := range list {
		out = append(out, s.(string))
	}
	return out
}

func TestDashboardTenantsList(t *testing.T) {
	t.Parallel()
	s, _ := dashTenantServer(t, false)
	if err := s.Auth.PutTenant(t.Context(), auth.Tenant{ID: "beta", FirstFactors: []string{auth.FactorEmailPassword}}); err != nil {
		t.Fatal(err)
	}
	res := dash(t, s, "GET", "/tenants", nil)
	wantStatus(t, "tenants", res, "OK")
	deployment := []string{}
	var ids []string
	for _, x := range res.JSON["tenants"].([]any) {
		tn := x.(map[string]any)
		id, factors := tn["tenantId"].(string), jsonStrings(t, tn["firstFactors"])
		ids = append(ids, id)
		switch id {
		case "public":
			deployment = factors
		case "acme":
			if !slices.Equal(factors, deployment) {
				t.Errorf("acme's first factors %v, want the deployment's %v", factors, deployment)
			}
		case "beta":
			if !slices.Equal(factors, []string{auth.FactorEmailPassword}) {
				t.Errorf("beta's first factors %v, want its own", factors)
			}
		}
	}
	if !slices.Equal(ids, []string{"public", "acme", "beta"}) || len(deployment) == 0 {
		t.Errorf("tenants %v (public's factors %v), want public, acme, beta, public's not empty", ids, deployment)
	}
	// Without tenants, the public tenant alone.
	off, _, _ := dashServer(t, auth.Config{})
	res = dash(t, off, "GET", "/tenants", nil)
	if list := res.JSON["tenants"].([]any); len(list) != 1 || list[0].(map[string]any)["tenantId"] != "public" {
		t.Errorf("tenants off: %s, want public alone", res.Body)
	}
}

// A user of acme is listed and counted under acme's segment, not the
// public tenant's, and the other way round.
func TestDashboardTenantUsers(t *testing.T) {
	t.Parallel()
	s, _ := dashTenantServer(t, false)
	acme := wantTenantSession(t, "sign-up in acme", tenantClient(s, authtest.Header, "acme").SignUp(s.NewEmail(), "correct horse battery 9"), "acme")
	_, pub := s.SignedIn(authtest.Header)
	for _, tc := range []struct {
		prefix, want string
	}{{"/auth/dashboard/api", pub.ID}, {"/auth/public/dashboard/api", pub.ID}, {"/auth/acme/dashboard/api", acme}} {
		h := hdr("Authorization", "Bearer "+dashKey)
		res := dashAs(t, s, "GET", tc.prefix+"/users?limit=10", nil, h)
		wantStatus(t, tc.prefix, res, "OK")
		if ids := idsOf(t, res); !slices.Equal(ids, []string{tc.want}) {
			t.Errorf("%s/users: %v, want [%s]", tc.prefix, ids, tc.want)
		}
		if res := dashAs(t, s, "GET", tc.prefix+"/users/count", nil, h); res.JSON["count"] != float64(1) {
			t.Errorf("%s/users/count: %s, want 1", tc.prefix, res.Body)
		}
	}
	if res := dashIn(t, s, "nobody", "GET", "/users?limit=10", nil); res.StatusCode != http.StatusNotFound {
		t.Errorf("an unknown tenant's users: %d %s, want 404", res.StatusCode, res.Body)
	}
}

func TestDashboardCreateTenant(t *testing.T) {
	t.Parallel()
	s, ev := dashTenantServer(t, false)
	res := dash(t, s, "POST", "/tenant", map[string]any{"tenantId": "beta", "firstFactors": []string{auth.FactorEmailPassword}})
	wantStatus(t, "create beta", res, "OK")
	if res.JSON["createdNew"] != true {
		t.Errorf("create beta: %s, want createdNew true", res.Body)
	}
	if got, err := s.Auth.Tenant(t.Context(), "beta"); err != nil || !slices.Equal(got.FirstFactors, []string{auth.FactorEmailPassword}) {
		t.Errorf("beta: %+v %v, want its first factors kept", got, err)
	}
	changed := ev.of(auth.EventTenantChanged)
	if i := slices.IndexFunc(changed, func(e auth.Event) bool { return e.Tenant == "beta" }); i < 0 || changed[i].Operator != dashboard.KeyOperator {
		t.Errorf("tenant_changed events %+v, want beta's by the key", changed)
	}
	wantStatus(t, "create it again", dash(t, s, "POST", "/tenant", map[string]any{"tenantId": "beta"}), "TENANT_ID_ALREADY_EXISTS_ERROR")
	wantStatus(t, "create public", dash(t, s, "POST", "/tenant", map[string]any{"tenantId": "public"}), "TENANT_ID_ALREADY_EXISTS_ERROR")
	for _, id := range []string{"Not An Id", "dashboard", "appid-x", ""} {
		res := dash(t, s, "POST", "/tenant", map[string]any{"tenantId": id})
		wantStatus(t, "create "+id, res, "INVALID_TENANT_ID_ERROR")
		if msg, _ := res.JSON["message"].(string); msg == "" {
			t.Errorf("create %q: %s, want a message", id, res.Body)
		}
	}
	for _, body := range []map[string]any{
		{}, {"tenantId": 7}, {"tenantId": nil}, {"tenantId": "gamma", "firstFactors": "emailpassword"},
		{"tenantId": "gamma", "firstFactors": []string{}}, {"tenantId": "gamma", "firstFactors": []string{"carrier-pigeon"}},
	} {
		if res := dash(t, s, "POST", "/tenant", body); res.StatusCode != http.StatusBadRequest || res.JSON["message"] == nil {
			t.Errorf("create with %v: %d %s, want 400 with a message", body, res.StatusCode, res.Body)
		}
	}
	if _, err := s.Auth.Tenant(t.Context(), "gamma"); err == nil {
		t.Error("a refused creation created gamma")
	}
	off, _, _ := dashServer(t, auth.Config{})
	wantStatus(t, "tenants off", dash(t, off, "POST", "/tenant", map[string]any{"tenantId": "beta"}), "MULTITENANCY_NOT_ENABLED_IN_CORE_ERROR")
}

func TestDashboardGetTenant(t *testing.T) {
	t.Parallel()
	s, _ := dashTenantServer(t, true)
	if err := s.Auth.PutTenant(t.Context(), auth.Tenant{ID: "beta", FirstFactors: []string{auth.FactorEmailPassword},
		RequiredSecondFactors: []string{auth.FactorTOTP}, PasswordMinLength: 12}); err != nil {
		t.Fatal(err)
	}
	wantTenantSession(t, "sign-up in beta", tenantClient(s, authtest.Header, "beta").SignUp(s.NewEmail(), "correct horse battery 9"), "beta")
	res := dashIn(t, s, "beta", "GET", "/tenant", nil)
	wantStatus(t, "beta", res, "OK")
	want := map[string]any{"tenantId": "beta", "thirdParty": map[string]any{"providers": []any{}},
		"firstFactors": []any{"emailpassword"}, "requiredSecondaryFactors": []any{"totp"}, "coreConfig": []any{}, "userCount": float64(1)}
	if !reflect.DeepEqual(res.JSON["tenant"], want) {
		t.Errorf("beta: %s, want %v", res.Body, want)
	}
	res = dash(t, s, "GET", "/tenant", nil)
	wantStatus(t, "public", res, "OK")
	pub := res.JSON["tenant"].(map[string]any)
	if pub["tenantId"] != "public" || pub["requiredSecondaryFactors"] != nil || len(jsonStrings(t, pub["firstFactors"])) == 0 {
		t.Errorf("public: %s, want its first factors and no required second factors", res.Body)
	}
}

func TestDashboardDeleteTenant(t *testing.T) {
	t.Parallel()
	s, ev := dashTenantServer(t, false)
	acmeUser := wantTenantSession(t, "sign-up in acme", tenantClient(s, authtest.Header, "acme").SignUp(s.NewEmail(), "correct horse battery 9"), "acme")
	wantStatus(t, "delete public", dash(t, s, "DELETE", "/tenant", nil), "CANNOT_DELETE_PUBLIC_TENANT_ERROR")
	wantStatus(t, "delete public by its segment", dashIn(t, s, "public", "DELETE", "/tenant", nil), "CANNOT_DELETE_PUBLIC_TENANT_ERROR")
	res := dashIn(t, s, "acme", "DELETE", "/tenant", nil)
	wantStatus(t, "delete acme", res, "OK")
	if res.JSON["didExist"] != true {
		t.Errorf("delete acme: %s, want didExist true", res.Body)
	}
	if _, err := s.Auth.Tenant(t.Context(), "acme"); err == nil {
		t.Error("acme is still there")
	}
	if deleted := ev.of(auth.EventTenantDeleted); len(deleted) != 1 || deleted[0].Tenant != "acme" || deleted[0].Operator != dashboard.KeyOperator {
		t.Errorf("tenant_deleted events %+v, want acme's by the key", deleted)
	}
	// Its users stay, as DeleteTenant leaves them.
	wantStatus(t, "acme's user", dash(t, s, "GET", "/user?userId="+acmeUser, nil), "OK")
	if res := dashIn(t, s, "acme", "DELETE", "/tenant", nil); res.StatusCode != http.StatusNotFound {
		t.Errorf("delete acme again: %d %s, want 404, as every path of a tenant that is no more", res.StatusCode, res.Body)
	}
}

func TestDashboardTenantFirstFactor(t *testing.T) {
	t.Parallel()
	s, _ := dashTenantServer(t, false)
	ctx := t.Context()
	put := func(tenant, factor string, enable bool) *authtest.Response {
		return dashIn(t, s, tenant, "PUT", "/tenant/first-factor", map[string]any{"factorId": factor, "enable": enable})
	}
	deployment := jsonStrings(t, dash(t, s, "GET", "/tenants", nil).JSON["tenants"].([]any)[0].(map[string]any)["firstFactors"])
	wantStatus(t, "disable otp-email", put("acme", auth.FactorOTPEmail, false), "OK")
	want := slices.DeleteFunc(slices.Clone(deployment), func(f string) bool { return f == auth.FactorOTPEmail })
	if got, err := s.Auth.Tenant(ctx, "acme"); err != nil || !slices.Equal(got.FirstFactors, want) || len(want) == len(deployment) {
		t.Errorf("acme's first factors %v, %v: want the deployment's %v without otp-email", got.FirstFactors, err, deployment)
	}
	wantStatus(t, "enable otp-email", put("acme", auth.FactorOTPEmail, true), "OK")
	if got, _ := s.Auth.Tenant(ctx, "acme"); !slices.Contains(got.FirstFactors, auth.FactorOTPEmail) {
		t.Errorf("acme's first factors %v, want otp-email back", got.FirstFactors)
	}
	wantStatus(t, "disable emailpassword", put("acme", auth.FactorEmailPassword, false), "OK")
	if got, _ := s.Auth.Tenant(ctx, "acme"); slices.Contains(got.FirstFactors, auth.FactorEmailPassword) {
		t.Errorf("acme's first factors %v, want emailpassword out", got.FirstFactors)
	}
	if res := tenantClient(s, authtest.Header, "acme").SignUp(s.NewEmail(), "correct horse battery 9"); res.Status == "OK" {
		t.Errorf("a password sign-up in acme with emailpassword off: %d %s", res.StatusCode, res.Body)
	}
	res := put("acme", "carrier-pigeon", true)
	wantStatus(t, "an unknown factor", res, "RECIPE_NOT_CONFIGURED_ON_BACKEND_SDK_ERROR")
	if res.JSON["message"] == nil {
		t.Errorf("an unknown factor: %s, want a message", res.Body)
	}
	res = dash(t, s, "PUT", "/tenant/first-factor", map[string]any{"factorId": auth.FactorEmailPassword, "enable": false})
	wantDashMessage(t, res, http.StatusBadRequest, "the public tenant's rules are the application's configuration (auth.Config), which the dashboard cannot change")
	// The last factor stays.
	if err := s.Auth.PutTenant(ctx, auth.Tenant{ID: "solo", FirstFactors: []string{auth.FactorEmailPassword}}); err != nil {
		t.Fatal(err)
	}
	wantDashMessage(t, put("solo", auth.FactorEmailPassword, false), http.StatusBadRequest, "a tenant needs at least one first factor")
	for _, body := range []map[string]any{{}, {"factorId": "emailpassword"}, {"factorId": 1, "enable": true}, {"factorId": "emailpassword", "enable": "yes"}} {
		if res := dashIn(t, s, "acme", "PUT", "/tenant/first-factor", body); res.StatusCode != http.StatusBadRequest {
			t.Errorf("first-factor with %v: %d %s, want 400", body, res.StatusCode, res.Body)
		}
	}
}

func TestDashboardTenantSecondFactor(t *testing.T) {
	t.Parallel()
	put := func(s *authtest.Server, tenant, factor string, enable bool) *authtest.Response {
		return dashIn(t, s, tenant, "PUT", "/tenant/required-secondary-factor", map[string]any{"factorId": factor, "enable": enable})
	}
	plain, _ := dashTenantServer(t, false)
	wantStatus(t, "without MFA", put(plain, "acme", auth.FactorTOTP, true), "MFA_NOT_INITIALIZED_ERROR")

	s, _ := dashTenantServer(t, true)
	res := put(s, "acme", auth.FactorTOTP, true)
	wantStatus(t, "require totp", res, "OK")
	if v, ok := res.JSON["isMFARequirementsForAuthOverridden"]; !ok || v != false {
		t.Errorf("require totp: %s, want isMFARequirementsForAuthOverridden false", res.Body)
	}
	if got, _ := s.Auth.Tenant(t.Context(), "acme"); !slices.Equal(got.RequiredSecondFactors, []string{auth.FactorTOTP}) {
		t.Errorf("acme requires %v, want totp", got.RequiredSecondFactors)
	}
	wantStatus(t, "stop requiring totp", put(s, "acme", auth.FactorTOTP, false), "OK")
	res = dashIn(t, s, "acme", "GET", "/tenant", nil)
	if tn := res.JSON["tenant"].(map[string]any); tn["requiredSecondaryFactors"] != nil {
		t.Errorf("acme: %s, want requiredSecondaryFactors null", res.Body)
	}
	res = put(s, "acme", auth.FactorWebAuthn, true)
	wantStatus(t, "a factor MFA does not offer", res, "RECIPE_NOT_CONFIGURED_ON_BACKEND_SDK_ERROR")
	if res.JSON["message"] == nil {
		t.Errorf("a factor MFA does not offer: %s, want a message", res.Body)
	}
	if res := put(s, "public", auth.FactorTOTP, true); res.StatusCode != http.StatusBadRequest {
		t.Errorf("the public tenant: %d %s, want 400", res.StatusCode, res.Body)
	}
}

// TestDashboardTenantProviders: a tenant's own OpenID Connect client, set,
// read back with its secret, used by the tenant's sign-in page, and
// removed, taking the provider sign-in with it.
func TestDashboardTenantProviders(t *testing.T) {
	t.Parallel()
	s, _ := dashTenantServer(t, false)
	sso := authtest.NewProvider(t)
	get := func() *authtest.Response {
		return dashIn(t, s, "acme", "GET", "/thirdparty/config?thirdPartyId=acme-sso", nil)
	}
	res := get()
	wantReply(t, "a provider not configured", res.StatusCode, res.Body, http.StatusOK,
		`{"status":"OK","providerConfig":{"thirdPartyId":"acme-sso","clients":[{"clientId":"","clientSecret":""}],`+
			`"isGetAuthorisationRedirectUrlOverridden":false,"isExchangeAuthCodeForOAuthTokensOverridden":false,"isGetUserInfoOverridden":false}}`)
	put := map[string]any{"providerConfig": map[string]any{"thirdPartyId": "acme-sso", "name": "Acme SSO",
		"oidcDiscoveryEndpoint": sso.URL + "/.well-known/openid-configuration",
		"clients":               []map[string]any{{"clientId": sso.ClientID, "clientSecret": sso.ClientSecret}}}}
	res = dashIn(t, s, "acme", "PUT", "/thirdparty/config", put)
	wantReply(t, "a new provider", res.StatusCode, res.Body, http.StatusOK, `{"status":"OK","createdNew":true}`)
	res = dashIn(t, s, "acme", "PUT", "/thirdparty/config", put)
	wantReply(t, "the provider again", res.StatusCode, res.Body, http.StatusOK, `{"status":"OK","createdNew":false}`)
	res = get()
	if res.StatusCode != http.StatusOK || !strings.Contains(string(res.Body), `"oidcDiscoveryEndpoint":"`+sso.URL+`/.well-known/openid-configuration"`) ||
		!strings.Contains(string(res.Body), `"clientSecret":"`+sso.ClientSecret+`"`) {
		t.Errorf("the provider read back: %d %s", res.StatusCode, res.Body)
	}
	if got, _ := s.Auth.Tenant(t.Context(), "acme"); len(got.Providers) != 1 || got.Providers[0].Issuer != sso.URL {
		t.Errorf("acme's providers: %+v, want acme-sso alone", got.Providers)
	}
	lm := send(t, s, http.MethodGet, "/auth/acme/loginmethods", "", nil)
	if !strings.Contains(string(lm.Body), `"providers":[{"id":"acme-sso","name":"Acme SSO"}]`) {
		t.Errorf("acme's loginmethods: %s", lm.Body)
	}
	res = dashIn(t, s, "acme", "DELETE", "/thirdparty/config?thirdPartyId=acme-sso", nil)
	wantReply(t, "the provider removed", res.StatusCode, res.Body, http.StatusOK, `{"status":"OK","didConfigExist":true}`)
	res = dashIn(t, s, "acme", "DELETE", "/thirdparty/config?thirdPartyId=acme-sso", nil)
	wantReply(t, "removed again", res.StatusCode, res.Body, http.StatusOK, `{"status":"OK","didConfigExist":false}`)
	if got, _ := s.Auth.Tenant(t.Context(), "acme"); slices.Contains(got.FirstFactors, auth.FactorThirdParty) {
		t.Errorf("acme's first factors after its last provider went: %v", got.FirstFactors)
	}
	for _, bad := range []any{map[string]any{}, map[string]any{"providerConfig": 1}, map[string]any{"providerConfig": map[string]any{"thirdPartyId": "x"}}} {
		if res := dashIn(t, s, "acme", "PUT", "/thirdparty/config", bad); res.StatusCode != http.StatusBadRequest {
			t.Errorf("PUT %v: %d %s, want 400", bad, res.StatusCode, res.Body)
		}
	}
	wantDashMessage(t, dashIn(t, s, "public", "PUT", "/thirdparty/config", put), http.StatusBadRequest,
		"the public tenant's rules are the application's configuration (auth.Config), which the dashboard cannot change")
}
