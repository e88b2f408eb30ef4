// Package tokencache remembers, between requests, what spares or
// shortens the verification of access tokens: the tokens verified before,
// the sessions recently found live in the store, and the users deleted
// here whose tokens have not yet expired. Each is bounded, and its zero
// value is ready to use.
package tokencache

import (
	"hash/maphash"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Tokens keeps verified access tokens, with what their verification
// found, until they stop being usable, so that a token presented again
// costs a hash, a map lookup and a comparison instead of a parse. It is
// bounded: a shard that is full when a token is added drops the entries
// that are no longer usable, and is emptied if that is not enough, which
// costs only full verifications.
//
// Entries are found by a keyed 64-bit hash of the token's last
// dot-separated segment, its signature (hash/maphash, with a random seed
// per cache), and accepted only if the whole token is equal, compared in
// constant time: the map compares nothing but hashes, so no timing tells
// a client how much of its token matches a cached one, and a hash
// collision is a miss, never another token's session. The signature
// differs from token to token as the whole does, and hashing it alone
// keeps the cost of a lookup from growing with the claims a token
// carries.
type Tokens[V any] struct {
	seedOnce sync.Once
	seed     maphash.Seed
	shards   [shards]shard[V]
}

type shard[V any] struct {
	mu sync.RWMutex
	m  map[uint64]entry[V]
}

type entry[V any] struct {
	token string    // the whole token
	until time.Time // when it stops being usable
	value V
}

const (
	shards = 16
	// maxTokens bounds the cache: 10,000 tokens are a few MB of entries.
	maxTokens      = 10_000
	maxShardTokens = maxTokens / shards
)

// Hash is the hash of tok that Get, Put and Remove take: of its last
// segment, or of all of it if it has no dot.
func (c *Tokens[V]) Hash(tok string) uint64 {
	c.seedOnce.Do(func() { c.seed = maphash.MakeSeed() })
	return maphash.String(c.seed, tok[strings.LastIndexByte(tok, '.')+1:])
}

func (c *Tokens[V]) shard(h uint64) *shard[V] {
	return &c.shards[h%shards]
}

// Get returns what was put with the token tok, whose hash is h.
func (c *Tokens[V]) Get(h uint64, tok string) (V, bool) {
	s := c.shard(h)
	s.mu.RLock()
	e, ok := s.m[h]
	s.mu.RUnlock()
	if !ok || !equalConstantTime(e.token, tok) {
		var zero V
		return zero, false
	}
	return e.value, true
}

// Put keeps v for the token tok, whose hash is h, usable until until. The
// caller still checks, at each Get, whether v is usable: until only tells
// which entries a full shard may drop at now.
func (c *Tokens[V]) Put(h uint64, tok string, until time.Time, v V, now time.Time) {
	s := c.shard(h)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = make(map[uint64]entry[V])
	}
	if _, ok := s.m[h]; !ok && len(s.m) >= maxShardTokens {
		for k, old := range s.m {
			if !now.Before(old.until) {
				delete(s.m, k)
			}
		}
		if len(s.m) >= maxShardTokens {
			clear(s.m)
		}
	}
	s.m[h] = entry[V]{token: tok, until: until, value: v}
}

// Remove forgets the token whose hash is h.
func (c *Tokens[V]) Remove(h uint64) {
	s := c.shard(h)
	s.mu.Lock()
	delete(s.m, h)
	s.mu.Unlock()
}

// equalConstantTime is subtle.ConstantTimeCompare for strings, without
// copying them to byte slices: its time depends on the lengths only.
func equalConstantTime(x, y string) bool {
	if len(x) != len(y) {
		return false
	}
	// Eight bytes at a time (the compiler merges the loads): a token is
	// a few hundred bytes, compared on every request.
	var w uint64
	i := 0
	for ; i+8 <= len(x); i += 8 {
		w |= load64(x, i) ^ load64(y, i)
	}
	var v byte
	for ; i < len(x); i++ {
		v |= x[i] ^ y[i]
	}
	return w == 0 && v == 0
}

func load64(s string, i int) uint64 {
	s = s[i : i+8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// Sessions remembers sessions recently found live in the store, for
// Config.SessionCheckCache. Revocations seen by this instance evict at
// once; those made by other instances show after at most the cache time.
//
// A check that read the store before a revocation may finish after its
// eviction; it must not put the session back. Every eviction counts, and
// a check adds its answer only if no eviction happened since it began.
type Sessions struct {
	mu        sync.Mutex
	live      map[string]time.Time // handle -> trusted until
	evictions uint64
}

// maxSessions bounds the cache; when full it is emptied, which costs only
// store reads.
const maxSessions = 100_000

// Has reports whether handle is trusted at now, and otherwise returns the
// mark that Add needs.
func (c *Sessions) Has(handle string, now time.Time) (ok bool, mark uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	until, ok := c.live[handle]
	return ok && now.Before(until), c.evictions
}

// Add trusts handle until then, unless an eviction happened after Has
// returned mark.
func (c *Sessions) Add(handle string, until time.Time, mark uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.evictions != mark {
		return
	}
	if c.live == nil || len(c.live) >= maxSessions {
		c.live = make(map[string]time.Time)
	}
	c.live[handle] = until
}

// Evict stops trusting handle.
func (c *Sessions) Evict(handle string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.evictions++
	delete(c.live, handle)
}

// Ended remembers ids (users this instance deleted, sessions it ended
// to evict a stranger) until their last access tokens expire, so that
// those tokens stop here at once, with or without
// Config.CheckSessionInStore. Such endings are rare: while there is none
// to remember, a check costs one atomic load.
type Ended struct {
	n     atomic.Int32
	mu    sync.Mutex
	until map[string]time.Time // id -> when its tokens have expired
}

// Add remembers id until then, and forgets those whose time has passed
// at now.
func (d *Ended) Add(id string, now, until time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.until == nil {
		d.until = make(map[string]time.Time)
	}
	for id, t := range d.until {
		if !now.Before(t) {
			delete(d.until, id)
		}
	}
	d.until[id] = until
	d.n.Store(int32(len(d.until)))
}

// Has reports whether id ended here and its tokens may still be
// unexpired at now.
func (d *Ended) Has(id string, now time.Time) bool {
	if d.n.Load() == 0 {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	until, ok := d.until[id]
	return ok && now.Before(until)
}
