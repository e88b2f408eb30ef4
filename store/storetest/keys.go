package storetest

import (
	"bytes"
	"testing"
	"time"

	"github.com/latchkit/auth/store"
)

var signingKeyTests = []test{
	{"AddAndList", testAddSigningKey},
	{"DuplicateID", testAddSigningKeyDuplicate},
	{"Expiry", testSigningKeysExpiry},
	{"MaterialNotAliased", testSigningKeyMaterialNotAliased},
}

func testAddSigningKey(t *testing.T, s store.Store) {
	wantKeys(t, s, base, nil, "SigningKeys: an empty store must return no keys and no error")

	// Added in an order that differs from the order of CreatedAt.
	k1 := newKey("k1", base, at(24*time.Hour), at(48*time.Hour))
	k2 := newKey("k2", at(2*time.Hour), at(26*time.Hour), at(50*time.Hour))
	k3 := newKey("k3", at(1*time.Hour), at(25*time.Hour), at(49*time.Hour))
	k3.Algorithm = "EdDSA"
	for _, k := range []store.SigningKey{k1, k2, k3} {
		mustAddKey(t, s, k)
	}
	wantKeys(t, s, at(3*time.Hour), []store.SigningKey{k2, k3, k1},
		"SigningKeys: must return the keys as added, newest first")
}

func testAddSigningKeyDuplicate(t *testing.T, s store.Store) {
	k := newKey("k1", base, at(24*time.Hour), at(48*time.Hour))
	mustAddKey(t, s, k)

	dup := newKey("k1", at(time.Hour), at(25*time.Hour), at(49*time.Hour))
	dup.Algorithm = "EdDSA"
	dup.Material = []byte("other material")
	err := s.AddSigningKey(t.Context(), dup)
	wantErr(t, err, store.ErrConflict, "AddSigningKey: a duplicate id must return ErrConflict")
	wantKeys(t, s, at(2*time.Hour), []store.SigningKey{k}, "AddSigningKey: a conflicting key must not be written or overwrite the existing one")
}

func testSigningKeysExpiry(t *testing.T, s store.Store) {
	a := newKey("a", base, at(1*time.Hour), at(2*time.Hour))
	b := newKey("b", at(1*time.Hour), at(3*time.Hour), at(4*time.Hour))
	mustAddKey(t, s, a)
	mustAddKey(t, s, b)

	wantKeys(t, s, at(30*time.Minute), []store.SigningKey{b, a},
		"SigningKeys: must return every key whose VerifyUntil is after now, newest first")
	wantKeys(t, s, at(90*time.Minute), []store.SigningKey{b, a},
		"SigningKeys: a key past SignUntil must still be returned until VerifyUntil")
	wantKeys(t, s, at(2*time.Hour-time.Millisecond), []store.SigningKey{b, a},
		"SigningKeys: a key must be returned while VerifyUntil is after now")
	wantKeys(t, s, at(2*time.Hour), []store.SigningKey{b},
		"SigningKeys: a key whose VerifyUntil equals now is not after now and must be excluded")
	wantKeys(t, s, at(5*time.Hour), nil,
		"SigningKeys: keys whose VerifyUntil has passed must be excluded")
}

func testSigningKeyMaterialNotAliased(t *testing.T, s store.Store) {
	material := make([]byte, 32)
	for i := range material {
		material[i] = byte(i + 1)
	}
	k := newKey("k1", base, at(24*time.Hour), at(48*time.Hour))
	k.Material = material
	want := k
	want.Material = bytes.Clone(material)
	mustAddKey(t, s, k)

	// The caller reuses its buffer.
	for i := range material {
		material[i] = 0
	}
	wantKeys(t, s, base, []store.SigningKey{want}, "AddSigningKey: must keep its own copy of Material")

	got, err := s.SigningKeys(t.Context(), base)
	if err != nil || len(got) != 1 {
		t.Fatalf("SigningKeys: must return the one live key; got %d keys, error %v", len(got), err)
	}
	for i := range got[0].Material {
		got[0].Material[i] ^= 0xff
	}
	wantKeys(t, s, base, []store.SigningKey{want}, "SigningKeys: must return a copy of Material that the caller may modify")
}
