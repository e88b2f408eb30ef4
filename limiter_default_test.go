package auth_test

// Tests of the default Limiter: with a Store that can hold rate-limit
// state, every instance sharing the store counts the same attempts and
// remembers the same authorisation codes, with no Limiter configured.

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/provider"
	"github.com/latchkit/auth/store"
	"github.com/latchkit/auth/store/memstore"
	"github.com/latchkit/auth/thirdparty"
)

// A provider that would redeem a code twice gets it at most once from all
// instances together: the code is remembered in the store before any
// instance sends it to the provider.
func TestDefaultLimiterCodeOnceAcrossInstances(t *testing.T) {
	t.Parallel()
	st := memstore.New()
	if _, ok := any(st).(store.RateLimitStore); !ok {
		t.Fatal("memstore does not implement store.RateLimitStore; this test needs a store that does")
	}
	// scripted redeems any code, as often as it is asked.
	p := &scripted{id: "idp", identity: provider.Identity{Subject: "sub-1", Email: "someone@example.com", EmailVerified: true}}
	const app = "https://app.example.com"
	cfg := auth.Config{Store: st, AppURL: app, ThirdParty: thirdparty.Config{Providers: []provider.Provider{p}}}
	one, two := authtest.NewServer(t, cfg), authtest.NewServer(t, cfg)
	redirect := app + "/auth/callback/idp"

	ok := 0
	for i, s := range []*authtest.Server{one, two} {
		c := s.NewClient(authtest.Header)
		v := authorisationURL(t, c, "idp", redirect)
		res := c.Do("POST", "/auth/signinup", signInUpBody("idp", redirect, "the-code", v))
		switch res.Status {
		case "OK":
			ok++
		case "GENERAL_ERROR":
			if res.IssuedTokens() {
				t.Errorf("instance %d: a replayed code issued tokens", i+1)
			}
		default:
			t.Errorf("instance %d: %d %s", i+1, res.StatusCode, res.Body)
		}
	}
	if ok != 1 || p.exchanged() != 1 {
		t.Errorf("one code at two instances: %d OK and %d exchanges at the provider, want 1 and 1", ok, p.exchanged())
	}
}

// Failed sign-ins are counted once for all instances sharing the store.
func TestDefaultLimiterSharedByInstances(t *testing.T) {
	t.Parallel()
	st := memstore.New()
	cfg := auth.Config{Store: st, RateLimits: auth.RateLimits{SignInFailures: auth.Rate{Burst: 3, Every: time.Hour}}}
	one, two := authtest.NewServer(t, cfg), authtest.NewServer(t, cfg)
	email := one.NewEmail()
	if res := one.NewClient(authtest.Header).SignUp(email, authtest.Password); res.Status != "OK" {
		t.Fatalf("sign-up: %d %s", res.StatusCode, res.Body)
	}
	for i, s := range []*authtest.Server{one, two, one} {
		if res := s.NewClient(authtest.Header).SignIn(email, "wrong password 1"); res.Status != "WRONG_CREDENTIALS_ERROR" {
			t.Fatalf("failure %d: %d %s", i+1, res.StatusCode, res.Body)
		}
	}
	for i, s := range []*authtest.Server{two, one} {
		if res := s.NewClient(authtest.Header).SignIn(email, "wrong password 1"); res.StatusCode != http.StatusTooManyRequests {
			t.Errorf("instance %d, fourth failure with an allowance of 3 counted across instances: %d %s, want 429",
				2-i, res.StatusCode, res.Body)
		}
	}
}

// recordingLimiter is a Limiter that lets everything through and counts
// its calls.
type recordingLimiter struct {
	mu    sync.Mutex
	takes int
}

func (l *recordingLimiter) Take(context.Context, string, auth.Rate, time.Time) (time.Duration, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.takes++
	return 0, nil
}

func (l *recordingLimiter) Refund(context.Context, string, auth.Rate, time.Time) error { return nil }
func (l *recordingLimiter) Reset(context.Context, string) error                        { return nil }

func (l *recordingLimiter) taken() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.takes
}

// A Limiter set in the Config is used as it is, even when the store could
// keep the counts.
func TestConfiguredLimiterKept(t *testing.T) {
	t.Parallel()
	l := &recordingLimiter{}
	s := authtest.NewServer(t, auth.Config{Limiter: l, RateLimits: auth.RateLimits{SignInFailures: auth.Rate{Burst: 1, Every: time.Hour}}})
	email := s.NewEmail()
	for i := range 3 {
		if res := s.NewClient(authtest.Header).SignIn(email, "wrong password 1"); res.Status != "WRONG_CREDENTIALS_ERROR" {
			t.Fatalf("failure %d, with a limiter that lets everything through: %d %s", i+1, res.StatusCode, res.Body)
		}
	}
	if l.taken() == 0 {
		t.Error("the configured Limiter was never asked")
	}
}
