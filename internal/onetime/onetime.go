// Package onetime makes the secrets that a link or a request carries
// once: reset and verification tokens, a passkey recovery's, a
// passwordless link's. The store keeps only their SHA-256.
package onetime

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"

	"github.com/latchkit/auth/store"
)

// New returns a random token (256 bits, URL-safe base64, safe in cookies,
// headers and URLs) and its hash.
func New() (string, store.TokenHash) {
	b := make([]byte, 32)
	rand.Read(b)
	tok := base64.RawURLEncoding.EncodeToString(b)
	return tok, sha256.Sum256([]byte(tok))
}

// tokenLen is the length of every token New makes.
const tokenLen = 43

// WellFormed reports whether tok could be one New made. Anything else is
// not ours and is refused without a store lookup.
func WellFormed(tok string) bool {
	if len(tok) != tokenLen {
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
