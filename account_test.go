package auth_test

// Tests of the account's self-service over HTTP, in every transfer mode:
// the fresh sign-in that sensitive routes ask for (SignedInWithin, and
// Config.FreshSignIn on the library's own routes), changing or adding a
// password (POST /user/password/change) and deleting one's own account
// (POST /user/delete).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/passwordless"
	"github.com/latchkit/auth/store/memstore"
)

const (
	acFreshPath = "/api/fresh"
	acNewPass   = "another horse 2"
	// acStaleBody is the fresh sign-in's refusal at the default of five
	// minutes.
	acStaleBody = `{"message":"invalid claim","claimValidationErrors":[{"id":"st-fresh","reason":{"message":"Sign-in not fresh: no factor completed within 300 seconds","maxAgeInSeconds":300}}]}`
)

// acServer is a server with a route of the application's own behind
// SignedInWithin(0), and the delete route on.
func acServer(t testing.TB, cfg auth.Config) *authtest.Server {
	t.Helper()
	if cfg.BeforeDeleteUser == nil {
		cfg.BeforeDeleteUser = func(context.Context, string) error { return nil }
	}
	s := authtest.NewServer(t, cfg)
	s.Mux.Handle("POST "+acFreshPath, s.Auth.RequireSession(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"status":"OK"}`)
	}), auth.SignedInWithin(0)))
	return s
}

// acChange asks to change c's password from old to pw; "" leaves a
// field out.
func acChange(c *authtest.Client, old, pw string) *authtest.Response {
	var fields []map[string]string
	if old != "" {
		fields = append(fields, map[string]string{"id": "oldPassword", "value": old})
	}
	if pw != "" {
		fields = append(fields, map[string]string{"id": "newPassword", "value": pw})
	}
	return c.Do(http.MethodPost, "/auth/user/password/change", map[string]any{"formFields": fields})
}

// acWantStale checks a fresh sign-in's refusal, which keeps the tokens.
func acWantStale(t testing.TB, what string, res *authtest.Response) {
	t.Helper()
	if res.StatusCode != http.StatusForbidden || string(res.Body) != acStaleBody {
		t.Fatalf("%s: %d %s, want 403 %s", what, res.StatusCode, res.Body, acStaleBody)
	}
	wantNoTokens(t, res)
	if res.Header.Get("Front-Token") == "remove" {
		t.Fatalf("%s: the refusal cleared the tokens", what)
	}
}

// acWantEnded checks that c's session has ended: its refresh is refused.
func acWantEnded(t testing.TB, what string, c *authtest.Client) {
	t.Helper()
	if res := c.Refresh(); res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("%s: refresh %d %s, want 401", what, res.StatusCode, res.Body)
	}
}

// acWantStatus checks a 200 answer with status.
func acWantStatus(t testing.TB, what string, res *authtest.Response, status string) {
	t.Helper()
	if res.StatusCode != http.StatusOK || res.Status != status {
		t.Fatalf("%s: %d %s, want 200 %s", what, res.StatusCode, res.Body, status)
	}
}

// TestSignedInWithin: a route behind SignedInWithin lets a session through
// for FreshSignIn after its sign-in, then refuses it 403 st-fresh, and a
// new sign-in lets it through again; Config.FreshSignIn sets the time.
func TestSignedInWithin(t *testing.T) {
	t.Parallel()
	for _, m := range authtest.Modes {
		t.Run(m.String(), func(t *testing.T) {
			t.Parallel()
			s := acServer(t, auth.Config{})
			c, u := s.SignedIn(m)
			acWantStatus(t, "at once", c.Do(http.MethodPost, acFreshPath, nil), "OK")
			s.Clock.Advance(5 * time.Minute)
			acWantStatus(t, "at five minutes", c.Do(http.MethodPost, acFreshPath, nil), "OK")
			s.Clock.Advance(time.Second)
			acWantStale(t, "past five minutes", c.Do(http.MethodPost, acFreshPath, nil))
			// A refresh is no sign-in.
			if res := c.Refresh(); res.Status != "OK" {
				t.Fatalf("refresh: %d %s", res.StatusCode, res.Body)
			}
			acWantStale(t, "after a refresh", c.Do(http.MethodPost, acFreshPath, nil))
			wantSession(t, c, u.ID)
			// Signing in again, with the session, replaces its tokens.
			wantOK(t, "sign-in again", c.SignIn(u.Email, authtest.Password))
			acWantStatus(t, "after signing in again", c.Do(http.MethodPost, acFreshPath, nil), "OK")
		})
	}
	t.Run("FreshSignIn", func(t *testing.T) {
		t.Parallel()
		s := acServer(t, auth.Config{FreshSignIn: time.Minute})
		c, _ := s.SignedIn(authtest.Header)
		s.Clock.Advance(time.Minute + time.Second)
		res := c.Do(http.MethodPost, acFreshPath, nil)
		if res.StatusCode != http.StatusForbidden || !strings.Contains(string(res.Body), `"maxAgeInSeconds":60`) {
			t.Fatalf("%d %s, want 403 st-fresh at 60 seconds", res.StatusCode, res.Body)
		}
	})
	t.Run("bounds", func(t *testing.T) {
		t.Parallel()
		for _, d := range []time.Duration{-time.Second, auth.MaxFreshSignIn + time.Second} {
			if _, err := auth.New(auth.Config{Store: memstore.New(), FreshSignIn: d}); err == nil {
				t.Errorf("New with FreshSignIn %v: no error", d)
			}
		}
	})
}

// TestSignedInWithinMFA: with MFA, completing the second factor again
// makes the session fresh, without a new sign-in.
func TestSignedInWithinMFA(t *testing.T) {
	t.Parallel()
	s := acServer(t, auth.Config{MFA: auth.MFAConfig{Required: []string{auth.FactorTOTP}}})
	c, _ := s.SignedIn(authtest.Header)
	secret := c.SetUpTOTP()
	acWantStatus(t, "just set up", c.Do(http.MethodPost, acFreshPath, nil), "OK")
	s.Clock.Advance(6 * time.Minute)
	acWantStale(t, "six minutes on", c.Do(http.MethodPost, acFreshPath, nil))
	if res := c.CompleteTOTP(secret); res.Status != "OK" {
		t.Fatalf("totp/verify: %d %s", res.StatusCode, res.Body)
	}
	acWantStatus(t, "TOTP again", c.Do(http.MethodPost, acFreshPath, nil), "OK")

	// A session that has not met its requirement is refused for that
	// first, by every account route.
	pending := mfSignIn(t, s, authtest.Header, emailOf(t, s, c))
	mfWantPending(t, "pending", pending)
	if res := acChange(pending, authtest.Password, acNewPass); res.StatusCode != http.StatusForbidden || string(res.Body) != mfPendingBody {
		t.Fatalf("change from a pending session: %d %s, want 403 st-mfa", res.StatusCode, res.Body)
	}
	if res := pending.Do(http.MethodPost, "/auth/user/delete", nil); res.StatusCode != http.StatusForbidden || string(res.Body) != mfPendingBody {
		t.Fatalf("delete from a pending session: %d %s, want 403 st-mfa", res.StatusCode, res.Body)
	}
}

// TestSensitiveRoutesNeedFreshSignIn: adding or removing a second factor
// or a passkey, and showing new recovery codes, need a fresh sign-in;
// a stale session changes nothing, and completing a factor again lets it
// through. Removing a device not yet set up is the setup's own.
func TestSensitiveRoutesNeedFreshSignIn(t *testing.T) {
	mfModes(t, func(t *testing.T, m authtest.Mode) {
		s := pkOffered(t)
		c, _ := s.SignedIn(m)
		secret := c.SetUpTOTP()
		if res := c.AddPasskey(s.NewAuthenticator()); res.Status != "OK" {
			t.Fatalf("add a passkey at once: %d %s", res.StatusCode, res.Body)
		}
		acWantStatus(t, "a device to set up later", c.CreateTOTPDevice("later"), "OK")
		passkeyID := acPasskeyIDs(t, c)[0]
		device := acTOTPDevices(t, c)[0]

		s.Clock.Advance(6 * time.Minute)
		acWantStale(t, "new device", c.CreateTOTPDevice("late"))
		acWantStale(t, "recovery codes", c.NewRecoveryCodes())
		acWantStale(t, "add a passkey", c.AddPasskey(s.NewAuthenticator()))
		acWantStale(t, "remove the passkey", c.RemovePasskey(passkeyID))
		acWantStale(t, "remove the set-up device", acRemoveDevice(c, device))
		if got := acPasskeyIDs(t, c); len(got) != 1 {
			t.Fatalf("passkeys after the stale session's tries: %v", got)
		}
		if got := acTOTPDevices(t, c); len(got) != 2 {
			t.Fatalf("devices after the stale session's tries: %v", got)
		}
		res := acRemoveDevice(c, "later")
		acWantStatus(t, "remove the device not set up", res, "OK")
		if res.JSON["didDeviceExist"] != true {
			t.Fatalf("remove the device not set up: %s", res.Body)
		}

		acWantStatus(t, "TOTP again", c.CompleteTOTP(secret), "OK")
		acWantStatus(t, "recovery codes, fresh", c.NewRecoveryCodes(), "OK")
		acWantStatus(t, "remove the passkey, fresh", c.RemovePasskey(passkeyID), "OK")
		acWantStatus(t, "remove the device, fresh", acRemoveDevice(c, device), "OK")
	})
}

// acRemoveDevice removes c's TOTP device name.
func acRemoveDevice(c *authtest.Client, name string) *authtest.Response {
	return c.Do(http.MethodPost, "/auth/totp/device/remove", map[string]string{"deviceName": name})
}

// acTOTPDevices lists the names of c's TOTP devices.
func acTOTPDevices(t testing.TB, c *authtest.Client) []string {
	t.Helper()
	res := c.Get("/auth/totp/device/list")
	var body struct{ Devices []struct{ Name string } }
	if err := json.Unmarshal(res.Body, &body); err != nil || res.Status != "OK" {
		t.Fatalf("totp/device/list: %d %s", res.StatusCode, res.Body)
	}
	var names []string
	for _, d := range body.Devices {
		names = append(names, d.Name)
	}
	return names
}

// acPasskeyIDs lists the credential ids of c's passkeys.
func acPasskeyIDs(t testing.TB, c *authtest.Client) []string {
	t.Helper()
	res := c.ListPasskeys()
	var body struct {
		Credentials []struct {
			ID string `json:"webauthnCredentialId"`
		}
	}
	if err := json.Unmarshal(res.Body, &body); err != nil || res.Status != "OK" {
		t.Fatalf("webauthn/credential/list: %d %s", res.StatusCode, res.Body)
	}
	var ids []string
	for _, c := range body.Credentials {
		ids = append(ids, c.ID)
	}
	return ids
}

// emailOf is the email of c's user.
func emailOf(t testing.TB, s *authtest.Server, c *authtest.Client) string {
	t.Helper()
	res := c.Get("/api/session")
	uid, _ := res.JSON["userId"].(string)
	u, err := s.Auth.UserByID(t.Context(), uid)
	if err != nil {
		t.Fatalf("user of the session: %v", err)
	}
	return u.Email
}

// TestChangePassword: with the current password, the password changes;
// every other session of the user ends, the current one goes on (under a
// new handle), the user is mailed, and the old password stops working.
func TestChangePassword(t *testing.T) {
	t.Parallel()
	for _, m := range authtest.Modes {
		t.Run(m.String(), func(t *testing.T) {
			t.Parallel()
			events := newEventLog()
			s := acServer(t, auth.Config{OnEvent: events.record})
			c, u := s.SignedIn(m)
			other := mfSignIn(t, s, authtest.Cookie, u.Email)
			stranger, su := s.SignedIn(authtest.Header)
			// Long after the sign-in: the current password is the fresh
			// factor.
			s.Clock.Advance(30 * time.Minute)
			acWantStatus(t, "a wrong current password", acChange(c, "wrong horse 3", acNewPass), "WRONG_CREDENTIALS_ERROR")
			before := len(s.Mailbox.Messages())
			old := handleOf(t, c)
			res := acChange(c, authtest.Password, acNewPass)
			acWantStatus(t, "change", res, "OK")
			wantTokens(t, s, res, m, u.ID)
			if h := handleOf(t, c); h == old || h == "" {
				t.Errorf("handle %q after the change, want a new one (was %q)", h, old)
			}
			wantSession(t, c, u.ID)
			if res := c.Refresh(); res.Status != "OK" {
				t.Fatalf("refresh after the change: %d %s", res.StatusCode, res.Body)
			}
			acWantEnded(t, "the other session", other)
			wantSession(t, stranger, su.ID)
			if ss, err := s.Auth.Sessions(t.Context(), u.ID); err != nil || len(ss) != 1 || !ss[0].CreatedAt.Equal(authtest.Start) {
				t.Errorf("sessions after the change: %+v %v, want the one carried on, started at the sign-in", ss, err)
			}
			msg := s.Mailbox.LastTo(t, u.Email, before, 5*time.Second)
			if !strings.Contains(msg.Subject, "password was changed") || !strings.Contains(msg.Text, "/auth/reset-password") {
				t.Errorf("notice %q: %s", msg.Subject, msg.Text)
			}
			acWantStatus(t, "sign-in with the old password", s.NewClient(m).SignIn(u.Email, authtest.Password), "WRONG_CREDENTIALS_ERROR")
			wantOK(t, "sign-in with the new password", s.NewClient(m).SignIn(u.Email, acNewPass))
			if n := len(events.of(auth.EventPasswordChanged)); n != 1 {
				t.Errorf("%d password_changed events, want 1", n)
			}
			if n := len(events.of(auth.EventSessionRevoked)); n != 1 {
				t.Errorf("%d session_revoked events, want 1: the other session's", n)
			}
		})
	}
}

// TestChangePasswordFields: the new password meets the policy of sign-up,
// and the current one is asked for; neither answer counts.
func TestChangePasswordFields(t *testing.T) {
	t.Parallel()
	s := acServer(t, auth.Config{})
	c, u := s.SignedIn(authtest.Header)
	for _, tc := range []struct{ name, old, pw, want string }{
		{"too short", authtest.Password, "short1", `{"id":"newPassword","error":"Password must contain at least 8 characters, including a number"}`},
		{"no digit", authtest.Password, "no digits here", `{"id":"newPassword","error":"Password must contain at least one number"}`},
		{"no new password", authtest.Password, "", `{"id":"newPassword","error":"Field is not optional"}`},
		{"no current password", "", acNewPass, `{"id":"oldPassword","error":"Field is not optional"}`},
	} {
		res := acChange(c, tc.old, tc.pw)
		if res.Status != "FIELD_ERROR" || !strings.Contains(string(res.Body), tc.want) {
			t.Errorf("%s: %d %s, want FIELD_ERROR %s", tc.name, res.StatusCode, res.Body, tc.want)
		}
	}
	wantOK(t, "sign-in with the password unchanged", s.NewClient(authtest.Header).SignIn(u.Email, authtest.Password))
}

// TestChangePasswordLimits: wrong current passwords count against the
// limits of sign-in, for the change and for sign-in alike.
func TestChangePasswordLimits(t *testing.T) {
	t.Parallel()
	s := acServer(t, auth.Config{RateLimits: auth.RateLimits{SignInFailures: auth.Rate{Burst: 3, Every: time.Hour}}})
	c, u := s.SignedIn(authtest.Header)
	for i := range 3 {
		acWantStatus(t, fmt.Sprintf("wrong password %d", i+1), acChange(c, "wrong horse 3", acNewPass), "WRONG_CREDENTIALS_ERROR")
	}
	if res := acChange(c, authtest.Password, acNewPass); res.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("change past the limit: %d %s, want 429", res.StatusCode, res.Body)
	}
	if res := c.SignIn(u.Email, authtest.Password); res.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("sign-in past the limit: %d %s, want 429", res.StatusCode, res.Body)
	}
}

// TestAddPassword: a user without a password (passwordless, under account
// linking, owning the address) adds one after a fresh sign-in, and signs
// in with it; the other sessions end. Without an email the user owns
// (always without linking) no password is added.
func TestAddPassword(t *testing.T) {
	t.Parallel()
	for _, m := range authtest.Modes {
		t.Run(m.String(), func(t *testing.T) {
			t.Parallel()
			s := acServer(t, auth.Config{AccountLinking: true, Passwordless: passwordless.Config{Flow: passwordless.Code}})
			email := s.NewEmail()
			c := s.NewClient(m)
			uid := wantOK(t, "passwordless sign-up", c.SignInWithCode(email))
			other := s.NewClient(authtest.Header)
			wantOK(t, "another passwordless sign-in", other.SignInWithCode(email))
			s.Clock.Advance(6 * time.Minute)
			acWantStale(t, "stale", acChange(c, "", acNewPass))
			wantOK(t, "sign in again", c.SignInWithCode(email))
			before := len(s.Mailbox.Messages())
			res := acChange(c, "", acNewPass)
			acWantStatus(t, "add", res, "OK")
			wantTokens(t, s, res, m, uid)
			wantSession(t, c, uid)
			acWantEnded(t, "the other session", other)
			msg := s.Mailbox.LastTo(t, email, before, 5*time.Second)
			if !strings.Contains(msg.Subject, "password was set") {
				t.Errorf("notice %q", msg.Subject)
			}
			if got := wantOK(t, "sign-in with the password", s.NewClient(m).SignIn(email, acNewPass)); got != uid {
				t.Errorf("the password signs in %s, want %s", got, uid)
			}
			// Now it has one: the change asks for it.
			acWantStatus(t, "add again", acChange(c, "", "third horse 3"), "FIELD_ERROR")
		})
	}
	t.Run("without linking", func(t *testing.T) {
		t.Parallel()
		s := acServer(t, auth.Config{Passwordless: passwordless.Config{Flow: passwordless.Code}})
		c := s.NewClient(authtest.Header)
		email := s.NewEmail()
		uid := wantOK(t, "passwordless sign-up", c.SignInWithCode(email))
		// Another user has a password for the address: the code's user
		// adds none for it.
		taken := s.NewEmail()
		wantOK(t, "a password user", s.NewClient(authtest.Header).SignUp(taken, authtest.Password))
		c2 := s.NewClient(authtest.Header)
		wantOK(t, "a passwordless user of the same address", c2.SignInWithCode(taken))
		acWantStatus(t, "add for an address with another user's password", acChange(c2, "", acNewPass), "NO_EMAIL_FOR_PASSWORD_ERROR")
		// The address the code proved: added.
		acWantStatus(t, "add", acChange(c, "", acNewPass), "OK")
		if got := wantOK(t, "sign-in with the password", s.NewClient(authtest.Header).SignIn(email, acNewPass)); got != uid {
			t.Errorf("the password signs in %s, want %s", got, uid)
		}
	})
}

// TestDeleteAccount: a user deletes their account after a fresh sign-in;
// the application's hook runs first and may refuse; every session ends,
// and the answer clears the tokens.
func TestDeleteAccount(t *testing.T) {
	t.Parallel()
	for _, m := range authtest.Modes {
		t.Run(m.String(), func(t *testing.T) {
			t.Parallel()
			events := newEventLog()
			var asked []string
			refuse := true
			s := acServer(t, auth.Config{OnEvent: events.record, BeforeDeleteUser: func(_ context.Context, uid string) error {
				asked = append(asked, uid)
				if refuse {
					return errors.New("Transfer your projects first.")
				}
				return nil
			}})
			c, u := s.SignedIn(m)
			other := mfSignIn(t, s, authtest.Cookie, u.Email)
			stranger, su := s.SignedIn(authtest.Header)
			s.Clock.Advance(6 * time.Minute)
			acWantStale(t, "stale", c.Do(http.MethodPost, "/auth/user/delete", nil))
			wantOK(t, "sign in again", c.SignIn(u.Email, authtest.Password))
			res := c.Do(http.MethodPost, "/auth/user/delete", nil)
			wantBody(t, res, `{"status":"DELETE_NOT_ALLOWED","reason":"Transfer your projects first."}`)
			wantSession(t, c, u.ID)
			refuse = false
			res = c.Do(http.MethodPost, "/auth/user/delete", nil)
			acWantStatus(t, "delete", res, "OK")
			wantCleared(t, res, m == authtest.Cookie, m != authtest.Cookie)
			if len(asked) != 2 || asked[1] != u.ID {
				t.Errorf("BeforeDeleteUser asked for %v, want %s twice", asked, u.ID)
			}
			if _, err := s.Auth.UserByID(t.Context(), u.ID); !errors.Is(err, auth.ErrNotFound) {
				t.Errorf("the user after the delete: %v", err)
			}
			acWantEnded(t, "the other session", other)
			wantSession(t, stranger, su.ID)
			if e := events.of(auth.EventUserDeleted); len(e) != 1 || e[0].UserID != u.ID || e[0].RemoteAddr == "" {
				t.Errorf("user_deleted events %+v, want one, with the request's address", e)
			}
		})
	}
	t.Run("off without the hook", func(t *testing.T) {
		t.Parallel()
		s := authtest.NewServer(t, auth.Config{})
		c, _ := s.SignedIn(authtest.Header)
		if res := c.Do(http.MethodPost, "/auth/user/delete", nil); res.StatusCode != http.StatusNotFound {
			t.Fatalf("%d %s, want 404", res.StatusCode, res.Body)
		}
	})
}

// TestAccountRoutesInput: hostile bodies to the password change are 400s
// or field errors, never a 500, and change nothing.
func TestAccountRoutesInput(t *testing.T) {
	t.Parallel()
	s := acServer(t, auth.Config{})
	c, u := s.SignedIn(authtest.Header)
	for name, body := range map[string]string{
		"no formFields":           `{}`,
		"formFields not an array": `{"formFields":{"id":"newPassword"}}`,
		"a value not a string":    `{"formFields":[{"id":"oldPassword","value":1},{"id":"newPassword","value":"x"}]}`,
		"an unknown field":        `{"formFields":[{"id":"password","value":"another horse 2"}]}`,
		"a repeated field":        `{"formFields":[{"id":"newPassword","value":"a"},{"id":"newPassword","value":"b"}]}`,
		"too many fields":         `{"formFields":[{"id":"oldPassword","value":"a"},{"id":"newPassword","value":"b"},{"id":"x","value":"c"}]}`,
		"an element not a field":  `{"formFields":["newPassword"]}`,
		"not JSON":                `newPassword=x`,
		"an array":                `[]`,
	} {
		res := send(t, s, http.MethodPost, "/auth/user/password/change", body,
			hdr("Content-Type", "application/json", "Authorization", "Bearer "+c.AccessToken, "st-auth-mode", "header"))
		if res.StatusCode != http.StatusBadRequest || res.Message == "" {
			t.Errorf("%s: %d %s, want 400 with a message", name, res.StatusCode, res.Body)
		}
	}
	huge := `{"formFields":[{"id":"newPassword","value":"` + strings.Repeat("a1", 1<<20) + `"}]}`
	res := send(t, s, http.MethodPost, "/auth/user/password/change", huge,
		hdr("Content-Type", "application/json", "Authorization", "Bearer "+c.AccessToken, "st-auth-mode", "header"))
	if res.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("2 MB body: %d, want 413", res.StatusCode)
	}
	long := strings.Repeat("a1", 600)
	if res := acChange(c, authtest.Password, long); res.Status != "FIELD_ERROR" {
		t.Errorf("a 1200-byte password: %d %s, want FIELD_ERROR", res.StatusCode, res.Body)
	}
	for _, path := range []string{"/auth/user/password/change", "/auth/user/delete"} {
		body := `{"formFields":[{"id":"oldPassword","value":"correct horse 1"},{"id":"newPassword","value":"another horse 2"}]}`
		if res := send(t, s, http.MethodPost, path, body, hdr("Content-Type", "application/json")); res.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s without a session: %d %s, want 401", path, res.StatusCode, res.Body)
		}
	}
	wantOK(t, "sign-in with the password unchanged", s.NewClient(authtest.Header).SignIn(u.Email, authtest.Password))
}
