// Package refreshtoken makes and reads refresh tokens: their byte layout,
// their MAC, and how a token's successor is derived.
//
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
package refreshtoken

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

const (
	version  = 1
	keyIDLen = 12
	rawLen   = 1 + keyIDLen + 16 + 8 + 8 + 16 + 16
	macAt    = rawLen - 16
	tokenLen = (rawLen*8 + 5) / 6 // unpadded base64
)

// A Key is a refresh key: tokens name it by its id, and it makes their
// MACs.
type Key interface {
	// ID is the key's id in the store: 12 bytes in unpadded URL-safe
	// base64.
	ID() string
	// MAC appends to dst the HMAC-SHA256, with the key, of label and
	// then msg.
	MAC(dst, label, msg []byte) []byte
}

// Token is a parsed refresh token, not yet authenticated.
type Token struct {
	raw        [rawLen]byte
	KeyID      string // the refresh key that made it
	Handle     string // its session
	Generation int64  // how many exchanges came before it
	Expires    time.Time
}

// Parse reads a refresh token of the current format. It checks the shape
// only; Authentic checks the MAC.
func Parse(tok string) (Token, bool) {
	var t Token
	if len(tok) != tokenLen {
		return t, false
	}
	n, err := base64.RawURLEncoding.Strict().Decode(t.raw[:], []byte(tok))
	if err != nil || n != rawLen || t.raw[0] != version {
		return t, false
	}
	b := t.raw[1:]
	t.KeyID = base64.RawURLEncoding.EncodeToString(b[:keyIDLen])
	b = b[keyIDLen:]
	t.Handle = uuid.UUID(b[:16]).String()
	b = b[16:]
	gen := binary.BigEndian.Uint64(b)
	expires := int64(binary.BigEndian.Uint64(b[8:]))
	if gen > 1<<62 || expires < 0 || expires > 1<<40 {
		return t, false
	}
	t.Generation, t.Expires = int64(gen), time.Unix(expires, 0)
	return t, true
}

// Authentic reports whether key made t.
func (t *Token) Authentic(key Key) bool {
	return hmac.Equal(tokenMAC(key, t.raw[:macAt]), t.raw[macAt:])
}

// The labels that keep the two MACs a refresh key makes apart.
var (
	macLabel       = []byte("latchkit/auth refresh token\x00")
	successorLabel = []byte("latchkit/auth successor\x00")
)

func tokenMAC(key Key, b []byte) []byte {
	var sum [sha256.Size]byte
	return key.MAC(sum[:0], macLabel, b)[:16]
}

// SuccessorSecret is the secret of the token that replaces presented: the
// same for every exchange of presented with key.
func SuccessorSecret(key Key, presented string) []byte {
	return key.MAC(nil, successorLabel, []byte(presented))[:16]
}

// FirstSecret is the secret of a session's first token.
func FirstSecret() []byte {
	b := make([]byte, 16)
	rand.Read(b)
	return b
}

var errKeyID = errors.New("auth: a refresh key id is not 12 bytes of base64")

// Mint makes the token of generation gen of session handle, valid until
// expires, with the given secret, and returns it with its hash.
func Mint(key Key, handle string, gen int64, expires time.Time, secret []byte) (string, store.TokenHash, error) {
	id, err := base64.RawURLEncoding.Strict().DecodeString(key.ID())
	if err != nil || len(id) != keyIDLen {
		return "", store.TokenHash{}, errKeyID
	}
	h, err := uuid.Parse(handle)
	if err != nil {
		return "", store.TokenHash{}, err
	}
	var raw [rawLen]byte
	b := append(raw[:0], version)
	b = append(b, id...)
	b = append(b, h[:]...)
	b = binary.BigEndian.AppendUint64(b, uint64(gen))
	b = binary.BigEndian.AppendUint64(b, uint64(expires.Unix()))
	b = append(b, secret...)
	b = append(b, tokenMAC(key, b)...)
	tok := base64.RawURLEncoding.EncodeToString(b)
	return tok, sha256.Sum256([]byte(tok)), nil
}
