package memstore_test

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/latchkit/auth/store"
	"github.com/latchkit/auth/store/memstore"
	"github.com/latchkit/auth/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(*testing.T) store.Store { return memstore.New() })
}

// BenchmarkRevokeLongHistory revokes a session that has refreshed n times:
// the revocation holds the store's one lock, so its cost is every other
// caller's wait. It should not grow with n.
func BenchmarkRevokeLongHistory(b *testing.B) {
	for _, n := range []int{10, 100_000} {
		b.Run(fmt.Sprintf("refreshes=%d", n), func(b *testing.B) {
			ctx := context.Background()
			now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
			tok := func(i int) store.TokenHash { return sha256.Sum256(binary.AppendVarint(nil, int64(i))) }
			s := memstore.New()
			login := store.Login{LoginKey: store.EmailPasswordKey("u@example.com"), Email: "u@example.com", PasswordHash: "x"}
			if err := s.CreateUser(ctx, store.User{ID: "u"}, login); err != nil {
				b.Fatal(err)
			}
			next := 0
			for b.Loop() {
				b.StopTimer()
				sess := store.Session{Handle: fmt.Sprint(next), UserID: "u", CreatedAt: now, RefreshedAt: now, ExpiresAt: now.Add(time.Hour)}
				if err := s.CreateSession(ctx, sess, tok(next), 0); err != nil {
					b.Fatal(err)
				}
				for range n {
					r := store.Rotation{Presented: tok(next), Next: tok(next + 1), Now: now, ExpiresAt: now.Add(time.Hour)}
					if _, err := s.RotateRefreshToken(ctx, r); err != nil {
						b.Fatal(err)
					}
					next++
				}
				next++
				b.StartTimer()
				if err := s.RevokeSession(ctx, sess.Handle); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
