package auth

import (
	"context"
	"embed"
	"fmt"
	htmltemplate "html/template"
	"log/slog"
	"net/http"
	"net/mail"
	"strconv"
	"strings"
	texttemplate "text/template"
	"time"

	"github.com/latchkit/auth/internal/wire"
	"github.com/latchkit/auth/mailer"
)

// EmailTemplate renders an email. Each template is executed with the data
// of the email it renders (ResetEmailData for the reset email,
// VerificationEmailData for the verification email,
// PasswordlessEmailData for the passwordless email,
// PasskeyRecoveryEmailData for the passkey recovery email,
// WrongCodeEmailData for the wrong-code notice).
type EmailTemplate struct {
	Subject *texttemplate.Template
	Text    *texttemplate.Template // the plain-text body
	HTML    *htmltemplate.Template // the HTML body; nil for text only
}

// ResetEmailData is what the reset email templates can show.
type ResetEmailData struct {
	Email    string // the recipient, whose password the link resets
	Link     string // the reset page, with the token in its query
	ValidFor string // how long the link works, in words: "1 hour"
}

// VerificationEmailData is what the verification email templates can
// show.
type VerificationEmailData struct {
	Email    string // the address to verify, and the recipient
	Link     string // the verification page, with the token in its query
	ValidFor string // how long the link works, in words: "1 day"
}

//go:embed templates
var templateFS embed.FS

// The default templates, parsed once. They are never handed out: each
// Auth, and each caller of the Default functions, gets its own copy, so
// that no change made through one reaches another.
var (
	defaultResetEmail = EmailTemplate{
		Subject: texttemplate.Must(texttemplate.New("subject").Parse("Reset your password")),
		Text:    texttemplate.Must(texttemplate.ParseFS(templateFS, "templates/reset_password.txt")),
		HTML:    htmltemplate.Must(htmltemplate.ParseFS(templateFS, "templates/reset_password.html")),
	}
	defaultVerificationEmail = EmailTemplate{
		Subject: texttemplate.Must(texttemplate.New("subject").Parse("Verify your email")),
		Text:    texttemplate.Must(texttemplate.ParseFS(templateFS, "templates/verify_email.txt")),
		HTML:    htmltemplate.Must(htmltemplate.ParseFS(templateFS, "templates/verify_email.html")),
	}
	defaultPasskeyRecoveryEmail = EmailTemplate{
		Subject: texttemplate.Must(texttemplate.New("subject").Parse("Recover your account with a new passkey")),
		Text:    texttemplate.Must(texttemplate.ParseFS(templateFS, "templates/passkey_recovery.txt")),
		HTML:    htmltemplate.Must(htmltemplate.ParseFS(templateFS, "templates/passkey_recovery.html")),
	}
	defaultWrongCodeEmail = EmailTemplate{
		Subject: texttemplate.Must(texttemplate.New("subject").Parse("A wrong code after a sign-in to your account")),
		Text:    texttemplate.Must(texttemplate.ParseFS(templateFS, "templates/wrong_code.txt")),
		HTML:    htmltemplate.Must(htmltemplate.ParseFS(templateFS, "templates/wrong_code.html")),
	}
	defaultPasswordlessEmail = EmailTemplate{
		Subject: texttemplate.Must(texttemplate.New("subject").Parse("{{if .Code}}Your sign-in code{{else}}Your sign-in link{{end}}")),
		Text:    texttemplate.Must(texttemplate.ParseFS(templateFS, "templates/passwordless.txt")),
		HTML:    htmltemplate.Must(htmltemplate.ParseFS(templateFS, "templates/passwordless.html")),
	}
)

// DefaultResetEmail returns the reset email used when
// Config.Email.ResetEmail is nil, as a starting point for one's own.
func DefaultResetEmail() EmailTemplate { return defaultResetEmail.clone() }

// DefaultVerificationEmail returns the verification email used when
// Config.EmailVerification.Email is nil.
func DefaultVerificationEmail() EmailTemplate { return defaultVerificationEmail.clone() }

// DefaultPasswordlessEmail returns the passwordless email used when
// Config.Passwordless.Email is nil.
func DefaultPasswordlessEmail() EmailTemplate { return defaultPasswordlessEmail.clone() }

// DefaultPasskeyRecoveryEmail returns the passkey recovery email used
// when Config.Passkeys.RecoveryEmail is nil.
func DefaultPasskeyRecoveryEmail() EmailTemplate { return defaultPasskeyRecoveryEmail.clone() }

// clone copies t, its parsed templates included: a template's
// definitions can be added to after parsing, and the copy's are its own.
func (t EmailTemplate) clone() EmailTemplate {
	out := EmailTemplate{
		Subject: texttemplate.Must(t.Subject.Clone()),
		Text:    texttemplate.Must(t.Text.Clone()),
	}
	if t.HTML != nil {
		out.HTML = htmltemplate.Must(t.HTML.Clone())
	}
	return out
}

// render executes the templates of t with data.
func (t *EmailTemplate) render(from, to string, data any) (mailer.Message, error) {
	var subject, text, html strings.Builder
	if err := t.Subject.Execute(&subject, data); err != nil {
		return mailer.Message{}, err
	}
	if err := t.Text.Execute(&text, data); err != nil {
		return mailer.Message{}, err
	}
	if t.HTML != nil {
		if err := t.HTML.Execute(&html, data); err != nil {
			return mailer.Message{}, err
		}
	}
	m := mailer.Message{
		To:      mailAddress(to),
		Subject: strings.TrimSpace(subject.String()),
		Text:    text.String(),
		HTML:    html.String(),
	}
	m.From = mailAddress(from)
	return m, nil
}

// inWords says a duration the way an email would: "1 hour", "30 minutes".
func inWords(d time.Duration) string {
	n, unit := int64(d/time.Second), "second"
	switch {
	case d >= 24*time.Hour && d%(24*time.Hour) == 0:
		n, unit = int64(d/(24*time.Hour)), "day"
	case d >= time.Hour && d%time.Hour == 0:
		n, unit = int64(d/time.Hour), "hour"
	case d >= time.Minute:
		n, unit = int64(d/time.Minute), "minute"
	}
	if n != 1 {
		unit += "s"
	}
	return strconv.FormatInt(n, 10) + " " + unit
}

// mailAddress parses "Name <addr>" or a bare address; New has validated
// the configured ones and emails are validated at sign-up.
func mailAddress(s string) mail.Address {
	if a, err := mail.ParseAddress(s); err == nil {
		return *a
	}
	return mail.Address{Address: s}
}

// mail renders t with data for to and sends it through the outbox's
// delivery (timeout and retries): every email the library sends goes
// through here. Its error names the step that failed, for mailFailed.
func (a *Auth) mail(ctx context.Context, t *EmailTemplate, to string, data any) error {
	msg, err := t.render(a.cfg.Email.From, to, data)
	if err != nil {
		return fmt.Errorf("rendering the email: %w", err)
	}
	if err := a.outbox.deliver(ctx, a.cfg.Email.Mailer, msg); err != nil {
		return fmt.Errorf("sending the email: %w", err)
	}
	return nil
}

// mailFailed logs and reports an email of kind ("reset", "verification")
// that was not sent.
func (a *Auth) mailFailed(ctx context.Context, kind, userID, step string, err error) {
	a.cfg.Logger.LogAttrs(ctx, slog.LevelError, "auth: "+kind+" email not sent",
		slog.String("user_id", userID), slog.String("step", step), slog.String("error", err.Error()))
	a.emit(ctx, nil, Event{Kind: EventMailFailed, UserID: userID})
}

// queueAccountEmail answers a request for an email of kind ("reset",
// "passkey recovery") to an address, whose account send looks up off the
// request path. Requests are counted per client (ClientResetRequests,
// 429 past it) and per address (ResetEmails). Every address is counted
// alike, known or not, so the limit reveals nothing; past it the request
// is answered as usual, without mail.
func (a *Auth) queueAccountEmail(w http.ResponseWriter, r *http.Request, kind, email string, send func(context.Context, string)) {
	ctx := r.Context()
	perClient := limit{limitKey("reset-client", a.limitClient(r)), a.cfg.RateLimits.ClientResetRequests}
	if wait := a.take(ctx, perClient); wait > 0 {
		wire.TooMany(w, wait)
		return
	}
	perEmail := limit{limitKey(kind+"-email", email), a.cfg.RateLimits.ResetEmails}
	if a.take(ctx, perEmail) > 0 {
		a.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "auth: "+kind+" email withheld", slog.String("reason", "rate limit"))
	} else {
		a.outbox.enqueue(a, mailJob{kind, func(ctx context.Context) { send(ctx, email) }})
	}
	wire.JSON(w, http.StatusOK, wire.OK)
}

// linkWithToken adds a token and the tenant to a page's URL.
func linkWithToken(page, tok string) string {
	// The token is URL-safe base64: nothing to escape.
	return withQuery(page, "token="+tok+"&tenantId=public")
}

// withQuery adds query parameters, already escaped, to a page's URL,
// which may have a query of its own.
func withQuery(page, query string) string {
	if strings.Contains(page, "?") {
		return page + "&" + query
	}
	return page + "?" + query
}
