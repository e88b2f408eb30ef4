package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/latchkit/auth/store"
)

var rotationTests = []test{
	{"Chain", testRotateChain},
	{"Reuse", testRotateReuse},
	{"ReuseOlderGeneration", testRotateReuseOlderGeneration},
	{"UnknownToken", testRotateUnknownToken},
	{"ExpiredToken", testRotateExpiredToken},
	{"ExpiredSession", testRotateExpiredSession},
	{"ExpiredSessionSupersededToken", testRotateExpiredSessionSupersededToken},
	{"ReuseWindowPredecessor", testRotateReuseWindowPredecessor},
	{"ReuseWindowPredecessorStays", testRotateReuseWindowPredecessorStays},
	{"ReuseWindowElapsed", testRotateReuseWindowElapsed},
	{"ReuseWindowDoesNotSlide", testRotateReuseWindowDoesNotSlide},
	{"ReuseWindowBoundary", testRotateReuseWindowBoundary},
	{"ReuseWindowTwoGenerations", testRotateReuseWindowTwoGenerations},
	{"ReuseWindowZero", testRotateReuseWindowZero},
	{"ReuseNextConflict", testRotateReuseNextConflict},
	{"AtExpiry", testRotateAtExpiry},
	{"Allowance", testRotateAllowance},
	{"AllowanceTheft", testRotateAllowanceTheft},
	{"AllowanceReuseWindow", testRotateAllowanceReuseWindow},
	{"RevokeLongHistory", testRotateRevokeLongHistory},
}

func testRotateChain(t *testing.T, s store.Store) {
	mustCreateUser(t, s, "u1")
	sess := newSession("s1", "u1", base, at(ttl))
	mustCreateSession(t, s, sess, "r0")

	r := rotation("r0", "r1", at(time.Hour), 0)
	sess = mustRotate(t, s, r, updated(sess, r), "the current token of a live session")
	wantSession(t, s, sess, r.Now, "RotateRefreshToken: must store the updated RefreshedAt and ExpiresAt")

	// After the first ExpiresAt: the rotation has extended the session.
	r = rotation("r1", "r2", at(ttl+30*time.Minute), 0)
	sess = mustRotate(t, s, r, updated(sess, r), "a session extended by the previous rotation must stay alive and its current token")
	wantSession(t, s, sess, r.Now.Add(ttl-time.Second), "RotateRefreshToken: the session must live until the new ExpiresAt")
	wantUserSessions(t, s, "u1", r.Now, []store.Session{sess}, "RotateRefreshToken: UserSessions must show the updated session")

	r = rotation("r2", "r3", r.Now.Add(time.Minute), 0)
	mustRotate(t, s, r, updated(sess, r), "the token that the previous rotation made current")
}

func testRotateReuse(t *testing.T, s store.Store) {
	mustCreateUser(t, s, "u1")
	s1 := newSession("s1", "u1", base, at(ttl))
	s2 := newSession("s2", "u1", at(time.Minute), at(ttl))
	mustCreateSession(t, s, s1, "r0")
	mustCreateSession(t, s, s2, "q0")

	r := rotation("r0", "r1", at(time.Hour), 0)
	s1 = mustRotate(t, s, r, updated(s1, r), "the current token of a live session")

	now := at(2 * time.Hour)
	got := wantRotateErr(t, s, rotation("r0", "x", now, 0), store.ErrTokenReused,
		"a superseded token of a live session must return ErrTokenReused")
	if d := sessionDiff(got, s1); d != "" {
		t.Errorf("RotateRefreshToken: on reuse must return the session as it was: %s", d)
	}
	wantNoSession(t, s, "s1", now, "RotateRefreshToken: reuse must revoke the session")
	wantRotateErr(t, s, rotation("r1", "y", now, 0), store.ErrNotFound,
		"reuse must revoke all the session's tokens: the current one must then return ErrNotFound")
	wantRotateErr(t, s, rotation("x", "z", now, 0), store.ErrNotFound,
		"reuse must not write Next: it must return ErrNotFound")
	wantRotateErr(t, s, rotation("r0", "w", now, 0), store.ErrNotFound,
		"a token of a revoked session must return ErrNotFound, not ErrTokenReused again")
	err := s.RevokeSession(t.Context(), "s1")
	wantErr(t, err, store.ErrNotFound, "RotateRefreshToken: reuse must delete the session, so RevokeSession must return ErrNotFound")

	wantUserSessions(t, s, "u1", now, []store.Session{s2}, "RotateRefreshToken: reuse must revoke only the session the token belongs to")
	r = rotation("q0", "q1", now, 0)
	mustRotate(t, s, r, updated(s2, r), "RotateRefreshToken: reuse must revoke only the session the token belongs to, so the current token of another session")
}

func testRotateReuseOlderGeneration(t *testing.T, s store.Store) {
	mustCreateUser(t, s, "u1")
	sess := newSession("s1", "u1", base, at(ttl))
	mustCreateSession(t, s, sess, "r0")
	r := rotation("r0", "r1", at(time.Hour), 0)
	sess = mustRotate(t, s, r, updated(sess, r), "the current token of a live session")
	r = rotation("r1", "r2", at(2*time.Hour), 0)
	sess = mustRotate(t, s, r, updated(sess, r), "the current token of a live session")

	now := at(3 * time.Hour)
	got := wantRotateErr(t, s, rotation("r0", "x", now, 0), store.ErrTokenReused,
		"a token superseded two generations ago must return ErrTokenReused")
	if d := sessionDiff(got, sess); d != "" {
		t.Errorf("RotateRefreshToken: on reuse must return the session as it was: %s", d)
	}
	wantNoSession(t, s, "s1", now, "RotateRefreshToken: reuse must revoke the session")
	wantRotateErr(t, s, rotation("r2", "y", now, 0), store.ErrNotFound,
		"reuse must revoke all the session's tokens: the current one must then return ErrNotFound")
}

func testRotateUnknownToken(t *testing.T, s store.Store) {
	mustCreateUser(t, s, "u1")
	s1 := newSession("s1", "u1", base, at(ttl))
	s2 := newSession("s2", "u1", at(time.Minute), at(ttl))
	mustCreateSession(t, s, s1, "s1/r0")
	mustCreateSession(t, s, s2, "s2/r0")
	r := rotation("s1/r0", "s1/r1", at(time.Hour), 0)
	s1 = mustRotate(t, s, r, updated(s1, r), "the current token of a live session")

	now := at(time.Hour + time.Minute)
	for _, window := range []time.Duration{0, time.Hour} {
		wantRotateErr(t, s, rotation("forged", "n", now, window), store.ErrNotFound,
			fmt.Sprintf("an unknown token must return ErrNotFound (ReuseWindow %v)", window))
	}
	wantRotateErr(t, s, rotation("n", "m", now, 0), store.ErrNotFound,
		"a rejected rotation must not write Next: it must return ErrNotFound")
	wantUserSessionsAnyOrder(t, s, "u1", now, []store.Session{s2, s1}, "RotateRefreshToken: an unknown token must never harm a session")

	r = rotation("s1/r1", "s1/r2", now, 0)
	mustRotate(t, s, r, updated(s1, r), "RotateRefreshToken: an unknown token must never harm a session, so the current token")
	r = rotation("s2/r0", "s2/r1", now, 0)
	mustRotate(t, s, r, updated(s2, r), "RotateRefreshToken: an unknown token must never harm a session, so the current token")
}

func testRotateExpiredToken(t *testing.T, s store.Store) {
	mustCreateUser(t, s, "u1")
	sess := newSession("s1", "u1", base, at(time.Hour))
	mustCreateSession(t, s, sess, "r0")
	// r0 keeps its expiry of one hour; r1 and the session live for three.
	r := rotation("r0", "r1", at(30*time.Minute), 0)
	r.ExpiresAt = at(3 * time.Hour)
	sess = mustRotate(t, s, r, updated(sess, r), "the current token of a live session")

	now := at(90 * time.Minute)
	wantRotateErr(t, s, rotation("r0", "x", now, 2*time.Hour), store.ErrNotFound,
		"an expired predecessor must return ErrNotFound even inside the reuse window")
	wantRotateErr(t, s, rotation("r0", "x", now, 0), store.ErrNotFound,
		"an expired superseded token must return ErrNotFound, not ErrTokenReused")
	wantSession(t, s, sess, now, "RotateRefreshToken: an expired token must change nothing")
	r = rotation("r1", "r2", now, 0)
	mustRotate(t, s, r, updated(sess, r), "RotateRefreshToken: an expired token must change nothing, so the current token")
}

func testRotateExpiredSession(t *testing.T, s store.Store) {
	mustCreateUser(t, s, "u1")
	sess := newSession("s1", "u1", base, at(time.Hour))
	mustCreateSession(t, s, sess, "r0")

	wantRotateErr(t, s, rotation("r0", "r1", at(2*time.Hour), 0), store.ErrNotFound,
		"the token of an expired session must return ErrNotFound")
	wantRotateErr(t, s, rotation("r0", "r1", at(2*time.Hour), time.Hour), store.ErrNotFound,
		"the token of an expired session must return ErrNotFound whatever the reuse window")

	// Stores never read a clock, so going back in time shows whether the
	// rejected calls changed anything.
	earlier := at(30 * time.Minute)
	wantRotateErr(t, s, rotation("r1", "r2", earlier, 0), store.ErrNotFound,
		"a rejected rotation must not write Next: it must return ErrNotFound")
	r := rotation("r0", "r3", earlier, 0)
	mustRotate(t, s, r, updated(sess, r), "RotateRefreshToken: a token of an expired session must change nothing, so the same token at an earlier time")
}

func testRotateExpiredSessionSupersededToken(t *testing.T, s store.Store) {
	mustCreateUser(t, s, "u1")
	sess := newSession("s1", "u1", base, at(3*time.Hour))
	mustCreateSession(t, s, sess, "r0")
	// The rotation shortens the session, so r0 outlives it.
	r := rotation("r0", "r1", at(10*time.Minute), 0)
	r.ExpiresAt = at(time.Hour)
	sess = mustRotate(t, s, r, updated(sess, r), "the current token of a live session")

	now := at(2 * time.Hour)
	wantRotateErr(t, s, rotation("r0", "x", now, 0), store.ErrNotFound,
		"a superseded, unexpired token of an expired session must return ErrNotFound, not ErrTokenReused")
	wantRotateErr(t, s, rotation("r1", "x", now, 0), store.ErrNotFound,
		"the current token of an expired session must return ErrNotFound")

	// Back in time, the session must be as it was.
	earlier := at(20 * time.Minute)
	wantSession(t, s, sess, earlier, "RotateRefreshToken: a token of an expired session must change nothing")
	r = rotation("r1", "r2", earlier, 0)
	mustRotate(t, s, r, updated(sess, r), "RotateRefreshToken: a token of an expired session must change nothing, so the current token at an earlier time")
}

func testRotateReuseWindowPredecessor(t *testing.T, s store.Store) {
	const window = time.Minute
	mustCreateUser(t, s, "u1")
	sess := newSession("s1", "u1", base, at(ttl))
	mustCreateSession(t, s, sess, "r0")
	r := rotation("r0", "r1", at(time.Hour), window)
	sess = mustRotate(t, s, r, updated(sess, r), "the current token of a live session")

	// The response carrying r1 was lost; the client retries with r0.
	r = rotation("r0", "r2", at(time.Hour+30*time.Second), window)
	sess = mustRotate(t, s, r, updated(sess, r), "the immediate predecessor presented inside the reuse window")
	wantSession(t, s, sess, r.Now, "RotateRefreshToken: a rotation inside the reuse window must store the updated session")

	// r1 has been replaced without ever being presented: it is superseded
	// but not the predecessor, so presenting it is theft.
	got := wantRotateErr(t, s, rotation("r1", "r3", at(time.Hour+40*time.Second), window), store.ErrTokenReused,
		"the current token replaced inside the reuse window becomes superseded, so presenting it must return ErrTokenReused")
	if d := sessionDiff(got, sess); d != "" {
		t.Errorf("RotateRefreshToken: on reuse must return the session as it was: %s", d)
	}
	wantNoSession(t, s, "s1", at(time.Hour+40*time.Second), "RotateRefreshToken: reuse must revoke the session")
	wantRotateErr(t, s, rotation("r2", "r4", at(time.Hour+40*time.Second), window), store.ErrNotFound,
		"reuse must revoke all the session's tokens: the current one must then return ErrNotFound")
}

func testRotateReuseWindowPredecessorStays(t *testing.T, s store.Store) {
	const window = time.Minute
	mustCreateUser(t, s, "u1")
	sess := newSession("s1", "u1", base, at(ttl))
	mustCreateSession(t, s, sess, "r0")
	r := rotation("r0", "r1", at(time.Hour), window)
	sess = mustRotate(t, s, r, updated(sess, r), "the current token of a live session")

	r = rotation("r0", "r2", at(time.Hour+10*time.Second), window)
	sess = mustRotate(t, s, r, updated(sess, r), "the immediate predecessor presented inside the reuse window")
	r = rotation("r0", "r3", at(time.Hour+20*time.Second), window)
	sess = mustRotate(t, s, r, updated(sess, r), "a rotation inside the reuse window keeps the predecessor, so presenting it again inside the window")

	r = rotation("r3", "r4", at(time.Hour+30*time.Second), window)
	sess = mustRotate(t, s, r, updated(sess, r), "the token made current inside the reuse window")

	// r3 is now the predecessor; r0 is merely superseded.
	now := at(time.Hour + 35*time.Second)
	wantRotateErr(t, s, rotation("r0", "x", now, window), store.ErrTokenReused,
		"a token older than the immediate predecessor must return ErrTokenReused even inside the reuse window")
	wantRotateErr(t, s, rotation("r4", "y", now, window), store.ErrNotFound,
		"reuse must revoke all the session's tokens: the current one must then return ErrNotFound")
}

func testRotateReuseWindowDoesNotSlide(t *testing.T, s store.Store) {
	const window = time.Minute
	mustCreateUser(t, s, "u1")
	sess := newSession("s1", "u1", base, at(ttl))
	mustCreateSession(t, s, sess, "r0")
	r := rotation("r0", "r1", at(time.Hour), window)
	sess = mustRotate(t, s, r, updated(sess, r), "the current token of a live session")
	r = rotation("r0", "r2", at(time.Hour+40*time.Second), window)
	mustRotate(t, s, r, updated(sess, r), "the immediate predecessor presented inside the reuse window")

	// 70 seconds after r0 was exchanged, though only 30 after the retry.
	wantRotateErr(t, s, rotation("r0", "r3", at(time.Hour+70*time.Second), window), store.ErrTokenReused,
		"the reuse window is measured from the predecessor's exchange: a retry inside it must not extend it")
}

func testRotateReuseWindowElapsed(t *testing.T, s store.Store) {
	const window = time.Minute
	mustCreateUser(t, s, "u1")
	sess := newSession("s1", "u1", base, at(ttl))
	mustCreateSession(t, s, sess, "r0")
	r := rotation("r0", "r1", at(time.Hour), window)
	sess = mustRotate(t, s, r, updated(sess, r), "the current token of a live session")

	now := at(time.Hour + 2*window)
	got := wantRotateErr(t, s, rotation("r0", "r2", now, window), store.ErrTokenReused,
		"the immediate predecessor presented after the reuse window must return ErrTokenReused")
	if d := sessionDiff(got, sess); d != "" {
		t.Errorf("RotateRefreshToken: on reuse must return the session as it was: %s", d)
	}
	wantNoSession(t, s, "s1", now, "RotateRefreshToken: reuse must revoke the session")
	wantRotateErr(t, s, rotation("r1", "r3", now, window), store.ErrNotFound,
		"reuse must revoke all the session's tokens: the current one must then return ErrNotFound")
}

func testRotateReuseWindowBoundary(t *testing.T, s store.Store) {
	const window = time.Minute
	mustCreateUser(t, s, "u1")
	sess := newSession("s1", "u1", base, at(ttl))
	mustCreateSession(t, s, sess, "r0")
	r := rotation("r0", "r1", at(time.Hour), window)
	mustRotate(t, s, r, updated(sess, r), "the current token of a live session")

	wantRotateErr(t, s, rotation("r0", "r2", at(time.Hour+window), window), store.ErrTokenReused,
		"the reuse window is open only while the current token was issued less than ReuseWindow before Now, so at exactly ReuseWindow the predecessor must return ErrTokenReused")
}

func testRotateReuseWindowTwoGenerations(t *testing.T, s store.Store) {
	const window = time.Minute
	mustCreateUser(t, s, "u1")
	sess := newSession("s1", "u1", base, at(ttl))
	mustCreateSession(t, s, sess, "r0")
	r := rotation("r0", "r1", at(time.Hour), window)
	sess = mustRotate(t, s, r, updated(sess, r), "the current token of a live session")
	r = rotation("r1", "r2", at(time.Hour+time.Second), window)
	mustRotate(t, s, r, updated(sess, r), "the current token of a live session")

	now := at(time.Hour + 2*time.Second)
	wantRotateErr(t, s, rotation("r0", "r3", now, window), store.ErrTokenReused,
		"a token two generations old must return ErrTokenReused even inside the reuse window")
	wantRotateErr(t, s, rotation("r2", "r4", now, window), store.ErrNotFound,
		"reuse must revoke all the session's tokens: the current one must then return ErrNotFound")
}

func testRotateReuseWindowZero(t *testing.T, s store.Store) {
	mustCreateUser(t, s, "u1")
	for _, window := range []time.Duration{0, -time.Minute} {
		handle := fmt.Sprintf("window %v", window)
		sess := newSession(handle, "u1", base, at(ttl))
		mustCreateSession(t, s, sess, handle+"/r0")
		r := rotation(handle+"/r0", handle+"/r1", at(time.Hour), window)
		mustRotate(t, s, r, updated(sess, r), "the current token of a live session")

		// Even at the very instant of the rotation.
		wantRotateErr(t, s, rotation(handle+"/r0", handle+"/r2", at(time.Hour), window), store.ErrTokenReused,
			fmt.Sprintf("only a positive ReuseWindow forgives the predecessor: with ReuseWindow %v it must return ErrTokenReused", window))
		wantNoSession(t, s, handle, at(time.Hour), "RotateRefreshToken: reuse must revoke the session")
	}
}

// A Next already on record, as any token of any session, is refused with
// ErrConflict and changes nothing: overwriting it would hand another
// lineage's token to this one.
func testRotateReuseNextConflict(t *testing.T, s store.Store) {
	mustCreateUser(t, s, "u1")
	s1 := newSession("s1", "u1", base, at(ttl))
	s2 := newSession("s2", "u1", base, at(ttl))
	mustCreateSession(t, s, s1, "s1/r0")
	mustCreateSession(t, s, s2, "s2/r0")
	now := at(time.Hour)
	r := rotation("s1/r0", "s1/r1", now, 0)
	s1 = mustRotate(t, s, r, updated(s1, r), "the current token of a live session")

	for _, next := range []string{"s2/r0", "s1/r0", "s1/r1"} {
		wantRotateErr(t, s, rotation("s1/r1", next, now, 0), store.ErrConflict,
			fmt.Sprintf("RotateRefreshToken: a Next already on record (%s) must return ErrConflict", next))
	}
	wantSession(t, s, s1, now, "RotateRefreshToken: a refused rotation must not change the session")
	wantSession(t, s, s2, now, "RotateRefreshToken: a refused rotation must not change another session")
	// The presented token is still current, and the other session's token
	// still its own.
	r = rotation("s1/r1", "s1/r2", now, 0)
	mustRotate(t, s, r, updated(s1, r), "RotateRefreshToken: after an ErrConflict the presented token must still be current")
	r = rotation("s2/r0", "s2/r1", now, 0)
	mustRotate(t, s, r, updated(s2, r), "RotateRefreshToken: an ErrConflict must not take another session's token")
}

// A session and its token expire at the very instant of their ExpiresAt,
// as store.ErrNotFound says.
func testRotateAtExpiry(t *testing.T, s store.Store) {
	mustCreateUser(t, s, "u1")
	sess := newSession("s1", "u1", base, at(time.Hour))
	mustCreateSession(t, s, sess, "s1/r0")
	wantNoSession(t, s, "s1", at(time.Hour), "Session: a session is expired at the instant of its ExpiresAt")
	wantRotateErr(t, s, rotation("s1/r0", "s1/r1", at(time.Hour), 0), store.ErrNotFound,
		"RotateRefreshToken: a token is expired at the instant of its ExpiresAt")
	r := rotation("s1/r0", "s1/r1", at(time.Hour-time.Millisecond), 0)
	mustRotate(t, s, r, updated(sess, r), "RotateRefreshToken: a token a millisecond before its ExpiresAt is live")
}

// limited is r with an allowance of burst rotations, then one a minute.
func limited(r store.Rotation, burst int) store.Rotation {
	r.Burst, r.Every = burst, time.Minute
	return r
}

func testRotateAllowance(t *testing.T, s store.Store) {
	mustCreateUser(t, s, "u1")
	sess := newSession("s1", "u1", base, at(ttl))
	mustCreateSession(t, s, sess, "r0")
	mustCreateSession(t, s, newSession("s2", "u1", base, at(ttl)), "q0")

	now := at(time.Hour)
	for i := range 3 {
		r := limited(rotation(fmt.Sprintf("r%d", i), fmt.Sprintf("r%d", i+1), now, 0), 3)
		sess = mustRotate(t, s, r, updated(sess, r), fmt.Sprintf("rotation %d of a burst of 3", i+1))
	}
	wantRotateErr(t, s, limited(rotation("r3", "r4", now, 0), 3), store.ErrRateLimited,
		"a fourth rotation at the same instant, past a burst of 3, must return ErrRateLimited")
	wantSession(t, s, sess, now, "RotateRefreshToken: a rate-limited rotation must change nothing")
	wantRotateErr(t, s, limited(rotation("r3", "r4", now.Add(time.Minute-time.Millisecond), 0), 3), store.ErrRateLimited,
		"just before one interval has passed, the allowance must still be spent")

	// Another session of the same user has its own allowance.
	mustRotate(t, s, limited(rotation("q0", "q1", now, 0), 3), sessionAfter(t, s, "s2", now), "the first rotation of another session of the user")

	// One interval later there is one rotation more, and r3 is still
	// current: the refusals took nothing.
	later := now.Add(time.Minute)
	r := limited(rotation("r3", "r4", later, 0), 3)
	sess = mustRotate(t, s, r, updated(sess, r), "after one interval, the token a rate-limited rotation left current")
	wantRotateErr(t, s, limited(rotation("r4", "r5", later, 0), 3), store.ErrRateLimited,
		"one interval gives back one rotation, not the whole burst")

	// Without an allowance, nothing is counted.
	r = rotation("r4", "r5", later, 0)
	mustRotate(t, s, r, updated(sess, r), "a rotation without an allowance, whatever the session's count")
}

// sessionAfter is the session with the given handle as a rotation at now
// with the suite's ttl leaves it.
func sessionAfter(t *testing.T, s store.Store, handle string, now time.Time) store.Session {
	t.Helper()
	got, err := s.Session(t.Context(), handle, now)
	if err != nil {
		t.Fatalf("Session(%q): %v", handle, err)
	}
	got.RefreshedAt, got.ExpiresAt = now, now.Add(ttl)
	return got
}

func testRotateAllowanceTheft(t *testing.T, s store.Store) {
	mustCreateUser(t, s, "u1")
	sess := newSession("s1", "u1", base, at(ttl))
	mustCreateSession(t, s, sess, "r0")
	now := at(time.Hour)
	r := limited(rotation("r0", "r1", now, 0), 1)
	mustRotate(t, s, r, updated(sess, r), "the only rotation of a burst of 1")
	wantRotateErr(t, s, limited(rotation("r1", "r2", now, 0), 1), store.ErrRateLimited,
		"a second rotation past a burst of 1 must return ErrRateLimited")
	wantRotateErr(t, s, limited(rotation("r0", "x", now, 0), 1), store.ErrTokenReused,
		"a superseded token is theft whatever the allowance, so it must return ErrTokenReused")
	wantNoSession(t, s, "s1", now, "RotateRefreshToken: theft must revoke the session, also when its allowance is spent")
}

func testRotateAllowanceReuseWindow(t *testing.T, s store.Store) {
	mustCreateUser(t, s, "u1")
	sess := newSession("s1", "u1", base, at(ttl))
	mustCreateSession(t, s, sess, "r0")
	now := at(time.Hour)
	const window = 10 * time.Second
	r := limited(rotation("r0", "r1", now, window), 2)
	sess = mustRotate(t, s, r, updated(sess, r), "the first rotation of a burst of 2")
	r = limited(rotation("r0", "r1b", now.Add(time.Second), window), 2)
	sess = mustRotate(t, s, r, updated(sess, r), "the predecessor inside the window, the second rotation of a burst of 2")
	wantRotateErr(t, s, limited(rotation("r0", "r1c", now.Add(2*time.Second), window), 2), store.ErrRateLimited,
		"a retry inside the window counts against the allowance too, so past it it must return ErrRateLimited")
	r = limited(rotation("r1b", "r2", now.Add(time.Minute), 0), 2)
	mustRotate(t, s, r, updated(sess, r), "after an interval, the token the last allowed retry made current")
}

// Revoking a session that has rotated many times ends every token of its
// history at once, and a store that removes their records only in
// DeleteExpired still never lets one work or conflict.
func testRotateRevokeLongHistory(t *testing.T, s store.Store) {
	const n = 300
	mustCreateUser(t, s, "u1")
	mustCreateSession(t, s, newSession("s1", "u1", base, at(ttl)), "h0")
	for i := range n {
		r := rotation(fmt.Sprintf("h%d", i), fmt.Sprintf("h%d", i+1), at(time.Duration(i+1)*time.Second), 0)
		if _, err := s.RotateRefreshToken(t.Context(), r); err != nil {
			t.Fatalf("rotation %d: %v", i, err)
		}
	}
	if err := s.RevokeSession(t.Context(), "s1"); err != nil {
		t.Fatalf("RevokeSession: %v", err)
	}
	now := at(time.Hour)
	for _, i := range []int{0, 1, n / 2, n - 1, n} {
		tok := fmt.Sprintf("h%d", i)
		wantRotateErr(t, s, rotation(tok, tok+"/next", now, 0), store.ErrNotFound,
			fmt.Sprintf("RevokeSession: token %d of a revoked session's %d must return ErrNotFound", i, n+1))
	}
	// A revoked session's tokens are not on record: they conflict with
	// nothing, before and after DeleteExpired.
	mustCreateSession(t, s, newSession("s2", "u1", now, at(ttl)), "h0")
	if err := s.DeleteExpired(t.Context(), now); err != nil {
		t.Fatalf("DeleteExpired: %v", err)
	}
	r := rotation("h0", "h1", now, 0)
	mustRotate(t, s, r, sessionAfter(t, s, "s2", now), "the current token of a new session, made with a hash a revoked session once had")
	wantRotateErr(t, s, rotation("h5", "h5/next", now, 0), store.ErrNotFound,
		"after DeleteExpired, a revoked session's token must still return ErrNotFound")
}
