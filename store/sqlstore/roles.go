package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/latchkit/auth/store"
)

var _ store.RoleStore = (*Store)(nil)

// Roles live in auth_roles, their permissions in auth_role_permissions and
// who holds them in auth_user_roles (migration 14); seq orders each list.
//
// Every method that changes a role's permissions or holdings locks the
// role's row first, in a transaction: exclusively to delete the role,
// shared otherwise (SQLite's single writer stands for both). So a gift
// that locked the role before a deletion commits before it, and the
// deletion then reads its holding and deletes it; a gift that comes after
// finds no role. Giving and taking are insert-if-absent and delete of the
// holding's key, whose row count answers whether the user held the role:
// of concurrent gifts the database lets one insert, and the others wait
// for it and then find its row.

// roleQueries holds the statements of the roles, with the dialect's
// placeholders.
type roleQueries struct {
	insertRole, roleForShare, roleForUpdate      string
	holdersOf, deleteHoldings, deletePermissions string
	deleteRole                                   string
	roles, permissionsOf, rolesWith              string
	give, take, userRoles, usersWith             string
	deleteUser                                   string
	// insertPermissions and removePermissions are completed with one
	// row or placeholder per permission.
	insertPermissions, permissionsConflict, removePermissions string
}

func newRoleQueries(d Dialect) roleQueries {
	forUpdate, forShare := " FOR UPDATE", " FOR SHARE"
	switch d {
	case MySQL:
		forShare = " LOCK IN SHARE MODE" // MariaDB has no FOR SHARE
	case SQLite:
		forUpdate, forShare = "", ""
	}
	// Insert-if-absent: a duplicate is 0 rows (see newQueries).
	conflict := func(key string) string {
		if d == MySQL {
			return " ON DUPLICATE KEY UPDATE " + key + " = " + key
		}
		return " ON CONFLICT DO NOTHING"
	}
	q := roleQueries{
		insertRole:    `INSERT INTO auth_roles (name) VALUES (?)` + conflict("name"),
		roleForShare:  `SELECT 1 FROM auth_roles WHERE name = ?` + forShare,
		roleForUpdate: `SELECT 1 FROM auth_roles WHERE name = ?` + forUpdate,

		holdersOf:         `SELECT DISTINCT user_id FROM auth_user_roles WHERE role = ?`,
		deleteHoldings:    `DELETE FROM auth_user_roles WHERE role = ?`,
		deletePermissions: `DELETE FROM auth_role_permissions WHERE role = ?`,
		deleteRole:        `DELETE FROM auth_roles WHERE name = ?`,

		roles: `SELECT name FROM auth_roles ORDER BY seq`,
		// The role's row, and its permissions if it has any: no row at
		// all if there is no such role.
		permissionsOf: `SELECT p.permission FROM auth_roles r LEFT JOIN auth_role_permissions p ON p.role = r.name
			WHERE r.name = ? ORDER BY p.seq`,
		rolesWith: `SELECT r.name FROM auth_role_permissions p JOIN auth_roles r ON r.name = p.role
			WHERE p.permission = ? ORDER BY r.seq`,

		give: `INSERT INTO auth_user_roles (tenant, user_id, role) VALUES (?, ?, ?)` + conflict("role"),
		take: `DELETE FROM auth_user_roles WHERE tenant = ? AND user_id = ? AND role = ?`,
		// The roles and their permissions in one read (arguments:
		// tenant, user).
		userRoles: `SELECT h.role, p.permission FROM auth_user_roles h
			LEFT JOIN auth_role_permissions p ON p.role = h.role
			WHERE h.tenant = ? AND h.user_id = ? ORDER BY h.seq, p.seq`,
		// The role's row, and its holders in the tenant if it has any
		// (arguments: tenant, role).
		usersWith: `SELECT h.user_id FROM auth_roles r LEFT JOIN auth_user_roles h ON h.role = r.name AND h.tenant = ?
			WHERE r.name = ? ORDER BY h.seq`,
		deleteUser: `DELETE FROM auth_user_roles WHERE user_id = ?`,

		insertPermissions:   `INSERT INTO auth_role_permissions (role, permission) VALUES `,
		permissionsConflict: conflict("role"),
		removePermissions:   `DELETE FROM auth_role_permissions WHERE role = ? AND permission IN `,
	}
	if d == Postgres {
		for _, p := range []*string{&q.insertRole, &q.roleForShare, &q.roleForUpdate, &q.holdersOf, &q.deleteHoldings,
			&q.deletePermissions, &q.deleteRole, &q.permissionsOf, &q.rolesWith, &q.give, &q.take, &q.userRoles,
			&q.usersWith, &q.deleteUser} {
			*p = rebindQuery(*p)
		}
	}
	return q
}

// addPermissionsQuery adds n permissions to a role, in their order
// (arguments: the role and a permission, n times).
func (s *Store) addPermissionsQuery(n int) string {
	q := s.q.roles.insertPermissions + placeholders(n, "(?, ?)") + s.q.roles.permissionsConflict
	if s.dialect == Postgres {
		q = rebindQuery(q)
	}
	return q
}

// removePermissionsQuery takes n permissions from a role (arguments: the
// role, then the permissions).
func (s *Store) removePermissionsQuery(n int) string {
	q := s.q.roles.removePermissions + "(" + placeholders(n, "?") + ")"
	if s.dialect == Postgres {
		q = rebindQuery(q)
	}
	return q
}

// lockRole runs query, roleForShare or roleForUpdate, on the role name:
// ErrNotFound if there is no such role.
func lockRole(ctx context.Context, q querier, query, name string) error {
	var one int
	err := q.QueryRowContext(ctx, query, name).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return store.ErrNotFound
	}
	return err
}

// CreateRole implements store.RoleStore.
func (s *Store) CreateRole(ctx context.Context, name string, permissions []string) (bool, error) {
	permissions = distinct(permissions)
	var created bool
	err := s.inTx(ctx, func(q querier) (err error) {
		if created, err = s.ensureRole(ctx, q, name); err != nil || len(permissions) == 0 {
			return err
		}
		args := make([]any, 0, 2*len(permissions))
		for _, p := range permissions {
			args = append(args, name, p)
		}
		_, err = q.ExecContext(ctx, s.addPermissionsQuery(len(permissions)), args...)
		return err
	})
	if err != nil {
		return false, wrap("creating a role", err)
	}
	return created, nil
}

// ensureRole creates the role name if it does not exist and holds a lock
// on its row; it reports whether it created it. A role that exists, and
// that a concurrent DeleteRole deletes before the lock is taken, is
// created again.
func (s *Store) ensureRole(ctx context.Context, q querier, name string) (bool, error) {
	for range maxAttempts {
		n, err := affected(q.ExecContext(ctx, s.q.roles.insertRole, name))
		if err != nil || n > 0 {
			return n > 0, err
		}
		err = lockRole(ctx, q, s.q.roles.roleForShare, name)
		if !errors.Is(err, store.ErrNotFound) {
			return false, err
		}
	}
	return false, fmt.Errorf("role %q deleted %d times while it was created", name, maxAttempts)
}

// distinct returns list without repeats, in the order of first
// occurrence.
func distinct(list []string) []string {
	out := make([]string, 0, len(list))
	for _, v := range list {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// RemovePermissions implements store.RoleStore.
func (s *Store) RemovePermissions(ctx context.Context, name string, permissions []string) error {
	return wrap("removing permissions", s.inTx(ctx, func(q querier) error {
		if err := lockRole(ctx, q, s.q.roles.roleForShare, name); err != nil {
			return err
		}
		if len(permissions) == 0 {
			_, err := q.ExecContext(ctx, s.q.roles.deletePermissions, name)
			return err
		}
		args := make([]any, 0, 1+len(permissions))
		args = append(args, name)
		for _, p := range permissions {
			args = append(args, p)
		}
		_, err := q.ExecContext(ctx, s.removePermissionsQuery(len(permissions)), args...)
		return err
	}))
}

// DeleteRole implements store.RoleStore. The lock on the role's row waits
// for the gifts that locked it first, so the holders read after it include
// theirs.
func (s *Store) DeleteRole(ctx context.Context, name string) (bool, []string, error) {
	var users []string
	err := s.inTx(ctx, func(q querier) (err error) {
		users = nil
		if err := lockRole(ctx, q, s.q.roles.roleForUpdate, name); err != nil {
			return err
		}
		if users, err = queryStrings(ctx, q, s.q.roles.holdersOf, name); err != nil {
			return err
		}
		for _, query := range []string{s.q.roles.deleteHoldings, s.q.roles.deletePermissions, s.q.roles.deleteRole} {
			if _, err := q.ExecContext(ctx, query, name); err != nil {
				return err
			}
		}
		return nil
	})
	switch {
	case errors.Is(err, store.ErrNotFound):
		return false, []string{}, nil
	case err != nil:
		return false, nil, wrap("deleting a role", err)
	}
	return true, users, nil
}

// queryStrings runs a query of one column of strings.
func queryStrings(ctx context.Context, q querier, query string, args ...any) ([]string, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []string{}
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// Roles implements store.RoleStore.
func (s *Store) Roles(ctx context.Context) ([]string, error) {
	out, err := queryStrings(ctx, s.db, s.q.roles.roles)
	if err != nil {
		return nil, unavailable(fmt.Errorf("sqlstore: listing roles: %w", err))
	}
	return out, nil
}

// RolePermissions implements store.RoleStore in one statement, which
// returns a row with no permission for a role that has none, and no row
// if there is no such role.
func (s *Store) RolePermissions(ctx context.Context, name string) ([]string, error) {
	out, err := s.ofRole(ctx, s.q.roles.permissionsOf, name)
	if err != nil {
		return nil, wrap("reading a role's permissions", unavailable(err))
	}
	return out, nil
}

// ofRole runs permissionsOf or usersWith, whose last argument is the
// role and whose one column is NULL in the row of a role with no entries:
// ErrNotFound if there is no such role.
func (s *Store) ofRole(ctx context.Context, query string, args ...any) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out, found := []string{}, false
	for rows.Next() {
		var v sql.NullString
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		found = true
		if v.Valid {
			out = append(out, v.String)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if !found {
		return nil, store.ErrNotFound
	}
	return out, nil
}

// RolesWithPermission implements store.RoleStore: the roles in the order
// they were created.
func (s *Store) RolesWithPermission(ctx context.Context, permission string) ([]string, error) {
	out, err := queryStrings(ctx, s.db, s.q.roles.rolesWith, permission)
	if err != nil {
		return nil, unavailable(fmt.Errorf("sqlstore: listing the roles with a permission: %w", err))
	}
	return out, nil
}

// GiveRole implements store.RoleStore.
func (s *Store) GiveRole(ctx context.Context, tenant, userID, name string) (bool, error) {
	n, err := s.holding(ctx, "giving a role", s.q.roles.give, tenant, userID, name)
	return n == 0 && err == nil, err
}

// TakeRole implements store.RoleStore.
func (s *Store) TakeRole(ctx context.Context, tenant, userID, name string) (bool, error) {
	n, err := s.holding(ctx, "taking a role", s.q.roles.take, tenant, userID, name)
	return n > 0, err
}

// holding runs query, give or take, on the role's holding under a shared
// lock on the role's row, and returns the rows it changed: none for a gift
// if the user held the role, one for a take if they did.
func (s *Store) holding(ctx context.Context, what, query, tenant, userID, name string) (int64, error) {
	var n int64
	err := s.inTx(ctx, func(q querier) (err error) {
		if err := lockRole(ctx, q, s.q.roles.roleForShare, name); err != nil {
			return err
		}
		n, err = affected(q.ExecContext(ctx, query, tenant, userID, name))
		return err
	})
	return n, wrap(what, err)
}

// UserRoles implements store.RoleStore in one statement: a row for each
// of the user's roles and each of its permissions.
func (s *Store) UserRoles(ctx context.Context, tenant, userID string) ([]string, []string, error) {
	rows, err := s.db.QueryContext(ctx, s.q.roles.userRoles, tenant, userID)
	if err != nil {
		return nil, nil, unavailable(fmt.Errorf("sqlstore: reading a user's roles: %w", err))
	}
	defer rows.Close()
	l := newRoleList()
	for rows.Next() {
		var role string
		var permission sql.NullString
		if err := rows.Scan(&role, &permission); err != nil {
			return nil, nil, unavailable(fmt.Errorf("sqlstore: reading a user's roles: %w", err))
		}
		l.add(role, permission)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, unavailable(fmt.Errorf("sqlstore: reading a user's roles: %w", err))
	}
	return l.roles, l.permissions, nil
}

// roleList is what UserRoles returns, built from the rows of userRoles
// in their order (a role's rows are together): each role once, and each
// permission where it first appears. Empty, not nil, without any.
type roleList struct{ roles, permissions []string }

func newRoleList() roleList { return roleList{roles: []string{}, permissions: []string{}} }

// add takes the next row: a role the user holds and one of its
// permissions, or NULL for a role without any.
func (l *roleList) add(role string, permission sql.NullString) {
	if len(l.roles) == 0 || l.roles[len(l.roles)-1] != role {
		l.roles = append(l.roles, role)
	}
	if permission.Valid && !slices.Contains(l.permissions, permission.String) {
		l.permissions = append(l.permissions, permission.String)
	}
}

// sessionRolesJSON is a scalar subquery, for the RETURNING list of an
// UPDATE of auth_sessions on PostgreSQL or SQLite, that reads the rows of
// userRoles for the updated session's user (argument: the tenant) as one
// JSON array, which rolesFromJSON reads; NULL or [] if the user holds no
// role there. Each element carries its place in userRoles' order (the
// seq of the holding and of the permission): SQLite orders the input of
// an aggregate only from version 3.44 on.
func sessionRolesJSON(d Dialect) string {
	agg, object := "json_agg", "json_build_object"
	if d == SQLite {
		agg, object = "json_group_array", "json_object"
	}
	return `(SELECT ` + agg + `(` + object + `('h', h.seq, 'p', p.seq, 'role', h.role, 'permission', p.permission))
			FROM auth_user_roles h LEFT JOIN auth_role_permissions p ON p.role = h.role
			WHERE h.tenant = ? AND h.user_id = auth_sessions.user_id)`
}

// rolesFromJSON reads what sessionRolesJSON returned (nil for NULL) into
// what UserRoles would return.
func rolesFromJSON(text []byte) (roleList, error) {
	type row struct {
		Held       int64   `json:"h"`
		Seq        *int64  `json:"p"` // NULL for a role without permissions
		Role       string  `json:"role"`
		Permission *string `json:"permission"`
	}
	var rows []row
	if len(text) > 0 {
		if err := json.Unmarshal(text, &rows); err != nil {
			return roleList{}, err
		}
	}
	seq := func(r row) int64 {
		if r.Seq == nil {
			return math.MinInt64
		}
		return *r.Seq
	}
	slices.SortFunc(rows, func(a, b row) int {
		return cmp.Or(cmp.Compare(a.Held, b.Held), cmp.Compare(seq(a), seq(b)))
	})
	l := newRoleList()
	for _, r := range rows {
		var permission sql.NullString
		if r.Permission != nil {
			permission = sql.NullString{String: *r.Permission, Valid: true}
		}
		l.add(r.Role, permission)
	}
	return l, nil
}

// UsersWithRole implements store.RoleStore in one statement, which
// returns a row with no user for a role nobody holds in the tenant, and
// no row if there is no such role.
func (s *Store) UsersWithRole(ctx context.Context, tenant, name string) ([]string, error) {
	out, err := s.ofRole(ctx, s.q.roles.usersWith, tenant, name)
	if err != nil {
		return nil, wrap("listing the users with a role", unavailable(err))
	}
	return out, nil
}
