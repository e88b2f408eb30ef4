package auth_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/store/memstore"
)

func TestCORS(t *testing.T) {
	a, err := auth.New(auth.Config{Store: memstore.New(), AllowedOrigins: []string{"http://localhost:3000", "https://app.example.com/"}})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/auth/", a)
	mux.Handle("/api/me", a.RequireSession(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})))
	h := a.CORS(mux)

	// A preflight from an allowed origin, even to a protected route.
	req := httptest.NewRequest("OPTIONS", "/api/me", nil)
	req.Header.Set("Origin", "https://app.example.com")
	req.Header.Set("Access-Control-Request-Method", "GET")
	req.Header.Set("Access-Control-Request-Headers", "rid, fdi-version, authorization, st-auth-mode")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusNoContent {
		t.Errorf("preflight: %d, want 204 (never a 401)", rec.Code)
	}
	if got := rec.Header().Get("Access-Control-Allow-Origin"); got != "https://app.example.com" {
		t.Errorf("Allow-Origin = %q, want the exact origin", got)
	}
	if rec.Header().Get("Access-Control-Allow-Credentials") != "true" {
		t.Error("preflight does not allow credentials")
	}
	allowed := strings.ToLower(rec.Header().Get("Access-Control-Allow-Headers"))
	for _, hdr := range []string{"rid", "fdi-version", "st-auth-mode", "fg-auth-mode", "anti-csrf", "authorization", "content-type"} {
		if !strings.Contains(allowed, hdr) {
			t.Errorf("Allow-Headers %q lacks %s", allowed, hdr)
		}
	}

	// A sign-up from the allowed origin can read the token headers.
	req = httptest.NewRequest("POST", "/auth/signup", strings.NewReader(
		`{"formFields":[{"id":"email","value":"cors@example.com"},{"id":"password","value":"cors password 1"}]}`))
	req.Header.Set("Origin", "http://localhost:3000")
	req.Header.Set("st-auth-mode", "header")
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK || rec.Header().Get("Access-Control-Allow-Origin") != "http://localhost:3000" {
		t.Fatalf("sign-up from an allowed origin: %d, Allow-Origin %q", rec.Code, rec.Header().Get("Access-Control-Allow-Origin"))
	}
	exposed := rec.Header().Get("Access-Control-Expose-Headers")
	for _, hdr := range []string{"front-token", "st-access-token", "st-refresh-token", "anti-csrf"} {
		if strings.Count(exposed, hdr) != 1 {
			t.Errorf("Expose-Headers %q: want %s exactly once", exposed, hdr)
		}
	}

	// Other origins get no CORS headers, and "*" is never sent.
	for _, origin := range []string{"https://evil.example.com", "https://app.example.com.evil.com", "null", "*"} {
		req = httptest.NewRequest("OPTIONS", "/auth/signin", nil)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", "POST")
		rec = httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if got := rec.Header().Get("Access-Control-Allow-Origin"); got != "" {
			t.Errorf("origin %q got Allow-Origin %q", origin, got)
		}
		if !strings.Contains(rec.Header().Get("Vary"), "Origin") {
			t.Errorf("origin %q: no Vary: Origin", origin)
		}
	}
}

// A page on another site cannot sign its visitor in (login CSRF): browser
// requests to the auth endpoints from origins not allowed are refused,
// while the API's own pages, allowed origins and non-browser clients pass.
func TestCrossOriginSignInRefused(t *testing.T) {
	a, err := auth.New(auth.Config{Store: memstore.New(), AllowedOrigins: []string{"https://app.example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	body := `{"formFields":[{"id":"email","value":"x@example.com"},{"id":"password","value":"x password 1"}]}`
	for _, c := range []struct {
		name          string
		site, origin  string
		wantForbidden bool
	}{
		{"form on another site", "cross-site", "https://evil.example.com", true},
		{"another port of the same host, not allowed", "same-site", "http://example.com:8081", true},
		{"allowed origin", "cross-site", "https://app.example.com", false},
		{"same origin", "same-origin", "http://example.com", false},
		{"not a browser", "", "", false},
	} {
		req := httptest.NewRequest("POST", "http://example.com/auth/signin", strings.NewReader(body))
		req.Header.Set("Content-Type", "text/plain")
		if c.site != "" {
			req.Header.Set("Sec-Fetch-Site", c.site)
		}
		if c.origin != "" {
			req.Header.Set("Origin", c.origin)
		}
		rec := httptest.NewRecorder()
		a.ServeHTTP(rec, req)
		if got := rec.Code == http.StatusForbidden; got != c.wantForbidden {
			t.Errorf("%s: %d %s", c.name, rec.Code, rec.Body)
		}
	}
}
