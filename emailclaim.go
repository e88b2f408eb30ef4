package auth

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/latchkit/auth/emailverification"
	"github.com/latchkit/auth/internal/kit"
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
	if a.cfg.EmailVerification.Mode == emailverification.Required {
		return emailRequired
	}
	return emailAnyState
}

// verifying reports whether email verification is on.
func (a *Auth) verifying() bool {
	return a.cfg.EmailVerification.Mode != emailverification.Off
}

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

func (verifiedEmailClaim) atSignIn(_ context.Context, _ store.Session, by store.Login, now time.Time, _ *kit.Reading) []byte {
	return emailClaim{Verified: kit.EmailVerified(by), Time: now.UnixMilli()}.encode()
}

// atRefresh reads the claim anew at each refresh (SuperTokens copies
// it), so that a change of the email's state reaches the token within
// one access-token lifetime. If the read fails the claim is left out,
// and a missing claim is read again by the first check that needs it.
func (c verifiedEmailClaim) atRefresh(ctx context.Context, s store.Session, now time.Time, r *kit.Reading) []byte {
	l, err := c.a.loginOf(ctx, s.UserID, s.LoginID)
	if err != nil {
		c.a.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "auth: refresh without the email claim",
			slog.String("user_id", s.UserID), slog.String("error", err.Error()))
		return nil
	}
	return c.atSignIn(ctx, s, l, now, r)
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
func VerifiedEmail() Rule { return kit.NewRule("st-ev", emailRequired) }

// AllowUnverifiedEmail exempts a route from required email verification,
// for the pages a user with an unverified email must still reach, such as
// one that asks them to verify it or to change it.
func AllowUnverifiedEmail() Rule { return kit.NewRule("st-ev", emailAnyState) }

// emailRuleOf is the email rule that rules leave for a route: the mode's
// by default, and VerifiedEmail over AllowUnverifiedEmail.
func (a *Auth) emailRuleOf(rules []Rule) emailRule {
	rule := a.defaultEmailRule()
	for _, r := range rules {
		if r.Claim() != "st-ev" {
			continue
		}
		switch r.Arg() {
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
		read := emailClaim{Verified: kit.EmailVerified(l), Time: now.UnixMilli()}
		if a.verifying() && (ev == nil || ev.Verified != read.Verified) {
			fresh = read.encode()
		}
		ev = &read
	}
	if ev.Verified {
		return fresh, nil
	}
	return fresh, errEmailUnverified
}

// errEmailUnverified is the refusal of a session whose email is not
// verified, where a route or an action needs it to be.
var errEmailUnverified = func() *ClaimError {
	expected, actual := true, false
	return newClaimError("st-ev", wire.ClaimReason{Message: "wrong value", ExpectedValue: &expected, ActualValue: &actual})
}()

// refreshEmailClaim writes the session's current state into its claim if
// the token says otherwise (or nothing).
func (a *Auth) refreshEmailClaim(ctx context.Context, w http.ResponseWriter, vt *verifiedToken, m mode, verified bool, always bool) error {
	if ev := vt.emailClaim(); !always && ev != nil && ev.Verified == verified {
		return nil
	}
	return a.rewriteAccess(ctx, w, vt, m, claimEV, emailClaim{Verified: verified, Time: a.cfg.Now().UnixMilli()}.encode())
}
