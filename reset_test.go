package auth_test

// Tests of password reset over HTTP (PROTOCOL.md sections 3 and 6,
// SECURITY.md "Password reset"): the request and submission endpoints, the
// email and its link, delivery off the request path through a real SMTP
// server and through failing, slow and hanging Mailers, and Close.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"html"
	"io"
	"log/slog"
	"mime"
	"mime/multipart"
	"net"
	"net/http"
	"net/http/httptest"
	"net/mail"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"text/template"
	"time"

	gosmtp "github.com/emersion/go-smtp"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/mailer"
	"github.com/latchkit/auth/store"
	"github.com/latchkit/auth/store/memstore"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// The two endpoints, under the default base path.
const (
	resetRequestPath = "/auth/user/password/reset/token"
	resetSubmitPath  = "/auth/user/password/reset"
)

// newPassword is a password that passes the default policy.
const newPassword = "brand new secret 7"

// okBody is the whole body of every OK answer of the reset endpoints.
const okBody = `{"status":"OK"}`

const invalidTokenBody = `{"status":"RESET_PASSWORD_INVALID_TOKEN_ERROR"}`

// urlSafe is the alphabet a reset token may use in a link that
// URLSearchParams reads back unchanged.
var urlSafe = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

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

// wantReply checks the status code and the exact body of a response.
func wantReply(t testing.TB, what string, code int, body []byte, wantCode int, wantBody string) {
	t.Helper()
	if code != wantCode || string(body) != wantBody {
		t.Errorf("%s: %d %s, want %d %s", what, code, body, wantCode, wantBody)
	}
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

// sameBytes checks that two answers are indistinguishable: status, body and
// every header but Date.
func sameBytes(t testing.TB, what string, a, b *authtest.Response) {
	t.Helper()
	ha, hb := a.Header.Clone(), b.Header.Clone()
	ha.Del("Date")
	hb.Del("Date")
	if a.StatusCode != b.StatusCode || !bytes.Equal(a.Body, b.Body) || !reflect.DeepEqual(ha, hb) {
		t.Errorf("%s: answers differ:\n%d %v %s\n%d %v %s", what, a.StatusCode, ha, a.Body, b.StatusCode, hb, b.Body)
	}
}

// resetEvents records what Config.OnEvent reports, and lets a test wait
// for reports made off the request path.
type resetEvents struct {
	mu      sync.Mutex
	events  []auth.Event
	changed chan struct{} // closed and replaced on every event
}

func newResetEvents() *resetEvents { return &resetEvents{changed: make(chan struct{})} }

func (r *resetEvents) record(_ context.Context, e auth.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
	close(r.changed)
	r.changed = make(chan struct{})
}

// of returns the events of a kind so far.
func (r *resetEvents) of(kind auth.EventKind) []auth.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []auth.Event
	for _, e := range r.events {
		if e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}

// waitFor waits until n events of a kind have been reported and returns
// them.
func (r *resetEvents) waitFor(t testing.TB, kind auth.EventKind, n int, timeout time.Duration) []auth.Event {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		r.mu.Lock()
		changed := r.changed
		r.mu.Unlock()
		if got := r.of(kind); len(got) >= n {
			return got
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("%d %s events after %v, want %d", len(r.of(kind)), kind, timeout, n)
		}
	}
}

// resetLog is a Config.Logger writing JSON records to a buffer.
type resetLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *resetLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *resetLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func (l *resetLog) logger() *slog.Logger {
	return slog.New(slog.NewJSONHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// records returns the records with a message.
func (l *resetLog) records(t testing.TB, msg string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for line := range strings.Lines(l.String()) {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if rec["msg"] == msg {
			out = append(out, rec)
		}
	}
	return out
}

// wantNoSecrets checks that no log record holds any of the secrets.
func (l *resetLog) wantNoSecrets(t testing.TB, secrets ...string) {
	t.Helper()
	text := l.String()
	for _, s := range secrets {
		if s != "" && strings.Contains(text, s) {
			t.Errorf("the log holds the secret %q:\n%s", s, text)
		}
	}
}

// tokenIn extracts the reset token of a message without failing, for use
// inside a Mailer.
var tokenIn = regexp.MustCompile(`[?&]token=([A-Za-z0-9_%-]+)`)

func tokenOf(m mailer.Message) string {
	if sub := tokenIn.FindStringSubmatch(m.Text); sub != nil {
		tok, _ := url.QueryUnescape(sub[1])
		return tok
	}
	return ""
}

// mailToken waits for the nth message of the server's Mailbox and returns
// it with its token.
func mailToken(t testing.TB, s *authtest.Server, n int) (mailer.Message, string) {
	t.Helper()
	msgs := s.Mailbox.WaitFor(t, n, 5*time.Second)
	m := msgs[n-1]
	_, tok := authtest.ResetLink(t, m)
	return m, tok
}

// requestToken asks for a reset email for email and returns the token it
// carries, the nth message of the Mailbox.
func requestToken(t testing.TB, s *authtest.Server, email string, n int) string {
	t.Helper()
	res := s.NewClient(authtest.Header).RequestPasswordReset(email)
	wantReply(t, "reset request", res.StatusCode, res.Body, http.StatusOK, okBody)
	m, tok := mailToken(t, s, n)
	if m.To.Address != email {
		t.Fatalf("message %d went to %s, want %s", n, m.To.Address, email)
	}
	return tok
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

func (s *smtpSession) Reset()        { s.msg = smtpMessage{} }
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
	m, err := mailer.NewSMTP("smtp://" + addr + "?starttls=optional")
	if err != nil {
		t.Fatal(err)
	}
	events, logs := newResetEvents(), &resetLog{}
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
			http.StatusUnauthorized, `{"message":"unauthorised"}`)
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
			s := authtest.NewServer(t, auth.Config{Email: auth.EmailConfig{ResetTokenLifetime: tc.lifetime}})
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
	events := newResetEvents()
	s := authtest.NewServer(t, auth.Config{Store: st, OnEvent: events.record})
	social := store.User{ID: "social-user", Email: "social@example.com", TimeJoined: authtest.Start}
	if err := st.CreateUser(t.Context(), social); err != nil {
		t.Fatal(err)
	}
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
		if e.UserID == social.ID {
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

// TestResetMailerFailures: whatever the Mailer does, the request is
// answered at once with the usual bytes; failures are logged without
// secrets and reported with the user's id.
func TestResetMailerFailures(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		send      func(ctx context.Context) error
		cfg       auth.Config
		wantCalls int
		wantErr   string // in the logged error; "" when the email is sent
	}{{
		name:      "failing",
		send:      func(context.Context) error { return errors.New("550 mailbox unavailable") },
		cfg:       auth.Config{Email: auth.EmailConfig{Attempts: 2}},
		wantCalls: 2,
		wantErr:   "550 mailbox unavailable",
	}, {
		name: "invalid message is not retried",
		send: func(context.Context) error {
			return fmt.Errorf("%w: refused by the provider", mailer.ErrInvalidMessage)
		},
		wantCalls: 1,
		wantErr:   "refused by the provider",
	}, {
		name: "hanging",
		send: func(ctx context.Context) error {
			<-ctx.Done()
			return ctx.Err()
		},
		cfg:       auth.Config{Email: auth.EmailConfig{Timeout: 200 * time.Millisecond, Attempts: 2}},
		wantCalls: 2,
		wantErr:   "context deadline exceeded",
	}, {
		name: "slow",
		send: func(ctx context.Context) error {
			select {
			case <-time.After(2 * time.Second):
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		},
		wantCalls: 1,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var calls atomic.Int32
			var mu sync.Mutex
			var tokens []string
			events, logs := newResetEvents(), &resetLog{}
			cfg := tc.cfg
			cfg.OnEvent, cfg.Logger = events.record, logs.logger()
			cfg.Email.Mailer = mailer.Func(func(ctx context.Context, m mailer.Message) error {
				calls.Add(1)
				mu.Lock()
				tokens = append(tokens, tokenOf(m))
				mu.Unlock()
				return tc.send(ctx)
			})
			s := authtest.NewServer(t, cfg)
			_, u := s.SignedIn(authtest.Header)
			c := s.NewClient(authtest.Header)

			begin := time.Now()
			known := c.RequestPasswordReset(u.Email)
			if d := time.Since(begin); d > 500*time.Millisecond {
				t.Errorf("the request took %v: it waited for the Mailer", d)
			}
			wantReply(t, "reset request", known.StatusCode, known.Body, http.StatusOK, okBody)
			sameBytes(t, "known and unknown email", known, c.RequestPasswordReset("nobody@example.com"))

			if tc.wantErr == "" {
				if sent := events.waitFor(t, auth.EventResetEmailSent, 1, 10*time.Second); sent[0].UserID != u.ID {
					t.Errorf("EventResetEmailSent for %q, want %q", sent[0].UserID, u.ID)
				}
				if n := len(events.of(auth.EventMailFailed)); n != 0 {
					t.Errorf("%d EventMailFailed", n)
				}
			} else {
				failed := events.waitFor(t, auth.EventMailFailed, 1, 10*time.Second)
				if len(failed) != 1 || failed[0].UserID != u.ID {
					t.Errorf("EventMailFailed %+v, want one for %q", failed, u.ID)
				}
				recs := logs.records(t, "auth: reset email not sent")
				if len(recs) != 1 || recs[0]["user_id"] != u.ID || recs[0]["level"] != "ERROR" ||
					!strings.Contains(fmt.Sprint(recs[0]["error"]), tc.wantErr) {
					t.Errorf("log records %v, want one error for %s with %q", recs, u.ID, tc.wantErr)
				}
				if n := len(events.of(auth.EventResetEmailSent)); n != 0 {
					t.Errorf("%d EventResetEmailSent", n)
				}
			}
			if n := int(calls.Load()); n != tc.wantCalls {
				t.Errorf("the Mailer was called %d times, want %d", n, tc.wantCalls)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(tokens) == 0 || tokens[0] == "" {
				t.Fatal("the Mailer got no message with a token")
			}
			logs.wantNoSecrets(t, append(tokens, authtest.Password)...)
		})
	}
}

// TestResetMailerRetry: a Mailer that fails once delivers at the second
// attempt.
func TestResetMailerRetry(t *testing.T) {
	t.Parallel()
	box := authtest.NewMailbox()
	var calls atomic.Int32
	events, logs := newResetEvents(), &resetLog{}
	s := authtest.NewServer(t, auth.Config{
		OnEvent: events.record,
		Logger:  logs.logger(),
		Email: auth.EmailConfig{Mailer: mailer.Func(func(ctx context.Context, m mailer.Message) error {
			if calls.Add(1) == 1 {
				return errors.New("421 try again later")
			}
			return box.Send(ctx, m)
		})},
	})
	_, u := s.SignedIn(authtest.Header)
	res := s.NewClient(authtest.Header).RequestPasswordReset(u.Email)
	wantReply(t, "reset request", res.StatusCode, res.Body, http.StatusOK, okBody)
	msgs := box.WaitFor(t, 1, 10*time.Second)
	if msgs[0].To.Address != u.Email {
		t.Errorf("message to %s, want %s", msgs[0].To.Address, u.Email)
	}
	events.waitFor(t, auth.EventResetEmailSent, 1, 5*time.Second)
	if n := calls.Load(); n != 2 {
		t.Errorf("the Mailer was called %d times, want 2", n)
	}
	if n := len(events.of(auth.EventMailFailed)); n != 0 {
		t.Errorf("%d EventMailFailed", n)
	}
	if recs := logs.records(t, "auth: reset email not sent"); len(recs) != 0 {
		t.Errorf("a delivered email was logged as not sent: %v", recs)
	}
	// The token of the delivered email works.
	_, tok := authtest.ResetLink(t, msgs[0])
	res = s.NewClient(authtest.Header).ResetPassword(tok, newPassword)
	wantReply(t, "reset", res.StatusCode, res.Body, http.StatusOK, okBody)
}

// gatedMailer blocks every delivery until it is opened (or the attempt's
// context ends), and tells when a delivery starts.
type gatedMailer struct {
	started chan string // the recipient of each delivery that starts
	open    chan struct{}
	box     *authtest.Mailbox
}

func newGatedMailer() *gatedMailer {
	return &gatedMailer{started: make(chan string, 100), open: make(chan struct{}), box: authtest.NewMailbox()}
}

func (g *gatedMailer) Send(ctx context.Context, m mailer.Message) error {
	g.started <- m.To.Address
	select {
	case <-g.open:
		return g.box.Send(ctx, m)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// waitStarted waits for a delivery to start.
func (g *gatedMailer) waitStarted(t testing.TB) string {
	t.Helper()
	select {
	case to := <-g.started:
		return to
	case <-time.After(5 * time.Second):
		t.Fatal("no delivery started")
		return ""
	}
}

// signUpMany signs up n users and returns their emails.
func signUpMany(t testing.TB, s *authtest.Server, n int) []string {
	t.Helper()
	emails := make([]string, n)
	for i := range emails {
		_, u := s.SignedIn(authtest.Header)
		emails[i] = u.Email
	}
	return emails
}

// TestResetCloseDelivers: Close waits for the emails queued before it.
func TestResetCloseDelivers(t *testing.T) {
	t.Parallel()
	g := newGatedMailer()
	events, logs := newResetEvents(), &resetLog{}
	s := authtest.NewServer(t, auth.Config{Email: auth.EmailConfig{Mailer: g}, OnEvent: events.record, Logger: logs.logger()})
	emails := signUpMany(t, s, 10)
	c := s.NewClient(authtest.Header)
	for i, email := range emails {
		res := c.RequestPasswordReset(email)
		wantReply(t, "reset request", res.StatusCode, res.Body, http.StatusOK, okBody)
		if i < 4 {
			g.waitStarted(t) // the workers are busy; the rest stays queued
		}
	}

	// Open the gate only after Close has begun: Close must wait for it.
	closing := make(chan struct{})
	go func() {
		<-closing
		time.Sleep(50 * time.Millisecond)
		close(g.open)
	}()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	close(closing)
	if err := s.Auth.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	var got []string
	for _, m := range g.box.Messages() {
		got = append(got, m.To.Address)
	}
	slices.Sort(got)
	slices.Sort(emails)
	if !slices.Equal(got, emails) {
		t.Errorf("delivered by the time Close returned: %q, want %q", got, emails)
	}
	if n := len(events.of(auth.EventMailFailed)); n != 0 {
		t.Errorf("%d EventMailFailed", n)
	}

	// After Close the endpoint answers as ever, and the dropped email is
	// reported.
	res := c.RequestPasswordReset(emails[0])
	sameBytes(t, "request after Close", res, c.RequestPasswordReset("nobody@example.com"))
	wantReply(t, "request after Close", res.StatusCode, res.Body, http.StatusOK, okBody)
	if n := len(events.of(auth.EventMailFailed)); n != 2 {
		t.Errorf("%d EventMailFailed after two requests past Close, want 2", n)
	}
	if recs := logs.records(t, "auth: reset email dropped"); len(recs) != 2 {
		t.Errorf("%d drop records, want 2", len(recs))
	}
	if n := len(g.box.Messages()); n != len(emails) {
		t.Errorf("%d messages after Close, want %d", n, len(emails))
	}
	if err := s.Auth.Close(ctx); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestResetCloseGivesUp: with a Mailer that never returns, Close ends with
// its context and reports every email it could not send.
func TestResetCloseGivesUp(t *testing.T) {
	t.Parallel()
	g := newGatedMailer() // never opened
	events, logs := newResetEvents(), &resetLog{}
	s := authtest.NewServer(t, auth.Config{Email: auth.EmailConfig{Mailer: g, QueueSize: 2}, OnEvent: events.record, Logger: logs.logger()})
	emails := signUpMany(t, s, 6)
	c := s.NewClient(authtest.Header)
	for i, email := range emails {
		res := c.RequestPasswordReset(email)
		wantReply(t, "reset request", res.StatusCode, res.Body, http.StatusOK, okBody)
		if i < 4 {
			g.waitStarted(t)
		}
	}
	if n := len(events.of(auth.EventMailFailed)); n != 0 {
		t.Fatalf("%d EventMailFailed before Close; the queue should hold the last two", n)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	begin := time.Now()
	if err := s.Auth.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Close: %v, want %v", err, context.DeadlineExceeded)
	}
	if d := time.Since(begin); d > 2*time.Second {
		t.Errorf("Close took %v after its context ended", d)
	}
	// The two still queued are reported by the time Close returns.
	var dropped int
	for _, e := range events.of(auth.EventMailFailed) {
		if e.UserID == "" {
			dropped++
		}
	}
	if dropped != 2 {
		t.Errorf("%d queued emails reported as dropped when Close returned, want 2", dropped)
	}
	if recs := logs.records(t, "auth: reset email dropped"); len(recs) != 2 || recs[0]["reason"] != "shutdown" {
		t.Errorf("drop records %v, want 2 for the shutdown", recs)
	}
	// The four abandoned in flight report themselves as their Mailer
	// returns.
	failed := events.waitFor(t, auth.EventMailFailed, 6, 5*time.Second)
	var inFlight []string
	for _, e := range failed {
		if e.UserID != "" {
			u, err := s.Auth.UserByID(t.Context(), e.UserID)
			if err != nil {
				t.Fatal(err)
			}
			inFlight = append(inFlight, u.Email)
		}
	}
	slices.Sort(inFlight)
	if !slices.Equal(inFlight, emails[:4]) {
		t.Errorf("abandoned deliveries reported for %q, want %q", inFlight, emails[:4])
	}
	if n := len(g.box.Messages()) + len(events.of(auth.EventResetEmailSent)); n != 0 {
		t.Errorf("%d emails sent by a Mailer that never returns", n)
	}
}

// TestResetQueueFull: past MailQueueSize a request is answered as usual
// and its email is dropped and reported.
func TestResetQueueFull(t *testing.T) {
	t.Parallel()
	g := newGatedMailer()
	events, logs := newResetEvents(), &resetLog{}
	s := authtest.NewServer(t, auth.Config{Email: auth.EmailConfig{Mailer: g, QueueSize: 1}, OnEvent: events.record, Logger: logs.logger()})
	t.Cleanup(func() { // before the server's own cleanup closes the Auth
		select {
		case <-g.open:
		default:
			close(g.open)
		}
	})
	emails := signUpMany(t, s, 6)
	c := s.NewClient(authtest.Header)
	var replies []*authtest.Response
	for i, email := range emails {
		replies = append(replies, c.RequestPasswordReset(email))
		if i < 4 {
			g.waitStarted(t) // four workers busy, then one queued, then full
		}
	}
	for i, res := range replies[1:] {
		sameBytes(t, fmt.Sprintf("request %d", i+2), replies[0], res)
	}
	wantReply(t, "request past a full queue", replies[5].StatusCode, replies[5].Body, http.StatusOK, okBody)
	failed := events.of(auth.EventMailFailed)
	if len(failed) != 1 {
		t.Fatalf("%d EventMailFailed after a request past a full queue, want 1", len(failed))
	}
	if recs := logs.records(t, "auth: reset email dropped"); len(recs) != 1 || recs[0]["reason"] != "the mail queue is full" {
		t.Errorf("drop records %v", recs)
	}

	close(g.open)
	g.box.WaitFor(t, 5, 5*time.Second)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if err := s.Auth.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	var got []string
	for _, m := range g.box.Messages() {
		got = append(got, m.To.Address)
	}
	slices.Sort(got)
	if !slices.Equal(got, emails[:5]) {
		t.Errorf("delivered to %q, want %q", got, emails[:5])
	}
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
		Password: auth.PasswordConfig{
			Hashing:             auth.PasswordHashing{Memory: 64, Iterations: 1, Parallelism: 1},
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
		Email: auth.EmailConfig{
			ResetPasswordURL:   "https://accounts.example.com/password?lang=en",
			From:               "Example Support <support@example.com>",
			ResetTokenLifetime: 30 * time.Minute,
			ResetEmail: &auth.EmailTemplate{
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
