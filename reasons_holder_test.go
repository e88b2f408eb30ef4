package auth_test

import (
	"testing"
	"time"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
)

// What a refused token tells whoever holds it. The holder of a copied
// token cannot be told from its rightful holder, so a reason is meant for
// both: it says why the token's own session ended, and nothing about the
// account or its other sessions.

// A session whose user was deleted answers as a revoked one, at the
// refresh endpoint and at a protected route, so that a token never tells
// whether its account still exists.
func TestReasonHidesDeletedAccount(t *testing.T) {
	t.Parallel()
	for _, m := range authtest.Modes {
		t.Run(m.String(), func(t *testing.T) {
			t.Parallel()
			s := authtest.NewServer(t, auth.Config{CheckSessionInStore: true})
			for _, tc := range []struct {
				name string
				end  func(t *testing.T, c *authtest.Client, u auth.User)
			}{
				{"session revoked", func(t *testing.T, c *authtest.Client, _ auth.User) {
					if err := s.Auth.RevokeSession(t.Context(), handleOf(t, c)); err != nil {
						t.Fatal(err)
					}
				}},
				{"every session of the user revoked", func(t *testing.T, _ *authtest.Client, u auth.User) {
					if _, err := s.Auth.RevokeAllSessions(t.Context(), u.ID); err != nil {
						t.Fatal(err)
					}
				}},
				{"user deleted", func(t *testing.T, _ *authtest.Client, u auth.User) {
					if err := s.Auth.DeleteUser(t.Context(), u.ID); err != nil {
						t.Fatal(err)
					}
				}},
			} {
				t.Run(tc.name, func(t *testing.T) {
					c, u := s.SignedIn(m)
					access, refresh := c.Tokens()
					tc.end(t, c, u)
					holder := s.NewClient(m)
					holder.SetTokens(access, refresh)
					wantRefusal(t, holder.Get("/api/session"), "unauthorised", auth.ReasonRevoked)
					holder.SetTokens(access, refresh)
					wantRefusal(t, holder.Refresh(), "unauthorised", auth.ReasonRevoked)
				})
			}
		})
	}
}

// A token answers why its own session ended, and that answer stays what
// it was when the user's other sessions end later: a session signed out,
// or ended for theft, does not learn of a password reset that came
// after, and a live session learns nothing of the others ending.
func TestReasonIsOnlyItsOwnSessions(t *testing.T) {
	t.Parallel()
	s := authtest.NewServer(t, auth.Config{})
	laptop, u := s.SignedIn(authtest.Header)
	signIn := func() *authtest.Client {
		c := s.NewClient(authtest.Header)
		if res := c.SignIn(u.Email, authtest.Password); res.Status != "OK" {
			t.Fatalf("sign-in: %d %s", res.StatusCode, res.Body)
		}
		return c
	}
	phone, tablet := signIn(), signIn()

	_, phoneToken := phone.Tokens()
	wantStatusOK(t, phone.SignOut())
	_, stolen := tablet.Tokens()
	wantTokens(t, s, tablet.Refresh(), authtest.Header, u.ID)
	_, tabletToken := tablet.Tokens()
	thief := s.NewClient(authtest.Header)
	thief.SetTokens("", stolen)
	wantRefusal(t, thief.Refresh(), "token theft detected", auth.ReasonTheftPrevious)
	wantTokens(t, s, laptop.Refresh(), authtest.Header, u.ID)

	n := len(s.Mailbox.Messages())
	s.NewClient(authtest.Header).RequestPasswordReset(u.Email)
	_, tok := authtest.ResetLink(t, s.Mailbox.WaitFor(t, n+1, 5*time.Second)[n])
	if res := s.NewClient(authtest.Header).ResetPassword(tok, "a new password 1"); res.Status != "OK" {
		t.Fatalf("reset: %s", res.Body)
	}

	for _, tc := range []struct {
		name, token string
		want        auth.Reason
	}{
		{"the phone, signed out before the reset", phoneToken, auth.ReasonSignedOut},
		{"the tablet, ended for theft before the reset", tabletToken, auth.ReasonTokenTheft},
	} {
		holder := s.NewClient(authtest.Header)
		holder.SetTokens("", tc.token)
		t.Run(tc.name, func(t *testing.T) { wantRefusal(t, holder.Refresh(), "unauthorised", tc.want) })
	}
	wantRefusal(t, laptop.Refresh(), "unauthorised", auth.ReasonPasswordReset)
}
