package auth_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/emailverification"
	"github.com/latchkit/auth/provider"
	"github.com/latchkit/auth/thirdparty"
)

// phServer is a server with passkeys, optional TOTP and passkeys as a
// second factor, and email verification in mode.
func phServer(t *testing.T, mode emailverification.Mode) *authtest.Server {
	t.Helper()
	return pkServer(t, auth.Config{
		EmailVerification: emailverification.Config{Mode: mode},
		MFA:               auth.MFAConfig{Factors: []string{auth.FactorTOTP, auth.FactorWebAuthn}},
	})
}

// phAddEverything tries each way to add what outlasts a reset with c: an
// authenticator app, a passkey at /webauthn/credential, and a passkey as
// a second factor by the SDKs' sign-up with the session; it returns the
// answers by route.
func phAddEverything(t *testing.T, s *authtest.Server, c *authtest.Client, email string) map[string]*authtest.Response {
	t.Helper()
	got := map[string]*authtest.Response{
		"/totp/device":         c.CreateTOTPDevice("phone"),
		"/webauthn/credential": c.AddPasskey(s.NewAuthenticator()),
	}
	key := s.NewAuthenticator()
	o := pkRegisterOptions(t, c, email)
	got["/webauthn/signup"] = pkPost(c, "/webauthn/signup", map[string]any{
		"webauthnGeneratedOptionsId": o.id, "credential": json.RawMessage(pkRegister(t, key, o)),
		"shouldTryLinkingWithSessionUser": true,
	})
	return got
}

// Whoever signs up with someone else's address and a password gains no
// way in that would outlast the owner's reset: with email verification
// on, a passkey or an authenticator app waits until the address is
// verified, and the refusal is the SDKs' st-ev claim error, which their
// frontends meet by sending the user to verify. The owner's reset then
// leaves nothing of the stranger's: the owner signs in with the new
// password alone, and the stranger's session has ended (its access token
// lives out its few minutes; its refresh is refused). A user whose
// address is verified adds both.
func TestNoLastingWayInBeforeVerification(t *testing.T) {
	for _, mode := range []emailverification.Mode{emailverification.Optional, emailverification.Required} {
		t.Run(string(mode), func(t *testing.T) {
			mfModes(t, func(t *testing.T, m authtest.Mode) {
				s := phServer(t, mode)
				stranger, u := s.SignedIn(m)
				for route, res := range phAddEverything(t, s, stranger, u.Email) {
					wantReply(t, route+" with the address unverified", res.StatusCode, res.Body, http.StatusForbidden, invalidClaimBody)
				}
				if devices := mfDevices(t, stranger); len(devices) != 0 {
					t.Errorf("authenticator apps after the refusals: %v, want none", devices)
				}
				if list := stranger.ListPasskeys(); !strings.Contains(string(list.Body), `"credentials":[]`) {
					t.Errorf("passkeys after the refusals: %s, want none", list.Body)
				}

				tok := requestToken(t, s, u.Email, len(s.Mailbox.Messages())+1)
				const ownerPassword = "the owner's 2nd words"
				res := s.NewClient(m).ResetPassword(tok, ownerPassword)
				wantReply(t, "the owner's reset", res.StatusCode, res.Body, http.StatusOK, okBody)
				owner := mfSignInWith(t, s, m, u.Email, ownerPassword)
				mfWantOpen(t, "the owner after the reset", owner, u.ID)
				if res := stranger.Refresh(); res.StatusCode != http.StatusUnauthorized {
					t.Errorf("the stranger's refresh after the reset: %d %s, want 401", res.StatusCode, res.Body)
				}
			})
		})
	}
}

// The gate lets a verified address through, and is not there with
// verification off, where addresses are taken on trust.
func TestLastingWayInOnceVerified(t *testing.T) {
	mfModes(t, func(t *testing.T, m authtest.Mode) {
		for _, mode := range []emailverification.Mode{emailverification.Optional, emailverification.Off} {
			s := phServer(t, mode)
			c, u := s.SignedIn(m)
			if mode != emailverification.Off {
				tok := verificationToken(t, s, c, len(s.Mailbox.Messages())+1)
				if res := c.VerifyEmail(tok); res.Status != "OK" {
					t.Fatalf("verify: %d %s", res.StatusCode, res.Body)
				}
			}
			for route, res := range phAddEverything(t, s, c, u.Email) {
				if res.StatusCode != http.StatusOK || res.Status != "OK" {
					t.Errorf("verification %q: %s: %d %s, want OK", mode, route, res.StatusCode, res.Body)
				}
			}
		}
	})
}

// An owner who opens the verification link a stranger's sign-up with
// their address sent them lets the stranger add a passkey; the owner's
// reset, the first proof of the address, takes it away: the passkey no
// longer signs in. Under account linking, the owner's provider that
// vouches for the address evicts the stranger's password and drops the
// passkey the same way.
func TestOwnerTakingBackDropsPasskeys(t *testing.T) {
	for _, linking := range []bool{false, true} {
		t.Run(map[bool]string{false: "reset", true: "linking"}[linking], func(t *testing.T) {
			mfModes(t, func(t *testing.T, m authtest.Mode) {
				p := authtest.NewProvider(t)
				s := pkServer(t, auth.Config{
					AccountLinking:    linking,
					EmailVerification: emailverification.Config{Mode: emailverification.Optional},
					ThirdParty:        thirdparty.Config{Providers: []provider.Provider{p.Provider()}},
				})
				stranger, u := s.SignedIn(m)
				tok := verificationToken(t, s, stranger, len(s.Mailbox.Messages())+1)
				if res := s.NewClient(m).VerifyEmail(tok); res.Status != "OK" {
					t.Fatalf("the owner opens the link: %d %s", res.StatusCode, res.Body)
				}
				key := s.NewAuthenticator()
				if res := stranger.AddPasskey(key); res.Status != "OK" {
					t.Fatalf("the stranger's passkey, the address verified: %d %s", res.StatusCode, res.Body)
				}
				pkSignedIn(t, "the stranger's passkey before the owner acts", s, s.NewClient(m), s.NewClient(m).SignInWithPasskey(key))

				if linking {
					p.SetIdentity("owner", u.Email, true)
					if res := s.NewClient(m).SignInWithProvider(p); res.Status != "OK" {
						t.Fatalf("the owner's provider: %d %s", res.StatusCode, res.Body)
					}
				} else {
					res := s.NewClient(m).ResetPassword(requestToken(t, s, u.Email, len(s.Mailbox.Messages())+1), "the owner's 2nd words")
					wantReply(t, "the owner's reset", res.StatusCode, res.Body, http.StatusOK, okBody)
				}
				res := s.NewClient(m).SignInWithPasskey(key)
				if res.Status != "INVALID_CREDENTIALS_ERROR" {
					t.Errorf("the stranger's passkey after the owner took the account back: %d %s, want INVALID_CREDENTIALS_ERROR", res.StatusCode, res.Body)
				}
			})
		})
	}
}

// Where every user must set up an authenticator app after their password,
// the set-up waits for the address: the new session, its MFA unmet, asks
// for the verification link and opens it, then sets the app up and is
// let through.
func TestMFAOnboardingVerifiesFirst(t *testing.T) {
	mfModes(t, func(t *testing.T, m authtest.Mode) {
		s := mfServer(t, auth.Config{EmailVerification: emailverification.Config{Mode: emailverification.Optional}})
		c, u := s.SignedIn(m)
		mfWantPending(t, "a password sign-up", c)
		res := c.CreateTOTPDevice("phone")
		wantReply(t, "the app before the address is verified", res.StatusCode, res.Body, http.StatusForbidden, invalidClaimBody)
		tok := verificationToken(t, s, c, len(s.Mailbox.Messages())+1)
		if res := c.VerifyEmail(tok); res.Status != "OK" {
			t.Fatalf("verify with the pending session: %d %s", res.StatusCode, res.Body)
		}
		mfSetUp(t, s, c, "phone")
		mfWantOpen(t, "after the app's code", c, u.ID)
	})
}
