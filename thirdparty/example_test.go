package thirdparty_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http/httptest"
	"net/url"
	"strings"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/provider"
	"github.com/latchkit/auth/store/memstore"
	"github.com/latchkit/auth/thirdparty"
)

// corp stands in for an identity provider: it vouches for whoever
// presents the code "good-code" with the PKCE verifier it was asked for.
type corp struct{ challenge string }

func (*corp) ID() string   { return "corp" }
func (*corp) Name() string { return "Corp SSO" }

func (c *corp) AuthURL(_ context.Context, r provider.AuthRequest) (string, error) {
	c.challenge = r.CodeChallenge
	return "https://sso.corp.example/authorize?code_challenge=" + r.CodeChallenge, nil
}

func (c *corp) Exchange(_ context.Context, r provider.ExchangeRequest) (provider.Identity, error) {
	if r.Code != "good-code" || r.CodeVerifier == "" {
		return provider.Identity{}, fmt.Errorf("the provider refuses the code")
	}
	return provider.Identity{Subject: "emp-42", Email: "ada@corp.example", EmailVerified: true}, nil
}

// Both steps of a sign-in, as the SDK makes them: the authorisation URL
// and its PKCE verifier, then the code the provider sent the browser back
// with, which is redeemed once.
func ExampleConfig() {
	a, err := auth.New(auth.Config{
		Store:      memstore.New(),
		AppURL:     "https://app.example",
		ThirdParty: thirdparty.Config{Providers: []provider.Provider{&corp{}}},
	})
	if err != nil {
		log.Fatal(err)
	}
	serve := func(method, path, body string) map[string]any {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("st-auth-mode", "header")
		rec := httptest.NewRecorder()
		a.ServeHTTP(rec, req)
		var answer map[string]any
		json.Unmarshal(rec.Body.Bytes(), &answer)
		return answer
	}
	callback := "https://app.example/auth/callback/corp"
	start := serve("GET", "/auth/authorisationurl?thirdPartyId=corp&redirectURIOnProviderDashboard="+url.QueryEscape(callback), "")
	fmt.Println(start["status"], strings.HasPrefix(start["urlWithQueryParams"].(string), "https://sso.corp.example/"))

	body, _ := json.Marshal(map[string]any{"thirdPartyId": "corp", "redirectURIInfo": map[string]any{
		"redirectURIOnProviderDashboard": callback,
		"redirectURIQueryParams":         map[string]string{"code": "good-code"},
		"pkceCodeVerifier":               start["pkceCodeVerifier"],
	}})
	signedIn := serve("POST", "/auth/signinup", string(body))
	fmt.Println(signedIn["status"], signedIn["createdNewRecipeUser"])
	again := serve("POST", "/auth/signinup", string(body))
	fmt.Println(again["status"])
	// Output:
	// OK true
	// OK true
	// GENERAL_ERROR
}
