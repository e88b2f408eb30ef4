package auth_test

import (
	"context"
	"errors"
	"net/http"
	"net/netip"
	"testing"
	"time"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/store/memstore"
)

// fromClient makes a client's requests look as if they came through a
// trusted proxy on behalf of addr.
func fromClient(c *authtest.Client, addr string) *authtest.Client {
	c.Header.Set("X-Forwarded-For", addr)
	return c
}

var loopbackProxy = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}

func TestSignInThrottledPerEmailAndClient(t *testing.T) {
	s := authtest.NewServer(t, auth.Config{TrustedProxies: loopbackProxy})
	victim := s.NewEmail()
	if res := s.NewClient(authtest.Header).SignUp(victim, authtest.Password); res.Status != "OK" {
		t.Fatal(res.Status)
	}
	attacker := fromClient(s.NewClient(authtest.Header), "203.0.113.9")
	for i := range 10 {
		if res := attacker.SignIn(victim, "guess number "+string(rune('a'+i))); res.Status != "WRONG_CREDENTIALS_ERROR" {
			t.Fatalf("failure %d: %d %s", i+1, res.StatusCode, res.Body)
		}
	}
	// The eleventh attempt from there is refused before the password is
	// looked at, right or wrong, known email or not.
	res := attacker.SignIn(victim, authtest.Password)
	if res.StatusCode != http.StatusTooManyRequests || res.Header.Get("Retry-After") != "360" {
		t.Fatalf("11th attempt: %d Retry-After %q %s; want 429 with Retry-After 360", res.StatusCode, res.Header.Get("Retry-After"), res.Body)
	}
	if _, access := attacker.Tokens(); access != "" {
		t.Error("a throttled sign-in with the right password issued tokens")
	}

	// The user, elsewhere, is not locked out.
	user := fromClient(s.NewClient(authtest.Header), "198.51.100.7")
	if res := user.SignIn(victim, authtest.Password); res.Status != "OK" {
		t.Errorf("the user from another address: %d %s; want OK", res.StatusCode, res.Body)
	}

	// One attempt comes back every 6 minutes.
	s.Clock.Advance(6 * time.Minute)
	if res := attacker.SignIn(victim, "guess again"); res.Status != "WRONG_CREDENTIALS_ERROR" {
		t.Errorf("after 6 minutes: %d %s; want one more attempt", res.StatusCode, res.Body)
	}
	if res := attacker.SignIn(victim, "and again"); res.StatusCode != http.StatusTooManyRequests {
		t.Errorf("second attempt after 6 minutes: %d; want 429", res.StatusCode)
	}
}

func TestSignInSuccessResetsTheCount(t *testing.T) {
	s := authtest.NewServer(t, auth.Config{RateLimits: auth.RateLimits{SignInFailures: auth.Rate{Burst: 3, Every: time.Hour}}})
	c, u := s.SignedIn(authtest.Header)
	for range 2 {
		c.SignIn(u.Email, "typo password 1")
	}
	if res := c.SignIn(u.Email, authtest.Password); res.Status != "OK" {
		t.Fatalf("sign-in: %s", res.Body)
	}
	for i := range 3 {
		if res := c.SignIn(u.Email, "typo password 1"); res.Status != "WRONG_CREDENTIALS_ERROR" {
			t.Fatalf("failure %d after a success: %d %s; the success should have reset the count", i+1, res.StatusCode, res.Body)
		}
	}
}

func TestSignInThrottledPerClient(t *testing.T) {
	s := authtest.NewServer(t, auth.Config{
		TrustedProxies: loopbackProxy,
		RateLimits:     auth.RateLimits{ClientSignInFailures: auth.Rate{Burst: 5, Every: time.Minute}},
	})
	stuffer := fromClient(s.NewClient(authtest.Header), "203.0.113.50")
	for i := range 5 {
		if res := stuffer.SignIn(s.NewEmail(), "password 123"); res.Status != "WRONG_CREDENTIALS_ERROR" {
			t.Fatalf("attempt %d: %d %s", i+1, res.StatusCode, res.Body)
		}
	}
	if res := stuffer.SignIn(s.NewEmail(), "password 123"); res.StatusCode != http.StatusTooManyRequests {
		t.Errorf("6th email from one address: %d; want 429", res.StatusCode)
	}
	other := fromClient(s.NewClient(authtest.Header), "203.0.113.51")
	if res := other.SignIn(s.NewEmail(), "password 123"); res.Status != "WRONG_CREDENTIALS_ERROR" {
		t.Errorf("another address: %d %s; want its own allowance", res.StatusCode, res.Body)
	}
}

// Without trusted proxies, X-Forwarded-For is the client's own say-so and
// cannot buy a fresh allowance.
func TestForwardedForIgnoredWithoutTrustedProxies(t *testing.T) {
	s := authtest.NewServer(t, auth.Config{RateLimits: auth.RateLimits{SignInFailures: auth.Rate{Burst: 2, Every: time.Hour}}})
	email := s.NewEmail()
	for i := range 3 {
		c := fromClient(s.NewClient(authtest.Header), "192.0.2."+string(rune('1'+i)))
		res := c.SignIn(email, "password 123")
		if want := i < 2; want != (res.Status == "WRONG_CREDENTIALS_ERROR") {
			t.Errorf("attempt %d with a forged X-Forwarded-For: %d %s", i+1, res.StatusCode, res.Body)
		}
	}
}

// A throttled answer is the same whether the email has an account or not.
func TestThrottledAnswerRevealsNothing(t *testing.T) {
	s := authtest.NewServer(t, auth.Config{RateLimits: auth.RateLimits{SignInFailures: auth.Rate{Burst: 1, Every: time.Hour}}})
	_, u := s.SignedIn(authtest.Header)
	var answers []string
	for _, email := range []string{u.Email, s.NewEmail()} {
		c := s.NewClient(authtest.Header)
		c.SignIn(email, "password 123")
		res := c.SignIn(email, "password 123")
		if res.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("second failure for %s: %d, want 429", email, res.StatusCode)
		}
		answers = append(answers, string(res.Body)+" Retry-After: "+res.Header.Get("Retry-After"))
	}
	if answers[0] != answers[1] {
		t.Errorf("throttled answers differ for a known and an unknown email: %q vs %q", answers[0], answers[1])
	}
}

func TestResetRequestsLimited(t *testing.T) {
	s := authtest.NewServer(t, auth.Config{
		TrustedProxies: loopbackProxy,
		RateLimits: auth.RateLimits{
			ResetEmails:         auth.Rate{Burst: 2, Every: time.Hour},
			ClientResetRequests: auth.Rate{Burst: 4, Every: time.Hour},
		},
	})
	_, u := s.SignedIn(authtest.Header)
	c := fromClient(s.NewClient(authtest.Header), "203.0.113.1")
	var first *authtest.Response
	for i := range 4 {
		res := c.RequestPasswordReset(u.Email)
		if res.StatusCode != http.StatusOK || res.Status != "OK" {
			t.Fatalf("request %d: %d %s", i+1, res.StatusCode, res.Body)
		}
		if first == nil {
			first = res
		} else if string(res.Body) != string(first.Body) {
			t.Errorf("request %d answered %s, the first %s: a withheld email must not show", i+1, res.Body, first.Body)
		}
	}
	if err := s.Auth.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(s.Mailbox.Messages()); n != 2 {
		t.Errorf("%d reset emails for 4 requests; want 2 (ResetEmails burst)", n)
	}
	if res := c.RequestPasswordReset(s.NewEmail()); res.StatusCode != http.StatusTooManyRequests || res.Header.Get("Retry-After") == "" {
		t.Errorf("5th request from one address: %d %q; want 429 with Retry-After", res.StatusCode, res.Header.Get("Retry-After"))
	}
	if res := fromClient(s.NewClient(authtest.Header), "203.0.113.2").RequestPasswordReset(s.NewEmail()); res.StatusCode != http.StatusOK {
		t.Errorf("another address: %d; want its own allowance", res.StatusCode)
	}
}

// brokenLimiter fails every call.
type brokenLimiter struct{}

func (brokenLimiter) Take(context.Context, string, auth.Rate, time.Time) (time.Duration, error) {
	return 0, errors.New("limiter down")
}
func (brokenLimiter) Refund(context.Context, string, auth.Rate, time.Time) error {
	return errors.New("limiter down")
}
func (brokenLimiter) Reset(context.Context, string) error { return errors.New("limiter down") }

// A Limiter that fails lets attempts through rather than locking everyone
// out; the password hash still bounds the guessing rate.
func TestBrokenLimiterFailsOpen(t *testing.T) {
	s := authtest.NewServer(t, auth.Config{Limiter: brokenLimiter{}})
	c, u := s.SignedIn(authtest.Header)
	for range 12 {
		if res := c.SignIn(u.Email, "wrong password 1"); res.Status != "WRONG_CREDENTIALS_ERROR" {
			t.Fatalf("with a broken limiter: %d %s", res.StatusCode, res.Body)
		}
	}
	if res := c.SignIn(u.Email, authtest.Password); res.Status != "OK" {
		t.Errorf("right password with a broken limiter: %s", res.Body)
	}
}

// A memory limiter at its bound keeps counting: it drops the key closest
// to refilling to make room for a new one.
func TestMemoryLimiterBounded(t *testing.T) {
	l := auth.NewMemoryLimiter(2)
	ctx := context.Background()
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	r := auth.Rate{Burst: 2, Every: time.Hour}
	for _, k := range []string{"k:a", "k:a", "k:b", "k:c"} {
		if d, err := l.Take(ctx, k, r, now); err != nil || d != 0 {
			t.Fatalf("Take %s: %v %v", k, d, err)
		}
	}
	// a (two attempts) and c (one, the newest) are kept; b, as close to
	// refilling as c but older, made room.
	if d, _ := l.Take(ctx, "k:a", r, now); d != time.Hour {
		t.Errorf("third attempt on a = wait %v, want 1h", d)
	}
	if d, _ := l.Take(ctx, "k:c", r, now); d != 0 {
		t.Errorf("second attempt on c = wait %v, want 0", d)
	}
	if d, _ := l.Take(ctx, "k:c", r, now); d != time.Hour {
		t.Errorf("third attempt on c = wait %v, want 1h: a new key past the bound must be counted", d)
	}
	// Keys of another kind have a bound of their own.
	for range 2 {
		l.Take(ctx, "other:x", r, now)
	}
	if d, _ := l.Take(ctx, "k:a", r, now); d != time.Hour {
		t.Errorf("a after another kind filled up = wait %v, want 1h", d)
	}
}

func TestRateLimitsValidated(t *testing.T) {
	st := authtest.NewServer(t, auth.Config{}).AuthConfig.Store
	if _, err := auth.New(auth.Config{Store: st, RateLimits: auth.RateLimits{SignInFailures: auth.Rate{Burst: 0, Every: time.Minute}}}); err == nil {
		t.Error("a Rate without a burst was accepted")
	}
}

// With NewStoreLimiter, instances sharing a store share the counts.
func TestStoreLimiterSharedByInstances(t *testing.T) {
	st := memstore.New()
	cfg := auth.Config{Store: st, Limiter: auth.NewStoreLimiter(st),
		RateLimits: auth.RateLimits{SignInFailures: auth.Rate{Burst: 4, Every: time.Hour}}}
	one, two := authtest.NewServer(t, cfg), authtest.NewServer(t, cfg)
	email := one.NewEmail()
	for i, s := range []*authtest.Server{one, two, one, two} {
		if res := s.NewClient(authtest.Header).SignIn(email, "password 123"); res.Status != "WRONG_CREDENTIALS_ERROR" {
			t.Fatalf("failure %d: %d %s", i+1, res.StatusCode, res.Body)
		}
	}
	for _, s := range []*authtest.Server{one, two} {
		if res := s.NewClient(authtest.Header).SignIn(email, "password 123"); res.StatusCode != http.StatusTooManyRequests {
			t.Errorf("fifth failure, counted across instances: %d; want 429", res.StatusCode)
		}
	}
}
