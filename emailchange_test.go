package auth_test

// Tests of changing the account's email (package emailchange) over HTTP,
// in every transfer mode: the request behind a fresh sign-in, the link to
// the new address, the notice to the old one and its undo, and the
// refusals, none of which tells whose an address is.

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/emailchange"
	"github.com/latchkit/auth/mailer"
	"github.com/latchkit/auth/provider"
	"github.com/latchkit/auth/thirdparty"
)

// ecServer is a server with the email change on, recording its events.
func ecServer(t testing.TB, cfg auth.Config) (*authtest.Server, *ecEvents) {
	t.Helper()
	cfg.EmailChange = emailchange.Config{Enabled: true}
	ev := &ecEvents{}
	cfg.OnEvent = ev.record
	return authtest.NewServer(t, cfg), ev
}

type ecEvents struct {
	mu    sync.Mutex
	kinds []auth.EventKind
}

func (e *ecEvents) record(_ context.Context, ev auth.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.kinds = append(e.kinds, ev.Kind)
}

func (e *ecEvents) count(kind auth.EventKind) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, k := range e.kinds {
		if k == kind {
			n++
		}
	}
	return n
}

// ecRequest asks to change the email of c's account to email.
func ecRequest(c *authtest.Client, email string) *authtest.Response {
	return c.Do(http.MethodPost, "/auth/user/email/change", map[string]any{"email": email})
}

// ecUse posts a link's token to path ("verify" or "undo") with c's
// session, or none if c is nil.
func ecUse(s *authtest.Server, c *authtest.Client, path, token string) *authtest.Response {
	if c == nil {
		c = s.NewClient(authtest.Header)
	}
	return c.Do(http.MethodPost, "/auth/user/email/change/"+path, map[string]string{"token": token})
}

// ecMail waits for the next message to to, past the first skip of the
// mailbox, and returns it with the token of its link to page.
func ecMail(t testing.TB, s *authtest.Server, skip int, to, page string) (mailer.Message, string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		for _, m := range s.Mailbox.Messages()[skip:] {
			if m.To.Address != to {
				continue
			}
			link, token := authtest.ResetLink(t, m)
			if u, _ := url.Parse(link); !strings.HasSuffix(u.Path, "/"+page) {
				t.Fatalf("the email to %s links to %s, want a %s page", to, link, page)
			}
			return m, token
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("no email to %s after the first %d", to, skip)
	return mailer.Message{}, ""
}

// other2 is a client signed in as a new user.
func other2(s *authtest.Server, m authtest.Mode) *authtest.Client {
	c, _ := s.SignedIn(m)
	return c
}

// ecWantNoMail checks that no message past the first skip went out, a
// moment after a request that must send none.
func ecWantNoMail(t testing.TB, s *authtest.Server, skip int, what string) {
	t.Helper()
	time.Sleep(50 * time.Millisecond)
	if got := s.Mailbox.Messages()[skip:]; len(got) > 0 {
		t.Fatalf("%s: %d emails sent, the first to %s", what, len(got), got[0].To.Address)
	}
}

// TestChangeEmail: the address moves only when the link to the new one is
// opened; the session goes on; the old address gets a notice whose link
// puts it back and ends every session.
func TestChangeEmail(t *testing.T) {
	t.Parallel()
	for _, m := range authtest.Modes {
		t.Run(m.String(), func(t *testing.T) {
			t.Parallel()
			s, ev := ecServer(t, auth.Config{})
			c, u := s.SignedIn(m)
			other := s.NewClient(m)
			wantOK(t, "sign-in elsewhere", other.SignIn(u.Email, authtest.Password))
			newEmail := "moved-" + m.String() + "@example.com"
			skip := len(s.Mailbox.Messages())

			acWantStatus(t, "request", ecRequest(c, newEmail), "OK")
			msg, token := ecMail(t, s, skip, newEmail, "change-email")
			if !strings.Contains(msg.Text, u.Email) || !strings.Contains(msg.Text, "within 1 hour") {
				t.Errorf("the link's email names neither the old address nor the hour:\n%s", msg.Text)
			}
			// Until the link is opened, nothing moves.
			wantOK(t, "the old address before the link", s.NewClient(m).SignIn(u.Email, authtest.Password))
			if res := s.NewClient(m).SignIn(newEmail, authtest.Password); res.Status != "WRONG_CREDENTIALS_ERROR" {
				t.Fatalf("the new address before the link: %d %s", res.StatusCode, res.Body)
			}

			// Only with a session of the account it changes.
			if res := ecUse(s, nil, "verify", token); res.StatusCode != http.StatusUnauthorized {
				t.Fatalf("verify without a session: %d %s, want 401", res.StatusCode, res.Body)
			}
			if res := ecUse(s, other2(s, m), "verify", token); res.Status != "EMAIL_CHANGE_INVALID_TOKEN_ERROR" {
				t.Fatalf("verify with another user's session: %d %s", res.StatusCode, res.Body)
			}
			res := ecUse(s, c, "verify", token)
			if res.Status != "OK" || res.JSON["email"] != newEmail {
				t.Fatalf("verify: %d %s", res.StatusCode, res.Body)
			}
			if id := wantOK(t, "the new address", s.NewClient(m).SignIn(newEmail, authtest.Password)); id != u.ID {
				t.Fatalf("the new address signs in to %s, want %s", id, u.ID)
			}
			if res := s.NewClient(m).SignIn(u.Email, authtest.Password); res.Status != "WRONG_CREDENTIALS_ERROR" {
				t.Fatalf("the old address after the link: %d %s", res.StatusCode, res.Body)
			}
			if got, _ := s.Auth.UserByID(t.Context(), u.ID); got.Email != newEmail || !got.LoginMethods[0].EmailVerified {
				t.Fatalf("the user after the change: %+v", got)
			}
			wantSession(t, c, u.ID)
			if res := other.Refresh(); res.Status != "OK" {
				t.Fatalf("another session after the change: %d %s", res.StatusCode, res.Body)
			}
			if res := ecUse(s, c, "verify", token); res.Status != "EMAIL_CHANGE_INVALID_TOKEN_ERROR" {
				t.Fatalf("the link again: %d %s", res.StatusCode, res.Body)
			}

			notice, undo := ecMail(t, s, skip, u.Email, "undo-email-change")
			if !strings.Contains(notice.Text, newEmail) {
				t.Errorf("the notice does not name the new address:\n%s", notice.Text)
			}
			res = ecUse(s, nil, "undo", undo)
			if res.Status != "OK" || res.JSON["email"] != u.Email {
				t.Fatalf("undo: %d %s", res.StatusCode, res.Body)
			}
			acWantEnded(t, "this session after the undo", c)
			acWantEnded(t, "the other session after the undo", other)
			if id := wantOK(t, "the old address after the undo", s.NewClient(m).SignIn(u.Email, authtest.Password)); id != u.ID {
				t.Fatalf("the old address signs in to %s, want %s", id, u.ID)
			}
			if ev.count(auth.EventEmailChanged) != 1 || ev.count(auth.EventEmailChangeUndone) != 1 {
				t.Fatalf("events: %v", ev.kinds)
			}
		})
	}
}

// TestChangeEmailFresh: a stale sign-in is refused st-fresh and sends
// nothing; signing in again lets the request through.
func TestChangeEmailFresh(t *testing.T) {
	t.Parallel()
	for _, m := range authtest.Modes {
		t.Run(m.String(), func(t *testing.T) {
			t.Parallel()
			s, _ := ecServer(t, auth.Config{})
			c, u := s.SignedIn(m)
			skip := len(s.Mailbox.Messages())
			s.Clock.Advance(6 * time.Minute)
			acWantStale(t, "stale", ecRequest(c, "late@example.com"))
			ecWantNoMail(t, s, skip, "a stale request")
			wantOK(t, "sign in again", c.SignIn(u.Email, authtest.Password))
			acWantStatus(t, "fresh again", ecRequest(c, "late@example.com"), "OK")
			ecMail(t, s, skip, "late@example.com", "change-email")
		})
	}
}

// TestChangeEmailTaken: asking for another account's address is answered
// as for a free one, and its link is refused when opened, naming nobody;
// nothing moves.
func TestChangeEmailTaken(t *testing.T) {
	t.Parallel()
	for _, linking := range []bool{false, true} {
		s, _ := ecServer(t, auth.Config{AccountLinking: linking})
		c, u := s.SignedIn(authtest.Header)
		_, taken := s.SignedIn(authtest.Header)
		skip := len(s.Mailbox.Messages())
		acWantStatus(t, "request for a taken address", ecRequest(c, taken.Email), "OK")
		_, token := ecMail(t, s, skip, taken.Email, "change-email")
		res := ecUse(s, c, "verify", token)
		if res.Status != "EMAIL_ALREADY_EXISTS_ERROR" || strings.Contains(string(res.Body), taken.ID) {
			t.Fatalf("linking %v: verify to a taken address: %d %s", linking, res.StatusCode, res.Body)
		}
		wantOK(t, "the old address still", s.NewClient(authtest.Header).SignIn(u.Email, authtest.Password))
		if id := wantOK(t, "the other account", s.NewClient(authtest.Header).SignIn(taken.Email, authtest.Password)); id != taken.ID {
			t.Fatalf("linking %v: the taken address signs in to %s", linking, id)
		}
	}
}

// TestChangeEmailRefusals: the answers to what cannot be done, none of
// which moves anything or sends mail.
func TestChangeEmailRefusals(t *testing.T) {
	t.Parallel()
	s, _ := ecServer(t, auth.Config{})
	c, u := s.SignedIn(authtest.Header)
	skip := len(s.Mailbox.Messages())
	for _, tc := range []struct {
		what  string
		email string
		want  string
	}{
		{"malformed", "not an address", `{"status":"FIELD_ERROR","formFields":[{"id":"email","error":"Email is invalid"}]}`},
		{"empty", "", `{"status":"FIELD_ERROR","formFields":[{"id":"email","error":"Field is not optional"}]}`},
		{"the same, in capitals", strings.ToUpper(u.Email), `{"status":"FIELD_ERROR","formFields":[{"id":"email","error":"This is the email address of your account already"}]}`},
	} {
		if res := ecRequest(c, tc.email); res.StatusCode != http.StatusOK || string(res.Body) != tc.want {
			t.Errorf("%s: %d %s, want %s", tc.what, res.StatusCode, res.Body, tc.want)
		}
	}
	if res := c.Do(http.MethodPost, "/auth/user/email/change", map[string]any{}); res.StatusCode != http.StatusBadRequest {
		t.Errorf("no email: %d %s, want 400", res.StatusCode, res.Body)
	}
	if res := s.NewClient(authtest.Header).Do(http.MethodPost, "/auth/user/email/change", map[string]any{"email": "x@example.com"}); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("no session: %d %s, want 401", res.StatusCode, res.Body)
	}
	ecWantNoMail(t, s, skip, "refused requests")

	acWantStatus(t, "a request", ecRequest(c, "first@example.com"), "OK")
	if res := ecRequest(c, "second@example.com"); res.Status != "GENERAL_ERROR" {
		t.Errorf("a second request at once: %d %s, want GENERAL_ERROR with the wait", res.StatusCode, res.Body)
	}
	_, token := ecMail(t, s, skip, "first@example.com", "change-email")
	s.Clock.Advance(time.Hour)
	c.Refresh()
	if res := ecUse(s, c, "verify", token); res.Status != "EMAIL_CHANGE_INVALID_TOKEN_ERROR" {
		t.Errorf("a link at its expiry: %d %s", res.StatusCode, res.Body)
	}
	for _, bad := range []string{"", "short", strings.Repeat("a", 5000)} {
		if res := ecUse(s, nil, "undo", bad); res.Status != "EMAIL_CHANGE_INVALID_TOKEN_ERROR" {
			t.Errorf("undo with %.10q: %d %s", bad, res.StatusCode, res.Body)
		}
	}
	wantOK(t, "the address, still", s.NewClient(authtest.Header).SignIn(u.Email, authtest.Password))
}

// TestChangeEmailProviderOnly: an account whose logins are all a
// provider's has no address of its own to change.
func TestChangeEmailProviderOnly(t *testing.T) {
	t.Parallel()
	p := authtest.NewProvider(t)
	p.SetIdentity("sub-1", "prov@example.com", true)
	s, _ := ecServer(t, auth.Config{AccountLinking: true, ThirdParty: thirdparty.Config{Providers: []provider.Provider{p.Provider()}}})
	c := s.NewClient(authtest.Cookie)
	if res := c.SignInWithProvider(p); res.Status != "OK" {
		t.Fatalf("provider sign-in: %d %s", res.StatusCode, res.Body)
	}
	res := ecRequest(c, "mine@example.com")
	if res.Status != "EMAIL_CHANGE_NOT_ALLOWED_ERROR" || res.JSON["reason"] == "" {
		t.Fatalf("a provider-only account: %d %s", res.StatusCode, res.Body)
	}
}
