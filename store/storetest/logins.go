package storetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/latchkit/auth/store"
)

var loginTests = []test{
	{"OneEmailSeveralMethods", testLoginsShareEmail},
	{"LookupByKey", testLoginByKey},
	{"LoginsOfUser", testLoginsOfUser},
	{"LoginsOfUnknownUser", testLoginsOfUnknownUser},
	{"ResetTouchesOnlyPasswordLogin", testResetWithoutPasswordLogin},
	{"ConcurrentFirstLogin", testConcurrentFirstLogin},
}

// google is user id's login with the provider "google", its subject
// "g-"+id.
func google(id, email string) user {
	return user{User: store.User{ID: id, TimeJoined: base}, Login: thirdPartyLogin(id, "google", "g-"+id, email)}
}

// Uniqueness is per login method: an email's password login and a
// provider's login reporting the same email belong to two users.
func testLoginsShareEmail(t *testing.T, s store.Store) {
	pw := mustCreateUser(t, s, "u1")
	g := google("u2", pw.Email)
	if err := g.create(t.Context(), s); err != nil {
		t.Fatalf("CreateUser: a third-party login with the email of another user's password login must be added (keys differ); got error %v", err)
	}
	wantUser(t, s, pw, "CreateUser: logins of two methods may share an email")
	wantUser(t, s, g, "CreateUser: logins of two methods may share an email")

	// The same provider subject at another provider is another key too.
	gh := user{User: store.User{ID: "u3", TimeJoined: base}, Login: thirdPartyLogin("u3", "github", "g-u2", pw.Email)}
	if err := gh.create(t.Context(), s); err != nil {
		t.Fatalf("CreateUser: one subject at two providers is two keys; got error %v", err)
	}
	dup := google("u4", "other@example.com")
	dup.Subject = g.Subject
	err := dup.create(t.Context(), s)
	wantErr(t, err, store.ErrConflict, "CreateUser: a provider and subject already on record must return ErrConflict")
	_, err = s.UserByID(t.Context(), "u4")
	wantErr(t, err, store.ErrNotFound, "CreateUser: a conflicting user must not be written")
	wantUser(t, s, g, "CreateUser: a conflicting login must not overwrite the existing one")
}

func testLoginByKey(t *testing.T, s store.Store) {
	pw := mustCreateUser(t, s, "u1")
	g := google("u2", "u2@example.com")
	if err := g.create(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	for _, k := range []store.LoginKey{
		{Method: store.MethodThirdParty, ThirdParty: "google", Subject: pw.Email}, // the email is not the subject
		{Method: store.MethodEmailPassword, Subject: g.Email},                     // a provider's email is no password login
		{Method: store.MethodThirdParty, ThirdParty: "github", Subject: g.Subject},
		{Method: store.MethodThirdParty, Subject: g.Subject},
	} {
		_, err := s.Login(t.Context(), k)
		wantErr(t, err, store.ErrNotFound, fmt.Sprintf("Login: every part of the key must match, so %+v must return ErrNotFound", k))
	}
	wantLogin(t, s, pw.Login, "Login: found by its key")
	wantLogin(t, s, g.Login, "Login: found by its key")
}

func testLoginsOfUser(t *testing.T, s store.Store) {
	u := newUser("u1")
	u.CreatedAt = at(time.Minute)
	if err := u.create(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	mustCreateUser(t, s, "u2")
	logins, err := s.Logins(t.Context(), "u1")
	if err != nil || len(logins) != 1 || loginDiff(logins[0], u.Login) != "" {
		t.Errorf("Logins: a user's logins, and only theirs; got %v, error %v, want [%v]", logins, err, u.Login)
	}
}

func testLoginsOfUnknownUser(t *testing.T, s store.Store) {
	logins, err := s.Logins(t.Context(), "nobody")
	if err != nil || len(logins) != 0 {
		t.Errorf("Logins: an unknown user has none, and no error; got %v, error %v", logins, err)
	}
	mustCreateUser(t, s, "u1")
	logins, err = s.Logins(t.Context(), "nobody")
	if err != nil || len(logins) != 0 {
		t.Errorf("Logins: an unknown user has none while others exist; got %v, error %v", logins, err)
	}
}

// A reset acts on the email and password login alone: a user without one
// has no password to set, and the token changes nothing.
func testResetWithoutPasswordLogin(t *testing.T, s store.Store) {
	g := google("u1", "u1@example.com")
	if err := g.create(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	sess := newSession("s1", "u1", base, at(ttl))
	mustCreateSession(t, s, sess, "s1/r0")
	mustCreateResetToken(t, s, newResetToken("reset", "u1", base, at(time.Hour)))
	now := at(10 * time.Minute)
	wantResetErr(t, s, "reset", phc("new"), now, "a user without an email and password login must return ErrNotFound")
	wantUser(t, s, g, "ResetPassword: a refused reset must not change the user's third-party login")
	if logins, err := s.Logins(t.Context(), "u1"); err != nil || len(logins) != 1 {
		t.Errorf("ResetPassword: a refused reset must not add a password login; Logins = %v, error %v", logins, err)
	}
	wantSession(t, s, sess, now, "ResetPassword: a refused reset must not revoke sessions")
}

// Of concurrent first sign-ins with one third-party identity, exactly one
// creates a user.
func testConcurrentFirstLogin(t *testing.T, s store.Store) {
	const n = 16
	ctx := t.Context()
	users := make([]user, n)
	errs := make([]error, n)
	for i := range users {
		users[i] = google(fmt.Sprintf("u%d", i), "same@example.com")
		users[i].Subject = "g-same"
	}
	parallel(n, func(i int) { errs[i] = users[i].create(ctx, s) })
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Errorf("CreateUser: of concurrent calls with one login key exactly one must succeed; both %s and %s did", users[winner].ID, users[i].ID)
		case err == nil:
			winner = i
		case !errors.Is(err, store.ErrConflict):
			t.Errorf("CreateUser: a concurrent call losing the race for a login key must return ErrConflict; got error %v", err)
		}
	}
	if winner < 0 {
		t.Fatal("CreateUser: of concurrent calls with one login key exactly one must succeed; none did")
	}
	wantUser(t, s, users[winner], "CreateUser: the login must belong to the one call that succeeded")
	for i, u := range users {
		if i == winner {
			continue
		}
		_, err := s.UserByID(ctx, u.ID)
		wantErr(t, err, store.ErrNotFound, "CreateUser: a call that returned ErrConflict must not have written its user")
	}
}
