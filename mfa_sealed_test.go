package auth_test

import (
	"bytes"
	"encoding/base32"
	"encoding/base64"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/store"
	"github.com/latchkit/auth/store/memstore"
)

// TestMFATOTPSecretSealed: with Config.Secrets, a TOTP secret is sealed
// in the store, bound to its user; without Secrets it is kept as signing
// keys are, in the clear.
func TestMFATOTPSecretSealed(t *testing.T) {
	const secret = "8d3Vq0h2T6pZ1yR4nK7wB9cF5mJ2xL8sQ4eA6uH0gD3="
	for _, sealed := range []bool{true, false} {
		st := memstore.New()
		cfg := auth.Config{Store: st, MFA: auth.MFAConfig{Required: []string{auth.FactorTOTP}}}
		if sealed {
			cfg.Secrets = []string{secret}
		}
		s := authtest.NewServer(t, cfg)
		c, u := s.SignedIn(authtest.Header)
		key := c.SetUpTOTP()
		raw, err := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(key)
		if err != nil {
			t.Fatal(err)
		}
		l, err := st.Login(t.Context(), store.SecondFactorsKey(u.ID))
		if err != nil {
			t.Fatalf("the record of second factors: %v", err)
		}
		// The record is JSON: the secret would be there in base64.
		inClear := bytes.Contains(l.Material, raw) || strings.Contains(string(l.Material), key) ||
			strings.Contains(string(l.Material), base64.StdEncoding.EncodeToString(raw))
		if inClear == sealed {
			t.Errorf("sealed %v: the TOTP secret in the clear in the store: %v, want %v", sealed, inClear, !sealed)
		}
		if !sealed {
			continue
		}
		// A sealed secret copied into another user's record does not open
		// there: the code of the copied device is refused (a 500, for the
		// record was altered), not accepted.
		c2, u2 := s.SignedIn(authtest.Header)
		c2.SetUpTOTP()
		l2, err := st.Login(t.Context(), store.SecondFactorsKey(u2.ID))
		if err != nil {
			t.Fatal(err)
		}
		if err := st.UpdateLoginMaterial(t.Context(), l2.ID, l2.Material, l.Material); err != nil {
			t.Fatal(err)
		}
		s.Clock.Advance(30 * time.Second)
		victim := s.NewClient(authtest.Header)
		victim.SignIn(u2.Email, authtest.Password)
		if res := victim.CompleteTOTP(key); res.Status == "OK" || res.StatusCode != http.StatusInternalServerError {
			t.Errorf("a code of a sealed secret copied into another user's record: %d %s, want 500", res.StatusCode, res.Body)
		}
		// Where it belongs, it opens.
		owner := s.NewClient(authtest.Header)
		owner.SignIn(u.Email, authtest.Password)
		if res := owner.CompleteTOTP(key); res.Status != "OK" {
			t.Errorf("a code of the user's own sealed secret: %d %s", res.StatusCode, res.Body)
		}
	}
}
