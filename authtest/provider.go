package authtest

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/latchkit/auth/provider"
)

// Provider is a fake OpenID Connect provider on an httptest server, for
// tests of third-party sign-in with no real provider: it serves a
// discovery document, a JWKS, an authorisation endpoint that signs the
// chosen user in at once, and a token endpoint that checks what a real
// one checks (client, code, redirect URI, PKCE) and answers with a signed
// ID token.
//
// [Provider.Provider] is the provider.Provider that talks to it, and
// [Provider.Authorize] plays the browser's part. [Provider.SetFault]
// makes the token endpoint misbehave. It is safe for concurrent use.
type Provider struct {
	*httptest.Server
	// ClientID and ClientSecret are the one client it knows.
	ClientID, ClientSecret string

	tb     testing.TB
	closed chan struct{}

	mu       sync.Mutex
	identity provider.Identity
	fault    Fault
	keys     []*signingKey // keys[0] signs; all are published
	codes    map[string]*grant
}

// A Fault makes a Provider's token endpoint misbehave, to test what
// happens when sign-in with a provider fails.
type Fault int

// The faults. Each lasts until SetFault(NoFault).
const (
	NoFault            Fault = iota
	FaultStatus              // answers 500 with an OAuth error
	FaultHang                // does not answer until the request is cancelled
	FaultGarbage             // answers 200 with a body that is not JSON
	FaultUnknownKey          // signs the ID token with a key the JWKS lacks
	FaultWrongIssuer         // ID token from another issuer
	FaultWrongAudience       // ID token for another client
	FaultExpired             // ID token expired an hour ago
	FaultWrongNonce          // ID token with another nonce
)

type signingKey struct {
	kid string
	key *rsa.PrivateKey
}

type grant struct {
	identity    provider.Identity
	redirectURI string
	challenge   string
	nonce       string
	expires     time.Time
}

// ProviderID is the ID of the provider.Provider that Provider.Provider
// returns.
const ProviderID = "authtest"

// codeLifetime is how long an authorisation code may wait to be redeemed.
const codeLifetime = 10 * time.Minute

// NewProvider starts a fake provider, and closes it when the test ends. It
// signs in subject "user-1", email user1@example.com, verified, until
// SetIdentity says otherwise.
func NewProvider(tb testing.TB) *Provider {
	tb.Helper()
	p := &Provider{
		ClientID:     "authtest-client",
		ClientSecret: "authtest-secret",
		tb:           tb,
		closed:       make(chan struct{}),
		identity:     provider.Identity{Subject: "user-1", Email: "user1@example.com", EmailVerified: true},
		keys:         []*signingKey{firstKey(tb)},
		codes:        map[string]*grant{},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", p.discovery)
	mux.HandleFunc("GET /jwks", p.jwks)
	mux.HandleFunc("GET /authorize", p.authorize)
	mux.HandleFunc("POST /token", p.token)
	p.Server = httptest.NewServer(mux)
	tb.Cleanup(func() {
		close(p.closed) // ends FaultHang's waits, which Close would wait for
		p.Close()
	})
	return p
}

var sharedKey struct {
	sync.Once
	k *signingKey
}

// firstKey returns the key every Provider of the test binary starts with:
// making an RSA key takes long enough to be worth sharing.
func firstKey(tb testing.TB) *signingKey {
	sharedKey.Do(func() { sharedKey.k = newSigningKey(tb) })
	return sharedKey.k
}

func newSigningKey(tb testing.TB) *signingKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		tb.Fatalf("authtest: %v", err)
	}
	return &signingKey{kid: randomString(8), key: k}
}

func randomString(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// Provider returns a provider.Provider, made by provider.OIDC with the ID
// ProviderID, for this fake.
func (p *Provider) Provider() provider.Provider {
	pr, err := provider.OIDC(provider.OIDCConfig{
		ID: ProviderID, Name: "Authtest", Issuer: p.URL,
		ClientID: p.ClientID, ClientSecret: p.ClientSecret,
	})
	if err != nil {
		p.tb.Fatalf("authtest: %v", err)
	}
	return pr
}

// SetIdentity sets who the authorisation endpoint signs in from now on.
// Codes already issued keep their user.
func (p *Provider) SetIdentity(subject, email string, verified bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.identity = provider.Identity{Subject: subject, Email: email, EmailVerified: verified}
}

// SetFault makes the token endpoint misbehave from now on; NoFault ends it.
// The code presented is used up all the same.
func (p *Provider) SetFault(f Fault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fault = f
}

// RotateKey signs ID tokens with a new key from now on, published in the
// JWKS next to the old ones, as providers rotate keys.
func (p *Provider) RotateKey() {
	k := newSigningKey(p.tb)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.keys = append([]*signingKey{k}, p.keys...)
}

// Authorize does what a browser does with authURL, an authorisation URL
// of this provider: it follows it, and returns the query of the redirect
// back (code, state and iss). It fails the test if the provider refuses.
func (p *Provider) Authorize(tb testing.TB, authURL string) url.Values {
	tb.Helper()
	c := &http.Client{
		Timeout:       10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	res, err := c.Get(authURL)
	if err != nil {
		tb.Fatalf("authtest: authorize: %v", err)
	}
	res.Body.Close()
	loc, err := res.Location()
	if res.StatusCode != http.StatusFound || err != nil {
		tb.Fatalf("authtest: authorize answered %s, not a redirect", res.Status)
	}
	return loc.Query()
}

func (p *Provider) discovery(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"issuer":                                         p.URL,
		"authorization_endpoint":                         p.URL + "/authorize",
		"token_endpoint":                                 p.URL + "/token",
		"jwks_uri":                                       p.URL + "/jwks",
		"response_types_supported":                       []string{"code"},
		"subject_types_supported":                        []string{"public"},
		"scopes_supported":                               []string{"openid", "email"},
		"id_token_signing_alg_values_supported":          []string{"RS256"},
		"code_challenge_methods_supported":               []string{"S256"},
		"token_endpoint_auth_methods_supported":          []string{"client_secret_basic", "client_secret_post"},
		"authorization_response_iss_parameter_supported": true,
	})
}

func (p *Provider) jwks(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	var keys []map[string]string
	for _, k := range p.keys {
		keys = append(keys, map[string]string{
			"kty": "RSA", "use": "sig", "alg": "RS256", "kid": k.kid,
			"n": base64.RawURLEncoding.EncodeToString(k.key.N.Bytes()),
			"e": base64.RawURLEncoding.EncodeToString(big.NewInt(int64(k.key.E)).Bytes()),
		})
	}
	p.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"keys": keys})
}

// authorize signs the current identity in at once and redirects back
// with a code. A request it cannot redirect (unknown client, bad
// redirect URI) gets a 400, as at a real provider.
func (p *Provider) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	redirect, err := url.Parse(q.Get("redirect_uri"))
	switch {
	case q.Get("client_id") != p.ClientID:
		http.Error(w, "unknown client_id", http.StatusBadRequest)
		return
	case err != nil || !redirect.IsAbs() || redirect.Fragment != "":
		http.Error(w, "redirect_uri must be an absolute URL", http.StatusBadRequest)
		return
	case q.Get("response_type") != "code":
		http.Error(w, "response_type must be code", http.StatusBadRequest)
		return
	case q.Has("code_challenge") && q.Get("code_challenge_method") != "S256":
		http.Error(w, "code_challenge_method must be S256", http.StatusBadRequest)
		return
	}
	code := randomString(24)
	p.mu.Lock()
	p.codes[code] = &grant{
		identity:    p.identity,
		redirectURI: q.Get("redirect_uri"),
		challenge:   q.Get("code_challenge"),
		nonce:       q.Get("nonce"),
		expires:     time.Now().Add(codeLifetime),
	}
	p.mu.Unlock()
	back := redirect.Query()
	back.Set("code", code)
	back.Set("iss", p.URL)
	if s := q.Get("state"); s != "" {
		back.Set("state", s)
	}
	redirect.RawQuery = back.Encode()
	http.Redirect(w, r, redirect.String(), http.StatusFound)
}

func (p *Provider) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_request")
		return
	}
	id, secret, basic := r.BasicAuth()
	if !basic {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	if id != p.ClientID || subtle.ConstantTimeCompare([]byte(secret), []byte(p.ClientSecret)) != 1 {
		oauthError(w, http.StatusUnauthorized, "invalid_client")
		return
	}
	if r.PostForm.Get("grant_type") != "authorization_code" {
		oauthError(w, http.StatusBadRequest, "unsupported_grant_type")
		return
	}
	p.mu.Lock()
	g := p.codes[r.PostForm.Get("code")]
	delete(p.codes, r.PostForm.Get("code")) // single use, whatever follows
	fault, key := p.fault, p.keys[0]
	p.mu.Unlock()
	if g == nil || time.Now().After(g.expires) || r.PostForm.Get("redirect_uri") != g.redirectURI || !pkceOK(g.challenge, r.PostForm.Get("code_verifier")) {
		oauthError(w, http.StatusBadRequest, "invalid_grant")
		return
	}

	now := time.Now()
	claims := jwt.MapClaims{
		"iss": p.URL, "sub": g.identity.Subject, "aud": p.ClientID,
		"iat": now.Unix(), "exp": now.Add(time.Hour).Unix(),
	}
	if g.nonce != "" {
		claims["nonce"] = g.nonce
	}
	if g.identity.Email != "" {
		claims["email"], claims["email_verified"] = g.identity.Email, g.identity.EmailVerified
	}
	switch fault {
	case FaultStatus:
		oauthError(w, http.StatusInternalServerError, "server_error")
		return
	case FaultHang:
		select {
		case <-r.Context().Done():
		case <-p.closed:
		}
		return
	case FaultGarbage:
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"access_token": "at`))
		return
	case FaultUnknownKey:
		key = newSigningKey(p.tb)
	case FaultWrongIssuer:
		claims["iss"] = "https://issuer.invalid"
	case FaultWrongAudience:
		claims["aud"] = "another-client"
	case FaultExpired:
		claims["iat"], claims["exp"] = now.Add(-2*time.Hour).Unix(), now.Add(-time.Hour).Unix()
	case FaultWrongNonce:
		claims["nonce"] = "another-nonce"
	}
	t := jwt.NewWithClaims(jwt.SigningMethodRS256, claims)
	t.Header["kid"] = key.kid
	idToken, err := t.SignedString(key.key)
	if err != nil {
		oauthError(w, http.StatusInternalServerError, "server_error")
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, map[string]any{
		"access_token": randomString(24), "token_type": "Bearer", "expires_in": 3600,
		"id_token": idToken,
	})
}

// pkceOK checks a verifier against the S256 challenge (RFC 7636 section
// 4.6). With no challenge, no verifier may come either.
func pkceOK(challenge, verifier string) bool {
	if challenge == "" {
		return verifier == ""
	}
	sum := sha256.Sum256([]byte(verifier))
	return subtle.ConstantTimeCompare([]byte(base64.RawURLEncoding.EncodeToString(sum[:])), []byte(challenge)) == 1
}

func oauthError(w http.ResponseWriter, status int, code string) {
	writeJSON(w, status, map[string]string{"error": code})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
