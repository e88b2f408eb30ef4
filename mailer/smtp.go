package mailer

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/smtp"
	"net/url"
	"os"
	"time"
)

// TLS modes of an SMTP connection.
type TLSMode int

const (
	// StartTLSRequired upgrades the connection with STARTTLS and fails if
	// the server does not offer it. The default.
	StartTLSRequired TLSMode = iota
	// ImplicitTLS speaks TLS from the first byte (port 465, "smtps").
	ImplicitTLS
	// InsecureStartTLSOptional uses STARTTLS when the server offers it and
	// plain text otherwise. Credentials still never travel in plain text
	// except to a loopback server.
	InsecureStartTLSOptional
)

// DefaultSMTPTimeout bounds a whole delivery when neither the context nor
// SMTP.Timeout sets a deadline.
const DefaultSMTPTimeout = 30 * time.Second

// SMTP delivers messages to an SMTP server (a relay or a provider's
// submission endpoint).
type SMTP struct {
	// Addr is the server, host:port.
	Addr string
	// Username and Password, if set, authenticate with AUTH PLAIN.
	Username, Password string
	// TLS chooses how the connection is secured.
	TLS TLSMode
	// TLSConfig, if set, configures TLS; ServerName defaults to Addr's
	// host.
	TLSConfig *tls.Config
	// Timeout bounds a delivery, from dial to QUIT, unless the context's
	// deadline is sooner. Default DefaultSMTPTimeout.
	Timeout time.Duration
	// LocalName is the name sent with EHLO. Default "localhost".
	LocalName string

	now func() time.Time
}

// NewSMTP configures an SMTP mailer from a URL:
//
//	smtp://user:pass@host:587            STARTTLS, required
//	smtps://user:pass@host:465           implicit TLS
//	smtp://host:25?starttls=optional     STARTTLS if offered (for local relays)
//
// The port defaults to 587 for smtp and 465 for smtps.
func NewSMTP(rawURL string) (*SMTP, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("mailer: SMTP URL: %w", err)
	}
	s := &SMTP{}
	port := "587"
	switch u.Scheme {
	case "smtp":
	case "smtps":
		s.TLS, port = ImplicitTLS, "465"
	default:
		return nil, fmt.Errorf("mailer: SMTP URL scheme %q: want smtp or smtps", u.Scheme)
	}
	if u.Hostname() == "" {
		return nil, errors.New("mailer: SMTP URL has no host")
	}
	if u.Port() != "" {
		port = u.Port()
	}
	s.Addr = net.JoinHostPort(u.Hostname(), port)
	if u.User != nil {
		s.Username = u.User.Username()
		s.Password, _ = u.User.Password()
	}
	q := u.Query()
	switch q.Get("starttls") {
	case "", "required":
	case "optional":
		if s.TLS == ImplicitTLS {
			return nil, errors.New("mailer: starttls=optional makes no sense with smtps")
		}
		s.TLS = InsecureStartTLSOptional
	default:
		return nil, fmt.Errorf("mailer: SMTP URL starttls=%q: want required or optional", q.Get("starttls"))
	}
	return s, nil
}

// Send delivers m.
func (s *SMTP) Send(ctx context.Context, m Message) error {
	now := time.Now
	if s.now != nil {
		now = s.now
	}
	msg, err := m.Bytes(now())
	if err != nil {
		return err
	}
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = DefaultSMTPTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	deadline, _ := ctx.Deadline()

	host, _, err := net.SplitHostPort(s.Addr)
	if err != nil {
		return fmt.Errorf("mailer: SMTP address %q: %w", s.Addr, err)
	}
	tlsConfig := &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12}
	if s.TLSConfig != nil {
		tlsConfig = s.TLSConfig.Clone()
		if tlsConfig.ServerName == "" {
			tlsConfig.ServerName = host
		}
	}

	var d net.Dialer
	raw, err := d.DialContext(ctx, "tcp", s.Addr)
	if err != nil {
		return fmt.Errorf("mailer: dialing %s: %w", s.Addr, ctxErr(ctx, err))
	}
	// The deadline covers every read and write; cancellation closes the
	// TCP connection, which unblocks whatever is in flight. (Not conn, which
	// is replaced below: the function runs on another goroutine, and closing
	// a TLS connection can block on writing its close_notify.)
	raw.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { raw.Close() })
	defer stop()
	conn := raw
	if s.TLS == ImplicitTLS {
		tc := tls.Client(raw, tlsConfig)
		if err := tc.HandshakeContext(ctx); err != nil {
			raw.Close()
			return fmt.Errorf("mailer: TLS with %s: %w", s.Addr, ctxErr(ctx, err))
		}
		conn = tc
	}
	c, err := smtp.NewClient(conn, host)
	if err != nil {
		conn.Close()
		return fmt.Errorf("mailer: SMTP greeting from %s: %w", s.Addr, ctxErr(ctx, err))
	}
	defer c.Close()
	if err := s.deliver(c, tlsConfig, m, msg); err != nil {
		return fmt.Errorf("mailer: SMTP delivery to %s: %w", s.Addr, ctxErr(ctx, err))
	}
	return nil
}

func (s *SMTP) deliver(c *smtp.Client, tlsConfig *tls.Config, m Message, msg []byte) error {
	name := s.LocalName
	if name == "" {
		name = "localhost"
	}
	if err := c.Hello(name); err != nil {
		return err
	}
	if s.TLS != ImplicitTLS {
		if ok, _ := c.Extension("STARTTLS"); ok {
			if err := c.StartTLS(tlsConfig); err != nil {
				return err
			}
		} else if s.TLS == StartTLSRequired {
			return errors.New("server does not offer STARTTLS")
		}
	}
	if s.Username != "" {
		// PlainAuth itself refuses to send credentials without TLS,
		// except to localhost.
		if err := c.Auth(smtp.PlainAuth("", s.Username, s.Password, hostOf(s.Addr))); err != nil {
			return err
		}
	}
	if err := c.Mail(m.From.Address); err != nil {
		return err
	}
	if err := c.Rcpt(m.To.Address); err != nil {
		return err
	}
	w, err := c.Data()
	if err != nil {
		return err
	}
	if _, err := w.Write(msg); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	// The server has accepted the message. Reporting a failed QUIT as a
	// failed delivery would make the caller send it again.
	c.Quit()
	return nil
}

func hostOf(addr string) string {
	h, _, _ := net.SplitHostPort(addr)
	return h
}

// ctxErr prefers the context's error, which says why a connection was cut.
// The connection's deadline is the context's, and may pass a moment before
// the context's timer fires: a deadline error then means the context's
// deadline was exceeded too.
func ctxErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%w (%v)", ctx.Err(), err)
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return fmt.Errorf("%w (%v)", context.DeadlineExceeded, err)
	}
	return err
}
