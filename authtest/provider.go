package authtest

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/latchkit/auth/internal/devoidc"
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
	// ID is the id under which the server under test knows it: ProviderID
	// unless a test names it otherwise (a tenant's own provider).
	ID string

	tb     testing.TB
	closed chan struct{}
	iss    *devoidc.Issuer // keys, codes and the endpoints' mechanics

	mu       sync.Mutex
	identity devoidc.Identity
	fault    Fault
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

// ProviderID is the ID of the provider.Provider that Provider.Provider
// returns.
const ProviderID = "authtest"

// NewProvider starts a fake provider, and closes it when the test ends. It
// signs in subject "user-1", email user1@example.com, verified, until
// SetIdentity says otherwise.
func NewProvider(tb testing.TB) *Provider {
	tb.Helper()
	p := &Provider{
		ID:           ProviderID,
		ClientID:     "authtest-client",
		ClientSecret: "authtest-secret",
		tb:           tb,
		closed:       make(chan struct{}),
		identity:     devoidc.Identity{Subject: "user-1", Email: "user1@example.com", EmailVerified: true},
	}
	p.iss = &devoidc.Issuer{ClientID: p.ClientID, ClientSecret: p.ClientSecret}
	p.iss.AddKey(firstKey(tb))
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+devoidc.DiscoveryPath, p.iss.ServeDiscovery)
	mux.HandleFunc("GET "+devoidc.JWKSPath, p.iss.ServeJWKS)
	mux.HandleFunc("GET "+devoidc.AuthorizePath, p.authorize)
	mux.HandleFunc("POST "+devoidc.TokenPath, p.token)
	p.Server = httptest.NewServer(mux)
	p.iss.URL = p.URL
	tb.Cleanup(func() {
		close(p.closed) // ends FaultHang's waits, which Close would wait for
		p.Close()
	})
	return p
}

var sharedKey struct {
	sync.Once
	k *devoidc.Key
}

// firstKey returns the key every Provider of the test binary starts with:
// making an RSA key takes long enough to be worth sharing.
func firstKey(tb testing.TB) *devoidc.Key {
	sharedKey.Do(func() { sharedKey.k = newSigningKey(tb) })
	return sharedKey.k
}

func newSigningKey(tb testing.TB) *devoidc.Key {
	k, err := devoidc.NewKey()
	if err != nil {
		tb.Fatalf("authtest: %v", err)
	}
	return k
}

// Provider returns a provider.Provider, made by provider.OIDC with the ID
// p.ID, for this fake.
func (p *Provider) Provider() provider.Provider {
	pr, err := provider.OIDC(provider.OIDCConfig{
		ID: p.ID, Name: "Authtest", Issuer: p.URL,
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
	p.identity = devoidc.Identity{Subject: subject, Email: email, EmailVerified: verified}
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
	p.iss.AddKey(newSigningKey(p.tb))
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

// authorize signs the current identity in at once and redirects back
// with a code. A request it cannot redirect (unknown client, bad
// redirect URI) gets a 400, as at a real provider.
func (p *Provider) authorize(w http.ResponseWriter, r *http.Request) {
	req, err := p.iss.CheckRequest(r.URL.Query())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	p.mu.Lock()
	id := p.identity
	p.mu.Unlock()
	http.Redirect(w, r, p.iss.Grant(req, id), http.StatusFound)
}

func (p *Provider) token(w http.ResponseWriter, r *http.Request) {
	g := p.iss.Redeem(w, r)
	if g == nil {
		return
	}
	p.mu.Lock()
	fault := p.fault
	p.mu.Unlock()
	now := time.Now()
	claims := p.iss.Claims(g, now)
	var key *devoidc.Key // nil: the signing key
	switch fault {
	case FaultStatus:
		devoidc.OAuthError(w, http.StatusInternalServerError, "server_error")
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
	p.iss.AnswerToken(w, claims, key)
}
