package storetest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/latchkit/auth/store"
)

var userTests = []test{
	{"CreateAndGet", testCreateUser},
	{"DuplicateID", testCreateUserDuplicateID},
	{"DuplicateEmail", testCreateUserDuplicateEmail},
	{"EmailComparedExactly", testEmailComparedExactly},
	{"NotFound", testUserNotFound},
	{"UpdatePasswordHash", testUpdatePasswordHash},
	{"UpdatePasswordHashStale", testUpdatePasswordHashStale},
	{"UpdatePasswordHashUnknownUser", testUpdatePasswordHashUnknownUser},
	{"UpdatePasswordHashWithoutPasswordLogin", testUpdatePasswordHashWithoutPasswordLogin},
	{"LoginID", testCreateUserLoginID},
	{"DuplicateLoginID", testCreateUserDuplicateLoginID},
	{"OwnsEmail", testCreateUserOwnsEmail},
	{"OwnedEmail", testCreateUserOwnedEmail},
	{"OwnsEmailUnproven", testCreateUserOwnsEmailUnproven},
	{"ProvenIsVerified", testProvenIsVerified},
}

func testCreateUser(t *testing.T, s store.Store) {
	u := newUser("u1")
	u.TimeJoined = base.Add(1234 * time.Millisecond)
	u.CreatedAt = u.TimeJoined
	if err := u.create(t.Context(), s); err != nil {
		t.Fatalf("CreateUser: a user with a new id and login key must be added; got error %v", err)
	}
	wantUser(t, s, u, "CreateUser: the user and its first login must be stored as given")

	// A user who signs in only by other means has no password hash.
	v := user{User: store.User{ID: "u2", TimeJoined: base}, Login: thirdPartyLogin("u2", "google", "g-2", "u2@example.com")}
	if err := v.create(t.Context(), s); err != nil {
		t.Fatalf("CreateUser: a user whose first login is a third-party one must be added; got error %v", err)
	}
	wantUser(t, s, v, "CreateUser: a login without a password hash must be stored with an empty one")
	wantUser(t, s, u, "CreateUser: adding a user must not change another")

	// The store owns the login's UserID: it is the user's.
	w := newUser("u3")
	w.Login.UserID = "someone else"
	if err := w.create(t.Context(), s); err != nil {
		t.Fatalf("CreateUser: a user with a new id and login key must be added; got error %v", err)
	}
	w.Login.UserID = "u3"
	wantUser(t, s, w, "CreateUser: the first login must belong to the user created, whatever UserID it came with")
}

func testCreateUserDuplicateID(t *testing.T, s store.Store) {
	u := mustCreateUser(t, s, "u1")

	dup := newUser("u1").withEmail("other@example.com")
	dup.PasswordHash = phc("other")
	err := dup.create(t.Context(), s)
	wantErr(t, err, store.ErrConflict, "CreateUser: a duplicate id must return ErrConflict")

	_, err = s.Login(t.Context(), dup.LoginKey)
	wantErr(t, err, store.ErrNotFound, "CreateUser: a conflicting user must not be written, so its login must stay unknown")
	wantUser(t, s, u, "CreateUser: a conflicting user must not overwrite the existing one")
}

func testCreateUserDuplicateEmail(t *testing.T, s store.Store) {
	u := mustCreateUser(t, s, "u1")

	dup := newUser("u2").withEmail(u.Email)
	err := dup.create(t.Context(), s)
	wantErr(t, err, store.ErrConflict, "CreateUser: a duplicate login key (one email's password login) must return ErrConflict")

	_, err = s.UserByID(t.Context(), dup.User.ID)
	wantErr(t, err, store.ErrNotFound, "CreateUser: a conflicting user must not be written, so its id must stay unknown")
	if logins, err := s.Logins(t.Context(), dup.User.ID); err != nil || len(logins) != 0 {
		t.Errorf("CreateUser: a conflicting user must not be written, so it must have no logins; got %v, error %v", logins, err)
	}
	wantUser(t, s, u, "CreateUser: a conflicting user must not overwrite the existing one")
}

func testEmailComparedExactly(t *testing.T, s store.Store) {
	u := mustCreateUser(t, s, "u1")

	for _, email := range []string{strings.ToUpper(u.Email), " " + u.Email, u.Email + " "} {
		_, err := s.Login(t.Context(), store.EmailPasswordKey(email))
		wantErr(t, err, store.ErrNotFound, fmt.Sprintf("Login: keys are compared exactly, so %q must return ErrNotFound", email))
	}

	v := newUser("u2").withEmail(strings.ToUpper(u.Email))
	if err := v.create(t.Context(), s); err != nil {
		t.Errorf("CreateUser: keys are compared exactly, so an email that differs only in case must not conflict; got error %v", err)
	} else {
		wantUser(t, s, v, "CreateUser: keys are compared exactly")
	}
	wantUser(t, s, u, "CreateUser: keys are compared exactly")
}

func testUserNotFound(t *testing.T, s store.Store) {
	_, err := s.UserByID(t.Context(), "nobody")
	wantErr(t, err, store.ErrNotFound, "UserByID: an unknown id must return ErrNotFound")
	_, err = s.Login(t.Context(), store.EmailPasswordKey("nobody@example.com"))
	wantErr(t, err, store.ErrNotFound, "Login: an unknown key must return ErrNotFound")

	mustCreateUser(t, s, "u1")
	_, err = s.UserByID(t.Context(), "nobody")
	wantErr(t, err, store.ErrNotFound, "UserByID: an unknown id must return ErrNotFound while other users exist")
	_, err = s.Login(t.Context(), store.EmailPasswordKey("nobody@example.com"))
	wantErr(t, err, store.ErrNotFound, "Login: an unknown key must return ErrNotFound while other logins exist")
}

func testUpdatePasswordHash(t *testing.T, s store.Store) {
	u := mustCreateUser(t, s, "u1")
	other := mustCreateUser(t, s, "u2")

	want := u
	want.PasswordHash = phc("upgraded")
	err := s.UpdatePasswordHash(t.Context(), u.User.ID, u.PasswordHash, want.PasswordHash)
	if !wantErr(t, err, nil, "UpdatePasswordHash: a matching old hash must succeed") {
		return
	}
	wantUser(t, s, want, "UpdatePasswordHash: must replace the hash and nothing else")
	wantUser(t, s, other, "UpdatePasswordHash: must not change other users")

	// A password login whose stored hash is "" gets one.
	v := newUser("u3")
	v.PasswordHash = ""
	if err := v.create(t.Context(), s); err != nil {
		t.Fatalf("CreateUser: a password login without a hash must be added; got error %v", err)
	}
	v.PasswordHash = phc("first")
	err = s.UpdatePasswordHash(t.Context(), v.User.ID, "", v.PasswordHash)
	if wantErr(t, err, nil, "UpdatePasswordHash: an empty old hash must match a login without a hash") {
		wantUser(t, s, v, "UpdatePasswordHash: must replace an empty hash")
	}
}

func testUpdatePasswordHashStale(t *testing.T, s store.Store) {
	u := mustCreateUser(t, s, "u1")

	err := s.UpdatePasswordHash(t.Context(), u.User.ID, phc("stale"), phc("new"))
	wantErr(t, err, store.ErrConflict, "UpdatePasswordHash: an old hash that does not match the stored one must return ErrConflict")
	wantUser(t, s, u, "UpdatePasswordHash: a conflicting update must not change the hash")

	// The race the rule exists for: the password changes between reading
	// the old hash and writing its upgrade.
	changed := u
	changed.PasswordHash = phc("changed")
	if err := s.UpdatePasswordHash(t.Context(), u.User.ID, u.PasswordHash, changed.PasswordHash); err != nil {
		t.Fatalf("UpdatePasswordHash: a matching old hash must succeed; got error %v", err)
	}
	err = s.UpdatePasswordHash(t.Context(), u.User.ID, u.PasswordHash, phc("upgrade of the old one"))
	wantErr(t, err, store.ErrConflict, "UpdatePasswordHash: an upgrade of a hash replaced in the meantime must return ErrConflict")
	wantUser(t, s, changed, "UpdatePasswordHash: an upgrade must never overwrite a password changed in the meantime")
}

func testUpdatePasswordHashUnknownUser(t *testing.T, s store.Store) {
	u := mustCreateUser(t, s, "u1")

	err := s.UpdatePasswordHash(t.Context(), "nobody", "", phc("new"))
	wantErr(t, err, store.ErrNotFound, "UpdatePasswordHash: an unknown user must return ErrNotFound")
	err = s.UpdatePasswordHash(t.Context(), "nobody", u.PasswordHash, phc("new"))
	wantErr(t, err, store.ErrNotFound, "UpdatePasswordHash: an unknown user must return ErrNotFound whatever the old hash")
	_, err = s.UserByID(t.Context(), "nobody")
	wantErr(t, err, store.ErrNotFound, "UpdatePasswordHash: must not create a user")
	wantUser(t, s, u, "UpdatePasswordHash: an unknown user must not change other users")
}

func testUpdatePasswordHashWithoutPasswordLogin(t *testing.T, s store.Store) {
	v := user{User: store.User{ID: "u1", TimeJoined: base}, Login: thirdPartyLogin("u1", "google", "g-1", "u1@example.com")}
	if err := v.create(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	for _, old := range []string{"", phc("guess")} {
		err := s.UpdatePasswordHash(t.Context(), v.User.ID, old, phc("new"))
		wantErr(t, err, store.ErrNotFound, "UpdatePasswordHash: a user without an email and password login must return ErrNotFound")
	}
	wantUser(t, s, v, "UpdatePasswordHash: a user without a password login must not change")
	if logins, err := s.Logins(t.Context(), v.User.ID); err != nil || len(logins) != 1 {
		t.Errorf("UpdatePasswordHash: must not add a login; Logins = %v, error %v", logins, err)
	}
}

func testCreateUserLoginID(t *testing.T, s store.Store) {
	u := newUser("u1")
	u.Login.ID = ""
	if err := u.create(t.Context(), s); err != nil {
		t.Fatalf("CreateUser: a user whose first login has no id must be added; got error %v", err)
	}
	u.Login.ID = "u1"
	wantUser(t, s, u, "CreateUser: a first login without an id must get the user's id")
	if got, err := s.LoginsByEmail(t.Context(), u.Email); err != nil || len(got) != 1 || got[0].ID != "u1" {
		t.Errorf("CreateUser: a first login without an id must get the user's id, so LoginsByEmail must report it; got %+v, error %v", got, err)
	}

	v := newUser("u2")
	v.Login.ID = "l-custom"
	if err := v.create(t.Context(), s); err != nil {
		t.Fatalf("CreateUser: a user whose first login has an id of its own must be added; got error %v", err)
	}
	wantUser(t, s, v, "CreateUser: a first login with an id must keep it")
}

func testCreateUserDuplicateLoginID(t *testing.T, s store.Store) {
	u := mustCreateUser(t, s, "u1")
	v := newUser("u2")
	v.Login.ID = "l-custom"
	if err := v.create(t.Context(), s); err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		dup  user
		rule string
	}{
		{withLoginID(newUser("u3"), "u1"), "the id of another user's first login"},
		{withLoginID(newUser("u3"), "l-custom"), "an id of its own that another login has"},
		// The id the store gives a first login is checked like one given.
		{withLoginID(newUser("l-custom"), ""), "no id, so the user's id, which another login has"},
	} {
		err := c.dup.create(t.Context(), s)
		wantErr(t, err, store.ErrConflict, "CreateUser: a first login whose id exists must return ErrConflict: "+c.rule)
		_, err = s.UserByID(t.Context(), c.dup.User.ID)
		wantErr(t, err, store.ErrNotFound, "CreateUser: a conflicting user must not be written, so its id must stay unknown: "+c.rule)
		_, err = s.Login(t.Context(), c.dup.LoginKey)
		wantErr(t, err, store.ErrNotFound, "CreateUser: a conflicting user must not be written, so its login must stay unknown: "+c.rule)
	}
	wantUser(t, s, u, "CreateUser: a conflicting login id must not change the login that has it")
	wantUser(t, s, v, "CreateUser: a conflicting login id must not change the login that has it")
}

// withLoginID is u with its first login's id set to id.
func withLoginID(u user, id string) user {
	u.Login.ID = id
	return u
}

// owning is u asking its first login to own its email, which only a login
// whose email is proven may: its email is proven.
func owning(u user) user {
	u.Login = proven(u.Login)
	u.OwnsEmail = true
	return u
}

func testCreateUserOwnsEmail(t *testing.T, s store.Store) {
	u := owning(newUser("u1"))
	if err := u.create(t.Context(), s); err != nil {
		t.Fatalf("CreateUser: a first login asking to own an email nobody owns must be added; got error %v", err)
	}
	wantUser(t, s, u, "CreateUser: a first login asked to own its email must own it")

	// Ownership is set only when asked: another login with the email does
	// not take it and is not refused.
	g := google("u2", u.Email)
	if err := g.create(t.Context(), s); err != nil {
		t.Fatalf("CreateUser: a first login not asking to own an owned email must be added; got error %v", err)
	}
	wantUser(t, s, g, "CreateUser: a first login not asked to own its email must not own it")

	v := owning(newUser("u3"))
	if err := v.create(t.Context(), s); err != nil {
		t.Fatalf("CreateUser: a first login asking to own another email must be added; got error %v", err)
	}
	wantUser(t, s, v, "CreateUser: each email has its own owner")
	wantUser(t, s, u, "CreateUser: each email has its own owner")
}

func testCreateUserOwnedEmail(t *testing.T, s store.Store) {
	u := owning(newUser("u1"))
	if err := u.create(t.Context(), s); err != nil {
		t.Fatal(err)
	}

	g := owning(google("u2", u.Email))
	err := g.create(t.Context(), s)
	wantErr(t, err, store.ErrEmailOwned, "CreateUser: a first login asking to own an email another login owns must return ErrEmailOwned")
	_, err = s.UserByID(t.Context(), "u2")
	wantErr(t, err, store.ErrNotFound, "CreateUser: a user refused with ErrEmailOwned must not be written")
	_, err = s.Login(t.Context(), g.LoginKey)
	wantErr(t, err, store.ErrNotFound, "CreateUser: the login of a user refused with ErrEmailOwned must not be written")
	if got, err := s.LoginsByEmail(t.Context(), u.Email); err != nil || len(got) != 1 || loginDiff(got[0], u.Login) != "" {
		t.Errorf("CreateUser: a user refused with ErrEmailOwned must not be written, and the owner must stay; LoginsByEmail = %+v, error %v", got, err)
	}

	// ErrConflict comes first: both refusals write nothing, but a taken
	// key or id is the answer a caller retries differently.
	other := google("u3", "other@example.com")
	if err := other.create(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	err = owning(google("u4", u.Email).withSubject(other.Subject)).create(t.Context(), s)
	wantErr(t, err, store.ErrConflict, "CreateUser: a duplicate login key must return ErrConflict, even if the email is owned as well")
	err = owning(google("u1", u.Email).withSubject("g-new")).create(t.Context(), s)
	wantErr(t, err, store.ErrConflict, "CreateUser: a duplicate user id must return ErrConflict, even if the email is owned as well")
	err = owning(withLoginID(google("u5", u.Email), "u3")).create(t.Context(), s)
	wantErr(t, err, store.ErrConflict, "CreateUser: a duplicate login id must return ErrConflict, even if the email is owned as well")
	_, err = s.UserByID(t.Context(), "u4")
	wantErr(t, err, store.ErrNotFound, "CreateUser: a conflicting user must not be written")
	wantUser(t, s, u, "CreateUser: refused users must not change the owner of the email")

	// The refused user wrote nothing, so it may be added without asking.
	g.OwnsEmail = false
	if err := g.create(t.Context(), s); err != nil {
		t.Errorf("CreateUser: a user refused with ErrEmailOwned must leave its id and key free; got error %v", err)
	}
}

// Only a proven login owns its email: asking for a login that is not
// proven is ignored, so it neither owns nor is refused for an email
// another login owns.
func testCreateUserOwnsEmailUnproven(t *testing.T, s store.Store) {
	ctx := t.Context()
	owner := owning(google("u1", "shared@example.com"))
	if err := owner.create(ctx, s); err != nil {
		t.Fatalf("CreateUser: a user whose first login asks to own an email nobody owns must be added; got error %v", err)
	}
	for _, c := range []struct {
		u    user
		rule string
	}{
		{newUser("u2").withEmail("free@example.com"), "a password login whose email nobody owns"},
		{newUser("u3").withEmail(owner.Email), "a password login whose email another login owns"},
		{user{User: store.User{ID: "u4", TimeJoined: base}, Login: verified(unproven(thirdPartyLogin("u4", "google", "g-u4", "free@example.com")))},
			"a login whose email is verified but not proven"},
		{google("u5", owner.Email).withUnproven(), "a third-party login the provider did not vouch for, with an owned email"},
	} {
		asking := c.u
		asking.OwnsEmail = true
		if err := asking.create(ctx, s); err != nil {
			t.Errorf("CreateUser: %s asking to own its email, not being proven, must be added as if it had not asked, never refused with ErrEmailOwned; got error %v", c.rule, err)
			continue
		}
		wantUser(t, s, c.u, "CreateUser: "+c.rule+" asking to own its email, not being proven, must own nothing")
	}
	wantUser(t, s, owner, "CreateUser: a login that is not proven must not take the email from its owner")

	// The unproven logins left the email free for a proven one.
	v := owning(google("u6", "free@example.com"))
	if err := v.create(ctx, s); err != nil {
		t.Errorf("CreateUser: an email only unproven logins asked to own must be free for a proven login to own; got error %v", err)
	}
	wantUser(t, s, v, "CreateUser: a proven login asking to own an email only unproven logins asked for must own it")
}

// withUnproven is u with its login's email neither verified nor proven.
func (u user) withUnproven() user {
	u.Login = unproven(u.Login)
	return u
}

// A proven email is verified: a login written proven but not verified is
// stored verified, however it is written.
func testProvenIsVerified(t *testing.T, s store.Store) {
	ctx := t.Context()
	notVerified := func(l store.Login) store.Login {
		l.EmailVerified, l.EmailProven = false, true
		return l
	}

	u := newUser("u1")
	u.Login = notVerified(u.Login)
	if err := u.create(ctx, s); err != nil {
		t.Fatalf("CreateUser: a user with a new id and login key must be added; got error %v", err)
	}
	wantUser(t, s, user{User: u.User, Login: proven(u.Login)}, "CreateUser: a first login written proven and unverified must be stored verified")

	g := owning(google("u2", "g@example.com"))
	g.Login = notVerified(g.Login)
	got := mustSignInUp(t, s, g, true, "a new identity written proven and unverified")
	want := proven(g.Login)
	if d := loginDiff(got, want); d != "" {
		t.Errorf("SignInUp: a sign-up written proven and unverified must return the login verified: %s", d)
	}
	wantLogin(t, s, want, "SignInUp: a sign-up written proven and unverified must be stored verified, and own its email as asked")

	joins := notVerified(linkedLogin("l3", "u2", "github", "gh-3", g.Email))
	if err := s.LinkLogin(ctx, joins); err != nil {
		t.Fatalf("LinkLogin: a login with a new key and id, whose email a login of its user owns, must be added; got error %v", err)
	}
	wantLogin(t, s, proven(joins), "LinkLogin: a login joining the owner, written proven and unverified, must be stored verified")

	owns := notVerified(linkedLogin("l4", "u1", "github", "gh-4", "new@example.com"))
	owns.OwnsEmail = true
	if err := s.LinkLogin(ctx, owns); err != nil {
		t.Fatalf("LinkLogin: a proven login asking to own an email nobody owns must be added; got error %v", err)
	}
	wantLogin(t, s, proven(owns), "LinkLogin: a login added as owner, written proven and unverified, must be stored verified")
}
