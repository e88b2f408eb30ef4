package auth

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/latchkit/auth/emailpassword"
	"github.com/latchkit/auth/emailverification"
	"github.com/latchkit/auth/mailer"
	"github.com/latchkit/auth/store"
	"github.com/latchkit/auth/store/memstore"
)

// jsonClaims is accessClaims with the kernel's claims as fields that
// encoding/json and golang-jwt write and read, in the order New registers
// them: what the hand-written encoder must match byte for byte.
type jsonClaims struct {
	accessClaims
	EmailVerified *emailClaim     `json:"st-ev,omitempty"`
	MFA           json.RawMessage `json:"st-mfa,omitempty"`
}

// kernelClaims are the names of the claims New registers, in order.
var kernelClaims = []string{"st-ev", "st-mfa", "st-fresh", "st-imp"} // st-fresh is in no token; st-imp only with Config.Impersonation

// claims is jc's accessClaims carrying its claims, encoded as their
// features encode them.
func (jc *jsonClaims) claims() accessClaims {
	var v claimValues
	if jc.EmailVerified != nil {
		v[claimEV] = jc.EmailVerified.encode()
	}
	if jc.MFA != nil {
		v[claimMFA] = jc.MFA
	}
	c := jc.accessClaims
	c.Claims = namedClaims{kernelClaims, v}
	return c
}

// The hand-written encoding of the claims is byte for byte what
// encoding/json makes of them, escapes included.
func TestAccessClaimsJSON(t *testing.T) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 678_000_000, time.UTC)
	if a, _ := tokenAuth(t, Config{}); !slices.Equal(a.claimNames, kernelClaims) {
		t.Fatalf("New registers the claims %q, want %q", a.claimNames, kernelClaims)
	}
	for _, jc := range []jsonClaims{
		{accessClaims: accessClaims{Subject: "u", RecipeUserID: "u", SessionHandle: "h", TenantID: "public", TokenType: accessTokenType,
			Issuer: DefaultIssuer, IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(time.Hour)), ID: "j-_9"}},
		{accessClaims: accessClaims{Subject: `quote " and \ back`, RecipeUserID: "<tag>&amp;", SessionHandle: "tab\there\x00nul", TenantID: "Grüße",
			TokenType: accessTokenType, Issuer: "https://issuer.example/\u2028", IssuedAt: jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(now), NotBefore: jwt.NewNumericDate(now), ID: "\x7f"},
			EmailVerified: &emailClaim{Verified: true, Time: now.UnixMilli()}},
		{accessClaims: accessClaims{Subject: "u"}, EmailVerified: &emailClaim{}, MFA: json.RawMessage(`{"c":{"totp":1},"v":true}`)},
		{accessClaims: accessClaims{Subject: "u"}, MFA: json.RawMessage(`{"c":{},"v":false}`)},
	} {
		want, err := json.Marshal(&jc)
		if err != nil {
			t.Fatal(err)
		}
		c := jc.claims()
		if got := c.appendJSON(nil); string(got) != string(want) {
			t.Errorf("appendJSON:\n got %s\nwant %s", got, want)
		}
	}
}

// tokenAuth returns an Auth on a fresh memstore signing with alg, and the
// key it signs access tokens with.
func tokenAuth(tb testing.TB, cfg Config) (*Auth, *signingKey) {
	tb.Helper()
	cfg.Store = memstore.New()
	cfg.EmailPassword = emailpassword.Config{Hashing: emailpassword.Hashing{Memory: 64, Iterations: 1, Parallelism: 1}, InsecureWeakHashing: true}
	a, err := New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { a.Close(context.Background()) })
	key, err := a.keys.signer(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	return a, key
}

// BenchmarkIssueAccess signs an access token and its front-token, as
// every sign-in and refresh does.
func BenchmarkIssueAccess(b *testing.B) {
	for _, alg := range []string{HS256, EdDSA} {
		b.Run(alg, func(b *testing.B) {
			a, key := tokenAuth(b, Config{SigningAlgorithm: alg})
			now := time.Now()
			s := store.Session{Handle: "h4nd1e", UserID: "8c1f0a9e-7a43-4d33-9f5e-2b1f1f0c9d11", ExpiresAt: now.Add(time.Hour)}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := a.issueAccess(key, s, now, now.Add(time.Hour), nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkParseAccess is the full verification of a token the token
// cache has not seen: what each instance pays once per token.
func BenchmarkParseAccess(b *testing.B) {
	for _, alg := range []string{HS256, EdDSA} {
		b.Run(alg, func(b *testing.B) {
			a, key := tokenAuth(b, Config{SigningAlgorithm: alg})
			now := time.Now()
			s := store.Session{Handle: "h4nd1e", UserID: "8c1f0a9e-7a43-4d33-9f5e-2b1f1f0c9d11", ExpiresAt: now.Add(time.Hour)}
			t, err := a.issueAccess(key, s, now, now.Add(time.Hour), nil)
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := a.parseAccess(ctx, t.access); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkParseAccessClaims is BenchmarkParseAccess for a token with
// st-ev and st-mfa, which a second decoding of the payload reads.
func BenchmarkParseAccessClaims(b *testing.B) {
	a, key := tokenAuth(b, Config{AppURL: "https://app.example",
		Email:             EmailConfig{Mailer: mailer.Func(func(context.Context, mailer.Message) error { return nil })},
		EmailVerification: emailverification.Config{Mode: emailverification.Optional},
		MFA:               MFAConfig{Factors: []string{FactorTOTP}}})
	now := time.Now()
	s := store.Session{Handle: "h4nd1e", UserID: "8c1f0a9e-7a43-4d33-9f5e-2b1f1f0c9d11", ExpiresAt: now.Add(time.Hour),
		Factors: mfaClaim{Done: map[string]int64{FactorTOTP: now.Unix()}, Met: true}.encode()}
	claims := a.claimsAtSignIn(b.Context(), s, store.Login{Email: "a@example.com", EmailVerified: true}, now)
	t, err := a.issueAccess(key, s, now, now.Add(time.Hour), &claims)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		vt, err := a.parseAccess(b.Context(), t.access)
		if err != nil || !vt.mfaMet() || !vt.emailClaim().Verified {
			b.Fatal(err)
		}
	}
}
