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
	{"UserByLogin", testUserByLogin},
	{"LoginsOfUser", testLoginsOfUser},
	{"LoginsOfUnknownUser", testLoginsOfUnknownUser},
	{"ResetTouchesOnlyPasswordLogin", testResetWithoutPasswordLogin},
	{"ConcurrentFirstLogin", testConcurrentFirstLogin},
	{"SignInUpCreates", testSignInUpCreates},
	{"SignInUpFinds", testSignInUpFinds},
	{"SignInUpVerifiedStays", testSignInUpVerified},
	{"SignInUpProvenStays", testSignInUpProvenStays},
	{"SignInUpUserConflict", testSignInUpUserConflict},
	{"SignInUpConcurrent", testSignInUpConcurrent},
	{"LoginsByEmail", testLoginsByEmail},
	{"SignInUpLoginID", testSignInUpLoginID},
	{"SignInUpDuplicateLoginID", testSignInUpDuplicateLoginID},
	{"SignInUpOwnsEmail", testSignInUpOwnsEmail},
	{"SignInUpOwnedEmail", testSignInUpOwnedEmail},
	{"SignInUpOwnsEmailUnproven", testSignInUpOwnsEmailUnproven},
	{"SignInUpEmailChangeEndsOwnership", testSignInUpEmailChangeEndsOwnership},
}

// google is user id's login with the provider "google", its subject
// "g-"+id.
func google(id, email string) user {
	return user{User: store.User{ID: id, TimeJoined: base}, Login: thirdPartyLogin(id, "google", "g-"+id, email)}
}

// withSubject is u with its login's key at the provider set to subject.
func (u user) withSubject(subject string) user {
	u.Subject = subject
	return u
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

// UserByLogin reads, by one login's key, its user and every way into the
// user, as UserByID and Logins would, with the session epoch of now.
func testUserByLogin(t *testing.T, s store.Store) {
	ctx := t.Context()
	pw := mustCreateUser(t, s, "u1")
	mustCreateUser(t, s, "u2")
	g := thirdPartyLogin("u1", "google", "g-u1", pw.Email)
	g.ID, g.CreatedAt, g.OwnsEmail = "l2", at(time.Minute), true // nobody owns the address yet
	if err := s.LinkLogin(ctx, g); err != nil {
		t.Fatal(err)
	}
	mustLinkLogin(t, s, secondFactors("l3", "u1", record("u1", 1)))
	if _, err := s.RevokeUserSessions(ctx, "u1"); err != nil {
		t.Fatal(err)
	}
	want, err := s.UserByID(ctx, "u1")
	if err != nil || want.SessionEpoch == 0 {
		t.Fatalf("UserByID after RevokeUserSessions: %+v, %v; want an epoch past 0", want, err)
	}
	for _, k := range []store.LoginKey{pw.LoginKey, g.LoginKey} {
		u, logins, err := s.UserByLogin(ctx, k)
		if err != nil {
			t.Fatalf("UserByLogin(%+v): %v", k, err)
		}
		if d := userDiff(u, want); d != "" {
			t.Errorf("UserByLogin(%+v): the user, with the session epoch RevokeUserSessions advanced: %s", k, d)
		}
		if len(logins) != 2 || logins[0].ID != pw.Login.ID || logins[1].ID != g.ID {
			t.Errorf("UserByLogin(%+v): the user's two ways in, oldest first, without the record of second factors; got %v", k, logins)
		}
		for _, l := range logins {
			if l.SessionEpoch != want.SessionEpoch {
				t.Errorf("UserByLogin(%+v): login %s has session epoch %d, want the user's %d", k, l.ID, l.SessionEpoch, want.SessionEpoch)
			}
		}
	}
	for _, k := range []store.LoginKey{
		store.EmailPasswordKey("nobody@example.com"),
		{Method: store.MethodThirdParty, ThirdParty: "github", Subject: g.Subject},
		store.SecondFactorsKey("u1"),
	} {
		_, _, err := s.UserByLogin(ctx, k)
		wantErr(t, err, store.ErrNotFound, fmt.Sprintf("UserByLogin(%+v): no way in has this key", k))
	}
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
			t.Errorf("CreateUser: of concurrent calls with one login key exactly one must succeed; both %s and %s did", users[winner].User.ID, users[i].User.ID)
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
		_, err := s.UserByID(ctx, u.User.ID)
		wantErr(t, err, store.ErrNotFound, "CreateUser: a call that returned ErrConflict must not have written its user")
	}
}

// mustSignInUp signs in or up with g's login, offering g's user.
func mustSignInUp(t *testing.T, s store.Store, g user, wantCreated bool, rule string) store.Login {
	t.Helper()
	got, created, err := s.SignInUp(t.Context(), g.Login, g.User)
	if err != nil {
		t.Fatalf("SignInUp: %s must succeed; got error %v", rule, err)
	}
	if created != wantCreated {
		t.Errorf("SignInUp: %s must report created = %v; got %v", rule, wantCreated, created)
	}
	return got
}

func testSignInUpCreates(t *testing.T, s store.Store) {
	g := google("u1", "u1@example.com")
	g.Login.UserID = "" // the store sets it
	got := mustSignInUp(t, s, g, true, "a new third-party identity")
	g.Login.UserID = "u1"
	if d := loginDiff(got, g.Login); d != "" {
		t.Errorf("SignInUp: a sign-up must return the login as given, with the new user's id: %s", d)
	}
	if got.SessionEpoch != 0 {
		t.Errorf("SignInUp: a new user's SessionEpoch must be zero; got %d", got.SessionEpoch)
	}
	wantUser(t, s, g, "SignInUp: a sign-up must create the user with its login")
}

func testSignInUpFinds(t *testing.T, s store.Store) {
	g := google("u1", "u1@example.com")
	mustSignInUp(t, s, g, true, "a new third-party identity")
	if _, err := s.RevokeUserSessions(t.Context(), "u1"); err != nil {
		t.Fatal(err)
	}

	again := google("u2", "new@example.com") // another user offered, same key
	again.Subject = g.Subject
	again.Login = unproven(again.Login)
	got := mustSignInUp(t, s, again, false, "an identity already on record")
	want := g.Login
	want.Email, want.EmailVerified, want.EmailProven = "new@example.com", false, false
	if d := loginDiff(got, want); d != "" {
		t.Errorf("SignInUp: a sign-in must return the existing login with the email the provider now reports: %s", d)
	}
	if got.SessionEpoch != 1 {
		t.Errorf("SignInUp: a sign-in must return the user's SessionEpoch (1 after RevokeUserSessions); got %d", got.SessionEpoch)
	}
	wantLogin(t, s, want, "SignInUp: a sign-in must record the email the provider now reports")
	_, err := s.UserByID(t.Context(), "u2")
	wantErr(t, err, store.ErrNotFound, "SignInUp: a sign-in must not create the user it was offered")
}

func testSignInUpVerified(t *testing.T, s store.Store) {
	g := google("u1", "a@example.com")
	g.EmailProven = false // verified, but not proven: this case is about verification alone
	mustSignInUp(t, s, g, true, "a new third-party identity")
	for _, step := range []struct {
		email            string
		reported, stored bool
		rule             string
	}{
		{"a@example.com", false, true, "a verified email reported again, unverified this time, must stay verified"},
		{"b@example.com", false, false, "a new email reported unverified must be unverified"},
		{"b@example.com", false, false, "an unverified email reported again unverified must stay unverified"},
		{"b@example.com", true, true, "an email the provider now says is verified must become verified"},
		{"a@example.com", false, false, "an email that changed back, reported unverified, must be unverified: verification belongs to the email"},
	} {
		in := g
		in.Email, in.EmailVerified = step.email, step.reported
		got := mustSignInUp(t, s, in, false, "an identity already on record")
		if got.Email != step.email || got.EmailVerified != step.stored || got.EmailProven {
			t.Errorf("SignInUp: %s, and an email never reported proven must stay unproven; got Email %q, EmailVerified %v, EmailProven %v",
				step.rule, got.Email, got.EmailVerified, got.EmailProven)
		}
		want := g.Login
		want.Email, want.EmailVerified = step.email, step.stored
		wantLogin(t, s, want, "SignInUp: "+step.rule)
	}
}

// A sign-in records whether the provider vouches for the email now, but
// proof, like verification, stays with an email that did not change; and
// only a login that keeps its email keeps owning it.
func testSignInUpProvenStays(t *testing.T, s store.Store) {
	ctx := t.Context()
	g := owning(google("u1", "a@example.com"))
	mustSignInUp(t, s, g, true, "a new identity asking to own an email nobody owns")
	type state struct{ verified, proven bool }
	for _, step := range []struct {
		email    string
		reported state
		stored   state
		owns     bool
		rule     string
	}{
		{"a@example.com", state{false, false}, state{true, true}, true,
			"a proven email reported again, unproven this time, must stay proven and verified, and its login keep owning it"},
		{"b@example.com", state{true, false}, state{true, false}, false,
			"a new email reported verified but not proven must be verified and not proven, and the login must own no email"},
		{"b@example.com", state{false, false}, state{true, false}, false,
			"an unproven verified email reported again unverified must stay verified and stay unproven"},
		{"b@example.com", state{true, true}, state{true, true}, false,
			"an email the provider now vouches for must become proven; a sign-in never makes a login own"},
		{"c@example.com", state{false, true}, state{true, true}, false,
			"a new email the provider vouches for must be proven, and so verified, even if reported unverified"},
		{"c@example.com", state{false, false}, state{true, true}, false,
			"a proven email reported again unproven must stay proven"},
		{"a@example.com", state{false, false}, state{false, false}, false,
			"an email that changed back, reported unproven, must be neither proven nor verified: proof belongs to the email"},
		{"a@example.com", state{true, true}, state{true, true}, false,
			"an email reported proven must become proven; a sign-in never makes a login own its email again"},
	} {
		in := g
		in.Email, in.EmailVerified, in.EmailProven = step.email, step.reported.verified, step.reported.proven
		got := mustSignInUp(t, s, in, false, "an identity already on record")
		want := g.Login
		want.Email, want.EmailVerified, want.EmailProven, want.OwnsEmail = step.email, step.stored.verified, step.stored.proven, step.owns
		if d := loginDiff(got, want); d != "" {
			t.Errorf("SignInUp: %s, and return the login as updated: %s", step.rule, d)
		}
		wantLogin(t, s, want, "SignInUp: "+step.rule)
	}

	// The email the login stopped owning is free for another proven login.
	h := owning(google("u2", "a@example.com"))
	if err := h.create(ctx, s); err != nil {
		t.Errorf("CreateUser: an email whose owner's email changed must be free to own; got error %v", err)
	}
}

func testSignInUpUserConflict(t *testing.T, s store.Store) {
	mustCreateUser(t, s, "u1")
	g := google("u1", "g@example.com") // a new key, an existing user id
	_, _, err := s.SignInUp(t.Context(), g.Login, g.User)
	wantErr(t, err, store.ErrConflict, "SignInUp: a new identity offered with an existing user id must return ErrConflict")
	_, err = s.Login(t.Context(), g.LoginKey)
	wantErr(t, err, store.ErrNotFound, "SignInUp: a refused sign-up must not write its login")
	if logins, err := s.Logins(t.Context(), "u1"); err != nil || len(logins) != 1 {
		t.Errorf("SignInUp: a refused sign-up must not add a login to the existing user; Logins = %v, error %v", logins, err)
	}
}

// Of concurrent first sign-ins with one third-party identity exactly one
// creates a user, and every one signs in as that user.
func testSignInUpConcurrent(t *testing.T, s store.Store) {
	const n = 16
	ctx := t.Context()
	logins := make([]store.Login, n)
	created := make([]bool, n)
	errs := make([]error, n)
	parallel(n, func(i int) {
		g := google(fmt.Sprintf("u%d", i), "same@example.com")
		g.Subject = "g-same"
		logins[i], created[i], errs[i] = s.SignInUp(ctx, g.Login, g.User)
	})
	winner := -1
	for i := range n {
		switch {
		case errs[i] != nil:
			t.Errorf("SignInUp: concurrent first sign-ins with one identity must all succeed; call %d got error %v", i, errs[i])
		case created[i] && winner >= 0:
			t.Errorf("SignInUp: of concurrent first sign-ins with one identity exactly one must create; %d and %d both did", winner, i)
		case created[i]:
			winner = i
		}
	}
	if winner < 0 {
		t.Fatal("SignInUp: of concurrent first sign-ins with one identity exactly one must create; none did")
	}
	users := 0
	for i := range n {
		if errs[i] == nil && logins[i].UserID != logins[winner].UserID {
			t.Errorf("SignInUp: every concurrent sign-in must sign in as the one user created; call %d got %q, want %q", i, logins[i].UserID, logins[winner].UserID)
		}
		if _, err := s.UserByID(ctx, fmt.Sprintf("u%d", i)); err == nil {
			users++
		}
	}
	if users != 1 {
		t.Errorf("SignInUp: 16 concurrent first sign-ins with one identity must leave exactly 1 user; found %d", users)
	}
}

func testLoginsByEmail(t *testing.T, s store.Store) {
	ctx := t.Context()
	const email = "shared@example.com"
	pw := newUser("u1").withEmail(email)
	pw.CreatedAt = at(time.Minute)
	if err := pw.create(ctx, s); err != nil {
		t.Fatal(err)
	}
	g := google("u2", email) // older
	mustSignInUp(t, s, g, true, "a new third-party identity")
	mustSignInUp(t, s, google("u3", "other@example.com"), true, "a new third-party identity")

	got, err := s.LoginsByEmail(ctx, email)
	if err != nil {
		t.Fatalf("LoginsByEmail: %v", err)
	}
	if len(got) != 2 || loginDiff(got[0], g.Login) != "" || loginDiff(got[1], pw.Login) != "" {
		t.Errorf("LoginsByEmail: must return the logins of every user with the email, oldest first: got %+v", got)
	}
	if got, err := s.LoginsByEmail(ctx, "nobody@example.com"); err != nil || len(got) != 0 {
		t.Errorf("LoginsByEmail: an email nobody has must return none; got %v, error %v", got, err)
	}
	// The provider reports another email: the login leaves the list.
	moved := g
	moved.Email = "moved@example.com"
	mustSignInUp(t, s, moved, false, "an identity already on record")
	if got, err := s.LoginsByEmail(ctx, email); err != nil || len(got) != 1 || got[0].UserID != "u1" {
		t.Errorf("LoginsByEmail: a login whose email changed must be found by its new email only; got %+v, error %v", got, err)
	}
}

func testSignInUpLoginID(t *testing.T, s store.Store) {
	g := withLoginID(google("u1", "u1@example.com"), "")
	got := mustSignInUp(t, s, g, true, "a new third-party identity without a login id")
	g.Login.ID = "u1"
	if d := loginDiff(got, g.Login); d != "" {
		t.Errorf("SignInUp: a sign-up whose login has no id must return it with the new user's id: %s", d)
	}
	wantUser(t, s, g, "SignInUp: a sign-up whose login has no id must store it with the new user's id")

	h := withLoginID(google("u2", "u2@example.com"), "l-custom")
	got = mustSignInUp(t, s, h, true, "a new third-party identity with a login id")
	if d := loginDiff(got, h.Login); d != "" {
		t.Errorf("SignInUp: a sign-up whose login has an id must return it with that id: %s", d)
	}
	wantUser(t, s, h, "SignInUp: a sign-up whose login has an id must keep it")

	// A sign-in finds the login, with the id it has.
	for _, id := range []string{"", "u9", "l-other"} {
		again := withLoginID(google("u9", h.Email), id).withSubject(h.Subject)
		got = mustSignInUp(t, s, again, false, "an identity already on record")
		if got.ID != "l-custom" {
			t.Errorf("SignInUp: a sign-in must return the login's own id %q, whatever id it was offered (%q); got %q", "l-custom", id, got.ID)
		}
	}
	wantLogin(t, s, h.Login, "SignInUp: a sign-in must not change the login's id")
}

func testSignInUpDuplicateLoginID(t *testing.T, s store.Store) {
	u := mustCreateUser(t, s, "u1")
	for _, c := range []struct {
		g    user
		rule string
	}{
		{withLoginID(google("u2", "u2@example.com"), "u1"), "a new identity whose login id exists"},
		{withLoginID(google("u1", "u2@example.com"), ""), "a new identity without a login id, offered with a user id that is an existing login's id"},
	} {
		_, _, err := s.SignInUp(t.Context(), c.g.Login, c.g.User)
		wantErr(t, err, store.ErrConflict, "SignInUp: "+c.rule+" must return ErrConflict")
		_, err = s.Login(t.Context(), c.g.LoginKey)
		wantErr(t, err, store.ErrNotFound, "SignInUp: "+c.rule+" must not write its login")
	}
	_, err := s.UserByID(t.Context(), "u2")
	wantErr(t, err, store.ErrNotFound, "SignInUp: a refused sign-up must not write its user")
	wantUser(t, s, u, "SignInUp: a refused sign-up must not change the login whose id it had")
}

func testSignInUpOwnsEmail(t *testing.T, s store.Store) {
	g := owning(google("u1", "shared@example.com"))
	got := mustSignInUp(t, s, g, true, "a new identity asking to own an email nobody owns")
	if !got.OwnsEmail {
		t.Errorf("SignInUp: a sign-up asking to own an email nobody owns must return the login owning it; got %+v", got)
	}
	wantUser(t, s, g, "SignInUp: a sign-up asking to own an email nobody owns must own it")

	// Ownership is set only when asked.
	h := google("u2", "shared@example.com")
	got = mustSignInUp(t, s, h, true, "a new identity not asking to own an owned email")
	if got.OwnsEmail {
		t.Errorf("SignInUp: a sign-up not asking to own its email must not own it; got %+v", got)
	}
	wantUser(t, s, h, "SignInUp: a sign-up not asking to own its email must not own it")
	wantLogin(t, s, g.Login, "SignInUp: another login with the email must not change the owner")
}

func testSignInUpOwnedEmail(t *testing.T, s store.Store) {
	u := owning(newUser("u1"))
	if err := u.create(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	g := owning(google("u2", u.Email))
	_, _, err := s.SignInUp(t.Context(), g.Login, g.User)
	wantErr(t, err, store.ErrEmailOwned, "SignInUp: a new identity asking to own an email another login owns must return ErrEmailOwned")
	_, err = s.UserByID(t.Context(), "u2")
	wantErr(t, err, store.ErrNotFound, "SignInUp: a sign-up refused with ErrEmailOwned must not write its user")
	_, err = s.Login(t.Context(), g.LoginKey)
	wantErr(t, err, store.ErrNotFound, "SignInUp: a sign-up refused with ErrEmailOwned must not write its login")
	wantUser(t, s, u, "SignInUp: a refused sign-up must not change the owner")

	// ErrConflict comes first, as for CreateUser.
	dup := owning(google("u1", u.Email))
	_, _, err = s.SignInUp(t.Context(), dup.Login, dup.User)
	wantErr(t, err, store.ErrConflict, "SignInUp: a new identity offered with an existing user id must return ErrConflict, even if the email is owned as well")

	// Nothing was written: the same identity signs up without asking.
	g.OwnsEmail = false
	mustSignInUp(t, s, g, true, "an identity refused with ErrEmailOwned, again without asking to own")
	wantUser(t, s, g, "SignInUp: a sign-up refused with ErrEmailOwned must leave its key and user id free")
}

// A sign-up asking to own its email with a login that is not proven is
// a sign-up that did not ask: it owns nothing and is never refused with
// ErrEmailOwned.
func testSignInUpOwnsEmailUnproven(t *testing.T, s store.Store) {
	owner := owning(google("u1", "owned@example.com"))
	mustSignInUp(t, s, owner, true, "a new identity asking to own an email nobody owns")
	for _, c := range []struct {
		g    user
		rule string
	}{
		{google("u2", "free@example.com").withUnproven(), "a new identity the provider did not vouch for, with an email nobody owns"},
		{google("u3", owner.Email).withUnproven(), "a new identity the provider did not vouch for, with an email another login owns"},
		{user{User: store.User{ID: "u4", TimeJoined: base}, Login: verified(unproven(thirdPartyLogin("u4", "google", "g-u4", owner.Email)))},
			"a new identity whose email is verified but not proven, with an email another login owns"},
	} {
		asking := c.g
		asking.OwnsEmail = true
		got, created, err := s.SignInUp(t.Context(), asking.Login, asking.User)
		if err != nil || !created {
			t.Errorf("SignInUp: %s, asking to own it, must sign up as if it had not asked, never refused with ErrEmailOwned; got created %v, error %v", c.rule, created, err)
			continue
		}
		if d := loginDiff(got, c.g.Login); d != "" {
			t.Errorf("SignInUp: %s, asking to own it, must return the login owning nothing: %s", c.rule, d)
		}
		wantUser(t, s, c.g, "SignInUp: "+c.rule+", asking to own it, must own nothing")
	}
	wantLogin(t, s, owner.Login, "SignInUp: an unproven login must not take the email from its owner")

	// The unproven sign-up left its email free for a proven one.
	h := owning(google("u5", "free@example.com"))
	got := mustSignInUp(t, s, h, true, "a new proven identity asking to own an email only an unproven login asked for")
	if !got.OwnsEmail {
		t.Errorf("SignInUp: a proven login asking to own an email only an unproven login asked for must own it; got %+v", got)
	}
}

func testSignInUpEmailChangeEndsOwnership(t *testing.T, s store.Store) {
	ctx := t.Context()
	g := owning(google("u1", "a@example.com"))
	mustSignInUp(t, s, g, true, "a new identity asking to own an email nobody owns")

	// The same email again: the login keeps it, whatever l.OwnsEmail says.
	again := g
	again.OwnsEmail = false
	got := mustSignInUp(t, s, again, false, "an identity already on record")
	if !got.OwnsEmail {
		t.Errorf("SignInUp: a sign-in with an unchanged email must leave the login owning it, l.OwnsEmail being ignored; got %+v", got)
	}
	wantLogin(t, s, g.Login, "SignInUp: a sign-in with an unchanged email must leave the login owning it")

	moved := g
	moved.Email = "b@example.com" // l.OwnsEmail is still set: ignored
	got = mustSignInUp(t, s, moved, false, "an identity already on record")
	moved.OwnsEmail = false
	if d := loginDiff(got, moved.Login); d != "" {
		t.Errorf("SignInUp: a sign-in whose email changed must return the login owning no email: %s", d)
	}
	wantLogin(t, s, moved.Login, "SignInUp: when the email changes the login must no longer own one")

	// The old email has no owner left: another user may own it.
	h := owning(google("u2", "a@example.com"))
	if _, _, err := s.SignInUp(ctx, h.Login, h.User); err != nil {
		t.Errorf("SignInUp: an email whose owner's email changed must be free to own; got error %v", err)
	}

	// Back to the first email: the login does not own it again.
	back := g
	got = mustSignInUp(t, s, back, false, "an identity already on record")
	back.OwnsEmail = false
	if d := loginDiff(got, back.Login); d != "" {
		t.Errorf("SignInUp: a sign-in must never make a login own its email, l.OwnsEmail being ignored: %s", d)
	}
	wantLogin(t, s, back.Login, "SignInUp: a sign-in must never make a login own its email")

	// A login that does not own its email is not made to by asking.
	i := google("u3", "c@example.com")
	mustSignInUp(t, s, i, true, "a new identity")
	got = mustSignInUp(t, s, owning(i), false, "an identity already on record")
	if got.OwnsEmail {
		t.Errorf("SignInUp: a sign-in with an unchanged email must ignore l.OwnsEmail; got %+v", got)
	}
	wantLogin(t, s, i.Login, "SignInUp: a sign-in must ignore l.OwnsEmail")
}
