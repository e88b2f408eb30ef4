package auth

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/latchkit/auth/store"
	"github.com/latchkit/auth/store/memstore"
)

// The hand-written encoding of the claims is byte for byte what
// encoding/json makes of them, escapes included.
func TestAccessClaimsJSON(t *testing.T) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 678_000_000, time.UTC)
	for _, c := range []accessClaims{
		{Subject: "u", RecipeUserID: "u", SessionHandle: "h", TenantID: "public", TokenType: accessTokenType,
			Issuer: DefaultIssuer, IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(time.Hour)), ID: "j-_9"},
		{Subject: `quote " and \ back`, RecipeUserID: "<tag>&amp;", SessionHandle: "tab\there\x00nul", TenantID: "Grüße",
			TokenType: accessTokenType, Issuer: "https://issuer.example/\u2028", IssuedAt: jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(now), NotBefore: jwt.NewNumericDate(now), ID: "\x7f",
			EmailVerified: &emailClaim{Verified: true, Time: now.UnixMilli()}},
		{Subject: "u", EmailVerified: &emailClaim{}},
	} {
		want, err := json.Marshal(&c)
		if err != nil {
			t.Fatal(err)
		}
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
	cfg.Password = PasswordConfig{Hashing: PasswordHashing{Memory: 64, Iterations: 1, Parallelism: 1}, InsecureWeakHashing: true}
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
				if _, err := a.issueAccess(key, s, now, now.Add(time.Hour), tokenClaims{}); err != nil {
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
			t, err := a.issueAccess(key, s, now, now.Add(time.Hour), tokenClaims{})
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
