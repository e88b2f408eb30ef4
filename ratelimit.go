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
	// AccountSignInFailures is a backstop on failed sign-ins for one
	// email from all addresses together, against guessing from many
	// addresses. It does not lock the owner out: once it is spent, each
	// address gets one attempt per SignInFailures.Every for that email
	// instead of SignInFailures.Burst, so a user who types the password
	// right still signs in from anywhere, and one who mistypes waits an
	// interval. Default 100, then 1 every 36 seconds (100 an hour).
	AccountSignInFailures Rate
	// ResetEmails bounds reset emails sent to one address, so nobody can
	// flood an inbox. Requests past it are answered as usual, without an
	// email. Default 3, then 1 every 20 minutes.
	ResetEmails Rate
	// ClientResetRequests bounds reset requests from one client address.
	// Default 20, then 1 every 3 minutes.
	ClientResetRequests Rate
	// ClientNewPasswords bounds sign-ups and reset submissions from one
	// client address: each hashes a new password, and without a bound
	// one client could take every hash slot (Password.MaxConcurrentHashes)
	// from other users. Default 30, then 1 every 30 seconds (120 an
	// hour), room for a classroom behind one NAT.
	ClientNewPasswords Rate
	// ClientEmailChecks bounds lookups on the email-exists endpoint from
	// one client address, which would otherwise list accounts as fast as
	// it is asked. The sign-up forms ask once per email typed. Default
	// 50, then 1 every 10 seconds (360 an hour).
	ClientEmailChecks Rate

	// IPv6Prefix is the prefix length by which IPv6 clients are counted:
	// one host commonly holds a whole /64, so counting single addresses
	// would give it billions of allowances. Default 64; 128 counts each
	// address. IPv4 clients are counted by address.
	IPv6Prefix int
}

func (l *RateLimits) setDefaults() {
	def := func(r *Rate, burst int, every time.Duration) {
		if *r == (Rate{}) {
			*r = Rate{burst, every}
		}
	}
	def(&l.SignInFailures, 10, 6*time.Minute)
	def(&l.ClientSignInFailures, 100, 36*time.Second)
	def(&l.AccountSignInFailures, 100, 36*time.Second)
	def(&l.ResetEmails, 3, 20*time.Minute)
	def(&l.ClientResetRequests, 20, 3*time.Minute)
	def(&l.ClientNewPasswords, 30, 30*time.Second)
	def(&l.ClientEmailChecks, 50, 10*time.Second)
	if l.IPv6Prefix == 0 {
		l.IPv6Prefix = 64
	}
}

// rates are the allowances, for validation.
func (l *RateLimits) rates() []Rate {
	return []Rate{l.SignInFailures, l.ClientSignInFailures, l.AccountSignInFailures,
		l.ResetEmails, l.ClientResetRequests, l.ClientNewPasswords, l.ClientEmailChecks}
}

func (r Rate) valid() bool { return r.Burst > 0 && r.Every > 0 }

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

// newPasswordLimit is the allowance of new password hashes (sign-ups and
// reset submissions) of r's client.
func (a *Auth) newPasswordLimit(r *http.Request) limit {
	return limit{limitKey("new-password-client", a.limitClient(r)), a.cfg.RateLimits.ClientNewPasswords}
}

// limitClient is the client as rate limits count it: its address, or for
// IPv6 its RateLimits.IPv6Prefix.
func (a *Auth) limitClient(r *http.Request) string {
	addr := a.clientAddr(r)
	ip, err := netip.ParseAddr(addr)
	if err != nil {
		return addr
	}
	if ip = ip.Unmap(); ip.Is4() {
		return ip.String()
	}
	p, err := ip.WithZone("").Prefix(a.cfg.RateLimits.IPv6Prefix)
	if err != nil {
		return addr
	}
	return p.String()
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
