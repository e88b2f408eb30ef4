package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/dashboard"
	"github.com/latchkit/auth/emailverification"
	"github.com/latchkit/auth/roles"
	"github.com/latchkit/auth/store"
)

// demoPermissions are every permission the demo defines: the role admin
// has them all.
var demoPermissions = []string{impersonatePermission, "users:read", "users:write"}

// adminFlag adds -admin, repeatable, to fs: the emails of the users given
// the role admin. DEMO_ADMIN, comma-separated, stands in when no -admin
// is given.
func adminFlag(fs *flag.FlagSet, admins *[]string) {
	fs.Func("admin", "email of a user given the role admin, with every permission the demo defines ("+
		strings.Join(demoPermissions, ", ")+"), at start and at sign-up or sign-in; repeatable; GET /api/admin needs the role (env DEMO_ADMIN, comma-separated)",
		func(v string) error {
			*admins = append(*admins, v)
			return nil
		})
}

// parseAdmins are the admins' emails, from the flags or else the
// environment, as the library keeps emails: trimmed and lower-case.
func parseAdmins(flags []string, getenv func(string) string) []string {
	if len(flags) == 0 {
		flags = strings.Split(getenv("DEMO_ADMIN"), ",")
	}
	var admins []string
	for _, e := range flags {
		if e = strings.ToLower(strings.TrimSpace(e)); e != "" && !slices.Contains(admins, e) {
			admins = append(admins, e)
		}
	}
	return admins
}

// dashboardPermission is the permission that opens the dashboard's API
// to a session: the role admin's.
const dashboardPermission = "users:write"

// dashboardFlags adds -admin-api-key and -dashboard-bundle to fs, each
// defaulting to its environment twin through env.
func dashboardFlags(fs *flag.FlagSet, env func(name, def string) string, key, bundle *string) {
	fs.StringVar(key, "admin-api-key", env("DEMO_ADMIN_API_KEY", ""), "API key of the SuperTokens dashboard, at least 20 bytes: serves the dashboard at <app-url>/auth/dashboard and its API (users, sessions, roles) to whoever has the key, and to the sessions of -admin's users; unset: no dashboard; prefer the env twin (env DEMO_ADMIN_API_KEY)")
	fs.StringVar(bundle, "dashboard-bundle", env("DEMO_DASHBOARD_BUNDLE", dashboard.DefaultBundleURL), "where the dashboard app's build is loaded from: an http(s) URL, or a path on the demo's origin (env DEMO_DASHBOARD_BUNDLE)")
}

// dashboardOf is the dashboard recipe of the options: on with
// -admin-api-key.
func dashboardOf(o options) auth.Recipe {
	if o.dashboard == nil {
		return nil
	}
	return o.dashboard
}

// rolesOf is the roles recipe of the options: on with -admin.
func rolesOf(o options) auth.Recipe {
	if o.roles == nil {
		return nil
	}
	return o.roles
}

// setUpAdmins creates the role admin and gives it to the users who have
// an admin's email already; grantAdmin gives it to those who sign up or
// in later.
func setUpAdmins(ctx context.Context, o options, st store.Store) error {
	if o.roles == nil {
		return nil
	}
	if _, err := o.roles.CreateRole(ctx, "admin", demoPermissions...); err != nil {
		return err
	}
	for _, email := range o.admins {
		logins, err := st.LoginsByEmail(ctx, email)
		if err != nil {
			return err
		}
		for _, l := range logins {
			if !isAdmin(o, l) {
				continue
			}
			if _, err := o.roles.Give(ctx, l.UserID, "admin"); err != nil {
				return err
			}
		}
	}
	return nil
}

// isAdmin reports whether the login l makes its user an admin: it has an
// admin's email, and the email is verified unless the demo does not
// verify emails. Where emails are verified, an address is not taken on
// its word: whoever signs up first with an admin's email is not an admin
// before opening the link mailed to it.
func isAdmin(o options, l store.Login) bool {
	return slices.Contains(o.admins, l.Email) && (l.EmailVerified || o.emailVerification == emailverification.Off)
}

// grantAdmin gives the role admin to a user who signs up or in with an
// admin's email, or verifies one. A sign-up's session carries it at once
// (the event comes before the session starts); a sign-in's or a
// verification's from its next refresh, though an admin who existed at
// start had it already.
func grantAdmin(o options, st store.Store) func(context.Context, auth.Event) {
	return func(ctx context.Context, e auth.Event) {
		switch {
		case o.roles == nil:
			return
		case e.Kind == auth.EventSignUp, e.Kind == auth.EventSignIn, e.Kind == auth.EventEmailVerified:
		default:
			return
		}
		logins, err := st.Logins(ctx, e.UserID)
		if err != nil {
			return
		}
		if slices.ContainsFunc(logins, func(l store.Login) bool { return isAdmin(o, l) }) {
			// A failure leaves the role to the next sign-in, and /api/me
			// shows it.
			_, _ = o.roles.Give(ctx, e.UserID, "admin")
		}
	}
}

// withRoles adds the user's roles and permissions to an answer of
// /api/me, where roles are on.
func withRoles(ctx context.Context, st store.Store, on bool, m *me) error {
	rs, ok := st.(store.RoleStore)
	if !on || !ok {
		return nil
	}
	var err error
	m.Roles, m.Permissions, err = rs.UserRoles(ctx, store.PublicTenant, m.UserID)
	if m.Roles == nil {
		m.Roles = []string{}
	}
	if m.Permissions == nil {
		m.Permissions = []string{}
	}
	return err
}

// adminRoutes serves GET /api/admin, for sessions with the role admin:
// the others get the SDKs' 403 "invalid claim".
func adminRoutes(mux *http.ServeMux, a *auth.Auth) {
	mux.Handle("GET /api/admin", a.RequireSession(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s, _ := auth.SessionFromContext(r.Context())
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(struct {
			UserID      string   `json:"userId"`
			Permissions []string `json:"permissions"`
		}{s.UserID, demoPermissions})
	}), roles.Require("admin")))
}

// printAdmins tells who gets the role admin.
func printAdmins(o options) string {
	var out string
	if len(o.admins) > 0 {
		out = fmt.Sprintf("demo: roles on: %s gets the role admin at sign-up or sign-in (GET /api/admin needs it)\n", strings.Join(o.admins, ", "))
	}
	if o.dashboard != nil {
		out += "demo: the dashboard is at " + strings.TrimRight(o.appURL, "/") + "/auth/dashboard (the key is -admin-api-key's)\n"
	}
	return out
}
