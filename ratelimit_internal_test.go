package auth

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/latchkit/auth/internal/kit"
	"github.com/latchkit/auth/store/memstore"
)

// The store limiter keeps in memory only what is in hand: once every
// sign-in attempt has settled, whatever its outcome, it holds nothing.
func TestStoreLimiterHoldsNothingOnceSettled(t *testing.T) {
	l := NewStoreLimiter(memstore.New()).(storeLimiter)
	ctx := context.Background()
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	r := Rate{Burst: 1000, Every: time.Second}
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Go(func() {
			email := fmt.Sprintf("u%d@example.com", i%7)
			account := limit{kit.LimitKey("signin-account", email), r}
			perEmail := limit{kit.LimitKey("signin", email, "192.0.2.1"), r}
			perClient := limit{kit.LimitKey("signin-client", "192.0.2.1"), r}
			att, wait, err := l.takeSignIn(ctx, account, perEmail, perClient, now)
			if err != nil || wait > 0 {
				t.Errorf("attempt %d: wait %v, error %v", i, wait, err)
				return
			}
			if err := l.settleSignIn(ctx, att, attemptOutcome(i%3), now); err != nil {
				t.Errorf("attempt %d: settling: %v", i, err)
			}
		})
	}
	wg.Wait()
	h := l.hand
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.keys) != 0 || len(h.written) != 0 || len(h.readers) != 0 {
		t.Errorf("after every attempt settled: %d keys, %d written failures, %d epochs of reads held; want none",
			len(h.keys), len(h.written), len(h.readers))
	}
}
