package emailpassword

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/latchkit/auth/internal/kit"
	"github.com/latchkit/auth/internal/password"
	"github.com/latchkit/auth/store"
	"golang.org/x/crypto/bcrypt"
)

// countingHasher records every hash verified.
type countingHasher struct {
	hasher
	mu       sync.Mutex
	verified []string
}

func (h *countingHasher) verify(pw, phc string) (bool, bool, error) {
	h.mu.Lock()
	h.verified = append(h.verified, phc)
	h.mu.Unlock()
	return h.hasher.verify(pw, phc)
}

// The unknown-user path costs exactly one verification, against a hash
// made with the real parameters, like a known user's wrong password.
func TestUnknownUserCostsARealHash(t *testing.T) {
	p, k := newTestRecipe(t, Config{}, kit.Setup{}) // the default, OWASP parameters
	st := k.st
	h := &countingHasher{hasher: p.passwords}
	p.passwords = h
	const real = "$argon2id$v=19$m=19456,t=2,p=1$"
	if !strings.HasPrefix(p.dummyHash, real) {
		t.Fatalf("dummy hash %q is not made with the configured parameters", p.dummyHash)
	}
	signUp := func(email string) {
		rec := serveRecipe(t.Context(), p, "", "/auth/signup",
			`{"formFields":[{"id":"email","value":"`+email+`"},{"id":"password","value":"right password 1"}]}`)
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
		rec := serveRecipe(t.Context(), p, "", "/auth/signin",
			`{"formFields":[{"id":"email","value":"`+email+`"},{"id":"password","value":"wrong password 1"}]}`)
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

// A known user whose stored hash is not current (an imported bcrypt hash,
// argon2id with other parameters) costs a verification with the current
// parameters as well, so it is never cheaper to refuse than an unknown
// email: not even a bcrypt user with a password over bcrypt's 72 bytes,
// which bcrypt refuses unhashed. And every refusal waits out the slowest
// verification this instance has made lately, so a costlier stored hash
// is not slower to refuse either (security review F15).
func TestNonCurrentHashCostsAsMuch(t *testing.T) {
	p, k := newTestRecipe(t, cheap, kit.Setup{})
	st := k.st
	h := &countingHasher{hasher: p.passwords}
	p.passwords = h
	var padded []time.Duration
	p.pad = func(ctx context.Context, d time.Duration) { padded = append(padded, d) }
	const current = "$argon2id$v=19$m=64,t=1,p=1$"
	bh, err := bcrypt.GenerateFromPassword([]byte("imported pass 1"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	for id, hash := range map[string]string{
		"bcrypt":   string(bh),
		"stronger": password.Hash("older pass 1", password.Params{Memory: 128, Time: 2, Threads: 1}),
	} {
		l := store.Login{LoginKey: store.EmailPasswordKey(id + "@example.com"), Email: id + "@example.com", PasswordHash: hash}
		if err := st.CreateUser(t.Context(), store.User{ID: id}, l); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct{ email, password string }{
		{"bcrypt@example.com", "wrong pass 1"},
		{"bcrypt@example.com", strings.Repeat("x", 80)},
		{"stronger@example.com", "wrong pass 1"},
		{"nobody@example.com", strings.Repeat("x", 80)},
	} {
		h.mu.Lock()
		h.verified = nil
		h.mu.Unlock()
		padded = nil
		rec := serveRecipe(t.Context(), p, "", "/auth/signin",
			`{"formFields":[{"id":"email","value":"`+tc.email+`"},{"id":"password","value":"`+tc.password+`"}]}`)
		if !strings.Contains(rec.Body.String(), "WRONG_CREDENTIALS_ERROR") {
			t.Fatalf("sign-in %s: %s", tc.email, rec.Body)
		}
		h.mu.Lock()
		got := h.verified
		h.mu.Unlock()
		if !slices.ContainsFunc(got, func(phc string) bool { return strings.HasPrefix(phc, current) }) {
			t.Errorf("sign-in with %s and a %d-byte password verified %q; want a verification with the current parameters among them", tc.email, len(tc.password), got)
		}
		if len(padded) != 1 {
			t.Errorf("sign-in with %s: padded %v; want the refusal padded once", tc.email, padded)
		}
	}
}

// The padding floor is the upper envelope of the slowest kind of hash
// seen lately: one slow check moves it a quarter of the way, quicker ones
// bring it down slowly, a kind not seen for a while stops counting.
func TestCheckCostsFloor(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	argon := password.Hash("x", password.Params{Memory: 64, Time: 1, Threads: 1})
	bh, _ := bcrypt.GenerateFromPassword([]byte("x"), bcrypt.MinCost)
	if k := hashKind(argon); k != "$argon2id$v=19$m=64,t=1,p=1" {
		t.Errorf("hashKind(argon2id) = %q", k)
	}
	if k := hashKind(string(bh)); k != "$2a$04$" {
		t.Errorf("hashKind(bcrypt) = %q", k)
	}
	var c checkCosts
	for range 20 {
		c.observe(hashKind(argon), 30*time.Millisecond, now)
	}
	c.observe(hashKind(argon), 430*time.Millisecond, now) // one check on a busy machine
	if f := c.floor(now); f != 130*time.Millisecond {
		t.Errorf("floor after one outlier = %v, want 30ms + 400ms/4 = 130ms", f)
	}
	for range 200 {
		c.observe(hashKind(argon), 30*time.Millisecond, now)
	}
	if f := c.floor(now); f > 31*time.Millisecond {
		t.Errorf("floor after 200 quicker checks = %v, want back near 30ms", f)
	}
	c.observe(hashKind(string(bh)), 200*time.Millisecond, now.Add(time.Minute))
	if f := c.floor(now.Add(time.Minute)); f != 200*time.Millisecond {
		t.Errorf("floor with a slower kind = %v, want 200ms", f)
	}
	if f := c.floor(now.Add(21 * time.Minute)); f != 0 {
		t.Errorf("floor once no kind was seen for 20 minutes = %v, want 0", f)
	}
}
