package auth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/latchkit/auth/emailchange"
	"github.com/latchkit/auth/emailpassword"
	"github.com/latchkit/auth/emailverification"
	"github.com/latchkit/auth/internal/kit"
	"github.com/latchkit/auth/internal/seal"
	"github.com/latchkit/auth/internal/tokencache"
	"github.com/latchkit/auth/internal/wire"
	"github.com/latchkit/auth/passwordless"
	"github.com/latchkit/auth/store"
	"github.com/latchkit/auth/thirdparty"
)

// Auth serves the authentication endpoints and verifies sessions. Create it
// with New; it is safe for concurrent use.
type Auth struct {
	cfg         Config
	store       store.Store
	keys        *keyring // access-token signing keys
	refreshKeys *keyring // refresh-token MAC keys
	parser      *jwt.Parser
	refreshPath string
	outbox      *outbox
	audit       *auditWriter // nil without Config.Audit
	xorigin     *http.CrossOriginProtection
	routes      map[string]kit.Route // built once by New
	// The recipes in packages of their own that Config turns on; nil
	// when off. Email and password is always on.
	emailPassword *emailpassword.Recipe
	verification  *emailverification.Recipe
	emailChange   *emailchange.Recipe
	passwordless  *passwordless.Recipe
	thirdParty    *thirdparty.Recipe
	// claims are the features' claims, registered by New; claimNames
	// their names, and claimsInTokens whether any is on. readings says
	// whether a claim of a recipe's or the application's is among them,
	// which a token's claims share a kit.Reading for.
	claims         []tokenClaim
	claimNames     []string
	claimsInTokens bool
	readings       bool
	rotationRoles  string       // the tenant of kit.Kernel's RolesWithRotation
	claimFields    reflect.Type // see readClaims
	// frontendOrigins are the origins of AppURL and AllowedOrigins, where
	// third-party sign-in may send the browser back to.
	frontendOrigins map[string]bool
	passkeyRoutes   map[string]kit.Route // of Config.Passkeys
	dashboardRoutes map[string]kit.Route // of Config.Dashboard
	available       []string             // the first factors the recipes offer, in their order
	publicTenant    *kit.Tenant          // Config's rules, for requests that name no tenant
	tenants         tenantCache          // the others, with Config.Tenants

	liveSessions tokencache.Sessions // for Config.SessionCheckCache
	deleted      ended               // users this instance deleted, until their access tokens expire
	evicted      ended               // sessions this instance ended to evict a stranger, likewise
	verified     tokenCache          // access tokens verified before
}

// New validates cfg, fills in its defaults and returns an Auth.
func New(cfg Config) (*Auth, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	xorigin, err := newCrossOrigin(cfg.AllowedOrigins)
	if err != nil {
		return nil, fmt.Errorf("auth: Config.AllowedOrigins: %w", err)
	}
	a := &Auth{
		cfg:         cfg,
		store:       cfg.Store,
		refreshPath: cfg.BasePath + "/session/refresh",
		outbox:      newOutbox(cfg.Email.QueueSize, cfg.Email.Attempts, cfg.Email.Timeout, time.Second),
		xorigin:     xorigin,
	}
	for _, c := range []tokenClaim{verifiedEmailClaim{a}, factorsClaim{a}, freshClaim{a}, impersonationClaim{a}} { // claimEV, claimMFA, st-fresh, claimImp
		if err := a.registerClaim(c); err != nil {
			panic(err) // the kernel's own claims
		}
	}
	a.frontendOrigins = frontendOrigins(cfg)
	if err := a.registerTokenClaims(); err != nil {
		return nil, err
	}
	sealer, err := seal.New(cfg.Secrets)
	if err != nil {
		return nil, err
	}
	a.keys = &keyring{
		store:       cfg.Store,
		alg:         cfg.SigningAlgorithm,
		signFor:     cfg.SigningKeyLifetime,
		verifyExtra: cfg.AccessTokenLifetime + jwtLeeway,
		now:         cfg.Now,
		seal:        sealer,
	}
	// A refresh key makes tokens for as long as a signing key signs, and
	// verifies them for a refresh-token lifetime after: the current token
	// of an idle session stays usable until the session expires.
	a.refreshKeys = &keyring{
		store:       cfg.Store,
		alg:         refreshAlg,
		signFor:     cfg.SigningKeyLifetime,
		verifyExtra: cfg.RefreshTokenLifetime,
		now:         cfg.Now,
		seal:        sealer,
	}
	// A secret that does not open the stored keys would fail every
	// sign-in; better that the application does not start.
	if err := a.checkKeys(); err != nil {
		return nil, err
	}
	a.parser = jwt.NewParser(
		jwt.WithValidMethods([]string{cfg.SigningAlgorithm}),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithIssuer(cfg.Issuer),
		jwt.WithLeeway(jwtLeeway), // for iat and nbf; parseAccess checks exp exactly
		jwt.WithStrictDecoding(),
		jwt.WithTimeFunc(cfg.Now),
	)
	// Last, as a recipe may bind itself to this Auth (roles serves one):
	// New fails before it, so that a New tried again after a failure,
	// such as a store out of reach at start, finds the recipes free.
	if err := a.buildRecipes(); err != nil {
		return nil, err
	}
	a.routes = a.routeTable()
	a.publicTenant = &kit.Tenant{ID: PublicTenant, Providers: cfg.ThirdParty.Providers}
	if cfg.Audit.Enabled {
		a.audit = newAuditWriter(&a.cfg, cfg.Store.(store.AuditLog))
	}
	return a, nil
}

// allow is the Allow header of rt.
func allow(rt kit.Route) string {
	methods := rt.Method
	if rt.Get != nil {
		methods += ", GET"
	}
	for _, m := range slices.Sorted(maps.Keys(rt.More)) {
		methods += ", " + m
	}
	return methods + ", OPTIONS"
}

// handler is what serves method on rt's path, or nil: a GET the route
// serves answers HEAD too.
func handler(rt kit.Route, method string) http.HandlerFunc {
	if h := rt.More[method]; h != nil {
		return h
	}
	if method == rt.Method || rt.Method == http.MethodGet && method == http.MethodHead {
		return rt.Handle
	}
	return nil
}

// routeTable maps the paths under the base path to the endpoints of the
// features that are configured; the others are not served at all.
func (a *Auth) routeTable() map[string]kit.Route {
	post := func(h http.HandlerFunc) kit.Route { return kit.Route{Method: http.MethodPost, Handle: h} }
	get := func(h http.HandlerFunc) kit.Route { return kit.Route{Method: http.MethodGet, Handle: h} }
	routes := map[string]kit.Route{
		"/session/refresh": post(a.handleRefresh),
		"/signout":         post(a.handleSignOut),
	}
	// First: the older /signup/email/exists is email and password's
	// unless the rid header names passwordless.
	mount(routes, "emailpassword", a.emailPassword.Routes())
	if a.cfg.SigningAlgorithm == EdDSA {
		routes["/jwt/jwks.json"] = get(a.serveJWKS)
	}
	if a.verification != nil {
		mount(routes, "emailverification", a.verification.Routes())
	}
	if a.emailChange != nil {
		mount(routes, "emailchange", a.emailChange.Routes())
	}
	if a.passwordless != nil {
		mount(routes, "passwordless", a.passwordless.Routes())
	}
	mount(routes, "webauthn", a.passkeyRoutes)
	mount(routes, "dashboard", a.dashboardRoutes)
	a.mfaRoutes(routes)
	a.accountRoutes(routes)
	routes["/loginmethods"] = get(a.handleLoginMethods)
	a.organisationRoutes(routes)
	if a.thirdParty != nil {
		mount(routes, "thirdparty", a.thirdParty.Routes())
	}
	return routes
}

// mount adds the routes of the recipe rid to routes. A path that two
// recipes share (the SDKs' older /signup/email/exists, of email and
// password and of passwordless) goes to the recipe that the request's rid
// header names, and to the one mounted first otherwise.
func mount(routes map[string]kit.Route, rid string, add map[string]kit.Route) {
	for path, rt := range add {
		first, shared := routes[path]
		if shared {
			theirs, ours := first.Handle, rt.Handle
			rt.Handle = func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("rid") == rid {
					ours(w, r)
					return
				}
				theirs(w, r)
			}
		}
		routes[path] = rt
	}
}

// frontendOrigins is the set of the origins of AppURL and AllowedOrigins.
func frontendOrigins(cfg Config) map[string]bool {
	set := make(map[string]bool, len(cfg.AllowedOrigins)+1)
	if app, err := url.Parse(cfg.AppURL); err == nil && app.Host != "" {
		set[app.Scheme+"://"+app.Host] = true
	}
	for _, o := range cfg.AllowedOrigins {
		set[o] = true
	}
	return set
}

// ServeHTTP serves the endpoints under the base path. Unknown paths get
// 404, other methods 405, and OPTIONS an empty 204 naming the method;
// state-changing requests from browsers on foreign origins get 403.
func (a *Auth) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	defer a.recoverPanic(w, r)
	rest, ok := strings.CutPrefix(r.URL.Path, a.cfg.BasePath)
	if !ok || (rest != "" && rest[0] != '/') {
		wire.Message(w, http.StatusNotFound, "not found")
		return
	}
	rt, t, err := a.route(r, rest)
	if err != nil {
		a.answerNoTenant(w, r, err)
		return
	}
	if t != a.publicTenant {
		r = r.WithContext(context.WithValue(r.Context(), tenantKey{}, t))
	}
	switch {
	case r.Method == http.MethodOptions:
		w.Header().Set("Allow", allow(rt))
		w.WriteHeader(http.StatusNoContent)
	case rt.Get != nil && (r.Method == http.MethodGet || r.Method == http.MethodHead):
		rt.Get(w, r)
	case handler(rt, r.Method) == nil:
		w.Header().Set("Allow", allow(rt))
		wire.Message(w, http.StatusMethodNotAllowed, "method not allowed")
	case !rt.CrossSite && a.xorigin.Check(r) != nil:
		wire.Message(w, http.StatusForbidden, "cross-origin request refused: add the page's origin to Config.AllowedOrigins")
	default:
		handler(rt, r.Method)(w, r)
	}
}

// Close stops taking emails and waits for the queued ones to be
// sent. If ctx ends first, deliveries in flight are abandoned, every email
// still queued is logged and reported as EventMailFailed, and Close returns
// ctx's error. Call it when the server shuts down, after http.Server's
// Shutdown. The session endpoints keep working after Close.
func (a *Auth) Close(ctx context.Context) error {
	err := a.closeOutbox(ctx)
	if a.audit != nil {
		err = errors.Join(err, a.audit.close(ctx))
	}
	return err
}

// closeOutbox stops the outbox: see Close.
func (a *Auth) closeOutbox(ctx context.Context) error {
	o := a.outbox
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return nil
	}
	o.closed = true
	close(o.queue)
	o.mu.Unlock()

	done := make(chan struct{})
	go func() { o.workers.Wait(); close(done) }()
	select {
	case <-done:
		o.stop()
		return nil
	case <-ctx.Done():
	}
	// The workers may be gone, or stuck; account for what is still queued.
	// Drain the queue before aborting the deliveries in flight: once
	// aborted, a worker would pick up the next queued email and report it
	// itself, possibly after Close has returned. Workers that are still
	// sending report their own outcome when their Mailer returns.
	for job := range o.queue {
		a.cfg.Logger.LogAttrs(ctx, slog.LevelError, "auth: "+job.kind+" email dropped", slog.String("reason", "shutdown"))
		a.emit(ctx, nil, Event{Kind: EventMailFailed})
	}
	o.stop()
	return ctx.Err()
}
