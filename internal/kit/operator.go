package kit

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/latchkit/auth/store"
)

// Operator is the kernel as the operators' recipe (package dashboard)
// sees it: the changes to users that package auth's Go API makes, with
// their events and their effect on sessions, which a recipe must not
// make on the Store behind the kernel's back. What it only reads (users,
// logins, sessions) it reads from the Store.
type Operator interface {
	// RequestUser is the user of the request's session, verified as
	// RequireSession verifies it, with its MFA requirement met and no
	// operator acting as the user (auth.Auth.Impersonate); ok is false
	// for a request without one. It answers nothing.
	RequestUser(r *http.Request) (userID string, ok bool)
	// Roles is the Store's RoleStore while auth.Config.Roles is on, and
	// nil otherwise.
	Roles() store.RoleStore
	// Verification reports whether auth.Config.EmailVerification is on.
	Verification() bool
	// FirstFactors are the factors that may start a session, as GET
	// /loginmethods lists them.
	FirstFactors() []string

	// DeleteUser is auth.Auth.DeleteUser, with r in its events.
	DeleteUser(ctx context.Context, r *http.Request, userID string) error
	// RevokeSession is auth.Auth.RevokeSession, with r in its event.
	RevokeSession(ctx context.Context, r *http.Request, handle string) error
	// SetEmailVerified is auth.Auth.SetEmailVerified, with r in its
	// events; taking a verification back reports EventEmailUnverified.
	SetEmailVerified(ctx context.Context, r *http.Request, loginID string, verified bool) error
	// SendVerification mails a verification link for the email of l, as
	// its user asking would, off the request's path; it returns how long
	// to wait instead when the user's allowance is spent.
	SendVerification(ctx context.Context, l store.Login) (wait time.Duration)
	// SetPassword sets password as that of the email and password login
	// of the user userID, as a reset does: the password policy first
	// (refused is its message, and nothing changed), then every session
	// of the user ends. store.ErrNotFound if the user has no such login.
	SetPassword(ctx context.Context, r *http.Request, userID, password string) (refused string, err error)
	// CreatePasswordUser creates a user with an email and password
	// login, as a sign-up does but starting no session. badEmail and
	// badPassword are the messages of a refused address or password;
	// store.ErrConflict if the address has a password login already, or
	// account linking holds it for another user.
	CreatePasswordUser(ctx context.Context, r *http.Request, email, password string) (u store.User, l store.Login, badEmail, badPassword string, err error)
	// CreatePasswordlessUser creates a user whose passwordless login has
	// contact, a normalised email address or E.164 phone number, unless
	// one has it: then it returns that login's user, created false. The
	// operator's word proves no inbox: the address is neither verified
	// nor proven, as an unproven login it owns nothing, and under
	// account linking it is refused (store.ErrConflict) where another
	// user holds the address.
	CreatePasswordlessUser(ctx context.Context, r *http.Request, contact string) (u store.User, l store.Login, created bool, err error)

	Tenants
}

// A TenantView is a tenant as the operators' recipe reads and changes it
// (auth.Tenant): what the dashboard app shows. Its other rules stay as
// they are when the recipe writes it.
type TenantView struct {
	ID string
	// FirstFactors are the tenant's own, nil for the deployment's.
	FirstFactors []string
	// RequiredSecondFactors are nil for none.
	RequiredSecondFactors []string
	// Providers name the tenant's providers.
	Providers []TenantProviderView
}

// A TenantProviderView is a provider of a tenant's (auth.TenantProvider):
// with an Issuer, the tenant's own OpenID Connect client; without, one of
// the deployment's, named.
type TenantProviderView struct {
	ID, Name, Issuer, ClientID, ClientSecret string
	Scopes                                   []string
}

// The errors of the operators' tenant API.
var (
	// ErrTenantsOff: the deployment has no tenants but the public one.
	ErrTenantsOff = errors.New("tenants are off")
	// ErrUnknownTenant: no tenant has the id.
	ErrUnknownTenant = errors.New("no such tenant")
	// ErrTenantExists: a tenant has the id already.
	ErrTenantExists = errors.New("the tenant exists")
)

// A TenantRefusal is a tenant configuration the kernel does not accept,
// with its reason.
type TenantRefusal struct {
	// BadID is set when the id is what it refuses.
	BadID  bool
	Reason string
}

func (e *TenantRefusal) Error() string { return e.Reason }

// Tenants is the part of Operator that manages tenants, as the Go API
// (auth.Auth.PutTenant and the rest) does, with its events.
type Tenants interface {
	// TenantsOn reports whether auth.Config.Tenants is on.
	TenantsOn() bool
	// Tenants lists every tenant but the public one, by id;
	// ErrTenantsOff.
	Tenants(ctx context.Context) ([]TenantView, error)
	// Tenant is the tenant id, the public one's from the configuration;
	// ErrUnknownTenant.
	Tenant(ctx context.Context, id string) (TenantView, error)
	// CreateTenant creates the tenant v; ErrTenantExists,
	// ErrTenantsOff, or a *TenantRefusal.
	CreateTenant(ctx context.Context, v TenantView) error
	// UpdateTenant replaces the first and required second factors of
	// the tenant v.ID; ErrUnknownTenant, or a *TenantRefusal.
	UpdateTenant(ctx context.Context, v TenantView) error
	// DeleteTenant is auth.Auth.DeleteTenant; ErrUnknownTenant.
	DeleteTenant(ctx context.Context, id string) error
	// PutTenantProvider adds p to the providers of the tenant id, or
	// replaces the one with its ID, and reports whether it added it;
	// ErrUnknownTenant, or a *TenantRefusal.
	PutTenantProvider(ctx context.Context, id string, p TenantProviderView) (created bool, err error)
	// DeleteTenantProvider removes the provider pid of the tenant id, and
	// reports whether it had one; ErrUnknownTenant.
	DeleteTenantProvider(ctx context.Context, id, pid string) (existed bool, err error)
	// OfferedFactors are the first factors the deployment's recipes
	// offer, which a tenant's may be chosen among.
	OfferedFactors() []string
	// SecondFactors are auth.Config.MFA.Factors: nil without MFA.
	SecondFactors() []string
}
