package storetest

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/latchkit/auth/store"
)

var resetTokenTests = []test{
	{"ResetPassword", testResetPassword},
	{"WorksOnce", testResetPasswordOnce},
	{"Expiry", testResetTokenExpiry},
	{"UnknownToken", testResetPasswordUnknownToken},
	{"CreateUnknownUser", testCreateResetTokenUnknownUser},
	{"CreateDuplicateHash", testCreateResetTokenDuplicate},
	{"VoidsOtherTokens", testResetPasswordVoidsOtherTokens},
	{"UpdatePasswordHashVoidsTokens", testUpdatePasswordHashVoidsResetTokens},
	{"DeleteExpired", testDeleteExpiredResetTokens},
	{"Lookup", testResetTokenLookup},
	{"ResetPasswordEndsEpoch", testResetPasswordEndsEpoch},
	{"VerifiesOnlyPasswordLogin", testResetPasswordVerifiesOnlyPasswordLogin},
	{"ResetPasswordProves", testResetPasswordProves},
	{"UnprovenDropsPasskeys", testResetUnprovenDropsPasskeys},
	{"ProvenKeepsPasskeys", testResetProvenKeepsPasskeys},
}

// resetPasskeys is a user u1 with a live reset token and, beside its
// password login: two passkeys, one with the address and one with none,
// each with a code bound to it; a provider login of another address, with
// a verification code; a passwordless login of the address; and a record
// of second factors.
type resetPasskeys struct {
	u                 user
	passkeys, others  []store.Login
	passkeyCodes      []store.Code
	otherVerification store.Code
}

// newResetPasskeys creates the user of a resetPasskeys whose password
// login is pw.
func newResetPasskeys(t *testing.T, s store.Store, pw store.Login) resetPasskeys {
	t.Helper()
	ctx := t.Context()
	u := user{User: store.User{ID: "u1", TimeJoined: base}, Login: pw}
	if err := u.create(ctx, s); err != nil {
		t.Fatalf("CreateUser: a user with a new id and login key must be added; got error %v", err)
	}
	r := resetPasskeys{
		u: u,
		passkeys: []store.Login{
			passkey("pk1", "u1", "cred-1", u.Email, counter("cred-1", 0)),
			passkey("pk2", "u1", "cred-2", "", counter("cred-2", 0)),
		},
		others: []store.Login{
			linkedLogin("g", "u1", "google", "g-1", "elsewhere@example.com"),
			proven(store.Login{LoginKey: store.PasswordlessKey(u.Email), ID: "pwl", UserID: "u1", Email: u.Email, CreatedAt: base}),
			secondFactors("u1/mfa", "u1", record("u1", 0)),
		},
	}
	for _, l := range append(slices.Clone(r.passkeys), r.others...) {
		if err := s.AttachLogin(ctx, l); err != nil {
			t.Fatalf("AttachLogin %s: a login with a new key and id, of an existing user, must be added; got error %v", l.ID, err)
		}
	}
	recovery := newRecovery("pk1/recovery", "u1", u.Email, base, at(time.Hour))
	recovery.LoginID = "pk1"
	options := newOptions("pk2/options", "u1", "", state("pk2"), base, at(time.Hour))
	options.LoginID = "pk2"
	r.passkeyCodes = []store.Code{recovery, options}
	r.otherVerification = newVerificationToken("g/verify", "g", "elsewhere@example.com", base, at(time.Hour))
	for _, c := range append(slices.Clone(r.passkeyCodes), r.otherVerification) {
		mustCreateCode(t, s, c, "a code bound to a login of an existing user")
	}
	mustCreateResetToken(t, s, newResetToken("reset", "u1", base, at(time.Hour)))
	return r
}

// wantOthersKept checks that the provider and passwordless logins, the
// record of second factors and the provider login's verification code are
// as they were.
func (r resetPasskeys) wantOthersKept(t *testing.T, s store.Store, now time.Time, rule string) {
	t.Helper()
	for _, l := range r.others {
		wantLogin(t, s, l, rule+": a provider login, a passwordless login and the record of second factors stay")
	}
	if _, err := s.Code(t.Context(), store.CodeVerification, r.otherVerification.Hash, now); err != nil {
		t.Errorf("%s: the verification code of a login that stays must stay; Code: %v", rule, err)
	}
}

// testResetUnprovenDropsPasskeys: the reset of a password whose address
// was not proven is the address's owner taking the account back: every
// passkey of the user goes, whatever its email, with the codes bound to
// it, since whoever chose the password may have added it; the user's
// other logins stay.
func testResetUnprovenDropsPasskeys(t *testing.T, s store.Store) {
	ctx := t.Context()
	r := newResetPasskeys(t, s, newUser("u1").Login)
	now := at(time.Minute)
	want := afterReset(r.u, phc("new"))
	mustResetPassword(t, s, "reset", now, want, nil, "a live token of an unproven password login")
	wantUser(t, s, want, "ResetPassword: the password login, proven by the reset")

	const rule = "ResetPassword of an unproven password"
	for _, l := range r.passkeys {
		_, err := s.Login(ctx, l.LoginKey)
		wantErr(t, err, store.ErrNotFound, rule+": a passkey its maker may have added must go, so Login("+l.ID+")")
	}
	logins, err := s.Logins(ctx, "u1")
	if err != nil {
		t.Fatalf("Logins: %v", err)
	}
	for _, l := range logins {
		if l.Method == store.MethodWebAuthn {
			t.Errorf("%s: Logins still lists the passkey %s", rule, l.ID)
		}
	}
	for _, c := range r.passkeyCodes {
		_, err := s.Code(ctx, c.Kind, c.Hash, now)
		wantErr(t, err, store.ErrNotFound, rule+": a code bound to a dropped passkey must go with it, so Code("+string(c.Kind)+")")
	}
	r.wantOthersKept(t, s, now, rule)
}

// testResetProvenKeepsPasskeys: the reset of a password whose address was
// proven before changes no other login, so the user's passkeys and their
// codes stay.
func testResetProvenKeepsPasskeys(t *testing.T, s store.Store) {
	r := newResetPasskeys(t, s, proven(newUser("u1").Login))
	now := at(time.Minute)
	want := afterReset(r.u, phc("new"))
	mustResetPassword(t, s, "reset", now, want, nil, "a live token of a proven password login")
	wantUser(t, s, want, "ResetPassword: the password login, with its new hash")

	const rule = "ResetPassword of a proven password"
	for _, l := range r.passkeys {
		wantLogin(t, s, l, rule+": the user's passkeys stay")
	}
	for _, c := range r.passkeyCodes {
		wantPasskeyCode(t, s, c, now, rule+": the codes bound to the user's passkeys stay")
	}
	r.wantOthersKept(t, s, now, rule)
}

func testResetTokenLookup(t *testing.T, s store.Store) {
	u := mustCreateUser(t, s, "u1")
	want := newResetToken("reset", "u1", at(time.Minute), at(time.Hour))
	mustCreateResetToken(t, s, want)
	got, err := s.Code(t.Context(), store.CodeReset, want.Hash, at(30*time.Minute))
	if err != nil {
		t.Fatalf("Code: a live token must be found; got error %v", err)
	}
	if got.Hash != want.Hash || got.UserID != want.UserID || !sameTime(got.CreatedAt, want.CreatedAt) || !sameTime(got.ExpiresAt, want.ExpiresAt) {
		t.Errorf("Code: got %+v, want %+v", got, want)
	}
	for _, c := range []struct {
		hash store.TokenHash
		now  time.Time
		rule string
	}{
		{token("nobody"), at(30 * time.Minute), "an unknown token must return ErrNotFound"},
		{want.Hash, at(time.Hour), "a token at its expiry must return ErrNotFound"},
	} {
		if _, err := s.Code(t.Context(), store.CodeReset, c.hash, c.now); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Code: %s; got %v", c.rule, err)
		}
	}
	// Looking a token up does not use it.
	mustResetPassword(t, s, "reset", at(40*time.Minute), afterReset(u, phc("new")), nil, "a token that was only looked up")
}

// afterReset is u as a successful reset leaves it: a new hash, and the
// email verified and proven, as the token was mailed to it and whoever
// opened it chose the password that now opens the login.
func afterReset(u user, hash string) user {
	u = withHash(u, hash)
	u.Login = proven(u.Login)
	return u
}

// withHash is u with its password hash replaced.
func withHash(u user, hash string) user {
	u.PasswordHash = hash
	return u
}

func testResetPassword(t *testing.T, s store.Store) {
	u1 := mustCreateUser(t, s, "u1")
	u2 := mustCreateUser(t, s, "u2")
	a := newSession("a", "u1", base, at(ttl))
	b := newSession("b", "u1", at(time.Minute), at(ttl))
	c := newSession("c", "u2", at(2*time.Minute), at(ttl))
	for _, sess := range []store.Session{a, b, c} {
		mustCreateSession(t, s, sess, sess.Handle+"/r0")
	}
	// Give a a superseded token as well as a current one.
	r := rotation("a/r0", "a/r1", at(time.Hour), 0)
	mustRotate(t, s, r, updated(a, r), "the current token of a live session")
	mustCreateResetToken(t, s, newResetToken("u1/reset", "u1", at(time.Hour), at(2*time.Hour)))
	mustCreateResetToken(t, s, newResetToken("u2/reset", "u2", at(time.Hour), at(2*time.Hour)))

	now := at(90 * time.Minute)
	want := afterReset(u1, phc("reset"))
	mustResetPassword(t, s, "u1/reset", now, want, []string{"a", "b"}, "a live token of a user with sessions")
	wantUser(t, s, want, "ResetPassword: must set the user's password hash and nothing else")
	wantNoSession(t, s, "a", now, "ResetPassword: must revoke every session of the user")
	wantNoSession(t, s, "b", now, "ResetPassword: must revoke every session of the user")
	wantUserSessions(t, s, "u1", now, nil, "ResetPassword: must revoke every session of the user")
	for _, tok := range []string{"a/r1", "a/r0", "b/r0"} {
		wantRotateErr(t, s, rotation(tok, tok+"/next", now, 0), store.ErrNotFound,
			fmt.Sprintf("ResetPassword must delete the revoked sessions' tokens, current and superseded: %s must return ErrNotFound", tok))
	}

	wantUser(t, s, u2, "ResetPassword: must not change other users")
	wantUserSessions(t, s, "u2", now, []store.Session{c}, "ResetPassword: must not revoke other users' sessions")
	r = rotation("c/r0", "c/r1", now, 0)
	mustRotate(t, s, r, updated(c, r), "ResetPassword: must not revoke other users' sessions, so rotating their tokens")
	mustResetPassword(t, s, "u2/reset", now, afterReset(u2, phc("reset of u2")), []string{"c"},
		"a reset must delete only the user's own reset tokens, so another user's token")
}

func testResetPasswordOnce(t *testing.T, s store.Store) {
	u := mustCreateUser(t, s, "u1")
	mustCreateResetToken(t, s, newResetToken("reset", "u1", base, at(time.Hour)))

	want := afterReset(u, phc("first"))
	mustResetPassword(t, s, "reset", at(10*time.Minute), want, nil, "a live token of a user without sessions")

	// The user signs in with the new password; then the token comes back.
	sess := newSession("s1", "u1", at(11*time.Minute), at(ttl))
	mustCreateSession(t, s, sess, "s1/r0")
	now := at(12 * time.Minute)
	wantResetErr(t, s, "reset", phc("second"), now,
		"a token works once: presenting it again after a successful reset must return ErrNotFound")
	wantUser(t, s, want, "ResetPassword: a used token must change nothing, so the hash set by the first reset must stay")
	wantSession(t, s, sess, now, "ResetPassword: a used token must change nothing, so it must not revoke sessions")
	r := rotation("s1/r0", "s1/r1", now, 0)
	mustRotate(t, s, r, updated(sess, r), "ResetPassword: a used token must change nothing, so the current token of a session made after the reset")
}

func testResetTokenExpiry(t *testing.T, s store.Store) {
	u := mustCreateUser(t, s, "u1")
	sess := newSession("s1", "u1", base, at(ttl))
	mustCreateSession(t, s, sess, "s1/r0")
	mustCreateResetToken(t, s, newResetToken("reset", "u1", base, at(time.Hour)))

	for _, now := range []time.Time{at(time.Hour), at(time.Hour + time.Millisecond), at(2 * time.Hour)} {
		wantResetErr(t, s, "reset", phc("too late"), now, fmt.Sprintf(
			"a token has expired when its ExpiresAt is at or before now, so %v after an expiry of 1h0m0s it must return ErrNotFound", now.Sub(base)))
	}
	wantUser(t, s, u, "ResetPassword: an expired token must change nothing, so the hash must stay")
	wantSession(t, s, sess, at(2*time.Hour), "ResetPassword: an expired token must change nothing, so it must not revoke sessions")

	// Stores never read a clock, so going back in time shows whether the
	// rejected calls changed anything.
	mustResetPassword(t, s, "reset", at(time.Hour-time.Second), afterReset(u, phc("in time")), []string{"s1"},
		"an expired token must change nothing, so the same token at a time before its ExpiresAt")
}

func testResetPasswordUnknownToken(t *testing.T, s store.Store) {
	wantResetErr(t, s, "forged", phc("new"), base, "an unknown token must return ErrNotFound in an empty store")

	u := mustCreateUser(t, s, "u1")
	sess := newSession("s1", "u1", base, at(ttl))
	mustCreateSession(t, s, sess, "s1/r0")
	mustCreateResetToken(t, s, newResetToken("reset", "u1", base, at(time.Hour)))

	now := at(10 * time.Minute)
	wantResetErr(t, s, "forged", phc("new"), now, "an unknown token must return ErrNotFound")
	wantResetErr(t, s, "s1/r0", phc("new"), now, "a refresh token is not a reset token: it must return ErrNotFound")
	wantUser(t, s, u, "ResetPassword: an unknown token must change nothing, so the hash must stay")
	wantSession(t, s, sess, now, "ResetPassword: an unknown token must change nothing, so it must not revoke sessions")
	mustResetPassword(t, s, "reset", now, afterReset(u, phc("new")), []string{"s1"},
		"an unknown token must change nothing, so the user's live token")
}

func testCreateResetTokenUnknownUser(t *testing.T, s store.Store) {
	rt := newResetToken("reset", "u1", base, at(time.Hour))
	err := s.CreateCode(t.Context(), rt)
	wantErr(t, err, store.ErrNotFound, "CreateCode: an unknown user must return ErrNotFound")

	u := mustCreateUser(t, s, "u1")
	wantResetErr(t, s, "reset", phc("new"), at(10*time.Minute),
		"a token rejected for an unknown user must not be written, so once the user exists it must return ErrNotFound")
	wantUser(t, s, u, "ResetPassword: an unknown token must change nothing")

	// Nothing was written, so the hash is still free.
	if err := s.CreateCode(t.Context(), rt); err != nil {
		t.Errorf("CreateCode: a token rejected for an unknown user must leave its hash free; got error %v", err)
	}
}

func testCreateResetTokenDuplicate(t *testing.T, s store.Store) {
	u1 := mustCreateUser(t, s, "u1")
	u2 := mustCreateUser(t, s, "u2")
	mustCreateResetToken(t, s, newResetToken("reset", "u1", base, at(time.Hour)))

	err := s.CreateCode(t.Context(), newResetToken("reset", "u2", at(time.Minute), at(2*time.Hour)))
	wantErr(t, err, store.ErrConflict, "CreateCode: a duplicate hash must return ErrConflict")
	err = s.CreateCode(t.Context(), newResetToken("reset", "u1", at(time.Minute), at(2*time.Hour)))
	wantErr(t, err, store.ErrConflict, "CreateCode: a duplicate hash must return ErrConflict even for the same user")

	wantResetErr(t, s, "reset", phc("new"), at(90*time.Minute),
		"a conflicting token must not overwrite the existing one, so the existing one must still expire at its own ExpiresAt")
	mustResetPassword(t, s, "reset", at(10*time.Minute), afterReset(u1, phc("new")), nil,
		"CreateCode: a conflicting token must not overwrite the existing one, so the existing token for its own user")
	wantUser(t, s, u2, "CreateCode: a conflicting token must not be written, so the user it named must not change")
}

func testResetPasswordVoidsOtherTokens(t *testing.T, s store.Store) {
	u1 := mustCreateUser(t, s, "u1")
	u2 := mustCreateUser(t, s, "u2")
	mustCreateResetToken(t, s, newResetToken("u1/old", "u1", base, at(time.Hour)))
	mustCreateResetToken(t, s, newResetToken("u1/new", "u1", at(time.Minute), at(2*time.Hour)))
	mustCreateResetToken(t, s, newResetToken("u1/later", "u1", at(2*time.Minute), at(3*time.Hour)))
	mustCreateResetToken(t, s, newResetToken("u2/reset", "u2", base, at(time.Hour)))

	now := at(10 * time.Minute)
	want := afterReset(u1, phc("reset"))
	mustResetPassword(t, s, "u1/new", now, want, nil, "a live token of the user")
	for _, name := range []string{"u1/old", "u1/later", "u1/new"} {
		wantResetErr(t, s, name, phc("again"), now, fmt.Sprintf(
			"a successful reset must delete every reset token of the user, so %s must return ErrNotFound", name))
	}
	wantUser(t, s, want, "ResetPassword: a voided token must change nothing, so the hash of the successful reset must stay")
	mustResetPassword(t, s, "u2/reset", now, afterReset(u2, phc("reset of u2")), nil,
		"a reset must delete only the user's own reset tokens, so another user's token")
}

func testUpdatePasswordHashVoidsResetTokens(t *testing.T, s store.Store) {
	u1 := mustCreateUser(t, s, "u1")
	u2 := mustCreateUser(t, s, "u2")
	u3 := mustCreateUser(t, s, "u3")
	mustCreateResetToken(t, s, newResetToken("u1/a", "u1", base, at(time.Hour)))
	mustCreateResetToken(t, s, newResetToken("u1/b", "u1", at(time.Minute), at(2*time.Hour)))
	mustCreateResetToken(t, s, newResetToken("u2/reset", "u2", base, at(time.Hour)))
	mustCreateResetToken(t, s, newResetToken("u3/reset", "u3", base, at(time.Hour)))

	want := withHash(u1, phc("upgraded"))
	if err := s.UpdatePasswordHash(t.Context(), u1.User.ID, u1.PasswordHash, want.PasswordHash); err != nil {
		t.Fatalf("UpdatePasswordHash: a matching old hash must succeed; got error %v", err)
	}
	now := at(10 * time.Minute)
	for _, name := range []string{"u1/a", "u1/b"} {
		wantResetErr(t, s, name, phc("reset"), now, fmt.Sprintf(
			"UpdatePasswordHash must void the user's outstanding reset tokens, so %s must return ErrNotFound", name))
	}
	wantUser(t, s, want, "ResetPassword: a voided token must change nothing, so the upgraded hash must stay")
	mustResetPassword(t, s, "u2/reset", now, afterReset(u2, phc("reset of u2")), nil,
		"UpdatePasswordHash must void only the user's own reset tokens, so another user's token")

	// A refused update changes no hash, so it voids nothing.
	err := s.UpdatePasswordHash(t.Context(), u3.User.ID, phc("stale"), phc("upgrade of the stale one"))
	wantErr(t, err, store.ErrConflict, "UpdatePasswordHash: an old hash that does not match the stored one must return ErrConflict")
	mustResetPassword(t, s, "u3/reset", now, afterReset(u3, phc("reset of u3")), nil,
		"UpdatePasswordHash: a refused update changes nothing, so the user's reset token")
}

func testDeleteExpiredResetTokens(t *testing.T, s store.Store) {
	u1 := mustCreateUser(t, s, "u1")
	u2 := mustCreateUser(t, s, "u2")
	mustCreateResetToken(t, s, newResetToken("u1/expired", "u1", base, at(time.Hour)))
	mustCreateResetToken(t, s, newResetToken("u1/live", "u1", base, at(10*time.Hour)))
	mustCreateResetToken(t, s, newResetToken("u2/expired", "u2", base, at(time.Hour)))

	now := at(2 * time.Hour)
	if err := s.DeleteExpired(t.Context(), now); err != nil {
		t.Fatalf("DeleteExpired: must succeed; got error %v", err)
	}

	// Stores never read a clock: asking about a time before things expired
	// tells removed records from merely expired ones.
	earlier := at(20 * time.Minute)
	for _, name := range []string{"u1/expired", "u2/expired"} {
		wantResetErr(t, s, name, phc("reset"), earlier, fmt.Sprintf(
			"DeleteExpired must remove expired reset tokens, so %s must return ErrNotFound even before its ExpiresAt", name))
	}
	wantUser(t, s, u1, "DeleteExpired: must not change users")
	wantUser(t, s, u2, "DeleteExpired: must not change users")
	mustResetPassword(t, s, "u1/live", now, afterReset(u1, phc("reset")), nil,
		"DeleteExpired: must keep reset tokens that have not expired, so a live one")
}

func testResetPasswordEndsEpoch(t *testing.T, s store.Store) {
	ctx := t.Context()
	u := mustCreateUser(t, s, "u1")
	mustCreateResetToken(t, s, newResetToken("reset", "u1", base, at(time.Hour)))
	// A sign-in reads the login, with the old hash, before the reset.
	before, err := s.Login(ctx, u.LoginKey)
	if err != nil {
		t.Fatalf("Login: %v", err)
	}
	wantResetErr(t, s, "forged", phc("new"), at(time.Minute), "an unknown token must return ErrNotFound")
	wantEpoch(t, s, u.Login, before.SessionEpoch, "ResetPassword: a refused reset must not change the SessionEpoch")

	got, _, err := s.ResetPassword(ctx, token("reset"), phc("new"), at(time.Minute))
	if err != nil {
		t.Fatalf("ResetPassword: a live token must reset the password; got error %v", err)
	}
	if got.SessionEpoch != before.SessionEpoch+1 {
		t.Errorf("ResetPassword: the login it returns must carry the advanced SessionEpoch %d; got %d", before.SessionEpoch+1, got.SessionEpoch)
	}
	wantEpoch(t, s, u.Login, before.SessionEpoch+1, "ResetPassword: a reset ends every session, so it must advance the SessionEpoch")

	late := newSession("late", "u1", at(2*time.Minute), at(ttl))
	err = s.CreateSession(ctx, late, token("late/r0"), before.SessionEpoch)
	wantErr(t, err, store.ErrSessionsEnded, "CreateSession: a session authorised by a password that ResetPassword has replaced must return ErrSessionsEnded")
	wantUserSessions(t, s, "u1", at(2*time.Minute), nil, "CreateSession: a session refused for its epoch must not be written")
}

// A reset proves the inbox of the email and password login, and of no
// other login of the user, whatever email it has.
func testResetPasswordVerifiesOnlyPasswordLogin(t *testing.T, s store.Store) {
	u := mustCreateOwner(t, s, "u1")
	g := linkedLogin("l2", "u1", "google", "g-2", u.Email)
	g = unproven(g)
	mustLinkLogin(t, s, g)
	mustCreateResetToken(t, s, newResetToken("reset", "u1", base, at(time.Hour)))

	want := afterReset(u, phc("new"))
	mustResetPassword(t, s, "reset", at(10*time.Minute), want, nil, "a live token of a user with a linked login")
	wantUser(t, s, want, "ResetPassword: must set the password hash and mark the email verified")
	wantLogin(t, s, g, "ResetPassword: no other login of the user may change, so a linked login's email must stay unverified")
}

// Whoever set the password from a link mailed to the address read its
// inbox and holds the login: a reset proves the password login's email,
// which may then own it, and leaves who owns what as it was.
func testResetPasswordProves(t *testing.T, s store.Store) {
	ctx := t.Context()
	u1 := mustCreateUser(t, s, "u1")
	u2 := mustCreateUser(t, s, "u2")
	mustCreateVerificationToken(t, s, newVerificationToken("u2/verify", "u2", u2.Email, base, at(time.Hour)))
	mustVerifyEmail(t, s, "u2/verify", at(time.Minute), verified(u2.Login), "a live token opened without a session")
	u2.Login = verified(u2.Login)
	for _, u := range []user{u1, u2} {
		_, err := s.ClaimEmail(ctx, u.Login.ID)
		wantErr(t, err, store.ErrNotFound, "ClaimEmail: a login not proven before its reset must return ErrNotFound")
	}

	mustCreateResetToken(t, s, newResetToken("u1/reset", "u1", base, at(time.Hour)))
	mustCreateResetToken(t, s, newResetToken("u2/reset", "u2", base, at(time.Hour)))
	now := at(10 * time.Minute)
	want1, want2 := afterReset(u1, phc("new of u1")), afterReset(u2, phc("new of u2"))
	mustResetPassword(t, s, "u1/reset", now, want1, nil, "a live token of a login neither verified nor proven")
	mustResetPassword(t, s, "u2/reset", now, want2, nil, "a live token of a login verified but not proven")
	wantUser(t, s, want1, "ResetPassword: must mark the password login's email verified and proven, and make it own nothing")
	wantUser(t, s, want2, "ResetPassword: must mark the password login's email proven, and make it own nothing")

	got, err := s.ClaimEmail(ctx, "u1")
	if wantErr(t, err, nil, "ClaimEmail: a login proven by a reset must own its free email") && !got.OwnsEmail {
		t.Errorf("ClaimEmail: a proven login claiming a free email must return it owning the email; got %+v", got)
	}
}
