package mailer_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net/mail"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/latchkit/auth/mailer"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// fixedTime is the Date of the golden message: any time will do, as long as
// it is fixed and not in UTC, so that the zone shows in the header.
var fixedTime = time.Date(2030, time.January, 2, 3, 4, 5, 0, time.FixedZone("CET", 60*60))

// stable replaces what varies between two renderings of one message at one
// time, the Message-ID and the multipart boundary, with placeholders.
func stable(t *testing.T, msg []byte) []byte {
	t.Helper()
	id := regexp.MustCompile(`(?m)^Message-ID: <[0-9a-f]{32}@`)
	if !id.Match(msg) {
		t.Fatalf("message has no Message-ID of 32 random hex digits:\n%s", msg)
	}
	msg = id.ReplaceAll(msg, []byte("Message-ID: <MESSAGE-ID@"))
	if m := regexp.MustCompile(`boundary="([^"]+)"`).FindSubmatch(msg); m != nil {
		msg = bytes.ReplaceAll(msg, m[1], []byte("BOUNDARY"))
	}
	return msg
}

// wantWellFormed checks the line structure that SMTP and RFC 5322 demand:
// CRLF line endings and no bare CR or LF, no line over 998 octets, and
// header lines folded to at most 78 octets wherever there is a space to fold
// at (an encoded word of up to 75 octets after a header name may exceed it).
func wantWellFormed(t *testing.T, msg []byte) {
	t.Helper()
	if bytes.Contains(bytes.ReplaceAll(msg, []byte("\r\n"), nil), []byte("\n")) ||
		bytes.Contains(bytes.ReplaceAll(msg, []byte("\r\n"), nil), []byte("\r")) {
		t.Errorf("message has a bare CR or LF; every line must end in CRLF:\n%q", msg)
	}
	header, _, ok := bytes.Cut(msg, []byte("\r\n\r\n"))
	if !ok {
		t.Fatalf("message has no empty line after its header:\n%s", msg)
	}
	for line := range strings.SplitSeq(string(header), "\r\n") {
		rest := strings.TrimPrefix(line, " ")
		if rest == line {
			_, rest, _ = strings.Cut(line, ": ")
		}
		if len(line) > 78 && strings.Contains(rest, " ") {
			t.Errorf("header line of %d octets, want it folded to at most 78: %q", len(line), line)
		}
	}
	for line := range strings.SplitSeq(string(msg), "\r\n") {
		if len(line) > 998 {
			t.Errorf("line of %d octets, want at most 998: %.60q…", len(line), line)
		}
	}
}

func TestMessageBytesGolden(t *testing.T) {
	m := mailer.Message{
		From:    mail.Address{Name: "Latchkit", Address: "no-reply@latchkit.test"},
		To:      mail.Address{Name: "Zoë Ådams", Address: "zoe@example.test"},
		Subject: "Réinitialisez votre mot de passe",
		Text: "Bonjour Zoë,\n\n" +
			"Pour choisir un nouveau mot de passe, ouvrez ce lien dans l'heure qui vient :\n" +
			"https://app.example.test/reset?token=q8Zt3-Ab_c0dEf=&lang=fr\n\n" +
			"Si vous n'avez rien demandé, ignorez ce message. \n" +
			".\n",
		HTML: "<p>Bonjour Zoë,</p>\r\n" +
			"<p><a href=\"https://app.example.test/reset?token=q8Zt3-Ab_c0dEf=&amp;lang=fr\">Choisir un nouveau mot de passe</a></p>\r\n",
	}
	got, err := m.Bytes(fixedTime)
	if err != nil {
		t.Fatal(err)
	}
	wantWellFormed(t, got)
	got = stable(t, got)

	golden := filepath.Join("testdata", "message.golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("Message.Bytes differs from %s (run go test -update if the change is intended):\ngot:\n%s\nwant:\n%s", golden, got, want)
	}

	// The placeholders hide nothing that should be fixed: a second
	// rendering differs only in them.
	again, err := m.Bytes(fixedTime)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(stable(t, again), got) {
		t.Error("two renderings of one message at one time must differ only in Message-ID and boundary")
	}
}

func TestMessageBytesSinglePart(t *testing.T) {
	base := mailer.Message{
		From:    mail.Address{Address: "no-reply@latchkit.test"},
		To:      mail.Address{Address: "zoe@example.test"},
		Subject: "Hello",
	}
	for _, tc := range []struct {
		name, text, html string
	}{
		{"TextOnly", "Bonjour Zoë\nligne deux\r\n" + strings.Repeat("long ", 40), ""},
		{"HTMLOnly", "", "<p>Bonjour Zoë</p>\n<p>=3D is not an escape here</p>"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := base
			m.Text, m.HTML = tc.text, tc.html
			msg, err := m.Bytes(fixedTime)
			if err != nil {
				t.Fatal(err)
			}
			wantWellFormed(t, msg)
			p := parse(t, msg)
			if len(p.parts) != 1 {
				t.Fatalf("message has parts %v, want exactly one", keys(p.parts))
			}
			want := map[string]string{"text/plain": crlf(tc.text), "text/html": crlf(tc.html)}
			for typ, body := range p.parts {
				if body != want[typ] {
					t.Errorf("%s body decodes to %q, want %q", typ, body, want[typ])
				}
			}
			if d, err := p.header.Date(); err != nil || !d.Equal(fixedTime) {
				t.Errorf("Date = %q (%v), want %v", p.header.Get("Date"), err, fixedTime)
			}
		})
	}
}

func TestMessageBytesUniqueID(t *testing.T) {
	m := testMessage()
	seen := map[string]bool{}
	for range 20 {
		msg, err := m.Bytes(fixedTime)
		if err != nil {
			t.Fatal(err)
		}
		id := parse(t, msg).header.Get("Message-Id")
		if seen[id] {
			t.Fatalf("Message-ID %s repeated", id)
		}
		seen[id] = true
	}
}

func TestMessageBytesLongHeaders(t *testing.T) {
	m := testMessage()
	m.Subject = strings.Repeat("Réinitialisation très longue ", 40)
	m.From.Name = strings.TrimSpace(strings.Repeat("Équipe ", 30))
	m.To.Name = strings.TrimSpace(strings.Repeat("Zoë (dite « la Grande ») ", 10))
	msg, err := m.Bytes(fixedTime)
	if err != nil {
		t.Fatal(err)
	}
	wantWellFormed(t, msg)
	wantDelivered(t, delivery{From: []string{m.From.Address}, To: []string{m.To.Address}, Data: msg}, m)

	// A long ASCII subject folds too, and unfolds to exactly what it was.
	m.Subject = strings.Repeat("a fairly long ascii subject, ", 30) + " two  spaces  in  a row"
	m.To.Name = strings.TrimSpace(strings.Repeat("Plain Name ", 10))
	msg, err = m.Bytes(fixedTime)
	if err != nil {
		t.Fatal(err)
	}
	wantWellFormed(t, msg)
	wantDelivered(t, delivery{From: []string{m.From.Address}, To: []string{m.To.Address}, Data: msg}, m)
}

func TestMessageBytesHeaderInjection(t *testing.T) {
	for i, m := range injectionMessages() {
		msg, err := m.Bytes(fixedTime)
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		wantWellFormed(t, msg)
		p := wantDelivered(t, delivery{From: []string{m.From.Address}, To: []string{m.To.Address}, Data: msg}, m)
		wantNoInjectedHeader(t, p.header)
	}
}

// invalidMessages are messages that cannot be sent, by what is wrong.
func invalidMessages() map[string]mailer.Message {
	valid := mailer.Message{
		From:    mail.Address{Name: "Latchkit", Address: "no-reply@latchkit.test"},
		To:      mail.Address{Name: "Zoë", Address: "zoe@example.test"},
		Subject: "Hello",
		Text:    "body",
	}
	with := func(f func(m *mailer.Message)) mailer.Message {
		m := valid
		f(&m)
		return m
	}
	return map[string]mailer.Message{
		"NoTo":             with(func(m *mailer.Message) { m.To = mail.Address{} }),
		"ToNameOnly":       with(func(m *mailer.Message) { m.To.Address = "" }),
		"NoFrom":           with(func(m *mailer.Message) { m.From = mail.Address{} }),
		"NoBody":           with(func(m *mailer.Message) { m.Text, m.HTML = "", "" }),
		"ToNotAnAddress":   with(func(m *mailer.Message) { m.To.Address = "not an address" }),
		"ToNoDomain":       with(func(m *mailer.Message) { m.To.Address = "zoe@" }),
		"ToNoLocalPart":    with(func(m *mailer.Message) { m.To.Address = "@example.test" }),
		"FromNotAnAddress": with(func(m *mailer.Message) { m.From.Address = "latchkit" }),
		"ToWithName":       with(func(m *mailer.Message) { m.To.Address = "Zoë <zoe@example.test>" }),
		"ToTwoAddresses":   with(func(m *mailer.Message) { m.To.Address = "zoe@example.test, eve@evil.test" }),
		"ToCRLF":           with(func(m *mailer.Message) { m.To.Address = "zoe@example.test\r\nRCPT TO:<eve@evil.test>" }),
		"FromLF":           with(func(m *mailer.Message) { m.From.Address = "no-reply@latchkit.test\nBcc: eve@evil.test" }),
		"ToSpaces":         with(func(m *mailer.Message) { m.To.Address = " zoe@example.test " }),
	}
}

func TestInvalidMessage(t *testing.T) {
	// Nothing listens on this address: a message that got past validation
	// would fail differently, and quickly.
	smtpMailer := &mailer.SMTP{Addr: "127.0.0.1:1", Timeout: time.Second}
	var logged bytes.Buffer
	logMailer := mailer.NewLog(&logged)
	for name, m := range invalidMessages() {
		t.Run(name, func(t *testing.T) {
			if msg, err := m.Bytes(fixedTime); !errors.Is(err, mailer.ErrInvalidMessage) || msg != nil {
				t.Errorf("Bytes = %q, %v; want nil and an error matching ErrInvalidMessage", msg, err)
			}
			if err := logMailer.Send(t.Context(), m); !errors.Is(err, mailer.ErrInvalidMessage) {
				t.Errorf("Log.Send: got %v, want an error matching ErrInvalidMessage", err)
			}
			if err := smtpMailer.Send(t.Context(), m); !errors.Is(err, mailer.ErrInvalidMessage) {
				t.Errorf("SMTP.Send: got %v, want an error matching ErrInvalidMessage", err)
			}
		})
	}
	if logged.Len() != 0 {
		t.Errorf("Log must write nothing for invalid messages; wrote %q", logged.String())
	}
}

func TestValidMessageVariants(t *testing.T) {
	for _, m := range []mailer.Message{
		{From: mail.Address{Address: "a@b.test"}, To: mail.Address{Address: "c@d.test"}, Text: "t"},
		{From: mail.Address{Address: "a@b.test"}, To: mail.Address{Address: "c@d.test"}, HTML: "<p>h</p>"},
		{From: mail.Address{Address: "first.last+tag@sub.b.test"}, To: mail.Address{Address: "c@[192.0.2.1]"}, Text: "t"},
	} {
		if _, err := m.Bytes(fixedTime); err != nil {
			t.Errorf("Bytes(%+v): %v", m, err)
		}
	}
}

// ---------------------------------------------------------------------------
// Log

func TestLog(t *testing.T) {
	var buf bytes.Buffer
	l := mailer.NewLog(&buf)
	m := testMessage()
	if err := l.Send(t.Context(), m); err != nil {
		t.Fatal(err)
	}
	got := buf.String()
	for _, want := range []string{
		"From: " + m.From.String() + "\n",
		"To: " + m.To.String() + "\n",
		"Subject: " + m.Subject + "\n",
		m.Text,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("Log wrote\n%s\nwhich lacks %q", got, want)
		}
	}
	if strings.Contains(got, m.HTML) {
		t.Errorf("Log must write the text body when there is one, not the HTML; wrote\n%s", got)
	}

	buf.Reset()
	m.Text = ""
	if err := l.Send(t.Context(), m); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), m.HTML) {
		t.Errorf("Log must write the HTML body of a message without text; wrote\n%s", buf.String())
	}
}

func TestLogConcurrent(t *testing.T) {
	var buf bytes.Buffer
	l := mailer.NewLog(&buf)
	var wg sync.WaitGroup
	const n = 20
	for i := range n {
		wg.Go(func() {
			m := testMessage()
			m.Text = fmt.Sprintf("message %d\n", i)
			if err := l.Send(context.Background(), m); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	entries := strings.Split(strings.TrimSuffix(buf.String(), "---\n"), "---\n--- email\n")
	if len(entries) != n {
		t.Fatalf("Log wrote %d entries, want %d, each whole:\n%s", len(entries), n, buf.String())
	}
	for _, e := range entries {
		if strings.Count(e, "Subject: ") != 1 || strings.Count(e, "message ") != 1 {
			t.Errorf("interleaved entry:\n%s", e)
		}
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestLogWriteError(t *testing.T) {
	if err := mailer.NewLog(failingWriter{}).Send(t.Context(), testMessage()); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("Log.Send must report the writer's error; got %v", err)
	}
}

func TestMailerFunc(t *testing.T) {
	var got mailer.Message
	var f mailer.Mailer = mailer.Func(func(_ context.Context, m mailer.Message) error {
		got = m
		return errors.New("sent")
	})
	m := testMessage()
	if err := f.Send(t.Context(), m); err == nil || err.Error() != "sent" {
		t.Errorf("Func.Send must return the function's error; got %v", err)
	}
	if got != m {
		t.Errorf("Func.Send passed %+v, want %+v", got, m)
	}
}

// ---------------------------------------------------------------------------
// Examples

func ExampleNewLog() {
	m := mailer.NewLog(os.Stdout)
	err := m.Send(context.Background(), mailer.Message{
		From:    mail.Address{Name: "Latchkit", Address: "no-reply@example.com"},
		To:      mail.Address{Address: "zoe@example.com"},
		Subject: "Reset your password",
		Text:    "Open https://app.example.com/reset?token=abc to choose a new password.",
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// --- email
	// From: "Latchkit" <no-reply@example.com>
	// To: <zoe@example.com>
	// Subject: Reset your password
	//
	// Open https://app.example.com/reset?token=abc to choose a new password.
	// ---
}

func ExampleNewSMTP() {
	// Submission with STARTTLS on port 587, the default, which a host that
	// is not loopback must offer; the user name and password are
	// percent-encoded in the URL.
	m, err := mailer.NewSMTP("smtp://apikey:s3cr%40t@smtp.example.com")
	if err != nil {
		log.Fatal(err)
	}
	m.Timeout = 10 * time.Second
	fmt.Println(m.Addr, m.TLS == mailer.StartTLSRequiredUnlessLoopback, m.Username, m.Password)

	// Implicit TLS on port 465.
	m, err = mailer.NewSMTP("smtps://apikey:s3cr%40t@smtp.example.com")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(m.Addr, m.TLS == mailer.ImplicitTLS)

	// A development relay on this machine (Mailpit, say): the same default
	// mode goes on in plain text if it does not offer STARTTLS.
	m, err = mailer.NewSMTP("smtp://localhost:1025")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(m.Addr, m.TLS == mailer.StartTLSRequiredUnlessLoopback)

	// A relay on the local network that may not speak TLS.
	m, err = mailer.NewSMTP("smtp://relay.internal:25?starttls=optional")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(m.Addr, m.TLS == mailer.InsecureStartTLSOptional)
	// Output:
	// smtp.example.com:587 true apikey s3cr@t
	// smtp.example.com:465 true
	// localhost:1025 true
	// relay.internal:25 true
}

func ExampleSMTP_Send() {
	m, err := mailer.NewSMTP("smtp://apikey:secret@smtp.example.com:587")
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = m.Send(ctx, mailer.Message{
		From:    mail.Address{Name: "Latchkit", Address: "no-reply@example.com"},
		To:      mail.Address{Address: "zoe@example.com"},
		Subject: "Reset your password",
		Text:    "Open https://app.example.com/reset?token=abc to choose a new password.",
		HTML:    `<p><a href="https://app.example.com/reset?token=abc">Choose a new password</a></p>`,
	})
	if err != nil {
		log.Print(err)
	}
}
