package auth

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/latchkit/auth/emailchange"
	"github.com/latchkit/auth/emailpassword"
	"github.com/latchkit/auth/emailverification"
	"github.com/latchkit/auth/internal/kit"
	"github.com/latchkit/auth/internal/wire"
	"github.com/latchkit/auth/mailer"
	"github.com/latchkit/auth/passwordless"
	"github.com/latchkit/auth/store"
	"github.com/latchkit/auth/thirdparty"
)

// thirdPartyOn reports whether cfg asks for sign-in with providers: its
// own, or a tenant's, which need AppURL, whose origin their redirect URIs
// are checked against.
func thirdPartyOn(cfg *Config) bool {
	return len(cfg.ThirdParty.Providers) > 0 || (cfg.Tenants.Enabled && cfg.AppURL != "")
}

// buildRecipes makes the recipes in packages of their own that the Config
// turns on, each with the kernel as its seam.
func (a *Auth) buildRecipes() error {
	cfg, k := &a.cfg, kernel{a}
	setup := kit.Setup{AppURL: cfg.AppURL, BasePath: cfg.BasePath, CanMail: cfg.Email.Mailer != nil,
		DisableEmailExists: cfg.DisableEmailExists, AccountLinking: cfg.AccountLinking,
		FrontendOrigins: a.frontendOrigins, InsecureHTTP: cfg.Cookie.InsecureAllowHTTP,
		MFA: a.mfaOn(), PasskeyFactor: a.passkeyFactor(), Rates: cfg.RateLimits.byName(),
		CheckSessionInStore: cfg.CheckSessionInStore}
	var err error
	if a.emailPassword, err = emailpassword.New(k, cfg.EmailPassword, setup,
		emailpassword.Limits{ClientNewPasswords: kit.Rate(cfg.RateLimits.ClientNewPasswords)}); err != nil {
		return err
	}
	if thirdPartyOn(cfg) {
		if a.thirdParty, err = thirdparty.New(k, cfg.ThirdParty, setup, kit.Rate(cfg.RateLimits.ClientThirdPartySignIns)); err != nil {
			return err
		}
	}
	if cfg.Passwordless.Flow != passwordless.Off {
		limits := passwordless.Limits{Sends: kit.Rate(cfg.RateLimits.PasswordlessSends),
			ClientSends: kit.Rate(cfg.RateLimits.ClientPasswordlessSends), Failures: kit.Rate(cfg.RateLimits.PasswordlessFailures)}
		if a.passwordless, err = passwordless.New(k, cfg.Passwordless, setup, limits); err != nil {
			return err
		}
	}
	if cfg.Passkeys != nil {
		if a.passkeyRoutes, err = cfg.Passkeys.Build(k, setup); err != nil {
			return err
		}
	}
	if cfg.EmailVerification.Mode != emailverification.Off {
		if a.verification, err = emailverification.New(k, cfg.EmailVerification, setup, kit.Rate(cfg.RateLimits.VerificationEmails)); err != nil {
			return err
		}
	}
	if cfg.EmailChange.Enabled {
		if a.emailChange, err = emailchange.New(k, cfg.EmailChange, setup, kit.Rate(cfg.RateLimits.VerificationEmails)); err != nil {
			return err
		}
	}
	if err := a.cfg.MFA.checkFirstFactors(a.available); err != nil {
		return err
	}
	// Last: the one recipe that binds itself to this Auth.
	if cfg.Roles != nil {
		if _, err = cfg.Roles.Build(k, setup); err != nil {
			return err
		}
	}
	// After Roles: the dashboard manages them.
	return a.buildDashboard(k, setup)
}

// A Recipe is a way to sign in that a package of its own builds, for a
// Config field of this type: Config.Passkeys takes passkey.New(...),
// Config.Roles roles.New(...). Its
// method takes the kernel's internal seam, so only this module's
// packages make one. New calls Build once, and mounts the routes it
// returns.
type Recipe interface {
	Build(k kit.Kernel, setup kit.Setup) (map[string]kit.Route, error)
}

// kernel is the Auth as a recipe sees it (kit.Kernel).
type kernel struct{ a *Auth }

// kitSession is a verified session as a recipe sees it: the token, and
// the transfer mode of the request it came with, for a rewrite.
type kitSession struct {
	vt      *verifiedToken
	m       mode
	pending bool // MFA is on and the session has not met its requirement
}

func (k kernel) session(vt *verifiedToken, m mode) kitSession {
	return kitSession{vt, m, k.a.mfaOn() && !vt.mfaMet()}
}

func (s kitSession) UserID() string       { return s.vt.session.UserID }
func (s kitSession) LoginID() string      { return s.vt.session.LoginID }
func (s kitSession) Tenant() string       { return s.vt.session.TenantID }
func (s kitSession) FactorsPending() bool { return s.pending }

// factorSession is a session that sets up or completes a second factor,
// with its user's logins and second factors (empty with MFA off).
type factorSession struct {
	kitSession
	a      *Auth
	logins []store.Login
	sf     *secondFactors
}

func (s *factorSession) Logins() []store.Login { return s.logins }

func (s *factorSession) MayAdd(factor string) bool {
	return !s.a.mfaOn() || s.a.mayAddFactor(!s.pending, factor, s.sf, s.logins)
}

func (k kernel) Store() store.Store   { return k.a.store }
func (k kernel) Now() time.Time       { return k.a.cfg.Now() }
func (k kernel) Logger() *slog.Logger { return k.a.cfg.Logger }
func (k kernel) Fail(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, kit.ErrUserGone) {
		err = errRevoked
	}
	k.a.fail(w, r, err)
}

func (k kernel) ReadJSON(w http.ResponseWriter, r *http.Request, v any) error {
	return k.a.readJSON(w, r, v)
}

func (k kernel) ReadOptionalJSON(w http.ResponseWriter, r *http.Request, v any) error {
	return k.a.readOptionalJSON(w, r, v)
}

func (k kernel) Session(w http.ResponseWriter, r *http.Request) (kit.Session, bool) {
	vt, m, err := k.a.verifyRequest(r)
	if err != nil {
		k.a.failSession(w, r, err)
		return nil, false
	}
	return k.session(vt, m), true
}

func (k kernel) SessionLogin(w http.ResponseWriter, r *http.Request) (kit.Session, store.Login, bool) {
	vt, m, err := k.a.verifyRequest(r)
	if err == nil {
		var l store.Login
		l, err = k.a.loginOf(r.Context(), vt.session.UserID, vt.session.LoginID)
		if errors.Is(err, store.ErrNotFound) {
			err = errRevoked // the user, or the login, is gone
		}
		if err == nil {
			return k.session(vt, m), l, true
		}
	}
	k.a.failSession(w, r, err)
	return nil, store.Login{}, false
}

func (k kernel) FactorSession(w http.ResponseWriter, r *http.Request) (kit.FactorSession, bool) {
	if k.a.mfaOn() {
		vt, m, logins, sf, ok := k.a.sessionForFactors(w, r)
		if !ok || k.a.refuseImpersonation(w, vt) {
			return nil, false
		}
		return &factorSession{k.session(vt, m), k.a, logins, sf}, true
	}
	vt, m, err := k.a.verifyRequest(r)
	var logins []store.Login
	if err == nil {
		logins, err = k.a.store.Logins(r.Context(), vt.session.UserID)
	}
	if err != nil {
		k.a.failSession(w, r, err)
		return nil, false
	}
	if k.a.refuseImpersonation(w, vt) {
		return nil, false
	}
	return &factorSession{k.session(vt, m), k.a, logins, &secondFactors{}}, true
}

func (k kernel) FactorAdded(r *http.Request, s kit.FactorSession, l store.Login) {
	fs := s.(*factorSession)
	fs.logins = append(fs.logins, l)
	k.a.factorAdded(r, fs.vt, k.a.requiredFactors(fs.sf, fs.logins))
}

func (k kernel) CompleteFactor(w http.ResponseWriter, r *http.Request, s kit.FactorSession, factor string, by *store.Login) {
	fs := s.(*factorSession)
	ctx := r.Context()
	if err := k.a.completeFactor(ctx, w, r, fs.vt, fs.m, factor, k.a.requiredFactors(fs.sf, fs.logins)); err != nil {
		k.a.failSession(w, r, err)
		return
	}
	if by == nil {
		wire.JSON(w, http.StatusOK, wire.OK)
		return
	}
	u, logins, err := k.a.user(ctx, fs.vt.session.UserID)
	if err != nil {
		k.a.fail(w, r, err)
		return
	}
	writeUser(w, r, u, logins, *by, nil, bodyTokens{}, k.a.cfg.AccountLinking && wire.Primary(logins))
}

func (k kernel) SignedIn(w http.ResponseWriter, r *http.Request, p kit.Proven) {
	k.a.provenSignedIn(w, r, p)
}

func (k kernel) RemoveLogin(ctx context.Context, r *http.Request, userID, loginID string) error {
	handles, err := k.a.removeLogin(ctx, userID, loginID)
	for _, h := range handles {
		k.a.emit(ctx, r, Event{Kind: EventSessionRevoked, UserID: userID, SessionHandle: h})
	}
	return err
}

func (k kernel) Evict(ctx context.Context, r *http.Request, l store.Login) error {
	return k.a.evict(ctx, r, l)
}

func (k kernel) QueueAccountEmail(w http.ResponseWriter, r *http.Request, kind, email string, send func(context.Context, string)) {
	k.a.queueAccountEmail(w, r, kind, email, send)
}

func (k kernel) AnswerExists(w http.ResponseWriter, r *http.Request, valid bool, found func(context.Context) (bool, error)) {
	k.a.answerExists(w, r, valid, found)
}

func (k kernel) OptionalSession(w http.ResponseWriter, r *http.Request) (kit.Session, bool) {
	vt, m, err := k.a.verifyRequest(r)
	switch err {
	case nil:
		return k.session(vt, m), true
	case errNoToken:
		return nil, true
	}
	k.a.failSession(w, r, err)
	return nil, false
}

func (k kernel) SetEmailClaim(ctx context.Context, w http.ResponseWriter, s kit.Session, verified, always bool) error {
	ks := s.(kitSession)
	return k.a.refreshEmailClaim(ctx, w, ks.vt, ks.m, verified, always)
}

func (k kernel) EmailVerified(ctx context.Context, l store.Login) { k.a.afterVerified(ctx, l) }

func (k kernel) Take(ctx context.Context, limits ...kit.Limit) time.Duration {
	return k.a.take(ctx, limitsOf(limits)...)
}

// limitsOf are a recipe's allowances as the kernel's.
func limitsOf(limits []kit.Limit) []limit {
	ls := make([]limit, len(limits))
	for i, l := range limits {
		ls[i] = limit{l.Key, Rate(l.Rate)}
	}
	return ls
}

func (k kernel) Enqueue(ctx context.Context, kind string, job func(context.Context)) {
	k.a.outbox.enqueue(k.a, mailJob{kind, context.WithoutCancel(ctx), job})
}

func (k kernel) Mail(ctx context.Context, t *mailer.Template, to string, data any) error {
	return k.a.mail(ctx, t, to, data)
}

func (k kernel) MailFailed(ctx context.Context, kind, userID, step string, err error) {
	k.a.mailFailed(ctx, kind, userID, step, err)
}

func (k kernel) Emit(ctx context.Context, r *http.Request, e kit.Event) {
	k.a.emit(ctx, r, Event{Kind: EventKind(e.Kind), UserID: e.UserID, SessionHandle: e.SessionHandle,
		Method: e.Method, ThirdPartyID: e.ThirdPartyID, Role: e.Role})
}

func (k kernel) ReadSignInRequest(w http.ResponseWriter, r *http.Request, req kit.SignInRequest) bool {
	return k.a.readSignInRequest(w, r, req)
}

func (k kernel) SignIn(w http.ResponseWriter, r *http.Request, s kit.SignIn) { k.a.signInUp(w, r, s) }

func (k kernel) LookupParam(w http.ResponseWriter, r *http.Request, name string) (string, bool) {
	return k.a.lookupParam(w, r, name)
}

func (k kernel) WriteExists(w http.ResponseWriter, r *http.Request, key store.LoginKey, valid bool) {
	k.a.writeExists(w, r, key, valid)
}

func (k kernel) Client(r *http.Request) string { return k.a.limitClient(r) }

func (k kernel) Refund(ctx context.Context, limits ...kit.Limit) {
	k.a.refund(ctx, limitsOf(limits)...)
}

func (k kernel) Retry(ctx context.Context, send func(context.Context) error) error {
	return k.a.outbox.retry(ctx, send)
}

func (k kernel) FirstFactorAllowed(w http.ResponseWriter, r *http.Request, factor string) bool {
	return k.a.firstFactorAllowed(w, r, factor)
}

func (k kernel) Tenant(ctx context.Context) *kit.Tenant { return k.a.tenantOf(ctx) }

func (k kernel) SessionTenant(ctx context.Context, s kit.Session) *kit.Tenant {
	return k.a.sessionTenant(ctx, s.Tenant())
}

func (k kernel) FirstUse(ctx context.Context, key string, memory time.Duration) bool {
	wait, err := k.a.cfg.Limiter.Take(ctx, key, Rate{Burst: 1, Every: memory}, k.a.cfg.Now())
	if err != nil {
		k.a.limiterFailed(ctx, err)
		return false
	}
	return wait == 0
}

func (k kernel) MACKey(ctx context.Context, purpose string) (string, []byte, error) {
	key, err := k.a.keys.signer(ctx)
	if err != nil {
		return "", nil, err
	}
	return key.id, key.derived(purpose), nil
}

func (k kernel) MACKeyByID(ctx context.Context, id, purpose string) ([]byte, bool) {
	key, ok := k.a.keys.verifier(ctx, id)
	if !ok {
		return nil, false
	}
	return key.derived(purpose), true
}

func (k kernel) FirstFactors(factors ...string) {
	k.a.available = append(k.a.available, factors...)
}

func (k kernel) RegisterClaim(c kit.Claim) error {
	return k.a.registerClaim(recipeClaim{c, len(k.a.claims)})
}

func (k kernel) RolesWithRotation(tenant string) { k.a.rotationRoles = tenant }

func (k kernel) ReadForm(w http.ResponseWriter, r *http.Request, msg string) bool {
	if err := k.a.capBody(w, r); err != nil {
		k.a.fail(w, r, err)
		return false
	}
	if err := r.ParseForm(); err != nil {
		if bodyTooLarge(err) {
			k.a.fail(w, r, errBodyTooLarge)
			return false
		}
		wire.Message(w, http.StatusBadRequest, msg)
		return false
	}
	return true
}

func (k kernel) TakeSignIn(r *http.Request, email string) (func(kit.AttemptOutcome), time.Duration) {
	ctx := r.Context()
	att, wait := k.a.takeSignIn(ctx, email, k.a.limitClient(r))
	return func(o kit.AttemptOutcome) { k.a.settleSignIn(ctx, att, o) }, wait
}

func (k kernel) SignUpAllowed(w http.ResponseWriter, r *http.Request, email, notAllowed, reason string) bool {
	ctx := r.Context()
	if refused, err := k.a.signUpRefused(ctx, email); err != nil {
		k.a.fail(w, r, err)
		return false
	} else if refused {
		wire.NotAllowed(w, notAllowed, reason)
		return false
	}
	// Load the signing key before the user exists, so that a store
	// failure there cannot leave an account without its first session.
	if _, err := k.a.keys.signer(ctx); err != nil {
		k.a.fail(w, r, err)
		return false
	}
	return true
}

func (k kernel) ObserveHashWait(d time.Duration) {
	if k.a.cfg.Metrics != nil {
		k.a.cfg.Metrics.ObserveHashWait(d)
	}
}

func (k kernel) AccountSession(w http.ResponseWriter, r *http.Request) (kit.FactorSession, bool) {
	fs, ok := k.accountSession(w, r)
	if !ok {
		return nil, false
	}
	return fs, true
}

func (k kernel) SignedInRecently(w http.ResponseWriter, r *http.Request, s kit.Session) bool {
	return k.a.signedInRecently(w, r, kitSessionOf(s).vt)
}

func (k kernel) AddressesVerified(w http.ResponseWriter, s kit.FactorSession) bool {
	return k.a.addressesVerified(w, s.Logins())
}

func (k kernel) EndOtherSessions(w http.ResponseWriter, r *http.Request, s kit.Session) {
	ks := kitSessionOf(s)
	if k.a.refuseImpersonation(w, ks.vt) {
		return
	}
	k.a.carryOn(w, r, ks.vt, ks.m)
}

// kitSessionOf is the kernel's session behind one a recipe holds.
func kitSessionOf(s kit.Session) kitSession {
	if fs, ok := s.(*factorSession); ok {
		return fs.kitSession
	}
	return s.(kitSession)
}
