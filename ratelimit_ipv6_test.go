package auth_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
)

// IPv6 clients are limited by their /64: rotating addresses within one
// does not buy fresh allowances.
func TestSignInIPv6ClientsByPrefix(t *testing.T) {
	s := authtest.NewServer(t, auth.Config{TrustedProxies: loopbackProxy})
	_, u := s.SignedIn(authtest.Header)
	got := map[int]int{}
	for i := range 300 {
		c := fromClient(s.NewClient(authtest.Header), fmt.Sprintf("2001:db8::%x", i+1))
		got[c.SignIn(u.Email, fmt.Sprintf("guess %d", i)).StatusCode]++
	}
	if got[http.StatusOK] != 10 || got[http.StatusTooManyRequests] != 290 {
		t.Errorf("300 guesses from 300 addresses of one /64: %v; want 10 checked, 290 refused", got)
	}
	other := fromClient(s.NewClient(authtest.Header), "2001:db8:0:1::1")
	if res := other.SignIn(u.Email, authtest.Password); res.Status != "OK" {
		t.Errorf("the user from another /64: %d %s; want OK", res.StatusCode, res.Body)
	}
}

func TestSignInIPv6PrefixConfigurable(t *testing.T) {
	s := authtest.NewServer(t, auth.Config{TrustedProxies: loopbackProxy, RateLimits: auth.RateLimits{IPv6Prefix: 48}})
	email := s.NewEmail()
	got := map[int]int{}
	for i := range 20 {
		c := fromClient(s.NewClient(authtest.Header), fmt.Sprintf("2001:db8:0:%x::1", i+1))
		got[c.SignIn(email, fmt.Sprintf("guess %d", i)).StatusCode]++
	}
	if got[http.StatusOK] != 10 {
		t.Errorf("20 guesses from 20 /64s of one /48 with IPv6Prefix 48: %v; want 10 checked", got)
	}
}

// Guesses at one account from many addresses meet a per-account
// backstop; once it is spent each address gets one attempt per
// SignInFailures interval, and the owner, who types the password right,
// still signs in from anywhere.
func TestSignInAccountBackstop(t *testing.T) {
	s := authtest.NewServer(t, auth.Config{TrustedProxies: loopbackProxy})
	_, u := s.SignedIn(authtest.Header)
	got := map[int]int{}
	for ip := range 100 {
		c := fromClient(s.NewClient(authtest.Header), fmt.Sprintf("203.0.113.%d", ip+1))
		for j := range 10 {
			got[c.SignIn(u.Email, fmt.Sprintf("guess %d.%d", ip, j)).StatusCode]++
		}
	}
	if got[http.StatusOK] != 190 {
		t.Errorf("1,000 guesses at one account from 100 addresses: %v; want 190 checked (100, then 1 per address)", got)
	}
	owner := fromClient(s.NewClient(authtest.Header), "198.51.100.20")
	if res := owner.SignIn(u.Email, authtest.Password); res.Status != "OK" {
		t.Errorf("the owner from a fresh address during the attack: %d %s; want OK", res.StatusCode, res.Body)
	}
}

// Sign-ups hash a password each: one client gets an allowance of them, so
// it cannot take every hash slot from other users.
func TestSignUpLimitedPerClient(t *testing.T) {
	s := authtest.NewServer(t, auth.Config{TrustedProxies: loopbackProxy})
	c := fromClient(s.NewClient(authtest.Header), "203.0.113.7")
	got := map[int]int{}
	for range 40 {
		got[c.SignUp(s.NewEmail(), authtest.Password).StatusCode]++
	}
	if got[http.StatusOK] != 30 || got[http.StatusTooManyRequests] != 10 {
		t.Errorf("40 sign-ups from one address: %v; want 30 then 429", got)
	}
	if res := fromClient(s.NewClient(authtest.Header), "203.0.113.8").SignUp(s.NewEmail(), authtest.Password); res.Status != "OK" {
		t.Errorf("a sign-up from another address: %d %s; want OK", res.StatusCode, res.Body)
	}
}

// The email-exists endpoint has a per-client allowance.
func TestEmailExistsLimitedPerClient(t *testing.T) {
	s := authtest.NewServer(t, auth.Config{TrustedProxies: loopbackProxy})
	c := fromClient(s.NewClient(authtest.Header), "203.0.113.9")
	got := map[int]int{}
	for i := range 100 {
		got[c.Get(fmt.Sprintf("/auth/emailpassword/email/exists?email=probe%d@example.com", i)).StatusCode]++
	}
	if got[http.StatusOK] != 50 || got[http.StatusTooManyRequests] != 50 {
		t.Errorf("100 lookups from one address: %v; want 50 then 429", got)
	}
	if res := fromClient(s.NewClient(authtest.Header), "203.0.113.10").Get("/auth/emailpassword/email/exists?email=a@example.com"); res.StatusCode != http.StatusOK {
		t.Errorf("a lookup from another address: %d; want 200", res.StatusCode)
	}
}
