// Package seal seals the key material in the store's signing-key rows
// with the application's secrets, and vouches for the keys that were in
// the clear before the store was first sealed.
//
// Key material sealed with a secret, as the store keeps it:
//
//	magic      4 bytes  "LKSK", to tell it from clear material at a glance
//	version    1 byte
//	secret id  8 bytes  which secret sealed it, so opening needs no trial
//	nonce     12 bytes  random
//	ciphertext 32 bytes the material, AES-256-GCM
//	tag       16 bytes
//
// The additional data is the header and the key's ID and Algorithm: a
// sealed blob copied to another row, or another kind of key, does not
// open. Clear material is always ClearKeyLen bytes, so the length and the
// magic together tell the two apart.
//
// AES-256-GCM and HKDF come from the standard library, which keeps the
// package's dependencies as they are. Random 96-bit nonces are safe here:
// a secret seals a handful of keys a month, nowhere near GCM's 2^32.
package seal

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"sync"
	"time"

	"github.com/latchkit/auth/store"
)

const (
	magic       = "LKSK"
	version     = 1
	idLen       = 8
	headerLen   = len(magic) + 1 + idLen
	ClearKeyLen = 32 // an HMAC-SHA256 key or an Ed25519 seed
	sealedLen   = headerLen + 12 + ClearKeyLen + 16

	// minSecretLen is the shortest secret New takes: 256 bits if random.
	minSecretLen = 32

	// Labels of the keys derived from a secret. Changing one orphans
	// every key sealed before.
	keyInfo = "latchkit/auth signing key seal v1"
	idInfo  = "latchkit/auth signing key seal v1 secret id"
)

// Sealer seals and opens key material with the secrets of Config.Secrets.
// A nil or empty Sealer leaves material in the clear and opens nothing
// sealed.
type Sealer struct {
	secrets []secret // the first seals

	// What this process found at its first read of the store: the keys
	// in the clear then, if nothing in it was sealed yet. Both keyrings
	// share the Sealer, so they vouch for the same keys.
	firstRead     sync.Mutex
	read          bool
	beforeSealing []store.SigningKey
}

type secret struct {
	id   [idLen]byte
	aead cipher.AEAD
}

// New derives a key and an id from each secret. The secrets were checked
// by CheckSecrets.
func New(secrets []string) (*Sealer, error) {
	s := &Sealer{}
	for _, sec := range secrets {
		key, err := hkdf.Key(sha256.New, []byte(sec), nil, keyInfo, 32)
		if err != nil {
			return nil, err
		}
		id, err := hkdf.Key(sha256.New, []byte(sec), nil, idInfo, idLen)
		if err != nil {
			return nil, err
		}
		block, err := aes.NewCipher(key)
		if err != nil {
			return nil, err
		}
		aead, err := cipher.NewGCMWithRandomNonce(block)
		if err != nil {
			return nil, err
		}
		s.secrets = append(s.secrets, secret{id: [idLen]byte(id), aead: aead})
	}
	return s, nil
}

// On reports whether new keys are sealed.
func (s *Sealer) On() bool { return s != nil && len(s.secrets) > 0 }

// Sealed reports whether stored material is sealed rather than clear.
// Anything with the magic that is not clear material's length counts as
// sealed, so a truncated blob is refused rather than taken for a key.
func Sealed(material []byte) bool {
	return len(material) != ClearKeyLen && bytes.HasPrefix(material, []byte(magic))
}

// Seal returns material sealed with the first secret for the key row with
// the given ID and algorithm, or material itself when there are no
// secrets.
func (s *Sealer) Seal(id, alg string, material []byte) []byte {
	if !s.On() {
		return material
	}
	first := s.secrets[0]
	header := make([]byte, 0, sealedLen)
	header = append(header, magic...)
	header = append(header, version)
	header = append(header, first.id[:]...)
	return first.aead.Seal(header, nil, material, additionalData(header, id, alg))
}

// Open returns the clear material of a stored key, and whether it was
// sealed. Clear material is returned as it is, secrets or not: keys made
// before the secret was set keep verifying until they expire. kind names
// the key in errors ("signing key", "refresh key").
func (s *Sealer) Open(sk store.SigningKey, kind string) (material []byte, wasSealed bool, err error) {
	m := sk.Material
	if !Sealed(m) {
		return m, false, nil
	}
	if !s.On() {
		return nil, true, fmt.Errorf("auth: %s %q in the store is sealed, and Config.Secrets is empty: "+
			"set Config.Secrets to the secret it was sealed with", kind, sk.ID)
	}
	if len(m) != sealedLen || m[len(magic)] != version {
		return nil, true, fmt.Errorf("auth: %s %q in the store: sealed material is malformed or of a later version (%d bytes)",
			kind, sk.ID, len(m))
	}
	header := m[:headerLen]
	id := [idLen]byte(header[len(magic)+1:])
	for _, sec := range s.secrets {
		if sec.id != id {
			continue
		}
		plain, err := sec.aead.Open(nil, nil, m[headerLen:], additionalData(header, sk.ID, sk.Algorithm))
		if err != nil {
			return nil, true, fmt.Errorf("auth: %s %q in the store does not open with its secret in Config.Secrets "+
				"(wrong secret, or the stored row was altered or copied from another key)", kind, sk.ID)
		}
		if len(plain) != ClearKeyLen {
			return nil, true, fmt.Errorf("auth: %s %q in the store: sealed material is malformed", kind, sk.ID)
		}
		return plain, true, nil
	}
	return nil, true, fmt.Errorf("auth: %s %q in the store is sealed with a secret that is not in Config.Secrets "+
		"(wrong secret): keep the secret it was sealed with in the list until the key expires", kind, sk.ID)
}

// additionalData binds a sealed blob to its header and to the row it
// belongs in.
func additionalData(header []byte, id, alg string) []byte {
	ad := append([]byte(nil), header...)
	ad = binary.AppendUvarint(ad, uint64(len(id)))
	ad = append(ad, id...)
	return append(ad, alg...)
}

// A voucher is a sealed row that lets a key stored in the clear verify
// while Config.Secrets is set. Only the keys that were in the store before
// anything in it was sealed get one, so a key written in the clear later,
// by someone who can write to the database but has not the secret,
// verifies nowhere: a clear key without a voucher is never used.
//
// A voucher is sealed like a key, so it is bound to its row: its ID is
// VoucherID of the key it vouches for, its Algorithm VoucherAlg. Its 32
// bytes are a digest of that key's id, algorithm and material, then the
// time it vouches until (Unix milliseconds, big-endian). A voucher copied
// to another row does not open; a vouched key whose material or id was
// changed no longer matches its digest; a voucher's row may say any
// VerifyUntil, the sealed time is the one that counts. One row per key
// rather than one list of them: MySQL's material column holds 256 bytes,
// a handful of keys, and a store may hold more clear keys than that.
const (
	VoucherAlg       = "vouch"
	voucherIDPrefix  = "vouch."
	voucherDigestLen = ClearKeyLen - 8
	voucherLabel     = "latchkit/auth clear key voucher v1\x00"
	// MaxKeyIDLen is the widest key id every store keeps (MySQL's
	// column); a clear key whose voucher's id would be wider gets none.
	MaxKeyIDLen = 64
)

// VoucherID is the ID of the row that vouches for the key keyID.
func VoucherID(keyID string) string { return voucherIDPrefix + keyID }

func voucherDigest(sk store.SigningKey) []byte {
	b := binary.AppendUvarint([]byte(voucherLabel), uint64(len(sk.Algorithm)))
	b = append(b, sk.Algorithm...)
	b = binary.AppendUvarint(b, uint64(len(sk.ID)))
	b = append(b, sk.ID...)
	b = append(b, sk.Material...)
	sum := sha256.Sum256(b)
	return sum[:voucherDigestLen]
}

// Voucher returns the row that vouches for the clear key sk until until.
func (s *Sealer) Voucher(sk store.SigningKey, until, now time.Time) store.SigningKey {
	v := store.SigningKey{ID: VoucherID(sk.ID), Algorithm: VoucherAlg, CreatedAt: now, SignUntil: now, VerifyUntil: until}
	plain := binary.BigEndian.AppendUint64(voucherDigest(sk), uint64(until.UnixMilli()))
	v.Material = s.Seal(v.ID, v.Algorithm, plain)
	return v
}

// VouchedUntil returns until when the clear key sk may verify, as its
// voucher among vouchers (by ID) says, and false if it has none that
// opens and matches it.
func (s *Sealer) VouchedUntil(sk store.SigningKey, vouchers map[string]store.SigningKey) (time.Time, bool) {
	v, ok := vouchers[VoucherID(sk.ID)]
	if !ok {
		return time.Time{}, false
	}
	plain, wasSealed, err := s.Open(v, "voucher")
	if err != nil || !wasSealed || !hmac.Equal(plain[:voucherDigestLen], voucherDigest(sk)) {
		return time.Time{}, false
	}
	return time.UnixMilli(int64(binary.BigEndian.Uint64(plain[voucherDigestLen:]))), true
}

// Vouchers returns the vouchers among the rows of the store, by ID.
func Vouchers(rows []store.SigningKey) map[string]store.SigningKey {
	var vouchers map[string]store.SigningKey
	for _, sk := range rows {
		if sk.Algorithm == VoucherAlg {
			if vouchers == nil {
				vouchers = make(map[string]store.SigningKey)
			}
			vouchers[sk.ID] = sk
		}
	}
	return vouchers
}

// ClearBeforeSealing returns the keys that were in the clear when this
// process first read the store, if nothing in it was sealed then: keys
// from before Secrets was set. The rows of the first call decide, once:
// a process that has seen anything sealed never vouches for a clear key,
// whatever later reads find, so removing the sealed rows (all of which a
// database writer can do) makes no planted key trusted while it runs.
func (s *Sealer) ClearBeforeSealing(rows []store.SigningKey) []store.SigningKey {
	s.firstRead.Lock()
	defer s.firstRead.Unlock()
	if !s.read {
		s.read = true
		for _, sk := range rows {
			if Sealed(sk.Material) {
				s.beforeSealing = nil
				break
			}
			if sk.Algorithm != VoucherAlg {
				s.beforeSealing = append(s.beforeSealing, sk)
			}
		}
	}
	return s.beforeSealing
}

// CheckSecrets refuses secrets too short or too regular to be random,
// and duplicates, which would only hide a configuration mistake.
func CheckSecrets(secrets []string) error {
	for i, s := range secrets {
		if len(s) < minSecretLen {
			return fmt.Errorf("auth: Config.Secrets[%d] is %d bytes; want at least %d random bytes, such as the output of `openssl rand -base64 32`",
				i, len(s), minSecretLen)
		}
		if weakSecret(s) {
			return fmt.Errorf("auth: Config.Secrets[%d] is not random (a short pattern repeated, or few distinct characters); "+
				"use the output of `openssl rand -base64 32`", i)
		}
		for j := range i {
			if secrets[j] == s {
				return fmt.Errorf("auth: Config.Secrets[%d] repeats Config.Secrets[%d]", i, j)
			}
		}
	}
	return nil
}

// weakSecret catches placeholders ("changeme" four times, "xxxx…"), not
// low entropy in general: random secrets of any common encoding pass.
func weakSecret(s string) bool {
	var seen [256]bool
	distinct := 0
	for i := 0; i < len(s); i++ {
		if !seen[s[i]] {
			seen[s[i]] = true
			distinct++
		}
	}
	if distinct < 6 {
		return true
	}
	for p := 1; p <= len(s)/2; p++ {
		if s[p:] == s[:len(s)-p] {
			return true
		}
	}
	return false
}

// A sealed value is a secret the library keeps for a user rather than a
// key, such as a TOTP device's secret, sealed like key material but of any
// length and under its own magic:
//
//	magic      4 bytes  "LKSV"
//	version    1 byte
//	secret id  8 bytes
//	nonce     12 bytes
//	ciphertext the value, AES-256-GCM
//	tag       16 bytes
//
// The additional data is the header and the value's name, which binds it
// to its owner and place: a secret copied to another user's record does
// not open.
const valueMagic = "LKSV"

// SealValue returns plain sealed with the first secret under name. The
// Sealer must be On.
func (s *Sealer) SealValue(name string, plain []byte) []byte {
	first := s.secrets[0]
	header := make([]byte, 0, headerLen)
	header = append(header, valueMagic...)
	header = append(header, version)
	header = append(header, first.id[:]...)
	return first.aead.Seal(header, nil, plain, additionalData(header, name, "value"))
}

// OpenValue opens a value sealed by SealValue under name, with whichever
// secret sealed it.
func (s *Sealer) OpenValue(name string, m []byte) ([]byte, error) {
	if len(m) < headerLen+12+16 || !bytes.HasPrefix(m, []byte(valueMagic)) || m[len(valueMagic)] != version {
		return nil, fmt.Errorf("auth: sealed %s is malformed or of a later version", name)
	}
	if !s.On() {
		return nil, fmt.Errorf("auth: %s is sealed, and Config.Secrets is empty: set Config.Secrets to the secret it was sealed with", name)
	}
	header := m[:headerLen]
	id := [idLen]byte(header[len(valueMagic)+1:])
	for _, sec := range s.secrets {
		if sec.id == id {
			plain, err := sec.aead.Open(nil, nil, m[headerLen:], additionalData(header, name, "value"))
			if err != nil {
				return nil, fmt.Errorf("auth: %s does not open with its secret in Config.Secrets (wrong secret, or the record was altered or copied)", name)
			}
			return plain, nil
		}
	}
	return nil, fmt.Errorf("auth: %s is sealed with a secret that is not in Config.Secrets: keep that secret in the list", name)
}
