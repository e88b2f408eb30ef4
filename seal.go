package auth

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/latchkit/auth/store"
)

// Key material sealed with Config.Secrets, as the store keeps it:
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
// open. Clear material is always clearKeyLen bytes, so the length and the
// magic together tell the two apart.
//
// AES-256-GCM and HKDF come from the standard library, which keeps the
// package's dependencies as they are. Random 96-bit nonces are safe here:
// a secret seals a handful of keys a month, nowhere near GCM's 2^32.
const (
	sealMagic     = "LKSK"
	sealVersion   = 1
	sealIDLen     = 8
	sealHeaderLen = len(sealMagic) + 1 + sealIDLen
	clearKeyLen   = 32 // an HMAC-SHA256 key or an Ed25519 seed
	sealedLen     = sealHeaderLen + 12 + clearKeyLen + 16

	// minSecretLen is the shortest secret New takes: 256 bits if random.
	minSecretLen = 32

	// Labels of the keys derived from a secret. Changing one orphans
	// every key sealed before.
	sealKeyInfo = "latchkit/auth signing key seal v1"
	sealIDInfo  = "latchkit/auth signing key seal v1 secret id"

	// keyCheckTimeout bounds how long New waits for the store to say
	// whether its keys open.
	keyCheckTimeout = 10 * time.Second
)

// sealer seals and opens key material with the secrets of Config.Secrets.
// A nil or empty sealer leaves material in the clear and opens nothing
// sealed.
type sealer struct {
	secrets []sealSecret // the first seals

	// What this process found at its first read of the store: the keys
	// in the clear then, if nothing in it was sealed yet. Both keyrings
	// share the sealer, so they vouch for the same keys (see vouch).
	firstRead     sync.Mutex
	read          bool
	beforeSealing []store.SigningKey
}

type sealSecret struct {
	id   [sealIDLen]byte
	aead cipher.AEAD
}

// newSealer derives a key and an id from each secret. The secrets were
// checked by Config.withDefaults.
func newSealer(secrets []string) (*sealer, error) {
	s := &sealer{}
	for _, secret := range secrets {
		key, err := hkdf.Key(sha256.New, []byte(secret), nil, sealKeyInfo, 32)
		if err != nil {
			return nil, err
		}
		id, err := hkdf.Key(sha256.New, []byte(secret), nil, sealIDInfo, sealIDLen)
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
		s.secrets = append(s.secrets, sealSecret{id: [sealIDLen]byte(id), aead: aead})
	}
	return s, nil
}

// on reports whether new keys are sealed.
func (s *sealer) on() bool { return s != nil && len(s.secrets) > 0 }

// sealed reports whether stored material is sealed rather than clear.
// Anything with the magic that is not clear material's length counts as
// sealed, so a truncated blob is refused rather than taken for a key.
func sealed(material []byte) bool {
	return len(material) != clearKeyLen && bytes.HasPrefix(material, []byte(sealMagic))
}

// seal returns material sealed with the first secret for the key row with
// the given ID and algorithm, or material itself when there are no
// secrets.
func (s *sealer) seal(id, alg string, material []byte) []byte {
	if !s.on() {
		return material
	}
	first := s.secrets[0]
	header := make([]byte, 0, sealedLen)
	header = append(header, sealMagic...)
	header = append(header, sealVersion)
	header = append(header, first.id[:]...)
	return first.aead.Seal(header, nil, material, sealAD(header, id, alg))
}

// open returns the clear material of a stored key, and whether it was
// sealed. Clear material is returned as it is, secrets or not: keys made
// before the secret was set keep verifying until they expire.
func (s *sealer) open(sk store.SigningKey) (material []byte, wasSealed bool, err error) {
	m := sk.Material
	if !sealed(m) {
		return m, false, nil
	}
	if !s.on() {
		return nil, true, fmt.Errorf("auth: %s %q in the store is sealed, and Config.Secrets is empty: "+
			"set Config.Secrets to the secret it was sealed with", keyKind(sk.Algorithm), sk.ID)
	}
	if len(m) != sealedLen || m[len(sealMagic)] != sealVersion {
		return nil, true, fmt.Errorf("auth: %s %q in the store: sealed material is malformed or of a later version (%d bytes)",
			keyKind(sk.Algorithm), sk.ID, len(m))
	}
	header := m[:sealHeaderLen]
	id := [sealIDLen]byte(header[len(sealMagic)+1:])
	for _, secret := range s.secrets {
		if secret.id != id {
			continue
		}
		plain, err := secret.aead.Open(nil, nil, m[sealHeaderLen:], sealAD(header, sk.ID, sk.Algorithm))
		if err != nil {
			return nil, true, fmt.Errorf("auth: %s %q in the store does not open with its secret in Config.Secrets "+
				"(wrong secret, or the stored row was altered or copied from another key)", keyKind(sk.Algorithm), sk.ID)
		}
		if len(plain) != clearKeyLen {
			return nil, true, fmt.Errorf("auth: %s %q in the store: sealed material is malformed", keyKind(sk.Algorithm), sk.ID)
		}
		return plain, true, nil
	}
	return nil, true, fmt.Errorf("auth: %s %q in the store is sealed with a secret that is not in Config.Secrets "+
		"(wrong secret): keep the secret it was sealed with in the list until the key expires", keyKind(sk.Algorithm), sk.ID)
}

// sealAD binds a sealed blob to its header and to the row it belongs in.
func sealAD(header []byte, id, alg string) []byte {
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
// voucherID of the key it vouches for, its Algorithm voucherAlg. Its 32
// bytes are a digest of that key's id, algorithm and material, then the
// time it vouches until (Unix milliseconds, big-endian). A voucher copied
// to another row does not open; a vouched key whose material or id was
// changed no longer matches its digest; a voucher's row may say any
// VerifyUntil, the sealed time is the one that counts. One row per key
// rather than one list of them: MySQL's material column holds 256 bytes,
// a handful of keys, and a store may hold more clear keys than that.
const (
	voucherAlg       = "vouch"
	voucherIDPrefix  = "vouch."
	voucherDigestLen = clearKeyLen - 8
	voucherLabel     = "latchkit/auth clear key voucher v1\x00"
	// maxKeyIDLen is the widest key id every store keeps (MySQL's
	// column); a clear key whose voucher's id would be wider gets none.
	maxKeyIDLen = 64
)

func voucherID(keyID string) string { return voucherIDPrefix + keyID }

func voucherDigest(sk store.SigningKey) []byte {
	b := binary.AppendUvarint([]byte(voucherLabel), uint64(len(sk.Algorithm)))
	b = append(b, sk.Algorithm...)
	b = binary.AppendUvarint(b, uint64(len(sk.ID)))
	b = append(b, sk.ID...)
	b = append(b, sk.Material...)
	sum := sha256.Sum256(b)
	return sum[:voucherDigestLen]
}

// voucher returns the row that vouches for the clear key sk until until.
func (s *sealer) voucher(sk store.SigningKey, until, now time.Time) store.SigningKey {
	v := store.SigningKey{ID: voucherID(sk.ID), Algorithm: voucherAlg, CreatedAt: now, SignUntil: now, VerifyUntil: until}
	plain := binary.BigEndian.AppendUint64(voucherDigest(sk), uint64(until.UnixMilli()))
	v.Material = s.seal(v.ID, v.Algorithm, plain)
	return v
}

// vouchedUntil returns until when the clear key sk may verify, as its
// voucher among vouchers (by ID) says, and false if it has none that
// opens and matches it.
func (s *sealer) vouchedUntil(sk store.SigningKey, vouchers map[string]store.SigningKey) (time.Time, bool) {
	v, ok := vouchers[voucherID(sk.ID)]
	if !ok {
		return time.Time{}, false
	}
	plain, wasSealed, err := s.open(v)
	if err != nil || !wasSealed || !hmac.Equal(plain[:voucherDigestLen], voucherDigest(sk)) {
		return time.Time{}, false
	}
	return time.UnixMilli(int64(binary.BigEndian.Uint64(plain[voucherDigestLen:]))), true
}

// vouchersIn returns the vouchers among the rows of the store, by ID.
func vouchersIn(rows []store.SigningKey) map[string]store.SigningKey {
	var vouchers map[string]store.SigningKey
	for _, sk := range rows {
		if sk.Algorithm == voucherAlg {
			if vouchers == nil {
				vouchers = make(map[string]store.SigningKey)
			}
			vouchers[sk.ID] = sk
		}
	}
	return vouchers
}

// clearBeforeSealing returns the keys that were in the clear when this
// process first read the store, if nothing in it was sealed then: keys
// from before Secrets was set. The rows of the first call decide, once:
// a process that has seen anything sealed never vouches for a clear key,
// whatever later reads find, so removing the sealed rows (all of which a
// database writer can do) makes no planted key trusted while it runs.
func (s *sealer) clearBeforeSealing(rows []store.SigningKey) []store.SigningKey {
	s.firstRead.Lock()
	defer s.firstRead.Unlock()
	if !s.read {
		s.read = true
		for _, sk := range rows {
			if sealed(sk.Material) {
				s.beforeSealing = nil
				break
			}
			if sk.Algorithm != voucherAlg {
				s.beforeSealing = append(s.beforeSealing, sk)
			}
		}
	}
	return s.beforeSealing
}

func keyKind(alg string) string {
	if alg == refreshAlg {
		return "refresh key"
	}
	return "signing key"
}

// checkKeys reads the keys in the store once and reports one that cannot
// be opened with Config.Secrets, so that a wrong or missing secret stops
// the application at start rather than at its first sign-in. The store
// itself failing is not reported: New never needed the store to be up,
// and the keys are read again on first use, where the failure surfaces as
// it always has. With secrets, it vouches for the keys left in the clear
// from before they were set, if this is the first time the store is
// sealed, and logs the clear keys that will not verify.
func (a *Auth) checkKeys() (err error) {
	ctx, cancel := context.WithTimeout(context.Background(), keyCheckTimeout)
	defer cancel()
	defer func() {
		// A store that panics is as unreachable as one that errs; the
		// first request meets it again, under the handler's recover.
		if recover() != nil {
			err = nil
		}
	}()
	keys, err := a.store.SigningKeys(ctx, a.cfg.Now())
	if err != nil {
		return nil
	}
	for _, sk := range keys {
		if sk.Algorithm == voucherAlg {
			// One that does not open vouches for nothing; it stops
			// nothing else (see vouchedUntil).
			continue
		}
		if _, _, err := a.keys.seal.open(sk); err != nil {
			return err
		}
	}
	if !a.keys.seal.on() {
		return nil
	}
	a.vouchAtStart(ctx, keys)
	return nil
}

// vouchAtStart has both keyrings vouch for the keys in the clear, if this
// is the first time the store is sealed, and logs what it did and the
// clear keys that will not verify.
func (a *Auth) vouchAtStart(ctx context.Context, keys []store.SigningKey) {
	now := a.cfg.Now()
	vouched := 0
	for _, k := range []*keyring{a.keys, a.refreshKeys} {
		// A failure to write is tried again at the keyring's next load.
		n, _ := k.vouchLocked(ctx, now, keys)
		vouched += n
	}
	if vouched > 0 {
		a.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "auth: Config.Secrets is set over a store of keys in the clear: "+
			"they keep verifying until they expire, and no key written in the clear from now on ever verifies. "+
			"Expected once, when the secret is first set; at a later start it means the store's sealed keys were removed, "+
			"or the store was restored from a backup taken before the secret",
			slog.Int("keys", vouched))
		var err error
		if keys, err = a.store.SigningKeys(ctx, now); err != nil {
			return
		}
	}
	if refused := a.unvouched(keys, now); len(refused) > 0 {
		a.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "auth: keys in the clear in the store are refused: with Config.Secrets set, "+
			"only keys that were in the store before anything in it was sealed verify, until they expire",
			slog.Any("key_ids", refused))
	}
}

// unvouched returns the ids of the keys in the clear that no voucher
// lets verify at now.
func (a *Auth) unvouched(keys []store.SigningKey, now time.Time) []string {
	vouchers := vouchersIn(keys)
	var refused []string
	for _, sk := range keys {
		if sk.Algorithm == voucherAlg || sealed(sk.Material) {
			continue
		}
		if until, ok := a.keys.seal.vouchedUntil(sk, vouchers); !ok || !now.Before(until) {
			refused = append(refused, sk.ID)
		}
	}
	return refused
}

// checkSecrets refuses secrets too short or too regular to be random,
// and duplicates, which would only hide a configuration mistake.
func checkSecrets(secrets []string) error {
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
