package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/latchkit/auth/store"
)

var linkingTests = []test{
	{"LinkLogin", testLinkLogin},
	{"LinkLoginNotOwner", testLinkLoginNotOwner},
	{"LinkLoginConflict", testLinkLoginConflict},
	{"ClaimEmail", testClaimEmail},
	{"ClaimEmailOwnedByOther", testClaimEmailOwnedByOther},
	{"ClaimEmailOwnedBySameUser", testClaimEmailOwnedBySameUser},
	{"ClaimEmailNotFound", testClaimEmailNotFound},
}

// linkedLogin is a login of userID with a provider that joins the user
// after its first login, so it has an id of its own.
func linkedLogin(id, userID, provider, subject, email string) store.Login {
	l := thirdPartyLogin(userID, provider, subject, email)
	l.ID = id
	return l
}

// mustCreateOwner creates user id, whose email and password login owns its
// email, so that logins may be linked to it.
func mustCreateOwner(t *testing.T, s store.Store, id string) user {
	t.Helper()
	u := owning(newUser(id))
	if err := u.create(t.Context(), s); err != nil {
		t.Fatalf("CreateUser: a user whose first login asks to own an email nobody owns must be added; got error %v", err)
	}
	return u
}

func mustLinkLogin(t *testing.T, s store.Store, l store.Login) {
	t.Helper()
	if err := s.LinkLogin(t.Context(), l); err != nil {
		t.Fatalf("LinkLogin: a login with a new key and id, whose email a login of its user owns, must be added; got error %v", err)
	}
}

func testLinkLogin(t *testing.T, s store.Store) {
	ctx := t.Context()
	u := mustCreateOwner(t, s, "u1")
	other := mustCreateUser(t, s, "u2")

	l := linkedLogin("l2", "u1", "google", "g-2", u.Email)
	l.CreatedAt = at(time.Minute)
	l.EmailVerified = false
	l.OwnsEmail = true // ignored: the email has its owner
	if err := s.LinkLogin(ctx, l); err != nil {
		t.Fatalf("LinkLogin: a login with a new key and id, whose email a login of its user owns, must be added; got error %v", err)
	}
	l.OwnsEmail = false
	wantLogin(t, s, l, "LinkLogin: the login must be added to the user as given, with its own id and owning nothing")
	wantUser(t, s, u, "LinkLogin: the login that owns the email must be unchanged")
	wantUser(t, s, other, "LinkLogin: other users must be unchanged")

	logins, err := s.Logins(ctx, "u1")
	if err != nil || len(logins) != 2 || loginDiff(logins[0], u.Login) != "" || loginDiff(logins[1], l) != "" {
		t.Errorf("LinkLogin: Logins must list the first login and the linked one, each with its own id, oldest first; got %+v, error %v", logins, err)
	}
	byEmail, err := s.LoginsByEmail(ctx, u.Email)
	if err != nil || len(byEmail) != 2 || loginDiff(byEmail[0], u.Login) != "" || loginDiff(byEmail[1], l) != "" {
		t.Errorf("LinkLogin: LoginsByEmail must find the linked login too; got %+v, error %v", byEmail, err)
	}

	// A user's logins share its session epoch.
	if _, err := s.RevokeUserSessions(ctx, "u1"); err != nil {
		t.Fatal(err)
	}
	wantEpoch(t, s, l, 1, "LinkLogin: a linked login must carry its user's SessionEpoch")

	// Any number of logins may join the owner.
	m := linkedLogin("l3", "u1", "github", "gh-3", u.Email)
	m.CreatedAt = at(2 * time.Minute)
	mustLinkLogin(t, s, m)
	if logins, err := s.Logins(ctx, "u1"); err != nil || len(logins) != 3 {
		t.Errorf("LinkLogin: a second linked login must be added as well; Logins = %+v, error %v", logins, err)
	}
}

// Linking joins only the user that owns the email.
func testLinkLoginNotOwner(t *testing.T, s store.Store) {
	ctx := t.Context()
	u := mustCreateOwner(t, s, "u1")
	v := mustCreateUser(t, s, "u2")
	w := google("u3", u.Email) // has the owned email, does not own it
	if err := w.create(ctx, s); err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		userID, email string
		rule          string
	}{
		{"u2", u.Email, "a user other than the one owning the email"},
		{"u3", u.Email, "a user with a login that has the email but does not own it"},
		{"u2", v.Email, "a user whose own login has the email, which nobody owns"},
		{"u1", v.Email, "the owner of another email"},
		{"nobody", u.Email, "an unknown user"},
	} {
		l := linkedLogin("l-new", c.userID, "github", "gh-new", c.email)
		err := s.LinkLogin(ctx, l)
		wantErr(t, err, store.ErrNotFound, "LinkLogin: "+c.rule+" must return ErrNotFound")
		_, err = s.Login(ctx, l.LoginKey)
		wantErr(t, err, store.ErrNotFound, "LinkLogin: a refused login must not be written: "+c.rule)
	}
	for _, id := range []string{"u1", "u2", "u3", "nobody"} {
		if logins, err := s.Logins(ctx, id); err != nil || len(logins) > 1 {
			t.Errorf("LinkLogin: a refused login must not be written, so %s must keep its one login at most; got %+v, error %v", id, logins, err)
		}
	}
	wantUser(t, s, u, "LinkLogin: a refused login must change nothing")
	wantUser(t, s, v, "LinkLogin: a refused login must change nothing")
	wantUser(t, s, w, "LinkLogin: a refused login must change nothing")

	// Nothing was written, so the key and the id are free.
	mustLinkLogin(t, s, linkedLogin("l-new", "u1", "github", "gh-new", u.Email))
}

func testLinkLoginConflict(t *testing.T, s store.Store) {
	ctx := t.Context()
	u := mustCreateOwner(t, s, "u1")
	v := mustCreateUser(t, s, "u2")
	g := google("u3", "u3@example.com")
	if err := g.create(ctx, s); err != nil {
		t.Fatal(err)
	}
	linked := linkedLogin("l2", "u1", "github", "gh-2", u.Email)
	mustLinkLogin(t, s, linked)

	for _, c := range []struct {
		l    store.Login
		rule string
	}{
		{linkedLogin("l-new", "u1", "google", g.Subject, u.Email), "the key of another user's login"},
		{linkedLogin("l-new", "u1", "github", linked.Subject, u.Email), "the key of a login linked before"},
		{linkedLogin("u2", "u1", "github", "gh-new", u.Email), "the id of another user's login"},
		{linkedLogin("u1", "u1", "github", "gh-new", u.Email), "the id of the owning login"},
		{linkedLogin("l2", "u1", "github", "gh-new", u.Email), "the id of a login linked before"},
		// ErrConflict comes before ErrNotFound.
		{linkedLogin("l-new", "u2", "google", g.Subject, v.Email), "a key that exists, for a user that owns nothing"},
		{linkedLogin("l2", "u2", "github", "gh-new", v.Email), "an id that exists, for a user that owns nothing"},
	} {
		err := s.LinkLogin(ctx, c.l)
		wantErr(t, err, store.ErrConflict, "LinkLogin: "+c.rule+" must return ErrConflict")
	}
	wantUser(t, s, u, "LinkLogin: a conflicting login must not change the user it named")
	wantUser(t, s, v, "LinkLogin: a conflicting login must not change the login whose id it had")
	wantUser(t, s, g, "LinkLogin: a conflicting login must not change the login whose key it had")
	wantLogin(t, s, linked, "LinkLogin: a conflicting login must not change the login linked before")
	if logins, err := s.Logins(ctx, "u1"); err != nil || len(logins) != 2 {
		t.Errorf("LinkLogin: conflicting logins must not be written; Logins(u1) = %+v, error %v", logins, err)
	}
	if logins, err := s.Logins(ctx, "u2"); err != nil || len(logins) != 1 {
		t.Errorf("LinkLogin: conflicting logins must not be written; Logins(u2) = %+v, error %v", logins, err)
	}

	// Login ids are unique across all logins, however they were added.
	err := withLoginID(newUser("u4"), "l2").create(ctx, s)
	wantErr(t, err, store.ErrConflict, "CreateUser: a first login with the id of a linked login must return ErrConflict")
}

func testClaimEmail(t *testing.T, s store.Store) {
	ctx := t.Context()
	g := google("u1", "shared@example.com")
	if err := g.create(ctx, s); err != nil {
		t.Fatal(err)
	}
	h := google("u2", "shared@example.com")
	if err := h.create(ctx, s); err != nil {
		t.Fatal(err)
	}

	want := g.Login
	want.OwnsEmail = true
	for _, rule := range []string{
		"ClaimEmail: a login whose email nobody owns must own it",
		"ClaimEmail: claiming an email the login owns already must change nothing",
	} {
		got, err := s.ClaimEmail(ctx, "u1")
		if !wantErr(t, err, nil, rule) {
			return
		}
		if d := loginDiff(got, want); d != "" {
			t.Errorf("%s, and return the login as updated: %s", rule, d)
		}
		wantLogin(t, s, want, rule)
	}
	wantUser(t, s, h, "ClaimEmail: must not change another login with the email")

	// At most one login owns an email.
	err := owning(google("u3", "shared@example.com")).create(ctx, s)
	wantErr(t, err, store.ErrEmailOwned, "CreateUser: asking to own an email a login claimed must return ErrEmailOwned")

	// Ownership is per email.
	i := google("u4", "other@example.com")
	if err := i.create(ctx, s); err != nil {
		t.Fatal(err)
	}
	if got, err := s.ClaimEmail(ctx, "u4"); err != nil || !got.OwnsEmail {
		t.Errorf("ClaimEmail: another email has an owner of its own; got %+v, error %v", got, err)
	}
	wantLogin(t, s, want, "ClaimEmail: claiming another email must not change the owner of this one")
}

func testClaimEmailOwnedByOther(t *testing.T, s store.Store) {
	ctx := t.Context()
	owner := mustCreateOwner(t, s, "u1")
	g := google("u2", owner.Email)
	if err := g.create(ctx, s); err != nil {
		t.Fatal(err)
	}
	_, err := s.ClaimEmail(ctx, "u2")
	wantErr(t, err, store.ErrEmailOwned, "ClaimEmail: an email a login of another user owns must return ErrEmailOwned")
	wantUser(t, s, g, "ClaimEmail: a refused claim must change nothing")
	wantUser(t, s, owner, "ClaimEmail: a refused claim must leave the owner owning the email")
}

func testClaimEmailOwnedBySameUser(t *testing.T, s store.Store) {
	ctx := t.Context()
	owner := mustCreateOwner(t, s, "u1")
	l := linkedLogin("l2", "u1", "google", "g-2", owner.Email)
	mustLinkLogin(t, s, l)

	got, err := s.ClaimEmail(ctx, "l2")
	if wantErr(t, err, nil, "ClaimEmail: an email a login of the same user owns must succeed") {
		if d := loginDiff(got, l); d != "" {
			t.Errorf("ClaimEmail: an email a login of the same user owns must change nothing and return the login as it is: %s", d)
		}
	}
	wantLogin(t, s, l, "ClaimEmail: an email a login of the same user owns must change nothing")
	wantUser(t, s, owner, "ClaimEmail: an email a login of the same user owns must leave that login owning it")
}

func testClaimEmailNotFound(t *testing.T, s store.Store) {
	ctx := t.Context()
	_, err := s.ClaimEmail(ctx, "nobody")
	wantErr(t, err, store.ErrNotFound, "ClaimEmail: an unknown login id must return ErrNotFound")

	// A provider may report no email.
	for _, id := range []string{"u1", "u2"} {
		g := google(id, "")
		if err := g.create(ctx, s); err != nil {
			t.Fatal(err)
		}
		_, err = s.ClaimEmail(ctx, id)
		wantErr(t, err, store.ErrNotFound, fmt.Sprintf("ClaimEmail: a login without an email (%s) must return ErrNotFound", id))
		wantUser(t, s, g, "ClaimEmail: a login without an email must not change")
	}
	mustCreateUser(t, s, "u3")
	_, err = s.ClaimEmail(ctx, "nobody")
	wantErr(t, err, store.ErrNotFound, "ClaimEmail: an unknown login id must return ErrNotFound while other logins exist")
}
