package refreshtoken

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"testing"
	"time"
)

// hmacKey is a Key made directly of its HMAC key.
type hmacKey struct {
	id  string
	key []byte
}

func (k hmacKey) ID() string { return k.id }

func (k hmacKey) MAC(dst, label, msg []byte) []byte {
	m := hmac.New(sha256.New, k.key)
	m.Write(label)
	m.Write(msg)
	return m.Sum(dst)
}

var (
	testKey   = hmacKey{id: "AAECAwQFBgcICQoL", key: []byte("0123456789abcdef0123456789abcdef")}
	otherKey  = hmacKey{id: testKey.id, key: []byte("fedcba9876543210fedcba9876543210")}
	handle    = "8c1f0a9e-7a43-4d33-9f5e-2b1f1f0c9d11"
	expires   = time.Unix(1900000000, 0)
	secret    = []byte("sixteen byte sec")
	goldenTok = "AQABAgMEBQYHCAkKC4wfCp56Q00zn14rHx8MnREAAAAAAAAABwAAAABxP7MAc2l4dGVlbiBieXRlIHNlYyRBCGS4Vw5nek4QyZ5TI7Y"
)

// The token is a storage and wire format: tokens issued before an upgrade
// must keep working after it, so the bytes for given inputs are pinned.
func TestMintFormat(t *testing.T) {
	tok, hash, err := Mint(testKey, handle, 7, expires, secret)
	if err != nil {
		t.Fatal(err)
	}
	if tok != goldenTok {
		t.Errorf("Mint = %s\nwant    %s", tok, goldenTok)
	}
	if got := base64.RawURLEncoding.EncodeToString(hash[:]); got != "rBOo9_P5w_a8Byyf6fm5Hx2WwujMlGIvXBvjJsL5_R8" {
		t.Errorf("hash = %s", got)
	}
	if got := base64.RawURLEncoding.EncodeToString(SuccessorSecret(testKey, tok)); got != "KDzm2CZ6xV0wia2u8Ge2Qw" {
		t.Errorf("SuccessorSecret = %s", got)
	}
}

func TestParse(t *testing.T) {
	tok, _, err := Mint(testKey, handle, 7, expires, secret)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := Parse(tok)
	if !ok || got.KeyID != testKey.id || got.Handle != handle || got.Generation != 7 || !got.Expires.Equal(expires) {
		t.Fatalf("Parse = %+v, %v", got, ok)
	}
	if !got.Authentic(testKey) {
		t.Error("not authentic with the key that made it")
	}
	if got.Authentic(otherKey) {
		t.Error("authentic with another key")
	}

	// Every single changed character either fails to parse or fails the
	// MAC: nothing in the token can be altered by its holder.
	for i := range tok {
		b := []byte(tok)
		b[i] ^= 1
		if t2, ok := Parse(string(b)); ok && t2.Authentic(testKey) {
			t.Errorf("character %d changed: still authentic", i)
		}
	}

	for name, tok := range map[string]string{
		"empty":        "",
		"short":        tok[:len(tok)-1],
		"long":         tok + "A",
		"padded":       tok[:len(tok)-1] + "=",
		"std alphabet": tok[:10] + "+" + tok[11:],
		"version 2":    mustMintVersion(t, 2),
	} {
		if _, ok := Parse(tok); ok {
			t.Errorf("%s: parsed", name)
		}
	}
}

func mustMintVersion(t *testing.T, v byte) string {
	tok, _, err := Mint(testKey, handle, 0, expires, secret)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := base64.RawURLEncoding.DecodeString(tok)
	raw[0] = v
	return base64.RawURLEncoding.EncodeToString(raw)
}

// The successor of a token is the same for every exchange with one key,
// so a repeated exchange hands back the same token; it differs with the
// key, and from one token to the next.
func TestSuccessorSecret(t *testing.T) {
	a, _, _ := Mint(testKey, handle, 0, expires, FirstSecret())
	b, _, _ := Mint(testKey, handle, 0, expires, FirstSecret())
	if a == b {
		t.Fatal("two first tokens of a session are equal: FirstSecret is not random")
	}
	s := SuccessorSecret(testKey, a)
	if len(s) != 16 || string(s) != string(SuccessorSecret(testKey, a)) {
		t.Errorf("SuccessorSecret is %d bytes, or differs between calls", len(s))
	}
	if string(s) == string(SuccessorSecret(otherKey, a)) || string(s) == string(SuccessorSecret(testKey, b)) {
		t.Error("SuccessorSecret ignores the key or the token")
	}
}

func TestMintRefuses(t *testing.T) {
	for name, tc := range map[string]struct {
		key    Key
		handle string
	}{
		"key id too short": {hmacKey{id: "AAECAwQFBgcICQo", key: testKey.key}, handle},
		"key id not b64":   {hmacKey{id: "AAECAwQFBgcICQo*", key: testKey.key}, handle},
		"handle no uuid":   {testKey, "session-1"},
	} {
		if tok, _, err := Mint(tc.key, tc.handle, 0, expires, secret); err == nil {
			t.Errorf("%s: minted %s", name, tok)
		}
	}
}

// FuzzParse: Parse never panics, and what it reads from a token is what
// minting a token with those fields writes.
func FuzzParse(f *testing.F) {
	f.Add(goldenTok)
	f.Add("")
	f.Fuzz(func(t *testing.T, tok string) {
		got, ok := Parse(tok)
		if !ok {
			return
		}
		key := hmacKey{id: got.KeyID, key: testKey.key}
		minted, _, err := Mint(key, got.Handle, got.Generation, got.Expires, got.raw[macAt-16:macAt])
		if err != nil {
			t.Fatalf("Parse(%q) = %+v, which Mint refuses: %v", tok, got, err)
		}
		again, ok := Parse(minted)
		if !ok || again.KeyID != got.KeyID || again.Handle != got.Handle || again.Generation != got.Generation ||
			!again.Expires.Equal(got.Expires) || minted[:macAt*4/3] != tok[:macAt*4/3] {
			t.Errorf("Parse(%q) = %+v; minted again %q, read as %+v", tok, got, minted, again)
		}
	})
}
