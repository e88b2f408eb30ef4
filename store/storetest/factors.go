package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/latchkit/auth/store"
)

// Second factors: a session's Factors, which the store keeps as written by
// CreateSession, returns from every method that returns a session and
// changes only in UpdateSessionFactors; a user's record of second factors,
// a login of store.MethodSecondFactors that is no way to sign in, whose
// Material UpdateLoginMaterial swaps, as it swaps any login's.
//
// Both swaps are compare-and-swaps in which nil and empty are the same:
// the suite writes readable bytes and compares them with bytes.Equal.
var factorTests = []test{
	{"SessionFactorsKept", testSessionFactorsKept},
	{"SessionFactorsRotation", testSessionFactorsRotation},
	{"SessionFactorsNilAndEmpty", testSessionFactorsNilAndEmpty},
	{"SessionFactorsNotAliased", testSessionFactorsNotAliased},
	{"UpdateSessionFactors", testUpdateSessionFactors},
	{"UpdateSessionFactorsConflict", testUpdateSessionFactorsConflict},
	{"UpdateSessionFactorsSameBytes", testUpdateSessionFactorsSameBytes},
	{"UpdateSessionFactorsEnded", testUpdateSessionFactorsEnded},
	{"UpdateSessionFactorsExpired", testUpdateSessionFactorsExpired},
	{"UpdateSessionFactorsUnknown", testUpdateSessionFactorsUnknown},
	{"UpdateLoginMaterial", testUpdateLoginMaterial},
	{"UpdateLoginMaterialConflict", testUpdateLoginMaterialConflict},
	{"UpdateLoginMaterialNilAndEmpty", testUpdateLoginMaterialNilAndEmpty},
	{"UpdateLoginMaterialUnknown", testUpdateLoginMaterialUnknown},
	{"LoginMaterialNotAliased", testLoginMaterialNotAliased},
	{"SecondFactorsRecord", testSecondFactorsRecord},
	{"DeleteLoginSecondFactors", testDeleteLoginSecondFactors},
	{"DeleteLoginSecondFactorsTwoWaysIn", testDeleteLoginSecondFactorsTwoWaysIn},
	{"DeleteUserSecondFactors", testDeleteUserSecondFactors},
	{"ConcurrentUpdateSessionFactors", testConcurrentUpdateSessionFactors},
	{"ConcurrentUpdateLoginMaterial", testConcurrentUpdateLoginMaterial},
}

// proof is the suite's stand-in for a session's factors: what it has
// proved, at step n.
func proof(handle string, n int) []byte { return fmt.Appendf(nil, "factors of %s, step %d", handle, n) }

// record is the suite's stand-in for a user's second factors, at step n.
func record(userID string, n int) []byte {
	return fmt.Appendf(nil, "totp sealed, codes hashed, of %s, step %d", userID, n)
}

// withFactors is sess with the factors f.
func withFactors(sess store.Session, f []byte) store.Session {
	sess.Factors = f
	return sess
}

// secondFactors is the record of second factors of userID, with id and
// material: no email, and nothing to own.
func secondFactors(id, userID string, material []byte) store.Login {
	return store.Login{
		LoginKey:  store.SecondFactorsKey(userID),
		ID:        id,
		UserID:    userID,
		Material:  material,
		CreatedAt: at(time.Minute),
	}
}

// mustUpdateSessionFactors swaps the factors of handle from old to new,
// which the contract says succeeds, explained by rule.
func mustUpdateSessionFactors(t *testing.T, s store.Store, handle string, old, new []byte, now time.Time, rule string) {
	t.Helper()
	if err := s.UpdateSessionFactors(t.Context(), handle, old, new, now); err != nil {
		t.Fatalf("UpdateSessionFactors: %s must succeed; got error %v", rule, err)
	}
}

// mustUpdateLoginMaterial swaps the material of the login loginID from old
// to new, which the contract says succeeds, explained by rule.
func mustUpdateLoginMaterial(t *testing.T, s store.Store, loginID string, old, new []byte, rule string) {
	t.Helper()
	if err := s.UpdateLoginMaterial(t.Context(), loginID, old, new); err != nil {
		t.Fatalf("UpdateLoginMaterial: %s must succeed; got error %v", rule, err)
	}
}

// wantFactors checks that Session returns the session handle, live at
// now, with the factors want.
func wantFactors(t *testing.T, s store.Store, handle string, want []byte, now time.Time, rule string) {
	t.Helper()
	got, err := s.Session(t.Context(), handle, now)
	if err != nil {
		t.Errorf("%s: Session(%q) failed: %v", rule, handle, err)
		return
	}
	var d diff
	d.bytes("Factors", got.Factors, want)
	if len(d) > 0 {
		t.Errorf("%s: Session(%q): %s", rule, handle, d)
	}
}

// testSessionFactorsKept: a session's factors, written with it, come back
// from Session and UserSessions; a session written with none has none.
func testSessionFactorsKept(t *testing.T, s store.Store) {
	mustCreateUser(t, s, "u1")
	mustCreateUser(t, s, "u2")
	a := withFactors(newSession("a", "u1", base, at(ttl)), proof("a", 0))
	b := newSession("b", "u1", at(time.Minute), at(ttl))
	c := withFactors(newSession("c", "u2", base, at(ttl)), proof("c", 0))
	for _, sess := range []store.Session{a, b, c} {
		mustCreateSession(t, s, sess, sess.Handle+"/r0")
	}
	now := at(time.Hour)
	rule := "CreateSession: a session's Factors must be kept as written"
	wantSession(t, s, a, now, rule)
	wantSession(t, s, b, now, "CreateSession: a session written with nil Factors must come back with nil")
	wantSession(t, s, c, now, rule)
	wantUserSessions(t, s, "u1", now, []store.Session{b, a}, "UserSessions: must return every session with its Factors")
	wantUserSessions(t, s, "u2", now, []store.Session{c}, "UserSessions: must return every session with its Factors")
}

// testSessionFactorsRotation: every branch of RotateRefreshToken that
// returns a session returns its factors, as UpdateSessionFactors last set
// them, and a rotation does not change them.
func testSessionFactorsRotation(t *testing.T, s store.Store) {
	const window = 10 * time.Second
	mustCreateUser(t, s, "u1")
	sess := withFactors(newSession("s1", "u1", base, at(ttl)), proof("s1", 0))
	mustCreateSession(t, s, sess, "s1/r0")

	r := rotation("s1/r0", "s1/r1", at(time.Minute), window)
	sess = mustRotate(t, s, r, updated(sess, r), "the current token of a live session, with Factors")
	wantSession(t, s, sess, r.Now, "RotateRefreshToken: a rotation must keep the session's Factors")

	mustUpdateSessionFactors(t, s, "s1", proof("s1", 0), proof("s1", 1), r.Now, "a swap from the session's Factors")
	sess.Factors = proof("s1", 1)
	r = rotation("s1/r1", "s1/r2", at(2*time.Minute), window)
	sess = mustRotate(t, s, r, updated(sess, r), "the current token of a session whose Factors were updated")
	wantSession(t, s, sess, r.Now, "RotateRefreshToken: a rotation must keep the Factors UpdateSessionFactors set")

	// The token just superseded, back inside the window: Repeat.
	got, err := s.RotateRefreshToken(t.Context(), rotation("s1/r1", "s1/r2", r.Now.Add(time.Second), window))
	if err != nil || !got.Repeat {
		t.Fatalf("RotateRefreshToken: the token just superseded, inside the reuse window, must be a Repeat; got %+v, error %v", got, err)
	}
	if d := sessionDiff(got.Session, sess); d != "" {
		t.Errorf("RotateRefreshToken: a Repeat must return the session as it is, with its Factors: %s", d)
	}

	mustUpdateSessionFactors(t, s, "s1", proof("s1", 1), proof("s1", 2), r.Now, "a swap from the session's Factors")
	sess.Factors = proof("s1", 2)
	wantTheft(t, s, rotation("s1/r0", "s1/r9", r.Now.Add(time.Minute), window), sess, store.ReuseStale,
		"a token superseded two exchanges ago, with the session's Factors")
}

// testSessionFactorsNilAndEmpty: empty factors come back empty, and in a
// swap nil and empty are the same.
func testSessionFactorsNilAndEmpty(t *testing.T, s store.Store) {
	ctx := t.Context()
	mustCreateUser(t, s, "u1")
	mustCreateSession(t, s, withFactors(newSession("empty", "u1", base, at(ttl)), []byte{}), "empty/r0")
	mustCreateSession(t, s, newSession("nil", "u1", base, at(ttl)), "nil/r0")
	now := at(time.Minute)
	if got, err := s.Session(ctx, "empty", now); err != nil || len(got.Factors) != 0 {
		t.Errorf("CreateSession: a session written with empty Factors must come back with none; got %+v, error %v", got, err)
	}
	mustUpdateSessionFactors(t, s, "empty", nil, proof("empty", 1), now, "a swap from nil of a session with empty Factors")
	wantFactors(t, s, "empty", proof("empty", 1), now, "UpdateSessionFactors: a swap from nil of empty Factors must set them")
	mustUpdateSessionFactors(t, s, "nil", []byte{}, proof("nil", 1), now, "a swap from empty of a session with nil Factors")
	wantFactors(t, s, "nil", proof("nil", 1), now, "UpdateSessionFactors: a swap from empty of nil Factors must set them")
	mustUpdateSessionFactors(t, s, "nil", proof("nil", 1), nil, now, "a swap to nil")
	wantFactors(t, s, "nil", nil, now, "UpdateSessionFactors: a swap to nil must leave the session with none")
	mustUpdateSessionFactors(t, s, "nil", nil, proof("nil", 2), now, "a swap from nil of a session whose Factors were set to nil")
	wantFactors(t, s, "nil", proof("nil", 2), now, "UpdateSessionFactors: a swap from nil must set them")
}

// testSessionFactorsNotAliased: the store keeps its own copy of the
// factors it is given and gives out copies.
func testSessionFactorsNotAliased(t *testing.T, s store.Store) {
	ctx := t.Context()
	mustCreateUser(t, s, "u1")
	f := proof("s1", 0)
	sess := withFactors(newSession("s1", "u1", base, at(ttl)), f)
	want := withFactors(sess, bytes.Clone(f))
	mustCreateSession(t, s, sess, "s1/r0")
	clear(f) // the caller reuses its buffer
	now := at(time.Minute)
	wantSession(t, s, want, now, "CreateSession: must keep its own copy of Factors")

	if got, err := s.Session(ctx, "s1", now); err == nil {
		clear(got.Factors)
	}
	wantSession(t, s, want, now, "Session: must return a copy of Factors that the caller may modify")
	if got, err := s.UserSessions(ctx, "u1", now); err == nil && len(got) == 1 {
		clear(got[0].Factors)
	}
	wantSession(t, s, want, now, "UserSessions: must return copies of Factors that the caller may modify")
	r := rotation("s1/r0", "s1/r1", now, time.Minute)
	if got, err := s.RotateRefreshToken(ctx, r); err == nil {
		clear(got.Session.Factors)
	}
	want = updated(want, r)
	wantSession(t, s, want, now, "RotateRefreshToken: must return a copy of Factors that the caller may modify")
	if got, err := s.RotateRefreshToken(ctx, rotation("s1/r0", "s1/r1", now, time.Minute)); err == nil && got.Repeat {
		clear(got.Session.Factors)
	}
	wantSession(t, s, want, now, "RotateRefreshToken: a Repeat must return a copy of Factors that the caller may modify")

	old, next := bytes.Clone(want.Factors), proof("s1", 1)
	mustUpdateSessionFactors(t, s, "s1", old, next, now, "a swap from the session's Factors")
	want.Factors = bytes.Clone(next)
	clear(old)
	clear(next)
	wantSession(t, s, want, now, "UpdateSessionFactors: must keep its own copy of the new Factors")
}

// testUpdateSessionFactors: a swap from the session's factors sets them,
// and changes nothing else, nor any other session.
func testUpdateSessionFactors(t *testing.T, s store.Store) {
	mustCreateUser(t, s, "u1")
	a := withFactors(newSession("a", "u1", base, at(ttl)), proof("a", 0))
	b := withFactors(newSession("b", "u1", at(time.Minute), at(ttl)), proof("b", 0))
	mustCreateSession(t, s, a, "a/r0")
	mustCreateSession(t, s, b, "b/r0")
	now := at(time.Hour)
	mustUpdateSessionFactors(t, s, "a", proof("a", 0), proof("a", 1), now, "a swap from the session's Factors")
	a.Factors = proof("a", 1)
	wantSession(t, s, a, now, "UpdateSessionFactors: a swap from the session's Factors must set them to new, and change nothing else")
	wantSession(t, s, b, now, "UpdateSessionFactors: must change only the session it names")
	wantUserSessions(t, s, "u1", now, []store.Session{b, a}, "UserSessions: must return the Factors UpdateSessionFactors set")

	// From nil, and on.
	mustCreateSession(t, s, newSession("c", "u1", at(2*time.Minute), at(ttl)), "c/r0")
	mustUpdateSessionFactors(t, s, "c", nil, proof("c", 1), now, "a swap from nil of a session with no Factors")
	mustUpdateSessionFactors(t, s, "c", proof("c", 1), proof("c", 2), now, "a swap from the Factors the last swap set")
	wantFactors(t, s, "c", proof("c", 2), now, "UpdateSessionFactors: must set the Factors of the last swap")

	// The session's tokens still rotate.
	r := rotation("a/r0", "a/r1", now, 0)
	mustRotate(t, s, r, updated(a, r), "the current token of a session whose Factors were updated")
}

// testUpdateSessionFactorsConflict: a swap from factors the session does
// not have returns ErrConflict and changes nothing.
func testUpdateSessionFactorsConflict(t *testing.T, s store.Store) {
	ctx := t.Context()
	mustCreateUser(t, s, "u1")
	sess := withFactors(newSession("s1", "u1", base, at(ttl)), proof("s1", 1))
	mustCreateSession(t, s, sess, "s1/r0")
	none := newSession("s2", "u1", base, at(ttl))
	mustCreateSession(t, s, none, "s2/r0")
	now := at(time.Minute)
	for _, old := range [][]byte{proof("s1", 0), nil, {}, proof("s1", 1)[:5]} {
		err := s.UpdateSessionFactors(ctx, "s1", old, proof("s1", 2), now)
		wantErr(t, err, store.ErrConflict, fmt.Sprintf("UpdateSessionFactors: a swap from %s, of a session whose Factors are others, must return ErrConflict", showBytes(old)))
	}
	err := s.UpdateSessionFactors(ctx, "s2", proof("s2", 0), proof("s2", 1), now)
	wantErr(t, err, store.ErrConflict, "UpdateSessionFactors: a swap from Factors, of a session with none, must return ErrConflict")
	wantSession(t, s, sess, now, "UpdateSessionFactors: a refused swap must change nothing")
	wantSession(t, s, none, now, "UpdateSessionFactors: a refused swap must change nothing")
}

// testUpdateSessionFactorsSameBytes: a swap to the factors the session has
// succeeds, as any swap from them does.
func testUpdateSessionFactorsSameBytes(t *testing.T, s store.Store) {
	mustCreateUser(t, s, "u1")
	sess := withFactors(newSession("s1", "u1", base, at(ttl)), proof("s1", 1))
	mustCreateSession(t, s, sess, "s1/r0")
	mustCreateSession(t, s, newSession("s2", "u1", base, at(ttl)), "s2/r0")
	now := at(time.Minute)
	mustUpdateSessionFactors(t, s, "s1", proof("s1", 1), proof("s1", 1), now, "a swap to the Factors the session has")
	wantSession(t, s, sess, now, "UpdateSessionFactors: a swap to the Factors the session has must leave them")
	mustUpdateSessionFactors(t, s, "s2", nil, nil, now, "a swap from nil to nil of a session with no Factors")
	mustUpdateSessionFactors(t, s, "s2", []byte{}, nil, now, "a swap from empty to nil of a session with no Factors")
	wantFactors(t, s, "s2", nil, now, "UpdateSessionFactors: a swap from nil to nil must leave the session with none")
}

// testUpdateSessionFactorsEnded: the factors of a session that has ended
// do not change: EndedError, with the reason, as Session says.
func testUpdateSessionFactorsEnded(t *testing.T, s store.Store) {
	ctx := t.Context()
	mustCreateUser(t, s, "u1")
	mustCreateUser(t, s, "u2")
	for _, sess := range []store.Session{
		withFactors(newSession("revoked", "u1", base, at(ttl)), proof("revoked", 0)),
		withFactors(newSession("stolen", "u1", base, at(ttl)), proof("stolen", 0)),
		withFactors(newSession("all", "u2", base, at(ttl)), proof("all", 0)),
	} {
		mustCreateSession(t, s, sess, sess.Handle+"/r0")
	}
	if err := s.RevokeSession(ctx, "revoked", store.EndSignedOut); err != nil {
		t.Fatalf("RevokeSession: %v", err)
	}
	now := at(time.Minute)
	r := rotation("stolen/r0", "stolen/r1", now, 0)
	mustRotate(t, s, r, updated(withFactors(newSession("stolen", "u1", base, at(ttl)), proof("stolen", 0)), r),
		"the current token of a live session")
	if _, err := s.RotateRefreshToken(ctx, rotation("stolen/r0", "stolen/r2", now, 0)); !errors.Is(err, store.ErrTokenReused) {
		t.Fatalf("RotateRefreshToken: the token just superseded, without a reuse window, must return ErrTokenReused; got error %v", err)
	}
	if _, err := s.RevokeUserSessions(ctx, "u2"); err != nil {
		t.Fatalf("RevokeUserSessions: %v", err)
	}
	for _, c := range []struct {
		handle string
		why    store.EndReason
	}{{"revoked", store.EndSignedOut}, {"stolen", store.EndTokenTheft}, {"all", store.EndRevoked}} {
		for _, old := range [][]byte{proof(c.handle, 0), proof(c.handle, 9)} {
			err := s.UpdateSessionFactors(ctx, c.handle, old, proof(c.handle, 1), now)
			wantEnded(t, err, c.why, fmt.Sprintf("UpdateSessionFactors of a session that ended (%s), from %s,", c.why, showBytes(old)))
		}
		_, err := s.Session(ctx, c.handle, now)
		wantEnded(t, err, c.why, "UpdateSessionFactors: a refused swap must change nothing, so Session of the ended session")
	}
}

// testUpdateSessionFactorsExpired: the factors of a session that has
// expired at now do not change: UpdateSessionFactors reports what Session
// does (an EndedError, which matches ErrNotFound), from the very instant of
// its expiry, and ErrNotFound once DeleteExpired has removed it.
func testUpdateSessionFactorsExpired(t *testing.T, s store.Store) {
	ctx := t.Context()
	mustCreateUser(t, s, "u1")
	sess := withFactors(newSession("s1", "u1", base, at(time.Hour)), proof("s1", 0))
	mustCreateSession(t, s, sess, "s1/r0")
	mustUpdateSessionFactors(t, s, "s1", proof("s1", 0), proof("s1", 1), at(time.Hour-time.Millisecond),
		"a swap a moment before the session expires")
	sess.Factors = proof("s1", 1)

	for _, now := range []time.Time{at(time.Hour), at(2 * time.Hour)} {
		err := s.UpdateSessionFactors(ctx, "s1", proof("s1", 1), proof("s1", 2), now)
		rule := fmt.Sprintf("UpdateSessionFactors of a session that expired at %v", sess.ExpiresAt)
		if !wantErr(t, err, store.ErrNotFound, rule+" must match ErrNotFound") {
			continue
		}
		_, serr := s.Session(ctx, "s1", now)
		var ended *store.EndedError
		if errors.As(serr, &ended) {
			wantEnded(t, err, ended.Reason, rule+", as Session reports an EndedError,")
		}
	}
	wantSession(t, s, sess, at(time.Hour-time.Millisecond), "UpdateSessionFactors: a refused swap must change nothing")

	if err := s.DeleteExpired(ctx, at(time.Hour)); err != nil {
		t.Fatalf("DeleteExpired: %v", err)
	}
	err := s.UpdateSessionFactors(ctx, "s1", proof("s1", 1), proof("s1", 2), at(time.Hour))
	wantErr(t, err, store.ErrNotFound, "UpdateSessionFactors of a session DeleteExpired removed must return ErrNotFound")
}

// testUpdateSessionFactorsUnknown: a swap of a session the store does not
// know, or no longer knows, returns ErrNotFound and creates nothing.
func testUpdateSessionFactorsUnknown(t *testing.T, s store.Store) {
	ctx := t.Context()
	now := at(time.Minute)
	err := s.UpdateSessionFactors(ctx, "nobody", nil, proof("nobody", 1), now)
	wantErr(t, err, store.ErrNotFound, "UpdateSessionFactors of an unknown session must return ErrNotFound")
	wantNoSession(t, s, "nobody", now, "UpdateSessionFactors: a refused swap must create no session")

	mustCreateUser(t, s, "u1")
	mustCreateSession(t, s, withFactors(newSession("s1", "u1", base, at(ttl)), proof("s1", 0)), "s1/r0")
	if _, err := s.DeleteUser(ctx, "u1"); err != nil {
		t.Fatalf("DeleteUser: %v", err)
	}
	err = s.UpdateSessionFactors(ctx, "s1", proof("s1", 0), proof("s1", 1), now)
	wantErr(t, err, store.ErrNotFound, "UpdateSessionFactors of a session of a deleted user must return ErrNotFound")
}

// testUpdateLoginMaterial: a swap from a login's material sets it, visible
// through Login, Logins and LoginsByEmail, and changes nothing else, nor
// any other login.
func testUpdateLoginMaterial(t *testing.T, s store.Store) {
	u := mustCreateOwner(t, s, "u1")
	pk := passkey("pk1", "u1", "cred-1", u.Email, counter("cred-1", 0))
	mustLinkLogin(t, s, pk)
	mfa := secondFactors("u1/mfa", "u1", record("u1", 0))
	mustLinkLogin(t, s, mfa)
	v := mustCreatePasskeyUser(t, s, "u2", "cred-2", counter("cred-2", 0))

	mustUpdateLoginMaterial(t, s, "u1/mfa", record("u1", 0), record("u1", 1), "a swap from the login's Material")
	mfa.Material = record("u1", 1)
	wantLogin(t, s, mfa, "UpdateLoginMaterial: a swap from the login's Material must set it to new, and change nothing else")
	mustUpdateLoginMaterial(t, s, "pk1", counter("cred-1", 0), counter("cred-1", 1), "a swap of a passkey's Material")
	pk.Material = counter("cred-1", 1)
	wantLogin(t, s, pk, "UpdateLoginMaterial: must set any login's Material")
	wantPasskeyLoginsByEmail(t, s, pk, "UpdateLoginMaterial: LoginsByEmail must return the Material it set")
	wantUser(t, s, u, "UpdateLoginMaterial: must change only the login it names")
	wantUser(t, s, v, "UpdateLoginMaterial: must not change other users' logins")

	// A login with none, from nil, and on.
	mustUpdateLoginMaterial(t, s, "u1", nil, []byte("extra"), "a swap from nil of a login with no Material")
	mustUpdateLoginMaterial(t, s, "u1", []byte("extra"), nil, "a swap back to nil")
	wantUser(t, s, u, "UpdateLoginMaterial: a swap to nil must leave the login with none")
}

// testUpdateLoginMaterialConflict: a swap from material the login does not
// have returns ErrConflict and changes nothing.
func testUpdateLoginMaterialConflict(t *testing.T, s store.Store) {
	ctx := t.Context()
	u := mustCreateOwner(t, s, "u1")
	mfa := secondFactors("u1/mfa", "u1", record("u1", 1))
	mustLinkLogin(t, s, mfa)
	for _, old := range [][]byte{record("u1", 0), nil, {}, record("u1", 1)[:5]} {
		err := s.UpdateLoginMaterial(ctx, "u1/mfa", old, record("u1", 2))
		wantErr(t, err, store.ErrConflict, fmt.Sprintf("UpdateLoginMaterial: a swap from %s, of a login whose Material is other, must return ErrConflict", showBytes(old)))
	}
	err := s.UpdateLoginMaterial(ctx, "u1", record("u1", 1), record("u1", 2))
	wantErr(t, err, store.ErrConflict, "UpdateLoginMaterial: a swap from Material, of a login with none, must return ErrConflict")
	wantLogin(t, s, mfa, "UpdateLoginMaterial: a refused swap must change nothing")
	wantUser(t, s, u, "UpdateLoginMaterial: a refused swap must change nothing")

	// A swap to the material the login has succeeds.
	mustUpdateLoginMaterial(t, s, "u1/mfa", record("u1", 1), record("u1", 1), "a swap to the Material the login has")
	wantLogin(t, s, mfa, "UpdateLoginMaterial: a swap to the Material the login has must leave it")
}

// testUpdateLoginMaterialNilAndEmpty: in a swap nil and empty are the
// same.
func testUpdateLoginMaterialNilAndEmpty(t *testing.T, s store.Store) {
	mustCreatePasskeyUser(t, s, "u1", "cred-1", []byte{})
	v := mustCreatePasskeyUser(t, s, "u2", "cred-2", nil)
	mustUpdateLoginMaterial(t, s, "u1", nil, counter("cred-1", 1), "a swap from nil of a login with empty Material")
	wantMaterial(t, s, store.WebAuthnKey(rp, "cred-1"), counter("cred-1", 1), "UpdateLoginMaterial: a swap from nil of empty Material must set it")
	mustUpdateLoginMaterial(t, s, "u2", []byte{}, counter("cred-2", 1), "a swap from empty of a login with nil Material")
	wantMaterial(t, s, v.LoginKey, counter("cred-2", 1), "UpdateLoginMaterial: a swap from empty of nil Material must set it")
	mustUpdateLoginMaterial(t, s, "u2", counter("cred-2", 1), []byte{}, "a swap to empty")
	mustUpdateLoginMaterial(t, s, "u2", nil, nil, "a swap from nil to nil of a login whose Material was set to empty")
	if l, err := s.Login(t.Context(), v.LoginKey); err != nil || len(l.Material) != 0 {
		t.Errorf("UpdateLoginMaterial: a swap to empty must leave the login with none; got %+v, error %v", l, err)
	}
}

// testUpdateLoginMaterialUnknown: a swap of a login the store does not
// know returns ErrNotFound and creates nothing.
func testUpdateLoginMaterialUnknown(t *testing.T, s store.Store) {
	ctx := t.Context()
	err := s.UpdateLoginMaterial(ctx, "nobody", nil, record("nobody", 1))
	wantErr(t, err, store.ErrNotFound, "UpdateLoginMaterial of an unknown login must return ErrNotFound")
	u := mustCreateOwner(t, s, "u1")
	mustLinkLogin(t, s, secondFactors("u1/mfa", "u1", record("u1", 0)))
	err = s.UpdateLoginMaterial(ctx, "nobody", record("u1", 0), record("u1", 1))
	wantErr(t, err, store.ErrNotFound, "UpdateLoginMaterial of an unknown login must return ErrNotFound while others exist")
	if _, err := s.DeleteLogin(ctx, "u1/mfa"); err != nil {
		t.Fatalf("DeleteLogin: %v", err)
	}
	err = s.UpdateLoginMaterial(ctx, "u1/mfa", record("u1", 0), record("u1", 1))
	wantErr(t, err, store.ErrNotFound, "UpdateLoginMaterial of a deleted login must return ErrNotFound")
	if logins, err := s.Logins(ctx, "u1"); err != nil || len(logins) != 1 {
		t.Errorf("UpdateLoginMaterial: a refused swap must create no login; Logins = %+v, error %v", logins, err)
	}
	wantUser(t, s, u, "UpdateLoginMaterial: a refused swap must change nothing")
}

// testLoginMaterialNotAliased: the store keeps its own copy of the
// material UpdateLoginMaterial gives it, and gives out copies.
func testLoginMaterialNotAliased(t *testing.T, s store.Store) {
	ctx := t.Context()
	mustCreateOwner(t, s, "u1")
	mfa := secondFactors("u1/mfa", "u1", record("u1", 0))
	mustLinkLogin(t, s, mfa)
	old, next := record("u1", 0), record("u1", 1)
	mustUpdateLoginMaterial(t, s, "u1/mfa", old, next, "a swap from the login's Material")
	mfa.Material = bytes.Clone(next)
	clear(old)
	clear(next)
	wantLogin(t, s, mfa, "UpdateLoginMaterial: must keep its own copy of the new Material")
	if l, err := s.Login(ctx, mfa.LoginKey); err == nil {
		clear(l.Material)
	}
	if logins, err := s.Logins(ctx, "u1"); err == nil {
		for _, l := range logins {
			clear(l.Material)
		}
	}
	wantLogin(t, s, mfa, "Login and Logins: must return copies of Material that the caller may modify")
}

// testSecondFactorsRecord: a user's record of second factors is a login
// like any other to the store: linked without an email, found by its key,
// unique per user.
func testSecondFactorsRecord(t *testing.T, s store.Store) {
	ctx := t.Context()
	u := mustCreateOwner(t, s, "u1")
	mfa := secondFactors("u1/mfa", "u1", record("u1", 0))
	mustLinkLogin(t, s, mfa)
	wantLogin(t, s, mfa, "LinkLogin: a record of second factors must be kept as written")
	wantUser(t, s, u, "LinkLogin: a record of second factors must not change the user's other logins")
	if logins, err := s.LoginsByEmail(ctx, u.Email); err != nil || len(logins) != 1 {
		t.Errorf("LinkLogin: a record of second factors has no email, so LoginsByEmail(%q) must not return it; got %+v, error %v", u.Email, logins, err)
	}
	err := s.LinkLogin(ctx, secondFactors("u1/mfa2", "u1", record("u1", 9)))
	wantErr(t, err, store.ErrConflict, "LinkLogin: a second record of second factors of a user has the key of the first, so it must return ErrConflict")
	wantLogin(t, s, mfa, "LinkLogin: a refused link must change nothing")
}

// testDeleteLoginSecondFactors: a record of second factors is no way to
// sign in. A user with one login and the record cannot lose the login
// (ErrLastLogin, and nothing changes), but may lose the record.
func testDeleteLoginSecondFactors(t *testing.T, s store.Store) {
	ctx := t.Context()
	u := mustCreateOwner(t, s, "u1")
	mfa := secondFactors("u1/mfa", "u1", record("u1", 0))
	mustLinkLogin(t, s, mfa)
	sess := newSession("s1", "u1", base, at(ttl))
	mustCreateSession(t, s, sess, "s1/r0")

	_, err := s.DeleteLogin(ctx, "u1")
	wantErr(t, err, store.ErrLastLogin,
		"DeleteLogin: the user's only login besides its record of second factors is its only way to sign in, and must return ErrLastLogin")
	now := at(time.Minute)
	wantUser(t, s, u, "DeleteLogin: a refused removal must change nothing, so the login must stay")
	wantLogin(t, s, mfa, "DeleteLogin: a refused removal must change nothing, so the record of second factors must stay")
	wantSession(t, s, sess, now, "DeleteLogin: a refused removal must change nothing, so the login's session must stay")

	handles, err := s.DeleteLogin(ctx, "u1/mfa")
	if !wantErr(t, err, nil, "DeleteLogin: a record of second factors of a user with a way to sign in must be removed") {
		return
	}
	wantHandles(t, handles, nil, "DeleteLogin: a record of second factors started no session")
	_, err = s.Login(ctx, mfa.LoginKey)
	wantErr(t, err, store.ErrNotFound, "DeleteLogin: the removed record of second factors must no longer be found")
	wantUser(t, s, u, "DeleteLogin: removing the record of second factors must leave the user's login")
	wantSession(t, s, sess, now, "DeleteLogin: removing the record of second factors must end no session")
	_, err = s.DeleteLogin(ctx, "u1")
	wantErr(t, err, store.ErrLastLogin, "DeleteLogin: the user's only login must return ErrLastLogin")
}

// testDeleteLoginSecondFactorsTwoWaysIn: a user with two ways to sign in
// and a record of second factors may lose one of them; then the other is
// its last.
func testDeleteLoginSecondFactorsTwoWaysIn(t *testing.T, s store.Store) {
	ctx := t.Context()
	u := mustCreateOwner(t, s, "u1")
	l2 := linkedLogin("l2", "u1", "google", "g-2", u.Email)
	mustLinkLogin(t, s, l2)
	mfa := secondFactors("u1/mfa", "u1", record("u1", 0))
	mustLinkLogin(t, s, mfa)

	if _, err := s.DeleteLogin(ctx, "u1"); err != nil {
		t.Fatalf("DeleteLogin: a login of a user with another way to sign in must be removed; got error %v", err)
	}
	_, err := s.Login(ctx, u.LoginKey)
	wantErr(t, err, store.ErrNotFound, "DeleteLogin: the removed login must no longer be found")
	wantLogin(t, s, l2, "DeleteLogin: the user's other login must be unchanged")
	wantLogin(t, s, mfa, "DeleteLogin: the user's record of second factors must be unchanged")
	_, err = s.DeleteLogin(ctx, "l2")
	wantErr(t, err, store.ErrLastLogin,
		"DeleteLogin: the login left after another was removed is the only way to sign in, beside a record of second factors, and must return ErrLastLogin")
	wantLogin(t, s, l2, "DeleteLogin: a refused removal must change nothing")
}

// testDeleteUserSecondFactors: deleting a user removes its record of
// second factors, freeing its key.
func testDeleteUserSecondFactors(t *testing.T, s store.Store) {
	ctx := t.Context()
	mustCreateOwner(t, s, "u1")
	mfa := secondFactors("u1/mfa", "u1", record("u1", 0))
	mustLinkLogin(t, s, mfa)
	v := mustCreateOwner(t, s, "u2")
	theirs := secondFactors("u2/mfa", "u2", record("u2", 0))
	mustLinkLogin(t, s, theirs)
	if _, err := s.DeleteUser(ctx, "u1"); err != nil {
		t.Fatalf("DeleteUser: an existing user must be removed; got error %v", err)
	}
	_, err := s.Login(ctx, mfa.LoginKey)
	wantErr(t, err, store.ErrNotFound, "DeleteUser: must remove the user's record of second factors, so Login")
	err = s.UpdateLoginMaterial(ctx, "u1/mfa", record("u1", 0), record("u1", 1))
	wantErr(t, err, store.ErrNotFound, "DeleteUser: must remove the user's record of second factors, so UpdateLoginMaterial")
	wantUser(t, s, v, "DeleteUser: must not change other users")
	wantLogin(t, s, theirs, "DeleteUser: must not change other users' records of second factors")

	// The key and the id are free again.
	mustCreateOwner(t, s, "u1")
	mustLinkLogin(t, s, mfa)
	wantLogin(t, s, mfa, "DeleteUser: must free the key of the user's record of second factors")
}

// testConcurrentUpdateSessionFactors swaps one session's factors from the
// same old in many concurrent calls, once on each of several sessions.
//
// Invariant checked: exactly one call succeeds and its new is the
// session's factors; every other returns ErrConflict.
func testConcurrentUpdateSessionFactors(t *testing.T, s store.Store) {
	const n = 16
	ctx := t.Context()
	mustCreateUser(t, s, "u1")
	for round := range stormRounds {
		handle := fmt.Sprintf("s%d", round)
		old := proof(handle, 0)
		if round%2 == 1 {
			old = nil
		}
		mustCreateSession(t, s, withFactors(newSession(handle, "u1", base, at(ttl)), old), handle+"/r0")
		next := func(i int) []byte { return fmt.Appendf(nil, "factors of %s, call %d", handle, i) }

		now := at(time.Minute)
		errs := make([]error, n)
		parallel(n, func(i int) { errs[i] = s.UpdateSessionFactors(ctx, handle, old, next(i), now) })
		winner := -1
		for i, err := range errs {
			switch {
			case err == nil && winner >= 0:
				t.Errorf("UpdateSessionFactors: of concurrent swaps from the same Factors at most one may succeed; in round %d calls %d and %d did", round, winner, i)
			case err == nil:
				winner = i
			case !errors.Is(err, store.ErrConflict):
				t.Errorf("UpdateSessionFactors: a concurrent swap after another changed the Factors must return ErrConflict; round %d got error %v", round, err)
			}
		}
		if winner < 0 {
			t.Fatalf("UpdateSessionFactors: of concurrent swaps from the session's Factors exactly one must succeed; in round %d none did", round)
		}
		wantFactors(t, s, handle, next(winner), now, "UpdateSessionFactors: after concurrent swaps, the Factors must be the one call's that succeeded")
	}
}

// testConcurrentUpdateLoginMaterial swaps a record of second factors from
// the same old in many concurrent calls, round after round, as several
// uses of one recovery code racing each other would.
//
// Invariant checked: exactly one call succeeds and its new is the login's
// material; every other returns ErrConflict.
func testConcurrentUpdateLoginMaterial(t *testing.T, s store.Store) {
	const n = 16
	ctx := t.Context()
	mustCreateOwner(t, s, "u1")
	mfa := secondFactors("u1/mfa", "u1", nil)
	mustLinkLogin(t, s, mfa)
	var old []byte
	for round := range stormRounds {
		next := func(i int) []byte { return fmt.Appendf(nil, "record of u1, round %d, call %d", round, i) }
		errs := make([]error, n)
		parallel(n, func(i int) { errs[i] = s.UpdateLoginMaterial(ctx, "u1/mfa", old, next(i)) })
		winner := -1
		for i, err := range errs {
			switch {
			case err == nil && winner >= 0:
				t.Errorf("UpdateLoginMaterial: of concurrent swaps from the same Material at most one may succeed; in round %d calls %d and %d did", round, winner, i)
			case err == nil:
				winner = i
			case !errors.Is(err, store.ErrConflict):
				t.Errorf("UpdateLoginMaterial: a concurrent swap after another changed the Material must return ErrConflict; round %d got error %v", round, err)
			}
		}
		if winner < 0 {
			t.Fatalf("UpdateLoginMaterial: of concurrent swaps from the login's Material exactly one must succeed; in round %d none did", round)
		}
		wantMaterial(t, s, mfa.LoginKey, next(winner), "UpdateLoginMaterial: after concurrent swaps, the Material must be the one call's that succeeded")
		old = next(winner)
	}
}
