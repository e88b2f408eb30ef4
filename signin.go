package auth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/latchkit/auth/internal/kit"
	"github.com/latchkit/auth/internal/wire"
	"github.com/latchkit/auth/store"
)

// The sign-in path every way to sign in ends in: which factors may start
// a session, the factor a sign-in completed, and signedIn, which starts
// the session and answers.

// The factors a session can complete, named as the SDKs name them (the
// keys of the st-mfa claim's "c"). FactorRecoveryCode is the library's
// own: the SuperTokens frontends know no recovery codes.
const (
	FactorEmailPassword = kit.FactorEmailPassword
	FactorThirdParty    = kit.FactorThirdParty
	FactorOTPEmail      = kit.FactorOTPEmail
	FactorLinkEmail     = kit.FactorLinkEmail
	FactorOTPPhone      = kit.FactorOTPPhone
	FactorLinkPhone     = kit.FactorLinkPhone
	FactorWebAuthn      = kit.FactorWebAuthn
	FactorTOTP          = kit.FactorTOTP
	FactorRecoveryCode  = kit.FactorRecoveryCode
)

// firstFactors are the factors that may start a session: those the
// recipes offer (kit.Kernel's FirstFactors), or with MFA on the ones
// among them that Config.MFA.FirstFactors names.
func (a *Auth) firstFactors() []string {
	if a.mfaOn() {
		return a.cfg.MFA.FirstFactors
	}
	return a.available
}

// tenantFirstFactors are the factors that may start a session in t: its
// own, or the deployment's, but sign-in with a provider where it has
// none.
func (a *Auth) tenantFirstFactors(t *kit.Tenant) []string {
	if t.FirstFactors != nil {
		return t.FirstFactors
	}
	ff := a.firstFactors()
	if len(t.Providers) == 0 && slices.Contains(ff, FactorThirdParty) {
		ff = slices.DeleteFunc(slices.Clone(ff), func(f string) bool { return f == FactorThirdParty })
	}
	return ff
}

// firstFactorAllowed answers 401 and reports false when factor may not
// start a session in the request's tenant.
func (a *Auth) firstFactorAllowed(w http.ResponseWriter, r *http.Request, factor string) bool {
	if slices.Contains(a.tenantFirstFactors(a.requestTenant(r)), factor) {
		return true
	}
	wire.Message(w, http.StatusUnauthorized, "A valid session is required to authenticate with secondary factors")
	return false
}

// signedIn starts a session for u, who has just proved who they are with
// the login by, and answers the sign-in: the user object, and the tokens
// in the transfer mode the request asks for. Every sign-in route ends
// here. factor is the factor the sign-in completed (see factorOf), and
// notAllowed the status that refuses it, for a banned user.
func (a *Auth) signedIn(w http.ResponseWriter, r *http.Request, u store.User, logins []store.Login, by store.Login, created *bool, factor, notAllowed string) {
	if !a.memberOrRefused(w, r, u.ID, by, notAllowed) {
		return
	}
	var claim []byte
	if a.mfaOn() {
		sf, err := a.sessionFactors(r.Context(), by.Tenant, u.ID)
		if err != nil {
			a.fail(w, r, err)
			return
		}
		claim = a.newSessionClaim(factor, sf, logins, a.cfg.Now())
	}
	s, tokens, err := a.createSession(r.Context(), w, r, u.ID, by, claim)
	if errors.Is(err, store.ErrSessionsEnded) {
		// A password reset, or the end of every session, came between
		// the check of the credential and now: the session it would
		// have started is one the reset never saw.
		a.cfg.Logger.LogAttrs(r.Context(), slog.LevelInfo, "auth: sign-in refused: the user's sessions were ended meanwhile",
			slog.String("user_id", u.ID))
		wire.GeneralError(w, msgSessionsEnded)
		return
	}
	if errors.Is(err, store.ErrBanned) {
		a.refuseBanned(w, r, by, notAllowed)
		return
	}
	if err != nil {
		a.fail(w, r, err)
		return
	}
	a.emit(r.Context(), r, Event{Kind: EventSignIn, UserID: u.ID, SessionHandle: s.Handle, Method: by.Method, ThirdPartyID: kit.ProviderOf(by)})
	writeUser(w, r, u, logins, by, created, tokens, a.cfg.AccountLinking && wire.Primary(logins))
}

// msgSessionsEnded answers a sign-in whose credential was checked before
// a password reset, or the end of every session, that came before its
// session could start.
const msgSessionsEnded = "Your sessions were ended while you were signing in. Please sign in again."

// handleLoginMethods tells the frontend which login methods are on.
func (a *Auth) handleLoginMethods(w http.ResponseWriter, r *http.Request) {
	type enabled struct {
		Enabled bool `json:"enabled"`
	}
	type wireProvider struct {
		ID   string `json:"id"`
		Name string `json:"name,omitempty"`
	}
	type thirdParty struct {
		Enabled   bool           `json:"enabled"`
		Providers []wireProvider `json:"providers"`
	}
	t := a.requestTenant(r)
	factors := a.tenantFirstFactors(t)
	// A recipe is on where the tenant names one of its factors first, or,
	// for a tenant that names none, where it is configured: with MFA, a
	// method that is only a second factor is still on for the frontend.
	on := func(fs ...string) bool {
		if t.FirstFactors == nil {
			return a.recipeOn(t, fs[0])
		}
		return slices.ContainsFunc(factors, func(f string) bool { return slices.Contains(fs, f) })
	}
	tp := thirdParty{Providers: []wireProvider{}, Enabled: on(FactorThirdParty)}
	if tp.Enabled {
		for _, p := range t.Providers {
			tp.Providers = append(tp.Providers, wireProvider{p.ID(), p.Name()})
		}
	}
	wire.JSON(w, http.StatusOK, struct {
		Status        string     `json:"status"`
		EmailPassword enabled    `json:"emailPassword"`
		ThirdParty    thirdParty `json:"thirdParty"`
		Passwordless  enabled    `json:"passwordless"`
		WebAuthn      enabled    `json:"webauthn"`
		FirstFactors  []string   `json:"firstFactors"`
	}{"OK", enabled{on(FactorEmailPassword)}, tp, enabled{on(FactorOTPEmail, FactorLinkEmail, FactorOTPPhone, FactorLinkPhone)},
		enabled{on(FactorWebAuthn)}, factors})

}

// recipeOn reports whether the recipe of factor is configured, for t.
func (a *Auth) recipeOn(t *kit.Tenant, factor string) bool {
	switch factor {
	case FactorEmailPassword:
		return true
	case FactorThirdParty:
		return len(t.Providers) > 0
	case FactorWebAuthn:
		return a.cfg.Passkeys != nil
	}
	return a.passwordless != nil
}

// signInUp signs in, or up, the holder of s.Login, whom a recipe has
// checked, and answers the request: the one path by which a recipe in a
// package of its own starts a session (kit.Kernel's SignIn).
func (a *Auth) signInUp(w http.ResponseWriter, r *http.Request, s kit.SignIn) {
	// The login is the request's tenant's, whatever the recipe built.
	s.Login.LoginKey = a.requestTenant(r).Key(s.Login.LoginKey)
	if s.LinkToSession {
		a.linkToSession(w, r, s)
		return
	}
	if !a.firstFactorAllowed(w, r, s.Factor) {
		return
	}
	ctx := r.Context()
	now := a.cfg.Now().Truncate(time.Millisecond)
	newUser := store.User{ID: s.UserID, TimeJoined: now}
	if newUser.ID == "" {
		newUser.ID = uuid.NewString()
	}
	nl := s.Login
	nl.CreatedAt = now
	var (
		res linked
		err error
	)
	if a.cfg.AccountLinking && nl.Email != "" {
		res, err = a.signInUpLinking(ctx, r, nl, newUser)
		if err == nil && res.refusal != "" {
			reason := s.Reason
			if reason == "" {
				reason = res.refusal
			}
			wire.NotAllowed(w, s.NotAllowed, reason)
			return
		}
	} else {
		res, err = a.signInUpAlone(ctx, nl, newUser)
	}
	if err != nil {
		a.fail(w, r, fmt.Errorf("auth: %s: %w", s.What, err))
		return
	}
	if res.created && res.user.ID == newUser.ID {
		a.emit(ctx, r, Event{Kind: EventSignUp, UserID: res.user.ID, Method: nl.Method, ThirdPartyID: kit.ProviderOf(nl)})
	}
	created := &res.created
	if s.NoCreated {
		created = nil
	}
	a.signedIn(w, r, res.user, res.logins, res.login, created, s.Factor, s.NotAllowed)
}

// provenSignedIn starts a session for the holder of p.Login, a login
// that exists and has just proved itself, unless account linking refuses
// it (it does not prove an address another user holds), and answers:
// kit.Kernel's SignedIn. Like signInUp, it holds the factor to the first
// factors, whatever the recipe checked before its own work.
func (a *Auth) provenSignedIn(w http.ResponseWriter, r *http.Request, p kit.Proven) {
	if !a.firstFactorAllowed(w, r, p.Factor) {
		return
	}
	if p.Login.Tenant != a.requestTenant(r).StoreID() {
		// A recipe found the login in another tenant: a slip that must
		// not open this one.
		a.fail(w, r, fmt.Errorf("auth: a login of tenant %q proved itself in tenant %q", store.TenantID(p.Login.Tenant), a.requestTenant(r).ID))
		return
	}
	ctx := r.Context()
	u, logins, l := p.User, p.Logins, p.Login
	if conflict, err := a.signInConflicts(ctx, l); err != nil {
		a.fail(w, r, err)
		return
	} else if conflict {
		wire.NotAllowed(w, p.NotAllowed, p.Reason)
		return
	}
	var err error
	if logins == nil {
		if u, logins, l, err = a.userOfLogin(ctx, l); err != nil {
			a.fail(w, r, err)
			return
		}
	}
	if a.cfg.AccountLinking && l.EmailProven && !kit.OwnedWithin(logins, l.Email) {
		// A reset proved the address but could not claim it (a fault,
		// or another owner since gone): claim it now, as a provider's
		// sign-in would.
		if owned := a.afterVerified(ctx, l); owned.OwnsEmail {
			if u, logins, l, err = a.userOfLogin(ctx, l); err != nil {
				a.fail(w, r, err)
				return
			}
		}
	}
	a.signedIn(w, r, u, logins, l, nil, p.Factor, p.NotAllowed)
}

// userOfLogin reads the user of l and the user's logins, with l as
// stored.
func (a *Auth) userOfLogin(ctx context.Context, l store.Login) (store.User, []store.Login, store.Login, error) {
	u, logins, err := a.user(ctx, l.UserID)
	if i := slices.IndexFunc(logins, func(ul store.Login) bool { return ul.ID == l.ID }); i >= 0 {
		l = logins[i]
	}
	return u, logins, l, err
}
