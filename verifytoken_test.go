package auth_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/emailverification"
)

// wantSessionError checks that err is a *SessionError matching answer
// with the reason want.
func wantSessionError(t *testing.T, what string, err error, answer error, want auth.Reason) {
	t.Helper()
	var se *auth.SessionError
	if !errors.As(err, &se) || !errors.Is(err, answer) || se.Reason != want {
		t.Errorf("%s: %v, want a SessionError matching %v with reason %s", what, err, answer, want)
	}
}

// VerifyToken refuses what RequireSession refuses, with the same reasons,
// and returns the session of a good token.
func TestVerifyToken(t *testing.T) {
	s := authtest.NewServer(t, auth.Config{CheckSessionInStore: true})
	c := s.NewClient(authtest.Header)
	if res := c.SignUp("worker@example.com", "a good password 1"); res.Status != "OK" {
		t.Fatalf("sign-up: %s", res.Body)
	}
	ctx := t.Context()
	got, err := s.Auth.VerifyToken(ctx, c.AccessToken)
	if err != nil {
		t.Fatalf("a good token: %v", err)
	}
	if u, err := s.Auth.UserByID(ctx, got.UserID); err != nil || u.LoginMethods[0].Email != "worker@example.com" || got.Handle == "" {
		t.Errorf("a good token: session %+v of user %+v (%v)", got, u, err)
	}

	_, err = s.Auth.VerifyToken(ctx, "")
	wantSessionError(t, "no token", err, auth.ErrUnauthorized, auth.ReasonNoToken)
	_, err = s.Auth.VerifyToken(ctx, strings.Repeat("a", 5000))
	wantSessionError(t, "a token too long to read", err, auth.ErrTryRefreshToken, auth.ReasonMalformed)
	_, err = s.Auth.VerifyToken(ctx, "not.a.token")
	wantSessionError(t, "garbage", err, auth.ErrTryRefreshToken, auth.ReasonInvalid)
	sig := strings.LastIndexByte(c.AccessToken, '.') + 1
	forged := c.AccessToken[:sig] + strings.Map(func(r rune) rune {
		if r == 'A' {
			return 'B'
		}
		return 'A'
	}, c.AccessToken[sig:])
	_, err = s.Auth.VerifyToken(ctx, forged)
	wantSessionError(t, "a forged signature", err, auth.ErrTryRefreshToken, auth.ReasonInvalid)

	other := s.NewClient(authtest.Header)
	if res := other.SignIn("worker@example.com", "a good password 1"); res.Status != "OK" {
		t.Fatalf("sign-in: %s", res.Body)
	}
	signedOut := other.AccessToken
	if res := other.SignOut(); res.Status != "OK" {
		t.Fatalf("sign-out: %s", res.Body)
	}
	_, err = s.Auth.VerifyToken(ctx, signedOut)
	wantSessionError(t, "a signed-out session's token", err, auth.ErrUnauthorized, auth.ReasonSignedOut)

	s.Clock.Advance(auth.DefaultAccessTokenLifetime)
	_, err = s.Auth.VerifyToken(ctx, c.AccessToken)
	wantSessionError(t, "a token at its expiry", err, auth.ErrTryRefreshToken, auth.ReasonExpired)
}

// VerifyToken holds a session to the claims that the configuration and
// the rules ask for, as RequireSession does, and reads a stale claim from
// the store.
func TestVerifyTokenClaims(t *testing.T) {
	s := newVerifying(t, emailverification.Required, auth.Config{})
	c := s.NewClient(authtest.Header)
	if res := c.SignUp("unverified@example.com", "a good password 1"); res.Status != "OK" {
		t.Fatalf("sign-up: %s", res.Body)
	}
	ctx := t.Context()
	_, err := s.Auth.VerifyToken(ctx, c.AccessToken)
	var ce *auth.ClaimError
	if !errors.As(err, &ce) || ce.Claim != "st-ev" {
		t.Fatalf("an unverified email in required mode: %v, want a ClaimError of st-ev", err)
	}
	if _, err := s.Auth.VerifyToken(ctx, c.AccessToken, auth.AllowUnverifiedEmail()); err != nil {
		t.Errorf("with AllowUnverifiedEmail: %v", err)
	}
	u, err := s.Auth.UserByID(ctx, decodeFrontToken(t, c.FrontToken).UP["sub"].(string))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Auth.SetEmailVerified(ctx, u.LoginMethods[0].ID, true); err != nil {
		t.Fatal(err)
	}
	s.Clock.Advance(11 * time.Second) // past the age at which a false claim is read again
	if _, err := s.Auth.VerifyToken(ctx, c.AccessToken); err != nil {
		t.Errorf("the token's claim says unverified, the store verified: %v", err)
	}

	_, err = s.Auth.VerifyToken(ctx, c.AccessToken, auth.FactorWithin(auth.FactorTOTP, time.Minute))
	if !errors.As(err, &ce) || ce.Claim != "st-mfa" || ce.FactorID != auth.FactorTOTP {
		t.Errorf("FactorWithin without the factor: %v, want a ClaimError of st-mfa for totp", err)
	}
}
