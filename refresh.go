package auth

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/latchkit/auth/internal/onetime"
	"github.com/latchkit/auth/internal/refreshtoken"
	"github.com/latchkit/auth/internal/wire"
	"github.com/latchkit/auth/store"
)

// handleRefresh exchanges a refresh token for a new pair of tokens.
//
// Rotation is strict: a refresh token works once. Presenting one that has
// already been exchanged means two parties hold it, and we cannot tell
// which is the thief, so the whole session ends and both must sign in
// again (RFC 9700, section 4.14.2). Config.RefreshReuseWindow softens this
// for the token just superseded: presented again within the window, it
// gets the very successor the exchange made, so refreshes racing from
// several tabs, or a retry after a lost response, cost nothing and leave
// one live token.
//
// The store keeps nothing of superseded tokens. It tells them by their
// generation, which the token carries under a MAC made with a refresh key
// from the store: nobody but the server can make a token that looks
// superseded, so nobody can end a session they do not hold.
func (a *Auth) handleRefresh(w http.ResponseWriter, r *http.Request) {
	tok, m, found, bad := tokenFrom(r, cookieRefresh)
	ctx := r.Context()
	now := a.cfg.Now()
	rot := store.Rotation{
		Presented:   tokenHash(tok),
		Now:         now,
		ExpiresAt:   now.Add(a.cfg.RefreshTokenLifetime),
		ReuseWindow: a.cfg.RefreshReuseWindow,
		Burst:       a.cfg.RateLimits.SessionRefreshes.Burst,
		Every:       a.cfg.RateLimits.SessionRefreshes.Every,
		RolesOf:     a.rotationRoles,
	}
	var presented refreshtoken.Token
	var refused error
	switch {
	case !found:
		// A first visit probes refresh with no token at all: routine,
		// and cheap, as no store is touched.
		refused = errRefreshNoToken
	case bad:
		refused = errRefreshMalformed
	case a.csrfFailed(r, m):
		refused = errRefreshMissingRID
	case onetime.WellFormed(tok):
		rot.Handle, refused = a.legacySession(ctx, rot.Presented, now)
	default:
		presented, refused = a.authenticRefresh(ctx, tok)
		rot.Handle, rot.Generation = presented.Handle, presented.Generation
	}
	if refused != nil {
		a.refuseRefresh(w, r, refused)
		return
	}
	// Everything that can fail for reasons of our own happens before the
	// rotation commits, so a failure leaves the presented token valid.
	key, next, err := a.mintSuccessor(ctx, tok, &rot)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	if presented.Handle == "" {
		// A token from before tokens named their session: the store
		// finds it by hash, as it was the session's generation 0.
		rot.Handle = ""
	}
	res, err := a.store.RotateRefreshToken(ctx, rot)
	if err != nil {
		a.refuseRotation(w, r, res, err, presented, now)
		return
	}
	s := res.Session
	if res.Repeat {
		// The token just superseded, back within the window: answer with
		// the successor the exchange made, which may have used another
		// key than this instance's.
		if next, err = a.repeatSuccessor(ctx, tok, res); err != nil {
			a.fail(w, r, err)
			return
		}
	}
	exp, operator, over := a.accessEnd(ctx, s, now)
	if over {
		a.endImpersonation(ctx, r, s, operator)
		a.refuseRefresh(w, r, errSessionExpired)
		return
	}
	claims := a.claimsAtRefresh(ctx, res, now)
	t, err := a.issueAccess(key, s, now, exp, &claims)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	t.refresh = next
	body := a.putTokens(w, m, t, true)
	a.emit(ctx, r, Event{Kind: EventRefresh, UserID: s.UserID, SessionHandle: s.Handle, Operator: operator})
	writeRefreshed(w, body)
}

// refreshedAnswer is the JSON answer of a refresh in cookie or header mode.
var refreshedAnswer = []byte(`{"status":"OK"}`)

// writeRefreshed writes the answer of a refresh whose headers putTokens
// has set, Content-Type included: byte for byte what wire.JSON makes of
// the status beside body, without encoding/json's reflection when the
// tokens need no escaping, which the library's tokens never do.
func writeRefreshed(w http.ResponseWriter, body bodyTokens) {
	b := refreshedAnswer
	if body != (bodyTokens{}) {
		var ok bool
		if b, ok = appendRefreshedAnswer(make([]byte, 0, 48+len(body.AccessToken)+len(body.RefreshToken)), body); !ok {
			wire.JSON(w, http.StatusOK, refreshedJSON{"OK", body})
			return
		}
	}
	w.WriteHeader(http.StatusOK)
	w.Write(b)
}

// refreshedJSON is the answer of a refresh, for encoding/json.
type refreshedJSON struct {
	Status string `json:"status"`
	bodyTokens
}

// appendRefreshedAnswer appends to b what json.Marshal makes of the answer
// of a refresh with body, and reports whether it could: not when a token
// has a byte that encoding/json would escape.
func appendRefreshedAnswer(b []byte, body bodyTokens) ([]byte, bool) {
	b = append(b, `{"status":"OK"`...)
	for _, f := range [...]struct{ name, v string }{{`,"accessToken":"`, body.AccessToken}, {`,"refreshToken":"`, body.RefreshToken}} {
		if f.v == "" {
			continue // omitempty
		}
		if !jsonVerbatim(f.v) {
			return b, false
		}
		b = append(b, f.name...)
		b = append(b, f.v...)
		b = append(b, '"')
	}
	return append(b, '}'), true
}

// jsonVerbatim reports whether encoding/json writes s inside its quotes
// as it is: printable ASCII, without the quote, the backslash, and the
// characters it escapes for HTML.
func jsonVerbatim(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c > 0x7e, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}

// mintSuccessor takes the keys a refresh signs with and makes the
// successor of the presented token tok, recording it in rot. It returns
// the access-token signing key and the successor.
func (a *Auth) mintSuccessor(ctx context.Context, tok string, rot *store.Rotation) (*signingKey, string, error) {
	key, err := a.keys.signer(ctx)
	if err != nil {
		return nil, "", err
	}
	rkey, err := a.refreshKeys.signer(ctx)
	if err != nil {
		return nil, "", err
	}
	next, nextHash, err := refreshtoken.MintSuccessor(rkey, rot.Handle, rot.Generation+1, rot.ExpiresAt, tok)
	if err != nil {
		return nil, "", err
	}
	rot.Next, rot.NextKey = nextHash, rkey.id
	return key, next, nil
}

// refuseRotation answers a rotation the store did not make, err being its
// error and res what it reported with it.
func (a *Auth) refuseRotation(w http.ResponseWriter, r *http.Request, res store.Rotated, err error, presented refreshtoken.Token, now time.Time) {
	ctx := r.Context()
	var ended *store.EndedError
	switch {
	case errors.Is(err, store.ErrRateLimited):
		a.emit(ctx, r, Event{Kind: EventRefreshThrottled})
		wire.TooMany(w, a.cfg.RateLimits.SessionRefreshes.Every)
	case errors.Is(err, store.ErrTokenReused):
		theft := theftError(res.Reuse)
		s := res.Session
		a.emit(ctx, r, Event{Kind: EventTokenTheft, UserID: s.UserID, SessionHandle: s.Handle, Reason: theft.Reason})
		a.refuseRefresh(w, r, theft)
	case errors.As(err, &ended):
		a.refuseRefresh(w, r, endedError(ended.Reason))
	case errors.Is(err, store.ErrNotFound):
		refused := errUnknownToken
		switch {
		case presented.Handle == "":
			// A token from before tokens named their session, which a
			// made-up string answers the same.
		case !now.Before(presented.Expires):
			// The session is gone, and this token says it had expired.
			refused = errSessionExpired
		default:
			// An authentic token of a session the store forgot before it
			// expired: its user was deleted. Answered as a revoked one,
			// as a protected route does, so that a token never tells
			// whether its account still exists.
			refused = errRevoked
		}
		a.refuseRefresh(w, r, refused)
	default:
		a.fail(w, r, fmt.Errorf("auth: rotating a refresh token: %w", err))
	}
}

// refuseRefresh answers a refused refresh and clears the client's tokens.
func (a *Auth) refuseRefresh(w http.ResponseWriter, r *http.Request, err error) {
	a.clearTokens(w, true, true)
	a.fail(w, r, err)
}

// authenticRefresh parses a refresh token of the current format and checks
// its MAC. A token whose key the store no longer has is refused the same
// way as a forged one: neither is worth a store lookup.
func (a *Auth) authenticRefresh(ctx context.Context, tok string) (refreshtoken.Token, error) {
	t, ok := refreshtoken.Parse(tok)
	if !ok {
		return t, errRefreshMalformed
	}
	key, ok := a.refreshKeys.verifier(ctx, t.KeyID)
	if !ok || !t.Authentic(key) {
		return refreshtoken.Token{}, errRefreshInvalid
	}
	return t, nil
}

// legacySession finds the session of a refresh token made before tokens
// named their session, in a store that kept such tokens. It returns the
// handle, for the successor to name.
func (a *Auth) legacySession(ctx context.Context, hash store.TokenHash, now time.Time) (string, error) {
	legacy, ok := a.store.(store.LegacyTokenStore)
	if !ok {
		return "", errUnknownToken
	}
	handle, err := legacy.LegacyTokenSession(ctx, hash, now)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return "", errUnknownToken
	case err != nil:
		return "", fmt.Errorf("auth: finding a refresh token's session: %w", err)
	}
	return handle, nil
}

// repeatSuccessor makes again the successor that the exchange of presented
// made, with the key the store says it used.
func (a *Auth) repeatSuccessor(ctx context.Context, presented string, res store.Rotated) (string, error) {
	if res.CurrentKey == "" {
		return "", errors.New("auth: the store reports a repeat of a token whose successor has no key")
	}
	key, ok := a.refreshKeys.verifier(ctx, res.CurrentKey)
	if !ok {
		return "", fmt.Errorf("auth: the refresh key %q of a session's current token is gone", res.CurrentKey)
	}
	s := res.Session
	tok, _, err := refreshtoken.MintSuccessor(key, s.Handle, s.Generation, s.ExpiresAt, presented)
	return tok, err
}

// tokenHash is the SHA-256 of a token, as the store keeps it. A token of
// the usual size is copied to the stack first: the conversion of a string
// longer than 32 bytes to a []byte would allocate.
func tokenHash(tok string) store.TokenHash {
	var buf [256]byte
	if len(tok) > len(buf) {
		return sha256.Sum256([]byte(tok))
	}
	return sha256.Sum256(append(buf[:0], tok...))
}
