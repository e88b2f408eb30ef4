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
