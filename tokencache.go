package auth

import (
	"time"

	"github.com/latchkit/auth/internal/tokencache"
)

// tokenCache keeps the access tokens verified before (see verifyAccess).
type tokenCache = tokencache.Tokens[*verifiedToken]

// sessionCache remembers sessions recently found live in the store, for
// Config.SessionCheckCache (see tokencache.Sessions).
type sessionCache struct{ live tokencache.Sessions }

func (c *sessionCache) has(handle string, now time.Time) (bool, uint64) {
	return c.live.Has(handle, now)
}

func (c *sessionCache) add(handle string, until time.Time, mark uint64) {
	c.live.Add(handle, until, mark)
}

func (c *sessionCache) evict(handle string) { c.live.Evict(handle) }

// ended remembers the users this instance deleted, or the sessions it
// ended to evict a stranger, until their last access tokens expire (see
// tokencache.Ended).
type ended = tokencache.Ended
