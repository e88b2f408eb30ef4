package auth_test

// Tests of password reset over HTTP (PROTOCOL.md sections 3 and 6,
// SECURITY.md "Password reset"): the request and submission endpoints, the
// email and its link through a real SMTP server. The outbox's failures and
// the email's templates are tested in outbox_test.go and email_test.go.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"mime"
	"mime/multipart"
	"net"
	"net/http"
	"net/http/httptest"
	"net/mail"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gosmtp "github.com/emersion/go-smtp"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/emailpassword"
	"github.com/latchkit/auth/mailer"
	"github.com/latchkit/auth/store"
	"github.com/latchkit/auth/store/memstore"
)

// The two endpoints, under the default base path.
const (
	resetRequestPath = "/auth/user/password/reset/token"
	resetSubmitPath  = "/auth/user/password/reset"
)

const invalidTokenBody = `{"status":"RESET_PASSWORD_INVALID_TOKEN_ERROR"}`

// resetReply is a response read in full.
type resetReply struct {
	code   int
	header http.Header
	body   string
}

// resetPost sends a raw body to a path of s. It is safe to call from any
// goroutine: it reports errors instead of failing the test.
func resetPost(s *authtest.Server, path string, body io.Reader) (resetReply, error) {
	req, err := http.NewRequest(http.MethodPost, s.URL+path, body)
	if err != nil {
		return resetReply{}, err
	}
	req.Header.Set("rid", "emailpassword")
	req.Header.Set("fdi-version", "3.1,4.0,4.1,4.2")
	req.Header.Set("Content-Type", "application/json")
	res, err := s.Client().Do(req)
	if err != nil {
		return resetReply{}, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return resetReply{res.StatusCode, res.Header, string(b)}, err
}

func mustResetPost(t testing.TB, s *authtest.Server, path, body string) resetReply {
	t.Helper()
	r, err := resetPost(s, path, strings.NewReader(body))
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	return r
}

// submitBody is what the SDKs send to set a new password.
func submitBody(token, password string) string {
	b, _ := json.Marshal(map[string]any{
		"method":     "token",
		"formFields": []map[string]any{{"id": "password", "value": password}},
		"token":      token,
	})
	return string(b)
}

// messageJSON and fieldErrorJSON are the 400 and FIELD_ERROR bodies.
func messageJSON(msg string) string {
	b, _ := json.Marshal(map[string]string{"message": msg})
	return string(b)
}

func fieldErrorJSON(id, msg string) string {
	type fieldError struct {
		ID    string `json:"id"`
		Error string `json:"error"`
	}
	b, _ := json.Marshal(struct {
		Status     string       `json:"status"`
		FormFields []fieldError `json:"formFields"`
	}{"FIELD_ERROR", []fieldError{{id, msg}}})
	return string(b)
}

// wantSignIn checks whether email and password sign in.
func wantSignIn(t testing.TB, s *authtest.Server, email, password string, ok bool) {
	t.Helper()
	res := s.NewClient(authtest.Header).SignIn(email, password)
	want := "WRONG_CREDENTIALS_ERROR"
	if ok {
		want = "OK"
	}
	if res.StatusCode != http.StatusOK || res.Status != want {
		t.Errorf("sign-in of %s with %q: %d %s, want %s", email, password, res.StatusCode, res.Body, want)
	}
}

// sessionHandle returns the handle of a client's session.
func sessionHandle(t testing.TB, c *authtest.Client) string {
	t.Helper()
	res := c.Get("/api/session")
	h, _ := res.JSON["sessionHandle"].(string)
	if res.StatusCode != http.StatusOK || h == "" {
		t.Fatalf("GET /api/session: %d %s", res.StatusCode, res.Body)
	}
	return h
}

// smtpSink is an SMTP server backend that keeps every message it accepts.
type smtpSink struct{ received chan smtpMessage }

type smtpMessage struct {
	from string
	to   []string
	raw  []byte
}

func (b *smtpSink) NewSession(*gosmtp.Conn) (gosmtp.Session, error) {
	return &smtpSession{sink: b}, nil
}

type smtpSession struct {
	sink *smtpSink
	msg  smtpMessage
}

func (s *smtpSession) Mail(from string, _ *gosmtp.MailOptions) error {
	s.msg.from = from
	return nil
}

func (s *smtpSession) Rcpt(to string, _ *gosmtp.RcptOptions) error {
	s.msg.to = append(s.msg.to, to)
	return nil
}

func (s *smtpSession) Data(r io.Reader) error {
	raw, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	s.msg.raw = raw
	select {
	case s.sink.received <- s.msg:
		return nil
	default:
		return errors.New("test mailbox full")
	}
}

func (s *smtpSession) Reset() { s.msg = smtpMessage{} }

func (s *smtpSession) Logout() error { return nil }

// startSMTP runs an SMTP server on loopback for the test and returns its
// address and what it receives.
func startSMTP(t *testing.T) (addr string, received chan smtpMessage) {
	t.Helper()
	sink := &smtpSink{received: make(chan smtpMessage, 16)}
	srv := gosmtp.NewServer(sink)
	srv.Domain = "localhost"
	srv.ReadTimeout = 10 * time.Second
	srv.WriteTimeout = 10 * time.Second
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String(), sink.received
}

// parsedEmail is an email as a mail client reads it.
type parsedEmail struct {
	from, to, subject string
	text, html        string
}

// parseEmail reads a raw multipart/alternative email.
func parseEmail(t *testing.T, raw []byte) parsedEmail {
	t.Helper()
	msg, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("reading the email: %v\n%s", err, raw)
	}
	var dec mime.WordDecoder
	subject, err := dec.DecodeHeader(msg.Header.Get("Subject"))
	if err != nil {
		t.Fatalf("Subject: %v", err)
	}
	e := parsedEmail{from: msg.Header.Get("From"), to: msg.Header.Get("To"), subject: subject}
	for _, h := range []string{"Date", "Message-ID"} {
		if msg.Header.Get(h) == "" {
			t.Errorf("the email has no %s header", h)
		}
	}
	typ, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil || typ != "multipart/alternative" {
		t.Fatalf("Content-Type %q (%v), want multipart/alternative", msg.Header.Get("Content-Type"), err)
	}
	parts := multipart.NewReader(msg.Body, params["boundary"])
	for {
		p, err := parts.NextPart()
		if err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("reading a part: %v", err)
		}
		body, err := io.ReadAll(p) // quoted-printable is decoded by the reader
		if err != nil {
			t.Fatalf("reading a part: %v", err)
		}
		switch ct := p.Header.Get("Content-Type"); ct {
		case "text/plain; charset=utf-8":
			e.text = string(body)
		case "text/html; charset=utf-8":
			e.html = string(body)
		default:
			t.Errorf("unexpected part %q", ct)
		}
	}
	if e.text == "" || e.html == "" {
		t.Fatalf("the email lacks a text or an HTML part:\n%s", raw)
	}
	return e
}

// TestResetOverSMTP runs the whole flow with a real SMTP server on
// loopback: the request, the email as a mail client reads it, the new
// password, the sessions it ends, and a token used twice.
func TestResetOverSMTP(t *testing.T) {
	t.Parallel()
	addr, received := startSMTP(t)
	m, err := mailer.NewSMTP("smtp://" + addr) // a plain loopback relay: no STARTTLS needed
	if err != nil {
		t.Fatal(err)
	}
	events, logs := newEventLog(), &logCapture{}
	s := authtest.NewServer(t, auth.Config{Email: auth.EmailConfig{Mailer: m}, OnEvent: events.record, Logger: logs.logger()})

	s1, u := s.SignedIn(authtest.Cookie)
	s2 := s.NewClient(authtest.Header)
	if res := s2.SignIn(u.Email, authtest.Password); res.Status != "OK" {
		t.Fatalf("second sign-in: %d %s", res.StatusCode, res.Body)
	}
	h1, h2 := sessionHandle(t, s1), sessionHandle(t, s2)
	// Both sessions are live before the reset.
	for _, c := range []*authtest.Client{s1, s2} {
		if res := c.Refresh(); res.StatusCode != http.StatusOK || res.Status != "OK" {
			t.Fatalf("%v refresh before the reset: %d %s", c.Mode, res.StatusCode, res.Body)
		}
	}

	anon := s.NewClient(authtest.Cookie)
	res := anon.RequestPasswordReset(u.Email)
	wantReply(t, "reset request", res.StatusCode, res.Body, http.StatusOK, okBody)

	var got smtpMessage
	select {
	case got = <-received:
	case <-time.After(10 * time.Second):
		t.Fatal("no email reached the SMTP server")
	}
	wantFrom := "no-reply@" + strings.Split(strings.TrimPrefix(s.AuthConfig.AppURL, "https://"), ":")[0]
	if got.from != wantFrom || !slices.Equal(got.to, []string{u.Email}) {
		t.Errorf("SMTP envelope from %q to %q, want %q to %q", got.from, got.to, wantFrom, u.Email)
	}
	email := parseEmail(t, got.raw)
	if email.subject != "Reset your password" {
		t.Errorf("Subject %q", email.subject)
	}
	if email.to != "<"+u.Email+">" || email.from != "<"+wantFrom+">" {
		t.Errorf("From %q To %q", email.from, email.to)
	}

	link, tok := authtest.ResetLink(t, mailer.Message{Text: email.text})
	wantLink := s.AuthConfig.AppURL + "/auth/reset-password?token=" + tok + "&tenantId=public"
	if link != wantLink {
		t.Errorf("link %s\nwant %s", link, wantLink)
	}
	if !urlSafe.MatchString(tok) || len(tok) < 22 {
		t.Errorf("token %q is not a URL-safe string of at least 128 bits", tok)
	}
	if !strings.Contains(email.html, `href="`+html.EscapeString(link)+`"`) {
		t.Errorf("the HTML part does not link to %s:\n%s", link, email.html)
	}
	if sent := events.waitFor(t, auth.EventResetEmailSent, 1, 5*time.Second); sent[0].UserID != u.ID {
		t.Errorf("EventResetEmailSent for %q, want %q", sent[0].UserID, u.ID)
	}

	res = s.NewClient(authtest.Cookie).ResetPassword(tok, newPassword)
	wantReply(t, "reset", res.StatusCode, res.Body, http.StatusOK, okBody)
	wantNoTokens(t, res)

	wantSignIn(t, s, u.Email, authtest.Password, false)
	wantSignIn(t, s, u.Email, newPassword, true)

	// Every session of the user has ended.
	for _, c := range []*authtest.Client{s1, s2} {
		if _, refresh := c.Tokens(); refresh == "" {
			t.Fatalf("%v client lost its refresh token", c.Mode)
		}
		res := c.Refresh()
		wantReply(t, c.Mode.String()+" refresh after the reset", res.StatusCode, res.Body,
			http.StatusUnauthorized, `{"message":"unauthorised","reason":"password_reset"}`)
	}

	// The reports: one reset, one revocation per session.
	reset := events.of(auth.EventPasswordReset)
	if len(reset) != 1 || reset[0].UserID != u.ID || reset[0].RemoteAddr == "" {
		t.Errorf("EventPasswordReset: %+v", reset)
	}
	var revoked []string
	for _, e := range events.of(auth.EventSessionRevoked) {
		if e.UserID != u.ID {
			t.Errorf("EventSessionRevoked for user %q, want %q", e.UserID, u.ID)
		}
		revoked = append(revoked, e.SessionHandle)
	}
	slices.Sort(revoked)
	want := []string{h1, h2}
	slices.Sort(want)
	if !slices.Equal(revoked, want) {
		t.Errorf("revoked sessions %q, want %q", revoked, want)
	}

	// The token works once.
	res = anon.ResetPassword(tok, "yet another secret 8")
	wantReply(t, "second use of the token", res.StatusCode, res.Body, http.StatusOK, invalidTokenBody)
	wantSignIn(t, s, u.Email, newPassword, true)

	// An unknown email gets the same answer and no email.
	known := anon.RequestPasswordReset(u.Email)
	unknown := anon.RequestPasswordReset("nobody@example.com")
	sameBytes(t, "known and unknown email", known, unknown)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := s.Auth.Close(ctx); err != nil { // waits for the queue to drain
		t.Fatalf("Close: %v", err)
	}
	var second string
	select {
	case got := <-received:
		if !slices.Equal(got.to, []string{u.Email}) {
			t.Errorf("second email to %q, want %s", got.to, u.Email)
		}
		_, second = authtest.ResetLink(t, mailer.Message{Text: parseEmail(t, got.raw).text})
	default:
		t.Fatal("the second request for a known email sent nothing")
	}
	if len(received) != 0 {
		t.Errorf("%d more emails reached the SMTP server; the unknown email got one", len(received))
	}
	if n := len(events.of(auth.EventMailFailed)); n != 0 {
		t.Errorf("%d EventMailFailed", n)
	}
	logs.wantNoSecrets(t, tok, second, authtest.Password, newPassword, "yet another secret 8")
}

// TestResetTokenExpiry travels in time: a token works until its lifetime
// is over, and not at its end.
func TestResetTokenExpiry(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		lifetime time.Duration // 0: the default
		want     time.Duration
		words    string
	}{
		{0, time.Hour, "1 hour"},
		{10 * time.Minute, 10 * time.Minute, "10 minutes"},
	} {
		t.Run(tc.words, func(t *testing.T) {
			t.Parallel()
			s := authtest.NewServer(t, auth.Config{EmailPassword: emailpassword.Config{ResetTokenLifetime: tc.lifetime}})
			_, u := s.SignedIn(authtest.Header)

			tok := requestToken(t, s, u.Email, 1)
			if m := s.Mailbox.Messages()[0]; !strings.Contains(m.Text, "within "+tc.words+":") {
				t.Errorf("the email does not say the link works for %s:\n%s", tc.words, m.Text)
			}
			s.Clock.Advance(tc.want - time.Second)
			res := s.NewClient(authtest.Header).ResetPassword(tok, newPassword)
			wantReply(t, "reset a second before expiry", res.StatusCode, res.Body, http.StatusOK, okBody)

			tok = requestToken(t, s, u.Email, 2)
			s.Clock.Advance(tc.want)
			res = s.NewClient(authtest.Header).ResetPassword(tok, "too late secret 9")
			wantReply(t, "reset at expiry", res.StatusCode, res.Body, http.StatusOK, invalidTokenBody)
			wantSignIn(t, s, u.Email, newPassword, true)
			wantSignIn(t, s, u.Email, "too late secret 9", false)
		})
	}
}

// TestResetEndsEveryTokenOfTheUser: using one token of a user voids the
// others.
func TestResetEndsEveryTokenOfTheUser(t *testing.T) {
	t.Parallel()
	s := authtest.NewServer(t, auth.Config{})
	_, u := s.SignedIn(authtest.Header)
	first := requestToken(t, s, u.Email, 1)
	second := requestToken(t, s, u.Email, 2)
	if first == second {
		t.Fatal("two requests got the same token")
	}
	res := s.NewClient(authtest.Header).ResetPassword(second, newPassword)
	wantReply(t, "reset with the second token", res.StatusCode, res.Body, http.StatusOK, okBody)
	res = s.NewClient(authtest.Header).ResetPassword(first, "other secret 10")
	wantReply(t, "reset with the first token", res.StatusCode, res.Body, http.StatusOK, invalidTokenBody)
	wantSignIn(t, s, u.Email, newPassword, true)
}

// TestResetWithoutPasswordLogin: a user without a password (signed up
// through a third-party provider) gets the usual answer and no email.
func TestResetWithoutPasswordLogin(t *testing.T) {
	t.Parallel()
	st := memstore.New()
	events := newEventLog()
	s := authtest.NewServer(t, auth.Config{Store: st, OnEvent: events.record})
	social := socialUser("social-user", "social@example.com").addTo(t, st)
	_, u := s.SignedIn(authtest.Header) // one with a password, for contrast

	c := s.NewClient(authtest.Header)
	res := c.RequestPasswordReset(social.Email)
	wantReply(t, "reset request without a password login", res.StatusCode, res.Body, http.StatusOK, okBody)
	sameBytes(t, "no password login and unknown email", res, c.RequestPasswordReset("nobody@example.com"))
	res = c.RequestPasswordReset(u.Email)
	wantReply(t, "reset request with a password", res.StatusCode, res.Body, http.StatusOK, okBody)

	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if err := s.Auth.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	msgs := s.Mailbox.Messages()
	if len(msgs) != 1 || msgs[0].To.Address != u.Email {
		t.Errorf("messages %+v, want one to %s", msgs, u.Email)
	}
	for _, e := range events.of(auth.EventResetEmailSent) {
		if e.UserID == social.User.ID {
			t.Errorf("EventResetEmailSent for the user without a password")
		}
	}
	if n := len(events.of(auth.EventMailFailed)); n != 0 {
		t.Errorf("%d EventMailFailed", n)
	}
}

// TestResetRace submits one token 20 times at once: one submission wins,
// and its password is the one that works.
func TestResetRace(t *testing.T) {
	t.Parallel()
	// The check afterwards tries all 20 passwords: room for 19 failures.
	s := authtest.NewServer(t, auth.Config{RateLimits: auth.RateLimits{SignInFailures: auth.Rate{Burst: 50, Every: time.Second}}})
	_, u := s.SignedIn(authtest.Header)
	tok := requestToken(t, s, u.Email, 1)

	const n = 20
	passwords := make([]string, n)
	replies := make([]resetReply, n)
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		passwords[i] = fmt.Sprintf("racing secret %02d", i)
		body := submitBody(tok, passwords[i])
		wg.Go(func() {
			<-start
			replies[i], errs[i] = resetPost(s, resetSubmitPath, strings.NewReader(body))
		})
	}
	close(start)
	wg.Wait()

	winner, invalid := -1, 0
	for i, r := range replies {
		switch {
		case errs[i] != nil:
			t.Errorf("submission %d: %v", i, errs[i])
		case r.code != http.StatusOK:
			t.Errorf("submission %d: %d %s", i, r.code, r.body)
		case r.body == okBody:
			if winner >= 0 {
				t.Errorf("submissions %d and %d both succeeded", winner, i)
			}
			winner = i
		case r.body == invalidTokenBody:
			invalid++
		default:
			t.Errorf("submission %d: %s", i, r.body)
		}
	}
	if winner < 0 || invalid != n-1 {
		t.Fatalf("%d winners and %d invalid-token answers, want 1 and %d", min(winner+1, 1), invalid, n-1)
	}
	for i, pw := range passwords {
		wantSignIn(t, s, u.Email, pw, i == winner)
	}
	wantSignIn(t, s, u.Email, authtest.Password, false)
}

// TestResetMalformed: the validation of both endpoints, in the order and
// with the messages of the SuperTokens backends.
func TestResetMalformed(t *testing.T) {
	t.Parallel()
	s := authtest.NewServer(t, auth.Config{})
	field := func(id, v string) string { return `{"id":"` + id + `","value":` + v + `}` }
	form := func(fields ...string) string { return `"formFields":[` + strings.Join(fields, ",") + `]` }
	good := form(field("password", `"`+newPassword+`"`))
	wellFormed := strings.Repeat("A", 43) // the shape of a token, but no token
	huge := `{"formFields":[{"id":"email","value":"` + strings.Repeat("a", 20<<10) + `@example.com"}]}`

	for _, tc := range []struct {
		name, path, body string
		code             int
		want             string
	}{
		// Submitting a new password.
		{"no token", resetSubmitPath, `{` + good + `}`, 400, messageJSON("Please provide the password reset token")},
		{"null token", resetSubmitPath, `{` + good + `,"token":null}`, 400, messageJSON("Please provide the password reset token")},
		{"number token", resetSubmitPath, `{` + good + `,"token":123}`, 400, messageJSON("The password reset token must be a string")},
		{"object token", resetSubmitPath, `{` + good + `,"token":{"a":"b"}}`, 400, messageJSON("The password reset token must be a string")},
		{"array token", resetSubmitPath, `{` + good + `,"token":["x"]}`, 400, messageJSON("The password reset token must be a string")},
		{"empty token", resetSubmitPath, `{` + good + `,"token":""}`, 200, invalidTokenBody},
		{"garbage token", resetSubmitPath, `{` + good + `,"token":"garbage"}`, 200, invalidTokenBody},
		{"token with a space", resetSubmitPath, `{` + good + `,"token":"` + wellFormed[1:] + ` "}`, 200, invalidTokenBody},
		{"unknown token", resetSubmitPath, `{` + good + `,"token":"` + wellFormed + `"}`, 200, invalidTokenBody},
		{"unknown top-level keys", resetSubmitPath, `{"method":"token","shouldTryLinkingWithSessionUser":false,` + good + `,"token":"` + wellFormed + `"}`, 200, invalidTokenBody},
		{"short password before a missing token", resetSubmitPath, `{` + form(field("password", `"abc1"`)) + `}`, 200,
			fieldErrorJSON("password", "Password must contain at least 8 characters, including a number")},
		{"long password before a bad token", resetSubmitPath, `{` + form(field("password", `"a1`+strings.Repeat("x", 98)+`"`)) + `,"token":1}`, 200,
			fieldErrorJSON("password", "Password's length must be lesser than 100 characters")},
		{"password without a letter", resetSubmitPath, `{` + form(field("password", `"1234567890"`)) + `,"token":"` + wellFormed + `"}`, 200,
			fieldErrorJSON("password", "Password must contain at least one alphabet")},
		{"password without a number", resetSubmitPath, `{` + form(field("password", `"abcdefghij"`)) + `,"token":""}`, 200,
			fieldErrorJSON("password", "Password must contain at least one number")},
		{"empty password", resetSubmitPath, `{` + form(field("password", `""`)) + `,"token":"x"}`, 200, fieldErrorJSON("password", "Field is not optional")},
		{"null password", resetSubmitPath, `{` + form(field("password", `null`)) + `,"token":"x"}`, 200, fieldErrorJSON("password", "Field is not optional")},
		{"no password", resetSubmitPath, `{` + form() + `,"token":"x"}`, 200, fieldErrorJSON("password", "Field is not optional")},
		{"number password", resetSubmitPath, `{` + form(field("password", `12345678`)) + `,"token":"x"}`, 400, messageJSON("password value must be a string")},
		{"no formFields", resetSubmitPath, `{"token":"x"}`, 400, messageJSON("Missing input param: formFields")},
		{"formFields not an array", resetSubmitPath, `{"formFields":{},"token":"x"}`, 400, messageJSON("formFields must be an array")},
		{"element not an object", resetSubmitPath, `{"formFields":["password"],"token":"x"}`, 400, messageJSON("All elements of formFields must be an object")},
		{"element without value", resetSubmitPath, `{"formFields":[{"id":"password"}],"token":"x"}`, 400,
			messageJSON("All elements of formFields must contain an 'id' and 'value' field")},
		{"too many fields", resetSubmitPath, `{` + form(field("password", `"`+newPassword+`"`), field("email", `"a@example.com"`)) + `,"token":"x"}`, 400,
			messageJSON("Are you sending too many formFields?")},
		{"unknown field", resetSubmitPath, `{` + form(field("email", `"a@example.com"`)) + `,"token":"x"}`, 400,
			messageJSON("formFields contains an unknown field id")},
		{"not JSON", resetSubmitPath, `token=x`, 400, messageJSON("the request body must be a JSON object")},
		{"trailing data", resetSubmitPath, `{` + good + `,"token":"x"} {}`, 400, messageJSON("unexpected data after the JSON object")},
		{"oversized", resetSubmitPath, huge, 413, messageJSON("request body too large")},

		// Requesting an email.
		{"no email", resetRequestPath, `{` + form() + `}`, 200, fieldErrorJSON("email", "Field is not optional")},
		{"null email", resetRequestPath, `{` + form(field("email", `null`)) + `}`, 200, fieldErrorJSON("email", "Field is not optional")},
		{"blank email", resetRequestPath, `{` + form(field("email", `"  "`)) + `}`, 200, fieldErrorJSON("email", "Field is not optional")},
		{"malformed email", resetRequestPath, `{` + form(field("email", `"not an email"`)) + `}`, 200, fieldErrorJSON("email", "Email is invalid")},
		{"email without domain", resetRequestPath, `{` + form(field("email", `"ada@"`)) + `}`, 200, fieldErrorJSON("email", "Email is invalid")},
		{"number email", resetRequestPath, `{` + form(field("email", `42`)) + `}`, 400, messageJSON("email value must be a string")},
		{"password on request", resetRequestPath, `{` + form(field("email", `"a@example.com"`), field("password", `"x"`)) + `}`, 400,
			messageJSON("Are you sending too many formFields?")},
		{"no formFields on request", resetRequestPath, `{}`, 400, messageJSON("Missing input param: formFields")},
		{"unknown top-level keys on request", resetRequestPath, `{"shouldTryLinkingWithSessionUser":false,"extra":[1,2],` + form(field("email", `"a@example.com"`)) + `}`, 200, okBody},
		{"trailing data on request", resetRequestPath, `{` + form(field("email", `"a@example.com"`)) + `}x`, 400, messageJSON("unexpected data after the JSON object")},
		{"oversized request", resetRequestPath, huge, 413, messageJSON("request body too large")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := mustResetPost(t, s, tc.path, tc.body)
			wantReply(t, tc.path, r.code, []byte(r.body), tc.code, tc.want)
			if r.code >= 500 {
				t.Errorf("a server error")
			}
		})
	}

	// A body without a length is cut off at the limit as well.
	r, err := resetPost(s, resetSubmitPath, struct{ io.Reader }{strings.NewReader(huge)})
	if err != nil {
		t.Fatal(err)
	}
	wantReply(t, "oversized chunked body", r.code, []byte(r.body), 413, messageJSON("request body too large"))
	if n := len(s.Mailbox.Messages()); n != 0 {
		t.Errorf("%d messages for unknown emails", n)
	}
}

// TestResetEmailNormalised: the request finds the account whatever the
// case of the email and the spaces around it.
func TestResetEmailNormalised(t *testing.T) {
	t.Parallel()
	s := authtest.NewServer(t, auth.Config{})
	_, u := s.SignedIn(authtest.Header)
	res := s.NewClient(authtest.Header).RequestPasswordReset("  " + strings.ToUpper(u.Email) + "\t")
	wantReply(t, "reset request", res.StatusCode, res.Body, http.StatusOK, okBody)
	m, tok := mailToken(t, s, 1)
	if m.To.Address != u.Email {
		t.Errorf("message to %q, want %q", m.To.Address, u.Email)
	}
	res = s.NewClient(authtest.Header).ResetPassword(tok, newPassword)
	wantReply(t, "reset", res.StatusCode, res.Body, http.StatusOK, okBody)
	wantSignIn(t, s, u.Email, newPassword, true)
}

// TestResetWithoutMailer: without a Mailer there is no password reset.
func TestResetWithoutMailer(t *testing.T) {
	t.Parallel()
	a, err := auth.New(auth.Config{
		Store: memstore.New(),
		EmailPassword: emailpassword.Config{
			Hashing:             emailpassword.Hashing{Memory: 64, Iterations: 1, Parallelism: 1},
			InsecureWeakHashing: true,
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(a)
	defer srv.Close()
	for _, tc := range []struct{ path, body string }{
		{resetRequestPath, `{"formFields":[{"id":"email","value":"ada@example.com"}]}`},
		{"/auth/public/user/password/reset/token", `{"formFields":[{"id":"email","value":"ada@example.com"}]}`},
		{resetSubmitPath, submitBody(strings.Repeat("A", 43), newPassword)},
		{"/auth/public/user/password/reset", submitBody(strings.Repeat("A", 43), newPassword)},
	} {
		res, err := http.Post(srv.URL+tc.path, "application/json", strings.NewReader(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		wantReply(t, tc.path, res.StatusCode, body, http.StatusNotFound, `{"message":"not found"}`)
	}
}

// heldSessions is a Store whose CreateSession, once armed, reports each
// call and waits for release before it goes on: sign-ins held between
// their password check and their session.
type heldSessions struct {
	store.Store
	armed   atomic.Bool
	reached chan struct{}
	release chan struct{}
}

func (s *heldSessions) CreateSession(ctx context.Context, sess store.Session, refresh store.TokenHash, epoch int64) error {
	if s.armed.Load() {
		s.reached <- struct{}{}
		<-s.release
	}
	return s.Store.CreateSession(ctx, sess, refresh, epoch)
}

// TestResetEndsSignInsInFlight: sign-ins that checked the old password
// before a reset and would start their sessions after it start none, so
// an attacker who knows the old password keeps nothing through the reset.
// The same for RevokeAllSessions.
func TestResetEndsSignInsInFlight(t *testing.T) {
	t.Parallel()
	for _, end := range []string{"reset", "RevokeAllSessions"} {
		t.Run(end, func(t *testing.T) {
			t.Parallel()
			const n = 12
			st := &heldSessions{Store: memstore.New(), reached: make(chan struct{}), release: make(chan struct{})}
			s := authtest.NewServer(t, auth.Config{Store: st,
				RateLimits: auth.RateLimits{SignInFailures: auth.Rate{Burst: 50, Every: time.Second}}})
			_, u := s.SignedIn(authtest.Header)
			st.armed.Store(true)

			replies := make([]*authtest.Response, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() { replies[i] = s.NewClient(authtest.Header).SignIn(u.Email, authtest.Password) })
			}
			for range n {
				<-st.reached // every sign-in has checked the old password
			}
			st.armed.Store(false)
			if end == "reset" {
				tok := requestToken(t, s, u.Email, 1)
				res := s.NewClient(authtest.Header).ResetPassword(tok, newPassword)
				wantReply(t, "reset", res.StatusCode, res.Body, http.StatusOK, okBody)
			} else if _, err := s.Auth.RevokeAllSessions(t.Context(), u.ID); err != nil {
				t.Fatalf("RevokeAllSessions: %v", err)
			}
			close(st.release)
			wg.Wait()

			alive := 0
			for i, res := range replies {
				wantReply(t, fmt.Sprintf("sign-in %d, held across the %s", i, end), res.StatusCode, res.Body, http.StatusOK,
					`{"status":"GENERAL_ERROR","message":"Your sessions were ended while you were signing in. Please sign in again."}`)
				if res.IssuedTokens() {
					t.Errorf("sign-in %d, held across the %s, issued tokens", i, end)
				}
				if refresh := res.Header.Get("St-Refresh-Token"); refresh != "" {
					c := s.NewClient(authtest.Header)
					c.SetTokens("", refresh)
					if c.Refresh().StatusCode == http.StatusOK {
						alive++
					}
				}
			}
			if alive != 0 {
				t.Errorf("%d of %d sessions signed in with the old credential are alive after the %s", alive, n, end)
			}
			sessions, err := st.UserSessions(t.Context(), u.ID, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if len(sessions) != 0 {
				t.Errorf("%d sessions in the store after the %s, want 0", len(sessions), end)
			}
			if end == "RevokeAllSessions" {
				wantSignIn(t, s, u.Email, authtest.Password, true) // the password is still good
			}
		})
	}
}
