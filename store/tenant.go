package store

import (
	"context"
	"time"
)

// A Tenant is one customer's space in a deployment: its own users,
// sign-in rules and providers. The public tenant (PublicTenant) always
// exists and has no record.
type Tenant struct {
	// ID is the tenant's id: lower-case letters, digits and '-', as the
	// library checks before it reaches the store. Never "public".
	ID string
	// Config is the tenant's configuration in an encoding of the
	// library's (its secrets sealed). Stores keep it as written.
	Config []byte
	// CreatedAt is when the tenant was created, UpdatedAt when its
	// configuration was last written.
	CreatedAt, UpdatedAt time.Time
}

// A Member is a user's membership of a tenant other than the public one.
type Member struct {
	Tenant, UserID string
	// JoinedAt is when the user became a member.
	JoinedAt time.Time
}

// An Invitation asks the holder of an email address to join a tenant:
// a secret mailed to the address, known to the store by its hash, which
// works once and until it expires.
type Invitation struct {
	// Hash is the SHA-256 of the secret that was mailed. Unique.
	Hash TokenHash
	// Tenant is the tenant it invites to; Email the normalised address it
	// was sent to, which whoever accepts it must have proven.
	Tenant, Email string
	// Role is the role the member gets in the tenant, "" for none.
	Role string
	// InvitedBy is the id of the user or operator who sent it, "" for
	// the application.
	InvitedBy string
	// CreatedAt is when it was sent, ExpiresAt when it stops working.
	CreatedAt, ExpiresAt time.Time
}

// TenantStore keeps tenants, their members and the invitations to join
// them. It is optional: a deployment with tenants needs a Store that
// implements it (memstore and sqlstore do).
//
// Membership is what lets a user sign in on a tenant other than the
// public one. A store that is a TenantStore makes a user a member of a
// login's tenant, other than the public one, in the same step that adds
// the login (CreateUser, SignInUp creating a user, LinkLogin,
// AttachLogin), and forgets a user's memberships with the user
// (DeleteUser). The public tenant has no members: every user with a
// login in it belongs to it.
//
// Each method is atomic.
type TenantStore interface {
	// PutTenant creates the tenant t.ID with t's Config, or replaces the
	// Config of the tenant that exists (keeping its CreatedAt), and
	// reports whether it created it. CreatedAt and UpdatedAt are set from
	// t.UpdatedAt.
	PutTenant(ctx context.Context, t Tenant) (created bool, err error)
	// Tenant returns the tenant with the given id, or ErrNotFound.
	Tenant(ctx context.Context, id string) (Tenant, error)
	// Tenants lists every tenant, by id.
	Tenants(ctx context.Context) ([]Tenant, error)
	// DeleteTenant deletes the tenant, its memberships, invitations and
	// (in a RoleStore) the roles given in it, ends the sessions in it
	// (EndRevoked), and returns the handles of
	// those sessions; ErrNotFound if there is no such tenant. Logins in
	// the tenant stay, with their users, until the application deletes
	// the users: a tenant created again with the same id finds them, but
	// not their memberships.
	DeleteTenant(ctx context.Context, id string) (handles []string, err error)

	// AddMember makes the user userID a member of tenant, at at, and
	// reports whether they were not one already. ErrNotFound if there is
	// no such user or tenant.
	AddMember(ctx context.Context, tenant, userID string, at time.Time) (added bool, err error)
	// RemoveMember ends the membership of the user userID in tenant,
	// takes the roles the user holds in it (in a RoleStore) and ends the
	// user's sessions in it (EndRevoked), in one step, and
	// returns the handles of those sessions. ErrNotFound if the user is
	// not a member.
	RemoveMember(ctx context.Context, tenant, userID string) (handles []string, err error)
	// Membership returns the membership of the user userID in tenant, or
	// ErrNotFound.
	Membership(ctx context.Context, tenant, userID string) (Member, error)
	// Members lists the members of tenant who joined after the member
	// after names (a user id from the page before, "" for the first page),
	// at most limit of them (at most MaxUserPage; DefaultUserPage when not
	// positive), in the order they joined (by JoinedAt, then user id).
	Members(ctx context.Context, tenant, after string, limit int) ([]Member, error)
	// UserTenants lists the tenants the user userID is a member of, by
	// tenant id.
	UserTenants(ctx context.Context, userID string) ([]string, error)

	// CreateInvitation stores inv. ErrNotFound if its tenant does not
	// exist. Invitations of one tenant and address may be several: each
	// works until used or revoked.
	CreateInvitation(ctx context.Context, inv Invitation) error
	// Invitations lists the invitations of tenant live at now, oldest
	// first.
	Invitations(ctx context.Context, tenant string, now time.Time) ([]Invitation, error)
	// RevokeInvitations deletes the invitations of tenant to email and
	// returns how many there were.
	RevokeInvitations(ctx context.Context, tenant, email string) (int, error)
	// AcceptInvitation uses up the invitation with the given hash, live
	// at now, for the user userID: in one step it makes the user a member
	// of the invitation's tenant (as AddMember) and deletes every
	// invitation of that tenant to the invitation's address. It returns
	// the invitation as it was, or ErrNotFound if there is no such live
	// invitation or no such user; then nothing changes. Of several
	// concurrent calls with one invitation at most one succeeds.
	AcceptInvitation(ctx context.Context, hash TokenHash, userID string, now time.Time) (Invitation, error)
}
