package authtest_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
)

// whoami is a handler an application would put behind RequireSession.
var whoami = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	s, ok := auth.SessionFromContext(r.Context())
	if !ok {
		http.Error(w, "no session", http.StatusUnauthorized)
		return
	}
	fmt.Fprintf(w, "%s %s %s", r.Method, r.URL.Path, s.UserID)
})

func TestNewRequest(t *testing.T) {
	want := auth.Session{
		UserID: "u1", Handle: "h1", TenantID: "public", TokenID: "t1",
		IssuedAt: authtest.Start, ExpiresAt: authtest.Start.Add(time.Hour),
	}
	req := authtest.NewRequest("POST", "/profile?tab=2", want)
	got, ok := auth.SessionFromContext(req.Context())
	if !ok || got != want {
		t.Fatalf("SessionFromContext = %+v, %v; want %+v, true", got, ok, want)
	}
	if req.Method != "POST" || req.URL.Path != "/profile" || req.URL.Query().Get("tab") != "2" {
		t.Errorf("request %s %s", req.Method, req.URL)
	}

	rec := httptest.NewRecorder()
	whoami.ServeHTTP(rec, authtest.NewRequest("GET", "/profile", auth.Session{UserID: "u2"}))
	if rec.Code != http.StatusOK || rec.Body.String() != "GET /profile u2" {
		t.Errorf("handler answered %d %q", rec.Code, rec.Body)
	}

	// The session is the request's alone.
	rec = httptest.NewRecorder()
	whoami.ServeHTTP(rec, httptest.NewRequest("GET", "/profile", nil))
	if rec.Code != http.StatusUnauthorized {
		t.Errorf("a plain request: %d %q, want 401", rec.Code, rec.Body)
	}
}
