package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/latchkit/auth/internal/address"
	"github.com/latchkit/auth/internal/kit"
	"github.com/latchkit/auth/internal/wire"
	"github.com/latchkit/auth/mailer"
	"github.com/latchkit/auth/store"
)

// MFAConfig configures multi-factor authentication: the second factors a
// user may set up and must complete after signing in, before any
// protected route lets the session through. The zero value means off.
// See the package documentation, # Multi-factor authentication.
type MFAConfig struct {
	// Required are the second factors of which every user must complete
	// one after the first factor: FactorTOTP, FactorWebAuthn (which needs
	// Config.Passkeys), or both, meaning either. Empty: only the users
	// the application names with RequireFactors, and those who set up a
	// second factor (a TOTP device, or a passkey where FactorWebAuthn is
	// among Factors), must.
	Required []string

	// Factors are the second factors users may set up, beside Required:
	// with Factors alone, MFA is each user's choice (or the
	// application's, through RequireFactors). MFA is on when Required or
	// Factors is not empty.
	Factors []string

	// FirstFactors are the factors that may start a session, among the
	// configured sign-in methods (FactorEmailPassword, FactorThirdParty,
	// FactorOTPEmail, FactorLinkEmail, FactorWebAuthn, ...). Default:
	// every configured method. A sign-in by any other is refused 401.
	FirstFactors []string

	// Issuer names the application in authenticator apps (the otpauth
	// URI's issuer). Default: the host of Config.AppURL.
	Issuer string

	// WrongCodeEmail renders the notice a user gets, with a Mailer, when
	// a wrong code follows a sign-in that has not yet completed its
	// second factor: at most one in mfaLockout's 15 minutes. Default
	// DefaultWrongCodeEmail().
	WrongCodeEmail *mailer.Template
}

// The TOTP rules: RFC 6238's defaults, which every authenticator app
// uses, and the lockout SuperTokens applies.
const (
	totpPeriod = 30 * time.Second
	totpSkew   = 1 // steps either side of now's
	totpDigits = 6
	// mfaMaxFailures wrong second-factor codes in a row (TOTP and
	// recovery codes together, across sessions and instances) lock the
	// user's TOTP for mfaLockout; a right recovery code lifts the lock.
	mfaMaxFailures = 5
	mfaLockout     = 15 * time.Minute
)

func (a *Auth) mfaOn() bool { return len(a.cfg.MFA.Factors) > 0 }

func (c *MFAConfig) setDefaults(cfg *Config) error {
	for _, f := range c.Required {
		if !slices.Contains(c.Factors, f) {
			c.Factors = append(c.Factors, f)
		}
	}
	if len(c.Factors) == 0 {
		if len(c.FirstFactors) > 0 {
			return errors.New("auth: Config.MFA.FirstFactors needs second factors (MFA.Required or MFA.Factors)")
		}
		return nil
	}
	if err := c.checkFactors(cfg); err != nil {
		return err
	}
	if c.WrongCodeEmail == nil {
		t := DefaultWrongCodeEmail()
		c.WrongCodeEmail = &t
	} else if c.WrongCodeEmail.Subject == nil || c.WrongCodeEmail.Text == nil {
		return errors.New("auth: Config.MFA.WrongCodeEmail needs a Subject and a Text template")
	}
	if c.Issuer == "" {
		c.Issuer = "auth"
		if u, err := url.Parse(cfg.AppURL); err == nil && u.Host != "" {
			c.Issuer = u.Hostname()
		}
	}
	return nil
}

// checkFactors checks the second factors against what the library offers
// and cfg configures; New checks the first factors once the recipes have
// said which they offer (checkFirstFactors).
func (c *MFAConfig) checkFactors(cfg *Config) error {
	for _, f := range c.Factors {
		switch {
		case f == FactorTOTP:
		case f == FactorWebAuthn && cfg.Passkeys != nil:
		case f == FactorWebAuthn:
			return errors.New("auth: the second factor \"webauthn\" needs Config.Passkeys")
		default:
			return fmt.Errorf("auth: %q is not a second factor: use %q or %q", f, FactorTOTP, FactorWebAuthn)
		}
	}
	return nil
}

// checkFirstFactors checks the first factors against those the recipes
// offer (available), which they are by default.
func (c *MFAConfig) checkFirstFactors(available []string) error {
	if c.FirstFactors == nil {
		c.FirstFactors = slices.Clone(available)
	}
	for _, f := range c.FirstFactors {
		if !slices.Contains(available, f) {
			return fmt.Errorf("auth: Config.MFA.FirstFactors: %q is not a configured sign-in method (%v)", f, available)
		}
	}
	return nil
}

// mfaClaim is the st-mfa claim, as the SDKs read it, and a session's
// Factors in the store: the factors the session completed, each with the
// time (Unix seconds) it last did, and whether they meet what its user
// must complete. The store keeps exactly the claim's JSON, so a refresh
// puts it in the new token as it is.
type mfaClaim struct {
	Done map[string]int64 `json:"c"`
	Met  bool             `json:"v"`
	// Imp marks a session an operator started as the user (Impersonate),
	// which completed no factor and is held to none.
	Imp *impersonation `json:"imp,omitempty"`
}

// encode returns the claim's JSON: encoding/json sorts the map's keys, so
// one claim has one encoding, which the store's compare-and-swap needs.
func (c mfaClaim) encode() []byte {
	if c.Done == nil {
		c.Done = map[string]int64{}
	}
	b, _ := json.Marshal(c)
	return b
}

// decodeClaim reads a claim from a token or a session. Factor ids are
// short and plain; anything else is not a claim of ours.
func decodeClaim(b []byte) (mfaClaim, error) {
	var c mfaClaim
	if err := json.Unmarshal(b, &c); err != nil {
		return c, fmt.Errorf("auth: malformed st-mfa claim: %w", err)
	}
	for f := range c.Done {
		if len(f) == 0 || len(f) > 32 {
			return c, errors.New("auth: malformed st-mfa claim: a factor id")
		}
	}
	return c, nil
}

// requiredFactors are the factors of which the user must complete one:
// every user's, the user's own (RequireFactors), and each second factor
// the user has set up: TOTP for a verified device, WebAuthn for a passkey
// where passkeys are a second factor (Config.MFA.Factors). Whichever
// route added it, a factor set up is a factor asked for. Empty when the
// user need complete none.
func (a *Auth) requiredFactors(sf *secondFactors, logins []store.Login) []string {
	req := slices.Clone(a.cfg.MFA.Required)
	add := func(f string) {
		if !slices.Contains(req, f) {
			req = append(req, f)
		}
	}
	for _, f := range sf.Required {
		add(f)
	}
	for _, f := range sf.inTenant {
		add(f)
	}
	if sf.verifiedTOTP() {
		add(FactorTOTP)
	}
	if a.passkeyFactor() && hasPasskey(logins) {
		add(FactorWebAuthn)
	}
	return req
}

// passkeyFactor reports whether passkeys are a second factor here.
func (a *Auth) passkeyFactor() bool { return slices.Contains(a.cfg.MFA.Factors, FactorWebAuthn) }

func hasPasskey(logins []store.Login) bool {
	return slices.ContainsFunc(logins, func(l store.Login) bool { return l.Method == store.MethodWebAuthn })
}

// met reports whether done meets req: req is empty, or done has one of
// its factors, or a recovery code, which stands in for any.
func met(req []string, done map[string]int64) bool {
	if len(req) == 0 {
		return true
	}
	if _, ok := done[FactorRecoveryCode]; ok {
		return true
	}
	for _, f := range req {
		if _, ok := done[f]; ok {
			return true
		}
	}
	return false
}

// newSessionClaim is the claim of a session that first completes factor
// at now, for a user with second factors sf.
func (a *Auth) newSessionClaim(factor string, sf *secondFactors, logins []store.Login, now time.Time) []byte {
	if !a.mfaOn() {
		return nil
	}
	done := map[string]int64{factor: now.Unix()}
	return mfaClaim{Done: done, Met: met(a.requiredFactors(sf, logins), done)}.encode()
}

// factorsClaim is the st-mfa claim, in tokens while MFA is on, and
// checked on every route unless its rules allow a pending session (and
// FactorWithin is checked even while MFA is off, refusing every session).
type factorsClaim struct{ a *Auth }

func (factorsClaim) name() string { return "st-mfa" }

func (c factorsClaim) inTokens() bool { return c.a.mfaOn() }

// atSignIn is the claim the sign-in assessed, which the session keeps.
func (factorsClaim) atSignIn(_ context.Context, s store.Session, _ store.Login, _ time.Time, _ *kit.Reading) []byte {
	return s.Factors
}

func (factorsClaim) parse(raw json.RawMessage) (any, error) {
	mc, err := decodeClaim(raw)
	return &mc, err
}

func (c factorsClaim) checker(rules []Rule) claimCheck {
	mr := c.a.mfaRulesOf(rules)
	if mr.pendingMFA && len(mr.fresh) == 0 {
		return nil
	}
	return func(_ context.Context, vt *verifiedToken) ([]byte, error) {
		return nil, c.a.checkMFA(vt, mr)
	}
}

// atRefresh is the claim a refresh carries: the session's, held to
// what its user must complete as it is now, which may have grown since
// the claim was last assessed (MFAConfig.Required set at a restart,
// RequireFactors, a second factor set up from another session). It costs
// a read of the user's second factors while MFA is on, and one of their
// logins where passkeys are a second factor. A claim that
// cannot be assessed is left out, and a token without one is refused by
// protected routes until PUT /mfa/info assesses it: failing closed.
func (fc factorsClaim) atRefresh(ctx context.Context, s store.Session, _ time.Time, _ *kit.Reading) []byte {
	a := fc.a
	if len(s.Factors) == 0 {
		return nil
	}
	c, err := decodeClaim(s.Factors)
	if err == nil && c.Imp != nil {
		return s.Factors
	}
	if err == nil {
		var req []string
		if req, err = a.requiredOf(ctx, s.Tenant, s.UserID); err == nil {
			if m := met(req, c.Done); m != c.Met {
				c.Met = m
				return c.encode()
			}
			return s.Factors
		}
	}
	a.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "auth: refresh without the MFA claim",
		slog.String("user_id", s.UserID), slog.String("error", err.Error()))
	return nil
}

// requiredOf reads what the user must complete now; the user's logins
// only where a passkey may be among it.
func (a *Auth) requiredOf(ctx context.Context, tenant, userID string) ([]string, error) {
	sf, err := a.sessionFactors(ctx, tenant, userID)
	if err != nil {
		return nil, err
	}
	return a.requiredWith(ctx, userID, sf)
}

// requiredWith is requiredOf for a user whose second factors sf are read.
func (a *Auth) requiredWith(ctx context.Context, userID string, sf *secondFactors) ([]string, error) {
	var logins []store.Login
	var err error
	if a.passkeyFactor() {
		if logins, err = a.store.Logins(ctx, userID); err != nil {
			return nil, err
		}
	}
	return a.requiredFactors(sf, logins), nil
}

// mfaMet reports whether a verified token's session has met its MFA
// requirement. A token without the claim, made before MFA was on, has
// not: the SDKs then ask PUT /mfa/info, which assesses it.
func (vt *verifiedToken) mfaMet() bool {
	c := vt.factorsClaim()
	return c != nil && c.Met
}

// factorsClaim is the st-mfa claim that a verified token carries, or nil.
func (vt *verifiedToken) factorsClaim() *mfaClaim {
	c, _ := vt.parsed[claimMFA].(*mfaClaim)
	return c
}

// completeFactor records that the session of vt completed factor now,
// reassesses whether its user's requirement req is met (read after the
// factor was checked), and writes the session's new access token on w.
// Other sessions are unchanged.
func (a *Auth) completeFactor(ctx context.Context, w http.ResponseWriter, r *http.Request, vt *verifiedToken, m mode, factor string, req []string) error {
	now := a.cfg.Now()
	claim, err := a.updateClaim(ctx, vt.handle, func(c *mfaClaim) {
		c.Done[factor] = now.Unix()
		c.Met = met(req, c.Done)
	})
	if err != nil {
		return err
	}
	a.emit(ctx, r, Event{Kind: EventFactorCompleted, UserID: vt.session.UserID, SessionHandle: vt.handle, Method: factor})
	return a.rewriteAccess(ctx, w, vt, m, claimMFA, claim)
}

// updateClaim changes the claim of the session handle with change, a
// compare-and-swap retried while other changes race it, and returns the
// claim written. A session without one starts from its first factor,
// assessed at its creation.
func (a *Auth) updateClaim(ctx context.Context, handle string, change func(*mfaClaim)) ([]byte, error) {
	for range 64 {
		s, err := a.store.Session(ctx, handle, a.cfg.Now())
		if err != nil {
			return nil, sessionGone(err)
		}
		var c mfaClaim
		if len(s.Factors) > 0 {
			if c, err = decodeClaim(s.Factors); err != nil {
				return nil, err
			}
		}
		if c.Done == nil {
			c.Done = map[string]int64{}
		}
		if len(c.Done) == 0 {
			if l, err := a.loginOf(ctx, s.UserID, s.LoginID); err == nil {
				c.Done[kit.FactorOf(l, false)] = s.CreatedAt.Unix()
			}
		}
		change(&c)
		next := c.encode()
		err = a.store.UpdateSessionFactors(ctx, handle, s.Factors, next, a.cfg.Now())
		if errors.Is(err, store.ErrConflict) {
			continue
		}
		if err != nil {
			return nil, sessionGone(err)
		}
		return next, nil
	}
	return nil, fmt.Errorf("auth: the session's factors changed 64 times in a row: %w", errOverloaded)
}

// sessionGone maps a store's answer for a session that has ended to the
// 401 that ends it in the client.
func sessionGone(err error) error {
	var ended *store.EndedError
	switch {
	case errors.As(err, &ended):
		return endedError(ended.Reason)
	case errors.Is(err, store.ErrNotFound):
		return errRevoked
	}
	return err
}

// reassessSessions holds every live session of a user, but the one named
// keep, to the user's requirement req as it is now: a session whose claim
// no longer meets it is refused by protected routes from its next access
// token on (at once, where it asks PUT /mfa/info). A session that met the
// old requirement and meets the new one is left alone.
func (a *Auth) reassessSessions(ctx context.Context, userID, keep string, req []string) error {
	sessions, err := a.store.UserSessions(ctx, userID, a.cfg.Now())
	if err != nil {
		return err
	}
	for _, s := range sessions {
		if s.Handle == keep {
			continue
		}
		sreq := slices.Concat(req, a.tenantRequired(ctx, s.Tenant))
		_, err := a.updateClaim(ctx, s.Handle, func(c *mfaClaim) { c.Met = met(sreq, c.Done) })
		if err != nil && !errors.Is(err, ErrUnauthorized) {
			return err
		}
	}
	return nil
}

// RequireFactors sets the second factors of which the user must complete
// one, beside Config.MFA.Required (none: only those). New sessions are
// held to it at once, and the user's live sessions that have not
// completed one from their next access token on (a refresh, within
// Config.AccessTokenLifetime): protected routes then refuse them (403
// st-mfa) until they do. To hold them to it at once, revoke them
// (RevokeAllSessions). It returns an error
// matching ErrNotFound for an unknown user, and an error for a factor
// that is not among Config.MFA's.
func (a *Auth) RequireFactors(ctx context.Context, userID string, factors ...string) error {
	if !a.mfaOn() {
		return errors.New("auth: RequireFactors needs Config.MFA")
	}
	for _, f := range factors {
		if !slices.Contains(a.cfg.MFA.Factors, f) {
			return fmt.Errorf("auth: RequireFactors: %q is not one of Config.MFA.Factors %v", f, a.cfg.MFA.Factors)
		}
	}
	sf, err := a.changeSecondFactors(ctx, userID, func(sf *secondFactors, _ time.Time) error {
		sf.Required = slices.Clone(factors)
		return nil
	})
	if err != nil {
		return err
	}
	req, err := a.requiredWith(ctx, userID, sf)
	if err != nil {
		return err
	}
	if err := a.reassessSessions(ctx, userID, "", req); err != nil {
		return err
	}
	a.emit(ctx, nil, Event{Kind: EventFactorsRequired, UserID: userID})
	return nil
}

// A Rule that FactorWithin makes asks for a factor completed recently.
type freshFactor struct {
	factor string
	within time.Duration
}

// FactorWithin is a Rule for sensitive routes (step-up): the session must
// have completed factor within the last d, or it is refused 403 with the
// SDKs' st-mfa "invalid claim" body naming the factor, so the frontend
// can ask for it again. Several FactorWithin rules on a route must all
// hold. A session whose MFA requirement is not met is refused before any
// FactorWithin is looked at. Without Config.MFA, sessions complete no
// factors and the route refuses every one. A recovery code completes
// "recovery-code", not the factor it stands in for: a route that asks
// for TOTP within five minutes asks a user who lost their app to set up
// another.
func FactorWithin(factor string, d time.Duration) Rule {
	return kit.NewRule("st-mfa", freshFactor{factor, d})
}

// AllowPendingMFA exempts a route from the MFA requirement, for the
// pages a signed-in user must reach before completing it, such as one
// that explains what to set up. SDK endpoints that set up and complete
// factors are exempt already.
func AllowPendingMFA() Rule { return kit.NewRule("st-mfa", allowPending{}) }

// allowPending is the argument of AllowPendingMFA's rule.
type allowPending struct{}

// mfaRules is what a route's rules ask of the st-mfa claim.
type mfaRules struct {
	pendingMFA bool          // let a session through before its requirement is met
	fresh      []freshFactor // FactorWithin's
}

// mfaRulesOf reads a route's rules: a session is held to its requirement
// while MFA is on, unless a rule allows it pending.
func (a *Auth) mfaRulesOf(rules []Rule) mfaRules {
	mr := mfaRules{pendingMFA: !a.mfaOn()}
	for _, r := range rules {
		switch arg := r.Arg().(type) {
		case freshFactor:
			mr.fresh = append(mr.fresh, arg)
		case allowPending:
			mr.pendingMFA = true
		}
	}
	return mr
}

// checkMFA passes a session that meets its MFA requirement and the
// route's FactorWithin rules.
func (a *Auth) checkMFA(vt *verifiedToken, rules mfaRules) error {
	if !rules.pendingMFA && !vt.mfaMet() {
		return errMFAPending
	}
	now := a.cfg.Now()
	for _, f := range rules.fresh {
		var at int64
		ok := false
		if c := vt.factorsClaim(); c != nil {
			at, ok = c.Done[f.factor]
		}
		if !ok || now.Sub(time.Unix(at, 0)) > f.within {
			return newClaimError("st-mfa", wire.ClaimReason{
				Message:  "Factor validation failed: " + f.factor + " not completed within " + strconv.Itoa(int(f.within/time.Second)) + " seconds",
				FactorID: f.factor,
			})
		}
	}
	return nil
}

// mayAddFactor reports whether a session, met if it has met its
// requirement, may set up factor for
// its user, whose second factors are sf and logins logins: it has met its
// requirement, or factor is one the user may complete and the user has
// set up none of those yet (so a stolen password cannot add a device to
// pass in place of the one the user has).
func (a *Auth) mayAddFactor(met bool, factor string, sf *secondFactors, logins []store.Login) bool {
	if met {
		return true
	}
	req := a.requiredFactors(sf, logins)
	if !slices.Contains(req, factor) {
		return false
	}
	for _, f := range req {
		if slices.Contains(factorsSetUp(sf, logins), f) {
			return false
		}
	}
	return true
}

// factorsSetUp are the factors a user can complete now.
func factorsSetUp(sf *secondFactors, logins []store.Login) []string {
	var set []string
	add := func(f string) {
		if !slices.Contains(set, f) {
			set = append(set, f)
		}
	}
	for _, l := range logins {
		add(kit.FactorOf(l, false))
	}
	if sf.verifiedTOTP() {
		add(FactorTOTP)
	}
	return set
}

// sessionForFactors verifies the session of a request to an endpoint that
// sets up or completes factors, which a session that has not met its
// requirement must reach (SuperTokens loads the session there with its
// claim validators off), and reads the user's logins and second factors.
// It answers the request itself when it fails.
func (a *Auth) sessionForFactors(w http.ResponseWriter, r *http.Request) (vt *verifiedToken, m mode, logins []store.Login, sf *secondFactors, ok bool) {
	vt, m, err := a.verifyRequest(r)
	if err == nil {
		logins, err = a.store.Logins(r.Context(), vt.session.UserID)
	}
	if err == nil {
		sf, err = a.sessionFactors(r.Context(), vt.session.TenantID, vt.session.UserID)
	}
	if err == nil && len(logins) == 0 {
		err = errRevoked // the user is gone
	}
	if err != nil {
		a.failSession(w, r, err)
		return nil, 0, nil, nil, false
	}
	return vt, m, logins, sf, true
}

// handleMFAInfo is PUT /mfa/info: what the session must still complete
// and what its user may set up, and the session's claim, assessed anew
// and rewritten into its access token if it changed.
func (a *Auth) handleMFAInfo(w http.ResponseWriter, r *http.Request) {
	vt, m, logins, sf, ok := a.sessionForFactors(w, r)
	if !ok {
		return
	}
	req := a.requiredFactors(sf, logins)
	c, ok := a.reassessed(w, r, vt, m, req)
	if !ok {
		return
	}
	f := a.factorsOf(c, req, sf, logins)
	emails, phones := contactsOf(logins)
	wire.JSON(w, http.StatusOK, struct {
		Status       string              `json:"status"`
		Factors      mfaFactors          `json:"factors"`
		Emails       map[string][]string `json:"emails"`
		PhoneNumbers map[string][]string `json:"phoneNumbers"`
	}{"OK", f, emails, phones})

}

// reassessed holds the session of vt to req, rewrites its access token if
// its claim changed, and returns the claim; or answers the request.
func (a *Auth) reassessed(w http.ResponseWriter, r *http.Request, vt *verifiedToken, m mode, req []string) (mfaClaim, bool) {
	ctx := r.Context()
	claim, err := a.updateClaim(ctx, vt.handle, func(c *mfaClaim) { c.Met = met(req, c.Done) })
	if err != nil {
		a.failSession(w, r, err)
		return mfaClaim{}, false
	}
	if old := vt.claims[claimMFA]; old == nil || string(claim) != string(old) {
		if err := a.rewriteAccess(ctx, w, vt, m, claimMFA, claim); err != nil {
			a.fail(w, r, err)
			return mfaClaim{}, false
		}
	}
	c, _ := decodeClaim(claim)
	return c, true
}

// mfaFactors are /mfa/info's factors: what the session must still
// complete (one of Next), what its user has set up, and what it may set
// up. None is null: the SDKs read each as a list.
type mfaFactors struct {
	Next           []string `json:"next"`
	AlreadySetup   []string `json:"alreadySetup"`
	AllowedToSetup []string `json:"allowedToSetup"`
}

// factorsOf are the factors of a session with claim c, whose user must
// complete one of req.
func (a *Auth) factorsOf(c mfaClaim, req []string, sf *secondFactors, logins []store.Login) mfaFactors {
	f := mfaFactors{Next: []string{}, AlreadySetup: factorsSetUp(sf, logins), AllowedToSetup: []string{}}
	if f.AlreadySetup == nil {
		f.AlreadySetup = []string{}
	}
	for _, id := range a.cfg.MFA.Factors {
		if a.mayAddFactor(c.Met, id, sf, logins) {
			f.AllowedToSetup = append(f.AllowedToSetup, id)
		}
	}
	if c.Met {
		return f
	}
	for _, id := range req {
		if slices.Contains(f.AlreadySetup, id) || slices.Contains(f.AllowedToSetup, id) {
			f.Next = append(f.Next, id)
		}
	}
	return f
}

// contactsOf are /mfa/info's addresses and phone numbers of the user, by
// the factor that would use them. auth-react offers a passkey second
// factor for the first address of its factor ("Continue with ..."), as
// SuperTokens lists it.
func contactsOf(logins []store.Login) (emails, phones map[string][]string) {
	emails = map[string][]string{FactorEmailPassword: {}, FactorOTPEmail: {}, FactorLinkEmail: {}, FactorWebAuthn: {}}
	phones = map[string][]string{FactorOTPPhone: {}, FactorLinkPhone: {}}
	for _, l := range logins {
		if l.Email != "" {
			for f := range emails {
				if !slices.Contains(emails[f], l.Email) {
					emails[f] = append(emails[f], l.Email)
				}
			}
		}
		if l.Method == store.MethodPasswordless && address.IsPhone(l.Subject) {
			for f := range phones {
				phones[f] = append(phones[f], l.Subject)
			}
		}
	}
	return emails, phones
}

// mfaRoutes adds the MFA endpoints to routes.
func (a *Auth) mfaRoutes(routes map[string]kit.Route) {
	if !a.mfaOn() {
		return
	}
	post := func(h http.HandlerFunc) kit.Route { return kit.Route{Method: http.MethodPost, Handle: h} }
	routes["/mfa/info"] = kit.Route{Method: http.MethodPut, Handle: a.handleMFAInfo}
	routes["/mfa/recovery-codes"] = kit.Route{Method: http.MethodPost, Handle: a.handleNewRecoveryCodes, Get: a.handleCountRecoveryCodes}
	routes["/mfa/recovery-code/verify"] = post(a.handleVerifyRecoveryCode)
	if slices.Contains(a.cfg.MFA.Factors, FactorTOTP) {
		routes["/totp/device"] = post(a.handleCreateTOTPDevice)
		routes["/totp/device/list"] = kit.Route{Method: http.MethodGet, Handle: a.handleListTOTPDevices}
		routes["/totp/device/remove"] = post(a.handleRemoveTOTPDevice)
		routes["/totp/device/verify"] = post(a.handleVerifyTOTPDevice)
		routes["/totp/verify"] = post(a.handleVerifyTOTP)
	}
}

// factorAdded holds the user's other sessions to a factor that the
// session of vt just added (a passkey), as a TOTP device set up is:
// req is what the user must complete from now on.
func (a *Auth) factorAdded(r *http.Request, vt *verifiedToken, req []string) {
	ctx, userID := r.Context(), vt.session.UserID
	a.emit(ctx, r, Event{Kind: EventFactorAdded, UserID: userID, SessionHandle: vt.handle, Method: FactorWebAuthn})
	if err := a.reassessSessions(ctx, userID, vt.handle, req); err != nil {
		a.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "auth: could not hold the user's other sessions to their new factor",
			slog.String("user_id", userID), slog.String("error", err.Error()))
	}
}

// sessionFactors reads the second factors of the user userID for a
// session in tenant, which may require more of them.
func (a *Auth) sessionFactors(ctx context.Context, tenant, userID string) (*secondFactors, error) {
	sf, err := a.secondFactors(ctx, userID)
	if err == nil {
		sf.inTenant = a.tenantRequired(ctx, tenant)
	}
	return sf, err
}

// factorUnavailable is a factor no session completes: what a session
// whose tenant's rules cannot be read is held to, failing closed.
const factorUnavailable = "tenant-unavailable"

// tenantRequired are the second factors tenant (either spelling of its
// id) requires of every session in it.
func (a *Auth) tenantRequired(ctx context.Context, tenant string) []string {
	id := store.TenantID(tenant)
	if id == PublicTenant {
		return nil
	}
	t, err := a.tenant(ctx, id)
	if err != nil {
		return []string{factorUnavailable}
	}
	return t.RequiredSecondFactors
}
