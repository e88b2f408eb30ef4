package mailer

import (
	"context"
	"fmt"
	"io"
	"sync"
)

// Log is a Mailer that writes each message, in plain text, to W. It is for
// development: the demo prints password reset links with it.
type Log struct {
	W  io.Writer
	mu sync.Mutex
}

// NewLog returns a Log mailer writing to w.
func NewLog(w io.Writer) *Log { return &Log{W: w} }

// Send writes m to the log.
func (l *Log) Send(ctx context.Context, m Message) error {
	if err := m.validate(); err != nil {
		return err
	}
	body := m.Text
	if body == "" {
		body = m.HTML
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	_, err := fmt.Fprintf(l.W, "--- email\nFrom: %s\nTo: %s\nSubject: %s\n\n%s\n---\n", m.From.String(), m.To.String(), m.Subject, body)
	return err
}
