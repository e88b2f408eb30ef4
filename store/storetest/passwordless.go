package storetest

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/latchkit/auth/store"
)

var passwordlessTests = []test{
	{"CreateAndRead", testPasswordlessCreateAndRead},
	{"CodeNeedsLiveFlow", testPasswordlessCodeNeedsLiveFlow},
	{"HashUniqueAcrossKinds", testPasswordlessHashUniqueAcrossKinds},
	{"Success", testPasswordlessSuccess},
	{"WrongCodeCounts", testPasswordlessWrongCodeCounts},
	{"MaxAttemptsEndsFlow", testPasswordlessMaxAttempts},
	{"ExpiredCode", testPasswordlessExpiredCode},
	{"CodeOfAnotherFlow", testPasswordlessCodeOfAnotherFlow},
	{"ZeroMaxAttempts", testPasswordlessZeroMaxAttempts},
	{"MissingOrExpiredFlow", testPasswordlessMissingOrExpiredFlow},
	{"DeleteExpired", testPasswordlessDeleteExpired},
	{"UntouchedByUserDeletion", testPasswordlessUntouchedByUserDeletion},
	{"ConcurrentSameCode", testConcurrentPasswordlessSameCode},
	{"ConcurrentSameEmail", testConcurrentPasswordlessSameEmail},
	{"ConcurrentWrongCodesCounted", testConcurrentPasswordlessWrongCodes},
	{"ConcurrentWrongCodesAtMax", testConcurrentPasswordlessWrongCodesAtMax},
	{"ConcurrentRightAndWrong", testConcurrentPasswordlessRightAndWrong},
	{"ConcurrentCreateWhileUsing", testConcurrentPasswordlessCreateWhileUsing},
}

// The addresses the passwordless tests send codes to.
const (
	ada = "ada@example.com"
	bob = "bob@example.com"
)

// newFlow is the passwordless flow called name (its hash is token(name))
// for the email or phone number contact, started at created and live until
// expires.
func newFlow(name, contact string, created, expires time.Time) store.Code {
	return store.Code{
		Hash:      token(name),
		Kind:      store.CodePasswordlessFlow,
		Email:     contact,
		CreatedAt: created,
		ExpiresAt: expires,
	}
}

// newPasswordlessCode is the code called name of the flow called flow,
// sent at created and working until expires. Its Email is left for the
// store to fill in.
func newPasswordlessCode(name, flow string, created, expires time.Time) store.Code {
	return store.Code{
		Hash:      token(name),
		Kind:      store.CodePasswordless,
		Flow:      token(flow),
		CreatedAt: created,
		ExpiresAt: expires,
	}
}

// of is the code c as the store keeps it: with the Email of its flow f.
func of(c, f store.Code) store.Code {
	c.Email = f.Email
	return c
}

// withAttempts is the flow f after n wrong codes.
func withAttempts(f store.Code, n int) store.Code {
	f.Attempts = n
	return f
}

func mustCreateCode(t *testing.T, s store.Store, c store.Code, what string) {
	t.Helper()
	if err := s.CreateCode(t.Context(), c); err != nil {
		t.Fatalf("CreateCode: %s must be added; got error %v", what, err)
	}
}

func codeDiff(got, want store.Code) string {
	var d diff
	d.str("Hash", fmt.Sprintf("%x", got.Hash), fmt.Sprintf("%x", want.Hash))
	d.str("Kind", string(got.Kind), string(want.Kind))
	d.str("Tenant", got.Tenant, want.Tenant)
	d.str("UserID", got.UserID, want.UserID)
	d.str("LoginID", got.LoginID, want.LoginID)
	d.str("Email", got.Email, want.Email)
	d.str("Flow", fmt.Sprintf("%x", got.Flow), fmt.Sprintf("%x", want.Flow))
	if got.Attempts != want.Attempts {
		d = append(d, fmt.Sprintf("Attempts = %d, want %d", got.Attempts, want.Attempts))
	}
	d.time("CreatedAt", got.CreatedAt, want.CreatedAt)
	d.time("ExpiresAt", got.ExpiresAt, want.ExpiresAt)
	return d.String()
}

// wantCode checks that Code finds want, of its kind, at now.
func wantCode(t *testing.T, s store.Store, want store.Code, now time.Time, rule string) {
	t.Helper()
	got, err := s.Code(t.Context(), want.Kind, want.Hash, now)
	if err != nil {
		t.Errorf("%s: Code(%s) failed: %v", rule, want.Kind, err)
	} else if d := codeDiff(got, want); d != "" {
		t.Errorf("%s: Code(%s): %s", rule, want.Kind, d)
	}
}

// wantNoCode checks that Code finds no code of kind called name at now.
func wantNoCode(t *testing.T, s store.Store, kind store.CodeKind, name string, now time.Time, rule string) {
	t.Helper()
	_, err := s.Code(t.Context(), kind, token(name), now)
	wantErr(t, err, store.ErrNotFound, fmt.Sprintf("%s: Code(%s, %q) must return ErrNotFound", rule, kind, name))
}

// mustUsePasswordless spends the code called code on the flow called flow,
// which the contract says succeeds, explained by rule, and checks that the
// store returns want, the flow as it was, and that the flow is gone.
func mustUsePasswordless(t *testing.T, s store.Store, flow, code string, now time.Time, maxAttempts int, want store.Code, rule string) {
	t.Helper()
	got, err := s.UsePasswordlessCode(t.Context(), token(flow), token(code), now, maxAttempts)
	if err != nil {
		t.Fatalf("UsePasswordlessCode: %s must succeed; got error %v", rule, err)
	}
	if d := codeDiff(got, want); d != "" {
		t.Errorf("UsePasswordlessCode: a successful use must return the flow: %s", d)
	}
	wantNoCode(t, s, store.CodePasswordlessFlow, flow, now, "UsePasswordlessCode: a successful use must delete the flow")
	wantNoCode(t, s, store.CodePasswordless, code, now, "UsePasswordlessCode: a successful use must delete the code")
}

// wantUseErr submits the code called code to the flow called flow and
// reports a failure of rule unless it fails with target. For ErrWrongCode
// and ErrCodeExpired it also checks that the store returns want, the flow
// with its Attempts after the step.
func wantUseErr(t *testing.T, s store.Store, flow, code string, now time.Time, maxAttempts int, target error, want store.Code, rule string) {
	t.Helper()
	got, err := s.UsePasswordlessCode(t.Context(), token(flow), token(code), now, maxAttempts)
	if !wantErr(t, err, target, "UsePasswordlessCode: "+rule) || errors.Is(target, store.ErrNotFound) {
		return
	}
	if d := codeDiff(got, want); d != "" {
		t.Errorf("UsePasswordlessCode: %s must return the flow with its Attempts after the step: %s", rule, d)
	}
}

// testPasswordlessCreateAndRead: a flow and its code are found as their
// own kinds; the flow starts with no attempts and the code carries the
// flow's address, whatever the caller gave.
func testPasswordlessCreateAndRead(t *testing.T, s store.Store) {
	f := newFlow("f1", ada, base, at(time.Hour))
	f.Attempts = 3
	mustCreateCode(t, s, f, "a flow with a new hash")
	f.Attempts = 0
	c := newPasswordlessCode("f1/c1", "f1", at(time.Minute), at(10*time.Minute))
	c.Email = bob
	mustCreateCode(t, s, c, "a code of a live flow")
	c = of(c, f)
	phone := newFlow("f2", "+15550100", base, at(time.Hour))
	mustCreateCode(t, s, phone, "a flow for a phone number")
	pc := newPasswordlessCode("f2/c1", "f2", base, at(10*time.Minute))
	mustCreateCode(t, s, pc, "a code of a flow for a phone number")

	now := at(2 * time.Minute)
	wantCode(t, s, f, now, "CreateCode: a flow must be stored with no user and Attempts zero")
	wantCode(t, s, c, now, "CreateCode: a passwordless code must be stored with its flow's Email")
	wantCode(t, s, of(pc, phone), now, "CreateCode: a code of a flow for a phone number must carry the number")
	wantNoCode(t, s, store.CodePasswordless, "f1", now, "Code: a flow asked for as a passwordless code")
	wantNoCode(t, s, store.CodePasswordlessFlow, "f1/c1", now, "Code: a passwordless code asked for as a flow")
	wantNoCode(t, s, store.CodeReset, "f1", now, "Code: a flow asked for as a reset code")
	wantNoCode(t, s, store.CodeVerification, "f1/c1", now, "Code: a passwordless code asked for as a verification code")
	wantNoCode(t, s, store.CodePasswordless, "f1/c1", at(10*time.Minute), "Code: a code whose ExpiresAt is now has expired")
	wantNoCode(t, s, store.CodePasswordlessFlow, "f1", at(time.Hour), "Code: a flow whose ExpiresAt is now has expired")

	// Reading changed nothing.
	mustUsePasswordless(t, s, "f1", "f1/c1", now, 5, f, "a live code of a live flow, only read before,")
}

// testPasswordlessCodeNeedsLiveFlow: a code is added only to a flow that
// is live when the code is issued; a refused code is not written.
func testPasswordlessCodeNeedsLiveFlow(t *testing.T, s store.Store) {
	ctx := t.Context()
	mustCreateUser(t, s, "u1")
	mustCreateResetToken(t, s, newResetToken("reset", "u1", base, at(time.Hour)))
	f := newFlow("f1", ada, base, at(time.Hour))
	mustCreateCode(t, s, f, "a flow with a new hash")
	mustCreateCode(t, s, newPasswordlessCode("f1/c1", "f1", base, at(time.Hour)), "a code of a live flow")

	for _, tc := range []struct {
		code store.Code
		rule string
	}{
		{newPasswordlessCode("c-nowhere", "nowhere", base, at(time.Hour)), "a code of a flow that does not exist"},
		{newPasswordlessCode("c-at", "f1", at(time.Hour), at(2*time.Hour)), "a code issued at its flow's expiry"},
		{newPasswordlessCode("c-after", "f1", at(2*time.Hour), at(3*time.Hour)), "a code issued after its flow expired"},
		{newPasswordlessCode("c-reset", "reset", base, at(time.Hour)), "a code whose Flow is a reset code"},
		{newPasswordlessCode("c-code", "f1/c1", base, at(time.Hour)), "a code whose Flow is a passwordless code"},
	} {
		err := s.CreateCode(ctx, tc.code)
		wantErr(t, err, store.ErrNotFound, "CreateCode: "+tc.rule+" must return ErrNotFound")
		_, err = s.Code(ctx, store.CodePasswordless, tc.code.Hash, at(time.Minute))
		wantErr(t, err, store.ErrNotFound, "CreateCode: a refused code ("+tc.rule+") must not be written, so Code")
	}

	// The refused code's hash is free: with its flow, it is added.
	mustCreateCode(t, s, newFlow("nowhere", bob, base, at(time.Hour)), "a flow with a new hash")
	mustCreateCode(t, s, newPasswordlessCode("c-nowhere", "nowhere", base, at(time.Hour)), "a code refused for want of its flow, once the flow exists,")
	last := newPasswordlessCode("c-last", "f1", at(time.Hour-time.Millisecond), at(2*time.Hour))
	mustCreateCode(t, s, last, "a code issued just before its flow expires")
	wantCode(t, s, f, at(time.Minute), "CreateCode: refused codes must not change their flow")
	mustUsePasswordless(t, s, "f1", "c-last", at(30*time.Minute), 5, f, "a code issued just before its flow expires")
}

// testPasswordlessHashUniqueAcrossKinds: a hash names one code, whatever
// its kind, flows and passwordless codes included.
func testPasswordlessHashUniqueAcrossKinds(t *testing.T, s store.Store) {
	ctx := t.Context()
	u := mustCreateUser(t, s, "u1")
	reset := newResetToken("reset", "u1", base, at(time.Hour))
	mustCreateResetToken(t, s, reset)
	mustCreateVerificationToken(t, s, newVerificationToken("verify", "u1", u.Email, base, at(time.Hour)))
	f := newFlow("f1", ada, base, at(time.Hour))
	mustCreateCode(t, s, f, "a flow with a new hash")
	c := newPasswordlessCode("f1/c1", "f1", base, at(time.Hour))
	mustCreateCode(t, s, c, "a code of a live flow")
	c = of(c, f)

	for _, tc := range []struct {
		code store.Code
		rule string
	}{
		{newPasswordlessCode("reset", "f1", base, at(time.Hour)), "a passwordless code with a reset code's hash"},
		{newPasswordlessCode("verify", "f1", base, at(time.Hour)), "a passwordless code with a verification code's hash"},
		{newPasswordlessCode("f1", "f1", base, at(time.Hour)), "a passwordless code with its flow's hash"},
		{newPasswordlessCode("f1/c1", "f1", base, at(time.Hour)), "a passwordless code with another code's hash"},
		{newFlow("reset", ada, base, at(time.Hour)), "a flow with a reset code's hash"},
		{newFlow("verify", ada, base, at(time.Hour)), "a flow with a verification code's hash"},
		{newFlow("f1/c1", ada, base, at(time.Hour)), "a flow with a passwordless code's hash"},
		{newFlow("f1", bob, base, at(time.Hour)), "a flow with another flow's hash"},
		{newResetToken("f1/c1", "u1", base, at(time.Hour)), "a reset code with a passwordless code's hash"},
		{newResetToken("f1", "u1", base, at(time.Hour)), "a reset code with a flow's hash"},
		{newVerificationToken("f1", "u1", u.Email, base, at(time.Hour)), "a verification code with a flow's hash"},
		{newVerificationToken("f1/c1", "u1", u.Email, base, at(time.Hour)), "a verification code with a passwordless code's hash"},
	} {
		err := s.CreateCode(ctx, tc.code)
		wantErr(t, err, store.ErrConflict, "CreateCode: "+tc.rule+" must return ErrConflict")
	}

	now := at(time.Minute)
	rule := "CreateCode: a code with a taken hash must change nothing"
	wantCode(t, s, f, now, rule)
	wantCode(t, s, c, now, rule)
	if got, err := s.Code(ctx, store.CodeReset, reset.Hash, now); err != nil || got.UserID != "u1" {
		t.Errorf("%s: the reset code: got %+v, %v", rule, got, err)
	}
	if got, err := s.Code(ctx, store.CodeVerification, token("verify"), now); err != nil || got.LoginID != "u1" {
		t.Errorf("%s: the verification code: got %+v, %v", rule, got, err)
	}
	mustUsePasswordless(t, s, "f1", "f1/c1", now, 5, f, "the code of a flow that conflicting codes left alone")
}

// testPasswordlessSuccess: a live code of the flow signs in once, and ends
// every flow of the address with their codes, but no flow of another.
func testPasswordlessSuccess(t *testing.T, s store.Store) {
	f1 := newFlow("f1", ada, base, at(time.Hour))
	f2 := newFlow("f2", ada, at(time.Minute), at(2*time.Hour))
	f3 := newFlow("f3", bob, base, at(time.Hour))
	for _, f := range []store.Code{f1, f2, f3} {
		mustCreateCode(t, s, f, "a flow with a new hash")
	}
	for _, c := range []store.Code{
		newPasswordlessCode("f1/c1", "f1", base, at(15*time.Minute)),
		newPasswordlessCode("f1/c2", "f1", at(time.Minute), at(15*time.Minute)),
		newPasswordlessCode("f2/c1", "f2", at(time.Minute), at(15*time.Minute)),
		newPasswordlessCode("f3/c1", "f3", base, at(15*time.Minute)),
	} {
		mustCreateCode(t, s, c, "a code of a live flow")
	}

	now := at(5 * time.Minute)
	// The older code of the flow works as well as the newer.
	mustUsePasswordless(t, s, "f1", "f1/c1", now, 5, f1, "a live code of a live flow")
	wantUseErr(t, s, "f1", "f1/c1", now, 5, store.ErrNotFound, store.Code{},
		"a code works once: used again, its flow is gone, so it must return ErrNotFound")
	rule := "UsePasswordlessCode: success must delete every flow of the address with all of their codes"
	wantNoCode(t, s, store.CodePasswordlessFlow, "f2", now, rule)
	for _, name := range []string{"f1/c2", "f2/c1"} {
		wantNoCode(t, s, store.CodePasswordless, name, now, rule)
	}
	wantUseErr(t, s, "f2", "f2/c1", now, 5, store.ErrNotFound, store.Code{},
		"another flow of the address that a success ended must return ErrNotFound")
	rule = "UsePasswordlessCode: success must not touch the flows of another address"
	wantCode(t, s, f3, now, rule)
	wantCode(t, s, of(newPasswordlessCode("f3/c1", "f3", base, at(15*time.Minute)), f3), now, rule)
	mustUsePasswordless(t, s, "f3", "f3/c1", now, 5, f3, "the code of another address's flow")
}

// testPasswordlessWrongCodeCounts: each wrong code grows the flow's
// Attempts by one, and the flow is returned with the count; below the
// maximum the right code still works.
func testPasswordlessWrongCodeCounts(t *testing.T, s store.Store) {
	f := newFlow("f1", ada, base, at(time.Hour))
	mustCreateCode(t, s, f, "a flow with a new hash")
	mustCreateCode(t, s, newPasswordlessCode("f1/c1", "f1", base, at(time.Hour)), "a code of a live flow")

	now := at(time.Minute)
	for i := 1; i <= 3; i++ {
		wantUseErr(t, s, "f1", fmt.Sprintf("guess%d", i), now, 5, store.ErrWrongCode, withAttempts(f, i),
			"an unknown code must return ErrWrongCode and grow the flow's Attempts by one")
		wantCode(t, s, withAttempts(f, i), now, "UsePasswordlessCode: a wrong code must be counted against its flow")
	}
	mustUsePasswordless(t, s, "f1", "f1/c1", now, 5, withAttempts(f, 3), "the right code after wrong ones, below the maximum,")
}

// testPasswordlessMaxAttempts: the wrong code that brings Attempts to
// maxAttempts deletes the flow with its codes, and nothing else.
func testPasswordlessMaxAttempts(t *testing.T, s store.Store) {
	const maxAttempts = 3
	f1 := newFlow("f1", ada, base, at(time.Hour))
	f2 := newFlow("f2", ada, base, at(time.Hour))
	for _, f := range []store.Code{f1, f2} {
		mustCreateCode(t, s, f, "a flow with a new hash")
	}
	mustCreateCode(t, s, newPasswordlessCode("f1/c1", "f1", base, at(time.Hour)), "a code of a live flow")
	mustCreateCode(t, s, newPasswordlessCode("f2/c1", "f2", base, at(time.Hour)), "a code of a live flow")

	now := at(time.Minute)
	for i := 1; i < maxAttempts; i++ {
		wantUseErr(t, s, "f1", fmt.Sprintf("guess%d", i), now, maxAttempts, store.ErrWrongCode, withAttempts(f1, i),
			"a wrong code below the maximum")
		wantCode(t, s, withAttempts(f1, i), now, "UsePasswordlessCode: a wrong code below the maximum must leave the flow")
	}
	wantUseErr(t, s, "f1", "guess", now, maxAttempts, store.ErrWrongCode, withAttempts(f1, maxAttempts),
		"the wrong code that brings Attempts to maxAttempts")
	rule := "UsePasswordlessCode: the wrong code that brings Attempts to maxAttempts must delete the flow with its codes"
	wantNoCode(t, s, store.CodePasswordlessFlow, "f1", now, rule)
	wantNoCode(t, s, store.CodePasswordless, "f1/c1", now, rule)
	wantUseErr(t, s, "f1", "f1/c1", now, maxAttempts, store.ErrNotFound, store.Code{},
		"the right code of a flow deleted at its maximum must return ErrNotFound")
	wantCode(t, s, f2, now, "UsePasswordlessCode: deleting a flow at its maximum must not touch another flow of the address")
	mustUsePasswordless(t, s, "f2", "f2/c1", now, maxAttempts, f2, "the code of another flow of the address")
}

// testPasswordlessExpiredCode: an expired code of the flow is told apart
// as ErrCodeExpired, and counts as a wrong one.
func testPasswordlessExpiredCode(t *testing.T, s store.Store) {
	f1 := newFlow("f1", ada, base, at(time.Hour))
	f2 := newFlow("f2", bob, base, at(time.Hour))
	for _, f := range []store.Code{f1, f2} {
		mustCreateCode(t, s, f, "a flow with a new hash")
	}
	for _, c := range []store.Code{
		newPasswordlessCode("f1/old", "f1", base, at(10*time.Minute)),
		newPasswordlessCode("f1/new", "f1", at(10*time.Minute), at(20*time.Minute)),
		newPasswordlessCode("f2/old", "f2", base, at(10*time.Minute)),
	} {
		mustCreateCode(t, s, c, "a code of a live flow")
	}

	wantUseErr(t, s, "f1", "f1/old", at(10*time.Minute), 3, store.ErrCodeExpired, withAttempts(f1, 1),
		"a code of the flow whose ExpiresAt is now has expired: it must return ErrCodeExpired and count")
	wantUseErr(t, s, "f1", "f1/old", at(15*time.Minute), 3, store.ErrCodeExpired, withAttempts(f1, 2),
		"an expired code of the flow must return ErrCodeExpired and count")
	wantCode(t, s, withAttempts(f1, 2), at(15*time.Minute), "UsePasswordlessCode: an expired code must be counted against its flow")
	mustUsePasswordless(t, s, "f1", "f1/new", at(15*time.Minute), 3, withAttempts(f1, 2), "a live code of the flow after expired ones")

	wantUseErr(t, s, "f2", "f2/old", at(15*time.Minute), 1, store.ErrCodeExpired, withAttempts(f2, 1),
		"the expired code that brings Attempts to maxAttempts")
	wantNoCode(t, s, store.CodePasswordlessFlow, "f2", at(15*time.Minute),
		"UsePasswordlessCode: the expired code that brings Attempts to maxAttempts must delete the flow")
}

// testPasswordlessCodeOfAnotherFlow: a code is right only for its own
// flow; submitted to another, it is wrong there and harms its own flow in
// nothing.
func testPasswordlessCodeOfAnotherFlow(t *testing.T, s store.Store) {
	ctx := t.Context()
	mustCreateUser(t, s, "u1")
	mustCreateResetToken(t, s, newResetToken("reset", "u1", base, at(time.Hour)))
	f1 := newFlow("f1", ada, base, at(time.Hour))
	f2 := newFlow("f2", ada, base, at(time.Hour))
	f3 := newFlow("f3", bob, base, at(time.Hour))
	for _, f := range []store.Code{f1, f2, f3} {
		mustCreateCode(t, s, f, "a flow with a new hash")
	}
	c2 := newPasswordlessCode("f2/c1", "f2", base, at(time.Hour))
	c3 := newPasswordlessCode("f3/c1", "f3", base, at(time.Hour))
	for _, c := range []store.Code{c2, c3, newPasswordlessCode("f2/old", "f2", base, at(time.Minute))} {
		mustCreateCode(t, s, c, "a code of a live flow")
	}

	now := at(5 * time.Minute)
	for i, tc := range []struct{ code, rule string }{
		{"f2/c1", "a live code of another flow of the same address"},
		{"f3/c1", "a live code of another address's flow"},
		{"f2/old", "an expired code of another flow"},
		{"reset", "the hash of a reset code"},
		{"f1", "the flow's own hash"},
	} {
		wantUseErr(t, s, "f1", tc.code, now, 10, store.ErrWrongCode, withAttempts(f1, i+1),
			tc.rule+" must return ErrWrongCode and count")
	}
	rule := "UsePasswordlessCode: a code submitted to another flow must not touch its own"
	wantCode(t, s, f2, now, rule)
	wantCode(t, s, of(c2, f2), now, rule)
	wantCode(t, s, f3, now, rule)
	wantCode(t, s, of(c3, f3), now, rule)
	if _, err := s.Code(ctx, store.CodeReset, token("reset"), now); err != nil {
		t.Errorf("UsePasswordlessCode: a reset code submitted as a passwordless code must stay; Code got %v", err)
	}
	mustUsePasswordless(t, s, "f3", "f3/c1", now, 10, f3, "a code refused by another flow, on its own")
	mustUsePasswordless(t, s, "f2", "f2/c1", now, 10, f2, "a code refused by another flow of the address, on its own")
}

// testPasswordlessZeroMaxAttempts: with no maximum, wrong and expired
// codes are reported but not counted.
func testPasswordlessZeroMaxAttempts(t *testing.T, s store.Store) {
	f := newFlow("f1", ada, base, at(time.Hour))
	mustCreateCode(t, s, f, "a flow with a new hash")
	mustCreateCode(t, s, newPasswordlessCode("f1/c1", "f1", base, at(time.Hour)), "a code of a live flow")
	mustCreateCode(t, s, newPasswordlessCode("f1/old", "f1", base, at(time.Minute)), "a code of a live flow")

	now := at(5 * time.Minute)
	for range 3 {
		wantUseErr(t, s, "f1", "guess", now, 0, store.ErrWrongCode, f,
			"with maxAttempts 0, a wrong code must return ErrWrongCode and count nothing")
	}
	wantUseErr(t, s, "f1", "f1/old", now, 0, store.ErrCodeExpired, f,
		"with maxAttempts 0, an expired code must return ErrCodeExpired and count nothing")
	wantUseErr(t, s, "f1", "guess", now, -1, store.ErrWrongCode, f,
		"with a negative maxAttempts, which is not positive, a wrong code must count nothing")
	wantCode(t, s, f, now, "UsePasswordlessCode: with maxAttempts 0 nothing changes")
	mustUsePasswordless(t, s, "f1", "f1/c1", now, 0, f, "the right code with maxAttempts 0")
}

// testPasswordlessMissingOrExpiredFlow: a flow that does not exist, is of
// another kind or has expired is not found, whatever the code, and
// nothing changes.
func testPasswordlessMissingOrExpiredFlow(t *testing.T, s store.Store) {
	ctx := t.Context()
	mustCreateUser(t, s, "u1")
	mustCreateResetToken(t, s, newResetToken("reset", "u1", base, at(time.Hour)))
	f := newFlow("f1", ada, base, at(time.Hour))
	mustCreateCode(t, s, f, "a flow with a new hash")
	// The code outlives its flow.
	mustCreateCode(t, s, newPasswordlessCode("f1/c1", "f1", base, at(2*time.Hour)), "a code of a live flow")

	for _, tc := range []struct {
		flow, code string
		now        time.Time
		rule       string
	}{
		{"nowhere", "f1/c1", at(time.Minute), "a flow that does not exist"},
		{"f1/c1", "f1/c1", at(time.Minute), "a passwordless code's hash given as the flow"},
		{"reset", "f1/c1", at(time.Minute), "a reset code's hash given as the flow"},
		{"f1", "f1/c1", at(time.Hour), "a flow whose ExpiresAt is now, even with its live code,"},
		{"f1", "guess", at(time.Hour), "a wrong code on a flow whose ExpiresAt is now"},
		{"f1", "f1/c1", at(90 * time.Minute), "an expired flow, even with its live code,"},
	} {
		wantUseErr(t, s, tc.flow, tc.code, tc.now, 1, store.ErrNotFound, store.Code{}, tc.rule+" must return ErrNotFound")
	}
	if _, err := s.Code(ctx, store.CodeReset, token("reset"), at(time.Minute)); err != nil {
		t.Errorf("UsePasswordlessCode: a reset code given as a flow must stay; Code got %v", err)
	}
	// Stores never read a clock: before its expiry the flow is as it was.
	wantCode(t, s, f, at(30*time.Minute), "UsePasswordlessCode: calls on an expired flow must change nothing")
	mustUsePasswordless(t, s, "f1", "f1/c1", at(30*time.Minute), 1, f, "calls on an expired flow changed nothing, so its code before the expiry")
}

// testPasswordlessDeleteExpired: DeleteExpired removes expired flows and
// codes, freeing their hashes, and keeps live ones as they are.
func testPasswordlessDeleteExpired(t *testing.T, s store.Store) {
	ctx := t.Context()
	gone := newFlow("gone", ada, base, at(time.Hour))
	live := newFlow("live", bob, base, at(3*time.Hour))
	for _, f := range []store.Code{gone, live} {
		mustCreateCode(t, s, f, "a flow with a new hash")
	}
	fresh := newPasswordlessCode("live/new", "live", at(time.Minute), at(2*time.Hour))
	for _, c := range []store.Code{
		newPasswordlessCode("gone/c1", "gone", base, at(30*time.Minute)),
		newPasswordlessCode("live/old", "live", base, at(time.Hour)),
		fresh,
	} {
		mustCreateCode(t, s, c, "a code of a live flow")
	}
	wantUseErr(t, s, "live", "guess", at(time.Minute), 5, store.ErrWrongCode, withAttempts(live, 1), "a wrong code")
	live = withAttempts(live, 1)

	now := at(time.Hour)
	if err := s.DeleteExpired(ctx, now); err != nil {
		t.Fatalf("DeleteExpired: must succeed; got error %v", err)
	}
	// Stores never read a clock: asked about a time before they expired,
	// removed records are not found.
	earlier := at(10 * time.Minute)
	wantNoCode(t, s, store.CodePasswordlessFlow, "gone", earlier, "DeleteExpired: must remove a flow whose ExpiresAt is now")
	wantNoCode(t, s, store.CodePasswordless, "gone/c1", earlier, "DeleteExpired: must remove expired codes")
	wantNoCode(t, s, store.CodePasswordless, "live/old", earlier, "DeleteExpired: must remove an expired code of a live flow")
	wantCode(t, s, live, now, "DeleteExpired: must keep live flows, with their Attempts")
	wantCode(t, s, of(fresh, live), now, "DeleteExpired: must keep live codes")

	mustCreateCode(t, s, newFlow("gone", ada, now, at(2*time.Hour)), "a flow with the hash of one DeleteExpired removed")
	mustCreateCode(t, s, newPasswordlessCode("live/old", "live", now, at(2*time.Hour)), "a code with the hash of one DeleteExpired removed")
	mustUsePasswordless(t, s, "live", "live/new", now, 5, live, "a live code that DeleteExpired kept")
}

// testPasswordlessUntouchedByUserDeletion: flows and their codes belong to
// no user, so deleting users and logins, even of the flow's address, and
// the other writes on a user leave them.
func testPasswordlessUntouchedByUserDeletion(t *testing.T, s store.Store) {
	ctx := t.Context()
	u1 := mustCreateOwner(t, s, "u1")
	l2 := linkedLogin("l2", "u1", "google", "g-2", u1.Email)
	mustLinkLogin(t, s, l2)
	pl := user{User: store.User{ID: "u2", TimeJoined: base}, Login: store.Login{
		LoginKey: store.PasswordlessKey(ada), Email: ada, EmailVerified: true, EmailProven: true, CreatedAt: base,
	}}
	if err := pl.create(ctx, s); err != nil {
		t.Fatalf("CreateUser: a user whose first login is a passwordless one must be added; got error %v", err)
	}
	f1 := newFlow("f1", u1.Email, base, at(time.Hour))
	f2 := newFlow("f2", ada, base, at(time.Hour))
	c1 := newPasswordlessCode("f1/c1", "f1", base, at(time.Hour))
	c2 := newPasswordlessCode("f2/c1", "f2", base, at(time.Hour))
	for _, c := range []store.Code{f1, f2, c1, c2} {
		mustCreateCode(t, s, c, "a passwordless flow or code")
	}

	if _, err := s.DeleteLogin(ctx, "l2"); err != nil {
		t.Fatalf("DeleteLogin: %v", err)
	}
	if _, err := s.SetEmailVerified(ctx, "u1", true); err != nil {
		t.Fatalf("SetEmailVerified: %v", err)
	}
	if _, err := s.RevokeUserSessions(ctx, "u1"); err != nil {
		t.Fatalf("RevokeUserSessions: %v", err)
	}
	for _, id := range []string{"u1", "u2"} {
		if _, err := s.DeleteUser(ctx, id); err != nil {
			t.Fatalf("DeleteUser: %v", err)
		}
	}
	now := at(time.Minute)
	rule := "DeleteLogin and DeleteUser: must not touch passwordless flows or codes, which belong to no user"
	wantCode(t, s, f1, now, rule)
	wantCode(t, s, f2, now, rule)
	wantCode(t, s, of(c1, f1), now, rule)
	wantCode(t, s, of(c2, f2), now, rule)
	mustUsePasswordless(t, s, "f1", "f1/c1", now, 5, f1, "the code of a flow of a deleted user's address")
	mustUsePasswordless(t, s, "f2", "f2/c1", now, 5, f2, "the code of a flow of a deleted passwordless login's address")
}

// passwordlessStormSize is how many calls each passwordless storm makes
// at once.
const passwordlessStormSize = 16

// testConcurrentPasswordlessSameCode submits one right code in many
// concurrent calls, once on each of several flows.
//
// Invariant checked: exactly one call succeeds and returns the flow; every
// other comes after it, finds the flow gone and returns ErrNotFound. The
// address's other flow is gone too.
func testConcurrentPasswordlessSameCode(t *testing.T, s store.Store) {
	const n = passwordlessStormSize
	ctx := t.Context()
	for round := range stormRounds {
		r := fmt.Sprintf("r%d", round)
		f := newFlow(r+"/f", r+"@example.com", base, at(time.Hour))
		mustCreateCode(t, s, f, "a flow with a new hash")
		mustCreateCode(t, s, newFlow(r+"/g", f.Email, base, at(time.Hour)), "a flow with a new hash")
		mustCreateCode(t, s, newPasswordlessCode(r+"/f/c", r+"/f", base, at(time.Hour)), "a code of a live flow")

		now := at(time.Minute)
		got := make([]store.Code, n)
		errs := make([]error, n)
		parallel(n, func(i int) {
			got[i], errs[i] = s.UsePasswordlessCode(ctx, f.Hash, token(r+"/f/c"), now, 5)
		})
		winner := -1
		for i, err := range errs {
			switch {
			case err == nil && winner >= 0:
				t.Errorf("UsePasswordlessCode: a code works once, so of concurrent calls with it exactly one must succeed; in round %d calls %d and %d did", round, winner, i)
			case err == nil:
				winner = i
			case !errors.Is(err, store.ErrNotFound):
				t.Errorf("UsePasswordlessCode: a concurrent call after another spent the code must find the flow gone and return ErrNotFound; round %d got error %v", round, err)
			}
		}
		if winner < 0 {
			t.Fatalf("UsePasswordlessCode: of concurrent calls with a live code exactly one must succeed; in round %d none did", round)
		}
		if d := codeDiff(got[winner], f); d != "" {
			t.Errorf("UsePasswordlessCode: the call that succeeded must return the flow: %s", d)
		}
		rule := "UsePasswordlessCode: after concurrent calls with one code, the address's flows must be gone"
		wantNoCode(t, s, store.CodePasswordlessFlow, r+"/f", now, rule)
		wantNoCode(t, s, store.CodePasswordlessFlow, r+"/g", now, rule)
	}
}

// testConcurrentPasswordlessSameEmail submits the right code of each of
// several flows of one address at once, as several browsers signing in
// with one email would.
//
// Invariant checked: a success ends every flow of the address, so exactly
// one call succeeds, and every other, coming after it, finds its flow gone
// and returns ErrNotFound.
func testConcurrentPasswordlessSameEmail(t *testing.T, s store.Store) {
	const n = passwordlessStormSize
	ctx := t.Context()
	for round := range stormRounds {
		email := fmt.Sprintf("r%d@example.com", round)
		flow := func(i int) string { return fmt.Sprintf("r%d/f%d", round, i) }
		flows := make([]store.Code, n)
		for i := range flows {
			flows[i] = newFlow(flow(i), email, base, at(time.Hour))
			mustCreateCode(t, s, flows[i], "a flow with a new hash")
			mustCreateCode(t, s, newPasswordlessCode(flow(i)+"/c", flow(i), base, at(time.Hour)), "a code of a live flow")
		}
		now := at(time.Minute)
		got := make([]store.Code, n)
		errs := make([]error, n)
		parallel(n, func(i int) {
			got[i], errs[i] = s.UsePasswordlessCode(ctx, token(flow(i)), token(flow(i)+"/c"), now, 5)
		})
		winner := -1
		for i, err := range errs {
			switch {
			case err == nil && winner >= 0:
				t.Errorf("UsePasswordlessCode: a success ends every flow of the address, so of concurrent calls on its flows exactly one must succeed; in round %d calls %d and %d did", round, winner, i)
			case err == nil:
				winner = i
			case !errors.Is(err, store.ErrNotFound):
				t.Errorf("UsePasswordlessCode: a concurrent call on a flow that another's success ended must return ErrNotFound; round %d got error %v", round, err)
			}
		}
		if winner < 0 {
			t.Fatalf("UsePasswordlessCode: of concurrent calls with live codes of an address's flows exactly one must succeed; in round %d none did", round)
		}
		if d := codeDiff(got[winner], flows[winner]); d != "" {
			t.Errorf("UsePasswordlessCode: the call that succeeded must return its flow: %s", d)
		}
		for i := range n {
			wantNoCode(t, s, store.CodePasswordlessFlow, flow(i), now,
				"UsePasswordlessCode: after concurrent calls on an address's flows, every flow of the address must be gone")
		}
	}
}

// attemptsOf returns the Attempts of the flows that the calls returning
// ErrWrongCode returned, sorted, and how many calls returned ErrNotFound;
// it reports any other outcome.
func attemptsOf(t *testing.T, got []store.Code, errs []error, round int) ([]int, int) {
	t.Helper()
	var counts []int
	notFound := 0
	for i, err := range errs {
		switch {
		case errors.Is(err, store.ErrWrongCode):
			counts = append(counts, got[i].Attempts)
		case errors.Is(err, store.ErrNotFound):
			notFound++
		default:
			t.Errorf("UsePasswordlessCode: a concurrent wrong code must return ErrWrongCode, or ErrNotFound once the flow is gone; round %d got error %v", round, err)
		}
	}
	slices.Sort(counts)
	return counts, notFound
}

// upTo returns 1, 2, ..., n.
func upTo(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i + 1
	}
	return s
}

// testConcurrentPasswordlessWrongCodes submits distinct wrong codes to one
// flow in many concurrent calls, with a maximum none of them reaches.
//
// Invariant checked: each call is one atomic step that grows Attempts by
// one and returns the count after it, so the calls return the counts 1 to
// n, each once, and the flow has n attempts afterwards: no count is lost.
func testConcurrentPasswordlessWrongCodes(t *testing.T, s store.Store) {
	const n = passwordlessStormSize
	ctx := t.Context()
	for round := range stormRounds {
		r := fmt.Sprintf("r%d", round)
		f := newFlow(r+"/f", r+"@example.com", base, at(time.Hour))
		mustCreateCode(t, s, f, "a flow with a new hash")
		mustCreateCode(t, s, newPasswordlessCode(r+"/f/c", r+"/f", base, at(time.Hour)), "a code of a live flow")

		now := at(time.Minute)
		got := make([]store.Code, n)
		errs := make([]error, n)
		parallel(n, func(i int) {
			got[i], errs[i] = s.UsePasswordlessCode(ctx, f.Hash, token(fmt.Sprintf("%s/guess%d", r, i)), now, 1000)
		})
		counts, notFound := attemptsOf(t, got, errs, round)
		if notFound != 0 || !slices.Equal(counts, upTo(n)) {
			t.Errorf("UsePasswordlessCode: concurrent wrong codes must each be counted, in one step each: round %d returned the counts %v and %d ErrNotFound, want %v and none",
				round, counts, notFound, upTo(n))
		}
		wantCode(t, s, withAttempts(f, n), now, "UsePasswordlessCode: after concurrent wrong codes, the flow must count every one")
	}
}

// testConcurrentPasswordlessWrongCodesAtMax submits distinct wrong codes to
// one flow in many more concurrent calls than its maximum of 5.
//
// Invariant checked: the calls are atomic steps in some order. The first
// four find the flow, count 1 to 4 and return ErrWrongCode with the flow
// still there; the fifth counts 5, deletes the flow with its codes and
// returns ErrWrongCode with Attempts 5; every later one finds no flow and
// returns ErrNotFound. So exactly five return ErrWrongCode, with the counts
// 1 to 5 each once, n-5 return ErrNotFound, and the flow and its code are
// gone.
func testConcurrentPasswordlessWrongCodesAtMax(t *testing.T, s store.Store) {
	const n, maxAttempts = passwordlessStormSize, 5
	ctx := t.Context()
	for round := range stormRounds {
		r := fmt.Sprintf("r%d", round)
		f := newFlow(r+"/f", r+"@example.com", base, at(time.Hour))
		mustCreateCode(t, s, f, "a flow with a new hash")
		mustCreateCode(t, s, newPasswordlessCode(r+"/f/c", r+"/f", base, at(time.Hour)), "a code of a live flow")

		now := at(time.Minute)
		got := make([]store.Code, n)
		errs := make([]error, n)
		parallel(n, func(i int) {
			got[i], errs[i] = s.UsePasswordlessCode(ctx, f.Hash, token(fmt.Sprintf("%s/guess%d", r, i)), now, maxAttempts)
		})
		counts, notFound := attemptsOf(t, got, errs, round)
		if notFound != n-maxAttempts || !slices.Equal(counts, upTo(maxAttempts)) {
			t.Errorf("UsePasswordlessCode: of %d concurrent wrong codes with maxAttempts %d, exactly %d must return ErrWrongCode, with the counts %v, and the other %d ErrNotFound; round %d returned the counts %v and %d ErrNotFound",
				n, maxAttempts, maxAttempts, upTo(maxAttempts), n-maxAttempts, round, counts, notFound)
		}
		rule := "UsePasswordlessCode: after concurrent wrong codes past the maximum, the flow must be deleted with its codes"
		wantNoCode(t, s, store.CodePasswordlessFlow, r+"/f", now, rule)
		wantNoCode(t, s, store.CodePasswordless, r+"/f/c", now, rule)
	}
}

// testConcurrentPasswordlessRightAndWrong submits the right code of a flow
// with a maximum of 3 at the same time as many wrong ones.
//
// Invariant checked: if the right code comes before the third wrong one,
// it succeeds, returning the flow with the k < 3 wrong codes counted
// before it, which returned the counts 1 to k; every later call finds no
// flow. Otherwise the third wrong code deleted the flow: exactly three
// returned ErrWrongCode with the counts 1 to 3, and the right code, like
// the rest, ErrNotFound. Either way the flow is gone.
func testConcurrentPasswordlessRightAndWrong(t *testing.T, s store.Store) {
	const wrong, maxAttempts = passwordlessStormSize / 2, 3
	ctx := t.Context()
	for round := range stormRounds {
		r := fmt.Sprintf("r%d", round)
		f := newFlow(r+"/f", r+"@example.com", base, at(time.Hour))
		mustCreateCode(t, s, f, "a flow with a new hash")
		mustCreateCode(t, s, newPasswordlessCode(r+"/f/c", r+"/f", base, at(time.Hour)), "a code of a live flow")

		now := at(time.Minute)
		got := make([]store.Code, wrong+1)
		errs := make([]error, wrong+1)
		parallel(wrong+1, func(i int) {
			code := token(fmt.Sprintf("%s/guess%d", r, i))
			if i == wrong {
				code = token(r + "/f/c")
			}
			got[i], errs[i] = s.UsePasswordlessCode(ctx, f.Hash, code, now, maxAttempts)
		})
		counts, _ := attemptsOf(t, got[:wrong], errs[:wrong], round)
		k := len(counts)
		if !slices.Equal(counts, upTo(k)) {
			t.Errorf("UsePasswordlessCode: concurrent wrong codes must return the counts 1 to k, each once; round %d returned %v", round, counts)
		}
		switch err := errs[wrong]; {
		case err == nil:
			if k >= maxAttempts {
				t.Errorf("UsePasswordlessCode: the right code succeeded in round %d although %d wrong codes, reaching the maximum of %d, were counted", round, k, maxAttempts)
			}
			if d := codeDiff(got[wrong], withAttempts(f, k)); d != "" {
				t.Errorf("UsePasswordlessCode: the right code must return the flow with the wrong codes counted before it: %s", d)
			}
		case errors.Is(err, store.ErrNotFound):
			if k != maxAttempts {
				t.Errorf("UsePasswordlessCode: the right code may find the flow gone only after the wrong code that reached the maximum; round %d counted %d wrong codes, want %d", round, k, maxAttempts)
			}
		default:
			t.Errorf("UsePasswordlessCode: the right code racing wrong ones must succeed or find the flow gone; round %d got error %v", round, err)
		}
		wantNoCode(t, s, store.CodePasswordlessFlow, r+"/f", now,
			"UsePasswordlessCode: after the right code raced wrong ones, the flow must be gone, spent or deleted at its maximum")
	}
}

// testConcurrentPasswordlessCreateWhileUsing adds codes to a flow while
// its code is spent.
//
// Invariant checked: a code added before the step that spends the code is
// deleted with its flow, and one added after it finds no flow and is
// refused with ErrNotFound; so no code added in the race is left, whatever
// each call returned.
func testConcurrentPasswordlessCreateWhileUsing(t *testing.T, s store.Store) {
	const n = passwordlessStormSize
	ctx := t.Context()
	for round := range stormRounds {
		r := fmt.Sprintf("r%d", round)
		f := newFlow(r+"/f", r+"@example.com", base, at(time.Hour))
		mustCreateCode(t, s, f, "a flow with a new hash")
		mustCreateCode(t, s, newPasswordlessCode(r+"/f/c", r+"/f", base, at(time.Hour)), "a code of a live flow")

		now := at(time.Minute)
		code := func(i int) string { return fmt.Sprintf("%s/f/c%d", r, i) }
		errs := make([]error, n+1)
		parallel(n+1, func(i int) {
			if i == n {
				_, errs[i] = s.UsePasswordlessCode(ctx, f.Hash, token(r+"/f/c"), now, 5)
				return
			}
			errs[i] = s.CreateCode(ctx, newPasswordlessCode(code(i), r+"/f", now, at(time.Hour)))
		})
		if errs[n] != nil {
			t.Fatalf("UsePasswordlessCode: the live code of a live flow must succeed while codes are added to the flow; round %d got error %v", round, errs[n])
		}
		for i, err := range errs[:n] {
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				t.Errorf("CreateCode: a code added while its flow is spent must be added or refused with ErrNotFound; round %d got error %v", round, err)
			}
			wantNoCode(t, s, store.CodePasswordless, code(i), now,
				"UsePasswordlessCode: a code added before the flow was spent must go with it, and one after must be refused")
		}
	}
}
