package auth

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/latchkit/auth/store"
	"github.com/latchkit/auth/store/memstore"
)

// countingHasher records every hash verified.
type countingHasher struct {
	passwordHasher
	mu       sync.Mutex
	verified []string
}

func (h *countingHasher) verify(pw, phc string) (bool, bool, error) {
	h.mu.Lock()
	h.verified = append(h.verified, phc)
	h.mu.Unlock()
	return h.passwordHasher.verify(pw, phc)
}

// The unknown-user path costs exactly one verification, against a hash
// made with the real parameters, like a known user's wrong password.
func TestUnknownUserCostsARealHash(t *testing.T) {
	st := memstore.New()
	a, err := New(Config{Store: st}) // the default, OWASP parameters
	if err != nil {
		t.Fatal(err)
	}
	h := &countingHasher{passwordHasher: a.passwords}
	a.passwords = h
	const real = "$argon2id$v=19$m=19456,t=2,p=1$"
	if !strings.HasPrefix(a.dummyHash, real) {
		t.Fatalf("dummy hash %q is not made with the configured parameters", a.dummyHash)
	}
	signUp := func(email string) {
		req := httptest.NewRequest("POST", "/auth/signup", strings.NewReader(
			`{"formFields":[{"id":"email","value":"`+email+`"},{"id":"password","value":"right password 1"}]}`))
		rec := httptest.NewRecorder()
		a.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			t.Fatalf("sign-up: %d %s", rec.Code, rec.Body)
		}
	}
	signUp("known@example.com")
	tp := store.Login{LoginKey: store.LoginKey{Method: store.MethodThirdParty, ThirdParty: "google", Subject: "g-1"}, Email: "tp@example.com"}
	if err := st.CreateUser(t.Context(), store.User{ID: "third-party"}, tp); err != nil {
		t.Fatal(err)
	}
	for _, email := range []string{"unknown@example.com", "known@example.com", "tp@example.com"} {
		h.mu.Lock()
		h.verified = nil
		h.mu.Unlock()
		req := httptest.NewRequest("POST", "/auth/signin", strings.NewReader(
			`{"formFields":[{"id":"email","value":"`+email+`"},{"id":"password","value":"wrong password 1"}]}`))
		rec := httptest.NewRecorder()
		a.ServeHTTP(rec, req)
		if !strings.Contains(rec.Body.String(), "WRONG_CREDENTIALS_ERROR") {
			t.Fatalf("sign-in %s: %s", email, rec.Body)
		}
		h.mu.Lock()
		got := h.verified
		h.mu.Unlock()
		if len(got) != 1 || !strings.HasPrefix(got[0], real) {
			t.Errorf("sign-in with %s verified %d hashes %q; want exactly one made with %s", email, len(got), got, real)
		}
	}
}
