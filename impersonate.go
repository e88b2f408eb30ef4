package auth

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"time"

	"github.com/latchkit/auth/internal/kit"
	"github.com/latchkit/auth/internal/wire"
	"github.com/latchkit/auth/store"
)

// ImpersonationConfig lets operators act as a user, to see what the user
// sees: Auth.Impersonate starts a session as the user for an operator who
// holds Permission, and Auth.StopImpersonating ends it.
//
// A session an operator started says so: Session.Operator is the
// operator's id (from the access token's st-imp claim, which the
// frontend reads too), every event of the session names the operator
// (Event.Operator), and so does the audit log. It lasts Lifetime at most,
// refreshes included. It changes nothing that lets the user in: every
// route that would change a password, an email, a second factor or a way
// to sign in, or end the user's other sessions, answers 403, as does
// every route that asks for a fresh sign-in (FactorWithin rules too, as
// the session completed no factor). The application's own routes read
// Session.Operator where they must refuse it too.
type ImpersonationConfig struct {
	// Enabled turns impersonation on. The Store must keep roles
	// (store.RoleStore, as with Config.Roles), which say who holds
	// Permission.
	Enabled bool
	// Permission is the permission an operator must hold in the public
	// tenant. Default "users:impersonate".
	Permission string
	// Lifetime is how long an impersonation session lasts at most.
	// Default 30 minutes.
	Lifetime time.Duration
	// AllowOperators lets an operator act as a user who holds Permission
	// too. Default false: operators cannot act as one another.
	AllowOperators bool
}

func (c *ImpersonationConfig) setDefaults(s store.Store) error {
	if !c.Enabled {
		return nil
	}
	if _, ok := s.(store.RoleStore); !ok {
		return fmt.Errorf("auth: Config.Impersonation needs a Store that keeps roles (store.RoleStore); %T does not", s)
	}
	if c.Lifetime < 0 {
		return fmt.Errorf("auth: Config.Impersonation.Lifetime is negative (%v)", c.Lifetime)
	}
	setDefault(&c.Permission, "users:impersonate")
	setDefault(&c.Lifetime, 30*time.Minute)
	return nil
}

// Impersonate's refusals.
var (
	// ErrForbidden reports that the operator may not do what they asked:
	// they lack the permission, or the user is one they may not act as.
	ErrForbidden = errors.New("auth: forbidden")
	// ErrNotImpersonating reports that StopImpersonating was called with
	// a session that no operator started.
	ErrNotImpersonating = errors.New("auth: the session is not an impersonation")
)

// msgImpersonating answers a route that an impersonation session may not
// use.
const msgImpersonating = "Not allowed while an operator acts as this user."

// impersonation is what the session's stored claim keeps of an operator's
// session as a user: the operator, their own session to give back, and
// the end.
type impersonation struct {
	Operator string `json:"op"`
	Session  string `json:"oh,omitempty"`
	End      int64  `json:"end"` // Unix milliseconds
}

// impersonationOf reads the impersonation from a session's stored claim,
// or returns nil; most sessions' claims are read no further than a byte
// search.
func impersonationOf(factors []byte) *impersonation {
	if !bytes.Contains(factors, []byte(`"imp"`)) {
		return nil
	}
	var c mfaClaim
	if json.Unmarshal(factors, &c) != nil {
		return nil
	}
	return c.Imp
}

// Impersonate starts a session as the user userID for the operator signed
// in with r's session, and answers the request as a sign-in does: the new
// session's tokens, in r's transfer mode, replace the operator's in the
// operator's browser, with {"status":"OK"}. The operator's own session
// stays, for StopImpersonating to give back.
//
// It refuses, writing nothing: without Config.Impersonation
// (errors.ErrUnsupported); a request without a session, or one whose
// session has not met its MFA requirement or is an impersonation itself
// (a *SessionError, or ErrForbidden); an operator without the permission,
// the operator themselves, or an operator as the user unless
// AllowOperators (ErrForbidden); an unknown user (ErrNotFound); a banned
// user (store.ErrBanned).
func (a *Auth) Impersonate(w http.ResponseWriter, r *http.Request, userID string) error {
	if !a.cfg.Impersonation.Enabled {
		return fmt.Errorf("auth: impersonation is off (Config.Impersonation): %w", errors.ErrUnsupported)
	}
	vt, m, err := a.verifyRequest(r)
	if err != nil {
		return err
	}
	ctx, op := r.Context(), vt.session.UserID
	if vt.session.Operator != "" || (a.mfaOn() && !vt.mfaMet()) || op == userID {
		return ErrForbidden
	}
	if err := a.mayImpersonate(ctx, op, userID); err != nil {
		return err
	}
	u, logins, err := a.user(ctx, userID)
	if err != nil {
		return err
	}
	if len(logins) == 0 {
		return ErrNotFound
	}
	now := a.cfg.Now()
	imp := &impersonation{Operator: op, Session: vt.handle, End: now.Add(a.cfg.Impersonation.Lifetime).UnixMilli()}
	by := logins[0]
	by.SessionEpoch = u.SessionEpoch
	s := store.Session{UserID: userID, LoginID: by.ID, Tenant: by.Tenant, CreatedAt: now,
		Factors: mfaClaim{Done: map[string]int64{}, Met: true, Imp: imp}.encode()}
	t, err := a.startSession(ctx, &s, by)
	if err != nil {
		return err
	}
	a.emit(ctx, r, Event{Kind: EventImpersonationStarted, UserID: userID, SessionHandle: s.Handle, Operator: op})
	wire.JSON(w, http.StatusOK, struct {
		Status string `json:"status"`
		bodyTokens
	}{"OK", a.writeTokens(w, m, t)})
	return nil
}

// mayImpersonate reports whether the operator op holds the permission and
// may act as userID.
func (a *Auth) mayImpersonate(ctx context.Context, op, userID string) error {
	rs := a.store.(store.RoleStore)
	perm := a.cfg.Impersonation.Permission
	_, perms, err := rs.UserRoles(ctx, store.PublicTenant, op)
	if err != nil {
		return err
	}
	if !slices.Contains(perms, perm) {
		return fmt.Errorf("%w: the operator lacks the permission %q", ErrForbidden, perm)
	}
	if a.cfg.Impersonation.AllowOperators {
		return nil
	}
	if _, perms, err = rs.UserRoles(ctx, store.PublicTenant, userID); err != nil {
		return err
	}
	if slices.Contains(perms, perm) {
		return fmt.Errorf("%w: the user is an operator (%q)", ErrForbidden, perm)
	}
	return nil
}

// StopImpersonating ends the impersonation session of r and answers the
// request: with the operator's own session back, under a new handle, if
// it is still live ({"status":"OK","restored":true}), or else with the
// tokens cleared ("restored":false). It returns ErrNotImpersonating,
// writing nothing, for a session that no operator started, and a
// *SessionError for a request without a session.
func (a *Auth) StopImpersonating(w http.ResponseWriter, r *http.Request) error {
	vt, m, err := a.verifyRequest(r)
	if err != nil {
		return err
	}
	ctx := r.Context()
	s, err := a.store.Session(ctx, vt.handle, a.cfg.Now())
	if err != nil {
		return err
	}
	imp := impersonationOf(s.Factors)
	if imp == nil {
		return ErrNotImpersonating
	}
	if err := a.store.RevokeSession(ctx, s.Handle, store.EndSignedOut); err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	a.emit(ctx, r, Event{Kind: EventImpersonationEnded, UserID: s.UserID, SessionHandle: s.Handle, Operator: imp.Operator})
	var body bodyTokens
	restored := false
	if own, err := a.store.Session(ctx, imp.Session, a.cfg.Now()); err == nil && own.UserID == imp.Operator {
		if t, err := a.restart(ctx, own); err == nil {
			if err := a.store.RevokeSession(ctx, own.Handle, store.EndSignedOut); err != nil && !errors.Is(err, store.ErrNotFound) {
				return err
			}
			a.liveSessions.Evict(own.Handle)
			body, restored = a.writeTokens(w, m, t), true
		}
	}
	if !restored {
		a.clearTokens(w, m == modeCookie, m != modeCookie)
	}
	wire.JSON(w, http.StatusOK, struct {
		Status   string `json:"status"`
		Restored bool   `json:"restored"`
		bodyTokens
	}{"OK", restored, body})
	return nil
}

// accessEnd is when an access token of s issued at now expires: an
// access-token lifetime on, but no later than the end of an
// impersonation, with its operator; over reports an impersonation that
// has ended.
func (a *Auth) accessEnd(ctx context.Context, s store.Session, now time.Time) (exp time.Time, operator string, over bool) {
	exp = now.Add(a.accessLifetime(ctx, s.Tenant))
	imp := impersonationOf(s.Factors)
	if imp == nil {
		return exp, "", false
	}
	end := time.UnixMilli(imp.End)
	if end.Before(exp) {
		exp = end
	}
	return exp, imp.Operator, !now.Before(end)
}

// endImpersonation ends the session s of operator, whose time is up.
func (a *Auth) endImpersonation(ctx context.Context, r *http.Request, s store.Session, operator string) {
	if err := a.store.RevokeSession(ctx, s.Handle, store.EndRevoked); err != nil && !errors.Is(err, store.ErrNotFound) {
		a.cfg.Logger.LogAttrs(ctx, slog.LevelError, "auth: ending an impersonation", slog.String("error", err.Error()))
		return
	}
	a.emit(ctx, r, Event{Kind: EventImpersonationEnded, UserID: s.UserID, SessionHandle: s.Handle, Operator: operator})
}

// refuseImpersonation answers 403, and reports true, for the session of
// vt if an operator started it.
func (a *Auth) refuseImpersonation(w http.ResponseWriter, vt *verifiedToken) bool {
	if vt.session.Operator == "" {
		return false
	}
	wire.Message(w, http.StatusForbidden, msgImpersonating)
	return true
}

// impersonationClaim is st-imp: the operator who started the session, in
// its tokens while impersonation is on.
type impersonationClaim struct{ a *Auth }

const claimImpName = "st-imp"

func (impersonationClaim) name() string { return claimImpName }

func (c impersonationClaim) inTokens() bool { return c.a.cfg.Impersonation.Enabled }

func (impersonationClaim) atSignIn(_ context.Context, s store.Session, _ store.Login, _ time.Time, _ *kit.Reading) []byte {
	return impersonationValue(s.Factors)
}

func (impersonationClaim) atRefresh(_ context.Context, s store.Session, _ time.Time, _ *kit.Reading) []byte {
	return impersonationValue(s.Factors)
}

func impersonationValue(factors []byte) []byte {
	imp := impersonationOf(factors)
	if imp == nil {
		return nil
	}
	b, _ := json.Marshal(struct {
		Operator string `json:"op"`
	}{imp.Operator})
	return b
}

func (impersonationClaim) parse(raw json.RawMessage) (any, error) {
	var v struct {
		Operator string `json:"op"`
	}
	if err := json.Unmarshal(raw, &v); err != nil || v.Operator == "" {
		return nil, errors.New("auth: malformed st-imp claim")
	}
	return v.Operator, nil
}

func (impersonationClaim) checker([]Rule) claimCheck { return nil }
