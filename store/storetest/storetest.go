// Package storetest checks that an implementation of store.Store keeps the
// contract written on the interface, in the spirit of testing/fstest and
// testing/slogtest.
//
// An implementation calls Run from one of its tests:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) store.Store {
//			return mystore.Open(t) // a fresh, empty store
//		})
//	}
//
// Run calls newStore once per subtest, and the subtests of a group run in
// parallel, so newStore must be safe for concurrent use and every store it
// returns must be empty and independent of the others: the subtests reuse
// the same ids ("u1", "s1", ...). Register teardown with t.Cleanup on the
// *testing.T that newStore receives. Run returns only after every subtest has
// finished, so resources shared by all stores may be released after it.
//
// The suite never reads the clock: every time it passes is fixed, in the
// year 2030, in UTC. It compares the times a store returns with
// time.Time.Equal after truncating both to milliseconds, so a store must keep
// at least millisecond precision but need not keep the location or the
// monotonic reading. It assumes no order beyond what the contract promises,
// and it leaves alone what the contract leaves open: whether a session or a
// refresh token is still live at the very instant of its ExpiresAt, whether
// DeleteExpired removes a record whose expiry is exactly now, whether
// UserSessions orders by CreatedAt or by RefreshedAt, what
// RotateRefreshToken does when Next already exists, in which order
// ResetPassword returns the handles it revoked, and whether RevokeSession,
// RevokeUserSessions and ResetPassword see sessions that have expired but not
// yet been deleted. Signing keys and password reset tokens, on the other
// hand, are checked at the very instant: a reset token whose ExpiresAt is now
// has expired, as the documentation of store.ErrNotFound says. Failure
// messages name the rule of the contract that was broken.
package storetest

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/latchkit/auth/store"
)

// Run runs the conformance suite against the stores that newStore makes.
func Run(t *testing.T, newStore func(t *testing.T) store.Store) {
	groups := []struct {
		name  string
		tests []test
	}{
		{"Users", userTests},
		{"Sessions", sessionTests},
		{"Rotation", rotationTests},
		{"SigningKeys", signingKeyTests},
		{"ResetTokens", resetTokenTests},
		{"DeleteExpired", deleteExpiredTests},
		{"Concurrency", concurrencyTests},
	}
	// Optional parts of the contract are checked when the store has them.
	if _, ok := newStore(t).(store.RateLimitStore); ok {
		groups = append(groups, struct {
			name  string
			tests []test
		}{"RateLimits", rateLimitTests})
	}
	for _, g := range groups {
		// The group itself is not parallel: t.Run then waits for all of its
		// parallel subtests, which is what lets Run promise that the suite
		// has finished when it returns.
		t.Run(g.name, func(t *testing.T) {
			for _, tc := range g.tests {
				t.Run(tc.name, func(t *testing.T) {
					t.Parallel()
					tc.run(t, newStore(t))
				})
			}
		})
	}
}

type test struct {
	name string
	run  func(t *testing.T, s store.Store)
}

var userTests = []test{
	{"CreateAndGet", testCreateUser},
	{"DuplicateID", testCreateUserDuplicateID},
	{"DuplicateEmail", testCreateUserDuplicateEmail},
	{"EmailComparedExactly", testEmailComparedExactly},
	{"NotFound", testUserNotFound},
	{"UpdatePasswordHash", testUpdatePasswordHash},
	{"UpdatePasswordHashStale", testUpdatePasswordHashStale},
	{"UpdatePasswordHashUnknownUser", testUpdatePasswordHashUnknownUser},
}

var sessionTests = []test{
	{"CreateAndGet", testCreateSession},
	{"DuplicateHandle", testCreateSessionDuplicateHandle},
	{"DuplicateToken", testCreateSessionDuplicateToken},
	{"UnknownUser", testCreateSessionUnknownUser},
	{"Expiry", testSessionExpiry},
	{"UserSessionsNewestFirst", testUserSessionsNewestFirst},
	{"UserSessionsEmpty", testUserSessionsEmpty},
	{"RevokeSession", testRevokeSession},
	{"RevokeUserSessions", testRevokeUserSessions},
}

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
}

var signingKeyTests = []test{
	{"AddAndList", testAddSigningKey},
	{"DuplicateID", testAddSigningKeyDuplicate},
	{"Expiry", testSigningKeysExpiry},
	{"MaterialNotAliased", testSigningKeyMaterialNotAliased},
}

var resetTokenTests = []test{
	{"ResetPassword", testResetPassword},
	{"WorksOnce", testResetPasswordOnce},
	{"Expiry", testResetTokenExpiry},
	{"UnknownToken", testResetPasswordUnknownToken},
	{"CreateUnknownUser", testCreateResetTokenUnknownUser},
	{"CreateDuplicateHash", testCreateResetTokenDuplicate},
	{"VoidsOtherTokens", testResetPasswordVoidsOtherTokens},
	{"UpdatePasswordHashVoidsTokens", testUpdatePasswordHashVoidsResetTokens},
	{"DeleteExpired", testDeleteExpiredResetTokens},
}

var deleteExpiredTests = []test{
	{"RemovesExpired", testDeleteExpired},
	{"KeepsLive", testDeleteExpiredKeepsLive},
}

var concurrencyTests = []test{
	{"CreateUserSameEmail", testConcurrentCreateUser},
	{"UpdatePasswordHashSameOld", testConcurrentUpdatePasswordHash},
	{"CreateSessionSameHandle", testConcurrentCreateSession},
	{"RotateSameToken", testConcurrentRotate},
	{"RotateSameTokenReuseWindow", testConcurrentRotateReuseWindow},
	{"ResetPasswordSameToken", testConcurrentResetPassword},
	{"MixedUsers", testConcurrentMixed},
}

// ---------------------------------------------------------------------------
// Fixtures and comparisons

// base is the origin of every time in the suite. It lies in the future so
// that a store which wrongly consults the clock sees nothing as expired.
var base = time.Date(2030, time.January, 1, 0, 0, 0, 0, time.UTC)

// precision is the coarsest time resolution a store may keep.
const precision = time.Millisecond

// ttl is the lifetime the suite gives sessions when the test does not care.
const ttl = 24 * time.Hour

func at(d time.Duration) time.Time { return base.Add(d) }

func sameTime(a, b time.Time) bool {
	return a.Truncate(precision).Equal(b.Truncate(precision))
}

// token derives a distinct token hash from a readable name, so that tests
// can talk about "s1/r0" rather than opaque bytes.
func token(name string) store.TokenHash { return sha256.Sum256([]byte(name)) }

func phc(seed string) string {
	return "$argon2id$v=19$m=65536,t=3,p=4$" + seed + "$aGFzaA"
}

func newUser(id string) store.User {
	return store.User{
		ID:           id,
		Email:        id + "@example.com",
		PasswordHash: phc(id),
		TimeJoined:   base,
	}
}

func newSession(handle, userID string, created, expires time.Time) store.Session {
	return store.Session{
		Handle:      handle,
		UserID:      userID,
		CreatedAt:   created,
		RefreshedAt: created,
		ExpiresAt:   expires,
	}
}

func newKey(id string, created, signUntil, verifyUntil time.Time) store.SigningKey {
	return store.SigningKey{
		ID:          id,
		Algorithm:   "HS256",
		Material:    []byte("material of " + id),
		CreatedAt:   created,
		SignUntil:   signUntil,
		VerifyUntil: verifyUntil,
	}
}

// newResetToken is the reset token called name (its hash is token(name)) of
// a user, issued at created and working until expires.
func newResetToken(name, userID string, created, expires time.Time) store.ResetToken {
	return store.ResetToken{
		Hash:      token(name),
		UserID:    userID,
		CreatedAt: created,
		ExpiresAt: expires,
	}
}

// rotation asks to exchange presented for next at now, extending the
// session by ttl.
func rotation(presented, next string, now time.Time, window time.Duration) store.Rotation {
	return store.Rotation{
		Presented:   token(presented),
		Next:        token(next),
		Now:         now,
		ExpiresAt:   now.Add(ttl),
		ReuseWindow: window,
	}
}

// updated is sess as a successful rotation r must leave it.
func updated(sess store.Session, r store.Rotation) store.Session {
	sess.RefreshedAt = r.Now
	sess.ExpiresAt = r.ExpiresAt
	return sess
}

func mustCreateUser(t *testing.T, s store.Store, id string) store.User {
	t.Helper()
	u := newUser(id)
	if err := s.CreateUser(t.Context(), u); err != nil {
		t.Fatalf("CreateUser: a user with a new id and email must be added; got error %v", err)
	}
	return u
}

func mustCreateSession(t *testing.T, s store.Store, sess store.Session, refresh string) {
	t.Helper()
	if err := s.CreateSession(t.Context(), sess, token(refresh)); err != nil {
		t.Fatalf("CreateSession: a session with a new handle and token of an existing user must be added; got error %v", err)
	}
}

func mustAddKey(t *testing.T, s store.Store, k store.SigningKey) {
	t.Helper()
	if err := s.AddSigningKey(t.Context(), k); err != nil {
		t.Fatalf("AddSigningKey: a key with a new id must be added; got error %v", err)
	}
}

func mustCreateResetToken(t *testing.T, s store.Store, rt store.ResetToken) {
	t.Helper()
	if err := s.CreateResetToken(t.Context(), rt); err != nil {
		t.Fatalf("CreateResetToken: a token with a new hash of an existing user must be added; got error %v", err)
	}
}

// mustResetPassword performs a reset with the token called name that the
// contract says succeeds, explained by rule. It checks that the store returns
// want, the user as updated, and the handles in revoked, in any order.
func mustResetPassword(t *testing.T, s store.Store, name string, now time.Time, want store.User, revoked []string, rule string) {
	t.Helper()
	got, handles, err := s.ResetPassword(t.Context(), token(name), want.PasswordHash, now)
	if err != nil {
		t.Fatalf("%s must succeed; got error %v", rule, err)
	}
	if d := userDiff(got, want); d != "" {
		t.Errorf("ResetPassword: a successful reset must return the user with the new password hash: %s", d)
	}
	if got, want := slices.Sorted(slices.Values(handles)), slices.Sorted(slices.Values(revoked)); !slices.Equal(got, want) {
		t.Errorf("ResetPassword: a successful reset must return the handles of every session of the user it revoked: got %q, want %q (in any order)", got, want)
	}
}

// wantResetErr attempts a reset to passwordHash with the token called name
// and reports a failure of rule unless it returns ErrNotFound, the only error
// the contract allows ResetPassword.
func wantResetErr(t *testing.T, s store.Store, name, passwordHash string, now time.Time, rule string) {
	t.Helper()
	_, _, err := s.ResetPassword(t.Context(), token(name), passwordHash, now)
	wantErr(t, err, store.ErrNotFound, "ResetPassword: "+rule)
}

// mustRotate performs a rotation that the contract says succeeds, explained
// by rule, and checks the session it returns against want. It returns want,
// not what the store returned, so that one wrong answer does not skew the
// expectations of later checks.
func mustRotate(t *testing.T, s store.Store, r store.Rotation, want store.Session, rule string) store.Session {
	t.Helper()
	got, err := s.RotateRefreshToken(t.Context(), r)
	if err != nil {
		t.Fatalf("RotateRefreshToken: %s must succeed; got error %v", rule, err)
	}
	if d := sessionDiff(got, want); d != "" {
		t.Errorf("RotateRefreshToken: a successful rotation must return the session with RefreshedAt = Now and ExpiresAt = the rotation's ExpiresAt: %s", d)
	}
	return want
}

// wantErr reports a failure of rule unless err is target.
func wantErr(t *testing.T, err, target error, rule string) bool {
	t.Helper()
	if !errors.Is(err, target) {
		t.Errorf("%s; got error %v", rule, err)
		return false
	}
	return true
}

// wantRotateErr attempts r and reports a failure of rule unless it fails with
// target. It returns the session that came with the error.
func wantRotateErr(t *testing.T, s store.Store, r store.Rotation, target error, rule string) store.Session {
	t.Helper()
	got, err := s.RotateRefreshToken(t.Context(), r)
	wantErr(t, err, target, "RotateRefreshToken: "+rule)
	return got
}

func wantSession(t *testing.T, s store.Store, want store.Session, now time.Time, rule string) {
	t.Helper()
	got, err := s.Session(t.Context(), want.Handle, now)
	if err != nil {
		t.Errorf("%s: Session(%q) failed: %v", rule, want.Handle, err)
		return
	}
	if d := sessionDiff(got, want); d != "" {
		t.Errorf("%s: Session(%q): %s", rule, want.Handle, d)
	}
}

func wantNoSession(t *testing.T, s store.Store, handle string, now time.Time, rule string) {
	t.Helper()
	_, err := s.Session(t.Context(), handle, now)
	wantErr(t, err, store.ErrNotFound, fmt.Sprintf("%s: Session(%q) must return ErrNotFound", rule, handle))
}

func wantUserSessions(t *testing.T, s store.Store, userID string, now time.Time, want []store.Session, rule string) {
	t.Helper()
	got, err := s.UserSessions(t.Context(), userID, now)
	if err != nil {
		t.Errorf("%s: UserSessions(%q) failed: %v", rule, userID, err)
		return
	}
	if d := sessionsDiff(got, want); d != "" {
		t.Errorf("%s: UserSessions(%q): %s", rule, userID, d)
	}
}

// wantUserSessionsAnyOrder is wantUserSessions for sessions whose order the
// suite does not pin down: they differ in both CreatedAt and RefreshedAt in
// opposite directions, and the contract does not say which one "newest"
// refers to.
func wantUserSessionsAnyOrder(t *testing.T, s store.Store, userID string, now time.Time, want []store.Session, rule string) {
	t.Helper()
	got, err := s.UserSessions(t.Context(), userID, now)
	if err != nil {
		t.Errorf("%s: UserSessions(%q) failed: %v", rule, userID, err)
		return
	}
	byHandle := func(a, b store.Session) int { return strings.Compare(a.Handle, b.Handle) }
	got = slices.SortedFunc(slices.Values(got), byHandle)
	want = slices.SortedFunc(slices.Values(want), byHandle)
	if d := sessionsDiff(got, want); d != "" {
		t.Errorf("%s: UserSessions(%q) (in any order): %s", rule, userID, d)
	}
}

func wantUser(t *testing.T, s store.Store, want store.User, rule string) {
	t.Helper()
	got, err := s.UserByID(t.Context(), want.ID)
	if err != nil {
		t.Errorf("%s: UserByID(%q) failed: %v", rule, want.ID, err)
	} else if d := userDiff(got, want); d != "" {
		t.Errorf("%s: UserByID(%q): %s", rule, want.ID, d)
	}
	got, err = s.UserByEmail(t.Context(), want.Email)
	if err != nil {
		t.Errorf("%s: UserByEmail(%q) failed: %v", rule, want.Email, err)
	} else if d := userDiff(got, want); d != "" {
		t.Errorf("%s: UserByEmail(%q): %s", rule, want.Email, d)
	}
}

func wantKeys(t *testing.T, s store.Store, now time.Time, want []store.SigningKey, rule string) {
	t.Helper()
	got, err := s.SigningKeys(t.Context(), now)
	if err != nil {
		t.Errorf("%s: SigningKeys failed: %v", rule, err)
		return
	}
	if len(got) != len(want) {
		t.Errorf("%s: SigningKeys returned ids %v, want %v", rule, keyIDs(got), keyIDs(want))
		return
	}
	for i := range got {
		if d := keyDiff(got[i], want[i]); d != "" {
			t.Errorf("%s: SigningKeys()[%d]: %s", rule, i, d)
		}
	}
}

// diff collects field mismatches into one readable line.
type diff []string

func (d *diff) str(field, got, want string) {
	if got != want {
		*d = append(*d, fmt.Sprintf("%s = %q, want %q", field, got, want))
	}
}

func (d *diff) time(field string, got, want time.Time) {
	if !sameTime(got, want) {
		*d = append(*d, fmt.Sprintf("%s = %v, want %v", field, got, want))
	}
}

func (d diff) String() string { return strings.Join(d, "; ") }

func userDiff(got, want store.User) string {
	var d diff
	d.str("ID", got.ID, want.ID)
	d.str("Email", got.Email, want.Email)
	d.str("PasswordHash", got.PasswordHash, want.PasswordHash)
	d.time("TimeJoined", got.TimeJoined, want.TimeJoined)
	return d.String()
}

func sessionDiff(got, want store.Session) string {
	var d diff
	d.str("Handle", got.Handle, want.Handle)
	d.str("UserID", got.UserID, want.UserID)
	d.time("CreatedAt", got.CreatedAt, want.CreatedAt)
	d.time("RefreshedAt", got.RefreshedAt, want.RefreshedAt)
	d.time("ExpiresAt", got.ExpiresAt, want.ExpiresAt)
	return d.String()
}

func sessionsDiff(got, want []store.Session) string {
	handles := func(ss []store.Session) []string {
		hs := make([]string, len(ss))
		for i, s := range ss {
			hs[i] = s.Handle
		}
		return hs
	}
	if len(got) != len(want) || !slices.Equal(handles(got), handles(want)) {
		return fmt.Sprintf("handles %q, want %q", handles(got), handles(want))
	}
	var d []string
	for i := range got {
		if sd := sessionDiff(got[i], want[i]); sd != "" {
			d = append(d, fmt.Sprintf("[%d] %s", i, sd))
		}
	}
	return strings.Join(d, "; ")
}

func keyDiff(got, want store.SigningKey) string {
	var d diff
	d.str("ID", got.ID, want.ID)
	d.str("Algorithm", got.Algorithm, want.Algorithm)
	if !bytes.Equal(got.Material, want.Material) {
		d = append(d, fmt.Sprintf("Material = %x, want %x", got.Material, want.Material))
	}
	d.time("CreatedAt", got.CreatedAt, want.CreatedAt)
	d.time("SignUntil", got.SignUntil, want.SignUntil)
	d.time("VerifyUntil", got.VerifyUntil, want.VerifyUntil)
	return d.String()
}

func keyIDs(ks []store.SigningKey) []string {
	ids := make([]string, len(ks))
	for i, k := range ks {
		ids[i] = k.ID
	}
	return ids
}

// ---------------------------------------------------------------------------
// Users

func testCreateUser(t *testing.T, s store.Store) {
	u := newUser("u1")
	u.TimeJoined = base.Add(1234 * time.Millisecond)
	if err := s.CreateUser(t.Context(), u); err != nil {
		t.Fatalf("CreateUser: a user with a new id and email must be added; got error %v", err)
	}
	wantUser(t, s, u, "CreateUser: the user must be stored as given")

	// A user who signs in only by other means has no password hash.
	v := newUser("u2")
	v.PasswordHash = ""
	if err := s.CreateUser(t.Context(), v); err != nil {
		t.Fatalf("CreateUser: a user without a password hash must be added; got error %v", err)
	}
	wantUser(t, s, v, "CreateUser: an empty PasswordHash must be stored as empty")
	wantUser(t, s, u, "CreateUser: adding a user must not change another")
}

func testCreateUserDuplicateID(t *testing.T, s store.Store) {
	u := mustCreateUser(t, s, "u1")

	dup := newUser("u1")
	dup.Email = "other@example.com"
	dup.PasswordHash = phc("other")
	err := s.CreateUser(t.Context(), dup)
	wantErr(t, err, store.ErrConflict, "CreateUser: a duplicate id must return ErrConflict")

	_, err = s.UserByEmail(t.Context(), dup.Email)
	wantErr(t, err, store.ErrNotFound, "CreateUser: a conflicting user must not be written, so its email must stay unknown")
	wantUser(t, s, u, "CreateUser: a conflicting user must not overwrite the existing one")
}

func testCreateUserDuplicateEmail(t *testing.T, s store.Store) {
	u := mustCreateUser(t, s, "u1")

	dup := newUser("u2")
	dup.Email = u.Email
	err := s.CreateUser(t.Context(), dup)
	wantErr(t, err, store.ErrConflict, "CreateUser: a duplicate email must return ErrConflict")

	_, err = s.UserByID(t.Context(), dup.ID)
	wantErr(t, err, store.ErrNotFound, "CreateUser: a conflicting user must not be written, so its id must stay unknown")
	wantUser(t, s, u, "CreateUser: a conflicting user must not overwrite the existing one")
}

func testEmailComparedExactly(t *testing.T, s store.Store) {
	u := mustCreateUser(t, s, "u1")

	for _, email := range []string{strings.ToUpper(u.Email), " " + u.Email, u.Email + " "} {
		_, err := s.UserByEmail(t.Context(), email)
		wantErr(t, err, store.ErrNotFound, fmt.Sprintf("UserByEmail: emails are compared exactly, so %q must return ErrNotFound", email))
	}

	v := newUser("u2")
	v.Email = strings.ToUpper(u.Email)
	if err := s.CreateUser(t.Context(), v); err != nil {
		t.Errorf("CreateUser: emails are compared exactly, so one that differs only in case must not conflict; got error %v", err)
	} else {
		wantUser(t, s, v, "CreateUser: emails are compared exactly")
	}
	wantUser(t, s, u, "CreateUser: emails are compared exactly")
}

func testUserNotFound(t *testing.T, s store.Store) {
	_, err := s.UserByID(t.Context(), "nobody")
	wantErr(t, err, store.ErrNotFound, "UserByID: an unknown id must return ErrNotFound")
	_, err = s.UserByEmail(t.Context(), "nobody@example.com")
	wantErr(t, err, store.ErrNotFound, "UserByEmail: an unknown email must return ErrNotFound")

	mustCreateUser(t, s, "u1")
	_, err = s.UserByID(t.Context(), "nobody")
	wantErr(t, err, store.ErrNotFound, "UserByID: an unknown id must return ErrNotFound while other users exist")
	_, err = s.UserByEmail(t.Context(), "nobody@example.com")
	wantErr(t, err, store.ErrNotFound, "UserByEmail: an unknown email must return ErrNotFound while other users exist")
}

func testUpdatePasswordHash(t *testing.T, s store.Store) {
	u := mustCreateUser(t, s, "u1")
	other := mustCreateUser(t, s, "u2")

	want := u
	want.PasswordHash = phc("upgraded")
	err := s.UpdatePasswordHash(t.Context(), u.ID, u.PasswordHash, want.PasswordHash)
	if !wantErr(t, err, nil, "UpdatePasswordHash: a matching old hash must succeed") {
		return
	}
	wantUser(t, s, want, "UpdatePasswordHash: must replace the hash and nothing else")
	wantUser(t, s, other, "UpdatePasswordHash: must not change other users")

	// A user without a password gets one: the stored hash is "".
	v := newUser("u3")
	v.PasswordHash = ""
	if err := s.CreateUser(t.Context(), v); err != nil {
		t.Fatalf("CreateUser: a user without a password hash must be added; got error %v", err)
	}
	v.PasswordHash = phc("first")
	err = s.UpdatePasswordHash(t.Context(), v.ID, "", v.PasswordHash)
	if wantErr(t, err, nil, "UpdatePasswordHash: an empty old hash must match a user without a password") {
		wantUser(t, s, v, "UpdatePasswordHash: must replace an empty hash")
	}
}

func testUpdatePasswordHashStale(t *testing.T, s store.Store) {
	u := mustCreateUser(t, s, "u1")

	err := s.UpdatePasswordHash(t.Context(), u.ID, phc("stale"), phc("new"))
	wantErr(t, err, store.ErrConflict, "UpdatePasswordHash: an old hash that does not match the stored one must return ErrConflict")
	wantUser(t, s, u, "UpdatePasswordHash: a conflicting update must not change the hash")

	// The race the rule exists for: the password changes between reading
	// the old hash and writing its upgrade.
	changed := u
	changed.PasswordHash = phc("changed")
	if err := s.UpdatePasswordHash(t.Context(), u.ID, u.PasswordHash, changed.PasswordHash); err != nil {
		t.Fatalf("UpdatePasswordHash: a matching old hash must succeed; got error %v", err)
	}
	err = s.UpdatePasswordHash(t.Context(), u.ID, u.PasswordHash, phc("upgrade of the old one"))
	wantErr(t, err, store.ErrConflict, "UpdatePasswordHash: an upgrade of a hash replaced in the meantime must return ErrConflict")
	wantUser(t, s, changed, "UpdatePasswordHash: an upgrade must never overwrite a password changed in the meantime")
}

func testUpdatePasswordHashUnknownUser(t *testing.T, s store.Store) {
	u := mustCreateUser(t, s, "u1")

	err := s.UpdatePasswordHash(t.Context(), "nobody", "", phc("new"))
	wantErr(t, err, store.ErrNotFound, "UpdatePasswordHash: an unknown user must return ErrNotFound")
	err = s.UpdatePasswordHash(t.Context(), "nobody", u.PasswordHash, phc("new"))
	wantErr(t, err, store.ErrNotFound, "UpdatePasswordHash: an unknown user must return ErrNotFound whatever the old hash")
	_, err = s.UserByID(t.Context(), "nobody")
	wantErr(t, err, store.ErrNotFound, "UpdatePasswordHash: must not create a user")
	wantUser(t, s, u, "UpdatePasswordHash: an unknown user must not change other users")
}

// ---------------------------------------------------------------------------
// Sessions

func testCreateSession(t *testing.T, s store.Store) {
	mustCreateUser(t, s, "u1")

	// Distinct times for every field catch a store that mixes them up.
	sess := store.Session{
		Handle:      "s1",
		UserID:      "u1",
		CreatedAt:   at(time.Hour),
		RefreshedAt: at(2*time.Hour + 500*time.Millisecond),
		ExpiresAt:   at(26 * time.Hour),
	}
	if err := s.CreateSession(t.Context(), sess, token("s1/r0")); err != nil {
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
	err := s.CreateSession(t.Context(), dup, token("dup/r0"))
	wantErr(t, err, store.ErrConflict, "CreateSession: a duplicate handle must return ErrConflict")

	now := at(2 * time.Hour)
	wantSession(t, s, s1, now, "CreateSession: a conflicting session must not overwrite the existing one")
	wantUserSessions(t, s, "u2", now, nil, "CreateSession: a conflicting session must not be written")
	wantRotateErr(t, s, rotation("dup/r0", "dup/r1", now, 0), store.ErrNotFound,
		"CreateSession: the token of a conflicting session must not be written, so it must return ErrNotFound")
	r := rotation("s1/r0", "s1/r1", now, 0)
	mustRotate(t, s, r, updated(s1, r), "CreateSession: a rejected duplicate must leave the existing session's token current, so rotating it")
}

func testCreateSessionDuplicateToken(t *testing.T, s store.Store) {
	mustCreateUser(t, s, "u1")
	s1 := newSession("s1", "u1", base, at(ttl))
	mustCreateSession(t, s, s1, "t0")

	s2 := newSession("s2", "u1", base, at(ttl))
	err := s.CreateSession(t.Context(), s2, token("t0"))
	wantErr(t, err, store.ErrConflict, "CreateSession: a refresh token hash that exists as a current token must return ErrConflict")
	wantNoSession(t, s, "s2", base, "CreateSession: a conflicting session must not be written")

	// Superseded tokens exist too: they are what reveals a theft.
	r := rotation("t0", "t1", at(time.Hour), 0)
	s1 = mustRotate(t, s, r, updated(s1, r), "rotating a current token")
	s3 := newSession("s3", "u1", at(time.Hour), at(time.Hour+ttl))
	err = s.CreateSession(t.Context(), s3, token("t0"))
	wantErr(t, err, store.ErrConflict, "CreateSession: a refresh token hash that exists as a superseded token must return ErrConflict")
	wantNoSession(t, s, "s3", at(time.Hour), "CreateSession: a conflicting session must not be written")

	wantUserSessions(t, s, "u1", at(time.Hour), []store.Session{s1}, "CreateSession: conflicting sessions must not be written")
	r = rotation("t1", "t2", at(2*time.Hour), 0)
	mustRotate(t, s, r, updated(s1, r), "CreateSession: a rejected duplicate must not disturb the session owning the token, so rotating its current token")
}

func testCreateSessionUnknownUser(t *testing.T, s store.Store) {
	sess := newSession("s1", "nobody", base, at(ttl))
	err := s.CreateSession(t.Context(), sess, token("s1/r0"))
	wantErr(t, err, store.ErrNotFound, "CreateSession: an unknown user must return ErrNotFound")
	wantNoSession(t, s, "s1", base, "CreateSession: a session of an unknown user must not be written")
	wantRotateErr(t, s, rotation("s1/r0", "s1/r1", base, 0), store.ErrNotFound,
		"CreateSession: the token of a session rejected for an unknown user must not be written, so it must return ErrNotFound")

	// Nothing was written, so the handle and the token are still free.
	mustCreateUser(t, s, "u1")
	sess.UserID = "u1"
	if err := s.CreateSession(t.Context(), sess, token("s1/r0")); err != nil {
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
	err := s.RevokeSession(t.Context(), "s1")
	if !wantErr(t, err, nil, "RevokeSession: an existing session must be revoked") {
		return
	}
	wantNoSession(t, s, "s1", now, "RevokeSession: a revoked session must no longer be found")
	wantRotateErr(t, s, rotation("s1/r1", "s1/r2", now, 0), store.ErrNotFound,
		"RevokeSession must delete the session's tokens: the current token must return ErrNotFound")
	wantRotateErr(t, s, rotation("s1/r0", "s1/r2", now, 0), store.ErrNotFound,
		"RevokeSession must delete the session's tokens: a superseded token must return ErrNotFound, not ErrTokenReused")

	err = s.RevokeSession(t.Context(), "s1")
	wantErr(t, err, store.ErrNotFound, "RevokeSession: revoking a session again must return ErrNotFound")
	err = s.RevokeSession(t.Context(), "unknown")
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
		wantRotateErr(t, s, rotation(tok, tok+"/next", now, 0), store.ErrNotFound,
			fmt.Sprintf("RevokeUserSessions must delete the sessions' tokens: %s must return ErrNotFound", tok))
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

// ---------------------------------------------------------------------------
// Rotation

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

// ---------------------------------------------------------------------------
// Signing keys

func testAddSigningKey(t *testing.T, s store.Store) {
	wantKeys(t, s, base, nil, "SigningKeys: an empty store must return no keys and no error")

	// Added in an order that differs from the order of CreatedAt.
	k1 := newKey("k1", base, at(24*time.Hour), at(48*time.Hour))
	k2 := newKey("k2", at(2*time.Hour), at(26*time.Hour), at(50*time.Hour))
	k3 := newKey("k3", at(1*time.Hour), at(25*time.Hour), at(49*time.Hour))
	k3.Algorithm = "EdDSA"
	for _, k := range []store.SigningKey{k1, k2, k3} {
		mustAddKey(t, s, k)
	}
	wantKeys(t, s, at(3*time.Hour), []store.SigningKey{k2, k3, k1},
		"SigningKeys: must return the keys as added, newest first")
}

func testAddSigningKeyDuplicate(t *testing.T, s store.Store) {
	k := newKey("k1", base, at(24*time.Hour), at(48*time.Hour))
	mustAddKey(t, s, k)

	dup := newKey("k1", at(time.Hour), at(25*time.Hour), at(49*time.Hour))
	dup.Algorithm = "EdDSA"
	dup.Material = []byte("other material")
	err := s.AddSigningKey(t.Context(), dup)
	wantErr(t, err, store.ErrConflict, "AddSigningKey: a duplicate id must return ErrConflict")
	wantKeys(t, s, at(2*time.Hour), []store.SigningKey{k}, "AddSigningKey: a conflicting key must not be written or overwrite the existing one")
}

func testSigningKeysExpiry(t *testing.T, s store.Store) {
	a := newKey("a", base, at(1*time.Hour), at(2*time.Hour))
	b := newKey("b", at(1*time.Hour), at(3*time.Hour), at(4*time.Hour))
	mustAddKey(t, s, a)
	mustAddKey(t, s, b)

	wantKeys(t, s, at(30*time.Minute), []store.SigningKey{b, a},
		"SigningKeys: must return every key whose VerifyUntil is after now, newest first")
	wantKeys(t, s, at(90*time.Minute), []store.SigningKey{b, a},
		"SigningKeys: a key past SignUntil must still be returned until VerifyUntil")
	wantKeys(t, s, at(2*time.Hour-time.Millisecond), []store.SigningKey{b, a},
		"SigningKeys: a key must be returned while VerifyUntil is after now")
	wantKeys(t, s, at(2*time.Hour), []store.SigningKey{b},
		"SigningKeys: a key whose VerifyUntil equals now is not after now and must be excluded")
	wantKeys(t, s, at(5*time.Hour), nil,
		"SigningKeys: keys whose VerifyUntil has passed must be excluded")
}

func testSigningKeyMaterialNotAliased(t *testing.T, s store.Store) {
	material := make([]byte, 32)
	for i := range material {
		material[i] = byte(i + 1)
	}
	k := newKey("k1", base, at(24*time.Hour), at(48*time.Hour))
	k.Material = material
	want := k
	want.Material = bytes.Clone(material)
	mustAddKey(t, s, k)

	// The caller reuses its buffer.
	for i := range material {
		material[i] = 0
	}
	wantKeys(t, s, base, []store.SigningKey{want}, "AddSigningKey: must keep its own copy of Material")

	got, err := s.SigningKeys(t.Context(), base)
	if err != nil || len(got) != 1 {
		t.Fatalf("SigningKeys: must return the one live key; got %d keys, error %v", len(got), err)
	}
	for i := range got[0].Material {
		got[0].Material[i] ^= 0xff
	}
	wantKeys(t, s, base, []store.SigningKey{want}, "SigningKeys: must return a copy of Material that the caller may modify")
}

// ---------------------------------------------------------------------------
// Reset tokens

// withHash is u with its password hash replaced.
func withHash(u store.User, hash string) store.User {
	u.PasswordHash = hash
	return u
}

func testResetPassword(t *testing.T, s store.Store) {
	u1 := mustCreateUser(t, s, "u1")
	u2 := mustCreateUser(t, s, "u2")
	a := newSession("a", "u1", base, at(ttl))
	b := newSession("b", "u1", at(time.Minute), at(ttl))
	c := newSession("c", "u2", at(2*time.Minute), at(ttl))
	for _, sess := range []store.Session{a, b, c} {
		mustCreateSession(t, s, sess, sess.Handle+"/r0")
	}
	// Give a a superseded token as well as a current one.
	r := rotation("a/r0", "a/r1", at(time.Hour), 0)
	mustRotate(t, s, r, updated(a, r), "the current token of a live session")
	mustCreateResetToken(t, s, newResetToken("u1/reset", "u1", at(time.Hour), at(2*time.Hour)))
	mustCreateResetToken(t, s, newResetToken("u2/reset", "u2", at(time.Hour), at(2*time.Hour)))

	now := at(90 * time.Minute)
	want := withHash(u1, phc("reset"))
	mustResetPassword(t, s, "u1/reset", now, want, []string{"a", "b"}, "a live token of a user with sessions")
	wantUser(t, s, want, "ResetPassword: must set the user's password hash and nothing else")
	wantNoSession(t, s, "a", now, "ResetPassword: must revoke every session of the user")
	wantNoSession(t, s, "b", now, "ResetPassword: must revoke every session of the user")
	wantUserSessions(t, s, "u1", now, nil, "ResetPassword: must revoke every session of the user")
	for _, tok := range []string{"a/r1", "a/r0", "b/r0"} {
		wantRotateErr(t, s, rotation(tok, tok+"/next", now, 0), store.ErrNotFound,
			fmt.Sprintf("ResetPassword must delete the revoked sessions' tokens, current and superseded: %s must return ErrNotFound", tok))
	}

	wantUser(t, s, u2, "ResetPassword: must not change other users")
	wantUserSessions(t, s, "u2", now, []store.Session{c}, "ResetPassword: must not revoke other users' sessions")
	r = rotation("c/r0", "c/r1", now, 0)
	mustRotate(t, s, r, updated(c, r), "ResetPassword: must not revoke other users' sessions, so rotating their tokens")
	mustResetPassword(t, s, "u2/reset", now, withHash(u2, phc("reset of u2")), []string{"c"},
		"a reset must delete only the user's own reset tokens, so another user's token")
}

func testResetPasswordOnce(t *testing.T, s store.Store) {
	u := mustCreateUser(t, s, "u1")
	mustCreateResetToken(t, s, newResetToken("reset", "u1", base, at(time.Hour)))

	want := withHash(u, phc("first"))
	mustResetPassword(t, s, "reset", at(10*time.Minute), want, nil, "a live token of a user without sessions")

	// The user signs in with the new password; then the token comes back.
	sess := newSession("s1", "u1", at(11*time.Minute), at(ttl))
	mustCreateSession(t, s, sess, "s1/r0")
	now := at(12 * time.Minute)
	wantResetErr(t, s, "reset", phc("second"), now,
		"a token works once: presenting it again after a successful reset must return ErrNotFound")
	wantUser(t, s, want, "ResetPassword: a used token must change nothing, so the hash set by the first reset must stay")
	wantSession(t, s, sess, now, "ResetPassword: a used token must change nothing, so it must not revoke sessions")
	r := rotation("s1/r0", "s1/r1", now, 0)
	mustRotate(t, s, r, updated(sess, r), "ResetPassword: a used token must change nothing, so the current token of a session made after the reset")
}

func testResetTokenExpiry(t *testing.T, s store.Store) {
	u := mustCreateUser(t, s, "u1")
	sess := newSession("s1", "u1", base, at(ttl))
	mustCreateSession(t, s, sess, "s1/r0")
	mustCreateResetToken(t, s, newResetToken("reset", "u1", base, at(time.Hour)))

	for _, now := range []time.Time{at(time.Hour), at(time.Hour + time.Millisecond), at(2 * time.Hour)} {
		wantResetErr(t, s, "reset", phc("too late"), now, fmt.Sprintf(
			"a token has expired when its ExpiresAt is at or before now, so %v after an expiry of 1h0m0s it must return ErrNotFound", now.Sub(base)))
	}
	wantUser(t, s, u, "ResetPassword: an expired token must change nothing, so the hash must stay")
	wantSession(t, s, sess, at(2*time.Hour), "ResetPassword: an expired token must change nothing, so it must not revoke sessions")

	// Stores never read a clock, so going back in time shows whether the
	// rejected calls changed anything.
	mustResetPassword(t, s, "reset", at(time.Hour-time.Second), withHash(u, phc("in time")), []string{"s1"},
		"an expired token must change nothing, so the same token at a time before its ExpiresAt")
}

func testResetPasswordUnknownToken(t *testing.T, s store.Store) {
	wantResetErr(t, s, "forged", phc("new"), base, "an unknown token must return ErrNotFound in an empty store")

	u := mustCreateUser(t, s, "u1")
	sess := newSession("s1", "u1", base, at(ttl))
	mustCreateSession(t, s, sess, "s1/r0")
	mustCreateResetToken(t, s, newResetToken("reset", "u1", base, at(time.Hour)))

	now := at(10 * time.Minute)
	wantResetErr(t, s, "forged", phc("new"), now, "an unknown token must return ErrNotFound")
	wantResetErr(t, s, "s1/r0", phc("new"), now, "a refresh token is not a reset token: it must return ErrNotFound")
	wantUser(t, s, u, "ResetPassword: an unknown token must change nothing, so the hash must stay")
	wantSession(t, s, sess, now, "ResetPassword: an unknown token must change nothing, so it must not revoke sessions")
	mustResetPassword(t, s, "reset", now, withHash(u, phc("new")), []string{"s1"},
		"an unknown token must change nothing, so the user's live token")
}

func testCreateResetTokenUnknownUser(t *testing.T, s store.Store) {
	rt := newResetToken("reset", "u1", base, at(time.Hour))
	err := s.CreateResetToken(t.Context(), rt)
	wantErr(t, err, store.ErrNotFound, "CreateResetToken: an unknown user must return ErrNotFound")

	u := mustCreateUser(t, s, "u1")
	wantResetErr(t, s, "reset", phc("new"), at(10*time.Minute),
		"a token rejected for an unknown user must not be written, so once the user exists it must return ErrNotFound")
	wantUser(t, s, u, "ResetPassword: an unknown token must change nothing")

	// Nothing was written, so the hash is still free.
	if err := s.CreateResetToken(t.Context(), rt); err != nil {
		t.Errorf("CreateResetToken: a token rejected for an unknown user must leave its hash free; got error %v", err)
	}
}

func testCreateResetTokenDuplicate(t *testing.T, s store.Store) {
	u1 := mustCreateUser(t, s, "u1")
	u2 := mustCreateUser(t, s, "u2")
	mustCreateResetToken(t, s, newResetToken("reset", "u1", base, at(time.Hour)))

	err := s.CreateResetToken(t.Context(), newResetToken("reset", "u2", at(time.Minute), at(2*time.Hour)))
	wantErr(t, err, store.ErrConflict, "CreateResetToken: a duplicate hash must return ErrConflict")
	err = s.CreateResetToken(t.Context(), newResetToken("reset", "u1", at(time.Minute), at(2*time.Hour)))
	wantErr(t, err, store.ErrConflict, "CreateResetToken: a duplicate hash must return ErrConflict even for the same user")

	wantResetErr(t, s, "reset", phc("new"), at(90*time.Minute),
		"a conflicting token must not overwrite the existing one, so the existing one must still expire at its own ExpiresAt")
	mustResetPassword(t, s, "reset", at(10*time.Minute), withHash(u1, phc("new")), nil,
		"CreateResetToken: a conflicting token must not overwrite the existing one, so the existing token for its own user")
	wantUser(t, s, u2, "CreateResetToken: a conflicting token must not be written, so the user it named must not change")
}

func testResetPasswordVoidsOtherTokens(t *testing.T, s store.Store) {
	u1 := mustCreateUser(t, s, "u1")
	u2 := mustCreateUser(t, s, "u2")
	mustCreateResetToken(t, s, newResetToken("u1/old", "u1", base, at(time.Hour)))
	mustCreateResetToken(t, s, newResetToken("u1/new", "u1", at(time.Minute), at(2*time.Hour)))
	mustCreateResetToken(t, s, newResetToken("u1/later", "u1", at(2*time.Minute), at(3*time.Hour)))
	mustCreateResetToken(t, s, newResetToken("u2/reset", "u2", base, at(time.Hour)))

	now := at(10 * time.Minute)
	want := withHash(u1, phc("reset"))
	mustResetPassword(t, s, "u1/new", now, want, nil, "a live token of the user")
	for _, name := range []string{"u1/old", "u1/later", "u1/new"} {
		wantResetErr(t, s, name, phc("again"), now, fmt.Sprintf(
			"a successful reset must delete every reset token of the user, so %s must return ErrNotFound", name))
	}
	wantUser(t, s, want, "ResetPassword: a voided token must change nothing, so the hash of the successful reset must stay")
	mustResetPassword(t, s, "u2/reset", now, withHash(u2, phc("reset of u2")), nil,
		"a reset must delete only the user's own reset tokens, so another user's token")
}

func testUpdatePasswordHashVoidsResetTokens(t *testing.T, s store.Store) {
	u1 := mustCreateUser(t, s, "u1")
	u2 := mustCreateUser(t, s, "u2")
	u3 := mustCreateUser(t, s, "u3")
	mustCreateResetToken(t, s, newResetToken("u1/a", "u1", base, at(time.Hour)))
	mustCreateResetToken(t, s, newResetToken("u1/b", "u1", at(time.Minute), at(2*time.Hour)))
	mustCreateResetToken(t, s, newResetToken("u2/reset", "u2", base, at(time.Hour)))
	mustCreateResetToken(t, s, newResetToken("u3/reset", "u3", base, at(time.Hour)))

	want := withHash(u1, phc("upgraded"))
	if err := s.UpdatePasswordHash(t.Context(), u1.ID, u1.PasswordHash, want.PasswordHash); err != nil {
		t.Fatalf("UpdatePasswordHash: a matching old hash must succeed; got error %v", err)
	}
	now := at(10 * time.Minute)
	for _, name := range []string{"u1/a", "u1/b"} {
		wantResetErr(t, s, name, phc("reset"), now, fmt.Sprintf(
			"UpdatePasswordHash must void the user's outstanding reset tokens, so %s must return ErrNotFound", name))
	}
	wantUser(t, s, want, "ResetPassword: a voided token must change nothing, so the upgraded hash must stay")
	mustResetPassword(t, s, "u2/reset", now, withHash(u2, phc("reset of u2")), nil,
		"UpdatePasswordHash must void only the user's own reset tokens, so another user's token")

	// A refused update changes no hash, so it voids nothing.
	err := s.UpdatePasswordHash(t.Context(), u3.ID, phc("stale"), phc("upgrade of the stale one"))
	wantErr(t, err, store.ErrConflict, "UpdatePasswordHash: an old hash that does not match the stored one must return ErrConflict")
	mustResetPassword(t, s, "u3/reset", now, withHash(u3, phc("reset of u3")), nil,
		"UpdatePasswordHash: a refused update changes nothing, so the user's reset token")
}

func testDeleteExpiredResetTokens(t *testing.T, s store.Store) {
	u1 := mustCreateUser(t, s, "u1")
	u2 := mustCreateUser(t, s, "u2")
	mustCreateResetToken(t, s, newResetToken("u1/expired", "u1", base, at(time.Hour)))
	mustCreateResetToken(t, s, newResetToken("u1/live", "u1", base, at(10*time.Hour)))
	mustCreateResetToken(t, s, newResetToken("u2/expired", "u2", base, at(time.Hour)))

	now := at(2 * time.Hour)
	if err := s.DeleteExpired(t.Context(), now); err != nil {
		t.Fatalf("DeleteExpired: must succeed; got error %v", err)
	}

	// Stores never read a clock: asking about a time before things expired
	// tells removed records from merely expired ones.
	earlier := at(20 * time.Minute)
	for _, name := range []string{"u1/expired", "u2/expired"} {
		wantResetErr(t, s, name, phc("reset"), earlier, fmt.Sprintf(
			"DeleteExpired must remove expired reset tokens, so %s must return ErrNotFound even before its ExpiresAt", name))
	}
	wantUser(t, s, u1, "DeleteExpired: must not change users")
	wantUser(t, s, u2, "DeleteExpired: must not change users")
	mustResetPassword(t, s, "u1/live", now, withHash(u1, phc("reset")), nil,
		"DeleteExpired: must keep reset tokens that have not expired, so a live one")
}

// ---------------------------------------------------------------------------
// DeleteExpired

func testDeleteExpired(t *testing.T, s store.Store) {
	u := mustCreateUser(t, s, "u1")

	// a expires entirely.
	a := newSession("a", "u1", base, at(time.Hour))
	mustCreateSession(t, s, a, "a/r0")
	// b lives on and has a superseded token that has not expired.
	b := newSession("b", "u1", at(time.Minute), at(10*time.Hour))
	mustCreateSession(t, s, b, "b/r0")
	r := rotation("b/r0", "b/r1", at(time.Hour), 0)
	r.ExpiresAt = at(10 * time.Hour)
	b = mustRotate(t, s, r, updated(b, r), "the current token of a live session")
	// c lives on, but its superseded token has expired.
	c := newSession("c", "u1", at(2*time.Minute), at(time.Hour))
	mustCreateSession(t, s, c, "c/r0")
	r = rotation("c/r0", "c/r1", at(30*time.Minute), 0)
	r.ExpiresAt = at(10 * time.Hour)
	c = mustRotate(t, s, r, updated(c, r), "the current token of a live session")

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
	wantUserSessionsAnyOrder(t, s, "u1", earlier, []store.Session{c, b}, "DeleteExpired: must remove expired sessions and keep live ones")
	wantKeys(t, s, earlier, []store.SigningKey{k2}, "DeleteExpired: must remove keys whose VerifyUntil has passed and keep the others")
	wantRotateErr(t, s, rotation("a/r0", "a/r1", earlier, 0), store.ErrNotFound,
		"DeleteExpired must remove the tokens of expired sessions: they must return ErrNotFound")
	wantRotateErr(t, s, rotation("c/r0", "c/r2", earlier, 0), store.ErrNotFound,
		"DeleteExpired must remove expired tokens of live sessions: c/r0 must return ErrNotFound rather than be reported as reused")

	wantUserSessionsAnyOrder(t, s, "u1", now, []store.Session{c, b}, "DeleteExpired: must keep live sessions")
	wantKeys(t, s, now, []store.SigningKey{k2}, "DeleteExpired: must keep live keys")
	wantUser(t, s, u, "DeleteExpired: must not remove users")
	r = rotation("c/r1", "c/r2", now, 0)
	mustRotate(t, s, r, updated(c, r), "DeleteExpired: must keep the current tokens of live sessions, so rotating one")

	// Last, because it revokes b.
	wantRotateErr(t, s, rotation("b/r0", "b/r2", now, 0), store.ErrTokenReused,
		"DeleteExpired must keep superseded tokens that have not expired, or the reuse of a stolen token goes unnoticed: b/r0 must return ErrTokenReused")
}

func testDeleteExpiredKeepsLive(t *testing.T, s store.Store) {
	if err := s.DeleteExpired(t.Context(), base); err != nil {
		t.Fatalf("DeleteExpired: must succeed on an empty store; got error %v", err)
	}

	u := mustCreateUser(t, s, "u1")
	sess := newSession("s1", "u1", base, at(ttl))
	mustCreateSession(t, s, sess, "r0")
	r := rotation("r0", "r1", at(time.Hour), 0)
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
	r = rotation("r1", "r2", now, 0)
	mustRotate(t, s, r, updated(sess, r), "DeleteExpired: must keep the current tokens of live sessions, so rotating one")
	wantRotateErr(t, s, rotation("r0", "x", now, 0), store.ErrTokenReused,
		"DeleteExpired must keep superseded tokens that have not expired: presenting one must return ErrTokenReused")
}

// ---------------------------------------------------------------------------
// Concurrency
//
// These tests are most useful under the race detector. Every goroutine
// waits on a start channel so that the calls overlap as much as possible.

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
	users := make([]store.User, n)
	errs := make([]error, n)
	for i := range users {
		users[i] = newUser(fmt.Sprintf("u%d", i))
		users[i].Email = "same@example.com"
	}
	parallel(n, func(i int) { errs[i] = s.CreateUser(ctx, users[i]) })

	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Errorf("CreateUser: of concurrent calls with one email exactly one must succeed; both %s and %s did", users[winner].ID, users[i].ID)
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
		_, err := s.UserByID(ctx, u.ID)
		wantErr(t, err, store.ErrNotFound, "CreateUser: a call that returned ErrConflict must not have written its user")
	}
}

func testConcurrentUpdatePasswordHash(t *testing.T, s store.Store) {
	const n = 16
	ctx := t.Context()
	u := mustCreateUser(t, s, "u1")
	errs := make([]error, n)
	newHash := func(i int) string { return phc(fmt.Sprintf("upgrade%d", i)) }
	parallel(n, func(i int) { errs[i] = s.UpdatePasswordHash(ctx, u.ID, u.PasswordHash, newHash(i)) })

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
	tok := func(i int) string { return fmt.Sprintf("r%d", i) }
	errs := make([]error, n)
	parallel(n, func(i int) { errs[i] = s.CreateSession(ctx, sess, token(tok(i))) })

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
// finds the session live and must revoke it with ErrTokenReused; all the
// others find it revoked and must return ErrNotFound. So there are exactly
// one success, one ErrTokenReused and n-2 ErrNotFound, and afterwards no
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
	next := func(i int) string { return fmt.Sprintf("%s/next%d", handle, i) }
	errs := make([]error, n)
	parallel(n, func(i int) {
		_, errs[i] = s.RotateRefreshToken(ctx, rotation(handle+"/r0", next(i), now, 0))
	})

	var ok, reused, notFound int
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case errors.Is(err, store.ErrTokenReused):
			reused++
		case errors.Is(err, store.ErrNotFound):
			notFound++
		default:
			t.Errorf("RotateRefreshToken: concurrent calls with one token must return nil, ErrTokenReused or ErrNotFound; session %s got error %v", handle, err)
		}
	}
	if ok != 1 {
		t.Errorf("RotateRefreshToken: of concurrent calls with the same current token exactly one must succeed; on session %s %d did", handle, ok)
	}
	if reused != 1 {
		t.Errorf("RotateRefreshToken: after one concurrent call won, the first to present the now superseded token must get ErrTokenReused and revoke the session, the rest ErrNotFound; session %s got %d ErrTokenReused and %d ErrNotFound", handle, reused, notFound)
	}

	wantNoSession(t, s, handle, now, "RotateRefreshToken: reuse by a losing concurrent call must revoke the session")
	later := now.Add(time.Second)
	for i := range n {
		wantRotateErr(t, s, rotation(next(i), handle+"/after", later, 0), store.ErrNotFound,
			fmt.Sprintf("after concurrent reuse revoked session %s no Next may rotate: %s must return ErrNotFound", handle, next(i)))
	}
	wantRotateErr(t, s, rotation(handle+"/r0", handle+"/after", later, 0), store.ErrNotFound,
		fmt.Sprintf("after concurrent reuse revoked session %s the presented token must return ErrNotFound", handle))
}

// testConcurrentRotateReuseWindow presents one current token in many
// concurrent calls with the same Now and a positive reuse window, as a
// client retrying a lost response would, once on each of several sessions.
//
// Every call must succeed: the first takes the first branch and makes the
// presented token the predecessor; each later one presents that predecessor
// while the current token is zero seconds old, inside the window, and so
// takes the second branch, which keeps the predecessor. Each call gives the
// session its own ExpiresAt.
//
// Invariant checked: exactly one of the issued Next tokens is current, and it
// is the one issued by the call whose ExpiresAt the session now has (the
// contract sets the session's ExpiresAt and the current token together).
// That token must rotate. Every other Next must then be a superseded token of
// the live session, never a second current token and never lost: the first
// one presented must return ErrTokenReused and revoke the session, and all
// the rest ErrNotFound. Rotating the identified token first is what makes the
// check sound: presenting a superseded one first would revoke the session and
// hide whether the others were current.
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
		rotations[i] = rotation(handle+"/r0", fmt.Sprintf("%s/next%d", handle, i), now, time.Minute)
		rotations[i].ExpiresAt = now.Add(ttl + time.Duration(i)*time.Second)
	}
	errs := make([]error, n)
	parallel(n, func(i int) { _, errs[i] = s.RotateRefreshToken(ctx, rotations[i]) })

	for i, err := range errs {
		if err != nil {
			t.Errorf("RotateRefreshToken: a concurrent retry with the predecessor inside the reuse window must succeed; session %s call %d got error %v", handle, i, err)
		}
	}
	got, err := s.Session(ctx, handle, now)
	if err != nil {
		t.Fatalf("RotateRefreshToken: concurrent rotations inside the reuse window must leave the session alive; Session(%q) failed: %v", handle, err)
	}
	current := slices.IndexFunc(rotations, func(r store.Rotation) bool { return sameTime(got.ExpiresAt, r.ExpiresAt) })
	if current < 0 {
		t.Fatalf("RotateRefreshToken: after concurrent rotations the ExpiresAt %v of session %s must be that of one of the calls", got.ExpiresAt, handle)
	}
	if d := sessionDiff(got, updated(sess, rotations[current])); d != "" {
		t.Errorf("RotateRefreshToken: after concurrent rotations session %s must be as the last one left it: %s", handle, d)
	}

	later := now.Add(time.Second)
	r := store.Rotation{Presented: rotations[current].Next, Next: token(handle + "/after"), Now: later, ExpiresAt: later.Add(ttl)}
	mustRotate(t, s, r, updated(got, r), "RotateRefreshToken: the Next of the call that set the session's ExpiresAt is the one current token, so rotating it")

	reused := false
	for i, ri := range rotations {
		if i == current {
			continue
		}
		_, err := s.RotateRefreshToken(ctx, store.Rotation{Presented: ri.Next, Next: token(handle + "/never"), Now: later, ExpiresAt: later.Add(ttl)})
		switch {
		case err == nil:
			t.Fatalf("RotateRefreshToken: after concurrent rotations inside the reuse window exactly one Next may be current; on session %s call %d's Next rotated as well", handle, i)
		case !reused && !errors.Is(err, store.ErrTokenReused):
			t.Fatalf("RotateRefreshToken: every Next replaced inside the reuse window must be a superseded token of the session, so presenting call %d's Next on session %s must return ErrTokenReused; got error %v", i, handle, err)
		case reused && !errors.Is(err, store.ErrNotFound):
			t.Fatalf("RotateRefreshToken: after reuse revoked session %s, call %d's Next must return ErrNotFound; got error %v", handle, i, err)
		}
		reused = true
	}
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
	users := make([]store.User, n)
	handles := make([][]string, n)
	errs := make([]error, n)
	parallel(n, func(i int) {
		users[i], handles[i], errs[i] = s.ResetPassword(ctx, token(userID+"/reset"), newHash(i), now)
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
	want := withHash(u, newHash(winner))
	if d := userDiff(users[winner], want); d != "" {
		t.Errorf("ResetPassword: a successful reset must return the user with the new password hash: %s", d)
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
		if err := s.CreateUser(ctx, u); err != nil {
			t.Errorf("CreateUser: a user with a new id and email must be added; got error %v", err)
			return
		}
		live := 0
		for round := range rounds {
			handle := fmt.Sprintf("%s/s%d", uid, round)
			now := at(time.Duration(round) * time.Minute)
			sess := newSession(handle, uid, now, now.Add(ttl))
			if err := s.CreateSession(ctx, sess, token(handle+"/0")); err != nil {
				t.Errorf("CreateSession: a session with a new handle and token of an existing user must be added; got error %v", err)
				return
			}
			live++
			for gen := range 3 {
				now = now.Add(time.Second)
				r := rotation(fmt.Sprintf("%s/%d", handle, gen), fmt.Sprintf("%s/%d", handle, gen+1), now, 0)
				got, err := s.RotateRefreshToken(ctx, r)
				if err != nil {
					t.Errorf("RotateRefreshToken: the current token of a live session must rotate; got error %v", err)
					return
				}
				if d := sessionDiff(got, updated(sess, r)); d != "" {
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
				if err := s.RevokeSession(ctx, handle); err != nil {
					t.Errorf("RevokeSession: an existing session must be revoked; got error %v", err)
				}
				live--
			}
		}
		if got, err := s.UserByEmail(ctx, u.Email); err != nil || got.PasswordHash != u.PasswordHash {
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
