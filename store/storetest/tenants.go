package storetest

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/latchkit/auth/store"
)

// Tenants: a login's key includes its tenant, so the same identity in two
// tenants is two logins; email ownership is per tenant; codes and sessions
// keep their tenant; and a TenantStore keeps tenants, their members and
// invitations. Run runs these for a store.TenantStore.
var tenantTests = []test{
	{"SameIdentityTwoTenants", testSameIdentityTwoTenants},
	{"KeyOfAnotherTenant", testKeyOfAnotherTenant},
	{"OwnershipPerTenant", testOwnershipPerTenant},
	{"LinkJoinsOwnerOfItsTenant", testLinkJoinsOwnerOfItsTenant},
	{"CodesKeepTenant", testCodesKeepTenant},
	{"SessionsKeepTenant", testSessionsKeepTenant},
	{"ChangeEmailInTenant", testChangeEmailInTenant},
	{"PutTenant", testPutTenant},
	{"DeleteTenant", testDeleteTenant},
	{"MembershipWithLogin", testMembershipWithLogin},
	{"AddAndRemoveMember", testAddAndRemoveMember},
	{"RemoveMemberScope", testRemoveMemberScope},
	{"MembersPaging", testMembersPaging},
	{"DeleteUserMemberships", testDeleteUserMemberships},
	{"Invitations", testInvitations},
	{"AcceptInvitation", testAcceptInvitation},
	{"AcceptInvitationOnce", testAcceptInvitationOnce},
	{"UserQueryTenant", testUserQueryTenant},
}

// The suite's tenants besides the public one.
const (
	tenantA = "acme"
	tenantB = "beta"
)

// mustTenants returns s as a TenantStore with the tenants ids created.
func mustTenants(t *testing.T, s store.Store, ids ...string) store.TenantStore {
	t.Helper()
	ts := s.(store.TenantStore)
	for _, id := range ids {
		if _, err := ts.PutTenant(t.Context(), store.Tenant{ID: id, Config: []byte("config of " + id), UpdatedAt: base}); err != nil {
			t.Fatalf("PutTenant(%q): a new tenant must be created; got error %v", id, err)
		}
	}
	return ts
}

// inTenantOf is l with its key in tenant.
func inTenantOf(l store.Login, tenant string) store.Login {
	l.LoginKey = l.In(tenant)
	return l
}

// testSameIdentityTwoTenants: an email and password, a provider's
// identity, a passwordless contact and a passkey credential, each in the
// public tenant and in another, are two logins of two users.
func testSameIdentityTwoTenants(t *testing.T, s store.Store) {
	mustTenants(t, s, tenantA)
	firsts := []store.Login{
		newUser("x").Login,
		thirdPartyLogin("x", "google", "g-1", "x@example.com"),
		{LoginKey: store.PasswordlessKey("+15550100"), CreatedAt: base},
		passkey("x", "x", "cred-1", "x@example.com", counter("cred-1", 0)),
	}
	for i, first := range firsts {
		for _, tenant := range []string{"", tenantA} {
			id := first.Method + "@" + store.TenantID(tenant)
			l := inTenantOf(first, tenant)
			l.ID, l.UserID = id, id
			u := user{User: store.User{ID: id, TimeJoined: base}, Login: l}
			if err := u.create(t.Context(), s); err != nil {
				t.Fatalf("CreateUser: login %d in tenant %q, whose key is taken only in another tenant, must be added; got error %v", i, tenant, err)
			}
			wantUser(t, s, u, "CreateUser: the same identity in two tenants must be two logins of two users")
		}
	}
}

// testKeyOfAnotherTenant: a login is found by its key in its own tenant
// only.
func testKeyOfAnotherTenant(t *testing.T, s store.Store) {
	mustTenants(t, s, tenantA)
	u := newUser("u1")
	u.Login = inTenantOf(u.Login, tenantA)
	if err := u.create(t.Context(), s); err != nil {
		t.Fatalf("CreateUser: a user whose first login is in a tenant must be added; got error %v", err)
	}
	wantUser(t, s, u, "CreateUser: a login in a tenant must be stored with its tenant")
	for _, tenant := range []string{"", tenantB} {
		k := u.In(tenant)
		_, err := s.Login(t.Context(), k)
		wantErr(t, err, store.ErrNotFound, "Login: the key of a login in another tenant must return ErrNotFound")
		_, _, err = s.UserByLogin(t.Context(), k)
		wantErr(t, err, store.ErrNotFound, "UserByLogin: the key of a login in another tenant must return ErrNotFound")
	}
	if k := u.In(store.PublicTenant); k.Tenant != "" {
		t.Errorf("LoginKey.In: the public tenant's id must give the tenant \"\"; got %q", k.Tenant)
	}
}

// testOwnershipPerTenant: each tenant has its own owner of an address,
// and only one.
func testOwnershipPerTenant(t *testing.T, s store.Store) {
	mustTenants(t, s, tenantA, tenantB)
	pub := mustCreateOwner(t, s, "u1")
	a := owning(newUser("u2").withEmail(pub.Email))
	a.Login = inTenantOf(a.Login, tenantA)
	if err := a.create(t.Context(), s); err != nil {
		t.Fatalf("CreateUser: a login that asks to own an address owned only in another tenant must be added; got error %v", err)
	}
	wantUser(t, s, a, "CreateUser: an owner of an address in one tenant must not keep another tenant from having one")

	dup := owning(newUser("u3"))
	dup.Login = inTenantOf(thirdPartyLogin("u3", "google", "g-3", pub.Email), tenantA)
	dup.OwnsEmail = true
	wantErr(t, dup.create(t.Context(), s), store.ErrEmailOwned,
		"CreateUser: a second owner of an address in a tenant must return ErrEmailOwned")

	// A proven login in a third tenant claims the address there.
	b := user{User: store.User{ID: "u4", TimeJoined: base}, Login: inTenantOf(thirdPartyLogin("u4", "google", "g-4", pub.Email), tenantB)}
	if err := b.create(t.Context(), s); err != nil {
		t.Fatalf("CreateUser: a provider's user in a tenant must be added; got error %v", err)
	}
	claimed, err := s.ClaimEmail(t.Context(), "u4")
	if err != nil || !claimed.OwnsEmail || claimed.Tenant != tenantB {
		t.Errorf("ClaimEmail: a proven login may own an address owned only in other tenants; got %+v, error %v", claimed, err)
	}
	wantOwners(t, s, pub.Email, []string{"u1", "u2", "u4"}, "ownership per tenant")
}

// testLinkJoinsOwnerOfItsTenant: a login joins only the user that owns
// its address in its own tenant.
func testLinkJoinsOwnerOfItsTenant(t *testing.T, s store.Store) {
	mustTenants(t, s, tenantA)
	pub := mustCreateOwner(t, s, "u1")
	a := owning(newUser("u2").withEmail(pub.Email))
	a.Login = inTenantOf(a.Login, tenantA)
	if err := a.create(t.Context(), s); err != nil {
		t.Fatalf("CreateUser: %v", err)
	}
	l := inTenantOf(linkedLogin("g", "u1", "google", "g-1", pub.Email), tenantA)
	wantErr(t, s.LinkLogin(t.Context(), l), store.ErrNotFound,
		"LinkLogin: a login must not join the owner of its address in another tenant")
	wantNotLinked(t, s, l, 1, "a login joining the owner of another tenant")

	l.UserID = "u2"
	if err := s.LinkLogin(t.Context(), l); err != nil {
		t.Fatalf("LinkLogin: a login must join the owner of its address in its tenant; got error %v", err)
	}
	wantLogin(t, s, l, "LinkLogin: a login in a tenant must be stored with its tenant")

	// Nobody owns the address in the public tenant but u1, and an owner
	// in another tenant does not keep a public login from owning it.
	other := inTenantOf(linkedLogin("g2", "u2", "google", "g-2", pub.Email), "")
	wantErr(t, s.LinkLogin(t.Context(), asOwner(other)), store.ErrEmailOwned,
		"LinkLogin: a login asking to own an address its tenant's owner holds must return ErrEmailOwned")
}

// testCodesKeepTenant: every read of a code returns the tenant it was
// written with.
func testCodesKeepTenant(t *testing.T, s store.Store) {
	mustTenants(t, s, tenantA)
	u := newUser("u1")
	u.Login = inTenantOf(u.Login, tenantA)
	if err := u.create(t.Context(), s); err != nil {
		t.Fatalf("CreateUser: %v", err)
	}
	inA := func(c store.Code) store.Code { c.Tenant = tenantA; return c }
	flow := inA(newFlow("f1", u.Email, base, at(time.Hour)))
	code := of(inA(newPasswordlessCode("c1", "f1", base, at(time.Hour))), flow)
	reset := inA(newResetToken("r1", "u1", base, at(time.Hour)))
	options := inA(newOptions("o1", "", "", state("o1"), base, at(time.Hour)))
	for _, c := range []store.Code{flow, code, reset, options} {
		mustCreateCode(t, s, c, "a code in a tenant")
		wantCode(t, s, c, base, "Code: a code must keep its tenant")
	}
	got, err := s.UseCeremony(t.Context(), store.CodePasskeyOptions, options.Hash, base, nil)
	if err != nil || got.Tenant != tenantA {
		t.Errorf("UseCeremony: the code used must come back with its tenant; got %+v, error %v", got, err)
	}
	got, err = s.UsePasswordlessCode(t.Context(), token("f1"), token("wrong"), base, 5)
	if !errors.Is(err, store.ErrWrongCode) || got.Tenant != tenantA {
		t.Errorf("UsePasswordlessCode: a flow refusing a wrong code must come back with its tenant; got %+v, error %v", got, err)
	}
	mustUsePasswordless(t, s, "f1", "c1", base, 5, withAttempts(flow, 1), "UsePasswordlessCode: a flow in a tenant")
}

// testSessionsKeepTenant: every read of a session returns the tenant it
// was written with.
func testSessionsKeepTenant(t *testing.T, s store.Store) {
	mustTenants(t, s, tenantA)
	mustCreateUser(t, s, "u1")
	sess := newSession("s1", "u1", base, at(ttl))
	sess.Tenant = tenantA
	mustCreateSession(t, s, sess, "s1/r0")
	wantSession(t, s, sess, base, "Session: a session must keep its tenant")
	wantUserSessions(t, s, "u1", base, []store.Session{sess}, "UserSessions: a session must keep its tenant")
	r := rotation("s1/r0", "s1/r1", at(time.Minute), time.Minute)
	sess = mustRotate(t, s, r, updated(sess, r), "the rotation of a session in a tenant")
	got, err := s.RotateRefreshToken(t.Context(), rotation("s1/r0", "s1/r1", at(time.Minute), time.Minute))
	if err != nil || !got.Repeat || got.Session.Tenant != tenantA {
		t.Errorf("RotateRefreshToken: a repeat must return the session with its tenant; got %+v, error %v", got, err)
	}
	got, err = s.RotateRefreshToken(t.Context(), rotation("s1/r0", "s1/r9", at(time.Hour), 0))
	if !errors.Is(err, store.ErrTokenReused) || got.Session.Tenant != tenantA {
		t.Errorf("RotateRefreshToken: a reuse must return the session with its tenant; got %+v, error %v", got, err)
	}
	wantNoSession(t, s, sess.Handle, at(time.Hour), "a reused session")
}

// testChangeEmailInTenant: a moved login keeps its tenant, and only a
// login of another user in its tenant holds the new address against it.
func testChangeEmailInTenant(t *testing.T, s store.Store) {
	mustTenants(t, s, tenantA)
	u := newUser("u1")
	u.Login = inTenantOf(u.Login, tenantA)
	if err := u.create(t.Context(), s); err != nil {
		t.Fatalf("CreateUser: %v", err)
	}
	if k := store.KeyForEmail(u.LoginKey, newAddress); k.Tenant != tenantA {
		t.Errorf("KeyForEmail: the key must stay in its tenant; got %+v", k)
	}
	// The new address is another user's in the public tenant only.
	mustCreateUser(t, s, "u2")
	other := newUser("u2").withEmail(newAddress)
	other.Login.ID = "u2-new"
	if err := s.AttachLogin(t.Context(), other.Login); err != nil {
		t.Fatalf("AttachLogin: %v", err)
	}
	c := newEmailCode(store.CodeEmailChange, "change", "u1", u.Email, newAddress)
	c.Tenant = tenantA
	mustCreateCode(t, s, c, "an email change code in a tenant")
	got, logins, err := s.ChangeEmail(t.Context(), store.CodeEmailChange, c.Hash, base)
	if err != nil {
		t.Fatalf("ChangeEmail: an address held by a user of another tenant only must be taken; got error %v", err)
	}
	if got.Tenant != tenantA {
		t.Errorf("ChangeEmail: the code must come back with its tenant; got %q", got.Tenant)
	}
	want := moved(u.Login, newAddress)
	if len(logins) != 1 || loginDiff(logins[0], want) != "" {
		t.Errorf("ChangeEmail: the moved login must keep its tenant; got %+v, want %+v", logins, want)
	}
	wantLogin(t, s, want, "ChangeEmail: the moved login, in its tenant")
	_, err = s.Login(t.Context(), store.EmailPasswordKey(newAddress))
	if err != nil {
		t.Errorf("ChangeEmail: the public tenant's login of the new address must stay; got error %v", err)
	}

	// Back, against a user of the tenant that has the old address now.
	taker := newUser("u3")
	taker.Login = inTenantOf(thirdPartyLogin("u3", "google", "g-3", u.Email), tenantA)
	if err := taker.create(t.Context(), s); err != nil {
		t.Fatalf("CreateUser: %v", err)
	}
	back := newEmailCode(store.CodeEmailRevert, "revert", "u1", newAddress, u.Email)
	back.Tenant = tenantA
	mustCreateCode(t, s, back, "a revert code in a tenant")
	_, _, err = s.ChangeEmail(t.Context(), store.CodeEmailRevert, back.Hash, base)
	wantErr(t, err, store.ErrEmailOwned, "ChangeEmail: an address a login of another user has in the moved login's tenant must return ErrEmailOwned")
}

// testPutTenant: PutTenant creates and replaces, keeping the creation
// time; Tenant and Tenants read them back.
func testPutTenant(t *testing.T, s store.Store) {
	ts := s.(store.TenantStore)
	ctx := t.Context()
	b := store.Tenant{ID: tenantB, Config: []byte("b1"), UpdatedAt: base}
	a := store.Tenant{ID: tenantA, Config: []byte("a1"), UpdatedAt: at(time.Second)}
	for _, tn := range []store.Tenant{b, a} {
		if created, err := ts.PutTenant(ctx, tn); err != nil || !created {
			t.Fatalf("PutTenant: a new tenant must be created; got created %v, error %v", created, err)
		}
	}
	a2 := store.Tenant{ID: tenantA, Config: []byte("a2"), UpdatedAt: at(time.Minute), CreatedAt: at(time.Hour)}
	if created, err := ts.PutTenant(ctx, a2); err != nil || created {
		t.Fatalf("PutTenant: an existing tenant must be replaced, not created; got created %v, error %v", created, err)
	}
	a2.CreatedAt = a.UpdatedAt
	b.CreatedAt = b.UpdatedAt
	if created, err := ts.PutTenant(ctx, b); err != nil || created {
		t.Fatalf("PutTenant: a tenant written again as it is must be replaced, not created; got created %v, error %v", created, err)
	}
	wantTenant(t, ts, a2, "PutTenant: a replaced tenant must have the new Config and UpdatedAt, and keep its CreatedAt")
	wantTenant(t, ts, b, "PutTenant: a created tenant must have CreatedAt and UpdatedAt of its UpdatedAt")
	_, err := ts.Tenant(ctx, "gamma")
	wantErr(t, err, store.ErrNotFound, "Tenant: an unknown tenant must return ErrNotFound")
	all, err := ts.Tenants(ctx)
	if err != nil || len(all) != 2 || tenantDiff(all[0], a2) != "" || tenantDiff(all[1], b) != "" {
		t.Errorf("Tenants: every tenant must be listed, by id; got %+v, error %v", all, err)
	}
}

func wantTenant(t *testing.T, ts store.TenantStore, want store.Tenant, rule string) {
	t.Helper()
	got, err := ts.Tenant(t.Context(), want.ID)
	if err != nil {
		t.Errorf("%s: Tenant(%q) failed: %v", rule, want.ID, err)
	} else if d := tenantDiff(got, want); d != "" {
		t.Errorf("%s: Tenant(%q): %s", rule, want.ID, d)
	}
}

func tenantDiff(got, want store.Tenant) string {
	var d diff
	d.str("ID", got.ID, want.ID)
	d.bytes("Config", got.Config, want.Config)
	d.time("CreatedAt", got.CreatedAt, want.CreatedAt)
	d.time("UpdatedAt", got.UpdatedAt, want.UpdatedAt)
	return d.String()
}

// wantMembers checks the members of tenant, all of them on one page, in
// the order the store must list them.
func wantMembers(t *testing.T, ts store.TenantStore, tenant string, want []string, rule string) {
	t.Helper()
	got, err := ts.Members(t.Context(), tenant, "", 0)
	if err != nil {
		t.Errorf("%s: Members(%q) failed: %v", rule, tenant, err)
		return
	}
	ids := make([]string, len(got))
	for i, m := range got {
		ids[i] = m.UserID
		if m.Tenant != tenant {
			t.Errorf("%s: Members(%q) returned a member of tenant %q", rule, tenant, m.Tenant)
		}
	}
	if !slices.Equal(ids, want) {
		t.Errorf("%s: Members(%q) = %q, want %q", rule, tenant, ids, want)
	}
}

// wantUserTenants checks the tenants the user is a member of.
func wantUserTenants(t *testing.T, ts store.TenantStore, userID string, want []string, rule string) {
	t.Helper()
	got, err := ts.UserTenants(t.Context(), userID)
	if err != nil || !slices.Equal(got, want) && len(got)+len(want) > 0 {
		t.Errorf("%s: UserTenants(%q) = %q, error %v; want %q", rule, userID, got, err, want)
	}
}
