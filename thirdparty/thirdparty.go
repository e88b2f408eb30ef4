// Package thirdparty is the third-party sign-in recipe: sign-in with
// Google, GitHub, Apple or any OpenID Connect provider (package provider
// talks to them), for the SuperTokens frontend's ThirdParty recipe, rid
// "thirdparty" (PROTOCOL.md section 7). Turn it on with auth.Config's
// ThirdParty field:
//
//	auth.Config{
//		Store:      st,
//		AppURL:     "https://app.example.com",
//		ThirdParty: thirdparty.Config{Providers: []provider.Provider{google}},
//	}
//
// # Routes
//
// Under the Auth's base path: GET /authorisationurl answers the
// provider's authorisation URL and a PKCE verifier; POST /signinup redeems
// the code the provider sent the browser back with and signs the user in,
// or up; POST /callback/<id> relays the form_post callback of a provider
// that posts it (Apple) to the frontend, starting no session.
//
// # Checks
//
// The server keeps no state between the two steps of a sign-in: the PKCE
// verifier it hands the SDK carries its provider, redirect URI and a
// 15-minute expiry under a MAC, with a key derived from the access-token
// signing key, so every instance recognises its own verifiers and nothing
// else; the OpenID nonce is derived from it. A redirect URI is the SDK's
// callback page on the origin of auth.Config's AppURL or one of its
// AllowedOrigins, or is listed in [Config].RedirectURIs, compared as
// spelt. A code is redeemed once: it is remembered in the Limiter for 10
// minutes before the provider sees it, and a limiter that cannot say
// refuses it. ID tokens are checked for signature, iss, aud, azp, exp,
// iat and nonce. A provider that fails, stalls ([Config].Timeout, 10
// seconds) or lies gets the client GENERAL_ERROR, never a 5xx; an email
// the provider does not give, or one normalising would change into
// another mailbox's, is NO_EMAIL_GIVEN_BY_PROVIDER. Each client gets
// auth.RateLimits' ClientThirdPartySignIns.
//
// # Accounts
//
// A provider that vouches for the address (email_verified) proves it
// (store.Login.EmailProven); under auth.Config's AccountLinking a
// sign-in with a proven address joins the user who owns it. Without
// AccountLinking, every sign-up through a provider makes a new user: a
// provider's user and an email and password user with the same email are
// two users. The sign-in completes the factor thirdparty and starts its
// session through the kernel's one sign-in path.
//
// Sent with a session and shouldTryLinkingWithSessionUser true (the SDKs'
// getAuthorisationURLWithQueryParamsAndSetState keeps it for the
// callback's /signinup), the identity is added to the session's user
// instead, whatever email it gives, and no session starts: see auth's
// package doc (# Account self-service) for the rules. The session
// is checked before the code is spent at the provider.
package thirdparty

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/latchkit/auth/internal/address"
	"github.com/latchkit/auth/internal/kit"
	"github.com/latchkit/auth/internal/onetime"
	"github.com/latchkit/auth/internal/wire"
	"github.com/latchkit/auth/provider"
	"github.com/latchkit/auth/store"
)

const (
	// verifierLifetime is how long a sign-in may take between the
	// authorisation URL and /signinup.
	verifierLifetime = 15 * time.Minute
	// codeMemory is how long a presented authorisation code is
	// remembered, so that it never yields a second session. Providers
	// expire codes within minutes.
	codeMemory = 10 * time.Minute
)

// Answers of /signinup that the SDKs show or translate.
const (
	msgProviderFailed      = "Sign-in with the provider failed. Please try again."
	reasonSignUpNotAllowed = "Cannot sign in / up due to security reasons. Please try a different login method or contact support. (ERR_CODE_006)"
)

// Config configures sign-in with third-party identity providers. The zero
// value means none.
type Config struct {
	// Providers are the providers users may sign in with. Their IDs must
	// be unique; they are the thirdPartyId the frontend SDK sends.
	Providers []provider.Provider

	// RedirectURIs are redirect URIs the frontend may ask for besides the
	// SDK's callback page, <origin>/auth/callback/<thirdPartyId> on the
	// origin of auth.Config's AppURL or one of its AllowedOrigins, which
	// is always allowed; for a provider that posts its callback (Apple),
	// the frontend pages the relay may send its code to besides that
	// page. Exact strings, as registered at the providers: absolute
	// http(s) URLs with a lower-case scheme, no userinfo and no fragment
	// (not even an empty one); auth.New refuses others.
	RedirectURIs []string

	// APIURL is the public URL of the server this handler runs on, such
	// as "https://api.example.com": a provider that posts its callback
	// (Apple) is sent to <APIURL><BasePath>/callback/<id>, which relays
	// it to the frontend. Default auth.Config's AppURL.
	APIURL string

	// Timeout bounds each call to a provider (discovery, code exchange,
	// user API). Default provider.Timeout (10 seconds).
	Timeout time.Duration
}

// withDefaults is c with its defaults filled in, or why c will not do.
func (c Config) withDefaults(setup kit.Setup) (Config, error) {
	if err := checkProviderIDs(c.Providers); err != nil {
		return c, err
	}
	for _, uri := range c.RedirectURIs {
		if !exactRedirectURI(uri) {
			return c, fmt.Errorf("auth: Config.ThirdParty.RedirectURIs: %q must be an absolute http or https URL with a lower-case scheme, no userinfo and no fragment", uri)
		}
	}
	if _, ok := kit.HTTPURL(setup.AppURL); !ok {
		return c, fmt.Errorf("auth: Config.AppURL %q must be an http or https URL with ThirdParty.Providers: the redirect URIs are checked against it", setup.AppURL)
	}
	if c.APIURL == "" {
		c.APIURL = setup.AppURL
	}
	c.APIURL = strings.TrimRight(c.APIURL, "/")
	if _, ok := kit.HTTPURL(c.APIURL); !ok {
		return c, fmt.Errorf("auth: Config.ThirdParty.APIURL %q must be an http or https URL", c.APIURL)
	}
	if c.Timeout < 0 {
		return c, errors.New("auth: Config.ThirdParty.Timeout must not be negative")
	}
	if c.Timeout == 0 {
		c.Timeout = provider.Timeout
	}
	return c, nil
}

// Recipe is third-party sign-in as one Auth serves it. Package auth makes
// it with New from its Config; an application does not.
type Recipe struct {
	k             kit.Kernel
	cfg           Config
	setup         kit.Setup
	clientSignIns kit.Rate // each client's allowance of sign-ins
}

// New is for package auth: the recipe of c, with its defaults, for the
// kernel k; clientSignIns is each client's allowance of sign-ins.
func New(k kit.Kernel, c Config, setup kit.Setup, clientSignIns kit.Rate) (*Recipe, error) {
	c, err := c.withDefaults(setup)
	if err != nil {
		return nil, err
	}
	rc := &Recipe{k: k, cfg: c, setup: setup, clientSignIns: clientSignIns}
	k.FirstFactors(kit.FactorThirdParty)
	return rc, nil
}

// Routes are the recipe's endpoints, by their path under the base path.
func (rc *Recipe) Routes() map[string]kit.Route {
	routes := map[string]kit.Route{
		"/authorisationurl": {Method: http.MethodGet, Handle: rc.handleAuthorisationURL},
		"/signinup":         {Method: http.MethodPost, Handle: rc.handleSignInUp},
	}
	for _, p := range rc.cfg.Providers {
		if fp, ok := p.(provider.FormPoster); ok && fp.FormPost() {
			routes["/callback/"+p.ID()] = kit.Route{Method: http.MethodPost, Handle: rc.handleFormPostCallback, CrossSite: true}
		}
	}
	return routes
}

// handleAuthorisationURL answers the provider's authorisation URL and the
// PKCE verifier the frontend keeps until /signinup.
func (rc *Recipe) handleAuthorisationURL(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	id, redirect := q.Get("thirdPartyId"), q.Get("redirectURIOnProviderDashboard")
	switch {
	case id == "":
		wire.Message(w, http.StatusBadRequest, "Please provide the thirdPartyId as a GET param")
		return
	case redirect == "":
		wire.Message(w, http.StatusBadRequest, "Please provide the redirectURIOnProviderDashboard as a GET param")
		return
	}
	p, err := rc.thirdParty(r, id, redirect)
	if err != nil {
		rc.k.Fail(w, r, err)
		return
	}
	kid, key, err := rc.k.MACKey(r.Context(), verifierPurpose)
	if err != nil {
		rc.k.Fail(w, r, err)
		return
	}
	verifier := newVerifier(kid, key, rc.scoped(r, id), redirect, rc.k.Now().Add(verifierLifetime))
	ctx, cancel := context.WithTimeout(r.Context(), rc.cfg.Timeout)
	defer cancel()
	u, err := p.AuthURL(ctx, provider.AuthRequest{RedirectURI: redirect, CodeChallenge: challengeOf(verifier), Nonce: nonceOf(verifier)})
	if err != nil {
		rc.providerFailed(r.Context(), id, "authorisation URL", err)
		wire.GeneralError(w, msgProviderFailed)
		return
	}
	wire.JSON(w, http.StatusOK, struct {
		Status           string `json:"status"`
		URLWithParams    string `json:"urlWithQueryParams"`
		PKCECodeVerifier string `json:"pkceCodeVerifier"`
	}{"OK", u, verifier})

}

// signInUpRequest is the body of /signinup.
type signInUpRequest struct {
	ThirdPartyID    *string `json:"thirdPartyId"`
	RedirectURIInfo *struct {
		RedirectURI *string         `json:"redirectURIOnProviderDashboard"`
		QueryParams json.RawMessage `json:"redirectURIQueryParams"`
		Verifier    *string         `json:"pkceCodeVerifier"`
	} `json:"redirectURIInfo"`
	OAuthTokens json.RawMessage `json:"oAuthTokens"`
	kit.LinkingField
}

// handleSignInUp redeems the code the provider sent the browser back with,
// and signs the user in, or up.
func (rc *Recipe) handleSignInUp(w http.ResponseWriter, r *http.Request) {
	if !rc.k.FirstFactorAllowed(w, r, kit.FactorThirdParty) {
		return
	}
	var req signInUpRequest
	if !rc.k.ReadSignInRequest(w, r, &req) {
		return
	}
	in, err := req.parse()
	if err != nil {
		rc.k.Fail(w, r, err)
		return
	}
	id, redirect := in.id, in.redirect
	p, err := rc.thirdParty(r, id, redirect)
	if err != nil {
		rc.k.Fail(w, r, err)
		return
	}
	// Adding the identity to the session's user: the session is checked
	// before the code is spent at the provider.
	if req.LinkRequested() {
		s, ok := rc.k.AccountSession(w, r)
		if !ok || !rc.k.SignedInRecently(w, r, s) {
			return
		}
	}
	ctx := r.Context()
	if !rc.ownVerifier(ctx, in.verifier, rc.scoped(r, id), redirect) {
		rc.k.Fail(w, r, wire.BadRequest("the pkceCodeVerifier was not issued for this sign-in, or has expired"))
		return
	}
	perClient := kit.Limit{Key: kit.LimitKey("thirdparty-client", rc.k.Client(r)), Rate: rc.clientSignIns}
	if wait := rc.k.Take(ctx, perClient); wait > 0 {
		wire.TooMany(w, wait)
		return
	}
	ident, ok := rc.redeem(w, r, p, in)
	if !ok {
		return
	}
	rc.signInUpAs(w, r, id, ident, req.LinkRequested())
}

// redeem exchanges the code of a /signinup at the provider and returns who
// signed in, or answers the request itself and reports false.
func (rc *Recipe) redeem(w http.ResponseWriter, r *http.Request, p provider.Provider, in signInUp) (provider.Identity, bool) {
	ctx, id := r.Context(), in.id
	// A code is remembered before the provider sees it, so a replay never
	// reaches the provider, even while the first use is in flight. A
	// limiter that cannot say refuses: this check must not fail open.
	if !rc.k.FirstUse(ctx, kit.LimitKey("oauth-code", id, in.code), codeMemory) {
		rc.providerFailed(ctx, id, "exchange", errors.New("authorisation code presented before"))
		wire.GeneralError(w, msgProviderFailed)
		return provider.Identity{}, false
	}
	pctx, cancel := context.WithTimeout(ctx, rc.cfg.Timeout)
	ident, err := p.Exchange(pctx, provider.ExchangeRequest{
		Code: in.code, RedirectURI: in.redirect, CodeVerifier: in.verifier, Nonce: nonceOf(in.verifier), Issuer: in.iss,
	})
	cancel()
	switch {
	case errors.Is(err, provider.ErrNotAllowed):
		rc.providerFailed(ctx, id, "exchange", err)
		wire.JSON(w, http.StatusOK, struct {
			Status string `json:"status"`
			Reason string `json:"reason"`
		}{"SIGN_IN_UP_NOT_ALLOWED", reasonSignUpNotAllowed})

		return ident, false
	case err != nil:
		rc.providerFailed(ctx, id, "exchange", err)
		wire.GeneralError(w, msgProviderFailed)
		return ident, false
	}
	return ident, true
}

// signInUpAs signs in, or up, the identity a provider vouched for, or
// with link adds it to the session's user.
func (rc *Recipe) signInUpAs(w http.ResponseWriter, r *http.Request, id string, ident provider.Identity, link bool) {
	email := address.FromProvider(ident.Email)
	if email == "" || wire.CheckEmail(email) != "" {
		wire.JSON(w, http.StatusOK, struct {
			Status string `json:"status"`
		}{"NO_EMAIL_GIVEN_BY_PROVIDER"})

		return
	}
	rc.k.SignIn(w, r, kit.SignIn{
		Login: store.Login{
			LoginKey:      store.LoginKey{Method: store.MethodThirdParty, ThirdParty: id, Subject: ident.Subject},
			Email:         email,
			EmailVerified: ident.EmailVerified,
			EmailProven:   ident.EmailVerified, // the provider vouches for whoever signed in
		},
		LinkToSession: link,
		Factor:        kit.FactorThirdParty,
		NotAllowed:    "SIGN_IN_UP_NOT_ALLOWED",
		What:          "signing in with " + id,
	})
}

// signInUp is what a /signinup body names: the provider, the redirect
// URI, the code, the callback's iss parameter (or "") and the verifier.
type signInUp struct {
	id, redirect, code, iss, verifier string
}

// parse checks a /signinup body the way the SuperTokens backends do.
func (req signInUpRequest) parse() (signInUp, error) {
	var in signInUp
	if req.ThirdPartyID == nil || *req.ThirdPartyID == "" {
		return in, wire.BadRequest("Please provide the thirdPartyId in request body")
	}
	if req.OAuthTokens != nil && string(req.OAuthTokens) != "null" {
		// Tokens from the client are not proof of anything the server
		// can check as well as a code it redeems itself.
		return in, wire.BadRequest("oAuthTokens are not accepted: send redirectURIInfo")
	}
	info := req.RedirectURIInfo
	if info == nil {
		return in, wire.BadRequest("Please provide one of redirectURIInfo or oAuthTokens in the request body")
	}
	if info.RedirectURI == nil || *info.RedirectURI == "" {
		return in, wire.BadRequest("Please provide the redirectURIOnProviderDashboard in request body")
	}
	var err error
	if in.code, in.iss, err = callbackParams(info.QueryParams); err != nil {
		return in, err
	}
	if info.Verifier == nil || *info.Verifier == "" {
		return in, wire.BadRequest("Please provide the pkceCodeVerifier in request body")
	}
	in.id, in.redirect, in.verifier = *req.ThirdPartyID, *info.RedirectURI, *info.Verifier
	for _, s := range []string{in.id, in.redirect, in.code, in.iss, in.verifier} {
		if len(s) > wire.MaxParamLen {
			return in, wire.BadRequest("a parameter is too long")
		}
	}
	return in, nil
}

// callbackParams reads the code and the iss parameter (or "") from the
// query of the provider's redirect back to the frontend, which the SDK
// sends as redirectURIQueryParams.
func callbackParams(raw json.RawMessage) (code, iss string, err error) {
	var params map[string]json.RawMessage
	if json.Unmarshal(raw, &params) != nil || params == nil {
		return "", "", wire.BadRequest("redirectURIQueryParams must be an object")
	}
	if code, err = stringParam(params, "code"); err != nil {
		return "", "", err
	}
	if code == "" {
		return "", "", wire.BadRequest("redirectURIQueryParams.code must be a non-empty string")
	}
	if iss, err = stringParam(params, "iss"); err != nil {
		return "", "", err
	}
	return code, iss, nil
}

// stringParam returns the string value of one of redirectURIQueryParams,
// or "" if it is absent.
func stringParam(params map[string]json.RawMessage, name string) (string, error) {
	raw, ok := params[name]
	if !ok {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", wire.BadRequest("redirectURIQueryParams." + name + " must be a string")
	}
	return s, nil
}

// thirdParty returns the provider of the request's tenant that id names,
// if redirect is a redirect URI it may send the browser to (PROTOCOL.md
// section 7.3).
func (rc *Recipe) thirdParty(r *http.Request, id, redirect string) (provider.Provider, error) {
	if len(id) > wire.MaxParamLen || len(redirect) > wire.MaxParamLen {
		return nil, wire.BadRequest("a parameter is too long")
	}
	p := rc.k.Tenant(r.Context()).Provider(id)
	if p == nil {
		return nil, wire.BadRequest("the provider " + id + " could not be found in the configuration")
	}
	if !rc.redirectAllowed(p, redirect) {
		return nil, wire.BadRequest("the redirectURIOnProviderDashboard is not allowed: it must be the frontend's /auth/callback/" +
			id + " on Config.AppURL's origin or one of Config.AllowedOrigins, or be listed in Config.ThirdParty.RedirectURIs")

	}
	return p, nil
}

// scoped is the provider id, within its tenant, that a verifier is bound
// to: one issued for a tenant's sign-in opens no other tenant's.
func (rc *Recipe) scoped(r *http.Request, id string) string {
	if t := rc.k.Tenant(r.Context()).ID; t != store.PublicTenant {
		return t + "/" + id
	}
	return id
}

// redirectAllowed reports whether the provider p may send the browser back
// to redirect: a URI listed in the configuration, or for a provider that
// posts its callback (Apple) this handler's own relay, or else the SDK's
// callback page on an origin of the frontend.
func (rc *Recipe) redirectAllowed(p provider.Provider, redirect string) bool {
	if slices.Contains(rc.cfg.RedirectURIs, redirect) {
		return true
	}
	if fp, ok := p.(provider.FormPoster); ok && fp.FormPost() {
		u, err := url.Parse(redirect)
		return err == nil && rc.frontendURL(u) && redirect == rc.cfg.APIURL+rc.setup.BasePath+"/callback/"+p.ID()
	}
	return rc.frontendCallback(redirect, p.ID())
}

// frontendCallback reports whether redirect is the SDK's callback page of
// the provider id on an origin of the frontend, spelt as the SDK spells
// it: <origin>/auth/callback/<id>, the origin as AppURL or AllowedOrigins
// give it, with no query and no fragment, not even an empty one. The
// string is compared whole, not its parsed parts, because it travels on
// byte for byte, to the provider or in a Location header: a spelling that
// parses to the same page is still another string.
func (rc *Recipe) frontendCallback(redirect, id string) bool {
	u, err := url.Parse(redirect)
	if err != nil || !rc.frontendURL(u) {
		return false
	}
	origin := u.Scheme + "://" + u.Host
	return rc.frontendOrigin(origin) && redirect == origin+"/auth/callback/"+url.PathEscape(id)
}

// frontendURL reports whether u is an absolute http(s) URL without
// userinfo or fragment, and https unless its host is a loopback address
// or localhost, or Cookie.InsecureAllowHTTP is set.
func (rc *Recipe) frontendURL(u *url.URL) bool {
	if u.User != nil || u.Fragment != "" || u.Host == "" || u.Opaque != "" {
		return false
	}
	switch u.Scheme {
	case "https":
		return true
	case "http":
		if rc.setup.InsecureHTTP || u.Hostname() == "localhost" {
			return true
		}
		ip, err := netip.ParseAddr(u.Hostname())
		return err == nil && ip.IsLoopback()
	}
	return false
}

// frontendOrigin reports whether origin is AppURL's or one of
// AllowedOrigins.
func (rc *Recipe) frontendOrigin(origin string) bool {
	return rc.setup.FrontendOrigins[origin]
}

// providerFailed logs why a provider step failed. The error text of the
// provider package holds no code, token or response body.
func (rc *Recipe) providerFailed(ctx context.Context, id, step string, err error) {
	rc.k.Logger().LogAttrs(ctx, slog.LevelWarn, "auth: third-party sign-in failed",
		slog.String("third_party", id), slog.String("step", step), slog.String("error", err.Error()))
}

// newVerifier makes a PKCE verifier (RFC 7636: 43 to 128 unreserved
// characters) that this server will recognise at /signinup: 256 random
// bits, its expiry and the id of the signing key whose MAC binds them to
// the provider and the redirect URI. Every instance shares the signing
// keys, so any of them recognises it.
func newVerifier(kid string, key []byte, id, redirect string, expires time.Time) string {
	random, _ := onetime.New()
	body := random + "." + strconv.FormatInt(expires.Unix(), 36) + "." + kid
	return body + "." + base64.RawURLEncoding.EncodeToString(verifierMAC(key, body, id, redirect))
}

// ownVerifier reports whether v is a verifier newVerifier made for id and
// redirect that has not expired.
func (rc *Recipe) ownVerifier(ctx context.Context, v, id, redirect string) bool {
	body, mac64, ok := cutLast(v, ".")
	if !ok {
		return false
	}
	rest, kid, ok := cutLast(body, ".")
	if !ok {
		return false
	}
	random, exp36, ok := strings.Cut(rest, ".")
	if !ok || !onetime.WellFormed(random) {
		return false
	}
	exp, err := strconv.ParseInt(exp36, 36, 64)
	if err != nil || !rc.k.Now().Before(time.Unix(exp, 0)) {
		return false
	}
	mac, err := base64.RawURLEncoding.Strict().DecodeString(mac64)
	if err != nil {
		return false
	}
	key, ok := rc.k.MACKeyByID(ctx, kid, verifierPurpose)
	return ok && hmac.Equal(mac, verifierMAC(key, body, id, redirect))
}

func cutLast(s, sep string) (before, after string, found bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}

// verifierPurpose names the key of verifiers' MACs, derived from the
// signing key's material (kit.Kernel's MACKey), so that it is never the
// key of an access token.
const verifierPurpose = "latchkit/auth pkce verifier"

// verifierMAC is the MAC of a verifier's body, provider and redirect URI
// under key.
func verifierMAC(key []byte, body, id, redirect string) []byte {
	m := hmac.New(sha256.New, key)
	for _, part := range []string{body, id, redirect} {
		m.Write(binary.AppendUvarint(nil, uint64(len(part))))
		m.Write([]byte(part))
	}
	return m.Sum(nil)[:16]
}

// challengeOf is the S256 PKCE challenge of a verifier.
func challengeOf(verifier string) string {
	h := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(h[:])
}

// nonceOf is the OpenID nonce of a sign-in, derived from its verifier: an
// ID token is accepted only by the sign-in whose frontend holds it.
func nonceOf(verifier string) string {
	h := sha256.Sum256([]byte("latchkit/auth nonce\x00" + verifier))
	return base64.RawURLEncoding.EncodeToString(h[:])
}

// handleFormPostCallback relays a provider's form_post callback (Apple's) to
// the frontend page the SDK named in state, as a redirect with the same
// parameters in the query (PROTOCOL.md section 7.4). It writes nothing
// and starts no session: /signinup does that.
//
// The page must be the SDK's callback page of the provider that posted
// (frontendCallback): state is whatever the authorisation URL carried, and
// whoever built that URL chose it, so any other page of the frontend,
// one that forwards its query or shows its URL to a script, would hand
// them the code.
func (rc *Recipe) handleFormPostCallback(w http.ResponseWriter, r *http.Request) {
	if !rc.k.ReadForm(w, r, "the callback must be a form") {
		return
	}
	state := r.PostForm.Get("state")
	raw, err := base64.StdEncoding.DecodeString(state)
	if err != nil {
		raw, err = base64.RawURLEncoding.DecodeString(state)
	}
	var s struct {
		FrontendRedirectURI string `json:"frontendRedirectURI"`
	}
	if err != nil || json.Unmarshal(raw, &s) != nil || s.FrontendRedirectURI == "" {
		wire.Message(w, http.StatusBadRequest, "the state of the callback is not one the frontend made")
		return
	}
	if !rc.frontendCallback(s.FrontendRedirectURI, formPostID(r.URL.Path, rc.setup.BasePath)) &&
		!slices.Contains(rc.cfg.RedirectURIs, s.FrontendRedirectURI) {
		wire.Message(w, http.StatusBadRequest, "the state's frontendRedirectURI is not the frontend's /auth/callback page of this provider, nor listed in Config.ThirdParty.RedirectURIs")
		return
	}
	q := url.Values{}
	for _, name := range []string{"code", "state", "user", "error", "error_description"} {
		if v, ok := r.PostForm[name]; ok && len(v) > 0 {
			q.Set(name, v[0])
		}
	}
	dest := s.FrontendRedirectURI
	if len(q) > 0 {
		dest += "?" + q.Encode()
	}
	w.Header().Set("Location", dest)
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusSeeOther)
}

// formPostID is the provider id in the path of a form_post callback,
// <basePath>[/public]/callback/<id>, which the route table has matched.
func formPostID(path, basePath string) string {
	rest := strings.TrimPrefix(strings.TrimPrefix(path, basePath), "/public")
	return strings.TrimPrefix(rest, "/callback/")
}

// exactRedirectURI reports whether uri is spelt as a provider compares it:
// a lower-case http(s) scheme, a host, no userinfo and no fragment, not
// even an empty "#", which a provider would pass on byte for byte.
func exactRedirectURI(uri string) bool {
	u, err := url.Parse(uri)
	return err == nil && (strings.HasPrefix(uri, "https://") || strings.HasPrefix(uri, "http://")) &&
		u.Host != "" && u.User == nil && !strings.Contains(uri, "#")
}

// checkProviderIDs checks that every provider has an ID of its own: the
// ID is how the frontend names the provider.
func checkProviderIDs(ps []provider.Provider) error {
	seen := map[string]bool{}
	for _, p := range ps {
		if p == nil || p.ID() == "" {
			return errors.New("auth: Config.ThirdParty.Providers: a provider is nil or has no ID")
		}
		if seen[p.ID()] {
			return fmt.Errorf("auth: Config.ThirdParty.Providers: two providers have the ID %q", p.ID())
		}
		seen[p.ID()] = true
	}
	return nil
}
