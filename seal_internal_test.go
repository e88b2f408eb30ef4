package auth

import (
	"bytes"
	"strings"
	"testing"

	"github.com/latchkit/auth/store"
)

// The sealed format: a round trip, the layout the store sees, and every
// damaged or foreign blob refused with an error, never a panic or a key.
func TestSealFormat(t *testing.T) {
	const a, b = "0vQm3n9cXb7yVJ0qkq2cY3G6o1rj3M3sSx8b2gq1Z9Q=", "hU7c2Zk1pX0w9qF4bV8yN3mR6tL5sJ2dG1aE0iO7uYc="
	s, err := newSealer([]string{a, b})
	if err != nil {
		t.Fatal(err)
	}
	material := bytes.Repeat([]byte{7}, clearKeyLen)
	blob := s.seal("kid", HS256, material)
	if len(blob) != sealedLen || !bytes.HasPrefix(blob, []byte(sealMagic)) || blob[len(sealMagic)] != sealVersion {
		t.Fatalf("sealed: %d bytes %x", len(blob), blob)
	}
	if bytes.Contains(blob, material[:8]) {
		t.Fatal("the sealed blob contains the material")
	}
	if again := s.seal("kid", HS256, material); bytes.Equal(again, blob) {
		t.Fatal("two seals of one key are equal: the nonce is not random")
	}
	row := store.SigningKey{ID: "kid", Algorithm: HS256, Material: blob}
	got, wasSealed, err := s.open(row)
	if err != nil || !wasSealed || !bytes.Equal(got, material) {
		t.Fatalf("open: %x %v %v", got, wasSealed, err)
	}
	// Clear material passes through, secrets or not.
	for _, sl := range []*sealer{s, nil} {
		if got, wasSealed, err := sl.open(store.SigningKey{ID: "c", Algorithm: HS256, Material: material}); err != nil || wasSealed || !bytes.Equal(got, material) {
			t.Errorf("clear material: %x %v %v", got, wasSealed, err)
		}
	}

	// B alone knows A's blob by its id, and says so without trying.
	onlyB, _ := newSealer([]string{b})
	if _, _, err := onlyB.open(row); err == nil || !strings.Contains(err.Error(), "not in Config.Secrets") {
		t.Errorf("another secret: %v", err)
	}
	var none *sealer
	if _, _, err := none.open(row); err == nil || !strings.Contains(err.Error(), "Config.Secrets is empty") {
		t.Errorf("no secret: %v", err)
	}

	damaged := map[string][]byte{
		"magic only":      []byte(sealMagic),
		"truncated":       blob[:len(blob)-1],
		"extended":        append(bytes.Clone(blob), 0),
		"later version":   func() []byte { c := bytes.Clone(blob); c[len(sealMagic)]++; return c }(),
		"flipped tag":     func() []byte { c := bytes.Clone(blob); c[len(c)-1] ^= 1; return c }(),
		"flipped body":    func() []byte { c := bytes.Clone(blob); c[sealHeaderLen+12] ^= 1; return c }(),
		"flipped nonce":   func() []byte { c := bytes.Clone(blob); c[sealHeaderLen] ^= 1; return c }(),
		"unknown secret":  func() []byte { c := bytes.Clone(blob); c[len(sealMagic)+1] ^= 1; return c }(),
		"48 bytes, magic": append([]byte(sealMagic), make([]byte, 44)...),
	}
	for name, m := range damaged {
		got, _, err := s.open(store.SigningKey{ID: "kid", Algorithm: HS256, Material: m})
		if err == nil || got != nil {
			t.Errorf("%s: opened to %x", name, got)
		}
	}
	for name, r := range map[string]store.SigningKey{
		"another id":        {ID: "other", Algorithm: HS256, Material: blob},
		"another algorithm": {ID: "kid", Algorithm: refreshAlg, Material: blob},
	} {
		if _, _, err := s.open(r); err == nil || !strings.Contains(err.Error(), "copied from another key") {
			t.Errorf("%s: %v", name, err)
		}
	}
}
