package auth

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
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
