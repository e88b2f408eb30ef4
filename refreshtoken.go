package auth

import (
	"time"

	"github.com/latchkit/auth/internal/refreshtoken"
	"github.com/latchkit/auth/store"
)

// mintRefresh makes the token of generation gen of session handle with
// the refresh key key (see refreshtoken.Mint).
func mintRefresh(key *signingKey, handle string, gen int64, expires time.Time, secret []byte) (string, store.TokenHash, error) {
	return refreshtoken.Mint(key, handle, gen, expires, secret)
}

// newRefreshSecret is the secret of a session's first token.
func newRefreshSecret() []byte { return refreshtoken.FirstSecret() }
