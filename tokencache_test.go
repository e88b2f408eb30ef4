package auth_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/store"
	"github.com/latchkit/auth/store/memstore"
)

// Verified access tokens are cached; these tests show that a cached token
// is refused exactly when a fresh verification would refuse it.

// The cache never extends a token's life: a token verified (and cached)
// is refused from its expiry on, and before its issue time minus the
// leeway for clock skew if the clock goes back.
func TestVerifyCacheNeverExtendsLife(t *testing.T) {
	s := authtest.NewServer(t, auth.Config{})
	c, _ := s.SignedIn(authtest.Header)
	access, _ := c.Tokens()
	get := func() *authtest.Response {
		c.AccessToken = access // a 401 may have cleared it
		return c.Get("/api/session")
	}
	for i := range 3 {
		if res := get(); res.StatusCode != http.StatusOK {
			t.Fatalf("request %d at issue time: %d %s", i, res.StatusCode, res.Body)
		}
	}
	// The access token lives an hour, to the instant.
	s.Clock.Advance(time.Hour - time.Millisecond)
	if res := get(); res.StatusCode != http.StatusOK {
		t.Fatalf("the instant before expiry: %d %s", res.StatusCode, res.Body)
	}
	s.Clock.Advance(time.Millisecond)
	wantMessage(t, get(), http.StatusUnauthorized, "try refresh token")
	wantMessage(t, get(), http.StatusUnauthorized, "try refresh token")

	// A clock that goes back puts the issue time in the future.
	c2, _ := s.SignedIn(authtest.Header)
	access, _ = c2.Tokens()
	c = c2
	if res := get(); res.StatusCode != http.StatusOK {
		t.Fatalf("second session: %d %s", res.StatusCode, res.Body)
	}
	s.Clock.Advance(-10 * time.Second)
	wantMessage(t, get(), http.StatusUnauthorized, "try refresh token")
	s.Clock.Advance(10 * time.Second)
	if res := get(); res.StatusCode != http.StatusOK {
		t.Fatalf("clock back at issue time: %d %s", res.StatusCode, res.Body)
	}
}

// With CheckSessionInStore, a cached token of a revoked session is
// refused at once.
func TestVerifyCacheRevokedSession(t *testing.T) {
	s := authtest.NewServer(t, auth.Config{CheckSessionInStore: true})
	c, u := s.SignedIn(authtest.Header)
	access, _ := c.Tokens()
	for i := range 3 {
		if res := c.Get("/api/session"); res.StatusCode != http.StatusOK {
			t.Fatalf("request %d before revocation: %d %s", i, res.StatusCode, res.Body)
		}
	}
	if n, err := s.Auth.RevokeAllSessions(t.Context(), u.ID); err != nil || n != 1 {
		t.Fatalf("RevokeAllSessions = %d, %v", n, err)
	}
	for range 2 {
		c.AccessToken = access
		wantMessage(t, c.Get("/api/session"), http.StatusUnauthorized, "unauthorised")
	}
}

// A cached token stops when its signing key stops verifying, even before
// the token expires (a key from the store may verify for less time than
// this Auth would give its own keys).
func TestVerifyCacheKeyVerifyUntil(t *testing.T) {
	st := memstore.New()
	clock := authtest.NewClock(authtest.Start)
	key := store.SigningKey{
		ID:          "short-lived-key",
		Algorithm:   auth.HS256,
		Material:    []byte("0123456789abcdef0123456789abcdef"),
		CreatedAt:   authtest.Start,
		SignUntil:   authtest.Start.Add(5 * time.Minute),
		VerifyUntil: authtest.Start.Add(10 * time.Minute),
	}
	if err := st.AddSigningKey(t.Context(), key); err != nil {
		t.Fatal(err)
	}
	s := authtest.NewServer(t, auth.Config{Store: st, Now: clock.Now})
	c, _ := s.SignedIn(authtest.Header)
	access, _ := c.Tokens()
	if h, _ := jwtParts(t, access); h["kid"] != key.ID {
		t.Fatalf("token signed with key %v, want %s", h["kid"], key.ID)
	}
	clock.Advance(9 * time.Minute)
	for i := range 2 {
		if res := c.Get("/api/session"); res.StatusCode != http.StatusOK {
			t.Fatalf("request %d while the key verifies: %d %s", i, res.StatusCode, res.Body)
		}
	}
	clock.Advance(time.Minute)
	c.AccessToken = access
	wantMessage(t, c.Get("/api/session"), http.StatusUnauthorized, "try refresh token")
}

// The CSRF rule applies to every request, cached token or not.
func TestVerifyCacheCSRF(t *testing.T) {
	s := authtest.NewServer(t, auth.Config{Cookie: auth.CookieConfig{SameSite: http.SameSiteNoneMode}})
	s.Mux.Handle("POST /api/act", s.Auth.RequireSession(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})))
	c, _ := s.SignedIn(authtest.Cookie)
	cookie := "sAccessToken=" + c.Cookie("sAccessToken", "/")
	for i := range 2 {
		if res := send(t, s, "POST", "/api/act", "", hdr("Cookie", cookie, "rid", "session")); res.StatusCode != http.StatusOK {
			t.Fatalf("request %d with rid: %d %s", i, res.StatusCode, res.Body)
		}
	}
	wantMessage(t, send(t, s, "POST", "/api/act", "", hdr("Cookie", cookie)), http.StatusUnauthorized, "try refresh token")
}

// With CheckSessionInStore, sessions found live in the store are cached
// for Config.SessionCheckCache; these tests show how soon a revocation
// stops a session's access tokens, with the cache and without.

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

// heldStore holds one Session read, once armed, between the store's
// answer and its return, so a revocation can happen in between.
type heldStore struct {
	store.Store
	armed   atomic.Bool
	read    chan struct{} // closed when the held read has its answer
	release chan struct{} // closed to let it return
}

func (s *heldStore) Session(ctx context.Context, handle string, now time.Time) (store.Session, error) {
	sess, err := s.Store.Session(ctx, handle, now)
	if s.armed.CompareAndSwap(true, false) {
		close(s.read)
		<-s.release
	}
	return sess, err
}

// A session check in flight while the session is revoked on the same
// instance must not put the revoked session into the cache: the eviction
// wins.
func TestSessionCheckCacheRevokedDuringCheck(t *testing.T) {
	st := &heldStore{Store: memstore.New(), read: make(chan struct{}), release: make(chan struct{})}
	s := authtest.NewServer(t, auth.Config{Store: st, CheckSessionInStore: true, SessionCheckCache: time.Hour})
	c, _ := s.SignedIn(authtest.Header)
	access, _ := c.Tokens()
	st.armed.Store(true)
	first := make(chan int)
	go func() {
		r := httptest.NewRequest("GET", "/api/session", nil)
		r.Header.Set("Authorization", "Bearer "+access)
		rec := httptest.NewRecorder()
		s.Mux.ServeHTTP(rec, r)
		first <- rec.Code
	}()
	<-st.read // the check has found the session live
	signOut := s.NewClient(authtest.Header)
	signOut.AccessToken = access
	if res := signOut.SignOut(); res.StatusCode != http.StatusOK {
		t.Fatalf("sign-out: %d %s", res.StatusCode, res.Body)
	}
	close(st.release)
	if code := <-first; code != http.StatusOK {
		t.Logf("the check in flight answered %d", code)
	}
	later := s.NewClient(authtest.Header)
	later.AccessToken = access
	wantMessage(t, later.Get("/api/session"), http.StatusUnauthorized, "unauthorised")
}
