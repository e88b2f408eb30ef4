package mailer_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"log"
	"math/big"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"net/textproto"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"

	"github.com/latchkit/auth/mailer"
)

// ---------------------------------------------------------------------------
// A real SMTP server, in process, on 127.0.0.1

// testCert is a self-signed certificate for 127.0.0.1 and localhost, made
// once for the whole test binary, and a pool that trusts it.
var testCert = sync.OnceValues(func() (tls.Certificate, *x509.CertPool) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "mailer test server"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		panic(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		panic(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool
})

// trusting returns a client TLS configuration that trusts only the test
// certificate.
func trusting() *tls.Config {
	_, pool := testCert()
	return &tls.Config{RootCAs: pool}
}

// serverMode says how the test server secures connections.
type serverMode int

const (
	plainOnly   serverMode = iota // no TLS at all
	startTLS                      // offers STARTTLS
	implicitTLS                   // TLS from the first byte
)

// delivery is a message the test server accepted.
type delivery struct {
	From, To []string // MAIL FROM (one) and RCPT TO addresses
	Data     []byte
	TLS      bool   // whether the transaction ran over TLS
	Username string // who authenticated, "" if nobody did
	Password string
}

// backend is a go-smtp backend that records every delivery. If username is
// set it requires AUTH PLAIN with username and password before MAIL.
type backend struct {
	username, password string

	mu         sync.Mutex
	deliveries []delivery
	logins     int // AUTH PLAIN attempts, successful or not
}

func (b *backend) NewSession(c *smtp.Conn) (smtp.Session, error) {
	return &session{b: b, c: c}, nil
}

func (b *backend) Deliveries() []delivery {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.deliveries)
}

func (b *backend) Logins() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.logins
}

type session struct {
	b   *backend
	c   *smtp.Conn
	cur delivery
}

var _ smtp.AuthSession = (*session)(nil)

func (s *session) AuthMechanisms() []string { return []string{sasl.Plain} }

func (s *session) Auth(mech string) (sasl.Server, error) {
	if mech != sasl.Plain {
		return nil, smtp.ErrAuthUnknownMechanism
	}
	return sasl.NewPlainServer(func(identity, username, password string) error {
		s.b.mu.Lock()
		s.b.logins++
		s.b.mu.Unlock()
		if username != s.b.username || password != s.b.password || (identity != "" && identity != username) {
			return smtp.ErrAuthFailed
		}
		s.cur.Username, s.cur.Password = username, password
		return nil
	}), nil
}

func (s *session) Mail(from string, _ *smtp.MailOptions) error {
	if s.b.username != "" && s.cur.Username == "" {
		return smtp.ErrAuthRequired
	}
	s.cur.From = append(s.cur.From, from)
	return nil
}

func (s *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	s.cur.To = append(s.cur.To, to)
	return nil
}

func (s *session) Data(r io.Reader) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	d := s.cur
	d.Data = data
	_, d.TLS = s.c.TLSConnectionState()
	s.b.mu.Lock()
	s.b.deliveries = append(s.b.deliveries, d)
	s.b.mu.Unlock()
	s.cur.From, s.cur.To = nil, nil
	return nil
}

func (s *session) Reset() { s.cur.From, s.cur.To = nil, nil }

func (s *session) Logout() error { return nil }

// startServer runs an SMTP server on 127.0.0.1:0 until the test ends and
// returns its address and backend.
func startServer(t *testing.T, mode serverMode, username, password string) (string, *backend) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return serve(t, l, mode, username, password)
}

// serve runs an SMTP server on l until the test ends and returns its address
// and backend.
func serve(t *testing.T, l net.Listener, mode serverMode, username, password string) (string, *backend) {
	t.Helper()
	be := &backend{username: username, password: password}
	srv := smtp.NewServer(be)
	srv.Domain = "mx.test"
	srv.ReadTimeout = 10 * time.Second
	srv.WriteTimeout = 10 * time.Second
	srv.MaxLineLength = 1000 // RFC 5321 section 4.5.3.1.6, CRLF included
	srv.ErrorLog = log.New(io.Discard, "", 0)
	// Whether credentials may travel in plain text is the client's
	// decision: accept them, so that a test sees whether they were sent.
	srv.AllowInsecureAuth = true

	cert, _ := testCert()
	switch mode {
	case startTLS:
		srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}}
	case implicitTLS:
		l = tls.NewListener(l, &tls.Config{Certificates: []tls.Certificate{cert}})
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.Serve(l)
	}()
	t.Cleanup(func() {
		srv.Close()
		// Serve registers l only once its goroutine runs: Close may miss it.
		l.Close()
		<-done
	})
	return l.Addr().String(), be
}

// silentServer accepts connections on 127.0.0.1:0 and then writes greeting
// (possibly nothing) and never anything else, until the test ends.
func silentServer(t *testing.T, greeting string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			io.WriteString(c, greeting)
		}
	}()
	t.Cleanup(func() {
		l.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return l.Addr().String()
}

// testMessage has non-ASCII text everywhere it may, and lines that an SMTP
// client must dot-stuff.
func testMessage() mailer.Message {
	return mailer.Message{
		From:    mail.Address{Name: "Latchkit Sécurité", Address: "no-reply@latchkit.test"},
		To:      mail.Address{Name: "Zoë Ådams", Address: "zoe@example.test"},
		Subject: "Réinitialisez votre mot de passe — 🔑",
		Text:    "Bonjour Zoë,\n\nOuvrez ce lien : https://app.example.test/reset?t=abc=def\n.\n..point\nÀ bientôt.\n",
		HTML:    "<p>Bonjour Zoë,</p>\n<p><a href=\"https://app.example.test/reset?t=abc=def\">Réinitialiser</a></p>\n.\n",
	}
}

// crlf is s with every line ending made CRLF, as a message carries it.
func crlf(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\n", "\r\n")
}

// onlyDelivery returns the one delivery the server must have accepted.
func onlyDelivery(t *testing.T, be *backend) delivery {
	t.Helper()
	ds := be.Deliveries()
	if len(ds) != 1 {
		t.Fatalf("server accepted %d messages, want 1", len(ds))
	}
	return ds[0]
}

// parsedParts is a message as a reader sees it.
type parsedParts struct {
	header  mail.Header
	subject string
	from    *mail.Address
	to      *mail.Address
	parts   map[string]string // media type -> decoded body
}

// parse parses data as a recipient would: net/mail for the message, the
// MIME packages for encoded words, parts and transfer encodings.
func parse(t *testing.T, data []byte) parsedParts {
	t.Helper()
	msg, err := mail.ReadMessage(strings.NewReader(string(data)))
	if err != nil {
		t.Fatalf("net/mail cannot read the message: %v\n%s", err, data)
	}
	var p parsedParts
	p.header = msg.Header
	var dec mime.WordDecoder
	if p.subject, err = dec.DecodeHeader(msg.Header.Get("Subject")); err != nil {
		t.Errorf("Subject %q does not decode: %v", msg.Header.Get("Subject"), err)
	}
	from, err := mail.ParseAddressList(msg.Header.Get("From"))
	if err != nil || len(from) != 1 {
		t.Errorf("From %q must parse as one address; got %v, error %v", msg.Header.Get("From"), from, err)
	} else {
		p.from = from[0]
	}
	to, err := mail.ParseAddressList(msg.Header.Get("To"))
	if err != nil || len(to) != 1 {
		t.Errorf("To %q must parse as one address; got %v, error %v", msg.Header.Get("To"), to, err)
	} else {
		p.to = to[0]
	}

	p.parts = make(map[string]string)
	typ, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil {
		t.Fatalf("Content-Type %q: %v", msg.Header.Get("Content-Type"), err)
	}
	if !strings.HasPrefix(typ, "multipart/") {
		if cte := msg.Header.Get("Content-Transfer-Encoding"); cte != "quoted-printable" {
			t.Errorf("Content-Transfer-Encoding = %q, want quoted-printable", cte)
		}
		body, err := io.ReadAll(qpReader(msg.Body))
		if err != nil {
			t.Fatalf("body is not quoted-printable: %v", err)
		}
		p.parts[typ] = string(body)
		checkCharset(t, params)
		return p
	}
	if typ != "multipart/alternative" {
		t.Errorf("Content-Type %q, want multipart/alternative", typ)
	}
	mr := multipart.NewReader(msg.Body, params["boundary"])
	for {
		part, err := mr.NextRawPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("multipart body: %v", err)
		}
		ptyp, pparams, err := mime.ParseMediaType(part.Header.Get("Content-Type"))
		if err != nil {
			t.Fatalf("part Content-Type %q: %v", part.Header.Get("Content-Type"), err)
		}
		checkCharset(t, pparams)
		if cte := part.Header.Get("Content-Transfer-Encoding"); cte != "quoted-printable" {
			t.Errorf("part %s: Content-Transfer-Encoding = %q, want quoted-printable", ptyp, cte)
		}
		body, err := io.ReadAll(qpReader(part))
		if err != nil {
			t.Fatalf("part %s is not quoted-printable: %v", ptyp, err)
		}
		if _, dup := p.parts[ptyp]; dup {
			t.Errorf("two parts of type %s", ptyp)
		}
		p.parts[ptyp] = string(body)
	}
	return p
}

func qpReader(r io.Reader) io.Reader { return quotedprintable.NewReader(r) }

func checkCharset(t *testing.T, params map[string]string) {
	t.Helper()
	if cs := params["charset"]; !strings.EqualFold(cs, "utf-8") {
		t.Errorf("charset = %q, want utf-8", cs)
	}
}

// wantDelivered checks that d is m as the server must see it.
func wantDelivered(t *testing.T, d delivery, m mailer.Message) parsedParts {
	t.Helper()
	if !slices.Equal(d.From, []string{m.From.Address}) {
		t.Errorf("server saw MAIL FROM %q, want %q", d.From, m.From.Address)
	}
	if !slices.Equal(d.To, []string{m.To.Address}) {
		t.Errorf("server saw RCPT TO %q, want %q", d.To, m.To.Address)
	}
	p := parse(t, d.Data)
	if p.subject != m.Subject {
		t.Errorf("Subject decodes to %q, want %q", p.subject, m.Subject)
	}
	if p.from != nil && (p.from.Name != m.From.Name || p.from.Address != m.From.Address) {
		t.Errorf("From = %q <%s>, want %q <%s>", p.from.Name, p.from.Address, m.From.Name, m.From.Address)
	}
	if p.to != nil && (p.to.Name != m.To.Name || p.to.Address != m.To.Address) {
		t.Errorf("To = %q <%s>, want %q <%s>", p.to.Name, p.to.Address, m.To.Name, m.To.Address)
	}
	want := map[string]string{}
	if m.Text != "" {
		want["text/plain"] = crlf(m.Text)
	}
	if m.HTML != "" {
		want["text/html"] = crlf(m.HTML)
	}
	for typ, body := range want {
		if got, ok := p.parts[typ]; !ok {
			t.Errorf("message has no %s part; has %v", typ, keys(p.parts))
		} else if got != body {
			t.Errorf("%s part decodes to %q, want %q", typ, got, body)
		}
	}
	if len(p.parts) != len(want) {
		t.Errorf("message has parts %v, want %v", keys(p.parts), keys(want))
	}
	return p
}

func keys(m map[string]string) []string {
	return slices.Sorted(func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	})
}

// ---------------------------------------------------------------------------
// NewSMTP

func TestNewSMTP(t *testing.T) {
	for _, tc := range []struct {
		url                string
		addr               string
		username, password string
		mode               mailer.TLSMode
	}{
		{url: "smtp://smtp.example.com", addr: "smtp.example.com:587", mode: mailer.StartTLSRequiredUnlessLoopback},
		{url: "smtp://smtp.example.com:2525", addr: "smtp.example.com:2525", mode: mailer.StartTLSRequiredUnlessLoopback},
		{url: "smtp://smtp.example.com?starttls=required", addr: "smtp.example.com:587", mode: mailer.StartTLSRequired},
		{url: "smtp://localhost:1025", addr: "localhost:1025", mode: mailer.StartTLSRequiredUnlessLoopback},
		{url: "smtp://127.0.0.1:1025?starttls=required", addr: "127.0.0.1:1025", mode: mailer.StartTLSRequired},
		{url: "smtp://relay.local:25?starttls=optional", addr: "relay.local:25", mode: mailer.InsecureStartTLSOptional},
		{url: "smtps://smtp.example.com", addr: "smtp.example.com:465", mode: mailer.ImplicitTLS},
		{url: "smtps://smtp.example.com:1465", addr: "smtp.example.com:1465", mode: mailer.ImplicitTLS},
		{url: "smtps://smtp.example.com?starttls=required", addr: "smtp.example.com:465", mode: mailer.ImplicitTLS},
		{url: "smtp://apikey:s3cr%40t%3Ax@smtp.example.com:587", addr: "smtp.example.com:587",
			username: "apikey", password: "s3cr@t:x", mode: mailer.StartTLSRequiredUnlessLoopback},
		{url: "smtps://user%40example.com:pass@smtp.example.com", addr: "smtp.example.com:465",
			username: "user@example.com", password: "pass", mode: mailer.ImplicitTLS},
		{url: "smtp://onlyuser@smtp.example.com", addr: "smtp.example.com:587", username: "onlyuser", mode: mailer.StartTLSRequiredUnlessLoopback},
		{url: "smtp://[::1]", addr: "[::1]:587", mode: mailer.StartTLSRequiredUnlessLoopback},
		{url: "smtp://[2001:db8::1]:25?starttls=optional", addr: "[2001:db8::1]:25", mode: mailer.InsecureStartTLSOptional},
	} {
		t.Run(tc.url, func(t *testing.T) {
			s, err := mailer.NewSMTP(tc.url)
			if err != nil {
				t.Fatalf("NewSMTP(%q): %v", tc.url, err)
			}
			if s.Addr != tc.addr || s.Username != tc.username || s.Password != tc.password || s.TLS != tc.mode {
				t.Errorf("NewSMTP(%q) = {Addr %q, Username %q, Password %q, TLS %v}, want {%q, %q, %q, %v}",
					tc.url, s.Addr, s.Username, s.Password, s.TLS, tc.addr, tc.username, tc.password, tc.mode)
			}
			if s.TLSConfig != nil || s.Timeout != 0 || s.LocalName != "" {
				t.Errorf("NewSMTP(%q) must leave TLSConfig, Timeout and LocalName at their defaults; got %v, %v, %q", tc.url, s.TLSConfig, s.Timeout, s.LocalName)
			}
		})
	}
}

func TestNewSMTPErrors(t *testing.T) {
	for _, tc := range []struct{ url, want string }{
		{"http://smtp.example.com", "scheme"},
		{"SMTP+foo://smtp.example.com", "scheme"},
		{"smtp.example.com:587", "scheme"}, // parses with scheme "smtp.example.com"
		{"mailto:someone@example.com", "scheme"},
		{"", "scheme"},
		{"smtp://", "no host"},
		{"smtps://:465", "no host"},
		{"smtp:///path", "no host"},
		{"smtp:opaque", "no host"},
		{"smtp://user:pass@", "no host"},
		{"smtp://smtp.example.com?starttls=maybe", "starttls"},
		{"smtp://smtp.example.com?starttls=OPTIONAL", "starttls"},
		{"smtps://smtp.example.com?starttls=optional", "starttls=optional"},
		{"smtp://smtp.example.com:bad", "SMTP URL"},
		{"smtp://smtp example.com", "SMTP URL"},
		{"://nothing", "SMTP URL"},
	} {
		t.Run(tc.url, func(t *testing.T) {
			s, err := mailer.NewSMTP(tc.url)
			if err == nil {
				t.Fatalf("NewSMTP(%q) = %+v, want an error", tc.url, s)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("NewSMTP(%q) error %q, want it to mention %q", tc.url, err, tc.want)
			}
			if s != nil {
				t.Errorf("NewSMTP(%q) returned %+v with its error, want nil", tc.url, s)
			}
		})
	}
}

// ---------------------------------------------------------------------------
// Delivery

func TestSMTPStartTLSAuth(t *testing.T) {
	addr, be := startServer(t, startTLS, "apikey", "s3cr@t pass")
	tlsConfig := trusting()
	s := &mailer.SMTP{
		Addr:      addr,
		Username:  "apikey",
		Password:  "s3cr@t pass",
		TLSConfig: tlsConfig,
		Timeout:   10 * time.Second,
	}
	m := testMessage()
	before := time.Now()
	if err := s.Send(t.Context(), m); err != nil {
		t.Fatalf("Send: %v", err)
	}

	d := onlyDelivery(t, be)
	if !d.TLS {
		t.Error("the message must travel over TLS after STARTTLS")
	}
	if d.Username != "apikey" || d.Password != "s3cr@t pass" {
		t.Errorf("server saw AUTH PLAIN as %q / %q, want %q / %q", d.Username, d.Password, "apikey", "s3cr@t pass")
	}
	p := wantDelivered(t, d, m)

	date, err := p.header.Date()
	if err != nil {
		t.Errorf("Date %q: %v", p.header.Get("Date"), err)
	} else if date.Before(before.Add(-time.Second).Truncate(time.Second)) || date.After(time.Now().Add(time.Second)) {
		t.Errorf("Date = %v, want the time of sending (about %v)", date, before)
	}
	id := p.header.Get("Message-Id")
	if !strings.HasPrefix(id, "<") || !strings.HasSuffix(id, "@latchkit.test>") || len(id) < len("<x@latchkit.test>")+8 {
		t.Errorf("Message-ID = %q, want <random@latchkit.test>", id)
	}
	if v := p.header.Get("Mime-Version"); v != "1.0" {
		t.Errorf("MIME-Version = %q, want 1.0", v)
	}
	if tlsConfig.ServerName != "" {
		t.Errorf("Send must not modify the caller's TLSConfig; ServerName became %q", tlsConfig.ServerName)
	}
}

func TestSMTPImplicitTLS(t *testing.T) {
	addr, be := startServer(t, implicitTLS, "user", "pass")
	s := &mailer.SMTP{
		Addr:      addr,
		Username:  "user",
		Password:  "pass",
		TLS:       mailer.ImplicitTLS,
		TLSConfig: trusting(),
		Timeout:   10 * time.Second,
	}
	m := testMessage()
	m.HTML = ""
	if err := s.Send(t.Context(), m); err != nil {
		t.Fatalf("Send: %v", err)
	}
	d := onlyDelivery(t, be)
	if !d.TLS {
		t.Error("the message must travel over TLS")
	}
	if d.Username != "user" || d.Password != "pass" {
		t.Errorf("server saw AUTH PLAIN as %q / %q, want user / pass", d.Username, d.Password)
	}
	wantDelivered(t, d, m)
}

func TestSMTPStartTLSOptional(t *testing.T) {
	m := testMessage()
	m.Text = ""

	t.Run("Offered", func(t *testing.T) {
		addr, be := startServer(t, startTLS, "", "")
		s := &mailer.SMTP{Addr: addr, TLS: mailer.InsecureStartTLSOptional, TLSConfig: trusting(), Timeout: 10 * time.Second}
		if err := s.Send(t.Context(), m); err != nil {
			t.Fatalf("Send: %v", err)
		}
		if d := onlyDelivery(t, be); !d.TLS {
			t.Error("with starttls=optional the client must still use STARTTLS when the server offers it")
		} else {
			wantDelivered(t, d, m)
		}
	})
	t.Run("NotOffered", func(t *testing.T) {
		addr, be := startServer(t, plainOnly, "user", "pass")
		s := &mailer.SMTP{Addr: addr, Username: "user", Password: "pass", TLS: mailer.InsecureStartTLSOptional, Timeout: 10 * time.Second}
		if err := s.Send(t.Context(), m); err != nil {
			t.Fatalf("Send: %v", err)
		}
		d := onlyDelivery(t, be)
		if d.TLS {
			t.Error("the plain test server cannot have spoken TLS")
		}
		if d.Username != "user" {
			t.Errorf("to a loopback server credentials may travel in plain text; server saw user %q", d.Username)
		}
		wantDelivered(t, d, m)
	})
}

// TestSMTPStartTLSRequiredNotOffered checks that an explicit
// starttls=required holds even for a loopback server.
func TestSMTPStartTLSRequiredNotOffered(t *testing.T) {
	addr, be := startServer(t, plainOnly, "user", "pass")
	explicit := &mailer.SMTP{Addr: addr, Username: "user", Password: "pass", TLS: mailer.StartTLSRequired, TLSConfig: trusting(), Timeout: 10 * time.Second}
	fromURL, err := mailer.NewSMTP("smtp://user:pass@" + addr + "?starttls=required")
	if err != nil {
		t.Fatal(err)
	}
	fromURL.Timeout = 10 * time.Second
	for _, s := range []*mailer.SMTP{explicit, fromURL} {
		err := s.Send(t.Context(), testMessage())
		if err == nil {
			t.Fatal("Send must fail when STARTTLS is required and the server does not offer it")
		}
		if !strings.Contains(err.Error(), "STARTTLS") {
			t.Errorf("error %q should say that STARTTLS is missing", err)
		}
	}
	if ds := be.Deliveries(); len(ds) != 0 {
		t.Errorf("nothing may be delivered without the required TLS; server accepted %d messages", len(ds))
	}
	if n := be.Logins(); n != 0 {
		t.Errorf("credentials must not be sent without the required TLS; server saw %d login attempts", n)
	}
}

// listenOn listens on host, port 0, or skips the test if this machine
// cannot (no IPv6, say).
func listenOn(t *testing.T, host string) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Skipf("cannot listen on %s: %v", host, err)
	}
	return l
}

// TestSMTPLoopbackWithoutStartTLS checks the usual development setup: a
// relay on a loopback host that does not offer STARTTLS (Mailpit, MailHog,
// a test sink) and a URL without a starttls parameter. The message goes in
// plain text, and so do credentials, which never leave the machine.
func TestSMTPLoopbackWithoutStartTLS(t *testing.T) {
	for _, tc := range []struct{ listen, host string }{
		{"127.0.0.1", "127.0.0.1"},
		{"127.0.0.1", "localhost"},
		{"127.0.0.1", "LOCALHOST"},
		{"127.0.0.2", "127.0.0.2"},
		{"::1", "[::1]"},
	} {
		for _, user := range []string{"", "user"} {
			name := tc.host + "/NoAuth"
			if user != "" {
				name = tc.host + "/Auth"
			}
			t.Run(name, func(t *testing.T) {
				pass := ""
				userinfo := ""
				if user != "" {
					pass = "pass"
					userinfo = user + ":" + pass + "@"
				}
				addr, be := serve(t, listenOn(t, tc.listen), plainOnly, user, pass)
				_, port, _ := net.SplitHostPort(addr)
				url := "smtp://" + userinfo + tc.host + ":" + port
				s, err := mailer.NewSMTP(url)
				if err != nil {
					t.Fatal(err)
				}
				s.Timeout = 10 * time.Second
				m := testMessage()
				if err := s.Send(t.Context(), m); err != nil {
					t.Fatalf("NewSMTP(%q).Send to a loopback relay without STARTTLS must deliver; got %v", url, err)
				}
				d := onlyDelivery(t, be)
				if d.TLS {
					t.Error("the plain test server cannot have spoken TLS")
				}
				if d.Username != user {
					t.Errorf("server saw AUTH PLAIN as %q, want %q", d.Username, user)
				}
				wantDelivered(t, d, m)
			})
		}
	}
	t.Run("ZeroTLSMode", func(t *testing.T) {
		addr, be := startServer(t, plainOnly, "", "")
		s := &mailer.SMTP{Addr: addr, Timeout: 10 * time.Second}
		if err := s.Send(t.Context(), testMessage()); err != nil {
			t.Fatalf("an SMTP whose TLS is left at its default must deliver to a loopback relay without STARTTLS; got %v", err)
		}
		onlyDelivery(t, be)
	})
}

// TestSMTPLoopbackStartTLSOffered checks that a loopback server that offers
// STARTTLS still gets it, by default.
func TestSMTPLoopbackStartTLSOffered(t *testing.T) {
	for _, host := range []string{"127.0.0.1", "localhost"} {
		t.Run(host, func(t *testing.T) {
			addr, be := startServer(t, startTLS, "user", "pass")
			_, port, _ := net.SplitHostPort(addr)
			s, err := mailer.NewSMTP("smtp://user:pass@" + host + ":" + port)
			if err != nil {
				t.Fatal(err)
			}
			s.TLSConfig = trusting()
			s.Timeout = 10 * time.Second
			m := testMessage()
			if err := s.Send(t.Context(), m); err != nil {
				t.Fatalf("Send: %v", err)
			}
			d := onlyDelivery(t, be)
			if !d.TLS {
				t.Error("a loopback server that offers STARTTLS must get it")
			}
			if d.Username != "user" {
				t.Errorf("server saw AUTH PLAIN as %q, want user", d.Username)
			}
			wantDelivered(t, d, m)
		})
	}
}

// nonLoopbackIP returns an address of this machine's that is not loopback,
// a stand-in for a remote server, or skips the test if there is none.
func nonLoopbackIP(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Skipf("cannot list this machine's addresses: %v", err)
	}
	for _, a := range addrs {
		// Global unicast includes the private ranges; it leaves out
		// link-local addresses, which need a zone.
		if n, ok := a.(*net.IPNet); ok && n.IP.IsGlobalUnicast() {
			return n.IP.String()
		}
	}
	t.Skip("this machine has no address but loopback and link-local ones")
	return ""
}

// TestSMTPRemoteWithoutStartTLS checks that a server that is not on a
// loopback host gets neither the message nor credentials in plain text,
// unless starttls=optional allows the message.
func TestSMTPRemoteWithoutStartTLS(t *testing.T) {
	ip := nonLoopbackIP(t)
	addr, be := serve(t, listenOn(t, ip), plainOnly, "user", "pass")
	hostport := addr // the IP literal and the port

	byDefault, err := mailer.NewSMTP("smtp://user:pass@" + hostport)
	if err != nil {
		t.Fatal(err)
	}
	zero := &mailer.SMTP{Addr: hostport, Username: "user", Password: "pass"}
	for _, s := range []*mailer.SMTP{byDefault, zero} {
		s.Timeout = 10 * time.Second
		err := s.Send(t.Context(), testMessage())
		if err == nil {
			t.Fatalf("Send to %s, which is not loopback and offers no STARTTLS, must fail by default", hostport)
		}
		if !strings.Contains(err.Error(), "STARTTLS") {
			t.Errorf("error %q should say that STARTTLS is missing", err)
		}
	}

	optional, err := mailer.NewSMTP("smtp://user:pass@" + hostport + "?starttls=optional")
	if err != nil {
		t.Fatal(err)
	}
	optional.Timeout = 10 * time.Second
	if err := optional.Send(t.Context(), testMessage()); err == nil {
		t.Errorf("with starttls=optional, credentials must still not go in plain text to %s, which is not loopback", hostport)
	}
	if n := be.Logins(); n != 0 {
		t.Errorf("credentials must not go in plain text to a host that is not loopback; server saw %d login attempts", n)
	}
	if ds := be.Deliveries(); len(ds) != 0 {
		t.Errorf("server accepted %d messages, want none", len(ds))
	}

	t.Run("OptionalWithoutCredentials", func(t *testing.T) {
		addr, be := serve(t, listenOn(t, ip), plainOnly, "", "")
		s, err := mailer.NewSMTP("smtp://" + addr + "?starttls=optional")
		if err != nil {
			t.Fatal(err)
		}
		s.Timeout = 10 * time.Second
		m := testMessage()
		if err := s.Send(t.Context(), m); err != nil {
			t.Fatalf("starttls=optional must let the message go to a server without STARTTLS; got %v", err)
		}
		wantDelivered(t, onlyDelivery(t, be), m)
	})
}

func TestSMTPUntrustedCertificate(t *testing.T) {
	for _, mode := range []serverMode{startTLS, implicitTLS} {
		addr, be := startServer(t, mode, "user", "pass")
		s := &mailer.SMTP{Addr: addr, Username: "user", Password: "pass", Timeout: 10 * time.Second}
		if mode == implicitTLS {
			s.TLS = mailer.ImplicitTLS
		}
		err := s.Send(t.Context(), testMessage())
		var unknown x509.UnknownAuthorityError
		var verify *tls.CertificateVerificationError
		if !errors.As(err, &unknown) && !errors.As(err, &verify) {
			t.Errorf("Send to a server whose certificate is not trusted must fail verification; got error %v", err)
		}
		if ds := be.Deliveries(); len(ds) != 0 {
			t.Errorf("nothing may be delivered over an unverified connection; server accepted %d messages", len(ds))
		}
	}
}

func TestSMTPWrongPassword(t *testing.T) {
	addr, be := startServer(t, startTLS, "user", "right")
	s := &mailer.SMTP{Addr: addr, Username: "user", Password: "wrong", TLSConfig: trusting(), Timeout: 10 * time.Second}
	err := s.Send(t.Context(), testMessage())
	if err == nil {
		t.Fatal("Send with a wrong password must fail")
	}
	if !strings.Contains(err.Error(), "535") {
		t.Errorf("error %q should carry the server's 535 reply", err)
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		t.Errorf("a refused login is not a timeout; got %v", err)
	}
	if n := be.Logins(); n != 1 {
		t.Errorf("server saw %d login attempts, want 1", n)
	}
	if ds := be.Deliveries(); len(ds) != 0 {
		t.Errorf("nothing may be delivered after a failed login; server accepted %d messages", len(ds))
	}
}

func TestSMTPServerRefusesMail(t *testing.T) {
	// The test server demands AUTH before MAIL; the client has no
	// credentials, so the server refuses MAIL FROM.
	addr, be := startServer(t, startTLS, "someone", "something")
	s := &mailer.SMTP{Addr: addr, TLSConfig: trusting(), Timeout: 10 * time.Second}
	if err := s.Send(t.Context(), testMessage()); err == nil {
		t.Error("Send must report the server's refusal of MAIL FROM")
	}
	if ds := be.Deliveries(); len(ds) != 0 {
		t.Errorf("server accepted %d messages, want none", len(ds))
	}
}

func TestSMTPLongLines(t *testing.T) {
	addr, be := startServer(t, startTLS, "", "")
	s := &mailer.SMTP{Addr: addr, TLSConfig: trusting(), Timeout: 10 * time.Second}
	m := testMessage()
	m.Subject = strings.Repeat("Réinitialisation très longue ", 40)
	m.To.Name = strings.Repeat("Zoë ", 150)
	m.Text = strings.Repeat("é", 3000) + "\n" + strings.Repeat("x", 3000)
	if err := s.Send(t.Context(), m); err != nil {
		t.Fatalf("Send: no line of a message may exceed 1000 octets, however long its subject, names or body lines; got error %v", err)
	}
	wantDelivered(t, onlyDelivery(t, be), m)
}

// TestSMTPQuitFails checks that a message the server has accepted counts as
// sent even if the connection breaks before QUIT is answered: reporting a
// failure would make the caller send it twice.
func TestSMTPQuitFails(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	received := make(chan string, 1)
	go func() {
		defer close(received)
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		tc := textproto.NewConn(c)
		reply := func(line string) { tc.PrintfLine("%s", line) }
		reply("220 mx.test ESMTP")
		for {
			line, err := tc.ReadLine()
			if err != nil {
				return
			}
			switch cmd := strings.ToUpper(strings.Fields(line + " x")[0]); cmd {
			case "EHLO", "HELO":
				reply("250 mx.test")
			case "MAIL", "RCPT":
				reply("250 ok")
			case "DATA":
				reply("354 go ahead")
				data, err := tc.ReadDotBytes()
				if err != nil {
					return
				}
				reply("250 queued")
				received <- crlf(string(data)) // ReadDotBytes made the CRLFs LFs
				// Hang up before QUIT.
				return
			default:
				reply("502 unexpected " + cmd)
			}
		}
	}()

	s := &mailer.SMTP{Addr: l.Addr().String(), TLS: mailer.InsecureStartTLSOptional, Timeout: 10 * time.Second}
	m := testMessage()
	if err := s.Send(t.Context(), m); err != nil {
		t.Errorf("Send must succeed once the server has accepted the message, whatever becomes of QUIT; got %v", err)
	}
	data, ok := <-received
	if !ok {
		t.Fatal("the server received no message")
	}
	wantDelivered(t, delivery{From: []string{m.From.Address}, To: []string{m.To.Address}, Data: []byte(data)}, m)
}

// ---------------------------------------------------------------------------
// Timeouts and cancellation

func TestSMTPTimeout(t *testing.T) {
	const timeout = 300 * time.Millisecond
	// Generous, for the race detector on a busy machine: the point is that
	// Send returns at all, not how punctually.
	const slack = 3 * time.Second

	for _, tc := range []struct {
		name     string
		greeting string
		mode     mailer.TLSMode
	}{
		{"NoGreeting", "", mailer.StartTLSRequired},
		{"NoTLSHandshake", "", mailer.ImplicitTLS},
		{"SilentAfterGreeting", "220 mx.test ESMTP\r\n", mailer.StartTLSRequired},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			addr := silentServer(t, tc.greeting)

			t.Run("Timeout", func(t *testing.T) {
				s := &mailer.SMTP{Addr: addr, TLS: tc.mode, TLSConfig: trusting(), Timeout: timeout}
				start := time.Now()
				err := s.Send(t.Context(), testMessage())
				elapsed := time.Since(start)
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("Send to a silent server must fail with an error wrapping context.DeadlineExceeded; got %v", err)
				}
				if elapsed < timeout-50*time.Millisecond || elapsed > timeout+slack {
					t.Errorf("Send returned after %v, want about the SMTP.Timeout of %v", elapsed, timeout)
				}
			})
			t.Run("ContextDeadline", func(t *testing.T) {
				s := &mailer.SMTP{Addr: addr, TLS: tc.mode, TLSConfig: trusting(), Timeout: time.Minute}
				ctx, cancel := context.WithTimeout(t.Context(), timeout)
				defer cancel()
				start := time.Now()
				err := s.Send(ctx, testMessage())
				elapsed := time.Since(start)
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("Send must honour the context's deadline when it is sooner than SMTP.Timeout; got %v", err)
				}
				if elapsed > timeout+slack {
					t.Errorf("Send returned after %v, want about the context's deadline of %v", elapsed, timeout)
				}
			})
			t.Run("Cancel", func(t *testing.T) {
				s := &mailer.SMTP{Addr: addr, TLS: tc.mode, TLSConfig: trusting(), Timeout: time.Minute}
				ctx, cancel := context.WithCancel(t.Context())
				timer := time.AfterFunc(100*time.Millisecond, cancel)
				defer timer.Stop()
				start := time.Now()
				err := s.Send(ctx, testMessage())
				elapsed := time.Since(start)
				if !errors.Is(err, context.Canceled) {
					t.Errorf("Send must stop when its context is cancelled, with an error wrapping context.Canceled; got %v", err)
				}
				if elapsed > 100*time.Millisecond+slack {
					t.Errorf("Send returned %v after it was cancelled, want promptly", elapsed-100*time.Millisecond)
				}
			})
		})
	}
}

func TestSMTPCancelledBeforeSend(t *testing.T) {
	addr, be := startServer(t, startTLS, "", "")
	s := &mailer.SMTP{Addr: addr, TLSConfig: trusting(), Timeout: 10 * time.Second}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := s.Send(ctx, testMessage()); !errors.Is(err, context.Canceled) {
		t.Errorf("Send with a cancelled context must fail with an error wrapping context.Canceled; got %v", err)
	}
	if ds := be.Deliveries(); len(ds) != 0 {
		t.Errorf("server accepted %d messages, want none", len(ds))
	}
}

// ---------------------------------------------------------------------------
// Header injection

func TestSMTPHeaderInjection(t *testing.T) {
	addr, be := startServer(t, startTLS, "", "")
	s := &mailer.SMTP{Addr: addr, TLSConfig: trusting(), Timeout: 10 * time.Second}
	for i, m := range injectionMessages() {
		if err := s.Send(t.Context(), m); err != nil {
			t.Fatalf("message %d: Send: %v", i, err)
		}
		ds := be.Deliveries()
		d := ds[len(ds)-1]
		if !slices.Equal(d.To, []string{m.To.Address}) {
			t.Errorf("message %d: server saw RCPT TO %q, want only %q", i, d.To, m.To.Address)
		}
		p := wantDelivered(t, d, m)
		wantNoInjectedHeader(t, p.header)
	}
}

// injectionMessages are messages whose subject and display names try to
// smuggle in headers, and a body part.
func injectionMessages() []mailer.Message {
	base := mailer.Message{
		From: mail.Address{Name: "Latchkit", Address: "no-reply@latchkit.test"},
		To:   mail.Address{Name: "Zoë", Address: "zoe@example.test"},
		Text: "body",
		HTML: "<p>body</p>",
	}
	var ms []mailer.Message
	for _, inj := range []string{
		"Hi\r\nBcc: victim@evil.test",
		"Hi\nBcc: victim@evil.test",
		"Hi\rBcc: victim@evil.test",
		"Hi\r\n\r\nX-Injected: body",
		"Hi\r\n X-Injected: folded",
		"Zoë\r\nX-Injected: yes\r\nContent-Type: text/plain",
	} {
		m := base
		m.Subject = inj
		ms = append(ms, m)
		m = base
		m.Subject = "names"
		m.To.Name = inj
		ms = append(ms, m)
		m = base
		m.Subject = "names"
		m.From.Name = inj
		ms = append(ms, m)
	}
	return ms
}

// wantNoInjectedHeader checks that h has exactly the headers Bytes writes.
func wantNoInjectedHeader(t *testing.T, h mail.Header) {
	t.Helper()
	allowed := []string{"Content-Transfer-Encoding", "Content-Type", "Date", "From", "Message-Id", "Mime-Version", "Subject", "To"}
	for k, vs := range h {
		if !slices.Contains(allowed, k) {
			t.Errorf("injected header %s: %q", k, vs)
		} else if len(vs) != 1 {
			t.Errorf("header %s appears %d times: %q", k, len(vs), vs)
		}
	}
	for _, k := range []string{"Bcc", "X-Injected"} {
		if v, ok := h[k]; ok {
			t.Errorf("injected header %s: %q", k, v)
		}
	}
}
