package auth

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/latchkit/auth/emailverification"
	"github.com/latchkit/auth/mailer"
)

// timeRange bounds the times the fuzzer puts in claims, in seconds either
// side of the epoch (about 270 years): past it, golang-jwt reads seconds
// back through a float64 and rounds them, which says nothing about the
// encoder.
const timeRange = 1 << 33

// FuzzAccessTokenEncoding holds signAccessToken, which encodes the claims
// by hand and signs HS256 without golang-jwt, to what it stands in for.
// From the same claims and key:
//
//   - its payload is byte for byte encoding/json's encoding of the claims;
//   - its token is byte for byte what golang-jwt's SignedString makes with
//     the key's method and header, and golang-jwt's parser accepts it with
//     the key and reads the same claims back;
//   - the library's full verification (parseAccess) accepts golang-jwt's
//     token exactly when the claims make a valid access token at the
//     clock's time, and then reports the claims as they were signed.
//
// Claims are built from the fuzzer's strings (any bytes: quotes, escapes,
// control characters, invalid UTF-8), times, and flags that choose the
// algorithm and whether nbf and st-ev are present. Run it with
//
//	go test -run '^$' -fuzz FuzzAccessTokenEncoding -fuzztime 1m .
func FuzzAccessTokenEncoding(f *testing.F) {
	const (
		flagEdDSA = 1 << iota
		flagNotBefore
		flagEmailClaim
		flagVerified
	)
	iat := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC).Unix()
	f.Add("8c1f0a9e-7a43-4d33-9f5e-2b1f1f0c9d11", "8c1f0a9e-7a43-4d33-9f5e-2b1f1f0c9d11", "q2cZ3Rv0bm5Jc0hE", "public",
		accessTokenType, DefaultIssuer, "Wl1bS0dZ2m3bW5x-9_ab1g", iat, int64(3600), int64(0), int64(0), uint8(0))
	f.Add("u", "login-2", "h", "public", accessTokenType, DefaultIssuer, "j", iat, int64(900), int64(5), iat*1000+678,
		uint8(flagEdDSA|flagNotBefore|flagEmailClaim|flagVerified))
	f.Add(`quote " and \ back`, "<tag>&amp;", "tab\there\x00nul", "Grüße", accessTokenType, DefaultIssuer+"\u2028", "\x7f",
		int64(-1), int64(1), int64(6), int64(-1), uint8(flagNotBefore|flagEmailClaim))
	f.Add("", "", "", "", "", "", "", int64(0), int64(0), int64(0), int64(0), uint8(flagEmailClaim))

	// The key is made at the far end of the times tried, so that it still
	// verifies at every one of them: what a token's times allow is what
	// this target checks, not how old its key is. Each fuzzing worker
	// makes its own pair of Auths; the fuzz function runs one input at a
	// time, so the clock is theirs in turn.
	var clock atomic.Int64
	clock.Store(timeRange)
	// Verification is on, so that st-ev is read from the tokens.
	cfg := Config{Now: func() time.Time { return time.Unix(clock.Load(), 0) }, AppURL: "https://app.example",
		Email:             EmailConfig{Mailer: mailer.Func(func(context.Context, mailer.Message) error { return nil })},
		EmailVerification: emailverification.Config{Mode: emailverification.Optional}}
	auths := map[string]*Auth{}
	keys := map[string]*signingKey{}
	for _, alg := range []string{HS256, EdDSA} {
		cfg.SigningAlgorithm = alg
		auths[alg], keys[alg] = tokenAuth(f, cfg)
	}

	f.Fuzz(func(t *testing.T, sub, rsub, handle, tenant, tokenType, iss, jti string, iat, ttl, notBefore, evTime int64, flags uint8) {
		alg := HS256
		if flags&flagEdDSA != 0 {
			alg = EdDSA
		}
		a, key := auths[alg], keys[alg]
		issued := time.Unix(iat%timeRange, 0)
		jc := jsonClaims{accessClaims: accessClaims{
			Subject: sub, RecipeUserID: rsub, SessionHandle: handle, TenantID: tenant, TokenType: tokenType,
			Issuer: iss, ID: jti,
			IssuedAt:  jwt.NewNumericDate(issued),
			ExpiresAt: jwt.NewNumericDate(issued.Add(time.Duration(ttl%timeRange) * time.Second)),
		}}
		if flags&flagNotBefore != 0 {
			jc.NotBefore = jwt.NewNumericDate(issued.Add(time.Duration(notBefore%timeRange) * time.Second))
		}
		if flags&flagEmailClaim != 0 {
			jc.EmailVerified = &emailClaim{Verified: flags&flagVerified != 0, Time: evTime}
		}

		c := jc.claims()
		token, payload, err := signAccessToken(key, &c, nil)
		if err != nil {
			t.Fatalf("signAccessToken: %v", err)
		}
		want, err := json.Marshal(&jc)
		if err != nil {
			t.Fatal(err)
		}
		if string(payload) != string(want) {
			t.Fatalf("payload differs from encoding/json:\n got %s\nwant %s", payload, want)
		}
		// What any reader of the token sees: strings made valid UTF-8.
		var read jsonClaims
		if err := json.Unmarshal(want, &read); err != nil {
			t.Fatal(err)
		}

		byJWT := jwt.NewWithClaims(key.method, &jc)
		byJWT.Header["kid"] = key.id
		jwtToken, err := byJWT.SignedString(key.sign)
		if err != nil {
			t.Fatalf("golang-jwt signing: %v", err)
		}
		if token != jwtToken {
			t.Fatalf("token differs from golang-jwt's:\n got %s\nwant %s", token, jwtToken)
		}

		parser := jwt.NewParser(jwt.WithValidMethods([]string{alg}), jwt.WithStrictDecoding(), jwt.WithoutClaimsValidation())
		var parsed jsonClaims
		if _, err := parser.ParseWithClaims(token, &parsed, func(tok *jwt.Token) (any, error) {
			if tok.Header["kid"] != key.id {
				t.Errorf("kid %v, want %q", tok.Header["kid"], key.id)
			}
			return key.verify, nil
		}); err != nil {
			t.Fatalf("golang-jwt refuses the token: %v\n%s", err, token)
		}
		got, _ := json.Marshal(&parsed)
		if wantRead, _ := json.Marshal(&read); string(got) != string(wantRead) {
			t.Fatalf("golang-jwt reads other claims:\n got %s\nwant %s", got, wantRead)
		}

		clock.Store(read.IssuedAt.Unix())
		valid := read.TokenType == accessTokenType && read.Subject != "" && read.SessionHandle != "" &&
			read.Issuer == a.cfg.Issuer && read.ExpiresAt.After(read.IssuedAt.Time) &&
			(read.NotBefore == nil || !read.NotBefore.After(read.IssuedAt.Add(jwtLeeway)))
		vt, err := a.parseAccess(context.Background(), jwtToken)
		if (err == nil) != valid {
			t.Fatalf("verification: %v, want valid %v, for %s", err, valid, want)
		}
		if err != nil {
			return
		}
		s := vt.session
		if s.UserID != read.Subject || s.LoginID != read.RecipeUserID || s.Handle != read.SessionHandle ||
			s.TenantID != read.TenantID || s.TokenID != read.ID || vt.handle != read.SessionHandle || vt.key != key ||
			!s.IssuedAt.Equal(read.IssuedAt.Time) || !s.ExpiresAt.Equal(read.ExpiresAt.Time) ||
			!vt.issuedAt.Equal(read.IssuedAt.Time) || !vt.expiresAt.Equal(read.ExpiresAt.Time) ||
			(read.NotBefore != nil) != !vt.notBefore.IsZero() || (read.NotBefore != nil && !vt.notBefore.Equal(read.NotBefore.Time)) ||
			(read.EmailVerified == nil) != (vt.emailClaim() == nil) || (read.EmailVerified != nil && *vt.emailClaim() != *read.EmailVerified) {
			t.Fatalf("verified %+v (st-ev %v, nbf %v), want the claims %s", *s, vt.emailClaim(), vt.notBefore, want)
		}
	})
}
