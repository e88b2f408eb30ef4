package auth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/latchkit/auth/internal/kit"
	"github.com/latchkit/auth/internal/refreshtoken"
	"github.com/latchkit/auth/internal/wire"
	"github.com/latchkit/auth/store"
)

// Session is a verified session, as RequireSession finds it in a request.
// Its fields are the claims of the access token.
type Session struct {
	UserID    string    // "sub"
	LoginID   string    // "rsub": the login method the user signed in with (LoginMethod.ID)
	Handle    string    // "sessionHandle": names the session for revocation
	TenantID  string    // "tId": the tenant signed in to (PublicTenant for the public one)
	TokenID   string    // "jti": unique per access token
	IssuedAt  time.Time // "iat"
	ExpiresAt time.Time // "exp": when the access token stops working
	// Operator is the id of the operator who started the session as the
	// user ("st-imp", see Impersonate), "" for the user's own session.
	Operator string
}

type sessionKey struct{}

// SessionFromContext returns the session that RequireSession or
// OptionalSession verified for a request, and whether there is one.
func SessionFromContext(ctx context.Context) (Session, bool) {
	s, ok := ctx.Value(sessionKey{}).(*Session)
	if !ok {
		return Session{}, false
	}
	return *s, true
}

// ContextWithSession returns a copy of ctx that carries s, as
// RequireSession would pass it to the next handler. It lets a test call a
// protected handler directly, with no server and no token (see
// authtest.NewRequest).
func ContextWithSession(ctx context.Context, s Session) context.Context {
	return context.WithValue(ctx, sessionKey{}, &s)
}

// VerifyRequest finds and verifies the session of a request, as
// RequireSession does. It returns an error matching ErrUnauthorized when
// the request carries no session (or, with Config.CheckSessionInStore, a
// revoked one) and ErrTryRefreshToken when its access token is expired or
// invalid. It does not hold the session to email verification's required
// mode: only the middleware can answer the 403 the SDKs expect.
func (a *Auth) VerifyRequest(r *http.Request) (Session, error) {
	vt, _, err := a.verifyRequest(r)
	if err != nil {
		return Session{}, err
	}
	return *vt.session, nil
}

func (a *Auth) verifyRequest(r *http.Request) (*verifiedToken, mode, error) {
	tok, m, found, bad := tokenFrom(r, cookieAccess)
	switch {
	case !found:
		return nil, m, errNoToken
	case bad:
		return nil, m, errMalformed
	case a.csrfFailed(r, m):
		return nil, m, errMissingRID
	}
	vt, err := a.verifyToken(r.Context(), tok)
	return vt, m, err
}

// VerifyToken checks an access token that comes without an HTTP request
// (in gRPC metadata, a WebSocket's first message, a job's payload) as
// RequireSession checks the session of a request: its signature and
// expiry, the session in the store with Config.CheckSessionInStore, and
// the claims that the configuration and rules ask for. It returns a
// *SessionError, matching ErrUnauthorized or ErrTryRefreshToken as
// VerifyRequest's do, for a token that is missing, malformed, expired,
// forged or revoked; a *ClaimError for a session that a claim refuses;
// or the store's error. With no response to carry a new token, a claim
// read again from the store counts for this check only: the client's
// token catches up at its next refresh or HTTP request.
func (a *Auth) VerifyToken(ctx context.Context, token string, rules ...Rule) (Session, error) {
	switch {
	case token == "":
		return Session{}, errNoToken
	case len(token) > maxTokenLen:
		return Session{}, errMalformed
	}
	vt, err := a.verifyToken(ctx, token)
	if err != nil {
		return Session{}, err
	}
	for _, c := range a.checksOf(rules) {
		if _, err := c.check(ctx, vt); err != nil {
			if ces := claimErrorsOf(err); len(ces) > 0 {
				err = ces[0]
			}
			return Session{}, err
		}
	}
	return *vt.session, nil
}

// verifyToken verifies an access token and that its session has not
// ended where this instance or the store knows it.
func (a *Auth) verifyToken(ctx context.Context, tok string) (*verifiedToken, error) {
	now := a.cfg.Now() // one reading of the clock for the whole check
	vt, err := a.verifyAccess(ctx, tok, now)
	if err != nil {
		return nil, err
	}
	if a.deleted.Has(vt.session.UserID, now) || a.evicted.Has(vt.handle, now) {
		return nil, errRevoked
	}
	// A cached token is checked here like a fresh one: a revoked session
	// is refused even if its token is in the cache.
	if a.cfg.CheckSessionInStore {
		if err := a.checkSession(ctx, vt.handle); err != nil {
			return nil, err
		}
	}
	return vt, nil
}

// checkSession confirms in the store that a session still exists, or
// trusts a confirmation younger than Config.SessionCheckCache.
func (a *Auth) checkSession(ctx context.Context, handle string) error {
	now := a.cfg.Now()
	live, mark := a.liveSessions.Has(handle, now)
	if live {
		return nil
	}
	sess, err := a.store.Session(ctx, handle, now)
	var ended *store.EndedError
	if errors.As(err, &ended) {
		return endedError(ended.Reason)
	} else if errors.Is(err, store.ErrNotFound) {
		return errRevoked
	} else if err != nil {
		return err
	}
	if ttl := a.cfg.SessionCheckCache; ttl > 0 {
		until := now.Add(ttl)
		if sess.ExpiresAt.Before(until) {
			until = sess.ExpiresAt
		}
		a.liveSessions.Add(handle, until, mark)
	}
	return nil
}

// RequireSession lets through requests with a valid session, which handlers
// read with SessionFromContext, and answers the others 401 as the protocol
// says: "unauthorised" without a session, "try refresh token" when the
// access token is expired or invalid (the SDKs then refresh and retry).
//
// Every method needs a session, OPTIONS included. A CORS preflight (an
// OPTIONS request with Access-Control-Request-Method) carries no
// credentials, so the middleware answers it 204 itself and the handler
// never runs; wrap the API with CORS for preflights from
// Config.AllowedOrigins to get their CORS headers.
//
// A state-changing request (any method but GET, HEAD, OPTIONS and TRACE)
// whose session comes in a cookie is refused 403 when a browser sends it
// from another origin that is not in Config.AllowedOrigins, the same
// site's subdomains included, which SameSite=Lax cookies would reach:
// the check the auth endpoints make against login CSRF, here against CSRF
// on the application's own routes. Header and body mode carry no ambient
// credential and are not checked. Cookie.InsecureSkipOriginCheck turns
// this off.
//
// With Config.EmailVerification in required mode, a session whose email
// is not verified is refused 403 with the SDKs' "invalid claim" body.
// Rules change what a route asks of a session: AllowUnverifiedEmail for
// the routes such a user must still reach, VerifiedEmail for those that
// need a verified email in any mode.
//
// With Config.MFA, a session that has not completed the second factor its
// user must complete is refused 403 with the SDKs' st-mfa "invalid claim"
// body, and FactorWithin asks for a factor completed recently;
// AllowPendingMFA exempts a route.
func (a *Auth) RequireSession(next http.Handler, rules ...Rule) http.Handler {
	return a.sessionMiddleware(next, true, a.checksOf(rules))
}

// OptionalSession is RequireSession for pages that also serve signed-out
// users: a request without a session passes with none in its context. An
// expired or invalid access token is still answered 401 "try refresh token",
// so a signed-in user is never served as signed out by mistake, and a
// session is held to the email verification rule, and to rules, as
// RequireSession holds it.
func (a *Auth) OptionalSession(next http.Handler, rules ...Rule) http.Handler {
	return a.sessionMiddleware(next, false, a.checksOf(rules))
}

// sessionMiddleware serves next to requests with a session that passes
// checks, and to those without a session unless one is required.
func (a *Auth) sessionMiddleware(next http.Handler, required bool, checks []routeCheck) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		vt, m, err := a.verifyNoPanic(w, r)
		if err == nil && m == modeCookie && !a.cfg.Cookie.InsecureSkipOriginCheck && a.xorigin.Check(r) != nil {
			wire.Message(w, http.StatusForbidden, "cross-origin request refused: add the page's origin to Config.AllowedOrigins")
			return
		}
		if err == nil {
			err = a.checkNoPanic(w, r, vt, m, checks)
		}
		switch {
		case err == nil:
			ctx := context.WithValue(r.Context(), sessionKey{}, vt.session)
			if t := vt.session.TenantID; t != PublicTenant {
				// The Go API's per-tenant calls (package roles') act in
				// the session's tenant.
				ctx = kit.WithTenantID(ctx, t)
			}
			next.ServeHTTP(w, r.WithContext(ctx))
		case !required && err == errNoToken:
			next.ServeHTTP(w, r)
		case err == errAnswered:
		default:
			a.failSession(w, r, err)
		}
	})
}

// verifyNoPanic is verifyRequest for the middleware, where a panicking
// Store must not take down the application's own handler chain.
func (a *Auth) verifyNoPanic(w http.ResponseWriter, r *http.Request) (vt *verifiedToken, m mode, err error) {
	defer a.recoverAnswered(w, r, &err)
	return a.verifyRequest(r)
}

// checkNoPanic runs the route's checks on the session of vt for the
// middleware, for the same reason: a check may read the store. Every
// check runs, so that the answer lists each claim that refuses, as the
// SDKs' backends do; any other error ends the checks.
func (a *Auth) checkNoPanic(w http.ResponseWriter, r *http.Request, vt *verifiedToken, m mode, checks []routeCheck) (err error) {
	defer a.recoverAnswered(w, r, &err)
	var refused []error
	for _, c := range checks {
		err := a.runCheck(r.Context(), w, vt, m, c)
		var ce *ClaimError
		switch {
		case err == nil:
		case errors.As(err, &ce):
			refused = append(refused, err)
		default:
			return err
		}
	}
	return errors.Join(refused...)
}

// recoverAnswered answers a panic of the middleware's work, and sets
// *err to errAnswered.
func (a *Auth) recoverAnswered(w http.ResponseWriter, r *http.Request, err *error) {
	if v := recover(); v != nil {
		a.answerPanic(w, r, v)
		*err = errAnswered
	}
}

// createSession starts a session for a user who just signed up or in with
// the login by, and writes its tokens in the mode the request asks for.
// by.SessionEpoch is the user's session epoch as read with the credential
// that was checked: the store refuses the session if a reset or a
// revocation of every session has passed it since.
// factors is the session's st-mfa claim, nil while MFA is off.
func (a *Auth) createSession(ctx context.Context, w http.ResponseWriter, r *http.Request, userID string, by store.Login, factors []byte) (store.Session, bodyTokens, error) {
	return a.createSessionIn(ctx, w, r, by.Tenant, userID, by, factors)
}

// createSessionIn is createSession in tenant (as the store keeps it),
// which a user who switched tenants may have no login in.
func (a *Auth) createSessionIn(ctx context.Context, w http.ResponseWriter, r *http.Request, tenant, userID string, by store.Login, factors []byte) (store.Session, bodyTokens, error) {
	s := store.Session{UserID: userID, LoginID: by.ID, Tenant: tenant, CreatedAt: a.cfg.Now(), Factors: factors}
	t, err := a.startSession(ctx, &s, by)
	if err != nil {
		return store.Session{}, bodyTokens{}, err
	}
	m := newSessionMode(r)
	// Tokens of an earlier session in the other transport would shadow the
	// new ones: clear them.
	if _, err := r.Cookie(cookieAccess); m != modeCookie && err == nil {
		a.clearTokens(w, true, false)
	} else if m == modeCookie && r.Header.Get("Authorization") != "" {
		a.clearTokens(w, false, true)
	}
	return s, a.writeTokens(w, m, t), nil
}

// startSession stores s, a session of the login by with a new handle,
// from now, under by.SessionEpoch (see createSession), and issues its
// first tokens. s.UserID, LoginID, CreatedAt and Factors are the
// caller's.
func (a *Auth) startSession(ctx context.Context, s *store.Session, by store.Login) (issued, error) {
	key, err := a.keys.signer(ctx)
	if err != nil {
		return issued{}, err
	}
	rkey, err := a.refreshKeys.signer(ctx)
	if err != nil {
		return issued{}, err
	}
	now := a.cfg.Now()
	s.Handle, s.RefreshedAt, s.ExpiresAt = uuid.NewString(), now, now.Add(a.cfg.RefreshTokenLifetime)
	refresh, hash, err := refreshtoken.Mint(rkey, s.Handle, 0, s.ExpiresAt, refreshtoken.FirstSecret())
	if err != nil {
		return issued{}, err
	}
	claims := a.claimsAtSignIn(ctx, *s, by, now)
	exp, _, _ := a.accessEnd(ctx, *s, now)
	t, err := a.issueAccess(key, *s, now, exp, &claims)
	if err != nil {
		return issued{}, err
	}
	t.refresh = refresh
	if err := a.store.CreateSession(ctx, *s, hash, by.SessionEpoch); err != nil {
		return issued{}, fmt.Errorf("auth: creating a session: %w", err)
	}
	return t, nil
}

// handleSignOut revokes the session of the request and clears its tokens.
func (a *Auth) handleSignOut(w http.ResponseWriter, r *http.Request) {
	vt, m, err := a.verifyRequest(r)
	if err != nil {
		a.failSession(w, r, err)
		return
	}
	s := vt.session
	if err := a.store.RevokeSession(r.Context(), s.Handle, store.EndSignedOut); err != nil && !errors.Is(err, store.ErrNotFound) {
		a.fail(w, r, err)
		return
	}
	a.clearTokens(w, m == modeCookie, m != modeCookie)
	a.emit(r.Context(), r, Event{Kind: EventSignOut, UserID: s.UserID, SessionHandle: s.Handle, Operator: s.Operator})
	wire.JSON(w, http.StatusOK, wire.OK)
}

// loginOf finds the login id of user userID; an empty id names the
// user's first login, whose id is the user's.
func (a *Auth) loginOf(ctx context.Context, userID, loginID string) (store.Login, error) {
	if loginID == "" {
		loginID = userID
	}
	logins, err := a.store.Logins(ctx, userID)
	if err != nil {
		return store.Login{}, err
	}
	for _, l := range logins {
		if l.ID == loginID {
			return l, nil
		}
	}
	return store.Login{}, store.ErrNotFound
}

// rewriteAccess replaces the access token of a request's session with one
// whose claim i is v, the others as the old token's, and that keeps its expiry, written in the
// request's transfer mode with a new front-token. The refresh token is
// untouched. Body mode has no body of ours to carry it on every route, so
// it gets the st-access-token header, as header mode does.
func (a *Auth) rewriteAccess(ctx context.Context, w http.ResponseWriter, vt *verifiedToken, m mode, i int, v []byte) error {
	key, err := a.keys.signer(ctx)
	if err != nil {
		return err
	}
	s := vt.session
	now := a.cfg.Now()
	claims := vt.claims
	claims[i] = v
	t, err := a.issueAccess(key, store.Session{Handle: s.Handle, UserID: s.UserID, LoginID: s.LoginID, Tenant: tenantInStore(s.TenantID)}, now, s.ExpiresAt, &claims)
	if err != nil {
		return err
	}
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set(headerFrontToken, t.frontToken)
	exposed := []string{"front-token"}
	if m == modeCookie {
		// The cookie outlives the token, as the one sign-in sets does;
		// the token's exp is what ends it.
		a.setCookie(w, cookieAccess, t.access, "/", now.Add(a.cfg.RefreshTokenLifetime))
	} else {
		h.Set(headerAccess, t.access)
		exposed = append(exposed, "st-access-token")
	}
	expose(h, exposed...)
	return nil
}
