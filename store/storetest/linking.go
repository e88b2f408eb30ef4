package storetest

import (
	"fmt"
	"slices"
	"strconv"
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
	{"LinkLoginAsOwner", testLinkLoginAsOwner},
	{"LinkLoginAsOwnerEmailOwned", testLinkLoginAsOwnerEmailOwned},
	{"LinkLoginAsOwnerUnknownUser", testLinkLoginAsOwnerUnknownUser},
	{"LinkLoginUnprovenCannotOwn", testLinkLoginUnprovenCannotOwn},
	{"LinkLoginOwnerGone", testLinkLoginOwnerGone},
	{"ClaimEmailUnproven", testClaimEmailUnproven},
	{"LinkLoginWithoutEmail", testLinkLoginWithoutEmail},
	{"AttachLogin", testAttachLogin},
	{"AttachLoginRefused", testAttachLoginRefused},
}

// testAttachLogin: a login a signed-in user adds joins that user with an
// address another user owns, or one nobody owns, and owns neither; the
// owner keeps its address.
func testAttachLogin(t *testing.T, s store.Store) {
	ctx := t.Context()
	mustCreateOwner(t, s, "u1")
	u2 := mustCreateOwner(t, s, "u2")
	for i, email := range []string{u2.Email, "free@example.com"} {
		l := asOwner(linkedLogin("a"+strconv.Itoa(i), "u1", "google", "g-"+strconv.Itoa(i), email))
		if err := s.AttachLogin(ctx, l); err != nil {
			t.Fatalf("AttachLogin: a login with a new key and id, of an existing user, must be added whatever its email; got %v", err)
		}
		l.OwnsEmail = false
		wantLogin(t, s, l, "AttachLogin: the login, owning nothing")
	}
	wantUser(t, s, u2, "AttachLogin: the owner of the address keeps it")
	l := owning(newUser("u3").withEmail("free@example.com"))
	if err := l.create(ctx, s); err != nil {
		t.Errorf("CreateUser: an address only an attached login has is free to own; got %v", err)
	}
}

// testAttachLoginRefused: a taken key or id, or a user who does not
// exist, writes nothing.
func testAttachLoginRefused(t *testing.T, s store.Store) {
	ctx := t.Context()
	u := mustCreateUser(t, s, "u1")
	taken := linkedLogin("l2", "u1", "google", "g-1", u.Email)
	taken.LoginKey = u.LoginKey
	wantErr(t, s.AttachLogin(ctx, taken), store.ErrConflict, "AttachLogin: a login whose key exists")
	sameID := linkedLogin("u1", "u1", "google", "g-2", u.Email)
	wantErr(t, s.AttachLogin(ctx, sameID), store.ErrConflict, "AttachLogin: a login whose id exists")
	nobody := linkedLogin("l3", "nobody", "google", "g-3", u.Email)
	wantErr(t, s.AttachLogin(ctx, nobody), store.ErrNotFound, "AttachLogin: a login of a user who does not exist")
	for _, k := range []store.LoginKey{{Method: store.MethodThirdParty, ThirdParty: "google", Subject: "g-2"}, {Method: store.MethodThirdParty, ThirdParty: "google", Subject: "g-3"}} {
		_, err := s.Login(ctx, k)
		wantErr(t, err, store.ErrNotFound, "AttachLogin: refused, then Login")
	}
	wantUser(t, s, u, "AttachLogin: refused, nothing changes")
}

// testLinkLoginWithoutEmail: a login without an email (a passkey a
// signed-in user adds) joins its user whoever owns what, and only an
// existing user.
func testLinkLoginWithoutEmail(t *testing.T, s store.Store) {
	ctx := t.Context()
	u := mustCreateUser(t, s, "u1") // owns nothing
	l := store.Login{LoginKey: store.WebAuthnKey("example.com", "cred-1"), ID: "l2", UserID: "u1",
		Material: []byte("key"), CreatedAt: at(time.Minute)}
	if err := s.LinkLogin(ctx, l); err != nil {
		t.Fatalf("LinkLogin: a login without an email must join its user, who owns no email; got error %v", err)
	}
	wantLogin(t, s, l, "LinkLogin: the login without an email must be added as given")
	wantUser(t, s, u, "LinkLogin: the user's first login must be unchanged")
	l.LoginKey, l.ID, l.UserID = store.WebAuthnKey("example.com", "cred-2"), "l3", "nobody"
	err := s.LinkLogin(ctx, l)
	wantErr(t, err, store.ErrNotFound, "LinkLogin: a login without an email for an unknown user must return ErrNotFound")
	l.UserID = "u1"
	l.OwnsEmail, l.EmailProven = true, true // nothing to own: ignored
	if err := s.LinkLogin(ctx, l); err != nil {
		t.Fatalf("LinkLogin: a login without an email that asks to own it must join, owning nothing; got error %v", err)
	}
	l.OwnsEmail, l.EmailVerified = false, true // a proven login is verified
	wantLogin(t, s, l, "LinkLogin: a login without an email owns nothing")
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

// asOwner is l asking to own its email as it joins its user.
func asOwner(l store.Login) store.Login {
	l.OwnsEmail = true
	return l
}

// wantNotLinked checks that a refused LinkLogin wrote nothing: l's key is
// unknown and its user kept the logins it had, n of them.
func wantNotLinked(t *testing.T, s store.Store, l store.Login, n int, rule string) {
	t.Helper()
	_, err := s.Login(t.Context(), l.LoginKey)
	wantErr(t, err, store.ErrNotFound, "LinkLogin: "+rule+" must not write the login")
	if logins, err := s.Logins(t.Context(), l.UserID); err != nil || len(logins) != n {
		t.Errorf("LinkLogin: %s must not add a login to %s, which must keep its %d; Logins = %+v, error %v", rule, l.UserID, n, logins, err)
	}
}

// wantOwners checks that exactly the logins with the ids in want own
// email, as LoginsByEmail reports them.
func wantOwners(t *testing.T, s store.Store, email string, want []string, rule string) {
	t.Helper()
	all, err := s.LoginsByEmail(t.Context(), email)
	if err != nil {
		t.Errorf("%s: LoginsByEmail(%q) failed: %v", rule, email, err)
		return
	}
	var got []string
	for _, l := range all {
		if l.OwnsEmail {
			got = append(got, l.ID)
		}
	}
	// Logins added in one instant come in no promised order.
	slices.Sort(got)
	if !slices.Equal(got, slices.Sorted(slices.Values(want))) {
		t.Errorf("%s: the logins owning %s are %q, want %q", rule, email, got, want)
	}
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
	l = unproven(l)
	l.OwnsEmail = true // ignored: the login is not proven
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
		// ErrConflict comes before ErrNotFound and ErrEmailOwned.
		{linkedLogin("l-new", "u2", "google", g.Subject, v.Email), "a key that exists, for a user that owns nothing"},
		{linkedLogin("l2", "u2", "github", "gh-new", v.Email), "an id that exists, for a user that owns nothing"},
		{asOwner(linkedLogin("l-new", "u2", "google", g.Subject, "free@example.com")), "a key that exists, asking to own an email nobody owns"},
		{asOwner(linkedLogin("l2", "u2", "github", "gh-new", "free@example.com")), "an id that exists, asking to own an email nobody owns"},
		{asOwner(linkedLogin("l-new", "u2", "google", g.Subject, u.Email)), "a key that exists, asking to own an email another login owns"},
		{asOwner(linkedLogin("l2", "u2", "github", "gh-new", u.Email)), "an id that exists, asking to own an email another login owns"},
		{asOwner(linkedLogin("l-new", "nobody", "google", g.Subject, "free@example.com")), "a key that exists, asking to own an email for an unknown user"},
		{asOwner(linkedLogin("u2", "nobody", "github", "gh-new", "free@example.com")), "an id that exists, asking to own an email for an unknown user"},
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

// Linking that found no owner for the email makes the new login its
// owner as it joins the user linking chose, in the same step.
func testLinkLoginAsOwner(t *testing.T, s store.Store) {
	ctx := t.Context()
	const email = "shared@example.com"
	// The user linking chose: its email and password login has the email
	// and is not proven, as a stranger may have signed it up.
	u := newUser("u1").withEmail(email)
	if err := u.create(ctx, s); err != nil {
		t.Fatal(err)
	}
	other := google("u2", email) // proven, owning nothing
	if err := other.create(ctx, s); err != nil {
		t.Fatal(err)
	}

	l := asOwner(linkedLogin("l2", "u1", "github", "gh-2", email))
	l.CreatedAt = at(time.Minute)
	if err := s.LinkLogin(ctx, l); err != nil {
		t.Fatalf("LinkLogin: a proven login asking to own an email nobody owns must be added; got error %v", err)
	}
	wantLogin(t, s, l, "LinkLogin: a proven login asking to own an email nobody owns must be added to the user owning it")
	wantUser(t, s, u, "LinkLogin: the user's other logins must be unchanged, owning nothing")
	wantUser(t, s, other, "LinkLogin: another user's login with the email must be unchanged")
	wantOwners(t, s, email, []string{"l2"}, "LinkLogin: the login added as owner must be the email's one owner")

	// The email has its owner now, for every write that asks.
	m := linkedLogin("l3", "u1", "google", "g-3", email)
	m.CreatedAt = at(2 * time.Minute)
	if err := s.LinkLogin(ctx, m); err != nil {
		t.Errorf("LinkLogin: a login joining the user whose login was added as owner must be added; got error %v", err)
	}
	_, err := s.ClaimEmail(ctx, "u2")
	wantErr(t, err, store.ErrEmailOwned, "ClaimEmail: an email a login linked as owner owns must return ErrEmailOwned to another user's login")
	err = owning(google("u3", email)).create(ctx, s)
	wantErr(t, err, store.ErrEmailOwned, "CreateUser: asking to own an email a login linked as owner owns must return ErrEmailOwned")
	err = s.LinkLogin(ctx, asOwner(linkedLogin("l4", "u2", "github", "gh-4", email)))
	wantErr(t, err, store.ErrEmailOwned, "LinkLogin: asking to own an email a login linked as owner owns must return ErrEmailOwned")
	wantOwners(t, s, email, []string{"l2"}, "LinkLogin: refused claims must leave the login linked as owner the one owner")

	// The user need not have had the email: ownership follows the login.
	n := asOwner(linkedLogin("l5", "u2", "github", "gh-5", "new@example.com"))
	if err := s.LinkLogin(ctx, n); err != nil {
		t.Fatalf("LinkLogin: a proven login asking to own an email nobody has must be added; got error %v", err)
	}
	wantLogin(t, s, n, "LinkLogin: a proven login asking to own an email no login of its user has must own it")
	wantUser(t, s, other, "LinkLogin: the login linked as owner must not change the user's other logins")
}

// The email may have found an owner between linking's decision and the
// write: LinkLogin checks again, refuses with ErrEmailOwned and writes
// nothing, whoever the owner is.
func testLinkLoginAsOwnerEmailOwned(t *testing.T, s store.Store) {
	ctx := t.Context()
	const email = "shared@example.com"
	u := newUser("u1").withEmail(email)
	if err := u.create(ctx, s); err != nil {
		t.Fatal(err)
	}
	// Meanwhile another user's proven login claims the email.
	other := google("u2", email)
	if err := other.create(ctx, s); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ClaimEmail(ctx, "u2"); err != nil {
		t.Fatalf("ClaimEmail: a proven login whose email nobody owns must own it; got error %v", err)
	}
	owner := other.Login
	owner.OwnsEmail = true

	l := asOwner(linkedLogin("l2", "u1", "github", "gh-2", email))
	err := s.LinkLogin(ctx, l)
	wantErr(t, err, store.ErrEmailOwned, "LinkLogin: asking to own an email another user's login claimed in the meantime must return ErrEmailOwned")
	wantNotLinked(t, s, l, 1, "a login refused with ErrEmailOwned")
	wantUser(t, s, u, "LinkLogin: a refused login must not change the user it named")
	wantLogin(t, s, owner, "LinkLogin: a refused login must leave the owner owning the email")

	// Meanwhile a new user signs up owning another email.
	g := owning(google("u3", "later@example.com"))
	mustSignInUp(t, s, g, true, "a new identity asking to own an email nobody owns")
	late := asOwner(linkedLogin("l2", "u1", "github", "gh-2", g.Email))
	err = s.LinkLogin(ctx, late)
	wantErr(t, err, store.ErrEmailOwned, "LinkLogin: asking to own an email a user signed up owning in the meantime must return ErrEmailOwned")
	wantNotLinked(t, s, late, 1, "a login refused with ErrEmailOwned")
	wantLogin(t, s, g.Login, "LinkLogin: a refused login must leave the owner owning the email")

	// Nobody may own the email: a login of the same user either.
	same := asOwner(linkedLogin("l4", "u2", "github", "gh-4", email))
	err = s.LinkLogin(ctx, same)
	wantErr(t, err, store.ErrEmailOwned, "LinkLogin: asking to own an email a login of the same user owns must return ErrEmailOwned")
	wantNotLinked(t, s, same, 1, "a login refused with ErrEmailOwned")
	wantOwners(t, s, email, []string{"u2"}, "LinkLogin: refused logins must not take the email")

	// Nothing was written, so the key and the id are free: the login
	// joins the owner's user without asking.
	mustLinkLogin(t, s, linkedLogin("l2", "u2", "github", "gh-2", email))
}

// A login asking to own its email joins a user that exists, or nothing is
// written and the email stays free.
func testLinkLoginAsOwnerUnknownUser(t *testing.T, s store.Store) {
	ctx := t.Context()
	const email = "shared@example.com"
	mustCreateUser(t, s, "u1")
	if _, err := s.DeleteUser(ctx, "u1"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		userID, rule string
	}{
		{"nobody", "a user that never existed"},
		{"u1", "a user deleted in the meantime"},
	} {
		l := asOwner(linkedLogin("l2", c.userID, "github", "gh-2", email))
		err := s.LinkLogin(ctx, l)
		wantErr(t, err, store.ErrNotFound, "LinkLogin: a login asking to own an email nobody owns, for "+c.rule+", must return ErrNotFound")
		wantNotLinked(t, s, l, 0, "a login refused with ErrNotFound")
		_, err = s.UserByID(ctx, c.userID)
		wantErr(t, err, store.ErrNotFound, "LinkLogin: must not create the user it names")
	}
	wantOwners(t, s, email, nil, "LinkLogin: a refused login must not own the email")

	// The email, the key and the id are all still free.
	g := owning(user{User: store.User{ID: "u2", TimeJoined: base}, Login: linkedLogin("l2", "u2", "github", "gh-2", email)})
	if err := g.create(ctx, s); err != nil {
		t.Errorf("CreateUser: a login refused for an unknown user must leave its key, id and email free; got error %v", err)
	}
	wantOwners(t, s, email, []string{"l2"}, "CreateUser: the email a refused login asked for must be free to own")
}

// Only a proven login owns its email, so LinkLogin ignores the request for
// one that is not proven: such a login may only join the user that owns
// its email, like any login not asking.
func testLinkLoginUnprovenCannotOwn(t *testing.T, s store.Store) {
	ctx := t.Context()
	u := newUser("u1").withEmail("free@example.com")
	if err := u.create(ctx, s); err != nil {
		t.Fatal(err)
	}
	owner := mustCreateOwner(t, s, "u2")

	for _, c := range []struct {
		l    store.Login
		rule string
	}{
		{asOwner(unproven(linkedLogin("l3", "u1", "github", "gh-3", u.Email))),
			"an unproven login asking to own an email nobody owns, which leaves it nobody to join"},
		{asOwner(verified(unproven(linkedLogin("l3", "u1", "github", "gh-3", u.Email)))),
			"a verified but unproven login asking to own an email nobody owns"},
		{asOwner(unproven(linkedLogin("l3", "u1", "github", "gh-3", owner.Email))),
			"an unproven login asking to own an email a login of another user owns"},
	} {
		err := s.LinkLogin(ctx, c.l)
		wantErr(t, err, store.ErrNotFound, "LinkLogin: "+c.rule+" must return ErrNotFound, as a login joining a user that does not own its email")
		wantNotLinked(t, s, c.l, 1, c.rule)
	}
	wantOwners(t, s, u.Email, nil, "LinkLogin: an unproven login must not own its email")
	wantUser(t, s, owner, "LinkLogin: an unproven login must not take the email from its owner")

	// It joins the owner's user, owning nothing.
	l := asOwner(unproven(linkedLogin("l3", "u2", "github", "gh-3", owner.Email)))
	if err := s.LinkLogin(ctx, l); err != nil {
		t.Fatalf("LinkLogin: an unproven login asking to own an email a login of its user owns must join that user; got error %v", err)
	}
	l.OwnsEmail = false
	wantLogin(t, s, l, "LinkLogin: an unproven login asking to own its email must join the owner's user owning nothing")
	wantUser(t, s, owner, "LinkLogin: the owner must keep the email")
}

// A login joins the user whose login owns its email at the time of the
// write: if that login was removed, changed its email or stopped being
// proven since linking looked, LinkLogin returns ErrNotFound and writes
// nothing.
func testLinkLoginOwnerGone(t *testing.T, s store.Store) {
	ctx := t.Context()

	// u1's owning login is removed; the user keeps another login with the
	// email, which does not own it.
	u1 := mustCreateOwner(t, s, "u1")
	mustLinkLogin(t, s, linkedLogin("l1", "u1", "google", "g-l1", u1.Email))
	if _, err := s.DeleteLogin(ctx, "u1"); err != nil {
		t.Fatalf("DeleteLogin: a login of a user with another must be removed; got error %v", err)
	}
	// u2's owning login now reports another email.
	u2 := owning(google("u2", "u2@example.com"))
	mustSignInUp(t, s, u2, true, "a new identity asking to own an email nobody owns")
	moved := u2
	moved.Email = "moved@example.com"
	mustSignInUp(t, s, moved, false, "an identity already on record")
	// u3's owning login is marked unverified.
	u3 := mustCreateOwner(t, s, "u3")
	if _, err := s.SetEmailVerified(ctx, "u3", false); err != nil {
		t.Fatalf("SetEmailVerified: an existing login must be updated; got error %v", err)
	}

	for _, c := range []struct {
		l    store.Login
		rule string
	}{
		{linkedLogin("l-new", "u1", "github", "gh-new", u1.Email), "a login joining a user whose owning login was removed"},
		{linkedLogin("l-new", "u2", "github", "gh-new", "u2@example.com"), "a login joining a user whose owning login's email changed"},
		{linkedLogin("l-new", "u3", "github", "gh-new", u3.Email), "a login joining a user whose owning login was marked unverified"},
	} {
		err := s.LinkLogin(ctx, c.l)
		wantErr(t, err, store.ErrNotFound, "LinkLogin: "+c.rule+" must return ErrNotFound")
		wantNotLinked(t, s, c.l, 1, c.rule)
	}

	// Ownership that moved to another user takes the joins with it.
	v := google("u4", u1.Email)
	if err := v.create(ctx, s); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ClaimEmail(ctx, "u4"); err != nil {
		t.Fatalf("ClaimEmail: an email whose owning login was removed must be free to own; got error %v", err)
	}
	l := linkedLogin("l-new", "u1", "github", "gh-new", u1.Email)
	err := s.LinkLogin(ctx, l)
	wantErr(t, err, store.ErrNotFound, "LinkLogin: a login joining a user whose email another user's login owns now must return ErrNotFound")
	wantNotLinked(t, s, l, 1, "a login joining the user that used to own its email")
	l.UserID = "u4"
	mustLinkLogin(t, s, l)
}

// ClaimEmail makes a login own its email only if whoever holds the login
// proved they read it.
func testClaimEmailUnproven(t *testing.T, s store.Store) {
	ctx := t.Context()
	const email = "shared@example.com"
	pw := newUser("u1").withEmail(email)
	if err := pw.create(ctx, s); err != nil {
		t.Fatal(err)
	}
	g := google("u2", email).withUnproven()
	if err := g.create(ctx, s); err != nil {
		t.Fatal(err)
	}
	// Verified by a link opened without the login's session: verified,
	// not proven.
	h := google("u3", email).withUnproven()
	if err := h.create(ctx, s); err != nil {
		t.Fatal(err)
	}
	mustCreateVerificationToken(t, s, newVerificationToken("u3/verify", "u3", email, base, at(time.Hour)))
	mustVerifyEmail(t, s, "u3/verify", at(time.Minute), verified(h.Login), "a live token opened without a session")
	h.Login = verified(h.Login)

	for _, c := range []struct {
		u    user
		rule string
	}{
		{pw, "a password login whose email is neither verified nor proven"},
		{g, "a third-party login the provider did not vouch for"},
		{h, "a login verified by a link opened without its session"},
	} {
		_, err := s.ClaimEmail(ctx, c.u.Login.ID)
		wantErr(t, err, store.ErrNotFound, "ClaimEmail: "+c.rule+" is not proven and must return ErrNotFound")
		wantUser(t, s, c.u, "ClaimEmail: a refused claim must change nothing")
	}
	wantOwners(t, s, email, nil, "ClaimEmail: an unproven login must not own its email")

	// Once proven, it may claim.
	if _, err := s.SetEmailVerified(ctx, "u3", true); err != nil {
		t.Fatalf("SetEmailVerified: an existing login must be updated; got error %v", err)
	}
	got, err := s.ClaimEmail(ctx, "u3")
	if wantErr(t, err, nil, "ClaimEmail: a login proven since a refused claim must own its email") && !got.OwnsEmail {
		t.Errorf("ClaimEmail: a proven login claiming a free email must return it owning the email; got %+v", got)
	}
	wantOwners(t, s, email, []string{"u3"}, "ClaimEmail: the proven login must be the email's one owner")
}
