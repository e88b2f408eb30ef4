package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/latchkit/auth/store"
)

var deleteExpiredTests = []test{
	{"AtTheInstant", testDeleteExpiredAtInstant},
	{"RemovesExpired", testDeleteExpired},
	{"KeepsLive", testDeleteExpiredKeepsLive},
}

func testDeleteExpired(t *testing.T, s store.Store) {
	u := mustCreateUser(t, s, "u1")

	// a expires entirely.
	a := newSession("a", "u1", base, at(time.Hour))
	mustCreateSession(t, s, a, "a/r0")
	// b lives on and has a superseded token.
	b := newSession("b", "u1", at(time.Minute), at(10*time.Hour))
	mustCreateSession(t, s, b, "b/r0")
	r := rotation("b/r0", "b/r1", at(time.Hour), 0)
	r.ExpiresAt = at(10 * time.Hour)
	b = mustRotate(t, s, r, updated(b, r), "the current token of a live session")
	// c ended, and would have expired: it goes.
	c := newSession("c", "u1", at(2*time.Minute), at(time.Hour))
	mustCreateSession(t, s, c, "c/r0")
	// d ended, and would still be live: why it ended is kept.
	d := newSession("d", "u1", at(3*time.Minute), at(10*time.Hour))
	mustCreateSession(t, s, d, "d/r0")
	for _, h := range []string{"c", "d"} {
		if err := s.RevokeSession(t.Context(), h, store.EndSignedOut); err != nil {
			t.Fatalf("RevokeSession: %v", err)
		}
	}

	k1 := newKey("k1", base, at(30*time.Minute), at(time.Hour))
	k2 := newKey("k2", at(time.Minute), at(5*time.Hour), at(10*time.Hour))
	mustAddKey(t, s, k1)
	mustAddKey(t, s, k2)

	now := at(2 * time.Hour)
	if err := s.DeleteExpired(t.Context(), now); err != nil {
		t.Fatalf("DeleteExpired: must succeed; got error %v", err)
	}

	// Stores never read a clock: asking about a time before things expired
	// tells removed records from merely expired ones.
	earlier := at(20 * time.Minute)
	wantNoSession(t, s, "a", earlier, "DeleteExpired: must remove expired sessions")
	_, err := s.Session(t.Context(), "a", earlier)
	if errors.As(err, new(*store.EndedError)) {
		t.Errorf("DeleteExpired: must remove expired sessions, which are then not found rather than expired; got %v", err)
	}
	_, err = s.Session(t.Context(), "c", earlier)
	if !errors.Is(err, store.ErrNotFound) || errors.As(err, new(*store.EndedError)) {
		t.Errorf("DeleteExpired: must remove an ended session that would have expired; Session got %v", err)
	}
	_, err = s.Session(t.Context(), "d", earlier)
	wantEnded(t, err, store.EndSignedOut, "DeleteExpired: must keep why a session ended until it would have expired; Session")
	wantUserSessions(t, s, "u1", earlier, []store.Session{b}, "DeleteExpired: must remove expired sessions and keep live ones")
	wantKeys(t, s, earlier, []store.SigningKey{k2}, "DeleteExpired: must remove keys whose VerifyUntil has passed and keep the others")
	wantRotateErr(t, s, rotation("a/r0", "a/r1", earlier, 0), store.ErrNotFound,
		"DeleteExpired must remove expired sessions: their tokens must return ErrNotFound")

	wantUserSessions(t, s, "u1", now, []store.Session{b}, "DeleteExpired: must keep live sessions")
	wantKeys(t, s, now, []store.SigningKey{k2}, "DeleteExpired: must keep live keys")
	wantUser(t, s, u, "DeleteExpired: must not remove users")

	// Last, because it ends b.
	wantRotateErr(t, s, rotation("b/r0", "b/r2", now, 0), store.ErrTokenReused,
		"DeleteExpired must keep what recognises a superseded token, or the reuse of a stolen token goes unnoticed: b/r0 must return ErrTokenReused")
}

func testDeleteExpiredKeepsLive(t *testing.T, s store.Store) {
	if err := s.DeleteExpired(t.Context(), base); err != nil {
		t.Fatalf("DeleteExpired: must succeed on an empty store; got error %v", err)
	}

	u := mustCreateUser(t, s, "u1")
	sess := newSession("s1", "u1", base, at(ttl))
	mustCreateSession(t, s, sess, "s1/r0")
	r := rotation("s1/r0", "s1/r1", at(time.Hour), 0)
	sess = mustRotate(t, s, r, updated(sess, r), "the current token of a live session")
	k := newKey("k1", base, at(ttl), at(2*ttl))
	mustAddKey(t, s, k)

	now := at(2 * time.Hour)
	if err := s.DeleteExpired(t.Context(), now); err != nil {
		t.Fatalf("DeleteExpired: must succeed; got error %v", err)
	}
	wantUser(t, s, u, "DeleteExpired: must not remove users")
	wantUserSessions(t, s, "u1", base, []store.Session{sess}, "DeleteExpired: must keep sessions that have not expired")
	wantKeys(t, s, base, []store.SigningKey{k}, "DeleteExpired: must keep keys that still verify")
	r = rotation("s1/r1", "s1/r2", now, 0)
	mustRotate(t, s, r, updated(sess, r), "DeleteExpired: must keep the current tokens of live sessions, so rotating one")
	wantRotateErr(t, s, rotation("s1/r0", "x", now, 0), store.ErrTokenReused,
		"DeleteExpired must keep superseded tokens that have not expired: presenting one must return ErrTokenReused")
}

// A record whose expiry is exactly now has expired, so DeleteExpired
// removes it.
func testDeleteExpiredAtInstant(t *testing.T, s store.Store) {
	u := mustCreateUser(t, s, "u1")
	mustCreateSession(t, s, newSession("s1", "u1", base, at(time.Hour)), "s1/r0")
	mustCreateResetToken(t, s, newResetToken("reset", "u1", base, at(time.Hour)))
	mustCreateVerificationToken(t, s, newVerificationToken("verify", "u1", u.Email, base, at(time.Hour)))
	if err := s.DeleteExpired(t.Context(), at(time.Hour)); err != nil {
		t.Fatalf("DeleteExpired: %v", err)
	}
	if err := s.RevokeSession(t.Context(), "s1", store.EndRevoked); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("DeleteExpired: a session whose ExpiresAt is now must be removed; RevokeSession found it (%v)", err)
	}
	// The reset token's hash is free again once it is removed.
	if err := s.CreateCode(t.Context(), newResetToken("reset", "u1", at(time.Hour), at(2*time.Hour))); err != nil {
		t.Errorf("DeleteExpired: a reset token whose ExpiresAt is now must be removed, freeing its hash; got %v", err)
	}
	if err := s.CreateCode(t.Context(), newVerificationToken("verify", "u1", u.Email, at(time.Hour), at(2*time.Hour))); err != nil {
		t.Errorf("DeleteExpired: a verification token whose ExpiresAt is now must be removed, freeing its hash; got %v", err)
	}
}
