package storetest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/latchkit/auth/store"
)

var userManagementTests = []test{
	{"DeleteLogin", testDeleteLogin},
	{"DeleteLoginFirst", testDeleteLoginFirst},
	{"DeleteLoginLast", testDeleteLoginLast},
	{"DeleteLoginUnknown", testDeleteLoginUnknown},
	{"DeleteLoginOwner", testDeleteLoginOwner},
	{"DeleteUser", testDeleteUser},
	{"DeleteUserUnknown", testDeleteUserUnknown},
	{"DeleteUserFreesKeysAndEmail", testDeleteUserFreesKeysAndEmail},
}

// wantHandles reports a failure of rule unless got holds the handles in
// want, in any order.
func wantHandles(t *testing.T, got, want []string, rule string) {
	t.Helper()
	if g, w := slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want)); !slices.Equal(g, w) {
		t.Errorf("%s: got %q, want %q (in any order)", rule, g, w)
	}
}

// sessionOf is a session of the user that login l started.
func sessionOf(handle string, l store.Login, created time.Time) store.Session {
	sess := newSession(handle, l.UserID, created, created.Add(ttl))
	sess.LoginID = l.ID
	return sess
}

func testDeleteLogin(t *testing.T, s store.Store) {
	ctx := t.Context()
	u1 := mustCreateOwner(t, s, "u1")
	u2 := mustCreateUser(t, s, "u2")
	l2 := linkedLogin("l2", "u1", "google", "g-2", u1.Email)
	l2 = unproven(l2)
	mustLinkLogin(t, s, l2)

	a := sessionOf("a", u1.Login, base)
	b := sessionOf("b", l2, at(time.Minute))
	c := sessionOf("c", l2, at(2*time.Minute))
	d := sessionOf("d", u2.Login, at(3*time.Minute))
	for _, sess := range []store.Session{a, b, c, d} {
		mustCreateSession(t, s, sess, sess.Handle+"/r0")
	}
	r := rotation("c/r0", "c/r1", at(time.Hour), 0) // c gets a superseded token
	mustRotate(t, s, r, updated(c, r), "the current token of a live session")
	mustCreateVerificationToken(t, s, newVerificationToken("u1/verify", "u1", u1.Email, base, at(3*time.Hour)))
	mustCreateVerificationToken(t, s, newVerificationToken("l2/verify", "l2", l2.Email, base, at(3*time.Hour)))
	mustCreateResetToken(t, s, newResetToken("u1/reset", "u1", base, at(3*time.Hour)))

	handles, err := s.DeleteLogin(ctx, "l2")
	if !wantErr(t, err, nil, "DeleteLogin: a login of a user with another must be removed") {
		return
	}
	wantHandles(t, handles, []string{"b", "c"}, "DeleteLogin: must return the handles of the sessions the login started")

	now := at(2 * time.Hour)
	_, err = s.Login(ctx, l2.LoginKey)
	wantErr(t, err, store.ErrNotFound, "DeleteLogin: the removed login must no longer be found by its key")
	if logins, err := s.Logins(ctx, "u1"); err != nil || len(logins) != 1 || loginDiff(logins[0], u1.Login) != "" {
		t.Errorf("DeleteLogin: the user must keep its other logins, unchanged, and only them; Logins = %+v, error %v", logins, err)
	}
	if logins, err := s.LoginsByEmail(ctx, u1.Email); err != nil || len(logins) != 1 || logins[0].ID != "u1" {
		t.Errorf("DeleteLogin: the removed login must no longer be found by its email; LoginsByEmail = %+v, error %v", logins, err)
	}
	wantUser(t, s, u1, "DeleteLogin: the user and its other logins must be unchanged")
	for _, h := range []string{"b", "c"} {
		wantNoSession(t, s, h, now, "DeleteLogin: must remove the sessions the login started")
	}
	for _, tok := range []string{"b/r0", "c/r1", "c/r0"} {
		wantRotateErr(t, s, rotation(tok, tok+"/next", now, 0), store.ErrNotFound,
			fmt.Sprintf("DeleteLogin must remove the tokens of the sessions the login started: %s must return ErrNotFound", tok))
	}
	wantVerifyErr(t, s, "l2/verify", now, "DeleteLogin must remove the login's verification tokens, so its token must return ErrNotFound")
	// A removed token no longer holds its hash.
	err = s.CreateCode(ctx, newVerificationToken("l2/verify", "u2", u2.Email, now, at(3*time.Hour)))
	wantErr(t, err, nil, "DeleteLogin must remove the login's verification tokens, freeing their hashes")

	wantUserSessions(t, s, "u1", now, []store.Session{a}, "DeleteLogin: must keep the sessions other logins of the user started")
	wantUserSessions(t, s, "u2", now, []store.Session{d}, "DeleteLogin: must keep other users' sessions")
	r = rotation("a/r0", "a/r1", now, 0)
	mustRotate(t, s, r, updated(a, r), "DeleteLogin: must keep the sessions other logins started, so rotating their tokens")
	mustVerifyEmail(t, s, "u1/verify", now, verified(u1.Login), "DeleteLogin: must keep the verification tokens of other logins, so such a token")
	mustResetPassword(t, s, "u1/reset", now, afterReset(u1, phc("new")), []string{"a"},
		"DeleteLogin: must keep the user's reset tokens, so such a token")
	wantUser(t, s, u2, "DeleteLogin: must not change other users")

	_, err = s.DeleteLogin(ctx, "l2")
	wantErr(t, err, store.ErrNotFound, "DeleteLogin: a removed login must return ErrNotFound")
}

// The first login's id is the user's; removing it removes the sessions
// started without a LoginID, which got that id.
func testDeleteLoginFirst(t *testing.T, s store.Store) {
	ctx := t.Context()
	u := mustCreateOwner(t, s, "u1")
	l2 := linkedLogin("l2", "u1", "google", "g-2", u.Email)
	mustLinkLogin(t, s, l2)
	first := newSession("first", "u1", base, at(ttl))
	first.LoginID = ""
	mustCreateSession(t, s, first, "first/r0")
	linked := sessionOf("linked", l2, at(time.Minute))
	mustCreateSession(t, s, linked, "linked/r0")

	handles, err := s.DeleteLogin(ctx, "u1")
	if !wantErr(t, err, nil, "DeleteLogin: a user's first login must be removed while it has another") {
		return
	}
	wantHandles(t, handles, []string{"first"}, "DeleteLogin: must return the handles of the sessions the login started, those given no LoginID included")
	_, err = s.Login(ctx, u.LoginKey)
	wantErr(t, err, store.ErrNotFound, "DeleteLogin: the removed first login must no longer be found")
	wantLogin(t, s, l2, "DeleteLogin: the user's other login must be unchanged")
	if _, err := s.UserByID(ctx, "u1"); err != nil {
		t.Errorf("DeleteLogin: removing a login must keep its user; UserByID failed: %v", err)
	}
	now := at(time.Hour)
	wantUserSessions(t, s, "u1", now, []store.Session{linked}, "DeleteLogin: must remove exactly the sessions the first login started")
}

func testDeleteLoginLast(t *testing.T, s store.Store) {
	ctx := t.Context()
	u := mustCreateOwner(t, s, "u1")
	sess := newSession("s1", "u1", base, at(ttl))
	mustCreateSession(t, s, sess, "s1/r0")
	mustCreateVerificationToken(t, s, newVerificationToken("u1/verify", "u1", u.Email, base, at(time.Hour)))

	_, err := s.DeleteLogin(ctx, "u1")
	wantErr(t, err, store.ErrLastLogin, "DeleteLogin: a user's only login must return ErrLastLogin")
	now := at(10 * time.Minute)
	wantUser(t, s, u, "DeleteLogin: a refused removal must change nothing, so the login must stay")
	wantSession(t, s, sess, now, "DeleteLogin: a refused removal must change nothing, so the login's session must stay")
	r := rotation("s1/r0", "s1/r1", now, 0)
	mustRotate(t, s, r, updated(sess, r), "DeleteLogin: a refused removal must change nothing, so rotating the session's token")
	mustVerifyEmail(t, s, "u1/verify", now, verified(u.Login), "DeleteLogin: a refused removal must change nothing, so the login's verification token")

	// With two logins either may go, and then the other is the last.
	l2 := linkedLogin("l2", "u1", "google", "g-2", u.Email)
	mustLinkLogin(t, s, l2)
	if _, err := s.DeleteLogin(ctx, "u1"); err != nil {
		t.Fatalf("DeleteLogin: a login of a user with another must be removed; got error %v", err)
	}
	_, err = s.DeleteLogin(ctx, "l2")
	wantErr(t, err, store.ErrLastLogin, "DeleteLogin: the login left after another was removed is the last, and must return ErrLastLogin")
	wantLogin(t, s, l2, "DeleteLogin: a refused removal must change nothing")
}

func testDeleteLoginUnknown(t *testing.T, s store.Store) {
	ctx := t.Context()
	_, err := s.DeleteLogin(ctx, "nobody")
	wantErr(t, err, store.ErrNotFound, "DeleteLogin: an unknown login must return ErrNotFound")
	u := mustCreateOwner(t, s, "u1")
	mustLinkLogin(t, s, linkedLogin("l2", "u1", "google", "g-2", u.Email))
	_, err = s.DeleteLogin(ctx, "nobody")
	wantErr(t, err, store.ErrNotFound, "DeleteLogin: an unknown login must return ErrNotFound while others exist")
	if logins, err := s.Logins(ctx, "u1"); err != nil || len(logins) != 2 {
		t.Errorf("DeleteLogin: an unknown login must change nothing; Logins = %+v, error %v", logins, err)
	}
}

// A removed login owns nothing: its email is free, and the user's other
// logins, which are unchanged, do not own it either.
func testDeleteLoginOwner(t *testing.T, s store.Store) {
	ctx := t.Context()
	u := mustCreateOwner(t, s, "u1")
	l2 := linkedLogin("l2", "u1", "google", "g-2", u.Email)
	mustLinkLogin(t, s, l2)
	g := google("u2", u.Email)
	if err := g.create(ctx, s); err != nil {
		t.Fatal(err)
	}

	if _, err := s.DeleteLogin(ctx, "u1"); err != nil {
		t.Fatalf("DeleteLogin: a login of a user with another must be removed; got error %v", err)
	}
	wantLogin(t, s, l2, "DeleteLogin: the user's other logins must be unchanged, so they must not take over the email")
	got, err := s.ClaimEmail(ctx, "u2")
	if wantErr(t, err, nil, "ClaimEmail: the email of a removed login must be free to own") && !got.OwnsEmail {
		t.Errorf("ClaimEmail: a login claiming a free email must own it; got %+v", got)
	}
}

func testDeleteUser(t *testing.T, s store.Store) {
	ctx := t.Context()
	u1 := mustCreateOwner(t, s, "u1")
	u2 := mustCreateUser(t, s, "u2")
	l2 := linkedLogin("l2", "u1", "google", "g-2", u1.Email)
	mustLinkLogin(t, s, l2)
	// A sign-in in flight has read the login, and with it the epoch.
	read, err := s.Login(ctx, u1.LoginKey)
	if err != nil {
		t.Fatalf("Login: %v", err)
	}

	a := sessionOf("a", u1.Login, base)
	b := sessionOf("b", l2, at(time.Minute))
	c := sessionOf("c", u2.Login, at(2*time.Minute))
	for _, sess := range []store.Session{a, b, c} {
		mustCreateSession(t, s, sess, sess.Handle+"/r0")
	}
	r := rotation("b/r0", "b/r1", at(time.Hour), 0) // b gets a superseded token
	mustRotate(t, s, r, updated(b, r), "the current token of a live session")
	for _, rt := range []store.Code{
		newResetToken("u1/reset", "u1", base, at(3*time.Hour)),
		newResetToken("u2/reset", "u2", base, at(3*time.Hour)),
	} {
		mustCreateResetToken(t, s, rt)
	}
	for _, vt := range []store.Code{
		newVerificationToken("u1/verify", "u1", u1.Email, base, at(3*time.Hour)),
		newVerificationToken("l2/verify", "l2", l2.Email, base, at(3*time.Hour)),
		newVerificationToken("u2/verify", "u2", u2.Email, base, at(3*time.Hour)),
	} {
		mustCreateVerificationToken(t, s, vt)
	}

	handles, err := s.DeleteUser(ctx, "u1")
	if !wantErr(t, err, nil, "DeleteUser: an existing user must be removed") {
		return
	}
	wantHandles(t, handles, []string{"a", "b"}, "DeleteUser: must return the handles of every session of the user it deleted")

	now := at(2 * time.Hour)
	_, err = s.UserByID(ctx, "u1")
	wantErr(t, err, store.ErrNotFound, "DeleteUser: the user must no longer be found")
	if logins, err := s.Logins(ctx, "u1"); err != nil || len(logins) != 0 {
		t.Errorf("DeleteUser: must remove every login of the user; Logins = %+v, error %v", logins, err)
	}
	for _, k := range []store.LoginKey{u1.LoginKey, l2.LoginKey} {
		_, err = s.Login(ctx, k)
		wantErr(t, err, store.ErrNotFound, fmt.Sprintf("DeleteUser: must remove every login of the user, so Login(%+v) must return ErrNotFound", k))
	}
	if logins, err := s.LoginsByEmail(ctx, u1.Email); err != nil || len(logins) != 0 {
		t.Errorf("DeleteUser: must remove every login of the user, so none may be found by its email; LoginsByEmail = %+v, error %v", logins, err)
	}
	for _, h := range []string{"a", "b"} {
		wantNoSession(t, s, h, now, "DeleteUser: must remove every session of the user")
	}
	wantUserSessions(t, s, "u1", now, nil, "DeleteUser: must remove every session of the user")
	for _, tok := range []string{"a/r0", "b/r1", "b/r0"} {
		wantRotateErr(t, s, rotation(tok, tok+"/next", now, 0), store.ErrNotFound,
			fmt.Sprintf("DeleteUser must remove the tokens of the user's sessions: %s must return ErrNotFound", tok))
	}
	_, err = s.Code(ctx, store.CodeReset, token("u1/reset"), now)
	wantErr(t, err, store.ErrNotFound, "DeleteUser: must remove the user's reset tokens, so ResetToken must return ErrNotFound")
	wantResetErr(t, s, "u1/reset", phc("new"), now, "DeleteUser must remove the user's reset tokens: they must return ErrNotFound")
	for _, name := range []string{"u1/verify", "l2/verify"} {
		wantVerifyErr(t, s, name, now, fmt.Sprintf("DeleteUser must remove the verification tokens of every login of the user: %s must return ErrNotFound", name))
	}
	// Removed tokens no longer hold their hashes.
	for _, name := range []string{"u1/verify", "l2/verify"} {
		err = s.CreateCode(ctx, newVerificationToken(name, "u2", u2.Email, now, at(3*time.Hour)))
		wantErr(t, err, nil, "DeleteUser must remove the verification tokens of every login of the user, freeing their hashes: "+name)
	}
	err = s.CreateCode(ctx, newResetToken("u1/reset", "u2", now, at(3*time.Hour)))
	wantErr(t, err, nil, "DeleteUser must remove the user's reset tokens, freeing their hashes")
	err = s.CreateSession(ctx, sessionOf("late", u1.Login, at(time.Minute)), token("late/r0"), read.SessionEpoch)
	wantErr(t, err, store.ErrNotFound, "CreateSession: a session authorised before its user was deleted must return ErrNotFound")
	wantNoSession(t, s, "late", now, "CreateSession: a session of a deleted user must not be written")

	wantUser(t, s, u2, "DeleteUser: must not change other users")
	wantUserSessions(t, s, "u2", now, []store.Session{c}, "DeleteUser: must not remove other users' sessions")
	r = rotation("c/r0", "c/r1", now, 0)
	mustRotate(t, s, r, updated(c, r), "DeleteUser: must not remove other users' sessions, so rotating their tokens")
	mustVerifyEmail(t, s, "u2/verify", now, verified(u2.Login), "DeleteUser: must not remove other users' verification tokens, so such a token")
	mustResetPassword(t, s, "u2/reset", now, afterReset(u2, phc("new")), []string{"c"},
		"DeleteUser: must not remove other users' reset tokens, so such a token")

	_, err = s.DeleteUser(ctx, "u1")
	wantErr(t, err, store.ErrNotFound, "DeleteUser: a deleted user must return ErrNotFound")
}

func testDeleteUserUnknown(t *testing.T, s store.Store) {
	ctx := t.Context()
	_, err := s.DeleteUser(ctx, "nobody")
	wantErr(t, err, store.ErrNotFound, "DeleteUser: an unknown user must return ErrNotFound")
	u := mustCreateUser(t, s, "u1")
	_, err = s.DeleteUser(ctx, "nobody")
	wantErr(t, err, store.ErrNotFound, "DeleteUser: an unknown user must return ErrNotFound while others exist")
	wantUser(t, s, u, "DeleteUser: an unknown user must change nothing")

	// A user without sessions is removed all the same.
	handles, err := s.DeleteUser(ctx, "u1")
	if wantErr(t, err, nil, "DeleteUser: a user without sessions must be removed") && len(handles) != 0 {
		t.Errorf("DeleteUser: a user without sessions must return no handles; got %q", handles)
	}
}

// Once a user is gone, none of its logins holds a key or an email: a new
// user may sign up with the same email and the same providers, and own
// the email.
func testDeleteUserFreesKeysAndEmail(t *testing.T, s store.Store) {
	ctx := t.Context()
	u := mustCreateOwner(t, s, "u1")
	l2 := linkedLogin("l2", "u1", "google", "g-2", u.Email)
	mustLinkLogin(t, s, l2)
	if _, err := s.DeleteUser(ctx, "u1"); err != nil {
		t.Fatalf("DeleteUser: an existing user must be removed; got error %v", err)
	}

	v := owning(newUser("u2").withEmail(u.Email))
	v.CreatedAt = at(time.Minute)
	if err := v.create(ctx, s); err != nil {
		t.Fatalf("CreateUser: after DeleteUser the email's password login and its ownership must be free; got error %v", err)
	}
	wantUser(t, s, v, "CreateUser: a new user with the email of a deleted one")
	g := google("u3", u.Email).withSubject(l2.Subject)
	got := mustSignInUp(t, s, g, true, "after DeleteUser, an identity that was linked to the deleted user")
	if got.UserID != "u3" {
		t.Errorf("SignInUp: after DeleteUser an identity of the deleted user must sign up a new user; got user %q", got.UserID)
	}
	if logins, err := s.LoginsByEmail(ctx, u.Email); err != nil || len(logins) != 2 {
		t.Errorf("LoginsByEmail: must find the new logins with the email, and none of the deleted user; got %+v, error %v", logins, err)
	}
}
