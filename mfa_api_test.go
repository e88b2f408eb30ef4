package auth_test

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
)

// TestMFAGoAPI: the Go API of second factors, as an application's account
// page and its support use it.
func TestMFAGoAPI(t *testing.T) {
	s := authtest.NewServer(t, auth.Config{MFA: auth.MFAConfig{Required: []string{auth.FactorTOTP}}})
	ctx := t.Context()
	c, u := s.SignedIn(authtest.Header)
	secret := c.SetUpTOTP()

	sf, err := s.Auth.SecondFactors(ctx, u.ID)
	if err != nil || len(sf.TOTPDevices) != 1 || !sf.TOTPDevices[0].Verified || sf.RecoveryCodes != 0 {
		t.Fatalf("SecondFactors after a device set up: %+v, %v", sf, err)
	}
	codes, err := s.Auth.NewRecoveryCodes(ctx, u.ID)
	if err != nil || len(codes) != 10 {
		t.Fatalf("NewRecoveryCodes: %v, %v", codes, err)
	}
	if sf, _ := s.Auth.SecondFactors(ctx, u.ID); sf.RecoveryCodes != 10 {
		t.Errorf("SecondFactors after NewRecoveryCodes: %d codes, want 10", sf.RecoveryCodes)
	}
	// A code the Go API made works over HTTP, once.
	p := s.NewClient(authtest.Header)
	p.SignIn(u.Email, authtest.Password)
	if res := p.UseRecoveryCode(codes[3]); res.Status != "OK" {
		t.Fatalf("a recovery code of NewRecoveryCodes: %d %s", res.StatusCode, res.Body)
	}
	if _, err := s.Auth.SecondFactors(ctx, "no-such-user"); err != nil {
		t.Errorf("SecondFactors of an unknown user: %v, want the zero value", err)
	}
	if _, err := s.Auth.NewRecoveryCodes(ctx, "no-such-user"); !errors.Is(err, auth.ErrNotFound) {
		t.Errorf("NewRecoveryCodes of an unknown user: %v, want ErrNotFound", err)
	}

	// Support resets a user who lost device and codes: every session
	// ends, the old device's codes stop working, and the next sign-in
	// sets up a device anew.
	if err := s.Auth.ResetSecondFactors(ctx, u.ID); err != nil {
		t.Fatal(err)
	}
	if res := c.Refresh(); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("a refresh after ResetSecondFactors: %d %s, want 401", res.StatusCode, res.Body)
	}
	if sf, _ := s.Auth.SecondFactors(ctx, u.ID); len(sf.TOTPDevices) != 0 || sf.RecoveryCodes != 0 {
		t.Errorf("SecondFactors after ResetSecondFactors: %+v", sf)
	}
	s.Clock.Advance(30 * time.Second)
	n := s.NewClient(authtest.Header)
	n.SignIn(u.Email, authtest.Password)
	if res := n.CompleteTOTP(secret); res.Status != "UNKNOWN_USER_ID_ERROR" {
		t.Errorf("a code of the removed device: %d %s, want UNKNOWN_USER_ID_ERROR", res.StatusCode, res.Body)
	}
	if res := n.Get("/api/session"); res.StatusCode != http.StatusForbidden {
		t.Errorf("a sign-in after the reset, before a new device: %d, want 403", res.StatusCode)
	}
	n.SetUpTOTP()
	if res := n.Get("/api/session"); res.StatusCode != http.StatusOK {
		t.Errorf("after a new device: %d %s, want 200", res.StatusCode, res.Body)
	}
	if err := s.Auth.ResetSecondFactors(ctx, "no-such-user"); !errors.Is(err, auth.ErrNotFound) {
		t.Errorf("ResetSecondFactors of an unknown user: %v, want ErrNotFound", err)
	}
}
