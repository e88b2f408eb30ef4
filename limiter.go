package auth

import (
	"context"
	"sync"
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

// storeLimiter keeps the counts in a store, shared by every instance,
// and the sign-in attempts this instance has in hand in memory (see
// takeSignIn).
type storeLimiter struct {
	s    store.RateLimitStore
	hand *inHand
}

// NewStoreLimiter returns a Limiter that keeps its counts in s, so that
// every instance of an application sharing the store counts the same
// attempts and remembers the same authorisation codes. memstore and
// sqlstore implement store.RateLimitStore, and New uses it by default
// for a Store that does. Each attempt costs a store write (one atomic
// statement on sqlstore), a refused one a read besides, and each refund
// or reset another write.
//
// A password sign-in costs less: one read of its allowances before the
// password is checked, and one write after it if the password was
// wrong; none if it was right (but a reset, if the user's wrong
// passwords from that address were counting). Meanwhile the attempt is
// counted in the instance's memory, so that concurrent attempts at one
// instance cannot all pass one check. Concurrent attempts at several
// instances can, before any is written: a burst may be exceeded by the
// attempts other instances have in hand at the moment, but not the
// rate, as every failure is written whatever the allowance had left.
func NewStoreLimiter(s store.RateLimitStore) Limiter {
	return storeLimiter{s, newInHand()}
}

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

// takeSignIn takes a password attempt from its allowances: the account's
// backstop (skipped if it is spent, when perEmail gets a burst of one),
// the one per email and client address, and the one per address. It
// reads what the store holds for them in one statement and takes the
// attempt on top of that and of the attempts this instance has in hand,
// writing nothing: settleSignIn writes it if the password was wrong. It
// returns the attempt, or how long to wait having taken nothing. An
// error reading the store is returned with the attempt, then taken
// against this instance's attempts alone.
func (l storeLimiter) takeSignIn(ctx context.Context, account, perEmail, perClient limit, now time.Time) (signInAttempt, time.Duration, error) {
	epoch := l.hand.begin()
	tats, err := l.s.RateLimits(ctx, []string{account.key, perEmail.key, perClient.key})
	if err != nil || len(tats) != 3 {
		tats = make([]time.Time, 3)
	}
	h := l.hand
	h.mu.Lock()
	defer h.mu.Unlock()
	// Checked once the attempt is: until then the failures written since
	// it began count.
	defer h.read(epoch)
	taken := make([]limit, 0, 3)
	if h.wait(account, tats[0], epoch, now) > 0 {
		perEmail.rate = Rate{Burst: 1, Every: perEmail.rate.Every}
	} else {
		taken = append(taken, account)
	}
	for i, x := range []limit{perEmail, perClient} {
		if wait := h.wait(x, tats[1+i], epoch, now); wait > 0 {
			return signInAttempt{}, wait, err
		}
		taken = append(taken, x)
	}
	for _, x := range taken {
		h.key(x.key).taken++
	}
	return signInAttempt{limits: taken, perEmail: perEmail.key, stored: true, recorded: tats[1].After(now)}, 0, err
}

// settleSignIn ends an attempt takeSignIn took. A wrong password's is
// written to the store, in one statement. A right password's is given
// back, and the failures per email and address are forgotten, in the
// store if it had any. One that never got to its password is given back.
func (l storeLimiter) settleSignIn(ctx context.Context, att signInAttempt, outcome attemptOutcome, now time.Time) error {
	var err error
	switch outcome {
	case attemptFailed:
		spends := make([]store.RateLimitSpend, len(att.limits))
		for i, x := range att.limits {
			spends[i] = store.RateLimitSpend{Key: x.key, Every: x.rate.Every}
		}
		err = l.s.SpendRateLimits(ctx, spends, now)
	case attemptSucceeded:
		if att.recorded {
			err = l.s.ResetRateLimit(ctx, att.perEmail)
		}
	}
	l.hand.settle(att.limits, outcome == attemptFailed)
	return err
}

// inHand counts the sign-in attempts an instance has taken and not yet
// settled, and the failures it has written that a read begun earlier
// may have missed, so that these count on top of what the store holds.
//
// Reads are told apart by epoch: each written failure starts a new one.
// A read begun in an epoch sees in the store every failure written
// before it began, and may miss those written since, so the failures
// written in later epochs count on top of it. A written failure is
// dropped once no read begun before it is still to be checked.
type inHand struct {
	mu    sync.Mutex
	epoch uint64
	// readers counts, per epoch, the reads begun in it and not yet
	// checked.
	readers map[uint64]int
	keys    map[string]*handKey
	// written are the failures written, oldest first, still kept.
	written []writtenFailure
}

type handKey struct {
	taken   int      // attempts taken, not yet settled
	written []uint64 // the epochs of this key's failures kept in written
}

type writtenFailure struct {
	epoch uint64
	key   string
}

func newInHand() *inHand {
	return &inHand{readers: make(map[uint64]int), keys: make(map[string]*handKey)}
}

// begin starts a read of the store and returns its epoch.
func (h *inHand) begin() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.readers[h.epoch]++
	return h.epoch
}

// read ends a read begun in epoch: it is checked. Called under mu.
func (h *inHand) read(epoch uint64) {
	if h.readers[epoch]--; h.readers[epoch] <= 0 {
		delete(h.readers, epoch)
	}
	h.prune()
}

// key returns the state of key, creating it. Called under mu.
func (h *inHand) key(key string) *handKey {
	k := h.keys[key]
	if k == nil {
		k = &handKey{}
		h.keys[key] = k
	}
	return k
}

// wait is how long an attempt of x must wait, given the time the store
// recorded for it (read in epoch) and the attempts in hand. Called under
// mu.
func (h *inHand) wait(x limit, recorded time.Time, epoch uint64, now time.Time) time.Duration {
	n := 0
	if k := h.keys[x.key]; k != nil {
		n = k.taken
		for _, e := range k.written {
			if e > epoch {
				n++
			}
		}
	}
	tat := recorded
	if n > 0 {
		tat = later(tat, now).Add(time.Duration(n) * x.rate.Every)
	}
	return gcra.Wait(tat, x.rate.Burst, x.rate.Every, now)
}

// settle ends the attempts taken of limits; written says that they were
// written to the store as failures.
func (h *inHand) settle(limits []limit, written bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if written {
		h.epoch++
	}
	for _, x := range limits {
		k := h.key(x.key)
		k.taken--
		if written {
			k.written = append(k.written, h.epoch)
			h.written = append(h.written, writtenFailure{h.epoch, x.key})
		}
		if k.taken <= 0 && len(k.written) == 0 {
			delete(h.keys, x.key)
		}
	}
	h.prune()
}

// prune drops the written failures that no read still to be checked
// began before. Called under mu.
func (h *inHand) prune() {
	oldest := h.epoch + 1 // the epoch of the oldest read still to be checked
	for e := range h.readers {
		oldest = min(oldest, e)
	}
	drop := 0
	for _, w := range h.written {
		if w.epoch > oldest {
			break
		}
		drop++
		k := h.keys[w.key]
		k.written = k.written[1:]
		if k.taken <= 0 && len(k.written) == 0 {
			delete(h.keys, w.key)
		}
	}
	h.written = h.written[drop:]
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
