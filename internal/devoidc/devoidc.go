// Package devoidc is the core of a small OpenID Connect provider for tests
// and local development: signing keys and their JWKS, a discovery
// document, one client, single-use authorisation codes, and a token
// endpoint that checks what a real one checks (the client, the code, the
// redirect URI, PKCE S256, the code's age) and answers with a signed ID
// token.
//
// It has no sign-in page of its own: authtest.Provider grants a code at
// once, the demo's development provider after a form. Both mount the
// handlers at the paths below, under the issuer URL.
package devoidc

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/big"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// The endpoints, relative to the issuer URL.
const (
	DiscoveryPath = "/.well-known/openid-configuration"
	JWKSPath      = "/jwks"
	AuthorizePath = "/authorize"
	TokenPath     = "/token"
)

// CodeLifetime is how long an authorisation code may wait to be redeemed.
const CodeLifetime = 10 * time.Minute

// Identity is the user a code signs in.
type Identity struct {
	Subject       string
	Email         string // "" for none: no email claims
	EmailVerified bool
	Name          string // "" for none: no name claim
}

// Key is an RSA signing key with its key id.
type Key struct {
	ID  string
	key *rsa.PrivateKey
}

// NewKey makes a 2048-bit RSA key with a random key id.
func NewKey() (*Key, error) {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	return &Key{ID: RandomString(8), key: k}, nil
}

// Grant is what an authorisation code stands for.
type Grant struct {
	Identity    Identity
	RedirectURI string
	Challenge   string // PKCE S256 challenge; "" for none
	Nonce       string
	Expires     time.Time
}

// Request is an authorisation request that Issuer.CheckRequest accepted.
type Request struct {
	RedirectURI string
	State       string
	Nonce       string
	Challenge   string
}

// Issuer is the provider's state. Set URL, ClientID and ClientSecret
// before the first request; add a key with AddKey (or one is made at the
// first signature). It is safe for concurrent use.
type Issuer struct {
	// URL is the issuer, the base of the endpoints.
	URL string
	// ClientID and ClientSecret are the one client it knows.
	ClientID, ClientSecret string
	// RedirectURIs are the redirect URIs the client registered; empty
	// accepts any absolute URL without a fragment.
	RedirectURIs []string
	// Now is the clock of codes' expiry; nil means time.Now.
	Now func() time.Time

	mu    sync.Mutex
	keys  []*Key // keys[0] signs; all are published
	codes map[string]*Grant
}

// AddKey makes k the signing key from now on; the older keys stay in the
// JWKS, as providers rotate keys.
func (s *Issuer) AddKey(k *Key) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys = append([]*Key{k}, s.keys...)
}

// SigningKey is the key that signs ID tokens, made at the first call if
// there is none yet.
func (s *Issuer) SigningKey() (*Key, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.keys) == 0 {
		k, err := NewKey()
		if err != nil {
			return nil, err
		}
		s.keys = []*Key{k}
	}
	return s.keys[0], nil
}

// ServeDiscovery answers the discovery document.
func (s *Issuer) ServeDiscovery(w http.ResponseWriter, r *http.Request) {
	WriteJSON(w, http.StatusOK, map[string]any{
		"issuer":                                         s.URL,
		"authorization_endpoint":                         s.URL + AuthorizePath,
		"token_endpoint":                                 s.URL + TokenPath,
		"jwks_uri":                                       s.URL + JWKSPath,
		"response_types_supported":                       []string{"code"},
		"subject_types_supported":                        []string{"public"},
		"scopes_supported":                               []string{"openid", "email"},
		"id_token_signing_alg_values_supported":          []string{"RS256"},
		"code_challenge_methods_supported":               []string{"S256"},
		"token_endpoint_auth_methods_supported":          []string{"client_secret_basic", "client_secret_post"},
		"authorization_response_iss_parameter_supported": true,
	})
}

// ServeJWKS answers the public keys.
func (s *Issuer) ServeJWKS(w http.ResponseWriter, r *http.Request) {
	if _, err := s.SigningKey(); err != nil {
		OAuthError(w, http.StatusInternalServerError, "server_error")
		return
	}
	s.mu.Lock()
	keys := make([]map[string]string, 0, len(s.keys))
	for _, k := range s.keys {
		keys = append(keys, map[string]string{
			"kty": "RSA", "use": "sig", "alg": "RS256", "kid": k.ID,
			"n": base64.RawURLEncoding.EncodeToString(k.key.N.Bytes()),
			"e": base64.RawURLEncoding.EncodeToString(big.NewInt(int64(k.key.E)).Bytes()),
		})
	}
	s.mu.Unlock()
	w.Header().Set("Cache-Control", "no-cache")
	WriteJSON(w, http.StatusOK, map[string]any{"keys": keys})
}

// CheckRequest checks the query of an authorisation request. An error
// means the request cannot be sent back to the client (unknown client,
// redirect URI not registered, ...): answer it 400 with the error's text,
// as a real provider does.
func (s *Issuer) CheckRequest(q url.Values) (Request, error) {
	redirect, err := url.Parse(q.Get("redirect_uri"))
	switch {
	case q.Get("client_id") != s.ClientID:
		return Request{}, errors.New("unknown client_id")
	case err != nil || !redirect.IsAbs() || redirect.Fragment != "":
		return Request{}, errors.New("redirect_uri must be an absolute URL")
	case len(s.RedirectURIs) > 0 && !slices.Contains(s.RedirectURIs, q.Get("redirect_uri")):
		return Request{}, errors.New("redirect_uri is not registered for this client")
	case q.Get("response_type") != "code":
		return Request{}, errors.New("response_type must be code")
	case q.Has("code_challenge") && q.Get("code_challenge_method") != "S256":
		return Request{}, errors.New("code_challenge_method must be S256")
	}
	return Request{
		RedirectURI: q.Get("redirect_uri"),
		State:       q.Get("state"),
		Nonce:       q.Get("nonce"),
		Challenge:   q.Get("code_challenge"),
	}, nil
}

// Grant issues a code that signs id in, and returns the URL to send the
// browser back to: the redirect URI with the code, the state and the
// issuer.
func (s *Issuer) Grant(req Request, id Identity) string {
	code := RandomString(24)
	now := s.now()
	s.mu.Lock()
	if s.codes == nil {
		s.codes = map[string]*Grant{}
	}
	for c, g := range s.codes {
		if now.After(g.Expires) {
			delete(s.codes, c)
		}
	}
	s.codes[code] = &Grant{
		Identity:    id,
		RedirectURI: req.RedirectURI,
		Challenge:   req.Challenge,
		Nonce:       req.Nonce,
		Expires:     now.Add(CodeLifetime),
	}
	s.mu.Unlock()
	return s.Back(req, url.Values{"code": {code}})
}

// Back returns the redirect URI of req with params, the state and the
// issuer added: a code, or an error such as access_denied.
func (s *Issuer) Back(req Request, params url.Values) string {
	redirect, _ := url.Parse(req.RedirectURI)
	back := redirect.Query()
	for k, v := range params {
		back[k] = v
	}
	back.Set("iss", s.URL)
	if req.State != "" {
		back.Set("state", req.State)
	}
	redirect.RawQuery = back.Encode()
	return redirect.String()
}

// Redeem checks a token request: the client's credentials (basic or in
// the form), the grant type, and the code, used up whatever follows, with
// its redirect URI, PKCE verifier and age. It returns the code's grant,
// or writes the OAuth error and returns nil.
func (s *Issuer) Redeem(w http.ResponseWriter, r *http.Request) *Grant {
	if err := r.ParseForm(); err != nil {
		OAuthError(w, http.StatusBadRequest, "invalid_request")
		return nil
	}
	id, secret, basic := r.BasicAuth()
	if !basic {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	if id != s.ClientID || subtle.ConstantTimeCompare([]byte(secret), []byte(s.ClientSecret)) != 1 {
		OAuthError(w, http.StatusUnauthorized, "invalid_client")
		return nil
	}
	if r.PostForm.Get("grant_type") != "authorization_code" {
		OAuthError(w, http.StatusBadRequest, "unsupported_grant_type")
		return nil
	}
	code := r.PostForm.Get("code")
	s.mu.Lock()
	g := s.codes[code]
	delete(s.codes, code) // single use, whatever follows
	s.mu.Unlock()
	if g == nil || s.now().After(g.Expires) || r.PostForm.Get("redirect_uri") != g.RedirectURI || !pkceOK(g.Challenge, r.PostForm.Get("code_verifier")) {
		OAuthError(w, http.StatusBadRequest, "invalid_grant")
		return nil
	}
	return g
}

// Claims are the ID token's claims for g, issued now, valid for an hour.
func (s *Issuer) Claims(g *Grant, now time.Time) jwt.MapClaims {
	claims := jwt.MapClaims{
		"iss": s.URL, "sub": g.Identity.Subject, "aud": s.ClientID,
		"iat": now.Unix(), "exp": now.Add(time.Hour).Unix(),
	}
	if g.Nonce != "" {
		claims["nonce"] = g.Nonce
	}
	if g.Identity.Email != "" {
		claims["email"], claims["email_verified"] = g.Identity.Email, g.Identity.EmailVerified
	}
	if g.Identity.Name != "" {
		claims["name"] = g.Identity.Name
	}
	return claims
}

// AnswerToken signs claims with key (nil: the signing key) and writes the
// token response.
func (s *Issuer) AnswerToken(w http.ResponseWriter, claims jwt.MapClaims, key *Key) {
	if key == nil {
		var err error
		if key, err = s.SigningKey(); err != nil {
			OAuthError(w, http.StatusInternalServerError, "server_error")
			return
		}
	}
	t := jwt.NewWithClaims(jwt.SigningMethodRS256, claims)
	t.Header["kid"] = key.ID
	idToken, err := t.SignedString(key.key)
	if err != nil {
		OAuthError(w, http.StatusInternalServerError, "server_error")
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	WriteJSON(w, http.StatusOK, map[string]any{
		"access_token": RandomString(24), "token_type": "Bearer", "expires_in": 3600,
		"id_token": idToken,
	})
}

// ServeToken is the token endpoint: Redeem, then the ID token of the
// grant.
func (s *Issuer) ServeToken(w http.ResponseWriter, r *http.Request) {
	if g := s.Redeem(w, r); g != nil {
		s.AnswerToken(w, s.Claims(g, s.now()), nil)
	}
}

func (s *Issuer) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
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

// RandomString is n random bytes, base64url-encoded.
func RandomString(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// OAuthError writes an OAuth error answer.
func OAuthError(w http.ResponseWriter, status int, code string) {
	WriteJSON(w, status, map[string]string{"error": code})
}

// WriteJSON writes v as a JSON answer.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
