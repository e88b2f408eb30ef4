package auth

import (
	"context"
	"embed"
	"fmt"
	htmltemplate "html/template"
	"log/slog"
	"net/http"
	texttemplate "text/template"

	"github.com/latchkit/auth/internal/kit"
	"github.com/latchkit/auth/internal/wire"
	"github.com/latchkit/auth/mailer"
)

//go:embed templates
var templateFS embed.FS

// The default templates, parsed once. They are never handed out: each
// Auth, and each caller of the Default functions, gets its own copy, so
// that no change made through one reaches another.
var (
	defaultInvitationEmail = mailer.Template{
		Subject: texttemplate.Must(texttemplate.New("subject").Parse("You are invited to join {{.Tenant}}")),
		Text:    texttemplate.Must(texttemplate.ParseFS(templateFS, "templates/invitation.txt")),
		HTML:    htmltemplate.Must(htmltemplate.ParseFS(templateFS, "templates/invitation.html")),
	}
	defaultWrongCodeEmail = mailer.Template{
		Subject: texttemplate.Must(texttemplate.New("subject").Parse("A wrong code after a sign-in to your account")),
		Text:    texttemplate.Must(texttemplate.ParseFS(templateFS, "templates/wrong_code.txt")),
		HTML:    htmltemplate.Must(htmltemplate.ParseFS(templateFS, "templates/wrong_code.html")),
	}
)

// mail renders t with data for to and sends it through the outbox's
// delivery (timeout and retries): every email the library sends goes
// through here. Its error names the step that failed, for mailFailed.
func (a *Auth) mail(ctx context.Context, t *mailer.Template, to string, data any) error {
	msg, err := t.Render(a.cfg.Email.From, to, data)
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
	perClient := limit{kit.LimitKey("reset-client", a.limitClient(r)), a.cfg.RateLimits.ClientResetRequests}
	if wait := a.take(ctx, perClient); wait > 0 {
		wire.TooMany(w, wait)
		return
	}
	perEmail := limit{kit.LimitKey(kind+"-email", email), a.cfg.RateLimits.ResetEmails}
	if a.take(ctx, perEmail) > 0 {
		a.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "auth: "+kind+" email withheld", slog.String("reason", "rate limit"))
	} else {
		a.outbox.enqueue(a, mailJob{kind, context.WithoutCancel(ctx), func(ctx context.Context) { send(ctx, email) }})
	}
	wire.JSON(w, http.StatusOK, wire.OK)
}
