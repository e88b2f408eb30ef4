package auth_test

// Tests of the email checks of sign-up, sign-in, email-exists and reset
// (security review F4, F5): what a look-alike needs is refused, and one
// address has one form.

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
)

// Emails with invisible or direction-changing characters (Unicode
// category Cf), quoted local parts and address literals that the mailer
// could never send to are refused at sign-up with "Email is invalid".
func TestSignUpRefusesUnmailableEmails(t *testing.T) {
	t.Parallel()
	s := authtest.NewServer(t, auth.Config{})
	c := s.NewClient(authtest.Header)
	if res := c.SignUp("admin@example.com", authtest.Password); res.Status != "OK" {
		t.Fatalf("sign-up: %d %s", res.StatusCode, res.Body)
	}
	for _, email := range []string{
		"admin\u200b@example.com",        // zero-width space
		"admin\u200d@example.com",        // zero-width joiner
		"ad\u00admin@example.com",        // soft hyphen
		"\u202enimda@example.com",        // right-to-left override
		"admin\u2060@example.com",        // word joiner
		"admin@exam\u200cple.com",        // zero-width non-joiner in the domain part
		`"victim@gmail.com"@example.com`, // a quoted local part
		`"a b <c@evil.com>"@example.com`, // another
		`"x"@evil.com,"y"@example.com`,   // and another
		"ip1@[999.999.999.999]",          // octets net/mail refuses
	} {
		res := c.SignUp(email, authtest.Password)
		if res.Status != "FIELD_ERROR" || !fieldError(res, "email", "Email is invalid") {
			t.Errorf("sign-up with %+q: %d %s, want FIELD_ERROR Email is invalid", email, res.StatusCode, res.Body)
		}
	}
}

// One address has one form: an email in decomposed Unicode (NFD) is the
// same account as its composed form (NFC), at sign-up, sign-in and the
// email-exists endpoint.
func TestEmailUnicodeNormalised(t *testing.T) {
	t.Parallel()
	s := authtest.NewServer(t, auth.Config{})
	c := s.NewClient(authtest.Header)
	composed, decomposed := "jos\u00e9@example.com", "jose\u0301@example.com"
	if res := c.SignUp(composed, authtest.Password); res.Status != "OK" {
		t.Fatalf("sign-up: %d %s", res.StatusCode, res.Body)
	}
	if res := c.SignUp(decomposed, authtest.Password); res.Status != "FIELD_ERROR" {
		t.Errorf("sign-up with the decomposed form: %d %s, want the email taken", res.StatusCode, res.Body)
	}
	if res := s.NewClient(authtest.Header).SignIn(decomposed, authtest.Password); res.Status != "OK" {
		t.Errorf("sign-in with the decomposed form: %d %s", res.StatusCode, res.Body)
	}
	res := c.Get("/auth/emailpassword/email/exists?email=" + url.QueryEscape(decomposed))
	if res.StatusCode != http.StatusOK || res.JSON["exists"] != true {
		t.Errorf("email exists, decomposed form: %d %s", res.StatusCode, res.Body)
	}
	if u, err := s.Auth.UserByEmail(t.Context(), decomposed); err != nil || u.Email != composed {
		t.Errorf("UserByEmail(decomposed) = %+q, %v; want the composed form", u.Email, err)
	}
}

// fieldError reports whether a FIELD_ERROR answer names field with msg.
func fieldError(res *authtest.Response, field, msg string) bool {
	fields, _ := res.JSON["formFields"].([]any)
	for _, f := range fields {
		if m, _ := f.(map[string]any); m["id"] == field && m["error"] == msg {
			return true
		}
	}
	return false
}
