package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"
	"github.com/latchkit/auth/store"
)

// Session is a verified session, as RequireSession finds it in a request.
// Its fields are the claims of the access token.
type Session struct {
	UserID    string    // "sub"
	Handle    string    // "sessionHandle": names the session for revocation
	TenantID  string    // "tId": always "public"
	TokenID   string    // "jti": unique per access token
	IssuedAt  time.Time // "iat"
	ExpiresAt time.Time // "exp": when the access token stops working
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

// accessTokenType is the value of the tokenType claim of access tokens, so
// that no other token signed with the same key can pass as one.
const accessTokenType = "access"

// accessClaims is the payload of an access token. The SuperTokens names
// (sessionHandle, tId, rsub) keep the front-token familiar to its SDKs.
type accessClaims struct {
	Subject       string           `json:"sub"`
	RecipeUserID  string           `json:"rsub"`
	SessionHandle string           `json:"sessionHandle"`
	TenantID      string           `json:"tId"`
	TokenType     string           `json:"tokenType"`
	Issuer        string           `json:"iss"`
	IssuedAt      *jwt.NumericDate `json:"iat"`
	ExpiresAt     *jwt.NumericDate `json:"exp"`
	NotBefore     *jwt.NumericDate `json:"nbf,omitempty"` // never issued, but honoured (RFC 7519)
	ID            string           `json:"jti"`
}

func (c *accessClaims) GetExpirationTime() (*jwt.NumericDate, error) { return c.ExpiresAt, nil }
func (c *accessClaims) GetIssuedAt() (*jwt.NumericDate, error)       { return c.IssuedAt, nil }
func (c *accessClaims) GetNotBefore() (*jwt.NumericDate, error)      { return c.NotBefore, nil }
func (c *accessClaims) GetIssuer() (string, error)                   { return c.Issuer, nil }
func (c *accessClaims) GetSubject() (string, error)                  { return c.Subject, nil }
func (c *accessClaims) GetAudience() (jwt.ClaimStrings, error)       { return nil, nil }

var errNotAccessToken = errors.New("not an access token")

// Validate runs after the standard checks of the parser.
func (c *accessClaims) Validate() error {
	if c.TokenType != accessTokenType || c.Subject == "" || c.SessionHandle == "" || c.IssuedAt == nil {
		return errNotAccessToken
	}
	return nil
}

// newSecret returns a random token (256 bits, URL-safe base64, safe in
// cookies, headers and URLs) and its hash: a refresh or reset token.
func newSecret() (string, store.TokenHash) {
	b := make([]byte, 32)
	rand.Read(b)
	tok := base64.RawURLEncoding.EncodeToString(b)
	return tok, sha256.Sum256([]byte(tok))
}

// secretLen is the length of every token newSecret makes; anything else
// is not ours and is refused without a store lookup.
const secretLen = 43

func wellFormedSecret(tok string) bool {
	if len(tok) != secretLen {
		return false
	}
	for i := 0; i < len(tok); i++ {
		c := tok[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// issueAccess signs an access token for s with key and returns the pair's
// access half and front-token; the caller fills in the refresh half.
func (a *Auth) issueAccess(key *signingKey, s store.Session, now time.Time) (issued, error) {
	jti := make([]byte, 16)
	rand.Read(jti)
	exp := now.Add(a.cfg.AccessTokenLifetime)
	c := &accessClaims{
		Subject:       s.UserID,
		RecipeUserID:  s.UserID,
		SessionHandle: s.Handle,
		TenantID:      "public",
		TokenType:     accessTokenType,
		Issuer:        a.cfg.Issuer,
		IssuedAt:      jwt.NewNumericDate(now),
		ExpiresAt:     jwt.NewNumericDate(exp),
		ID:            base64.RawURLEncoding.EncodeToString(jti),
	}
	t := jwt.NewWithClaims(key.method, c)
	t.Header["kid"] = key.id
	access, err := t.SignedString(key.sign)
	if err != nil {
		return issued{}, fmt.Errorf("auth: signing an access token: %w", err)
	}
	payload, err := json.Marshal(c)
	if err != nil {
		return issued{}, err
	}
	return issued{
		access:        access,
		accessExpiry:  c.ExpiresAt.Time,
		refreshExpiry: s.ExpiresAt,
		frontToken:    frontToken(s.UserID, c.ExpiresAt.Time, payload),
	}, nil
}

// verifyState is the per-call state of a full verification, pooled so
// that the claims are not allocated per request and the keyfunc is bound
// once (to the state) rather than built as a closure per call. The context
// is held only for the duration of one parse: the keyring may read the
// store for an unknown key id.
type verifyState struct {
	a       *Auth
	ctx     context.Context
	key     *signingKey // the key lookupKey returned, so the one that verified
	claims  accessClaims
	keyFunc jwt.Keyfunc // st.lookupKey, bound once
}

var verifyStates = sync.Pool{New: func() any {
	st := new(verifyState)
	st.keyFunc = st.lookupKey
	return st
}}

// lookupKey is the jwt.Keyfunc: the key named by kid, of the token's
// algorithm, within its verification period.
func (st *verifyState) lookupKey(t *jwt.Token) (any, error) {
	kid, _ := t.Header["kid"].(string)
	key, ok := st.a.keys.verifier(st.ctx, kid)
	if !ok || key.method.Alg() != t.Method.Alg() || !st.a.cfg.Now().Before(key.verifyUntil) {
		return nil, errors.New("unknown signing key")
	}
	st.key = key
	return key.verify, nil
}

// verifiedToken is an access token that passed full verification: what
// the token cache keeps, and what verifyAccess returns. It is immutable
// once made. The fields that decide whether it is still good are kept
// apart from the Session handed to handlers, so a handler that writes to
// its Session (it must not) cannot change how the token is checked.
type verifiedToken struct {
	token     string      // the whole access token
	session   *Session    // shared by every request with this token; handlers get copies
	handle    string      // the session, for Config.CheckSessionInStore
	key       *signingKey // the key that verified the signature
	issuedAt  time.Time
	expiresAt time.Time
	notBefore time.Time // zero when the token has no nbf
}

// stillValid reports whether the token passes, at now, every check of a
// full verification that depends on anything but the token's bytes and
// the Auth's fixed configuration:
//
//   - the time checks of golang-jwt's validator, with the same leeway and
//     the same clock (Config.Now): exp, iat not in the future, nbf;
//   - the key: still in the keyring's current snapshot (the very same
//     *signingKey, so any reload of the keys sends the token through a
//     full verification again) and within its verifyUntil.
//
// Everything else a full verification checks is a property of the token
// string and of the parser, which New builds once: the signature, the
// algorithm allow-list and its match with the key, the header and claim
// decoding, the issuer, the token type and the required claims. A cache
// keyed by a hash of the whole token string cannot see a different token.
// What the request brings (the CSRF rule) and what the store knows (the
// session's revocation, with CheckSessionInStore) are checked by
// verifyRequest on every request, cached token or not. A key removed from
// the store is noticed by the uncached path only when the keyring reloads;
// the snapshot check makes a cached token stop at that same reload.
func (vt *verifiedToken) stillValid(k *keyring, now time.Time) bool {
	return now.Before(vt.expiresAt.Add(jwtLeeway)) &&
		!now.Before(vt.issuedAt.Add(-jwtLeeway)) &&
		(vt.notBefore.IsZero() || !now.Before(vt.notBefore.Add(-jwtLeeway))) &&
		now.Before(vt.key.verifyUntil) && k.loaded(vt.key)
}

// verifyAccess checks an access token and returns it verified. A token
// verified before is taken from the token cache if it is still valid
// (see stillValid); any other goes through golang-jwt in full, and into
// the cache if it passes.
func (a *Auth) verifyAccess(ctx context.Context, tok string) (*verifiedToken, error) {
	h := a.verified.hash(tok)
	cached := a.verified.get(h, tok)
	if cached != nil && cached.stillValid(a.keys, a.cfg.Now()) {
		return cached, nil
	}
	vt, err := a.parseAccess(ctx, tok)
	if err != nil {
		if cached != nil {
			a.verified.remove(h)
		}
		return nil, fmt.Errorf("%w: %v", ErrTryRefreshToken, err)
	}
	vt.token = strings.Clone(tok) // not a slice of a larger header
	a.verified.put(h, vt, a.cfg.Now())
	return vt, nil
}

// parseAccess is the full verification of an access token by golang-jwt,
// with the options New gives the parser.
func (a *Auth) parseAccess(ctx context.Context, tok string) (*verifiedToken, error) {
	st := verifyStates.Get().(*verifyState)
	defer verifyStates.Put(st)
	// The claims must start empty: JSON leaves absent fields untouched.
	st.a, st.ctx, st.key, st.claims = a, ctx, nil, accessClaims{}
	defer func() { st.a, st.ctx, st.key, st.claims = nil, nil, nil, accessClaims{} }()
	if _, err := a.parser.ParseWithClaims(tok, &st.claims, st.keyFunc); err != nil {
		return nil, err
	}
	c := &st.claims
	vt := &verifiedToken{
		session: &Session{
			UserID:    c.Subject,
			Handle:    c.SessionHandle,
			TenantID:  c.TenantID,
			TokenID:   c.ID,
			IssuedAt:  c.IssuedAt.Time,
			ExpiresAt: c.ExpiresAt.Time,
		},
		handle:    c.SessionHandle,
		key:       st.key,
		issuedAt:  c.IssuedAt.Time,
		expiresAt: c.ExpiresAt.Time,
	}
	if c.NotBefore != nil {
		vt.notBefore = c.NotBefore.Time
	}
	return vt, nil
}

// tokenCache keeps verified access tokens until they expire, so that a
// token presented again costs a hash, a map lookup and a comparison
// instead of a parse. It is bounded: a shard that is full when a token is
// added drops its expired entries, and is emptied if that is not enough,
// which costs only full verifications. The zero value is ready to use.
//
// Entries are found by a keyed 64-bit hash of the token (hash/maphash,
// with a random seed per Auth) and accepted only if the whole token is
// equal, compared in constant time: the map compares nothing but hashes,
// so no timing tells a client how much of its token matches a cached one,
// and a hash collision is a miss, never another token's session.
type tokenCache struct {
	seedOnce sync.Once
	seed     maphash.Seed
	shards   [tokenCacheShards]tokenCacheShard
}

type tokenCacheShard struct {
	mu sync.RWMutex
	m  map[uint64]*verifiedToken
}

const (
	tokenCacheShards = 16
	// maxVerifiedTokens bounds the token cache: 10,000 tokens are a few
	// MB of entries.
	maxVerifiedTokens = 10_000
	maxShardTokens    = maxVerifiedTokens / tokenCacheShards
)

func (c *tokenCache) hash(tok string) uint64 {
	c.seedOnce.Do(func() { c.seed = maphash.MakeSeed() })
	return maphash.String(c.seed, tok)
}

func (c *tokenCache) shard(h uint64) *tokenCacheShard {
	return &c.shards[h%tokenCacheShards]
}

// get returns the cached token tok, whose hash is h, or nil.
func (c *tokenCache) get(h uint64, tok string) *verifiedToken {
	s := c.shard(h)
	s.mu.RLock()
	vt := s.m[h]
	s.mu.RUnlock()
	if vt == nil || !equalConstantTime(vt.token, tok) {
		return nil
	}
	return vt
}

func (c *tokenCache) put(h uint64, vt *verifiedToken, now time.Time) {
	s := c.shard(h)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = make(map[uint64]*verifiedToken)
	}
	if _, ok := s.m[h]; !ok && len(s.m) >= maxShardTokens {
		for k, old := range s.m {
			if !now.Before(old.expiresAt.Add(jwtLeeway)) || !now.Before(old.key.verifyUntil) {
				delete(s.m, k)
			}
		}
		if len(s.m) >= maxShardTokens {
			clear(s.m)
		}
	}
	s.m[h] = vt
}

func (c *tokenCache) remove(h uint64) {
	s := c.shard(h)
	s.mu.Lock()
	delete(s.m, h)
	s.mu.Unlock()
}

// equalConstantTime is subtle.ConstantTimeCompare for strings, without
// copying them to byte slices: its time depends on the lengths only.
func equalConstantTime(x, y string) bool {
	if len(x) != len(y) {
		return false
	}
	var v byte
	for i := 0; i < len(x); i++ {
		v |= x[i] ^ y[i]
	}
	return v == 0
}

// VerifyRequest finds and verifies the session of a request, as
// RequireSession does. It returns an error matching ErrUnauthorized when
// the request carries no session (or, with Config.CheckSessionInStore, a
// revoked one) and ErrTryRefreshToken when its access token is expired or
// invalid.
func (a *Auth) VerifyRequest(r *http.Request) (Session, error) {
	s, _, err := a.verifyRequest(r)
	if err != nil {
		return Session{}, err
	}
	return *s, nil
}

// errRevoked is a valid access token of a session that no longer exists.
var errRevoked = fmt.Errorf("%w: session revoked", ErrUnauthorized)

func (a *Auth) verifyRequest(r *http.Request) (*Session, mode, error) {
	tok, m, found, bad := tokenFrom(r, cookieAccess)
	switch {
	case !found:
		return nil, m, ErrUnauthorized
	case bad:
		return nil, m, fmt.Errorf("%w: unusable token", ErrTryRefreshToken)
	case a.csrfFailed(r, m):
		return nil, m, fmt.Errorf("%w: rid header required with SameSite=None cookies", ErrTryRefreshToken)
	}
	vt, err := a.verifyAccess(r.Context(), tok)
	if err != nil {
		return nil, m, err
	}
	// A cached token is checked here like a fresh one: a revoked session
	// is refused even if its token is in the cache.
	if a.cfg.CheckSessionInStore {
		if err := a.checkSession(r.Context(), vt.handle); err != nil {
			return nil, m, err
		}
	}
	return vt.session, m, nil
}

// checkSession confirms in the store that a session still exists, or
// trusts a confirmation younger than Config.SessionCheckCache.
func (a *Auth) checkSession(ctx context.Context, handle string) error {
	now := a.cfg.Now()
	if a.liveSessions.has(handle, now) {
		return nil
	}
	sess, err := a.store.Session(ctx, handle, now)
	if errors.Is(err, store.ErrNotFound) {
		return errRevoked
	} else if err != nil {
		return err
	}
	if ttl := a.cfg.SessionCheckCache; ttl > 0 {
		until := now.Add(ttl)
		if sess.ExpiresAt.Before(until) {
			until = sess.ExpiresAt
		}
		a.liveSessions.add(handle, until)
	}
	return nil
}

// sessionCache remembers sessions recently found live in the store, for
// Config.SessionCheckCache. Revocations seen by this instance evict at
// once; those made by other instances show after at most the cache time.
type sessionCache struct {
	mu   sync.Mutex
	live map[string]time.Time // handle -> trusted until
}

// maxCachedSessions bounds the cache; when full it is emptied, which
// costs only store reads.
const maxCachedSessions = 100_000

func (c *sessionCache) has(handle string, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	until, ok := c.live[handle]
	return ok && now.Before(until)
}

func (c *sessionCache) add(handle string, until time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.live == nil || len(c.live) >= maxCachedSessions {
		c.live = make(map[string]time.Time)
	}
	c.live[handle] = until
}

func (c *sessionCache) evict(handle string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.live, handle)
}

// RequireSession lets through requests with a valid session, which handlers
// read with SessionFromContext, and answers the others 401 as the protocol
// says: "unauthorised" without a session, "try refresh token" when the
// access token is expired or invalid (the SDKs then refresh and retry).
// OPTIONS requests (CORS preflight) pass unverified.
func (a *Auth) RequireSession(next http.Handler) http.Handler {
	return a.sessionMiddleware(next, true)
}

// OptionalSession is RequireSession for pages that also serve signed-out
// users: a request without a session passes with none in its context. An
// expired or invalid access token is still answered 401 "try refresh token",
// so a signed-in user is never served as signed out by mistake.
func (a *Auth) OptionalSession(next http.Handler) http.Handler {
	return a.sessionMiddleware(next, false)
}

func (a *Auth) sessionMiddleware(next http.Handler, required bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodOptions {
			next.ServeHTTP(w, r)
			return
		}
		s, _, err := a.verifyNoPanic(w, r)
		switch {
		case err == nil:
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), sessionKey{}, s)))
		case !required && err == ErrUnauthorized:
			next.ServeHTTP(w, r)
		case err == errAnswered:
		default:
			if errors.Is(err, errRevoked) {
				a.clearTokens(w, true, true)
			}
			a.fail(w, r, err)
		}
	})
}

// verifyNoPanic is verifyRequest for the middleware, where a panicking
// Store must not take down the application's own handler chain.
func (a *Auth) verifyNoPanic(w http.ResponseWriter, r *http.Request) (s *Session, m mode, err error) {
	defer func() {
		if v := recover(); v != nil {
			a.answerPanic(w, r, v)
			s, err = nil, errAnswered
		}
	}()
	return a.verifyRequest(r)
}

// errAnswered reports that the response has been written already.
var errAnswered = errors.New("auth: answered")

// createSession starts a session for a user who just signed up or in, and
// writes its tokens in the mode the request asks for.
func (a *Auth) createSession(ctx context.Context, w http.ResponseWriter, r *http.Request, userID string) (store.Session, bodyTokens, error) {
	key, err := a.keys.signer(ctx)
	if err != nil {
		return store.Session{}, bodyTokens{}, err
	}
	now := a.cfg.Now()
	s := store.Session{
		Handle:      uuid.NewString(),
		UserID:      userID,
		CreatedAt:   now,
		RefreshedAt: now,
		ExpiresAt:   now.Add(a.cfg.RefreshTokenLifetime),
	}
	refresh, hash := newSecret()
	t, err := a.issueAccess(key, s, now)
	if err != nil {
		return store.Session{}, bodyTokens{}, err
	}
	t.refresh = refresh
	if err := a.store.CreateSession(ctx, s, hash); err != nil {
		return store.Session{}, bodyTokens{}, fmt.Errorf("auth: creating a session: %w", err)
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

// handleSignOut revokes the session of the request and clears its tokens.
func (a *Auth) handleSignOut(w http.ResponseWriter, r *http.Request) {
	s, m, err := a.verifyRequest(r)
	if err != nil {
		if errors.Is(err, errRevoked) {
			a.clearTokens(w, true, true)
		}
		a.fail(w, r, err)
		return
	}
	if err := a.store.RevokeSession(r.Context(), s.Handle); err != nil && !errors.Is(err, store.ErrNotFound) {
		a.fail(w, r, err)
		return
	}
	a.clearTokens(w, m == modeCookie, m != modeCookie)
	a.emit(r.Context(), r, Event{Kind: EventSignOut, UserID: s.UserID, SessionHandle: s.Handle})
	writeJSON(w, http.StatusOK, statusOK)
}

var statusOK = struct {
	Status string `json:"status"`
}{"OK"}
