// Package routertest holds the test that every router example passes: the
// same requests, over HTTP, to the example's own router and configuration.
package routertest

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/emailpassword"
)

// Example is what Run needs of an example: its configuration for an API
// served at appURL, and its router around an Auth.
type Example struct {
	Config func(appURL string) auth.Config
	Router func(a *auth.Auth) http.Handler
}

// Run serves the example with httptest and checks, through its router:
// GET /health is open; GET /api/me refuses a request without a session 401
// with the library's body and reason; a sign-up through the mounted
// /auth/signup starts a session that the route's rule (a verified email)
// refuses 403; once the email is verified, an expired access token is
// answered 401 "try refresh token", a refresh through the router picks up
// the verified email, and GET /api/me answers the user's id.
func Run(t *testing.T, ex Example) {
	srv := httptest.NewUnstartedServer(nil)
	cfg := ex.Config("http://" + srv.Listener.Addr().String())
	// A manual clock, cheap password hashing and a mailbox, as authtest
	// sets them up.
	clock := authtest.NewClock(authtest.Start)
	cfg.Now = clock.Now
	cfg.EmailPassword.Hashing = emailpassword.Hashing{Memory: 64, Iterations: 1, Parallelism: 1}
	cfg.EmailPassword.InsecureWeakHashing = true
	cfg.Email.Mailer = authtest.NewMailbox()
	a, err := auth.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = ex.Router(a)
	srv.Start()
	t.Cleanup(func() {
		srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := a.Close(ctx); err != nil {
			t.Error(err)
		}
	})
	c := &client{t: t, url: srv.URL}

	res := c.do("GET", "/health", "", "", nil)
	expect(t, res, http.StatusOK, `{"status":"ok"}`)

	res = c.do("GET", "/api/me", "", "", nil)
	expect(t, res, http.StatusUnauthorized, `{"message":"unauthorised","reason":"no_token"}`)
	if got := res.Header.Get(auth.ReasonHeader); got != string(auth.ReasonNoToken) {
		t.Errorf("%s: %q, want %q", auth.ReasonHeader, got, auth.ReasonNoToken)
	}

	res = c.do("POST", "/auth/signup", "emailpassword", "", authtest.Credentials("ada@example.com", authtest.Password))
	if res.StatusCode != http.StatusOK || !strings.Contains(res.body, `"status":"OK"`) {
		t.Fatalf("POST /auth/signup: %d %s", res.StatusCode, res.body)
	}
	access, refresh := res.Header.Get("st-access-token"), res.Header.Get("st-refresh-token")
	u, err := a.UserByEmail(t.Context(), "ada@example.com")
	if err != nil {
		t.Fatal(err)
	}

	res = c.do("GET", "/api/me", "anti-csrf", access, nil)
	expect(t, res, http.StatusForbidden, `{"message":"invalid claim","claimValidationErrors":[{"id":"st-ev",`+
		`"reason":{"message":"wrong value","expectedValue":true,"actualValue":false}}]}`)

	if err := a.SetEmailVerified(t.Context(), u.LoginMethods[0].ID, true); err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Hour) // past the access token's hour
	res = c.do("GET", "/api/me", "anti-csrf", access, nil)
	expect(t, res, http.StatusUnauthorized, `{"message":"try refresh token","reason":"expired"}`)

	res = c.do("POST", "/auth/session/refresh", "session", refresh, nil)
	access = res.Header.Get("st-access-token")
	if res.StatusCode != http.StatusOK || access == "" {
		t.Fatalf("POST /auth/session/refresh: %d %s, no new access token", res.StatusCode, res.body)
	}

	res = c.do("GET", "/api/me", "anti-csrf", access, nil)
	expect(t, res, http.StatusOK, `{"userId":"`+u.ID+`"}`)
}

// client sends requests in header mode: tokens come back in the
// st-access-token and st-refresh-token headers and go out as bearer
// tokens, as the SuperTokens SDKs send them in that mode.
type client struct {
	t   *testing.T
	url string
}

type response struct {
	*http.Response
	body string
}

// do sends a request with the rid header the SDKs send, and token as a
// bearer token unless it is empty.
func (c *client) do(method, path, rid, token string, body []byte) response {
	c.t.Helper()
	req, err := http.NewRequestWithContext(c.t.Context(), method, c.url+path, strings.NewReader(string(body)))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("st-auth-mode", "header")
	if rid != "" {
		req.Header.Set("rid", rid)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	return response{res, string(b)}
}

// expect checks a response's status and its JSON body, which must be
// exactly want (a handler that ran after a refusal would add to it).
func expect(t *testing.T, res response, status int, want string) {
	t.Helper()
	if res.StatusCode != status || !sameJSON(res.body, want) {
		t.Errorf("%s %s: %d %s, want %d %s", res.Request.Method, res.Request.URL.Path, res.StatusCode, res.body, status, want)
	}
	if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("%s %s: Content-Type %q, want JSON", res.Request.Method, res.Request.URL.Path, ct)
	}
}

// sameJSON reports whether got is one JSON value equal to want.
func sameJSON(got, want string) bool {
	var g, w any
	dec := json.NewDecoder(strings.NewReader(got))
	if dec.Decode(&g) != nil || dec.More() || json.Unmarshal([]byte(want), &w) != nil {
		return false
	}
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	return string(gb) == string(wb)
}
