package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/latchkit/auth/store"
)

// suiteTenant is the tenant the suite runs in again, for a TenantStore.
const suiteTenant = "acme"

// inTenant shows a test the store as the public tenant's while every
// login key, code and session the test writes lands in tenant: what the
// test writes with the public tenant's "" goes to the store in tenant,
// and what the store returns in tenant comes back as the public tenant's,
// so that every test of the suite checks the same outcomes as before. A
// record read back in another tenant than it was written in fails the
// test. A record of second factors stays in the public tenant, as the
// library keeps it: it is the user's, whatever the tenants of its logins.
type inTenant struct {
	store.Store
	t      *testing.T
	tenant string
}

// inTenantRoles is an inTenant of a store that keeps roles.
type inTenantRoles struct {
	*inTenant
	store.RoleStore
}

// newInTenant wraps s, a TenantStore, so that its test runs in the
// tenant suiteTenant, which it creates.
func newInTenant(t *testing.T, s store.Store) store.Store {
	ts := s.(store.TenantStore)
	if _, err := ts.PutTenant(t.Context(), store.Tenant{ID: suiteTenant, UpdatedAt: base}); err != nil {
		t.Fatalf("PutTenant: a new tenant must be created; got error %v", err)
	}
	w := &inTenant{Store: s, t: t, tenant: suiteTenant}
	if r, ok := s.(store.RoleStore); ok {
		return inTenantRoles{w, r}
	}
	return w
}

// keyIn is k as the store must keep it.
func (w *inTenant) keyIn(k store.LoginKey) store.LoginKey {
	if k.Method == store.MethodSecondFactors || k.Tenant != "" {
		return k
	}
	return k.In(w.tenant)
}

// keyOut is k, read from the store, as the test wrote it.
func (w *inTenant) keyOut(k store.LoginKey, what string) store.LoginKey {
	want := w.tenant
	if k.Method == store.MethodSecondFactors {
		want = ""
	}
	if k.Tenant != want {
		w.t.Errorf("%s returned a login with Tenant %q, want %q: a store keeps a login's tenant", what, k.Tenant, want)
		return k
	}
	k.Tenant = ""
	return k
}

func (w *inTenant) loginIn(l store.Login) store.Login {
	l.LoginKey = w.keyIn(l.LoginKey)
	return l
}

func (w *inTenant) loginOut(l store.Login, what string) store.Login {
	if l.ID != "" || l.Subject != "" {
		l.LoginKey = w.keyOut(l.LoginKey, what)
	}
	return l
}

func (w *inTenant) loginsOut(ls []store.Login, what string) []store.Login {
	for i := range ls {
		ls[i] = w.loginOut(ls[i], what)
	}
	return ls
}

// tenantOut is the tenant field of a code or session read from the
// store, as the test wrote it.
func (w *inTenant) tenantOut(tenant, what string) string {
	if tenant != w.tenant {
		w.t.Errorf("%s returned Tenant %q, want %q: a store keeps the tenant as written", what, tenant, w.tenant)
		return tenant
	}
	return ""
}

func (w *inTenant) codeIn(c store.Code) store.Code {
	if c.Tenant == "" {
		c.Tenant = w.tenant
	}
	return c
}

func (w *inTenant) codeOut(c store.Code, what string) store.Code {
	if c.Hash != (store.TokenHash{}) {
		c.Tenant = w.tenantOut(c.Tenant, what+" (a code)")
	}
	return c
}

func (w *inTenant) sessionOut(s store.Session, what string) store.Session {
	if s.Handle != "" {
		s.Tenant = w.tenantOut(s.Tenant, what+" (a session)")
	}
	return s
}

func (w *inTenant) CreateUser(ctx context.Context, u store.User, first store.Login) error {
	return w.Store.CreateUser(ctx, u, w.loginIn(first))
}

func (w *inTenant) Login(ctx context.Context, k store.LoginKey) (store.Login, error) {
	l, err := w.Store.Login(ctx, w.keyIn(k))
	return w.loginOut(l, "Login"), err
}

func (w *inTenant) Logins(ctx context.Context, userID string) ([]store.Login, error) {
	ls, err := w.Store.Logins(ctx, userID)
	return w.loginsOut(ls, "Logins"), err
}

func (w *inTenant) UserByLogin(ctx context.Context, k store.LoginKey) (store.User, []store.Login, error) {
	u, ls, err := w.Store.UserByLogin(ctx, w.keyIn(k))
	return u, w.loginsOut(ls, "UserByLogin"), err
}

func (w *inTenant) LoginsByEmail(ctx context.Context, email string) ([]store.Login, error) {
	ls, err := w.Store.LoginsByEmail(ctx, email)
	return w.loginsOut(ls, "LoginsByEmail"), err
}

func (w *inTenant) SignInUp(ctx context.Context, l store.Login, newUser store.User) (store.Login, bool, error) {
	got, created, err := w.Store.SignInUp(ctx, w.loginIn(l), newUser)
	return w.loginOut(got, "SignInUp"), created, err
}

func (w *inTenant) LinkLogin(ctx context.Context, l store.Login) error {
	return w.Store.LinkLogin(ctx, w.loginIn(l))
}

func (w *inTenant) AttachLogin(ctx context.Context, l store.Login) error {
	return w.Store.AttachLogin(ctx, w.loginIn(l))
}

func (w *inTenant) ClaimEmail(ctx context.Context, loginID string) (store.Login, error) {
	l, err := w.Store.ClaimEmail(ctx, loginID)
	return w.loginOut(l, "ClaimEmail"), err
}

func (w *inTenant) SetEmailVerified(ctx context.Context, loginID string, verified bool) (store.Login, error) {
	l, err := w.Store.SetEmailVerified(ctx, loginID, verified)
	return w.loginOut(l, "SetEmailVerified"), err
}

func (w *inTenant) CreateCode(ctx context.Context, c store.Code) error {
	return w.Store.CreateCode(ctx, w.codeIn(c))
}

func (w *inTenant) Code(ctx context.Context, kind store.CodeKind, hash store.TokenHash, now time.Time) (store.Code, error) {
	c, err := w.Store.Code(ctx, kind, hash, now)
	return w.codeOut(c, "Code"), err
}

func (w *inTenant) ResetPassword(ctx context.Context, token store.TokenHash, passwordHash string, now time.Time) (store.Login, []string, error) {
	l, handles, err := w.Store.ResetPassword(ctx, token, passwordHash, now)
	return w.loginOut(l, "ResetPassword"), handles, err
}

func (w *inTenant) VerifyEmail(ctx context.Context, token store.TokenHash, now time.Time) (store.Login, error) {
	l, err := w.Store.VerifyEmail(ctx, token, now)
	return w.loginOut(l, "VerifyEmail"), err
}

func (w *inTenant) UsePasswordlessCode(ctx context.Context, flow, code store.TokenHash, now time.Time, maxAttempts int) (store.Code, error) {
	c, err := w.Store.UsePasswordlessCode(ctx, flow, code, now, maxAttempts)
	return w.codeOut(c, "UsePasswordlessCode"), err
}

func (w *inTenant) UseCeremony(ctx context.Context, kind store.CodeKind, hash store.TokenHash, now time.Time, update *store.MaterialUpdate) (store.Code, error) {
	c, err := w.Store.UseCeremony(ctx, kind, hash, now, update)
	return w.codeOut(c, "UseCeremony"), err
}

func (w *inTenant) ChangeEmail(ctx context.Context, kind store.CodeKind, hash store.TokenHash, now time.Time) (store.Code, []store.Login, error) {
	c, ls, err := w.Store.ChangeEmail(ctx, kind, hash, now)
	return w.codeOut(c, "ChangeEmail"), w.loginsOut(ls, "ChangeEmail"), err
}

func (w *inTenant) CreateSession(ctx context.Context, s store.Session, refresh store.TokenHash, epoch int64) error {
	if s.Tenant == "" {
		s.Tenant = w.tenant
	}
	return w.Store.CreateSession(ctx, s, refresh, epoch)
}

func (w *inTenant) Session(ctx context.Context, handle string, now time.Time) (store.Session, error) {
	s, err := w.Store.Session(ctx, handle, now)
	return w.sessionOut(s, "Session"), err
}

func (w *inTenant) UserSessions(ctx context.Context, userID string, now time.Time) ([]store.Session, error) {
	ss, err := w.Store.UserSessions(ctx, userID, now)
	for i := range ss {
		ss[i] = w.sessionOut(ss[i], "UserSessions")
	}
	return ss, err
}

func (w *inTenant) RotateRefreshToken(ctx context.Context, r store.Rotation) (store.Rotated, error) {
	got, err := w.Store.RotateRefreshToken(ctx, r)
	got.Session = w.sessionOut(got.Session, "RotateRefreshToken")
	return got, err
}
