// Package mailer sends email for the auth library: the Mailer interface, an
// SMTP implementation and one that writes messages to a log.
package mailer

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net/mail"
	"net/textproto"
	"strings"
	"time"
)

// Message is an email with a plain-text body, an HTML body, or both.
type Message struct {
	From    mail.Address
	To      mail.Address
	Subject string
	Text    string
	HTML    string
}

// A Mailer delivers messages. Send returns once the message is accepted
// for delivery, or fails; it must respect ctx's deadline.
type Mailer interface {
	Send(ctx context.Context, m Message) error
}

// Func adapts a function to the Mailer interface.
type Func func(ctx context.Context, m Message) error

// Send calls f.
func (f Func) Send(ctx context.Context, m Message) error { return f(ctx, m) }

// ErrInvalidMessage reports a message that cannot be sent as it is.
var ErrInvalidMessage = errors.New("mailer: invalid message")

func (m Message) validate() error {
	if m.From.Address == "" || m.To.Address == "" {
		return fmt.Errorf("%w: From and To need an address", ErrInvalidMessage)
	}
	for _, a := range []string{m.From.Address, m.To.Address} {
		// Only a bare addr-spec will do: "Bob <bob@example.com>" or
		// " bob@example.com " parse too, but would reach the envelope
		// and the header as they are.
		p, err := mail.ParseAddress(a)
		if err != nil || p.Name != "" || p.Address != a || strings.ContainsAny(a, "\r\n") {
			return fmt.Errorf("%w: bad address %q", ErrInvalidMessage, a)
		}
	}
	if m.Text == "" && m.HTML == "" {
		return fmt.Errorf("%w: no body", ErrInvalidMessage)
	}
	return nil
}

// Bytes renders m as an RFC 5322 message with CRLF line endings: a
// multipart/alternative body when it has both a text and an HTML part.
// Header values are encoded, so no value can inject a header.
func (m Message) Bytes(now time.Time) ([]byte, error) {
	if err := m.validate(); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	id := make([]byte, 16)
	rand.Read(id)
	_, domain, _ := strings.Cut(m.From.Address, "@")
	header := func(k, v string) { fmt.Fprintf(&b, "%s: %s\r\n", k, fold(len(k)+2, v)) }
	header("From", m.From.String())
	header("To", m.To.String())
	header("Subject", mime.QEncoding.Encode("utf-8", m.Subject))
	header("Date", now.Format(time.RFC1123Z))
	header("Message-ID", "<"+hex.EncodeToString(id)+"@"+domain+">")
	header("MIME-Version", "1.0")

	switch {
	case m.Text != "" && m.HTML != "":
		w := multipart.NewWriter(&b)
		header("Content-Type", `multipart/alternative; boundary="`+w.Boundary()+`"`)
		b.WriteString("\r\n")
		for _, p := range []struct{ typ, body string }{{"text/plain", m.Text}, {"text/html", m.HTML}} {
			pw, err := w.CreatePart(textproto.MIMEHeader{
				"Content-Type":              {p.typ + "; charset=utf-8"},
				"Content-Transfer-Encoding": {"quoted-printable"},
			})
			if err != nil {
				return nil, err
			}
			if err := writeQP(pw, p.body); err != nil {
				return nil, err
			}
		}
		if err := w.Close(); err != nil {
			return nil, err
		}
	default:
		typ, body := "text/plain", m.Text
		if body == "" {
			typ, body = "text/html", m.HTML
		}
		header("Content-Type", typ+"; charset=utf-8")
		header("Content-Transfer-Encoding", "quoted-printable")
		b.WriteString("\r\n")
		if err := writeQP(&b, body); err != nil {
			return nil, err
		}
	}
	return b.Bytes(), nil
}

// maxHeaderLine is the length, CRLF excluded, that fold keeps header lines
// under where it can (RFC 5322 section 2.1.1). Servers refuse lines longer
// than 998 octets, and the encoded subject or name of a long non-ASCII
// value makes one.
const maxHeaderLine = 78

// fold folds the header value v, which follows a name and colon of width
// prefix, by breaking lines before single spaces between words, so that
// unfolding (removing the CRLFs) restores v exactly. The encoded words of
// mime.WordEncoder are at most 75 octets and separated by single spaces, so
// an encoded value always folds short enough.
func fold(prefix int, v string) string {
	if prefix+len(v) <= maxHeaderLine {
		return v
	}
	var b strings.Builder
	width := prefix
	for len(v) > 0 {
		// The next word and the space before it: fold points are spaces
		// between two non-spaces, which textproto unfolds losslessly.
		i := 1
		for i < len(v) && !(v[i] == ' ' && v[i-1] != ' ' && i+1 < len(v) && v[i+1] != ' ') {
			i++
		}
		word := v[:i]
		v = v[i:]
		if width+len(word) > maxHeaderLine && b.Len() > 0 {
			b.WriteString("\r\n")
			width = 0
		}
		b.WriteString(word)
		width += len(word)
	}
	return b.String()
}

type writer interface{ Write([]byte) (int, error) }

func writeQP(w writer, body string) error {
	qp := quotedprintable.NewWriter(w)
	body = strings.ReplaceAll(strings.ReplaceAll(body, "\r\n", "\n"), "\n", "\r\n")
	if _, err := qp.Write([]byte(body)); err != nil {
		return err
	}
	return qp.Close()
}
