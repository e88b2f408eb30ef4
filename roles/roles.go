// Package roles is the roles recipe: who may do what, as roles that hold
// permissions, given to users, and carried in every access token where
// the SuperTokens SDKs read them. Give New's Recipe to auth.Config.Roles,
// and keep it: its methods are the Go API.
//
// # Model
//
// Roles and their permissions belong to the application: a role is
// known by its name, its permissions are plain strings, and there is no
// hierarchy. Which user holds which role is recorded per tenant: the
// public one, unless the context of a call names another (auth.InTenant,
// or a protected handler's, whose session is of another), and a
// session's claims carry its tenant's. Names and permissions are trimmed,
// and must be 1 to 255 bytes. Giving a role that does not exist is
// refused ([ErrUnknownRole]); deleting a role takes it from every user.
// The Store must implement store.RoleStore (memstore and sqlstore do).
//
// # Claims
//
// Every access token carries two claims, as the SDKs' UserRoleClaim and
// PermissionClaim read them:
//
//	"st-role": {"v": ["admin"], "t": 1735689600000}
//	"st-perm": {"v": ["posts:write", "posts:read"], "t": 1735689600000}
//
// v lists the user's roles, and the permissions of those roles; t is when
// they were read, in milliseconds. They are read from the store when a
// session starts and again at every refresh, unlike the SuperTokens
// backends, whose refresh carries the old value: a role given or taken,
// or a permission added to or removed from a role, reaches every session
// of the user at its next refresh, and so a role taken away authorises
// nothing after one access-token lifetime (auth.Config.AccessTokenLifetime)
// at most. A token without the claims (one issued before the recipe was
// on) has them read from the store by the first route that checks them,
// which answers with a new access token.
//
// With auth.Config.CheckSessionInStore, a route that has one of this
// package's rules reads the user's roles from the store at every request,
// a second read beside the session's, so that a change applies at once;
// where the token's value differs from what it read, the answer carries a
// new access token with the value read.
//
// # Events
//
// Each change reports an auth.Event, in the audit log too with
// auth.Config.Audit: auth.EventRoleGiven and auth.EventRoleTaken (a role
// the user did not hold, or held), with the user and Event.Role;
// auth.EventRoleCreated, auth.EventRoleChanged (permissions added to a
// role that existed, or removed) and auth.EventRoleDeleted, with
// Event.Role alone. A call made with a context from auth.WithOperator
// names the operator.
//
// # Rules
//
// [Require], [RequireAny] and [RequireAll] ask a route's session for
// roles, [RequirePermission], [RequireAnyPermission] and
// [RequireAllPermissions] for permissions; give them to
// auth.Auth.RequireSession. Every rule given must hold. Inside a
// handler, [Recipe.Permitted] asks the store instead. A session that
// fails one is answered 403 with the SDKs' "invalid claim" body, with an
// entry for each rule that fails, whose reason is the validator's: for
// Require("admin"),
//
//	{"message":"invalid claim","claimValidationErrors":[{"id":"st-role",
//	 "reason":{"message":"wrong value","expectedToInclude":"admin","actualValue":["editor"]}}]}
//
// RequireAll's expectedToInclude is the list, and RequireAny's reason
// names expectedToIncludeAtLeastOneOf, as the SDKs' includesAll and
// includesAny validators do. A rule's names are trimmed as the Go API's
// are; a rule that names none, or a name the Go API refuses, panics when
// it is made, as a route's mistake, never a rule that passes everyone.
//
// # Cost
//
// A sign-in and a refresh each read the user's roles and permissions in
// one Store call (store.RoleStore.UserRoles: one statement, a join, on
// SQL), beside the rotation's own; that read is what lets a change reach
// a session at its next refresh. A route checks a rule against the
// token's claims and reads nothing, unless CheckSessionInStore is on (one
// call a request) or the token has no claims. BENCHMARKS.md has the
// figures.
//
// # Routes
//
// None: the SDKs have no routes for roles; they read the claims.
package roles

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/latchkit/auth/internal/kit"
	"github.com/latchkit/auth/store"
)

// ErrUnknownRole reports a role that does not exist.
var ErrUnknownRole = errors.New("roles: no such role")

// maxName is the longest role name or permission, in bytes.
const maxName = 255

// Config configures the roles recipe. Its zero value is the SDKs'
// default: both claims in every token.
type Config struct{}

// A Recipe turns roles on for the auth.Config whose Roles field it is,
// and is the Go API of that auth.Auth's roles: a Recipe serves one
// auth.Auth.
type Recipe struct {
	c Config

	mu    sync.Mutex
	k     kit.Kernel      // set by Build
	st    store.RoleStore // the kernel's Store
	fresh bool            // checks read the store: auth.Config.CheckSessionInStore
}

// New returns the recipe configured by c.
func New(c Config) *Recipe { return &Recipe{c: c} }

// Build registers the recipe's claims for one auth.Auth: auth.New calls
// it, with the kernel's seam.
func (p *Recipe) Build(k kit.Kernel, setup kit.Setup) (map[string]kit.Route, error) {
	if p == nil {
		return nil, errors.New("auth: Config.Roles is a nil *roles.Recipe: use roles.New")
	}
	st, ok := k.Store().(store.RoleStore)
	if !ok {
		return nil, fmt.Errorf("auth: Config.Roles needs a Store that implements store.RoleStore; %T does not", k.Store())
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.k != nil {
		return nil, errors.New("auth: this roles.Recipe serves another Auth already: make one for each")
	}
	for _, c := range []kit.Claim{roleClaim{p}, permissionClaim{p}} {
		if err := k.RegisterClaim(c); err != nil {
			return nil, err
		}
	}
	k.RolesWithRotation(store.PublicTenant)
	p.k, p.st, p.fresh = k, st, setup.CheckSessionInStore
	return nil, nil
}

// store is the RoleStore of the Auth the recipe serves, or an error
// before it is built.
func (p *Recipe) store() (store.RoleStore, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.st == nil {
		return nil, errors.New("roles: the recipe is not in the Config of an auth.Auth yet (auth.New builds it)")
	}
	return p.st, nil
}

// name trims a role or permission and checks its length.
func name(kind, s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" || len(s) > maxName {
		return "", fmt.Errorf("roles: a %s must be 1 to %d bytes, not %q", kind, maxName, s)
	}
	return s, nil
}

// names trims each of a list and drops repeats.
func names(kind string, list []string) ([]string, error) {
	var out []string
	for _, s := range list {
		n, err := name(kind, s)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out, nil
}

// unknown turns the store's ErrNotFound into ErrUnknownRole.
func unknown(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return ErrUnknownRole
	}
	return err
}

// CreateRole creates role if it does not exist, and adds permissions to
// it; it reports whether it created the role. Sessions of users who hold
// the role see the new permissions from their next refresh.
func (p *Recipe) CreateRole(ctx context.Context, role string, permissions ...string) (created bool, err error) {
	st, err := p.store()
	if err != nil {
		return false, err
	}
	if role, err = name("role", role); err != nil {
		return false, err
	}
	if permissions, err = names("permission", permissions); err != nil {
		return false, err
	}
	if created, err = st.CreateRole(ctx, role, permissions); err != nil {
		return false, err
	}
	switch {
	case created:
		p.emit(ctx, kit.EventRoleCreated, "", role)
	case len(permissions) > 0:
		p.emit(ctx, kit.EventRoleChanged, "", role)
	}
	return created, nil
}

// emit reports a change of roles: to the user userID, or of the role
// itself when userID is "".
func (p *Recipe) emit(ctx context.Context, kind, userID, role string) {
	p.k.Emit(ctx, nil, kit.Event{Kind: kind, UserID: userID, Role: role})
}

// RemovePermissions takes permissions from role, or every permission if
// none is given. ErrUnknownRole if there is no such role.
func (p *Recipe) RemovePermissions(ctx context.Context, role string, permissions ...string) error {
	st, err := p.store()
	if err != nil {
		return err
	}
	if role, err = name("role", role); err != nil {
		return err
	}
	if permissions, err = names("permission", permissions); err != nil {
		return err
	}
	if err := st.RemovePermissions(ctx, role, permissions); err != nil {
		return unknown(err)
	}
	p.emit(ctx, kit.EventRoleChanged, "", role)
	return nil
}

// DeleteRole deletes role and takes it from every user who holds it,
// reporting whether it existed.
func (p *Recipe) DeleteRole(ctx context.Context, role string) (existed bool, err error) {
	st, err := p.store()
	if err != nil {
		return false, err
	}
	if role, err = name("role", role); err != nil {
		return false, err
	}
	if existed, _, err = st.DeleteRole(ctx, role); err != nil || !existed {
		return existed, err
	}
	p.emit(ctx, kit.EventRoleDeleted, "", role)
	return true, nil
}

// Roles lists every role.
func (p *Recipe) Roles(ctx context.Context) ([]string, error) {
	st, err := p.store()
	if err != nil {
		return nil, err
	}
	return st.Roles(ctx)
}

// Permissions lists the permissions of role. ErrUnknownRole if there is
// no such role.
func (p *Recipe) Permissions(ctx context.Context, role string) ([]string, error) {
	st, err := p.store()
	if err != nil {
		return nil, err
	}
	if role, err = name("role", role); err != nil {
		return nil, err
	}
	perms, err := st.RolePermissions(ctx, role)
	return perms, unknown(err)
}

// RolesWithPermission lists the roles that have permission.
func (p *Recipe) RolesWithPermission(ctx context.Context, permission string) ([]string, error) {
	st, err := p.store()
	if err != nil {
		return nil, err
	}
	if permission, err = name("permission", permission); err != nil {
		return nil, err
	}
	return st.RolesWithPermission(ctx, permission)
}

// Give gives role to the user userID, and reports whether the user held
// it already. ErrUnknownRole if there is no such role. The user's
// sessions carry the role from their next refresh.
func (p *Recipe) Give(ctx context.Context, userID, role string) (had bool, err error) {
	st, err := p.store()
	if err != nil {
		return false, err
	}
	if role, err = name("role", role); err != nil {
		return false, err
	}
	if had, err = st.GiveRole(ctx, kit.TenantIDOf(ctx), userID, role); err != nil || had {
		return had, unknown(err)
	}
	p.emit(ctx, kit.EventRoleGiven, userID, role)
	return false, nil
}

// Take takes role from the user userID, and reports whether the user
// held it. ErrUnknownRole if there is no such role. The user's sessions
// lose it at their next refresh, within an access-token lifetime.
func (p *Recipe) Take(ctx context.Context, userID, role string) (had bool, err error) {
	st, err := p.store()
	if err != nil {
		return false, err
	}
	if role, err = name("role", role); err != nil {
		return false, err
	}
	if had, err = st.TakeRole(ctx, kit.TenantIDOf(ctx), userID, role); err != nil || !had {
		return had, unknown(err)
	}
	p.emit(ctx, kit.EventRoleTaken, userID, role)
	return true, nil
}

// UserRoles lists the roles of the user userID, and the permissions
// those roles hold.
func (p *Recipe) UserRoles(ctx context.Context, userID string) (roles, permissions []string, err error) {
	st, err := p.store()
	if err != nil {
		return nil, nil, err
	}
	return st.UserRoles(ctx, kit.TenantIDOf(ctx), userID)
}

// Permitted reports whether the user userID holds permission through any
// of their roles, as the store has it now: a check inside a handler,
// where the rules check what the session's token carries.
func (p *Recipe) Permitted(ctx context.Context, userID, permission string) (bool, error) {
	_, permissions, err := p.UserRoles(ctx, userID)
	return slices.Contains(permissions, strings.TrimSpace(permission)), err
}

// UsersWithRole lists the users who hold role. ErrUnknownRole if there
// is no such role.
func (p *Recipe) UsersWithRole(ctx context.Context, role string) ([]string, error) {
	st, err := p.store()
	if err != nil {
		return nil, err
	}
	if role, err = name("role", role); err != nil {
		return nil, err
	}
	users, err := st.UsersWithRole(ctx, kit.TenantIDOf(ctx), role)
	return users, unknown(err)
}
