package auth_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/provider"
	"github.com/latchkit/auth/store/memstore"
	"github.com/latchkit/auth/thirdparty"
)

// oidcServer is a server whose one provider is a fake OpenID provider,
// spoken to through provider.OIDC over HTTP: discovery, JWKS, the token
// endpoint and ID-token verification all run for real.
func oidcServer(t *testing.T, cfg auth.Config) (*authtest.Server, *authtest.Provider) {
	t.Helper()
	fake := authtest.NewProvider(t)
	fake.SetIdentity("ada-1", "ada@example.com", true)
	cfg.ThirdParty.Providers = []provider.Provider{fake.Provider()}
	return authtest.NewServer(t, cfg), fake
}

func TestOIDCSignIn(t *testing.T) {
	t.Parallel()
	for _, m := range authtest.Modes {
		t.Run(m.String(), func(t *testing.T) {
			t.Parallel()
			s, fake := oidcServer(t, auth.Config{})
			c := s.NewClient(m)
			res := c.SignInWithProvider(fake)
			if res.Status != "OK" || res.JSON["createdNewRecipeUser"] != true {
				t.Fatalf("sign-up: %d %s", res.StatusCode, res.Body)
			}
			uid := res.JSON["user"].(map[string]any)["id"].(string)
			wantTokens(t, s, res, m, uid)
			wantSession(t, c, uid)
			wantTokens(t, s, c.Refresh(), m, uid)

			again := s.NewClient(m).SignInWithProvider(fake)
			if again.Status != "OK" || again.JSON["createdNewRecipeUser"] != false || again.JSON["user"].(map[string]any)["id"] != uid {
				t.Errorf("sign-in: %s, want the same user, not created", again.Body)
			}
			u, err := s.Auth.UserByID(t.Context(), uid)
			if err != nil || len(u.LoginMethods) != 1 || u.LoginMethods[0].ThirdPartyID != authtest.ProviderID ||
				u.LoginMethods[0].ThirdPartyUserID != "ada-1" || !u.LoginMethods[0].EmailVerified {
				t.Errorf("user %+v (%v): want one verified authtest/ada-1 login", u, err)
			}

			fake.SetIdentity("bob-2", "", false)
			if res := s.NewClient(m).SignInWithProvider(fake); res.Status != "NO_EMAIL_GIVEN_BY_PROVIDER" {
				t.Errorf("no email: %s", res.Body)
			}
		})
	}
}

// A provider that fails, stalls or lies gets the client GENERAL_ERROR, in
// time, never a 5xx, and nothing is written.
func TestOIDCProviderMisbehaves(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		fault authtest.Fault
	}{
		{"500", authtest.FaultStatus},
		{"hangs", authtest.FaultHang},
		{"garbage", authtest.FaultGarbage},
		{"unknown key", authtest.FaultUnknownKey},
		{"wrong issuer", authtest.FaultWrongIssuer},
		{"wrong audience", authtest.FaultWrongAudience},
		{"expired ID token", authtest.FaultExpired},
		{"wrong nonce", authtest.FaultWrongNonce},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st := memstore.New()
			s, fake := oidcServer(t, auth.Config{Store: st, ThirdParty: thirdparty.Config{Timeout: 500 * time.Millisecond}})
			fake.SetFault(tc.fault)
			start := time.Now()
			res := s.NewClient(authtest.Header).SignInWithProvider(fake)
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("answered after %v", took)
			}
			wantReply(t, tc.name, res.StatusCode, res.Body, http.StatusOK,
				`{"status":"GENERAL_ERROR","message":"Sign-in with the provider failed. Please try again."}`)
			if res.IssuedTokens() {
				t.Error("tokens issued")
			}
			if logins, _ := st.LoginsByEmail(t.Context(), "ada@example.com"); len(logins) != 0 {
				t.Error("a user was written")
			}
			// The provider recovers: sign-in works again.
			fake.SetFault(authtest.NoFault)
			if res := s.NewClient(authtest.Header).SignInWithProvider(fake); res.Status != "OK" {
				t.Errorf("after the fault: %s", res.Body)
			}
		})
	}
}

// A key rotation at the provider is picked up: the JWKS is read again for
// the unknown key id.
func TestOIDCKeyRotation(t *testing.T) {
	t.Parallel()
	s, fake := oidcServer(t, auth.Config{})
	if res := s.NewClient(authtest.Header).SignInWithProvider(fake); res.Status != "OK" {
		t.Fatalf("sign-in: %s", res.Body)
	}
	fake.RotateKey()
	if res := s.NewClient(authtest.Header).SignInWithProvider(fake); res.Status != "OK" {
		t.Errorf("sign-in after the provider rotated its key: %s", res.Body)
	}
}

// Nothing a sign-in with a provider handles in secret reaches the log:
// not the code, the verifier, the client secret or the tokens issued,
// whether the provider answers or fails.
func TestThirdPartyLogHygiene(t *testing.T) {
	t.Parallel()
	var buf logCapture
	logger := buf.logger()
	traced := newSpanTrace(t)
	s, p := tpServer(t, traced.config(auth.Config{Logger: logger}))
	traced.mount(s)
	fake := authtest.NewProvider(t)
	fake.SetIdentity("ada-1", "ada@example.com", true)
	s2 := authtest.NewServer(t, traced.config(auth.Config{Logger: logger, ThirdParty: thirdparty.Config{Providers: []provider.Provider{fake.Provider()}}}))
	traced.mount(s2)

	var secrets []string
	c := s.NewClient(authtest.Header)
	redirect := callbackURL(s, "idp")
	for i, err := range []error{nil, fmt.Errorf("%w: status 500", provider.ErrExchange)} {
		p.set(provider.Identity{Subject: "sub-1", Email: "a@example.com"}, nil)
		v := authorisationURL(t, c, "idp", redirect)
		code := fmt.Sprintf("secret-code-%d-%s", i, strings.Repeat("k", 20))
		p.set(provider.Identity{Subject: "sub-1", Email: "a@example.com"}, err)
		res := c.Do("POST", "/auth/signinup", signInUpBody("idp", redirect, code, v))
		c.Do("POST", "/auth/signinup", signInUpBody("idp", redirect, code, v)) // a replay
		secrets = append(secrets, code, v, res.Header.Get("St-Access-Token"), res.Header.Get("St-Refresh-Token"))
	}
	for _, f := range []authtest.Fault{authtest.NoFault, authtest.FaultStatus, authtest.FaultWrongAudience, authtest.FaultGarbage} {
		fake.SetFault(f)
		res := s2.NewClient(authtest.Header).SignInWithProvider(fake)
		secrets = append(secrets, res.Header.Get("St-Access-Token"), res.Header.Get("St-Refresh-Token"))
	}
	secrets = append(secrets, fake.ClientSecret)
	log := buf.String()
	if !strings.Contains(log, "third-party sign-in failed") || !strings.Contains(log, `"method":"thirdparty"`) {
		t.Fatalf("the flows did not log as planned:\n%s", log)
	}
	spans := traced.text(t, s, s2)
	for _, sec := range secrets {
		if sec != "" && strings.Contains(log, sec) {
			t.Errorf("the log holds a secret %q", sec[:min(len(sec), 12)])
		}
		if sec != "" && strings.Contains(spans, sec) {
			t.Errorf("a span holds a secret %q", sec[:min(len(sec), 12)])
		}
	}
	if strings.Contains(spans, "@") {
		t.Errorf("a span holds an email address:\n%s", spans)
	}
}
