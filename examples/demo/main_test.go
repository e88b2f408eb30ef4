package main

import (
	"encoding/json"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/provider"
	"github.com/latchkit/auth/store/memstore"
)

func TestParseOptions(t *testing.T) {
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }

	o, err := parseOptions(nil, getenv)
	if err != nil {
		t.Fatal(err)
	}
	if o.addr != "127.0.0.1:8080" || o.db != "sqlite:auth.db" || o.accessTTL != time.Hour ||
		o.refreshTTL != 100*24*time.Hour || o.resetTTL != time.Hour || o.appURL != "http://127.0.0.1:8080" {
		t.Errorf("defaults: %+v", o)
	}

	env["DEMO_ADDR"] = "127.0.0.1:9999"
	env["DEMO_ACCESS_TTL"] = "5s"
	env["DEMO_APP_URL"] = "https://app.example.com"
	o, err = parseOptions([]string{"-access-ttl", "7s"}, getenv)
	if err != nil {
		t.Fatal(err)
	}
	if o.addr != "127.0.0.1:9999" || o.accessTTL != 7*time.Second || o.appURL != "https://app.example.com" {
		t.Errorf("env twins, flag wins: %+v", o)
	}

	for _, bad := range [][]string{
		{"-access-ttl", "soon"},
		{"-app-url", "ftp://x"},
		{"-smtp", "http://mail"},
		{"-session-refreshes", "60"},
		{"-session-refreshes", "0/2s"},
		{"-session-refreshes", "5/never"},
		{"stray"},
	} {
		if _, err := parseOptions(bad, func(string) string { return "" }); err == nil {
			t.Errorf("parseOptions(%q) accepted", bad)
		}
	}
	if o.refreshes != (auth.Rate{}) {
		t.Errorf("default -session-refreshes: %+v, want the library's default", o.refreshes)
	}
	if o, err := parseOptions([]string{"-session-refreshes", "10/1s"}, getenv); err != nil || o.refreshes != (auth.Rate{Burst: 10, Every: time.Second}) {
		t.Errorf("-session-refreshes 10/1s: %+v, %v", o.refreshes, err)
	}
	env["DEMO_SESSION_REFRESHES"] = "off"
	if o, err := parseOptions(nil, getenv); err != nil || o.refreshes.Burst < 1<<30 {
		t.Errorf("DEMO_SESSION_REFRESHES=off: %+v, %v", o.refreshes, err)
	}
	delete(env, "DEMO_SESSION_REFRESHES")
	if len(o.origins) != 0 || o.sameSite != http.SameSiteLaxMode {
		t.Errorf("defaults: origins %q, SameSite %v; want none and Lax", o.origins, o.sameSite)
	}
	env["DEMO_ALLOWED_ORIGIN"] = "http://localhost:5173"
	env["DEMO_SAMESITE"] = "strict"
	o, err = parseOptions(nil, getenv)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(o.origins, []string{"http://localhost:5173"}) || o.sameSite != http.SameSiteStrictMode {
		t.Errorf("env DEMO_ALLOWED_ORIGIN, DEMO_SAMESITE: origins %q, SameSite %v", o.origins, o.sameSite)
	}
	o, err = parseOptions([]string{"-allowed-origin", "https://a.example.com, http://127.0.0.1:3000/", "-samesite", "None", "-app-url", ""}, getenv)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(o.origins, []string{"https://a.example.com", "http://127.0.0.1:3000/"}) || o.sameSite != http.SameSiteNoneMode {
		t.Errorf("flags win: origins %q, SameSite %v", o.origins, o.sameSite)
	}
	delete(env, "DEMO_ALLOWED_ORIGIN")
	delete(env, "DEMO_SAMESITE")
	for _, bad := range [][]string{
		{"-allowed-origin", "app.example.com"},
		{"-allowed-origin", "https://app.example.com/path"},
		{"-allowed-origin", "ftp://app.example.com"},
		{"-samesite", "sometimes"},
		{"-samesite", "none", "-addr", "0.0.0.0:8080"}, // http on a public address: not Secure
	} {
		if _, err := parseOptions(bad, func(string) string { return "" }); err == nil {
			t.Errorf("parseOptions(%q) accepted", bad)
		}
	}
	if _, err := parseOptions([]string{"-samesite", "none", "-addr", "0.0.0.0:8080", "-app-url", "https://app.example.com"}, func(string) string { return "" }); err != nil {
		t.Errorf("-samesite none behind https: %v", err)
	}

	env["DEMO_REFRESH_TTL"] = "a while"
	if _, err := parseOptions(nil, getenv); err == nil {
		t.Error("a malformed DEMO_REFRESH_TTL was accepted")
	}
	for _, db := range []string{"mongodb://x", "sqlite:", "mysql://host"} {
		if _, _, err := openStore(t.Context(), db); err == nil {
			t.Errorf("-db %q was accepted", db)
		}
	}
}

// TestMe signs up in header mode and reads /api/me, as the README shows.
func TestMe(t *testing.T) {
	st := memstore.New()
	a, err := auth.New(auth.Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(newMux(a, st))
	defer srv.Close()

	res, err := http.Get(srv.URL + "/api/me")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized {
		t.Errorf("/api/me without a session: %d, want 401", res.StatusCode)
	}

	req, _ := http.NewRequest("POST", srv.URL+"/auth/signup", strings.NewReader(
		`{"formFields":[{"id":"email","value":" Ada@Example.com"},{"id":"password","value":"correct horse 1"}]}`))
	req.Header.Set("st-auth-mode", "header")
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	access := res.Header.Get("st-access-token")
	if access == "" {
		t.Fatalf("sign-up: %d, no access token", res.StatusCode)
	}

	req, _ = http.NewRequest("GET", srv.URL+"/api/me", nil)
	req.Header.Set("Authorization", "Bearer "+access)
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	var me struct{ UserID, Email string }
	if err := json.Unmarshal(body, &me); err != nil || res.StatusCode != 200 {
		t.Fatalf("/api/me: %d %s", res.StatusCode, body)
	}
	u, err := a.UserByEmail(t.Context(), "ada@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if me.UserID != u.ID || me.Email != "ada@example.com" {
		t.Errorf("/api/me = %s, want user %s with email ada@example.com", body, u.ID)
	}
}

// TestPages checks that the web front end is served: the page at / and at
// the reset link, and the bundle, all from the embedded static/.
func TestPages(t *testing.T) {
	st := memstore.New()
	a, err := auth.New(auth.Config{Store: st, AllowedOrigins: []string{"http://localhost:5173"}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(a.CORS(newMux(a, st)))
	defer srv.Close()
	for _, c := range []struct{ path, ctype, want string }{
		{"/", "text/html", `<script src="/static/app.js"`},
		{"/auth/reset-password?token=abc&tenantId=public", "text/html", `id="reset-form"`},
		{"/static/app.js", "javascript", "auth demo"},
	} {
		res, err := http.Get(srv.URL + c.path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 || !strings.Contains(res.Header.Get("Content-Type"), c.ctype) || !strings.Contains(string(body), c.want) {
			t.Errorf("GET %s: %d %s, want 200 %s containing %q", c.path, res.StatusCode, res.Header.Get("Content-Type"), c.ctype, c.want)
		}
	}
	res, err := http.Get(srv.URL + "/nothing-here")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusNotFound {
		t.Errorf("GET /nothing-here: %d, want 404", res.StatusCode)
	}

	// The allowed origin gets CORS answers from the wrapped handler.
	req, _ := http.NewRequest("OPTIONS", srv.URL+"/auth/signin", nil)
	req.Header.Set("Origin", "http://localhost:5173")
	req.Header.Set("Access-Control-Request-Method", "POST")
	req.Header.Set("Access-Control-Request-Headers", "content-type,rid,fdi-version,st-auth-mode")
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if got := res.Header.Get("Access-Control-Allow-Origin"); got != "http://localhost:5173" || res.StatusCode >= 300 {
		t.Errorf("preflight: %d, Access-Control-Allow-Origin %q", res.StatusCode, got)
	}
}

// TestParseOptionsProviders checks the third-party provider flags: each
// provider is enabled by its issuer or client id, from a flag or its env
// twin, and half a configuration is refused.
func TestParseOptionsProviders(t *testing.T) {
	none := func(string) string { return "" }
	ids := func(o options) []string {
		var s []string
		for _, p := range o.providers {
			s = append(s, p.ID()+"/"+p.Name())
		}
		return s
	}

	o, err := parseOptions(nil, none)
	if err != nil || len(o.providers) != 0 {
		t.Fatalf("no provider flags: providers %q, %v; want none", ids(o), err)
	}

	o, err = parseOptions([]string{"-oidc-issuer", "http://127.0.0.1:9000", "-oidc-client-id", "demo"}, none)
	if err != nil || !slices.Equal(ids(o), []string{"oidc/oidc"}) {
		t.Errorf("-oidc-issuer: providers %q, %v; want oidc, named oidc", ids(o), err)
	}

	env := map[string]string{
		"DEMO_OIDC_ISSUER":          "https://id.example.com",
		"DEMO_OIDC_CLIENT_ID":       "demo",
		"DEMO_OIDC_CLIENT_SECRET":   "s3cret",
		"DEMO_OIDC_ID":              "keycloak",
		"DEMO_OIDC_NAME":            "Keycloak",
		"DEMO_GOOGLE_CLIENT_ID":     "g.apps.googleusercontent.com",
		"DEMO_GOOGLE_CLIENT_SECRET": "g-secret",
		"DEMO_GITHUB_CLIENT_ID":     "gh",
		"DEMO_GITHUB_CLIENT_SECRET": "gh-secret",
	}
	o, err = parseOptions(nil, func(k string) string { return env[k] })
	if err != nil || !slices.Equal(ids(o), []string{"keycloak/Keycloak", "google/Google", "github/GitHub"}) {
		t.Errorf("env twins: providers %q, %v", ids(o), err)
	}
	o, err = parseOptions([]string{"-oidc-name", "Corporate SSO"}, func(k string) string { return env[k] })
	if err != nil || len(o.providers) == 0 || o.providers[0].Name() != "Corporate SSO" {
		t.Errorf("-oidc-name over DEMO_OIDC_NAME: providers %q, %v", ids(o), err)
	}

	for _, bad := range [][]string{
		{"-oidc-issuer", "https://id.example.com"},                              // no client id
		{"-oidc-client-id", "demo"},                                             // no issuer
		{"-oidc-client-secret", "s"},                                            // no issuer
		{"-oidc-id", "corp"},                                                    // no issuer
		{"-oidc-name", "Corp"},                                                  // no issuer
		{"-oidc-issuer", "id.example.com", "-oidc-client-id", "demo"},           // not a URL
		{"-oidc-issuer", "http://id.example.com", "-oidc-client-id", "demo"},    // http, not loopback
		{"-oidc-issuer", "ftp://id.example.com", "-oidc-client-id", "demo"},     // not http(s)
		{"-oidc-issuer", "https://id.example.com#x", "-oidc-client-id", "demo"}, // refused by provider.OIDC
		{"-oidc-issuer", "https://id.example.com", "-oidc-client-id", "demo", "-oidc-id", "Corp"},
		{"-oidc-issuer", "https://id.example.com", "-oidc-client-id", "demo", "-oidc-id", "a/b"},
		{"-oidc-issuer", "https://id.example.com", "-oidc-client-id", "demo", "-oidc-id", ""},
		{"-oidc-issuer", "https://id.example.com", "-oidc-client-id", "demo", "-oidc-id", "google",
			"-google-client-id", "g", "-google-client-secret", "s"}, // two providers named google
		{"-google-client-id", "g"},
		{"-google-client-secret", "s"},
		{"-github-client-id", "gh"},
		{"-github-client-secret", "s"},
	} {
		if o, err := parseOptions(bad, none); err == nil {
			t.Errorf("parseOptions(%q) accepted: providers %q", bad, ids(o))
		} else if !strings.Contains(err.Error(), "-oidc") && !strings.Contains(err.Error(), "-google") && !strings.Contains(err.Error(), "-github") {
			t.Errorf("parseOptions(%q): %v; want the error to name the flag", bad, err)
		}
	}
	if got := callbackURL("http://127.0.0.1:8080/app/", "oidc"); got != "http://127.0.0.1:8080/auth/callback/oidc" {
		t.Errorf("callbackURL = %q", got)
	}
}

// TestMeThirdParty signs in with a provider (authtest's fake), as the page
// does, and reads /api/me: it names the provider's email.
func TestMeThirdParty(t *testing.T) {
	fake := authtest.NewProvider(t)
	fake.SetIdentity("ada-at-provider", "Ada@Example.com", true)
	st := memstore.New()
	// The app's URL must be known before the server starts: listen first.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a, err := auth.New(auth.Config{
		Store:      st,
		AppURL:     "http://" + ln.Addr().String(),
		ThirdParty: auth.ThirdPartyConfig{Providers: []provider.Provider{fake.Provider()}},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: newMux(a, st)}}
	srv.Start()
	defer srv.Close()

	get := func(path string, header http.Header) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", srv.URL+path, nil)
		maps.Copy(req.Header, header)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(body)
	}

	// The page is served at the callback, and the provider is listed.
	if code, body := get("/auth/callback/"+authtest.ProviderID+"?code=x&state=y", nil); code != 200 || !strings.Contains(body, `<script src="/static/app.js"`) {
		t.Errorf("callback page: %d %.80s", code, body)
	}
	if code, body := get("/auth/loginmethods", http.Header{"Rid": {"multitenancy"}}); code != 200 ||
		!strings.Contains(body, `"providers":[{"id":"`+authtest.ProviderID+`","name":"Authtest"}]`) {
		t.Errorf("/auth/loginmethods: %d %s", code, body)
	}

	redirect := srv.URL + "/auth/callback/" + authtest.ProviderID
	code, body := get("/auth/authorisationurl?"+url.Values{
		"thirdPartyId": {authtest.ProviderID}, "redirectURIOnProviderDashboard": {redirect},
	}.Encode(), http.Header{"Rid": {"thirdparty"}})
	var authURL struct{ URLWithQueryParams, PKCECodeVerifier string }
	if err := json.Unmarshal([]byte(body), &authURL); err != nil || code != 200 {
		t.Fatalf("/auth/authorisationurl: %d %s", code, body)
	}
	back := fake.Authorize(t, authURL.URLWithQueryParams)
	params := map[string]string{}
	for k := range back {
		params[k] = back.Get(k)
	}
	reqBody, _ := json.Marshal(map[string]any{
		"thirdPartyId": authtest.ProviderID,
		"redirectURIInfo": map[string]any{
			"redirectURIOnProviderDashboard": redirect,
			"redirectURIQueryParams":         params,
			"pkceCodeVerifier":               authURL.PKCECodeVerifier,
		},
	})
	req, _ := http.NewRequest("POST", srv.URL+"/auth/signinup", strings.NewReader(string(reqBody)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("rid", "thirdparty")
	req.Header.Set("st-auth-mode", "header")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	signin, _ := io.ReadAll(res.Body)
	res.Body.Close()
	access := res.Header.Get("st-access-token")
	if res.StatusCode != 200 || access == "" || !strings.Contains(string(signin), `"status":"OK"`) {
		t.Fatalf("/auth/signinup: %d %s", res.StatusCode, signin)
	}

	code, body = get("/api/me", http.Header{"Authorization": {"Bearer " + access}})
	var me struct{ UserID, Email string }
	if err := json.Unmarshal([]byte(body), &me); err != nil || code != 200 {
		t.Fatalf("/api/me: %d %s", code, body)
	}
	u, err := a.UserByID(t.Context(), me.UserID)
	if err != nil {
		t.Fatal(err)
	}
	if me.Email != "ada@example.com" || len(u.LoginMethods) != 1 || u.LoginMethods[0].ThirdPartyUserID != "ada-at-provider" {
		t.Errorf("/api/me = %s; user %+v", body, u)
	}
}
