package storetest

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/latchkit/auth/store"
)

// roleTests run only for stores that implement store.RoleStore.
var roleTests = []test{
	{"Create", testRoleCreate},
	{"CreateWithoutPermissions", testRoleCreateWithoutPermissions},
	{"RemovePermissions", testRoleRemovePermissions},
	{"DeleteRole", testRoleDelete},
	{"DeleteUnknownRole", testRoleDeleteUnknown},
	{"Roles", testRoleList},
	{"RolePermissionsUnknown", testRolePermissionsUnknown},
	{"RolesWithPermission", testRolesWithPermission},
	{"GiveAndTake", testRoleGiveAndTake},
	{"GiveAndTakeUnknownRole", testRoleGiveUnknown},
	{"Tenants", testRoleTenants},
	{"UserRoles", testRoleUserRoles},
	{"UsersWithRole", testRoleUsersWithRole},
	{"DeleteUser", testRoleDeleteUser},
	{"ConcurrentGiveAndDelete", testRoleConcurrentGiveAndDelete},
	{"ConcurrentGiveSame", testRoleConcurrentGiveSame},
	{"ConcurrentTakeSame", testRoleConcurrentTakeSame},
	{"ConcurrentCreateSame", testRoleConcurrentCreateSame},
}

// roleRounds is how often each race of the roles group is run.
const roleRounds = 5

func roles(t *testing.T, s store.Store) store.RoleStore {
	t.Helper()
	r, ok := s.(store.RoleStore)
	if !ok {
		t.Fatal("newStore returned a store that is not a RoleStore, unlike the first one")
	}
	return r
}

// wantList reports a failure of rule unless got is want, in order, and err
// is nil.
func wantList(t *testing.T, what string, got []string, err error, want []string, rule string) {
	t.Helper()
	if err != nil {
		t.Errorf("%s: %s; got error %v", what, rule, err)
		return
	}
	if !slices.Equal(got, want) {
		t.Errorf("%s: %s; got %q, want %q", what, rule, got, want)
	}
}

func mustCreateRole(t *testing.T, r store.RoleStore, name string, permissions ...string) bool {
	t.Helper()
	created, err := r.CreateRole(t.Context(), name, permissions)
	if err != nil {
		t.Fatalf("CreateRole(%q): must succeed; got error %v", name, err)
	}
	return created
}

func mustGiveRole(t *testing.T, r store.RoleStore, tenant, userID, name string, had bool, rule string) {
	t.Helper()
	got, err := r.GiveRole(t.Context(), tenant, userID, name)
	if err != nil {
		t.Fatalf("GiveRole(%q, %q, %q): %s; got error %v", tenant, userID, name, rule, err)
	}
	if got != had {
		t.Errorf("GiveRole(%q, %q, %q): %s; got had %v, want %v", tenant, userID, name, rule, got, had)
	}
}

func mustTakeRole(t *testing.T, r store.RoleStore, tenant, userID, name string, had bool, rule string) {
	t.Helper()
	got, err := r.TakeRole(t.Context(), tenant, userID, name)
	if err != nil {
		t.Fatalf("TakeRole(%q, %q, %q): %s; got error %v", tenant, userID, name, rule, err)
	}
	if got != had {
		t.Errorf("TakeRole(%q, %q, %q): %s; got had %v, want %v", tenant, userID, name, rule, got, had)
	}
}

func wantRolePermissions(t *testing.T, r store.RoleStore, name string, want []string, rule string) {
	t.Helper()
	got, err := r.RolePermissions(t.Context(), name)
	wantList(t, fmt.Sprintf("RolePermissions(%q)", name), got, err, want, rule)
}

func wantUserRoles(t *testing.T, r store.RoleStore, tenant, userID string, roles, permissions []string, rule string) {
	t.Helper()
	gotRoles, gotPermissions, err := r.UserRoles(t.Context(), tenant, userID)
	what := fmt.Sprintf("UserRoles(%q, %q)", tenant, userID)
	wantList(t, what+", roles", gotRoles, err, roles, rule)
	if err == nil {
		wantList(t, what+", permissions", gotPermissions, nil, permissions, rule)
	}
}

func wantUsersWithRole(t *testing.T, r store.RoleStore, tenant, name string, want []string, rule string) {
	t.Helper()
	got, err := r.UsersWithRole(t.Context(), tenant, name)
	wantList(t, fmt.Sprintf("UsersWithRole(%q, %q)", tenant, name), got, err, want, rule)
}

func wantRoles(t *testing.T, r store.RoleStore, want []string, rule string) {
	t.Helper()
	got, err := r.Roles(t.Context())
	wantList(t, "Roles", got, err, want, rule)
}

func testRoleCreate(t *testing.T, s store.Store) {
	r := roles(t, s)
	if !mustCreateRole(t, r, "editor", "read", "write") {
		t.Error("CreateRole: a new role must be reported created")
	}
	wantRolePermissions(t, r, "editor", []string{"read", "write"}, "a new role must have the permissions it was created with, in order")
	if mustCreateRole(t, r, "editor", "publish", "read", "delete", "publish") {
		t.Error("CreateRole: a role that exists must not be reported created")
	}
	wantRolePermissions(t, r, "editor", []string{"read", "write", "publish", "delete"},
		"CreateRole of an existing role must add the new permissions after the old ones, each once")
	if mustCreateRole(t, r, "editor") {
		t.Error("CreateRole: a role that exists must not be reported created, even with no permissions")
	}
	wantRolePermissions(t, r, "editor", []string{"read", "write", "publish", "delete"},
		"CreateRole with no permissions must keep the role's permissions")
}

func testRoleCreateWithoutPermissions(t *testing.T, s store.Store) {
	r := roles(t, s)
	if !mustCreateRole(t, r, "guest") {
		t.Error("CreateRole: a new role with no permissions must be reported created")
	}
	wantRolePermissions(t, r, "guest", nil, "a role created with no permissions must have none")
	wantRoles(t, r, []string{"guest"}, "a role created with no permissions must exist")
}

func testRoleRemovePermissions(t *testing.T, s store.Store) {
	ctx := t.Context()
	r := roles(t, s)
	mustCreateRole(t, r, "editor", "read", "write", "publish", "delete")
	if err := r.RemovePermissions(ctx, "editor", []string{"write", "delete", "unknown"}); err != nil {
		t.Fatalf("RemovePermissions: must succeed on a role that exists; got error %v", err)
	}
	wantRolePermissions(t, r, "editor", []string{"read", "publish"}, "RemovePermissions must take the permissions named, and only them")
	mustCreateRole(t, r, "editor", "write")
	wantRolePermissions(t, r, "editor", []string{"read", "publish", "write"}, "a permission removed and added again must come last")
	if err := r.RemovePermissions(ctx, "editor", nil); err != nil {
		t.Fatalf("RemovePermissions: must succeed on a role that exists; got error %v", err)
	}
	wantRolePermissions(t, r, "editor", nil, "RemovePermissions with no permissions must take them all")
	wantRoles(t, r, []string{"editor"}, "RemovePermissions must not delete the role")
	err := r.RemovePermissions(ctx, "nobody", []string{"read"})
	wantErr(t, err, store.ErrNotFound, "RemovePermissions: a role that does not exist must be ErrNotFound")
	err = r.RemovePermissions(ctx, "nobody", nil)
	wantErr(t, err, store.ErrNotFound, "RemovePermissions: a role that does not exist must be ErrNotFound, with no permissions too")
	wantRoles(t, r, []string{"editor"}, "RemovePermissions of an unknown role must not create it")
}

func testRoleDelete(t *testing.T, s store.Store) {
	ctx := t.Context()
	r := roles(t, s)
	mustCreateRole(t, r, "editor", "read", "write")
	mustCreateRole(t, r, "viewer", "read")
	mustGiveRole(t, r, store.PublicTenant, "u1", "editor", false, "a role must be given")
	mustGiveRole(t, r, store.PublicTenant, "u1", "viewer", false, "a role must be given")
	mustGiveRole(t, r, "a", "u1", "editor", false, "a role must be given in another tenant")
	mustGiveRole(t, r, "a", "u2", "editor", false, "a role must be given")
	mustGiveRole(t, r, "a", "u3", "viewer", false, "a role must be given")

	existed, users, err := r.DeleteRole(ctx, "editor")
	if err != nil || !existed {
		t.Fatalf("DeleteRole: a role that exists must be deleted and reported existing; got %v, %v", existed, err)
	}
	if got := slices.Sorted(slices.Values(users)); !slices.Equal(got, []string{"u1", "u2"}) {
		t.Errorf("DeleteRole: must return every user who held the role, in every tenant, each once; got %q, want [u1 u2] in any order", users)
	}
	wantRoles(t, r, []string{"viewer"}, "a deleted role must not be listed")
	_, err = r.RolePermissions(ctx, "editor")
	wantErr(t, err, store.ErrNotFound, "RolePermissions: a deleted role must be ErrNotFound")
	got, err := r.RolesWithPermission(ctx, "write")
	wantList(t, "RolesWithPermission", got, err, nil, "a deleted role must not be listed")
	wantUserRoles(t, r, store.PublicTenant, "u1", []string{"viewer"}, []string{"read"}, "a deleted role must be taken from its users")
	wantUserRoles(t, r, "a", "u1", nil, nil, "a deleted role must be taken from its users in every tenant")
	wantUserRoles(t, r, "a", "u2", nil, nil, "a deleted role must be taken from its users in every tenant")
	wantUserRoles(t, r, "a", "u3", []string{"viewer"}, []string{"read"}, "deleting a role must leave the other roles")
	_, err = r.UsersWithRole(ctx, "a", "editor")
	wantErr(t, err, store.ErrNotFound, "UsersWithRole: a deleted role must be ErrNotFound")

	// Created again, the role starts anew: no permissions, no users.
	if !mustCreateRole(t, r, "editor") {
		t.Error("CreateRole: a role created again after its deletion must be reported created")
	}
	wantRolePermissions(t, r, "editor", nil, "a role created again must not have the permissions of the deleted one")
	wantUsersWithRole(t, r, "a", "editor", nil, "a role created again must not be held by the users of the deleted one")
	wantUsersWithRole(t, r, store.PublicTenant, "editor", nil, "a role created again must not be held by the users of the deleted one")
	wantRoles(t, r, []string{"viewer", "editor"}, "a role created again must come after the roles that stayed")
}

func testRoleDeleteUnknown(t *testing.T, s store.Store) {
	r := roles(t, s)
	existed, users, err := r.DeleteRole(t.Context(), "nobody")
	if err != nil || existed || len(users) != 0 {
		t.Errorf("DeleteRole: a role that does not exist must be reported so, with no users; got %v, %q, %v", existed, users, err)
	}
}

func testRoleList(t *testing.T, s store.Store) {
	r := roles(t, s)
	wantRoles(t, r, nil, "a new store must have no roles")
	for _, name := range []string{"b", "c", "a"} {
		mustCreateRole(t, r, name)
	}
	mustCreateRole(t, r, "b", "more")
	wantRoles(t, r, []string{"b", "c", "a"}, "Roles must list every role once, in the order they were created")
}

func testRolePermissionsUnknown(t *testing.T, s store.Store) {
	r := roles(t, s)
	_, err := r.RolePermissions(t.Context(), "nobody")
	wantErr(t, err, store.ErrNotFound, "RolePermissions: a role that does not exist must be ErrNotFound")
}

func testRolesWithPermission(t *testing.T, s store.Store) {
	ctx := t.Context()
	r := roles(t, s)
	mustCreateRole(t, r, "b", "read")
	mustCreateRole(t, r, "c", "write")
	mustCreateRole(t, r, "a", "write", "read")
	mustCreateRole(t, r, "c", "read")
	got, err := r.RolesWithPermission(ctx, "read")
	wantList(t, "RolesWithPermission", got, err, []string{"b", "c", "a"}, "must list every role with the permission once, in the order they were created")
	got, err = r.RolesWithPermission(ctx, "write")
	wantList(t, "RolesWithPermission", got, err, []string{"c", "a"}, "must list every role with the permission, and only them")
	got, err = r.RolesWithPermission(ctx, "nobody")
	wantList(t, "RolesWithPermission", got, err, nil, "a permission no role has must list no role")
}

func testRoleGiveAndTake(t *testing.T, s store.Store) {
	r := roles(t, s)
	mustCreateRole(t, r, "editor", "write")
	mustGiveRole(t, r, store.PublicTenant, "u1", "editor", false, "a role given to a user who does not hold it must report had false")
	mustGiveRole(t, r, store.PublicTenant, "u1", "editor", true, "a role given to a user who holds it must report had true")
	wantUserRoles(t, r, store.PublicTenant, "u1", []string{"editor"}, []string{"write"}, "a role given twice must be held once")
	mustTakeRole(t, r, store.PublicTenant, "u1", "editor", true, "a role taken from a user who holds it must report had true")
	mustTakeRole(t, r, store.PublicTenant, "u1", "editor", false, "a role taken from a user who does not hold it must report had false")
	wantUserRoles(t, r, store.PublicTenant, "u1", nil, nil, "a role taken must no longer be held")
	mustGiveRole(t, r, store.PublicTenant, "u1", "editor", false, "a role taken and given again must report had false")
	wantRolePermissions(t, r, "editor", []string{"write"}, "giving and taking a role must not change it")
}

func testRoleGiveUnknown(t *testing.T, s store.Store) {
	ctx := t.Context()
	r := roles(t, s)
	_, err := r.GiveRole(ctx, store.PublicTenant, "u1", "nobody")
	wantErr(t, err, store.ErrNotFound, "GiveRole: a role that does not exist must be ErrNotFound")
	_, err = r.TakeRole(ctx, store.PublicTenant, "u1", "nobody")
	wantErr(t, err, store.ErrNotFound, "TakeRole: a role that does not exist must be ErrNotFound")
	wantUserRoles(t, r, store.PublicTenant, "u1", nil, nil, "GiveRole of a role that does not exist must give nothing")
	wantRoles(t, r, nil, "GiveRole of a role that does not exist must not create it")
}

func testRoleTenants(t *testing.T, s store.Store) {
	r := roles(t, s)
	mustCreateRole(t, r, "admin", "all")
	mustGiveRole(t, r, "a", "u1", "admin", false, "a role must be given in a tenant")
	wantUserRoles(t, r, store.PublicTenant, "u1", nil, nil, "a role given in tenant a must not be held in another")
	wantUsersWithRole(t, r, store.PublicTenant, "admin", nil, "a role given in tenant a must not be held in another")
	wantUsersWithRole(t, r, "a", "admin", []string{"u1"}, "a role given in tenant a must be held there")
	mustTakeRole(t, r, store.PublicTenant, "u1", "admin", false, "a role given in tenant a must not be taken in another")
	wantUserRoles(t, r, "a", "u1", []string{"admin"}, []string{"all"}, "taking a role in another tenant must leave it in tenant a")
	mustGiveRole(t, r, store.PublicTenant, "u1", "admin", false, "a role held in tenant a must be given anew in another")
	mustTakeRole(t, r, "a", "u1", "admin", true, "a role held in tenant a must be taken there")
	wantUserRoles(t, r, store.PublicTenant, "u1", []string{"admin"}, []string{"all"}, "taking a role in tenant a must leave it in another")
}

func testRoleUserRoles(t *testing.T, s store.Store) {
	ctx := t.Context()
	r := roles(t, s)
	mustCreateRole(t, r, "viewer", "read", "list")
	mustCreateRole(t, r, "editor", "write", "read")
	mustCreateRole(t, r, "empty")
	mustCreateRole(t, r, "admin", "delete", "list", "write")
	wantUserRoles(t, r, store.PublicTenant, "u1", nil, nil, "a user with no roles must have none, and no permissions")
	mustGiveRole(t, r, store.PublicTenant, "u1", "editor", false, "a role must be given")
	mustGiveRole(t, r, store.PublicTenant, "u1", "empty", false, "a role must be given")
	mustGiveRole(t, r, store.PublicTenant, "u1", "viewer", false, "a role must be given")
	mustGiveRole(t, r, store.PublicTenant, "u1", "admin", false, "a role must be given")
	wantUserRoles(t, r, store.PublicTenant, "u1", []string{"editor", "empty", "viewer", "admin"},
		[]string{"write", "read", "list", "delete"},
		"UserRoles must list the roles in the order they were given, and the union of their permissions, each once, in the order of the roles and then of each role's permissions")
	mustCreateRole(t, r, "editor", "publish")
	if err := r.RemovePermissions(ctx, "viewer", []string{"list"}); err != nil {
		t.Fatal(err)
	}
	wantUserRoles(t, r, store.PublicTenant, "u1", []string{"editor", "empty", "viewer", "admin"},
		[]string{"write", "read", "publish", "delete", "list"},
		"UserRoles must list the permissions the roles have now")
	mustTakeRole(t, r, store.PublicTenant, "u1", "editor", true, "a role held must be taken")
	mustGiveRole(t, r, store.PublicTenant, "u1", "editor", false, "a role taken must be given again")
	wantUserRoles(t, r, store.PublicTenant, "u1", []string{"empty", "viewer", "admin", "editor"},
		[]string{"read", "delete", "list", "write", "publish"},
		"a role taken and given again must come last")
	wantUserRoles(t, r, store.PublicTenant, "u2", nil, nil, "the roles of one user must not be another's")
}

func testRoleUsersWithRole(t *testing.T, s store.Store) {
	ctx := t.Context()
	r := roles(t, s)
	mustCreateRole(t, r, "editor")
	mustCreateRole(t, r, "viewer")
	wantUsersWithRole(t, r, store.PublicTenant, "editor", nil, "a role nobody holds must list no users")
	for _, u := range []string{"u3", "u1", "u2"} {
		mustGiveRole(t, r, store.PublicTenant, u, "editor", false, "a role must be given")
	}
	mustGiveRole(t, r, store.PublicTenant, "u4", "viewer", false, "a role must be given")
	mustGiveRole(t, r, "a", "u5", "editor", false, "a role must be given")
	mustGiveRole(t, r, store.PublicTenant, "u1", "editor", true, "a role held must be reported so")
	wantUsersWithRole(t, r, store.PublicTenant, "editor", []string{"u3", "u1", "u2"},
		"UsersWithRole must list the users who hold the role in the tenant, each once, in the order it was given")
	mustTakeRole(t, r, store.PublicTenant, "u1", "editor", true, "a role held must be taken")
	wantUsersWithRole(t, r, store.PublicTenant, "editor", []string{"u3", "u2"}, "a user whose role was taken must not be listed")
	wantUsersWithRole(t, r, "a", "editor", []string{"u5"}, "UsersWithRole must list the users of the tenant asked")
	wantUsersWithRole(t, r, "b", "editor", nil, "a tenant where nobody holds the role must list no users")
	_, err := r.UsersWithRole(ctx, store.PublicTenant, "nobody")
	wantErr(t, err, store.ErrNotFound, "UsersWithRole: a role that does not exist must be ErrNotFound")
}

func testRoleDeleteUser(t *testing.T, s store.Store) {
	ctx := t.Context()
	r := roles(t, s)
	mustCreateUser(t, s, "u1")
	mustCreateUser(t, s, "u2")
	mustCreateRole(t, r, "editor", "write")
	mustCreateRole(t, r, "viewer", "read")
	mustGiveRole(t, r, store.PublicTenant, "u1", "editor", false, "a role must be given")
	mustGiveRole(t, r, store.PublicTenant, "u1", "viewer", false, "a role must be given")
	mustGiveRole(t, r, "a", "u1", "viewer", false, "a role must be given in another tenant")
	mustGiveRole(t, r, store.PublicTenant, "u2", "editor", false, "a role must be given")
	if _, err := s.DeleteUser(ctx, "u1"); err != nil {
		t.Fatalf("DeleteUser: must succeed on a user that exists; got error %v", err)
	}
	wantUserRoles(t, r, store.PublicTenant, "u1", nil, nil, "DeleteUser must take every role from the user")
	wantUserRoles(t, r, "a", "u1", nil, nil, "DeleteUser must take every role from the user, in every tenant")
	wantUsersWithRole(t, r, store.PublicTenant, "editor", []string{"u2"}, "DeleteUser must take the roles of that user only")
	wantUsersWithRole(t, r, "a", "viewer", nil, "DeleteUser must take every role from the user, in every tenant")
	wantRoles(t, r, []string{"editor", "viewer"}, "DeleteUser must leave the roles")
	wantRolePermissions(t, r, "viewer", []string{"read"}, "DeleteUser must leave the roles' permissions")
	mustCreateUser(t, s, "u1")
	wantUserRoles(t, r, store.PublicTenant, "u1", nil, nil, "a user created again with the id of a deleted one must hold none of its roles")
}

// testRoleConcurrentGiveAndDelete gives a role to many users while it is
// deleted: each gift happens before the deletion, which takes it away and
// returns the user, or fails with ErrNotFound; afterwards nobody holds the
// role, not even once it is created again.
func testRoleConcurrentGiveAndDelete(t *testing.T, s store.Store) {
	const n = 16
	ctx := t.Context()
	r := roles(t, s)
	tenants := []string{store.PublicTenant, "a"}
	for round := range roleRounds {
		if !mustCreateRole(t, r, "r", "p") {
			t.Fatalf("round %d: CreateRole: a role deleted in the round before must be created anew", round)
		}
		user := func(i int) string { return fmt.Sprintf("round%d-u%d", round, i) }
		errs := make([]error, n)
		var existed bool
		var deleted []string
		var deleteErr error
		// The deletion is released among the gifts, half of them on
		// either side of it.
		parallel(n+1, func(i int) {
			if i == n/2 {
				existed, deleted, deleteErr = r.DeleteRole(ctx, "r")
				return
			}
			if i > n/2 {
				i--
			}
			_, errs[i] = r.GiveRole(ctx, tenants[i%2], user(i), "r")
		})
		if deleteErr != nil || !existed {
			t.Fatalf("round %d: DeleteRole: a role that exists must be deleted, racing gifts; got %v, %v", round, existed, deleteErr)
		}
		for i, err := range errs {
			given := err == nil
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				t.Errorf("round %d: GiveRole racing DeleteRole must succeed or be ErrNotFound; got error %v", round, err)
			}
			if returned := slices.Contains(deleted, user(i)); returned != given {
				t.Errorf("round %d: GiveRole racing DeleteRole: a gift that succeeded must come before the deletion, which returns its user, and one that failed after it; %s was given: %v, returned by DeleteRole: %v",
					round, user(i), given, returned)
			}
			wantUserRoles(t, r, tenants[i%2], user(i), nil, nil, "no user may hold a role that was deleted while it was given")
		}
		wantRoles(t, r, nil, "a role deleted while it was given must be gone")
		mustCreateRole(t, r, "r")
		for _, tenant := range tenants {
			wantUsersWithRole(t, r, tenant, "r", nil, "a role created again after a deletion that raced gifts must be held by nobody")
		}
		if existed, _, err := r.DeleteRole(ctx, "r"); err != nil || !existed {
			t.Fatalf("DeleteRole: a role that exists must be deleted; got %v, %v", existed, err)
		}
	}
}

// testRoleConcurrentGiveSame gives one role to one user from many
// goroutines: exactly one reports that the user did not hold it.
func testRoleConcurrentGiveSame(t *testing.T, s store.Store) {
	const n = 16
	ctx := t.Context()
	r := roles(t, s)
	mustCreateRole(t, r, "r", "p")
	for round := range roleRounds {
		userID := fmt.Sprintf("u%d", round)
		had := make([]bool, n)
		errs := make([]error, n)
		parallel(n, func(i int) { had[i], errs[i] = r.GiveRole(ctx, store.PublicTenant, userID, "r") })
		first := 0
		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d: GiveRole: concurrent gifts of a role that exists must succeed; got error %v", round, err)
			}
			if !had[i] {
				first++
			}
		}
		if first != 1 {
			t.Errorf("round %d: GiveRole: of concurrent gifts of one role to one user exactly one must report had false; %d did", round, first)
		}
		wantUserRoles(t, r, store.PublicTenant, userID, []string{"r"}, []string{"p"}, "a role given at once from many calls must be held once")
	}
	users := make([]string, roleRounds)
	for round := range users {
		users[round] = fmt.Sprintf("u%d", round)
	}
	wantUsersWithRole(t, r, store.PublicTenant, "r", users, "a role given at once from many calls must be held once by each user")
}

// testRoleConcurrentTakeSame takes one role from one user from many
// goroutines: exactly one reports that the user held it.
func testRoleConcurrentTakeSame(t *testing.T, s store.Store) {
	const n = 16
	ctx := t.Context()
	r := roles(t, s)
	mustCreateRole(t, r, "r", "p")
	for round := range roleRounds {
		mustGiveRole(t, r, store.PublicTenant, "u1", "r", false, "a role taken must be given again")
		had := make([]bool, n)
		errs := make([]error, n)
		parallel(n, func(i int) { had[i], errs[i] = r.TakeRole(ctx, store.PublicTenant, "u1", "r") })
		held := 0
		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d: TakeRole: concurrent takes of a role that exists must succeed; got error %v", round, err)
			}
			if had[i] {
				held++
			}
		}
		if held != 1 {
			t.Errorf("round %d: TakeRole: of concurrent takes of one role from one user exactly one must report had true; %d did", round, held)
		}
		wantUserRoles(t, r, store.PublicTenant, "u1", nil, nil, "a role taken at once by many calls must be gone")
	}
}

// testRoleConcurrentCreateSame creates one new role from many goroutines,
// each with a permission of its own: exactly one reports it created, and
// the role has every permission, each once.
func testRoleConcurrentCreateSame(t *testing.T, s store.Store) {
	const n = 16
	ctx := t.Context()
	r := roles(t, s)
	var names []string
	for round := range roleRounds {
		name := fmt.Sprintf("r%d", round)
		names = append(names, name)
		created := make([]bool, n)
		errs := make([]error, n)
		parallel(n, func(i int) { created[i], errs[i] = r.CreateRole(ctx, name, []string{"common", fmt.Sprintf("p%d", i)}) })
		winners := 0
		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d: CreateRole: concurrent calls must succeed; got error %v", round, err)
			}
			if created[i] {
				winners++
			}
		}
		if winners != 1 {
			t.Errorf("round %d: CreateRole: of concurrent calls creating one role exactly one must report it created; %d did", round, winners)
		}
		got, err := r.RolePermissions(ctx, name)
		if err != nil {
			t.Fatalf("round %d: RolePermissions: a role created must be found; got error %v", round, err)
		}
		want := []string{"common"}
		for i := range n {
			want = append(want, fmt.Sprintf("p%d", i))
		}
		if slices.Sort(got); !slices.Equal(got, slices.Sorted(slices.Values(want))) {
			t.Errorf("round %d: RolePermissions: a role created by concurrent calls must have the permissions of every call, each once; got %q", round, got)
		}
	}
	wantRoles(t, r, names, "roles created by concurrent calls must each be listed once")
}
