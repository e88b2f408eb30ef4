package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"

	"github.com/latchkit/auth/store"
)

// newSecret returns a random token (256 bits, URL-safe base64, safe in
// cookies, headers and URLs) and its hash: a reset or verification token,
// and the refresh tokens issued before they named their session.
func newSecret() (string, store.TokenHash) {
	b := make([]byte, 32)
	rand.Read(b)
	tok := base64.RawURLEncoding.EncodeToString(b)
	return tok, sha256.Sum256([]byte(tok))
}

// secretLen is the length of every token newSecret makes; anything else
// is not ours and is refused without a store lookup.
const secretLen = 43

func wellFormedSecret(tok string) bool {
	if len(tok) != secretLen {
		return false
	}
	for i := 0; i < len(tok); i++ {
		c := tok[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}
