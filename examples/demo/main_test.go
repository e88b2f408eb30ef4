package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/latchkit/auth"
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
