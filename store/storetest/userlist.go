package storetest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/latchkit/auth/store"
)

// userListTests run only for stores that implement store.UserLister.
var userListTests = []test{
	{"Paging", testUserListPaging},
	{"PagingEndsExactly", testUserListEndsExactly},
	{"ConcurrentSignUps", testUserListConcurrentSignUps},
	{"CursorOfDeletedUser", testUserListDeletedCursor},
	{"Filters", testUserListFilters},
	{"BadCursor", testUserListBadCursor},
	{"Limit", testUserListLimit},
}

func lister(t *testing.T, s store.Store) store.UserLister {
	t.Helper()
	l, ok := s.(store.UserLister)
	if !ok {
		t.Fatal("newStore returned a store that is not a UserLister, unlike the first one")
	}
	return l
}

// mustCreateUserAt creates the user id, with an email and password login,
// who joined at joined.
func mustCreateUserAt(t *testing.T, s store.Store, id string, joined time.Time) user {
	t.Helper()
	u := newUser(id)
	u.TimeJoined = joined
	if err := u.create(t.Context(), s); err != nil {
		t.Fatalf("CreateUser: a user with a new id and login key must be added; got error %v", err)
	}
	return u
}

// byJoined orders users as ListUsers lists them oldest first: by
// TimeJoined in milliseconds, then by ID. The suite's ids sort alike
// byte by byte and in any database collation.
func byJoined(a, b store.User) int {
	return cmp.Or(cmp.Compare(a.TimeJoined.UnixMilli(), b.TimeJoined.UnixMilli()), strings.Compare(a.ID, b.ID))
}

// listAll pages through the users q matches, from q.After, and returns
// them with the number of pages, failing on an error or a page larger
// than asked.
func listAll(t *testing.T, l store.UserLister, q store.UserQuery) ([]store.User, int) {
	t.Helper()
	var out []store.User
	for pages := 1; ; pages++ {
		page, err := l.ListUsers(t.Context(), q)
		if err != nil {
			t.Fatalf("ListUsers(%+v): a query with a cursor from the page before must succeed; got error %v", q, err)
		}
		if len(page.Users) > q.PageSize() {
			t.Fatalf("ListUsers: a page must hold at most Limit users; got %d for Limit %d", len(page.Users), q.Limit)
		}
		out = append(out, page.Users...)
		if page.Next == "" {
			return out, pages
		}
		if len(page.Users) == 0 || pages > 10000 {
			t.Fatalf("ListUsers: a page with a Next must hold users; got %d after %d pages", len(page.Users), pages)
		}
		q.After = page.Next
	}
}

func ids(users []store.User) []string {
	out := make([]string, len(users))
	for i, u := range users {
		out[i] = u.ID
	}
	return out
}

// testUserListPaging: 25 users, four at a time joined in the same
// millisecond (some a few microseconds apart, which SQL stores do not
// keep), created out of order, are listed seven a page oldest and newest
// first, each once, by join time and then id.
func testUserListPaging(t *testing.T, s store.Store) {
	l := lister(t, s)
	var want []store.User
	for k := range 25 {
		i := k * 7 % 25 // creation order is not id order
		joined := at(time.Duration(i/4)*time.Second + time.Duration(i%4)*100*time.Microsecond)
		if i%4 == 3 {
			joined = at(time.Duration(i/4) * time.Second) // exactly the same instant
		}
		want = append(want, mustCreateUserAt(t, s, fmt.Sprintf("lu%02d", 24-i), joined).User)
	}
	slices.SortFunc(want, byJoined)
	for _, newest := range []bool{false, true} {
		w := slices.Clone(want)
		if newest {
			slices.Reverse(w)
		}
		got, pages := listAll(t, l, store.UserQuery{Newest: newest, Limit: 7})
		if !slices.Equal(ids(got), ids(w)) {
			t.Errorf("ListUsers (Newest %v, Limit 7): every user must be listed once, by TimeJoined in milliseconds and then ID; got %q, want %q",
				newest, ids(got), ids(w))
			continue
		}
		if pages != 4 {
			t.Errorf("ListUsers (Newest %v, Limit 7): 25 users must take 4 pages; took %d", newest, pages)
		}
		for i := range got {
			if d := userDiff(got[i], w[i]); d != "" || got[i].SessionEpoch != 0 {
				t.Errorf("ListUsers: a user must be listed as created: %s (SessionEpoch %d)", d, got[i].SessionEpoch)
			}
		}
	}
}

// testUserListEndsExactly: when the last page is full, it has no Next.
func testUserListEndsExactly(t *testing.T, s store.Store) {
	l := lister(t, s)
	for i := range 10 {
		mustCreateUserAt(t, s, fmt.Sprintf("eu%02d", i), at(time.Duration(i)*time.Second))
	}
	for _, newest := range []bool{false, true} {
		got, pages := listAll(t, l, store.UserQuery{Newest: newest, Limit: 5})
		if len(got) != 10 || pages != 2 {
			t.Errorf("ListUsers (Newest %v, Limit 5): 10 users must take 2 pages, the last with no Next; got %d users in %d pages",
				newest, len(got), pages)
		}
	}
}

// testUserListConcurrentSignUps: while users sign up, a paging lists
// every user who existed before it began exactly once, and no user twice,
// oldest and newest first.
func testUserListConcurrentSignUps(t *testing.T, s store.Store) {
	l := lister(t, s)
	var before []string
	for i := range 30 {
		before = append(before, mustCreateUserAt(t, s, fmt.Sprintf("cu%02d", i), at(time.Duration(i%10)*time.Millisecond)).User.ID)
	}
	for round, newest := range []bool{false, true} {
		ctx, cancel := context.WithCancel(t.Context())
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for g := range 3 {
			wg.Go(func() { signUpWhilePaging(ctx, s, round, g, errs) })
		}
		seen := pageDuringSignUps(t, s, l, round, newest)
		cancel()
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		wantListedOnce(t, newest, before, seen)
	}
}

// signUpWhilePaging creates users of goroutine g in round, newer than
// every user before the paging, until ctx ends.
func signUpWhilePaging(ctx context.Context, s store.Store, round, g int, errs chan<- error) {
	for i := 0; ctx.Err() == nil && i < 50; i++ {
		u := newUser(fmt.Sprintf("new-%d-%d-%03d", round, g, i))
		u.TimeJoined = at(time.Duration(3*round+1)*time.Hour + time.Duration(g*100+i)*time.Millisecond) // now
		if err := u.create(ctx, s); err != nil && ctx.Err() == nil {
			errs <- fmt.Errorf("CreateUser during a paging: %w", err)
			return
		}
	}
}

// pageDuringSignUps pages through l three users at a time, signing one
// more user up between pages, and counts how often each user was listed.
func pageDuringSignUps(t *testing.T, s store.Store, l store.UserLister, round int, newest bool) map[string]int {
	seen := map[string]int{}
	q := store.UserQuery{Newest: newest, Limit: 3}
	for pages := 0; ; pages++ {
		page, err := l.ListUsers(t.Context(), q)
		if err != nil {
			t.Errorf("ListUsers during sign-ups: %v", err)
			return seen
		}
		for _, u := range page.Users {
			seen[u.ID]++
		}
		// One more sign-up between pages, whatever the scheduler does
		// with the others.
		u := newUser(fmt.Sprintf("new-%d-pager-%03d", round, pages))
		u.TimeJoined = at(time.Duration(3*round+2)*time.Hour + time.Duration(pages)*time.Millisecond)
		if err := u.create(t.Context(), s); err != nil {
			t.Errorf("CreateUser between pages: %v", err)
		}
		if page.Next == "" || pages > 1000 {
			return seen
		}
		q.After = page.Next
	}
}

// wantListedOnce checks a paging's counts: each user of before listed
// once, and no user twice.
func wantListedOnce(t *testing.T, newest bool, before []string, seen map[string]int) {
	t.Helper()
	for _, id := range before {
		if seen[id] != 1 {
			t.Errorf("ListUsers (Newest %v) while users sign up: a user who existed throughout must be listed exactly once; %s was listed %d times",
				newest, id, seen[id])
		}
	}
	for id, n := range seen {
		if n > 1 {
			t.Errorf("ListUsers (Newest %v) while users sign up: no user may be listed twice; %s was listed %d times", newest, id, n)
		}
	}
}

// testUserListDeletedCursor: a cursor stays good when the user it ends
// after is deleted.
func testUserListDeletedCursor(t *testing.T, s store.Store) {
	ctx := t.Context()
	l := lister(t, s)
	for i := range 6 {
		mustCreateUserAt(t, s, fmt.Sprintf("du%d", i), at(time.Duration(i)*time.Second))
	}
	page, err := l.ListUsers(ctx, store.UserQuery{Limit: 3})
	if err != nil || len(page.Users) != 3 || page.Next == "" {
		t.Fatalf("ListUsers (Limit 3) of 6 users: %d users, Next %q, error %v; want 3 and a Next", len(page.Users), page.Next, err)
	}
	if _, err := s.DeleteUser(ctx, "du2"); err != nil {
		t.Fatalf("DeleteUser: %v", err)
	}
	got, _ := listAll(t, l, store.UserQuery{After: page.Next, Limit: 3})
	if want := []string{"du3", "du4", "du5"}; !slices.Equal(ids(got), want) {
		t.Errorf("ListUsers: a cursor ending after a deleted user must resume after it; got %q, want %q", ids(got), want)
	}
}

// testUserListFilters: the email, provider and phone filters, alone and
// together, in ListUsers and CountUsers.
func testUserListFilters(t *testing.T, s store.Store) {
	ctx := t.Context()
	l := lister(t, s)
	logins := []struct {
		id string
		l  store.Login
	}{
		{"fa", newUser("fa").withEmail("alice.smith@example.com").Login},
		{"fb", thirdPartyLogin("fb", "google", "g-1", "bob@corp.example")},
		{"fc", thirdPartyLogin("fc", "github", "h-1", "carol@example.com")},
		{"fd", store.Login{LoginKey: store.PasswordlessKey("+15551234567"), ID: "fd", UserID: "fd", CreatedAt: base}},
		{"fe", store.Login{LoginKey: store.PasswordlessKey("dave5551@example.com"), ID: "fe", UserID: "fe",
			Email: "dave5551@example.com", CreatedAt: base}},
		{"ff", newUser("ff").withEmail("foo_s@example.com").Login},
		{"fg", newUser("fg").withEmail("fooxs@example.com").Login},
	}
	for i, x := range logins {
		if err := s.CreateUser(ctx, store.User{ID: x.id, TimeJoined: at(time.Duration(i) * time.Second)}, x.l); err != nil {
			t.Fatalf("CreateUser %s: %v", x.id, err)
		}
	}
	// A second login: bob also signs in with a phone.
	phone := store.Login{LoginKey: store.PasswordlessKey("+449998887766"), ID: "fb-phone", UserID: "fb", CreatedAt: at(time.Minute)}
	if err := s.LinkLogin(ctx, phone); err != nil {
		t.Fatalf("LinkLogin: %v", err)
	}
	for _, c := range []struct {
		q    store.UserQuery
		want []string
	}{
		{store.UserQuery{}, []string{"fa", "fb", "fc", "fd", "fe", "ff", "fg"}},
		{store.UserQuery{Email: "SMITH@Example"}, []string{"fa"}},
		{store.UserQuery{Email: "example.com"}, []string{"fa", "fc", "fe", "ff", "fg"}},
		{store.UserQuery{Email: "o_s"}, []string{"ff"}}, // _ is no wildcard
		{store.UserQuery{Email: "%"}, nil},
		{store.UserQuery{Provider: "google"}, []string{"fb"}},
		{store.UserQuery{Provider: "github"}, []string{"fc"}},
		{store.UserQuery{Provider: "gitlab"}, nil},
		{store.UserQuery{Provider: "goog"}, nil},         // a provider id matches exactly
		{store.UserQuery{Phone: "5551"}, []string{"fd"}}, // not a passwordless email
		{store.UserQuery{Phone: "+44"}, []string{"fb"}},
		{store.UserQuery{Provider: "google", Phone: "+44"}, []string{"fb"}},
		{store.UserQuery{Provider: "github", Phone: "+44"}, nil},
		{store.UserQuery{Provider: "google", Email: "corp"}, []string{"fb"}},
		{store.UserQuery{Provider: "google", Email: "example.com"}, nil},
	} {
		for _, newest := range []bool{false, true} {
			q := c.q
			q.Newest, q.Limit = newest, 2
			got, _ := listAll(t, l, q)
			want := slices.Clone(c.want)
			if newest {
				slices.Reverse(want)
			}
			if !slices.Equal(ids(got), want) {
				t.Errorf("ListUsers(Email %q, Provider %q, Phone %q, Newest %v): the users with logins that match every filter, each once, in order; got %q, want %q",
					q.Email, q.Provider, q.Phone, newest, ids(got), want)
			}
		}
		q := c.q
		q.Limit, q.After = 1, "not even a cursor" // CountUsers ignores paging
		n, err := l.CountUsers(ctx, q)
		if err != nil || n != int64(len(c.want)) {
			t.Errorf("CountUsers(Email %q, Provider %q, Phone %q): the number of users the filters match; got %d, %v, want %d",
				q.Email, q.Provider, q.Phone, n, err, len(c.want))
		}
	}
}

// testUserListBadCursor: a cursor ListUsers did not make is refused with
// ErrBadCursor, not a panic.
func testUserListBadCursor(t *testing.T, s store.Store) {
	l := lister(t, s)
	mustCreateUser(t, s, "u1")
	for _, cursor := range []string{"not a cursor!", "AAAA", "AAAAAAAAAAA", "AAAAAAAAAAA=", "%%%", strings.Repeat("z", 5000) + "*"} {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("ListUsers(After %.20q): a malformed cursor must give ErrBadCursor, not panic: %v", cursor, r)
				}
			}()
			page, err := l.ListUsers(t.Context(), store.UserQuery{After: cursor})
			if !errors.Is(err, store.ErrBadCursor) || len(page.Users) != 0 {
				t.Errorf("ListUsers(After %.20q): a malformed cursor must give ErrBadCursor and no users; got %d users, error %v",
					cursor, len(page.Users), err)
			}
		}()
	}
}

// testUserListLimit: Limit is capped, and a Limit at or below zero is the
// default page size.
func testUserListLimit(t *testing.T, s store.Store) {
	ctx := t.Context()
	l := lister(t, s)
	for _, c := range []struct{ limit, want int }{
		{0, store.DefaultUserPage}, {-1, store.DefaultUserPage}, {1, 1}, {7, 7},
		{store.MaxUserPage, store.MaxUserPage}, {store.MaxUserPage + 1, store.MaxUserPage}, {1 << 40, store.MaxUserPage},
	} {
		if got := (store.UserQuery{Limit: c.limit}).PageSize(); got != c.want {
			t.Errorf("UserQuery{Limit: %d}.PageSize() = %d, want %d", c.limit, got, c.want)
		}
	}
	for i := range store.DefaultUserPage + 1 {
		mustCreateUserAt(t, s, fmt.Sprintf("mu%03d", i), at(time.Duration(i)*time.Millisecond))
	}
	for _, c := range []struct{ limit, want int }{{0, store.DefaultUserPage}, {-3, store.DefaultUserPage}, {1, 1}, {1 << 40, store.DefaultUserPage + 1}} {
		page, err := l.ListUsers(ctx, store.UserQuery{Limit: c.limit})
		if err != nil || len(page.Users) != c.want || (page.Next == "") != (c.want > store.DefaultUserPage) {
			t.Errorf("ListUsers(Limit %d) of %d users: %d users, Next %q, error %v; want %d users, and a Next unless they are all",
				c.limit, store.DefaultUserPage+1, len(page.Users), page.Next, err, c.want)
		}
	}
}
