package auth_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/store"
	"github.com/latchkit/auth/store/memstore"
)

func TestRefreshRotates(t *testing.T) {
	t.Parallel()
	for _, m := range authtest.Modes {
		t.Run(m.String(), func(t *testing.T) {
			t.Parallel()
			s := authtest.NewServer(t, auth.Config{})
			c, u := s.SignedIn(m)
			a0, r0 := c.Tokens()
			f0 := c.FrontToken
			h0 := handleOf(t, c)
			res := c.Refresh()
			a1, r1 := wantTokens(t, s, res, m, u.ID)
			if m != authtest.Body {
				wantBody(t, res, `{"status":"OK"}`)
			}
			if a1 == a0 || r1 == r0 || c.FrontToken == f0 {
				t.Errorf("refresh handed back an old token: access %v, refresh %v, front %v", a1 == a0, r1 == r0, c.FrontToken == f0)
			}
			if h := handleOf(t, c); h != h0 {
				t.Errorf("refresh changed the session handle %s to %s", h0, h)
			}
			if a, r := c.Tokens(); a != a1 || r != r1 {
				t.Errorf("client holds %q %q after refresh", a, r)
			}
			wantSession(t, c, u.ID)

			// R0 again: theft. The session ends and every transport is cleared.
			c.SetTokens("", r0)
			res = c.Refresh()
			wantRefusal(t, res, "token theft detected", auth.ReasonTheftPrevious)
			wantCleared(t, res, true, true)
			// R1 belonged to the revoked session.
			c.SetTokens("", r1)
			res = c.Refresh()
			wantRefusal(t, res, "unauthorised", auth.ReasonTokenTheft)
			wantCleared(t, res, true, true)
			if ss, err := s.Auth.Sessions(t.Context(), u.ID); err != nil || len(ss) != 0 {
				t.Errorf("sessions after theft: %v %v", ss, err)
			}
		})
	}
}

func TestRefreshWithoutToken(t *testing.T) {
	t.Parallel()
	s := authtest.NewServer(t, auth.Config{})
	for _, m := range authtest.Modes {
		t.Run(m.String(), func(t *testing.T) {
			t.Parallel()
			res := s.NewClient(m).Refresh()
			wantRefusal(t, res, "unauthorised", auth.ReasonNoToken)
			wantCleared(t, res, true, true)
		})
	}
	t.Run("empty cleared cookie", func(t *testing.T) {
		t.Parallel()
		res := send(t, s, "POST", refreshPath, "", hdr("rid", "session", "Cookie", "sRefreshToken="))
		wantMessage(t, res, http.StatusUnauthorized, "unauthorised")
	})
}

func TestRefreshForgedTokenHarmsNoSession(t *testing.T) {
	t.Parallel()
	for _, m := range authtest.Modes {
		t.Run(m.String(), func(t *testing.T) {
			t.Parallel()
			s := authtest.NewServer(t, auth.Config{})
			victim, u := s.SignedIn(m)
			_, r0 := victim.Tokens()
			for range 3 {
				wantTokens(t, s, victim.Refresh(), m, u.ID)
			}
			access, real := victim.Tokens()
			other, _ := s.SignedIn(m)
			_, otherReal := other.Tokens()
			for _, tc := range []struct {
				forged string
				reason auth.Reason
			}{
				{strings.Repeat("A", 43), auth.ReasonUnknownToken},                                // the old format, unknown
				{"garbage", auth.ReasonMalformed},                                                 // not one of ours
				{access, auth.ReasonMalformed},                                                    // an access token is no refresh token
				{real + "x", auth.ReasonMalformed},                                                // the real token with a suffix
				{base64.RawURLEncoding.EncodeToString(make([]byte, 32)), auth.ReasonUnknownToken}, // all zero bits
				{editRefresh(t, real, func(b []byte) { b[len(b)-1] ^= 1 }), auth.ReasonInvalid},   // a valid shape, a wrong MAC
				{editRefresh(t, real, func(b []byte) { b[1] ^= 1 }), auth.ReasonInvalid},          // a key that does not exist
				// An old-looking token of the victim's session, made by
				// lowering the generation: without the key, the MAC gives it
				// away, and it cannot end the session as theft would.
				{editRefresh(t, real, func(b []byte) { b[1+12+16+7] = 0 }), auth.ReasonInvalid},
				// The victim's handle in another session's token.
				{editRefresh(t, otherReal, func(b []byte) { copy(b[1+12:1+12+16], decodeRefresh(t, r0)[1+12:1+12+16]) }), auth.ReasonInvalid},
			} {
				attacker := s.NewClient(m)
				attacker.SetTokens("", tc.forged)
				res := attacker.Refresh()
				wantRefusal(t, res, "unauthorised", tc.reason)
				wantCleared(t, res, true, true)
			}
			res := victim.Refresh()
			wantTokens(t, s, res, m, u.ID)
			wantSession(t, victim, u.ID)
		})
	}
}

// decodeRefresh returns the bytes of a refresh token of the current
// format: version, key id (12), session handle (16), generation (8),
// expiry (8), secret (16), MAC (16).
func decodeRefresh(t testing.TB, tok string) []byte {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil || len(b) != 77 {
		t.Fatalf("not a refresh token: %q (%v)", tok, err)
	}
	return b
}

// editRefresh returns tok with its bytes changed by edit.
func editRefresh(t testing.TB, tok string, edit func([]byte)) string {
	b := decodeRefresh(t, tok)
	edit(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

func TestRefreshTimeout(t *testing.T) {
	t.Parallel()
	for _, m := range authtest.Modes {
		t.Run(m.String(), func(t *testing.T) {
			t.Parallel()
			s := authtest.NewServer(t, auth.Config{})
			c, u := s.SignedIn(m)
			// Each refresh moves the end of the session to now + 100 days.
			s.Clock.Advance(99 * day)
			wantTokens(t, s, c.Refresh(), m, u.ID)
			s.Clock.Advance(99 * day)
			wantTokens(t, s, c.Refresh(), m, u.ID)
			wantSession(t, c, u.ID)
			// Then 100 days without one end it.
			s.Clock.Advance(auth.DefaultRefreshTokenLifetime + time.Second)
			_, last := c.Tokens()
			res := c.Refresh()
			wantRefusal(t, res, "unauthorised", auth.ReasonSessionExpired)
			wantCleared(t, res, true, true)
			// Still expired once the store has removed the session.
			if err := s.AuthConfig.Store.DeleteExpired(t.Context(), s.Clock.Now()); err != nil {
				t.Fatal(err)
			}
			c.SetTokens("", last)
			wantRefusal(t, c.Refresh(), "unauthorised", auth.ReasonSessionExpired)
		})
	}
}

// The store keeps nothing of superseded tokens, yet one that comes back
// however long after it was superseded is theft, while its session lives.
func TestRefreshSupersededLongAgo(t *testing.T) {
	t.Parallel()
	for _, m := range authtest.Modes {
		t.Run(m.String(), func(t *testing.T) {
			t.Parallel()
			s := authtest.NewServer(t, auth.Config{})
			c, u := s.SignedIn(m)
			_, r0 := c.Tokens()
			s.Clock.Advance(99 * day)
			_, r1 := wantTokens(t, s, c.Refresh(), m, u.ID)
			s.Clock.Advance(day + time.Second) // past the expiry r0 was issued with
			c.SetTokens("", r0)
			res := c.Refresh()
			wantRefusal(t, res, "token theft detected", auth.ReasonTheftPrevious)
			wantCleared(t, res, true, true)
			c.SetTokens("", r1)
			wantRefusal(t, c.Refresh(), "unauthorised", auth.ReasonTokenTheft)
		})
	}
}

// A token superseded 50 exchanges ago is theft, as the one before last is.
func TestRefreshSupersededFiftyAgo(t *testing.T) {
	t.Parallel()
	for _, m := range authtest.Modes {
		t.Run(m.String(), func(t *testing.T) {
			t.Parallel()
			events := newEventLog()
			s := authtest.NewServer(t, auth.Config{OnEvent: events.record})
			c, u := s.SignedIn(m)
			_, r0 := c.Tokens()
			for range 50 {
				s.Clock.Advance(time.Hour)
				wantTokens(t, s, c.Refresh(), m, u.ID)
			}
			_, current := c.Tokens()
			thief := s.NewClient(m)
			thief.SetTokens("", r0)
			wantRefusal(t, thief.Refresh(), "token theft detected", auth.ReasonTheftStale)
			wantRefusal(t, c.Refresh(), "unauthorised", auth.ReasonTokenTheft)
			c.SetTokens("", current)
			wantRefusal(t, c.Refresh(), "unauthorised", auth.ReasonTokenTheft)
			if got := events.of(auth.EventTokenTheft); len(got) != 1 || got[0].Reason != auth.ReasonTheftStale || got[0].UserID != u.ID {
				t.Errorf("theft events %+v, want one for %s with reason %s", got, u.ID, auth.ReasonTheftStale)
			}
			if ss, _ := s.Auth.Sessions(t.Context(), u.ID); len(ss) != 0 {
				t.Errorf("%d sessions survive the theft", len(ss))
			}
		})
	}
}

func TestRefreshBearerWinsOverCookie(t *testing.T) {
	t.Parallel()
	s := authtest.NewServer(t, auth.Config{})
	cookieClient, cu := s.SignedIn(authtest.Cookie)
	headerClient, hu := s.SignedIn(authtest.Header)
	_, cookieR := cookieClient.Tokens()
	_, headerR := headerClient.Tokens()
	res := send(t, s, "POST", refreshPath, "", hdr("rid", "session",
		"Cookie", "sRefreshToken="+cookieR, "Authorization", "Bearer "+headerR))
	// The bearer token was used, and the answer comes in its transport.
	wantTokens(t, s, res, authtest.Header, hu.ID)
	// The cookie's token was not touched.
	wantTokens(t, s, cookieClient.Refresh(), authtest.Cookie, cu.ID)
	// The bearer's was: using it again is theft.
	wantRefusal(t, headerClient.Refresh(), "token theft detected", auth.ReasonTheftPrevious)
}

func TestRefreshReuseWindow(t *testing.T) {
	t.Parallel()
	const window = 10 * time.Second
	for _, m := range authtest.Modes {
		t.Run(m.String(), func(t *testing.T) {
			t.Parallel()
			s := authtest.NewServer(t, auth.Config{RefreshReuseWindow: window})
			setup := func(t *testing.T) (*authtest.Client, auth.User, string, string) {
				c, u := s.SignedIn(m)
				_, r0 := c.Tokens()
				_, r1 := wantTokens(t, s, c.Refresh(), m, u.ID)
				return c, u, r0, r1
			}
			t.Run("retry inside the window gets the same successor", func(t *testing.T) {
				c, u, r0, r1 := setup(t)
				end := s.Clock.Now().Add(auth.DefaultRefreshTokenLifetime)
				for _, d := range []time.Duration{0, 4 * time.Second, 4 * time.Second} {
					s.Clock.Advance(d)
					c.SetTokens("", r0)
					if _, again := wantTokensUntil(t, s, c.Refresh(), m, u.ID, http.SameSiteLaxMode, end); again != r1 {
						t.Fatalf("a retry %v into the window got another token than the exchange's successor", d)
					}
				}
				wantSession(t, c, u.ID)
				// r1 is the one live token: it rotates, and r0 is now two
				// exchanges behind.
				c.SetTokens("", r1)
				wantTokens(t, s, c.Refresh(), m, u.ID)
				wantSession(t, c, u.ID)
				c.SetTokens("", r0)
				wantRefusal(t, c.Refresh(), "token theft detected", auth.ReasonTheftStale)
			})
			t.Run("retries do not extend the window", func(t *testing.T) {
				c, u, r0, r1 := setup(t)
				end := s.Clock.Now().Add(auth.DefaultRefreshTokenLifetime)
				s.Clock.Advance(window - time.Second)
				c.SetTokens("", r0)
				if _, again := wantTokensUntil(t, s, c.Refresh(), m, u.ID, http.SameSiteLaxMode, end); again != r1 {
					t.Fatal("a retry inside the window got another token than the exchange's successor")
				}
				s.Clock.Advance(time.Second) // the window, from the exchange
				c.SetTokens("", r0)
				wantRefusal(t, c.Refresh(), "token theft detected", auth.ReasonTheftAfterWindow)
				c.SetTokens("", r1)
				wantRefusal(t, c.Refresh(), "unauthorised", auth.ReasonTokenTheft)
			})
			t.Run("outside the window is theft", func(t *testing.T) {
				c, _, r0, r1 := setup(t)
				// The subtests run in sequence, so moving the shared clock
				// is safe.
				s.Clock.Advance(window + time.Second)
				c.SetTokens("", r0)
				wantRefusal(t, c.Refresh(), "token theft detected", auth.ReasonTheftAfterWindow)
				c.SetTokens("", r1)
				wantRefusal(t, c.Refresh(), "unauthorised", auth.ReasonTokenTheft)
			})
			t.Run("two generations old is theft", func(t *testing.T) {
				c, u, r0, _ := setup(t)
				_, r2 := wantTokens(t, s, c.Refresh(), m, u.ID)
				c.SetTokens("", r0)
				wantRefusal(t, c.Refresh(), "token theft detected", auth.ReasonTheftStale)
				c.SetTokens("", r2)
				wantRefusal(t, c.Refresh(), "unauthorised", auth.ReasonTokenTheft)
			})
		})
	}
}

// refreshRequest is a plain refresh with refresh token tok in mode m.
func refreshRequest(m authtest.Mode, tok string) http.Header {
	h := hdr(append([]string{"rid", "session"}, modeHeaders(m)...)...)
	if m == authtest.Cookie {
		h.Set("Cookie", "sRefreshToken="+tok)
	} else {
		h.Set("Authorization", "Bearer "+tok)
	}
	return h
}

// issuedRefresh returns the refresh token a 200 refresh answer in mode m
// hands out.
func issuedRefresh(res *authtest.Response, m authtest.Mode) string {
	switch m {
	case authtest.Cookie:
		if c := cookiesOf(res)["sRefreshToken"]; c != nil {
			return c.Value
		}
		return ""
	case authtest.Header:
		return res.Header.Get("St-Refresh-Token")
	}
	s, _ := res.JSON["refreshToken"].(string)
	return s
}

// rotationLog records the order in which refresh tokens became current.
type rotationLog struct {
	*memstore.Store
	mu        sync.Mutex
	committed []store.TokenHash
}

func (l *rotationLog) RotateRefreshToken(ctx context.Context, r store.Rotation) (store.Rotated, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	res, err := l.Store.RotateRefreshToken(ctx, r)
	if err == nil && !res.Repeat {
		l.committed = append(l.committed, r.Next)
	}
	return res, err
}

func TestConcurrentRefresh(t *testing.T) {
	t.Parallel()
	const n = 50
	for _, window := range []time.Duration{0, 30 * time.Second} {
		for _, m := range authtest.Modes {
			t.Run(fmt.Sprintf("%v/window=%v", m, window), func(t *testing.T) {
				t.Parallel()
				log := &rotationLog{Store: memstore.New()}
				s := authtest.NewServer(t, auth.Config{Store: log, RefreshReuseWindow: window})
				c, u := s.SignedIn(m)
				_, r0 := c.Tokens()

				results := make([]*authtest.Response, n)
				errs := make([]error, n)
				var wg sync.WaitGroup
				start := make(chan struct{})
				for i := range n {
					wg.Add(1)
					go func() {
						defer wg.Done()
						<-start
						results[i], errs[i] = sendTo(s.Client(), s.URL, "POST", refreshPath, "", refreshRequest(m, r0))
					}()
				}
				close(start)
				wg.Wait()

				var issued []string
				thefts := 0
				for i, res := range results {
					if errs[i] != nil {
						t.Fatalf("request %d: %v", i, errs[i])
					}
					switch {
					case res.StatusCode == http.StatusOK:
						tok := issuedRefresh(res, m)
						if tok == "" || res.Header.Get("Front-Token") == "" {
							t.Errorf("200 without a refresh token or front-token: %v %s", res.Header, res.Body)
						}
						issued = append(issued, tok)
					case res.StatusCode == http.StatusUnauthorized && res.Message == "token theft detected":
						thefts++
					case res.StatusCode == http.StatusUnauthorized && res.Message == "unauthorised":
					default:
						t.Errorf("request %d: %d %s", i, res.StatusCode, res.Body)
					}
				}
				if len(issued) == 0 {
					t.Fatal("no refresh succeeded")
				}
				if window == 0 {
					// Strict rotation: one winner; the losers' reuse ends the session.
					if len(issued) != 1 || thefts == 0 {
						t.Fatalf("%d successes and %d thefts, want 1 and some", len(issued), thefts)
					}
					res := send(t, s, "POST", refreshPath, "", refreshRequest(m, issued[0]))
					wantMessage(t, res, http.StatusUnauthorized, "unauthorised")
					if ss, _ := s.Auth.Sessions(t.Context(), u.ID); len(ss) != 0 {
						t.Errorf("%d sessions survive the theft", len(ss))
					}
					return
				}
				// Inside the window every refresh succeeds with the one
				// successor the single exchange made.
				if len(issued) != n {
					t.Errorf("%d of %d refreshes succeeded inside the reuse window", len(issued), n)
				}
				log.mu.Lock()
				committed := slices.Clone(log.committed)
				log.mu.Unlock()
				if len(committed) != 1 {
					t.Fatalf("%d exchanges committed, want 1", len(committed))
				}
				for i, tok := range issued {
					if sha256.Sum256([]byte(tok)) != committed[0] {
						t.Fatalf("refresh %d got a token other than the one successor", i)
					}
				}
				res := send(t, s, "POST", refreshPath, "", refreshRequest(m, issued[0]))
				if res.StatusCode != http.StatusOK {
					t.Fatalf("the successor: %d %s", res.StatusCode, res.Body)
				}
				wantRefusal(t, send(t, s, "POST", refreshPath, "", refreshRequest(m, r0)), "token theft detected", auth.ReasonTheftStale)
			})
		}
	}
}

// TestRefreshBoundedPerSession: one session refreshes 60 times at once,
// then once every 2 seconds; past that, 429 with Retry-After, and the
// refresh token stays valid. Other sessions of the user are not touched.
func TestRefreshBoundedPerSession(t *testing.T) {
	t.Parallel()
	for _, m := range authtest.Modes {
		t.Run(m.String(), func(t *testing.T) {
			t.Parallel()
			events := newEventLog()
			s := authtest.NewServer(t, auth.Config{OnEvent: events.record})
			c, u := s.SignedIn(m)
			const n = 200
			ok, limited := 0, 0
			for i := range n {
				res := c.Refresh()
				switch res.StatusCode {
				case http.StatusOK:
					ok++
				case http.StatusTooManyRequests:
					limited++
					if got := res.Header.Get("Retry-After"); got != "2" {
						t.Fatalf("refresh %d: Retry-After %q, want 2", i, got)
					}
					if res.IssuedTokens() || len(res.Header.Values("Set-Cookie")) > 0 {
						t.Fatalf("refresh %d: a refused refresh touched the tokens: %v", i, res.Header)
					}
				default:
					t.Fatalf("refresh %d: %d %s", i, res.StatusCode, res.Body)
				}
			}
			if ok != 60 || limited != n-60 {
				t.Errorf("%d refreshes of one session at one instant: %d OK, %d × 429; want 60 and %d", n, ok, limited, n-60)
			}
			if got := len(events.of(auth.EventRefreshThrottled)); got != limited {
				t.Errorf("%d EventRefreshThrottled, want %d", got, limited)
			}
			other := s.NewClient(m)
			if res := other.SignIn(u.Email, authtest.Password); res.Status != "OK" {
				t.Fatalf("sign-in: %s", res.Body)
			}
			wantTokens(t, s, other.Refresh(), m, u.ID) // its own allowance

			s.Clock.Advance(2 * time.Second)
			wantTokens(t, s, c.Refresh(), m, u.ID) // the token kept through the 429s
			if res := c.Refresh(); res.StatusCode != http.StatusTooManyRequests {
				t.Errorf("a second refresh 2 s later: %d, want 429: an interval gives back one refresh", res.StatusCode)
			}
		})
	}
}
