package main

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"html/template"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/latchkit/auth/mailer"
)

// outbox is the development outbox of -dev: a mailer.Mailer that keeps the
// last emails in memory, to show at /dev/outbox, and hands each on to the
// demo's mailer (standard output or -smtp). An application would not
// keep its users' email; this is for trying the demo with no inbox.
type outbox struct {
	next mailer.Mailer
	max  int
	now  func() time.Time

	mu     sync.Mutex
	lastID int
	mails  []outboxMail // oldest first
}

// outboxMail is an email as the outbox shows it, and as GET
// /dev/outbox.json answers it.
type outboxMail struct {
	ID      int       `json:"id"`
	Time    time.Time `json:"time"`
	From    string    `json:"from"`
	To      string    `json:"to"`
	Subject string    `json:"subject"`
	Text    string    `json:"text"`
	// Links are the URLs in the text: reset, verification, sign-in and
	// recovery links.
	Links []string `json:"links"`
	// Code is a passwordless sign-in code, a number on a line of its
	// own; absent in other emails.
	Code string `json:"code,omitempty"`
	// Error says why the demo's mailer did not send it; absent when it
	// did.
	Error string `json:"error,omitempty"`
}

// outboxSize is how many emails the outbox keeps: the newest.
const outboxSize = 100

func newOutbox(next mailer.Mailer) *outbox {
	return &outbox{next: next, max: outboxSize, now: time.Now}
}

// Send keeps m and hands it on; the error is the next mailer's. A message
// the next mailer refuses is kept too, with the reason.
func (o *outbox) Send(ctx context.Context, m mailer.Message) error {
	err := o.next.Send(ctx, m)
	text := m.Text
	if text == "" {
		text = m.HTML
	}
	mail := outboxMail{
		Time:    o.now().UTC(),
		From:    m.From.String(),
		To:      m.To.Address,
		Subject: m.Subject,
		Text:    text,
		Links:   outboxLinks(text),
	}
	if c := outboxCode.FindStringSubmatch(text); c != nil {
		mail.Code = c[1]
	}
	if err != nil {
		mail.Error = err.Error()
	}
	o.mu.Lock()
	o.lastID++
	mail.ID = o.lastID
	o.mails = append(o.mails, mail)
	if len(o.mails) > o.max {
		o.mails = append(o.mails[:0:0], o.mails[len(o.mails)-o.max:]...)
	}
	o.mu.Unlock()
	return err
}

// list returns the emails kept, newest first.
func (o *outbox) list() []outboxMail {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make([]outboxMail, len(o.mails))
	for i, m := range o.mails {
		out[len(out)-1-i] = m
	}
	return out
}

var (
	// outboxCode is a passwordless code as the library's email writes
	// it: six digits on a line of their own.
	outboxCode = regexp.MustCompile(`(?m)^\s*(\d{6})\s*$`)
	outboxLink = regexp.MustCompile(`https?://[^\s<>"']+`)
)

// outboxLinks are the URLs in text, without the punctuation that may end
// a sentence after one.
func outboxLinks(text string) []string {
	links := []string{}
	for _, l := range outboxLink.FindAllString(text, -1) {
		links = append(links, strings.TrimRight(l, ".,;:!?)"))
	}
	return links
}

// textPart is a run of an email's text: a link or not.
type textPart struct {
	Text string
	Link bool
}

// outboxParts splits text into links and the text between them, for the
// page to make the links clickable and escape the rest.
func outboxParts(text string) []textPart {
	var parts []textPart
	rest := text
	for {
		loc := outboxLink.FindStringIndex(rest)
		if loc == nil {
			break
		}
		link := strings.TrimRight(rest[loc[0]:loc[1]], ".,;:!?)")
		if loc[0] > 0 {
			parts = append(parts, textPart{Text: rest[:loc[0]]})
		}
		parts = append(parts, textPart{Text: link, Link: true})
		rest = rest[loc[0]+len(link):]
	}
	if rest != "" {
		parts = append(parts, textPart{Text: rest})
	}
	return parts
}

// mount serves the outbox at /dev/outbox (HTML) and /dev/outbox.json.
func (o *outbox) mount(mux *http.ServeMux) {
	mux.HandleFunc("GET /dev/outbox", o.servePage)
	mux.HandleFunc("GET /dev/outbox.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		// Links as they are, & and all, for scripts that grep them.
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		enc.Encode(map[string]any{"emails": o.list()})
	})
}

// outboxScript reloads the page when an email arrives (checking every few
// seconds, while the tab is visible) and copies a code on a click. The
// page's CSP allows it by its hash, and nothing else.
const outboxScript = `
const newest = document.body.dataset.newest;
setInterval(async () => {
  if (document.hidden) return;
  try {
    const res = await fetch("outbox.json", { cache: "no-store" });
    const { emails } = await res.json();
    if (String(emails.length ? emails[0].id : 0) !== newest) location.reload();
  } catch {}
}, 3000);
for (const b of document.querySelectorAll("button[data-code]")) {
  b.addEventListener("click", async () => {
    const status = document.getElementById("status");
    try {
      await navigator.clipboard.writeText(b.dataset.code);
      status.textContent = "Code " + b.dataset.code + " copied.";
    } catch {
      status.textContent = "Could not copy: select the code and copy it.";
    }
  });
}
`

var outboxCSP = func() string {
	sum := sha256.Sum256([]byte(outboxScript))
	return "default-src 'none'; script-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'; " +
		"style-src 'unsafe-inline'; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
}()

type outboxPageMail struct {
	outboxMail
	Parts []textPart
}

func (o *outbox) servePage(w http.ResponseWriter, r *http.Request) {
	var page struct {
		Newest int
		Mails  []outboxPageMail
		Script template.JS
	}
	for _, m := range o.list() {
		page.Mails = append(page.Mails, outboxPageMail{m, outboxParts(m.Text)})
	}
	if len(page.Mails) > 0 {
		page.Newest = page.Mails[0].ID
	}
	page.Script = template.JS(outboxScript)
	devHeaders(w, outboxCSP)
	outboxTemplate.Execute(w, page)
}

var outboxTemplate = devTemplate("outbox", `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Outbox ({{len .Mails}}) · auth demo</title>
<style>{{template "style"}}
  body { max-width: 48rem; }
  header { display: flex; flex-wrap: wrap; gap: .5rem 1rem; align-items: center; justify-content: space-between; }
  h2 { font-size: 1.1rem; margin: 0 0 .25rem; overflow-wrap: anywhere; }
  article { border: 1px solid #bbb; border-radius: 6px; padding: .75rem; margin: 1rem 0; }
  dl { display: grid; grid-template-columns: auto 1fr; gap: 0 .75rem; margin: 0 0 .5rem; font-size: .9rem; }
  dt { color: #444; }
  dd { margin: 0; overflow-wrap: anywhere; }
  pre { white-space: pre-wrap; overflow-wrap: anywhere; font: .9rem/1.45 ui-monospace, monospace; background: #f6f6f6; padding: .5rem; border-radius: 4px; margin: 0; }
  a { color: #0b4fb3; }
  .code { display: flex; flex-wrap: wrap; align-items: center; gap: .5rem; margin: .25rem 0 .5rem; }
  .code output { font: 700 1.6rem/1.2 ui-monospace, monospace; letter-spacing: .15em; user-select: all; background: #eef4ff; padding: .15rem .5rem; border-radius: 4px; }
</style>
</head>
<body data-newest="{{.Newest}}">
<main>
<p class="dev" role="note"><strong>Development only.</strong> The emails this demo sent in this run (the last 100), kept in memory with <code>-dev</code>. They are also printed on standard output, or sent with <code>-smtp</code>. The page reloads when one arrives.</p>
<header>
<h1>Outbox</h1>
<form method="get" action="/dev/outbox"><button type="submit">Refresh</button></form>
</header>
<p><a href="/">Back to the demo</a> · <a href="/dev/outbox.json">JSON</a></p>
<p id="status" role="status" aria-live="polite"></p>
{{if not .Mails}}<p>No email yet. Ask the demo for a sign-in code, a password reset or a verification link, and it appears here.</p>{{end}}
{{range .Mails}}
<article aria-labelledby="mail-{{.ID}}">
<h2 id="mail-{{.ID}}">{{.Subject}}</h2>
<dl>
<dt>To</dt><dd>{{.To}}</dd>
<dt>Sent</dt><dd><time datetime="{{.Time.Format "2006-01-02T15:04:05Z07:00"}}">{{.Time.Format "15:04:05 UTC, 2 Jan"}}</time></dd>
</dl>
{{if .Error}}<p class="error">Not sent: {{.Error}}</p>{{end}}
{{if .Code}}<div class="code"><span>Code</span> <output aria-label="sign-in code">{{.Code}}</output> <button class="secondary" type="button" data-code="{{.Code}}">Copy code</button></div>{{end}}
<pre>{{range .Parts}}{{if .Link}}<a href="{{.Text}}" target="_blank" rel="noopener noreferrer">{{.Text}}</a>{{else}}{{.Text}}{{end}}{{end}}</pre>
</article>
{{end}}
</main>
<script>{{.Script}}</script>
</body>
</html>
`)
