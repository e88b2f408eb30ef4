package emailpassword

import (
	"context"
	"crypto/sha256"
	"embed"
	"errors"
	htmltemplate "html/template"
	"net/http"
	texttemplate "text/template"

	"github.com/latchkit/auth/internal/address"
	"github.com/latchkit/auth/internal/kit"
	"github.com/latchkit/auth/internal/onetime"
	"github.com/latchkit/auth/internal/wire"
	"github.com/latchkit/auth/mailer"
	"github.com/latchkit/auth/store"
)

// ResetEmailData is what the reset email templates can show.
type ResetEmailData struct {
	Email    string // the recipient, whose password the link resets
	Link     string // the reset page, with the token in its query
	ValidFor string // how long the link works, in words: "1 hour"
}

//go:embed templates
var templateFS embed.FS

// defaultResetEmail is parsed once and never handed out: each caller of
// DefaultResetEmail, and each Auth, gets its own copy.
var defaultResetEmail = mailer.Template{
	Subject: texttemplate.Must(texttemplate.New("subject").Parse("Reset your password")),
	Text:    texttemplate.Must(texttemplate.ParseFS(templateFS, "templates/reset_password.txt")),
	HTML:    htmltemplate.Must(htmltemplate.ParseFS(templateFS, "templates/reset_password.html")),
}

// DefaultResetEmail returns the reset email used when Config.ResetEmail
// is nil, as a starting point for one's own.
func DefaultResetEmail() mailer.Template { return kit.MustClone(defaultResetEmail) }

// handleResetRequest answers a request for a reset email. The answer is the
// same, and as fast, whoever the email belongs to: the lookup, the token and
// the delivery all happen off the request path, in the outbox.
func (p *Recipe) handleResetRequest(w http.ResponseWriter, r *http.Request) {
	_, email, err := p.readOneField(w, r, "email")
	if err != nil {
		p.k.Fail(w, r, err)
		return
	}
	email = address.Normalise(email)
	if msg := wire.CheckEmail(email); msg != "" {
		writeFieldErrors(w, []fieldError{{"email", msg}})
		return
	}
	p.k.QueueAccountEmail(w, r, "reset", email, p.sendResetEmail)
}

// sendResetEmail is the outbox's work for one request: if the email has
// a password login, issue a token and mail the link. A login whose
// password was voided gets one too: a reset is how its holder sets one.
func (p *Recipe) sendResetEmail(ctx context.Context, email string) {
	l, err := p.k.Store().Login(ctx, p.k.Tenant(ctx).Key(store.EmailPasswordKey(email)))
	if errors.Is(err, store.ErrNotFound) {
		return // nobody to tell; the requester learns nothing either way
	}
	if err != nil {
		p.k.MailFailed(ctx, "reset", l.UserID, "looking up the user", err)
		return
	}
	tok, hash := onetime.New()
	now := p.k.Now()
	if err := p.k.Store().CreateCode(ctx, store.Code{
		Hash: hash, Kind: store.CodeReset, Tenant: l.Tenant, UserID: l.UserID, CreatedAt: now, ExpiresAt: now.Add(p.cfg.ResetTokenLifetime),
	}); err != nil {
		p.k.MailFailed(ctx, "reset", l.UserID, "creating a reset token", err)
		return
	}
	if err := p.k.Mail(ctx, p.cfg.ResetEmail, l.Email, ResetEmailData{
		Email:    l.Email,
		Link:     wire.LinkWithToken(p.cfg.ResetPasswordURL, tok, store.TenantID(l.Tenant)),
		ValidFor: kit.InWords(p.cfg.ResetTokenLifetime),
	}); err != nil {
		p.k.MailFailed(ctx, "reset", l.UserID, "sending the reset email", err)
		return
	}
	p.k.Emit(ctx, nil, kit.Event{Kind: kit.EventResetEmailSent, UserID: l.UserID})
}

// handleResetPassword sets a new password with a reset token. Success ends
// every session of the user; it creates none.
func (p *Recipe) handleResetPassword(w http.ResponseWriter, r *http.Request) {
	req, pw, err := p.readOneField(w, r, "password")
	if err != nil {
		p.k.Fail(w, r, err)
		return
	}
	if msg := p.checkNewPassword(p.k.Tenant(r.Context()), pw); msg != "" {
		writeFieldErrors(w, []fieldError{{"password", msg}})
		return
	}
	tok, err := wire.TokenField(req, "password reset")
	if err != nil {
		p.k.Fail(w, r, err)
		return
	}
	if !onetime.WellFormed(tok) {
		writeInvalidResetToken(w)
		return
	}
	ctx := r.Context()
	if wait := p.k.Take(ctx, p.newPasswordLimit(r)); wait > 0 {
		wire.TooMany(w, wait)
		return
	}
	// An unknown or expired token is refused before the new password is
	// hashed, so guessing tokens costs no hash. ResetPassword decides for
	// racing submissions of one token.
	tokHash := sha256.Sum256([]byte(tok))
	// A token of another tenant's is none of this one's.
	if c, err := p.k.Store().Code(ctx, store.CodeReset, tokHash, p.k.Now()); errors.Is(err, store.ErrNotFound) ||
		(err == nil && store.TenantID(c.Tenant) != p.k.Tenant(ctx).ID) {
		writeInvalidResetToken(w)
		return
	} else if err != nil {
		p.k.Fail(w, r, err)
		return
	}
	var hash string
	if err := p.withHashSlot(ctx, func() { hash = p.passwords.hash(pw) }); err != nil {
		p.k.Fail(w, r, err)
		return
	}
	l, handles, err := p.k.Store().ResetPassword(ctx, tokHash, hash, p.k.Now())
	if errors.Is(err, store.ErrNotFound) {
		writeInvalidResetToken(w)
		return
	} else if err != nil {
		p.k.Fail(w, r, err)
		return
	}
	p.k.Emit(r.Context(), r, kit.Event{Kind: kit.EventPasswordReset, UserID: l.UserID})
	// The reset proved the email: under account linking its user may
	// now own it.
	p.k.EmailVerified(ctx, l)
	for _, h := range handles {
		p.k.Emit(r.Context(), r, kit.Event{Kind: kit.EventSessionRevoked, UserID: l.UserID, SessionHandle: h})
	}
	wire.JSON(w, http.StatusOK, wire.OK)
}

func writeInvalidResetToken(w http.ResponseWriter) {
	wire.JSON(w, http.StatusOK, struct {
		Status string `json:"status"`
	}{"RESET_PASSWORD_INVALID_TOKEN_ERROR"})

}
