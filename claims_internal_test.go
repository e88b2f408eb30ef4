package auth

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/latchkit/auth/internal/kit"
	"github.com/latchkit/auth/store"
)

// A claim is read from a token only while its feature is on: a token that
// still carries st-mfa from when MFA was on does not pass FactorWithin
// once MFA is off, as FactorWithin's documentation says.
func TestClaimReadOnlyWhileOn(t *testing.T) {
	for _, c := range []struct {
		name   string
		cfg    Config
		passes bool
	}{
		{"MFA on", Config{MFA: MFAConfig{Factors: []string{FactorTOTP}}}, true},
		{"MFA off", Config{}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, key := tokenAuth(t, c.cfg)
			now := a.cfg.Now()
			var cv claimValues
			cv[claimMFA] = mfaClaim{Done: map[string]int64{FactorTOTP: now.Unix()}, Met: true}.encode()
			s := store.Session{Handle: "h4nd1e", UserID: "u1", ExpiresAt: now.Add(time.Hour)}
			tok, err := a.issueAccess(key, s, now, now.Add(time.Hour), &cv)
			if err != nil {
				t.Fatal(err)
			}
			_, err = a.VerifyToken(t.Context(), tok.access, FactorWithin(FactorTOTP, 5*time.Minute))
			var ce *ClaimError
			if c.passes && err != nil || !c.passes && (!errors.As(err, &ce) || ce.Claim != "st-mfa") {
				t.Errorf("FactorWithin on a token with TOTP just completed: %v, want passing %v", err, c.passes)
			}
		})
	}
}

// A recipe's proven login starts a session only with a first factor, as
// a recipe's SignIn does, whatever the recipe checked itself.
func TestSignedInHoldsFirstFactors(t *testing.T) {
	a, _ := tokenAuth(t, Config{MFA: MFAConfig{Factors: []string{FactorTOTP}, FirstFactors: []string{FactorEmailPassword}}})
	w := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodPost, "/auth/signin", nil)
	kernel{a}.SignedIn(w, r, kit.Proven{Login: store.Login{ID: "l1", UserID: "u1"}, Factor: kit.FactorWebAuthn})
	if w.Code != http.StatusUnauthorized {
		t.Errorf("a passkey's sign-in where only passwords start sessions: %d %s, want 401", w.Code, w.Body)
	}
}
