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
// monotonic reading. It checks every outcome the contract states, at the
// very instant where it names one: a record whose expiry is now has expired,
// as store.ErrNotFound says. It assumes no order the contract does not
// promise, such as the order of the handles ResetPassword and
// RevokeUserSessions return. Failure messages name the rule of the contract
// that was broken.
//
// For a store.TenantStore, Run runs the groups about logins, codes and
// sessions a second time, under "InTenant", with every login key, code
// and session of them in a tenant other than the public one: the results
// must be the same, and every record must come back in its tenant.
package storetest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/latchkit/auth/store"
)

// Run runs the conformance suite against the stores that newStore makes.
func Run(t *testing.T, newStore func(t *testing.T) store.Store) {
	probe := RunOnce(t, newStore)
	// A TenantStore passes the groups about logins, codes and sessions
	// again with every one of them in a tenant other than the public one,
	// with the same results.
	if _, ok := probe.(store.TenantStore); ok {
		t.Run("InTenant", func(t *testing.T) {
			runGroups(t, inTenantGroups, func(t *testing.T) store.Store {
				return newInTenant(t, newStore(t))
			})
		})
	}
}

// RunOnce is Run without the second pass in a tenant, for a store whose
// statements another run passes there already (one behind PgBouncer,
// where PostgreSQL's run has); it returns a store newStore made.
func RunOnce(t *testing.T, newStore func(t *testing.T) store.Store) store.Store {
	groups := append(slices.Clone(inTenantGroups), publicGroups...)
	// Optional parts of the contract are checked when the store has them.
	probe := newStore(t)
	if _, ok := probe.(store.RateLimitStore); ok {
		groups = append(groups, group{"RateLimits", rateLimitTests})
	}
	if _, ok := probe.(store.RoleStore); ok {
		groups = append(groups, group{"Roles", roleTests})
	}
	if _, ok := probe.(store.AuditLog); ok {
		groups = append(groups, group{"Audit", auditTests})
	}
	if _, ok := probe.(store.Banner); ok {
		groups = append(groups, group{"Bans", banTests})
	}
	if _, ok := probe.(store.UserLister); ok {
		groups = append(groups, group{"UserList", userListTests})
	}
	if _, ok := probe.(store.TenantStore); ok {
		groups = append(groups, group{"Tenants", tenantTests})
	}
	runGroups(t, groups, newStore)
	return probe
}

// group is a group of tests, run together.
type group struct {
	name  string
	tests []test
}

// inTenantGroups are the groups that Run runs first, and again in a
// tenant: those whose outcomes a login's, code's or session's tenant
// could change.
var inTenantGroups = []group{
	{"Users", userTests},
	{"Logins", loginTests},
	{"Linking", linkingTests},
	{"Sessions", sessionTests},
	{"Rotation", rotationTests},
	{"Codes", codeTests},
	{"ResetTokens", resetTokenTests},
	{"VerificationTokens", verificationTokenTests},
	{"Passwordless", passwordlessTests},
	{"Passkeys", passkeyTests},
	{"EmailChange", emailChangeTests},
}

// publicGroups run in the public tenant alone: second factors are the
// user's in every tenant, and what the others check (deletion, expiry,
// concurrency) a login's tenant does not change, while each test makes a
// store of its own, which is most of a SQL run's time.
var publicGroups = []group{
	{"SigningKeys", signingKeyTests},
	{"SecondFactors", factorTests},
	{"UserManagement", userManagementTests},
	{"DeleteExpired", deleteExpiredTests},
	{"Concurrency", concurrencyTests},
}

// runGroups runs each group's tests in parallel, on stores of newStore.
func runGroups(t *testing.T, groups []group, newStore func(t *testing.T) store.Store) {
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

// user is a user with its first login, an email and password login, as
// most tests need it: u.User.ID and u.TimeJoined are the user's, u.Email,
// u.PasswordHash, u.LoginKey and u.Login.ID its login's.
type user struct {
	store.User
	store.Login
}

// create adds u through CreateUser.
func (u user) create(ctx context.Context, s store.Store) error {
	return s.CreateUser(ctx, u.User, u.Login)
}

func newUser(id string) user {
	email := id + "@example.com"
	return user{
		User: store.User{ID: id, TimeJoined: base},
		Login: store.Login{
			LoginKey:     store.EmailPasswordKey(email),
			ID:           id,
			UserID:       id,
			Email:        email,
			PasswordHash: phc(id),
			CreatedAt:    base,
		},
	}
}

// withEmail is u with another email, and so another login key.
func (u user) withEmail(email string) user {
	u.Email, u.LoginKey = email, store.EmailPasswordKey(email)
	return u
}

// thirdPartyLogin is a login of userID with a provider, as the user's first
// login: its ID is the user's. The provider vouched for the email, so it is
// proven.
func thirdPartyLogin(userID, provider, subject, email string) store.Login {
	return store.Login{
		LoginKey:      store.LoginKey{Method: store.MethodThirdParty, ThirdParty: provider, Subject: subject},
		ID:            userID,
		UserID:        userID,
		Email:         email,
		EmailVerified: true,
		EmailProven:   true,
		CreatedAt:     base,
	}
}

// unproven is l with its email neither verified nor proven, as a provider
// that does not vouch for the address reports it.
func unproven(l store.Login) store.Login {
	l.EmailVerified, l.EmailProven = false, false
	return l
}

// proven is l with its email proven, and so verified.
func proven(l store.Login) store.Login {
	l.EmailVerified, l.EmailProven = true, true
	return l
}

// newSession is a session that the user's first login started.
func newSession(handle, userID string, created, expires time.Time) store.Session {
	return store.Session{
		Handle:      handle,
		UserID:      userID,
		LoginID:     userID,
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

// newResetToken is the reset code called name (its hash is token(name)) of
// a user, issued at created and working until expires.
func newResetToken(name, userID string, created, expires time.Time) store.Code {
	return store.Code{
		Hash:      token(name),
		Kind:      store.CodeReset,
		UserID:    userID,
		CreatedAt: created,
		ExpiresAt: expires,
	}
}

// refreshName matches the suite's names of refresh tokens: the session's
// handle, "/r" and the token's generation, and optionally more after it.
var refreshName = regexp.MustCompile(`^(.+)/r(\d+)`)

// rotation asks to exchange presented for next at now, extending the
// session by ttl. The presented token's session and generation are read
// from its name ("s1/r2" is generation 2 of session s1), as the library
// reads them from the token; a name of another form is a token without a
// handle, which a store that never held such tokens cannot place.
func rotation(presented, next string, now time.Time, window time.Duration) store.Rotation {
	r := store.Rotation{
		Presented:   token(presented),
		Next:        token(next),
		NextKey:     "key of " + next,
		Now:         now,
		ExpiresAt:   now.Add(ttl),
		ReuseWindow: window,
	}
	if m := refreshName.FindStringSubmatch(presented); m != nil {
		r.Handle = m[1]
		r.Generation, _ = strconv.ParseInt(m[2], 10, 64)
	}
	return r
}

// updated is sess as a successful rotation r must leave it.
func updated(sess store.Session, r store.Rotation) store.Session {
	sess.RefreshedAt = r.Now
	sess.ExpiresAt = r.ExpiresAt
	sess.Generation = r.Generation + 1
	return sess
}

func mustCreateUser(t *testing.T, s store.Store, id string) user {
	t.Helper()
	u := newUser(id)
	if err := u.create(t.Context(), s); err != nil {
		t.Fatalf("CreateUser: a user with a new id and login key must be added; got error %v", err)
	}
	return u
}

// mustCreateSession creates sess under its user's current session epoch.
func mustCreateSession(t *testing.T, s store.Store, sess store.Session, refresh string) {
	t.Helper()
	u, err := s.UserByID(t.Context(), sess.UserID)
	if err != nil {
		t.Fatalf("UserByID: an existing user must be found; got error %v", err)
	}
	if err := s.CreateSession(t.Context(), sess, token(refresh), u.SessionEpoch); err != nil {
		t.Fatalf("CreateSession: a session with a new handle and token of an existing user must be added; got error %v", err)
	}
}

func mustAddKey(t *testing.T, s store.Store, k store.SigningKey) {
	t.Helper()
	if err := s.AddSigningKey(t.Context(), k); err != nil {
		t.Fatalf("AddSigningKey: a key with a new id must be added; got error %v", err)
	}
}

func mustCreateResetToken(t *testing.T, s store.Store, rt store.Code) {
	t.Helper()
	if err := s.CreateCode(t.Context(), rt); err != nil {
		t.Fatalf("CreateCode: a token with a new hash of an existing user must be added; got error %v", err)
	}
}

// mustResetPassword performs a reset with the token called name that the
// contract says succeeds, explained by rule. It checks that the store returns
// want, the user as updated, and the handles in revoked, in any order.
func mustResetPassword(t *testing.T, s store.Store, name string, now time.Time, want user, revoked []string, rule string) {
	t.Helper()
	got, handles, err := s.ResetPassword(t.Context(), token(name), want.PasswordHash, now)
	if err != nil {
		t.Fatalf("%s must succeed; got error %v", rule, err)
	}
	if d := loginDiff(got, want.Login); d != "" {
		t.Errorf("ResetPassword: a successful reset must return the email and password login with the new password hash: %s", d)
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
	mustRotateOut(t, s, r, want, rule)
	return want
}

// mustRotateOut is mustRotate, returning what the rotation returned.
func mustRotateOut(t *testing.T, s store.Store, r store.Rotation, want store.Session, rule string) store.Rotated {
	t.Helper()
	got, err := s.RotateRefreshToken(t.Context(), r)
	if err != nil {
		t.Fatalf("RotateRefreshToken: %s must succeed; got error %v", rule, err)
	}
	if got.Repeat || got.Reuse != 0 {
		t.Errorf("RotateRefreshToken: %s must exchange the token, not report Repeat %v or Reuse %v", rule, got.Repeat, got.Reuse)
	}
	if d := sessionDiff(got.Session, want); d != "" {
		t.Errorf("RotateRefreshToken: a successful rotation must return the session with RefreshedAt = Now, ExpiresAt = the rotation's ExpiresAt and the next Generation: %s", d)
	}
	return got
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
	return got.Session
}

// wantEnded reports a failure of rule unless err is an EndedError with the
// reason why (empty: the session expired).
func wantEnded(t *testing.T, err error, why store.EndReason, rule string) {
	t.Helper()
	var ended *store.EndedError
	if !errors.As(err, &ended) || ended.Reason != why {
		t.Errorf("%s must return an EndedError with Reason %q; got error %v", rule, why, err)
	}
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

// wantUser checks that the store holds want: the user, its login found by
// key, and that login among the user's logins.
func wantUser(t *testing.T, s store.Store, want user, rule string) {
	t.Helper()
	got, err := s.UserByID(t.Context(), want.User.ID)
	if err != nil {
		t.Errorf("%s: UserByID(%q) failed: %v", rule, want.User.ID, err)
	} else if d := userDiff(got, want.User); d != "" {
		t.Errorf("%s: UserByID(%q): %s", rule, want.User.ID, d)
	}
	wantLogin(t, s, want.Login, rule)
}

// wantLogin checks that the store holds want, by its key and among its
// user's logins.
func wantLogin(t *testing.T, s store.Store, want store.Login, rule string) {
	t.Helper()
	got, err := s.Login(t.Context(), want.LoginKey)
	if err != nil {
		t.Errorf("%s: Login(%+v) failed: %v", rule, want.LoginKey, err)
	} else if d := loginDiff(got, want); d != "" {
		t.Errorf("%s: Login(%+v): %s", rule, want.LoginKey, d)
	}
	logins, err := s.Logins(t.Context(), want.UserID)
	if err != nil {
		t.Errorf("%s: Logins(%q) failed: %v", rule, want.UserID, err)
		return
	}
	for _, l := range logins {
		if l.LoginKey == want.LoginKey && want.Method == store.MethodSecondFactors {
			t.Errorf("%s: Logins(%q) returned the record of second factors %+v: it is no way to sign in, and only Login finds it", rule, want.UserID, want.LoginKey)
			return
		}
		if l.LoginKey == want.LoginKey {
			if d := loginDiff(l, want); d != "" {
				t.Errorf("%s: Logins(%q): %s", rule, want.UserID, d)
			}
			return
		}
	}
	if want.Method != store.MethodSecondFactors {
		t.Errorf("%s: Logins(%q) = %v, without %+v", rule, want.UserID, logins, want.LoginKey)
	}
	wantUserByLogin(t, s, want.LoginKey, logins, rule)
}

// wantUserByLogin checks that UserByLogin(k) answers what UserByID and
// Logins answer of the user of the login with key k, whose logins are
// logins; a record of second factors is not found.
func wantUserByLogin(t *testing.T, s store.Store, k store.LoginKey, logins []store.Login, rule string) {
	t.Helper()
	u, got, err := s.UserByLogin(t.Context(), k)
	if k.Method == store.MethodSecondFactors {
		wantErr(t, err, store.ErrNotFound, rule+": UserByLogin of a record of second factors, which is no way to sign in,")
		return
	}
	if err != nil {
		t.Errorf("%s: UserByLogin(%+v) failed: %v", rule, k, err)
		return
	}
	var userID string
	for _, l := range logins {
		if l.LoginKey == k {
			userID = l.UserID
		}
	}
	want, err := s.UserByID(t.Context(), userID)
	if err != nil {
		t.Errorf("%s: UserByID(%q) failed: %v", rule, userID, err)
	} else if d := userDiff(u, want); d != "" {
		t.Errorf("%s: UserByLogin(%+v), its user: %s", rule, k, d)
	}
	if len(got) != len(logins) {
		t.Errorf("%s: UserByLogin(%+v) = %v, want the logins Logins answers, %v", rule, k, got, logins)
		return
	}
	for i := range got {
		if d := loginDiff(got[i], logins[i]); d != "" {
			t.Errorf("%s: UserByLogin(%+v), login %d of %d, against Logins: %s", rule, k, i+1, len(got), d)
		}
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

func (d *diff) bool(field string, got, want bool) {
	if got != want {
		*d = append(*d, fmt.Sprintf("%s = %v, want %v", field, got, want))
	}
}

// bytes records a mismatch of a byte field: the bytes differ, or want is
// nil and got is not (nil is what a store keeps for nothing, and returns
// as nil; an empty slice may come back nil or empty).
func (d *diff) bytes(field string, got, want []byte) {
	if !bytes.Equal(got, want) || want == nil && got != nil {
		*d = append(*d, fmt.Sprintf("%s = %s, want %s", field, showBytes(got), showBytes(want)))
	}
}

func showBytes(b []byte) string {
	if b == nil {
		return "nil"
	}
	return fmt.Sprintf("%q", b)
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
	d.time("TimeJoined", got.TimeJoined, want.TimeJoined)
	return d.String()
}

func loginDiff(got, want store.Login) string {
	var d diff
	d.str("Tenant", got.Tenant, want.Tenant)
	d.str("Method", got.Method, want.Method)
	d.str("ThirdParty", got.ThirdParty, want.ThirdParty)
	d.str("Subject", got.Subject, want.Subject)
	d.str("ID", got.ID, want.ID)
	d.str("UserID", got.UserID, want.UserID)
	d.str("Email", got.Email, want.Email)
	d.bool("EmailVerified", got.EmailVerified, want.EmailVerified)
	d.bool("EmailProven", got.EmailProven, want.EmailProven)
	d.bytes("Material", got.Material, want.Material)
	d.str("PasswordHash", got.PasswordHash, want.PasswordHash)
	d.time("CreatedAt", got.CreatedAt, want.CreatedAt)
	d.bool("OwnsEmail", got.OwnsEmail, want.OwnsEmail)
	return d.String()
}

func sessionDiff(got, want store.Session) string {
	var d diff
	d.str("Handle", got.Handle, want.Handle)
	d.str("UserID", got.UserID, want.UserID)
	d.str("LoginID", got.LoginID, want.LoginID)
	d.str("Tenant", got.Tenant, want.Tenant)
	d.time("CreatedAt", got.CreatedAt, want.CreatedAt)
	d.time("RefreshedAt", got.RefreshedAt, want.RefreshedAt)
	d.time("ExpiresAt", got.ExpiresAt, want.ExpiresAt)
	if got.Generation != want.Generation {
		d = append(d, fmt.Sprintf("Generation: got %d, want %d", got.Generation, want.Generation))
	}
	d.bytes("Factors", got.Factors, want.Factors)
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
