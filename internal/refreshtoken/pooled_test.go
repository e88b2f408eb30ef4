package refreshtoken

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"hash"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/latchkit/auth/store"
)

// Mint, MintSuccessor, Parse and Authentic work in pooled buffers. These
// tests hold them to the plain code they stand in for, kept here as it
// was.

func referenceMint(key Key, handle string, gen int64, expires time.Time, secret []byte) (string, store.TokenHash, error) {
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
	b = append(b, key.MAC(nil, macLabel, b)[:16]...)
	tok := base64.RawURLEncoding.EncodeToString(b)
	return tok, sha256.Sum256([]byte(tok)), nil
}

func referenceParse(tok string) (Token, bool) {
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

func referenceAuthentic(t *Token, key Key) bool {
	return hmac.Equal(key.MAC(nil, macLabel, t.raw[:macAt])[:16], t.raw[macAt:])
}

func sameMint(t *testing.T, what string, gotTok string, gotHash store.TokenHash, gotErr error, wantTok string, wantHash store.TokenHash, wantErr error) {
	t.Helper()
	if gotTok != wantTok || gotHash != wantHash || (gotErr == nil) != (wantErr == nil) ||
		(gotErr != nil && gotErr.Error() != wantErr.Error()) {
		t.Errorf("%s = %q, %x, %v\nwant %q, %x, %v", what, gotTok, gotHash, gotErr, wantTok, wantHash, wantErr)
	}
}

// FuzzPooled mints with any key id, handle, generation, expiry, secret and
// presented token, and parses and checks any token, both ways.
func FuzzPooled(f *testing.F) {
	f.Add(testKey.id, handle, int64(7), int64(1900000000), []byte("sixteen byte sec"), goldenTok, goldenTok)
	f.Add("AAECAwQFBgcICQo", "not a uuid", int64(-1), int64(-5), []byte{}, "", goldenTok[:tokenLen-1]+"A")
	f.Add("AAECAwQFBgcICQoL=", strings.ToUpper(handle), int64(1)<<62+1, int64(1)<<41, []byte("x"), strings.Repeat("p", 300), "")
	f.Add("AAECAwQFBgcICQo+", "{"+handle+"}", int64(0), int64(0), []byte("a much longer secret than sixteen"), "legacy", strings.Repeat("A", tokenLen))
	f.Fuzz(func(t *testing.T, id, h string, gen, exp int64, secret []byte, presented, tok string) {
		keys := []hmacKey{{id: id, key: testKey.key}, {id: testKey.id, key: testKey.key}, otherKey}
		expires := time.Unix(exp, 0)
		for _, k := range keys {
			gotTok, gotHash, gotErr := Mint(k, h, gen, expires, secret)
			wantTok, wantHash, wantErr := referenceMint(k, h, gen, expires, secret)
			sameMint(t, "Mint", gotTok, gotHash, gotErr, wantTok, wantHash, wantErr)

			gotTok, gotHash, gotErr = MintSuccessor(k, h, gen, expires, presented)
			wantTok, wantHash, wantErr = referenceMint(k, h, gen, expires, SuccessorSecret(k, presented))
			sameMint(t, "MintSuccessor", gotTok, gotHash, gotErr, wantTok, wantHash, wantErr)
		}
		for _, s := range []string{tok, presented} {
			got, gotOK := Parse(s)
			want, wantOK := referenceParse(s)
			if got != want || gotOK != wantOK {
				t.Fatalf("Parse(%q) = %+v, %v\nwant %+v, %v", s, got, gotOK, want, wantOK)
			}
			for _, k := range keys {
				if g, w := got.Authentic(k), referenceAuthentic(&want, k); g != w {
					t.Errorf("Authentic(%q) with %q = %v, want %v", s, k.id, g, w)
				}
			}
		}
	})
}

func TestMintSuccessorGolden(t *testing.T) {
	next, hash, err := MintSuccessor(testKey, handle, 8, expires, goldenTok)
	if err != nil {
		t.Fatal(err)
	}
	want, wantHash, _ := Mint(testKey, handle, 8, expires, SuccessorSecret(testKey, goldenTok))
	if next != want || hash != wantHash {
		t.Errorf("MintSuccessor = %s, want %s", next, want)
	}
	got, ok := Parse(next)
	if !ok || !got.Authentic(testKey) || got.Authentic(otherKey) || got.Generation != 8 || got.Handle != handle {
		t.Errorf("Parse(MintSuccessor) = %+v, %v", got, ok)
	}
}

// The token string is what minting allocates, and the key id and the
// handle what parsing does, with a key that allocates nothing itself, as
// the library's keys do not.
func TestPooledAllocs(t *testing.T) {
	k := &reusedKey{id: testKey.id, h: hmac.New(sha256.New, testKey.key)}
	var tok string
	if n := testing.AllocsPerRun(100, func() {
		tok, _, _ = MintSuccessor(k, handle, 8, expires, goldenTok)
	}); n > 1 {
		t.Errorf("MintSuccessor: %v allocations, want 1", n)
	}
	if n := testing.AllocsPerRun(100, func() {
		p, _ := Parse(tok)
		if !p.Authentic(k) {
			t.Fatal("not authentic")
		}
	}); n > 2 {
		t.Errorf("Parse and Authentic: %v allocations, want 2", n)
	}
}

// reusedKey is a Key with one HMAC state, reset for each MAC; not for
// concurrent use.
type reusedKey struct {
	id string
	h  hash.Hash
}

func (k *reusedKey) ID() string { return k.id }

func (k *reusedKey) MAC(dst, label, msg []byte) []byte {
	k.h.Reset()
	k.h.Write(label)
	k.h.Write(msg)
	return k.h.Sum(dst)
}
