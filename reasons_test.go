package auth_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/store/memstore"
)

// TestRefusalReasons: every kind of 401, from the refresh endpoint and
// from a protected route, says why, in ReasonHeader and in the body, in
// each transfer mode; the messages the SDKs read are unchanged.
func TestRefusalReasons(t *testing.T) {
	t.Parallel()
	for _, m := range authtest.Modes {
		t.Run(m.String(), func(t *testing.T) {
			t.Parallel()
			s := authtest.NewServer(t, auth.Config{CheckSessionInStore: true})
			// ended signs a user in, keeps the tokens, ends the session by
			// end and returns a client holding the old tokens.
			ended := func(t *testing.T, end func(c *authtest.Client, u auth.User)) *authtest.Client {
				c, u := s.SignedIn(m)
				access, refresh := c.Tokens()
				end(c, u)
				old := s.NewClient(m)
				old.SetTokens(access, refresh)
				return old
			}
			for _, tc := range []struct {
				name    string
				client  func(t *testing.T) *authtest.Client
				route   string // the protected route's answer, if any
				refresh auth.Reason
			}{
				{"no token", func(t *testing.T) *authtest.Client { return s.NewClient(m) },
					"unauthorised/no_token", auth.ReasonNoToken},
				{"signed out", func(t *testing.T) *authtest.Client {
					return ended(t, func(c *authtest.Client, _ auth.User) { wantStatusOK(t, c.SignOut()) })
				}, "unauthorised/signed_out", auth.ReasonSignedOut},
				{"revoked by the application", func(t *testing.T) *authtest.Client {
					return ended(t, func(c *authtest.Client, _ auth.User) {
						if err := s.Auth.RevokeSession(t.Context(), handleOf(t, c)); err != nil {
							t.Fatal(err)
						}
					})
				}, "unauthorised/revoked", auth.ReasonRevoked},
				{"all sessions revoked", func(t *testing.T) *authtest.Client {
					return ended(t, func(_ *authtest.Client, u auth.User) {
						if _, err := s.Auth.RevokeAllSessions(t.Context(), u.ID); err != nil {
							t.Fatal(err)
						}
					})
				}, "unauthorised/revoked", auth.ReasonRevoked},
				{"password reset", func(t *testing.T) *authtest.Client {
					return ended(t, func(_ *authtest.Client, u auth.User) {
						n := len(s.Mailbox.Messages())
						s.NewClient(m).RequestPasswordReset(u.Email)
						_, tok := authtest.ResetLink(t, s.Mailbox.WaitFor(t, n+1, 5*time.Second)[n])
						if res := s.NewClient(m).ResetPassword(tok, "a new password 1"); res.Status != "OK" {
							t.Fatalf("reset: %s", res.Body)
						}
					})
				}, "unauthorised/password_reset", auth.ReasonPasswordReset},
				{"ended by theft", func(t *testing.T) *authtest.Client {
					c, u := s.SignedIn(m)
					_, r0 := c.Tokens()
					wantTokens(t, s, c.Refresh(), m, u.ID)
					access, r1 := c.Tokens()
					thief := s.NewClient(m)
					thief.SetTokens("", r0)
					wantRefusal(t, thief.Refresh(), "token theft detected", auth.ReasonTheftPrevious)
					c.SetTokens(access, r1)
					return c
				}, "unauthorised/token_theft", auth.ReasonTokenTheft},
				{"user deleted", func(t *testing.T) *authtest.Client {
					return ended(t, func(_ *authtest.Client, u auth.User) {
						if err := s.Auth.DeleteUser(t.Context(), u.ID); err != nil {
							t.Fatal(err)
						}
					})
				}, "unauthorised/revoked", auth.ReasonRevoked},
				{"access token expired", func(t *testing.T) *authtest.Client {
					c, _ := s.SignedIn(m)
					access, _ := c.Tokens()
					// The subtests run in sequence: moving the clock is safe.
					s.Clock.Advance(auth.DefaultAccessTokenLifetime + time.Second)
					c.SetTokens(access, "")
					return c
				}, "try refresh token/expired", ""},
				{"access token tampered", func(t *testing.T) *authtest.Client {
					c, _ := s.SignedIn(m)
					access, refresh := c.Tokens()
					bad := s.NewClient(m)
					bad.SetTokens(tampered(access), tampered(refresh))
					return bad
				}, "try refresh token/invalid", auth.ReasonInvalid},
				{"malformed", func(t *testing.T) *authtest.Client {
					bad := s.NewClient(m)
					bad.SetTokens("not.a.token", "not a token")
					return bad
				}, "", auth.ReasonMalformed},
			} {
				t.Run(tc.name, func(t *testing.T) {
					c := tc.client(t)
					access, refresh := c.Tokens()
					if tc.route != "" {
						msg, reason, _ := strings.Cut(tc.route, "/")
						wantRefusal(t, c.Get("/api/session"), msg, auth.Reason(reason))
					}
					if tc.refresh != "" {
						// A refusal of an ended session cleared the tokens:
						// present them again, as a stale tab would.
						c.SetTokens(access, refresh)
						wantRefusal(t, c.Refresh(), "unauthorised", tc.refresh)
					}
				})
			}
		})
	}
}

func wantStatusOK(t *testing.T, res *authtest.Response) {
	t.Helper()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("got %d %s, want 200", res.StatusCode, res.Body)
	}
}

// TestRefusalReasonExposedByCORS: a frontend on another origin can read
// the reason of a 401.
func TestRefusalReasonExposedByCORS(t *testing.T) {
	a, err := auth.New(auth.Config{Store: memstore.New(), AllowedOrigins: []string{"https://app.example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/auth/", a)
	mux.Handle("/api/me", a.RequireSession(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})))
	h := a.CORS(mux)
	for _, path := range []string{"/api/me", "/auth/session/refresh"} {
		method := "GET"
		if strings.HasSuffix(path, "refresh") {
			method = "POST"
		}
		req := httptest.NewRequest(method, path, nil)
		req.Header.Set("Origin", "https://app.example.com")
		req.Header.Set("rid", "session")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusUnauthorized || rec.Header().Get(auth.ReasonHeader) != string(auth.ReasonNoToken) {
			t.Fatalf("%s: %d, %s %q", path, rec.Code, auth.ReasonHeader, rec.Header().Get(auth.ReasonHeader))
		}
		exposed := strings.ToLower(rec.Header().Get("Access-Control-Expose-Headers"))
		if !strings.Contains(exposed, strings.ToLower(auth.ReasonHeader)) {
			t.Errorf("%s: Access-Control-Expose-Headers %q lacks %s", path, exposed, auth.ReasonHeader)
		}
	}
}

// refusalCounter is a Metrics that counts events and refusals.
type refusalCounter struct {
	mu      sync.Mutex
	events  map[auth.EventKind]int
	reasons map[auth.Reason]int
}

func (c *refusalCounter) CountEvent(k auth.EventKind) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.events[k]++
}

func (c *refusalCounter) ObserveHashWait(time.Duration) {}

func (c *refusalCounter) CountRefusal(r auth.Reason) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reasons[r]++
}

// TestRefusalMetrics: a Metrics counts each 401 by its reason, a theft by
// its kind.
func TestRefusalMetrics(t *testing.T) {
	t.Parallel()
	m := &refusalCounter{events: map[auth.EventKind]int{}, reasons: map[auth.Reason]int{}}
	s := authtest.NewServer(t, auth.Config{Metrics: m})
	c, u := s.SignedIn(authtest.Header)
	_, r0 := c.Tokens()
	wantTokens(t, s, c.Refresh(), authtest.Header, u.ID)
	s.NewClient(authtest.Header).Get("/api/session")
	thief := s.NewClient(authtest.Header)
	thief.SetTokens("", r0)
	thief.Refresh()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.events[auth.EventSessionRefused] != 2 || m.events[auth.EventTokenTheft] != 1 {
		t.Errorf("events %v, want 2 %s and 1 %s", m.events, auth.EventSessionRefused, auth.EventTokenTheft)
	}
	want := map[auth.Reason]int{auth.ReasonNoToken: 1, auth.ReasonTheftPrevious: 1}
	if len(m.reasons) != len(want) || m.reasons[auth.ReasonNoToken] != 1 || m.reasons[auth.ReasonTheftPrevious] != 1 {
		t.Errorf("refusals by reason %v, want %v", m.reasons, want)
	}
}

// tampered is tok with a character of its signature changed: one well
// inside it, whose six bits all count (a token's last character may
// carry bits a decoder ignores, so changing it may change nothing).
func tampered(tok string) string {
	i := len(tok) - 5
	c := byte('A')
	if tok[i] == 'A' {
		c = 'B'
	}
	return tok[:i] + string(c) + tok[i+1:]
}
