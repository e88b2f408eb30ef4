package sqlstore_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/latchkit/auth/internal/sqltest"
	"github.com/latchkit/auth/store"
)

// TestListTenThousandUsers pages through 10,000 users, 100 a page, oldest
// and newest first, while other users sign up as fast as the store takes
// them, some joining in the very milliseconds of the users listed: each
// of the 10,000 is listed exactly once, and no user twice.
func TestListTenThousandUsers(t *testing.T) {
	const users = 10_000
	for _, be := range countedBackends {
		t.Run(be.name, func(t *testing.T) {
			db, _ := sqltest.Counted(t, be.driver, be.dsn(t))
			st := migrated(t, db, be.dialect)
			joined := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
			seedUsers(t, db, users, func(i int) string {
				return fmt.Sprintf("('tu%05d', %d)", i, joined+int64(i/3)) // three a millisecond
			})
			for _, newest := range []bool{false, true} {
				var stop atomic.Bool
				var wg sync.WaitGroup
				var signUps atomic.Int64
				for w := range 2 {
					wg.Go(func() {
						for i := 0; !stop.Load(); i++ {
							at := time.UnixMilli(joined + int64((i*7919)%(users/3))) // spread over the list
							u := store.User{ID: fmt.Sprintf("new-%t-%d-%d", newest, w, i), TimeJoined: at}
							email := u.ID + "@example.com"
							l := store.Login{LoginKey: store.EmailPasswordKey(email), Email: email, PasswordHash: "x", CreatedAt: at}
							if err := st.CreateUser(t.Context(), u, l); err != nil {
								t.Errorf("a sign-up while paging: %v", err)
								return
							}
							signUps.Add(1)
						}
					})
				}
				seen := map[string]int{}
				q := store.UserQuery{Newest: newest, Limit: 100}
				for pages := 0; ; pages++ {
					page, err := st.ListUsers(t.Context(), q)
					if err != nil {
						t.Fatalf("page %d: %v", pages, err)
					}
					for _, u := range page.Users {
						seen[u.ID]++
					}
					if page.Next == "" || pages > 2*users {
						break
					}
					q.After = page.Next
				}
				stop.Store(true)
				wg.Wait()
				missing, twice := 0, 0
				for i := range users {
					if seen[fmt.Sprintf("tu%05d", i)] != 1 {
						missing++
					}
				}
				for _, n := range seen {
					if n > 1 {
						twice++
					}
				}
				if missing > 0 || twice > 0 {
					t.Errorf("newest first %t: %d of the %d users not listed exactly once, %d listed twice", newest, missing, users, twice)
				}
				t.Logf("newest first %t: %d listed, %d signed up while paging", newest, len(seen), signUps.Load())
			}
		})
	}
}
