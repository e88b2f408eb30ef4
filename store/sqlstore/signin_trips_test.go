package sqlstore_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/internal/sqltest"
	"github.com/latchkit/auth/store/sqlstore"
)

// openLimiter lets every attempt through and keeps nothing.
type openLimiter struct{}

func (openLimiter) Take(context.Context, string, auth.Rate, time.Time) (time.Duration, error) {
	return 0, nil
}
func (openLimiter) Refund(context.Context, string, auth.Rate, time.Time) error { return nil }
func (openLimiter) Reset(context.Context, string) error                        { return nil }

// signInCosts signs a user up on a fresh database and returns what each
// kind of sign-in costs it, in calls to its driver, with limiter (nil:
// the default, which keeps the counts in the store).
func signInCosts(t *testing.T, driver string, dialect sqlstore.Dialect, dsn string, limiter auth.Limiter) map[string]int64 {
	t.Helper()
	db, count := sqltest.Counted(t, driver, dsn)
	st := migrated(t, db, dialect)
	s := authtest.NewServer(t, auth.Config{Store: st, Limiter: limiter})
	costs := map[string]int64{}
	cost := func(what string, f func() *authtest.Response, want func(*authtest.Response) bool) {
		t.Helper()
		start := count.Load()
		res := f()
		costs[what] = count.Load() - start
		if !want(res) {
			t.Fatalf("%s: %d %s", what, res.StatusCode, res.Body)
		}
	}
	ok := func(res *authtest.Response) bool { return res.StatusCode == http.StatusOK && res.Status == "OK" }
	wrong := func(res *authtest.Response) bool { return res.Status == "WRONG_CREDENTIALS_ERROR" }
	// A first sign-up loads what the Auth caches (the signing key) and
	// prunes the rate limits (once a minute); the rest is the steady
	// state.
	s.NewClient(authtest.Header).SignUp(s.NewEmail(), authtest.Password)
	email := s.NewEmail()
	cost("sign-up", func() *authtest.Response { return s.NewClient(authtest.Header).SignUp(email, authtest.Password) }, ok)
	cost("sign-in", func() *authtest.Response { return s.NewClient(authtest.Header).SignIn(email, authtest.Password) }, ok)
	cost("wrong password", func() *authtest.Response { return s.NewClient(authtest.Header).SignIn(email, "wrong password 1") }, wrong)
	cost("unknown email", func() *authtest.Response {
		return s.NewClient(authtest.Header).SignIn(s.NewEmail(), "wrong password 1")
	}, wrong)
	cost("sign-in after a wrong password", func() *authtest.Response { return s.NewClient(authtest.Header).SignIn(email, authtest.Password) }, ok)
	if limiter != nil {
		return costs
	}
	for range 10 {
		s.NewClient(authtest.Header).SignIn(email, "wrong password 1")
	}
	cost("throttled", func() *authtest.Response { return s.NewClient(authtest.Header).SignIn(email, "wrong password 1") },
		func(res *authtest.Response) bool { return res.StatusCode == http.StatusTooManyRequests })
	return costs
}

// TestSignInRoundTrips counts what the rate limits of a password sign-in
// cost the database, in calls to its driver, with the default Limiter
// keeping the counts in the store: the difference from a Limiter that
// keeps nothing. A right password costs one statement (a read), a wrong
// one two (the read and one write), a throttled attempt one and nothing
// else, and a right password after a wrong one from the same address one
// more (a reset). A right password costs three in all.
func TestSignInRoundTrips(t *testing.T) {
	for _, tc := range countedBackends {
		t.Run(tc.name, func(t *testing.T) {
			limited := signInCosts(t, tc.driver, tc.dialect, tc.dsn(t), nil)
			open := signInCosts(t, tc.driver, tc.dialect, tc.dsn(t), openLimiter{})
			for _, c := range []struct {
				what string
				want int64
			}{
				{"sign-in", 1},
				{"wrong password", 2},
				{"unknown email", 2},
				{"sign-in after a wrong password", 2},
				{"sign-up", 1},
			} {
				got := limited[c.what] - open[c.what]
				t.Logf("%s: %d round trips, %d of them the rate limits'", c.what, limited[c.what], got)
				if got > c.want {
					t.Errorf("the rate limits of a %s: %d round trips, want at most %d", c.what, got, c.want)
				}
			}
			// The whole of a right password: the read of the user with its
			// logins, the limits' read, the session's insert.
			if got := limited["sign-in"]; got > 3 {
				t.Errorf("a sign-in: %d round trips, want at most 3", got)
			}
			t.Logf("throttled: %d round trips", limited["throttled"])
			if got := limited["throttled"]; got > 1 {
				t.Errorf("a throttled sign-in: %d round trips, want at most 1", got)
			}
		})
	}
}
