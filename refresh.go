package auth

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/latchkit/auth/store"
)

// handleRefresh exchanges a refresh token for a new pair of tokens.
//
// Rotation is strict: a refresh token works once. Presenting one that has
// already been exchanged means two parties hold it, and we cannot tell
// which is the thief, so the whole session is revoked and both must sign in
// again (RFC 9700, section 4.14.2). Config.RefreshReuseWindow softens this
// for the immediate predecessor, to survive a lost response.
//
// Of several concurrent refreshes with one token, one wins; the others
// present a token that has just been superseded and so end the session
// with "token theft detected" (or, inside a reuse window, each get a new
// token that replaces the previous winner's; only the last stays valid).
// Clients must not refresh in parallel: the SuperTokens SDKs serialise
// refreshes across tabs.
func (a *Auth) handleRefresh(w http.ResponseWriter, r *http.Request) {
	tok, m, found, bad := tokenFrom(r, cookieRefresh)
	var refused error
	switch {
	case !found:
		// A first visit probes refresh with no token at all: routine,
		// and cheap, as no store is touched.
		refused = errRefreshNoToken
	case bad || !wellFormedSecret(tok):
		refused = errRefreshMalformed
	case a.csrfFailed(r, m):
		refused = errRefreshMissingRID
	}
	if refused != nil {
		a.clearTokens(w, true, true)
		a.fail(w, r, refused)
		return
	}
	// Everything that can fail for reasons of our own happens before the
	// rotation commits, so a failure leaves the presented token valid.
	key, err := a.keys.signer(r.Context())
	if err != nil {
		a.fail(w, r, err)
		return
	}
	next, nextHash := newSecret()
	now := a.cfg.Now()
	s, err := a.store.RotateRefreshToken(r.Context(), store.Rotation{
		Presented:   sha256.Sum256([]byte(tok)),
		Next:        nextHash,
		Now:         now,
		ExpiresAt:   now.Add(a.cfg.RefreshTokenLifetime),
		ReuseWindow: a.cfg.RefreshReuseWindow,
		Burst:       a.cfg.RateLimits.SessionRefreshes.Burst,
		Every:       a.cfg.RateLimits.SessionRefreshes.Every,
	})
	switch {
	case errors.Is(err, store.ErrRateLimited):
		a.emit(r.Context(), r, Event{Kind: EventRefreshThrottled})
		tooMany(w, a.cfg.RateLimits.SessionRefreshes.Every)
		return
	case errors.Is(err, store.ErrTokenReused):
		a.emit(r.Context(), r, Event{Kind: EventTokenTheft, UserID: s.UserID, SessionHandle: s.Handle})
		a.clearTokens(w, true, true)
		a.fail(w, r, errTokenTheft)
		return
	case errors.Is(err, store.ErrNotFound):
		a.clearTokens(w, true, true)
		a.fail(w, r, errUnknownToken)
		return
	case err != nil:
		a.fail(w, r, fmt.Errorf("auth: rotating a refresh token: %w", err))
		return
	}
	t, err := a.issueAccess(key, s, now, now.Add(a.cfg.AccessTokenLifetime), a.refreshedEmailClaim(r.Context(), s, now))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	t.refresh = next
	body := a.writeTokens(w, m, t)
	a.emit(r.Context(), r, Event{Kind: EventRefresh, UserID: s.UserID, SessionHandle: s.Handle})
	writeJSON(w, http.StatusOK, struct {
		Status string `json:"status"`
		bodyTokens
	}{"OK", body})
}

// refreshedEmailClaim reads the st-ev claim of a session anew at each
// refresh (SuperTokens copies it), so that a change of the email's state
// reaches the token within one access-token lifetime. The rotation has
// committed by now: if the read fails the claim is left out, and a missing
// claim is read again by the first check that needs it.
func (a *Auth) refreshedEmailClaim(ctx context.Context, s store.Session, now time.Time) *emailClaim {
	if !a.verifying() {
		return nil
	}
	l, err := a.loginOf(ctx, s.UserID, s.LoginID)
	if err != nil {
		a.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "auth: refresh without the email claim",
			slog.String("user_id", s.UserID), slog.String("error", err.Error()))
		return nil
	}
	return a.emailClaimOf(l, now)
}
