package auth

import (
	"context"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/latchkit/auth/internal/onetime"
	"github.com/latchkit/auth/mailer"
	"github.com/latchkit/auth/store/memstore"
)

type discardMailer struct{}

func (discardMailer) Send(context.Context, mailer.Message) error { return nil }

// hashCounter counts the new passwords hashed.
type hashCounter struct {
	passwordHasher
	n atomic.Int64
}

func (h *hashCounter) hash(pw string) string {
	h.n.Add(1)
	return h.passwordHasher.hash(pw)
}

// A reset submission with a token that is well formed but unknown is
// answered without hashing the new password.
func TestResetUnknownTokensCostNoHash(t *testing.T) {
	a, err := New(Config{Store: memstore.New(), Email: EmailConfig{Mailer: discardMailer{}}, AppURL: "https://app.example.com",
		Password: PasswordConfig{Hashing: PasswordHashing{Memory: 64, Iterations: 1, Parallelism: 1}, InsecureWeakHashing: true}})
	if err != nil {
		t.Fatal(err)
	}
	h := &hashCounter{passwordHasher: a.passwords}
	a.passwords = h
	for range 20 {
		tok, _ := onetime.New()
		req := httptest.NewRequest("POST", "/auth/user/password/reset", strings.NewReader(
			`{"formFields":[{"id":"password","value":"new password 1"}],"token":"`+tok+`"}`))
		rec := httptest.NewRecorder()
		a.ServeHTTP(rec, req)
		if !strings.Contains(rec.Body.String(), "RESET_PASSWORD_INVALID_TOKEN_ERROR") {
			t.Fatalf("unknown token: %d %s", rec.Code, rec.Body)
		}
	}
	if n := h.n.Load(); n != 0 {
		t.Errorf("20 reset submissions with unknown tokens hashed %d passwords; want 0", n)
	}
}
