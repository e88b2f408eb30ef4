package memstore

import (
	"cmp"
	"context"
	"slices"

	"github.com/latchkit/auth/store"
)

var _ store.RoleStore = (*Store)(nil)

// holder is a user in a tenant, who may hold roles.
type holder struct{ tenant, userID string }

// role is a role with its permissions and the users who hold it, each in
// the order they were added.
type role struct {
	seq         uint64 // creation order among the roles
	permissions []string
	holders     []holder
}

// roleRecords are the roles and who holds them. Every method of Store
// that reads or changes them holds mu, as the rest of the store does.
type roleRecords struct {
	seq     uint64           // the seq of the role created last
	byName  map[string]*role // by name
	held    map[holder][]string
	tenants map[string]map[string]struct{} // user id -> tenants where it holds roles
}

func newRoleRecords() roleRecords {
	return roleRecords{
		byName:  make(map[string]*role),
		held:    make(map[holder][]string),
		tenants: make(map[string]map[string]struct{}),
	}
}

// CreateRole implements store.RoleStore.
func (s *Store) CreateRole(_ context.Context, name string, permissions []string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()

	r, ok := s.roles.byName[name]
	if !ok {
		s.roles.seq++
		r = &role{seq: s.roles.seq}
		s.roles.byName[name] = r
	}
	for _, p := range permissions {
		if !slices.Contains(r.permissions, p) {
			r.permissions = append(r.permissions, p)
		}
	}
	return !ok, nil
}

// RemovePermissions implements store.RoleStore.
func (s *Store) RemovePermissions(_ context.Context, name string, permissions []string) error {
	s.mu.Lock()
	defer s.mu.Unlock()

	r, ok := s.roles.byName[name]
	if !ok {
		return store.ErrNotFound
	}
	if len(permissions) == 0 {
		r.permissions = nil
		return nil
	}
	r.permissions = slices.DeleteFunc(r.permissions, func(p string) bool { return slices.Contains(permissions, p) })
	return nil
}

// DeleteRole implements store.RoleStore.
func (s *Store) DeleteRole(_ context.Context, name string) (bool, []string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()

	r, ok := s.roles.byName[name]
	if !ok {
		return false, []string{}, nil
	}
	users := []string{}
	for _, h := range r.holders {
		if !slices.Contains(users, h.userID) {
			users = append(users, h.userID)
		}
		s.roles.take(h, name)
	}
	delete(s.roles.byName, name)
	return true, users, nil
}

// Roles implements store.RoleStore.
func (s *Store) Roles(_ context.Context) ([]string, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()

	return s.roles.sorted(func(*role) bool { return true }), nil
}

// sorted returns the names of the roles that match, oldest first.
func (rs *roleRecords) sorted(match func(*role) bool) []string {
	names := []string{}
	for name, r := range rs.byName {
		if match(r) {
			names = append(names, name)
		}
	}
	slices.SortFunc(names, func(a, b string) int { return cmp.Compare(rs.byName[a].seq, rs.byName[b].seq) })
	return names
}

// RolePermissions implements store.RoleStore.
func (s *Store) RolePermissions(_ context.Context, name string) ([]string, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()

	r, ok := s.roles.byName[name]
	if !ok {
		return nil, store.ErrNotFound
	}
	return append([]string{}, r.permissions...), nil
}

// RolesWithPermission implements store.RoleStore: the roles in the order
// they were created.
func (s *Store) RolesWithPermission(_ context.Context, permission string) ([]string, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()

	return s.roles.sorted(func(r *role) bool { return slices.Contains(r.permissions, permission) }), nil
}

// GiveRole implements store.RoleStore.
func (s *Store) GiveRole(_ context.Context, tenant, userID, name string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()

	r, ok := s.roles.byName[name]
	if !ok {
		return false, store.ErrNotFound
	}
	h := holder{tenant, userID}
	if slices.Contains(s.roles.held[h], name) {
		return true, nil
	}
	s.roles.held[h] = append(s.roles.held[h], name)
	r.holders = append(r.holders, h)
	if s.roles.tenants[userID] == nil {
		s.roles.tenants[userID] = make(map[string]struct{})
	}
	s.roles.tenants[userID][tenant] = struct{}{}
	return false, nil
}

// TakeRole implements store.RoleStore.
func (s *Store) TakeRole(_ context.Context, tenant, userID, name string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()

	r, ok := s.roles.byName[name]
	if !ok {
		return false, store.ErrNotFound
	}
	h := holder{tenant, userID}
	if !slices.Contains(s.roles.held[h], name) {
		return false, nil
	}
	s.roles.take(h, name)
	r.holders = slices.DeleteFunc(r.holders, func(o holder) bool { return o == h })
	return true, nil
}

// take removes name from the roles h holds, and forgets h if it holds no
// more; the role's own list of holders is the caller's to change.
func (rs *roleRecords) take(h holder, name string) {
	left := slices.DeleteFunc(rs.held[h], func(n string) bool { return n == name })
	if len(left) > 0 {
		rs.held[h] = left
		return
	}
	delete(rs.held, h)
	delete(rs.tenants[h.userID], h.tenant)
	if len(rs.tenants[h.userID]) == 0 {
		delete(rs.tenants, h.userID)
	}
}

// dropUser takes every role from the user, in every tenant.
func (rs *roleRecords) dropUser(userID string) {
	for tenant := range rs.tenants[userID] {
		h := holder{tenant, userID}
		for _, name := range rs.held[h] {
			r := rs.byName[name]
			r.holders = slices.DeleteFunc(r.holders, func(o holder) bool { return o == h })
		}
		delete(rs.held, h)
	}
	delete(rs.tenants, userID)
}

// dropHolder takes every role from h.
func (rs *roleRecords) dropHolder(h holder) {
	for _, name := range rs.held[h] {
		r := rs.byName[name]
		r.holders = slices.DeleteFunc(r.holders, func(o holder) bool { return o == h })
	}
	delete(rs.held, h)
	delete(rs.tenants[h.userID], h.tenant)
	if len(rs.tenants[h.userID]) == 0 {
		delete(rs.tenants, h.userID)
	}
}

// dropTenant takes every role given in the tenant.
func (rs *roleRecords) dropTenant(tenant string) {
	for h := range rs.held {
		if h.tenant == tenant {
			rs.dropHolder(h)
		}
	}
}

// UserRoles implements store.RoleStore.
func (s *Store) UserRoles(_ context.Context, tenant, userID string) ([]string, []string, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()

	roles, permissions := s.roles.of(tenant, userID)
	return roles, permissions, nil
}

// of returns the roles the user holds in the tenant, in the order given,
// and their permissions, each where it first appears: what UserRoles
// returns, and RotateRefreshToken with RolesOf.
func (rs *roleRecords) of(tenant, userID string) (roles, permissions []string) {
	roles = append([]string{}, rs.held[holder{tenant, userID}]...)
	permissions = []string{}
	for _, name := range roles {
		for _, p := range rs.byName[name].permissions {
			if !slices.Contains(permissions, p) {
				permissions = append(permissions, p)
			}
		}
	}
	return roles, permissions
}

// UsersWithRole implements store.RoleStore.
func (s *Store) UsersWithRole(_ context.Context, tenant, name string) ([]string, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()

	r, ok := s.roles.byName[name]
	if !ok {
		return nil, store.ErrNotFound
	}
	users := []string{}
	for _, h := range r.holders {
		if h.tenant == tenant {
			users = append(users, h.userID)
		}
	}
	return users, nil
}
