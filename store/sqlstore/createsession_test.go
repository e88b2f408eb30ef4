package sqlstore_test

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/latchkit/auth/internal/sqltest"
	"github.com/latchkit/auth/store"
)

// TestCreateSessionOneStatement counts what CreateSession costs the
// database, in calls to its driver: one statement when it creates the
// session, and one read more when it refuses it for a passed epoch or an
// unknown user. Every refusal writes nothing.
func TestCreateSessionOneStatement(t *testing.T) {
	for _, tc := range countedBackends {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			st, count := tc.open(t)
			now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
			login := store.Login{LoginKey: store.EmailPasswordKey("u@example.com"), Email: "u@example.com", PasswordHash: "x", CreatedAt: now}
			if err := st.CreateUser(ctx, store.User{ID: "u", TimeJoined: now}, login); err != nil {
				t.Fatal(err)
			}
			session := func(handle, user string) store.Session {
				return store.Session{Handle: handle, UserID: user, CreatedAt: now, RefreshedAt: now, ExpiresAt: now.Add(time.Hour)}
			}
			tok := func(s string) store.TokenHash { return sha256.Sum256([]byte(s)) }
			for _, c := range []struct {
				what   string
				sess   store.Session
				hash   store.TokenHash
				epoch  int64
				want   error
				trips  int64
				before func()
			}{
				{what: "a session", sess: session("a", "u"), hash: tok("a"), want: nil, trips: 1},
				{what: "a duplicate handle", sess: session("a", "u"), hash: tok("other"), want: store.ErrConflict, trips: 1},
				{what: "an unknown user", sess: session("c", "nobody"), hash: tok("c"), want: store.ErrNotFound, trips: 2},
				{what: "a passed epoch", sess: session("d", "u"), hash: tok("d"), want: store.ErrSessionsEnded, trips: 2,
					before: func() {
						if _, err := st.RevokeUserSessions(ctx, "u"); err != nil {
							t.Fatal(err)
						}
					}},
				{what: "a session at the new epoch", sess: session("e", "u"), hash: tok("e"), epoch: 1, want: nil, trips: 1},
			} {
				if c.before != nil {
					c.before()
				}
				start := count.Load()
				err := st.CreateSession(ctx, c.sess, c.hash, c.epoch)
				trips := count.Load() - start
				if !errors.Is(err, c.want) || (c.want == nil) != (err == nil) {
					t.Fatalf("%s: CreateSession returned %v, want %v", c.what, err, c.want)
				}
				t.Logf("%s: %d round trips", c.what, trips)
				if trips != c.trips {
					t.Errorf("%s: %d round trips, want %d", c.what, trips, c.trips)
				}
				if c.want != nil && c.want != store.ErrConflict {
					if _, err := st.Session(ctx, c.sess.Handle, now); !errors.Is(err, store.ErrNotFound) {
						t.Errorf("%s: a refused session was written: Session returned %v", c.what, err)
					}
				}
			}
			if got, err := st.Session(ctx, "a", now); err == nil {
				t.Errorf("the session ended with its user's epoch is still live: %+v", got)
			}
			if got, err := st.Session(ctx, "e", now); err != nil || got.LoginID != "u" {
				t.Errorf("Session(e) = %+v, %v; want the session, with its user as its login", got, err)
			}
		})
	}
}

// TestCreateSessionAcrossRevocations races many sign-ins, each creating
// its session under the epoch it read, against revocations of every
// session of the user, for many rounds: whichever way each race goes, no
// session created under a passed epoch outlives the revocation, and every
// refusal is ErrSessionsEnded.
func TestCreateSessionAcrossRevocations(t *testing.T) {
	if testing.Short() {
		t.Skip("a stress test")
	}
	for _, b := range sqltest.Backends {
		t.Run(b.Name, func(t *testing.T) {
			ctx := t.Context()
			st := sqltest.NewStore(t, b)
			now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
			login := store.Login{LoginKey: store.EmailPasswordKey("u@example.com"), Email: "u@example.com", PasswordHash: "x", CreatedAt: now}
			if err := st.CreateUser(ctx, store.User{ID: "u", TimeJoined: now}, login); err != nil {
				t.Fatal(err)
			}
			const rounds, n = 40, 8
			for round := range rounds {
				read, err := st.Login(ctx, login.LoginKey)
				if err != nil {
					t.Fatal(err)
				}
				errs := make([]error, n)
				var revokeErr error
				var wg sync.WaitGroup
				for i := range n + 1 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						if i == n {
							_, revokeErr = st.RevokeUserSessions(ctx, "u")
							return
						}
						handle := fmt.Sprintf("r%d/s%d", round, i)
						errs[i] = st.CreateSession(ctx, store.Session{Handle: handle, UserID: "u", CreatedAt: now, RefreshedAt: now,
							ExpiresAt: now.Add(time.Hour)}, sha256.Sum256([]byte(handle)), read.SessionEpoch)
					}()
				}
				wg.Wait()
				if revokeErr != nil {
					t.Fatalf("round %d: RevokeUserSessions: %v", round, revokeErr)
				}
				for i, err := range errs {
					if err != nil && !errors.Is(err, store.ErrSessionsEnded) {
						t.Errorf("round %d, sign-in %d: CreateSession returned %v, want nil or ErrSessionsEnded", round, i, err)
					}
				}
				if live, err := st.UserSessions(ctx, "u", now); err != nil {
					t.Fatal(err)
				} else if len(live) != 0 {
					t.Fatalf("round %d: %d sessions created under a passed epoch outlived the revocation", round, len(live))
				}
			}
		})
	}
}
