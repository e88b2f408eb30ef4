package seal

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/latchkit/auth/store"
)

// The sealed format: a round trip, the layout the store sees, and every
// damaged or foreign blob refused with an error, never a panic or a key.
func TestSealFormat(t *testing.T) {
	const a, b = "0vQm3n9cXb7yVJ0qkq2cY3G6o1rj3M3sSx8b2gq1Z9Q=", "hU7c2Zk1pX0w9qF4bV8yN3mR6tL5sJ2dG1aE0iO7uYc="
	s, err := New([]string{a, b})
	if err != nil {
		t.Fatal(err)
	}
	material := bytes.Repeat([]byte{7}, ClearKeyLen)
	blob := s.Seal("kid", "HS256", material)
	if len(blob) != sealedLen || !bytes.HasPrefix(blob, []byte(magic)) || blob[len(magic)] != version {
		t.Fatalf("sealed: %d bytes %x", len(blob), blob)
	}
	if bytes.Contains(blob, material[:8]) {
		t.Fatal("the sealed blob contains the material")
	}
	if again := s.Seal("kid", "HS256", material); bytes.Equal(again, blob) {
		t.Fatal("two seals of one key are equal: the nonce is not random")
	}
	row := store.SigningKey{ID: "kid", Algorithm: "HS256", Material: blob}
	got, wasSealed, err := s.Open(row, "signing key")
	if err != nil || !wasSealed || !bytes.Equal(got, material) {
		t.Fatalf("open: %x %v %v", got, wasSealed, err)
	}
	// Clear material passes through, secrets or not.
	for _, sl := range []*Sealer{s, nil} {
		if got, wasSealed, err := sl.Open(store.SigningKey{ID: "c", Algorithm: "HS256", Material: material}, "signing key"); err != nil || wasSealed || !bytes.Equal(got, material) {
			t.Errorf("clear material: %x %v %v", got, wasSealed, err)
		}
	}

	// B alone knows A's blob by its id, and says so without trying.
	onlyB, _ := New([]string{b})
	if _, _, err := onlyB.Open(row, "signing key"); err == nil || !strings.Contains(err.Error(), "not in Config.Secrets") {
		t.Errorf("another secret: %v", err)
	}
	var none *Sealer
	if _, _, err := none.Open(row, "signing key"); err == nil || !strings.Contains(err.Error(), "Config.Secrets is empty") {
		t.Errorf("no secret: %v", err)
	}

	damaged := map[string][]byte{
		"magic only":      []byte(magic),
		"truncated":       blob[:len(blob)-1],
		"extended":        append(bytes.Clone(blob), 0),
		"later version":   func() []byte { c := bytes.Clone(blob); c[len(magic)]++; return c }(),
		"flipped tag":     func() []byte { c := bytes.Clone(blob); c[len(c)-1] ^= 1; return c }(),
		"flipped body":    func() []byte { c := bytes.Clone(blob); c[headerLen+12] ^= 1; return c }(),
		"flipped nonce":   func() []byte { c := bytes.Clone(blob); c[headerLen] ^= 1; return c }(),
		"unknown secret":  func() []byte { c := bytes.Clone(blob); c[len(magic)+1] ^= 1; return c }(),
		"48 bytes, magic": append([]byte(magic), make([]byte, 44)...),
	}
	for name, m := range damaged {
		got, _, err := s.Open(store.SigningKey{ID: "kid", Algorithm: "HS256", Material: m}, "signing key")
		if err == nil || got != nil {
			t.Errorf("%s: opened to %x", name, got)
		}
	}
	for name, r := range map[string]store.SigningKey{
		"another id":        {ID: "other", Algorithm: "HS256", Material: blob},
		"another algorithm": {ID: "kid", Algorithm: "refresh", Material: blob},
	} {
		if _, _, err := s.Open(r, "signing key"); err == nil || !strings.Contains(err.Error(), "copied from another key") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// Sealed rows are kept in the store across upgrades: a key and a voucher
// sealed by an earlier version of this package still open, to the same
// material and time.
func TestSealedByEarlierVersions(t *testing.T) {
	s, err := New([]string{"0vQm3n9cXb7yVJ0qkq2cY3G6o1rj3M3sSx8b2gq1Z9Q="})
	if err != nil {
		t.Fatal(err)
	}
	material := []byte("0123456789abcdef0123456789abcdef")
	key := store.SigningKey{ID: "kid", Algorithm: "HS256",
		Material: mustBase64(t, "TEtTSwFVg1+qzfnaqMhZNayaNeW8SK19fu4t/KBWKTqkrTfTBXFqNtre7Clj1DwKEzeq80IBZi3chw1w4PHRdMCfO8jD7TkXQA==")}
	if got, wasSealed, err := s.Open(key, "signing key"); err != nil || !wasSealed || !bytes.Equal(got, material) {
		t.Errorf("sealed key: %q %v %v", got, wasSealed, err)
	}

	clear := store.SigningKey{ID: "clear-key", Algorithm: "HS256", Material: material}
	voucher := store.SigningKey{ID: "vouch.clear-key", Algorithm: VoucherAlg,
		Material: mustBase64(t, "TEtTSwFVg1+qzfnaqI6iRQHgdAn7Gb9FXwNs7reF/wXd2lIOeTX7WbegkAP/pEJ5o1lOyKr6ohlkJLCGA4/HtXi1X6e9DbyQdw==")}
	if VoucherID(clear.ID) != voucher.ID {
		t.Errorf("VoucherID(%q) = %q, want %q", clear.ID, VoucherID(clear.ID), voucher.ID)
	}
	until, ok := s.VouchedUntil(clear, Vouchers([]store.SigningKey{clear, voucher}))
	if want := time.UnixMilli(1900000000123); !ok || !until.Equal(want) {
		t.Errorf("VouchedUntil = %v, %v; want %v, true", until, ok, want)
	}
	clear.Material = bytes.Repeat([]byte{1}, ClearKeyLen)
	if _, ok := s.VouchedUntil(clear, Vouchers([]store.SigningKey{clear, voucher})); ok {
		t.Error("a voucher vouches for a key whose material changed")
	}
}

func mustBase64(t *testing.T, s string) []byte {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
