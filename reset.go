package auth

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/latchkit/auth/internal/address"
	"github.com/latchkit/auth/internal/kit"
	"github.com/latchkit/auth/internal/onetime"
	"github.com/latchkit/auth/internal/wire"
	"github.com/latchkit/auth/store"
)

// handleResetRequest answers a request for a reset email. The answer is the
// same, and as fast, whoever the email belongs to: the lookup, the token and
// the delivery all happen off the request path, in the outbox.
func (a *Auth) handleResetRequest(w http.ResponseWriter, r *http.Request) {
	_, email, err := a.readOneField(w, r, "email")
	if err != nil {
		a.fail(w, r, err)
		return
	}
	email = address.Normalise(email)
	if msg := wire.CheckEmail(email); msg != "" {
		writeFieldErrors(w, []fieldError{{"email", msg}})
		return
	}
	a.queueAccountEmail(w, r, "reset", email, a.sendResetEmail)
}

// sendResetEmail is the outbox's work for one request: if the email has
// a password login, issue a token and mail the link. A login whose
// password was voided gets one too: a reset is how its holder sets one.
func (a *Auth) sendResetEmail(ctx context.Context, email string) {
	l, err := a.store.Login(ctx, store.EmailPasswordKey(email))
	if errors.Is(err, store.ErrNotFound) {
		return // nobody to tell; the requester learns nothing either way
	}
	if err != nil {
		a.mailFailed(ctx, "reset", l.UserID, "looking up the user", err)
		return
	}
	tok, hash := onetime.New()
	now := a.cfg.Now()
	if err := a.store.CreateCode(ctx, store.Code{
		Hash: hash, Kind: store.CodeReset, UserID: l.UserID, CreatedAt: now, ExpiresAt: now.Add(a.cfg.Email.ResetTokenLifetime),
	}); err != nil {
		a.mailFailed(ctx, "reset", l.UserID, "creating a reset token", err)
		return
	}
	if err := a.mail(ctx, a.cfg.Email.ResetEmail, l.Email, ResetEmailData{
		Email:    l.Email,
		Link:     a.resetLink(tok),
		ValidFor: kit.InWords(a.cfg.Email.ResetTokenLifetime),
	}); err != nil {
		a.mailFailed(ctx, "reset", l.UserID, "sending the reset email", err)
		return
	}
	a.emit(ctx, nil, Event{Kind: EventResetEmailSent, UserID: l.UserID})
}

// resetLink is the reset page's URL with the token and tenant in its query,
// where the SuperTokens SDKs look for them.
func (a *Auth) resetLink(tok string) string {
	return wire.LinkWithToken(a.cfg.Email.ResetPasswordURL, tok)
}

// handleResetPassword sets a new password with a reset token. Success ends
// every session of the user; it creates none.
func (a *Auth) handleResetPassword(w http.ResponseWriter, r *http.Request) {
	req, pw, err := a.readOneField(w, r, "password")
	if err != nil {
		a.fail(w, r, err)
		return
	}
	if msg := a.checkNewPassword(pw); msg != "" {
		writeFieldErrors(w, []fieldError{{"password", msg}})
		return
	}
	tok, err := wire.TokenField(req, "password reset")
	if err != nil {
		a.fail(w, r, err)
		return
	}
	if !onetime.WellFormed(tok) {
		writeInvalidResetToken(w)
		return
	}
	ctx := r.Context()
	if wait := a.take(ctx, a.newPasswordLimit(r)); wait > 0 {
		wire.TooMany(w, wait)
		return
	}
	// An unknown or expired token is refused before the new password is
	// hashed, so guessing tokens costs no hash. ResetPassword decides for
	// racing submissions of one token.
	tokHash := sha256.Sum256([]byte(tok))
	if _, err := a.store.Code(ctx, store.CodeReset, tokHash, a.cfg.Now()); errors.Is(err, store.ErrNotFound) {
		writeInvalidResetToken(w)
		return
	} else if err != nil {
		a.fail(w, r, err)
		return
	}
	var hash string
	if err := a.withHashSlot(ctx, func() { hash = a.passwords.hash(pw) }); err != nil {
		a.fail(w, r, err)
		return
	}
	l, handles, err := a.store.ResetPassword(ctx, tokHash, hash, a.cfg.Now())
	if errors.Is(err, store.ErrNotFound) {
		writeInvalidResetToken(w)
		return
	} else if err != nil {
		a.fail(w, r, err)
		return
	}
	a.emit(r.Context(), r, Event{Kind: EventPasswordReset, UserID: l.UserID})
	// The reset proved the email: under account linking its user may
	// now own it.
	a.afterVerified(ctx, l)
	for _, h := range handles {
		a.emit(r.Context(), r, Event{Kind: EventSessionRevoked, UserID: l.UserID, SessionHandle: h})
	}
	wire.JSON(w, http.StatusOK, wire.OK)
}

// readOneField decodes a request whose formFields hold the single field
// id, and returns the whole body (for other top-level keys) and that
// field's string value.
func (a *Auth) readOneField(w http.ResponseWriter, r *http.Request, id string) (map[string]json.RawMessage, string, error) {
	var req map[string]json.RawMessage
	if err := a.readJSON(w, r, &req); err != nil {
		return nil, "", err
	}
	fields, err := formFields(req["formFields"], id)
	if err != nil {
		return nil, "", err
	}
	v, err := stringField(fields, id)
	return req, v, err
}

func writeInvalidResetToken(w http.ResponseWriter) {
	wire.JSON(w, http.StatusOK, struct {
		Status string `json:"status"`
	}{"RESET_PASSWORD_INVALID_TOKEN_ERROR"})

}
