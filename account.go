package auth

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/latchkit/auth/internal/kit"
	"github.com/latchkit/auth/internal/wire"
	"github.com/latchkit/auth/store"
)

// The account's self-service: the fresh sign-in that its sensitive
// routes ask for, carrying the current session on while the user's
// others end, and deleting one's own account.

// claimFresh is the name of the fresh sign-in's refusals. It is a claim
// that no token carries: its check reads the st-mfa claim, or the
// session's start in the store.
const claimFresh = "st-fresh"

// signedInWithin is the argument of a SignedInWithin rule.
type signedInWithin struct{ d time.Duration }

// SignedInWithin is a Rule for sensitive routes, in the manner of
// GitHub's sudo mode: the session must have completed a factor within
// the last d (0 means Config.FreshSignIn), or it is refused 403 with the
// "invalid claim" body of st-fresh, and the frontend has the user sign
// in again, then retries. A factor is the sign-in that started the
// session or, with Config.MFA, any factor the session completed since
// (the latest time in its st-mfa claim): completing TOTP or a passkey
// again counts. Without MFA it is when the session started, which the
// check reads from the store. Several SignedInWithin rules on a route
// all hold. Unlike FactorWithin it asks for no factor in particular.
func SignedInWithin(d time.Duration) Rule {
	return kit.NewRule(claimFresh, signedInWithin{d})
}

// freshClaim checks SignedInWithin rules. It is in no token.
type freshClaim struct{ a *Auth }

func (freshClaim) name() string   { return claimFresh }
func (freshClaim) inTokens() bool { return false }

func (freshClaim) atSignIn(context.Context, store.Session, store.Login, time.Time, *kit.Reading) []byte {
	return nil
}

func (freshClaim) atRefresh(context.Context, store.Session, time.Time, *kit.Reading) []byte {
	return nil
}

func (freshClaim) parse(json.RawMessage) (any, error) { return nil, nil }

func (c freshClaim) checker(rules []Rule) claimCheck {
	var within time.Duration
	found := false
	for _, r := range rules {
		if arg, ok := r.Arg().(signedInWithin); ok {
			d := arg.d
			if d <= 0 {
				d = c.a.cfg.FreshSignIn
			}
			if !found || d < within {
				within, found = d, true
			}
		}
	}
	if !found {
		return nil
	}
	return func(ctx context.Context, vt *verifiedToken) ([]byte, error) {
		return nil, c.a.checkFresh(ctx, vt, within)
	}
}

// freshReason is the reason of st-fresh's refusal.
type freshReason struct {
	Message         string `json:"message"`
	MaxAgeInSeconds int64  `json:"maxAgeInSeconds"`
}

// checkFresh passes the session of vt if it completed a factor within d.
func (a *Auth) checkFresh(ctx context.Context, vt *verifiedToken, d time.Duration) error {
	secs := int64(d / time.Second)
	reason := freshReason{
		Message:         "Sign-in not fresh: no factor completed within " + strconv.FormatInt(secs, 10) + " seconds",
		MaxAgeInSeconds: secs,
	}
	if vt.session.Operator != "" {
		// An operator acting as the user signed in as nobody.
		reason.Message = msgImpersonating
		return &ClaimError{Claim: claimFresh, Message: reason.Message, Reason: reason}
	}
	at, err := a.lastFactorAt(ctx, vt)
	if err != nil {
		return err
	}
	if a.cfg.Now().Sub(at) <= d {
		return nil
	}
	return &ClaimError{Claim: claimFresh, Message: reason.Message, Reason: reason}
}

// signedInRecently reports whether the session of vt completed a factor
// within Config.FreshSignIn, or answers the request itself with the
// fresh sign-in's refusal.
func (a *Auth) signedInRecently(w http.ResponseWriter, r *http.Request, vt *verifiedToken) bool {
	if a.refuseImpersonation(w, vt) {
		return false
	}
	if err := a.checkFresh(r.Context(), vt, a.cfg.FreshSignIn); err != nil {
		a.failSession(w, r, err)
		return false
	}
	return true
}

// lastFactorAt is when the session of vt last completed a factor: the
// latest time of its st-mfa claim while MFA is on, and otherwise (or for
// a token without the claim) when the session started.
func (a *Auth) lastFactorAt(ctx context.Context, vt *verifiedToken) (time.Time, error) {
	if c := vt.factorsClaim(); a.mfaOn() && c != nil {
		var last int64
		for _, at := range c.Done {
			last = max(last, at)
		}
		if last > 0 {
			return time.Unix(last, 0), nil
		}
	}
	s, err := a.store.Session(ctx, vt.handle, a.cfg.Now())
	if err != nil {
		return time.Time{}, sessionGone(err)
	}
	return s.CreatedAt, nil
}

// carryOn ends every session of the user of vt, and starts the one of vt
// again under a new handle, with its login, factors and start, whose
// tokens it writes in mode m: the user's other sessions end, and so does
// any sign-in in flight that checked a credential before (the store's
// session epoch), which ending them one by one would let through. It
// answers OK.
func (a *Auth) carryOn(w http.ResponseWriter, r *http.Request, vt *verifiedToken, m mode) {
	ctx := r.Context()
	old, err := a.store.Session(ctx, vt.handle, a.cfg.Now())
	if err != nil {
		a.failSession(w, r, sessionGone(err))
		return
	}
	handles, err := a.store.RevokeUserSessions(ctx, old.UserID)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	for _, h := range handles {
		if h == old.Handle {
			a.liveSessions.Evict(h)
			continue
		}
		a.emit(ctx, r, Event{Kind: EventSessionRevoked, UserID: old.UserID, SessionHandle: h})
	}
	t, err := a.restart(ctx, old)
	if err != nil {
		a.failSession(w, r, err)
		return
	}
	wire.JSON(w, http.StatusOK, struct {
		Status string `json:"status"`
		bodyTokens
	}{"OK", a.writeTokens(w, m, t)})
}

// restart starts old again, under a new handle and the user's session
// epoch as it is now; a revocation of every session since ends it.
func (a *Auth) restart(ctx context.Context, old store.Session) (issued, error) {
	u, err := a.store.UserByID(ctx, old.UserID)
	if err != nil {
		return issued{}, sessionGone(err)
	}
	by, err := a.loginOf(ctx, old.UserID, old.LoginID)
	if err != nil {
		return issued{}, sessionGone(err)
	}
	by.SessionEpoch = u.SessionEpoch
	s := store.Session{UserID: old.UserID, LoginID: by.ID, Tenant: old.Tenant, CreatedAt: old.CreatedAt, Factors: old.Factors}
	t, err := a.startSession(ctx, &s, by)
	if errors.Is(err, store.ErrSessionsEnded) || errors.Is(err, store.ErrBanned) {
		return issued{}, errRevoked
	}
	return t, err
}

// accountSession verifies the session of a request to a route that
// changes the account: it must have met its MFA requirement, and its
// user must still have a login. It reads the user's logins, and answers
// the request itself when it fails.
func (k kernel) accountSession(w http.ResponseWriter, r *http.Request) (*factorSession, bool) {
	s, ok := k.FactorSession(w, r)
	if !ok {
		return nil, false
	}
	fs := s.(*factorSession)
	switch {
	case len(fs.logins) == 0:
		k.a.failSession(w, r, errRevoked) // the user is gone
		return nil, false
	case fs.pending:
		k.a.fail(w, r, errMFAPending)
		return nil, false
	}
	return fs, true
}

// handleDeleteAccount is POST /user/delete: the user of a session that
// signed in recently deletes their account, once the application's
// BeforeDeleteUser agrees. Every session of the user ends; the answer
// clears the request's tokens.
func (a *Auth) handleDeleteAccount(w http.ResponseWriter, r *http.Request) {
	k := kernel{a}
	fs, ok := k.accountSession(w, r)
	if !ok || !k.SignedInRecently(w, r, fs) {
		return
	}
	ctx, userID := r.Context(), fs.UserID()
	if err := a.cfg.BeforeDeleteUser(ctx, userID); err != nil {
		a.cfg.Logger.LogAttrs(ctx, slog.LevelInfo, "auth: the application refused to delete a user",
			slog.String("user_id", userID), slog.String("error", err.Error()))
		wire.NotAllowed(w, "DELETE_NOT_ALLOWED", err.Error())
		return
	}
	if err := a.deleteUser(ctx, r, userID); errors.Is(err, store.ErrNotFound) {
		a.failSession(w, r, errRevoked)
		return
	} else if err != nil {
		a.fail(w, r, err)
		return
	}
	a.clearTokens(w, fs.m == modeCookie, fs.m != modeCookie)
	wire.JSON(w, http.StatusOK, wire.OK)
}

// accountRoutes adds the account's own routes to routes.
func (a *Auth) accountRoutes(routes map[string]kit.Route) {
	if a.cfg.BeforeDeleteUser != nil {
		routes["/user/delete"] = kit.Route{Method: http.MethodPost, Handle: a.handleDeleteAccount}
	}
}

// msgLinkedElsewhere refuses to add to the session's user a login that
// belongs to another user: a login is never moved from one user to
// another. Whoever asks holds the login, so saying so reveals nothing.
const msgLinkedElsewhere = "This way to sign in belongs to another account: sign in with it there, or remove it there first."

// msgUnprovenAccount refuses to add a login to a user with an address
// nobody has proven: the user may be a stranger's, made with someone
// else's address, and what it gained would stay when the address's owner
// takes it back with a reset.
const msgUnprovenAccount = "Prove your email address first, from a link sent to it (a password reset, or a passkey recovery), then add this."

// msgUnprovenLink refuses, under account linking, to add a login whose
// provider does not vouch for the address it gives: the address would be
// one the user's account holds without proof, which the address's owner
// could not take back.
const msgUnprovenLink = "This provider does not vouch for the email address it gives, so it cannot be added to your account."

// msgOtherTenant refuses to add to a session's user a way to sign in to
// another tenant than the session's.
const msgOtherTenant = "Your session is of another organisation: sign in to this one to add a way in to it."

// linkToSession adds the login of s, which the request's sender has just
// proved they hold, to the user of the request's session: a sign-in or
// sign-up sent with a session and shouldTryLinkingWithSessionUser true,
// as the SDKs send it to add a way to sign in to the account. The session
// must have met its MFA requirement and signed in recently. The login
// joins whatever its email, and owns nothing (store.Store's
// AttachLogin); one that is already the user's answers OK as it is; one
// of another user is refused, and so, under account linking, is one whose
// address is not proven. A user with an address nobody has proven adds
// nothing: it may be a stranger's, made with someone else's address, and
// what it gained would outlast the owner's taking the address back. The session
// goes on: the answer carries the user, and no tokens.
func (a *Auth) linkToSession(w http.ResponseWriter, r *http.Request, s kit.SignIn) {
	k := kernel{a}
	fs, ok := k.accountSession(w, r)
	if !ok || !k.SignedInRecently(w, r, fs) {
		return
	}
	ctx, userID := r.Context(), fs.UserID()
	nl := s.Login
	switch {
	case slices.ContainsFunc(fs.logins, unprovenAddress):
		wire.NotAllowed(w, s.NotAllowed, msgUnprovenAccount)
		return
	case a.cfg.AccountLinking && nl.Email != "" && !nl.EmailProven:
		wire.NotAllowed(w, s.NotAllowed, msgUnprovenLink)
		return
	case store.TenantID(nl.Tenant) != fs.Tenant():
		wire.NotAllowed(w, s.NotAllowed, msgOtherTenant)
		return
	}
	nl.ID, nl.UserID, nl.OwnsEmail = uuid.NewString(), userID, false
	nl.CreatedAt = a.cfg.Now().Truncate(time.Millisecond)
	err := a.store.AttachLogin(ctx, nl)
	created := err == nil
	if errors.Is(err, store.ErrConflict) {
		// The login exists: the user's own already, or another's.
		var l store.Login
		if l, err = a.store.Login(ctx, nl.LoginKey); err == nil && l.UserID != userID {
			wire.NotAllowed(w, s.NotAllowed, msgLinkedElsewhere)
			return
		}
		nl = l
	}
	if err != nil {
		a.failSession(w, r, sessionGone(err))
		return
	}
	if created {
		a.emit(ctx, r, Event{Kind: EventAccountLinked, UserID: userID, Method: nl.Method, ThirdPartyID: kit.ProviderOf(nl)})
	}
	u, logins, err := a.user(ctx, userID)
	if err != nil {
		a.failSession(w, r, sessionGone(err))
		return
	}
	writeUser(w, r, u, logins, nl, &created, bodyTokens{}, a.cfg.AccountLinking && wire.Primary(logins))
}

// unprovenAddress reports whether l has an address that nobody has
// proven (a reset, a recovery by a mailed link, a passwordless code or a
// provider that vouches for it proves one): a user with one may be a
// stranger's, made with someone else's address by a password, a passkey
// or a provider that does not vouch for it.
func unprovenAddress(l store.Login) bool { return l.Email != "" && !l.EmailProven }

// addressesVerified reports whether the user of logins may add a passkey
// or an authenticator app, or answers 403 st-ev, as the SDKs' email
// verification claim does, so that their frontends send the user to
// verify their address and retry. Whoever signs up with someone else's
// address and a password must not gain either: the owner's reset would
// leave the passkey opening the account and the app asked of the owner,
// and dropping them at the reset would let whoever holds an inbox past a
// second factor. With verification off, addresses are taken on trust.
func (a *Auth) addressesVerified(w http.ResponseWriter, logins []store.Login) bool {
	if !a.verifying() || !slices.ContainsFunc(logins, unverifiedAddress) {
		return true
	}
	wire.ClaimError(w, errEmailUnverified.Claim, errEmailUnverified.Reason)
	return false
}

// unverifiedAddress reports whether l has an address that is not
// verified: a provider's that it did not vouch for counts, as its maker
// may not read the inbox either.
func unverifiedAddress(l store.Login) bool { return !kit.EmailVerified(l) }
