package sqlstore_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/latchkit/auth/internal/sqltest"
	"github.com/latchkit/auth/store"
	"github.com/latchkit/auth/store/sqlstore"
)

// waitQueued waits until n writes wait for SQLite's writer.
func waitQueued(t *testing.T, st *sqlstore.Store, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for st.QueuedWrites() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d writes queued, want %d", st.QueuedWrites(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

func signingKey(id string) store.SigningKey {
	now := time.Now().UTC().Truncate(time.Millisecond)
	return store.SigningKey{ID: id, Algorithm: "HS256", Material: []byte("key " + id),
		CreatedAt: now, SignUntil: now.Add(time.Hour), VerifyUntil: now.Add(2 * time.Hour)}
}

// Writes that queued while another held SQLite's writer commit together,
// and each is answered for itself: one that fails (a session whose handle
// is taken) changes nothing, and the others commit.
func TestQueuedWritesCommitTogether(t *testing.T) {
	st, _ := countedBackends[0].open(t) // SQLite, on a file
	ctx := t.Context()
	now := time.Now().UTC().Truncate(time.Millisecond)
	u := store.User{ID: "u1", TimeJoined: now}
	first := store.Login{LoginKey: store.EmailPasswordKey("u1@example.com"), Email: "u1@example.com",
		PasswordHash: "$argon2id$v=19$m=64,t=1,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA", CreatedAt: now}
	if err := st.CreateUser(ctx, u, first); err != nil {
		t.Fatal(err)
	}
	release := st.HoldWrites()
	handles := []string{"s1", "s1", "s2", "s3", "s2"}
	errs := make([]error, len(handles))
	var wg sync.WaitGroup
	for i, h := range handles {
		sess := store.Session{Handle: h, UserID: "u1", CreatedAt: now, RefreshedAt: now, ExpiresAt: now.Add(time.Hour)}
		refresh := sha256.Sum256([]byte{byte(i)})
		wg.Go(func() { errs[i] = st.CreateSession(ctx, sess, refresh, 0) })
		waitQueued(t, st, i+1) // in this order
	}
	release()
	wg.Wait()
	for i, want := range []error{nil, store.ErrConflict, nil, nil, store.ErrConflict} {
		if !errors.Is(errs[i], want) {
			t.Errorf("write %d, session %s: error %v, want %v", i+1, handles[i], errs[i], want)
		}
	}
	sessions, err := st.UserSessions(ctx, "u1", now)
	if err != nil || len(sessions) != 3 {
		t.Fatalf("UserSessions: %v, %v; want s1, s2 and s3 committed", sessions, err)
	}
	for i, h := range []string{"s1", "s2", "s3"} {
		first := []int{0, 2, 3}[i]
		if _, err := st.RotateRefreshToken(ctx, store.Rotation{Handle: h, Presented: sha256.Sum256([]byte{byte(first)}),
			Next: sha256.Sum256([]byte{byte(10 + i)}), Now: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
			t.Errorf("session %s: the refresh token of its first write does not rotate: %v", h, err)
		}
	}
}

// A write whose request ends while it waits for its turn is answered at
// once with the request's error, and never written.
func TestQueuedWriteCancelled(t *testing.T) {
	st, _ := countedBackends[0].open(t) // SQLite, on a file
	release := st.HoldWrites()
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() { errc <- st.AddSigningKey(ctx, signingKey("k1")) }()
	waitQueued(t, st, 1)
	cancel()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("a cancelled write: error %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a cancelled write waited for the writer")
	}
	release()
	if err := st.AddSigningKey(t.Context(), signingKey("k2")); err != nil {
		t.Fatal(err)
	}
	keys, err := st.SigningKeys(t.Context(), time.Now())
	if err != nil || len(keys) != 1 || keys[0].ID != "k2" {
		t.Errorf("SigningKeys: %v, %v; want k2 alone", keys, err)
	}
}

// When a savepoint of the queued writes cannot be released or rolled back,
// with the transaction still open, nothing of it commits and every write
// is answered with an error: none is reported failed yet committed. The
// store writes again afterwards, so the transaction did end.
func TestQueuedWritesSavepointFails(t *testing.T) {
	injected := errors.New("injected failure")
	for _, tc := range []struct {
		name string
		// fail fails the statements the case names, by their text and
		// their turn among those of that text.
		fail func(q string, turn int) bool
	}{
		{"release", func(q string, turn int) bool {
			return q == "RELEASE queued_write" && turn == 2
		}},
		{"rollback to", func(q string, turn int) bool {
			return strings.HasPrefix(q, "INSERT INTO auth_signing_keys") && turn == 2 ||
				q == "ROLLBACK TO queued_write" && turn == 1
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var (
				mu    sync.Mutex
				turns = map[string]int{}
				armed bool
			)
			db := sqltest.Failing(t, "sqlite", sqltest.SQLiteFileDSN(t), func(q string) error {
				mu.Lock()
				defer mu.Unlock()
				if !armed {
					return nil
				}
				turns[q]++
				if tc.fail(q, turns[q]) {
					return injected
				}
				return nil
			})
			st := migrated(t, db, sqlstore.SQLite)
			mu.Lock()
			armed = true
			mu.Unlock()

			release := st.HoldWrites()
			ids := []string{"k1", "k2", "k3"}
			errs := make([]error, len(ids))
			var wg sync.WaitGroup
			for i, id := range ids {
				wg.Go(func() { errs[i] = st.AddSigningKey(t.Context(), signingKey(id)) })
				waitQueued(t, st, i+1) // in this order
			}
			release()
			wg.Wait()
			for i, err := range errs {
				if !errors.Is(err, injected) {
					t.Errorf("write %d, key %s: error %v, want the injected failure: its batch did not commit", i+1, ids[i], err)
				}
			}
			mu.Lock()
			armed = false
			mu.Unlock()
			keys, err := st.SigningKeys(t.Context(), time.Now())
			if err != nil || len(keys) != 0 {
				t.Errorf("SigningKeys: %v, %v; want none committed", keys, err)
			}
			if err := st.AddSigningKey(t.Context(), signingKey("k4")); err != nil {
				t.Errorf("a write after the failed batch: %v", err)
			}
		})
	}
}
