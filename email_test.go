package auth_test

// Tests of the reset email: its default text and HTML (golden files in
// testdata; -update rewrites them) and a configured template, sender
// and page.

import (
	"flag"
	"fmt"
	"net/http"
	"net/mail"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"text/template"
	"time"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/emailpassword"
	"github.com/latchkit/auth/emailverification"
	"github.com/latchkit/auth/mailer"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestResetEmailGolden pins the default email. Run with -update to
// rewrite testdata/reset_email.*.golden after changing the templates.
func TestResetEmailGolden(t *testing.T) {
	t.Parallel()
	s := authtest.NewServer(t, auth.Config{AppURL: "https://app.example.com"})
	_, u := s.SignedIn(authtest.Header)
	tok := requestToken(t, s, u.Email, 1)
	m := s.Mailbox.Messages()[0]

	if m.From != (mail.Address{Address: "no-reply@app.example.com"}) || m.To != (mail.Address{Address: u.Email}) {
		t.Errorf("From %v To %v", m.From, m.To)
	}
	if m.Subject != "Reset your password" {
		t.Errorf("Subject %q", m.Subject)
	}
	const placeholder = "RESET_TOKEN"
	text := fmt.Sprintf("From: %s\nTo: %s\nSubject: %s\n\n%s", m.From.String(), m.To.String(), m.Subject,
		strings.ReplaceAll(m.Text, tok, placeholder))
	htmlBody := strings.ReplaceAll(m.HTML, tok, placeholder)
	if strings.Count(text, placeholder) != 1 || strings.Count(htmlBody, placeholder) != 2 {
		t.Errorf("the token is not where the templates put it:\n%s\n%s", text, htmlBody)
	}
	for _, g := range []struct{ file, got string }{
		{"reset_email.txt.golden", text},
		{"reset_email.html.golden", htmlBody},
	} {
		path := filepath.Join("testdata", g.file)
		if *update {
			if err := os.MkdirAll("testdata", 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(g.got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run go test -run TestResetEmailGolden -update to create it)", err)
		}
		if g.got != string(want) {
			t.Errorf("%s differs (run with -update if the change is intended):\ngot:\n%s\nwant:\n%s", path, g.got, want)
		}
	}
}

// TestResetEmailConfig: a custom template, reset page and sender are used.
func TestResetEmailConfig(t *testing.T) {
	t.Parallel()
	s := authtest.NewServer(t, auth.Config{
		AppURL: "https://app.example.com",
		Email:  auth.EmailConfig{From: "Example Support <support@example.com>"},
		EmailPassword: emailpassword.Config{
			ResetPasswordURL:   "https://accounts.example.com/password?lang=en",
			ResetTokenLifetime: 30 * time.Minute,
			ResetEmail: &mailer.Template{
				Subject: template.Must(template.New("s").Parse("Password help for {{.Email}}")),
				Text:    template.Must(template.New("t").Parse("Open {{.Link}} within {{.ValidFor}}.")),
			},
		},
	})
	_, u := s.SignedIn(authtest.Header)
	tok := requestToken(t, s, u.Email, 1)
	m := s.Mailbox.Messages()[0]
	want := mailer.Message{
		From:    mail.Address{Name: "Example Support", Address: "support@example.com"},
		To:      mail.Address{Address: u.Email},
		Subject: "Password help for " + u.Email,
		Text:    "Open https://accounts.example.com/password?lang=en&token=" + tok + "&tenantId=public within 30 minutes.",
	}
	if m != want {
		t.Errorf("message\n%+v\nwant\n%+v", m, want)
	}
	res := s.NewClient(authtest.Header).ResetPassword(tok, newPassword)
	wantReply(t, "reset", res.StatusCode, res.Body, http.StatusOK, okBody)
}

// The default templates are handed out as copies: changing one, even
// re-parsing its body, reaches neither the next copy nor an Auth that uses
// the default.
func TestDefaultEmailTemplatesNotShared(t *testing.T) {
	t.Parallel()
	mine := emailpassword.DefaultResetEmail()
	template.Must(mine.Text.Parse("hijacked {{.Link}}"))
	mine.Subject = template.Must(template.New("subject").Parse("hijacked"))
	v := emailverification.DefaultEmail()
	template.Must(v.Text.Parse("hijacked"))

	var fresh strings.Builder
	if err := emailpassword.DefaultResetEmail().Text.Execute(&fresh, emailpassword.ResetEmailData{Email: "a@example.com", Link: "https://x/y", ValidFor: "1 hour"}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(fresh.String(), "hijacked") {
		t.Errorf("a new copy of the default reset email carries another copy's change: %q", fresh.String())
	}

	s := authtest.NewServer(t, auth.Config{})
	email := "template@example.com"
	s.NewClient(authtest.Header).SignUp(email, authtest.Password)
	s.NewClient(authtest.Header).RequestPasswordReset(email)
	m := s.Mailbox.WaitFor(t, 1, 5*time.Second)[0]
	if m.Subject != "Reset your password" || strings.Contains(m.Text, "hijacked") {
		t.Errorf("the default reset email after a copy was changed: %q / %q", m.Subject, m.Text)
	}
}
