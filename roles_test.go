package auth_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/roles"
	"github.com/latchkit/auth/store"
	"github.com/latchkit/auth/store/memstore"
)

// rolesServer is a server with roles on, the roles admin (posts:write,
// posts:read) and editor (posts:read), and routes that ask for them.
func rolesServer(t *testing.T, cfg auth.Config) (*authtest.Server, *roles.Recipe) {
	t.Helper()
	rr := roles.New(roles.Config{})
	cfg.Roles = rr
	s := authtest.NewServer(t, cfg)
	ctx := t.Context()
	if _, err := rr.CreateRole(ctx, "admin", "posts:write", "posts:read"); err != nil {
		t.Fatal(err)
	}
	if _, err := rr.CreateRole(ctx, "editor", " posts:read "); err != nil {
		t.Fatal(err)
	}
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) })
	for path, rules := range map[string][]auth.Rule{
		"/admin":     {roles.Require("admin")},
		"/any":       {roles.RequireAny("owner", "admin")},
		"/both":      {roles.RequireAll("admin", "editor")},
		"/write":     {roles.RequirePermission("posts:write")},
		"/write-all": {roles.RequireAllPermissions("posts:write", "posts:delete")},
		"/read-any":  {roles.RequireAnyPermission("posts:delete", "posts:read")},
		"/three":     {roles.Require("owner"), roles.RequirePermission("posts:delete"), roles.Require("admin")},
	} {
		s.Mux.Handle("GET "+path, s.Auth.RequireSession(ok, rules...))
	}
	return s, rr
}

// claimList is the v of a list claim in the client's last front-token,
// and whether the claim has the SDKs' shape ({"v": [...], "t": ms}).
func claimList(t *testing.T, c *authtest.Client, name string) []string {
	t.Helper()
	raw, ok := decodeFrontToken(t, c.FrontToken).UP[name].(map[string]any)
	if !ok {
		t.Fatalf("the access token has no %s object", name)
	}
	if tm, ok := raw["t"].(float64); !ok || tm < 1e12 {
		t.Errorf("%s's t is %v, want a time in milliseconds", name, raw["t"])
	}
	list, ok := raw["v"].([]any)
	if !ok || len(raw) != 2 {
		t.Fatalf("%s is %v, want {v: [...], t: ms}", name, raw)
	}
	out := []string{}
	for _, v := range list {
		out = append(out, v.(string))
	}
	return out
}

// wantInvalidClaim checks a 403 with the SDKs' invalid-claim body,
// exactly: one entry, for claim, with reason.
func wantInvalidClaim(t *testing.T, what string, res *authtest.Response, claim string, reason map[string]any) {
	t.Helper()
	want := map[string]any{"message": "invalid claim", "claimValidationErrors": []any{map[string]any{"id": claim, "reason": reason}}}
	var got map[string]any
	if res.StatusCode != http.StatusForbidden || json.Unmarshal(res.Body, &got) != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("%s: %d %s, want 403 %v", what, res.StatusCode, res.Body, want)
	}
}

func wantPass(t *testing.T, what string, res *authtest.Response) {
	t.Helper()
	if res.StatusCode != http.StatusOK || string(res.Body) != "ok" {
		t.Errorf("%s: %d %s, want 200", what, res.StatusCode, res.Body)
	}
}

// A role reaches a session's tokens at its next refresh, and so does its
// loss: a taken or deleted role authorises nothing once the access token
// that carried it has been refreshed, or has expired, an access-token
// lifetime at most.
func TestRolesReachSessionsAtRefresh(t *testing.T) {
	for _, mode := range authtest.Modes {
		t.Run(mode.String(), func(t *testing.T) {
			s, rr := rolesServer(t, auth.Config{})
			ctx := t.Context()
			c := s.NewClient(mode)
			if res := c.SignUp("ada@example.com", "a good password 1"); res.Status != "OK" {
				t.Fatalf("sign-up: %s", res.Body)
			}
			user := decodeFrontToken(t, c.FrontToken).UID
			if r, p := claimList(t, c, "st-role"), claimList(t, c, "st-perm"); len(r) != 0 || len(p) != 0 {
				t.Errorf("a new user's claims: roles %q, permissions %q; want none", r, p)
			}
			wantInvalidClaim(t, "a user without the role", c.Get("/admin"), "st-role",
				map[string]any{"message": "wrong value", "expectedToInclude": "admin", "actualValue": []any{}})

			if had, err := rr.Give(ctx, user, "admin"); had || err != nil {
				t.Fatalf("Give: %v, %v", had, err)
			}
			if res := c.Get("/admin"); res.StatusCode != http.StatusForbidden {
				t.Errorf("before a refresh, the token has not the role yet: %d", res.StatusCode)
			}
			if res := c.Refresh(); res.StatusCode != http.StatusOK {
				t.Fatalf("refresh: %d %s", res.StatusCode, res.Body)
			}
			if r, p := claimList(t, c, "st-role"), claimList(t, c, "st-perm"); !reflect.DeepEqual(r, []string{"admin"}) ||
				!reflect.DeepEqual(p, []string{"posts:write", "posts:read"}) {
				t.Errorf("after the refresh: roles %q, permissions %q", r, p)
			}
			wantPass(t, "the role", c.Get("/admin"))
			wantPass(t, "one of two roles", c.Get("/any"))
			wantPass(t, "a permission of the role", c.Get("/write"))
			wantPass(t, "one of two permissions", c.Get("/read-any"))
			wantInvalidClaim(t, "two roles, one held", c.Get("/both"), "st-role", map[string]any{"message": "wrong value",
				"expectedToInclude": []any{"admin", "editor"}, "actualValue": []any{"admin"}})
			wantInvalidClaim(t, "two permissions, one held", c.Get("/write-all"), "st-perm", map[string]any{"message": "wrong value",
				"expectedToInclude": []any{"posts:write", "posts:delete"}, "actualValue": []any{"posts:write", "posts:read"}})

			// Taken: the token that has it still passes, until it expires.
			if had, err := rr.Take(ctx, user, "admin"); !had || err != nil {
				t.Fatalf("Take: %v, %v", had, err)
			}
			wantPass(t, "the role taken, before the token is refreshed", c.Get("/admin"))
			s.Clock.Advance(accessExpired)
			if res := c.Get("/admin"); res.StatusCode != http.StatusUnauthorized {
				t.Errorf("an access token past its lifetime: %d, want 401", res.StatusCode)
			}
			c.Refresh()
			wantInvalidClaim(t, "the role taken, after the refresh", c.Get("/admin"), "st-role",
				map[string]any{"message": "wrong value", "expectedToInclude": "admin", "actualValue": []any{}})

			// Deleted: every holder loses it at the next refresh.
			give(t, rr, user, "admin")
			c.Refresh()
			wantPass(t, "the role given again", c.Get("/admin"))
			if existed, err := rr.DeleteRole(ctx, "admin"); !existed || err != nil {
				t.Fatalf("DeleteRole: %v, %v", existed, err)
			}
			c.Refresh()
			wantInvalidClaim(t, "the role deleted", c.Get("/admin"), "st-role",
				map[string]any{"message": "wrong value", "expectedToInclude": "admin", "actualValue": []any{}})
			if p := claimList(t, c, "st-perm"); len(p) != 0 {
				t.Errorf("the deleted role's permissions are still in the token: %q", p)
			}
		})
	}
}

// A permission added to a role, or removed from it, reaches the sessions
// of the role's holders at their next refresh.
func TestRolesPermissionChangesReachSessions(t *testing.T) {
	s, rr := rolesServer(t, auth.Config{})
	ctx := t.Context()
	c := s.NewClient(authtest.Header)
	c.SignUp("ada@example.com", "a good password 1")
	user := decodeFrontToken(t, c.FrontToken).UID
	give(t, rr, user, "editor")
	c.Refresh()
	if res := c.Get("/write"); res.StatusCode != http.StatusForbidden {
		t.Errorf("an editor writing: %d, want 403", res.StatusCode)
	}
	if _, err := rr.CreateRole(ctx, "editor", "posts:write"); err != nil {
		t.Fatal(err)
	}
	c.Refresh()
	wantPass(t, "a permission added to the role", c.Get("/write"))
	if err := rr.RemovePermissions(ctx, "editor"); err != nil {
		t.Fatal(err)
	}
	c.Refresh()
	if p := claimList(t, c, "st-perm"); len(p) != 0 {
		t.Errorf("every permission removed, the token has %q", p)
	}
	if r := claimList(t, c, "st-role"); !reflect.DeepEqual(r, []string{"editor"}) {
		t.Errorf("the role without permissions: %q", r)
	}
}

// The Go API refuses what the model does not have, and a roles.Recipe
// serves one Auth, over a Store that keeps roles.
func TestRolesAPI(t *testing.T) {
	s, rr := rolesServer(t, auth.Config{})
	ctx := t.Context()
	if _, err := rr.Give(ctx, "someone", "nobody-has-this"); !errors.Is(err, roles.ErrUnknownRole) {
		t.Errorf("giving an unknown role: %v", err)
	}
	if _, err := rr.Permissions(ctx, "nobody-has-this"); !errors.Is(err, roles.ErrUnknownRole) {
		t.Errorf("an unknown role's permissions: %v", err)
	}
	if _, err := rr.CreateRole(ctx, "  "); err == nil {
		t.Error("a blank role was created")
	}
	if got, err := rr.Permissions(ctx, "editor"); err != nil || !reflect.DeepEqual(got, []string{"posts:read"}) {
		t.Errorf("editor's permissions, trimmed: %q, %v", got, err)
	}
	if got, err := rr.RolesWithPermission(ctx, "posts:read"); err != nil || !reflect.DeepEqual(got, []string{"admin", "editor"}) {
		t.Errorf("roles with posts:read: %q, %v", got, err)
	}
	give(t, rr, "u1", "editor")
	if got, err := rr.UsersWithRole(ctx, "editor"); err != nil || !reflect.DeepEqual(got, []string{"u1"}) {
		t.Errorf("editors: %q, %v", got, err)
	}
	if ok, err := rr.Permitted(ctx, "u1", " posts:read"); !ok || err != nil {
		t.Errorf("an editor permitted posts:read: %v, %v", ok, err)
	}
	if ok, err := rr.Permitted(ctx, "u1", "posts:write"); ok || err != nil {
		t.Errorf("an editor permitted posts:write: %v, %v", ok, err)
	}
	if had, _ := rr.Give(ctx, "u1", "editor"); !had {
		t.Error("giving a role twice: the second did not report it held")
	}
	if _, err := auth.New(auth.Config{Store: s.AuthConfig.Store, Roles: rr}); err == nil {
		t.Error("a roles.Recipe served a second Auth")
	}
	if _, err := auth.New(auth.Config{Store: withoutRoles{memstore.New()}, Roles: roles.New(roles.Config{})}); err == nil {
		t.Error("auth.New took roles over a Store that keeps none")
	}
	if _, err := roles.New(roles.Config{}).Roles(ctx); err == nil {
		t.Error("a recipe in no Auth answered")
	}
}

// withoutRoles is a Store that does not keep roles.
type withoutRoles struct{ store.Store }

// With CheckSessionInStore, a route with a roles rule reads the roles
// from the store: a change applies at the next request, which carries a
// new access token with what it read.
func TestRolesAtOnceWithCheckSessionInStore(t *testing.T) {
	for _, mode := range authtest.Modes {
		t.Run(mode.String(), func(t *testing.T) {
			s, rr := rolesServer(t, auth.Config{CheckSessionInStore: true})
			ctx := t.Context()
			c := s.NewClient(mode)
			c.SignUp("ada@example.com", "a good password 1")
			user := decodeFrontToken(t, c.FrontToken).UID
			give(t, rr, user, "admin")
			res := c.Get("/admin")
			wantPass(t, "the role given, at once", res)
			if !res.IssuedTokens() {
				t.Error("the answer that read the new role carries no new access token")
			}
			if r := claimList(t, c, "st-role"); !reflect.DeepEqual(r, []string{"admin"}) {
				t.Errorf("the new access token's roles: %q", r)
			}
			if res := c.Get("/admin"); res.IssuedTokens() {
				t.Error("a token that has the store's roles was rewritten again")
			}
			rr.Take(ctx, user, "admin")
			wantInvalidClaim(t, "the role taken, at once", c.Get("/admin"), "st-role",
				map[string]any{"message": "wrong value", "expectedToInclude": "admin", "actualValue": []any{}})
		})
	}
}

// A role taken while its holder's sessions refresh: a refresh that
// starts once Take has returned never carries the role, whatever the
// refreshes racing Take carried, so no session is authorised by the
// role past one access-token lifetime.
func TestRolesTakenWhileRefreshing(t *testing.T) {
	s, rr := rolesServer(t, auth.Config{RateLimits: auth.RateLimits{SessionRefreshes: auth.Rate{Burst: 1 << 30, Every: time.Nanosecond}}})
	ctx := t.Context()
	const n = 8
	clients := make([]*authtest.Client, n)
	owner := s.NewClient(authtest.Header)
	owner.SignUp("ada@example.com", "a good password 1")
	user := decodeFrontToken(t, owner.FrontToken).UID
	give(t, rr, user, "admin")
	for i := range clients {
		clients[i] = s.NewClient(authtest.Header)
		if res := clients[i].SignIn("ada@example.com", "a good password 1"); res.Status != "OK" {
			t.Fatalf("sign-in %d: %s", i, res.Body)
		}
	}
	for round := range 5 {
		give(t, rr, user, "admin")
		done := make(chan struct{})
		var wg sync.WaitGroup
		for _, c := range clients {
			wg.Go(func() {
				for {
					select {
					case <-done:
						return
					default:
						c.Refresh()
					}
				}
			})
		}
		if _, err := rr.Take(ctx, user, "admin"); err != nil {
			t.Fatal(err)
		}
		close(done)
		wg.Wait()
		for i, c := range clients {
			if res := c.Refresh(); res.StatusCode != http.StatusOK {
				t.Fatalf("round %d, client %d: refresh %d %s", round, i, res.StatusCode, res.Body)
			}
			if r := claimList(t, c, "st-role"); len(r) != 0 {
				t.Errorf("round %d, client %d: a refresh after Take carries %q", round, i, r)
			}
			if res := c.Get("/admin"); res.StatusCode != http.StatusForbidden {
				t.Errorf("round %d, client %d: /admin after the role was taken: %d", round, i, res.StatusCode)
			}
		}
	}
}

// give gives role to user, or fails the test.
func give(t *testing.T, rr *roles.Recipe, user, role string) {
	t.Helper()
	if _, err := rr.Give(t.Context(), user, role); err != nil {
		t.Fatal(err)
	}
}

// flakyRoles is a store whose roles cannot be read while fail is set.
type flakyRoles struct {
	store.Store
	store.RoleStore
	fail atomic.Bool
}

// RotateRefreshToken reads no roles with the rotation, as a store that
// keeps them apart may not: the refresh asks UserRoles.
func (f *flakyRoles) RotateRefreshToken(ctx context.Context, r store.Rotation) (store.Rotated, error) {
	r.RolesOf = ""
	return f.Store.RotateRefreshToken(ctx, r)
}

func (f *flakyRoles) UserRoles(ctx context.Context, tenant, userID string) ([]string, []string, error) {
	if f.fail.Load() {
		return nil, nil, errors.New("the roles cannot be read")
	}
	return f.RoleStore.UserRoles(ctx, tenant, userID)
}

// A refresh that cannot read the roles issues a token without them, and
// a route that asks for a role then reads the store: while it fails, the
// route refuses; once it answers, its answer holds. A role lost is never
// carried forward from the old token.
func TestRolesUnreadable(t *testing.T) {
	mem := memstore.New()
	st := &flakyRoles{Store: mem, RoleStore: mem}
	s, rr := rolesServer(t, auth.Config{Store: st})
	ctx := t.Context()
	c := s.NewClient(authtest.Header)
	c.SignUp("ada@example.com", "a good password 1")
	user := decodeFrontToken(t, c.FrontToken).UID
	give(t, rr, user, "admin")
	c.Refresh()
	wantPass(t, "the role", c.Get("/admin"))
	if _, err := rr.Take(ctx, user, "admin"); err != nil {
		t.Fatal(err)
	}
	st.fail.Store(true)
	if res := c.Refresh(); res.StatusCode != http.StatusOK {
		t.Fatalf("a refresh while the roles cannot be read: %d %s", res.StatusCode, res.Body)
	}
	if up := decodeFrontToken(t, c.FrontToken).UP; up["st-role"] != nil || up["st-perm"] != nil {
		t.Errorf("a refresh that could not read the roles carried %v, %v", up["st-role"], up["st-perm"])
	}
	if res := c.Get("/admin"); res.StatusCode == http.StatusOK || res.StatusCode < 500 {
		t.Errorf("a route that cannot read the roles: %d %s, want a 5xx", res.StatusCode, res.Body)
	}
	st.fail.Store(false)
	wantInvalidClaim(t, "the roles readable again", c.Get("/admin"), "st-role",
		map[string]any{"message": "wrong value", "expectedToInclude": "admin", "actualValue": []any{}})
}

// Refreshes of one session at once, each presenting the same refresh
// token within the reuse window, each carry a whole reading: the roles'
// two claims, and every one of the application's claims, come from the
// same call for the same token.
func TestClaimsOfRefreshesAtOnce(t *testing.T) {
	var calls atomic.Int64
	s, rr := rolesServer(t, auth.Config{
		RefreshReuseWindow: auth.MaxRefreshReuseWindow,
		RateLimits:         auth.RateLimits{SessionRefreshes: auth.Rate{Burst: 1 << 30, Every: time.Nanosecond}},
		TokenClaims: auth.TokenClaims{Names: []string{"call", "same"}, Values: func(context.Context, string, string) (map[string]any, error) {
			n := calls.Add(1)
			return map[string]any{"call": n, "same": n}, nil
		}},
	})
	owner := s.NewClient(authtest.Header)
	owner.SignUp("ada@example.com", "a good password 1")
	give(t, rr, decodeFrontToken(t, owner.FrontToken).UID, "admin")
	access, refresh := owner.Tokens()
	const n = 16
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			c := s.NewClient(authtest.Header)
			c.SetTokens(access, refresh)
			if res := c.Refresh(); res.StatusCode != http.StatusOK {
				t.Errorf("refresh %d: %d %s", i, res.StatusCode, res.Body)
				return
			}
			up := decodeFrontToken(t, c.FrontToken).UP
			if up["call"] == nil || up["call"] != up["same"] {
				t.Errorf("refresh %d: the application's claims are %v and %v", i, up["call"], up["same"])
			}
			if r, p := claimList(t, c, "st-role"), claimList(t, c, "st-perm"); !slices.Equal(r, []string{"admin"}) || len(p) != 2 {
				t.Errorf("refresh %d: st-role %q, st-perm %q", i, r, p)
			}
		})
	}
	wg.Wait()
}

// A route whose rules several refuse lists each (claim by claim, and
// each claim's rules in the order given), as the SDKs' backends list
// every failing validator; VerifyToken returns the first.
func TestRulesRefusedTogether(t *testing.T) {
	s, rr := rolesServer(t, auth.Config{})
	c := s.NewClient(authtest.Header)
	c.SignUp("ada@example.com", "a good password 1")
	give(t, rr, decodeFrontToken(t, c.FrontToken).UID, "editor")
	c.Refresh()
	res := c.Get("/three")
	want := `{"message":"invalid claim","claimValidationErrors":[` +
		`{"id":"st-role","reason":{"message":"wrong value","expectedToInclude":"owner","actualValue":["editor"]}},` +
		`{"id":"st-role","reason":{"message":"wrong value","expectedToInclude":"admin","actualValue":["editor"]}},` +
		`{"id":"st-perm","reason":{"message":"wrong value","expectedToInclude":"posts:delete","actualValue":["posts:read"]}}]}`
	if res.StatusCode != http.StatusForbidden || strings.TrimSpace(string(res.Body)) != want {
		t.Errorf("/three: %d %s\nwant 403 %s", res.StatusCode, res.Body, want)
	}
	_, err := s.Auth.VerifyToken(t.Context(), c.AccessToken, roles.Require("owner"), roles.Require("admin"))
	if ce, ok := err.(*auth.ClaimError); !ok || ce.Claim != "st-role" {
		t.Errorf("VerifyToken with two refusing rules: %v, want the first *auth.ClaimError", err)
	}
}

// A New that fails leaves the roles recipe free for the New an
// application tries next, with its configuration mended.
func TestRolesAfterNewFailed(t *testing.T) {
	st := memstore.New()
	rr := roles.New(roles.Config{})
	bad := auth.MFAConfig{Factors: []string{auth.FactorTOTP}, FirstFactors: []string{auth.FactorOTPPhone}}
	if _, err := auth.New(auth.Config{Store: st, Roles: rr, MFA: bad}); err == nil {
		t.Fatal("New with a first factor nothing offers: nil error")
	}
	a, err := auth.New(auth.Config{Store: st, Roles: rr})
	if err != nil {
		t.Fatalf("New again: %v", err)
	}
	defer a.Close(t.Context())
	if _, err := rr.CreateRole(t.Context(), "admin"); err != nil {
		t.Errorf("the recipe after the second New: %v", err)
	}
}

// countedRoles counts the reads of roles apart from a rotation, and
// strips RolesOf from rotations when apart is set, as a store that reads
// roles on their own would have them.
type countedRoles struct {
	store.Store
	store.RoleStore
	apart bool
	reads atomic.Int64
}

func (c *countedRoles) RotateRefreshToken(ctx context.Context, r store.Rotation) (store.Rotated, error) {
	if c.apart {
		r.RolesOf = ""
	}
	return c.Store.RotateRefreshToken(ctx, r)
}

func (c *countedRoles) UserRoles(ctx context.Context, tenant, userID string) ([]string, []string, error) {
	c.reads.Add(1)
	return c.RoleStore.UserRoles(ctx, tenant, userID)
}

// A refresh takes the roles its rotation read, where the store reads
// them in the same step, and reads them itself otherwise: the token is
// the same either way, and so is a role given since the last refresh.
func TestRefreshReadsRolesWithRotation(t *testing.T) {
	for _, apart := range []bool{false, true} {
		mem := memstore.New()
		st := &countedRoles{Store: mem, RoleStore: mem, apart: apart}
		s, rr := rolesServer(t, auth.Config{Store: st})
		c := s.NewClient(authtest.Header)
		c.SignUp("ada@example.com", "a good password 1")
		give(t, rr, decodeFrontToken(t, c.FrontToken).UID, "admin")
		before := st.reads.Load()
		if res := c.Refresh(); res.StatusCode != http.StatusOK {
			t.Fatalf("refresh: %d %s", res.StatusCode, res.Body)
		}
		want := int64(0)
		if apart {
			want = 1
		}
		if got := st.reads.Load() - before; got != want {
			t.Errorf("roles read apart from the rotation %v: %d reads of UserRoles at the refresh, want %d", apart, got, want)
		}
		if r, p := claimList(t, c, "st-role"), claimList(t, c, "st-perm"); !reflect.DeepEqual(r, []string{"admin"}) || !reflect.DeepEqual(p, []string{"posts:write", "posts:read"}) {
			t.Errorf("roles read apart from the rotation %v: st-role %v, st-perm %v", apart, r, p)
		}
		wantPass(t, "the role given before the refresh", c.Get("/admin"))
	}
}
