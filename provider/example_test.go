package provider_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/latchkit/auth/provider"
)

// The two steps of a sign-in, as the auth package runs them: the
// authorisation URL with a PKCE challenge and a nonce, then the exchange
// of the code the browser brings back, with the verifier and the same
// nonce.
func ExampleOIDC() {
	p, err := provider.OIDC(provider.OIDCConfig{
		ID:           "okta",
		Name:         "Okta",
		Issuer:       "https://example.okta.com",
		ClientID:     "client-id",
		ClientSecret: "client-secret",
	})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	verifier := "a random string of 43 to 128 characters, kept by the browser"
	sum := sha256.Sum256([]byte(verifier))
	challenge := base64.RawURLEncoding.EncodeToString(sum[:])
	nonce := "derived from the verifier"

	// The first call fetches the discovery document.
	u, err := p.AuthURL(ctx, provider.AuthRequest{
		RedirectURI:   "https://app.example.com/auth/callback/okta",
		CodeChallenge: challenge,
		Nonce:         nonce,
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("send the browser to", u)

	// The browser comes back to the redirect URI with ?code=...
	id, err := p.Exchange(ctx, provider.ExchangeRequest{
		Code:         "the code",
		RedirectURI:  "https://app.example.com/auth/callback/okta",
		CodeVerifier: verifier,
		Nonce:        nonce,
	})
	if err != nil {
		log.Print(err) // safe to log: no code, token or response body
		return
	}
	fmt.Println(id.Subject, id.Email, id.EmailVerified)
}

// GitHub's authorisation URL needs no network: its endpoints are fixed.
func ExampleGitHub() {
	p, err := provider.GitHub(provider.GitHubConfig{ClientID: "Iv1.0123", ClientSecret: "secret"})
	if err != nil {
		log.Fatal(err)
	}
	u, _ := p.AuthURL(context.Background(), provider.AuthRequest{
		RedirectURI:   "https://app.example.com/auth/callback/github",
		CodeChallenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
		Nonce:         "ignored: GitHub is not OpenID Connect",
	})
	fmt.Println(u)
	// Output:
	// https://github.com/login/oauth/authorize?client_id=Iv1.0123&code_challenge=E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM&code_challenge_method=S256&redirect_uri=https%3A%2F%2Fapp.example.com%2Fauth%2Fcallback%2Fgithub&response_type=code&scope=read%3Auser+user%3Aemail
}

// Apple posts the code to the redirect URI, so that URI must be a server
// endpoint: a FormPoster says so.
func ExampleApple() {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader) // in real life, the .p8 file
	der, _ := x509.MarshalPKCS8PrivateKey(key)
	p, err := provider.Apple(provider.AppleConfig{
		ClientID:   "com.example.web", // the Services ID
		TeamID:     "ABCDE12345",
		KeyID:      "KEY0123456",
		PrivateKey: string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
	})
	if err != nil {
		log.Fatal(err)
	}
	fp, ok := p.(provider.FormPoster)
	fmt.Println(p.ID(), ok && fp.FormPost())
	// Output: apple true
}

// Errors match the package's sentinels, and their text is safe to log.
func Example_errors() {
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "internal details", http.StatusInternalServerError)
	}))
	defer down.Close()

	p, err := provider.OIDC(provider.OIDCConfig{ID: "idp", Issuer: down.URL, ClientID: "client-id"})
	if err != nil {
		log.Fatal(err)
	}
	_, err = p.AuthURL(context.Background(), provider.AuthRequest{RedirectURI: "https://app.example.com/cb"})
	fmt.Println(errors.Is(err, provider.ErrDiscovery))
	fmt.Println(err)

	_, err = provider.Google(provider.GoogleConfig{})
	fmt.Println(errors.Is(err, provider.ErrConfig), err)
	// Output:
	// true
	// provider: discovery failed: idp: discovery document answered 500
	// true provider: invalid configuration: google: no client id
}
