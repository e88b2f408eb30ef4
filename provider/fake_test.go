package provider

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// fakeIdP is an OpenID provider for this package's tests, with every part
// open to change: the discovery document, the published keys, the claims
// and signing of the ID token, and any handler.
type fakeIdP struct {
	*httptest.Server
	t testing.TB

	mu sync.Mutex
	// doc is the discovery document, served at any path ending in
	// /.well-known/openid-configuration.
	doc map[string]any
	// published are the keys of the JWKS; signer signs ID tokens.
	published []*testKey
	signer    *testKey
	// claims edits the ID token's claims before signing.
	claims func(c jwt.MapClaims)
	// idToken, if set, replaces the signed ID token.
	idToken func(c jwt.MapClaims) string
	// handlers replace or add routes: "/token", "/jwks", "/user", ...
	handlers map[string]http.HandlerFunc
	// what the token endpoint saw last, and how often the JWKS was read
	tokenForm   url.Values
	tokenHeader http.Header
	tokenCalls  int
	jwksCalls   int
	discoveries []string // paths
	done        chan struct{}
}

type testKey struct {
	kid string
	rsa *rsa.PrivateKey
}

func newTestKey(t testing.TB) *testKey {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 6)
	rand.Read(b)
	return &testKey{kid: base64.RawURLEncoding.EncodeToString(b), rsa: k}
}

var sharedKeys struct {
	sync.Once
	a, b *testKey
}

// keys returns two RSA keys made once for the whole test run: 2048-bit
// generation costs enough under -race to be worth sharing.
func keys(t testing.TB) (*testKey, *testKey) {
	sharedKeys.Do(func() { sharedKeys.a, sharedKeys.b = newTestKey(t), newTestKey(t) })
	return sharedKeys.a, sharedKeys.b
}

const (
	testClient = "client-1"
	testSecret = "secret-1"
	testCode   = "CODE-must-not-leak"
	testVerif  = "VERIFIER-must-not-leak-0123456789012345678901234"
	testNonce  = "nonce-1"
	testRedir  = "https://app.example.com/auth/callback/x"
	leakMarker = "BODY-must-not-leak"
)

// newFakeIdP starts a fake whose discovery document names issuer, or the
// server's own URL if issuer is "".
func newFakeIdP(t testing.TB, issuer string) *fakeIdP {
	f := &fakeIdP{t: t, handlers: map[string]http.HandlerFunc{}, done: make(chan struct{})}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(func() { close(f.done); f.Close() })
	if issuer == "" {
		issuer = f.URL
	}
	a, _ := keys(t)
	f.published, f.signer = []*testKey{a}, a
	f.doc = map[string]any{
		"issuer":                                issuer,
		"authorization_endpoint":                f.URL + "/authorize",
		"token_endpoint":                        f.URL + "/token",
		"jwks_uri":                              f.URL + "/jwks",
		"id_token_signing_alg_values_supported": []string{"RS256"},
		"code_challenge_methods_supported":      []string{"S256"},
		"token_endpoint_auth_methods_supported": []string{"client_secret_basic"},
	}
	return f
}

func (f *fakeIdP) set(fn func(f *fakeIdP)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

func (f *fakeIdP) handle(path string, h http.HandlerFunc) {
	f.set(func(f *fakeIdP) { f.handlers[path] = h })
}

func (f *fakeIdP) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	h := f.handlers[r.URL.Path]
	f.mu.Unlock()
	if h != nil {
		h(w, r)
		return
	}
	switch {
	case strings.HasSuffix(r.URL.Path, "/.well-known/openid-configuration"):
		f.mu.Lock()
		f.discoveries = append(f.discoveries, r.URL.Path)
		doc, _ := json.Marshal(f.doc)
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Write(doc)
	case r.URL.Path == "/jwks":
		f.mu.Lock()
		f.jwksCalls++
		var ks []map[string]string
		for _, k := range f.published {
			ks = append(ks, map[string]string{
				"kty": "RSA", "use": "sig", "alg": "RS256", "kid": k.kid,
				"n": base64.RawURLEncoding.EncodeToString(k.rsa.N.Bytes()),
				"e": base64.RawURLEncoding.EncodeToString(big.NewInt(int64(k.rsa.E)).Bytes()),
			})
		}
		f.mu.Unlock()
		json.NewEncoder(w).Encode(map[string]any{"keys": ks})
	case r.URL.Path == "/token":
		r.ParseForm()
		f.mu.Lock()
		f.tokenCalls++
		f.tokenForm, f.tokenHeader = r.PostForm, r.Header.Clone()
		f.mu.Unlock()
		if r.PostForm.Get("code") != testCode {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"error":"invalid_grant","error_description":"%s"}`, leakMarker)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"access_token": "at-1", "token_type": "Bearer", "expires_in": 3600,
			"id_token": f.makeIDToken(),
		})
	default:
		http.NotFound(w, r)
	}
}

func (f *fakeIdP) makeIDToken() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := time.Now()
	c := jwt.MapClaims{
		"iss": f.doc["issuer"], "sub": "user-1", "aud": testClient,
		"exp": now.Add(time.Hour).Unix(), "iat": now.Unix(), "nonce": testNonce,
		"email": "u1@example.com", "email_verified": true,
	}
	if f.claims != nil {
		f.claims(c)
	}
	if f.idToken != nil {
		return f.idToken(c)
	}
	return sign(f.t, f.signer, c)
}

func sign(t testing.TB, k *testKey, c jwt.MapClaims) string {
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, c)
	tok.Header["kid"] = k.kid
	s, err := tok.SignedString(k.rsa)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// hang is a handler that answers only when the request is cancelled or
// the test ends.
func (f *fakeIdP) hang(w http.ResponseWriter, r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-f.done:
	}
}

// counts returns how often the JWKS was read, and the paths of the
// discovery requests.
func (f *fakeIdP) counts() (jwks int, discoveries []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.jwksCalls, append([]string(nil), f.discoveries...)
}

func (f *fakeIdP) lastTokenRequest() (url.Values, http.Header, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.tokenForm, f.tokenHeader, f.tokenCalls
}

// exchange runs Exchange with the test's code, verifier and nonce.
func exchange(p Provider, edit ...func(r *ExchangeRequest)) (Identity, error) {
	r := ExchangeRequest{Code: testCode, RedirectURI: testRedir, CodeVerifier: testVerif, Nonce: testNonce}
	for _, e := range edit {
		e(&r)
	}
	return p.Exchange(context.Background(), r)
}

// authQuery runs AuthURL and returns its query.
func authQuery(t *testing.T, p Provider) url.Values {
	t.Helper()
	u, err := p.AuthURL(context.Background(), AuthRequest{RedirectURI: testRedir, CodeChallenge: "challenge-1", Nonce: testNonce})
	if err != nil {
		t.Fatalf("AuthURL: %v", err)
	}
	pu, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	return pu.Query()
}

// checkSafe fails the test if err's text holds the code, verifier or a
// response body.
func checkSafe(t *testing.T, err error) {
	t.Helper()
	for _, s := range []string{testCode, testVerif, leakMarker, "at-1"} {
		if err != nil && strings.Contains(err.Error(), s) {
			t.Errorf("error %q holds %q", err, s)
		}
	}
}

func newECKey(t testing.TB) *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}
