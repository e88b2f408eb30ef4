package authtest_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/passkey"
)

// An application's test of passkey sign-in, with an Authenticator in the
// browser's place: sign up, sign in, and two sign-ins the server must
// refuse, a cloned key's and a phishing page's.
func ExampleClient_SignInWithPasskey() {
	testPasskeys := func(t testing.TB) {
		s := authtest.NewServer(t, auth.Config{
			// The relying party is AppURL's host: a domain name, which
			// WebAuthn needs, not the test server's IP address.
			AppURL:   "https://app.example.com",
			Passkeys: passkey.New(passkey.Config{}),
		})
		a := s.NewAuthenticator() // a device, on pages at https://app.example.com

		res := s.NewClient(authtest.Header).SignUpWithPasskey(a, "ada@example.com")
		fmt.Println("sign-up:", res.Status, res.IssuedTokens())
		res = s.NewClient(authtest.Header).SignInWithPasskey(a)
		fmt.Println("sign-in:", res.Status, res.IssuedTokens(), "counter", a.Credentials()[0].Counter)

		a.SetCounter(a.Credentials()[0].ID, 0) // as a copy of the key would count
		res = s.NewClient(authtest.Header).SignInWithPasskey(a)
		fmt.Println("clone:", res.Status, res.IssuedTokens())

		a.Next(authtest.WithOrigin("https://app.example.com.evil.example"))
		res = s.NewClient(authtest.Header).SignInWithPasskey(a)
		fmt.Println("phishing page:", res.Status, res.IssuedTokens())
	}
	run(testPasskeys) // as go test would, with the test's *testing.T
	// Output:
	// sign-up: OK true
	// sign-in: OK true counter 1
	// clone: INVALID_CREDENTIALS_ERROR false
	// phishing page: INVALID_CREDENTIALS_ERROR false
}

// The Authenticator answers a server's options, as they come over the
// wire, with the credential JSON the frontend SDKs post.
func ExampleAuthenticator() {
	a := authtest.NewAuthenticator("https://app.example.com")

	// The register options answer; user.id is "user-1" in base64url.
	options := `{"status":"OK","webauthnGeneratedOptionsId":"0b5e9f1c-6a8d-4f57-9d2e-3c1f7a4b8e60",
		"rp":{"id":"example.com","name":"Example"},
		"user":{"id":"dXNlci0x","name":"ada@example.com","displayName":"ada@example.com"},
		"challenge":"q9Ld2Vb0m0S3n6XfQ2w4yA","timeout":60000,
		"pubKeyCredParams":[{"alg":-8,"type":"public-key"},{"alg":-7,"type":"public-key"}],
		"excludeCredentials":[],"attestation":"none",
		"authenticatorSelection":{"residentKey":"required","requireResidentKey":true,"userVerification":"preferred"}}`
	credential, err := a.Register([]byte(options))
	if err != nil {
		fmt.Println(err)
		return
	}
	var reg struct {
		Type                    string
		AuthenticatorAttachment string
		Response                struct {
			Transports         []string
			PublicKeyAlgorithm int
		}
	}
	json.Unmarshal(credential, &reg)
	fmt.Println(reg.Type, reg.AuthenticatorAttachment, reg.Response.Transports, reg.Response.PublicKeyAlgorithm)

	// Two sign-ins: each assertion counts one more.
	signIn := `{"status":"OK","webauthnGeneratedOptionsId":"7d41c3a2-90e5-4b6f-8c1d-2a9b5e7f3c04",
		"rpId":"example.com","challenge":"Xf3kP0aZ8mQw1cR5tY7uIg","timeout":60000,"userVerification":"preferred"}`
	for range 2 {
		if _, err := a.Assert([]byte(signIn)); err != nil {
			fmt.Println(err)
		}
	}
	c := a.Credentials()[0]
	fmt.Println(c.RPID, string(c.UserHandle), c.UserName, c.Counter)

	// Nothing for another site.
	_, err = a.Assert([]byte(`{"rpId":"other.example","challenge":"Xf3kP0aZ8mQw1cR5tY7uIg"}`))
	fmt.Println(err)
	// Output:
	// public-key platform [internal] -7
	// example.com user-1 ada@example.com 2
	// authtest: the authenticator holds no credential for these options
}
