package provider

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

func pkcs8PEM(t *testing.T, key any) string {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
}

func TestApple(t *testing.T) {
	key := newECKey(t)
	f := newFakeIdP(t, "https://appleid.apple.com")
	f.set(func(f *fakeIdP) {
		// Apple's document lists no PKCE and client_secret_post only.
		delete(f.doc, "code_challenge_methods_supported")
		f.doc["token_endpoint_auth_methods_supported"] = []string{"client_secret_post"}
		f.claims = func(c jwt.MapClaims) { c["email_verified"], c["is_private_email"] = "true", "true" }
	})
	p, err := Apple(AppleConfig{ClientID: testClient, TeamID: "TEAM123456", KeyID: "KEY1234567", PrivateKey: pkcs8PEM(t, key)})
	if err != nil {
		t.Fatal(err)
	}
	p.(*oidcProvider).discovery = f.URL
	if fp, ok := p.(FormPoster); !ok || !fp.FormPost() || p.ID() != "apple" {
		t.Error("Apple is not a form poster")
	}
	q := authQuery(t, p)
	if q.Get("response_mode") != "form_post" || q.Get("scope") != "name email" || q.Has("code_challenge") || q.Get("nonce") != testNonce {
		t.Errorf("authorisation URL %v", q)
	}
	id, err := exchange(p, func(r *ExchangeRequest) { r.Issuer = "https://appleid.apple.com" })
	if err != nil || id != (Identity{"user-1", "u1@example.com", true}) {
		t.Fatalf("Exchange = %+v, %v", id, err)
	}

	// The client secret: an ES256 JWT that Apple verifies with the
	// public half of the key.
	form, _, _ := f.lastTokenRequest()
	if form.Has("code_verifier") {
		t.Error("verifier sent without a challenge")
	}
	secret := form.Get("client_secret")
	tok, err := jwt.Parse(secret, func(tok *jwt.Token) (any, error) { return &key.PublicKey, nil },
		jwt.WithValidMethods([]string{"ES256"}), jwt.WithIssuer("TEAM123456"), jwt.WithSubject(testClient),
		jwt.WithAudience("https://appleid.apple.com"), jwt.WithExpirationRequired(), jwt.WithIssuedAt())
	if err != nil {
		t.Fatalf("client secret %v", err)
	}
	if tok.Header["kid"] != "KEY1234567" {
		t.Errorf("kid %v", tok.Header["kid"])
	}
	c := tok.Claims.(jwt.MapClaims)
	exp, _ := c.GetExpirationTime()
	iat, _ := c.GetIssuedAt()
	if d := exp.Sub(iat.Time); d != appleSecretLifetime {
		t.Errorf("lifetime %v", d)
	}
	payload, _ := base64.RawURLEncoding.DecodeString(strings.Split(secret, ".")[1])
	if !strings.Contains(string(payload), `"aud":"https://appleid.apple.com"`) {
		t.Errorf("aud not a string: %s", payload)
	}
	if form.Get("client_id") != testClient {
		t.Errorf("client_id %q", form.Get("client_id"))
	}
}

func TestAppleSecretRenewal(t *testing.T) {
	now := time.Now()
	s := &appleSecret{teamID: "T", keyID: "K", clientID: "C", key: newECKey(t), now: func() time.Time { return now }}
	a, err := s.get()
	if err != nil {
		t.Fatal(err)
	}
	now = now.Add(50 * time.Minute)
	if b, _ := s.get(); b != a {
		t.Error("secret not reused within its life")
	}
	now = now.Add(6 * time.Minute) // five minutes before expiry
	if b, _ := s.get(); b == a {
		t.Error("secret not renewed before expiry")
	}
}

func TestAppleConfig(t *testing.T) {
	rsaKey, _ := keys(t)
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	good := pkcs8PEM(t, newECKey(t))
	sec1, _ := x509.MarshalECPrivateKey(newECKey(t))
	for name, c := range map[string]AppleConfig{
		"no client":  {TeamID: "T", KeyID: "K", PrivateKey: good},
		"no team":    {ClientID: "C", KeyID: "K", PrivateKey: good},
		"no key id":  {ClientID: "C", TeamID: "T", PrivateKey: good},
		"not PEM":    {ClientID: "C", TeamID: "T", KeyID: "K", PrivateKey: "MIGT..."},
		"RSA":        {ClientID: "C", TeamID: "T", KeyID: "K", PrivateKey: pkcs8PEM(t, rsaKey.rsa)},
		"P-384":      {ClientID: "C", TeamID: "T", KeyID: "K", PrivateKey: pkcs8PEM(t, p384)},
		"SEC 1":      {ClientID: "C", TeamID: "T", KeyID: "K", PrivateKey: string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: sec1}))},
		"public key": {ClientID: "C", TeamID: "T", KeyID: "K", PrivateKey: "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n"},
	} {
		if _, err := Apple(c); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: err = %v, want ErrConfig", name, err)
		} else if strings.Contains(err.Error(), "PRIVATE") {
			t.Errorf("%s: error quotes the key: %v", name, err)
		}
	}
}
