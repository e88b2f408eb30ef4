package sqlstore_test

import (
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
