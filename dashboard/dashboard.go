package dashboard

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/latchkit/auth/internal/kit"
	"github.com/latchkit/auth/internal/wire"
	"github.com/latchkit/auth/store"
)

// Defaults for the zero values of Config.
const (
	// DefaultBundleURL is the build of the dashboard app that the
	// SuperTokens backends load, on jsDelivr.
	DefaultBundleURL = "https://cdn.jsdelivr.net/gh/supertokens/dashboard@v0.15/build/"
	// DefaultPermission is the permission that opens the API to a
	// session.
	DefaultPermission = "dashboard"
	// MinAPIKeyLen is the shortest APIKey Build accepts, in bytes.
	MinAPIKeyLen = 20
)

// Config configures the dashboard.
type Config struct {
	// APIKey, if set, opens the API to a request whose Authorization
	// header is "Bearer <APIKey>": what the dashboard app sends once an
	// operator has typed the key into its form. At least MinAPIKeyLen
	// bytes; random, and kept where the database is not. Default none:
	// only sessions that hold Permission are let in.
	APIKey string

	// BundleURL is where the dashboard app's build is served from: an
	// absolute http or https URL, or a path on the API's own origin
	// ("/static/dashboard/"); the shell loads its static/js/bundle.js and
	// static/css/main.css. Default DefaultBundleURL.
	BundleURL string

	// Permission opens the API to a session whose user holds it through
	// a role (package roles, in the "public" tenant), read from the store
	// at every request, so that taking it away closes the API at once.
	// Sessions are let in only while auth.Config.Roles is on. Default
	// DefaultPermission.
	Permission string
}

// A Recipe serves the dashboard for the auth.Config whose Dashboard
// field it is. One Recipe may serve several auth.Auth values.
type Recipe struct{ c Config }

// New returns the recipe configured by c; auth.New checks c when it
// builds the recipe.
func New(c Config) *Recipe { return &Recipe{c: c} }

// The answers of the API's refusals, as the dashboard app reads them.
const (
	msgUnauthorised = "Unauthorised access"
	msgNoAccess     = "You do not have access to this page"
)

// api is the dashboard as one auth.Auth serves it.
type api struct {
	k          kit.Kernel
	op         kit.Operator
	users      store.UserLister
	setup      kit.Setup
	key        [sha256.Size]byte // of Config.APIKey, for a comparison in constant time
	hasKey     bool
	permission string
	shell      shell
	// failures is each client's allowance of refused requests
	// (auth.RateLimits.ClientDashboardFailures).
	failures kit.Rate
}

// Build checks the configuration and returns the routes for one
// auth.Auth: auth.New calls it, with the kernel's seam.
func (p *Recipe) Build(k kit.Kernel, setup kit.Setup) (map[string]kit.Route, error) {
	if p == nil {
		return nil, errors.New("auth: Config.Dashboard is a nil *dashboard.Recipe: use dashboard.New")
	}
	c := p.c
	if c.BundleURL == "" {
		c.BundleURL = DefaultBundleURL
	}
	if c.Permission = strings.TrimSpace(c.Permission); c.Permission == "" {
		c.Permission = DefaultPermission
	}
	op := k.Operator()
	switch {
	case c.APIKey == "" && op.Roles() == nil:
		return nil, errors.New("auth: dashboard.Config.APIKey is empty and Config.Roles is off: nobody could use the dashboard; set an APIKey, or turn roles on and give operators the Permission")
	case c.APIKey != "" && len(c.APIKey) < MinAPIKeyLen:
		return nil, fmt.Errorf("auth: dashboard.Config.APIKey must be at least %d bytes", MinAPIKeyLen)
	case strings.TrimSpace(c.APIKey) != c.APIKey || strings.ContainsAny(c.APIKey, " \t\r\n"):
		return nil, errors.New("auth: dashboard.Config.APIKey must not contain spaces: it travels in an Authorization header")
	}
	users, ok := k.Store().(store.UserLister)
	if !ok {
		return nil, fmt.Errorf("auth: Config.Dashboard needs a Store that implements store.UserLister; %T does not", k.Store())
	}
	sh, err := newShell(c.BundleURL, setup.BasePath+"/dashboard", setup.AppURL)
	if err != nil {
		return nil, err
	}
	h := &api{k: k, op: op, users: users, setup: setup, key: sha256.Sum256([]byte(c.APIKey)), failures: setup.Rates["ClientDashboardFailures"],
		hasKey: c.APIKey != "", permission: c.Permission, shell: sh}
	return h.routes(), nil
}

// methods are the handlers of one path, by method.
type methods map[string]http.HandlerFunc

// routes are the dashboard's paths under the base path.
func (h *api) routes() map[string]kit.Route {
	out := map[string]kit.Route{}
	for _, path := range []string{"/dashboard", "/dashboard/", "/dashboard/roles", "/dashboard/tenants"} {
		out[path] = kit.Route{Method: http.MethodGet, Handle: h.shell.serve}
	}
	out["/dashboard/api/key/validate"] = kit.Route{Method: http.MethodPost, Handle: h.validateKey}
	for path, ms := range h.apiRoutes() {
		out["/dashboard/api"+path] = h.route(ms)
	}
	return out
}

// apiRoutes are the routes behind the API's check, under
// /dashboard/api.
func (h *api) apiRoutes() map[string]methods {
	ok := func(w http.ResponseWriter, r *http.Request) {
		var ignored map[string]any
		if err := h.k.ReadOptionalJSON(w, r, &ignored); err != nil {
			h.k.Fail(w, r, err)
			return
		}
		wire.JSON(w, http.StatusOK, wire.OK)
	}
	return map[string]methods{
		"/signout":                           {http.MethodPost: ok},
		"/analytics":                         {http.MethodPost: ok},
		"/users":                             {http.MethodGet: h.listUsers},
		"/users/count":                       {http.MethodGet: h.countUsers},
		"/search/tags":                       {http.MethodGet: h.searchTags},
		"/tenants":                           {http.MethodGet: h.tenants},
		"/tenant":                            {http.MethodGet: h.getTenant, http.MethodPost: h.createTenant, http.MethodDelete: h.deleteTenant},
		"/tenant/first-factor":               {http.MethodPut: h.putFirstFactor},
		"/tenant/required-secondary-factor":  {http.MethodPut: h.putSecondFactor},
		"/thirdparty/config":                 {http.MethodGet: h.getProviderConfig, http.MethodPut: h.putProviderConfig, http.MethodDelete: h.deleteProviderConfig},
		"/user":                              {http.MethodGet: h.getUser, http.MethodPut: h.putUser, http.MethodDelete: h.deleteUser},
		"/user/emailpassword":                {http.MethodPost: h.createPasswordUser},
		"/user/passwordless":                 {http.MethodPost: h.createPasswordlessUser},
		"/user/email/verify":                 {http.MethodGet: h.getVerified, http.MethodPut: h.putVerified},
		"/user/email/verify/token":           {http.MethodPost: h.sendVerification},
		"/user/metadata":                     {http.MethodGet: h.metadata, http.MethodPut: h.metadata},
		"/user/sessions":                     {http.MethodGet: h.sessions, http.MethodPost: h.revokeSessions},
		"/user/password":                     {http.MethodPut: h.setPassword},
		"/user/unlink":                       {http.MethodGet: h.unlink},
		"/userroles/roles":                   {http.MethodGet: h.roles},
		"/userroles/role":                    {http.MethodPut: h.putRole, http.MethodDelete: h.deleteRole},
		"/userroles/role/permissions":        {http.MethodGet: h.rolePermissions},
		"/userroles/role/permissions/remove": {http.MethodPut: h.removePermissions},
		"/userroles/user/roles":              {http.MethodGet: h.userRoles, http.MethodPut: h.giveRole, http.MethodDelete: h.takeRole},
	}
}

// route is the kit.Route of ms, each behind the API's check: a GET in
// Get beside another method, so that HEAD follows it.
func (h *api) route(ms methods) kit.Route {
	var rt kit.Route
	for _, m := range slices.Sorted(maps.Keys(ms)) {
		hf := h.guard(ms[m])
		switch {
		case rt.Method == "":
			rt.Method, rt.Handle = m, hf
		case m == http.MethodGet:
			rt.Get = hf
		default:
			if rt.More == nil {
				rt.More = map[string]http.HandlerFunc{}
			}
			rt.More[m] = hf
		}
	}
	return rt
}
