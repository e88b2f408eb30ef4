package storetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/latchkit/auth/store"
)

var rotationTests = []test{
	{"Chain", testRotateChain},
	{"ReusePrevious", testRotateReusePrevious},
	{"ReuseStale", testRotateReuseStale},
	{"ReuseLongAgo", testRotateReuseLongAgo},
	{"UnknownToken", testRotateUnknownToken},
	{"NoHandle", testRotateNoHandle},
	{"ExpiredSession", testRotateExpiredSession},
	{"AtExpiry", testRotateAtExpiry},
	{"EndedSession", testRotateEndedSession},
	{"ReuseWindowRepeat", testRotateReuseWindowRepeat},
	{"ReuseWindowDoesNotSlide", testRotateReuseWindowDoesNotSlide},
	{"ReuseWindowBoundary", testRotateReuseWindowBoundary},
	{"ReuseWindowTwoGenerations", testRotateReuseWindowTwoGenerations},
	{"Allowance", testRotateAllowance},
	{"AllowanceTheft", testRotateAllowanceTheft},
	{"AllowanceRepeat", testRotateAllowanceRepeat},
	{"Roles", testRotateRoles},
}

func testRotateChain(t *testing.T, s store.Store) {
	mustCreateUser(t, s, "u1")
	sess := newSession("s1", "u1", base, at(ttl))
	mustCreateSession(t, s, sess, "s1/r0")
	wantSession(t, s, sess, base, "CreateSession: a new session must be at Generation 0")

	r := rotation("s1/r0", "s1/r1", at(time.Hour), 0)
	sess = mustRotate(t, s, r, updated(sess, r), "the current token of a live session")
	wantSession(t, s, sess, r.Now, "RotateRefreshToken: must store the updated RefreshedAt, ExpiresAt and Generation")

	// After the first ExpiresAt: the rotation has extended the session.
	r = rotation("s1/r1", "s1/r2", at(ttl+30*time.Minute), 0)
	sess = mustRotate(t, s, r, updated(sess, r), "a session extended by the previous rotation must stay alive and its current token")
	wantSession(t, s, sess, r.Now.Add(ttl-time.Second), "RotateRefreshToken: the session must live until the new ExpiresAt")
	wantUserSessions(t, s, "u1", r.Now, []store.Session{sess}, "RotateRefreshToken: UserSessions must show the updated session")

	r = rotation("s1/r2", "s1/r3", r.Now.Add(time.Minute), 0)
	mustRotate(t, s, r, updated(sess, r), "the token that the previous rotation made current")
}

// wantTheft presents r, which the contract says is a reuse of kind want,
// and checks that the store ended the session as it was, which is sess.
func wantTheft(t *testing.T, s store.Store, r store.Rotation, sess store.Session, want store.Reuse, rule string) {
	t.Helper()
	got, err := s.RotateRefreshToken(t.Context(), r)
	if !errors.Is(err, store.ErrTokenReused) {
		t.Fatalf("RotateRefreshToken: %s must return ErrTokenReused; got error %v", rule, err)
	}
	if got.Reuse != want {
		t.Errorf("RotateRefreshToken: %s must report Reuse %d; got %d", rule, want, got.Reuse)
	}
	if d := sessionDiff(got.Session, sess); d != "" {
		t.Errorf("RotateRefreshToken: on reuse must return the session as it was: %s", d)
	}
	_, err = s.Session(t.Context(), sess.Handle, r.Now)
	wantEnded(t, err, store.EndTokenTheft, "RotateRefreshToken: after reuse, Session")
}

func testRotateReusePrevious(t *testing.T, s store.Store) {
	mustCreateUser(t, s, "u1")
	s1 := newSession("s1", "u1", base, at(ttl))
	s2 := newSession("s2", "u1", at(time.Minute), at(ttl))
	mustCreateSession(t, s, s1, "s1/r0")
	mustCreateSession(t, s, s2, "s2/r0")

	r := rotation("s1/r0", "s1/r1", at(time.Hour), 0)
	s1 = mustRotate(t, s, r, updated(s1, r), "the current token of a live session")

	now := at(2 * time.Hour)
	wantTheft(t, s, rotation("s1/r0", "s1/x", now, 0), s1, store.ReusePrevious,
		"the token just superseded, with no reuse window,")
	_, err := s.RotateRefreshToken(t.Context(), rotation("s1/r1", "s1/r2", now, 0))
	wantEnded(t, err, store.EndTokenTheft, "RotateRefreshToken: reuse must end the session, so its current token")
	_, err = s.RotateRefreshToken(t.Context(), rotation("s1/r0", "s1/r2", now, 0))
	wantEnded(t, err, store.EndTokenTheft, "RotateRefreshToken: a superseded token of an ended session is not theft again; it")
	err = s.RevokeSession(t.Context(), "s1", store.EndRevoked)
	wantErr(t, err, store.ErrNotFound, "RotateRefreshToken: reuse must end the session, so RevokeSession must return ErrNotFound")
	_, err = s.Session(t.Context(), "s1", now)
	wantEnded(t, err, store.EndTokenTheft, "RevokeSession: revoking an ended session must not change why it ended; Session")

	wantUserSessions(t, s, "u1", now, []store.Session{s2}, "RotateRefreshToken: reuse must end only the session the token belongs to")
	r = rotation("s2/r0", "s2/r1", now, 0)
	mustRotate(t, s, r, updated(s2, r), "RotateRefreshToken: reuse must end only the session the token belongs to, so the current token of another session")
}

func testRotateReuseStale(t *testing.T, s store.Store) {
	mustCreateUser(t, s, "u1")
	for i, window := range []time.Duration{0, time.Hour} {
		handle := fmt.Sprintf("s%d", i)
		sess := newSession(handle, "u1", base, at(ttl))
		mustCreateSession(t, s, sess, handle+"/r0")
		r := rotation(handle+"/r0", handle+"/r1", at(time.Second), 0)
		sess = mustRotate(t, s, r, updated(sess, r), "the current token of a live session")
		r = rotation(handle+"/r1", handle+"/r2", at(2*time.Second), 0)
		sess = mustRotate(t, s, r, updated(sess, r), "the current token of a live session")

		// Inside any window: a token two exchanges old is never forgiven.
		wantTheft(t, s, rotation(handle+"/r0", handle+"/x", at(3*time.Second), window), sess, store.ReuseStale,
			fmt.Sprintf("a token superseded two exchanges ago (ReuseWindow %v)", window))
	}
}

// Nothing is kept of superseded tokens, yet one superseded long ago is
// recognised: by its generation.
func testRotateReuseLongAgo(t *testing.T, s store.Store) {
	const n = 50
	mustCreateUser(t, s, "u1")
	sess := newSession("s1", "u1", base, at(ttl))
	mustCreateSession(t, s, sess, "s1/r0")
	for i := range n {
		r := rotation(fmt.Sprintf("s1/r%d", i), fmt.Sprintf("s1/r%d", i+1), at(time.Duration(i+1)*time.Minute), 0)
		sess = mustRotate(t, s, r, updated(sess, r), fmt.Sprintf("exchange %d", i+1))
	}
	wantTheft(t, s, rotation("s1/r0", "s1/x", at(2*time.Hour), time.Minute), sess, store.ReuseStale,
		fmt.Sprintf("the first token, superseded %d exchanges ago,", n))
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
		for _, tc := range []struct{ presented, what string }{
			{"nobody/r0", "a token of no session"},
			{"s1/r1-forged", "a token at the session's generation that is not its current one"},
			{"s1/r2", "a token a generation ahead of the session"},
			{"s1/r99", "a token far ahead of the session"},
		} {
			wantRotateErr(t, s, rotation(tc.presented, "n", now, window), store.ErrNotFound,
				fmt.Sprintf("%s must return ErrNotFound (ReuseWindow %v)", tc.what, window))
		}
	}
	wantUserSessionsAnyOrder(t, s, "u1", now, []store.Session{s2, s1}, "RotateRefreshToken: a token the store cannot place must never harm a session")

	r = rotation("s1/r1", "s1/r2", now, 0)
	mustRotate(t, s, r, updated(s1, r), "RotateRefreshToken: a token the store cannot place must never harm a session, so the current token")
	r = rotation("s2/r0", "s2/r1", now, 0)
	mustRotate(t, s, r, updated(s2, r), "RotateRefreshToken: a token the store cannot place must never harm a session, so the current token")
}

// A rotation without a handle looks among the tokens a store kept from
// before tokens named their session; a store that never held any finds
// nothing, and must not take a current token's hash for one.
func testRotateNoHandle(t *testing.T, s store.Store) {
	mustCreateUser(t, s, "u1")
	sess := newSession("s1", "u1", base, at(ttl))
	mustCreateSession(t, s, sess, "s1/r0")
	r := rotation("s1/r0", "s1/r1", at(time.Hour), 0)
	r.Handle, r.Generation = "", 0
	wantRotateErr(t, s, r, store.ErrNotFound, "a token without a handle that the store never kept must return ErrNotFound")
	wantSession(t, s, sess, at(time.Hour), "RotateRefreshToken: a rotation without a handle must change nothing")
}

func testRotateExpiredSession(t *testing.T, s store.Store) {
	mustCreateUser(t, s, "u1")
	sess := newSession("s1", "u1", base, at(time.Hour))
	mustCreateSession(t, s, sess, "s1/r0")
	r := rotation("s1/r0", "s1/r1", at(30*time.Minute), 0)
	r.ExpiresAt = at(2 * time.Hour)
	mustRotate(t, s, r, updated(sess, r), "the current token of a live session")

	now := at(3 * time.Hour)
	_, err := s.RotateRefreshToken(t.Context(), rotation("s1/r1", "s1/r2", now, 0))
	wantEnded(t, err, "", "RotateRefreshToken: the current token of an expired session")
	_, err = s.RotateRefreshToken(t.Context(), rotation("s1/r0", "s1/r2", now, 0))
	wantEnded(t, err, "", "RotateRefreshToken: a superseded token of an expired session is not theft; it")
	_, err = s.Session(t.Context(), "s1", now)
	wantEnded(t, err, "", "Session: an expired session")
	wantSession(t, s, updated(sess, r), at(time.Hour+time.Minute),
		"RotateRefreshToken: a refused rotation of an expired session must change nothing")
}

// A session expires at the very instant of its ExpiresAt, as
// store.ErrNotFound says.
func testRotateAtExpiry(t *testing.T, s store.Store) {
	mustCreateUser(t, s, "u1")
	sess := newSession("s1", "u1", base, at(time.Hour))
	mustCreateSession(t, s, sess, "s1/r0")
	wantNoSession(t, s, "s1", at(time.Hour), "Session: a session is expired at the instant of its ExpiresAt")
	wantRotateErr(t, s, rotation("s1/r0", "s1/r1", at(time.Hour), 0), store.ErrNotFound,
		"RotateRefreshToken: a session is expired at the instant of its ExpiresAt")
	r := rotation("s1/r0", "s1/r1", at(time.Hour-time.Millisecond), 0)
	mustRotate(t, s, r, updated(sess, r), "RotateRefreshToken: a session a millisecond before its ExpiresAt is live")
}

// Each way a session ends is reported, by Session and by a rotation of
// its current or a superseded token, until the session would have
// expired.
func testRotateEndedSession(t *testing.T, s store.Store) {
	end := map[store.EndReason]func(t *testing.T, handle string){
		store.EndSignedOut: func(t *testing.T, handle string) {
			if err := s.RevokeSession(t.Context(), handle, store.EndSignedOut); err != nil {
				t.Fatalf("RevokeSession: %v", err)
			}
		},
		store.EndRevoked: func(t *testing.T, handle string) {
			if err := s.RevokeSession(t.Context(), handle, store.EndRevoked); err != nil {
				t.Fatalf("RevokeSession: %v", err)
			}
		},
	}
	i := 0
	for why, f := range end {
		i++
		user := fmt.Sprintf("u%d", i)
		mustCreateUser(t, s, user)
		handle := fmt.Sprintf("s%d", i)
		sess := newSession(handle, user, base, at(ttl))
		mustCreateSession(t, s, sess, handle+"/r0")
		r := rotation(handle+"/r0", handle+"/r1", at(time.Minute), 0)
		mustRotate(t, s, r, updated(sess, r), "the current token of a live session")
		f(t, handle)

		now := at(time.Hour)
		_, err := s.Session(t.Context(), handle, now)
		wantEnded(t, err, why, fmt.Sprintf("Session: a session ended (%s)", why))
		for _, tok := range []string{handle + "/r1", handle + "/r0"} {
			_, err := s.RotateRefreshToken(t.Context(), rotation(tok, handle+"/r9", now, time.Hour))
			wantEnded(t, err, why, fmt.Sprintf("RotateRefreshToken: %s of a session ended (%s)", tok, why))
		}
		wantUserSessions(t, s, user, now, nil, "UserSessions: an ended session is not listed")
		if err := s.DeleteExpired(t.Context(), at(ttl)); err != nil {
			t.Fatalf("DeleteExpired: %v", err)
		}
		_, err = s.Session(t.Context(), handle, at(ttl))
		wantErr(t, err, store.ErrNotFound, "DeleteExpired: an ended session goes when it would have expired; Session must return ErrNotFound")
	}
}

func testRotateReuseWindowRepeat(t *testing.T, s store.Store) {
	const window = time.Minute
	mustCreateUser(t, s, "u1")
	sess := newSession("s1", "u1", base, at(ttl))
	mustCreateSession(t, s, sess, "s1/r0")
	exchanged := at(time.Hour)
	r := rotation("s1/r0", "s1/r1", exchanged, window)
	sess = mustRotate(t, s, r, updated(sess, r), "the current token of a live session")

	for _, d := range []time.Duration{0, time.Second, 30 * time.Second, window - time.Millisecond} {
		got, err := s.RotateRefreshToken(t.Context(), rotation("s1/r0", "s1/other", exchanged.Add(d), window))
		if err != nil || !got.Repeat {
			t.Fatalf("RotateRefreshToken: the token just superseded, %v after its exchange inside a window of %v, must report Repeat; got %+v, error %v", d, window, got, err)
		}
		if got.CurrentKey != r.NextKey {
			t.Errorf("RotateRefreshToken: a Repeat must report the key of the current token, %q; got %q", r.NextKey, got.CurrentKey)
		}
		if diff := sessionDiff(got.Session, sess); diff != "" {
			t.Errorf("RotateRefreshToken: a Repeat must return the session unchanged: %s", diff)
		}
	}
	wantSession(t, s, sess, exchanged.Add(window), "RotateRefreshToken: a Repeat must change nothing")
	wantRotateErr(t, s, rotation("s1/other", "s1/x", exchanged.Add(time.Second), window), store.ErrNotFound,
		"a Repeat must not make the Next it was given current; presenting that Next")
	r = rotation("s1/r1", "s1/r2", exchanged.Add(2*time.Second), window)
	mustRotate(t, s, r, updated(sess, r), "after Repeats, the successor of the first exchange is still the one current token")
}

func testRotateReuseWindowDoesNotSlide(t *testing.T, s store.Store) {
	const window = 10 * time.Second
	mustCreateUser(t, s, "u1")
	sess := newSession("s1", "u1", base, at(ttl))
	mustCreateSession(t, s, sess, "s1/r0")
	exchanged := at(time.Hour)
	r := rotation("s1/r0", "s1/r1", exchanged, window)
	sess = mustRotate(t, s, r, updated(sess, r), "the current token of a live session")
	for _, d := range []time.Duration{4 * time.Second, 8 * time.Second} {
		got, err := s.RotateRefreshToken(t.Context(), rotation("s1/r0", "s1/x", exchanged.Add(d), window))
		if err != nil || !got.Repeat {
			t.Fatalf("RotateRefreshToken: a retry %v after the exchange must report Repeat; got error %v", d, err)
		}
	}
	wantTheft(t, s, rotation("s1/r0", "s1/x", exchanged.Add(12*time.Second), window), sess, store.ReuseAfterWindow,
		"a retry 12s after the exchange, with a window of 10s that retries did not extend,")
}

func testRotateReuseWindowBoundary(t *testing.T, s store.Store) {
	const window = 10 * time.Second
	mustCreateUser(t, s, "u1")
	sess := newSession("s1", "u1", base, at(ttl))
	mustCreateSession(t, s, sess, "s1/r0")
	exchanged := at(time.Hour)
	r := rotation("s1/r0", "s1/r1", exchanged, window)
	sess = mustRotate(t, s, r, updated(sess, r), "the current token of a live session")
	wantTheft(t, s, rotation("s1/r0", "s1/x", exchanged.Add(window), window), sess, store.ReuseAfterWindow,
		"the token just superseded, exactly one window after its exchange,")
}

func testRotateReuseWindowTwoGenerations(t *testing.T, s store.Store) {
	const window = time.Minute
	mustCreateUser(t, s, "u1")
	sess := newSession("s1", "u1", base, at(ttl))
	mustCreateSession(t, s, sess, "s1/r0")
	r := rotation("s1/r0", "s1/r1", at(time.Second), window)
	sess = mustRotate(t, s, r, updated(sess, r), "the current token of a live session")
	r = rotation("s1/r1", "s1/r2", at(2*time.Second), window)
	sess = mustRotate(t, s, r, updated(sess, r), "the current token of a live session")
	got, err := s.RotateRefreshToken(t.Context(), rotation("s1/r1", "s1/x", at(3*time.Second), window))
	if err != nil || !got.Repeat || got.CurrentKey != r.NextKey {
		t.Fatalf("RotateRefreshToken: the token just superseded, inside the window, must report Repeat with the key of s1/r2; got %+v, error %v", got, err)
	}
	wantTheft(t, s, rotation("s1/r0", "s1/x", at(3*time.Second), window), sess, store.ReuseStale,
		"the token before the previous one, inside the window,")
}

// limited is r with an allowance of burst rotations, then one a minute.
func limited(r store.Rotation, burst int) store.Rotation {
	r.Burst, r.Every = burst, time.Minute
	return r
}

func testRotateAllowance(t *testing.T, s store.Store) {
	mustCreateUser(t, s, "u1")
	sess := newSession("s1", "u1", base, at(ttl))
	mustCreateSession(t, s, sess, "s1/r0")
	mustCreateSession(t, s, newSession("s2", "u1", base, at(ttl)), "s2/r0")

	now := at(time.Hour)
	for i := range 3 {
		r := limited(rotation(fmt.Sprintf("s1/r%d", i), fmt.Sprintf("s1/r%d", i+1), now, 0), 3)
		sess = mustRotate(t, s, r, updated(sess, r), fmt.Sprintf("rotation %d of a burst of 3", i+1))
	}
	wantRotateErr(t, s, limited(rotation("s1/r3", "s1/r4", now, 0), 3), store.ErrRateLimited,
		"a fourth rotation at the same instant, past a burst of 3, must return ErrRateLimited")
	wantSession(t, s, sess, now, "RotateRefreshToken: a rate-limited rotation must change nothing")
	wantRotateErr(t, s, limited(rotation("s1/r3", "s1/r4", now.Add(time.Minute-time.Millisecond), 0), 3), store.ErrRateLimited,
		"just before one interval has passed, the allowance must still be spent")

	// Another session of the same user has its own allowance.
	r := limited(rotation("s2/r0", "s2/r1", now, 0), 3)
	mustRotate(t, s, r, sessionAfter(t, s, "s2", r), "the first rotation of another session of the user")

	// One interval later there is one rotation more, and r3 is still
	// current: the refusals took nothing.
	later := now.Add(time.Minute)
	r = limited(rotation("s1/r3", "s1/r4", later, 0), 3)
	sess = mustRotate(t, s, r, updated(sess, r), "after one interval, the token a rate-limited rotation left current")
	wantRotateErr(t, s, limited(rotation("s1/r4", "s1/r5", later, 0), 3), store.ErrRateLimited,
		"one interval gives back one rotation, not the whole burst")

	// Without an allowance, nothing is counted.
	r = rotation("s1/r4", "s1/r5", later, 0)
	mustRotate(t, s, r, updated(sess, r), "a rotation without an allowance, whatever the session's count")
}

// sessionAfter is the session with the given handle as rotation r must
// leave it.
func sessionAfter(t *testing.T, s store.Store, handle string, r store.Rotation) store.Session {
	t.Helper()
	got, err := s.Session(t.Context(), handle, r.Now)
	if err != nil {
		t.Fatalf("Session(%q): %v", handle, err)
	}
	return updated(got, r)
}

func testRotateAllowanceTheft(t *testing.T, s store.Store) {
	mustCreateUser(t, s, "u1")
	sess := newSession("s1", "u1", base, at(ttl))
	mustCreateSession(t, s, sess, "s1/r0")
	now := at(time.Hour)
	r := limited(rotation("s1/r0", "s1/r1", now, 0), 1)
	sess = mustRotate(t, s, r, updated(sess, r), "the only rotation of a burst of 1")
	wantRotateErr(t, s, limited(rotation("s1/r1", "s1/r2", now, 0), 1), store.ErrRateLimited,
		"a second rotation past a burst of 1 must return ErrRateLimited")
	wantTheft(t, s, limited(rotation("s1/r0", "s1/x", now, 0), 1), sess, store.ReusePrevious,
		"a superseded token is theft whatever the allowance: it")
}

// A Repeat exchanges nothing, so it spends none of the allowance.
func testRotateAllowanceRepeat(t *testing.T, s store.Store) {
	mustCreateUser(t, s, "u1")
	sess := newSession("s1", "u1", base, at(ttl))
	mustCreateSession(t, s, sess, "s1/r0")
	now := at(time.Hour)
	const window = 10 * time.Second
	r := limited(rotation("s1/r0", "s1/r1", now, window), 1)
	sess = mustRotate(t, s, r, updated(sess, r), "the only rotation of a burst of 1")
	for i := range 3 {
		got, err := s.RotateRefreshToken(t.Context(), limited(rotation("s1/r0", "s1/x", now.Add(time.Second), window), 1))
		if err != nil || !got.Repeat {
			t.Fatalf("RotateRefreshToken: retry %d inside the window, with the allowance spent, must still report Repeat; got error %v", i+1, err)
		}
	}
	r = limited(rotation("s1/r1", "s1/r2", now.Add(time.Minute), window), 1)
	mustRotate(t, s, r, updated(sess, r), "after one interval, the successor the Repeats returned")
}

// testRotateRoles: a rotation of a current token that asks for the user's
// roles in a tenant (RolesOf) rotates as any other, and if it reports them
// read (RolesRead), they are what UserRoles returns, in its order: only
// the tenant's, and empty, not nil, for a user who holds none there. One
// that does not ask reads none. Only for a RoleStore; a store may leave
// RolesRead false.
func testRotateRoles(t *testing.T, s store.Store) {
	rs, ok := s.(store.RoleStore)
	if !ok {
		t.Skip("not a store.RoleStore")
	}
	const other = "t2"
	mustCreateRole(t, rs, "admin", "p1", "p2")
	mustCreateRole(t, rs, "editor", "p2", "p3")
	mustCreateRole(t, rs, "viewer")
	mustCreateRole(t, rs, "auditor", "p4")
	mustCreateUser(t, s, "u1")
	mustCreateUser(t, s, "u2")
	// Given in another order than created, and a permission added to a
	// role after it was given: the order is the holdings', then each
	// role's permissions'.
	for _, name := range []string{"editor", "admin", "viewer"} {
		mustGiveRole(t, rs, store.PublicTenant, "u1", name, false, "a role the user does not hold must be given")
	}
	mustCreateRole(t, rs, "admin", "p5")
	mustGiveRole(t, rs, other, "u1", "auditor", false, "a role the user does not hold must be given")
	mustGiveRole(t, rs, other, "u2", "admin", false, "a role the user does not hold must be given")

	rotate := func(sess store.Session, r store.Rotation, rule string) (store.Session, store.Rotated) {
		t.Helper()
		got := mustRotateOut(t, s, r, updated(sess, r), rule)
		sess = updated(sess, r)
		wantSession(t, s, sess, r.Now, "RotateRefreshToken with RolesOf "+r.RolesOf+": must store the updated session")
		return sess, got
	}
	wantRoles := func(got store.Rotated, tenant, userID string, roles, permissions []string, rule string) {
		t.Helper()
		if !got.RolesRead {
			return
		}
		rule = fmt.Sprintf("RotateRefreshToken with RolesOf %q, reporting RolesRead: %s", tenant, rule)
		if got.Roles == nil || got.Permissions == nil {
			t.Errorf("%s: Roles and Permissions must be empty, not nil, when there are none; got %#v and %#v", rule, got.Roles, got.Permissions)
		}
		wantList(t, "Roles", got.Roles, nil, roles, rule)
		wantList(t, "Permissions", got.Permissions, nil, permissions, rule)
		ur, up, err := rs.UserRoles(t.Context(), tenant, userID)
		wantList(t, "Roles", got.Roles, err, ur, rule+", as UserRoles returns them")
		wantList(t, "Permissions", got.Permissions, err, up, rule+", as UserRoles returns them")
	}

	s1 := newSession("s1", "u1", base, at(ttl))
	mustCreateSession(t, s, s1, "s1/r0")
	s2 := newSession("s2", "u2", base, at(ttl))
	mustCreateSession(t, s, s2, "s2/r0")

	r := rotation("s1/r0", "s1/r1", at(time.Hour), 0)
	r.RolesOf = store.PublicTenant
	s1, got := rotate(s1, r, "the current token of a live session, asking for roles,")
	wantRoles(got, store.PublicTenant, "u1", []string{"editor", "admin", "viewer"}, []string{"p2", "p3", "p1", "p5"},
		"the roles the user holds in the tenant, in the order given, and their permissions, each once")

	r = rotation("s1/r1", "s1/r2", at(2*time.Hour), 0)
	r.RolesOf = other
	s1, got = rotate(s1, r, "the current token of a live session, asking for roles,")
	wantRoles(got, other, "u1", []string{"auditor"}, []string{"p4"}, "only the roles the user holds in that tenant")

	r = rotation("s2/r0", "s2/r1", at(time.Hour), 0)
	r.RolesOf = store.PublicTenant
	_, got = rotate(s2, r, "the current token of a live session, asking for roles,")
	wantRoles(got, store.PublicTenant, "u2", []string{}, []string{}, "a user who holds roles only in another tenant holds none")

	r = rotation("s1/r2", "s1/r3", at(3*time.Hour), 0)
	_, got = rotate(s1, r, "the current token of a live session")
	if got.RolesRead {
		t.Errorf("RotateRefreshToken: a rotation without RolesOf asks for no roles, so must not report RolesRead; got Roles %q, Permissions %q",
			got.Roles, got.Permissions)
	}
}
