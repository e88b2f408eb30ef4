package memstore

import (
	"bytes"
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/latchkit/auth/store"
)

var _ store.TenantStore = (*Store)(nil)

// tenantRecords are the tenants, their members and the invitations to
// join them. Every method of Store that reads or changes them holds mu,
// as the rest of the store does.
type tenantRecords struct {
	byID        map[string]store.Tenant
	members     map[string]map[string]time.Time // tenant -> user id -> joined at
	userTenants map[string]map[string]struct{}  // user id -> tenants
	invitations map[store.TokenHash]store.Invitation
}

func newTenantRecords() tenantRecords {
	return tenantRecords{
		byID:        make(map[string]store.Tenant),
		members:     make(map[string]map[string]time.Time),
		userTenants: make(map[string]map[string]struct{}),
		invitations: make(map[store.TokenHash]store.Invitation),
	}
}

// join makes userID a member of tenant at at, unless it is one already,
// and reports whether it made it one.
func (ts *tenantRecords) join(tenant, userID string, at time.Time) bool {
	members := ts.members[tenant]
	if _, ok := members[userID]; ok {
		return false
	}
	if members == nil {
		members = make(map[string]time.Time)
		ts.members[tenant] = members
	}
	members[userID] = at
	if ts.userTenants[userID] == nil {
		ts.userTenants[userID] = make(map[string]struct{})
	}
	ts.userTenants[userID][tenant] = struct{}{}
	return true
}

// leave ends the membership of userID in tenant, and reports whether
// there was one.
func (ts *tenantRecords) leave(tenant, userID string) bool {
	if _, ok := ts.members[tenant][userID]; !ok {
		return false
	}
	delete(ts.members[tenant], userID)
	if len(ts.members[tenant]) == 0 {
		delete(ts.members, tenant)
	}
	delete(ts.userTenants[userID], tenant)
	if len(ts.userTenants[userID]) == 0 {
		delete(ts.userTenants, userID)
	}
	return true
}

// dropUser forgets every membership of the user.
func (ts *tenantRecords) dropUser(userID string) {
	for tenant := range ts.userTenants[userID] {
		ts.leave(tenant, userID)
	}
}

// joinLoginTenant makes the user of l, a login just added, a member of
// l's tenant. The public tenant has no members, and a tenant with no
// record gets none, so that no membership outlives its tenant's
// deletion. Called under mu.
func (s *Store) joinLoginTenant(l store.Login) {
	if _, ok := s.tenants.byID[l.Tenant]; ok && l.Tenant != "" {
		s.tenants.join(l.Tenant, l.UserID, l.CreatedAt)
	}
}

// PutTenant implements store.TenantStore.
func (s *Store) PutTenant(_ context.Context, t store.Tenant) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()

	old, exists := s.tenants.byID[t.ID]
	t.CreatedAt = t.UpdatedAt
	if exists {
		t.CreatedAt = old.CreatedAt
	}
	t.Config = bytes.Clone(t.Config)
	s.tenants.byID[t.ID] = t
	return !exists, nil
}

// Tenant implements store.TenantStore.
func (s *Store) Tenant(_ context.Context, id string) (store.Tenant, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()

	t, ok := s.tenants.byID[id]
	if !ok {
		return store.Tenant{}, store.ErrNotFound
	}
	t.Config = bytes.Clone(t.Config)
	return t, nil
}

// Tenants implements store.TenantStore.
func (s *Store) Tenants(_ context.Context) ([]store.Tenant, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()

	out := make([]store.Tenant, 0, len(s.tenants.byID))
	for _, t := range s.tenants.byID {
		t.Config = bytes.Clone(t.Config)
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b store.Tenant) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

// DeleteTenant implements store.TenantStore.
func (s *Store) DeleteTenant(_ context.Context, id string) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()

	if _, ok := s.tenants.byID[id]; !ok {
		return nil, store.ErrNotFound
	}
	for userID := range s.tenants.members[id] {
		s.tenants.leave(id, userID)
	}
	for h, inv := range s.tenants.invitations {
		if inv.Tenant == id {
			delete(s.tenants.invitations, h)
		}
	}
	s.roles.dropTenant(id)
	delete(s.tenants.byID, id)
	return s.endTenantSessions(func(sess *session) bool { return sess.Tenant == id }), nil
}

// endTenantSessions ends the live sessions that match (EndRevoked) and
// returns their handles, newest first. It looks at every session: the
// memory store is for tests and single processes. Called under mu.
func (s *Store) endTenantSessions(match func(*session) bool) []string {
	var doomed []*session
	for _, sess := range s.sessions {
		if sess.ended == "" && match(sess) {
			doomed = append(doomed, sess)
		}
	}
	slices.SortFunc(doomed, func(a, b *session) int { return newestSessionFirst(a.Session, b.Session) })
	handles := make([]string, 0, len(doomed))
	for _, sess := range doomed {
		sess.ended = store.EndRevoked
		handles = append(handles, sess.Handle)
	}
	return handles
}

// AddMember implements store.TenantStore.
func (s *Store) AddMember(_ context.Context, tenant, userID string, at time.Time) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()

	if err := s.tenantAndUser(tenant, userID); err != nil {
		return false, err
	}
	return s.tenants.join(tenant, userID, at), nil
}

// tenantAndUser returns ErrNotFound unless both the tenant and the user
// exist. Called under mu.
func (s *Store) tenantAndUser(tenant, userID string) error {
	if _, ok := s.tenants.byID[tenant]; !ok {
		return store.ErrNotFound
	}
	if _, ok := s.users[userID]; !ok {
		return store.ErrNotFound
	}
	return nil
}

// RemoveMember implements store.TenantStore.
func (s *Store) RemoveMember(_ context.Context, tenant, userID string) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()

	if !s.tenants.leave(tenant, userID) {
		return nil, store.ErrNotFound
	}
	s.roles.dropHolder(holder{tenant, userID})
	return s.endTenantSessions(func(sess *session) bool { return sess.UserID == userID && sess.Tenant == tenant }), nil
}

// Membership implements store.TenantStore.
func (s *Store) Membership(_ context.Context, tenant, userID string) (store.Member, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()

	joined, ok := s.tenants.members[tenant][userID]
	if !ok {
		return store.Member{}, store.ErrNotFound
	}
	return store.Member{Tenant: tenant, UserID: userID, JoinedAt: joined}, nil
}

// Members implements store.TenantStore. A member named by after who has
// left since ends the paging: there is no place left to resume from.
func (s *Store) Members(_ context.Context, tenant, after string, limit int) ([]store.Member, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()

	members := s.tenants.members[tenant]
	out := make([]store.Member, 0, len(members))
	for userID, joined := range members {
		out = append(out, store.Member{Tenant: tenant, UserID: userID, JoinedAt: joined})
	}
	// The order of the SQL stores, which keep milliseconds.
	order := func(a, b store.Member) int {
		return cmp.Or(cmp.Compare(a.JoinedAt.UnixMilli(), b.JoinedAt.UnixMilli()), cmp.Compare(a.UserID, b.UserID))
	}
	slices.SortFunc(out, order)
	if after != "" {
		joined, ok := members[after]
		if !ok {
			return []store.Member{}, nil
		}
		cursor := store.Member{UserID: after, JoinedAt: joined}
		out = slices.DeleteFunc(out, func(m store.Member) bool { return order(m, cursor) <= 0 })
	}
	if n := (store.UserQuery{Limit: limit}).PageSize(); len(out) > n {
		out = out[:n]
	}
	return slices.Clip(out), nil
}

// UserTenants implements store.TenantStore.
func (s *Store) UserTenants(_ context.Context, userID string) ([]string, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()

	out := make([]string, 0, len(s.tenants.userTenants[userID]))
	for tenant := range s.tenants.userTenants[userID] {
		out = append(out, tenant)
	}
	slices.Sort(out)
	return out, nil
}

// CreateInvitation implements store.TenantStore.
func (s *Store) CreateInvitation(_ context.Context, inv store.Invitation) error {
	s.mu.Lock()
	defer s.mu.Unlock()

	if _, ok := s.tenants.byID[inv.Tenant]; !ok {
		return store.ErrNotFound
	}
	if _, ok := s.tenants.invitations[inv.Hash]; ok {
		return store.ErrConflict
	}
	s.tenants.invitations[inv.Hash] = inv
	return nil
}

// Invitations implements store.TenantStore.
func (s *Store) Invitations(_ context.Context, tenant string, now time.Time) ([]store.Invitation, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()

	out := []store.Invitation{}
	for _, inv := range s.tenants.invitations {
		if inv.Tenant == tenant && live(inv.ExpiresAt, now) {
			out = append(out, inv)
		}
	}
	slices.SortFunc(out, func(a, b store.Invitation) int {
		return cmp.Or(cmp.Compare(a.CreatedAt.UnixMilli(), b.CreatedAt.UnixMilli()), bytes.Compare(a.Hash[:], b.Hash[:]))
	})
	return out, nil
}

// RevokeInvitations implements store.TenantStore.
func (s *Store) RevokeInvitations(_ context.Context, tenant, email string) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dropInvitations(tenant, email), nil
}

// dropInvitations deletes the invitations of tenant to email and returns
// how many there were. Called under mu.
func (s *Store) dropInvitations(tenant, email string) int {
	n := 0
	for h, inv := range s.tenants.invitations {
		if inv.Tenant == tenant && inv.Email == email {
			delete(s.tenants.invitations, h)
			n++
		}
	}
	return n
}

// AcceptInvitation implements store.TenantStore.
func (s *Store) AcceptInvitation(_ context.Context, hash store.TokenHash, userID string, now time.Time) (store.Invitation, error) {
	s.mu.Lock()
	defer s.mu.Unlock()

	inv, ok := s.tenants.invitations[hash]
	if !ok || !live(inv.ExpiresAt, now) {
		return store.Invitation{}, store.ErrNotFound
	}
	if err := s.tenantAndUser(inv.Tenant, userID); err != nil {
		return store.Invitation{}, err
	}
	s.tenants.join(inv.Tenant, userID, now)
	s.dropInvitations(inv.Tenant, inv.Email)
	return inv, nil
}

// deleteExpiredInvitations removes the invitations that have expired at
// now. Called under mu.
func (s *Store) deleteExpiredInvitations(now time.Time) {
	for h, inv := range s.tenants.invitations {
		if !live(inv.ExpiresAt, now) {
			delete(s.tenants.invitations, h)
		}
	}
}
