package provider

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/big"
	"net/http"
	"strings"
	"testing"

	"github.com/golang-jwt/jwt/v5"
)

// Every key type a provider may sign ID tokens with is read from its
// JWKS, and a key the provider cannot use is passed over without
// refusing the rest of the set.
func TestOIDCKeyTypes(t *testing.T) {
	b64 := base64.RawURLEncoding.EncodeToString
	rsaKey, _ := keys(t)
	p256 := newECKey(t)
	p384, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	edPub, edKey, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ecJWK := func(kid, crv string, k *ecdsa.PrivateKey) map[string]string {
		size := (k.Curve.Params().BitSize + 7) / 8
		return map[string]string{"kty": "EC", "kid": kid, "crv": crv, "x": b64(k.X.FillBytes(make([]byte, size))), "y": b64(k.Y.FillBytes(make([]byte, size)))}
	}
	offCurve := ecJWK("off-curve", "P-256", p256)
	offCurve["y"] = b64(new(big.Int).Add(p256.Y, big.NewInt(1)).FillBytes(make([]byte, 32)))
	set := []map[string]string{
		// Unusable keys first: each must be skipped, not end the set.
		{"kty": "oct", "kid": "oct", "k": b64([]byte(testSecret))},
		{"kty": "EC", "kid": "k1", "crv": "secp256k1", "x": "AA", "y": "AA"},
		{"kty": "RSA", "kid": "no-n", "e": "AQAB"},
		{"kty": "RSA", "kid": "for-es256k", "alg": "ES256K", "n": b64(rsaKey.rsa.N.Bytes()), "e": "AQAB"},
		{"kty": "OKP", "kid": "x25519", "crv": "X25519", "x": b64(make([]byte, 32))},
		offCurve,
		{"kty": "RSA", "kid": rsaKey.kid, "alg": "RS256", "use": "sig", "n": b64(rsaKey.rsa.N.Bytes()), "e": "AQAB"},
		ecJWK("p256", "P-256", p256),
		ecJWK("p384", "P-384", p384),
		{"kty": "OKP", "kid": "ed", "crv": "Ed25519", "x": b64(edPub)},
	}
	f := newFakeIdP(t, "")
	f.set(func(f *fakeIdP) {
		f.doc["id_token_signing_alg_values_supported"] = []string{"RS256", "ES256", "ES384", "EdDSA"}
	})
	f.handle("/jwks", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{"keys": set})
	})
	p := newTestOIDC(t, f, nil)
	signer := func(m jwt.SigningMethod, kid string, key crypto.Signer) func(c jwt.MapClaims) string {
		return func(c jwt.MapClaims) string {
			tok := jwt.NewWithClaims(m, c)
			if kid != "" {
				tok.Header["kid"] = kid
			}
			s, err := tok.SignedString(key)
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
	}
	for _, tc := range []struct {
		name   string
		token  func(c jwt.MapClaims) string
		reason string // "" if the token is accepted
	}{
		{"RS256", signer(jwt.SigningMethodRS256, rsaKey.kid, rsaKey.rsa), ""},
		{"ES256", signer(jwt.SigningMethodES256, "p256", p256), ""},
		{"ES384", signer(jwt.SigningMethodES384, "p384", p384), ""},
		{"EdDSA", signer(jwt.SigningMethodEdDSA, "ed", edKey), ""},
		// Without a kid, every key of the set is tried.
		{"ES256 without a kid", signer(jwt.SigningMethodES256, "", p256), ""},
		{"ES256 by a skipped key's id", signer(jwt.SigningMethodES256, "off-curve", p256), "signature not verified by any key of the key set"},
		{"ES256 by another key's id", signer(jwt.SigningMethodES256, "p384", p256), "signature not verified by any key of the key set"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.set(func(f *fakeIdP) { f.idToken = tc.token })
			_, err := exchange(p)
			if tc.reason == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrIDToken) || !strings.HasSuffix(err.Error(), ": "+tc.reason) {
				t.Errorf("err = %v, want ErrIDToken with the reason %q", err, tc.reason)
			}
		})
	}
}

// The cached key set answers while it has the token's key; when it has
// none, the set is fetched again, and a failure to fetch it is told apart
// from a signature that no key verifies.
func TestOIDCKeySetRefetch(t *testing.T) {
	a, b := keys(t)
	f := newFakeIdP(t, "")
	p := newTestOIDC(t, f, nil)
	if _, err := exchange(p); err != nil {
		t.Fatal(err)
	}
	f.handle("/jwks", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, leakMarker, http.StatusServiceUnavailable)
	})
	if _, err := exchange(p); err != nil {
		t.Fatalf("a cached key needs no fetch, but: %v", err)
	}
	f.set(func(f *fakeIdP) { f.signer = b })
	_, err := exchange(p)
	if want := "the key set could not be fetched: answered 503"; !errors.Is(err, ErrIDToken) || !strings.HasSuffix(err.Error(), ": "+want) {
		t.Errorf("key set down: err = %v, want ErrIDToken with the reason %q", err, want)
	}
	checkSafe(t, err)
	// A failed fetch keeps the keys it would have replaced.
	f.set(func(f *fakeIdP) { f.signer = a })
	if _, err := exchange(p); err != nil {
		t.Errorf("the cached key after a failed fetch: %v", err)
	}
	// The key set is back, without the token's key: that is the
	// signature's failure, not the key set's.
	f.handle("/jwks", nil)
	f.set(func(f *fakeIdP) { f.signer = b })
	_, err = exchange(p)
	if want := "signature not verified by any key of the key set"; !errors.Is(err, ErrIDToken) || !strings.HasSuffix(err.Error(), ": "+want) {
		t.Errorf("key unpublished: err = %v, want ErrIDToken with the reason %q", err, want)
	}
	if n, _ := f.counts(); n != 2 {
		t.Errorf("%d JWKS fetches served, want 2", n)
	}
}
