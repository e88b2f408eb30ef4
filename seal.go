package auth

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
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
// it always has.
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
		if _, _, err := a.keys.seal.open(sk); err != nil {
			return err
		}
	}
	return nil
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
