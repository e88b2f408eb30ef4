package auth_test

// Tests of the outbox: reset email sent off the request path through
// failing, slow and hanging Mailers, retries, a full queue, and Close.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/mailer"
)

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
			events, logs := newEventLog(), &logCapture{}
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
	events, logs := newEventLog(), &logCapture{}
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
	events, logs := newEventLog(), &logCapture{}
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
	events, logs := newEventLog(), &logCapture{}
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
	events, logs := newEventLog(), &logCapture{}
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
