package auth

import (
	"context"
	"strings"
	"sync"
	"time"

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

// memoryLimiter implements Limiter with the generic cell rate algorithm:
// one time per key, the "theoretical arrival time" of the next attempt.
// Keys are kept per kind (the part of the key before its first colon),
// each kind bounded on its own and ordered by time, so that the cheapest
// requests cannot crowd out the keys of sign-in failures, and a full kind
// makes room in O(log n).
type memoryLimiter struct {
	mu      sync.Mutex
	kinds   map[string]*limitKind
	maxKeys int
}

// limitKind holds the keys of one kind: a map and a min-heap by time.
type limitKind struct {
	entries map[string]*limitEntry
	heap    []*limitEntry
}

type limitEntry struct {
	key   string
	tat   time.Time
	index int
}

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
	return &memoryLimiter{kinds: make(map[string]*limitKind), maxKeys: maxKeys}
}

// kind returns the kind of key, creating it if need be, with the keys
// that have refilled at now dropped. Called under mu.
func (m *memoryLimiter) kind(key string, now time.Time) *limitKind {
	name, _, _ := strings.Cut(key, ":")
	k := m.kinds[name]
	if k == nil {
		k = &limitKind{entries: make(map[string]*limitEntry)}
		m.kinds[name] = k
	}
	for len(k.heap) > 0 && !k.heap[0].tat.After(now) {
		k.remove(k.heap[0])
	}
	return k
}

func (m *memoryLimiter) Take(_ context.Context, key string, r Rate, now time.Time) (time.Duration, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := m.kind(key, now)
	e := k.entries[key]
	var tat time.Time
	if e != nil {
		tat = e.tat
	}
	wait, next := gcraTake(tat, r, now)
	if wait > 0 {
		return wait, nil
	}
	if e != nil {
		e.tat = next
		k.fix(e.index)
		return 0, nil
	}
	if len(k.heap) >= m.maxKeys {
		k.remove(k.heap[0])
	}
	k.push(&limitEntry{key: key, tat: next})
	return 0, nil
}

func (m *memoryLimiter) Refund(_ context.Context, key string, r Rate, now time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := m.kind(key, now)
	e := k.entries[key]
	if e == nil {
		return nil
	}
	if e.tat = e.tat.Add(-r.Every); e.tat.After(now) {
		k.fix(e.index)
	} else {
		k.remove(e)
	}
	return nil
}

func (m *memoryLimiter) Reset(_ context.Context, key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	name, _, _ := strings.Cut(key, ":")
	if k := m.kinds[name]; k != nil {
		if e := k.entries[key]; e != nil {
			k.remove(e)
		}
	}
	return nil
}

func (k *limitKind) push(e *limitEntry) {
	k.entries[e.key] = e
	e.index = len(k.heap)
	k.heap = append(k.heap, e)
	k.up(e.index)
}

func (k *limitKind) remove(e *limitEntry) {
	delete(k.entries, e.key)
	i, last := e.index, len(k.heap)-1
	if i != last {
		k.swap(i, last)
	}
	k.heap[last] = nil
	k.heap = k.heap[:last]
	if i != last {
		k.fix(i)
	}
}

// fix restores the heap order after the time at i changed.
func (k *limitKind) fix(i int) {
	if !k.down(i) {
		k.up(i)
	}
}

func (k *limitKind) less(i, j int) bool { return k.heap[i].tat.Before(k.heap[j].tat) }

func (k *limitKind) swap(i, j int) {
	k.heap[i], k.heap[j] = k.heap[j], k.heap[i]
	k.heap[i].index, k.heap[j].index = i, j
}

func (k *limitKind) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !k.less(i, p) {
			return
		}
		k.swap(i, p)
		i = p
	}
}

// down moves the entry at i down to its place and reports whether it
// moved.
func (k *limitKind) down(i int) bool {
	start := i
	for {
		c := 2*i + 1
		if c >= len(k.heap) {
			break
		}
		if r := c + 1; r < len(k.heap) && k.less(r, c) {
			c = r
		}
		if !k.less(c, i) {
			break
		}
		k.swap(i, c)
		i = c
	}
	return i > start
}

// gcraWait is how long an attempt must wait, given the theoretical
// arrival time tat of the next one (zero: none recorded): Burst attempts
// fit in the window before it, and the next waits until there is room.
func gcraWait(tat time.Time, r Rate, now time.Time) time.Duration {
	if tat.IsZero() {
		return 0
	}
	return max(0, tat.Sub(now)-time.Duration(r.Burst-1)*r.Every)
}

// gcraTake is the generic cell rate algorithm's step for one attempt at
// now, given the recorded time tat (zero: none): the wait, and if it is
// zero, the new time to record.
func gcraTake(tat time.Time, r Rate, now time.Time) (time.Duration, time.Time) {
	if wait := gcraWait(tat, r, now); wait > 0 {
		return wait, tat
	}
	if tat.Before(now) {
		tat = now
	}
	return 0, tat.Add(r.Every)
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
	return max(gcraWait(tat, r, now), time.Second), nil
}

func (l storeLimiter) Refund(ctx context.Context, key string, r Rate, _ time.Time) error {
	return l.s.RefundRateLimit(ctx, key, r.Every)
}

func (l storeLimiter) Reset(ctx context.Context, key string) error {
	return l.s.ResetRateLimit(ctx, key)
}
