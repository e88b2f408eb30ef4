package emailpassword

import (
	"strings"
	"sync/atomic"
	"testing"

	"github.com/latchkit/auth/internal/kit"
	"github.com/latchkit/auth/internal/onetime"
)

// hashCounter counts the new passwords hashed.
type hashCounter struct {
	hasher
	n atomic.Int64
}

func (h *hashCounter) hash(pw string) string {
	h.n.Add(1)
	return h.hasher.hash(pw)
}

// A reset submission with a token that is well formed but unknown is
// answered without hashing the new password.
func TestResetUnknownTokensCostNoHash(t *testing.T) {
	p, _ := newTestRecipe(t, cheap, kit.Setup{CanMail: true, AppURL: "https://app.example.com"})
	h := &hashCounter{hasher: p.passwords}
	p.passwords = h
	for range 20 {
		tok, _ := onetime.New()
		rec := serveRecipe(t.Context(), p, "", "/auth/user/password/reset",
			`{"formFields":[{"id":"password","value":"new password 1"}],"token":"`+tok+`"}`)
		if !strings.Contains(rec.Body.String(), "RESET_PASSWORD_INVALID_TOKEN_ERROR") {
			t.Fatalf("unknown token: %d %s", rec.Code, rec.Body)
		}
	}
	if n := h.n.Load(); n != 0 {
		t.Errorf("20 reset submissions with unknown tokens hashed %d passwords; want 0", n)
	}
}
