package main

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/mail"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/latchkit/auth/mailer"
)

// outboxMail waits for an email to email whose subject starts with
// subject in GET /dev/outbox.json, and returns the newest.
func (d *testDemo) outboxMail(email, subject string) outboxMail {
	d.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := d.do("GET", "/dev/outbox.json", "", "", nil)
		var list struct{ Emails []outboxMail }
		if err := json.Unmarshal(r.body, &list); err != nil || r.status != 200 {
			d.t.Fatalf("/dev/outbox.json: %d %s", r.status, r.body)
		}
		for _, m := range list.Emails {
			if m.To == email && strings.HasPrefix(m.Subject, subject) {
				return m
			}
		}
		if time.Now().After(deadline) {
			d.t.Fatalf("no email %q to %s in /dev/outbox.json: %s", subject, email, r.body)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestOutbox checks that with -dev the emails the demo sends are listed
// at /dev/outbox and /dev/outbox.json, links and codes included, and
// still printed on standard output.
func TestOutbox(t *testing.T) {
	d := newTestDemo(t, nil, "-dev")
	if r := d.do("GET", "/dev/outbox.json", "", "", nil); r.status != 200 || string(r.body) != `{"emails":[]}`+"\n" {
		t.Errorf("empty outbox: %d %s", r.status, r.body)
	}
	page := d.do("GET", "/dev/outbox", "", "", nil)
	if page.status != 200 || !strings.Contains(string(page.body), "No email yet") {
		t.Errorf("empty outbox page: %d %s", page.status, page.body)
	}

	const ada = "ada@example.com"
	if r := d.do("POST", "/auth/user/password/reset/token", "emailpassword", "", map[string]any{
		"formFields": []map[string]string{{"id": "email", "value": ada}},
	}); r.status != 200 {
		t.Fatalf("reset request: %d %s", r.status, r.body)
	}
	// An unknown email gets no reset email; sign up, then ask again.
	okSession(t, "sign-up", d.do("POST", "/auth/signup", "emailpassword", "", credentials(ada, "correct horse 1")))
	d.do("POST", "/auth/user/password/reset/token", "emailpassword", "", map[string]any{
		"formFields": []map[string]string{{"id": "email", "value": ada}},
	})
	reset := d.outboxMail(ada, "Reset")
	if len(reset.Links) != 1 || !strings.HasPrefix(reset.Links[0], d.o.appURL+"/auth/reset-password?token=") || reset.Code != "" {
		t.Errorf("reset email in the outbox: %+v; want its link", reset)
	}
	if !strings.Contains(d.out.String(), reset.Links[0]) {
		t.Errorf("the reset link is not on standard output too:\n%s", d.out)
	}

	d.createCode(ada)
	pwl := d.outboxMail(ada, "Your sign-in ")
	printed := d.passwordlessEmail(ada, 1)
	if pwl.Code == "" || pwl.Code != printed.code || len(pwl.Links) != 1 || pwl.Links[0] != printed.link.String() {
		t.Errorf("passwordless email in the outbox: %+v; standard output says code %s, link %s", pwl, printed.code, printed.link)
	}

	// The page, newest first, with the links clickable and the code
	// shown, and the script the CSP allows by its hash.
	page = d.do("GET", "/dev/outbox", "", "", nil)
	body := string(page.body)
	first, second := strings.Index(body, "Your sign-in "), strings.Index(body, reset.Subject)
	if first < 0 || second < 0 || first > second {
		t.Errorf("outbox page: the passwordless email (at %d) should come before the reset email (at %d)", first, second)
	}
	escaped := strings.ReplaceAll(reset.Links[0], "&", "&amp;")
	if !strings.Contains(body, `<a href="`+escaped+`"`) {
		t.Errorf("outbox page has no link to %s:\n%s", reset.Links[0], body)
	}
	if !strings.Contains(body, `<output aria-label="sign-in code">`+pwl.Code+`</output>`) {
		t.Errorf("outbox page does not show the code %s:\n%s", pwl.Code, body)
	}
	script := regexp.MustCompile(`(?s)<script>(.*)</script>`).FindStringSubmatch(body)
	if script == nil {
		t.Fatalf("outbox page has no script:\n%s", body)
	}
	sum := sha256.Sum256([]byte(script[1]))
	csp := page.header.Get("Content-Security-Policy")
	if !strings.Contains(csp, "script-src 'sha256-"+base64.StdEncoding.EncodeToString(sum[:])+"'") || !strings.Contains(csp, "default-src 'none'") {
		t.Errorf("outbox CSP %q does not allow the page's script, or allows more", csp)
	}
	if page.header.Get("Referrer-Policy") != "no-referrer" {
		t.Errorf("outbox Referrer-Policy: %q", page.header.Get("Referrer-Policy"))
	}
}

// TestOutboxKeeps checks the outbox on its own: it hands every message on,
// keeps the newest, and keeps one the next mailer refused, with why.
func TestOutboxKeeps(t *testing.T) {
	var sent []string
	fail := false
	o := newOutbox(mailer.Func(func(_ context.Context, m mailer.Message) error {
		if fail {
			return errors.New("relay down")
		}
		sent = append(sent, m.Subject)
		return nil
	}))
	o.max = 3
	msg := func(i int) mailer.Message {
		return mailer.Message{
			From: mail.Address{Address: "demo@example.com"}, To: mail.Address{Address: "ada@example.com"},
			Subject: fmt.Sprint("mail ", i), Text: fmt.Sprintf("Open https://app.example.com/x?n=%d.\n\n    12345%d\n", i, i),
		}
	}
	for i := range 5 {
		if err := o.Send(t.Context(), msg(i)); err != nil {
			t.Fatal(err)
		}
	}
	fail = true
	if err := o.Send(t.Context(), msg(5)); err == nil || err.Error() != "relay down" {
		t.Errorf("Send when the next mailer fails: %v, want its error", err)
	}
	if len(sent) != 5 {
		t.Errorf("handed on %q, want the five sent before the failure", sent)
	}
	list := o.list()
	var subjects []string
	for _, m := range list {
		subjects = append(subjects, m.Subject)
	}
	if strings.Join(subjects, ",") != "mail 5,mail 4,mail 3" {
		t.Errorf("kept %q, want the newest three, newest first", subjects)
	}
	if list[0].Error != "relay down" || list[1].Error != "" || list[0].ID != 6 {
		t.Errorf("newest kept: %+v", list[0])
	}
	if list[1].Code != "123454" || len(list[1].Links) != 1 || list[1].Links[0] != "https://app.example.com/x?n=4" {
		t.Errorf("code and links of %q: %q %q; want 123454 and the link without the full stop", list[1].Subject, list[1].Code, list[1].Links)
	}
}

// TestOutboxParts checks how the page splits a body into links and text.
func TestOutboxParts(t *testing.T) {
	got := outboxParts("Open http://a.example/p?x=1&y=2. Or (https://b.example/q) now")
	want := []textPart{
		{Text: "Open "}, {Text: "http://a.example/p?x=1&y=2", Link: true}, {Text: ". Or ("},
		{Text: "https://b.example/q", Link: true}, {Text: ") now"},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("outboxParts = %v, want %v", got, want)
	}
}
