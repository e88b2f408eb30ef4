package auth_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/golang-jwt/jwt/v5"
	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/roles"
	"github.com/latchkit/auth/store/memstore"
)

// A roles claim unlike what the library writes, in a token signed with
// the deployment's own key (a token of another version, or a bug), opens
// nothing and fails nothing: the claim counts as absent, and a route with
// a roles rule reads the store, which says the user holds no role. The
// same claims in a token signed with any other key are a forgery, refused
// as every forgery is.
func TestHostileRoleClaims(t *testing.T) {
	mem := memstore.New()
	st := &textColumnStore{Store: mem}
	rr := roles.New(roles.Config{})
	s := authtest.NewServer(t, auth.Config{Store: fullStore{st, mem, mem, mem}, Roles: rr})
	f := &inFixture{Server: s, store: st, mem: mem, hc: s.Client()}
	if _, err := rr.CreateRole(t.Context(), "admin", "posts:write"); err != nil {
		t.Fatal(err)
	}
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok")) })
	f.Mux.Handle("GET /admin", f.Auth.RequireSession(ok, roles.Require("admin")))
	f.Mux.Handle("GET /write", f.Auth.RequireSession(ok, roles.RequireAnyPermission("posts:write", "posts:read")))
	c, _ := f.SignedIn(authtest.Header)
	access, _ := c.Tokens()
	g := newForger(t, f, access)

	many := make([]string, 5000)
	for i := range many {
		many[i] = "admin"
	}
	for name, v := range map[string]any{
		"a string":              "admin",
		"a bare list":           []string{"admin"},
		"a number":              7,
		"null":                  nil,
		"v a string":            map[string]any{"v": "admin", "t": 1},
		"v of numbers":          map[string]any{"v": []any{1, 2}, "t": 1},
		"v with a null":         map[string]any{"v": []any{"admin", nil}, "t": 1},
		"v null":                map[string]any{"v": nil, "t": 1},
		"v an object":           map[string]any{"v": map[string]any{"admin": true}},
		"t a string":            map[string]any{"v": []string{"admin"}, "t": "now"},
		"nested deep":           deepJSON(200),
		"past the token's size": map[string]any{"v": many, "t": 1},
	} {
		t.Run(name, func(t *testing.T) {
			hostile := func(_ map[string]any, c jwt.MapClaims) { c["st-role"], c["st-perm"] = v, v }
			for _, path := range []string{"/admin", "/write"} {
				r := f.send(t, "GET", path, nil, bearer(g.real(t, hostile)))
				if r.code != http.StatusForbidden && r.code != http.StatusUnauthorized {
					t.Errorf("GET %s with the deployment's key: %d %s, want 403 (or 401 past the size)", path, r.code, r.body)
				}
				forged := g.sign(t, jwt.SigningMethodHS256, []byte(strings.Repeat("k", 32)), hostile)
				f.send(t, "GET", path, nil, bearer(forged)).wantMessage(t, http.StatusUnauthorized, "try refresh token")
			}
		})
	}
}

// deepJSON is an object nested depth times: {"v":{"v":...}}.
func deepJSON(depth int) any {
	var v any = []string{"admin"}
	for range depth {
		v = map[string]any{"v": v}
	}
	return v
}
