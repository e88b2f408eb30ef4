package auth_test

// Tests of adding a way to sign in to the signed-in user (a sign-in sent
// with the session and shouldTryLinkingWithSessionUser true), over HTTP in
// every transfer mode: a provider whatever its email, a passwordless
// address; a login of another user refused and left where it is; the
// fresh sign-in and the MFA requirement asked first.

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/passwordless"
	"github.com/latchkit/auth/provider"
	"github.com/latchkit/auth/thirdparty"
)

// lsServer is a server with a fake provider and passwordless codes, with
// account linking as asked.
func lsServer(t testing.TB, linking bool) (*authtest.Server, *authtest.Provider) {
	t.Helper()
	p := authtest.NewProvider(t)
	s := authtest.NewServer(t, auth.Config{
		AccountLinking: linking,
		ThirdParty:     thirdparty.Config{Providers: []provider.Provider{p.Provider()}},
		Passwordless:   passwordless.Config{Flow: passwordless.Code},
	})
	return s, p
}

// lsSignedIn signs a new user up with a passwordless code, which proves
// their address, and returns the client and the user's id.
func lsSignedIn(t testing.TB, s *authtest.Server, m authtest.Mode) (*authtest.Client, string, string) {
	t.Helper()
	c := s.NewClient(m)
	email := s.NewEmail()
	return c, wantOK(t, "a passwordless sign-up", c.SignInWithCode(email)), email
}

// lsWantLinked checks the answer of a link: OK with the session's user,
// created or not, and no tokens.
func lsWantLinked(t testing.TB, what string, res *authtest.Response, userID string, created bool) {
	t.Helper()
	if res.StatusCode != http.StatusOK || res.Status != "OK" || userObject(t, res)["id"] != userID || res.JSON["createdNewRecipeUser"] != created {
		t.Fatalf("%s: %d %s, want OK for %s, createdNewRecipeUser %v", what, res.StatusCode, res.Body, userID, created)
	}
	wantNoTokens(t, res)
}

// TestLinkWithSession: a provider that reports another email, and a
// passwordless address, join the signed-in user; each then signs in to
// that user; the session goes on.
func TestLinkWithSession(t *testing.T) {
	t.Parallel()
	for _, linking := range []bool{false, true} {
		for _, m := range authtest.Modes {
			t.Run(fmt.Sprintf("linking=%v/%s", linking, m), func(t *testing.T) {
				t.Parallel()
				s, p := lsServer(t, linking)
				c, uid, _ := lsSignedIn(t, s, m)
				u := auth.User{ID: uid}
				p.SetIdentity("elsewhere-1", "someone.else@example.com", true)
				lsWantLinked(t, "a provider with another email", c.LinkWithProvider(p), u.ID, true)
				lsWantLinked(t, "the same provider again", c.LinkWithProvider(p), u.ID, false)
				lsWantLinked(t, "a passwordless address", c.LinkWithCode("codes@example.com"), u.ID, true)
				wantSession(t, c, u.ID)
				if res := c.Refresh(); res.Status != "OK" {
					t.Fatalf("the session after linking: %d %s", res.StatusCode, res.Body)
				}
				got, err := s.Auth.UserByID(t.Context(), u.ID)
				if err != nil || len(got.LoginMethods) != 3 {
					t.Fatalf("the user after linking: %+v, %v", got, err)
				}
				if id := wantOK(t, "the provider signs in", s.NewClient(m).SignInWithProvider(p)); id != u.ID {
					t.Fatalf("the linked provider signs in to %s, want %s", id, u.ID)
				}
				if id := wantOK(t, "the address signs in", s.NewClient(m).SignInWithCode("codes@example.com")); id != u.ID {
					t.Fatalf("the linked address signs in to %s, want %s", id, u.ID)
				}
			})
		}
	}
}

// TestLinkWithSessionRefused: a login of another user is refused and
// stays theirs; a stale session, a session that has not met its MFA
// requirement, and no session are refused before anything is spent.
func TestLinkWithSessionRefused(t *testing.T) {
	t.Parallel()
	for _, m := range authtest.Modes {
		t.Run(m.String(), func(t *testing.T) {
			t.Parallel()
			s, p := lsServer(t, true)
			c, uid, email := lsSignedIn(t, s, m)
			p.SetIdentity("theirs-1", "theirs@example.com", true)
			theirs := wantOK(t, "another user signs up with the provider", s.NewClient(m).SignInWithProvider(p))
			res := c.LinkWithProvider(p)
			if res.Status != "SIGN_IN_UP_NOT_ALLOWED" || res.JSON["reason"] == "" {
				t.Fatalf("linking another user's identity: %d %s", res.StatusCode, res.Body)
			}
			wantNoTokens(t, res)
			if id := wantOK(t, "the identity after the refusal", s.NewClient(m).SignInWithProvider(p)); id != theirs {
				t.Fatalf("the identity signs in to %s, want its own user %s", id, theirs)
			}
			wantOK(t, "the other user's address", s.NewClient(m).SignInWithCode("theirs-code@example.com"))
			res = c.LinkWithCode("theirs-code@example.com")
			if res.Status != "SIGN_IN_UP_NOT_ALLOWED" {
				t.Fatalf("linking another user's address: %d %s", res.StatusCode, res.Body)
			}
			// Under linking, an address the provider does not vouch for
			// is not taken into the account.
			p.SetIdentity("unverified-1", "unverified@example.com", false)
			if res := c.LinkWithProvider(p); res.Status != "SIGN_IN_UP_NOT_ALLOWED" {
				t.Fatalf("linking an unverified address: %d %s", res.StatusCode, res.Body)
			}
			if got, _ := s.Auth.UserByID(t.Context(), uid); len(got.LoginMethods) != 1 {
				t.Fatalf("the user after the refusals: %+v", got.LoginMethods)
			}

			s.Clock.Advance(6 * time.Minute)
			p.SetIdentity("late-1", "late@example.com", true)
			acWantStale(t, "a stale session", c.LinkWithProvider(p))
			if res := s.NewClient(m).LinkWithProvider(p); res.StatusCode != http.StatusUnauthorized {
				t.Fatalf("linking without a session: %d %s, want 401", res.StatusCode, res.Body)
			}
			// The code the stale try was given went unspent: signing in
			// again and linking works.
			wantOK(t, "sign in again", c.SignInWithCode(email))
			lsWantLinked(t, "fresh again", c.LinkWithProvider(p), uid, true)
		})
	}
}

// TestLinkWithSessionUnproven: a user whose password's address nobody
// has proven adds nothing, since it may be a stranger's made with someone
// else's address; once a reset proves it, the same user adds a provider.
func TestLinkWithSessionUnproven(t *testing.T) {
	t.Parallel()
	for _, linking := range []bool{false, true} {
		s, p := lsServer(t, linking)
		c, u := s.SignedIn(authtest.Header)
		p.SetIdentity("mine-1", "mine@example.com", true)
		res := c.LinkWithProvider(p)
		if res.Status != "SIGN_IN_UP_NOT_ALLOWED" || res.JSON["reason"] != "Prove your email address first, from a link sent to it (a password reset, or a passkey recovery), then add this." {
			t.Fatalf("linking %v: an unproven password user links: %d %s", linking, res.StatusCode, res.Body)
		}
		if res := c.LinkWithCode("mine-codes@example.com"); res.Status != "SIGN_IN_UP_NOT_ALLOWED" {
			t.Fatalf("linking %v: an unproven password user adds an address: %d %s", linking, res.StatusCode, res.Body)
		}
		tok := requestToken(t, s, u.Email, len(s.Mailbox.Messages())+1)
		if res := c.ResetPassword(tok, acNewPass); res.Status != "OK" {
			t.Fatalf("reset: %d %s", res.StatusCode, res.Body)
		}
		wantOK(t, "sign in with the new password", c.SignIn(u.Email, acNewPass))
		lsWantLinked(t, "proven by the reset", c.LinkWithProvider(p), u.ID, true)
	}
}

// TestLinkWithSessionMFA: a session that has not met its MFA requirement
// adds no way to sign in.
func TestLinkWithSessionMFA(t *testing.T) {
	t.Parallel()
	p := authtest.NewProvider(t)
	s := mfServer(t, auth.Config{ThirdParty: thirdparty.Config{Providers: []provider.Provider{p.Provider()}}})
	c, _ := s.SignedIn(authtest.Header)
	c.SetUpTOTP()
	pending := mfSignIn(t, s, authtest.Header, emailOf(t, s, c))
	p.SetIdentity("pending-1", "pending@example.com", true)
	if res := pending.LinkWithProvider(p); res.StatusCode != http.StatusForbidden || string(res.Body) != mfPendingBody {
		t.Fatalf("linking from a pending session: %d %s, want 403 st-mfa", res.StatusCode, res.Body)
	}
}
