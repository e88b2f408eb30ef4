package sqlstore_test

import (
	"slices"
	"testing"
	"time"

	"github.com/latchkit/auth/store"
)

// TestRefreshRoundTrips counts what a refresh of a current token costs
// the database, in calls to its driver: on PostgreSQL and SQLite one
// statement, on MySQL the update and a read of the session (it cannot
// return what it updates). The other outcomes are a transaction; their
// cost is logged.
func TestRefreshRoundTrips(t *testing.T) {
	for _, tc := range countedBackends {
		// MySQL cannot return what it updates: it reads the session after.
		want := map[string]float64{"sqlite": 1, "postgres": 1, "mysql": 2}[tc.name]
		t.Run(tc.name, func(t *testing.T) {
			const refreshes = 20
			ctx := t.Context()
			st, count := tc.open(t)
			now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
			tok := oneSession(t, st, now)
			rotation := func(gen int, now time.Time) store.Rotation {
				// The allowance the library sets by default.
				return store.Rotation{Handle: "s", Generation: int64(gen), Presented: tok(gen), Next: tok(gen + 1), NextKey: "k",
					Now: now, ExpiresAt: now.Add(time.Hour), ReuseWindow: 10 * time.Second, Burst: 100, Every: time.Second}
			}
			start := count.Load()
			for i := range refreshes {
				now = now.Add(time.Second)
				if _, err := st.RotateRefreshToken(ctx, rotation(i, now)); err != nil {
					t.Fatalf("refresh %d: %v", i+1, err)
				}
			}
			if got := float64(count.Load()-start) / refreshes; got != want {
				t.Errorf("%.2f round trips per refresh of a current token, want %v", got, want)
			}
			// The rest, for the record.
			for _, o := range []struct {
				what string
				gen  int
				want func(store.Rotated, error) bool
			}{
				{"a Repeat", refreshes - 1, func(r store.Rotated, err error) bool { return err == nil && r.Repeat }},
				{"an unknown token", refreshes + 5, func(_ store.Rotated, err error) bool { return err != nil }},
				{"theft", 0, func(r store.Rotated, _ error) bool { return r.Reuse == store.ReuseStale }},
				{"an ended session", refreshes, func(_ store.Rotated, err error) bool { return err != nil }},
			} {
				start := count.Load()
				if got, err := st.RotateRefreshToken(ctx, rotation(o.gen, now)); !o.want(got, err) {
					t.Fatalf("%s: %+v, %v", o.what, got, err)
				}
				t.Logf("%s: %d round trips", o.what, count.Load()-start)
			}
		})
	}
}

// TestRefreshRolesRoundTrips: a refresh of a current token that asks for
// the user's roles (RolesOf) reads them in the statement that returns the
// session, so it costs no more round trips than one that does not, and
// reports them read, as UserRoles returns them.
func TestRefreshRolesRoundTrips(t *testing.T) {
	for _, tc := range countedBackends {
		want := map[string]float64{"sqlite": 1, "postgres": 1, "mysql": 2}[tc.name]
		t.Run(tc.name, func(t *testing.T) {
			const refreshes = 20
			ctx := t.Context()
			st, count := tc.open(t)
			now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
			tok := oneSession(t, st, now)
			for _, role := range []struct {
				name        string
				permissions []string
			}{{"admin", []string{"p1", "p2"}}, {"editor", []string{"p2", "p3"}}, {"viewer", nil}} {
				if _, err := st.CreateRole(ctx, role.name, role.permissions); err != nil {
					t.Fatal(err)
				}
			}
			for _, g := range [][2]string{{store.PublicTenant, "editor"}, {store.PublicTenant, "viewer"},
				{store.PublicTenant, "admin"}, {"t2", "admin"}} {
				if _, err := st.GiveRole(ctx, g[0], "u", g[1]); err != nil {
					t.Fatal(err)
				}
			}
			rotation := func(gen int, now time.Time, tenant string) store.Rotation {
				return store.Rotation{Handle: "s", Generation: int64(gen), Presented: tok(gen), Next: tok(gen + 1), NextKey: "k",
					Now: now, ExpiresAt: now.Add(time.Hour), ReuseWindow: 10 * time.Second, Burst: 100, Every: time.Second,
					RolesOf: tenant}
			}
			check := func(got store.Rotated, tenant string) {
				t.Helper()
				if !got.RolesRead {
					t.Fatalf("RolesOf %q: RolesRead is false", tenant)
				}
				roles, permissions, err := st.UserRoles(ctx, tenant, "u")
				if err != nil {
					t.Fatal(err)
				}
				if got.Roles == nil || got.Permissions == nil || !slices.Equal(got.Roles, roles) || !slices.Equal(got.Permissions, permissions) {
					t.Fatalf("RolesOf %q: read %#v and %#v with the rotation, UserRoles returns %#v and %#v",
						tenant, got.Roles, got.Permissions, roles, permissions)
				}
			}
			start := count.Load()
			var last store.Rotated
			for i := range refreshes {
				now = now.Add(time.Second)
				got, err := st.RotateRefreshToken(ctx, rotation(i, now, store.PublicTenant))
				if err != nil {
					t.Fatalf("refresh %d: %v", i+1, err)
				}
				if got.Session.UserID != "u" || got.Session.Generation != int64(i+1) {
					t.Fatalf("refresh %d: session %+v", i+1, got.Session)
				}
				last = got
			}
			if got := float64(count.Load()-start) / refreshes; got != want {
				t.Errorf("%.2f round trips per refresh of a current token with roles, want %v", got, want)
			}
			check(last, store.PublicTenant)
			for i, tenant := range []string{"t2", "none"} {
				now = now.Add(time.Second)
				got, err := st.RotateRefreshToken(ctx, rotation(refreshes+i, now, tenant))
				if err != nil {
					t.Fatal(err)
				}
				check(got, tenant)
			}
		})
	}
}
