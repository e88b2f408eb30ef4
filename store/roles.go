package store

import "context"

// PublicTenant is the tenant of every user until an application has
// tenants of its own: the roles a user holds are recorded per tenant, so
// that the records need no migration when tenants come.
const PublicTenant = "public"

// RoleStore keeps roles, their permissions and which user holds which
// role, for package roles. It is optional: the roles recipe needs a Store
// that implements it (memstore and sqlstore do).
//
// Roles and their permissions belong to the application: a role is
// known by its name, and its permissions are plain strings, with no
// hierarchy. Which user holds which role is recorded per tenant. Names and
// permissions arrive trimmed and non-empty, at most 255 bytes; a store
// need not check them. Lists come back in the order their entries were
// added, with no repeats.
//
// Each method is atomic. In particular a role given while it is being
// deleted either is given before the deletion, which then takes it away,
// or fails with ErrNotFound: no user holds a role that does not exist.
// Giving a role twice at once records it once: one call reports that the
// user did not have it, the other that they did.
type RoleStore interface {
	// CreateRole creates role if it does not exist, and adds permissions
	// to it (those it has already stay). It reports whether it created
	// the role.
	CreateRole(ctx context.Context, role string, permissions []string) (created bool, err error)

	// RemovePermissions takes permissions from role; no permissions takes
	// them all. ErrNotFound if there is no such role.
	RemovePermissions(ctx context.Context, role string, permissions []string) error

	// DeleteRole deletes role and takes it from every user who holds it,
	// in every tenant, and returns those users' ids (each once, in no
	// particular order). existed is false, and users empty, if there was
	// no such role.
	DeleteRole(ctx context.Context, role string) (existed bool, users []string, err error)

	// Roles lists every role.
	Roles(ctx context.Context) ([]string, error)

	// RolePermissions lists the permissions of role. ErrNotFound if there
	// is no such role.
	RolePermissions(ctx context.Context, role string) ([]string, error)

	// RolesWithPermission lists the roles that have permission, in the
	// order the roles were created, as Roles lists them.
	RolesWithPermission(ctx context.Context, permission string) ([]string, error)

	// GiveRole gives role to the user userID in tenant, and reports
	// whether the user held it already. ErrNotFound if there is no such
	// role. It does not check that the user exists.
	GiveRole(ctx context.Context, tenant, userID, role string) (had bool, err error)

	// TakeRole takes role from the user userID in tenant, and reports
	// whether the user held it. ErrNotFound if there is no such role.
	TakeRole(ctx context.Context, tenant, userID, role string) (had bool, err error)

	// UserRoles lists the roles the user userID holds in tenant, and the
	// permissions of those roles (each once: the union, in the order of
	// the roles and then of each role's permissions), in one read.
	UserRoles(ctx context.Context, tenant, userID string) (roles, permissions []string, err error)

	// UsersWithRole lists the users who hold role in tenant, in the order
	// they were given it. ErrNotFound if there is no such role.
	UsersWithRole(ctx context.Context, tenant, role string) ([]string, error)
}
