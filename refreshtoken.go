package auth

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/latchkit/auth/store"
)

// A refresh token names its session and its generation, and is
// authenticated with a refresh key from the store, so the store needs to
// keep nothing of the tokens a session has superseded: a token with a valid
// MAC whose generation is behind its session's can only be one the server
// issued and the session has since exchanged. The store keeps the hash of
// the current token only, so a read of it cannot sign anyone in.
//
// Layout, before URL-safe base64:
//
//	version    1 byte
//	key id    12 bytes  the refresh key that made the MAC
//	handle    16 bytes  the session (a UUID)
//	generation 8 bytes  how many exchanges came before
//	expiry     8 bytes  the session's expiry when issued, Unix seconds
//	secret    16 bytes  random at sign-in, derived from the predecessor after
//	mac       16 bytes  HMAC-SHA256 of all of the above, truncated
//
// The successor of a token is a function of the token and the key that
// makes it, so an exchange repeated inside the reuse window hands back the
// very same token, whichever instance serves it.
const (
	refreshVersion  = 1
	refreshKeyIDLen = 12
	refreshRawLen   = 1 + refreshKeyIDLen + 16 + 8 + 8 + 16 + 16
	refreshMACAt    = refreshRawLen - 16
	refreshTokenLen = (refreshRawLen*8 + 5) / 6 // unpadded base64
)

// refreshToken is a parsed refresh token, not yet authenticated.
type refreshToken struct {
	raw        [refreshRawLen]byte
	keyID      string
	handle     string
	generation int64
	expires    time.Time
}

// parseRefresh reads a refresh token of the current format. It checks the
// shape only; authentic checks the MAC.
func parseRefresh(tok string) (refreshToken, bool) {
	var t refreshToken
	if len(tok) != refreshTokenLen {
		return t, false
	}
	n, err := base64.RawURLEncoding.Strict().Decode(t.raw[:], []byte(tok))
	if err != nil || n != refreshRawLen || t.raw[0] != refreshVersion {
		return t, false
	}
	b := t.raw[1:]
	t.keyID = base64.RawURLEncoding.EncodeToString(b[:refreshKeyIDLen])
	b = b[refreshKeyIDLen:]
	t.handle = uuid.UUID(b[:16]).String()
	b = b[16:]
	gen := binary.BigEndian.Uint64(b)
	expires := int64(binary.BigEndian.Uint64(b[8:]))
	if gen > 1<<62 || expires < 0 || expires > 1<<40 {
		return t, false
	}
	t.generation, t.expires = int64(gen), time.Unix(expires, 0)
	return t, true
}

// authentic reports whether key made t.
func (t *refreshToken) authentic(key *signingKey) bool {
	return hmac.Equal(refreshMAC(key, t.raw[:refreshMACAt]), t.raw[refreshMACAt:])
}

// secret is the part of t that only its holder knows.
func (t *refreshToken) secret() []byte { return t.raw[refreshMACAt-16 : refreshMACAt] }

// The labels that keep the two MACs a refresh key makes apart.
var (
	refreshMACLabel = []byte("latchkit/auth refresh token\x00")
	successorLabel  = []byte("latchkit/auth successor\x00")
)

func refreshMAC(key *signingKey, b []byte) []byte {
	var sum [sha256.Size]byte
	return key.mac(sum[:0], refreshMACLabel, b)[:16]
}

// successorSecret is the secret of the token that replaces presented: the
// same for every exchange of presented with key.
func successorSecret(key *signingKey, presented string) []byte {
	return key.mac(nil, successorLabel, []byte(presented))[:16]
}

// newRefreshSecret is the secret of a session's first token.
func newRefreshSecret() []byte {
	b := make([]byte, 16)
	rand.Read(b)
	return b
}

var errRefreshKeyID = errors.New("auth: a refresh key id is not 12 bytes of base64")

// mintRefresh makes the token of generation gen of session handle, valid
// until expires, with the given secret, and returns it with its hash.
func mintRefresh(key *signingKey, handle string, gen int64, expires time.Time, secret []byte) (string, store.TokenHash, error) {
	id, err := base64.RawURLEncoding.Strict().DecodeString(key.id)
	if err != nil || len(id) != refreshKeyIDLen {
		return "", store.TokenHash{}, errRefreshKeyID
	}
	h, err := uuid.Parse(handle)
	if err != nil {
		return "", store.TokenHash{}, err
	}
	var raw [refreshRawLen]byte
	b := append(raw[:0], refreshVersion)
	b = append(b, id...)
	b = append(b, h[:]...)
	b = binary.BigEndian.AppendUint64(b, uint64(gen))
	b = binary.BigEndian.AppendUint64(b, uint64(expires.Unix()))
	b = append(b, secret...)
	b = append(b, refreshMAC(key, b)...)
	tok := base64.RawURLEncoding.EncodeToString(b)
	return tok, sha256.Sum256([]byte(tok)), nil
}
