package sqlstore_test

import (
	"crypto/sha256"
	"fmt"
	"testing"
	"time"

	"github.com/latchkit/auth/internal/sqltest"
	"github.com/latchkit/auth/store"
	"github.com/latchkit/auth/store/sqlstore"
)

// TestRowsPerSession refreshes one session 1,000 times and counts the rows
// the store holds, reading the tables as an operator would: one session
// row and nothing else, whatever the number of refreshes. (The design
// before kept a row per refresh token until the session expired: 1,001.)
func TestRowsPerSession(t *testing.T) {
	const refreshes = 1000
	for _, b := range sqltest.Backends {
		t.Run(b.Name, func(t *testing.T) {
			ctx := t.Context()
			db := b.Open(t)
			st := migrated(t, db, b.Dialect)
			now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
			tok := oneSession(t, st, now)
			count := func(table string) int {
				var n int
				if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+table).Scan(&n); err != nil {
					t.Fatal(err)
				}
				return n
			}
			for i := range refreshes {
				now = now.Add(time.Second)
				if _, err := st.RotateRefreshToken(ctx, store.Rotation{Handle: "s", Generation: int64(i), Presented: tok(i),
					Next: tok(i + 1), NextKey: "k", Now: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
					t.Fatalf("refresh %d: %v", i+1, err)
				}
				if i == 0 || i == refreshes-1 {
					if s, r := count("auth_sessions"), count("auth_refresh_tokens"); s != 1 || r != 0 {
						t.Fatalf("after %d refreshes: %d session rows and %d refresh token rows, want 1 and 0", i+1, s, r)
					}
				}
			}
			if got, err := st.Session(ctx, "s", now); err != nil || got.Generation != refreshes {
				t.Fatalf("the session after %d refreshes: %+v, %v", refreshes, got, err)
			}
			if b.Dialect == sqlstore.Postgres {
				var sessions, tokens int64
				if err := db.QueryRowContext(ctx, `SELECT pg_total_relation_size('auth_sessions'),
					pg_total_relation_size('auth_refresh_tokens')`).Scan(&sessions, &tokens); err != nil {
					t.Fatal(err)
				}
				t.Logf("after %d refreshes: auth_sessions %d bytes, auth_refresh_tokens %d bytes (before vacuum)", refreshes, sessions, tokens)
			}
		})
	}
}

// oneSession gives st a user "u" with a session "s", started at now, and
// returns the hash of the session's refresh token of each generation.
func oneSession(t *testing.T, st store.Store, now time.Time) func(gen int) store.TokenHash {
	t.Helper()
	ctx := t.Context()
	login := store.Login{LoginKey: store.EmailPasswordKey("u@example.com"), Email: "u@example.com", PasswordHash: "x", CreatedAt: now}
	if err := st.CreateUser(ctx, store.User{ID: "u", TimeJoined: now}, login); err != nil {
		t.Fatal(err)
	}
	tok := func(gen int) store.TokenHash { return sha256.Sum256(fmt.Appendf(nil, "s/%d", gen)) }
	if err := st.CreateSession(ctx, store.Session{Handle: "s", UserID: "u", CreatedAt: now, RefreshedAt: now,
		ExpiresAt: now.Add(time.Hour)}, tok(0), 0); err != nil {
		t.Fatal(err)
	}
	return tok
}
