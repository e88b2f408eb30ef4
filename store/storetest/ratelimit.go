package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/latchkit/auth/store"
)

// rateLimitTests run only for stores that implement store.RateLimitStore.
var rateLimitTests = []test{
	{"Unknown", testRateLimitUnknown},
	{"Take", testRateLimitTake},
	{"TakeAfterPassed", testRateLimitTakeAfterPassed},
	{"TakeRefused", testRateLimitTakeRefused},
	{"Refund", testRateLimitRefund},
	{"Reset", testRateLimitReset},
	{"DeleteExpired", testRateLimitDeleteExpired},
	{"ConcurrentTakes", testRateLimitConcurrentTakes},
	{"ConcurrentTakesBurst", testRateLimitConcurrentTakesBurst},
	{"PrunedOnWrite", testRateLimitPrunedOnWrite},
	{"ReadSeveral", testRateLimitReadSeveral},
	{"Spend", testRateLimitSpend},
	{"ConcurrentSpends", testRateLimitConcurrentSpends},
	{"PrunedOnSpend", testRateLimitPrunedOnSpend},
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

// take calls TakeRateLimit and fails the test on an error.
func take(t *testing.T, l store.RateLimitStore, key string, every time.Duration, burst int, now time.Time) bool {
	t.Helper()
	ok, _, err := l.TakeRateLimit(t.Context(), key, every, burst, now)
	if err != nil {
		t.Fatalf("TakeRateLimit: must succeed; got error %v", err)
	}
	return ok
}

func testRateLimitTake(t *testing.T, s store.Store) {
	l := limits(t, s)
	now := at(time.Hour)
	if !take(t, l, "k", time.Minute, 5, now) {
		t.Fatal("TakeRateLimit: the first attempt on a key must be counted")
	}
	wantRateLimit(t, l, "k", now.Add(time.Minute), "a first attempt must record now plus every")
	if !take(t, l, "k", time.Minute, 5, now) {
		t.Fatal("TakeRateLimit: a second attempt within the burst must be counted")
	}
	wantRateLimit(t, l, "k", now.Add(2*time.Minute), "a second attempt before the recorded time must add every to it")
	wantRateLimit(t, l, "other", time.Time{}, "keys must be independent")
}

func testRateLimitTakeAfterPassed(t *testing.T, s store.Store) {
	l := limits(t, s)
	take(t, l, "k", time.Minute, 1, at(0))
	later := at(time.Hour)
	if !take(t, l, "k", time.Minute, 1, later) {
		t.Fatal("TakeRateLimit: an attempt after the recorded time must be counted")
	}
	wantRateLimit(t, l, "k", later.Add(time.Minute), "an attempt after the recorded time must start from now")
}

func testRateLimitTakeRefused(t *testing.T, s store.Store) {
	l := limits(t, s)
	now := at(0)
	for i := range 3 {
		if !take(t, l, "k", time.Minute, 3, now) {
			t.Fatalf("TakeRateLimit: attempt %d of a burst of 3 must be counted", i+1)
		}
	}
	ok, tat, err := l.TakeRateLimit(t.Context(), "k", time.Minute, 3, now)
	if err != nil || ok {
		t.Fatalf("TakeRateLimit: a fourth attempt on a burst of 3 must be refused; got %v, %v", ok, err)
	}
	if !sameTime(tat, now.Add(3*time.Minute)) {
		t.Errorf("TakeRateLimit: a refusal must report the recorded time; got %v, want %v", tat, now.Add(3*time.Minute))
	}
	wantRateLimit(t, l, "k", now.Add(3*time.Minute), "a refused attempt must change nothing")
	if !take(t, l, "k", time.Minute, 3, now.Add(time.Minute)) {
		t.Error("TakeRateLimit: once an interval has passed an attempt must be counted again")
	}
	wantRateLimit(t, l, "k", now.Add(4*time.Minute), "the attempt after the refill must add every")
}

func testRateLimitRefund(t *testing.T, s store.Store) {
	l := limits(t, s)
	now := at(0)
	take(t, l, "k", time.Minute, 2, now)
	take(t, l, "k", time.Minute, 2, now)
	if err := l.RefundRateLimit(t.Context(), "k", time.Minute); err != nil {
		t.Fatalf("RefundRateLimit: must succeed; got error %v", err)
	}
	wantRateLimit(t, l, "k", now.Add(time.Minute), "a refund must take every off the recorded time")
	if !take(t, l, "k", time.Minute, 2, now) {
		t.Error("TakeRateLimit: a refunded attempt must be available again")
	}
	if err := l.RefundRateLimit(t.Context(), "missing", time.Minute); err != nil {
		t.Errorf("RefundRateLimit: a missing key must not be an error; got %v", err)
	}
}

func testRateLimitReset(t *testing.T, s store.Store) {
	l := limits(t, s)
	take(t, l, "k", time.Minute, 1, at(0))
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
	take(t, l, "old", time.Minute, 1, at(0))
	take(t, l, "new", time.Hour, 1, at(0))
	if err := s.DeleteExpired(t.Context(), at(30*time.Minute)); err != nil {
		t.Fatalf("DeleteExpired: must succeed; got error %v", err)
	}
	wantRateLimit(t, l, "old", time.Time{}, "DeleteExpired must remove entries whose time has passed")
	wantRateLimit(t, l, "new", at(time.Hour), "DeleteExpired must keep entries whose time is still ahead")
}

func testRateLimitConcurrentTakes(t *testing.T, s store.Store) {
	l := limits(t, s)
	const n = 20
	now := at(0)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			if ok, _, err := l.TakeRateLimit(t.Context(), "k", time.Second, n, now); err != nil || !ok {
				t.Errorf("TakeRateLimit: concurrent calls within the burst must each be counted; got %v, %v", ok, err)
			}
		})
	}
	wg.Wait()
	wantRateLimit(t, l, "k", now.Add(n*time.Second), "TakeRateLimit must be atomic: 20 concurrent attempts must add 20 intervals")
}

// Check and count are one step: of many concurrent attempts against a
// burst, exactly the burst is counted, and the rest change nothing.
func testRateLimitConcurrentTakesBurst(t *testing.T, s store.Store) {
	l := limits(t, s)
	const n, burst = 40, 7
	now := at(0)
	var wg sync.WaitGroup
	var mu sync.Mutex
	taken := 0
	for range n {
		wg.Go(func() {
			ok, _, err := l.TakeRateLimit(t.Context(), "k", time.Second, burst, now)
			if err != nil {
				t.Errorf("TakeRateLimit: concurrent calls must succeed; got error %v", err)
				return
			}
			if ok {
				mu.Lock()
				taken++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if taken != burst {
		t.Errorf("TakeRateLimit: %d concurrent attempts against a burst of %d: %d counted; want exactly %d", n, burst, taken, burst)
	}
	wantRateLimit(t, l, "k", now.Add(burst*time.Second), "refused attempts must change nothing")
}

// Entries whose time has passed do not pile up between DeleteExpired
// runs: a take at least a minute later removes them.
func testRateLimitPrunedOnWrite(t *testing.T, s store.Store) {
	l := limits(t, s)
	const n = 1000
	for i := range n {
		take(t, l, fmt.Sprintf("old%d", i), time.Minute, 3, at(0))
	}
	take(t, l, "live", time.Hour, 3, at(0))
	take(t, l, "new", time.Minute, 3, at(2*time.Minute))
	left := 0
	for i := range n {
		if tat, err := l.RateLimit(t.Context(), fmt.Sprintf("old%d", i)); err != nil {
			t.Fatal(err)
		} else if !tat.IsZero() {
			left++
		}
	}
	if left != 0 {
		t.Errorf("TakeRateLimit: %d of %d entries whose time had passed were still there after a take two minutes later; want 0", left, n)
	}
	wantRateLimit(t, l, "live", at(time.Hour), "pruning must keep entries whose time is still ahead")
}

func testRateLimitReadSeveral(t *testing.T, s store.Store) {
	l := limits(t, s)
	take(t, l, "a", time.Minute, 3, at(0))
	take(t, l, "b", time.Hour, 3, at(0))
	got, err := l.RateLimits(t.Context(), []string{"b", "missing", "a"})
	if err != nil {
		t.Fatalf("RateLimits: must succeed; got error %v", err)
	}
	want := []time.Time{at(time.Hour), {}, at(time.Minute)}
	if len(got) != len(want) {
		t.Fatalf("RateLimits: three keys must give three times, in their order; got %v", got)
	}
	for i := range want {
		if !got[i].Equal(want[i]) {
			t.Errorf("RateLimits: the times of keys, in their order, the zero time for a missing one; got %v, want %v", got, want)
			break
		}
	}
	if got, err := l.RateLimits(t.Context(), nil); err != nil || len(got) != 0 {
		t.Errorf("RateLimits: no keys must give no times; got %v, %v", got, err)
	}
}

func testRateLimitSpend(t *testing.T, s store.Store) {
	l := limits(t, s)
	now := at(0)
	for range 3 {
		take(t, l, "full", time.Minute, 3, now)
	}
	take(t, l, "ahead", time.Hour, 3, now)
	take(t, l, "passed", time.Second, 3, now.Add(-time.Hour))
	err := l.SpendRateLimits(t.Context(), []store.RateLimitSpend{
		{Key: "new", Every: time.Minute}, {Key: "full", Every: time.Minute},
		{Key: "ahead", Every: 2 * time.Hour}, {Key: "passed", Every: time.Second},
	}, now)
	if err != nil {
		t.Fatalf("SpendRateLimits: must succeed; got error %v", err)
	}
	wantRateLimit(t, l, "new", now.Add(time.Minute), "a spend on a new key must record now plus every")
	wantRateLimit(t, l, "full", now.Add(4*time.Minute), "a spend must count whatever the allowance has left")
	wantRateLimit(t, l, "ahead", now.Add(3*time.Hour), "a spend before the recorded time must add its own every to it")
	wantRateLimit(t, l, "passed", now.Add(time.Second), "a spend after the recorded time must start from now")
	wantRateLimit(t, l, "other", time.Time{}, "a spend must leave other keys alone")
	if err := l.SpendRateLimits(t.Context(), nil, now); err != nil {
		t.Errorf("SpendRateLimits: spending nothing must succeed; got %v", err)
	}
}

func testRateLimitConcurrentSpends(t *testing.T, s store.Store) {
	l := limits(t, s)
	const n = 20
	now := at(0)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			// Both orders, as requests name their keys in any.
			spends := []store.RateLimitSpend{{Key: "a", Every: time.Second}, {Key: "b", Every: time.Minute}}
			if i%2 == 1 {
				spends[0], spends[1] = spends[1], spends[0]
			}
			if err := l.SpendRateLimits(t.Context(), spends, now); err != nil {
				t.Errorf("SpendRateLimits: concurrent calls must succeed; got error %v", err)
			}
		})
	}
	wg.Wait()
	wantRateLimit(t, l, "a", now.Add(n*time.Second), "SpendRateLimits must be atomic: 20 concurrent spends must add 20 intervals")
	wantRateLimit(t, l, "b", now.Add(n*time.Minute), "SpendRateLimits must be atomic: 20 concurrent spends must add 20 intervals")
}

// Spends prune as takes do.
func testRateLimitPrunedOnSpend(t *testing.T, s store.Store) {
	l := limits(t, s)
	const n = 100
	for i := range n {
		take(t, l, fmt.Sprintf("old%d", i), time.Minute, 3, at(0))
	}
	if err := l.SpendRateLimits(t.Context(), []store.RateLimitSpend{{Key: "new", Every: time.Minute}}, at(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("old%d", i)
	}
	tats, err := l.RateLimits(t.Context(), keys)
	if err != nil {
		t.Fatal(err)
	}
	left := 0
	for _, tat := range tats {
		if !tat.IsZero() {
			left++
		}
	}
	if left != 0 {
		t.Errorf("SpendRateLimits: %d of %d entries whose time had passed were still there after a spend two minutes later; want 0", left, n)
	}
}
