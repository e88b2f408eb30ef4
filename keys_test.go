package auth_test

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/store"
	"github.com/latchkit/auth/store/memstore"
)

// kid returns the key id in the header of a JWT.
func kid(t *testing.T, jwt string) string {
	t.Helper()
	h, _, _ := strings.Cut(jwt, ".")
	b, err := base64.RawURLEncoding.DecodeString(h)
	if err != nil {
		t.Fatalf("token header: %v", err)
	}
	var v struct{ Kid string }
	if err := json.Unmarshal(b, &v); err != nil || v.Kid == "" {
		t.Fatalf("token header %s: no kid", b)
	}
	return v.Kid
}

// Keys rotate after SigningKeyLifetime. A token signed with the previous
// key keeps working until it expires, and an instance that has not seen the
// new key yet loads it from the shared store on demand.
func TestSigningKeyRotation(t *testing.T) {
	st := memstore.New()
	clock := authtest.NewClock(authtest.Start)
	cfg := auth.Config{Store: st, Now: clock.Now, SigningKeyLifetime: 24 * time.Hour}
	one := authtest.NewServer(t, cfg)
	two := authtest.NewServer(t, cfg)

	early, _ := one.SignedIn(authtest.Header) // makes the first key
	clock.Advance(24*time.Hour - time.Minute)
	before, _ := one.SignedIn(authtest.Header)
	access, _ := before.Tokens()
	oldKid := kid(t, access)
	if early, _ := early.Tokens(); kid(t, early) != oldKid {
		t.Fatal("two keys within one signing lifetime")
	}
	onTwo := two.NewClient(authtest.Header)
	onTwo.AccessToken = access
	if res := onTwo.Get("/api/session"); res.StatusCode != http.StatusOK {
		t.Fatalf("a token of instance one on instance two: %d %s", res.StatusCode, res.Body)
	}

	clock.Advance(2 * time.Minute) // the first key stops signing
	after, _ := one.SignedIn(authtest.Header)
	newAccess, _ := after.Tokens()
	if kid(t, newAccess) == oldKid {
		t.Fatalf("a token issued after the signing lifetime still uses kid %s", oldKid)
	}
	// Instance two knows only the first key so far.
	onTwo.AccessToken = newAccess
	if res := onTwo.Get("/api/session"); res.StatusCode != http.StatusOK {
		t.Errorf("a token of the new key on an instance that had not seen it: %d %s", res.StatusCode, res.Body)
	}
	if res := before.Get("/api/session"); res.StatusCode != http.StatusOK {
		t.Errorf("a token of the previous key within its lifetime: %d %s", res.StatusCode, res.Body)
	}

	clock.Advance(time.Hour)
	if res := before.Get("/api/session"); res.StatusCode != http.StatusUnauthorized || res.Message != "try refresh token" {
		t.Errorf("a token of the previous key after its hour: %d %s; want 401 try refresh token", res.StatusCode, res.Body)
	}
	if res := before.Refresh(); res.StatusCode != http.StatusOK {
		t.Fatalf("refresh: %d %s", res.StatusCode, res.Body)
	}
	if access, _ := before.Tokens(); kid(t, access) == oldKid {
		t.Error("a refresh after the rotation signed with the retired key")
	}
}

// An instance's JWKS shows keys that another instance added, within the
// freshness it advertises, even while its own key still signs.
func TestJWKSSeesKeysOfOtherInstances(t *testing.T) {
	st := memstore.New()
	clock := authtest.NewClock(authtest.Start)
	s := authtest.NewServer(t, auth.Config{Store: st, Now: clock.Now, SigningAlgorithm: auth.EdDSA})
	kids := func() []string {
		res := s.NewClient(authtest.Header).Get("/auth/jwt/jwks.json")
		var set struct{ Keys []struct{ Kid string } }
		if err := json.Unmarshal(res.Body, &set); err != nil || res.StatusCode != http.StatusOK {
			t.Fatalf("jwks: %d %s", res.StatusCode, res.Body)
		}
		var ids []string
		for _, k := range set.Keys {
			ids = append(ids, k.Kid)
		}
		return ids
	}
	if got := kids(); len(got) != 1 {
		t.Fatalf("jwks = %v, want one key", got)
	}
	// Another instance, racing this one, made a key of its own.
	now := clock.Now()
	if err := st.AddSigningKey(t.Context(), store.SigningKey{
		ID: "other-instance", Algorithm: auth.EdDSA, Material: make([]byte, 32),
		CreatedAt: now, SignUntil: now.Add(time.Hour), VerifyUntil: now.Add(2 * time.Hour),
	}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(31 * time.Second)
	if got := kids(); len(got) != 2 || !slices.Contains(got, "other-instance") {
		t.Errorf("jwks 31s after another instance added a key = %v, want it listed", got)
	}
}

func TestJWKS(t *testing.T) {
	t.Parallel()
	t.Run("HS256 has none", func(t *testing.T) {
		t.Parallel()
		s := authtest.NewServer(t, auth.Config{})
		s.SignedIn(authtest.Header)
		res := send(t, s, "GET", "/auth/jwt/jwks.json", "", nil)
		if res.StatusCode != http.StatusNotFound {
			t.Fatalf("got %d %s, want 404", res.StatusCode, res.Body)
		}
	})
	t.Run("EdDSA", func(t *testing.T) {
		t.Parallel()
		s := authtest.NewServer(t, auth.Config{SigningAlgorithm: auth.EdDSA})
		c, u := s.SignedIn(authtest.Header)
		wantSession(t, c, u.ID)
		access, _ := c.Tokens()
		header, _ := jwtParts(t, access)
		if header["alg"] != "EdDSA" {
			t.Fatalf("access token header %v", header)
		}
		res := send(t, s, "GET", "/auth/jwt/jwks.json", "", nil)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("jwks: %d %s", res.StatusCode, res.Body)
		}
		var set struct {
			Keys []map[string]string `json:"keys"`
		}
		if err := json.Unmarshal(res.Body, &set); err != nil {
			t.Fatal(err)
		}
		var jwk map[string]string
		for _, k := range set.Keys {
			if k["kid"] == header["kid"] {
				jwk = k
			}
		}
		if jwk == nil {
			t.Fatalf("no key with kid %v in %s", header["kid"], res.Body)
		}
		if jwk["kty"] != "OKP" || jwk["crv"] != "Ed25519" || jwk["alg"] != "EdDSA" || jwk["use"] != "sig" {
			t.Errorf("jwk %v", jwk)
		}
		if _, ok := jwk["d"]; ok {
			t.Fatal("the JWKS leaks the private key")
		}
		pub, err := base64.RawURLEncoding.DecodeString(jwk["x"])
		if err != nil || len(pub) != ed25519.PublicKeySize {
			t.Fatalf("x %q: %v", jwk["x"], err)
		}
		dot := strings.LastIndexByte(access, '.')
		sig, err := base64.RawURLEncoding.DecodeString(access[dot+1:])
		if err != nil {
			t.Fatal(err)
		}
		if !ed25519.Verify(pub, []byte(access[:dot]), sig) {
			t.Error("the access token does not verify with the published key")
		}
		if ed25519.Verify(pub, []byte(access[:dot]+"x"), sig) {
			t.Error("the published key verifies anything")
		}
		// Refreshed tokens verify too.
		res = c.Refresh()
		access, _ = wantTokens(t, s, res, authtest.Header, u.ID)
		dot = strings.LastIndexByte(access, '.')
		sig, _ = base64.RawURLEncoding.DecodeString(access[dot+1:])
		if !ed25519.Verify(pub, []byte(access[:dot]), sig) {
			t.Error("the refreshed access token does not verify with the published key")
		}
	})
}

// retiringStore hides the signing keys named in retired, as if an
// operator had deleted them from the store.
type retiringStore struct {
	store.Store
	mu      sync.Mutex
	retired map[string]bool
}

func (s *retiringStore) retire(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.retired[id] = true
}

func (s *retiringStore) SigningKeys(ctx context.Context, now time.Time) ([]store.SigningKey, error) {
	keys, err := s.Store.SigningKeys(ctx, now)
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.DeleteFunc(keys, func(k store.SigningKey) bool { return s.retired[k.ID] }), err
}

// A key removed from the store stops signing and verifying on every
// instance within auth.KeyRefreshInterval, whatever the traffic: no
// request with an unknown kid is needed to make an instance look
// (security review F10). Tokens of the keys that remain keep working, and
// an instance that has cached a token drops it.
func TestRetiredSigningKeyStops(t *testing.T) {
	st := &retiringStore{Store: memstore.New(), retired: map[string]bool{}}
	clock := authtest.NewClock(authtest.Start)
	cfg := auth.Config{Store: st, Now: clock.Now, AccessTokenLifetime: 2 * time.Hour}
	one, two := authtest.NewServer(t, cfg), authtest.NewServer(t, cfg)
	c, u := one.SignedIn(authtest.Header)
	access, _ := c.Tokens()
	onTwo := two.NewClient(authtest.Header)
	onTwo.AccessToken = access
	wantSession(t, c, u.ID)
	wantSession(t, onTwo, u.ID)

	st.retire(kid(t, access))
	clock.Advance(auth.KeyRefreshInterval)
	for i, cl := range []*authtest.Client{c, onTwo} {
		cl.AccessToken = access
		if res := cl.Get("/api/session"); res.StatusCode != http.StatusUnauthorized {
			t.Errorf("instance %d, a token of the retired key after %v: %d %s, want 401", i+1, auth.KeyRefreshInterval, res.StatusCode, res.Body)
		}
	}
	c2 := two.NewClient(authtest.Header)
	if res := c2.SignUp("second@example.com", authtest.Password); res.Status != "OK" {
		t.Fatalf("sign-up after the retirement: %d %s", res.StatusCode, res.Body)
	}
	u2, err := two.Auth.UserByEmail(t.Context(), "second@example.com")
	if err != nil {
		t.Fatal(err)
	}
	access2, _ := c2.Tokens()
	if kid(t, access2) == kid(t, access) {
		t.Fatalf("a sign-in after the retirement signs with the retired key %s", kid(t, access))
	}
	wantSession(t, c2, u2.ID)
	// Instance one looked for the retired key a moment ago; an unknown
	// key id makes it look again after a second.
	clock.Advance(time.Second)
	onOne := one.NewClient(authtest.Header)
	onOne.AccessToken = access2
	wantSession(t, onOne, u2.ID)
}
