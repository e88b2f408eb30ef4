package provider

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

func newTestOIDC(t *testing.T, f *fakeIdP, hc *http.Client) Provider {
	t.Helper()
	p, err := OIDC(OIDCConfig{ID: "idp", Name: "IdP", Issuer: f.URL, ClientID: testClient, ClientSecret: testSecret, HTTPClient: hc})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestOIDCHappyPath(t *testing.T) {
	f := newFakeIdP(t, "")
	p := newTestOIDC(t, f, nil)
	if p.ID() != "idp" || p.Name() != "IdP" {
		t.Errorf("ID, Name = %q, %q", p.ID(), p.Name())
	}
	q := authQuery(t, p)
	for k, want := range map[string]string{
		"client_id": testClient, "redirect_uri": testRedir, "response_type": "code",
		"scope": "openid email", "code_challenge": "challenge-1", "code_challenge_method": "S256",
		"nonce": testNonce, "state": "",
	} {
		if got := q.Get(k); got != want {
			t.Errorf("authorisation URL %s = %q, want %q", k, got, want)
		}
	}
	u, _ := p.AuthURL(context.Background(), AuthRequest{RedirectURI: testRedir, State: "s1"})
	if !strings.Contains(u, "state=s1") || strings.Contains(u, "code_challenge") || strings.Contains(u, "nonce") {
		t.Errorf("with a state and no challenge or nonce: %s", u)
	}

	id, err := exchange(p)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Identity{Subject: "user-1", Email: "u1@example.com", EmailVerified: true}); id != want {
		t.Errorf("identity %+v, want %+v", id, want)
	}
	form, hdr, _ := f.lastTokenRequest()
	if form.Get("code_verifier") != testVerif || form.Get("redirect_uri") != testRedir || form.Get("grant_type") != "authorization_code" {
		t.Errorf("token request %v", form)
	}
	if user, pass, ok := (&http.Request{Header: hdr}).BasicAuth(); !ok || user != testClient || pass != testSecret || form.Has("client_secret") {
		t.Errorf("client_secret_basic: Authorization %q, form %v", hdr.Get("Authorization"), form)
	}
	// The document is fetched once and kept.
	if _, err := exchange(p); err != nil {
		t.Fatal(err)
	}
	if _, d := f.counts(); len(d) != 1 {
		t.Errorf("%d discovery fetches, want 1", len(d))
	}
}

func TestOIDCPKCEFollowsDiscovery(t *testing.T) {
	f := newFakeIdP(t, "")
	f.set(func(f *fakeIdP) {
		delete(f.doc, "code_challenge_methods_supported")
		f.doc["token_endpoint_auth_methods_supported"] = []string{"private_key_jwt", "client_secret_post", "client_secret_basic"}
	})
	p := newTestOIDC(t, f, nil)
	q := authQuery(t, p)
	if q.Has("code_challenge") || q.Has("code_challenge_method") {
		t.Errorf("challenge sent to a provider whose document lists no S256: %v", q)
	}
	if !q.Has("nonce") {
		t.Error("no nonce")
	}
	if _, err := exchange(p); err != nil {
		t.Fatal(err)
	}
	form, hdr, _ := f.lastTokenRequest()
	if form.Has("code_verifier") {
		t.Error("verifier sent without a challenge")
	}
	if form.Get("client_secret") != testSecret || hdr.Get("Authorization") != "" {
		t.Errorf("client_secret_post: form %v, Authorization %q", form, hdr.Get("Authorization"))
	}

	f.set(func(f *fakeIdP) { f.doc["code_challenge_methods_supported"] = []string{"plain"} })
	p = newTestOIDC(t, f, nil)
	if q := authQuery(t, p); q.Has("code_challenge") {
		t.Error("challenge sent to a provider that lists only plain")
	}
}

func TestOIDCEmailVerified(t *testing.T) {
	for _, tc := range []struct {
		name  string
		value any // nil: no claim
		email any
		want  bool
	}{
		{"bool true", true, "a@example.com", true},
		{"string true", "true", "a@example.com", true},
		{"bool false", false, "a@example.com", false},
		{"string false", "false", "a@example.com", false},
		{"number 1", 1, "a@example.com", false},
		{"string 1", "1", "a@example.com", false},
		{"string TRUE", "TRUE", "a@example.com", false},
		{"absent", nil, "a@example.com", false},
		{"no email", true, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeIdP(t, "")
			f.set(func(f *fakeIdP) {
				f.claims = func(c jwt.MapClaims) {
					c["email_verified"], c["email"] = tc.value, tc.email
					if tc.value == nil {
						delete(c, "email_verified")
					}
					if tc.email == nil {
						delete(c, "email")
					}
				}
			})
			id, err := exchange(newTestOIDC(t, f, nil))
			if err != nil {
				t.Fatal(err)
			}
			if id.EmailVerified != tc.want {
				t.Errorf("EmailVerified = %v, want %v", id.EmailVerified, tc.want)
			}
		})
	}
}

func TestOIDCRefusesIDToken(t *testing.T) {
	a, other := keys(t)
	hs := func(c jwt.MapClaims) string {
		s, _ := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString([]byte(testSecret))
		return s
	}
	none := func(c jwt.MapClaims) string {
		h := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`))
		b, _ := json.Marshal(c)
		return h + "." + base64.RawURLEncoding.EncodeToString(b) + "."
	}
	now := time.Now()
	for _, tc := range []struct {
		name    string
		claims  func(c jwt.MapClaims)
		token   func(c jwt.MapClaims) string
		nonce   string
		wantErr error
		reason  string // what the error says, the reason logged
	}{
		{name: "wrong nonce", claims: func(c jwt.MapClaims) { c["nonce"] = "other" }, reason: "nonce does not match"},
		{name: "no nonce", claims: func(c jwt.MapClaims) { delete(c, "nonce") }, reason: "nonce does not match"},
		{name: "wrong iss", claims: func(c jwt.MapClaims) { c["iss"] = "https://evil.example.com" }, reason: "iss is not the provider's issuer"},
		{name: "iss with a slash", claims: func(c jwt.MapClaims) { c["iss"] = c["iss"].(string) + "/" }, reason: "iss is not the provider's issuer"},
		{name: "wrong aud", claims: func(c jwt.MapClaims) { c["aud"] = "client-2" }, reason: "aud is not the client id"},
		{name: "two audiences", claims: func(c jwt.MapClaims) { c["aud"] = []string{testClient, "client-2"} }, reason: "aud is not the client id"},
		{name: "aud not a string", claims: func(c jwt.MapClaims) { c["aud"] = 7 }, reason: "claims do not parse"},
		{name: "exp not a number", claims: func(c jwt.MapClaims) { c["exp"] = "tomorrow" }, reason: "claims do not parse"},
		{name: "wrong azp", claims: func(c jwt.MapClaims) { c["azp"] = "client-2" }, reason: "azp is not the client id"},
		{name: "expired", claims: func(c jwt.MapClaims) { c["exp"] = now.Add(-time.Second).Unix() }, reason: "expired"},
		{name: "no exp", claims: func(c jwt.MapClaims) { delete(c, "exp") }, reason: "no exp"},
		{name: "no iat", claims: func(c jwt.MapClaims) { delete(c, "iat") }, reason: "no iat"},
		{name: "iat in the future", claims: func(c jwt.MapClaims) { c["iat"] = now.Add(10 * time.Minute).Unix() }, reason: "iat in the future"},
		{name: "iat an hour ago", claims: func(c jwt.MapClaims) { c["iat"] = now.Add(-time.Hour).Unix() }, reason: "iat too old"},
		{name: "nbf in the future", claims: func(c jwt.MapClaims) { c["nbf"] = now.Add(10 * time.Minute).Unix() }, reason: "not valid yet (nbf)"},
		{name: "no sub", claims: func(c jwt.MapClaims) { delete(c, "sub") }, reason: "no sub"},
		{name: "alg none", token: none, reason: `algorithm "none" not accepted`},
		{name: "HS256 with the client secret", token: hs, reason: `algorithm "HS256" not accepted`},
		{name: "unknown key", token: func(c jwt.MapClaims) string { return sign(t, other, c) }, reason: "signature not verified by any key of the key set"},
		{name: "signature of other claims", token: func(c jwt.MapClaims) string {
			p := strings.Split(sign(t, a, c), ".")
			c["sub"] = "user-2"
			return strings.Join(append(strings.Split(sign(t, a, c), ".")[:2], p[2]), ".")
		}, reason: "signature not verified by any key of the key set"},
		{name: "garbage", token: func(jwt.MapClaims) string { return "a.b.c" }, reason: "not a signed JWT"},
		{name: "not a JWT", token: func(jwt.MapClaims) string { return leakMarker }, reason: "not a signed JWT"},
		{name: "no signature", token: func(c jwt.MapClaims) string {
			return strings.Join(strings.Split(sign(t, a, c), ".")[:2], ".")
		}, reason: "not a signed JWT"},
		{name: "signature not base64url", token: func(c jwt.MapClaims) string { return sign(t, a, c) + "=" }, reason: "not a signed JWT"},
		{name: "no id_token", token: func(jwt.MapClaims) string { return "" }, reason: "no ID token in the token response"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeIdP(t, "")
			f.set(func(f *fakeIdP) { f.claims, f.idToken = tc.claims, tc.token })
			_, err := exchange(newTestOIDC(t, f, nil))
			if !errors.Is(err, ErrIDToken) {
				t.Fatalf("err = %v, want ErrIDToken", err)
			}
			if !strings.HasSuffix(err.Error(), ": "+tc.reason) {
				t.Errorf("err = %v, want the reason %q", err, tc.reason)
			}
			checkSafe(t, err)
		})
	}
	// Within the skew, iat and nbf in the future are fine.
	f := newFakeIdP(t, "")
	f.set(func(f *fakeIdP) {
		f.claims = func(c jwt.MapClaims) { c["iat"], c["nbf"] = now.Add(time.Minute).Unix(), now.Add(time.Minute).Unix() }
	})
	if _, err := exchange(newTestOIDC(t, f, nil)); err != nil {
		t.Errorf("iat and nbf a minute ahead: %v", err)
	}
	// No nonce asked, none checked.
	f = newFakeIdP(t, "")
	f.set(func(f *fakeIdP) { f.claims = func(c jwt.MapClaims) { delete(c, "nonce") } })
	if _, err := exchange(newTestOIDC(t, f, nil), func(r *ExchangeRequest) { r.Nonce = "" }); err != nil {
		t.Errorf("no nonce sent: %v", err)
	}
}

func TestOIDCKeyRotation(t *testing.T) {
	a, b := keys(t)
	f := newFakeIdP(t, "")
	p := newTestOIDC(t, f, nil)
	if _, err := exchange(p); err != nil {
		t.Fatal(err)
	}
	// The provider rotates to a key the cached set does not have.
	f.set(func(f *fakeIdP) { f.published, f.signer = []*testKey{a, b}, b })
	if _, err := exchange(p); err != nil {
		t.Fatalf("after rotation: %v", err)
	}
	if n, _ := f.counts(); n != 2 {
		t.Errorf("%d JWKS fetches, want 2", n)
	}
	// A key the new set does not have either is refused.
	_, err := exchange(p, func(*ExchangeRequest) {})
	if err != nil {
		t.Fatal(err)
	}
	f.set(func(f *fakeIdP) { f.signer = newTestKey(t) })
	if _, err := exchange(p); !errors.Is(err, ErrIDToken) {
		t.Fatalf("unpublished key: %v, want ErrIDToken", err)
	}
}

// Concurrent first sign-ins share the discovery document and key set.
func TestOIDCConcurrent(t *testing.T) {
	f := newFakeIdP(t, "")
	p := newTestOIDC(t, f, nil)
	errs := make(chan error, 8)
	for range 8 {
		go func() {
			_, err := exchange(p)
			errs <- err
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

func TestOIDCCallbackIssuer(t *testing.T) {
	f := newFakeIdP(t, "")
	p := newTestOIDC(t, f, nil)
	if _, err := exchange(p, func(r *ExchangeRequest) { r.Issuer = f.URL }); err != nil {
		t.Fatalf("matching iss: %v", err)
	}
	_, _, calls := f.lastTokenRequest()
	_, err := exchange(p, func(r *ExchangeRequest) { r.Issuer = "https://evil.example.com" })
	if !errors.Is(err, ErrIssuer) {
		t.Fatalf("err = %v, want ErrIssuer", err)
	}
	if _, _, n := f.lastTokenRequest(); n != calls {
		t.Error("the code went to the token endpoint despite the wrong iss")
	}
}

func TestOIDCDiscovery(t *testing.T) {
	t.Run("failure is retried", func(t *testing.T) {
		f := newFakeIdP(t, "")
		f.handle("/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, leakMarker, http.StatusInternalServerError)
		})
		p := newTestOIDC(t, f, nil)
		_, err := p.AuthURL(context.Background(), AuthRequest{RedirectURI: testRedir})
		if !errors.Is(err, ErrDiscovery) {
			t.Fatalf("err = %v, want ErrDiscovery", err)
		}
		checkSafe(t, err)
		if _, err := exchange(p); !errors.Is(err, ErrDiscovery) {
			t.Fatalf("Exchange err = %v, want ErrDiscovery", err)
		}
		f.handle("/.well-known/openid-configuration", nil)
		if _, err := p.AuthURL(context.Background(), AuthRequest{RedirectURI: testRedir}); err != nil {
			t.Fatalf("after the provider recovered: %v", err)
		}
	})
	for _, tc := range []struct {
		name   string
		edit   func(doc map[string]any)
		reason string
	}{
		{"another issuer", func(d map[string]any) { d["issuer"] = "https://evil.example.com" }, "discovery document names another issuer"},
		{"issuer with a slash", func(d map[string]any) { d["issuer"] = d["issuer"].(string) + "/" }, "discovery document names another issuer"},
		{"http endpoint", func(d map[string]any) { d["token_endpoint"] = "http://idp.example.com/token" }, `endpoint "http://idp.example.com/token": not https`},
		{"no jwks_uri", func(d map[string]any) { delete(d, "jwks_uri") }, `endpoint "": not an absolute URL`},
		{"no usable client authentication", func(d map[string]any) { d["token_endpoint_auth_methods_supported"] = []string{"private_key_jwt"} }, "no client_secret_basic or client_secret_post at the token endpoint"},
		{"garbage", func(d map[string]any) { d["issuer"] = 7 }, "discovery document: not JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeIdP(t, "")
			f.set(func(f *fakeIdP) { tc.edit(f.doc) })
			_, err := newTestOIDC(t, f, nil).AuthURL(context.Background(), AuthRequest{RedirectURI: testRedir})
			if !errors.Is(err, ErrDiscovery) {
				t.Fatalf("err = %v, want ErrDiscovery", err)
			}
			if !strings.HasSuffix(err.Error(), ": "+tc.reason) {
				t.Errorf("err = %v, want the reason %q", err, tc.reason)
			}
		})
	}
	t.Run("kept when a refetch fails", func(t *testing.T) {
		f := newFakeIdP(t, "")
		p := newTestOIDC(t, f, nil).(*oidcProvider)
		if _, err := exchange(p); err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		p.now = func() time.Time { return now.Add(rediscoverAfter + time.Minute) }
		f.handle("/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusServiceUnavailable)
		})
		if _, err := p.AuthURL(context.Background(), AuthRequest{RedirectURI: testRedir}); err != nil {
			t.Fatalf("stale document not used: %v", err)
		}
	})
}

// The answers of a broken provider: each is an error that matches the
// sentinel, comes within the deadline and says nothing of the body.
func TestOIDCBrokenProvider(t *testing.T) {
	garbage := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte("{" + leakMarker))
	}
	status := func(code int) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(code)
			w.Write([]byte(`{"error":"server_error","error_description":"` + leakMarker + `"}`))
		}
	}
	huge := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"keys":[],"x":"`))
		w.Write([]byte(strings.Repeat("a", 2<<20)))
		w.Write([]byte(`"}`))
	}
	for _, tc := range []struct {
		name    string
		path    string
		handler func(f *fakeIdP) http.HandlerFunc
		want    error
		reason  string // how the error's text goes on after the provider id
	}{
		{"token 500", "/token", func(*fakeIdP) http.HandlerFunc { return status(500) }, ErrExchange, "token endpoint answered 500 server_error"},
		{"token 400", "/token", func(*fakeIdP) http.HandlerFunc { return status(400) }, ErrExchange, "token endpoint answered 400 server_error"},
		{"token redirect", "/token", func(*fakeIdP) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, "/token2", http.StatusTemporaryRedirect)
			}
		}, ErrExchange, "token endpoint answered 307"},
		{"token garbage", "/token", func(*fakeIdP) http.HandlerFunc { return garbage }, ErrExchange, "token endpoint: token response refused"},
		{"token hangs", "/token", func(f *fakeIdP) http.HandlerFunc { return f.hang }, ErrExchange, "token endpoint: "},
		{"token no access_token", "/token", func(*fakeIdP) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.Write([]byte(`{"token_type":"Bearer"}`))
			}
		}, ErrExchange, "token endpoint: token response refused"},
		{"jwks 500", "/jwks", func(*fakeIdP) http.HandlerFunc { return status(500) }, ErrIDToken, "the key set could not be fetched: answered 500"},
		{"jwks garbage", "/jwks", func(*fakeIdP) http.HandlerFunc { return garbage }, ErrIDToken, "the key set could not be fetched: not JSON"},
		{"jwks huge", "/jwks", func(*fakeIdP) http.HandlerFunc { return huge }, ErrIDToken, "the key set could not be fetched: not JSON: response body over 1 MiB"},
		{"jwks hangs", "/jwks", func(f *fakeIdP) http.HandlerFunc { return f.hang }, ErrIDToken, "the key set could not be fetched: "},
		{"discovery hangs", "/.well-known/openid-configuration", func(f *fakeIdP) http.HandlerFunc { return f.hang }, ErrDiscovery, "discovery: "},
		{"discovery garbage", "/.well-known/openid-configuration", func(*fakeIdP) http.HandlerFunc { return garbage }, ErrDiscovery, "discovery document: not JSON"},
		{"discovery huge", "/.well-known/openid-configuration", func(*fakeIdP) http.HandlerFunc { return huge }, ErrDiscovery, "discovery document: not JSON: response body over 1 MiB"},
	} {
		for _, by := range []string{"client timeout", "context deadline"} {
			t.Run(tc.name+"/"+by, func(t *testing.T) {
				t.Parallel()
				f := newFakeIdP(t, "")
				f.handle(tc.path, tc.handler(f))
				// Only a provider that hangs should meet the deadline:
				// the others get time to answer in full, even on a busy
				// machine, so that their own failure is the one seen.
				limit := 5 * time.Second
				if strings.HasSuffix(tc.name, "hangs") {
					limit = 200 * time.Millisecond
				}
				hc := &http.Client{Timeout: limit}
				ctx := context.Background()
				if by == "context deadline" {
					hc = nil
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, limit)
					defer cancel()
				}
				p := newTestOIDC(t, f, hc)
				start := time.Now()
				_, err := p.Exchange(ctx, ExchangeRequest{Code: testCode, RedirectURI: testRedir, CodeVerifier: testVerif, Nonce: testNonce})
				if d := time.Since(start); d > 2*time.Second {
					t.Errorf("took %v", d)
				}
				if !errors.Is(err, tc.want) {
					t.Fatalf("err = %v, want %v", err, tc.want)
				}
				if !strings.HasPrefix(err.Error(), tc.want.Error()+": idp: "+tc.reason) {
					t.Errorf("err = %v, want the reason %q", err, tc.reason)
				}
				// The caller's deadline stays in the chain, so that it
				// can tell its own timeout from the provider's failure.
				if by == "context deadline" && strings.HasSuffix(tc.name, "hangs") && !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("err = %v, want context.DeadlineExceeded in its chain", err)
				}
				checkSafe(t, err)
			})
		}
	}
}

func TestOIDCRequestAndConfig(t *testing.T) {
	f := newFakeIdP(t, "")
	p := newTestOIDC(t, f, nil)
	if _, err := exchange(p, func(r *ExchangeRequest) { r.Code = "" }); !errors.Is(err, ErrExchange) {
		t.Errorf("no code: %v", err)
	}
	if _, err := exchange(p, func(r *ExchangeRequest) { r.Code = "wrong" + testCode }); !errors.Is(err, ErrExchange) || !strings.Contains(err.Error(), "400 invalid_grant") {
		t.Errorf("refused code: %v", err)
	} else {
		checkSafe(t, err)
	}
	if _, err := p.AuthURL(context.Background(), AuthRequest{}); !errors.Is(err, ErrConfig) {
		t.Errorf("no redirect URI: %v", err)
	}
	for _, c := range []OIDCConfig{
		{Issuer: f.URL, ClientID: testClient},
		{ID: "x", Issuer: f.URL},
		{ID: "x", Issuer: "http://idp.example.com", ClientID: testClient},
		{ID: "x", Issuer: "idp.example.com", ClientID: testClient},
	} {
		if _, err := OIDC(c); !errors.Is(err, ErrConfig) {
			t.Errorf("OIDC(%+v) err = %v, want ErrConfig", c, err)
		}
	}
}
