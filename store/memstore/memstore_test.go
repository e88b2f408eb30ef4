package memstore_test

import (
	"slices"
	"testing"
	"time"

	"github.com/latchkit/auth/store"
	"github.com/latchkit/auth/store/memstore"
	"github.com/latchkit/auth/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(*testing.T) store.Store { return memstore.New() })
}

// TestRotationReadsRoles: the rotation of a current token that asks for
// roles always reads them, which the conformance suite leaves optional.
func TestRotationReadsRoles(t *testing.T) {
	ctx := t.Context()
	s := memstore.New()
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	login := store.Login{LoginKey: store.EmailPasswordKey("u@example.com"), Email: "u@example.com", PasswordHash: "x", CreatedAt: now}
	if err := s.CreateUser(ctx, store.User{ID: "u", TimeJoined: now}, login); err != nil {
		t.Fatal(err)
	}
	tok := func(gen byte) store.TokenHash { return store.TokenHash{gen} }
	if err := s.CreateSession(ctx, store.Session{Handle: "s", UserID: "u", CreatedAt: now, RefreshedAt: now,
		ExpiresAt: now.Add(time.Hour)}, tok(0), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateRole(ctx, "admin", []string{"p1", "p2"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GiveRole(ctx, store.PublicTenant, "u", "admin"); err != nil {
		t.Fatal(err)
	}
	for gen, tenant := range []string{store.PublicTenant, "other"} {
		got, err := s.RotateRefreshToken(ctx, store.Rotation{Handle: "s", Generation: int64(gen), Presented: tok(byte(gen)),
			Next: tok(byte(gen + 1)), NextKey: "k", Now: now, ExpiresAt: now.Add(time.Hour), RolesOf: tenant})
		if err != nil {
			t.Fatal(err)
		}
		roles, permissions, _ := s.UserRoles(ctx, tenant, "u")
		if !got.RolesRead || got.Roles == nil || got.Permissions == nil ||
			!slices.Equal(got.Roles, roles) || !slices.Equal(got.Permissions, permissions) {
			t.Errorf("RolesOf %q: RolesRead %v, %#v and %#v; UserRoles returns %#v and %#v",
				tenant, got.RolesRead, got.Roles, got.Permissions, roles, permissions)
		}
	}
}
