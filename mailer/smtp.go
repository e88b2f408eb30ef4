package mailer

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/smtp"
	"net/url"
	"os"
	"strings"
	"time"
)

// TLS modes of an SMTP connection.
type TLSMode int

const (
	// StartTLSRequiredUnlessLoopback, the default, upgrades the connection
	// with STARTTLS whenever the server offers it. A server that does not
	// offer it gets nothing, and Send fails, unless it is on a loopback
	// host: then the message, and the credentials, go in plain text, as
	// they never leave the machine. This is what a local development relay
	// (Mailpit, MailHog, a test sink) needs.
	//
	// A loopback host is "localhost" (in any case, with or without a final
	// dot) or an IP literal in 127.0.0.0/8 or ::1, and the connection must
	// also have reached a loopback address. Names are never resolved to
	// decide: a name that points at 127.0.0.1 today may point elsewhere
	// tomorrow, or to whoever controls its DNS.
	StartTLSRequiredUnlessLoopback TLSMode = iota
	// StartTLSRequired upgrades the connection with STARTTLS and fails if
	// the server does not offer it, even on a loopback host.
	StartTLSRequired
	// ImplicitTLS speaks TLS from the first byte (port 465, "smtps").
	ImplicitTLS
	// InsecureStartTLSOptional uses STARTTLS when the server offers it and
	// plain text otherwise, whatever the host. Credentials still never
	// travel in plain text except to a loopback host.
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
	// TLS chooses how the connection is secured. The zero value is
	// StartTLSRequiredUnlessLoopback.
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
//	smtp://user:pass@host:587            STARTTLS, required unless host is loopback
//	smtp://localhost:1025                STARTTLS if offered, as the host is loopback
//	smtp://host:587?starttls=required    STARTTLS, required even on loopback
//	smtps://user:pass@host:465           implicit TLS
//	smtp://host:25?starttls=optional     STARTTLS if offered, whatever the host
//
// See StartTLSRequiredUnlessLoopback for which hosts are loopback. The port
// defaults to 587 for smtp and 465 for smtps.
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
	case "":
	case "required":
		if s.TLS != ImplicitTLS {
			s.TLS = StartTLSRequired
		}
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
	loopback := isLoopbackHost(host) && isLoopbackConn(raw)
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
	if err := s.deliver(c, tlsConfig, loopback, m, msg); err != nil {
		return fmt.Errorf("mailer: SMTP delivery to %s: %w", s.Addr, ctxErr(ctx, err))
	}
	return nil
}

// deliver sends m, rendered as msg, over c; loopback says whether the
// server is on a loopback host.
func (s *SMTP) deliver(c *smtp.Client, tlsConfig *tls.Config, loopback bool, m Message, msg []byte) error {
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
		} else {
			switch {
			case s.TLS == InsecureStartTLSOptional:
			case s.TLS == StartTLSRequiredUnlessLoopback && loopback:
			case s.TLS == StartTLSRequiredUnlessLoopback:
				return errors.New("server does not offer STARTTLS, which is required for a host that is not loopback")
			default: // StartTLSRequired, or a mode this package does not know
				return errors.New("server does not offer STARTTLS")
			}
		}
	}
	if s.Username != "" {
		if err := c.Auth(plainAuth{s.Username, s.Password, loopback}); err != nil {
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

// plainAuth is AUTH PLAIN (RFC 4616) that sends credentials only over TLS
// or to a loopback host. smtp.PlainAuth would do, but it trusts only the
// exact names "localhost", "127.0.0.1" and "::1" with plain text, not the
// other loopback hosts the TLS rule accepts.
type plainAuth struct {
	username, password string
	loopback           bool
}

func (a plainAuth) Start(server *smtp.ServerInfo) (string, []byte, error) {
	// Without TLS nothing the server said can be trusted, not even that
	// it offers PLAIN: whether the host is loopback is all that counts.
	if !server.TLS && !a.loopback {
		return "", nil, errors.New("refusing to send credentials unencrypted to a host that is not loopback")
	}
	return "PLAIN", []byte("\x00" + a.username + "\x00" + a.password), nil
}

func (a plainAuth) Next(_ []byte, more bool) ([]byte, error) {
	if more {
		return nil, errors.New("unexpected challenge after AUTH PLAIN")
	}
	return nil, nil
}

// isLoopbackHost reports whether host, as written in an SMTP address,
// names a loopback host by itself: "localhost" in any case, with or without
// a final dot, or an IP literal in 127.0.0.0/8 or ::1. It resolves nothing.
func isLoopbackHost(host string) bool {
	if strings.EqualFold(strings.TrimSuffix(host, "."), "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// isLoopbackConn reports whether c reached a loopback address: "localhost"
// is looked up like any name, and a hosts file or DNS server could point it
// elsewhere.
func isLoopbackConn(c net.Conn) bool {
	a, ok := c.RemoteAddr().(*net.TCPAddr)
	return ok && a.IP.IsLoopback()
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
