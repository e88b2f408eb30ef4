package auth

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/latchkit/auth/internal/onetime"
	"github.com/latchkit/auth/internal/wire"
	"github.com/latchkit/auth/store"
)

// claimRefetchAfter is how old a false st-ev claim may be before
// RequireSession reads the store again, as the SDKs' validator does: a
// verification done in another browser is seen within it.
const claimRefetchAfter = 10 * time.Second

// An emailRule says what a session middleware asks of the session's email.
type emailRule int

const (
	emailByMode   emailRule = iota // as Config.EmailVerification's mode says: a Rule that says nothing
	emailAnyState                  // nothing
	emailRequired                  // verified, or 403
)

// defaultEmailRule is the rule of RequireSession and OptionalSession: a
// verified email in required mode, nothing otherwise.
func (a *Auth) defaultEmailRule() emailRule {
	if a.cfg.EmailVerification.Mode == EmailVerificationRequired {
		return emailRequired
	}
	return emailAnyState
}

// verifying reports whether email verification is on.
func (a *Auth) verifying() bool {
	return a.cfg.EmailVerification.Mode != EmailVerificationOff
}

// emailVerified reports whether a login's email is known to be its user's.
// A login without an email has nothing to verify, and counts as verified,
// so that it is never locked out.
func emailVerified(l store.Login) bool { return l.Email == "" || l.EmailVerified }

// emailClaim is the st-ev claim: whether the email of the session's login
// method is verified, and when that was read (ms since the epoch).
type emailClaim struct {
	Verified bool  `json:"v"`
	Time     int64 `json:"t"`
}

// encode is the claim's JSON value, as encoding/json writes it.
func (ec emailClaim) encode() []byte {
	b := append(make([]byte, 0, 32), `{"v":`...)
	b = strconv.AppendBool(b, ec.Verified)
	b = append(b, `,"t":`...)
	b = strconv.AppendInt(b, ec.Time, 10)
	return append(b, '}')
}

// verifiedEmailClaim is the st-ev claim, in tokens while verification is
// on and checked on the routes whose rules ask for a verified email.
type verifiedEmailClaim struct{ a *Auth }

func (verifiedEmailClaim) name() string { return "st-ev" }

func (c verifiedEmailClaim) inTokens() bool { return c.a.verifying() }

func (verifiedEmailClaim) atSignIn(_ context.Context, _ store.Session, by store.Login, now time.Time) []byte {
	return emailClaim{Verified: emailVerified(by), Time: now.UnixMilli()}.encode()
}

// atRefresh reads the claim anew at each refresh (SuperTokens copies
// it), so that a change of the email's state reaches the token within
// one access-token lifetime. If the read fails the claim is left out,
// and a missing claim is read again by the first check that needs it.
func (c verifiedEmailClaim) atRefresh(ctx context.Context, s store.Session, now time.Time) []byte {
	l, err := c.a.loginOf(ctx, s.UserID, s.LoginID)
	if err != nil {
		c.a.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "auth: refresh without the email claim",
			slog.String("user_id", s.UserID), slog.String("error", err.Error()))
		return nil
	}
	return c.atSignIn(ctx, s, l, now)
}

func (verifiedEmailClaim) parse(raw json.RawMessage) (any, error) {
	var ec emailClaim
	err := json.Unmarshal(raw, &ec)
	return &ec, err
}

func (c verifiedEmailClaim) checker(rules []Rule) claimCheck {
	if c.a.emailRuleOf(rules) == emailRequired {
		return c.a.checkEmailClaim
	}
	return nil
}

// VerifiedEmail requires a verified email on a route whatever
// Config.EmailVerification's mode: a session whose email is not verified
// is refused 403 with the SDKs' "invalid claim" body. With verification
// off, access tokens carry no claim, so the route reads the store for
// every request.
func VerifiedEmail() Rule { return Rule{"st-ev", emailRequired} }

// AllowUnverifiedEmail exempts a route from required email verification,
// for the pages a user with an unverified email must still reach, such as
// one that asks them to verify it or to change it.
func AllowUnverifiedEmail() Rule { return Rule{"st-ev", emailAnyState} }

// emailRuleOf is the email rule that rules leave for a route: the mode's
// by default, and VerifiedEmail over AllowUnverifiedEmail.
func (a *Auth) emailRuleOf(rules []Rule) emailRule {
	rule := a.defaultEmailRule()
	for _, r := range rules {
		if r.claim != "st-ev" {
			continue
		}
		switch r.arg {
		case emailRequired:
			return emailRequired
		case emailAnyState:
			rule = emailAnyState
		}
	}
	return rule
}

// emailClaim is the st-ev claim that a verified token carries, or nil.
func (vt *verifiedToken) emailClaim() *emailClaim {
	ec, _ := vt.parsed[claimEV].(*emailClaim)
	return ec
}

// sessionLogin reads the login a session was started with. A session of a
// user or login that no longer exists gets ErrNotFound.
func (a *Auth) sessionLogin(ctx context.Context, s *Session) (store.Login, error) {
	return a.loginOf(ctx, s.UserID, s.LoginID)
}

// checkEmailClaim passes a session whose email is verified. A claim that
// says so is trusted; a missing one, or a false one older than
// claimRefetchAfter, is read again from the store, and a changed value is
// returned fresh, to be written into the response (a new access token with
// the old one's expiry), so the client's claim follows without a refresh.
func (a *Auth) checkEmailClaim(ctx context.Context, vt *verifiedToken) (fresh []byte, err error) {
	ev := vt.emailClaim()
	if ev != nil && ev.Verified {
		return nil, nil
	}
	now := a.cfg.Now()
	if ev == nil || now.Sub(time.UnixMilli(ev.Time)) > claimRefetchAfter {
		l, err := a.sessionLogin(ctx, vt.session)
		if errors.Is(err, store.ErrNotFound) {
			return nil, errRevoked
		} else if err != nil {
			return nil, err
		}
		read := emailClaim{Verified: emailVerified(l), Time: now.UnixMilli()}
		if a.verifying() && (ev == nil || ev.Verified != read.Verified) {
			fresh = read.encode()
		}
		ev = &read
	}
	if ev.Verified {
		return fresh, nil
	}
	expected, actual := true, false
	return fresh, newClaimError("st-ev", wire.ClaimReason{Message: "wrong value", ExpectedValue: &expected, ActualValue: &actual})
}

// refreshEmailClaim writes the session's current state into its claim if
// the token says otherwise (or nothing).
func (a *Auth) refreshEmailClaim(ctx context.Context, w http.ResponseWriter, vt *verifiedToken, m mode, verified bool, always bool) error {
	if ev := vt.emailClaim(); !always && ev != nil && ev.Verified == verified {
		return nil
	}
	return a.rewriteAccess(ctx, w, vt, m, claimEV, emailClaim{Verified: verified, Time: a.cfg.Now().UnixMilli()}.encode())
}

// sessionForEmail verifies the session of a request to an email
// verification endpoint (which never enforces the claim) and reads its
// login. It answers the request itself when it fails.
func (a *Auth) sessionForEmail(w http.ResponseWriter, r *http.Request) (*verifiedToken, mode, store.Login, bool) {
	vt, m, err := a.verifyRequest(r)
	if err == nil {
		var l store.Login
		l, err = a.sessionLogin(r.Context(), vt.session)
		if errors.Is(err, store.ErrNotFound) {
			err = errRevoked // the user, or the login, is gone
		}
		if err == nil {
			return vt, m, l, true
		}
	}
	if sessionEnded(err) {
		a.clearTokens(w, true, true)
	}
	a.fail(w, r, err)
	return nil, m, store.Login{}, false
}

// handleSendVerification mails a verification link for the email of the
// session's login method.
func (a *Auth) handleSendVerification(w http.ResponseWriter, r *http.Request) {
	var body map[string]json.RawMessage
	if err := a.readOptionalJSON(w, r, &body); err != nil {
		a.fail(w, r, err)
		return
	}
	vt, m, l, ok := a.sessionForEmail(w, r)
	if !ok {
		return
	}
	ctx := r.Context()
	if emailVerified(l) {
		if err := a.refreshEmailClaim(ctx, w, vt, m, true, false); err != nil {
			a.fail(w, r, err)
			return
		}
		wire.Status(w, "EMAIL_ALREADY_VERIFIED_ERROR")
		return
	}
	// A claim that still says true (the email changed, or was marked
	// unverified) is put right before the user is told to check mail.
	if err := a.refreshEmailClaim(ctx, w, vt, m, false, false); err != nil {
		a.fail(w, r, err)
		return
	}
	// Per user; and per address for logins at providers, since many
	// users may have one address unverified there. A password login is
	// the only one of its address, so a stranger's provider logins cannot
	// use up its owner's allowance.
	rate := a.cfg.RateLimits.VerificationEmails
	limits := []limit{{limitKey("verify-email", l.UserID), rate}}
	if l.Method != store.MethodEmailPassword {
		limits = append(limits, limit{limitKey("verify-address", l.Email), rate})
	}
	if wait := a.take(ctx, limits...); wait > 0 {
		wire.GeneralError(w, "A verification email was sent a moment ago. Please check your inbox, or try again in "+
			strconv.Itoa(int((wait+time.Second-1)/time.Second))+" seconds.")

		return
	}
	a.outbox.enqueue(a, mailJob{"verification", func(ctx context.Context) { a.sendVerificationEmail(ctx, l) }})
	wire.JSON(w, http.StatusOK, wire.OK)
}

// sendVerificationEmail is the outbox's work for one request: issue a
// token bound to the login and its email, and mail the link.
func (a *Auth) sendVerificationEmail(ctx context.Context, l store.Login) {
	tok, hash := onetime.New()
	now := a.cfg.Now()
	lifetime := a.cfg.EmailVerification.TokenLifetime
	err := a.store.CreateCode(ctx, store.Code{
		Hash: hash, Kind: store.CodeVerification, UserID: l.UserID, LoginID: l.ID, Email: l.Email,
		CreatedAt: now, ExpiresAt: now.Add(lifetime),
	})
	if errors.Is(err, store.ErrNotFound) {
		// The login changed its email, or went, since the request: the
		// link would verify nothing.
		a.cfg.Logger.LogAttrs(ctx, slog.LevelInfo, "auth: verification email not sent: the login or its email changed",
			slog.String("user_id", l.UserID))
		return
	}
	if err != nil {
		a.mailFailed(ctx, "verification", l.UserID, "creating a verification token", err)
		return
	}
	if err := a.mail(ctx, a.cfg.EmailVerification.Email, l.Email, VerificationEmailData{
		Email:    l.Email,
		Link:     wire.LinkWithToken(a.cfg.EmailVerification.URL, tok),
		ValidFor: inWords(lifetime),
	}); err != nil {
		a.mailFailed(ctx, "verification", l.UserID, "sending the verification email", err)
		return
	}
	a.emit(ctx, nil, Event{Kind: EventEmailVerificationSent, UserID: l.UserID, Method: l.Method, ThirdPartyID: providerOf(l)})
}

// handleVerifyEmail uses up a verification token. A session is optional:
// the link may be opened in another browser. When one comes along and it
// is the verified login's, its claim is updated in the same answer.
func (a *Auth) handleVerifyEmail(w http.ResponseWriter, r *http.Request) {
	var req map[string]json.RawMessage
	if err := a.readJSON(w, r, &req); err != nil {
		a.fail(w, r, err)
		return
	}
	tok, err := wire.TokenField(req, "email verification")
	if err != nil {
		a.fail(w, r, err)
		return
	}
	// A session that is sent must be good, before the token is spent: a
	// client told to refresh will post again.
	vt, m, err := a.verifyRequest(r)
	if err != nil && err != errNoToken {
		if sessionEnded(err) {
			a.clearTokens(w, true, true)
		}
		a.fail(w, r, err)
		return
	}
	if !onetime.WellFormed(tok) {
		wire.Status(w, "EMAIL_VERIFICATION_INVALID_TOKEN_ERROR")
		return
	}
	ctx := r.Context()
	// The link proves that someone reads the inbox, not that they hold
	// the login, whatever session comes with it: it verifies the email
	// without proving it (store.Login.EmailProven).
	l, err := a.store.VerifyEmail(ctx, sha256.Sum256([]byte(tok)), a.cfg.Now())
	if errors.Is(err, store.ErrNotFound) {
		wire.Status(w, "EMAIL_VERIFICATION_INVALID_TOKEN_ERROR")
		return
	} else if err != nil {
		a.fail(w, r, err)
		return
	}
	a.emit(ctx, r, Event{Kind: EventEmailVerified, UserID: l.UserID, Method: l.Method, ThirdPartyID: providerOf(l)})
	a.afterVerified(ctx, l)
	if vt != nil && sameLogin(vt.session, l) {
		if err := a.refreshEmailClaim(ctx, w, vt, m, true, false); err != nil {
			// The email is verified; the claim catches up at the
			// next check.
			a.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "auth: could not update the session's email claim",
				slog.String("error", err.Error()))
		}
	}
	wire.JSON(w, http.StatusOK, wire.OK)
}

// sameLogin reports whether s was started with l.
func sameLogin(s *Session, l store.Login) bool {
	id := s.LoginID
	if id == "" {
		id = s.UserID
	}
	return id == l.ID && s.UserID == l.UserID
}

// handleIsVerified tells whether the email of the session's login method
// is verified, and writes the answer into the session's claim.
func (a *Auth) handleIsVerified(w http.ResponseWriter, r *http.Request) {
	vt, m, l, ok := a.sessionForEmail(w, r)
	if !ok {
		return
	}
	verified := emailVerified(l)
	if err := a.refreshEmailClaim(r.Context(), w, vt, m, verified, true); err != nil {
		a.fail(w, r, err)
		return
	}
	wire.JSON(w, http.StatusOK, struct {
		Status     string `json:"status"`
		IsVerified bool   `json:"isVerified"`
	}{"OK", verified})

}
