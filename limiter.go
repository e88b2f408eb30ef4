package auth

import (
	"context"
	"time"

	"github.com/latchkit/auth/internal/gcra"
	"github.com/latchkit/auth/store"
)

// A Limiter keeps the rate-limit state of the allowances in RateLimits
// (all but SessionRefreshes, which the Store keeps on each session), and
// the third-party authorisation codes already presented. Each key is an
// independent allowance of Rate.Burst attempts, refilled at one per
// Rate.Every. Implementations must be safe for concurrent use.
// NewStoreLimiter keeps the state in the Store, shared by every instance,
// and is the default when the Store can hold it; NewMemoryLimiter keeps it
// in the process, so several instances each count their own attempts (see
// Config.Limiter).
//
// An attempt is taken from the allowance before the work it stands for
// (a password hash, an email) and given back with Refund if it turns out
// not to count, so that concurrent attempts cannot all pass one check.
type Limiter interface {
	// Take spends one attempt of key's allowance under r at now, if one
	// is left, and returns zero. If none is left it spends nothing and
	// returns how long until one is. Checking and spending are one atomic
	// step: of any number of concurrent Takes on an unused key, exactly
	// r.Burst return zero.
	Take(ctx context.Context, key string, r Rate, now time.Time) (time.Duration, error)
	// Refund gives back one attempt that Take spent under r, as for a
	// sign-in that succeeded.
	Refund(ctx context.Context, key string, r Rate, now time.Time) error
	// Reset forgets key's attempts, as after a successful sign-in.
	Reset(ctx context.Context, key string) error
}

// memoryLimiter implements Limiter with a gcra.Table.
type memoryLimiter struct{ times *gcra.Table }

// NewMemoryLimiter returns a Limiter that keeps its counts in memory, at
// most maxKeys keys of each kind (0 means 100,000; about 20 MB for a full
// kind). The kind of a key is the part before its first colon; the
// library uses one per allowance in RateLimits. Keys whose allowance has
// refilled are dropped as time passes. When a kind is full of keys still
// counting, the one closest to refilling is dropped to make room: the
// bound costs that key the attempts it had left to refill, never the
// counting of new keys.
func NewMemoryLimiter(maxKeys int) Limiter {
	if maxKeys <= 0 {
		maxKeys = 100_000
	}
	return memoryLimiter{gcra.NewTable(maxKeys)}
}

func (m memoryLimiter) Take(_ context.Context, key string, r Rate, now time.Time) (time.Duration, error) {
	return m.times.Take(key, r.Burst, r.Every, now), nil
}

func (m memoryLimiter) Refund(_ context.Context, key string, r Rate, now time.Time) error {
	m.times.Refund(key, r.Every, now)
	return nil
}

func (m memoryLimiter) Reset(_ context.Context, key string) error {
	m.times.Reset(key)
	return nil
}

// storeLimiter keeps the counts in a store, shared by every instance.
type storeLimiter struct{ s store.RateLimitStore }

// NewStoreLimiter returns a Limiter that keeps its counts in s, so that
// every instance of an application sharing the store counts the same
// attempts and remembers the same authorisation codes. memstore and
// sqlstore implement store.RateLimitStore, and New uses it by default
// for a Store that does. Each attempt costs a store write (one atomic
// statement on sqlstore), a refused one a read besides, and each refund
// or reset another write.
func NewStoreLimiter(s store.RateLimitStore) Limiter { return storeLimiter{s} }

func (l storeLimiter) Take(ctx context.Context, key string, r Rate, now time.Time) (time.Duration, error) {
	taken, tat, err := l.s.TakeRateLimit(ctx, key, r.Every, r.Burst, now)
	if err != nil || taken {
		return 0, err
	}
	// The recorded time was read after the refusal; a Reset in between
	// may have cleared it, but the refusal stands.
	return max(gcra.Wait(tat, r.Burst, r.Every, now), time.Second), nil
}

func (l storeLimiter) Refund(ctx context.Context, key string, r Rate, _ time.Time) error {
	return l.s.RefundRateLimit(ctx, key, r.Every)
}

func (l storeLimiter) Reset(ctx context.Context, key string) error {
	return l.s.ResetRateLimit(ctx, key)
}
