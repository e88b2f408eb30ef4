package auth_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/store"
	"github.com/latchkit/auth/store/memstore"
)

// limitCalls is a memstore that records the calls to its rate-limit
// methods, and may fail or hold its reads.
type limitCalls struct {
	*memstore.Store
	mu    sync.Mutex
	calls []string
	// readFails makes RateLimits fail.
	readFails bool
	// afterRead, if set, runs after RateLimits has read the store.
	afterRead func()
}

func (s *limitCalls) record(m string) {
	s.mu.Lock()
	s.calls = append(s.calls, m)
	s.mu.Unlock()
}

// take returns the calls recorded since the last take.
func (s *limitCalls) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.calls
	s.calls = nil
	return c
}

func (s *limitCalls) RateLimit(ctx context.Context, key string) (time.Time, error) {
	s.record("RateLimit")
	return s.Store.RateLimit(ctx, key)
}

func (s *limitCalls) TakeRateLimit(ctx context.Context, key string, every time.Duration, burst int, now time.Time) (bool, time.Time, error) {
	s.record("TakeRateLimit")
	return s.Store.TakeRateLimit(ctx, key, every, burst, now)
}

func (s *limitCalls) RefundRateLimit(ctx context.Context, key string, every time.Duration) error {
	s.record("RefundRateLimit")
	return s.Store.RefundRateLimit(ctx, key, every)
}

func (s *limitCalls) ResetRateLimit(ctx context.Context, key string) error {
	s.record("ResetRateLimit")
	return s.Store.ResetRateLimit(ctx, key)
}

func (s *limitCalls) RateLimits(ctx context.Context, keys []string) ([]time.Time, error) {
	s.record("RateLimits")
	s.mu.Lock()
	fails, after := s.readFails, s.afterRead
	s.mu.Unlock()
	if fails {
		return nil, errors.New("the store is down")
	}
	tats, err := s.Store.RateLimits(ctx, keys)
	if after != nil {
		after()
	}
	return tats, err
}

func (s *limitCalls) SpendRateLimits(ctx context.Context, spends []store.RateLimitSpend, now time.Time) error {
	s.record("SpendRateLimits")
	return s.Store.SpendRateLimits(ctx, spends, now)
}

// With the limiter in the store, a password sign-in reads its allowances
// once and writes only a failure: a right password costs the store one
// read, a wrong one a read and a write, a throttled one a read, and a
// right one after a wrong one from the same address a reset besides.
func TestStoreLimiterSignInCalls(t *testing.T) {
	st := &limitCalls{Store: memstore.New()}
	s := authtest.NewServer(t, auth.Config{Store: st, RateLimits: auth.RateLimits{SignInFailures: auth.Rate{Burst: 2, Every: time.Hour}}})
	email := s.NewEmail()
	if res := s.NewClient(authtest.Header).SignUp(email, authtest.Password); res.Status != "OK" {
		t.Fatalf("sign-up: %d %s", res.StatusCode, res.Body)
	}
	st.take()
	for _, step := range []struct {
		what, password string
		status         int
		want           []string
	}{
		{"a right password", authtest.Password, http.StatusOK, []string{"RateLimits"}},
		{"a wrong password", "wrong password 1", http.StatusOK, []string{"RateLimits", "SpendRateLimits"}},
		{"a right password after a wrong one", authtest.Password, http.StatusOK, []string{"RateLimits", "ResetRateLimit"}},
		{"a wrong password", "wrong password 1", http.StatusOK, []string{"RateLimits", "SpendRateLimits"}},
		{"a second wrong password", "wrong password 1", http.StatusOK, []string{"RateLimits", "SpendRateLimits"}},
		{"a throttled attempt", authtest.Password, http.StatusTooManyRequests, []string{"RateLimits"}},
	} {
		res := s.NewClient(authtest.Header).SignIn(email, step.password)
		if res.StatusCode != step.status {
			t.Fatalf("%s: %d %s, want %d", step.what, res.StatusCode, res.Body, step.status)
		}
		if got := st.take(); !slices.Equal(got, step.want) {
			t.Errorf("%s: store calls %v, want %v", step.what, got, step.want)
		}
	}
}

// A right password forgets the failures of its email and address at
// every instance: the store holds them, and an instance keeps none of its
// own beyond the attempts it has in hand.
func TestStoreLimiterSuccessForgetsFailuresAtEveryInstance(t *testing.T) {
	st := memstore.New()
	cfg := auth.Config{Store: st, RateLimits: auth.RateLimits{SignInFailures: auth.Rate{Burst: 3, Every: time.Hour}}}
	one, two := authtest.NewServer(t, cfg), authtest.NewServer(t, cfg)
	email := one.NewEmail()
	if res := one.NewClient(authtest.Header).SignUp(email, authtest.Password); res.Status != "OK" {
		t.Fatalf("sign-up: %d %s", res.StatusCode, res.Body)
	}
	fail := func(s *authtest.Server, want int, what string) {
		t.Helper()
		if res := s.NewClient(authtest.Header).SignIn(email, "wrong password 1"); res.StatusCode != want {
			t.Fatalf("%s: %d %s, want %d", what, res.StatusCode, res.Body, want)
		}
	}
	for i := range 3 {
		fail(one, http.StatusOK, fmt.Sprintf("failure %d at one", i+1))
	}
	fail(two, http.StatusTooManyRequests, "a fourth failure, at two")
	// Both instances' clocks stand still: the allowance has not grown
	// back. One more attempt comes back per hour.
	one.Clock.Advance(time.Hour)
	two.Clock.Advance(time.Hour)
	if res := two.NewClient(authtest.Header).SignIn(email, authtest.Password); res.Status != "OK" {
		t.Fatalf("the right password at two: %d %s", res.StatusCode, res.Body)
	}
	for i := range 3 {
		fail(one, http.StatusOK, fmt.Sprintf("failure %d at one after the right password at two", i+1))
	}
	fail(one, http.StatusTooManyRequests, "a fourth failure at one after the right password at two")
}

// A failure written while another attempt's read was on its way counts
// against that attempt, though its read missed it: of two attempts
// against an allowance of one, the second is refused.
func TestStoreLimiterFailureWrittenDuringARead(t *testing.T) {
	st := &limitCalls{Store: memstore.New()}
	s := authtest.NewServer(t, auth.Config{Store: st, RateLimits: auth.RateLimits{SignInFailures: auth.Rate{Burst: 1, Every: time.Hour}}})
	email := s.NewEmail()
	read, resume := make(chan struct{}), make(chan struct{})
	var held atomic.Bool
	st.afterRead = func() {
		if held.CompareAndSwap(false, true) {
			close(read)
			<-resume
		}
	}
	second := make(chan *authtest.Response)
	go func() { second <- s.NewClient(authtest.Header).SignIn(email, "wrong password 2") }()
	<-read // the second attempt has read the store, and waits
	if res := s.NewClient(authtest.Header).SignIn(email, "wrong password 1"); res.Status != "WRONG_CREDENTIALS_ERROR" {
		t.Fatalf("the first attempt: %d %s", res.StatusCode, res.Body)
	}
	close(resume)
	if res := <-second; res.StatusCode != http.StatusTooManyRequests {
		t.Errorf("an attempt whose read missed a failure written since, against an allowance of 1: %d %s, want 429", res.StatusCode, res.Body)
	}
}

// A store that cannot be read lets sign-ins through, as a failing
// Limiter does, and the attempts in hand at the instance still count.
func TestStoreLimiterReadFailureLetsSignInThrough(t *testing.T) {
	st := &limitCalls{Store: memstore.New()}
	var logs logCapture
	s := authtest.NewServer(t, auth.Config{Store: st, Logger: logs.logger()})
	email := s.NewEmail()
	if res := s.NewClient(authtest.Header).SignUp(email, authtest.Password); res.Status != "OK" {
		t.Fatalf("sign-up: %d %s", res.StatusCode, res.Body)
	}
	st.mu.Lock()
	st.readFails = true
	st.mu.Unlock()
	if res := s.NewClient(authtest.Header).SignIn(email, authtest.Password); res.Status != "OK" {
		t.Errorf("a sign-in while the rate limits cannot be read: %d %s, want OK", res.StatusCode, res.Body)
	}
	if !strings.Contains(logs.String(), "auth: rate limiter") {
		t.Error("the failure to read the rate limits was not logged")
	}
}
