// Package memstore is the in-memory reference implementation of
// store.Store.
//
// Everything lives in maps inside one process and is lost when the process
// exits; two processes never see each other's data. Use it for tests, demos
// and single-process applications that can afford to sign every user out on
// restart. Applications with several instances need a shared store.
//
// Every method holds one lock for its whole duration, which makes each of
// them atomic as the store.Store contract requires. The methods never block
// on I/O, so they ignore their context.
package memstore

import (
	"bytes"
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/latchkit/auth/store"
)

var _ store.Store = (*Store)(nil)

// Store is an in-memory store.Store. The zero value is not usable; call New.
type Store struct {
	mu sync.RWMutex

	users      map[string]store.User          // by id
	logins     map[store.LoginKey]store.Login // by key
	userLogins map[string][]store.LoginKey    // user id -> keys, oldest first
	loginIDs   map[string]store.LoginKey      // Login.ID -> key
	owners     map[owned]store.LoginKey       // tenant and email -> the login that owns it

	// sessions holds live and ended sessions: an ended one stays, with
	// its reason, until it would have expired.
	sessions     map[string]*session            // by handle
	userSessions map[string]map[string]struct{} // user id -> handles

	keys map[string]store.SigningKey // by id; Material owned by the store

	resets        map[store.TokenHash]store.Code // CodeReset
	verifications map[store.TokenHash]store.Code // CodeVerification
	// verifyByLogin indexes verifications by Login.ID, so that
	// voiding a login's tokens, which every verification, unlink and
	// deletion does under the lock, costs what that login has.
	verifyByLogin map[string]map[store.TokenHash]struct{}

	flows        map[store.TokenHash]store.Code // CodePasswordlessFlow
	passwordless map[store.TokenHash]store.Code // CodePasswordless
	// flowCodes indexes passwordless codes by their flow, and
	// emailFlows flows by their Email, so that using a code costs what
	// the address's flows and their codes are.
	flowCodes  map[store.TokenHash]map[store.TokenHash]struct{}
	emailFlows map[string]map[store.TokenHash]struct{}

	ceremonies map[store.TokenHash]store.Code // CodePasskeyOptions
	recoveries map[store.TokenHash]store.Code // CodePasskeyRecovery
	// emailChanges and emailReverts are CodeEmailChange and
	// CodeEmailRevert.
	emailChanges, emailReverts map[store.TokenHash]store.Code
	// emailRecoveries indexes recovery codes by their Email, so that
	// using one voids the others of its address at what they cost.
	emailRecoveries map[string]map[store.TokenHash]struct{}

	limits map[string]time.Time
	// limitsPruned is when a rate-limit write last dropped passed entries.
	limitsPruned time.Time

	// roles holds the roles and who holds them (see roles.go).
	roles roleRecords

	// tenants holds the tenants, their members and invitations (see
	// tenant.go).
	tenants tenantRecords

	// audit is the audit log (see audit.go), under a lock of its own:
	// appending to it never waits for a sign-in.
	audit auditLog
}

var _ store.RateLimitStore = (*Store)(nil)

// owned is an email in a tenant: each has at most one owner.
type owned struct{ tenant, email string }

// ownedBy is the email l owns, or asks to own, in its tenant.
func ownedBy(l store.Login) owned { return owned{l.Tenant, l.Email} }

// session is a session together with the state of its token lineage: a
// fixed amount, whatever the number of exchanges.
type session struct {
	store.Session

	// current is the hash of the one token that rotates, and currentKey
	// the key that made it.
	current    store.TokenHash
	currentKey string
	// exchangedAt is when the last exchange happened: the reuse window is
	// measured from there, so retries inside it do not extend it.
	exchangedAt time.Time

	// allowance is the time of the session's rotation allowance (see
	// store.Rotation.Burst), kept as TakeRateLimit keeps an entry.
	allowance time.Time

	// ended says why the session ended; empty while it is live.
	ended store.EndReason
}

// found returns sess if it is live at now, and otherwise the error the
// contract asks for.
func (sess *session) found(now time.Time) (*session, error) {
	switch {
	case sess == nil:
		return nil, store.ErrNotFound
	case sess.ended != "":
		return nil, &store.EndedError{Reason: sess.ended}
	case !live(sess.ExpiresAt, now):
		return nil, &store.EndedError{}
	}
	return sess, nil
}

// out returns the session as a caller gets it: with a copy of its
// factors, which the caller may modify.
func (sess *session) out() store.Session {
	s := sess.Session
	s.Factors = bytes.Clone(s.Factors)
	return s
}

// New returns an empty store.
func New() *Store {
	return &Store{
		users:         make(map[string]store.User),
		logins:        make(map[store.LoginKey]store.Login),
		userLogins:    make(map[string][]store.LoginKey),
		loginIDs:      make(map[string]store.LoginKey),
		owners:        make(map[owned]store.LoginKey),
		sessions:      make(map[string]*session),
		userSessions:  make(map[string]map[string]struct{}),
		keys:          make(map[string]store.SigningKey),
		resets:        make(map[store.TokenHash]store.Code),
		verifications: make(map[store.TokenHash]store.Code),
		verifyByLogin: make(map[string]map[store.TokenHash]struct{}),
		flows:         make(map[store.TokenHash]store.Code),
		passwordless:  make(map[store.TokenHash]store.Code),
		flowCodes:     make(map[store.TokenHash]map[store.TokenHash]struct{}),
		emailFlows:    make(map[string]map[store.TokenHash]struct{}),
		ceremonies:    make(map[store.TokenHash]store.Code),
		recoveries:    make(map[store.TokenHash]store.Code),
		emailChanges:  make(map[store.TokenHash]store.Code),
		emailReverts:  make(map[store.TokenHash]store.Code),
		limits:        make(map[string]time.Time),

		emailRecoveries: make(map[string]map[store.TokenHash]struct{}),
		roles:           newRoleRecords(),
		tenants:         newTenantRecords(),
	}
}

// live reports whether something that ends at end has not ended at now.
// The end itself counts as expired, as it does for signing keys, whose
// contract says they verify only while VerifyUntil is after now.
func live(end, now time.Time) bool {
	return now.Before(end)
}

// CreateUser implements store.Store.
func (s *Store) CreateUser(_ context.Context, u store.User, first store.Login) error {
	s.mu.Lock()
	defer s.mu.Unlock()

	if _, ok := s.logins[first.LoginKey]; ok {
		return store.ErrConflict
	}
	_, err := s.addUser(u, first)
	return err
}

// addUser adds u with its first login, whose key is free, and returns the
// login as stored, or ErrConflict if u.ID or the login's id is taken, or
// ErrEmailOwned. Called under mu.
func (s *Store) addUser(u store.User, first store.Login) (store.Login, error) {
	if _, ok := s.users[u.ID]; ok {
		return store.Login{}, store.ErrConflict
	}
	first.UserID = u.ID
	if first.ID == "" {
		first.ID = u.ID
	}
	if _, ok := s.loginIDs[first.ID]; ok {
		return store.Login{}, store.ErrConflict
	}
	first.EmailVerified = first.EmailVerified || first.EmailProven
	first.OwnsEmail = first.OwnsEmail && first.EmailProven && first.Email != ""
	if _, ok := s.owners[ownedBy(first)]; ok && first.OwnsEmail {
		return store.Login{}, store.ErrEmailOwned
	}
	u.SessionEpoch, u.Ban = 0, store.Ban{}
	first.SessionEpoch = 0
	// The caller may reuse its slice; the material must not change under
	// the store's feet.
	first.Material = bytes.Clone(first.Material)
	s.users[u.ID] = u
	s.putLogin(first)
	s.userLogins[u.ID] = []store.LoginKey{first.LoginKey}
	s.joinLoginTenant(first)
	return s.withEpoch(first), nil
}

// putLogin records l, new or changed, in the maps by key, id and owned
// email. Called under mu.
func (s *Store) putLogin(l store.Login) {
	s.logins[l.LoginKey] = l
	s.loginIDs[l.ID] = l.LoginKey
	if l.OwnsEmail {
		s.owners[ownedBy(l)] = l.LoginKey
	}
}

// UserByID implements store.Store.
func (s *Store) UserByID(_ context.Context, id string) (store.User, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()

	u, ok := s.users[id]
	if !ok {
		return store.User{}, store.ErrNotFound
	}
	return u, nil
}

// Login implements store.Store.
func (s *Store) Login(_ context.Context, k store.LoginKey) (store.Login, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()

	l, ok := s.logins[k]
	if !ok {
		return store.Login{}, store.ErrNotFound
	}
	return s.withEpoch(l), nil
}

// withEpoch returns l with its user's session epoch, and a copy of its
// material, as every read returns it. Called under mu.
func (s *Store) withEpoch(l store.Login) store.Login {
	l.SessionEpoch = s.users[l.UserID].SessionEpoch
	l.Material = bytes.Clone(l.Material)
	return l
}

// Logins implements store.Store. Logins added in the same instant come in
// the order they were added.
func (s *Store) Logins(_ context.Context, userID string) ([]store.Login, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.waysIn(userID), nil
}

// waysIn returns the logins of a user, oldest first, without its
// MethodSecondFactors record. Called under mu.
func (s *Store) waysIn(userID string) []store.Login {
	out := make([]store.Login, 0, len(s.userLogins[userID]))
	for _, k := range s.userLogins[userID] {
		if k.Method != store.MethodSecondFactors {
			out = append(out, s.withEpoch(s.logins[k]))
		}
	}
	slices.SortStableFunc(out, func(a, b store.Login) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return out
}

// UserByLogin implements store.Store.
func (s *Store) UserByLogin(_ context.Context, k store.LoginKey) (store.User, []store.Login, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()

	l, ok := s.logins[k]
	if !ok || k.Method == store.MethodSecondFactors {
		return store.User{}, nil, store.ErrNotFound
	}
	return s.users[l.UserID], s.waysIn(l.UserID), nil
}

// LoginsByEmail implements store.Store. It looks at every login: the
// memory store is for tests and single processes, not for many users.
func (s *Store) LoginsByEmail(_ context.Context, email string) ([]store.Login, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()

	out := []store.Login{}
	for _, l := range s.logins {
		if l.Email == email && l.Method != store.MethodSecondFactors {
			out = append(out, s.withEpoch(l))
		}
	}
	slices.SortFunc(out, func(a, b store.Login) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return cmp.Or(cmp.Compare(a.UserID, b.UserID), cmp.Compare(a.Tenant, b.Tenant), cmp.Compare(a.Method, b.Method),
			cmp.Compare(a.ThirdParty, b.ThirdParty), cmp.Compare(a.Subject, b.Subject))
	})
	return out, nil
}

// SignInUp implements store.Store.
func (s *Store) SignInUp(_ context.Context, l store.Login, newUser store.User) (store.Login, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()

	if old, ok := s.logins[l.LoginKey]; ok {
		same := old.Email == l.Email
		old.EmailVerified = l.EmailVerified || l.EmailProven || old.EmailVerified && same
		old.EmailProven = l.EmailProven || old.EmailProven && same
		if !same && old.OwnsEmail {
			delete(s.owners, ownedBy(old))
			old.OwnsEmail = false
		}
		old.Email = l.Email
		s.putLogin(old)
		return s.withEpoch(old), false, nil
	}
	created, err := s.addUser(newUser, l)
	if err != nil {
		return store.Login{}, false, err
	}
	return created, true, nil
}

// AttachLogin implements store.Store.
func (s *Store) AttachLogin(_ context.Context, l store.Login) error {
	s.mu.Lock()
	defer s.mu.Unlock()

	if err := s.newLoginFits(l); err != nil {
		return err
	}
	l.OwnsEmail = false
	l.EmailVerified = l.EmailVerified || l.EmailProven
	s.addLogin(l)
	return nil
}

// newLoginFits returns ErrConflict if l's key or id is taken, then
// ErrNotFound if its user does not exist. Called under mu.
func (s *Store) newLoginFits(l store.Login) error {
	if _, ok := s.logins[l.LoginKey]; ok {
		return store.ErrConflict
	}
	if _, ok := s.loginIDs[l.ID]; ok || l.ID == "" {
		return store.ErrConflict
	}
	if _, ok := s.users[l.UserID]; !ok {
		return store.ErrNotFound
	}
	return nil
}

// addLogin adds l, which fits, to its user. Called under mu.
func (s *Store) addLogin(l store.Login) {
	l.SessionEpoch = 0
	l.Material = bytes.Clone(l.Material)
	s.putLogin(l)
	s.userLogins[l.UserID] = append(s.userLogins[l.UserID], l.LoginKey)
	s.joinLoginTenant(l)
}

// LinkLogin implements store.Store.
func (s *Store) LinkLogin(_ context.Context, l store.Login) error {
	s.mu.Lock()
	defer s.mu.Unlock()

	if err := s.newLoginFits(l); err != nil {
		return err
	}
	l.OwnsEmail = l.OwnsEmail && l.EmailProven && l.Email != ""
	l.EmailVerified = l.EmailVerified || l.EmailProven
	owner, isOwned := s.owners[ownedBy(l)]
	switch {
	case l.OwnsEmail && isOwned:
		return store.ErrEmailOwned
	case !l.OwnsEmail && l.Email != "" && (!isOwned || s.logins[owner].UserID != l.UserID):
		return store.ErrNotFound
	}
	s.addLogin(l)
	return nil
}

// ClaimEmail implements store.Store.
func (s *Store) ClaimEmail(_ context.Context, loginID string) (store.Login, error) {
	s.mu.Lock()
	defer s.mu.Unlock()

	k, ok := s.loginIDs[loginID]
	l := s.logins[k]
	if !ok || l.Email == "" || !l.EmailProven {
		return store.Login{}, store.ErrNotFound
	}
	if owner, ok := s.owners[ownedBy(l)]; ok {
		if s.logins[owner].UserID != l.UserID {
			return store.Login{}, store.ErrEmailOwned
		}
		return s.withEpoch(l), nil
	}
	l.OwnsEmail = true
	s.putLogin(l)
	return s.withEpoch(l), nil
}

// SetEmailVerified implements store.Store.
func (s *Store) SetEmailVerified(_ context.Context, loginID string, verified bool) (store.Login, error) {
	s.mu.Lock()
	defer s.mu.Unlock()

	k, ok := s.loginIDs[loginID]
	if !ok {
		return store.Login{}, store.ErrNotFound
	}
	l := s.logins[k]
	l.EmailVerified, l.EmailProven = verified, verified
	if !verified && l.OwnsEmail {
		delete(s.owners, ownedBy(l))
		l.OwnsEmail = false
	}
	s.putLogin(l)
	if verified {
		s.deleteVerificationTokens(loginID)
	}
	return s.withEpoch(l), nil
}

// DeleteLogin implements store.Store.
func (s *Store) DeleteLogin(_ context.Context, loginID string) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()

	k, ok := s.loginIDs[loginID]
	if !ok {
		return nil, store.ErrNotFound
	}
	l := s.logins[k]
	if !s.otherWayIn(l) {
		return nil, store.ErrLastLogin
	}
	handles := []string{}
	for h := range s.userSessions[l.UserID] {
		if sess := s.sessions[h]; sess.LoginID == loginID && sess.ended == "" {
			handles = append(handles, h)
			sess.ended = store.EndRevoked
		}
	}
	s.dropLogin(l)
	s.deletePasskeyCodes(func(c store.Code) bool { return c.LoginID == loginID })
	s.userLogins[l.UserID] = slices.DeleteFunc(s.userLogins[l.UserID], func(o store.LoginKey) bool { return o == k })
	return handles, nil
}

// otherWayIn reports whether l's user has a way to sign in besides l: a
// login that is not l and not a record of second factors. Called under
// mu.
func (s *Store) otherWayIn(l store.Login) bool {
	for _, k := range s.userLogins[l.UserID] {
		if k != l.LoginKey && k.Method != store.MethodSecondFactors {
			return true
		}
	}
	return false
}

// dropLogin forgets a login and its verification tokens, but not its
// place in userLogins. Called under mu.
func (s *Store) dropLogin(l store.Login) {
	delete(s.logins, l.LoginKey)
	delete(s.loginIDs, l.ID)
	if l.OwnsEmail {
		delete(s.owners, ownedBy(l))
	}
	s.deleteVerificationTokens(l.ID)
}

// DeleteUser implements store.Store.
func (s *Store) DeleteUser(_ context.Context, userID string) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()

	if _, ok := s.users[userID]; !ok {
		return nil, store.ErrNotFound
	}
	handles := []string{}
	for h := range s.userSessions[userID] {
		if s.sessions[h].ended == "" {
			handles = append(handles, h)
		}
		s.deleteSession(s.sessions[h])
	}
	for _, k := range s.userLogins[userID] {
		s.dropLogin(s.logins[k])
	}
	delete(s.userLogins, userID)
	s.deleteResetTokens(userID)
	s.deletePasskeyCodes(func(c store.Code) bool { return c.UserID == userID })
	s.deleteEmailCodes(userID, store.CodeEmailChange, store.CodeEmailRevert)
	s.roles.dropUser(userID)
	s.tenants.dropUser(userID)
	delete(s.users, userID)
	return handles, nil
}

// CreateCode implements store.Store.
func (s *Store) CreateCode(_ context.Context, c store.Code) error {
	s.mu.Lock()
	defer s.mu.Unlock()

	switch c.Kind {
	case store.CodePasswordlessFlow:
		// A flow has no user, belongs to no flow, and starts uncounted.
		c.UserID, c.LoginID, c.Flow, c.Attempts = "", "", store.TokenHash{}, 0
	case store.CodePasswordless:
		f, ok := s.flows[c.Flow]
		if !ok || !live(f.ExpiresAt, c.CreatedAt) {
			return store.ErrNotFound
		}
		c.UserID, c.LoginID, c.Email, c.Attempts = "", "", f.Email, 0
	case store.CodePasskeyOptions:
		// A sign-in's ceremony has no user; one that names a user or
		// a login is checked as the other kinds are.
		if c.UserID == "" && c.LoginID == "" {
			c.Flow, c.Attempts = store.TokenHash{}, 0
			break
		}
		fallthrough
	default:
		if c.LoginID != "" {
			k, ok := s.loginIDs[c.LoginID]
			l := s.logins[k]
			if !ok || l.Email != c.Email || c.UserID != "" && c.UserID != l.UserID {
				return store.ErrNotFound
			}
			c.UserID = l.UserID
		} else if _, ok := s.users[c.UserID]; !ok {
			return store.ErrNotFound
		}
		c.Flow, c.Attempts = store.TokenHash{}, 0
	}
	codes := s.codesOf(c.Kind)
	if s.hashTaken(c.Hash) || codes == nil {
		return store.ErrConflict
	}
	c.Data = bytes.Clone(c.Data)
	codes[c.Hash] = c
	switch c.Kind {
	case store.CodePasswordlessFlow:
		addToIndex(s.emailFlows, c.Email, c.Hash)
	case store.CodePasswordless:
		addToIndex(s.flowCodes, c.Flow, c.Hash)
	case store.CodePasskeyRecovery:
		addToIndex(s.emailRecoveries, c.Email, c.Hash)
	case store.CodeVerification:
		addToIndex(s.verifyByLogin, c.LoginID, c.Hash)
	}
	return nil
}

// hashTaken reports whether a code of any kind has hash h. Called under
// mu.
func (s *Store) hashTaken(h store.TokenHash) bool {
	for _, codes := range []map[store.TokenHash]store.Code{s.resets, s.verifications, s.flows, s.passwordless, s.ceremonies, s.recoveries, s.emailChanges, s.emailReverts} {
		if _, ok := codes[h]; ok {
			return true
		}
	}
	return false
}

// addToIndex records h under key in index.
func addToIndex[K comparable](index map[K]map[store.TokenHash]struct{}, key K, h store.TokenHash) {
	hashes := index[key]
	if hashes == nil {
		hashes = make(map[store.TokenHash]struct{})
		index[key] = hashes
	}
	hashes[h] = struct{}{}
}

// dropFromIndex forgets h under key in index, and key when it has no
// hash left.
func dropFromIndex[K comparable](index map[K]map[store.TokenHash]struct{}, key K, h store.TokenHash) {
	hashes := index[key]
	delete(hashes, h)
	if len(hashes) == 0 {
		delete(index, key)
	}
}

// codesOf returns the map that keeps codes of kind, or nil for a kind the
// store does not know. Called under mu.
func (s *Store) codesOf(kind store.CodeKind) map[store.TokenHash]store.Code {
	switch kind {
	case store.CodeReset:
		return s.resets
	case store.CodeVerification:
		return s.verifications
	case store.CodePasswordlessFlow:
		return s.flows
	case store.CodePasswordless:
		return s.passwordless
	case store.CodePasskeyOptions:
		return s.ceremonies
	case store.CodePasskeyRecovery:
		return s.recoveries
	case store.CodeEmailChange:
		return s.emailChanges
	case store.CodeEmailRevert:
		return s.emailReverts
	}
	return nil
}

// Code implements store.Store.
func (s *Store) Code(_ context.Context, kind store.CodeKind, hash store.TokenHash, now time.Time) (store.Code, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	c, ok := s.codesOf(kind)[hash]
	if !ok || !live(c.ExpiresAt, now) {
		return store.Code{}, store.ErrNotFound
	}
	c.Data = bytes.Clone(c.Data)
	return c, nil
}

// UseCeremony implements store.Store.
func (s *Store) UseCeremony(_ context.Context, kind store.CodeKind, hash store.TokenHash, now time.Time, update *store.MaterialUpdate) (store.Code, error) {
	s.mu.Lock()
	defer s.mu.Unlock()

	if kind != store.CodePasskeyOptions && kind != store.CodePasskeyRecovery {
		return store.Code{}, store.ErrNotFound
	}
	c, ok := s.codesOf(kind)[hash]
	if !ok || !live(c.ExpiresAt, now) {
		return store.Code{}, store.ErrNotFound
	}
	if update != nil {
		k, ok := s.loginIDs[update.LoginID]
		if !ok {
			return store.Code{}, store.ErrNotFound
		}
		l := s.logins[k]
		if !bytes.Equal(l.Material, update.Old) {
			return store.Code{}, store.ErrConflict
		}
		l.Material = bytes.Clone(update.New)
		s.putLogin(l)
	}
	if kind == store.CodePasskeyRecovery {
		for h := range s.emailRecoveries[c.Email] {
			s.deletePasskeyCode(kind, h)
		}
	}
	s.deletePasskeyCode(kind, hash)
	return c, nil
}

// deletePasskeyCode removes the passkey code of kind with hash h, if
// there is one. Called under mu.
func (s *Store) deletePasskeyCode(kind store.CodeKind, h store.TokenHash) {
	codes := s.codesOf(kind)
	c, ok := codes[h]
	if !ok {
		return
	}
	delete(codes, h)
	if kind == store.CodePasskeyRecovery {
		dropFromIndex(s.emailRecoveries, c.Email, h)
	}
}

// deletePasskeyCodes removes the passkey codes (options and recovery
// links) that match. It looks at every one: the memory store is for
// tests and single processes. Called under mu.
func (s *Store) deletePasskeyCodes(match func(store.Code) bool) {
	for _, kind := range []store.CodeKind{store.CodePasskeyOptions, store.CodePasskeyRecovery} {
		for h, c := range s.codesOf(kind) {
			if match(c) {
				s.deletePasskeyCode(kind, h)
			}
		}
	}
}

// UsePasswordlessCode implements store.Store.
func (s *Store) UsePasswordlessCode(_ context.Context, flow, code store.TokenHash, now time.Time, maxAttempts int) (store.Code, error) {
	s.mu.Lock()
	defer s.mu.Unlock()

	f, ok := s.flows[flow]
	if !ok || !live(f.ExpiresAt, now) {
		return store.Code{}, store.ErrNotFound
	}
	c, ofFlow := s.passwordless[code]
	ofFlow = ofFlow && c.Flow == flow
	if ofFlow && live(c.ExpiresAt, now) {
		for h := range s.emailFlows[f.Email] {
			s.deleteFlow(h)
		}
		return f, nil
	}
	err := store.ErrWrongCode
	if ofFlow {
		err = store.ErrCodeExpired
	}
	if maxAttempts > 0 {
		f.Attempts++
		if f.Attempts >= maxAttempts {
			s.deleteFlow(flow)
		} else {
			s.flows[flow] = f
		}
	}
	return f, err
}

// deleteFlow removes the passwordless flow with hash h and its codes.
// Called under mu.
func (s *Store) deleteFlow(h store.TokenHash) {
	f, ok := s.flows[h]
	if !ok {
		return
	}
	for c := range s.flowCodes[h] {
		delete(s.passwordless, c)
	}
	delete(s.flowCodes, h)
	dropFromIndex(s.emailFlows, f.Email, h)
	delete(s.flows, h)
}

// VerifyEmail implements store.Store.
func (s *Store) VerifyEmail(_ context.Context, token store.TokenHash, now time.Time) (store.Login, error) {
	s.mu.Lock()
	defer s.mu.Unlock()

	t, ok := s.verifications[token]
	if !ok || !live(t.ExpiresAt, now) {
		return store.Login{}, store.ErrNotFound
	}
	k, ok := s.loginIDs[t.LoginID]
	l := s.logins[k]
	if !ok || l.Email != t.Email {
		return store.Login{}, store.ErrNotFound
	}
	l.EmailVerified = true
	s.putLogin(l)
	s.deleteVerificationTokens(l.ID)
	return s.withEpoch(l), nil
}

// deleteVerificationTokens removes every verification token of a login.
// Called under mu.
func (s *Store) deleteVerificationTokens(loginID string) {
	for h := range s.verifyByLogin[loginID] {
		delete(s.verifications, h)
	}
	delete(s.verifyByLogin, loginID)
}

// passwordLogin returns the email and password login of a user. Called
// under mu.
func (s *Store) passwordLogin(userID string) (store.Login, bool) {
	for _, k := range s.userLogins[userID] {
		if k.Method == store.MethodEmailPassword {
			return s.logins[k], true
		}
	}
	return store.Login{}, false
}

// UpdatePasswordHash implements store.Store.
func (s *Store) UpdatePasswordHash(_ context.Context, userID, oldHash, newHash string) error {
	s.mu.Lock()
	defer s.mu.Unlock()

	l, ok := s.passwordLogin(userID)
	if !ok {
		return store.ErrNotFound
	}
	if l.PasswordHash != oldHash {
		return store.ErrConflict
	}
	l.PasswordHash = newHash
	s.putLogin(l)
	s.deleteResetTokens(userID)
	return nil
}

// UpdateLoginMaterial implements store.Store.
func (s *Store) UpdateLoginMaterial(_ context.Context, loginID string, old, new []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()

	k, ok := s.loginIDs[loginID]
	if !ok {
		return store.ErrNotFound
	}
	l := s.logins[k]
	if !bytes.Equal(l.Material, old) {
		return store.ErrConflict
	}
	l.Material = bytes.Clone(new)
	s.putLogin(l)
	return nil
}

// ResetPassword implements store.Store.
func (s *Store) ResetPassword(_ context.Context, token store.TokenHash, passwordHash string, now time.Time) (store.Login, []string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()

	t, ok := s.resets[token]
	if !ok || !live(t.ExpiresAt, now) {
		return store.Login{}, nil, store.ErrNotFound
	}
	l, ok := s.passwordLogin(t.UserID)
	if !ok {
		return store.Login{}, nil, store.ErrNotFound
	}
	if !l.EmailProven {
		s.dropPasskeys(t.UserID)
	}
	l.PasswordHash = passwordHash
	l.EmailVerified, l.EmailProven = true, true // the token was mailed to it
	s.putLogin(l)
	s.deleteResetTokens(t.UserID)
	handles := s.endSessions(t.UserID, store.EndPasswordReset)
	return s.withEpoch(l), handles, nil
}

// ChangeEmail implements store.Store.
func (s *Store) ChangeEmail(_ context.Context, kind store.CodeKind, hash store.TokenHash, now time.Time) (store.Code, []store.Login, error) {
	s.mu.Lock()
	defer s.mu.Unlock()

	var c store.Code
	ok := false
	if kind == store.CodeEmailChange || kind == store.CodeEmailRevert {
		c, ok = s.codesOf(kind)[hash]
	}
	if !ok || !live(c.ExpiresAt, now) {
		return store.Code{}, nil, store.ErrNotFound
	}
	to := c.Email
	moved, err := s.loginsToMove(c.UserID, string(c.Data), to)
	if err != nil {
		return store.Code{}, nil, err
	}
	keys := s.userLogins[c.UserID]
	for i, l := range moved {
		s.dropLogin(l)
		nk := store.KeyForEmail(l.LoginKey, to)
		keys[slices.Index(keys, l.LoginKey)] = nk
		l.LoginKey, l.Email = nk, to
		l.EmailVerified, l.EmailProven, l.OwnsEmail = true, false, false
		s.putLogin(l)
		moved[i] = s.withEpoch(l)
	}
	kinds := []store.CodeKind{store.CodeEmailChange}
	if kind == store.CodeEmailRevert {
		kinds = append(kinds, store.CodeEmailRevert)
	}
	s.deleteEmailCodes(c.UserID, kinds...)
	// Links mailed to the address the user left (dropLogin took the
	// moved logins' verification links).
	s.deleteResetTokens(c.UserID)
	s.deletePasskeyCodes(func(pc store.Code) bool { return pc.Kind == store.CodePasskeyRecovery && pc.UserID == c.UserID })
	c.Data = bytes.Clone(c.Data)
	return c, moved, nil
}

// loginsToMove are the logins of userID that an email change moves from
// one address to another, or why none may. Called under mu.
func (s *Store) loginsToMove(userID, from, to string) ([]store.Login, error) {
	var moved []store.Login
	for _, k := range s.userLogins[userID] {
		if l := s.logins[k]; l.Email == from && store.MovesWithEmail(l.Method) {
			moved = append(moved, l)
		}
	}
	if len(moved) == 0 {
		return nil, store.ErrNotFound
	}
	// Only a login of the tenant of a moved login holds the address
	// against it: another tenant's users are other people.
	for _, l := range s.logins {
		if l.Email == to && l.UserID != userID && slices.ContainsFunc(moved, func(m store.Login) bool { return m.Tenant == l.Tenant }) {
			return nil, store.ErrEmailOwned
		}
	}
	for _, l := range moved {
		if other, taken := s.logins[store.KeyForEmail(l.LoginKey, to)]; taken && other.ID != l.ID {
			return nil, store.ErrConflict
		}
	}
	return moved, nil
}

// deleteEmailCodes removes every email change code of the kinds given of
// a user. Called under mu.
func (s *Store) deleteEmailCodes(userID string, kinds ...store.CodeKind) {
	s.deleteEmailCodesIf(func(c store.Code) bool { return c.UserID == userID }, kinds...)
}

// deleteEmailCodesIf removes the email change codes of the kinds given
// that match. Called under mu.
func (s *Store) deleteEmailCodesIf(match func(store.Code) bool, kinds ...store.CodeKind) {
	for _, kind := range kinds {
		codes := s.codesOf(kind)
		for h, c := range codes {
			if match(c) {
				delete(codes, h)
			}
		}
	}
}

// dropPasskeys deletes every passkey of a user, with the codes bound to
// them, as DeleteLogin does: the owner of an address that was not proven
// takes the account back, and whoever chose its password may have added
// them. Called under mu.
func (s *Store) dropPasskeys(userID string) {
	var kept []store.LoginKey
	dropped := make(map[string]bool)
	for _, k := range s.userLogins[userID] {
		if k.Method != store.MethodWebAuthn {
			kept = append(kept, k)
			continue
		}
		l := s.logins[k]
		s.dropLogin(l)
		dropped[l.ID] = true
	}
	if len(dropped) == 0 {
		return
	}
	s.userLogins[userID] = kept
	s.deletePasskeyCodes(func(c store.Code) bool { return dropped[c.LoginID] })
}

// deleteResetTokens removes every reset token of a user. Called under mu.
func (s *Store) deleteResetTokens(userID string) {
	for h, t := range s.resets {
		if t.UserID == userID {
			delete(s.resets, h)
		}
	}
}

// CreateSession implements store.Store.
func (s *Store) CreateSession(_ context.Context, sess store.Session, refresh store.TokenHash, epoch int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()

	if _, ok := s.sessions[sess.Handle]; ok {
		return store.ErrConflict
	}
	if u, ok := s.users[sess.UserID]; !ok {
		return store.ErrNotFound
	} else if u.SessionEpoch != epoch {
		return store.ErrSessionsEnded
	} else if u.Ban.ActiveAt(sess.RefreshedAt) {
		return store.ErrBanned
	}
	if sess.LoginID == "" {
		sess.LoginID = sess.UserID
	}
	sess.Generation = 0
	// The caller may reuse its slice; the factors must not change under
	// the store's feet.
	sess.Factors = bytes.Clone(sess.Factors)
	s.sessions[sess.Handle] = &session{Session: sess, current: refresh}
	handles := s.userSessions[sess.UserID]
	if handles == nil {
		handles = make(map[string]struct{})
		s.userSessions[sess.UserID] = handles
	}
	handles[sess.Handle] = struct{}{}
	return nil
}

// Session implements store.Store.
func (s *Store) Session(_ context.Context, handle string, now time.Time) (store.Session, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()

	sess, err := s.sessions[handle].found(now)
	if err != nil {
		return store.Session{}, err
	}
	return sess.out(), nil
}

// UserSessions implements store.Store. Sessions are ordered by CreatedAt,
// newest first; ties are broken by handle so that the order is stable.
func (s *Store) UserSessions(_ context.Context, userID string, now time.Time) ([]store.Session, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()

	var out []store.Session
	for h := range s.userSessions[userID] {
		if sess, err := s.sessions[h].found(now); err == nil {
			out = append(out, sess.out())
		}
	}
	slices.SortFunc(out, newestSessionFirst)
	return out, nil
}

func newestSessionFirst(a, b store.Session) int {
	if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
		return c
	}
	return cmp.Compare(a.Handle, b.Handle)
}

// RotateRefreshToken implements store.Store. This store never held tokens
// of the format before tokens named their session, so a rotation without
// a handle finds nothing. The rotation of a current token reads the roles
// asked for (RolesOf) under the same lock.
func (s *Store) RotateRefreshToken(_ context.Context, r store.Rotation) (store.Rotated, error) {
	s.mu.Lock()
	defer s.mu.Unlock()

	if r.Handle == "" {
		return store.Rotated{}, store.ErrNotFound
	}
	sess, err := s.sessions[r.Handle].found(r.Now)
	if err != nil {
		return store.Rotated{}, err
	}
	if r.Presented != sess.current {
		behind := sess.Generation - r.Generation
		switch {
		case behind <= 0:
			return store.Rotated{}, store.ErrNotFound
		case behind == 1 && r.ReuseWindow > 0 && r.Now.Sub(sess.exchangedAt) < r.ReuseWindow:
			return store.Rotated{Session: sess.out(), Repeat: true, CurrentKey: sess.currentKey}, nil
		}
		sess.ended = store.EndTokenTheft
		return store.Rotated{Session: sess.out(), Reuse: store.ReuseOf(behind, r.ReuseWindow)}, store.ErrTokenReused
	}
	if r.Burst > 0 && r.Every > 0 {
		if sess.allowance.After(r.Now.Add(time.Duration(r.Burst-1) * r.Every)) {
			return store.Rotated{}, store.ErrRateLimited
		}
		sess.allowance = later(sess.allowance, r.Now).Add(r.Every)
	}
	sess.current, sess.currentKey, sess.exchangedAt = r.Next, r.NextKey, r.Now
	sess.Generation++
	sess.RefreshedAt = r.Now
	sess.ExpiresAt = r.ExpiresAt
	out := store.Rotated{Session: sess.out()}
	if r.RolesOf != "" {
		out.Roles, out.Permissions = s.roles.of(r.RolesOf, sess.UserID)
		out.RolesRead = true
	}
	return out, nil
}

// RevokeSession implements store.Store.
func (s *Store) RevokeSession(_ context.Context, handle string, why store.EndReason) error {
	s.mu.Lock()
	defer s.mu.Unlock()

	sess, ok := s.sessions[handle]
	if !ok || sess.ended != "" {
		return store.ErrNotFound
	}
	sess.ended = why
	return nil
}

// UpdateSessionFactors implements store.Store.
func (s *Store) UpdateSessionFactors(_ context.Context, handle string, old, new []byte, now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()

	sess, err := s.sessions[handle].found(now)
	if err != nil {
		return err
	}
	if !bytes.Equal(sess.Factors, old) {
		return store.ErrConflict
	}
	sess.Factors = bytes.Clone(new)
	return nil
}

// RevokeUserSessions implements store.Store. The method has no notion of the
// current time, so it also ends, and reports, sessions that have expired
// but have not yet been removed by DeleteExpired. The handles come newest
// first.
func (s *Store) RevokeUserSessions(_ context.Context, userID string) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.endSessions(userID, store.EndRevoked), nil
}

// endSessions ends every live session of a user, newest first, advances
// its session epoch and returns the handles. Called under mu.
func (s *Store) endSessions(userID string, why store.EndReason) []string {
	if u, ok := s.users[userID]; ok {
		u.SessionEpoch++
		s.users[userID] = u
	}
	var doomed []*session
	for h := range s.userSessions[userID] {
		if sess := s.sessions[h]; sess.ended == "" {
			doomed = append(doomed, sess)
		}
	}
	slices.SortFunc(doomed, func(a, b *session) int { return newestSessionFirst(a.Session, b.Session) })

	handles := make([]string, 0, len(doomed))
	for _, sess := range doomed {
		handles = append(handles, sess.Handle)
		sess.ended = why
	}
	return handles
}

// deleteSession forgets sess and its entry in the per-user index. The
// caller holds s.mu for writing.
func (s *Store) deleteSession(sess *session) {
	delete(s.sessions, sess.Handle)
	if handles := s.userSessions[sess.UserID]; handles != nil {
		delete(handles, sess.Handle)
		if len(handles) == 0 {
			delete(s.userSessions, sess.UserID)
		}
	}
}

// SigningKeys implements store.Store. Keys are ordered by CreatedAt, newest
// first; ties are broken by ID so that the order is stable.
func (s *Store) SigningKeys(_ context.Context, now time.Time) ([]store.SigningKey, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()

	var out []store.SigningKey
	for _, k := range s.keys {
		if live(k.VerifyUntil, now) {
			k.Material = bytes.Clone(k.Material)
			out = append(out, k)
		}
	}
	slices.SortFunc(out, func(a, b store.SigningKey) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return out, nil
}

// AddSigningKey implements store.Store.
func (s *Store) AddSigningKey(_ context.Context, k store.SigningKey) error {
	s.mu.Lock()
	defer s.mu.Unlock()

	if _, ok := s.keys[k.ID]; ok {
		return store.ErrConflict
	}
	// The caller may reuse its slice; the key material must not change
	// under the store's feet.
	k.Material = bytes.Clone(k.Material)
	s.keys[k.ID] = k
	return nil
}

// DeleteExpired implements store.Store. An ended session goes when it
// would have expired, taking the record of why it ended with it.
func (s *Store) DeleteExpired(_ context.Context, now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()

	for _, sess := range s.sessions {
		if !live(sess.ExpiresAt, now) {
			s.deleteSession(sess)
		}
	}
	for id, k := range s.keys {
		if !live(k.VerifyUntil, now) {
			delete(s.keys, id)
		}
	}
	for h, t := range s.resets {
		if !live(t.ExpiresAt, now) {
			delete(s.resets, h)
		}
	}
	for h, t := range s.verifications {
		if !live(t.ExpiresAt, now) {
			delete(s.verifications, h)
			dropFromIndex(s.verifyByLogin, t.LoginID, h)
		}
	}
	// An expired flow takes its codes, which nobody can use any more.
	for h, f := range s.flows {
		if !live(f.ExpiresAt, now) {
			s.deleteFlow(h)
		}
	}
	for h, c := range s.passwordless {
		if !live(c.ExpiresAt, now) {
			delete(s.passwordless, h)
			dropFromIndex(s.flowCodes, c.Flow, h)
		}
	}
	s.deletePasskeyCodes(func(c store.Code) bool { return !live(c.ExpiresAt, now) })
	s.deleteEmailCodesIf(func(c store.Code) bool { return !live(c.ExpiresAt, now) }, store.CodeEmailChange, store.CodeEmailRevert)
	for k, tat := range s.limits {
		if !live(tat, now) {
			delete(s.limits, k)
		}
	}
	s.deleteExpiredInvitations(now)
	return nil
}

// RateLimit implements store.RateLimitStore.
func (s *Store) RateLimit(_ context.Context, key string) (time.Time, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.limits[key], nil
}

// TakeRateLimit implements store.RateLimitStore.
func (s *Store) TakeRateLimit(_ context.Context, key string, every time.Duration, burst int, now time.Time) (bool, time.Time, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pruneLimits(now)
	tat, ok := s.limits[key]
	if ok && tat.After(now.Add(time.Duration(burst-1)*every)) {
		return false, tat, nil
	}
	s.limits[key] = later(tat, now).Add(every)
	return true, time.Time{}, nil
}

// pruneLimits drops the passed entries, once a minute: the map holds
// little more than the allowances still counting, at a cost per write of
// O(1) amortised over the minute's writes. Called under mu.
func (s *Store) pruneLimits(now time.Time) {
	if now.Sub(s.limitsPruned) >= time.Minute {
		s.limitsPruned = now
		for k, tat := range s.limits {
			if !live(tat, now) {
				delete(s.limits, k)
			}
		}
	}
}

// RefundRateLimit implements store.RateLimitStore.
func (s *Store) RefundRateLimit(_ context.Context, key string, every time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if tat, ok := s.limits[key]; ok {
		s.limits[key] = tat.Add(-every)
	}
	return nil
}

// ResetRateLimit implements store.RateLimitStore.
func (s *Store) ResetRateLimit(_ context.Context, key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.limits, key)
	return nil
}

// RateLimits implements store.RateLimitStore.
func (s *Store) RateLimits(_ context.Context, keys []string) ([]time.Time, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	tats := make([]time.Time, len(keys))
	for i, k := range keys {
		tats[i] = s.limits[k]
	}
	return tats, nil
}

// SpendRateLimits implements store.RateLimitStore.
func (s *Store) SpendRateLimits(_ context.Context, spends []store.RateLimitSpend, now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pruneLimits(now)
	for _, sp := range spends {
		s.limits[sp.Key] = later(s.limits[sp.Key], now).Add(sp.Every)
	}
	return nil
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
