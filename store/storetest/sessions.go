package storetest

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/latchkit/auth/store"
)

var sessionTests = []test{
	{"CreateAndGet", testCreateSession},
	{"DuplicateHandle", testCreateSessionDuplicateHandle},
	{"UnknownUser", testCreateSessionUnknownUser},
	{"Expiry", testSessionExpiry},
	{"UserSessionsNewestFirst", testUserSessionsNewestFirst},
	{"UserSessionsEmpty", testUserSessionsEmpty},
	{"RevokeSession", testRevokeSession},
	{"RevokeUserSessions", testRevokeUserSessions},
	{"RevokeUserSessionsExpired", testRevokeUserSessionsExpired},
	{"RevokeExpiredSession", testRevokeExpiredSession},
	{"EpochStartsAtZero", testSessionEpochStartsAtZero},
	{"RevokeUserSessionsEndsEpoch", testRevokeUserSessionsEndsEpoch},
	{"LoginID", testSessionLoginID},
}

func testCreateSession(t *testing.T, s store.Store) {
	mustCreateUser(t, s, "u1")

	// Distinct times for every field catch a store that mixes them up.
	sess := store.Session{
		Handle:      "s1",
		UserID:      "u1",
		LoginID:     "u1",
		CreatedAt:   at(time.Hour),
		RefreshedAt: at(2*time.Hour + 500*time.Millisecond),
		ExpiresAt:   at(26 * time.Hour),
	}
	if err := s.CreateSession(t.Context(), sess, token("s1/r0"), 0); err != nil {
		t.Fatalf("CreateSession: a session with a new handle and token of an existing user must be added; got error %v", err)
	}
	wantSession(t, s, sess, at(3*time.Hour), "CreateSession: the session must be stored as given")
	wantUserSessions(t, s, "u1", at(3*time.Hour), []store.Session{sess}, "CreateSession: the session must belong to its user")

	r := rotation("s1/r0", "s1/r1", at(3*time.Hour), 0)
	mustRotate(t, s, r, updated(sess, r), "CreateSession: the given refresh token is the session's current token, so rotating it")
}

func testCreateSessionDuplicateHandle(t *testing.T, s store.Store) {
	mustCreateUser(t, s, "u1")
	mustCreateUser(t, s, "u2")
	s1 := newSession("s1", "u1", base, at(ttl))
	mustCreateSession(t, s, s1, "s1/r0")

	dup := newSession("s1", "u2", at(time.Hour), at(time.Hour+ttl))
	err := s.CreateSession(t.Context(), dup, token("dup/r0"), 0)
	wantErr(t, err, store.ErrConflict, "CreateSession: a duplicate handle must return ErrConflict")

	now := at(2 * time.Hour)
	wantSession(t, s, s1, now, "CreateSession: a conflicting session must not overwrite the existing one")
	wantUserSessions(t, s, "u2", now, nil, "CreateSession: a conflicting session must not be written")
	wantRotateErr(t, s, rotation("dup/r0", "dup/r1", now, 0), store.ErrNotFound,
		"CreateSession: the token of a conflicting session must not be written, so it must return ErrNotFound")
	r := rotation("s1/r0", "s1/r1", now, 0)
	mustRotate(t, s, r, updated(s1, r), "CreateSession: a rejected duplicate must leave the existing session's token current, so rotating it")
}

func testCreateSessionUnknownUser(t *testing.T, s store.Store) {
	sess := newSession("s1", "nobody", base, at(ttl))
	err := s.CreateSession(t.Context(), sess, token("s1/r0"), 0)
	wantErr(t, err, store.ErrNotFound, "CreateSession: an unknown user must return ErrNotFound")
	wantNoSession(t, s, "s1", base, "CreateSession: a session of an unknown user must not be written")
	wantRotateErr(t, s, rotation("s1/r0", "s1/r1", base, 0), store.ErrNotFound,
		"CreateSession: the token of a session rejected for an unknown user must not be written, so it must return ErrNotFound")

	// Nothing was written, so the handle and the token are still free.
	mustCreateUser(t, s, "u1")
	sess.UserID = "u1"
	if err := s.CreateSession(t.Context(), sess, token("s1/r0"), 0); err != nil {
		t.Errorf("CreateSession: a session rejected for an unknown user must leave its handle and token free; got error %v", err)
	}
}

func testSessionExpiry(t *testing.T, s store.Store) {
	mustCreateUser(t, s, "u1")
	sess := newSession("s1", "u1", base, at(10*time.Hour))
	mustCreateSession(t, s, sess, "s1/r0")

	wantSession(t, s, sess, base, "Session: a session that has not expired must be returned")
	wantSession(t, s, sess, at(10*time.Hour-time.Second), "Session: a session must be returned until it expires")
	wantNoSession(t, s, "s1", at(10*time.Hour+time.Second), "Session: an expired session must return ErrNotFound")
	wantUserSessions(t, s, "u1", at(9*time.Hour), []store.Session{sess}, "UserSessions: must include live sessions")
	wantUserSessions(t, s, "u1", at(11*time.Hour), nil, "UserSessions: must exclude expired sessions")
	wantNoSession(t, s, "unknown", base, "Session: an unknown handle must return ErrNotFound")
}

func testUserSessionsNewestFirst(t *testing.T, s store.Store) {
	mustCreateUser(t, s, "u1")
	mustCreateUser(t, s, "u2")

	// Created in an order that differs from the order of CreatedAt, so that
	// insertion order cannot pass for newest first.
	a := newSession("a", "u1", at(1*time.Hour), at(100*time.Hour))
	b := newSession("b", "u1", at(3*time.Hour), at(100*time.Hour))
	c := newSession("c", "u1", at(2*time.Hour), at(100*time.Hour))
	expired := newSession("x", "u1", at(4*time.Hour), at(5*time.Hour))
	other := newSession("o", "u2", at(5*time.Hour), at(100*time.Hour))
	for _, sess := range []store.Session{a, b, c, expired, other} {
		mustCreateSession(t, s, sess, sess.Handle+"/r0")
	}

	wantUserSessions(t, s, "u1", at(6*time.Hour), []store.Session{b, c, a},
		"UserSessions: must return the user's sessions that have not expired, newest first")
	wantUserSessions(t, s, "u1", at(4*time.Hour+30*time.Minute), []store.Session{expired, b, c, a},
		"UserSessions: must return the user's sessions that have not expired, newest first")
	wantUserSessions(t, s, "u2", at(6*time.Hour), []store.Session{other},
		"UserSessions: must return only the given user's sessions")
}

func testUserSessionsEmpty(t *testing.T, s store.Store) {
	wantUserSessions(t, s, "nobody", base, nil, "UserSessions: an unknown user must have no sessions and no error")
	mustCreateUser(t, s, "u1")
	mustCreateUser(t, s, "u2")
	mustCreateSession(t, s, newSession("s2", "u2", base, at(ttl)), "s2/r0")
	wantUserSessions(t, s, "u1", base, nil, "UserSessions: a user without sessions must have none and no error")
	wantUserSessions(t, s, "nobody", base, nil, "UserSessions: an unknown user must have no sessions and no error")
}

func testRevokeSession(t *testing.T, s store.Store) {
	mustCreateUser(t, s, "u1")
	s1 := newSession("s1", "u1", base, at(ttl))
	s2 := newSession("s2", "u1", at(time.Minute), at(ttl))
	mustCreateSession(t, s, s1, "s1/r0")
	mustCreateSession(t, s, s2, "s2/r0")
	// Give s1 a superseded token as well as a current one.
	r := rotation("s1/r0", "s1/r1", at(time.Hour), 0)
	mustRotate(t, s, r, updated(s1, r), "rotating a current token")

	now := at(2 * time.Hour)
	err := s.RevokeSession(t.Context(), "s1", store.EndSignedOut)
	if !wantErr(t, err, nil, "RevokeSession: an existing session must be revoked") {
		return
	}
	_, err = s.Session(t.Context(), "s1", now)
	wantEnded(t, err, store.EndSignedOut, "RevokeSession: Session of a revoked session")
	_, err = s.RotateRefreshToken(t.Context(), rotation("s1/r1", "s1/r2", now, 0))
	wantEnded(t, err, store.EndSignedOut, "RevokeSession must end the session's tokens: the current token")
	_, err = s.RotateRefreshToken(t.Context(), rotation("s1/r0", "s1/r2", now, time.Hour))
	wantEnded(t, err, store.EndSignedOut, "RevokeSession must end the session's tokens: a superseded token is not theft; it")

	err = s.RevokeSession(t.Context(), "s1", store.EndRevoked)
	wantErr(t, err, store.ErrNotFound, "RevokeSession: revoking a session again must return ErrNotFound")
	_, err = s.Session(t.Context(), "s1", now)
	wantEnded(t, err, store.EndSignedOut, "RevokeSession: revoking again must not change why the session ended; Session")
	err = s.RevokeSession(t.Context(), "unknown", store.EndRevoked)
	wantErr(t, err, store.ErrNotFound, "RevokeSession: an unknown handle must return ErrNotFound")

	wantUserSessions(t, s, "u1", now, []store.Session{s2}, "RevokeSession: must not revoke other sessions of the user")
	r = rotation("s2/r0", "s2/r1", now, 0)
	mustRotate(t, s, r, updated(s2, r), "RevokeSession: must not revoke other sessions, so rotating another session's token")
}

func testRevokeUserSessions(t *testing.T, s store.Store) {
	u1 := mustCreateUser(t, s, "u1")
	mustCreateUser(t, s, "u2")
	a := newSession("a", "u1", base, at(ttl))
	b := newSession("b", "u1", at(time.Minute), at(ttl))
	c := newSession("c", "u2", at(2*time.Minute), at(ttl))
	for _, sess := range []store.Session{a, b, c} {
		mustCreateSession(t, s, sess, sess.Handle+"/r0")
	}
	r := rotation("b/r0", "b/r1", at(time.Hour), 0)
	mustRotate(t, s, r, updated(b, r), "rotating a current token")

	now := at(2 * time.Hour)
	handles, err := s.RevokeUserSessions(t.Context(), "u1")
	if wantErr(t, err, nil, "RevokeUserSessions: must succeed for a user with sessions") {
		got := slices.Sorted(slices.Values(handles))
		if want := []string{"a", "b"}; !slices.Equal(got, want) {
			t.Errorf("RevokeUserSessions: must return the handles of every session of the user it deleted: got %q, want %q (in any order)", handles, want)
		}
	}
	wantNoSession(t, s, "a", now, "RevokeUserSessions: must delete every session of the user")
	wantNoSession(t, s, "b", now, "RevokeUserSessions: must delete every session of the user")
	wantUserSessions(t, s, "u1", now, nil, "RevokeUserSessions: must delete every session of the user")
	for _, tok := range []string{"a/r0", "b/r1", "b/r0"} {
		_, err := s.RotateRefreshToken(t.Context(), rotation(tok, tok+"/next", now, 0))
		wantEnded(t, err, store.EndRevoked, fmt.Sprintf("RevokeUserSessions must end the sessions' tokens: %s", tok))
	}
	wantUser(t, s, u1, "RevokeUserSessions: must not delete the user")

	wantUserSessions(t, s, "u2", now, []store.Session{c}, "RevokeUserSessions: must not touch other users' sessions")
	r = rotation("c/r0", "c/r1", now, 0)
	mustRotate(t, s, r, updated(c, r), "RevokeUserSessions: must not touch other users' sessions, so rotating their tokens")

	handles, err = s.RevokeUserSessions(t.Context(), "u1")
	if wantErr(t, err, nil, "RevokeUserSessions: must succeed for a user without sessions") && len(handles) != 0 {
		t.Errorf("RevokeUserSessions: a user without sessions must return no handles; got %q", handles)
	}
	handles, err = s.RevokeUserSessions(t.Context(), "nobody")
	if wantErr(t, err, nil, "RevokeUserSessions: must succeed for an unknown user") && len(handles) != 0 {
		t.Errorf("RevokeUserSessions: an unknown user must return no handles; got %q", handles)
	}
}

// RevokeUserSessions deletes every session of the user, those that have
// expired but are still on record included, and reports them; and
// UserSessions orders by CreatedAt, whatever the refresh times.
func testRevokeUserSessionsExpired(t *testing.T, s store.Store) {
	mustCreateUser(t, s, "u1")
	old := newSession("old", "u1", base, at(time.Hour))
	a := newSession("a", "u1", at(time.Minute), at(ttl))
	b := newSession("b", "u1", at(2*time.Minute), at(ttl))
	for _, sess := range []store.Session{old, a, b} {
		mustCreateSession(t, s, sess, sess.Handle+"/r0")
	}
	r := rotation("a/r0", "a/r1", at(3*time.Hour), 0)
	a = mustRotate(t, s, r, updated(a, r), "the current token of a live session")
	wantUserSessions(t, s, "u1", at(3*time.Hour), []store.Session{b, a},
		"UserSessions: newest by CreatedAt first, even when an older session was refreshed later")
	handles, err := s.RevokeUserSessions(t.Context(), "u1")
	if wantErr(t, err, nil, "RevokeUserSessions: must succeed") {
		if got, want := slices.Sorted(slices.Values(handles)), []string{"a", "b", "old"}; !slices.Equal(got, want) {
			t.Errorf("RevokeUserSessions: must delete and report every session of the user, an expired one not yet removed included: got %q, want %q", got, want)
		}
	}
	if err := s.RevokeSession(t.Context(), "old", store.EndRevoked); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("RevokeSession: a session deleted by RevokeUserSessions must be gone; got %v", err)
	}
}

// RevokeSession deletes a session whether or not it has expired.
func testRevokeExpiredSession(t *testing.T, s store.Store) {
	mustCreateUser(t, s, "u1")
	mustCreateSession(t, s, newSession("s1", "u1", base, at(time.Hour)), "s1/r0")
	if err := s.RevokeSession(t.Context(), "s1", store.EndRevoked); err != nil {
		t.Errorf("RevokeSession: an expired session still on record must be ended; got error %v", err)
	}
	if err := s.RevokeSession(t.Context(), "s1", store.EndRevoked); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("RevokeSession: a second revocation must return ErrNotFound; got %v", err)
	}
}

func testSessionEpochStartsAtZero(t *testing.T, s store.Store) {
	u := newUser("u1")
	u.User.SessionEpoch = 7 // ignored: a new user starts at zero
	if err := u.create(t.Context(), s); err != nil {
		t.Fatalf("CreateUser: %v", err)
	}
	wantEpoch(t, s, u.Login, 0, "CreateUser: a new user's SessionEpoch must be zero, whatever the value given")
	mustCreateSession(t, s, newSession("s1", "u1", base, at(ttl)), "s1/r0")
	wantEpoch(t, s, u.Login, 0, "CreateSession: starting a session must not change the SessionEpoch")
}

func testRevokeUserSessionsEndsEpoch(t *testing.T, s store.Store) {
	ctx := t.Context()
	u1 := mustCreateUser(t, s, "u1")
	u2 := mustCreateUser(t, s, "u2")
	l, err := s.Login(ctx, u1.LoginKey)
	if err != nil {
		t.Fatalf("Login: %v", err)
	}
	mustCreateSession(t, s, newSession("s1", "u1", base, at(ttl)), "s1/r0")
	mustCreateSession(t, s, newSession("s2", "u2", base, at(ttl)), "s2/r0")

	if _, err := s.RevokeUserSessions(ctx, "u1"); err != nil {
		t.Fatalf("RevokeUserSessions: %v", err)
	}
	wantEpoch(t, s, u1.Login, l.SessionEpoch+1, "RevokeUserSessions: ending every session must advance the user's SessionEpoch")
	wantEpoch(t, s, u2.Login, 0, "RevokeUserSessions: another user's SessionEpoch must not change")

	// A sign-in that read the login before the revocation must not start
	// a session after it; nothing of it is written.
	late := newSession("late", "u1", at(time.Minute), at(ttl))
	err = s.CreateSession(ctx, late, token("late/r0"), l.SessionEpoch)
	wantErr(t, err, store.ErrSessionsEnded, "CreateSession: a session under a SessionEpoch that RevokeUserSessions has passed must return ErrSessionsEnded")
	wantNoSession(t, s, "late", at(time.Minute), "CreateSession: a session refused for its epoch must not be written")
	wantRotateErr(t, s, rotation("late/r0", "late/r1", at(time.Minute), 0), store.ErrNotFound,
		"CreateSession: the token of a session refused for its epoch must not be written, so it must return ErrNotFound")
	if err := s.CreateSession(ctx, late, token("late/r0"), l.SessionEpoch+1); err != nil {
		t.Errorf("CreateSession: a session under the current SessionEpoch must be added, with the handle and token a refused one left free; got error %v", err)
	}
	wantSession(t, s, newSession("s2", "u2", base, at(ttl)), at(time.Minute), "RevokeUserSessions: another user's sessions must stay")

	// Ending the sessions of a user who has none still ends an epoch: a
	// sign-in may be in flight.
	if _, err := s.RevokeUserSessions(ctx, "u2"); err != nil {
		t.Fatalf("RevokeUserSessions: %v", err)
	}
	if _, err := s.RevokeUserSessions(ctx, "u2"); err != nil {
		t.Fatalf("RevokeUserSessions: %v", err)
	}
	wantEpoch(t, s, u2.Login, 2, "RevokeUserSessions: every call must advance the SessionEpoch, also for a user without sessions")
}

// wantEpoch checks the SessionEpoch of l's user as UserByID, Login and
// Logins report it.
func wantEpoch(t *testing.T, s store.Store, l store.Login, want int64, rule string) {
	t.Helper()
	ctx := t.Context()
	if u, err := s.UserByID(ctx, l.UserID); err != nil {
		t.Errorf("%s: UserByID(%q) failed: %v", rule, l.UserID, err)
	} else if u.SessionEpoch != want {
		t.Errorf("%s: UserByID(%q).SessionEpoch = %d, want %d", rule, l.UserID, u.SessionEpoch, want)
	}
	if got, err := s.Login(ctx, l.LoginKey); err != nil {
		t.Errorf("%s: Login(%+v) failed: %v", rule, l.LoginKey, err)
	} else if got.SessionEpoch != want {
		t.Errorf("%s: Login(%+v).SessionEpoch = %d, want %d (the user's)", rule, l.LoginKey, got.SessionEpoch, want)
	}
	logins, err := s.Logins(ctx, l.UserID)
	if err != nil {
		t.Errorf("%s: Logins(%q) failed: %v", rule, l.UserID, err)
	}
	for _, got := range logins {
		if got.SessionEpoch != want {
			t.Errorf("%s: Logins(%q) gives %+v SessionEpoch %d, want %d (the user's)", rule, l.UserID, got.LoginKey, got.SessionEpoch, want)
		}
	}
}

// A session remembers the login that started it: the first login by
// default, whose id is the user's.
func testSessionLoginID(t *testing.T, s store.Store) {
	mustCreateOwner(t, s, "u1")
	mustLinkLogin(t, s, linkedLogin("l2", "u1", "google", "g-2", "u1@example.com"))

	first := newSession("first", "u1", base, at(ttl))
	first.LoginID = ""
	mustCreateSession(t, s, first, "first/r0")
	first.LoginID = "u1"
	linked := newSession("linked", "u1", at(time.Minute), at(ttl))
	linked.LoginID = "l2"
	mustCreateSession(t, s, linked, "linked/r0")

	now := at(time.Hour)
	wantSession(t, s, first, now, "CreateSession: a session without a LoginID must get its user's id")
	wantSession(t, s, linked, now, "CreateSession: a session must keep the LoginID it was given")
	wantUserSessions(t, s, "u1", now, []store.Session{linked, first}, "UserSessions: every session must keep its LoginID")

	r := rotation("linked/r0", "linked/r1", now, 0)
	linked = mustRotate(t, s, r, updated(linked, r), "RotateRefreshToken: the current token of a session started by a linked login")
	wantSession(t, s, linked, now, "RotateRefreshToken: a rotation must keep the session's LoginID")
	got := wantRotateErr(t, s, rotation("linked/r0", "linked/r2", now, 0), store.ErrTokenReused,
		"a superseded token of a live session must return ErrTokenReused")
	if d := sessionDiff(got, linked); d != "" {
		t.Errorf("RotateRefreshToken: a reused token must return the session as it was, its LoginID included: %s", d)
	}
}
