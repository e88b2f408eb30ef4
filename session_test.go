package auth_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
)

func TestRequireSessionNoToken(t *testing.T) {
	t.Parallel()
	s := authtest.NewServer(t, auth.Config{})
	for _, m := range authtest.Modes {
		t.Run(m.String(), func(t *testing.T) {
			t.Parallel()
			res := s.NewClient(m).Get("/api/session")
			wantMessage(t, res, http.StatusUnauthorized, "unauthorised")
			wantNoTokens(t, res)
		})
	}
}

func TestRequireSessionExpired(t *testing.T) {
	t.Parallel()
	for _, m := range authtest.Modes {
		t.Run(m.String(), func(t *testing.T) {
			t.Parallel()
			s := authtest.NewServer(t, auth.Config{})
			c, u := s.SignedIn(m)
			// Valid up to the instant before its expiry (SERVICE-SPEC
			// section 3, rule 4), and refused from it on: no leeway is
			// added to exp.
			s.Clock.Advance(time.Hour - time.Millisecond)
			wantSession(t, c, u.ID)
			s.Clock.Advance(time.Millisecond)
			res := c.Get("/api/session")
			wantMessage(t, res, http.StatusUnauthorized, "try refresh token")
			wantNoTokens(t, res)
			wantTokens(t, s, c.Refresh(), m, u.ID)
			wantSession(t, c, u.ID)
		})
	}
}

// A token first seen after its expiry is refused by the full
// verification, as a cached one is by the cache's check: the same rule
// on both paths.
func TestRequireSessionExpiredFirstSight(t *testing.T) {
	t.Parallel()
	for _, ttl := range []time.Duration{2 * time.Second, time.Hour} {
		t.Run(ttl.String(), func(t *testing.T) {
			t.Parallel()
			s := authtest.NewServer(t, auth.Config{AccessTokenLifetime: ttl})
			c, _ := s.SignedIn(authtest.Header)
			access, _ := c.Tokens()
			s.Clock.Advance(ttl)
			fresh := s.NewClient(authtest.Header) // no request of this token has been verified yet
			fresh.AccessToken = access
			res := fresh.Get("/api/session")
			wantMessage(t, res, http.StatusUnauthorized, "try refresh token")
		})
	}
}

// Clock skew between instances may put a token's iat a little in the
// future of the instance that checks it: up to five seconds are accepted,
// more are refused.
func TestRequireSessionIssuedAtSkew(t *testing.T) {
	t.Parallel()
	s := authtest.NewServer(t, auth.Config{})
	c, u := s.SignedIn(authtest.Header)
	s.Clock.Advance(-4 * time.Second)
	wantSession(t, c, u.ID)
	c2, _ := s.SignedIn(authtest.Header)
	s.Clock.Advance(-6 * time.Second)
	wantMessage(t, c2.Get("/api/session"), http.StatusUnauthorized, "try refresh token")
}

func TestRequireSessionInvalidToken(t *testing.T) {
	t.Parallel()
	other := authtest.NewServer(t, auth.Config{})
	oc, _ := other.SignedIn(authtest.Header)
	foreign, _ := oc.Tokens()
	for _, m := range authtest.Modes {
		t.Run(m.String(), func(t *testing.T) {
			t.Parallel()
			s := authtest.NewServer(t, auth.Config{})
			for _, tc := range []struct {
				name string
				bad  func(access, refresh string) string
			}{
				{"garbage", func(string, string) string { return "garbage" }},
				{"tampered signature", func(a, _ string) string {
					b := []byte(a)
					i := strings.LastIndexByte(a, '.') + 5
					b[i] = map[bool]byte{true: 'B', false: 'A'}[b[i] == 'A']
					return string(b)
				}},
				{"tampered payload", func(a, _ string) string {
					p := strings.Split(a, ".")
					raw, _ := base64.RawURLEncoding.DecodeString(p[1])
					var claims map[string]any
					json.Unmarshal(raw, &claims)
					claims["sub"] = "someone-else"
					raw, _ = json.Marshal(claims)
					return p[0] + "." + base64.RawURLEncoding.EncodeToString(raw) + "." + p[2]
				}},
				{"signed by another instance", func(string, string) string { return foreign }},
				{"refresh token", func(_, r string) string { return r }},
				{"signature stripped", func(a, _ string) string { return a[:strings.LastIndexByte(a, '.')+1] }},
			} {
				t.Run(tc.name, func(t *testing.T) {
					c, u := s.SignedIn(m)
					access, refresh := c.Tokens()
					c.SetTokens(tc.bad(access, refresh), "")
					res := c.Get("/api/session")
					wantMessage(t, res, http.StatusUnauthorized, "try refresh token")
					wantNoTokens(t, res)
					// The session itself is fine: a refresh repairs it.
					wantTokens(t, s, c.Refresh(), m, u.ID)
					wantSession(t, c, u.ID)
				})
			}
		})
	}
}

// A CORS preflight is answered 204 by the middleware, whatever it
// carries, and never reaches the handler.
func TestRequireSessionPreflight(t *testing.T) {
	t.Parallel()
	s := authtest.NewServer(t, auth.Config{Cookie: auth.CookieConfig{SameSite: http.SameSiteNoneMode}})
	addRoutes(s)
	for _, h := range []http.Header{nil, hdr("Authorization", "Bearer garbage"), hdr("Cookie", "sAccessToken=garbage")} {
		h = h.Clone()
		if h == nil {
			h = http.Header{}
		}
		h.Set("Access-Control-Request-Method", "POST")
		res := send(t, s, "OPTIONS", "/api/any", "", h)
		if res.StatusCode != http.StatusNoContent || len(res.Body) != 0 {
			t.Errorf("preflight with %v: %d %s, want 204 and no body", h, res.StatusCode, res.Body)
		}
	}
}

// Every method, including ones the application might serve by accident
// such as TRACE, needs a session; OPTIONS too (TestRequireSessionOptions).
func TestRequireSessionOtherMethods(t *testing.T) {
	t.Parallel()
	s := authtest.NewServer(t, auth.Config{})
	addRoutes(s)
	for _, method := range []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "TRACE", "PROPFIND"} {
		t.Run(method, func(t *testing.T) {
			t.Parallel()
			res := send(t, s, method, "/api/any", "", nil)
			if res.StatusCode != http.StatusUnauthorized {
				t.Errorf("%s without a session: %d %s, want 401", method, res.StatusCode, res.Body)
			}
			if method != "HEAD" {
				wantMessage(t, res, http.StatusUnauthorized, "unauthorised")
			}
		})
	}
}

func TestRequireSessionCheckInStore(t *testing.T) {
	t.Parallel()
	for _, m := range authtest.Modes {
		t.Run(m.String(), func(t *testing.T) {
			t.Parallel()
			s := authtest.NewServer(t, auth.Config{CheckSessionInStore: true})
			ctx := t.Context()
			for _, tc := range []struct {
				name string
				end  func(c *authtest.Client, u auth.User)
			}{
				{"signed out", func(c *authtest.Client, _ auth.User) {
					access, _ := c.Tokens()
					wantBody(t, c.SignOut(), `{"status":"OK"}`)
					c.SetTokens(access, "")
				}},
				{"RevokeSession", func(c *authtest.Client, _ auth.User) {
					if err := s.Auth.RevokeSession(ctx, handleOf(t, c)); err != nil {
						t.Fatal(err)
					}
				}},
				{"RevokeAllSessions", func(c *authtest.Client, u auth.User) {
					if n, err := s.Auth.RevokeAllSessions(ctx, u.ID); err != nil || n != 1 {
						t.Fatalf("RevokeAllSessions: %d %v", n, err)
					}
				}},
			} {
				t.Run(tc.name, func(t *testing.T) {
					c, u := s.SignedIn(m)
					other, _ := s.SignedIn(m) // another user, untouched
					wantSession(t, c, u.ID)
					tc.end(c, u)
					res := c.Get("/api/session")
					wantMessage(t, res, http.StatusUnauthorized, "unauthorised")
					wantCleared(t, res, true, true)
					res = c.SignOut()
					if res.StatusCode != http.StatusUnauthorized {
						t.Errorf("sign-out with a revoked session: %d %s", res.StatusCode, res.Body)
					}
					if res := other.Get("/api/session"); res.StatusCode != http.StatusOK {
						t.Errorf("another user's session: %d %s", res.StatusCode, res.Body)
					}
				})
			}
		})
	}
}

// Without CheckSessionInStore a revoked session's access token works until
// it expires; the refresh token stops at once.
func TestRequireSessionRevokedWithoutStoreCheck(t *testing.T) {
	t.Parallel()
	for _, m := range authtest.Modes {
		t.Run(m.String(), func(t *testing.T) {
			t.Parallel()
			s := authtest.NewServer(t, auth.Config{})
			c, u := s.SignedIn(m)
			if err := s.Auth.RevokeSession(t.Context(), handleOf(t, c)); err != nil {
				t.Fatal(err)
			}
			wantSession(t, c, u.ID)
			s.Clock.Advance(30 * time.Minute)
			wantSession(t, c, u.ID)
			s.Clock.Advance(30*time.Minute + 6*time.Second)
			wantMessage(t, c.Get("/api/session"), http.StatusUnauthorized, "try refresh token")
			res := c.Refresh()
			wantMessage(t, res, http.StatusUnauthorized, "unauthorised")
			wantCleared(t, res, true, true)
		})
	}
}

func TestOptionalSession(t *testing.T) {
	t.Parallel()
	for _, m := range authtest.Modes {
		t.Run(m.String(), func(t *testing.T) {
			t.Parallel()
			s := authtest.NewServer(t, auth.Config{})
			addRoutes(s)
			wantBody(t, s.NewClient(m).Get("/api/optional"), `{"userId":"","method":"GET"}`)
			c, u := s.SignedIn(m)
			wantBody(t, c.Get("/api/optional"), fmt.Sprintf(`{"userId":%q,"method":"GET"}`, u.ID))
			access, _ := c.Tokens()
			c.SetTokens(access[:len(access)-3]+"xyz", "")
			wantMessage(t, c.Get("/api/optional"), http.StatusUnauthorized, "try refresh token")
			c.SetTokens(access, "")
			s.Clock.Advance(accessExpired)
			wantMessage(t, c.Get("/api/optional"), http.StatusUnauthorized, "try refresh token")
		})
	}
}

// userOf is the user of the session a client holds.
func userOf(t testing.TB, c *authtest.Client) string {
	t.Helper()
	return decodeFrontToken(t, c.FrontToken).UID
}

func TestSignOut(t *testing.T) {
	t.Parallel()
	for _, m := range authtest.Modes {
		t.Run(m.String(), func(t *testing.T) {
			t.Parallel()
			s := authtest.NewServer(t, auth.Config{})
			c, u := s.SignedIn(m)
			other, _ := s.SignedIn(m)
			second := s.NewClient(m) // a second session of the same user
			wantTokens(t, s, second.SignIn(u.Email, authtest.Password), m, u.ID)
			_, refresh := c.Tokens()
			res := c.SignOut()
			wantBody(t, res, `{"status":"OK"}`)
			wantCleared(t, res, m == authtest.Cookie, m != authtest.Cookie)
			if got := res.Header.Get("Cache-Control"); got != "no-store" {
				t.Errorf("Cache-Control %q", got)
			}
			c.SetTokens("", refresh)
			res = c.Refresh()
			wantMessage(t, res, http.StatusUnauthorized, "unauthorised")
			wantCleared(t, res, true, true)
			// Only that session ended.
			wantSession(t, second, u.ID)
			wantTokens(t, s, second.Refresh(), m, u.ID)
			wantTokens(t, s, other.Refresh(), m, userOf(t, other))
		})
	}
}

func TestSignOutWithoutSession(t *testing.T) {
	t.Parallel()
	s := authtest.NewServer(t, auth.Config{})
	for _, m := range authtest.Modes {
		t.Run(m.String(), func(t *testing.T) {
			t.Parallel()
			res := s.NewClient(m).SignOut()
			wantMessage(t, res, http.StatusUnauthorized, "unauthorised")
			wantNoTokens(t, res)
		})
	}
	t.Run("expired access token", func(t *testing.T) {
		t.Parallel()
		s := authtest.NewServer(t, auth.Config{})
		c, u := s.SignedIn(authtest.Header)
		s.Clock.Advance(accessExpired)
		wantMessage(t, c.SignOut(), http.StatusUnauthorized, "try refresh token")
		wantTokens(t, s, c.Refresh(), authtest.Header, u.ID)
		wantBody(t, c.SignOut(), `{"status":"OK"}`)
	})
}

// A session guards every method of an application route: an OPTIONS
// request needs one like a GET, and a CORS preflight is answered by the
// middleware, never by the handler (security review F3).
func TestRequireSessionOptions(t *testing.T) {
	t.Parallel()
	s := authtest.NewServer(t, auth.Config{})
	var ran atomic.Int32
	s.Mux.Handle("/api/secret", s.Auth.RequireSession(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ran.Add(1)
		fmt.Fprint(w, "secret")
	})))
	res := send(t, s, "OPTIONS", "/api/secret", "", nil)
	wantMessage(t, res, http.StatusUnauthorized, "unauthorised")
	res = send(t, s, "OPTIONS", "/api/secret", "", http.Header{
		"Origin": {"https://app.example.com"}, "Access-Control-Request-Method": {"DELETE"}})
	if res.StatusCode != http.StatusNoContent || len(res.Body) != 0 {
		t.Errorf("preflight: %d %q, want 204 and no body", res.StatusCode, res.Body)
	}
	if n := ran.Load(); n != 0 {
		t.Errorf("the protected handler ran %d times without a session", n)
	}
	c, _ := s.SignedIn(authtest.Header)
	if res := c.Do("OPTIONS", "/api/secret", nil); res.StatusCode != http.StatusOK || string(res.Body) != "secret" {
		t.Errorf("OPTIONS with a session: %d %s", res.StatusCode, res.Body)
	}
}

// Unsafe requests that carry their session in cookies are refused when a
// browser sends them from another origin, the same site's included, as
// the auth endpoints refuse them: SameSite=Lax lets a sibling subdomain's
// form post with the cookies (security review F16). Safe methods, header
// and body mode, allowed origins and clients that are not browsers pass.
func TestRequireSessionCrossOriginCookieWrites(t *testing.T) {
	t.Parallel()
	s := authtest.NewServer(t, auth.Config{AllowedOrigins: []string{"https://app.example.com"}})
	s.Mux.Handle("/api/data", s.Auth.RequireSession(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, r.Method)
	})))
	cookieClient, _ := s.SignedIn(authtest.Cookie)
	headerClient, _ := s.SignedIn(authtest.Header)
	sameSite := http.Header{"Sec-Fetch-Site": {"same-site"}, "Origin": {"https://evil.example.com"}}
	crossSite := http.Header{"Sec-Fetch-Site": {"cross-site"}, "Origin": {"https://evil.test"}}
	allowed := http.Header{"Sec-Fetch-Site": {"cross-site"}, "Origin": {"https://app.example.com"}}
	for _, tc := range []struct {
		name   string
		c      *authtest.Client
		method string
		hdr    http.Header
		want   int
	}{
		{"cookie POST same-site", cookieClient, "POST", sameSite, http.StatusForbidden},
		{"cookie DELETE cross-site", cookieClient, "DELETE", crossSite, http.StatusForbidden},
		{"cookie PUT same-site", cookieClient, "PUT", sameSite, http.StatusForbidden},
		{"cookie GET same-site", cookieClient, "GET", sameSite, http.StatusOK},
		{"cookie POST from an allowed origin", cookieClient, "POST", allowed, http.StatusOK},
		{"cookie POST, not a browser", cookieClient, "POST", nil, http.StatusOK},
		{"cookie POST same-origin", cookieClient, "POST", http.Header{"Sec-Fetch-Site": {"same-origin"}}, http.StatusOK},
		{"header POST cross-site", headerClient, "POST", crossSite, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.c.Header = tc.hdr
			defer func() { tc.c.Header = nil }()
			res := tc.c.Do(tc.method, "/api/data", nil)
			if res.StatusCode != tc.want {
				t.Errorf("%s: %d %s, want %d", tc.name, res.StatusCode, res.Body, tc.want)
			}
		})
	}
}
