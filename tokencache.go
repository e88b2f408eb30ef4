package auth

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"
)

// tokenCache keeps verified access tokens until they expire, so that a
// token presented again costs a hash, a map lookup and a comparison
// instead of a parse. It is bounded: a shard that is full when a token is
// added drops its expired entries, and is emptied if that is not enough,
// which costs only full verifications. The zero value is ready to use.
//
// Entries are found by a keyed 64-bit hash of the token (hash/maphash,
// with a random seed per Auth) and accepted only if the whole token is
// equal, compared in constant time: the map compares nothing but hashes,
// so no timing tells a client how much of its token matches a cached one,
// and a hash collision is a miss, never another token's session.
type tokenCache struct {
	seedOnce sync.Once
	seed     maphash.Seed
	shards   [tokenCacheShards]tokenCacheShard
}

type tokenCacheShard struct {
	mu sync.RWMutex
	m  map[uint64]*verifiedToken
}

const (
	tokenCacheShards = 16
	// maxVerifiedTokens bounds the token cache: 10,000 tokens are a few
	// MB of entries.
	maxVerifiedTokens = 10_000
	maxShardTokens    = maxVerifiedTokens / tokenCacheShards
)

func (c *tokenCache) hash(tok string) uint64 {
	c.seedOnce.Do(func() { c.seed = maphash.MakeSeed() })
	return maphash.String(c.seed, tok)
}

func (c *tokenCache) shard(h uint64) *tokenCacheShard {
	return &c.shards[h%tokenCacheShards]
}

// get returns the cached token tok, whose hash is h, or nil.
func (c *tokenCache) get(h uint64, tok string) *verifiedToken {
	s := c.shard(h)
	s.mu.RLock()
	vt := s.m[h]
	s.mu.RUnlock()
	if vt == nil || !equalConstantTime(vt.token, tok) {
		return nil
	}
	return vt
}

func (c *tokenCache) put(h uint64, vt *verifiedToken, now time.Time) {
	s := c.shard(h)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = make(map[uint64]*verifiedToken)
	}
	if _, ok := s.m[h]; !ok && len(s.m) >= maxShardTokens {
		for k, old := range s.m {
			if !now.Before(old.expiresAt) || !now.Before(old.key.verifyUntil) {
				delete(s.m, k)
			}
		}
		if len(s.m) >= maxShardTokens {
			clear(s.m)
		}
	}
	s.m[h] = vt
}

func (c *tokenCache) remove(h uint64) {
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
	var v byte
	for i := 0; i < len(x); i++ {
		v |= x[i] ^ y[i]
	}
	return v == 0
}

// sessionCache remembers sessions recently found live in the store, for
// Config.SessionCheckCache. Revocations seen by this instance evict at
// once; those made by other instances show after at most the cache time.
//
// A check that read the store before a revocation may finish after its
// eviction; it must not put the session back. Every eviction counts, and
// a check adds its answer only if no eviction happened since it began.
type sessionCache struct {
	mu        sync.Mutex
	live      map[string]time.Time // handle -> trusted until
	evictions uint64
}

// maxCachedSessions bounds the cache; when full it is emptied, which
// costs only store reads.
const maxCachedSessions = 100_000

// has reports whether handle is trusted at now, and otherwise returns the
// mark that add needs.
func (c *sessionCache) has(handle string, now time.Time) (ok bool, mark uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	until, ok := c.live[handle]
	return ok && now.Before(until), c.evictions
}

// add trusts handle until then, unless an eviction happened after has
// returned mark.
func (c *sessionCache) add(handle string, until time.Time, mark uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.evictions != mark {
		return
	}
	if c.live == nil || len(c.live) >= maxCachedSessions {
		c.live = make(map[string]time.Time)
	}
	c.live[handle] = until
}

func (c *sessionCache) evict(handle string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.evictions++
	delete(c.live, handle)
}

// deletedUsers remembers the users this instance deleted until their last
// access tokens expire, so that their sessions stop here at once, with or
// without Config.CheckSessionInStore. Deletions are rare: while there is
// none to remember, a check costs one atomic load.
type deletedUsers struct {
	n     atomic.Int32
	mu    sync.Mutex
	until map[string]time.Time // user id -> when its tokens have expired
}

// add remembers userID until then, and forgets those whose time has
// passed at now.
func (d *deletedUsers) add(userID string, now, until time.Time) {
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
	d.until[userID] = until
	d.n.Store(int32(len(d.until)))
}

func (d *deletedUsers) has(userID string, now time.Time) bool {
	if d.n.Load() == 0 {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	until, ok := d.until[userID]
	return ok && now.Before(until)
}
