package provider

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"slices"
	"sync"

	"github.com/coreos/go-oidc/v3/oidc"
)

// keySet is a provider's JWKS as go-oidc's verifier sees it: an
// oidc.KeySet that keeps the keys across sign-ins and fetches them again
// when none of them verifies a signature, as a provider may have rotated
// its keys. It stands in for go-oidc's remote key set because go-oidc
// reports a key set it could not fetch, a signature no key verifies and
// claims that do not parse only as text; keySet reports which of them it
// was through the keyCheck in the context.
type keySet struct {
	url  string
	http *http.Client

	mu   sync.Mutex
	keys []jwk
}

type jwk struct {
	kid string
	key crypto.PublicKey
}

// keyCheck is what a keySet found while go-oidc verified one ID token.
type keyCheck struct {
	// consulted is false if go-oidc refused the token before asking for
	// its signature: it is not a signed compact JWS.
	consulted bool
	// fetchErr is why the key set, needed again, could not be fetched.
	fetchErr error
	// verified is true if a key verified the signature, so that a
	// failure of go-oidc after it is about the claims.
	verified bool
}

type keyCheckKey struct{}

// VerifySignature implements oidc.KeySet. go-oidc calls it once it has
// taken the token's form and algorithm; the signature is then checked by
// go-oidc's static key set, with the keys that carry the token's key id.
func (s *keySet) VerifySignature(ctx context.Context, jwt string) ([]byte, error) {
	kc, _ := ctx.Value(keyCheckKey{}).(*keyCheck)
	if kc == nil {
		kc = new(keyCheck)
	}
	kc.consulted = true
	_, kid := jwsHeader(jwt)
	payload, err := (&oidc.StaticKeySet{PublicKeys: s.signers(kid)}).VerifySignature(ctx, jwt)
	if err != nil {
		if kc.fetchErr = s.refresh(ctx); kc.fetchErr != nil {
			return nil, kc.fetchErr
		}
		payload, err = (&oidc.StaticKeySet{PublicKeys: s.signers(kid)}).VerifySignature(ctx, jwt)
		if err != nil {
			return nil, err
		}
	}
	kc.verified = true
	return payload, nil
}

// signers returns the keys that may have signed a token with key id kid:
// those with that id, or all of them if kid is "".
func (s *keySet) signers(kid string) []crypto.PublicKey {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []crypto.PublicKey
	for _, k := range s.keys {
		if kid == "" || k.kid == kid {
			out = append(out, k.key)
		}
	}
	return out
}

// refresh fetches the key set and keeps it. Concurrent calls may each
// fetch; the last success is kept.
func (s *keySet) refresh(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url, nil)
	if err != nil {
		return errors.New("bad URL")
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Cache-Control", "no-cache")
	res, err := s.http.Do(req)
	if err != nil {
		return cause(err, "request failed")
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("answered %d", res.StatusCode)
	}
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.NewDecoder(res.Body).Decode(&set); err != nil {
		return cause(err, "not JSON")
	}
	var keys []jwk
	for _, raw := range set.Keys {
		if k, ok := parseJWK(raw); ok {
			keys = append(keys, k)
		}
	}
	s.mu.Lock()
	s.keys = keys
	s.mu.Unlock()
	return nil
}

var curves = map[string]elliptic.Curve{"P-256": elliptic.P256(), "P-384": elliptic.P384(), "P-521": elliptic.P521()}

// parseJWK returns the public key of raw, a JWK, if it can check one of
// the accepted algorithms. A key of another type, curve or algorithm, or
// that lacks a member or holds a bad one, is skipped, as RFC 7517 section
// 5 asks, so that one such key does not stop sign-ins with the others.
func parseJWK(raw json.RawMessage) (jwk, bool) {
	var k struct {
		Kty string `json:"kty"`
		Kid string `json:"kid"`
		Alg string `json:"alg"`
		Crv string `json:"crv"`
		N   string `json:"n"`
		E   string `json:"e"`
		X   string `json:"x"`
		Y   string `json:"y"`
	}
	if json.Unmarshal(raw, &k) != nil || k.Alg != "" && !slices.Contains(asymmetric, k.Alg) {
		return jwk{}, false
	}
	b64 := base64.RawURLEncoding.DecodeString
	var key crypto.PublicKey
	switch k.Kty {
	case "RSA":
		n, errN := b64(k.N)
		e, errE := b64(k.E)
		if errN != nil || errE != nil || len(n) == 0 || len(e) == 0 || len(e) > 4 {
			return jwk{}, false
		}
		exp := 0
		for _, b := range e {
			exp = exp<<8 | int(b)
		}
		key = &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: exp}
	case "EC":
		curve, ok := curves[k.Crv]
		x, errX := b64(k.X)
		y, errY := b64(k.Y)
		if !ok || errX != nil || errY != nil {
			return jwk{}, false
		}
		size := (curve.Params().BitSize + 7) / 8
		if len(x) != size || len(y) != size {
			return jwk{}, false
		}
		pub, err := ecdsa.ParseUncompressedPublicKey(curve, append(append([]byte{4}, x...), y...))
		if err != nil {
			return jwk{}, false
		}
		key = pub
	case "OKP":
		x, err := b64(k.X)
		if k.Crv != "Ed25519" || err != nil || len(x) != ed25519.PublicKeySize {
			return jwk{}, false
		}
		key = ed25519.PublicKey(x)
	default:
		return jwk{}, false
	}
	return jwk{kid: k.Kid, key: key}, true
}
