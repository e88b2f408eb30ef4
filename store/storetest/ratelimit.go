package storetest

import (
	"sync"
	"testing"
	"time"

	"github.com/latchkit/auth/store"
)

// rateLimitTests run only for stores that implement store.RateLimitStore.
var rateLimitTests = []test{
	{"Unknown", testRateLimitUnknown},
	{"Add", testRateLimitAdd},
	{"AddAfterPassed", testRateLimitAddAfterPassed},
	{"Reset", testRateLimitReset},
	{"DeleteExpired", testRateLimitDeleteExpired},
	{"ConcurrentAdds", testRateLimitConcurrentAdds},
}

func limits(t *testing.T, s store.Store) store.RateLimitStore {
	t.Helper()
	l, ok := s.(store.RateLimitStore)
	if !ok {
		t.Fatal("newStore returned a store that is not a RateLimitStore, unlike the first one")
	}
	return l
}

func wantRateLimit(t *testing.T, l store.RateLimitStore, key string, want time.Time, rule string) {
	t.Helper()
	got, err := l.RateLimit(t.Context(), key)
	if err != nil {
		t.Errorf("RateLimit: %s; got error %v", rule, err)
		return
	}
	if want.IsZero() && !got.IsZero() || !want.IsZero() && !sameTime(got, want) {
		t.Errorf("RateLimit: %s; got %v, want %v", rule, got, want)
	}
}

func testRateLimitUnknown(t *testing.T, s store.Store) {
	wantRateLimit(t, limits(t, s), "nobody", time.Time{}, "an unknown key must have the zero time")
}

func testRateLimitAdd(t *testing.T, s store.Store) {
	l := limits(t, s)
	now := at(time.Hour)
	if err := l.AddRateLimit(t.Context(), "k", time.Minute, now); err != nil {
		t.Fatalf("AddRateLimit: must succeed; got error %v", err)
	}
	wantRateLimit(t, l, "k", now.Add(time.Minute), "a first attempt must record now plus every")
	if err := l.AddRateLimit(t.Context(), "k", time.Minute, now); err != nil {
		t.Fatalf("AddRateLimit: must succeed; got error %v", err)
	}
	wantRateLimit(t, l, "k", now.Add(2*time.Minute), "a second attempt before the recorded time must add every to it")
	wantRateLimit(t, l, "other", time.Time{}, "keys must be independent")
}

func testRateLimitAddAfterPassed(t *testing.T, s store.Store) {
	l := limits(t, s)
	if err := l.AddRateLimit(t.Context(), "k", time.Minute, at(0)); err != nil {
		t.Fatal(err)
	}
	later := at(time.Hour)
	if err := l.AddRateLimit(t.Context(), "k", time.Minute, later); err != nil {
		t.Fatal(err)
	}
	wantRateLimit(t, l, "k", later.Add(time.Minute), "an attempt after the recorded time must start from now")
}

func testRateLimitReset(t *testing.T, s store.Store) {
	l := limits(t, s)
	if err := l.AddRateLimit(t.Context(), "k", time.Minute, at(0)); err != nil {
		t.Fatal(err)
	}
	if err := l.ResetRateLimit(t.Context(), "k"); err != nil {
		t.Fatalf("ResetRateLimit: must succeed; got error %v", err)
	}
	wantRateLimit(t, l, "k", time.Time{}, "a reset key must have the zero time")
	if err := l.ResetRateLimit(t.Context(), "missing"); err != nil {
		t.Errorf("ResetRateLimit: forgetting a missing key must not be an error; got %v", err)
	}
}

func testRateLimitDeleteExpired(t *testing.T, s store.Store) {
	l := limits(t, s)
	if err := l.AddRateLimit(t.Context(), "old", time.Minute, at(0)); err != nil {
		t.Fatal(err)
	}
	if err := l.AddRateLimit(t.Context(), "new", time.Hour, at(0)); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteExpired(t.Context(), at(30*time.Minute)); err != nil {
		t.Fatalf("DeleteExpired: must succeed; got error %v", err)
	}
	wantRateLimit(t, l, "old", time.Time{}, "DeleteExpired must remove entries whose time has passed")
	wantRateLimit(t, l, "new", at(time.Hour), "DeleteExpired must keep entries whose time is still ahead")
}

func testRateLimitConcurrentAdds(t *testing.T, s store.Store) {
	l := limits(t, s)
	const n = 20
	now := at(0)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			if err := l.AddRateLimit(t.Context(), "k", time.Second, now); err != nil {
				t.Errorf("AddRateLimit: concurrent calls must succeed; got error %v", err)
			}
		})
	}
	wg.Wait()
	wantRateLimit(t, l, "k", now.Add(n*time.Second), "AddRateLimit must be atomic: 20 concurrent attempts must add 20 intervals")
}
