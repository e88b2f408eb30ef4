package authtest

import (
	"context"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/latchkit/auth/mailer"
)

// Mailbox is a mailer.Mailer that keeps every message it is given. It is
// safe for concurrent use.
type Mailbox struct {
	mu       sync.Mutex
	messages []mailer.Message
	arrived  chan struct{} // closed and replaced on every message
}

// NewMailbox returns an empty Mailbox.
func NewMailbox() *Mailbox { return &Mailbox{arrived: make(chan struct{})} }

// Send keeps m.
func (b *Mailbox) Send(ctx context.Context, m mailer.Message) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.messages = append(b.messages, m)
	close(b.arrived)
	b.arrived = make(chan struct{})
	return nil
}

// Messages returns the messages received so far.
func (b *Mailbox) Messages() []mailer.Message {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]mailer.Message(nil), b.messages...)
}

// WaitFor waits up to timeout until n messages have arrived, and returns
// them all. Reset emails are sent off the request path, so a test waits
// for them. It fails the test if they do not come.
func (b *Mailbox) WaitFor(tb testing.TB, n int, timeout time.Duration) []mailer.Message {
	tb.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		b.mu.Lock()
		got, arrived := len(b.messages), b.arrived
		b.mu.Unlock()
		if got >= n {
			return b.Messages()
		}
		select {
		case <-arrived:
		case <-deadline.C:
			tb.Fatalf("authtest: %d messages after %v, want %d", got, timeout, n)
		}
	}
}

var linkPattern = regexp.MustCompile(`https?://[^\s"<>]+`)

// ResetLink returns the first link in a message's text, and its token.
// It fails the test if there is none.
func ResetLink(tb testing.TB, m mailer.Message) (link, token string) {
	tb.Helper()
	return firstLink(tb, m)
}

// VerificationLink returns the link of an email verification message,
// and its token, for Client.VerifyEmail. It fails the test if the message
// has no link to a verify-email page.
func VerificationLink(tb testing.TB, m mailer.Message) (link, token string) {
	tb.Helper()
	link, token = firstLink(tb, m)
	if u, _ := url.Parse(link); !strings.HasSuffix(u.Path, "/verify-email") {
		tb.Fatalf("authtest: link %s is not a verify-email link", link)
	}
	return link, token
}

func firstLink(tb testing.TB, m mailer.Message) (link, token string) {
	tb.Helper()
	link = linkPattern.FindString(m.Text)
	u, err := url.Parse(link)
	if err != nil || link == "" {
		tb.Fatalf("authtest: no link in the message text:\n%s", m.Text)
	}
	token = u.Query().Get("token")
	if token == "" {
		tb.Fatalf("authtest: link %s has no token", link)
	}
	return link, token
}

var codePattern = regexp.MustCompile(`(?m)^\s*([0-9]{6})\s*$`)

// PasswordlessCode returns the six-digit code of a passwordless sign-in
// message, for Client.ConsumeCode. It fails the test if there is none.
func PasswordlessCode(tb testing.TB, m mailer.Message) string {
	tb.Helper()
	match := codePattern.FindStringSubmatch(m.Text)
	if match == nil {
		tb.Fatalf("authtest: no sign-in code in the message text:\n%s", m.Text)
	}
	return match[1]
}

// PasswordlessLink returns the link of a passwordless sign-in message,
// for Client.ConsumeLink. It fails the test if the message has no link
// with a preAuthSessionId and a link code.
func PasswordlessLink(tb testing.TB, m mailer.Message) string {
	tb.Helper()
	link := linkPattern.FindString(m.Text)
	u, err := url.Parse(link)
	if err != nil || link == "" || u.Query().Get("preAuthSessionId") == "" || u.Fragment == "" {
		tb.Fatalf("authtest: no sign-in link in the message text:\n%s", m.Text)
	}
	return link
}

// LastTo waits up to timeout for a message to address that is not among
// the first after messages, and returns the newest such. Emails are sent
// off the request path, so a test waits for them.
func (b *Mailbox) LastTo(tb testing.TB, address string, after int, timeout time.Duration) mailer.Message {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for {
		b.mu.Lock()
		msgs, arrived := b.messages, b.arrived
		b.mu.Unlock()
		for i := len(msgs) - 1; i >= after; i-- {
			if strings.EqualFold(msgs[i].To.Address, address) {
				return msgs[i]
			}
		}
		wait := time.Until(deadline)
		if wait <= 0 {
			tb.Fatalf("authtest: no message to %s after %v", address, timeout)
		}
		select {
		case <-arrived:
		case <-time.After(wait):
		}
	}
}
