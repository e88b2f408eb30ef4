package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/latchkit/auth/store"
)

var verificationTokenTests = []test{
	{"VerifyEmail", testVerifyEmail},
	{"WorksOnce", testVerifyEmailOnce},
	{"VoidsLoginTokens", testVerifyEmailVoidsLoginTokens},
	{"Expiry", testVerificationTokenExpiry},
	{"EmailChanged", testVerifyEmailChanged},
	{"UnknownToken", testVerifyEmailUnknownToken},
	{"CreateUnknownLogin", testCreateVerificationTokenUnknownLogin},
	{"CreateDuplicateHash", testCreateVerificationTokenDuplicate},
	{"SetEmailVerified", testSetEmailVerified},
	{"SetEmailVerifiedUnknownLogin", testSetEmailVerifiedUnknownLogin},
	{"SetEmailVerifiedProves", testSetEmailVerifiedProves},
	{"SetEmailVerifiedFalseReleasesEmail", testSetEmailVerifiedReleasesEmail},
	{"VerifyEmailNeverProves", testVerifyEmailNeverProves},
	{"DeleteExpired", testDeleteExpiredVerificationTokens},
	{"HashReused", testVerificationTokenHashReused},
}

// newVerificationToken is the verification code called name (its hash is
// token(name)) of a login and the email it was sent to, issued at created
// and working until expires. Its user is left for the store to fill in.
func newVerificationToken(name, loginID, email string, created, expires time.Time) store.Code {
	return store.Code{
		Hash:      token(name),
		Kind:      store.CodeVerification,
		LoginID:   loginID,
		Email:     email,
		CreatedAt: created,
		ExpiresAt: expires,
	}
}

func mustCreateVerificationToken(t *testing.T, s store.Store, vt store.Code) {
	t.Helper()
	if err := s.CreateCode(t.Context(), vt); err != nil {
		t.Fatalf("CreateCode: a token with a new hash, for an existing login and the email it has, must be added; got error %v", err)
	}
}

// verified is l with its email verified.
func verified(l store.Login) store.Login {
	l.EmailVerified = true
	return l
}

// mustVerifyEmail uses the verification token called name, which the
// contract says works, explained by rule. It checks that the store returns
// want, the login as updated, and holds it.
func mustVerifyEmail(t *testing.T, s store.Store, name string, now time.Time, want store.Login, rule string) {
	t.Helper()
	got, err := s.VerifyEmail(t.Context(), token(name), now)
	if err != nil {
		t.Fatalf("VerifyEmail: %s must succeed; got error %v", rule, err)
	}
	if d := loginDiff(got, want); d != "" {
		t.Errorf("VerifyEmail: a successful verification must return the login with its email verified: %s", d)
	}
	wantLogin(t, s, want, "VerifyEmail: "+rule+" must mark the login's email verified and change nothing else")
}

// wantVerifyErr uses the verification token called name and reports a
// failure of rule unless it returns ErrNotFound, the only error the
// contract allows VerifyEmail.
func wantVerifyErr(t *testing.T, s store.Store, name string, now time.Time, rule string) {
	t.Helper()
	_, err := s.VerifyEmail(t.Context(), token(name), now)
	wantErr(t, err, store.ErrNotFound, "VerifyEmail: "+rule)
}

func testVerifyEmail(t *testing.T, s store.Store) {
	u1 := mustCreateUser(t, s, "u1")
	u2 := mustCreateUser(t, s, "u2")
	mustCreateVerificationToken(t, s, newVerificationToken("u1/verify", "u1", u1.Email, base, at(time.Hour)))
	mustCreateVerificationToken(t, s, newVerificationToken("u2/verify", "u2", u2.Email, base, at(time.Hour)))

	now := at(10 * time.Minute)
	mustVerifyEmail(t, s, "u1/verify", now, verified(u1.Login), "a live token whose login still has its email")
	wantUser(t, s, u2, "VerifyEmail: must not change another user's login")
	mustVerifyEmail(t, s, "u2/verify", now, verified(u2.Login), "VerifyEmail must delete only the login's own tokens, so another user's token")
}

func testVerifyEmailOnce(t *testing.T, s store.Store) {
	ctx := t.Context()
	u := mustCreateUser(t, s, "u1")
	mustCreateVerificationToken(t, s, newVerificationToken("verify", "u1", u.Email, base, at(time.Hour)))
	now := at(10 * time.Minute)
	mustVerifyEmail(t, s, "verify", now, verified(u.Login), "a live token")

	// The email is unverified again, so a second use of the token would
	// show.
	if _, err := s.SetEmailVerified(ctx, "u1", false); err != nil {
		t.Fatalf("SetEmailVerified: an existing login must be updated; got error %v", err)
	}
	wantVerifyErr(t, s, "verify", now, "a token works once, so a second use must return ErrNotFound")
	wantLogin(t, s, u.Login, "VerifyEmail: a used token must change nothing")
}

func testVerifyEmailVoidsLoginTokens(t *testing.T, s store.Store) {
	u1 := mustCreateOwner(t, s, "u1")
	u2 := mustCreateUser(t, s, "u2")
	l2 := linkedLogin("l2", "u1", "google", "g-2", u1.Email)
	l2 = unproven(l2)
	mustLinkLogin(t, s, l2)
	for _, vt := range []store.Code{
		newVerificationToken("u1/old", "u1", u1.Email, base, at(time.Hour)),
		newVerificationToken("u1/new", "u1", u1.Email, at(time.Minute), at(time.Hour)),
		newVerificationToken("u1/later", "u1", u1.Email, at(2*time.Minute), at(time.Hour)),
		newVerificationToken("l2/verify", "l2", l2.Email, base, at(time.Hour)),
		newVerificationToken("u2/verify", "u2", u2.Email, base, at(time.Hour)),
	} {
		mustCreateVerificationToken(t, s, vt)
	}

	now := at(10 * time.Minute)
	want := verified(u1.Login)
	mustVerifyEmail(t, s, "u1/new", now, want, "a live token of the login")
	for _, name := range []string{"u1/old", "u1/later", "u1/new"} {
		wantVerifyErr(t, s, name, now, fmt.Sprintf(
			"a successful verification must delete every verification token of the login, so %s must return ErrNotFound", name))
	}
	wantLogin(t, s, l2, "VerifyEmail: must not change another login of the user")
	mustVerifyEmail(t, s, "l2/verify", now, verified(l2),
		"a verification must delete only the login's own tokens, so the token of another login of the user")
	mustVerifyEmail(t, s, "u2/verify", now, verified(u2.Login),
		"a verification must delete only the login's own tokens, so another user's token")
}

func testVerificationTokenExpiry(t *testing.T, s store.Store) {
	u := mustCreateUser(t, s, "u1")
	mustCreateVerificationToken(t, s, newVerificationToken("verify", "u1", u.Email, base, at(time.Hour)))

	wantVerifyErr(t, s, "verify", at(time.Hour), "a token whose ExpiresAt is now has expired and must return ErrNotFound")
	wantVerifyErr(t, s, "verify", at(2*time.Hour), "an expired token must return ErrNotFound")
	wantUser(t, s, u, "VerifyEmail: an expired token must change nothing")

	// Stores never read a clock, so going back in time shows whether the
	// rejected calls changed anything.
	mustVerifyEmail(t, s, "verify", at(time.Hour-time.Second), verified(u.Login),
		"an expired token must change nothing, so the same token at a time before its ExpiresAt")
}

// A token verifies the address it was sent to, and only while the login
// still has it.
func testVerifyEmailChanged(t *testing.T, s store.Store) {
	ctx := t.Context()
	g := google("u1", "a@example.com")
	g.Login = unproven(g.Login)
	mustSignInUp(t, s, g, true, "a new third-party identity")
	mustCreateVerificationToken(t, s, newVerificationToken("to-a", "u1", "a@example.com", base, at(time.Hour)))

	moved := g
	moved.Email = "b@example.com"
	mustSignInUp(t, s, moved, false, "an identity already on record")
	now := at(10 * time.Minute)
	wantVerifyErr(t, s, "to-a", now, "a token whose email the login no longer has must return ErrNotFound")
	wantLogin(t, s, moved.Login, "VerifyEmail: a token whose email the login no longer has must change nothing")

	err := s.CreateCode(ctx, newVerificationToken("to-a/again", "u1", "a@example.com", at(time.Minute), at(time.Hour)))
	wantErr(t, err, store.ErrNotFound, "CreateCode: an email the login no longer has must return ErrNotFound")
	wantVerifyErr(t, s, "to-a/again", now, "a refused token must not be written, so it must return ErrNotFound")

	mustCreateVerificationToken(t, s, newVerificationToken("to-b", "u1", "b@example.com", at(time.Minute), at(time.Hour)))
	mustVerifyEmail(t, s, "to-b", now, verified(moved.Login), "a live token of the login's present email")
}

func testVerifyEmailUnknownToken(t *testing.T, s store.Store) {
	u := mustCreateUser(t, s, "u1")
	mustCreateSession(t, s, newSession("s1", "u1", base, at(ttl)), "s1/r0")
	mustCreateResetToken(t, s, newResetToken("reset", "u1", base, at(time.Hour)))
	mustCreateVerificationToken(t, s, newVerificationToken("verify", "u1", u.Email, base, at(time.Hour)))

	now := at(10 * time.Minute)
	wantVerifyErr(t, s, "forged", now, "an unknown token must return ErrNotFound")
	wantVerifyErr(t, s, "s1/r0", now, "a refresh token is not a verification token: it must return ErrNotFound")
	wantVerifyErr(t, s, "reset", now, "a reset token is not a verification token: it must return ErrNotFound")
	wantUser(t, s, u, "VerifyEmail: an unknown token must change nothing")
	mustVerifyEmail(t, s, "verify", now, verified(u.Login), "an unknown token must change nothing, so the login's live token")
}

func testCreateVerificationTokenUnknownLogin(t *testing.T, s store.Store) {
	ctx := t.Context()
	u := mustCreateUser(t, s, "u1")
	v := mustCreateUser(t, s, "u2")

	for _, c := range []struct {
		loginID, email string
		rule           string
	}{
		{"nobody", u.Email, "an unknown login must return ErrNotFound"},
		{"u1", v.Email, "an email that is not the login's must return ErrNotFound"},
		{"u1", "", "an email that is not the login's must return ErrNotFound, an empty one too"},
	} {
		err := s.CreateCode(ctx, newVerificationToken("verify", c.loginID, c.email, base, at(time.Hour)))
		wantErr(t, err, store.ErrNotFound, "CreateCode: "+c.rule)
		wantVerifyErr(t, s, "verify", at(10*time.Minute), "a refused token must not be written, so it must return ErrNotFound")
	}
	wantUser(t, s, u, "CreateCode: a refused token must change nothing")
	wantUser(t, s, v, "CreateCode: a refused token must change nothing")

	// Nothing was written, so the hash is free.
	mustCreateVerificationToken(t, s, newVerificationToken("verify", "u1", u.Email, base, at(time.Hour)))
	mustVerifyEmail(t, s, "verify", at(10*time.Minute), verified(u.Login), "a token whose hash refused tokens had")
}

func testCreateVerificationTokenDuplicate(t *testing.T, s store.Store) {
	u1 := mustCreateUser(t, s, "u1")
	u2 := mustCreateUser(t, s, "u2")
	mustCreateVerificationToken(t, s, newVerificationToken("verify", "u1", u1.Email, base, at(time.Hour)))

	err := s.CreateCode(t.Context(), newVerificationToken("verify", "u2", u2.Email, at(time.Minute), at(2*time.Hour)))
	wantErr(t, err, store.ErrConflict, "CreateCode: a duplicate hash must return ErrConflict")

	wantVerifyErr(t, s, "verify", at(90*time.Minute),
		"a conflicting token must not overwrite the existing one, so the existing one must still expire at its own ExpiresAt")
	mustVerifyEmail(t, s, "verify", at(10*time.Minute), verified(u1.Login),
		"CreateCode: a conflicting token must not overwrite the existing one, so the existing token for its own login")
	wantUser(t, s, u2, "CreateCode: a conflicting token must not be written, so the login it named must not change")
}

func testSetEmailVerified(t *testing.T, s store.Store) {
	u1 := mustCreateOwner(t, s, "u1")
	u2 := mustCreateUser(t, s, "u2")
	l2 := linkedLogin("l2", "u1", "google", "g-2", u1.Email)
	l2 = unproven(l2)
	mustLinkLogin(t, s, l2)
	for _, vt := range []store.Code{
		newVerificationToken("u1/verify", "u1", u1.Email, base, at(time.Hour)),
		newVerificationToken("l2/verify", "l2", l2.Email, base, at(time.Hour)),
		newVerificationToken("u2/verify", "u2", u2.Email, base, at(time.Hour)),
	} {
		mustCreateVerificationToken(t, s, vt)
	}

	now := at(10 * time.Minute)
	setEmailVerified(t, s, "u1", true, u1.Login, "marking a proven email verified")
	wantVerifyErr(t, s, "u1/verify", now, "marking an email verified must void the login's verification tokens, so its token must return ErrNotFound")
	wantLogin(t, s, l2, "SetEmailVerified: must not change another login of the user")
	wantUser(t, s, u2, "SetEmailVerified: must not change another user's login")

	// Unverified is unproven, and an unproven login owns nothing.
	unverified := unproven(u1.Login)
	unverified.OwnsEmail = false
	setEmailVerified(t, s, "u1", false, unverified, "marking an email unverified, which unproves it and ends its ownership,")
	setEmailVerified(t, s, "u1", false, unverified, "marking an unverified email unverified")
	mustCreateVerificationToken(t, s, newVerificationToken("u1/again", "u1", u1.Email, at(time.Minute), at(time.Hour)))
	mustVerifyEmail(t, s, "u1/again", now, verified(unverified), "a token issued after the email was marked unverified")

	mustVerifyEmail(t, s, "l2/verify", now, verified(l2),
		"marking an email verified must void only the login's own tokens, so the token of another login of the user")
	mustVerifyEmail(t, s, "u2/verify", now, verified(u2.Login),
		"marking an email verified must void only the login's own tokens, so another user's token")
}

// setEmailVerified calls SetEmailVerified, which the contract says
// succeeds, explained by rule, and checks that the store returns want, the
// login as updated, and holds it.
func setEmailVerified(t *testing.T, s store.Store, loginID string, v bool, want store.Login, rule string) {
	t.Helper()
	got, err := s.SetEmailVerified(t.Context(), loginID, v)
	if err != nil {
		t.Fatalf("SetEmailVerified: %s must succeed; got error %v", rule, err)
	}
	if d := loginDiff(got, want); d != "" {
		t.Errorf("SetEmailVerified: %s must return the login as updated: %s", rule, d)
	}
	wantLogin(t, s, want, "SetEmailVerified: "+rule+" must record it and change nothing else")
}

// The application vouching for an email proves it, whoever opened what.
func testSetEmailVerifiedProves(t *testing.T, s store.Store) {
	ctx := t.Context()
	u1 := mustCreateUser(t, s, "u1")
	u2 := mustCreateUser(t, s, "u2")
	mustCreateVerificationToken(t, s, newVerificationToken("u2/verify", "u2", u2.Email, base, at(time.Hour)))
	mustVerifyEmail(t, s, "u2/verify", at(time.Minute), verified(u2.Login), "a live token opened without a session")

	setEmailVerified(t, s, "u1", true, proven(u1.Login), "marking an unverified email verified, which proves it,")
	setEmailVerified(t, s, "u2", true, proven(u2.Login), "marking a verified but unproven email verified, which proves it,")
	setEmailVerified(t, s, "u2", true, proven(u2.Login), "marking a proven email verified")
	for _, id := range []string{"u1", "u2"} {
		got, err := s.ClaimEmail(ctx, id)
		if wantErr(t, err, nil, "ClaimEmail: a login the application marked verified is proven, and must own its free email") && !got.OwnsEmail {
			t.Errorf("ClaimEmail: a proven login claiming a free email must return it owning the email; got %+v", got)
		}
	}
}

// Marking an owner's email unverified releases the email: the user no
// longer owns it, and another user's proven login may.
func testSetEmailVerifiedReleasesEmail(t *testing.T, s store.Store) {
	ctx := t.Context()
	u := mustCreateOwner(t, s, "u1")
	l2 := linkedLogin("l2", "u1", "google", "g-2", u.Email)
	mustLinkLogin(t, s, l2)
	v := google("u2", u.Email)
	if err := v.create(ctx, s); err != nil {
		t.Fatal(err)
	}

	released := unproven(u.Login)
	released.OwnsEmail = false
	setEmailVerified(t, s, "u1", false, released, "marking an owner's email unverified, which ends its ownership,")
	wantLogin(t, s, l2, "SetEmailVerified: the user's other login with the email must not take it over")
	wantOwners(t, s, u.Email, nil, "SetEmailVerified: an email whose owner was marked unverified must have no owner")

	l := linkedLogin("l3", "u1", "github", "gh-3", u.Email)
	err := s.LinkLogin(ctx, l)
	wantErr(t, err, store.ErrNotFound, "LinkLogin: a login joining a user whose owner was marked unverified must return ErrNotFound")
	_, err = s.ClaimEmail(ctx, "u1")
	wantErr(t, err, store.ErrNotFound, "ClaimEmail: a login marked unverified is unproven and must return ErrNotFound")

	got, err := s.ClaimEmail(ctx, "u2")
	if wantErr(t, err, nil, "ClaimEmail: an email whose owner was marked unverified must be free for another user's proven login") && !got.OwnsEmail {
		t.Errorf("ClaimEmail: a proven login claiming a free email must return it owning the email; got %+v", got)
	}
	wantOwners(t, s, u.Email, []string{"u2"}, "ClaimEmail: the other user's login must be the email's one owner")

	// Proven again, it does not own again: ownership is set only when asked.
	setEmailVerified(t, s, "u1", true, proven(released), "marking the released email verified again")
	_, err = s.ClaimEmail(ctx, "u1")
	wantErr(t, err, store.ErrEmailOwned, "ClaimEmail: an email another user's login took over must return ErrEmailOwned to its former owner")
}

// testVerifyEmailNeverProves: a verification link proves that someone
// reads the inbox, not that they hold the login, so it verifies the email
// without proving it; a proven email stays proven.
func testVerifyEmailNeverProves(t *testing.T, s store.Store) {
	ctx := t.Context()
	u := mustCreateOwner(t, s, "u1")
	l2 := unproven(linkedLogin("l2", "u1", "google", "g-2", u.Email))
	mustLinkLogin(t, s, l2)
	now := at(10 * time.Minute)

	mustCreateVerificationToken(t, s, newVerificationToken("l2/verify", "l2", l2.Email, base, at(time.Hour)))
	got, err := s.VerifyEmail(ctx, token("l2/verify"), now)
	if err != nil {
		t.Fatalf("VerifyEmail: a live token must succeed; got error %v", err)
	}
	want := verified(l2)
	if d := loginDiff(got, want); d != "" {
		t.Errorf("VerifyEmail: must verify the email without proving it, and return the login so: %s", d)
	}
	wantLogin(t, s, want, "VerifyEmail: must verify the email without proving it")
	wantUser(t, s, u, "VerifyEmail: must not change another login of the user")

	// A proven email stays proven when a later link is opened.
	if _, err := s.SetEmailVerified(ctx, "l2", true); err != nil {
		t.Fatalf("SetEmailVerified: an existing login must be updated; got error %v", err)
	}
	mustCreateVerificationToken(t, s, newVerificationToken("l2/later", "l2", l2.Email, base, at(time.Hour)))
	mustVerifyEmail(t, s, "l2/later", now, proven(l2), "a token of a proven login must leave it proven, so it")
}

func testSetEmailVerifiedUnknownLogin(t *testing.T, s store.Store) {
	u := mustCreateUser(t, s, "u1")
	for _, v := range []bool{true, false} {
		_, err := s.SetEmailVerified(t.Context(), "nobody", v)
		wantErr(t, err, store.ErrNotFound, fmt.Sprintf("SetEmailVerified(%v): an unknown login must return ErrNotFound", v))
	}
	wantUser(t, s, u, "SetEmailVerified: an unknown login must change nothing")
}

func testDeleteExpiredVerificationTokens(t *testing.T, s store.Store) {
	u1 := mustCreateUser(t, s, "u1")
	u2 := mustCreateUser(t, s, "u2")
	mustCreateVerificationToken(t, s, newVerificationToken("u1/expired", "u1", u1.Email, base, at(time.Hour)))
	mustCreateVerificationToken(t, s, newVerificationToken("u1/live", "u1", u1.Email, base, at(10*time.Hour)))
	mustCreateVerificationToken(t, s, newVerificationToken("u2/expired", "u2", u2.Email, base, at(time.Hour)))

	now := at(2 * time.Hour)
	if err := s.DeleteExpired(t.Context(), now); err != nil {
		t.Fatalf("DeleteExpired: must succeed; got error %v", err)
	}

	// Stores never read a clock: asking about a time before things expired
	// tells removed records from merely expired ones.
	earlier := at(20 * time.Minute)
	for _, name := range []string{"u1/expired", "u2/expired"} {
		wantVerifyErr(t, s, name, earlier, fmt.Sprintf(
			"DeleteExpired must remove expired verification tokens, so %s must return ErrNotFound even before its ExpiresAt", name))
	}
	wantUser(t, s, u1, "DeleteExpired: must not change logins")
	wantUser(t, s, u2, "DeleteExpired: must not change logins")
	mustVerifyEmail(t, s, "u1/live", now, verified(u1.Login),
		"DeleteExpired: must keep verification tokens that have not expired, so a live one")
}

// A hash that DeleteExpired freed belongs to the token that takes it next,
// and to nothing of the login it had before.
func testVerificationTokenHashReused(t *testing.T, s store.Store) {
	u1 := mustCreateUser(t, s, "u1")
	u2 := mustCreateUser(t, s, "u2")
	mustCreateVerificationToken(t, s, newVerificationToken("first", "u1", u1.Email, base, at(time.Hour)))
	if err := s.DeleteExpired(t.Context(), at(time.Hour)); err != nil {
		t.Fatalf("DeleteExpired: must succeed; got error %v", err)
	}
	mustCreateVerificationToken(t, s, newVerificationToken("first", "u2", u2.Email, at(time.Hour), at(2*time.Hour)))
	mustCreateVerificationToken(t, s, newVerificationToken("u1/verify", "u1", u1.Email, at(time.Hour), at(2*time.Hour)))

	now := at(90 * time.Minute)
	mustVerifyEmail(t, s, "u1/verify", now, verified(u1.Login), "a live token of the login")
	mustVerifyEmail(t, s, "first", now, verified(u2.Login),
		"a verification must delete only the login's own tokens, so a token that took a hash the login's expired token had")
}
