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

// deletedUsers remembers the users this instance deleted until their last
// access tokens expire (see tokencache.DeletedUsers).
type deletedUsers struct{ users tokencache.DeletedUsers }

func (d *deletedUsers) add(userID string, now, until time.Time) { d.users.Add(userID, now, until) }

func (d *deletedUsers) has(userID string, now time.Time) bool { return d.users.Has(userID, now) }
