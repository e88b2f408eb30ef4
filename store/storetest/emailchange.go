package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/latchkit/auth/store"
)

var emailChangeTests = []test{
	{"MovesTheAddress", testChangeEmailMoves},
	{"Revert", testChangeEmailRevert},
	{"Refusals", testChangeEmailRefusals},
	{"TakenAddress", testChangeEmailTaken},
	{"OnceAtATime", testChangeEmailOnce},
	{"GoneWithUserAndTime", testChangeEmailCodesGo},
}

const newAddress = "new@example.com"

// newEmailCode is the email change code of kind called name of user
// userID, sent to to, from the address from.
func newEmailCode(kind store.CodeKind, name, userID, from, to string) store.Code {
	return store.Code{
		Hash:      token(name),
		Kind:      kind,
		UserID:    userID,
		Email:     to,
		Data:      []byte(from),
		CreatedAt: base,
		ExpiresAt: at(time.Hour),
	}
}

// moved is l as ChangeEmail leaves it at address email.
func moved(l store.Login, email string) store.Login {
	l.LoginKey, l.Email = store.KeyForEmail(l.LoginKey, email), email
	l.EmailVerified, l.EmailProven, l.OwnsEmail = true, false, false
	return l
}

// userWithThreeLogins is user u1, whose email and password login owns its
// address, with a passwordless login of the same address and a provider
// login of it.
func userWithThreeLogins(t *testing.T, s store.Store) (u user, pwl, google store.Login) {
	u = mustCreateOwner(t, s, "u1")
	pwl = store.Login{LoginKey: store.PasswordlessKey(u.Email), ID: "pwl", UserID: "u1", Email: u.Email, EmailVerified: true, CreatedAt: base}
	mustLinkLogin(t, s, pwl)
	google = linkedLogin("g", "u1", "google", "g-1", u.Email)
	mustLinkLogin(t, s, google)
	return u, pwl, google
}

// testChangeEmailMoves: the email and password and passwordless logins
// move to the new address, keys and all, verified, owning nothing; the
// provider's login keeps the provider's address; the code works once.
func testChangeEmailMoves(t *testing.T, s store.Store) {
	ctx := t.Context()
	u, pwl, google := userWithThreeLogins(t, s)
	mustCreateCode(t, s, newEmailCode(store.CodeEmailChange, "change", "u1", u.Email, newAddress), "an email change code of an existing user")
	mustCreateCode(t, s, newEmailCode(store.CodeEmailChange, "change2", "u1", u.Email, "other@example.com"), "an email change code of an existing user")
	mustCreateResetToken(t, s, newResetToken("reset", "u1", base, at(time.Hour)))
	mustCreateVerificationToken(t, s, newVerificationToken("verify", "u1", u.Email, base, at(time.Hour)))

	c, logins, err := s.ChangeEmail(ctx, store.CodeEmailChange, token("change"), at(time.Minute))
	if err != nil {
		t.Fatalf("ChangeEmail: a live change code of a user with the old address must move it; got %v", err)
	}
	if c.UserID != "u1" || c.Email != newAddress || string(c.Data) != u.Email || c.Kind != store.CodeEmailChange {
		t.Errorf("ChangeEmail: the code as it was; got %+v", c)
	}
	wantPw, wantPwl := moved(u.Login, newAddress), moved(pwl, newAddress)
	if len(logins) != 2 {
		t.Fatalf("ChangeEmail: the two logins of the address moved; got %+v", logins)
	}
	for _, l := range logins {
		want := wantPw
		if l.ID == "pwl" {
			want = wantPwl
		}
		if d := loginDiff(l, want); d != "" {
			t.Errorf("ChangeEmail: moved login %s: %s", l.ID, d)
		}
	}
	wantLogin(t, s, wantPw, "ChangeEmail: the email and password login under its new key")
	wantLogin(t, s, wantPwl, "ChangeEmail: the passwordless login under its new key")
	wantLogin(t, s, google, "ChangeEmail: a provider's login keeps the provider's address")
	for _, k := range []store.LoginKey{store.EmailPasswordKey(u.Email), store.PasswordlessKey(u.Email)} {
		_, err := s.Login(ctx, k)
		wantErr(t, err, store.ErrNotFound, "ChangeEmail: the old keys, then Login")
	}
	_, _, err = s.ChangeEmail(ctx, store.CodeEmailChange, token("change"), at(time.Minute))
	wantErr(t, err, store.ErrNotFound, "ChangeEmail: a code used up, again")
	_, err = s.Code(ctx, store.CodeEmailChange, token("change2"), at(time.Minute))
	wantErr(t, err, store.ErrNotFound, "ChangeEmail: every change code of the user goes with the one used, so Code of another")
	// Links mailed to the old address would act on the new one.
	_, err = s.Code(ctx, store.CodeReset, token("reset"), at(time.Minute))
	wantErr(t, err, store.ErrNotFound, "ChangeEmail: the user's reset codes go, so Code of one")
	_, err = s.Code(ctx, store.CodeVerification, token("verify"), at(time.Minute))
	wantErr(t, err, store.ErrNotFound, "ChangeEmail: the moved logins' verification codes go, so Code of one")
	// The old address is free: another user's login may own it now.
	if err := owning(newUser("u2").withEmail(u.Email)).create(ctx, s); err != nil {
		t.Errorf("CreateUser: a login owning the address a change moved away from must be added; got %v", err)
	}
}

// testChangeEmailRevert: a revert code moves the logins back, and voids
// the user's other revert and change codes.
func testChangeEmailRevert(t *testing.T, s store.Store) {
	ctx := t.Context()
	u, pwl, _ := userWithThreeLogins(t, s)
	mustCreateCode(t, s, newEmailCode(store.CodeEmailChange, "change", "u1", u.Email, newAddress), "an email change code of an existing user")
	if _, _, err := s.ChangeEmail(ctx, store.CodeEmailChange, token("change"), at(time.Minute)); err != nil {
		t.Fatalf("ChangeEmail: %v", err)
	}
	mustCreateCode(t, s, newEmailCode(store.CodeEmailRevert, "undo", "u1", newAddress, u.Email), "an email change code of an existing user")
	mustCreateCode(t, s, newEmailCode(store.CodeEmailRevert, "undo2", "u1", newAddress, u.Email), "an email change code of an existing user")
	mustCreateCode(t, s, newEmailCode(store.CodeEmailChange, "later", "u1", newAddress, "later@example.com"), "an email change code of an existing user")
	_, _, err := s.ChangeEmail(ctx, store.CodeEmailChange, token("undo"), at(time.Minute))
	wantErr(t, err, store.ErrNotFound, "ChangeEmail: a revert code asked for as a change code")

	c, logins, err := s.ChangeEmail(ctx, store.CodeEmailRevert, token("undo"), at(2*time.Minute))
	if err != nil || c.Kind != store.CodeEmailRevert || len(logins) != 2 {
		t.Fatalf("ChangeEmail: a live revert code must move the logins back; got %+v, %v", logins, err)
	}
	wantLogin(t, s, moved(u.Login, u.Email), "ChangeEmail: reverted, the email and password login")
	wantLogin(t, s, moved(pwl, u.Email), "ChangeEmail: reverted, the passwordless login")
	for _, name := range []string{"undo2", "later"} {
		for _, kind := range []store.CodeKind{store.CodeEmailRevert, store.CodeEmailChange} {
			_, err := s.Code(ctx, kind, token(name), at(2*time.Minute))
			wantErr(t, err, store.ErrNotFound, "ChangeEmail: a revert voids the user's other change and revert codes, so Code")
		}
	}
}

// testChangeEmailRefusals: an unknown, expired or other kind's code, a
// code whose old address no login has any more, and CreateCode for a
// user who does not exist change nothing.
func testChangeEmailRefusals(t *testing.T, s store.Store) {
	ctx := t.Context()
	u := mustCreateUser(t, s, "u1")
	mustCreateCode(t, s, newEmailCode(store.CodeEmailChange, "change", "u1", u.Email, newAddress), "an email change code of an existing user")
	mustCreateCode(t, s, newEmailCode(store.CodeEmailChange, "stale", "u1", "before@example.com", newAddress), "an email change code of an existing user")
	mustCreateResetToken(t, s, newResetToken("reset", "u1", base, at(time.Hour)))

	for _, c := range []struct {
		kind store.CodeKind
		name string
		now  time.Time
		rule string
	}{
		{store.CodeEmailChange, "unknown", at(time.Minute), "an unknown code"},
		{store.CodeEmailChange, "change", at(time.Hour), "a code at its expiry"},
		{store.CodeEmailChange, "reset", at(time.Minute), "a reset code"},
		{store.CodeReset, "change", at(time.Minute), "a kind other than change and revert"},
		{store.CodeEmailChange, "stale", at(time.Minute), "a code whose old address no login has"},
	} {
		_, _, err := s.ChangeEmail(ctx, c.kind, token(c.name), c.now)
		wantErr(t, err, store.ErrNotFound, "ChangeEmail: "+c.rule)
	}
	wantUser(t, s, u, "ChangeEmail: refused, nothing changes")
	if _, err := s.Code(ctx, store.CodeEmailChange, token("change"), at(time.Minute)); err != nil {
		t.Errorf("ChangeEmail: the refusals must leave the live code; Code: %v", err)
	}
	err := s.CreateCode(ctx, newEmailCode(store.CodeEmailChange, "nobody", "nobody", "x@example.com", newAddress))
	wantErr(t, err, store.ErrNotFound, "CreateCode: a change code of a user who does not exist")
}

// testChangeEmailTaken: an address a login of another user has, owned or
// not, is refused; an address key another user's login holds is too.
func testChangeEmailTaken(t *testing.T, s store.Store) {
	ctx := t.Context()
	u := mustCreateOwner(t, s, "u1")
	mustCreateUser(t, s, "u2") // an email and password login, owning nothing
	other := user{User: store.User{ID: "u3", TimeJoined: base}, Login: unproven(thirdPartyLogin("u3", "oidc", "o-3", "u3@example.com"))}
	if err := other.create(ctx, s); err != nil {
		t.Fatal(err)
	}
	for _, to := range []string{"u2@example.com", "u3@example.com"} {
		mustCreateCode(t, s, newEmailCode(store.CodeEmailChange, "to "+to, "u1", u.Email, to), "an email change code of an existing user")
		_, _, err := s.ChangeEmail(ctx, store.CodeEmailChange, token("to "+to), at(time.Minute))
		wantErr(t, err, store.ErrEmailOwned, "ChangeEmail: to an address a login of another user has")
	}
	wantUser(t, s, u, "ChangeEmail: refused for a taken address, nothing changes")
}

// testChangeEmailOnce: of several concurrent uses of one code, exactly
// one moves the address.
func testChangeEmailOnce(t *testing.T, s store.Store) {
	ctx := t.Context()
	u := mustCreateUser(t, s, "u1")
	mustCreateCode(t, s, newEmailCode(store.CodeEmailChange, "change", "u1", u.Email, newAddress), "an email change code of an existing user")
	const n = 8
	errs := make([]error, n)
	parallel(n, func(i int) {
		_, _, errs[i] = s.ChangeEmail(ctx, store.CodeEmailChange, token("change"), at(time.Minute))
	})
	ok := 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, store.ErrNotFound):
			t.Errorf("ChangeEmail: a code used up by a racing call must return ErrNotFound; got %v", err)
		}
	}
	if ok != 1 {
		t.Errorf("ChangeEmail: %d of %d concurrent uses of one code succeeded, want exactly 1", ok, n)
	}
	wantLogin(t, s, moved(u.Login, newAddress), "ChangeEmail: after the race")
}

// testChangeEmailCodesGo: change and revert codes go with their user,
// and with time.
func testChangeEmailCodesGo(t *testing.T, s store.Store) {
	ctx := t.Context()
	u := mustCreateUser(t, s, "u1")
	mustCreateUser(t, s, "u2")
	mustCreateCode(t, s, newEmailCode(store.CodeEmailChange, "change", "u1", u.Email, newAddress), "an email change code of an existing user")
	mustCreateCode(t, s, newEmailCode(store.CodeEmailRevert, "undo", "u1", newAddress, u.Email), "an email change code of an existing user")
	short := newEmailCode(store.CodeEmailChange, "short", "u2", "u2@example.com", newAddress)
	short.ExpiresAt = at(time.Minute)
	mustCreateCode(t, s, short, "an email change code of an existing user")
	if _, err := s.DeleteUser(ctx, "u1"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteExpired(ctx, at(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		kind store.CodeKind
		name string
	}{{store.CodeEmailChange, "change"}, {store.CodeEmailRevert, "undo"}, {store.CodeEmailChange, "short"}} {
		_, err := s.Code(ctx, c.kind, token(c.name), base)
		wantErr(t, err, store.ErrNotFound, "DeleteUser and DeleteExpired: the codes of a deleted user, and expired ones, then Code")
	}
}
