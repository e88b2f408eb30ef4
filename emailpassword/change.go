package emailpassword

import (
	"context"
	"encoding/json"
	"errors"
	htmltemplate "html/template"
	"net/http"
	texttemplate "text/template"
	"time"

	"github.com/google/uuid"
	"github.com/latchkit/auth/internal/kit"
	"github.com/latchkit/auth/internal/wire"
	"github.com/latchkit/auth/mailer"
	"github.com/latchkit/auth/store"
)

// PasswordChangedEmailData is what the password-changed notice can show.
type PasswordChangedEmailData struct {
	Email string // the recipient: the address of the password login
	// Added is set when the user had no password, and one was added.
	Added bool
	// ResetLink is the reset page (Config.ResetPasswordURL), where the
	// user asks for a reset link if the change was not theirs.
	ResetLink string
}

// defaultPasswordChangedEmail is parsed once and never handed out, as
// defaultResetEmail.
var defaultPasswordChangedEmail = mailer.Template{
	Subject: texttemplate.Must(texttemplate.New("subject").Parse("Your password was {{if .Added}}set{{else}}changed{{end}}")),
	Text:    texttemplate.Must(texttemplate.ParseFS(templateFS, "templates/password_changed.txt")),
	HTML:    htmltemplate.Must(htmltemplate.ParseFS(templateFS, "templates/password_changed.html")),
}

// DefaultPasswordChangedEmail returns the notice used when
// Config.PasswordChangedEmail is nil, as a starting point for one's own.
func DefaultPasswordChangedEmail() mailer.Template { return kit.MustClone(defaultPasswordChangedEmail) }

// The statuses of POST /user/password/change beside the SDKs' own.
const (
	statusWrongCredentials = "WRONG_CREDENTIALS_ERROR"
	// statusNoEmail: the user has no password, and no email that a
	// password login of theirs may have (one they own).
	statusNoEmail = "NO_EMAIL_FOR_PASSWORD_ERROR"
)

// handleChangePassword is POST /user/password/change: a signed-in user
// changes their password with the current one, or, having none, adds
// one after a fresh sign-in. Every other session of the user ends; this
// one goes on, with new tokens.
func (p *Recipe) handleChangePassword(w http.ResponseWriter, r *http.Request) {
	// The body first: a body too large is refused before a byte of it is
	// read, whatever the session.
	old, pw, err := p.readPasswordChange(w, r)
	if err != nil {
		p.k.Fail(w, r, err)
		return
	}
	s, ok := p.k.AccountSession(w, r)
	if !ok {
		return
	}
	l, has := passwordLoginOf(s.Logins())
	var errs []fieldError
	if has && old == "" {
		errs = append(errs, fieldError{"oldPassword", wire.MsgFieldNotOptional})
	}
	if msg := p.checkNewPassword(p.k.SessionTenant(r.Context(), s), pw); msg != "" {
		errs = append(errs, fieldError{"newPassword", msg})
	}
	switch {
	case len(errs) > 0:
		writeFieldErrors(w, errs)
	case has:
		p.changePassword(w, r, s, l, old, pw)
	default:
		p.addPassword(w, r, s, pw)
	}
}

// readPasswordChange reads the formFields oldPassword and newPassword of
// a request; either may be missing, and is then "".
func (p *Recipe) readPasswordChange(w http.ResponseWriter, r *http.Request) (old, pw string, err error) {
	// A map, so that only "formFields" itself matches, not "FormFields".
	var req map[string]json.RawMessage
	if err := p.k.ReadJSON(w, r, &req); err != nil {
		return "", "", err
	}
	fields, err := formFields(req["formFields"], "oldPassword", "newPassword")
	if err != nil {
		return "", "", err
	}
	if old, err = stringField(fields, "oldPassword"); err != nil {
		return "", "", err
	}
	pw, err = stringField(fields, "newPassword")
	return old, pw, err
}

// changePassword checks old, the current password of the login l, as a
// sign-in does and against its limits, and sets pw.
func (p *Recipe) changePassword(w http.ResponseWriter, r *http.Request, s kit.FactorSession, l store.Login, old, pw string) {
	ctx := r.Context()
	settle, wait := p.k.TakeSignIn(r, l.Email)
	if wait > 0 {
		p.k.Emit(ctx, r, kit.Event{Kind: kit.EventSignInThrottled, UserID: l.UserID, Method: store.MethodEmailPassword})
		wire.TooMany(w, wait)
		return
	}
	// A password that account linking voided is none: only a reset sets
	// one again.
	known := l.PasswordHash != ""
	ok, _, _, err := p.checkPassword(ctx, l, known, old)
	if err != nil {
		settle(kit.AttemptAbandoned)
		p.k.Fail(w, r, err)
		return
	}
	if !ok || !known {
		settle(kit.AttemptFailed)
		p.k.Emit(ctx, r, kit.Event{Kind: kit.EventSignInFailed, UserID: l.UserID, Method: store.MethodEmailPassword})
		writeStatus(w, statusWrongCredentials)
		return
	}
	settle(kit.AttemptSucceeded)
	hash, ok := p.hashNew(w, r, pw)
	if !ok {
		return
	}
	// The hash checked must still be the login's: a change or reset
	// in the meantime wins, and this one's old password is wrong now.
	switch err := p.k.Store().UpdatePasswordHash(ctx, l.UserID, l.PasswordHash, hash); {
	case errors.Is(err, store.ErrConflict):
		writeStatus(w, statusWrongCredentials)
		return
	case errors.Is(err, store.ErrNotFound):
		p.k.Fail(w, r, kit.ErrUserGone)
		return
	case err != nil:
		p.k.Fail(w, r, err)
		return
	}
	p.passwordChanged(w, r, s, l.Email, false)
}

// addPassword adds an email and password login with pw to the user of s,
// who has none, for an email the user has proven, if the session signed
// in recently. Under account linking the store adds it only to the user
// who owns its email; without linking, where nobody owns one, for the
// address of a login of the user that proves it (a passwordless one, or
// a provider that vouches for it), unless another user has a password
// for it.
func (p *Recipe) addPassword(w http.ResponseWriter, r *http.Request, s kit.FactorSession, pw string) {
	if !p.k.SignedInRecently(w, r, s) {
		return
	}
	email, add := ownedEmail(s.Logins()), p.k.Store().LinkLogin
	if !p.setup.AccountLinking {
		email, add = provenEmail(s.Logins()), p.k.Store().AttachLogin
	}
	if email == "" {
		writeStatus(w, statusNoEmail)
		return
	}
	hash, ok := p.hashNew(w, r, pw)
	if !ok {
		return
	}
	l := store.Login{
		LoginKey: store.EmailPasswordKey(email).In(s.Tenant()),
		ID:       uuid.NewString(),
		UserID:   s.UserID(),
		Email:    email,
		// The user's own address, proven by another of their logins:
		// whoever holds this one reads its inbox.
		EmailVerified: true,
		EmailProven:   true,
		PasswordHash:  hash,
		CreatedAt:     p.k.Now().Truncate(time.Millisecond),
	}
	// The login owns nothing: under linking it joins the user that owns
	// its email, which the store checks again; without, the user whose
	// login proves it.
	switch err := add(r.Context(), l); {
	case errors.Is(err, store.ErrConflict), errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrEmailOwned):
		// The address has a password login already (another user's,
		// which a reset mailed to it takes over), or the user no
		// longer owns it.
		writeStatus(w, statusNoEmail)
		return
	case err != nil:
		p.k.Fail(w, r, err)
		return
	}
	p.passwordChanged(w, r, s, email, true)
}

// hashNew takes a new password's hash from the client's allowance, and
// hashes pw; or answers the request and returns false.
func (p *Recipe) hashNew(w http.ResponseWriter, r *http.Request, pw string) (string, bool) {
	ctx := r.Context()
	if wait := p.k.Take(ctx, p.newPasswordLimit(r)); wait > 0 {
		wire.TooMany(w, wait)
		return "", false
	}
	var hash string
	if err := p.withHashSlot(ctx, func() { hash = p.passwords.hash(pw) }); err != nil {
		p.k.Fail(w, r, err)
		return "", false
	}
	return hash, true
}

// passwordChanged reports a password changed or added for email, mails
// the notice, ends the user's other sessions and answers OK.
func (p *Recipe) passwordChanged(w http.ResponseWriter, r *http.Request, s kit.FactorSession, email string, added bool) {
	ctx, userID := r.Context(), s.UserID()
	p.k.Emit(ctx, r, kit.Event{Kind: kit.EventPasswordChanged, UserID: userID, Method: store.MethodEmailPassword})
	if p.setup.CanMail {
		data := PasswordChangedEmailData{Email: email, Added: added, ResetLink: p.cfg.ResetPasswordURL}
		p.k.Enqueue(ctx, "password changed", func(ctx context.Context) {
			if err := p.k.Mail(ctx, p.cfg.PasswordChangedEmail, email, data); err != nil {
				p.k.MailFailed(ctx, "password changed", userID, "sending the notice", err)
			}
		})
	}
	p.k.EndOtherSessions(w, r, s)
}

// passwordLoginOf is the email and password login among logins.
func passwordLoginOf(logins []store.Login) (store.Login, bool) {
	for _, l := range logins {
		if l.Method == store.MethodEmailPassword {
			return l, true
		}
	}
	return store.Login{}, false
}

// ownedEmail is the email that one of logins owns, or "".
// provenEmail is the address of the first of logins that proves it.
func provenEmail(logins []store.Login) string {
	for _, l := range logins {
		if l.EmailProven && l.Email != "" {
			return l.Email
		}
	}
	return ""
}

func ownedEmail(logins []store.Login) string {
	for _, l := range logins {
		if l.OwnsEmail && l.Email != "" {
			return l.Email
		}
	}
	return ""
}

func writeStatus(w http.ResponseWriter, status string) {
	wire.JSON(w, http.StatusOK, struct {
		Status string `json:"status"`
	}{status})
}
