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
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/latchkit/auth/store"
)

const (
	version   = 1
	keyIDLen  = 12
	keyIDText = (keyIDLen*8 + 5) / 6 // a key id in unpadded base64
	rawLen    = 1 + keyIDLen + 16 + 8 + 8 + 16 + 16
	macAt     = rawLen - 16
	tokenLen  = (rawLen*8 + 5) / 6 // unpadded base64
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

// strictRaw is the encoding of tokens and key ids, which decodes each
// text of bytes one way only.
var strictRaw = base64.RawURLEncoding.Strict()

// scratch holds the bytes a token's making or checking passes to a Key.
// What a call through an interface is given escapes to the heap, so the
// buffers are taken from a pool rather than made on each call.
type scratch struct {
	raw [rawLen]byte
	sum [sha256.Size]byte
	enc [tokenLen]byte
	msg [256]byte // a presented token, for the successor's secret
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// Parse reads a refresh token of the current format. It checks the shape
// only; Authentic checks the MAC.
func Parse(tok string) (Token, bool) {
	var t Token
	if len(tok) != tokenLen {
		return t, false
	}
	var in [tokenLen]byte
	copy(in[:], tok)
	n, err := strictRaw.Decode(t.raw[:], in[:])
	if err != nil || n != rawLen || t.raw[0] != version {
		return t, false
	}
	b := t.raw[1:]
	var id [keyIDText]byte
	base64.RawURLEncoding.Encode(id[:], b[:keyIDLen])
	t.KeyID = string(id[:])
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
	s := scratchPool.Get().(*scratch)
	defer scratchPool.Put(s)
	copy(s.raw[:], t.raw[:])
	return hmac.Equal(tokenMAC(s, key, s.raw[:macAt]), t.raw[macAt:])
}

// The labels that keep the two MACs a refresh key makes apart.
var (
	macLabel       = []byte("latchkit/auth refresh token\x00")
	successorLabel = []byte("latchkit/auth successor\x00")
)

// tokenMAC is the MAC of a token's bytes b, in s.
func tokenMAC(s *scratch, key Key, b []byte) []byte {
	return key.MAC(s.sum[:0], macLabel, b)[:16]
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
	s := scratchPool.Get().(*scratch)
	defer scratchPool.Put(s)
	return mint(s, key, handle, gen, expires, secret)
}

// MintSuccessor is Mint with the secret SuccessorSecret(key, presented):
// the successor of presented, in generation gen.
func MintSuccessor(key Key, handle string, gen int64, expires time.Time, presented string) (string, store.TokenHash, error) {
	s := scratchPool.Get().(*scratch)
	defer scratchPool.Put(s)
	var msg []byte
	if len(presented) <= len(s.msg) {
		msg = append(s.msg[:0], presented...)
	} else {
		msg = []byte(presented)
	}
	var secret [16]byte
	copy(secret[:], key.MAC(s.sum[:0], successorLabel, msg)[:16])
	return mint(s, key, handle, gen, expires, secret[:])
}

// mint is Mint with the buffers of s. The token string is its one
// allocation.
func mint(s *scratch, key Key, handle string, gen int64, expires time.Time, secret []byte) (string, store.TokenHash, error) {
	id, ok := keyID(s, key.ID())
	if !ok {
		return "", store.TokenHash{}, errKeyID
	}
	h, err := uuid.Parse(handle)
	if err != nil {
		return "", store.TokenHash{}, err
	}
	b := append(s.raw[:0], version)
	b = append(b, id[:]...)
	b = append(b, h[:]...)
	b = binary.BigEndian.AppendUint64(b, uint64(gen))
	b = binary.BigEndian.AppendUint64(b, uint64(expires.Unix()))
	b = append(b, secret...)
	b = append(b, tokenMAC(s, key, b)...)
	enc := base64.RawURLEncoding.AppendEncode(s.enc[:0], b)
	return string(enc), sha256.Sum256(enc), nil
}

// keyID decodes a key's id, which is keyIDLen bytes of base64; ok is false
// when it is not. The decoder skips newlines, so the text may be longer
// than keyIDText.
func keyID(s *scratch, kid string) (id [keyIDLen]byte, ok bool) {
	var dec [48]byte // the most that 64 characters decode to
	var n int
	var err error
	if len(kid) <= 64 {
		n, err = strictRaw.Decode(dec[:], append(s.msg[:0], kid...))
	} else {
		var b []byte
		b, err = strictRaw.DecodeString(kid)
		n = copy(dec[:], b)
		if len(b) != n {
			return id, false
		}
	}
	copy(id[:], dec[:n])
	return id, err == nil && n == keyIDLen
}
