package auth

import "github.com/latchkit/auth/internal/tokencache"

// tokenCache keeps the access tokens verified before (see verifyAccess).
type tokenCache = tokencache.Tokens[*verifiedToken]

// ended remembers the users this instance deleted, or the sessions it
// ended to evict a stranger, until their last access tokens expire (see
// tokencache.Ended).
type ended = tokencache.Ended
