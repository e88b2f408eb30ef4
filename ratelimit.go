package auth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/latchkit/auth/store"
)

// A Limiter keeps the rate-limit state of failed sign-ins and password
// reset requests. Each key is an independent allowance of Rate.Burst
// attempts, refilled at one per Rate.Every. Implementations must be safe
// for concurrent use; the default, NewMemoryLimiter, keeps the state in
// the process, so several instances each count their own attempts.
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

// Rate is an allowance: Burst attempts at once, then one per Every.
type Rate struct {
	Burst int
	Every time.Duration
}

// RateLimits sets the allowances. A zero Rate means its default.
type RateLimits struct {
	// SignInFailures bounds failed sign-ins for one email from one client
	// address. Keyed by the pair, so an attacker elsewhere cannot lock
	// the user out. Default 10, then 1 every 6 minutes (10 an hour).
	SignInFailures Rate
	// ClientSignInFailures bounds failed sign-ins from one client address
	// over all emails, against credential stuffing. Default 100, then 1
	// every 36 seconds (100 an hour).
	ClientSignInFailures Rate
	// ResetEmails bounds reset emails sent to one address, so nobody can
	// flood an inbox. Requests past it are answered as usual, without an
	// email. Default 3, then 1 every 20 minutes.
	ResetEmails Rate
	// ClientResetRequests bounds reset requests from one client address.
	// Default 20, then 1 every 3 minutes.
	ClientResetRequests Rate
}

func (l *RateLimits) setDefaults() {
	def := func(r *Rate, burst int, every time.Duration) {
		if *r == (Rate{}) {
			*r = Rate{burst, every}
		}
	}
	def(&l.SignInFailures, 10, 6*time.Minute)
	def(&l.ClientSignInFailures, 100, 36*time.Second)
	def(&l.ResetEmails, 3, 20*time.Minute)
	def(&l.ClientResetRequests, 20, 3*time.Minute)
}

func (r Rate) valid() bool { return r.Burst > 0 && r.Every > 0 }

// memoryLimiter implements Limiter with the generic cell rate algorithm:
// one time per key, the "theoretical arrival time" of the next attempt.
type memoryLimiter struct {
	mu      sync.Mutex
	tat     map[string]time.Time
	maxKeys int
}

// NewMemoryLimiter returns a Limiter that keeps at most maxKeys keys in
// memory (0 means 100,000). When full, keys whose allowance has fully
// refilled are dropped first; if none has, the new key is not counted,
// which errs towards letting attempts through rather than growing without
// bound.
func NewMemoryLimiter(maxKeys int) Limiter {
	if maxKeys <= 0 {
		maxKeys = 100_000
	}
	return &memoryLimiter{tat: make(map[string]time.Time), maxKeys: maxKeys}
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
// attempts. memstore and sqlstore implement store.RateLimitStore. Each
// check costs a store read and each failure a write.
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

func (m *memoryLimiter) Take(_ context.Context, key string, r Rate, now time.Time) (time.Duration, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	tat, ok := m.tat[key]
	wait, next := gcraTake(tat, r, now)
	if wait > 0 {
		return wait, nil
	}
	if !ok && len(m.tat) >= m.maxKeys {
		m.prune(now)
		if len(m.tat) >= m.maxKeys {
			return 0, nil
		}
	}
	m.tat[key] = next
	return 0, nil
}

func (m *memoryLimiter) Refund(_ context.Context, key string, r Rate, now time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	tat, ok := m.tat[key]
	if !ok {
		return nil
	}
	if tat = tat.Add(-r.Every); tat.After(now) {
		m.tat[key] = tat
	} else {
		delete(m.tat, key)
	}
	return nil
}

func (m *memoryLimiter) Reset(_ context.Context, key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.tat, key)
	return nil
}

// prune drops keys whose allowance has refilled. Called under mu.
func (m *memoryLimiter) prune(now time.Time) {
	for k, tat := range m.tat {
		if !tat.After(now) {
			delete(m.tat, k)
		}
	}
}

// clientAddr is the address a request came from: the connection's peer,
// or, when that peer is a trusted proxy, the nearest untrusted address in
// X-Forwarded-For.
func (a *Auth) clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	peer, err := netip.ParseAddr(host)
	if err != nil || !a.trusted(peer) {
		return host
	}
	hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		hop, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			return peer.String() // a garbled chain: trust none of it
		}
		if !a.trusted(hop) {
			return hop.Unmap().String()
		}
		peer = hop
	}
	return peer.String()
}

func (a *Auth) trusted(ip netip.Addr) bool {
	ip = ip.Unmap()
	for _, p := range a.cfg.TrustedProxies {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// limit is one allowance applied to one key.
type limit struct {
	key  string
	rate Rate
}

// limitKey names an allowance without keeping emails or addresses in the
// limiter's state.
func limitKey(kind string, parts ...string) string {
	h := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return kind + ":" + hex.EncodeToString(h[:16])
}

// take spends one attempt of each of limits, in order. If one has none
// left, it gives back those it took and returns how long that one must
// wait. A failing Limiter lets the attempt through: the error is logged,
// and the password hash still bounds how fast guesses go.
func (a *Auth) take(ctx context.Context, limits ...limit) time.Duration {
	now := a.cfg.Now()
	for i, l := range limits {
		wait, err := a.cfg.Limiter.Take(ctx, l.key, l.rate, now)
		if err != nil {
			a.limiterFailed(ctx, err)
			continue
		}
		if wait > 0 {
			a.refund(ctx, limits[:i]...)
			return wait
		}
	}
	return 0
}

// refund gives back an attempt taken from each of limits.
func (a *Auth) refund(ctx context.Context, limits ...limit) {
	now := a.cfg.Now()
	for _, l := range limits {
		if err := a.cfg.Limiter.Refund(ctx, l.key, l.rate, now); err != nil {
			a.limiterFailed(ctx, err)
		}
	}
}

func (a *Auth) limiterFailed(ctx context.Context, err error) {
	a.cfg.Logger.LogAttrs(ctx, slog.LevelError, "auth: rate limiter", slog.String("error", err.Error()))
}

// tooMany answers a throttled request: 429 with Retry-After in whole
// seconds. The answer does not depend on whether the account exists.
func tooMany(w http.ResponseWriter, wait time.Duration) {
	w.Header().Set("Retry-After", strconv.Itoa(int((wait+time.Second-1)/time.Second)))
	writeMessage(w, http.StatusTooManyRequests, "too many attempts, try again later")
}
