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
type Limiter interface {
	// Wait reports how long key must wait before its next attempt under
	// r: zero if one is allowed now.
	Wait(ctx context.Context, key string, r Rate, now time.Time) (time.Duration, error)
	// Add counts an attempt for key.
	Add(ctx context.Context, key string, r Rate, now time.Time) error
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

func (m *memoryLimiter) Wait(_ context.Context, key string, r Rate, now time.Time) (time.Duration, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return gcraWait(m.tat[key], r, now), nil
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

// storeLimiter keeps the counts in a store, shared by every instance.
type storeLimiter struct{ s store.RateLimitStore }

// NewStoreLimiter returns a Limiter that keeps its counts in s, so that
// every instance of an application sharing the store counts the same
// attempts. memstore and sqlstore implement store.RateLimitStore. Each
// check costs a store read and each failure a write.
func NewStoreLimiter(s store.RateLimitStore) Limiter { return storeLimiter{s} }

func (l storeLimiter) Wait(ctx context.Context, key string, r Rate, now time.Time) (time.Duration, error) {
	tat, err := l.s.RateLimit(ctx, key)
	if err != nil {
		return 0, err
	}
	return gcraWait(tat, r, now), nil
}

func (l storeLimiter) Add(ctx context.Context, key string, r Rate, now time.Time) error {
	return l.s.AddRateLimit(ctx, key, r.Every, now)
}

func (l storeLimiter) Reset(ctx context.Context, key string) error {
	return l.s.ResetRateLimit(ctx, key)
}

func (m *memoryLimiter) Add(_ context.Context, key string, r Rate, now time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	tat, ok := m.tat[key]
	if !ok && len(m.tat) >= m.maxKeys {
		m.prune(now)
		if len(m.tat) >= m.maxKeys {
			return nil
		}
	}
	if tat.Before(now) {
		tat = now
	}
	m.tat[key] = tat.Add(r.Every)
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

// wait returns how long the most constrained of limits must wait. A
// failing Limiter lets the attempt through: the error is logged, and the
// password hash still bounds how fast guesses go.
func (a *Auth) wait(ctx context.Context, limits ...limit) time.Duration {
	now := a.cfg.Now()
	var longest time.Duration
	for _, l := range limits {
		d, err := a.cfg.Limiter.Wait(ctx, l.key, l.rate, now)
		if err != nil {
			a.limiterFailed(ctx, err)
			continue
		}
		longest = max(longest, d)
	}
	return longest
}

// count records an attempt against each of limits.
func (a *Auth) count(ctx context.Context, limits ...limit) {
	now := a.cfg.Now()
	for _, l := range limits {
		if err := a.cfg.Limiter.Add(ctx, l.key, l.rate, now); err != nil {
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
