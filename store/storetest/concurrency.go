package storetest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/latchkit/auth/store"
)

var concurrencyTests = []test{
	{"CreateUserSameEmail", testConcurrentCreateUser},
	{"UpdatePasswordHashSameOld", testConcurrentUpdatePasswordHash},
	{"CreateSessionSameHandle", testConcurrentCreateSession},
	{"RotateSameToken", testConcurrentRotate},
	{"RotateSameTokenReuseWindow", testConcurrentRotateReuseWindow},
	{"ResetPasswordSameToken", testConcurrentResetPassword},
	{"MixedUsers", testConcurrentMixed},
	{"RevokeWhileRotating", testConcurrentRevokeAndRotate},
	{"SignInsAcrossReset", testConcurrentSignInsAcrossReset},
	{"SignInsAcrossRevokeAll", testConcurrentSignInsAcrossRevokeAll},
	{"VerifyEmailSameToken", testConcurrentVerifyEmail},
	{"CreateUserOwnSameEmail", testConcurrentCreateUserOwnEmail},
	{"SignInUpOwnSameEmail", testConcurrentSignInUpOwnEmail},
	{"ClaimEmailSameEmail", testConcurrentClaimEmail},
	{"LinkLoginOwnSameEmail", testConcurrentLinkLoginOwnEmail},
	{"DeleteUserWhileSigningIn", testConcurrentDeleteUser},
}

// parallel runs f(0) … f(n-1) in n goroutines released at the same moment
// and waits for all of them.
func parallel(n int, f func(i int)) {
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			f(i)
		})
	}
	close(start)
	wg.Wait()
}

func testConcurrentCreateUser(t *testing.T, s store.Store) {
	const n = 16
	ctx := t.Context()
	users := make([]user, n)
	errs := make([]error, n)
	for i := range users {
		users[i] = newUser(fmt.Sprintf("u%d", i)).withEmail("same@example.com")
	}
	parallel(n, func(i int) { errs[i] = users[i].create(ctx, s) })

	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Errorf("CreateUser: of concurrent calls with one email exactly one must succeed; both %s and %s did", users[winner].User.ID, users[i].User.ID)
		case err == nil:
			winner = i
		case !errors.Is(err, store.ErrConflict):
			t.Errorf("CreateUser: a concurrent call losing the race for an email must return ErrConflict; got error %v", err)
		}
	}
	if winner < 0 {
		t.Fatal("CreateUser: of concurrent calls with one email exactly one must succeed; none did")
	}
	wantUser(t, s, users[winner], "CreateUser: the email must belong to the one call that succeeded")
	for i, u := range users {
		if i == winner {
			continue
		}
		_, err := s.UserByID(ctx, u.User.ID)
		wantErr(t, err, store.ErrNotFound, "CreateUser: a call that returned ErrConflict must not have written its user")
	}
}

func testConcurrentUpdatePasswordHash(t *testing.T, s store.Store) {
	const n = 16
	ctx := t.Context()
	u := mustCreateUser(t, s, "u1")
	errs := make([]error, n)
	newHash := func(i int) string { return phc(fmt.Sprintf("upgrade%d", i)) }
	parallel(n, func(i int) { errs[i] = s.UpdatePasswordHash(ctx, u.User.ID, u.PasswordHash, newHash(i)) })

	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Errorf("UpdatePasswordHash: of concurrent calls with the same old hash exactly one must succeed; calls %d and %d did", winner, i)
		case err == nil:
			winner = i
		case !errors.Is(err, store.ErrConflict):
			t.Errorf("UpdatePasswordHash: a concurrent call whose old hash was replaced in the meantime must return ErrConflict; got error %v", err)
		}
	}
	if winner < 0 {
		t.Fatal("UpdatePasswordHash: of concurrent calls with the same old hash exactly one must succeed; none did")
	}
	u.PasswordHash = newHash(winner)
	wantUser(t, s, u, "UpdatePasswordHash: the stored hash must be the one of the call that succeeded")
}

func testConcurrentCreateSession(t *testing.T, s store.Store) {
	const n = 16
	ctx := t.Context()
	mustCreateUser(t, s, "u1")
	sess := newSession("s1", "u1", base, at(ttl))
	tok := func(i int) string { return fmt.Sprintf("s1/r0-%d", i) }
	errs := make([]error, n)
	parallel(n, func(i int) { errs[i] = s.CreateSession(ctx, sess, token(tok(i)), 0) })

	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Errorf("CreateSession: of concurrent calls with one handle exactly one must succeed; calls %d and %d did", winner, i)
		case err == nil:
			winner = i
		case !errors.Is(err, store.ErrConflict):
			t.Errorf("CreateSession: a concurrent call with a handle that exists must return ErrConflict; got error %v", err)
		}
	}
	if winner < 0 {
		t.Fatal("CreateSession: of concurrent calls with one handle exactly one must succeed; none did")
	}
	now := at(time.Hour)
	for i := range n {
		if i != winner {
			wantRotateErr(t, s, rotation(tok(i), "next", now, 0), store.ErrNotFound,
				"CreateSession: a call that returned ErrConflict must not have written its token")
		}
	}
	r := rotation(tok(winner), "next", now, 0)
	mustRotate(t, s, r, updated(sess, r), "CreateSession: the token of the call that succeeded is current, so rotating it")
}

// stormRounds is how many sessions each rotation storm is repeated on. A
// store that decides and writes in two steps loses only when the scheduler
// interleaves two calls just so; more rounds make that likelier.
const stormRounds = 10

// testConcurrentRotate presents one current token in many concurrent calls
// without a reuse window, once on each of several sessions.
//
// Invariant checked: exactly one call takes the first branch of the
// contract. Every later call presents a superseded token: the first of them
// finds the session live and must end it with ErrTokenReused; all the
// others find it ended and must return an EndedError. So there are exactly
// one success, one ErrTokenReused and n-2 EndedErrors, and afterwards no
// token of the session rotates, not even the winner's Next.
func testConcurrentRotate(t *testing.T, s store.Store) {
	mustCreateUser(t, s, "u1")
	for round := range stormRounds {
		rotateStorm(t, s, fmt.Sprintf("s%d", round))
	}
}

func rotateStorm(t *testing.T, s store.Store, handle string) {
	t.Helper()
	const n = 50
	ctx := t.Context()
	sess := newSession(handle, "u1", base, at(ttl))
	mustCreateSession(t, s, sess, handle+"/r0")

	now := at(time.Hour)
	errs := make([]error, n)
	parallel(n, func(i int) {
		_, errs[i] = s.RotateRefreshToken(ctx, rotation(handle+"/r0", handle+"/r1", now, 0))
	})

	var ok, reused, ended int
	for _, err := range errs {
		var e *store.EndedError
		switch {
		case err == nil:
			ok++
		case errors.Is(err, store.ErrTokenReused):
			reused++
		case errors.As(err, &e) && e.Reason == store.EndTokenTheft:
			ended++
		default:
			t.Errorf("RotateRefreshToken: concurrent calls with one token must return nil, ErrTokenReused or an EndedError for theft; session %s got error %v", handle, err)
		}
	}
	if ok != 1 {
		t.Errorf("RotateRefreshToken: of concurrent calls with the same current token exactly one must succeed; on session %s %d did", handle, ok)
	}
	if reused != 1 {
		t.Errorf("RotateRefreshToken: after one concurrent call won, the first to present the now superseded token must get ErrTokenReused and end the session, the rest an EndedError; session %s got %d ErrTokenReused and %d EndedError", handle, reused, ended)
	}

	wantNoSession(t, s, handle, now, "RotateRefreshToken: reuse by a losing concurrent call must end the session")
	later := now.Add(time.Second)
	for _, tok := range []string{handle + "/r1", handle + "/r0"} {
		wantRotateErr(t, s, rotation(tok, handle+"/after", later, 0), store.ErrNotFound,
			fmt.Sprintf("after concurrent reuse ended session %s, %s must return ErrNotFound", handle, tok))
	}
}

// testConcurrentRotateReuseWindow presents one current token in many
// concurrent calls with the same Now and a positive reuse window, as tabs
// refreshing at once or a client retrying a lost response would, once on
// each of several sessions.
//
// Invariant checked: exactly one call exchanges the token; every other
// presents the token it superseded inside the window and must report
// Repeat with the winner's key, changing nothing. The session is then as
// the winner left it, its Next is the one current token, and the
// presented token, after the window, is theft.
func testConcurrentRotateReuseWindow(t *testing.T, s store.Store) {
	mustCreateUser(t, s, "u1")
	for round := range stormRounds {
		rotateStormReuseWindow(t, s, fmt.Sprintf("s%d", round))
	}
}

func rotateStormReuseWindow(t *testing.T, s store.Store, handle string) {
	t.Helper()
	const n = 50
	ctx := t.Context()
	sess := newSession(handle, "u1", base, at(ttl))
	mustCreateSession(t, s, sess, handle+"/r0")

	now := at(time.Hour)
	rotations := make([]store.Rotation, n)
	for i := range rotations {
		rotations[i] = rotation(handle+"/r0", fmt.Sprintf("%s/r1-%d", handle, i), now, time.Minute)
		rotations[i].ExpiresAt = now.Add(ttl + time.Duration(i)*time.Second)
	}
	got := make([]store.Rotated, n)
	errs := make([]error, n)
	parallel(n, func(i int) { got[i], errs[i] = s.RotateRefreshToken(ctx, rotations[i]) })

	winner := -1
	for i, err := range errs {
		switch {
		case err != nil:
			t.Errorf("RotateRefreshToken: a concurrent call inside the reuse window must succeed; session %s call %d got error %v", handle, i, err)
		case !got[i].Repeat && winner >= 0:
			t.Errorf("RotateRefreshToken: of concurrent calls with one token exactly one may exchange it; on session %s calls %d and %d did", handle, winner, i)
		case !got[i].Repeat:
			winner = i
		}
	}
	if winner < 0 {
		t.Fatalf("RotateRefreshToken: of concurrent calls with one token exactly one must exchange it; on session %s none did", handle)
	}
	want := updated(sess, rotations[winner])
	for i := range n {
		if i == winner || errs[i] != nil {
			continue
		}
		if got[i].CurrentKey != rotations[winner].NextKey {
			t.Errorf("RotateRefreshToken: a Repeat must report the key of the exchange's successor, %q; call %d got %q", rotations[winner].NextKey, i, got[i].CurrentKey)
		}
		if d := sessionDiff(got[i].Session, want); d != "" {
			t.Errorf("RotateRefreshToken: a Repeat must return the session as the exchange left it: %s", d)
		}
	}
	wantSession(t, s, want, now, "RotateRefreshToken: after concurrent calls inside the window the session must be as the one exchange left it")

	later := now.Add(time.Second)
	r := rotation(fmt.Sprintf("%s/r1-%d", handle, winner), handle+"/r2", later, time.Minute)
	want = mustRotate(t, s, r, updated(want, r), "the exchange's successor is the one current token, so rotating it")
	wantTheft(t, s, rotation(handle+"/r0", handle+"/x", later.Add(time.Minute), time.Minute), want, store.ReuseStale,
		"after the window, the token the storm presented")
}

// testConcurrentResetPassword presents one reset token in many concurrent
// calls, each setting its own password hash, once for each of several users.
//
// Invariant checked: exactly one call succeeds and all the others return
// ErrNotFound, because the token works once; the user's hash is then the
// winner's, and the user's session is revoked.
func testConcurrentResetPassword(t *testing.T, s store.Store) {
	for round := range stormRounds {
		resetStorm(t, s, fmt.Sprintf("u%d", round))
	}
}

func resetStorm(t *testing.T, s store.Store, userID string) {
	t.Helper()
	const n = 20
	ctx := t.Context()
	u := mustCreateUser(t, s, userID)
	sess := newSession(userID+"/s1", userID, base, at(ttl))
	mustCreateSession(t, s, sess, userID+"/s1/r0")
	mustCreateResetToken(t, s, newResetToken(userID+"/reset", userID, base, at(time.Hour)))

	now := at(10 * time.Minute)
	newHash := func(i int) string { return phc(fmt.Sprintf("%s-reset%d", userID, i)) }
	logins := make([]store.Login, n)
	handles := make([][]string, n)
	errs := make([]error, n)
	parallel(n, func(i int) {
		logins[i], handles[i], errs[i] = s.ResetPassword(ctx, token(userID+"/reset"), newHash(i), now)
	})

	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Errorf("ResetPassword: a token works once, so of concurrent calls with it exactly one must succeed; for user %s calls %d and %d did", userID, winner, i)
		case err == nil:
			winner = i
		case !errors.Is(err, store.ErrNotFound):
			t.Errorf("ResetPassword: a concurrent call with a token used up by another must return ErrNotFound; user %s got error %v", userID, err)
		}
	}
	if winner < 0 {
		t.Fatalf("ResetPassword: of concurrent calls with a live token exactly one must succeed; for user %s none did", userID)
	}
	want := afterReset(u, newHash(winner))
	if d := loginDiff(logins[winner], want.Login); d != "" {
		t.Errorf("ResetPassword: a successful reset must return the email and password login with the new password hash: %s", d)
	}
	if !slices.Equal(handles[winner], []string{sess.Handle}) {
		t.Errorf("ResetPassword: the call that succeeded must return the handles of the sessions it revoked: got %q, want %q", handles[winner], []string{sess.Handle})
	}
	wantUser(t, s, want, "ResetPassword: the stored hash must be the one of the call that succeeded")
	wantNoSession(t, s, sess.Handle, now, "ResetPassword: must revoke every session of the user")
}

// testConcurrentMixed runs the everyday operations of several users at once,
// plus key management and DeleteExpired, to shake out data races.
func testConcurrentMixed(t *testing.T, s store.Store) {
	const users, rounds = 8, 10
	ctx := t.Context()

	parallel(users+1, func(w int) {
		if w == users {
			keysWorker(t, s)
			return
		}
		uid := fmt.Sprintf("u%d", w)
		u := newUser(uid)
		if err := u.create(ctx, s); err != nil {
			t.Errorf("CreateUser: a user with a new id and email must be added; got error %v", err)
			return
		}
		live := 0
		for round := range rounds {
			handle := fmt.Sprintf("%s/s%d", uid, round)
			now := at(time.Duration(round) * time.Minute)
			sess := newSession(handle, uid, now, now.Add(ttl))
			if err := s.CreateSession(ctx, sess, token(handle+"/r0"), 0); err != nil {
				t.Errorf("CreateSession: a session with a new handle and token of an existing user must be added; got error %v", err)
				return
			}
			live++
			for gen := range 3 {
				now = now.Add(time.Second)
				r := rotation(fmt.Sprintf("%s/r%d", handle, gen), fmt.Sprintf("%s/r%d", handle, gen+1), now, 0)
				got, err := s.RotateRefreshToken(ctx, r)
				if err != nil {
					t.Errorf("RotateRefreshToken: the current token of a live session must rotate; got error %v", err)
					return
				}
				sess = updated(sess, r)
				if d := sessionDiff(got.Session, sess); d != "" {
					t.Errorf("RotateRefreshToken: must return the updated session: %s", d)
				}
			}
			if got, err := s.UserSessions(ctx, uid, now); err != nil || len(got) != live {
				t.Errorf("UserSessions: must return every live session of the user; got %d sessions, error %v, want %d", len(got), err, live)
			}
			oldHash, newHash := u.PasswordHash, phc(fmt.Sprintf("%s-%d", uid, round))
			if err := s.UpdatePasswordHash(ctx, uid, oldHash, newHash); err != nil {
				t.Errorf("UpdatePasswordHash: a matching old hash must succeed; got error %v", err)
			}
			u.PasswordHash = newHash
			if round%3 == 0 {
				if err := s.RevokeSession(ctx, handle, store.EndSignedOut); err != nil {
					t.Errorf("RevokeSession: an existing session must be revoked; got error %v", err)
				}
				live--
			}
		}
		if got, err := s.Login(ctx, u.LoginKey); err != nil || got.PasswordHash != u.PasswordHash {
			t.Errorf("UpdatePasswordHash: the last successful update must be stored; got %q, error %v", got.PasswordHash, err)
		}
		handles, err := s.RevokeUserSessions(ctx, uid)
		if err != nil || len(handles) != live {
			t.Errorf("RevokeUserSessions: must return the handles of every session of the user; got %d, error %v, want %d", len(handles), err, live)
		}
	})
}

// keysWorker adds and reads signing keys and runs DeleteExpired at a time
// before anything of testConcurrentMixed expires, so it must remove nothing
// the other workers rely on.
func keysWorker(t *testing.T, s store.Store) {
	ctx := t.Context()
	for i := range 20 {
		k := newKey(fmt.Sprintf("k%d", i), at(time.Duration(i)*time.Minute), at(ttl), at(2*ttl))
		if err := s.AddSigningKey(ctx, k); err != nil {
			t.Errorf("AddSigningKey: a key with a new id must be added; got error %v", err)
			return
		}
		keys, err := s.SigningKeys(ctx, base)
		if err != nil || len(keys) != i+1 || keys[0].ID != k.ID {
			t.Errorf("SigningKeys: must return every live key, newest first; got %v, error %v, want %d keys starting with %s", keyIDs(keys), err, i+1, k.ID)
		}
		if err := s.DeleteExpired(ctx, base); err != nil {
			t.Errorf("DeleteExpired: must succeed; got error %v", err)
		}
	}
}

// A revocation racing a rotation of the same session always wins: it
// returns nil or ErrNotFound, never another error, and afterwards the
// session is gone and neither its old token nor a token the rotation
// issued works.
func testConcurrentRevokeAndRotate(t *testing.T, s store.Store) {
	const rounds = 30
	ctx := t.Context()
	mustCreateUser(t, s, "u1")
	now := at(time.Hour)
	for round := range rounds {
		handle := fmt.Sprintf("s%d", round)
		sess := newSession(handle, "u1", base, at(ttl))
		mustCreateSession(t, s, sess, handle+"/r0")
		var revokeErr, rotateErr error
		parallel(2, func(i int) {
			if i == 0 {
				revokeErr = s.RevokeSession(ctx, handle, store.EndSignedOut)
			} else {
				_, rotateErr = s.RotateRefreshToken(ctx, rotation(handle+"/r0", handle+"/r1", now, 0))
			}
		})
		if revokeErr != nil && !errors.Is(revokeErr, store.ErrNotFound) {
			t.Errorf("RevokeSession: racing a rotation of the same session must succeed (or find it gone); round %d got error %v", round, revokeErr)
		}
		if rotateErr != nil && !errors.Is(rotateErr, store.ErrNotFound) {
			t.Errorf("RotateRefreshToken: racing a revocation of its session must succeed or return ErrNotFound; round %d got error %v", round, rotateErr)
		}
		if revokeErr == nil {
			wantNoSession(t, s, handle, now, "RevokeSession: a revocation that succeeded while a rotation raced must leave no session")
			for _, tok := range []string{handle + "/r0", handle + "/r1"} {
				wantRotateErr(t, s, rotation(tok, tok+"/next", now, 0), store.ErrNotFound,
					fmt.Sprintf("RevokeSession: after a revocation that raced a rotation, %s must return ErrNotFound", tok))
			}
		}
	}
}

// Sign-ins that read the login before a reset and create their sessions
// while it runs: whichever way each race goes, no session survives the
// reset, and every refusal is ErrSessionsEnded.
func testConcurrentSignInsAcrossReset(t *testing.T, s store.Store) {
	u := mustCreateUser(t, s, "u1")
	for round := range 5 {
		name := fmt.Sprintf("reset%d", round)
		mustCreateResetToken(t, s, newResetToken(name, "u1", base, at(time.Hour)))
		signInsAcross(t, s, u.Login, round, func() error {
			_, _, err := s.ResetPassword(t.Context(), token(name), phc(name), at(time.Minute))
			return err
		})
	}
}

func testConcurrentSignInsAcrossRevokeAll(t *testing.T, s store.Store) {
	u := mustCreateUser(t, s, "u1")
	for round := range 5 {
		signInsAcross(t, s, u.Login, round, func() error {
			_, err := s.RevokeUserSessions(t.Context(), "u1")
			return err
		})
	}
}

// signInsAcross reads l as 16 sign-ins would, then runs end, which ends
// every session of l's user, while they create their sessions.
func signInsAcross(t *testing.T, s store.Store, l store.Login, round int, end func() error) {
	t.Helper()
	const n = 16
	ctx := t.Context()
	read, err := s.Login(ctx, l.LoginKey)
	if err != nil {
		t.Fatalf("Login: %v", err)
	}
	errs := make([]error, n+1)
	parallel(n+1, func(i int) {
		if i == n {
			errs[i] = end()
			return
		}
		handle := fmt.Sprintf("r%d/s%d", round, i)
		errs[i] = s.CreateSession(ctx, newSession(handle, l.UserID, base, at(ttl)), token(handle+"/r0"), read.SessionEpoch)
	})
	if errs[n] != nil {
		t.Fatalf("round %d: ending every session failed: %v", round, errs[n])
	}
	for i, err := range errs[:n] {
		if err != nil && !errors.Is(err, store.ErrSessionsEnded) {
			t.Errorf("CreateSession: racing the end of every session, a session must be created (and then ended) or refused with ErrSessionsEnded; round %d call %d got %v", round, i, err)
		}
	}
	if got, err := s.UserSessions(ctx, l.UserID, at(time.Minute)); err != nil {
		t.Fatalf("UserSessions: %v", err)
	} else if len(got) != 0 {
		t.Errorf("CreateSession: sessions authorised before every session was ended must not outlive it; round %d: %d of %d survived", round, len(got), n)
	}
}

// testConcurrentVerifyEmail presents one verification token in many
// concurrent calls, once for each of several users.
//
// Invariant checked: exactly one call succeeds and all the others return
// ErrNotFound, because the token works once.
func testConcurrentVerifyEmail(t *testing.T, s store.Store) {
	const n = 16
	ctx := t.Context()
	for round := range stormRounds {
		id := fmt.Sprintf("u%d", round)
		u := mustCreateUser(t, s, id)
		mustCreateVerificationToken(t, s, newVerificationToken(id+"/verify", id, u.Email, base, at(time.Hour)))

		now := at(10 * time.Minute)
		logins := make([]store.Login, n)
		errs := make([]error, n)
		parallel(n, func(i int) { logins[i], errs[i] = s.VerifyEmail(ctx, token(id+"/verify"), now) })

		winner := -1
		for i, err := range errs {
			switch {
			case err == nil && winner >= 0:
				t.Errorf("VerifyEmail: a token works once, so of concurrent calls with it exactly one must succeed; for user %s calls %d and %d did", id, winner, i)
			case err == nil:
				winner = i
			case !errors.Is(err, store.ErrNotFound):
				t.Errorf("VerifyEmail: a concurrent call with a token used up by another must return ErrNotFound; user %s got error %v", id, err)
			}
		}
		if winner < 0 {
			t.Fatalf("VerifyEmail: of concurrent calls with a live token exactly one must succeed; for user %s none did", id)
		}
		if d := loginDiff(logins[winner], verified(u.Login)); d != "" {
			t.Errorf("VerifyEmail: the call that succeeded must return the login with its email verified: %s", d)
		}
		wantUser(t, s, user{User: u.User, Login: verified(u.Login)}, "VerifyEmail: the email must be verified once the storm is over")
	}
}

// ownStorm checks the outcome of n concurrent calls that each asked to
// own one email for a user of their own, users[i]: exactly one succeeded
// and owns it, every other returned ErrEmailOwned and wrote nothing.
func ownStorm(t *testing.T, s store.Store, method string, users []user, errs []error) {
	t.Helper()
	ctx := t.Context()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Errorf("%s: of concurrent calls asking to own one email exactly one must succeed; both %s and %s did", method, users[winner].User.ID, users[i].User.ID)
		case err == nil:
			winner = i
		case !errors.Is(err, store.ErrEmailOwned):
			t.Errorf("%s: a concurrent call losing the race to own an email must return ErrEmailOwned; %s got error %v", method, users[i].User.ID, err)
		}
	}
	if winner < 0 {
		t.Fatalf("%s: of concurrent calls asking to own one email exactly one must succeed; none did", method)
	}
	wantUser(t, s, users[winner], method+": the email must be owned by the one call that succeeded")
	for i, u := range users {
		if i == winner {
			continue
		}
		_, err := s.UserByID(ctx, u.User.ID)
		wantErr(t, err, store.ErrNotFound, method+": a call that returned ErrEmailOwned must not have written its user")
		_, err = s.Login(ctx, u.LoginKey)
		wantErr(t, err, store.ErrNotFound, method+": a call that returned ErrEmailOwned must not have written its login")
	}
}

// owners are the users whose logins race to own email, each with a key of
// its own.
func owners(n int, email string) []user {
	users := make([]user, n)
	for i := range users {
		users[i] = owning(google(fmt.Sprintf("u%d", i), email))
	}
	return users
}

func testConcurrentCreateUserOwnEmail(t *testing.T, s store.Store) {
	const n = 16
	ctx := t.Context()
	users := owners(n, "same@example.com")
	errs := make([]error, n)
	parallel(n, func(i int) { errs[i] = users[i].create(ctx, s) })
	ownStorm(t, s, "CreateUser", users, errs)
}

func testConcurrentSignInUpOwnEmail(t *testing.T, s store.Store) {
	const n = 16
	ctx := t.Context()
	users := owners(n, "same@example.com")
	errs := make([]error, n)
	created := make([]bool, n)
	parallel(n, func(i int) { _, created[i], errs[i] = s.SignInUp(ctx, users[i].Login, users[i].User) })
	for i := range n {
		if errs[i] == nil && !created[i] {
			t.Errorf("SignInUp: a new identity must create its user; call %d reported created = false", i)
		}
	}
	ownStorm(t, s, "SignInUp", users, errs)
}

func testConcurrentClaimEmail(t *testing.T, s store.Store) {
	const n = 16
	ctx := t.Context()
	const email = "same@example.com"
	for i := range n {
		if err := google(fmt.Sprintf("u%d", i), email).create(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	logins := make([]store.Login, n)
	errs := make([]error, n)
	parallel(n, func(i int) { logins[i], errs[i] = s.ClaimEmail(ctx, fmt.Sprintf("u%d", i)) })

	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Errorf("ClaimEmail: of concurrent claims of one email by logins of different users exactly one must succeed; u%d and u%d did", winner, i)
		case err == nil:
			winner = i
		case !errors.Is(err, store.ErrEmailOwned):
			t.Errorf("ClaimEmail: a concurrent claim losing the race must return ErrEmailOwned; u%d got error %v", i, err)
		}
	}
	if winner < 0 {
		t.Fatal("ClaimEmail: of concurrent claims of one email exactly one must succeed; none did")
	}
	if !logins[winner].OwnsEmail {
		t.Errorf("ClaimEmail: the claim that succeeded must return the login owning the email; got %+v", logins[winner])
	}
	all, err := s.LoginsByEmail(ctx, email)
	if err != nil {
		t.Fatalf("LoginsByEmail: %v", err)
	}
	var holders []string
	for _, l := range all {
		if l.OwnsEmail {
			holders = append(holders, l.ID)
		}
	}
	if want := fmt.Sprintf("u%d", winner); len(holders) != 1 || holders[0] != want {
		t.Errorf("ClaimEmail: at most one login owns an email, the one whose claim succeeded (%s); owners after the race: %q", want, holders)
	}
}

// testConcurrentLinkLoginOwnEmail links, in many concurrent calls, a
// proven login asking to own one email to each of as many users, once for
// each of several emails.
//
// Invariant checked: exactly one call succeeds and its login owns the
// email; every other returns ErrEmailOwned and writes nothing, so the
// email has one owner.
func testConcurrentLinkLoginOwnEmail(t *testing.T, s store.Store) {
	const n = 16
	ctx := t.Context()
	users := make([]user, n)
	have := make([]int, n) // how many logins each user has
	for i := range users {
		users[i] = mustCreateUser(t, s, fmt.Sprintf("u%d", i))
		have[i] = 1
	}
	for round := range stormRounds {
		email := fmt.Sprintf("round%d@example.com", round)
		logins := make([]store.Login, n)
		for i := range logins {
			logins[i] = asOwner(linkedLogin(fmt.Sprintf("r%d/l%d", round, i), users[i].User.ID, "google", fmt.Sprintf("g-r%d-%d", round, i), email))
		}
		errs := make([]error, n)
		parallel(n, func(i int) { errs[i] = s.LinkLogin(ctx, logins[i]) })

		winner := -1
		for i, err := range errs {
			switch {
			case err == nil && winner >= 0:
				t.Errorf("LinkLogin: of concurrent calls asking to own one email exactly one must succeed; round %d: both %s and %s did", round, logins[winner].ID, logins[i].ID)
			case err == nil:
				winner = i
			case !errors.Is(err, store.ErrEmailOwned):
				t.Errorf("LinkLogin: a concurrent call losing the race to own an email must return ErrEmailOwned; round %d: %s got error %v", round, logins[i].ID, err)
			}
		}
		if winner < 0 {
			t.Fatalf("LinkLogin: of concurrent calls asking to own one email exactly one must succeed; round %d: none did", round)
		}
		have[winner]++
		wantLogin(t, s, logins[winner], "LinkLogin: the login of the one call that succeeded must own the email")
		for i, l := range logins {
			if i != winner {
				wantNotLinked(t, s, l, have[i], "a call that returned ErrEmailOwned")
			}
		}
		wantOwners(t, s, email, []string{logins[winner].ID}, "LinkLogin: at most one login owns an email, the one whose call succeeded")
	}
}

// DeleteUser racing sign-ins that read the user before it and a refresh
// of one of its sessions: whichever way each race goes, no session of the
// user survives, every session created is among the handles DeleteUser
// reports, and every refusal is ErrNotFound.
func testConcurrentDeleteUser(t *testing.T, s store.Store) {
	const rounds, n = stormRounds, 16
	ctx := t.Context()
	for round := range rounds {
		id := fmt.Sprintf("u%d", round)
		u := mustCreateUser(t, s, id)
		old := newSession(id+"/old", id, base, at(ttl))
		mustCreateSession(t, s, old, old.Handle+"/r0")
		read, err := s.Login(ctx, u.LoginKey)
		if err != nil {
			t.Fatalf("Login: %v", err)
		}

		handle := func(i int) string { return fmt.Sprintf("%s/s%d", id, i) }
		now := at(time.Minute)
		var deleted []string
		var deleteErr, rotateErr error
		errs := make([]error, n)
		parallel(n+2, func(i int) {
			switch i {
			case n:
				deleted, deleteErr = s.DeleteUser(ctx, id)
			case n + 1:
				_, rotateErr = s.RotateRefreshToken(ctx, rotation(old.Handle+"/r0", old.Handle+"/r1", now, 0))
			default:
				errs[i] = s.CreateSession(ctx, newSession(handle(i), id, base, at(ttl)), token(handle(i)+"/r0"), read.SessionEpoch)
			}
		})
		if deleteErr != nil {
			t.Fatalf("DeleteUser: an existing user must be removed while sign-ins race it; round %d got error %v", round, deleteErr)
		}
		if rotateErr != nil && !errors.Is(rotateErr, store.ErrNotFound) {
			t.Errorf("RotateRefreshToken: racing the deletion of its user must succeed or return ErrNotFound; round %d got error %v", round, rotateErr)
		}
		want := []string{old.Handle}
		for i, err := range errs {
			switch {
			case err == nil:
				want = append(want, handle(i))
			case !errors.Is(err, store.ErrNotFound):
				t.Errorf("CreateSession: racing the deletion of its user, a session must be created (and then deleted) or refused with ErrNotFound; round %d call %d got %v", round, i, err)
			}
		}
		wantHandles(t, deleted, want, "DeleteUser: racing sign-ins, it must report exactly the sessions that existed, those the sign-ins created before it included")
		if got, err := s.UserSessions(ctx, id, now); err != nil || len(got) != 0 {
			t.Errorf("DeleteUser: no session of a deleted user may survive sign-ins racing the deletion; round %d: UserSessions = %v, error %v", round, got, err)
		}
		for i := range n {
			wantNoSession(t, s, handle(i), now, "DeleteUser: no session of a deleted user may survive sign-ins racing the deletion")
		}
		for _, tok := range []string{old.Handle + "/r0", old.Handle + "/r1"} {
			wantRotateErr(t, s, rotation(tok, tok+"/next", now, 0), store.ErrNotFound,
				fmt.Sprintf("DeleteUser: after a deletion that raced a refresh, %s must return ErrNotFound", tok))
		}
	}
}
