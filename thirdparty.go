package auth

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

	"github.com/google/uuid"
	"github.com/latchkit/auth/internal/address"
	"github.com/latchkit/auth/internal/kit"
	"github.com/latchkit/auth/internal/onetime"
	"github.com/latchkit/auth/internal/wire"
	"github.com/latchkit/auth/provider"
	"github.com/latchkit/auth/store"
)

// Third-party sign-in: the rid "thirdparty" of the SuperTokens frontend
// driver interface (PROTOCOL.md section 7). A provider.Provider does the
// talking to the provider; this file speaks to the frontend.
//
// The server keeps no state between the two steps of a sign-in. The PKCE
// verifier it hands the frontend names its provider, redirect URI and
// expiry under a MAC, so /signinup recognises its own verifiers and
// nothing else; the OpenID nonce is derived from it.

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

// handleAuthorisationURL answers the provider's authorisation URL and the
// PKCE verifier the frontend keeps until /signinup.
func (a *Auth) handleAuthorisationURL(w http.ResponseWriter, r *http.Request) {
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
	p, err := a.thirdParty(id, redirect)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	key, err := a.keys.signer(r.Context())
	if err != nil {
		a.fail(w, r, err)
		return
	}
	verifier := newVerifier(key, id, redirect, a.cfg.Now().Add(verifierLifetime))
	ctx, cancel := context.WithTimeout(r.Context(), a.cfg.ThirdParty.Timeout)
	defer cancel()
	u, err := p.AuthURL(ctx, provider.AuthRequest{RedirectURI: redirect, CodeChallenge: challengeOf(verifier), Nonce: nonceOf(verifier)})
	if err != nil {
		a.providerFailed(r.Context(), id, "authorisation URL", err)
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
}

// handleSignInUp redeems the code the provider sent the browser back with,
// and signs the user in, or up.
func (a *Auth) handleSignInUp(w http.ResponseWriter, r *http.Request) {
	if !a.firstFactorAllowed(w, FactorThirdParty) {
		return
	}
	var req signInUpRequest
	if err := a.readJSON(w, r, &req); err != nil {
		a.fail(w, r, err)
		return
	}
	in, err := req.parse()
	if err != nil {
		a.fail(w, r, err)
		return
	}
	id, redirect := in.id, in.redirect
	p, err := a.thirdParty(id, redirect)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	ctx := r.Context()
	if !a.ownVerifier(ctx, in.verifier, id, redirect) {
		a.fail(w, r, wire.BadRequest("the pkceCodeVerifier was not issued for this sign-in, or has expired"))
		return
	}
	perClient := limit{kit.LimitKey("thirdparty-client", a.limitClient(r)), a.cfg.RateLimits.ClientThirdPartySignIns}
	if wait := a.take(ctx, perClient); wait > 0 {
		wire.TooMany(w, wait)
		return
	}
	ident, ok := a.redeem(w, r, p, in)
	if !ok {
		return
	}
	a.signInUpAs(w, r, id, ident)
}

// redeem exchanges the code of a /signinup at the provider and returns who
// signed in, or answers the request itself and reports false.
func (a *Auth) redeem(w http.ResponseWriter, r *http.Request, p provider.Provider, in signInUp) (provider.Identity, bool) {
	ctx, id := r.Context(), in.id
	// A code is remembered before the provider sees it, so a replay never
	// reaches the provider, even while the first use is in flight. A
	// limiter that cannot say refuses: this check must not fail open.
	codeKey := kit.LimitKey("oauth-code", id, in.code)
	if wait, err := a.cfg.Limiter.Take(ctx, codeKey, Rate{Burst: 1, Every: codeMemory}, a.cfg.Now()); err != nil || wait > 0 {
		if err != nil {
			a.limiterFailed(ctx, err)
		}
		a.providerFailed(ctx, id, "exchange", errors.New("authorisation code presented before"))
		wire.GeneralError(w, msgProviderFailed)
		return provider.Identity{}, false
	}
	pctx, cancel := context.WithTimeout(ctx, a.cfg.ThirdParty.Timeout)
	ident, err := p.Exchange(pctx, provider.ExchangeRequest{
		Code: in.code, RedirectURI: in.redirect, CodeVerifier: in.verifier, Nonce: nonceOf(in.verifier), Issuer: in.iss,
	})
	cancel()
	switch {
	case errors.Is(err, provider.ErrNotAllowed):
		a.providerFailed(ctx, id, "exchange", err)
		wire.JSON(w, http.StatusOK, struct {
			Status string `json:"status"`
			Reason string `json:"reason"`
		}{"SIGN_IN_UP_NOT_ALLOWED", reasonSignUpNotAllowed})

		return ident, false
	case err != nil:
		a.providerFailed(ctx, id, "exchange", err)
		wire.GeneralError(w, msgProviderFailed)
		return ident, false
	}
	return ident, true
}

// signInUpAs signs in, or up, the identity a provider vouched for.
func (a *Auth) signInUpAs(w http.ResponseWriter, r *http.Request, id string, ident provider.Identity) {
	ctx := r.Context()
	email := address.FromProvider(ident.Email)
	if email == "" || wire.CheckEmail(email) != "" {
		wire.JSON(w, http.StatusOK, struct {
			Status string `json:"status"`
		}{"NO_EMAIL_GIVEN_BY_PROVIDER"})

		return
	}
	now := a.cfg.Now().Truncate(time.Millisecond)
	newUser := store.User{ID: uuid.NewString(), TimeJoined: now}
	nl := store.Login{
		LoginKey:      store.LoginKey{Method: store.MethodThirdParty, ThirdParty: id, Subject: ident.Subject},
		Email:         email,
		EmailVerified: ident.EmailVerified,
		EmailProven:   ident.EmailVerified, // the provider vouches for whoever signed in
		CreatedAt:     now,
	}
	var (
		res linked
		err error
	)
	if a.cfg.AccountLinking {
		res, err = a.signInUpLinking(ctx, r, nl, newUser)
		if err == nil && res.refusal != "" {
			wire.NotAllowed(w, "SIGN_IN_UP_NOT_ALLOWED", res.refusal)
			return
		}
	} else {
		res, err = a.signInUpAlone(ctx, nl, newUser)
	}
	l, u, logins, created := res.login, res.user, res.logins, res.created
	if err != nil {
		a.fail(w, r, fmt.Errorf("auth: signing in with %s: %w", id, err))
		return
	}
	if created && u.ID == newUser.ID {
		a.emit(ctx, r, Event{Kind: EventSignUp, UserID: u.ID, Method: l.Method, ThirdPartyID: id})
	}
	a.signedIn(w, r, u, logins, l, &created, FactorThirdParty)
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

// thirdParty returns the provider id names, if redirect is a redirect URI
// it may send the browser to (PROTOCOL.md section 7.3).
func (a *Auth) thirdParty(id, redirect string) (provider.Provider, error) {
	if len(id) > wire.MaxParamLen || len(redirect) > wire.MaxParamLen {
		return nil, wire.BadRequest("a parameter is too long")
	}
	p, ok := a.providers[id]
	if !ok {
		return nil, wire.BadRequest("the provider " + id + " could not be found in the configuration")
	}
	if !a.redirectAllowed(p, redirect) {
		return nil, wire.BadRequest("the redirectURIOnProviderDashboard is not allowed: it must be the frontend's /auth/callback/" +
			id + " on Config.AppURL's origin or one of Config.AllowedOrigins, or be listed in Config.ThirdParty.RedirectURIs")

	}
	return p, nil
}

// redirectAllowed reports whether the provider p may send the browser back
// to redirect: a URI listed in the configuration, or for a provider that
// posts its callback (Apple) this handler's own relay, or else the SDK's
// callback page on an origin of the frontend.
func (a *Auth) redirectAllowed(p provider.Provider, redirect string) bool {
	if slices.Contains(a.cfg.ThirdParty.RedirectURIs, redirect) {
		return true
	}
	if fp, ok := p.(provider.FormPoster); ok && fp.FormPost() {
		u, err := url.Parse(redirect)
		return err == nil && a.frontendURL(u) && redirect == a.cfg.ThirdParty.APIURL+a.cfg.BasePath+"/callback/"+p.ID()
	}
	return a.frontendCallback(redirect, p.ID())
}

// frontendCallback reports whether redirect is the SDK's callback page of
// the provider id on an origin of the frontend, spelt as the SDK spells
// it: <origin>/auth/callback/<id>, the origin as AppURL or AllowedOrigins
// give it, with no query and no fragment, not even an empty one. The
// string is compared whole, not its parsed parts, because it travels on
// byte for byte, to the provider or in a Location header: a spelling that
// parses to the same page is still another string.
func (a *Auth) frontendCallback(redirect, id string) bool {
	u, err := url.Parse(redirect)
	if err != nil || !a.frontendURL(u) {
		return false
	}
	origin := u.Scheme + "://" + u.Host
	return a.frontendOrigin(origin) && redirect == origin+"/auth/callback/"+url.PathEscape(id)
}

// frontendURL reports whether u is an absolute http(s) URL without
// userinfo or fragment, and https unless its host is a loopback address
// or localhost, or Cookie.InsecureAllowHTTP is set.
func (a *Auth) frontendURL(u *url.URL) bool {
	if u.User != nil || u.Fragment != "" || u.Host == "" || u.Opaque != "" {
		return false
	}
	switch u.Scheme {
	case "https":
		return true
	case "http":
		if a.cfg.Cookie.InsecureAllowHTTP || u.Hostname() == "localhost" {
			return true
		}
		ip, err := netip.ParseAddr(u.Hostname())
		return err == nil && ip.IsLoopback()
	}
	return false
}

// frontendOrigin reports whether origin is AppURL's or one of
// AllowedOrigins.
func (a *Auth) frontendOrigin(origin string) bool {
	return a.frontendOrigins[origin]
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

// providerFailed logs why a provider step failed. The error text of the
// provider package holds no code, token or response body.
func (a *Auth) providerFailed(ctx context.Context, id, step string, err error) {
	a.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "auth: third-party sign-in failed",
		slog.String("third_party", id), slog.String("step", step), slog.String("error", err.Error()))
}

// newVerifier makes a PKCE verifier (RFC 7636: 43 to 128 unreserved
// characters) that this server will recognise at /signinup: 256 random
// bits, its expiry and the id of the signing key whose MAC binds them to
// the provider and the redirect URI. Every instance shares the signing
// keys, so any of them recognises it.
func newVerifier(key *signingKey, id, redirect string, expires time.Time) string {
	random, _ := onetime.New()
	body := random + "." + strconv.FormatInt(expires.Unix(), 36) + "." + key.id
	return body + "." + base64.RawURLEncoding.EncodeToString(verifierMAC(key, body, id, redirect))
}

// ownVerifier reports whether v is a verifier newVerifier made for id and
// redirect that has not expired.
func (a *Auth) ownVerifier(ctx context.Context, v, id, redirect string) bool {
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
	if err != nil || !a.cfg.Now().Before(time.Unix(exp, 0)) {
		return false
	}
	mac, err := base64.RawURLEncoding.Strict().DecodeString(mac64)
	if err != nil {
		return false
	}
	key, ok := a.keys.verifier(ctx, kid)
	return ok && hmac.Equal(mac, verifierMAC(key, body, id, redirect))
}

func cutLast(s, sep string) (before, after string, found bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}

// verifierMAC is the MAC of a verifier's body, provider and redirect URI,
// under a key derived from the signing key's material, so that it is
// never the key of an access token.
func verifierMAC(key *signingKey, body, id, redirect string) []byte {
	m := hmac.New(sha256.New, key.derived("latchkit/auth pkce verifier"))
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
func (a *Auth) handleFormPostCallback(w http.ResponseWriter, r *http.Request) {
	if err := a.capBody(w, r); err != nil {
		a.fail(w, r, err)
		return
	}
	if err := r.ParseForm(); err != nil {
		if bodyTooLarge(err) {
			a.fail(w, r, errBodyTooLarge)
			return
		}
		wire.Message(w, http.StatusBadRequest, "the callback must be a form")
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
	if !a.frontendCallback(s.FrontendRedirectURI, formPostID(r.URL.Path, a.cfg.BasePath)) &&
		!slices.Contains(a.cfg.ThirdParty.RedirectURIs, s.FrontendRedirectURI) {
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
