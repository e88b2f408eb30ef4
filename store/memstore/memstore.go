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
	owners     map[string]store.LoginKey      // email -> the login that owns it

	sessions     map[string]*session            // by handle
	bySeq        map[uint64]*session            // by session.seq
	userSessions map[string]map[string]struct{} // user id -> handles
	lastSeq      uint64

	// tokens is by far the largest map: every refresh adds a record that
	// stays until it expires. Its records hold no pointers, so the garbage
	// collector never has to scan them. A record whose session is gone
	// (bySeq has no entry) is dead: revoking a session leaves its records
	// to DeleteExpired, so that a revocation costs the same whatever the
	// session's history.
	tokens map[store.TokenHash]refreshToken

	keys map[string]store.SigningKey // by id; Material owned by the store

	resets        map[store.TokenHash]store.ResetToken
	verifications map[store.TokenHash]store.VerificationToken
	// verifyByLogin indexes verifications by Login.ID, so that
	// voiding a login's tokens, which every verification, unlink and
	// deletion does under the lock, costs what that login has.
	verifyByLogin map[string]map[store.TokenHash]struct{}

	limits map[string]time.Time
	// limitsPruned is when TakeRateLimit last dropped passed entries.
	limitsPruned time.Time
}

var _ store.RateLimitStore = (*Store)(nil)

// session is a session together with the state of its token lineage.
type session struct {
	store.Session
	seq uint64 // a number no other session of this store has had

	// current is the one token that rotates normally.
	current store.TokenHash
	// previous is the token that current replaced in a normal rotation:
	// the only superseded token the reuse window may forgive. A re-rotation
	// inside the window leaves it alone, as the contract says.
	previous    store.TokenHash
	hasPrevious bool
	// supersededAt is when previous was exchanged: the window is measured
	// from there, so retries inside it do not extend it.
	supersededAt time.Time

	// allowance is the time of the session's rotation allowance (see
	// store.Rotation.Burst), kept as TakeRateLimit keeps an entry.
	allowance time.Time
}

// refreshToken is the record of one issued refresh token. Whether it is
// current is not stored here but read from its session, so that there is
// exactly one place that can say so.
type refreshToken struct {
	session   uint64 // session.seq
	expiresAt instant
}

// instant is a time.Time without its location pointer.
type instant struct {
	sec  int64
	nsec int32
}

func instantOf(t time.Time) instant { return instant{t.Unix(), int32(t.Nanosecond())} }

func (i instant) time() time.Time { return time.Unix(i.sec, int64(i.nsec)) }

// New returns an empty store.
func New() *Store {
	return &Store{
		users:         make(map[string]store.User),
		logins:        make(map[store.LoginKey]store.Login),
		userLogins:    make(map[string][]store.LoginKey),
		loginIDs:      make(map[string]store.LoginKey),
		owners:        make(map[string]store.LoginKey),
		sessions:      make(map[string]*session),
		bySeq:         make(map[uint64]*session),
		userSessions:  make(map[string]map[string]struct{}),
		tokens:        make(map[store.TokenHash]refreshToken),
		keys:          make(map[string]store.SigningKey),
		resets:        make(map[store.TokenHash]store.ResetToken),
		verifications: make(map[store.TokenHash]store.VerificationToken),
		verifyByLogin: make(map[string]map[store.TokenHash]struct{}),
		limits:        make(map[string]time.Time),
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
	first.OwnsEmail = first.OwnsEmail && first.Email != ""
	if _, ok := s.owners[first.Email]; ok && first.OwnsEmail {
		return store.Login{}, store.ErrEmailOwned
	}
	u.SessionEpoch = 0
	first.SessionEpoch = 0
	s.users[u.ID] = u
	s.putLogin(first)
	s.userLogins[u.ID] = []store.LoginKey{first.LoginKey}
	return first, nil
}

// putLogin records l, new or changed, in the maps by key, id and owned
// email. Called under mu.
func (s *Store) putLogin(l store.Login) {
	s.logins[l.LoginKey] = l
	s.loginIDs[l.ID] = l.LoginKey
	if l.OwnsEmail {
		s.owners[l.Email] = l.LoginKey
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

// withEpoch returns l with its user's session epoch. Called under mu.
func (s *Store) withEpoch(l store.Login) store.Login {
	l.SessionEpoch = s.users[l.UserID].SessionEpoch
	return l
}

// Logins implements store.Store. Logins added in the same instant come in
// the order they were added.
func (s *Store) Logins(_ context.Context, userID string) ([]store.Login, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()

	out := make([]store.Login, 0, len(s.userLogins[userID]))
	for _, k := range s.userLogins[userID] {
		out = append(out, s.withEpoch(s.logins[k]))
	}
	slices.SortStableFunc(out, func(a, b store.Login) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return out, nil
}

// LoginsByEmail implements store.Store. It looks at every login: the
// memory store is for tests and single processes, not for many users.
func (s *Store) LoginsByEmail(_ context.Context, email string) ([]store.Login, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()

	out := []store.Login{}
	for _, l := range s.logins {
		if l.Email == email {
			out = append(out, s.withEpoch(l))
		}
	}
	slices.SortFunc(out, func(a, b store.Login) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return cmp.Or(cmp.Compare(a.UserID, b.UserID), cmp.Compare(a.Method, b.Method),
			cmp.Compare(a.ThirdParty, b.ThirdParty), cmp.Compare(a.Subject, b.Subject))
	})
	return out, nil
}

// SignInUp implements store.Store.
func (s *Store) SignInUp(_ context.Context, l store.Login, newUser store.User) (store.Login, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()

	if old, ok := s.logins[l.LoginKey]; ok {
		old.EmailVerified = l.EmailVerified || old.EmailVerified && old.Email == l.Email
		if old.Email != l.Email && old.OwnsEmail {
			delete(s.owners, old.Email)
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

// LinkLogin implements store.Store.
func (s *Store) LinkLogin(_ context.Context, l store.Login) error {
	s.mu.Lock()
	defer s.mu.Unlock()

	if _, ok := s.logins[l.LoginKey]; ok {
		return store.ErrConflict
	}
	if _, ok := s.loginIDs[l.ID]; ok || l.ID == "" {
		return store.ErrConflict
	}
	owner, ok := s.owners[l.Email]
	if !ok || s.logins[owner].UserID != l.UserID {
		return store.ErrNotFound
	}
	l.OwnsEmail = false
	l.SessionEpoch = 0
	s.putLogin(l)
	s.userLogins[l.UserID] = append(s.userLogins[l.UserID], l.LoginKey)
	return nil
}

// ClaimEmail implements store.Store.
func (s *Store) ClaimEmail(_ context.Context, loginID string) (store.Login, error) {
	s.mu.Lock()
	defer s.mu.Unlock()

	k, ok := s.loginIDs[loginID]
	l := s.logins[k]
	if !ok || l.Email == "" {
		return store.Login{}, store.ErrNotFound
	}
	if owner, ok := s.owners[l.Email]; ok {
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
	l.EmailVerified = verified
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
	if len(s.userLogins[l.UserID]) == 1 {
		return nil, store.ErrLastLogin
	}
	handles := []string{}
	for h := range s.userSessions[l.UserID] {
		if sess := s.sessions[h]; sess.LoginID == loginID {
			handles = append(handles, h)
			s.deleteSession(sess)
		}
	}
	s.dropLogin(l)
	s.userLogins[l.UserID] = slices.DeleteFunc(s.userLogins[l.UserID], func(o store.LoginKey) bool { return o == k })
	return handles, nil
}

// dropLogin forgets a login and its verification tokens, but not its
// place in userLogins. Called under mu.
func (s *Store) dropLogin(l store.Login) {
	delete(s.logins, l.LoginKey)
	delete(s.loginIDs, l.ID)
	if l.OwnsEmail {
		delete(s.owners, l.Email)
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
		handles = append(handles, h)
		s.deleteSession(s.sessions[h])
	}
	for _, k := range s.userLogins[userID] {
		s.dropLogin(s.logins[k])
	}
	delete(s.userLogins, userID)
	s.deleteResetTokens(userID)
	delete(s.users, userID)
	return handles, nil
}

// CreateVerificationToken implements store.Store.
func (s *Store) CreateVerificationToken(_ context.Context, t store.VerificationToken) error {
	s.mu.Lock()
	defer s.mu.Unlock()

	k, ok := s.loginIDs[t.LoginID]
	if !ok || s.logins[k].Email != t.Email {
		return store.ErrNotFound
	}
	if _, ok := s.verifications[t.Hash]; ok {
		return store.ErrConflict
	}
	s.verifications[t.Hash] = t
	hashes := s.verifyByLogin[t.LoginID]
	if hashes == nil {
		hashes = make(map[store.TokenHash]struct{})
		s.verifyByLogin[t.LoginID] = hashes
	}
	hashes[t.Hash] = struct{}{}
	return nil
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

// CreateResetToken implements store.Store.
func (s *Store) CreateResetToken(_ context.Context, t store.ResetToken) error {
	s.mu.Lock()
	defer s.mu.Unlock()

	if _, ok := s.users[t.UserID]; !ok {
		return store.ErrNotFound
	}
	if _, ok := s.resets[t.Hash]; ok {
		return store.ErrConflict
	}
	s.resets[t.Hash] = t
	return nil
}

// ResetToken implements store.Store.
func (s *Store) ResetToken(_ context.Context, token store.TokenHash, now time.Time) (store.ResetToken, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	t, ok := s.resets[token]
	if !ok || !live(t.ExpiresAt, now) {
		return store.ResetToken{}, store.ErrNotFound
	}
	return t, nil
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
	l.PasswordHash = passwordHash
	l.EmailVerified = true // the token was mailed to it
	s.putLogin(l)
	s.deleteResetTokens(t.UserID)
	handles := s.endSessions(t.UserID)
	return s.withEpoch(l), handles, nil
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
	if s.onRecord(refresh) {
		return store.ErrConflict
	}
	if u, ok := s.users[sess.UserID]; !ok {
		return store.ErrNotFound
	} else if u.SessionEpoch != epoch {
		return store.ErrSessionsEnded
	}
	if sess.LoginID == "" {
		sess.LoginID = sess.UserID
	}

	s.lastSeq++
	rec := &session{
		Session: sess,
		seq:     s.lastSeq,
		current: refresh,
	}
	s.sessions[sess.Handle] = rec
	s.bySeq[rec.seq] = rec
	handles := s.userSessions[sess.UserID]
	if handles == nil {
		handles = make(map[string]struct{})
		s.userSessions[sess.UserID] = handles
	}
	handles[sess.Handle] = struct{}{}
	s.tokens[refresh] = refreshToken{session: rec.seq, expiresAt: instantOf(sess.ExpiresAt)}
	return nil
}

// Session implements store.Store.
func (s *Store) Session(_ context.Context, handle string, now time.Time) (store.Session, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()

	sess, ok := s.sessions[handle]
	if !ok || !live(sess.ExpiresAt, now) {
		return store.Session{}, store.ErrNotFound
	}
	return sess.Session, nil
}

// UserSessions implements store.Store. Sessions are ordered by CreatedAt,
// newest first; ties are broken by handle so that the order is stable.
func (s *Store) UserSessions(_ context.Context, userID string, now time.Time) ([]store.Session, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()

	var out []store.Session
	for h := range s.userSessions[userID] {
		if sess := s.sessions[h]; live(sess.ExpiresAt, now) {
			out = append(out, sess.Session)
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

// RotateRefreshToken implements store.Store.
func (s *Store) RotateRefreshToken(_ context.Context, r store.Rotation) (store.Session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()

	tok, ok := s.tokens[r.Presented]
	if !ok || !live(tok.expiresAt.time(), r.Now) {
		return store.Session{}, store.ErrNotFound
	}
	sess := s.bySeq[tok.session]
	if sess == nil || !live(sess.ExpiresAt, r.Now) {
		return store.Session{}, store.ErrNotFound
	}

	current := r.Presented == sess.current
	again := r.ReuseWindow > 0 && sess.hasPrevious && r.Presented == sess.previous &&
		r.Now.Sub(sess.supersededAt) < r.ReuseWindow
	if !current && !again {
		old := sess.Session
		s.deleteSession(sess)
		return old, store.ErrTokenReused
	}
	if s.onRecord(r.Next) {
		return store.Session{}, store.ErrConflict
	}
	if r.Burst > 0 && r.Every > 0 {
		if sess.allowance.After(r.Now.Add(time.Duration(r.Burst-1) * r.Every)) {
			return store.Session{}, store.ErrRateLimited
		}
		sess.allowance = later(sess.allowance, r.Now).Add(r.Every)
	}
	if current {
		sess.previous, sess.hasPrevious, sess.supersededAt = r.Presented, true, r.Now
	}
	// Inside the window, the replaced current token stays on record as
	// superseded, so that presenting it later is detected as reuse.
	sess.current = r.Next
	s.tokens[r.Next] = refreshToken{session: sess.seq, expiresAt: instantOf(r.ExpiresAt)}
	sess.RefreshedAt = r.Now
	sess.ExpiresAt = r.ExpiresAt
	return sess.Session, nil
}

// RevokeSession implements store.Store.
func (s *Store) RevokeSession(_ context.Context, handle string) error {
	s.mu.Lock()
	defer s.mu.Unlock()

	sess, ok := s.sessions[handle]
	if !ok {
		return store.ErrNotFound
	}
	s.deleteSession(sess)
	return nil
}

// RevokeUserSessions implements store.Store. The method has no notion of the
// current time, so it also deletes, and reports, sessions that have expired
// but have not yet been removed by DeleteExpired. The handles come newest
// first.
func (s *Store) RevokeUserSessions(_ context.Context, userID string) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.endSessions(userID), nil
}

// endSessions deletes every session of a user, newest first, advances
// its session epoch and returns the handles. Called under mu.
func (s *Store) endSessions(userID string) []string {
	if u, ok := s.users[userID]; ok {
		u.SessionEpoch++
		s.users[userID] = u
	}
	var doomed []*session
	for h := range s.userSessions[userID] {
		doomed = append(doomed, s.sessions[h])
	}
	slices.SortFunc(doomed, func(a, b *session) int { return newestSessionFirst(a.Session, b.Session) })

	handles := make([]string, 0, len(doomed))
	for _, sess := range doomed {
		handles = append(handles, sess.Handle)
		s.deleteSession(sess)
	}
	return handles
}

// onRecord reports whether h is a token of a session on record: a current
// or superseded token, not a dead record. Called under mu.
func (s *Store) onRecord(h store.TokenHash) bool {
	tok, ok := s.tokens[h]
	return ok && s.bySeq[tok.session] != nil
}

// deleteSession removes sess and its entry in the per-user index. The
// records of its tokens are dead from then on, and DeleteExpired removes
// them. The caller holds s.mu for writing.
func (s *Store) deleteSession(sess *session) {
	delete(s.sessions, sess.Handle)
	delete(s.bySeq, sess.seq)
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

// DeleteExpired implements store.Store. Superseded tokens that have not
// expired are kept even though they can never rotate again: they are what
// lets RotateRefreshToken recognise a stolen token. The records of revoked
// sessions' tokens go, whatever their expiry.
func (s *Store) DeleteExpired(_ context.Context, now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()

	for _, sess := range s.sessions {
		if !live(sess.ExpiresAt, now) {
			s.deleteSession(sess)
		}
	}
	for h, tok := range s.tokens {
		sess := s.bySeq[tok.session]
		if sess != nil && live(tok.expiresAt.time(), now) {
			continue
		}
		delete(s.tokens, h)
		if sess != nil && sess.hasPrevious && sess.previous == h {
			sess.previous, sess.hasPrevious = store.TokenHash{}, false
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
			hashes := s.verifyByLogin[t.LoginID]
			delete(hashes, h)
			if len(hashes) == 0 {
				delete(s.verifyByLogin, t.LoginID)
			}
		}
	}
	for k, tat := range s.limits {
		if !live(tat, now) {
			delete(s.limits, k)
		}
	}
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
	// Passed entries are dropped once a minute: the map holds little
	// more than the allowances still counting, at a cost per take of
	// O(1) amortised over the minute's takes.
	if now.Sub(s.limitsPruned) >= time.Minute {
		s.limitsPruned = now
		for k, tat := range s.limits {
			if !live(tat, now) {
				delete(s.limits, k)
			}
		}
	}
	tat, ok := s.limits[key]
	if ok && tat.After(now.Add(time.Duration(burst-1)*every)) {
		return false, tat, nil
	}
	s.limits[key] = later(tat, now).Add(every)
	return true, time.Time{}, nil
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

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
