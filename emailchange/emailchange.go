// Package emailchange lets a signed-in user change the email address of
// their account: a link mailed to the new address makes the change, and a
// notice mailed to the old one can undo it for a while. Turn it on with
// auth.Config's EmailChange field; it needs auth.Config.Email.Mailer:
//
//	auth.Config{
//		Store:       st,
//		Email:       auth.EmailConfig{Mailer: m},
//		EmailChange: emailchange.Config{Enabled: true},
//	}
//
// # Routes
//
// Under the Auth's base path (the library's own: the SuperTokens
// frontends have none):
//
//   - POST /user/email/change {"email"}: a session that has met its MFA
//     requirement (403 st-mfa) and signed in recently (403 st-fresh, see
//     auth.Config.FreshSignIn) asks to move its account to a new address.
//     The answer is OK whether or not the address is free, so that it
//     tells nobody who has an account; the link goes to the new address.
//     FIELD_ERROR for a malformed address or the one the account has;
//     EMAIL_CHANGE_NOT_ALLOWED_ERROR (with a reason) for an account whose
//     every login is a provider's; GENERAL_ERROR with the wait past the
//     allowance (auth.RateLimits.VerificationEmails, per user and per
//     new address).
//   - POST /user/email/change/verify {"token"}: the link's page sends its
//     token, with a session of the account it changes (401 without one;
//     another user's session is told the token is invalid): whoever
//     reads the new inbox confirms only an account they hold.
//     OK {"email"} once moved; EMAIL_CHANGE_INVALID_TOKEN_ERROR for a
//     token unknown, used or expired; EMAIL_ALREADY_EXISTS_ERROR where
//     another account has the address by then (whose, it does not say).
//     The old address is then mailed a notice with a link to undo it.
//   - POST /user/email/change/undo {"token"}: the notice's page sends its
//     token: the account's address goes back, and every session of the
//     user ends, since someone else may hold one. OK {"email"}; the same
//     refusals as verify.
//
// # What moves
//
// The address moved is the one of the login the session signed in with,
// or, for a provider's login, the first of the user's other logins that
// has one. Every email and password, passwordless and passkey login of
// the user with that address moves, keys and all, in one store step
// (store.Store's ChangeEmail); a provider's login keeps the address the
// provider gives, so an account whose logins are all providers' has
// nothing to change. The moved logins' address is verified (whoever
// opened the link reads the inbox) but not proven: it owns nothing under
// account linking, and so it joins no other user's login and evicts
// none, and a link opened by someone who is not the account's holder
// gains them nothing. An address that another user's login has, owned or
// not, is refused. Sessions go on: the change is their user's.
//
// # Settings and events
//
// [Config] has the pages the links open and how long each works (an hour
// to change, a week to undo), and the two emails. Each link's token is
// 256 random bits, stored as SHA-256, and works once. Using a link
// reports auth.EventEmailChanged or auth.EventEmailChangeUndone.
package emailchange

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	htmltemplate "html/template"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	texttemplate "text/template"
	"time"

	"github.com/latchkit/auth/internal/address"
	"github.com/latchkit/auth/internal/kit"
	"github.com/latchkit/auth/internal/onetime"
	"github.com/latchkit/auth/internal/wire"
	"github.com/latchkit/auth/mailer"
	"github.com/latchkit/auth/store"
)

// The lifetimes of the links when Config leaves them out.
const (
	DefaultLinkLifetime = time.Hour
	DefaultUndoLifetime = 7 * 24 * time.Hour
)

// Config turns on and configures changing the account's email. The zero
// value is off.
type Config struct {
	// Enabled serves the routes.
	Enabled bool

	// URL is the page the link to the new address opens, with ?token=
	// added; it posts the token to /user/email/change/verify. Default
	// auth.Config's AppURL + "/auth/change-email".
	URL string
	// UndoURL is the page the notice to the old address links to, with
	// ?token= added; it posts the token to /user/email/change/undo.
	// Default AppURL + "/auth/undo-email-change".
	UndoURL string

	// LinkLifetime is how long the link to the new address works
	// (DefaultLinkLifetime), UndoLifetime how long the notice's undoes
	// the change (DefaultUndoLifetime).
	LinkLifetime time.Duration
	UndoLifetime time.Duration

	// ConfirmEmail renders the link to the new address, with
	// ConfirmEmailData (DefaultConfirmEmail); ChangedEmail the notice to
	// the old one, with ChangedEmailData (DefaultChangedEmail).
	ConfirmEmail *mailer.Template
	ChangedEmail *mailer.Template
}

// ConfirmEmailData is what the email to the new address can show.
type ConfirmEmailData struct {
	Email    string // the new address, and the recipient
	From     string // the address the account has now
	Link     string // the page that makes the change, with the token
	ValidFor string // how long the link works, in words: "1 hour"
}

// ChangedEmailData is what the notice to the old address can show.
type ChangedEmailData struct {
	Email    string // the old address, and the recipient
	NewEmail string
	UndoLink string // the page that undoes the change, with the token
	ValidFor string // how long the undo link works, in words
}

//go:embed templates
var templateFS embed.FS

// The default emails are parsed once and never handed out: each caller
// of the Default functions, and each Auth, gets its own copy.
var (
	defaultConfirmEmail = mailer.Template{
		Subject: texttemplate.Must(texttemplate.New("subject").Parse("Confirm your new email address")),
		Text:    texttemplate.Must(texttemplate.ParseFS(templateFS, "templates/confirm.txt")),
		HTML:    htmltemplate.Must(htmltemplate.ParseFS(templateFS, "templates/confirm.html")),
	}
	defaultChangedEmail = mailer.Template{
		Subject: texttemplate.Must(texttemplate.New("subject").Parse("The email address of your account was changed")),
		Text:    texttemplate.Must(texttemplate.ParseFS(templateFS, "templates/changed.txt")),
		HTML:    htmltemplate.Must(htmltemplate.ParseFS(templateFS, "templates/changed.html")),
	}
)

// DefaultConfirmEmail returns the email to the new address used when
// Config.ConfirmEmail is nil, as a starting point for one's own.
func DefaultConfirmEmail() mailer.Template { return kit.MustClone(defaultConfirmEmail) }

// DefaultChangedEmail returns the notice to the old address used when
// Config.ChangedEmail is nil.
func DefaultChangedEmail() mailer.Template { return kit.MustClone(defaultChangedEmail) }

// withDefaults is c with its defaults filled in, or why c will not do.
func (c Config) withDefaults(setup kit.Setup) (Config, error) {
	if !setup.CanMail {
		return c, errors.New("auth: Config.EmailChange needs Config.Email.Mailer to send its links")
	}
	app := strings.TrimRight(setup.AppURL, "/")
	for _, p := range []struct {
		field *string
		name  string
		page  string
	}{{&c.URL, "URL", "/auth/change-email"}, {&c.UndoURL, "UndoURL", "/auth/undo-email-change"}} {
		if *p.field == "" {
			*p.field = app + p.page
		}
		if u, err := url.Parse(*p.field); err != nil || u.Host == "" {
			return c, fmt.Errorf("auth: Config.EmailChange.%s %q is not an absolute URL", p.name, *p.field)
		}
	}
	if c.LinkLifetime == 0 {
		c.LinkLifetime = DefaultLinkLifetime
	}
	if c.UndoLifetime == 0 {
		c.UndoLifetime = DefaultUndoLifetime
	}
	if c.LinkLifetime < 0 || c.UndoLifetime < 0 {
		return c, errors.New("auth: Config.EmailChange's lifetimes must not be negative")
	}
	var err error
	if c.ConfirmEmail, err = template(c.ConfirmEmail, defaultConfirmEmail, "ConfirmEmail"); err != nil {
		return c, err
	}
	c.ChangedEmail, err = template(c.ChangedEmail, defaultChangedEmail, "ChangedEmail")
	return c, err
}

// template is t, or a copy of def where t is nil.
func template(t *mailer.Template, def mailer.Template, name string) (*mailer.Template, error) {
	if t == nil {
		c := kit.MustClone(def)
		return &c, nil
	}
	if t.Subject == nil || t.Text == nil {
		return nil, fmt.Errorf("auth: Config.EmailChange.%s needs a Subject and a Text template", name)
	}
	return t, nil
}

// Recipe serves the routes that change the account's email. New builds
// it; package auth does, from auth.Config's EmailChange.
type Recipe struct {
	k      kit.Kernel
	cfg    Config
	emails kit.Rate
}

// New builds the recipe on the kernel k; emails is the allowance of
// links per user and per address.
func New(k kit.Kernel, c Config, setup kit.Setup, emails kit.Rate) (*Recipe, error) {
	c, err := c.withDefaults(setup)
	if err != nil {
		return nil, err
	}
	return &Recipe{k: k, cfg: c, emails: emails}, nil
}

// Routes are the recipe's endpoints, by their path under the base path.
func (rc *Recipe) Routes() map[string]kit.Route {
	return map[string]kit.Route{
		"/user/email/change":        {Method: http.MethodPost, Handle: rc.handleRequest},
		"/user/email/change/verify": {Method: http.MethodPost, Handle: rc.handleUse(store.CodeEmailChange)},
		"/user/email/change/undo":   {Method: http.MethodPost, Handle: rc.handleUse(store.CodeEmailRevert)},
	}
}

// handleRequest mails a link to the new address, after a fresh sign-in.
func (rc *Recipe) handleRequest(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Email *string `json:"email"`
	}
	if err := rc.k.ReadJSON(w, r, &req); err != nil {
		rc.k.Fail(w, r, err)
		return
	}
	if req.Email == nil {
		rc.k.Fail(w, r, wire.BadRequest("Please provide the email"))
		return
	}
	s, ok := rc.k.AccountSession(w, r)
	if !ok || !rc.k.SignedInRecently(w, r, s) {
		return
	}
	from := addressOf(s)
	to := address.Normalise(*req.Email)
	switch {
	case from == "":
		wire.NotAllowed(w, "EMAIL_CHANGE_NOT_ALLOWED_ERROR", "This account signs in with providers only, whose addresses are the providers' to change.")
		return
	case wire.CheckEmail(to) != "":
		fieldError(w, wire.CheckEmail(to))
		return
	case to == from:
		fieldError(w, "This is the email address of your account already")
		return
	}
	ctx := r.Context()
	if wait := rc.k.Take(ctx, rc.limits(s.UserID(), to)...); wait > 0 {
		wire.GeneralError(w, "A link was sent a moment ago. Please check your inbox, or try again in "+
			strconv.Itoa(int((wait+time.Second-1)/time.Second))+" seconds.")
		return
	}
	userID := s.UserID()
	rc.k.Enqueue(ctx, "email change", func(ctx context.Context) { rc.sendLink(ctx, userID, from, to) })
	wire.JSON(w, http.StatusOK, wire.OK)
}

// addressOf is the address a change moves: that of the login s signed in
// with, or, for a provider's, the first login of the user that moves with
// its address; "" where none does.
func addressOf(s kit.FactorSession) string {
	var first string
	for _, l := range s.Logins() {
		if !store.MovesWithEmail(l.Method) || l.Email == "" {
			continue
		}
		if l.ID == s.LoginID() {
			return l.Email
		}
		if first == "" {
			first = l.Email
		}
	}
	return first
}

// limits are the allowances a link takes from: its user's, and its new
// address's, so that many accounts cannot flood one inbox.
func (rc *Recipe) limits(userID, to string) []kit.Limit {
	return []kit.Limit{
		{Key: kit.LimitKey("change-email", userID), Rate: rc.emails},
		{Key: kit.LimitKey("change-address", to), Rate: rc.emails},
	}
}

// fieldError answers FIELD_ERROR for the email, as sign-up's form does.
func fieldError(w http.ResponseWriter, msg string) {
	type field struct {
		ID    string `json:"id"`
		Error string `json:"error"`
	}
	wire.JSON(w, http.StatusOK, struct {
		Status     string  `json:"status"`
		FormFields []field `json:"formFields"`
	}{"FIELD_ERROR", []field{{"email", msg}}})
}

// sendLink is the outbox's work for one request: a code for the change,
// and the link to the new address.
func (rc *Recipe) sendLink(ctx context.Context, userID, from, to string) {
	rc.send(ctx, store.CodeEmailChange, userID, from, to, func(tok string) any {
		return ConfirmEmailData{Email: to, From: from, Link: wire.LinkWithToken(rc.cfg.URL, tok, rc.k.Tenant(ctx).ID), ValidFor: kit.InWords(rc.cfg.LinkLifetime)}
	})
}

// sendNotice is the outbox's work after a change from one address to
// another: a code to undo it, and the notice to the old address.
func (rc *Recipe) sendNotice(ctx context.Context, userID, from, to string) {
	rc.send(ctx, store.CodeEmailRevert, userID, to, from, func(tok string) any {
		return ChangedEmailData{Email: from, NewEmail: to, UndoLink: wire.LinkWithToken(rc.cfg.UndoURL, tok, rc.k.Tenant(ctx).ID), ValidFor: kit.InWords(rc.cfg.UndoLifetime)}
	})
}

// send stores a code of kind that moves userID from one address to
// another, and mails the latter the email of kind, with the data its
// token makes.
func (rc *Recipe) send(ctx context.Context, kind store.CodeKind, userID, from, to string, data func(tok string) any) {
	t, lifetime := rc.cfg.ConfirmEmail, rc.cfg.LinkLifetime
	if kind == store.CodeEmailRevert {
		t, lifetime = rc.cfg.ChangedEmail, rc.cfg.UndoLifetime
	}
	tok, ok := rc.issue(ctx, kind, userID, from, to, lifetime)
	if !ok {
		return
	}
	if err := rc.k.Mail(ctx, t, to, data(tok)); err != nil {
		rc.k.MailFailed(ctx, "email change", userID, "sending the "+string(kind)+" email", err)
	}
}

// issue stores a code of kind that moves userID from one address to
// another, sent to the latter, and returns its token.
func (rc *Recipe) issue(ctx context.Context, kind store.CodeKind, userID, from, to string, lifetime time.Duration) (string, bool) {
	tok, hash := onetime.New()
	now := rc.k.Now()
	err := rc.k.Store().CreateCode(ctx, store.Code{
		Hash: hash, Kind: kind, UserID: userID, Email: to, Data: []byte(from),
		CreatedAt: now, ExpiresAt: now.Add(lifetime),
	})
	if errors.Is(err, store.ErrNotFound) {
		rc.k.Logger().LogAttrs(ctx, slog.LevelInfo, "auth: email change link not sent: the user is gone",
			slog.String("user_id", userID))
		return "", false
	}
	if err != nil {
		rc.k.MailFailed(ctx, "email change", userID, "creating a token", err)
		return "", false
	}
	return tok, true
}

// handleUse uses up a token of kind: the link to the new address, or the
// notice's undo.
func (rc *Recipe) handleUse(kind store.CodeKind) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req map[string]json.RawMessage
		if err := rc.k.ReadJSON(w, r, &req); err != nil {
			rc.k.Fail(w, r, err)
			return
		}
		tok, err := wire.TokenField(req, "email change")
		if err != nil {
			rc.k.Fail(w, r, err)
			return
		}
		if !onetime.WellFormed(tok) {
			wire.Status(w, "EMAIL_CHANGE_INVALID_TOKEN_ERROR")
			return
		}
		ctx, hash := r.Context(), sha256.Sum256([]byte(tok))
		if kind == store.CodeEmailChange && !rc.openedByItsUser(w, r, hash) {
			return
		}
		c, _, err := rc.k.Store().ChangeEmail(ctx, kind, hash, rc.k.Now())
		switch {
		case errors.Is(err, store.ErrNotFound):
			wire.Status(w, "EMAIL_CHANGE_INVALID_TOKEN_ERROR")
			return
		case errors.Is(err, store.ErrEmailOwned), errors.Is(err, store.ErrConflict):
			wire.Status(w, "EMAIL_ALREADY_EXISTS_ERROR")
			return
		case err != nil:
			rc.k.Fail(w, r, err)
			return
		}
		rc.changed(r, kind, c)
		wire.JSON(w, http.StatusOK, struct {
			Status string `json:"status"`
			Email  string `json:"email"`
		}{"OK", c.Email})
	}
}

// openedByItsUser reports whether the link to the new address with the
// code hash is opened with a session of the user it changes, or answers
// the request itself: 401 without a session, an invalid token for
// another user's. Whoever reads the new inbox may not be the account's
// holder: a stranger could ask to move their own account, with ways in
// of theirs, to someone else's address, and have its owner confirm it.
func (rc *Recipe) openedByItsUser(w http.ResponseWriter, r *http.Request, hash store.TokenHash) bool {
	s, ok := rc.k.Session(w, r)
	if !ok {
		return false
	}
	c, err := rc.k.Store().Code(r.Context(), store.CodeEmailChange, hash, rc.k.Now())
	switch {
	case errors.Is(err, store.ErrNotFound), err == nil && c.UserID != s.UserID():
		wire.Status(w, "EMAIL_CHANGE_INVALID_TOKEN_ERROR")
		return false
	case err != nil:
		rc.k.Fail(w, r, err)
		return false
	}
	return true
}

// changed reports a change that c made, and follows it: a change mails
// the old address its notice; an undo ends every session of the user.
func (rc *Recipe) changed(r *http.Request, kind store.CodeKind, c store.Code) {
	ctx := r.Context()
	if kind == store.CodeEmailChange {
		rc.k.Emit(ctx, r, kit.Event{Kind: kit.EventEmailChanged, UserID: c.UserID})
		from, to := string(c.Data), c.Email
		rc.k.Enqueue(ctx, "email change", func(ctx context.Context) { rc.sendNotice(ctx, c.UserID, from, to) })
		return
	}
	rc.k.Emit(ctx, r, kit.Event{Kind: kit.EventEmailChangeUndone, UserID: c.UserID})
	handles, err := rc.k.Store().RevokeUserSessions(ctx, c.UserID)
	if err != nil {
		rc.k.Logger().LogAttrs(ctx, slog.LevelError, "auth: an email change was undone and the user's sessions did not end",
			slog.String("user_id", c.UserID), slog.String("error", err.Error()))
	}
	for _, h := range handles {
		rc.k.Emit(ctx, r, kit.Event{Kind: kit.EventSessionRevoked, UserID: c.UserID, SessionHandle: h})
	}
}
