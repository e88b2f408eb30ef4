package memstore

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"

	"github.com/latchkit/auth/store"
)

var _ store.UserLister = (*Store)(nil)

// ListUsers implements store.UserLister. It sorts every matching user on
// each call: the memory store holds few users, and an index kept in order
// would cost every sign-up for the sake of an operator's page.
func (s *Store) ListUsers(_ context.Context, q store.UserQuery) (store.UserPage, error) {
	var afterMS int64
	var afterID string
	if q.After != "" {
		var err error
		if afterMS, afterID, err = store.ParseUserCursor(q.After); err != nil {
			return store.UserPage{}, err
		}
	}
	s.mu.RLock()
	users := s.matching(q)
	s.mu.RUnlock()

	// The order of the SQL stores: milliseconds, then the id's bytes.
	order := func(a, b store.User) int {
		return cmp.Or(cmp.Compare(a.TimeJoined.UnixMilli(), b.TimeJoined.UnixMilli()), strings.Compare(a.ID, b.ID))
	}
	if q.Newest {
		asc := order
		order = func(a, b store.User) int { return asc(b, a) }
	}
	slices.SortFunc(users, order)
	if q.After != "" {
		cursor := store.User{ID: afterID, TimeJoined: time.UnixMilli(afterMS)}
		users = slices.DeleteFunc(users, func(u store.User) bool { return order(u, cursor) <= 0 })
	}
	var page store.UserPage
	if n := q.PageSize(); len(users) > n {
		users = users[:n]
		page.Next = store.UserCursor(users[n-1])
	}
	page.Users = slices.Clip(users)
	return page, nil
}

// CountUsers implements store.UserLister.
func (s *Store) CountUsers(_ context.Context, q store.UserQuery) (int64, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return int64(len(s.matching(q))), nil
}

// matching returns the users that the filters of q match, in no order.
// Called under mu.
func (s *Store) matching(q store.UserQuery) []store.User {
	email := strings.ToLower(q.Email)
	var out []store.User
	for id, u := range s.users {
		if q.Email != "" && !s.hasLogin(id, func(l store.Login) bool {
			return strings.Contains(strings.ToLower(l.Email), email)
		}) {
			continue
		}
		if q.Provider != "" && !s.hasLogin(id, func(l store.Login) bool {
			return l.Method == store.MethodThirdParty && l.ThirdParty == q.Provider
		}) {
			continue
		}
		if q.Phone != "" && !s.hasLogin(id, func(l store.Login) bool {
			return l.Method == store.MethodPasswordless && !strings.Contains(l.Subject, "@") &&
				strings.Contains(l.Subject, q.Phone)
		}) {
			continue
		}
		if q.Tenant != "" && !s.inTenant(id, q.Tenant) {
			continue
		}
		out = append(out, u)
	}
	return out
}

// inTenant reports whether the user belongs to the tenant: for the public
// tenant, has a way to sign in there (a record of second factors, which
// every tenant's login shares, is none); for another, is a member. Called
// under mu.
func (s *Store) inTenant(userID, tenant string) bool {
	if tenant != store.PublicTenant {
		_, ok := s.tenants.members[tenant][userID]
		return ok
	}
	return s.hasLogin(userID, func(l store.Login) bool {
		return l.Tenant == "" && l.Method != store.MethodSecondFactors
	})
}

// hasLogin reports whether a login of the user matches. Called under mu.
func (s *Store) hasLogin(userID string, match func(store.Login) bool) bool {
	for _, k := range s.userLogins[userID] {
		if match(s.logins[k]) {
			return true
		}
	}
	return false
}
