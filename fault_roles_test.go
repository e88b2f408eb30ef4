package auth_test

// The fault sweep's flows of package roles (see fault_test.go): a refresh
// of a session that a role authorises, and each change of roles through
// the Go API (a role taken, deleted or given, a permission removed) while
// sessions hold tokens from before it. Beside the sweep's invariants,
// each checks the bound that the package documents: after a change has
// committed, a token from before it answers as it did for one
// access-token lifetime at most (not at all with CheckSessionInStore),
// and every token issued after it answers as the change says; a change
// that did not commit takes nothing away, so no fault locks a user out of
// what their roles allow.

import (
	"context"
	"net/http"
	"time"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/roles"
)

// faultRolesOn turns roles on, with CheckSessionInStore as sessionCheck.
func faultRolesOn(sessionCheck bool) func(*auth.Config) {
	return func(cfg *auth.Config) {
		cfg.Roles = roles.New(roles.Config{})
		cfg.CheckSessionInStore = sessionCheck
	}
}

// faultRoles is the roles recipe of the run's server.
func (e *faultEnv) faultRoles() *roles.Recipe { return e.cfg.Roles.(*roles.Recipe) }

// rolesSetUp makes the role admin (posts:write), the routes /admin and
// /write that ask for it and its permission, and the flow's user, signed
// up with c; with admin, the user holds the role before the session
// starts, so that its tokens carry it.
func (e *faultEnv) rolesSetUp(c *authtest.Client, admin bool) {
	e.t.Helper()
	ctx := e.t.Context()
	rr := e.faultRoles()
	if _, err := rr.CreateRole(ctx, "admin", "posts:write"); err != nil {
		e.t.Fatalf("setup: %v", err)
	}
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok")) })
	e.srv.Mux.Handle("GET /admin", e.srv.Auth.RequireSession(ok, roles.Require("admin")))
	e.srv.Mux.Handle("GET /write", e.srv.Auth.RequireSession(ok, roles.RequirePermission("posts:write")))
	e.mustSignUp(e.srv.NewClient(authtest.Header))
	e.userID = e.mustUser()
	if admin {
		if _, err := rr.Give(ctx, e.userID, "admin"); err != nil {
			e.t.Fatalf("setup: %v", err)
		}
	}
	if a := e.signIn(c, e.email, authtest.Password); !a.ok() {
		e.t.Fatalf("setup: sign-in: %v", a)
	}
}

// routeStatus is the status of GET path with the access token access.
func (e *faultEnv) routeStatus(access, path string) int {
	e.t.Helper()
	r := e.send(e.srv.NewClient(authtest.Header), http.MethodGet, path, nil, "", access)
	if r.err != nil {
		e.violation("GET %s: %v", path, r.err)
		return 0
	}
	return r.res.StatusCode
}

// wantRoute checks that c's access token opens path (want 200) or is
// refused it (want 403).
func (e *faultEnv) wantRoute(what string, c *authtest.Client, path string, want int) {
	e.t.Helper()
	access, _ := c.Tokens()
	if got := e.routeStatus(access, path); got != want {
		e.violation("%s: GET %s: %d, want %d", what, path, got, want)
	}
}

func faultRolesFlows() []faultFlow {
	// A refresh of a session that the role admin authorises: whatever
	// fails, the role still authorises the session it did: a refresh
	// whose claims could not be read answers OK without them, and the
	// check reads the store.
	refresh := faultFlow{
		name:      "roles-refresh",
		modes:     faultModes,
		configure: faultRolesOn(false),
		tolerated: map[string]bool{"UserRoles": true},
		setup:     func(e *faultEnv, c *authtest.Client) { e.rolesSetUp(c, true) },
		run:       func(e *faultEnv, c *authtest.Client) faultAnswer { return e.refresh(c) },
		after: func(e *faultEnv, c *authtest.Client, a faultAnswer) {
			if !a.ok() {
				return // the refresh flows cover what a client does then
			}
			e.wantRoute("after the refresh", c, "/admin", http.StatusOK)
			e.wantRoute("after the refresh", c, "/write", http.StatusOK)
		},
	}
	take := func(ctx context.Context, e *faultEnv) error {
		_, err := e.faultRoles().Take(ctx, e.userID, "admin")
		return err
	}
	del := func(ctx context.Context, e *faultEnv) error {
		_, err := e.faultRoles().DeleteRole(ctx, "admin")
		return err
	}
	unpermit := func(ctx context.Context, e *faultEnv) error {
		return e.faultRoles().RemovePermissions(ctx, "admin", "posts:write")
	}
	return []faultFlow{
		refresh,
		faultRoleChange("roles-take", "TakeRole", "/admin", false, take),
		faultRoleChange("roles-take-sessioncheck", "TakeRole", "/admin", true, take),
		faultRoleChange("roles-delete", "DeleteRole", "/admin", false, del),
		faultRoleChange("roles-delete-sessioncheck", "DeleteRole", "/admin", true, del),
		faultRoleChange("roles-remove-permission", "RemovePermissions", "/write", false, unpermit),
		faultRoleGive("roles-give", false),
		faultRoleGive("roles-give-sessioncheck", true),
	}
}

// faultRoleChange is a flow that takes from the flow's user what opens
// path, by change, whose store call is method, while two sessions hold
// tokens that carry it: c's, and a second one's that refreshes after the
// change.
func faultRoleChange(name, method, path string, sessionCheck bool, change func(context.Context, *faultEnv) error) faultFlow {
	return faultFlow{
		name:      name,
		modes:     []authtest.Mode{authtest.Header},
		api:       true,
		configure: faultRolesOn(sessionCheck),
		setup: func(e *faultEnv, c *authtest.Client) {
			e.rolesSetUp(c, true)
			e.lasting = []*authtest.Client{e.srv.NewClient(authtest.Cookie)}
			if a := e.signIn(e.lasting[0], e.email, authtest.Password); !a.ok() {
				e.t.Fatalf("setup: sign-in: %v", a)
			}
		},
		run: func(e *faultEnv, c *authtest.Client) faultAnswer {
			return e.call(func(ctx context.Context) error { return change(ctx, e) })
		},
		after: func(e *faultEnv, c *authtest.Client, a faultAnswer) {
			committed := e.committed(method)
			if a.ok() && !committed {
				e.violation("%s returned nil without committing", method)
			}
			if !committed {
				// Nothing was taken: the role authorises as before.
				e.wantRoute("after a change that did not commit", c, path, http.StatusOK)
				if r := e.call(func(ctx context.Context) error { return change(ctx, e) }); !r.ok() {
					e.violation("%s again after a failure before it committed: %v, want nil", method, r)
				}
			} else if !a.ok() {
				e.finding(method + " failed after it committed: what it took is gone")
			}
			e.wantTakenWithin(c, path)
			e.wantLasting("a change of roles")
			e.wantRoute("a session refreshed after the change", e.lasting[0], path, http.StatusForbidden)
		},
	}
}

// wantTakenWithin checks the bound of a change that took path from c's
// session: refused at once with CheckSessionInStore; otherwise refused
// once the token from before has expired, an access-token lifetime at
// most, and by every token a refresh issues after the change.
func (e *faultEnv) wantTakenWithin(c *authtest.Client, path string) {
	e.t.Helper()
	access, _ := c.Tokens()
	if e.cfg.CheckSessionInStore {
		if got := e.routeStatus(access, path); got != http.StatusForbidden {
			e.violation("with CheckSessionInStore, the token from before the change: GET %s %d, want 403 at once", path, got)
		}
	}
	lifetime := e.cfg.AccessTokenLifetime
	if lifetime == 0 {
		lifetime = auth.DefaultAccessTokenLifetime
	}
	e.srv.Clock.Advance(lifetime + time.Second)
	if got := e.routeStatus(access, path); got != http.StatusUnauthorized {
		e.violation("the token from before the change, an access-token lifetime later: GET %s %d, want 401", path, got)
	}
	if r := e.refresh(c); !r.ok() {
		e.violation("the session after the change does not refresh: %v", r)
		return
	}
	e.wantRoute("the token a refresh after the change issued", c, path, http.StatusForbidden)
}

// faultRoleGive is a flow that gives the flow's user the role admin while
// a session of theirs holds a token without it: once it has committed,
// the next refresh carries the role (with CheckSessionInStore, the token
// from before has it at once).
func faultRoleGive(name string, sessionCheck bool) faultFlow {
	give := func(ctx context.Context, e *faultEnv) error {
		_, err := e.faultRoles().Give(ctx, e.userID, "admin")
		return err
	}
	return faultFlow{
		name:      name,
		modes:     []authtest.Mode{authtest.Header},
		api:       true,
		configure: faultRolesOn(sessionCheck),
		setup:     func(e *faultEnv, c *authtest.Client) { e.rolesSetUp(c, false) },
		run: func(e *faultEnv, c *authtest.Client) faultAnswer {
			return e.call(func(ctx context.Context) error { return give(ctx, e) })
		},
		after: func(e *faultEnv, c *authtest.Client, a faultAnswer) {
			committed := e.committed("GiveRole")
			if a.ok() && !committed {
				e.violation("GiveRole returned nil without committing")
			}
			if !committed {
				e.wantRoute("after a gift that did not commit", c, "/admin", http.StatusForbidden)
				if r := e.call(func(ctx context.Context) error { return give(ctx, e) }); !r.ok() {
					e.violation("Give again after a failure before it committed: %v, want nil", r)
				}
			}
			if e.cfg.CheckSessionInStore {
				e.wantRoute("with CheckSessionInStore, the token from before the gift", c, "/admin", http.StatusOK)
			}
			if r := e.refresh(c); !r.ok() {
				e.violation("the session after the gift does not refresh: %v", r)
			}
			e.wantRoute("the token a refresh after the gift issued", c, "/admin", http.StatusOK)
		},
	}
}
