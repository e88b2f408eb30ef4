package auth_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
)

// The rules that keep a second factor the owner's: one set up is asked
// for, whichever route set it up; the last one the application requires
// stays, whichever route removes it; and whoever holds only the first
// factor can neither keep the owner out nor read what they set up.

// pkOffered is a server where TOTP and passkeys are second factors each
// user may choose, as in the demo's -dev: no one must.
func pkOffered(t testing.TB) *authtest.Server {
	t.Helper()
	s := pkServer(t, auth.Config{MFA: auth.MFAConfig{Factors: []string{auth.FactorTOTP, auth.FactorWebAuthn}}})
	mfStepUpRoute(s)
	return s
}

// passkeyAsFactor registers key for c's user through the SDKs' MFA
// screen: a sign-up with the session, shouldTryLinkingWithSessionUser.
func passkeyAsFactor(t testing.TB, c *authtest.Client, key *authtest.Authenticator, email string) {
	t.Helper()
	o := pkRegisterOptions(t, c, email)
	res := pkPost(c, "/webauthn/signup", map[string]any{
		"webauthnGeneratedOptionsId": o.id, "credential": json.RawMessage(pkRegister(t, key, o)),
		"shouldTryLinkingWithSessionUser": true,
	})
	if res.StatusCode != http.StatusOK || res.Status != "OK" {
		t.Fatalf("passkey as a second factor: %d %s", res.StatusCode, res.Body)
	}
}

// completePasskey completes webauthn in c's pending session with key.
func completePasskey(t testing.TB, c *authtest.Client, key *authtest.Authenticator) *authtest.Response {
	t.Helper()
	o := pkSignInOptions(t, c)
	return pkPost(c, "/webauthn/signin", map[string]any{
		"webauthnGeneratedOptionsId": o.id, "credential": json.RawMessage(pkAssert(t, key, o)),
		"shouldTryLinkingWithSessionUser": true,
	})
}

// A passkey set up as a second factor is asked for at every later sign-in
// by another factor, as a TOTP device is, whether the MFA screen set it
// up or the account page added it; the user's other sessions are held to
// it from their next refresh, and the session that added it is not.
func TestMFAPasskeySetUpIsAskedFor(t *testing.T) {
	routes := map[string]func(t testing.TB, c *authtest.Client, key *authtest.Authenticator, email string){
		"the MFA screen's sign-up": passkeyAsFactor,
		"the account page's add": func(t testing.TB, c *authtest.Client, key *authtest.Authenticator, _ string) {
			if res := c.AddPasskey(key); res.StatusCode != http.StatusOK || res.Status != "OK" {
				t.Fatalf("POST /webauthn/credential: %d %s", res.StatusCode, res.Body)
			}
		},
	}
	for name, add := range routes {
		t.Run(name, func(t *testing.T) {
			mfModes(t, func(t *testing.T, m authtest.Mode) {
				s := pkOffered(t)
				c, u := s.SignedIn(m)
				other := mfSignIn(t, s, m, u.Email)
				mfWantOpen(t, "a password sign-in before any second factor", other, u.ID)

				key := s.NewAuthenticator()
				add(t, c, key, u.Email)
				mfWantOpen(t, "the session that added the passkey", c, u.ID)
				if res := c.Refresh(); res.StatusCode != http.StatusOK {
					t.Fatalf("refresh of the session that added the passkey: %d %s", res.StatusCode, res.Body)
				}
				mfWantOpen(t, "the session that added the passkey, after its refresh", c, u.ID)
				if res := other.Refresh(); res.StatusCode != http.StatusOK {
					t.Fatalf("refresh of another session: %d %s", res.StatusCode, res.Body)
				}
				mfWantPending(t, "another session of the user, after its refresh", other)

				next := mfSignIn(t, s, m, u.Email)
				mfWantPending(t, "the next password sign-in", next)
				info := mfInfoOf(t, next)
				if !slices.Equal(info.Next, []string{auth.FactorWebAuthn}) || !slices.Contains(info.AlreadySetup, auth.FactorWebAuthn) {
					t.Fatalf("mfa/info of the next sign-in: %+v, want next [webauthn], set up", info)
				}
				if slices.Contains(info.AllowedToSetup, auth.FactorTOTP) {
					t.Errorf("mfa/info of a pending session: %+v, allows setting up TOTP beside the passkey", info)
				}
				if res := completePasskey(t, next, key); res.Status != "OK" {
					t.Fatalf("the passkey as the second factor: %d %s", res.StatusCode, res.Body)
				}
				mfWantOpen(t, "after the passkey", next, u.ID)
			})
		})
	}
}

// A user who set up a passkey of their own accord may remove it, and with
// it the requirement it made; one the application requires stays, on the
// SDK's route and through Unlink alike (ErrLastFactor), until another
// factor is set up.
func TestMFALastFactorOnEveryPath(t *testing.T) {
	t.Run("required", func(t *testing.T) {
		mfModes(t, func(t *testing.T, m authtest.Mode) {
			s := pkServer(t, auth.Config{MFA: auth.MFAConfig{Required: []string{auth.FactorTOTP, auth.FactorWebAuthn}}})
			c, u := s.SignedIn(m)
			key := s.NewAuthenticator()
			passkeyAsFactor(t, c, key, u.Email)
			mfWantOpen(t, "after the passkey", c, u.ID)
			id := key.Credentials()[0].EncodedID()

			res := c.RemovePasskey(id)
			if res.Status != "GENERAL_ERROR" || !strings.Contains(res.Message, "last second factor") {
				t.Fatalf("POST /webauthn/credential/remove of the only factor: %d %s, want GENERAL_ERROR", res.StatusCode, res.Body)
			}
			login := passkeyLoginOf(t, s, u.ID)
			if err := s.Auth.Unlink(t.Context(), u.ID, login); !errors.Is(err, auth.ErrLastFactor) {
				t.Fatalf("Unlink of the only factor: %v, want ErrLastFactor", err)
			}
			thief := mfSignIn(t, s, m, u.Email)
			mfWantPending(t, "a password sign-in after the refusals", thief)
			if res := thief.CreateTOTPDevice("thief"); res.StatusCode != http.StatusForbidden {
				t.Errorf("a pending session sets up TOTP beside the passkey: %d %s, want 403", res.StatusCode, res.Body)
			}
			if res := completePasskey(t, thief, key); res.Status != "OK" {
				t.Fatalf("the passkey after the refusals: %d %s", res.StatusCode, res.Body)
			}

			s.Clock.Advance(mfStep)
			mfSetUp(t, s, c, "phone")
			if err := s.Auth.Unlink(t.Context(), u.ID, login); err != nil {
				t.Fatalf("Unlink of the passkey beside a TOTP device: %v", err)
			}
		})
	})

	t.Run("chosen by the user", func(t *testing.T) {
		mfModes(t, func(t *testing.T, m authtest.Mode) {
			s := pkOffered(t)
			c, u := s.SignedIn(m)
			passkeyAsFactor(t, c, s.NewAuthenticator(), u.Email)
			mfWantPending(t, "a password sign-in with the passkey", mfSignIn(t, s, m, u.Email))
			if err := s.Auth.Unlink(t.Context(), u.ID, passkeyLoginOf(t, s, u.ID)); err != nil {
				t.Fatalf("Unlink of a passkey the user chose: %v", err)
			}
			mfWantOpen(t, "a password sign-in once the passkey is gone", mfSignIn(t, s, m, u.Email), u.ID)
		})
	})
}

// passkeyLoginOf is the login method id of the user's passkey.
func passkeyLoginOf(t testing.TB, s *authtest.Server, userID string) string {
	t.Helper()
	u, err := s.Auth.UserByID(t.Context(), userID)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range u.LoginMethods {
		if l.Method == "webauthn" {
			return l.ID
		}
	}
	t.Fatalf("user %s has no passkey: %+v", userID, u.LoginMethods)
	return ""
}

// Whoever holds the password alone cannot keep the owner out, nor learn
// what they set up (SECURITY.md, "Second factors"): their five wrong
// codes lock TOTP for 15 minutes, but the owner's recovery code from
// another client is taken meanwhile and lifts the lock; the owner is told
// by email at the first wrong code, and again at the first after 15
// minutes; and the pending session reads no device, passkey or count.
func TestMFAPasswordAloneCannotKeepOwnerOut(t *testing.T) {
	mfModes(t, func(t *testing.T, m authtest.Mode) {
		s := pkOffered(t)
		owner, u := s.SignedIn(m)
		secret := mfSetUp(t, s, owner, "phone")
		owner.AddPasskey(s.NewAuthenticator())
		codes := mfRecoveryCodes(t, owner)

		thief := mfSignIn(t, s, m, u.Email)
		s.Clock.Advance(mfStep)
		for i := int64(1); i <= mfMaxFailures; i++ {
			mfWantWrong(t, "the thief's wrong code", thief.VerifyTOTP(mfWrongCode(secret, s.Clock.Now())), "INVALID_TOTP_ERROR", i)
		}
		mfWantLocked(t, "the thief's sixth code", thief.VerifyTOTP(mfWrongCode(secret, s.Clock.Now())))
		notices := wrongCodeNotices(t, s, u.Email, 1)

		if got := mfDevices(t, thief); len(got) != 0 {
			t.Errorf("the thief's device list: %v, want none shown", got)
		}
		if res := thief.ListPasskeys(); res.StatusCode != http.StatusForbidden {
			t.Errorf("the thief's passkey list: %d %s, want 403", res.StatusCode, res.Body)
		}
		if res := mfCall(thief, "multifactorauth", http.MethodGet, "/auth/mfa/recovery-codes", nil); res.StatusCode != http.StatusForbidden {
			t.Errorf("the thief's recovery code count: %d %s, want 403", res.StatusCode, res.Body)
		}

		back := mfSignIn(t, s, m, u.Email)
		mfWantLocked(t, "the owner's right TOTP code from another client", back.CompleteTOTP(secret))
		res := back.UseRecoveryCode(codes[0])
		wantReply(t, "the owner's recovery code from another client", res.StatusCode, res.Body, http.StatusOK, `{"status":"OK","remaining":9}`)
		mfWantOpen(t, "the owner, with the recovery code", back, u.ID)
		if got := mfDevices(t, back); !got["phone"] {
			t.Errorf("the owner's device list: %v, want phone", got)
		}

		mfWantWrong(t, "the thief's code after the lock lifted", thief.VerifyTOTP(mfWrongCode(secret, s.Clock.Now())), "INVALID_TOTP_ERROR", 1)
		if n := len(wrongCodeNotices(t, s, u.Email, 1)); n != len(notices) {
			t.Errorf("notices within 15 minutes of the first: %d, want %d", n, len(notices))
		}
		s.Clock.Advance(mfLockout)
		mfWantWrong(t, "the thief's code 15 minutes on", thief.VerifyTOTP(mfWrongCode(secret, s.Clock.Now())), "INVALID_TOTP_ERROR", 1)
		wrongCodeNotices(t, s, u.Email, 2)

		s.Clock.Advance(mfStep)
		res = owner.VerifyTOTPDevice("phone", mfWrongCode(secret, s.Clock.Now()))
		mfWantWrong(t, "the owner's own slip, in a session that met its requirement", res, "INVALID_TOTP_ERROR", 2)
		if n := len(wrongCodeNotices(t, s, u.Email, 2)); n != 2 {
			t.Errorf("notices after a wrong code from a session that met its requirement: %d, want 2", n)
		}
	})
}

// wrongCodeNotices waits for at least n wrong-code notices to address
// and returns those there are, after a moment for any more to land.
func wrongCodeNotices(t testing.TB, s *authtest.Server, address string, n int) []string {
	t.Helper()
	count := func() []string {
		var got []string
		for _, msg := range s.Mailbox.Messages() {
			if msg.To.Address == address && strings.Contains(msg.Subject, "wrong code") {
				if !strings.Contains(msg.Text, "your password") {
					t.Errorf("the notice does not say the password was used: %q", msg.Text)
				}
				got = append(got, msg.Subject)
			}
		}
		return got
	}
	for deadline := time.Now().Add(5 * time.Second); len(count()) < n; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("wrong-code notices to %s: %d, want %d", address, len(count()), n)
		}
	}
	time.Sleep(50 * time.Millisecond)
	return count()
}
