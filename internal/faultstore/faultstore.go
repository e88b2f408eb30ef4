// Package faultstore is test infrastructure: a store.Store wrapper that
// injects one fault into the calls an application makes, so that tests can
// show what a request answers, and what state it leaves, when the store
// fails at any point of a flow. It is not for production use.
//
// A Plan picks the k-th call (counting every call, or only the calls of
// one method) and what happens to it:
//
//   - Error, Before: the call returns ErrInjected without reaching the
//     inner store, so nothing changed.
//   - Error, After: the inner store runs (its change is committed) and the
//     caller still sees ErrInjected: the "lost response".
//   - Delay: the call sleeps for Plan.Delay before or after the inner
//     store runs. If the context ends first, it returns the context's
//     error (After: the change is committed nonetheless).
//   - Panic, Before or After: the call panics with a PanicValue.
//
// Every call is logged (method, arguments, what the inner store answered),
// so that a test can run a flow once without faults to count its calls and
// then sweep k over them, and can tell afterwards whether a change was
// committed. All methods are safe for concurrent use.
package faultstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/latchkit/auth/store"
)

// When is when a fault happens relative to the inner store's call.
type When int

const (
	// Before: the fault happens before the inner store is called.
	Before When = iota
	// After: the fault happens once the inner store has returned.
	After
)

func (w When) String() string {
	if w == After {
		return "after"
	}
	return "before"
}

// Kind is what a fault does.
type Kind int

const (
	// Error makes the call return an error matching ErrInjected.
	Error Kind = iota
	// Delay makes the call sleep for Plan.Delay, honouring its context.
	Delay
	// Panic makes the call panic with a PanicValue.
	Panic
)

func (k Kind) String() string {
	switch k {
	case Delay:
		return "delay"
	case Panic:
		return "panic"
	}
	return "error"
}

// Plan describes the one fault to inject.
type Plan struct {
	// Call is which counted call (1 for the first after Arm) gets the
	// fault; 0 injects none, to count and log a flow's calls.
	Call int
	// Method, if set, restricts counting to the calls of this store.Store
	// method ("RotateRefreshToken"); otherwise every call counts.
	Method string
	When   When
	Kind   Kind
	// Delay is how long a Delay fault sleeps.
	Delay time.Duration
}

func (p Plan) String() string {
	m := "any"
	if p.Method != "" {
		m = p.Method
	}
	s := fmt.Sprintf("%s %s call %d of %s", p.Kind, p.When, p.Call, m)
	if p.Kind == Delay {
		s += " (" + p.Delay.String() + ")"
	}
	return s
}

// ErrInjected is the error of an Error fault.
var ErrInjected = errors.New("faultstore: injected fault")

// PanicValue is what a Panic fault panics with.
type PanicValue struct {
	Method string
	Call   int // the position of the call among the counted ones
	When   When
}

func (p PanicValue) String() string {
	return fmt.Sprintf("faultstore: injected panic %s %s (call %d)", p.When, p.Method, p.Call)
}

// Call is the record of one call.
type Call struct {
	// Method is the store.Store method called.
	Method string
	// Args are its arguments after the context. A SigningKey's Material
	// is a copy, and so is a *store.MaterialUpdate with its bytes, a
	// Session's Factors and the byte slices of UpdateLoginMaterial and
	// UpdateSessionFactors.
	Args []any
	// Injected reports that the plan's fault hit this call.
	Injected bool
	// Delegated reports that the inner store was called and returned.
	Delegated bool
	// Err is what the inner store returned, if it was called; the caller
	// may have seen another error (ErrInjected, a context's error).
	Err error
	// Done reports that the call has returned, or panicked, to its caller.
	Done bool
}

// Committed reports whether the inner store carried out the call
// successfully: for a method that changes something, that the change is
// in the inner store whatever the caller saw.
func (c Call) Committed() bool { return c.Delegated && c.Err == nil }

// methods are the store.Store and store.RoleStore methods, which a Plan
// may name. They are read from the interfaces so that a method added to
// the contract can be armed as soon as it exists.
var methods = func() map[string]bool {
	m := make(map[string]bool)
	for _, st := range []reflect.Type{reflect.TypeFor[store.Store](), reflect.TypeFor[store.RoleStore]()} {
		for i := range st.NumMethod() {
			m[st.Method(i).Name] = true
		}
	}
	return m
}()

// Store wraps a store.Store and injects the fault of its Plan. Create it
// with New.
type Store struct {
	inner store.Store

	mu       sync.Mutex
	plan     Plan
	counted  int  // calls counted towards plan.Call since Arm
	fired    bool // the plan's fault has been injected
	armedAt  int  // len(calls) at Arm
	calls    []Call
	inFlight int
}

var (
	_ store.Store     = (*Store)(nil)
	_ store.RoleStore = (*Store)(nil)
)

// New returns a Store that passes every call to inner until it is armed.
func New(inner store.Store) *Store { return &Store{inner: inner} }

// Inner returns the wrapped store, to inspect it without faults or logging.
func (s *Store) Inner() store.Store { return s.inner }

// Arm installs p and starts counting calls for it afresh. It panics if
// p names a method store.Store does not have.
func (s *Store) Arm(p Plan) {
	if p.Method != "" && !methods[p.Method] {
		panic("faultstore: no store.Store method " + p.Method)
	}
	if p.Call < 0 {
		panic("faultstore: negative Plan.Call")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.plan, s.counted, s.fired, s.armedAt = p, 0, false, len(s.calls)
}

// Disarm removes the plan: no more faults. Calls are still logged.
func (s *Store) Disarm() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.plan = Plan{}
}

// Fired reports whether the fault of the plan last armed has been
// injected, and into which call.
func (s *Store) Fired() (Call, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.fired {
		return Call{}, false
	}
	for _, c := range s.calls[s.armedAt:] {
		if c.Injected {
			return c, true
		}
	}
	return Call{}, false
}

// Calls returns every call logged since New.
func (s *Store) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

// Armed returns the calls logged since the last Arm.
func (s *Store) Armed() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls[s.armedAt:]...)
}

// Methods returns the method names of calls.
func Methods(calls []Call) []string {
	out := make([]string, len(calls))
	for i, c := range calls {
		out[i] = c.Method
	}
	return out
}

// InFlight returns how many calls have started and not yet returned.
func (s *Store) InFlight() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inFlight
}

// Wait waits until no call is in flight, or ctx ends.
func (s *Store) Wait(ctx context.Context) error {
	t := time.NewTicker(time.Millisecond)
	defer t.Stop()
	for s.InFlight() > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}

// begin logs a call and decides whether it gets the fault.
func (s *Store) begin(method string, args []any) (idx int, fault *Plan, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inFlight++
	idx = len(s.calls)
	s.calls = append(s.calls, Call{Method: method, Args: args})
	if s.plan.Call == 0 || s.fired || (s.plan.Method != "" && s.plan.Method != method) {
		return idx, nil, 0
	}
	s.counted++
	if s.counted != s.plan.Call {
		return idx, nil, 0
	}
	s.fired = true
	s.calls[idx].Injected = true
	p := s.plan
	return idx, &p, s.counted
}

func (s *Store) delegated(idx int, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls[idx].Delegated, s.calls[idx].Err = true, err
}

func (s *Store) done(idx int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls[idx].Done = true
	s.inFlight--
}

// inject carries out a fault at its point.
func inject(ctx context.Context, p *Plan, method string, n int) error {
	switch p.Kind {
	case Error:
		return fmt.Errorf("%w: %s %s (call %d)", ErrInjected, p.When, method, n)
	case Delay:
		t := time.NewTimer(p.Delay)
		defer t.Stop()
		select {
		case <-t.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	case Panic:
		panic(PanicValue{Method: method, Call: n, When: p.When})
	}
	return nil
}

// call runs f, the inner store's method, with the fault of the plan if
// this call gets it.
func call[T any](s *Store, ctx context.Context, method string, args []any, f func() (T, error)) (T, error) {
	idx, p, n := s.begin(method, args)
	defer s.done(idx)
	var zero T
	if p != nil && p.When == Before {
		if err := inject(ctx, p, method, n); err != nil {
			return zero, err
		}
	}
	v, err := f()
	s.delegated(idx, err)
	if p != nil && p.When == After {
		if ierr := inject(ctx, p, method, n); ierr != nil {
			return zero, ierr
		}
	}
	return v, err
}

type none struct{}

func errOnly(err error) (none, error) { return none{}, err }

// CreateUser implements store.Store.
func (s *Store) CreateUser(ctx context.Context, u store.User, first store.Login) error {
	_, err := call(s, ctx, "CreateUser", []any{u, first}, func() (none, error) { return errOnly(s.inner.CreateUser(ctx, u, first)) })
	return err
}

// UserByID implements store.Store.
func (s *Store) UserByID(ctx context.Context, id string) (store.User, error) {
	return call(s, ctx, "UserByID", []any{id}, func() (store.User, error) { return s.inner.UserByID(ctx, id) })
}

// Login implements store.Store.
func (s *Store) Login(ctx context.Context, k store.LoginKey) (store.Login, error) {
	return call(s, ctx, "Login", []any{k}, func() (store.Login, error) { return s.inner.Login(ctx, k) })
}

// Logins implements store.Store.
func (s *Store) Logins(ctx context.Context, userID string) ([]store.Login, error) {
	return call(s, ctx, "Logins", []any{userID}, func() ([]store.Login, error) { return s.inner.Logins(ctx, userID) })
}

// userLogins is the two values UserByLogin returns besides its error.
type userLogins struct {
	user   store.User
	logins []store.Login
}

// UserByLogin implements store.Store.
func (s *Store) UserByLogin(ctx context.Context, k store.LoginKey) (store.User, []store.Login, error) {
	r, err := call(s, ctx, "UserByLogin", []any{k}, func() (userLogins, error) {
		u, logins, err := s.inner.UserByLogin(ctx, k)
		return userLogins{u, logins}, err
	})
	return r.user, r.logins, err
}

// LoginsByEmail implements store.Store.
func (s *Store) LoginsByEmail(ctx context.Context, email string) ([]store.Login, error) {
	return call(s, ctx, "LoginsByEmail", []any{email}, func() ([]store.Login, error) { return s.inner.LoginsByEmail(ctx, email) })
}

// signInUpResult is the two values SignInUp returns besides its error.
type signInUpResult struct {
	login   store.Login
	created bool
}

// SignInUp implements store.Store.
func (s *Store) SignInUp(ctx context.Context, l store.Login, newUser store.User) (store.Login, bool, error) {
	r, err := call(s, ctx, "SignInUp", []any{l, newUser}, func() (signInUpResult, error) {
		got, created, err := s.inner.SignInUp(ctx, l, newUser)
		return signInUpResult{got, created}, err
	})
	return r.login, r.created, err
}

// LinkLogin implements store.Store.
func (s *Store) LinkLogin(ctx context.Context, l store.Login) error {
	_, err := call(s, ctx, "LinkLogin", []any{l}, func() (none, error) { return errOnly(s.inner.LinkLogin(ctx, l)) })
	return err
}

// ClaimEmail implements store.Store.
func (s *Store) ClaimEmail(ctx context.Context, loginID string) (store.Login, error) {
	return call(s, ctx, "ClaimEmail", []any{loginID}, func() (store.Login, error) { return s.inner.ClaimEmail(ctx, loginID) })
}

// SetEmailVerified implements store.Store.
func (s *Store) SetEmailVerified(ctx context.Context, loginID string, verified bool) (store.Login, error) {
	return call(s, ctx, "SetEmailVerified", []any{loginID, verified}, func() (store.Login, error) {
		return s.inner.SetEmailVerified(ctx, loginID, verified)
	})
}

// DeleteLogin implements store.Store.
func (s *Store) DeleteLogin(ctx context.Context, loginID string) ([]string, error) {
	return call(s, ctx, "DeleteLogin", []any{loginID}, func() ([]string, error) { return s.inner.DeleteLogin(ctx, loginID) })
}

// DeleteUser implements store.Store.
func (s *Store) DeleteUser(ctx context.Context, userID string) ([]string, error) {
	return call(s, ctx, "DeleteUser", []any{userID}, func() ([]string, error) { return s.inner.DeleteUser(ctx, userID) })
}

// CreateCode implements store.Store.
func (s *Store) CreateCode(ctx context.Context, c store.Code) error {
	_, err := call(s, ctx, "CreateCode", []any{c}, func() (none, error) { return errOnly(s.inner.CreateCode(ctx, c)) })
	return err
}

// Code implements store.Store.
func (s *Store) Code(ctx context.Context, kind store.CodeKind, hash store.TokenHash, now time.Time) (store.Code, error) {
	return call(s, ctx, "Code", []any{kind, hash, now}, func() (store.Code, error) { return s.inner.Code(ctx, kind, hash, now) })
}

// VerifyEmail implements store.Store.
func (s *Store) VerifyEmail(ctx context.Context, token store.TokenHash, now time.Time) (store.Login, error) {
	return call(s, ctx, "VerifyEmail", []any{token, now}, func() (store.Login, error) { return s.inner.VerifyEmail(ctx, token, now) })
}

// UsePasswordlessCode implements store.Store.
func (s *Store) UsePasswordlessCode(ctx context.Context, flow, code store.TokenHash, now time.Time, maxAttempts int) (store.Code, error) {
	return call(s, ctx, "UsePasswordlessCode", []any{flow, code, now, maxAttempts}, func() (store.Code, error) {
		return s.inner.UsePasswordlessCode(ctx, flow, code, now, maxAttempts)
	})
}

// UseCeremony implements store.Store.
func (s *Store) UseCeremony(ctx context.Context, kind store.CodeKind, hash store.TokenHash, now time.Time, update *store.MaterialUpdate) (store.Code, error) {
	logged := update
	if update != nil {
		logged = &store.MaterialUpdate{LoginID: update.LoginID, Old: bytes.Clone(update.Old), New: bytes.Clone(update.New)}
	}
	return call(s, ctx, "UseCeremony", []any{kind, hash, now, logged}, func() (store.Code, error) {
		return s.inner.UseCeremony(ctx, kind, hash, now, update)
	})
}

// AttachLogin implements store.Store.
func (s *Store) AttachLogin(ctx context.Context, l store.Login) error {
	_, err := call(s, ctx, "AttachLogin", []any{l}, func() (none, error) { return errOnly(s.inner.AttachLogin(ctx, l)) })
	return err
}

// emailChange is the two values ChangeEmail returns besides its error.
type emailChange struct {
	code   store.Code
	logins []store.Login
}

// ChangeEmail implements store.Store.
func (s *Store) ChangeEmail(ctx context.Context, kind store.CodeKind, hash store.TokenHash, now time.Time) (store.Code, []store.Login, error) {
	r, err := call(s, ctx, "ChangeEmail", []any{kind, hash, now}, func() (emailChange, error) {
		c, l, err := s.inner.ChangeEmail(ctx, kind, hash, now)
		return emailChange{c, l}, err
	})
	return r.code, r.logins, err
}

// UpdatePasswordHash implements store.Store.
func (s *Store) UpdatePasswordHash(ctx context.Context, userID, oldHash, newHash string) error {
	_, err := call(s, ctx, "UpdatePasswordHash", []any{userID, oldHash, newHash}, func() (none, error) {
		return errOnly(s.inner.UpdatePasswordHash(ctx, userID, oldHash, newHash))
	})
	return err
}

// UpdateLoginMaterial implements store.Store.
func (s *Store) UpdateLoginMaterial(ctx context.Context, loginID string, old, new []byte) error {
	_, err := call(s, ctx, "UpdateLoginMaterial", []any{loginID, bytes.Clone(old), bytes.Clone(new)}, func() (none, error) {
		return errOnly(s.inner.UpdateLoginMaterial(ctx, loginID, old, new))
	})
	return err
}

// resetResult is the two values ResetPassword returns besides its error.
type resetResult struct {
	login   store.Login
	handles []string
}

// ResetPassword implements store.Store.
func (s *Store) ResetPassword(ctx context.Context, token store.TokenHash, passwordHash string, now time.Time) (store.Login, []string, error) {
	r, err := call(s, ctx, "ResetPassword", []any{token, passwordHash, now}, func() (resetResult, error) {
		l, h, err := s.inner.ResetPassword(ctx, token, passwordHash, now)
		return resetResult{l, h}, err
	})
	return r.login, r.handles, err
}

// CreateSession implements store.Store.
func (s *Store) CreateSession(ctx context.Context, sess store.Session, refresh store.TokenHash, epoch int64) error {
	logged := sess
	logged.Factors = bytes.Clone(sess.Factors)
	_, err := call(s, ctx, "CreateSession", []any{logged, refresh, epoch}, func() (none, error) {
		return errOnly(s.inner.CreateSession(ctx, sess, refresh, epoch))
	})
	return err
}

// Session implements store.Store.
func (s *Store) Session(ctx context.Context, handle string, now time.Time) (store.Session, error) {
	return call(s, ctx, "Session", []any{handle, now}, func() (store.Session, error) { return s.inner.Session(ctx, handle, now) })
}

// UserSessions implements store.Store.
func (s *Store) UserSessions(ctx context.Context, userID string, now time.Time) ([]store.Session, error) {
	return call(s, ctx, "UserSessions", []any{userID, now}, func() ([]store.Session, error) {
		return s.inner.UserSessions(ctx, userID, now)
	})
}

// RotateRefreshToken implements store.Store. When an After fault hits a
// call that the inner store answered with ErrTokenReused, the caller sees
// the fault, not the session.
func (s *Store) RotateRefreshToken(ctx context.Context, r store.Rotation) (store.Rotated, error) {
	return call(s, ctx, "RotateRefreshToken", []any{r}, func() (store.Rotated, error) { return s.inner.RotateRefreshToken(ctx, r) })
}

// LegacyTokenSession implements store.LegacyTokenStore for an inner
// store that does; for any other, there are no such tokens.
func (s *Store) LegacyTokenSession(ctx context.Context, token store.TokenHash, now time.Time) (string, error) {
	return call(s, ctx, "LegacyTokenSession", []any{token, now}, func() (string, error) {
		if legacy, ok := s.inner.(store.LegacyTokenStore); ok {
			return legacy.LegacyTokenSession(ctx, token, now)
		}
		return "", store.ErrNotFound
	})
}

// RevokeSession implements store.Store.
func (s *Store) RevokeSession(ctx context.Context, handle string, why store.EndReason) error {
	_, err := call(s, ctx, "RevokeSession", []any{handle, why}, func() (none, error) {
		return errOnly(s.inner.RevokeSession(ctx, handle, why))
	})
	return err
}

// RevokeUserSessions implements store.Store.
func (s *Store) RevokeUserSessions(ctx context.Context, userID string) ([]string, error) {
	return call(s, ctx, "RevokeUserSessions", []any{userID}, func() ([]string, error) { return s.inner.RevokeUserSessions(ctx, userID) })
}

// UpdateSessionFactors implements store.Store.
func (s *Store) UpdateSessionFactors(ctx context.Context, handle string, old, new []byte, now time.Time) error {
	_, err := call(s, ctx, "UpdateSessionFactors", []any{handle, bytes.Clone(old), bytes.Clone(new), now}, func() (none, error) {
		return errOnly(s.inner.UpdateSessionFactors(ctx, handle, old, new, now))
	})
	return err
}

// SigningKeys implements store.Store.
func (s *Store) SigningKeys(ctx context.Context, now time.Time) ([]store.SigningKey, error) {
	return call(s, ctx, "SigningKeys", []any{now}, func() ([]store.SigningKey, error) { return s.inner.SigningKeys(ctx, now) })
}

// AddSigningKey implements store.Store.
func (s *Store) AddSigningKey(ctx context.Context, k store.SigningKey) error {
	logged := k
	logged.Material = bytes.Clone(k.Material)
	_, err := call(s, ctx, "AddSigningKey", []any{logged}, func() (none, error) { return errOnly(s.inner.AddSigningKey(ctx, k)) })
	return err
}

// DeleteExpired implements store.Store.
func (s *Store) DeleteExpired(ctx context.Context, now time.Time) error {
	_, err := call(s, ctx, "DeleteExpired", []any{now}, func() (none, error) { return errOnly(s.inner.DeleteExpired(ctx, now)) })
	return err
}

// errNoRoles is what the role methods answer when the inner store keeps
// no roles.
var errNoRoles = errors.New("faultstore: the inner store is not a store.RoleStore")

// roleCall is call for a method of store.RoleStore, which the inner store
// may not implement.
func roleCall[T any](s *Store, ctx context.Context, method string, args []any, f func(store.RoleStore) (T, error)) (T, error) {
	return call(s, ctx, method, args, func() (T, error) {
		rs, ok := s.inner.(store.RoleStore)
		if !ok {
			var zero T
			return zero, errNoRoles
		}
		return f(rs)
	})
}

// CreateRole implements store.RoleStore.
func (s *Store) CreateRole(ctx context.Context, role string, permissions []string) (bool, error) {
	return roleCall(s, ctx, "CreateRole", []any{role, permissions}, func(rs store.RoleStore) (bool, error) {
		return rs.CreateRole(ctx, role, permissions)
	})
}

// RemovePermissions implements store.RoleStore.
func (s *Store) RemovePermissions(ctx context.Context, role string, permissions []string) error {
	_, err := roleCall(s, ctx, "RemovePermissions", []any{role, permissions}, func(rs store.RoleStore) (none, error) {
		return errOnly(rs.RemovePermissions(ctx, role, permissions))
	})
	return err
}

// deleted is what DeleteRole answers.
type deleted struct {
	existed bool
	users   []string
}

// DeleteRole implements store.RoleStore.
func (s *Store) DeleteRole(ctx context.Context, role string) (bool, []string, error) {
	d, err := roleCall(s, ctx, "DeleteRole", []any{role}, func(rs store.RoleStore) (deleted, error) {
		existed, users, err := rs.DeleteRole(ctx, role)
		return deleted{existed, users}, err
	})
	return d.existed, d.users, err
}

// Roles implements store.RoleStore.
func (s *Store) Roles(ctx context.Context) ([]string, error) {
	return roleCall(s, ctx, "Roles", nil, func(rs store.RoleStore) ([]string, error) { return rs.Roles(ctx) })
}

// RolePermissions implements store.RoleStore.
func (s *Store) RolePermissions(ctx context.Context, role string) ([]string, error) {
	return roleCall(s, ctx, "RolePermissions", []any{role}, func(rs store.RoleStore) ([]string, error) {
		return rs.RolePermissions(ctx, role)
	})
}

// RolesWithPermission implements store.RoleStore.
func (s *Store) RolesWithPermission(ctx context.Context, permission string) ([]string, error) {
	return roleCall(s, ctx, "RolesWithPermission", []any{permission}, func(rs store.RoleStore) ([]string, error) {
		return rs.RolesWithPermission(ctx, permission)
	})
}

// GiveRole implements store.RoleStore.
func (s *Store) GiveRole(ctx context.Context, tenant, userID, role string) (bool, error) {
	return roleCall(s, ctx, "GiveRole", []any{tenant, userID, role}, func(rs store.RoleStore) (bool, error) {
		return rs.GiveRole(ctx, tenant, userID, role)
	})
}

// TakeRole implements store.RoleStore.
func (s *Store) TakeRole(ctx context.Context, tenant, userID, role string) (bool, error) {
	return roleCall(s, ctx, "TakeRole", []any{tenant, userID, role}, func(rs store.RoleStore) (bool, error) {
		return rs.TakeRole(ctx, tenant, userID, role)
	})
}

// held is what UserRoles answers.
type held struct{ roles, permissions []string }

// UserRoles implements store.RoleStore.
func (s *Store) UserRoles(ctx context.Context, tenant, userID string) ([]string, []string, error) {
	h, err := roleCall(s, ctx, "UserRoles", []any{tenant, userID}, func(rs store.RoleStore) (held, error) {
		roles, perms, err := rs.UserRoles(ctx, tenant, userID)
		return held{roles, perms}, err
	})
	return h.roles, h.permissions, err
}

// UsersWithRole implements store.RoleStore.
func (s *Store) UsersWithRole(ctx context.Context, tenant, role string) ([]string, error) {
	return roleCall(s, ctx, "UsersWithRole", []any{tenant, role}, func(rs store.RoleStore) ([]string, error) {
		return rs.UsersWithRole(ctx, tenant, role)
	})
}
