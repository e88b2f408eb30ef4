package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/latchkit/auth/store"
)

// Passkeys: a passkey is a login (store.MethodWebAuthn) whose Material the
// store keeps as written and changes only in UseCeremony, and its
// ceremonies and recovery links are codes (store.CodePasskeyOptions,
// store.CodePasskeyRecovery) with kind-specific Data, used once with
// UseCeremony.
//
// Nil is what a store keeps for no material and no data, and returns as
// nil; an empty slice may come back nil or empty. The suite writes
// readable bytes and compares them with bytes.Equal.
var passkeyTests = []test{
	{"MaterialKept", testPasskeyMaterialKept},
	{"MaterialLinkLogin", testPasskeyMaterialLinkLogin},
	{"MaterialSignInUp", testPasskeyMaterialSignInUp},
	{"MaterialThroughEmailMethods", testPasskeyMaterialThroughEmailMethods},
	{"MaterialNilAndEmpty", testPasskeyMaterialNilAndEmpty},
	{"MaterialNotAliased", testPasskeyMaterialNotAliased},
	{"CodeData", testPasskeyCodeData},
	{"OptionsWithoutUser", testPasskeyOptionsWithoutUser},
	{"OptionsUnknownUser", testPasskeyOptionsUnknownUser},
	{"RecoveryNeedsUser", testPasskeyRecoveryNeedsUser},
	{"HashUniqueAcrossKinds", testPasskeyHashUniqueAcrossKinds},
	{"UseCeremony", testUseCeremony},
	{"UseCeremonyExpired", testUseCeremonyExpired},
	{"UseCeremonyWrongKind", testUseCeremonyWrongKind},
	{"UseRecoveryVoidsAddress", testUseRecoveryVoidsAddress},
	{"UseCeremonyUpdate", testUseCeremonyUpdate},
	{"UseCeremonyUpdateFromNil", testUseCeremonyUpdateFromNil},
	{"UseCeremonyConflict", testUseCeremonyConflict},
	{"UseCeremonyUnknownLogin", testUseCeremonyUnknownLogin},
	{"DeleteExpired", testPasskeyDeleteExpired},
	{"DeleteUser", testPasskeyDeleteUser},
	{"DeleteLogin", testPasskeyDeleteLogin},
	{"ConcurrentSameCode", testConcurrentUseCeremonySameCode},
	{"ConcurrentSameLogin", testConcurrentUseCeremonySameLogin},
}

// rp is the relying party of the suite's passkeys.
const rp = "example.com"

// passkey is the passkey login called cred (its credential id) of userID,
// with id and email and material. A passkey does not prove its email.
func passkey(id, userID, cred, email string, material []byte) store.Login {
	return store.Login{
		LoginKey:  store.WebAuthnKey(rp, cred),
		ID:        id,
		UserID:    userID,
		Email:     email,
		Material:  material,
		CreatedAt: base,
	}
}

// passkeyUser is user id whose first login is the passkey called cred,
// with the email id@example.com.
func passkeyUser(id, cred string, material []byte) user {
	return user{User: store.User{ID: id, TimeJoined: base}, Login: passkey(id, id, cred, id+"@example.com", material)}
}

// mustCreatePasskeyUser creates passkeyUser(id, cred, material).
func mustCreatePasskeyUser(t *testing.T, s store.Store, id, cred string, material []byte) user {
	t.Helper()
	u := passkeyUser(id, cred, material)
	if err := u.create(t.Context(), s); err != nil {
		t.Fatalf("CreateUser: a user whose first login is a new passkey must be added; got error %v", err)
	}
	return u
}

// newOptions is the ceremony called name (its hash is token(name)) for
// userID and email, either of which may be empty, with its state data,
// issued at created and working until expires.
func newOptions(name, userID, email string, data []byte, created, expires time.Time) store.Code {
	return store.Code{
		Hash:      token(name),
		Kind:      store.CodePasskeyOptions,
		UserID:    userID,
		Email:     email,
		Data:      data,
		CreatedAt: created,
		ExpiresAt: expires,
	}
}

// newRecovery is the recovery link called name of userID, mailed to email,
// issued at created and working until expires.
func newRecovery(name, userID, email string, created, expires time.Time) store.Code {
	return store.Code{
		Hash:      token(name),
		Kind:      store.CodePasskeyRecovery,
		UserID:    userID,
		Email:     email,
		CreatedAt: created,
		ExpiresAt: expires,
	}
}

// state is the suite's stand-in for a ceremony's state.
func state(name string) []byte { return []byte("challenge and all of " + name) }

// counter is the suite's stand-in for a passkey's material at a sign
// count.
func counter(cred string, n int) []byte { return fmt.Appendf(nil, "key of %s, count %d", cred, n) }

// passkeyCodeDiff is codeDiff with Data.
func passkeyCodeDiff(got, want store.Code) string {
	var d diff
	if cd := codeDiff(got, want); cd != "" {
		d = append(d, cd)
	}
	d.bytes("Data", got.Data, want.Data)
	return d.String()
}

// wantPasskeyCode checks that Code finds want, Data included, at now.
func wantPasskeyCode(t *testing.T, s store.Store, want store.Code, now time.Time, rule string) {
	t.Helper()
	got, err := s.Code(t.Context(), want.Kind, want.Hash, now)
	if err != nil {
		t.Errorf("%s: Code(%s) failed: %v", rule, want.Kind, err)
	} else if d := passkeyCodeDiff(got, want); d != "" {
		t.Errorf("%s: Code(%s): %s", rule, want.Kind, d)
	}
}

// mustUseCeremony uses the code c with update, which the contract says
// succeeds, explained by rule, and checks that the store returns c as it
// was and holds it no more.
func mustUseCeremony(t *testing.T, s store.Store, c store.Code, now time.Time, update *store.MaterialUpdate, rule string) {
	t.Helper()
	got, err := s.UseCeremony(t.Context(), c.Kind, c.Hash, now, update)
	if err != nil {
		t.Fatalf("UseCeremony: %s must succeed; got error %v", rule, err)
	}
	if d := passkeyCodeDiff(got, c); d != "" {
		t.Errorf("UseCeremony: a successful use must return the code as it was: %s", d)
	}
	_, err = s.Code(t.Context(), c.Kind, c.Hash, now)
	wantErr(t, err, store.ErrNotFound, "UseCeremony: a successful use must delete the code, so Code")
}

// wantUseCeremonyErr uses the code of kind and hash with update and reports
// a failure of rule unless it fails with target.
func wantUseCeremonyErr(t *testing.T, s store.Store, kind store.CodeKind, hash store.TokenHash, now time.Time,
	update *store.MaterialUpdate, target error, rule string) {
	t.Helper()
	_, err := s.UseCeremony(t.Context(), kind, hash, now, update)
	wantErr(t, err, target, "UseCeremony: "+rule)
}

// wantMaterial checks that the login with key k has the material want.
func wantMaterial(t *testing.T, s store.Store, k store.LoginKey, want []byte, rule string) {
	t.Helper()
	l, err := s.Login(t.Context(), k)
	if err != nil {
		t.Errorf("%s: Login(%+v) failed: %v", rule, k, err)
		return
	}
	var d diff
	d.bytes("Material", l.Material, want)
	if len(d) > 0 {
		t.Errorf("%s: Login(%+v): %s", rule, k, d)
	}
}

// wantPasskeyLoginsByEmail checks that LoginsByEmail finds want among the
// logins of its email, as it is.
func wantPasskeyLoginsByEmail(t *testing.T, s store.Store, want store.Login, rule string) {
	t.Helper()
	logins, err := s.LoginsByEmail(t.Context(), want.Email)
	if err != nil {
		t.Errorf("%s: LoginsByEmail(%q) failed: %v", rule, want.Email, err)
		return
	}
	for _, l := range logins {
		if l.LoginKey == want.LoginKey {
			if d := loginDiff(l, want); d != "" {
				t.Errorf("%s: LoginsByEmail(%q): %s", rule, want.Email, d)
			}
			return
		}
	}
	t.Errorf("%s: LoginsByEmail(%q) = %+v, without %+v", rule, want.Email, logins, want.LoginKey)
}

// testPasskeyMaterialKept: a passkey's material, written with its user,
// comes back from every read of the login.
func testPasskeyMaterialKept(t *testing.T, s store.Store) {
	u := mustCreatePasskeyUser(t, s, "u1", "cred-1", counter("cred-1", 0))
	wantUser(t, s, u, "CreateUser: must keep the first login's Material as written")
	wantPasskeyLoginsByEmail(t, s, u.Login, "CreateUser: must keep the first login's Material as written")

	// Other users' logins, with no material, are not given any.
	v := mustCreateUser(t, s, "u2")
	wantUser(t, s, v, "CreateUser: a login written with no Material must have none")
}

// testPasskeyMaterialLinkLogin: a passkey linked to a user keeps its
// material, beside the user's other logins.
func testPasskeyMaterialLinkLogin(t *testing.T, s store.Store) {
	u := mustCreateOwner(t, s, "u1")
	pk := passkey("pk1", "u1", "cred-1", u.Email, counter("cred-1", 7))
	mustLinkLogin(t, s, pk)
	wantLogin(t, s, pk, "LinkLogin: must keep the login's Material as written")
	wantPasskeyLoginsByEmail(t, s, pk, "LinkLogin: must keep the login's Material as written")
	wantLogin(t, s, u.Login, "LinkLogin: must not give the user's other logins any Material")
}

// testPasskeyMaterialSignInUp: SignInUp writes the material of a login it
// creates, and keeps the stored one when it finds the login.
func testPasskeyMaterialSignInUp(t *testing.T, s store.Store) {
	g := google("u1", "u1@example.com")
	g.Material = []byte("what the provider's login keeps")
	got := mustSignInUp(t, s, g, true, "a new third-party identity with material")
	if d := loginDiff(got, g.Login); d != "" {
		t.Errorf("SignInUp: a sign-up must return the login as written, Material included: %s", d)
	}
	wantUser(t, s, g, "SignInUp: a sign-up must keep the login's Material as written")

	again := g
	again.Material = []byte("other material")
	got = mustSignInUp(t, s, again, false, "a known third-party identity")
	if d := loginDiff(got, g.Login); d != "" {
		t.Errorf("SignInUp: signing in must return the login with the Material it has, which only UseCeremony changes: %s", d)
	}
	wantLogin(t, s, g.Login, "SignInUp: signing in must not change the login's Material")

	again.Material = nil
	mustSignInUp(t, s, again, false, "a known third-party identity")
	wantLogin(t, s, g.Login, "SignInUp: signing in without Material must not clear the login's")
}

// testPasskeyMaterialThroughEmailMethods: the methods that change a
// login's email state return its material and leave it as it is.
func testPasskeyMaterialThroughEmailMethods(t *testing.T, s store.Store) {
	ctx := t.Context()
	u := mustCreatePasskeyUser(t, s, "u1", "cred-1", counter("cred-1", 3))
	want := u.Login

	mustCreateVerificationToken(t, s, newVerificationToken("verify", "u1", want.Email, base, at(time.Hour)))
	want = verified(want)
	mustVerifyEmail(t, s, "verify", at(time.Minute), want, "a verification token of a passkey")

	got, err := s.SetEmailVerified(ctx, "u1", true)
	want = proven(want)
	if wantErr(t, err, nil, "SetEmailVerified: an existing login") {
		if d := loginDiff(got, want); d != "" {
			t.Errorf("SetEmailVerified: must return the login as updated, with its Material: %s", d)
		}
	}
	got, err = s.ClaimEmail(ctx, "u1")
	want.OwnsEmail = true
	if wantErr(t, err, nil, "ClaimEmail: a proven login whose email nobody owns") {
		if d := loginDiff(got, want); d != "" {
			t.Errorf("ClaimEmail: must return the login as updated, with its Material: %s", d)
		}
	}
	wantLogin(t, s, want, "VerifyEmail, SetEmailVerified and ClaimEmail: must not change a login's Material")

	got, err = s.SetEmailVerified(ctx, "u1", false)
	want.EmailVerified, want.EmailProven, want.OwnsEmail = false, false, false
	if wantErr(t, err, nil, "SetEmailVerified: an existing login") {
		if d := loginDiff(got, want); d != "" {
			t.Errorf("SetEmailVerified: must return the login as updated, with its Material: %s", d)
		}
	}
	wantLogin(t, s, want, "SetEmailVerified: must not change a login's Material")
}

// testPasskeyMaterialNilAndEmpty: no material is kept as nil and comes back
// nil; empty material comes back empty.
func testPasskeyMaterialNilAndEmpty(t *testing.T, s store.Store) {
	ctx := t.Context()
	u := mustCreatePasskeyUser(t, s, "u1", "cred-1", nil)
	wantUser(t, s, u, "CreateUser: a login written with nil Material must come back with nil")
	empty := mustCreatePasskeyUser(t, s, "u2", "cred-2", []byte{})
	if l, err := s.Login(ctx, empty.LoginKey); err != nil || len(l.Material) != 0 {
		t.Errorf("CreateUser: a login written with empty Material must come back with none; got %+v, %v", l, err)
	}
	// And a ceremony's data likewise.
	mustCreateCode(t, s, newOptions("nil", "", "", nil, base, at(time.Hour)), "a ceremony with no data")
	wantPasskeyCode(t, s, newOptions("nil", "", "", nil, base, at(time.Hour)), at(time.Minute),
		"CreateCode: a code written with nil Data must come back with nil")
	mustCreateResetToken(t, s, newResetToken("reset", "u1", base, at(time.Hour)))
	wantPasskeyCode(t, s, newResetToken("reset", "u1", base, at(time.Hour)), at(time.Minute),
		"CreateCode: a reset code has no Data")
}

// testPasskeyMaterialNotAliased: the store keeps its own copy of what it
// is given and gives out copies.
func testPasskeyMaterialNotAliased(t *testing.T, s store.Store) {
	ctx := t.Context()
	material, data := counter("cred-1", 1), state("o1")
	u := passkeyUser("u1", "cred-1", material)
	want := u.Login
	want.Material = bytes.Clone(material)
	if err := u.create(ctx, s); err != nil {
		t.Fatalf("CreateUser: %v", err)
	}
	c := newOptions("o1", "u1", "", data, base, at(time.Hour))
	wantC := c
	wantC.Data = bytes.Clone(data)
	mustCreateCode(t, s, c, "a ceremony of an existing user")
	// The caller reuses its buffers.
	clear(material)
	clear(data)
	wantLogin(t, s, want, "CreateUser: must keep its own copy of Material")
	wantPasskeyCode(t, s, wantC, at(time.Minute), "CreateCode: must keep its own copy of Data")

	if l, err := s.Login(ctx, want.LoginKey); err == nil {
		clear(l.Material)
	}
	if got, err := s.Code(ctx, c.Kind, c.Hash, at(time.Minute)); err == nil {
		clear(got.Data)
	}
	wantLogin(t, s, want, "Login: must return a copy of Material that the caller may modify")
	wantPasskeyCode(t, s, wantC, at(time.Minute), "Code: must return a copy of Data that the caller may modify")

	next := counter("cred-1", 2)
	update := &store.MaterialUpdate{LoginID: "u1", Old: bytes.Clone(want.Material), New: next}
	mustUseCeremony(t, s, wantC, at(time.Minute), update, "a live ceremony with the login's material")
	want.Material = bytes.Clone(next)
	clear(next)
	wantLogin(t, s, want, "UseCeremony: must keep its own copy of the new Material")
}

// testPasskeyCodeData: a code's Data comes back as it was written, from
// Code and from UseCeremony.
func testPasskeyCodeData(t *testing.T, s store.Store) {
	u := mustCreatePasskeyUser(t, s, "u1", "cred-1", counter("cred-1", 0))
	o := newOptions("o1", "u1", u.Email, state("o1"), base, at(time.Hour))
	mustCreateCode(t, s, o, "a ceremony of an existing user")
	r := newRecovery("r1", "u1", u.Email, base, at(time.Hour))
	r.Data = []byte("what a recovery link keeps")
	mustCreateCode(t, s, r, "a recovery link of an existing user")
	wantPasskeyCode(t, s, o, at(time.Minute), "CreateCode: must keep a ceremony's Data as written")
	wantPasskeyCode(t, s, r, at(time.Minute), "CreateCode: must keep a recovery link's Data as written")
	mustUseCeremony(t, s, o, at(time.Minute), nil, "a live ceremony")
	mustUseCeremony(t, s, r, at(time.Minute), nil, "a live recovery link")
}

// testPasskeyOptionsWithoutUser: a sign-in's ceremony has no user, and a
// registration's may have only an email; both are kept as written.
func testPasskeyOptionsWithoutUser(t *testing.T, s store.Store) {
	signIn := newOptions("sign-in", "", "", state("sign-in"), base, at(time.Hour))
	signUp := newOptions("sign-up", "", ada, state("sign-up"), base, at(time.Hour))
	mustCreateCode(t, s, signIn, "a ceremony with no user and no email")
	mustCreateCode(t, s, signUp, "a ceremony with an email and no user")
	wantPasskeyCode(t, s, signIn, at(time.Minute), "CreateCode: a ceremony with no user")
	wantPasskeyCode(t, s, signUp, at(time.Minute), "CreateCode: a ceremony with an email and no user")
	mustUseCeremony(t, s, signIn, at(time.Minute), nil, "a sign-in's ceremony")
	mustUseCeremony(t, s, signUp, at(time.Minute), nil, "a registration's ceremony")
}

// testPasskeyOptionsUnknownUser: a ceremony that names a user needs it.
func testPasskeyOptionsUnknownUser(t *testing.T, s store.Store) {
	mustCreateUser(t, s, "u1")
	err := s.CreateCode(t.Context(), newOptions("o1", "nobody", "", state("o1"), base, at(time.Hour)))
	wantErr(t, err, store.ErrNotFound, "CreateCode: a ceremony naming an unknown user must return ErrNotFound")
	wantNoCode(t, s, store.CodePasskeyOptions, "o1", at(time.Minute), "CreateCode: a refused ceremony must not be written")
	o := newOptions("o2", "u1", "", state("o2"), base, at(time.Hour))
	mustCreateCode(t, s, o, "a ceremony of an existing user")
	wantPasskeyCode(t, s, o, at(time.Minute), "CreateCode: a ceremony of an existing user")
}

// testPasskeyRecoveryNeedsUser: a recovery link acts on a user, which must
// exist.
func testPasskeyRecoveryNeedsUser(t *testing.T, s store.Store) {
	u := mustCreatePasskeyUser(t, s, "u1", "cred-1", counter("cred-1", 0))
	for _, userID := range []string{"nobody", ""} {
		err := s.CreateCode(t.Context(), newRecovery("r1", userID, u.Email, base, at(time.Hour)))
		wantErr(t, err, store.ErrNotFound, fmt.Sprintf("CreateCode: a recovery link of the unknown user %q must return ErrNotFound", userID))
	}
	wantNoCode(t, s, store.CodePasskeyRecovery, "r1", at(time.Minute), "CreateCode: a refused recovery link must not be written")
	r := newRecovery("r1", "u1", u.Email, base, at(time.Hour))
	mustCreateCode(t, s, r, "a recovery link of an existing user")
	wantPasskeyCode(t, s, r, at(time.Minute), "CreateCode: a recovery link of an existing user")
}

// testPasskeyHashUniqueAcrossKinds: a passkey code's hash names one code,
// whatever its kind.
func testPasskeyHashUniqueAcrossKinds(t *testing.T, s store.Store) {
	ctx := t.Context()
	u := mustCreateUser(t, s, "u1")
	mustCreateResetToken(t, s, newResetToken("one", "u1", base, at(time.Hour)))
	err := s.CreateCode(ctx, newOptions("one", "", "", state("one"), base, at(time.Hour)))
	wantErr(t, err, store.ErrConflict, "CreateCode: a ceremony with a reset code's hash must return ErrConflict")
	err = s.CreateCode(ctx, newRecovery("one", "u1", u.Email, base, at(time.Hour)))
	wantErr(t, err, store.ErrConflict, "CreateCode: a recovery link with a reset code's hash must return ErrConflict")

	o := newOptions("two", "", "", state("two"), base, at(time.Hour))
	mustCreateCode(t, s, o, "a ceremony with a new hash")
	for _, c := range []store.Code{
		newOptions("two", "", "", nil, base, at(time.Hour)),
		newRecovery("two", "u1", u.Email, base, at(time.Hour)),
		newResetToken("two", "u1", base, at(time.Hour)),
		newFlow("two", ada, base, at(time.Hour)),
	} {
		err = s.CreateCode(ctx, c)
		wantErr(t, err, store.ErrConflict, fmt.Sprintf("CreateCode: a %s code with a ceremony's hash must return ErrConflict", c.Kind))
	}
	wantPasskeyCode(t, s, o, at(time.Minute), "CreateCode: a ceremony must stay as it was after conflicting codes")
	wantNoCode(t, s, store.CodePasskeyRecovery, "two", at(time.Minute), "Code: a ceremony asked for as a recovery link")
	wantNoCode(t, s, store.CodePasskeyOptions, "one", at(time.Minute), "Code: a reset code asked for as a ceremony")
}

// testUseCeremony: a live code is used once: UseCeremony returns it as it
// was and deletes it.
func testUseCeremony(t *testing.T, s store.Store) {
	u := mustCreatePasskeyUser(t, s, "u1", "cred-1", counter("cred-1", 0))
	o := newOptions("o1", "u1", u.Email, state("o1"), base, at(time.Hour))
	other := newOptions("o2", "u1", u.Email, state("o2"), base, at(time.Hour))
	mustCreateCode(t, s, o, "a ceremony of an existing user")
	mustCreateCode(t, s, other, "a ceremony of an existing user")

	now := at(time.Hour - time.Millisecond)
	mustUseCeremony(t, s, o, now, nil, "a ceremony used before it expires")
	wantUseCeremonyErr(t, s, o.Kind, o.Hash, now, nil, store.ErrNotFound, "a ceremony used a second time must return ErrNotFound")
	wantPasskeyCode(t, s, other, now, "UseCeremony: using a ceremony must leave the others")
	wantUser(t, s, u, "UseCeremony: without an update must change no login")
	wantUseCeremonyErr(t, s, store.CodePasskeyOptions, token("unknown"), now, nil, store.ErrNotFound,
		"an unknown ceremony must return ErrNotFound")
}

// testUseCeremonyExpired: a code at or past its expiry is not found, and
// using it changes nothing.
func testUseCeremonyExpired(t *testing.T, s store.Store) {
	u := mustCreatePasskeyUser(t, s, "u1", "cred-1", counter("cred-1", 0))
	o := newOptions("o1", "u1", "", state("o1"), base, at(time.Hour))
	r := newRecovery("r1", "u1", u.Email, base, at(time.Hour))
	mustCreateCode(t, s, o, "a ceremony of an existing user")
	mustCreateCode(t, s, r, "a recovery link of an existing user")
	update := &store.MaterialUpdate{LoginID: "u1", Old: counter("cred-1", 0), New: counter("cred-1", 1)}
	for _, c := range []store.Code{o, r} {
		for _, now := range []time.Time{at(time.Hour), at(2 * time.Hour)} {
			wantUseCeremonyErr(t, s, c.Kind, c.Hash, now, update, store.ErrNotFound,
				fmt.Sprintf("a %s code used at or after its expiry must return ErrNotFound", c.Kind))
		}
		wantPasskeyCode(t, s, c, at(time.Minute), "UseCeremony: an expired code must not be deleted by the refusal, so Code before its expiry")
	}
	wantLogin(t, s, u.Login, "UseCeremony: an expired code must not change the login's Material")
}

// testUseCeremonyWrongKind: a code is used only as its own kind, and only
// the passkey kinds are used with UseCeremony.
func testUseCeremonyWrongKind(t *testing.T, s store.Store) {
	u := mustCreatePasskeyUser(t, s, "u1", "cred-1", counter("cred-1", 0))
	o := newOptions("o1", "u1", u.Email, state("o1"), base, at(time.Hour))
	r := newRecovery("r1", "u1", u.Email, base, at(time.Hour))
	rt := newResetToken("reset", "u1", base, at(time.Hour))
	mustCreateCode(t, s, o, "a ceremony of an existing user")
	mustCreateCode(t, s, r, "a recovery link of an existing user")
	mustCreateResetToken(t, s, rt)
	mustCreateCode(t, s, newFlow("flow", ada, base, at(time.Hour)), "a passwordless flow")

	now := at(time.Minute)
	update := &store.MaterialUpdate{LoginID: "u1", Old: counter("cred-1", 0), New: counter("cred-1", 1)}
	wantUseCeremonyErr(t, s, store.CodePasskeyRecovery, o.Hash, now, update, store.ErrNotFound,
		"a ceremony used as a recovery link must return ErrNotFound")
	wantUseCeremonyErr(t, s, store.CodePasskeyOptions, r.Hash, now, update, store.ErrNotFound,
		"a recovery link used as a ceremony must return ErrNotFound")
	for _, kind := range []store.CodeKind{store.CodeReset, store.CodePasskeyOptions} {
		wantUseCeremonyErr(t, s, kind, rt.Hash, now, update, store.ErrNotFound,
			fmt.Sprintf("a reset code used as a %s code must return ErrNotFound", kind))
	}
	wantUseCeremonyErr(t, s, store.CodePasswordlessFlow, token("flow"), now, update, store.ErrNotFound,
		"a passwordless flow must return ErrNotFound")

	rule := "UseCeremony: a code of another kind must change nothing"
	wantPasskeyCode(t, s, o, now, rule)
	wantPasskeyCode(t, s, r, now, rule)
	wantCode(t, s, rt, now, rule)
	wantCode(t, s, newFlow("flow", ada, base, at(time.Hour)), now, rule)
	wantLogin(t, s, u.Login, rule)
}

// testUseRecoveryVoidsAddress: a recovery link works once and voids every
// other recovery link mailed to its address, whoever's, and nothing else.
func testUseRecoveryVoidsAddress(t *testing.T, s store.Store) {
	u1 := mustCreatePasskeyUser(t, s, "u1", "cred-1", counter("cred-1", 0))
	mustCreatePasskeyUser(t, s, "u2", "cred-2", counter("cred-2", 0))
	mustCreatePasskeyUser(t, s, "u3", "cred-3", counter("cred-3", 0))
	r1 := newRecovery("r1", "u1", ada, base, at(time.Hour))
	r2 := newRecovery("r2", "u1", ada, at(time.Minute), at(2*time.Hour))
	// The address a link is mailed to is what it is for: a link of
	// another user to the same address goes too.
	r3 := newRecovery("r3", "u2", ada, base, at(time.Hour))
	bobs := newRecovery("bob", "u1", bob, base, at(time.Hour))
	theirs := newRecovery("theirs", "u3", "u3@example.com", base, at(time.Hour))
	o := newOptions("o1", "u1", ada, state("o1"), base, at(time.Hour))
	for _, c := range []store.Code{r1, r2, r3, bobs, theirs, o} {
		mustCreateCode(t, s, c, "a passkey code of an existing user")
	}

	now := at(2 * time.Minute)
	mustUseCeremony(t, s, r2, now, nil, "a live recovery link")
	for _, c := range []store.Code{r1, r3} {
		_, err := s.Code(t.Context(), c.Kind, c.Hash, now)
		wantErr(t, err, store.ErrNotFound, "UseCeremony: using a recovery link must delete every recovery link with its Email, so Code")
		wantUseCeremonyErr(t, s, c.Kind, c.Hash, now, nil, store.ErrNotFound,
			"a recovery link voided by another's use must return ErrNotFound")
	}
	rule := "UseCeremony: using a recovery link must leave the recovery links of other addresses and the ceremonies"
	wantPasskeyCode(t, s, bobs, now, rule)
	wantPasskeyCode(t, s, theirs, now, rule)
	wantPasskeyCode(t, s, o, now, rule)
	wantLogin(t, s, u1.Login, "UseCeremony: a recovery link used without an update must change no login")
}

// testUseCeremonyUpdate: with an update whose Old is the login's material,
// UseCeremony sets it to New in the step that uses the code.
func testUseCeremonyUpdate(t *testing.T, s store.Store) {
	u := mustCreatePasskeyUser(t, s, "u1", "cred-1", counter("cred-1", 4))
	pk2 := passkey("pk2", "u1", "cred-2", u.Email, counter("cred-2", 9))
	if _, err := s.SetEmailVerified(t.Context(), "u1", true); err != nil {
		t.Fatalf("SetEmailVerified: %v", err)
	}
	if _, err := s.ClaimEmail(t.Context(), "u1"); err != nil {
		t.Fatalf("ClaimEmail: %v", err)
	}
	mustLinkLogin(t, s, pk2)
	o := newOptions("o1", "", "", state("o1"), base, at(time.Hour))
	mustCreateCode(t, s, o, "a sign-in's ceremony")

	now := at(time.Minute)
	mustUseCeremony(t, s, o, now, &store.MaterialUpdate{LoginID: "u1", Old: counter("cred-1", 4), New: counter("cred-1", 5)},
		"a live ceremony with the login's material")
	want := proven(u.Login)
	want.OwnsEmail = true
	want.Material = counter("cred-1", 5)
	wantLogin(t, s, want, "UseCeremony: an update whose Old is the login's Material must set it to New, and change nothing else")
	wantLogin(t, s, pk2, "UseCeremony: an update must change only the login it names")

	// A recovery link may carry an update too.
	r := newRecovery("r1", "u1", u.Email, base, at(time.Hour))
	mustCreateCode(t, s, r, "a recovery link of an existing user")
	mustUseCeremony(t, s, r, now, &store.MaterialUpdate{LoginID: "pk2", Old: counter("cred-2", 9), New: counter("cred-2", 10)},
		"a live recovery link with the login's material")
	wantMaterial(t, s, pk2.LoginKey, counter("cred-2", 10), "UseCeremony: an update with a recovery link must set the Material")
}

// testUseCeremonyUpdateFromNil: a login with no material is swapped from
// nil.
func testUseCeremonyUpdateFromNil(t *testing.T, s store.Store) {
	u := mustCreatePasskeyUser(t, s, "u1", "cred-1", nil)
	o := newOptions("o1", "u1", "", state("o1"), base, at(time.Hour))
	mustCreateCode(t, s, o, "a ceremony of an existing user")
	now := at(time.Minute)
	wantUseCeremonyErr(t, s, o.Kind, o.Hash, now, &store.MaterialUpdate{LoginID: "u1", Old: counter("cred-1", 0), New: counter("cred-1", 1)},
		store.ErrConflict, "an update whose Old is material, of a login with none, must return ErrConflict")
	wantMaterial(t, s, u.LoginKey, nil, "UseCeremony: a refused update must leave the login with no Material")
	mustUseCeremony(t, s, o, now, &store.MaterialUpdate{LoginID: "u1", Old: nil, New: counter("cred-1", 1)},
		"a live ceremony with an update from no material")
	wantMaterial(t, s, u.LoginKey, counter("cred-1", 1), "UseCeremony: an update from nil must set the Material")
}

// testUseCeremonyConflict: with an update whose Old is not the login's
// material, UseCeremony returns ErrConflict and changes nothing: the code
// stays, and so does the material.
func testUseCeremonyConflict(t *testing.T, s store.Store) {
	u := mustCreatePasskeyUser(t, s, "u1", "cred-1", counter("cred-1", 4))
	o := newOptions("o1", "u1", "", state("o1"), base, at(time.Hour))
	r := newRecovery("r1", "u1", u.Email, base, at(time.Hour))
	r2 := newRecovery("r2", "u1", u.Email, base, at(time.Hour))
	for _, c := range []store.Code{o, r, r2} {
		mustCreateCode(t, s, c, "a passkey code of an existing user")
	}
	now := at(time.Minute)
	stale := &store.MaterialUpdate{LoginID: "u1", Old: counter("cred-1", 3), New: counter("cred-1", 4)}
	for _, c := range []store.Code{o, r} {
		wantUseCeremonyErr(t, s, c.Kind, c.Hash, now, stale, store.ErrConflict,
			fmt.Sprintf("a %s code with an update whose Old is not the login's Material must return ErrConflict", c.Kind))
	}
	wantUseCeremonyErr(t, s, o.Kind, o.Hash, now, &store.MaterialUpdate{LoginID: "u1", New: counter("cred-1", 5)}, store.ErrConflict,
		"an update whose Old is nil, of a login with Material, must return ErrConflict")
	rule := "UseCeremony: a refused update must change nothing"
	for _, c := range []store.Code{o, r, r2} {
		wantPasskeyCode(t, s, c, now, rule+": the codes must stay")
	}
	wantLogin(t, s, u.Login, rule+": the Material must stay")

	// The ceremony still works, once, with the material as it is.
	mustUseCeremony(t, s, o, now, &store.MaterialUpdate{LoginID: "u1", Old: counter("cred-1", 4), New: counter("cred-1", 5)},
		"a ceremony whose update was refused, used with the login's material")
	wantMaterial(t, s, u.LoginKey, counter("cred-1", 5), "UseCeremony: an update whose Old is the login's Material must set it")
}

// testUseCeremonyUnknownLogin: an update of a login that does not exist
// returns ErrNotFound and changes nothing.
func testUseCeremonyUnknownLogin(t *testing.T, s store.Store) {
	u := mustCreatePasskeyUser(t, s, "u1", "cred-1", counter("cred-1", 0))
	o := newOptions("o1", "", "", state("o1"), base, at(time.Hour))
	r := newRecovery("r1", "u1", u.Email, base, at(time.Hour))
	mustCreateCode(t, s, o, "a sign-in's ceremony")
	mustCreateCode(t, s, r, "a recovery link of an existing user")
	now := at(time.Minute)
	for _, c := range []store.Code{o, r} {
		wantUseCeremonyErr(t, s, c.Kind, c.Hash, now, &store.MaterialUpdate{LoginID: "nobody", New: counter("x", 1)}, store.ErrNotFound,
			fmt.Sprintf("a %s code with an update of an unknown login must return ErrNotFound", c.Kind))
		wantPasskeyCode(t, s, c, now, "UseCeremony: an update of an unknown login must not delete the code")
	}
	wantLogin(t, s, u.Login, "UseCeremony: an update of an unknown login must change no login")
}

// testPasskeyDeleteExpired: DeleteExpired removes ceremonies and recovery
// links that have expired, freeing their hashes, and keeps live ones.
func testPasskeyDeleteExpired(t *testing.T, s store.Store) {
	ctx := t.Context()
	u := mustCreatePasskeyUser(t, s, "u1", "cred-1", counter("cred-1", 0))
	gone := []store.Code{
		newOptions("o/anon", "", "", state("o/anon"), base, at(time.Hour)),
		newOptions("o/u1", "u1", u.Email, state("o/u1"), base, at(time.Hour)),
		newRecovery("r/u1", "u1", u.Email, base, at(time.Hour)),
	}
	kept := []store.Code{
		newOptions("o/live", "", "", state("o/live"), base, at(3*time.Hour)),
		newRecovery("r/live", "u1", u.Email, base, at(3*time.Hour)),
	}
	for _, c := range append(gone, kept...) {
		mustCreateCode(t, s, c, "a passkey code")
	}
	if err := s.DeleteExpired(ctx, at(time.Hour)); err != nil {
		t.Fatalf("DeleteExpired: must succeed; got error %v", err)
	}
	earlier := at(time.Minute)
	for _, c := range gone {
		_, err := s.Code(ctx, c.Kind, c.Hash, earlier)
		wantErr(t, err, store.ErrNotFound, fmt.Sprintf("DeleteExpired: must remove a %s code whose ExpiresAt is now, so Code before its expiry", c.Kind))
	}
	for _, c := range kept {
		wantPasskeyCode(t, s, c, earlier, "DeleteExpired: must keep live passkey codes")
	}
	wantLogin(t, s, u.Login, "DeleteExpired: must not change logins")
	for _, c := range gone {
		c.CreatedAt, c.ExpiresAt = at(time.Hour), at(2*time.Hour)
		err := s.CreateCode(ctx, c)
		wantErr(t, err, nil, fmt.Sprintf("DeleteExpired: must remove an expired %s code, freeing its hash", c.Kind))
	}
}

// testPasskeyDeleteUser: deleting a user removes its passkeys, ceremonies
// and recovery links, and no one else's.
func testPasskeyDeleteUser(t *testing.T, s store.Store) {
	ctx := t.Context()
	u := mustCreatePasskeyUser(t, s, "u1", "cred-1", counter("cred-1", 0))
	v := mustCreatePasskeyUser(t, s, "u2", "cred-2", counter("cred-2", 0))
	mine := []store.Code{
		newOptions("o/u1", "u1", "", state("o/u1"), base, at(time.Hour)),
		newRecovery("r/u1", "u1", u.Email, base, at(time.Hour)),
	}
	others := []store.Code{
		newOptions("o/u2", "u2", "", state("o/u2"), base, at(time.Hour)),
		newRecovery("r/u2", "u2", v.Email, base, at(time.Hour)),
		// A registration for the address, before the user it is for.
		newOptions("o/anon", "", u.Email, state("o/anon"), base, at(time.Hour)),
	}
	for _, c := range append(mine, others...) {
		mustCreateCode(t, s, c, "a passkey code")
	}
	if _, err := s.DeleteUser(ctx, "u1"); err != nil {
		t.Fatalf("DeleteUser: an existing user must be removed; got error %v", err)
	}
	now := at(time.Minute)
	_, err := s.Login(ctx, u.LoginKey)
	wantErr(t, err, store.ErrNotFound, "DeleteUser: must remove the user's passkeys, so Login")
	if logins, err := s.LoginsByEmail(ctx, u.Email); err != nil || len(logins) != 0 {
		t.Errorf("DeleteUser: must remove the user's passkeys; LoginsByEmail = %+v, error %v", logins, err)
	}
	for _, c := range mine {
		wantUseCeremonyErr(t, s, c.Kind, c.Hash, now, nil, store.ErrNotFound,
			fmt.Sprintf("DeleteUser must remove the user's %s codes: using one must return ErrNotFound", c.Kind))
	}
	for _, c := range others {
		wantPasskeyCode(t, s, c, now, "DeleteUser: must not remove other users' passkey codes, nor ceremonies of no user")
	}
	wantUser(t, s, v, "DeleteUser: must not change other users' passkeys")

	// The passkey's key and the codes' hashes are free again.
	w := mustCreatePasskeyUser(t, s, "u3", "cred-1", counter("cred-1", 0))
	for _, c := range mine {
		c.UserID = "u3"
		err := s.CreateCode(ctx, c)
		wantErr(t, err, nil, fmt.Sprintf("DeleteUser: must remove the user's %s codes, freeing their hashes", c.Kind))
	}
	wantUser(t, s, w, "CreateUser: a passkey of a deleted user, registered again")
}

// testPasskeyDeleteLogin: removing a passkey leaves the user's others as
// they are.
func testPasskeyDeleteLogin(t *testing.T, s store.Store) {
	ctx := t.Context()
	u := mustCreateOwner(t, s, "u1")
	pk1 := passkey("pk1", "u1", "cred-1", u.Email, counter("cred-1", 1))
	pk2 := passkey("pk2", "u1", "cred-2", u.Email, counter("cred-2", 2))
	mustLinkLogin(t, s, pk1)
	mustLinkLogin(t, s, pk2)
	if _, err := s.DeleteLogin(ctx, "pk1"); err != nil {
		t.Fatalf("DeleteLogin: a login that is not its user's last must be removed; got error %v", err)
	}
	_, err := s.Login(ctx, pk1.LoginKey)
	wantErr(t, err, store.ErrNotFound, "DeleteLogin: the passkey must no longer be found")
	wantLogin(t, s, pk2, "DeleteLogin: must not change the user's other passkeys")
	wantUseCeremonyErr(t, s, store.CodePasskeyOptions, token("none"), at(time.Minute),
		&store.MaterialUpdate{LoginID: "pk1", Old: counter("cred-1", 1), New: counter("cred-1", 2)}, store.ErrNotFound,
		"an update of a deleted passkey must return ErrNotFound")
}

// testConcurrentUseCeremonySameCode uses one code in many concurrent
// calls, a ceremony and a recovery link in turn.
//
// Invariant checked: exactly one call succeeds and returns the code; every
// other comes after it, finds the code gone and returns ErrNotFound.
func testConcurrentUseCeremonySameCode(t *testing.T, s store.Store) {
	const n = passwordlessStormSize
	ctx := t.Context()
	mustCreatePasskeyUser(t, s, "u1", "cred-1", counter("cred-1", 0))
	for round := range stormRounds {
		r := fmt.Sprintf("r%d", round)
		c := newOptions(r+"/o", "u1", "", state(r), base, at(time.Hour))
		if round%2 == 1 {
			c = newRecovery(r+"/r", "u1", r+"@example.com", base, at(time.Hour))
		}
		mustCreateCode(t, s, c, "a passkey code of an existing user")

		now := at(time.Minute)
		got := make([]store.Code, n)
		errs := make([]error, n)
		parallel(n, func(i int) {
			got[i], errs[i] = s.UseCeremony(ctx, c.Kind, c.Hash, now, nil)
		})
		winner := -1
		for i, err := range errs {
			switch {
			case err == nil && winner >= 0:
				t.Errorf("UseCeremony: a code works once, so of concurrent calls with it exactly one must succeed; in round %d calls %d and %d did", round, winner, i)
			case err == nil:
				winner = i
			case !errors.Is(err, store.ErrNotFound):
				t.Errorf("UseCeremony: a concurrent call after another used the code must find it gone and return ErrNotFound; round %d got error %v", round, err)
			}
		}
		if winner < 0 {
			t.Fatalf("UseCeremony: of concurrent calls with a live code exactly one must succeed; in round %d none did", round)
		}
		if d := passkeyCodeDiff(got[winner], c); d != "" {
			t.Errorf("UseCeremony: the call that succeeded must return the code as it was: %s", d)
		}
		_, err := s.Code(ctx, c.Kind, c.Hash, now)
		wantErr(t, err, store.ErrNotFound, "UseCeremony: after concurrent calls with one code, the code must be gone, so Code")
	}
}

// testConcurrentUseCeremonySameLogin uses many ceremonies at once, each
// with an update of one passkey from the same material, as several
// assertions of one passkey racing each other would.
//
// Invariant checked: exactly one call succeeds and its New is the
// passkey's material; every other returns ErrConflict and keeps its
// code.
func testConcurrentUseCeremonySameLogin(t *testing.T, s store.Store) {
	const n = passwordlessStormSize
	ctx := t.Context()
	u := mustCreatePasskeyUser(t, s, "u1", "cred-1", counter("cred-1", 0))
	old := counter("cred-1", 0)
	for round := range stormRounds {
		codes := make([]store.Code, n)
		for i := range codes {
			codes[i] = newOptions(fmt.Sprintf("r%d/o%d", round, i), "", "", state(fmt.Sprint(i)), base, at(time.Hour))
			mustCreateCode(t, s, codes[i], "a sign-in's ceremony")
		}
		next := func(i int) []byte { return fmt.Appendf(nil, "key of cred-1, round %d, call %d", round, i) }

		now := at(time.Minute)
		errs := make([]error, n)
		parallel(n, func(i int) {
			_, errs[i] = s.UseCeremony(ctx, codes[i].Kind, codes[i].Hash, now,
				&store.MaterialUpdate{LoginID: "u1", Old: old, New: next(i)})
		})
		winner := -1
		for i, err := range errs {
			switch {
			case err == nil && winner >= 0:
				t.Errorf("UseCeremony: of concurrent updates from the same material exactly one must succeed; in round %d calls %d and %d did", round, winner, i)
			case err == nil:
				winner = i
			case !errors.Is(err, store.ErrConflict):
				t.Errorf("UseCeremony: a concurrent update after another changed the material must return ErrConflict; round %d got error %v", round, err)
			}
		}
		if winner < 0 {
			t.Fatalf("UseCeremony: of concurrent updates from the login's material exactly one must succeed; in round %d none did", round)
		}
		wantMaterial(t, s, u.LoginKey, next(winner), "UseCeremony: after concurrent updates, the Material must be the one call's that succeeded")
		for i, c := range codes {
			_, err := s.Code(ctx, c.Kind, c.Hash, now)
			if i == winner {
				wantErr(t, err, store.ErrNotFound, "UseCeremony: the call that succeeded must have deleted its code, so Code")
			} else if err != nil {
				t.Errorf("UseCeremony: a call refused with ErrConflict must not delete its code; Code got error %v", err)
			}
		}
		old = next(winner)
	}
}
