package devoidc_test

import (
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/latchkit/auth/internal/devoidc"
)

const callback = "http://localhost:8080/auth/callback/dev"

// newIssuer serves an Issuer that grants every request to one identity,
// on a clock the test moves.
func newIssuer(t *testing.T) (*devoidc.Issuer, *httptest.Server, *time.Time) {
	t.Helper()
	now := time.Now()
	s := &devoidc.Issuer{ClientID: "app", ClientSecret: "secret", RedirectURIs: []string{callback}, Now: func() time.Time { return now }}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+devoidc.DiscoveryPath, s.ServeDiscovery)
	mux.HandleFunc("GET "+devoidc.JWKSPath, s.ServeJWKS)
	mux.HandleFunc("POST "+devoidc.TokenPath, s.ServeToken)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s, srv, &now
}

func challenge(verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// code grants a code for the identity, as after a sign-in page.
func code(t *testing.T, s *devoidc.Issuer, verifier string) string {
	t.Helper()
	q := url.Values{"client_id": {"app"}, "response_type": {"code"}, "redirect_uri": {callback}, "state": {"st"}, "nonce": {"n-1"}}
	if verifier != "" {
		q.Set("code_challenge", challenge(verifier))
		q.Set("code_challenge_method", "S256")
	}
	req, err := s.CheckRequest(q)
	if err != nil {
		t.Fatal(err)
	}
	back, err := url.Parse(s.Grant(req, devoidc.Identity{Subject: "sub-1", Email: "ada@example.com", EmailVerified: true, Name: "Ada"}))
	if err != nil || !strings.HasPrefix(back.String(), callback+"?") || back.Query().Get("state") != "st" || back.Query().Get("iss") != s.URL {
		t.Fatalf("redirect back %v, %v", back, err)
	}
	return back.Query().Get("code")
}

func redeem(t *testing.T, srv *httptest.Server, form url.Values) (int, map[string]any) {
	t.Helper()
	res, err := http.PostForm(srv.URL+devoidc.TokenPath, form)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var body map[string]any
	json.NewDecoder(res.Body).Decode(&body)
	return res.StatusCode, body
}

func TestCheckRequest(t *testing.T) {
	s, _, _ := newIssuer(t)
	good := url.Values{"client_id": {"app"}, "response_type": {"code"}, "redirect_uri": {callback}}
	if _, err := s.CheckRequest(good); err != nil {
		t.Errorf("a good request: %v", err)
	}
	for name, change := range map[string]func(url.Values){
		"unknown client":        func(q url.Values) { q.Set("client_id", "other") },
		"unregistered redirect": func(q url.Values) { q.Set("redirect_uri", "http://localhost:8080/elsewhere") },
		"relative redirect":     func(q url.Values) { q.Set("redirect_uri", "/auth/callback/dev") },
		"response type token":   func(q url.Values) { q.Set("response_type", "token") },
		"plain PKCE":            func(q url.Values) { q.Set("code_challenge", "c"); q.Set("code_challenge_method", "plain") },
	} {
		q := url.Values{}
		for k, v := range good {
			q[k] = append([]string(nil), v...)
		}
		change(q)
		if _, err := s.CheckRequest(q); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	// Without registered redirect URIs, any absolute one will do.
	open := &devoidc.Issuer{ClientID: "app"}
	q := url.Values{"client_id": {"app"}, "response_type": {"code"}, "redirect_uri": {"https://app.example/cb"}}
	if _, err := open.CheckRequest(q); err != nil {
		t.Errorf("no registered redirect URIs: %v", err)
	}
}

func TestToken(t *testing.T) {
	s, srv, now := newIssuer(t)
	const verifier = "verifier-0123456789012345678901234567890123"
	form := func(code string) url.Values {
		return url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {callback},
			"code_verifier": {verifier}, "client_id": {"app"}, "client_secret": {"secret"}}
	}

	c := code(t, s, verifier)
	status, body := redeem(t, srv, form(c))
	if status != 200 || body["id_token"] == nil {
		t.Fatalf("token: %d %v", status, body)
	}
	// The ID token verifies with the JWKS and says who signed in.
	res, err := http.Get(srv.URL + devoidc.JWKSPath)
	if err != nil {
		t.Fatal(err)
	}
	var jwks struct{ Keys []struct{ Kid, N, E string } }
	json.NewDecoder(res.Body).Decode(&jwks)
	res.Body.Close()
	claims := jwt.MapClaims{}
	_, err = jwt.ParseWithClaims(body["id_token"].(string), claims, func(tok *jwt.Token) (any, error) {
		for _, k := range jwks.Keys {
			if k.Kid == tok.Header["kid"] {
				n, err1 := base64.RawURLEncoding.DecodeString(k.N)
				e, err2 := base64.RawURLEncoding.DecodeString(k.E)
				if err1 != nil || err2 != nil {
					return nil, jwt.ErrTokenUnverifiable
				}
				return &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}, nil
			}
		}
		return nil, jwt.ErrTokenUnverifiable
	}, jwt.WithValidMethods([]string{"RS256"}), jwt.WithTimeFunc(func() time.Time { return *now }))
	if err != nil {
		t.Fatalf("the ID token does not verify with the JWKS: %v", err)
	}
	want := map[string]any{"iss": s.URL, "aud": "app", "sub": "sub-1", "email": "ada@example.com", "email_verified": true, "name": "Ada", "nonce": "n-1"}
	for k, v := range want {
		if claims[k] != v {
			t.Errorf("claim %s = %v, want %v", k, claims[k], v)
		}
	}

	// Once only.
	if status, body := redeem(t, srv, form(c)); status != 400 || body["error"] != "invalid_grant" {
		t.Errorf("the code again: %d %v, want 400 invalid_grant", status, body)
	}
	// PKCE.
	f := form(code(t, s, verifier))
	f.Set("code_verifier", verifier+"x")
	if status, body := redeem(t, srv, f); status != 400 || body["error"] != "invalid_grant" {
		t.Errorf("a wrong verifier: %d %v, want 400 invalid_grant", status, body)
	}
	f = form(code(t, s, verifier))
	f.Del("code_verifier")
	if status, body := redeem(t, srv, f); status != 400 || body["error"] != "invalid_grant" {
		t.Errorf("no verifier: %d %v, want 400 invalid_grant", status, body)
	}
	// The redirect URI.
	f = form(code(t, s, verifier))
	f.Set("redirect_uri", callback+"/x")
	if status, body := redeem(t, srv, f); status != 400 || body["error"] != "invalid_grant" {
		t.Errorf("another redirect URI: %d %v, want 400 invalid_grant", status, body)
	}
	// The client.
	f = form(code(t, s, verifier))
	f.Set("client_secret", "wrong")
	if status, body := redeem(t, srv, f); status != 401 || body["error"] != "invalid_client" {
		t.Errorf("a wrong secret: %d %v, want 401 invalid_client", status, body)
	}
	// Expiry.
	c = code(t, s, verifier)
	*now = now.Add(devoidc.CodeLifetime + time.Second)
	if status, body := redeem(t, srv, form(c)); status != 400 || body["error"] != "invalid_grant" {
		t.Errorf("a code past its lifetime: %d %v, want 400 invalid_grant", status, body)
	}
}
