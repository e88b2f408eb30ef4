package auth_test

import (
	"errors"
	"testing"
	"time"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/store"
	"github.com/latchkit/auth/store/memstore"
)

// ListUsers pages through every user once with their login methods,
// oldest first, past a user deleted between pages; CountUsers counts by
// the same filters; a made-up cursor is store.ErrBadCursor, and a Store
// that cannot list says so.
func TestListUsers(t *testing.T) {
	s := authtest.NewServer(t, auth.Config{})
	var ids []string
	for range 5 {
		_, u := s.SignedIn(authtest.Header)
		ids = append(ids, u.ID)
		s.Clock.Advance(time.Second) // the server's clock stands still
	}
	ctx := t.Context()
	var got []string
	q := store.UserQuery{Limit: 2}
	for pages := 0; ; pages++ {
		page, err := s.Auth.ListUsers(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range page.Users {
			if len(u.LoginMethods) != 1 || u.LoginMethods[0].Method != store.MethodEmailPassword || u.Email == "" {
				t.Errorf("user %s listed as %+v, want their password login", u.ID, u)
			}
			got = append(got, u.ID)
		}
		if pages == 0 {
			// Gone before the page that would list it.
			if err := s.Auth.DeleteUser(ctx, ids[3]); err != nil {
				t.Fatal(err)
			}
		}
		if page.Next == "" {
			break
		}
		q.After = page.Next
	}
	want := []string{ids[0], ids[1], ids[2], ids[4]}
	if len(got) != len(want) {
		t.Fatalf("listed %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("listed %v, want %v (oldest first)", got, want)
			break
		}
	}
	if n, err := s.Auth.CountUsers(ctx, store.UserQuery{Email: "@example.com"}); err != nil || n != 4 {
		t.Errorf("CountUsers by email = %d, %v; want 4", n, err)
	}
	if _, err := s.Auth.ListUsers(ctx, store.UserQuery{After: "not a cursor"}); !errors.Is(err, store.ErrBadCursor) {
		t.Errorf("ListUsers with a made-up cursor: %v, want store.ErrBadCursor", err)
	}

	plain := authtest.NewServer(t, auth.Config{Store: struct{ store.Store }{memstore.New()}})
	if _, err := plain.Auth.ListUsers(ctx, store.UserQuery{}); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("ListUsers with a Store that cannot list: %v, want errors.ErrUnsupported", err)
	}
	if _, err := plain.Auth.CountUsers(ctx, store.UserQuery{}); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("CountUsers with a Store that cannot list: %v, want errors.ErrUnsupported", err)
	}
}
