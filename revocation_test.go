package auth_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/store/memstore"
)

// With CheckSessionInStore and a cache, a revocation through one instance
// stops its access tokens there at once, and on other instances within
// the cache time.
func TestSessionCheckCache(t *testing.T) {
	st := memstore.New()
	clock := authtest.NewClock(authtest.Start)
	cfg := auth.Config{Store: st, Now: clock.Now, CheckSessionInStore: true, SessionCheckCache: 10 * time.Second}
	one, two := authtest.NewServer(t, cfg), authtest.NewServer(t, cfg)
	c, u := one.SignedIn(authtest.Header)
	access, _ := c.Tokens()
	onTwo := two.NewClient(authtest.Header)
	onTwo.AccessToken = access
	for _, cl := range []*authtest.Client{c, onTwo} {
		if res := cl.Get("/api/session"); res.StatusCode != http.StatusOK {
			t.Fatalf("before revocation: %d %s", res.StatusCode, res.Body)
		}
	}
	if n, err := one.Auth.RevokeAllSessions(t.Context(), u.ID); err != nil || n != 1 {
		t.Fatalf("RevokeAllSessions = %d, %v", n, err)
	}
	if res := c.Get("/api/session"); res.StatusCode != http.StatusUnauthorized || res.Message != "unauthorised" {
		t.Errorf("on the revoking instance: %d %s; want 401 unauthorised at once", res.StatusCode, res.Body)
	}
	if res := onTwo.Get("/api/session"); res.StatusCode != http.StatusOK {
		t.Errorf("on another instance within the cache time: %d %s; want the cached answer", res.StatusCode, res.Body)
	}
	clock.Advance(11 * time.Second)
	onTwo.AccessToken = access
	if res := onTwo.Get("/api/session"); res.StatusCode != http.StatusUnauthorized || res.Header.Get("front-token") != "remove" {
		t.Errorf("on another instance after the cache time: %d %s; want 401 with clearing", res.StatusCode, res.Body)
	}
}

// Without a cache, revocation through any instance is immediate
// everywhere.
func TestSessionCheckImmediate(t *testing.T) {
	st := memstore.New()
	cfg := auth.Config{Store: st, CheckSessionInStore: true}
	one, two := authtest.NewServer(t, cfg), authtest.NewServer(t, cfg)
	c, _ := one.SignedIn(authtest.Header)
	access, _ := c.Tokens()
	onTwo := two.NewClient(authtest.Header)
	onTwo.AccessToken = access
	if res := onTwo.Get("/api/session"); res.StatusCode != http.StatusOK {
		t.Fatalf("before sign-out: %d", res.StatusCode)
	}
	if res := c.SignOut(); res.Status != "OK" {
		t.Fatalf("sign-out: %s", res.Body)
	}
	if res := onTwo.Get("/api/session"); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("after sign-out on another instance: %d; want 401 at once", res.StatusCode)
	}
}
