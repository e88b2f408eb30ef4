package storetest

import (
	"testing"
	"time"

	"github.com/latchkit/auth/store"
)

var codeTests = []test{
	{"KindsApart", testCodeKindsApart},
	{"HashUniqueAcrossKinds", testCodeHashUniqueAcrossKinds},
	{"BoundToLoginsUser", testCodeBoundToLoginsUser},
}

// testCodeKindsApart: a code is found, and used, only as its own kind, so
// that a verification link never resets a password and a reset link
// never verifies an email.
func testCodeKindsApart(t *testing.T, s store.Store) {
	ctx := t.Context()
	u := mustCreateUser(t, s, "u1")
	mustCreateResetToken(t, s, newResetToken("reset", "u1", base, at(time.Hour)))
	mustCreateVerificationToken(t, s, newVerificationToken("verify", "u1", u.Email, base, at(time.Hour)))
	now := at(time.Minute)

	_, err := s.Code(ctx, store.CodeVerification, token("reset"), now)
	wantErr(t, err, store.ErrNotFound, "Code: a reset code asked for as a verification code must return ErrNotFound")
	_, err = s.Code(ctx, store.CodeReset, token("verify"), now)
	wantErr(t, err, store.ErrNotFound, "Code: a verification code asked for as a reset code must return ErrNotFound")
	_, _, err = s.ResetPassword(ctx, token("verify"), phc("new"), now)
	wantErr(t, err, store.ErrNotFound, "ResetPassword: a verification code must return ErrNotFound")
	_, err = s.VerifyEmail(ctx, token("reset"), now)
	wantErr(t, err, store.ErrNotFound, "VerifyEmail: a reset code must return ErrNotFound")
	wantUser(t, s, u, "ResetPassword and VerifyEmail: a code of the other kind must change nothing")

	// Each still works as its own kind.
	mustVerifyEmail(t, s, "verify", now, verified(u.Login), "a verification code that a reset refused")
	mustResetPassword(t, s, "reset", now, afterReset(u, phc("new")), nil, "a reset code that a verification refused")
}

// testCodeHashUniqueAcrossKinds: a hash names one code, whatever its kind.
func testCodeHashUniqueAcrossKinds(t *testing.T, s store.Store) {
	ctx := t.Context()
	u := mustCreateUser(t, s, "u1")
	mustCreateResetToken(t, s, newResetToken("one", "u1", base, at(time.Hour)))
	err := s.CreateCode(ctx, newVerificationToken("one", "u1", u.Email, base, at(time.Hour)))
	wantErr(t, err, store.ErrConflict, "CreateCode: a verification code with a reset code's hash must return ErrConflict")
	mustCreateVerificationToken(t, s, newVerificationToken("two", "u1", u.Email, base, at(time.Hour)))
	err = s.CreateCode(ctx, newResetToken("two", "u1", base, at(time.Hour)))
	wantErr(t, err, store.ErrConflict, "CreateCode: a reset code with a verification code's hash must return ErrConflict")
	if c, err := s.Code(ctx, store.CodeReset, token("one"), at(time.Minute)); err != nil || c.Kind != store.CodeReset {
		t.Errorf("Code: the reset code must stay as it was after a conflicting one; got %+v, %v", c, err)
	}
	if c, err := s.Code(ctx, store.CodeVerification, token("two"), at(time.Minute)); err != nil || c.LoginID != "u1" {
		t.Errorf("Code: the verification code must stay as it was after a conflicting one; got %+v, %v", c, err)
	}
}

// testCodeBoundToLoginsUser: a code bound to a login acts on that login's
// user, which the store fills in, and a code that names another user is
// refused.
func testCodeBoundToLoginsUser(t *testing.T, s store.Store) {
	ctx := t.Context()
	u1 := mustCreateUser(t, s, "u1")
	mustCreateUser(t, s, "u2")
	c := newVerificationToken("verify", "u1", u1.Email, base, at(time.Hour))
	c.UserID = "u2"
	err := s.CreateCode(ctx, c)
	wantErr(t, err, store.ErrNotFound, "CreateCode: a code whose login is not its user's must return ErrNotFound")
	_, err = s.Code(ctx, store.CodeVerification, token("verify"), at(time.Minute))
	wantErr(t, err, store.ErrNotFound, "CreateCode: a refused code must not be written, so Code")

	mustCreateVerificationToken(t, s, newVerificationToken("verify", "u1", u1.Email, base, at(time.Hour)))
	got, err := s.Code(ctx, store.CodeVerification, token("verify"), at(time.Minute))
	if err != nil || got.UserID != "u1" || got.LoginID != "u1" || got.Email != u1.Email || got.Kind != store.CodeVerification {
		t.Errorf("Code: a verification code created without its user must come back with the login's user; got %+v, %v", got, err)
	}
	c = newResetToken("stray", "nobody", base, at(time.Hour))
	c.LoginID, c.Email = "u1", u1.Email
	err = s.CreateCode(ctx, c)
	wantErr(t, err, store.ErrNotFound, "CreateCode: a code naming a user that is not its login's must return ErrNotFound")
}
