package storetest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/latchkit/auth/store"
)

// mustCreateInTenant creates user id whose first login is its email and
// password login in tenant.
func mustCreateInTenant(t *testing.T, s store.Store, id, tenant string) user {
	t.Helper()
	u := newUser(id)
	u.Login = inTenantOf(u.Login, tenant)
	if err := u.create(t.Context(), s); err != nil {
		t.Fatalf("CreateUser: a user whose first login is in tenant %q must be added; got error %v", tenant, err)
	}
	return u
}

// mustCreateTenantSession creates session handle of userID in tenant.
func mustCreateTenantSession(t *testing.T, s store.Store, handle, userID, tenant string) store.Session {
	t.Helper()
	sess := newSession(handle, userID, base, at(ttl))
	sess.Tenant = tenant
	mustCreateSession(t, s, sess, handle+"/r0")
	return sess
}

// testDeleteTenant: deleting a tenant deletes its memberships, its
// invitations and the roles given in it, ends its sessions and no other,
// and keeps its logins.
func testDeleteTenant(t *testing.T, s store.Store) {
	ts := mustTenants(t, s, tenantA, tenantB)
	ctx := t.Context()
	u := mustCreateInTenant(t, s, "u1", tenantA)
	mustCreateInTenant(t, s, "u2", tenantB)
	inA := mustCreateTenantSession(t, s, "s1", "u1", tenantA)
	public := mustCreateTenantSession(t, s, "s2", "u1", "")
	mustInvite(t, ts, newInvitation("i1", tenantA, "x@example.com", base, at(time.Hour)))
	mustInvite(t, ts, newInvitation("i2", tenantB, "x@example.com", base, at(time.Hour)))
	rs, roles := s.(store.RoleStore)
	if roles {
		mustCreateRole(t, rs, "editor", "write")
		for _, tenant := range []string{tenantA, store.PublicTenant} {
			mustGiveRole(t, rs, tenant, "u1", "editor", false, "GiveRole: a role the user does not hold")
		}
	}
	handles, err := ts.DeleteTenant(ctx, tenantA)
	if err != nil || !slices.Equal(handles, []string{inA.Handle}) {
		t.Fatalf("DeleteTenant: it must end the tenant's sessions and return their handles; got %q, error %v", handles, err)
	}
	_, err = s.Session(ctx, inA.Handle, base)
	wantEnded(t, err, store.EndRevoked, "DeleteTenant: a session in the deleted tenant")
	wantSession(t, s, public, base, "DeleteTenant: a session in another tenant must stay")
	_, err = ts.Membership(ctx, tenantA, "u1")
	wantErr(t, err, store.ErrNotFound, "DeleteTenant: the memberships of the tenant must go")
	wantUserTenants(t, ts, "u1", nil, "DeleteTenant: a member of the deleted tenant")
	wantMembers(t, ts, tenantB, []string{"u2"}, "DeleteTenant: another tenant's members must stay")
	if invs, err := ts.Invitations(ctx, tenantB, base); err != nil || len(invs) != 1 {
		t.Errorf("DeleteTenant: another tenant's invitations must stay; got %+v, error %v", invs, err)
	}
	if roles {
		wantUserRoles(t, rs, tenantA, "u1", nil, nil, "DeleteTenant: the roles given in the deleted tenant must go")
		wantUserRoles(t, rs, store.PublicTenant, "u1", []string{"editor"}, []string{"write"}, "DeleteTenant: the roles given in another tenant must stay")
	}
	_, err = ts.Tenant(ctx, tenantA)
	wantErr(t, err, store.ErrNotFound, "DeleteTenant: the tenant must go")
	_, err = ts.DeleteTenant(ctx, tenantA)
	wantErr(t, err, store.ErrNotFound, "DeleteTenant: a tenant that does not exist must return ErrNotFound")
	wantLogin(t, s, u.Login, "DeleteTenant: the logins in the tenant must stay")

	// A tenant created again has none of the old one's members.
	mustTenants(t, s, tenantA)
	wantMembers(t, ts, tenantA, nil, "PutTenant: a tenant created again after its deletion")
	if invs, err := ts.Invitations(ctx, tenantA, base); err != nil || len(invs) != 0 {
		t.Errorf("PutTenant: a tenant created again after its deletion must have no invitations; got %+v, error %v", invs, err)
	}
}

// testMembershipWithLogin: a user becomes a member of a login's tenant in
// the step that adds the login, by every method that adds one, and of
// none for a login in the public tenant.
func testMembershipWithLogin(t *testing.T, s store.Store) {
	ts := mustTenants(t, s, tenantA, tenantB, "gamma")
	ctx := t.Context()
	mustCreateInTenant(t, s, "u1", tenantA)
	wantMembers(t, ts, tenantA, []string{"u1"}, "CreateUser: the user of a first login in a tenant must be a member")
	mustCreateUser(t, s, "u2")
	wantUserTenants(t, ts, "u2", nil, "CreateUser: a user of the public tenant must be a member of none")

	l := inTenantOf(thirdPartyLogin("u3", "google", "g-3", "u3@example.com"), tenantB)
	if _, created, err := s.SignInUp(ctx, l, store.User{ID: "u3", TimeJoined: base}); err != nil || !created {
		t.Fatalf("SignInUp: a new identity in a tenant must create its user; got created %v, error %v", created, err)
	}
	wantUserTenants(t, ts, "u3", []string{tenantB}, "SignInUp: the user it creates in a tenant must be a member")
	if _, created, err := s.SignInUp(ctx, l, store.User{ID: "u4", TimeJoined: base}); err != nil || created {
		t.Fatalf("SignInUp: a known identity must sign in; got created %v, error %v", created, err)
	}

	link := inTenantOf(store.Login{LoginKey: store.PasswordlessKey("+15550102"), ID: "u2-pwl", UserID: "u2", CreatedAt: base}, tenantA)
	if err := s.LinkLogin(ctx, link); err != nil {
		t.Fatalf("LinkLogin: a login without an email must join its user; got error %v", err)
	}
	attach := inTenantOf(passkey("u2-pk", "u2", "cred-2", "u2@example.com", nil), "gamma")
	if err := s.AttachLogin(ctx, attach); err != nil {
		t.Fatalf("AttachLogin: %v", err)
	}
	wantUserTenants(t, ts, "u2", []string{tenantA, "gamma"}, "LinkLogin and AttachLogin: the user must be a member of the login's tenant")
	if m, err := ts.Membership(ctx, tenantA, "u2"); err != nil || m.Tenant != tenantA || m.UserID != "u2" {
		t.Errorf("Membership: a member must be found; got %+v, error %v", m, err)
	}
	wantMembers(t, ts, tenantA, []string{"u1", "u2"}, "LinkLogin: the user must join the tenant's members")
}

// testAddAndRemoveMember: AddMember reports whether it added, and needs
// the user and the tenant; RemoveMember needs a member.
func testAddAndRemoveMember(t *testing.T, s store.Store) {
	ts := mustTenants(t, s, tenantA)
	ctx := t.Context()
	mustCreateUser(t, s, "u1")
	_, err := ts.AddMember(ctx, "gamma", "u1", base)
	wantErr(t, err, store.ErrNotFound, "AddMember: an unknown tenant must return ErrNotFound")
	_, err = ts.AddMember(ctx, tenantA, "nobody", base)
	wantErr(t, err, store.ErrNotFound, "AddMember: an unknown user must return ErrNotFound")
	wantMembers(t, ts, tenantA, nil, "AddMember: a refused member")
	for i, want := range []bool{true, false} {
		if added, err := ts.AddMember(ctx, tenantA, "u1", at(time.Duration(i)*time.Hour)); err != nil || added != want {
			t.Errorf("AddMember: call %d must report added %v; got %v, error %v", i+1, want, added, err)
		}
	}
	if m, err := ts.Membership(ctx, tenantA, "u1"); err != nil || !sameTime(m.JoinedAt, base) {
		t.Errorf("AddMember: the membership must be the first call's, joined at %v; got %+v, error %v", base, m, err)
	}
	if handles, err := ts.RemoveMember(ctx, tenantA, "u1"); err != nil || len(handles) != 0 {
		t.Errorf("RemoveMember: a member without sessions must be removed; got %q, error %v", handles, err)
	}
	_, err = ts.RemoveMember(ctx, tenantA, "u1")
	wantErr(t, err, store.ErrNotFound, "RemoveMember: a user who is not a member must return ErrNotFound")
	_, err = ts.Membership(ctx, tenantA, "u1")
	wantErr(t, err, store.ErrNotFound, "RemoveMember: the membership must go")
}

// testRemoveMemberScope: RemoveMember ends the user's sessions in the
// tenant and takes the user's roles in it, and nothing else.
func testRemoveMemberScope(t *testing.T, s store.Store) {
	ts := mustTenants(t, s, tenantA, tenantB)
	ctx := t.Context()
	mustCreateInTenant(t, s, "u1", tenantA)
	mustCreateInTenant(t, s, "u2", tenantA)
	if _, err := ts.AddMember(ctx, tenantB, "u1", base); err != nil {
		t.Fatalf("AddMember: %v", err)
	}
	inA := []store.Session{mustCreateTenantSession(t, s, "s1", "u1", tenantA), mustCreateTenantSession(t, s, "s2", "u1", tenantA)}
	kept := []store.Session{mustCreateTenantSession(t, s, "s3", "u1", tenantB), mustCreateTenantSession(t, s, "s4", "u1", ""),
		mustCreateTenantSession(t, s, "s5", "u2", tenantA)}
	rs, roles := s.(store.RoleStore)
	if roles {
		mustCreateRole(t, rs, "editor", "write")
		for _, tenant := range []string{tenantA, tenantB} {
			mustGiveRole(t, rs, tenant, "u1", "editor", false, "GiveRole: a role the user does not hold")
			mustGiveRole(t, rs, tenant, "u2", "editor", false, "GiveRole: a role the user does not hold")
		}
	}
	handles, err := ts.RemoveMember(ctx, tenantA, "u1")
	if err != nil || !slices.Equal(slices.Sorted(slices.Values(handles)), []string{"s1", "s2"}) {
		t.Fatalf("RemoveMember: it must end the user's sessions in the tenant and return their handles; got %q, error %v", handles, err)
	}
	for _, sess := range inA {
		_, err := s.Session(ctx, sess.Handle, base)
		wantEnded(t, err, store.EndRevoked, "RemoveMember: a session of the user in the tenant")
	}
	for _, sess := range kept {
		wantSession(t, s, sess, base, "RemoveMember: a session in another tenant, or of another user, must stay")
	}
	wantUserTenants(t, ts, "u1", []string{tenantB}, "RemoveMember: the user's other memberships must stay")
	wantMembers(t, ts, tenantA, []string{"u2"}, "RemoveMember: the tenant's other members must stay")
	if roles {
		wantUserRoles(t, rs, tenantA, "u1", nil, nil, "RemoveMember: the user's roles in the tenant must go")
		wantUserRoles(t, rs, tenantB, "u1", []string{"editor"}, []string{"write"}, "RemoveMember: the user's roles in another tenant must stay")
		wantUserRoles(t, rs, tenantA, "u2", []string{"editor"}, []string{"write"}, "RemoveMember: another member's roles must stay")
	}
}

// testMembersPaging: members come in the order they joined, ties by user
// id, a page at a time.
func testMembersPaging(t *testing.T, s store.Store) {
	ts := mustTenants(t, s, tenantA)
	ctx := t.Context()
	joins := map[string]time.Duration{"u5": 0, "u3": time.Second, "u1": time.Second, "u4": 2 * time.Second, "u2": 3 * time.Second}
	for _, id := range slices.Sorted(func(yield func(string) bool) {
		for id := range joins {
			if !yield(id) {
				return
			}
		}
	}) {
		mustCreateUser(t, s, id)
		if _, err := ts.AddMember(ctx, tenantA, id, at(joins[id])); err != nil {
			t.Fatalf("AddMember: %v", err)
		}
	}
	want := []string{"u5", "u1", "u3", "u4", "u2"}
	wantMembers(t, ts, tenantA, want, "Members: in the order they joined, then by user id")
	var got []string
	for after := ""; ; {
		page, err := ts.Members(ctx, tenantA, after, 2)
		if err != nil || len(page) > 2 {
			t.Fatalf("Members: a page must hold at most the limit; got %+v, error %v", page, err)
		}
		if len(page) == 0 {
			break
		}
		for _, m := range page {
			got = append(got, m.UserID)
			if !sameTime(m.JoinedAt, at(joins[m.UserID])) {
				t.Errorf("Members: %s joined at %v, want %v", m.UserID, m.JoinedAt, at(joins[m.UserID]))
			}
		}
		after = page[len(page)-1].UserID
	}
	if !slices.Equal(got, want) {
		t.Errorf("Members: the pages after each member must list every member once, in order; got %q, want %q", got, want)
	}
}

// testDeleteUserMemberships: a deleted user's memberships go with it.
func testDeleteUserMemberships(t *testing.T, s store.Store) {
	ts := mustTenants(t, s, tenantA, tenantB)
	mustCreateInTenant(t, s, "u1", tenantA)
	mustCreateInTenant(t, s, "u2", tenantA)
	if _, err := ts.AddMember(t.Context(), tenantB, "u1", base); err != nil {
		t.Fatalf("AddMember: %v", err)
	}
	if _, err := s.DeleteUser(t.Context(), "u1"); err != nil {
		t.Fatalf("DeleteUser: %v", err)
	}
	wantUserTenants(t, ts, "u1", nil, "DeleteUser: the user's memberships must go")
	wantMembers(t, ts, tenantA, []string{"u2"}, "DeleteUser: only the user's memberships must go")
	wantMembers(t, ts, tenantB, nil, "DeleteUser: the user's memberships must go")
}

// newInvitation is the invitation called name (its hash is token(name))
// to tenant for email.
func newInvitation(name, tenant, email string, created, expires time.Time) store.Invitation {
	return store.Invitation{Hash: token(name), Tenant: tenant, Email: email, Role: "editor", InvitedBy: "admin",
		CreatedAt: created, ExpiresAt: expires}
}

func mustInvite(t *testing.T, ts store.TenantStore, inv store.Invitation) {
	t.Helper()
	if err := ts.CreateInvitation(t.Context(), inv); err != nil {
		t.Fatalf("CreateInvitation: an invitation with a new hash to an existing tenant must be stored; got error %v", err)
	}
}

func invitationDiff(got, want store.Invitation) string {
	var d diff
	d.str("Hash", fmt.Sprintf("%x", got.Hash), fmt.Sprintf("%x", want.Hash))
	d.str("Tenant", got.Tenant, want.Tenant)
	d.str("Email", got.Email, want.Email)
	d.str("Role", got.Role, want.Role)
	d.str("InvitedBy", got.InvitedBy, want.InvitedBy)
	d.time("CreatedAt", got.CreatedAt, want.CreatedAt)
	d.time("ExpiresAt", got.ExpiresAt, want.ExpiresAt)
	return d.String()
}

// wantInvitations checks the invitations of tenant live at now, in order.
func wantInvitations(t *testing.T, ts store.TenantStore, tenant string, now time.Time, want []store.Invitation, rule string) {
	t.Helper()
	got, err := ts.Invitations(t.Context(), tenant, now)
	if err != nil || len(got) != len(want) {
		t.Errorf("%s: Invitations(%q) = %+v, error %v; want %d", rule, tenant, got, err, len(want))
		return
	}
	for i := range got {
		if d := invitationDiff(got[i], want[i]); d != "" {
			t.Errorf("%s: Invitations(%q)[%d]: %s", rule, tenant, i, d)
		}
	}
}

// testInvitations: invitations are stored for tenants that exist, listed
// live and oldest first, and revoked by tenant and address.
func testInvitations(t *testing.T, s store.Store) {
	ts := mustTenants(t, s, tenantA, tenantB)
	ctx := t.Context()
	err := ts.CreateInvitation(ctx, newInvitation("i0", "gamma", "x@example.com", base, at(time.Hour)))
	wantErr(t, err, store.ErrNotFound, "CreateInvitation: an invitation to an unknown tenant must return ErrNotFound")
	late := newInvitation("i1", tenantA, "x@example.com", at(2*time.Minute), at(2*time.Hour))
	early := newInvitation("i2", tenantA, "x@example.com", at(time.Minute), at(time.Hour))
	other := newInvitation("i3", tenantA, "y@example.com", at(3*time.Minute), at(3*time.Hour))
	elsewhere := newInvitation("i4", tenantB, "x@example.com", base, at(time.Hour))
	for _, inv := range []store.Invitation{late, early, other, elsewhere} {
		mustInvite(t, ts, inv)
	}
	err = ts.CreateInvitation(ctx, newInvitation("i1", tenantB, "z@example.com", base, at(time.Hour)))
	wantErr(t, err, store.ErrConflict, "CreateInvitation: an invitation with a hash on record must return ErrConflict")
	wantInvitations(t, ts, tenantA, at(time.Minute), []store.Invitation{early, late, other}, "Invitations: the live ones, oldest first")
	wantInvitations(t, ts, tenantA, at(time.Hour), []store.Invitation{late, other}, "Invitations: one that expires at now has expired")

	if n, err := ts.RevokeInvitations(ctx, tenantA, "x@example.com"); err != nil || n != 2 {
		t.Errorf("RevokeInvitations: it must delete the tenant's invitations to the address and count them; got %d, error %v", n, err)
	}
	wantInvitations(t, ts, tenantA, base, []store.Invitation{other}, "RevokeInvitations: another address's invitation must stay")
	wantInvitations(t, ts, tenantB, base, []store.Invitation{elsewhere}, "RevokeInvitations: another tenant's invitation must stay")
	if n, err := ts.RevokeInvitations(ctx, tenantA, "x@example.com"); err != nil || n != 0 {
		t.Errorf("RevokeInvitations: none left must count 0; got %d, error %v", n, err)
	}
}

// testAcceptInvitation: an invitation makes its user a member once, and
// voids the other invitations of its tenant and address.
func testAcceptInvitation(t *testing.T, s store.Store) {
	ts := mustTenants(t, s, tenantA, tenantB)
	ctx := t.Context()
	mustCreateUser(t, s, "u1")
	inv := newInvitation("i1", tenantA, "u1@example.com", base, at(time.Hour))
	sibling := newInvitation("i2", tenantA, "u1@example.com", at(time.Second), at(time.Hour))
	other := newInvitation("i3", tenantA, "u2@example.com", at(2*time.Second), at(time.Hour))
	elsewhere := newInvitation("i4", tenantB, "u1@example.com", base, at(time.Hour))
	for _, i := range []store.Invitation{inv, sibling, other, elsewhere} {
		mustInvite(t, ts, i)
	}
	_, err := ts.AcceptInvitation(ctx, token("unknown"), "u1", base)
	wantErr(t, err, store.ErrNotFound, "AcceptInvitation: an unknown invitation must return ErrNotFound")
	_, err = ts.AcceptInvitation(ctx, inv.Hash, "u1", at(time.Hour))
	wantErr(t, err, store.ErrNotFound, "AcceptInvitation: an invitation that expires at now must return ErrNotFound")
	_, err = ts.AcceptInvitation(ctx, inv.Hash, "nobody", base)
	wantErr(t, err, store.ErrNotFound, "AcceptInvitation: an unknown user must return ErrNotFound")
	wantInvitations(t, ts, tenantA, base, []store.Invitation{inv, sibling, other}, "AcceptInvitation: a refusal must change nothing")
	wantMembers(t, ts, tenantA, nil, "AcceptInvitation: a refusal must make no member")

	got, err := ts.AcceptInvitation(ctx, inv.Hash, "u1", at(time.Minute))
	if err != nil {
		t.Fatalf("AcceptInvitation: a live invitation must be accepted; got error %v", err)
	}
	if d := invitationDiff(got, inv); d != "" {
		t.Errorf("AcceptInvitation: it must return the invitation as it was: %s", d)
	}
	if m, err := ts.Membership(ctx, tenantA, "u1"); err != nil || !sameTime(m.JoinedAt, at(time.Minute)) {
		t.Errorf("AcceptInvitation: the user must be a member from now; got %+v, error %v", m, err)
	}
	wantInvitations(t, ts, tenantA, base, []store.Invitation{other}, "AcceptInvitation: the tenant's invitations to the address must go")
	wantInvitations(t, ts, tenantB, base, []store.Invitation{elsewhere}, "AcceptInvitation: another tenant's invitation must stay")
	_, err = ts.AcceptInvitation(ctx, sibling.Hash, "u1", at(time.Minute))
	wantErr(t, err, store.ErrNotFound, "AcceptInvitation: an invitation voided by another's acceptance must return ErrNotFound")
}

// testAcceptInvitationOnce: of concurrent acceptances of one invitation,
// by different users, exactly one succeeds, and only its user is a
// member.
func testAcceptInvitationOnce(t *testing.T, s store.Store) {
	ts := mustTenants(t, s, tenantA)
	const n = 8
	for i := range n {
		mustCreateUser(t, s, fmt.Sprintf("u%d", i))
	}
	mustInvite(t, ts, newInvitation("i1", tenantA, "x@example.com", base, at(time.Hour)))
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			_, errs[i] = ts.AcceptInvitation(t.Context(), token("i1"), fmt.Sprintf("u%d", i), base)
		})
	}
	wg.Wait()
	var winners []string
	for i, err := range errs {
		switch {
		case err == nil:
			winners = append(winners, fmt.Sprintf("u%d", i))
		case !errors.Is(err, store.ErrNotFound):
			t.Errorf("AcceptInvitation: a concurrent acceptance that loses must return ErrNotFound; got error %v", err)
		}
	}
	if len(winners) != 1 {
		t.Fatalf("AcceptInvitation: exactly one of %d concurrent acceptances of one invitation must succeed; %q did", n, winners)
	}
	wantMembers(t, ts, tenantA, winners, "AcceptInvitation: only the user that accepted must be a member")
}

// testUserQueryTenant: UserQuery.Tenant lists and counts the public
// tenant's users, or a tenant's members.
func testUserQueryTenant(t *testing.T, s store.Store) {
	l, ok := s.(store.UserLister)
	if !ok {
		t.Skip("the store lists no users (store.UserLister)")
	}
	mustTenants(t, s, tenantA, tenantB)
	ctx := t.Context()
	mustCreateUser(t, s, "u1")
	mustCreateInTenant(t, s, "u2", tenantA)
	mustCreateUser(t, s, "u3")
	mustLinkLogin(t, s, inTenantOf(store.Login{LoginKey: store.PasswordlessKey("+15550103"), ID: "u3-pwl", UserID: "u3", CreatedAt: base}, tenantA))
	// A record of second factors is no way into the public tenant.
	mustLinkLogin(t, s, store.Login{LoginKey: store.SecondFactorsKey("u2"), ID: "u2-mfa", UserID: "u2", Material: []byte("none"), CreatedAt: base})
	for tenant, want := range map[string][]string{store.PublicTenant: {"u1", "u3"}, tenantA: {"u2", "u3"}, tenantB: nil} {
		page, err := l.ListUsers(ctx, store.UserQuery{Tenant: tenant})
		var got []string
		for _, u := range page.Users {
			got = append(got, u.ID)
		}
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("ListUsers: UserQuery.Tenant %q must list the tenant's users; got %q, error %v; want %q", tenant, got, err, want)
		}
		if n, err := l.CountUsers(ctx, store.UserQuery{Tenant: tenant}); err != nil || n != int64(len(want)) {
			t.Errorf("CountUsers: UserQuery.Tenant %q must count the tenant's users; got %d, error %v; want %d", tenant, n, err, len(want))
		}
	}
	page, err := l.ListUsers(ctx, store.UserQuery{Tenant: tenantA, Email: "u3@", Limit: 1})
	if err != nil || len(page.Users) != 1 || page.Users[0].ID != "u3" || page.Next != "" {
		t.Errorf("ListUsers: UserQuery.Tenant must combine with the other filters; got %+v, error %v", page, err)
	}
}
