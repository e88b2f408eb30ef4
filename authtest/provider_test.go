package authtest_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/provider"
)

const redirectURI = "https://app.example.com/auth/callback/authtest"

type flow struct {
	verifier, nonce string
}

func newFlow() flow {
	return flow{verifier: "verifier-0123456789012345678901234567890123", nonce: "nonce-1"}
}

func (f flow) challenge() string {
	sum := sha256.Sum256([]byte(f.verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// signIn runs the whole flow against fake: authorisation URL, the
// browser's visit, the exchange.
func signIn(t *testing.T, fake *authtest.Provider, p provider.Provider, f flow) (url.Values, provider.Identity, error) {
	t.Helper()
	ctx := context.Background()
	u, err := p.AuthURL(ctx, provider.AuthRequest{RedirectURI: redirectURI, State: "st", CodeChallenge: f.challenge(), Nonce: f.nonce})
	if err != nil {
		t.Fatal(err)
	}
	back := fake.Authorize(t, u)
	id, err := p.Exchange(ctx, provider.ExchangeRequest{
		Code: back.Get("code"), RedirectURI: redirectURI, CodeVerifier: f.verifier, Nonce: f.nonce, Issuer: back.Get("iss"),
	})
	return back, id, err
}

func TestProviderFlow(t *testing.T) {
	fake := authtest.NewProvider(t)
	p := fake.Provider()
	if p.ID() != authtest.ProviderID {
		t.Errorf("ID %q", p.ID())
	}
	back, id, err := signIn(t, fake, p, newFlow())
	if err != nil {
		t.Fatal(err)
	}
	if back.Get("state") != "st" || back.Get("iss") != fake.URL || back.Get("code") == "" {
		t.Errorf("redirect back %v", back)
	}
	if want := (provider.Identity{Subject: "user-1", Email: "user1@example.com", EmailVerified: true}); id != want {
		t.Errorf("identity %+v, want %+v", id, want)
	}

	fake.SetIdentity("user-2", "two@example.com", false)
	if _, id, err := signIn(t, fake, p, newFlow()); err != nil || id != (provider.Identity{Subject: "user-2", Email: "two@example.com"}) {
		t.Errorf("second identity: %+v, %v", id, err)
	}
	fake.SetIdentity("user-3", "", false)
	if _, id, err := signIn(t, fake, p, newFlow()); err != nil || id != (provider.Identity{Subject: "user-3"}) {
		t.Errorf("no email: %+v, %v", id, err)
	}

	// A rotated key is found by fetching the JWKS again.
	fake.RotateKey()
	if _, _, err := signIn(t, fake, p, newFlow()); err != nil {
		t.Errorf("after RotateKey: %v", err)
	}
}

func TestProviderChecks(t *testing.T) {
	fake := authtest.NewProvider(t)
	p := fake.Provider()
	ctx := context.Background()
	f := newFlow()
	u, _ := p.AuthURL(ctx, provider.AuthRequest{RedirectURI: redirectURI, CodeChallenge: f.challenge(), Nonce: f.nonce})
	code := func() string { return fake.Authorize(t, u).Get("code") }
	req := func(edit func(r *provider.ExchangeRequest)) provider.ExchangeRequest {
		r := provider.ExchangeRequest{Code: code(), RedirectURI: redirectURI, CodeVerifier: f.verifier, Nonce: f.nonce}
		edit(&r)
		return r
	}
	for name, r := range map[string]provider.ExchangeRequest{
		"wrong verifier":     req(func(r *provider.ExchangeRequest) { r.CodeVerifier = strings.Repeat("x", 43) }),
		"no verifier":        req(func(r *provider.ExchangeRequest) { r.CodeVerifier = "" }),
		"other redirect URI": req(func(r *provider.ExchangeRequest) { r.RedirectURI += "/x" }),
		"unknown code":       req(func(r *provider.ExchangeRequest) { r.Code = "nope" }),
	} {
		if _, err := p.Exchange(ctx, r); !errors.Is(err, provider.ErrExchange) {
			t.Errorf("%s: %v, want ErrExchange", name, err)
		}
	}
	// Codes are single use.
	r := req(func(*provider.ExchangeRequest) {})
	if _, err := p.Exchange(ctx, r); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Exchange(ctx, r); !errors.Is(err, provider.ErrExchange) {
		t.Errorf("code used twice: %v", err)
	}
	// The nonce the exchange expects is the one sent.
	if _, err := p.Exchange(ctx, req(func(r *provider.ExchangeRequest) { r.Nonce = "other" })); !errors.Is(err, provider.ErrIDToken) {
		t.Errorf("other nonce: %v", err)
	}
	// A wrong client is refused.
	wrong, _ := provider.OIDC(provider.OIDCConfig{ID: "x", Issuer: fake.URL, ClientID: fake.ClientID, ClientSecret: "wrong"})
	if _, err := wrong.Exchange(ctx, req(func(*provider.ExchangeRequest) {})); !errors.Is(err, provider.ErrExchange) || !strings.Contains(err.Error(), "401 invalid_client") {
		t.Errorf("wrong secret: %v", err)
	}
	// Refused authorisation requests are not redirected.
	for _, q := range []string{"client_id=x&response_type=code&redirect_uri=https://a.example", "client_id=" + fake.ClientID + "&response_type=code&redirect_uri=/rel"} {
		res, err := http.Get(fake.URL + "/authorize?" + q)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: %d", q, res.StatusCode)
		}
	}
}

func TestProviderFaults(t *testing.T) {
	fake := authtest.NewProvider(t)
	p := fake.Provider()
	for _, tc := range []struct {
		fault authtest.Fault
		want  error
	}{
		{authtest.FaultStatus, provider.ErrExchange},
		{authtest.FaultHang, provider.ErrExchange},
		{authtest.FaultGarbage, provider.ErrExchange},
		{authtest.FaultUnknownKey, provider.ErrIDToken},
		{authtest.FaultWrongIssuer, provider.ErrIDToken},
		{authtest.FaultWrongAudience, provider.ErrIDToken},
		{authtest.FaultExpired, provider.ErrIDToken},
		{authtest.FaultWrongNonce, provider.ErrIDToken},
	} {
		fake.SetFault(tc.fault)
		f := newFlow()
		// The hang is cut by the deadline; the other faults answer at
		// once, and get time to spare on a loaded machine (discovery and
		// the keys are fetched on the way).
		deadline := 5 * time.Second
		if tc.fault == authtest.FaultHang {
			deadline = 200 * time.Millisecond
		}
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		u, _ := p.AuthURL(ctx, provider.AuthRequest{RedirectURI: redirectURI, CodeChallenge: f.challenge(), Nonce: f.nonce})
		back := fake.Authorize(t, u)
		start := time.Now()
		_, err := p.Exchange(ctx, provider.ExchangeRequest{Code: back.Get("code"), RedirectURI: redirectURI, CodeVerifier: f.verifier, Nonce: f.nonce})
		cancel()
		if !errors.Is(err, tc.want) {
			t.Errorf("fault %d: %v, want %v", tc.fault, err, tc.want)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("fault %d took %v", tc.fault, d)
		}
	}
	fake.SetFault(authtest.NoFault)
	if _, _, err := signIn(t, fake, p, newFlow()); err != nil {
		t.Errorf("after NoFault: %v", err)
	}
}
