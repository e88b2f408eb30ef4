package auth

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/latchkit/auth/internal/address"
	"github.com/latchkit/auth/internal/kit"
	"github.com/latchkit/auth/internal/wire"
	"github.com/latchkit/auth/store"
)

// operator is the kernel's side of the operators' API (kit.Operator): the
// Go API's changes to users, reporting the request that asked for them.
type operator struct{ a *Auth }

func (k kernel) Operator() kit.Operator { return operator(k) }

// buildDashboard builds Config.Dashboard, if set, for its routes.
func (a *Auth) buildDashboard(k kernel, setup kit.Setup) error {
	if a.cfg.Dashboard == nil {
		return nil
	}
	var err error
	a.dashboardRoutes, err = a.cfg.Dashboard.Build(k, setup)
	return err
}

func (o operator) RequestUser(r *http.Request) (string, bool) {
	vt, _, err := o.a.verifyRequest(r)
	// An operator acting as a user is not that user to the operators'
	// API: the user's permissions are not the operator's to use.
	if err != nil || o.a.mfaOn() && !vt.mfaMet() || vt.session.Operator != "" {
		return "", false
	}
	return vt.session.UserID, true
}

func (o operator) Roles() store.RoleStore {
	if o.a.cfg.Roles == nil {
		return nil
	}
	st, _ := o.a.store.(store.RoleStore) // the roles recipe refused to build without one
	return st
}

func (o operator) Verification() bool     { return o.a.verification != nil }
func (o operator) FirstFactors() []string { return slices.Clone(o.a.firstFactors()) }

func (o operator) DeleteUser(ctx context.Context, r *http.Request, userID string) error {
	return o.a.deleteUser(ctx, r, userID)
}

func (o operator) RevokeSession(ctx context.Context, r *http.Request, handle string) error {
	s, err := o.a.store.Session(ctx, handle, o.a.cfg.Now())
	if err != nil {
		return err
	}
	if err := o.a.store.RevokeSession(ctx, handle, store.EndRevoked); err != nil {
		return err
	}
	o.a.emit(ctx, r, Event{Kind: EventSessionRevoked, UserID: s.UserID, SessionHandle: handle})
	return nil
}

func (o operator) SetEmailVerified(ctx context.Context, r *http.Request, loginID string, verified bool) error {
	l, err := o.a.store.SetEmailVerified(ctx, loginID, verified)
	if err != nil {
		return err
	}
	if !verified {
		o.a.emit(ctx, r, Event{Kind: EventEmailUnverified, UserID: l.UserID, Method: l.Method, ThirdPartyID: kit.ProviderOf(l)})
		return nil
	}
	o.a.emit(ctx, r, Event{Kind: EventEmailVerified, UserID: l.UserID, Method: l.Method, ThirdPartyID: kit.ProviderOf(l)})
	o.a.afterVerified(ctx, l)
	return nil
}

func (o operator) SendVerification(ctx context.Context, l store.Login) time.Duration {
	if o.a.verification == nil {
		return 0
	}
	return o.a.verification.SendFor(ctx, l)
}

// SetPassword ends the sessions after the hash is swapped, as the store's
// ResetPassword does in one step: a sign-in that checked the old password
// before starts no session after RevokeUserSessions.
func (o operator) SetPassword(ctx context.Context, r *http.Request, userID, password string) (string, error) {
	refused, err := o.a.emailPassword.SetPassword(ctx, userID, password)
	if refused != "" || err != nil {
		return refused, err
	}
	o.a.emit(ctx, r, Event{Kind: EventPasswordSet, UserID: userID, Method: store.MethodEmailPassword})
	handles, err := o.a.store.RevokeUserSessions(ctx, userID)
	for _, h := range handles {
		o.a.emit(ctx, r, Event{Kind: EventSessionRevoked, UserID: userID, SessionHandle: h})
	}
	return "", err
}

func (o operator) CreatePasswordlessUser(ctx context.Context, r *http.Request, contact string) (store.User, store.Login, bool, error) {
	key := o.a.tenantOf(ctx).Key(store.PasswordlessKey(contact))
	if l, err := o.a.store.Login(ctx, key); err == nil {
		u, err := o.a.store.UserByID(ctx, l.UserID)
		return u, l, false, err
	} else if !errors.Is(err, store.ErrNotFound) {
		return store.User{}, store.Login{}, false, err
	}
	phone := address.IsPhone(contact)
	if !phone {
		if refused, err := o.a.signUpRefused(ctx, contact); err != nil || refused {
			if err == nil {
				err = store.ErrConflict
			}
			return store.User{}, store.Login{}, false, err
		}
	}
	now := o.a.cfg.Now().Truncate(time.Millisecond)
	u := store.User{ID: uuid.NewString(), TimeJoined: now}
	l := store.Login{LoginKey: key, ID: u.ID, UserID: u.ID, CreatedAt: now}
	if !phone {
		l.Email = contact
	}
	if err := o.a.store.CreateUser(ctx, u, l); err != nil {
		return store.User{}, store.Login{}, false, err
	}
	o.a.emit(ctx, r, Event{Kind: EventUserCreated, UserID: u.ID, Method: l.Method})
	return u, l, true, nil
}

func (o operator) CreatePasswordUser(ctx context.Context, r *http.Request, email, password string) (store.User, store.Login, string, string, error) {
	// Under account linking a password proves no inbox: as at sign-up,
	// it is refused where another user holds the address.
	if norm := address.Normalise(email); wire.CheckEmail(norm) == "" {
		if refused, err := o.a.signUpRefused(ctx, norm); err != nil || refused {
			if err == nil {
				err = store.ErrConflict
			}
			return store.User{}, store.Login{}, "", "", err
		}
	}
	u, l, badEmail, badPassword, err := o.a.emailPassword.CreateUser(ctx, email, password)
	if err == nil && badEmail == "" && badPassword == "" {
		o.a.emit(ctx, r, Event{Kind: EventUserCreated, UserID: u.ID, Method: l.Method})
	}
	return u, l, badEmail, badPassword, err
}
