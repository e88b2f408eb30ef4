// Package emailverification is the email verification recipe: it mails a
// link that proves a user reads the inbox of their login method's email,
// for the SuperTokens frontend's EmailVerification recipe. Turn it on with
// auth.Config's EmailVerification field:
//
//	auth.Config{
//		Store:             st,
//		Email:             auth.EmailConfig{Mailer: m},
//		EmailVerification: emailverification.Config{Mode: emailverification.Required},
//	}
//
// # Routes
//
// Under the Auth's base path ("emailverification" in the SDKs):
//
//   - POST /user/email/verify/token mails a link for the email of the
//     session's login method; EMAIL_ALREADY_VERIFIED_ERROR if it is
//     verified already, GENERAL_ERROR with the wait past the allowance;
//   - POST /user/email/verify uses up a link's token; a session is
//     optional, as the link may be opened in another browser;
//     EMAIL_VERIFICATION_INVALID_TOKEN_ERROR for a token that is unknown,
//     used or expired;
//   - GET /user/email/verify tells whether the email is verified.
//
// None of them holds the session to the verification it serves. Each
// that sees a session writes the email's state into its st-ev claim at
// once (a new access token with the old one's expiry, in the request's
// transfer mode; body mode gets it in the st-access-token header).
//
// # The claim
//
// Verification belongs to a login method's email. A sign-up with a
// password starts unverified; a provider that vouches for the address
// (email_verified) starts verified, and a verified address stays verified
// while the provider reports the same one. Completing a password reset
// from the emailed link verifies that email too: the link proves the
// inbox, and so the owner of an address that a stranger signed up with
// can take the account back (the reset ends the stranger's sessions and
// replaces the password). An address that changes is a new, unverified
// one.
//
// With Mode optional or required, access tokens carry the SDKs' st-ev
// claim, {"v": verified, "t": when read}, for the email of the login
// method that signed in, read at sign-in and at every refresh. In
// required mode, the session middleware answers an unverified session 403
// with the SDKs' "invalid claim" body, after reading the store again if
// the claim is missing or a false one is over 10 seconds old. The claim
// and the rules that change this per route (auth.AllowUnverifiedEmail,
// auth.VerifiedEmail) are the kernel's: they hold whether this recipe is
// on or not. In either mode the kernel adds a passkey or an authenticator
// app only for a user whose addresses are all verified, and answers the
// st-ev claim's 403 otherwise (package auth, Account self-service):
// whoever signs up with someone else's address must not gain a way in
// that outlasts the owner's reset.
//
// # Links and limits
//
// Links go through the Auth's outbox, as reset links do, to
// <AppURL>/auth/verify-email?token=…&tenantId=public. Their tokens are
// 256 random bits, stored as SHA-256, valid for a day
// ([Config].TokenLifetime), bound to the login method and the address they
// were sent to, and work once even when submissions race. Each user, and
// each address, gets one email a minute (auth.RateLimits'
// VerificationEmails): the SDKs ask at every load of their "check your
// inbox" page, and several users may have one address unverified.
//
// # Events
//
// email_verification_sent when a link is mailed, email_verified when one
// is used (or when the application calls auth's SetEmailVerified).
package emailverification

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

	"github.com/latchkit/auth/internal/kit"
	"github.com/latchkit/auth/internal/onetime"
	"github.com/latchkit/auth/internal/wire"
	"github.com/latchkit/auth/mailer"
	"github.com/latchkit/auth/store"
)

// Mode says what email verification does.
type Mode string

const (
	// Off, the zero value, serves no verification endpoints and puts no
	// claim in access tokens.
	Off Mode = ""
	// Optional serves the verification endpoints and keeps the st-ev
	// claim in access tokens; nothing is enforced, except by a route with
	// the auth.VerifiedEmail rule, and adding a passkey or an
	// authenticator app, which waits for a verified address.
	Optional Mode = "optional"
	// Required is Optional, and the session middleware refuses a session
	// whose email is not verified: 403 with the SDKs' "invalid claim"
	// body.
	Required Mode = "required"
)

// DefaultTokenLifetime is how long a verification link works unless
// Config.TokenLifetime says otherwise.
const DefaultTokenLifetime = 24 * time.Hour

// Config configures email verification. The zero value means off.
// Verification mail goes through auth.Config's Email, which needs a
// Mailer.
type Config struct {
	// Mode is off (the zero value), optional or required.
	Mode Mode

	// URL is the page verification links open, with ?token=...&
	// tenantId=public added. Default auth.Config's AppURL +
	// "/auth/verify-email", the page of the SuperTokens UI.
	URL string

	// Email renders the verification email, with EmailData. Default
	// DefaultEmail().
	Email *mailer.Template

	// TokenLifetime is how long a verification link works. Default
	// DefaultTokenLifetime, one day.
	TokenLifetime time.Duration
}

// EmailData is what the verification email templates can show.
type EmailData struct {
	Email    string // the address to verify, and the recipient
	Link     string // the verification page, with the token in its query
	ValidFor string // how long the link works, in words: "1 day"
}

//go:embed templates
var templateFS embed.FS

// defaultEmail is parsed once and never handed out: each caller of
// DefaultEmail, and each Auth, gets its own copy.
var defaultEmail = mailer.Template{
	Subject: texttemplate.Must(texttemplate.New("subject").Parse("Verify your email")),
	Text:    texttemplate.Must(texttemplate.ParseFS(templateFS, "templates/verify_email.txt")),
	HTML:    htmltemplate.Must(htmltemplate.ParseFS(templateFS, "templates/verify_email.html")),
}

// DefaultEmail returns the verification email used when Config.Email is
// nil, as a starting point for one's own.
func DefaultEmail() mailer.Template { return kit.MustClone(defaultEmail) }

// withDefaults is c with its defaults filled in, or why c will not do.
func (c Config) withDefaults(setup kit.Setup) (Config, error) {
	switch c.Mode {
	case Optional, Required:
	default:
		return c, fmt.Errorf("auth: Config.EmailVerification.Mode %q is not one of \"\", %q and %q", c.Mode, Optional, Required)
	}
	if !setup.CanMail {
		return c, errors.New("auth: Config.EmailVerification needs Config.Email.Mailer to send its links")
	}
	if c.URL == "" {
		c.URL = strings.TrimRight(setup.AppURL, "/") + "/auth/verify-email"
	}
	if u, err := url.Parse(c.URL); err != nil || u.Host == "" {
		return c, fmt.Errorf("auth: Config.EmailVerification.URL %q is not an absolute URL", c.URL)
	}
	if c.Email == nil {
		t := DefaultEmail()
		c.Email = &t
	} else if c.Email.Subject == nil || c.Email.Text == nil {
		return c, errors.New("auth: Config.EmailVerification.Email needs a Subject and a Text template")
	}
	if c.TokenLifetime == 0 {
		c.TokenLifetime = DefaultTokenLifetime
	} else if c.TokenLifetime < 0 {
		return c, errors.New("auth: Config.EmailVerification.TokenLifetime must not be negative")
	}
	return c, nil
}

// Recipe is email verification as one Auth serves it. Package auth makes
// it with New from its Config; an application does not.
type Recipe struct {
	k      kit.Kernel
	cfg    Config
	emails kit.Rate // each user's, and each address's, allowance of emails
}

// New is for package auth: the recipe of c, with its defaults, for the
// kernel k; emails is the allowance of verification emails.
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
		"/user/email/verify/token": {Method: http.MethodPost, Handle: rc.handleSend},
		"/user/email/verify":       {Method: http.MethodPost, Handle: rc.handleVerify, Get: rc.handleIsVerified},
	}
}

// handleSend mails a verification link for the email of the session's
// login method.
func (rc *Recipe) handleSend(w http.ResponseWriter, r *http.Request) {
	var body map[string]json.RawMessage
	if err := rc.k.ReadOptionalJSON(w, r, &body); err != nil {
		rc.k.Fail(w, r, err)
		return
	}
	s, l, ok := rc.k.SessionLogin(w, r)
	if !ok {
		return
	}
	ctx := r.Context()
	// A claim that says otherwise (the email changed, or was marked
	// unverified) is put right before the user is told to check mail.
	verified := kit.EmailVerified(l)
	if err := rc.k.SetEmailClaim(ctx, w, s, verified, false); err != nil {
		rc.k.Fail(w, r, err)
		return
	}
	if verified {
		wire.Status(w, "EMAIL_ALREADY_VERIFIED_ERROR")
		return
	}
	if wait := rc.k.Take(ctx, rc.limits(l)...); wait > 0 {
		wire.GeneralError(w, "A verification email was sent a moment ago. Please check your inbox, or try again in "+
			strconv.Itoa(int((wait+time.Second-1)/time.Second))+" seconds.")
		return
	}
	rc.k.Enqueue(ctx, "verification", func(ctx context.Context) { rc.send(ctx, l) })
	wire.JSON(w, http.StatusOK, wire.OK)
}

// limits are the allowances an email to l takes from: its user's; and its
// address's for logins at providers, since many users may have one
// address unverified there. A password login is the only one of its
// address, so a stranger's provider logins cannot use up its owner's
// allowance.
func (rc *Recipe) limits(l store.Login) []kit.Limit {
	limits := []kit.Limit{{Key: kit.LimitKey("verify-email", l.UserID), Rate: rc.emails}}
	if l.Method != store.MethodEmailPassword {
		limits = append(limits, kit.Limit{Key: kit.LimitKey("verify-address", l.Email), Rate: rc.emails})
	}
	return limits
}

// send is the outbox's work for one request: issue a token bound to the
// login and its email, and mail the link.
func (rc *Recipe) send(ctx context.Context, l store.Login) {
	tok, hash := onetime.New()
	now := rc.k.Now()
	err := rc.k.Store().CreateCode(ctx, store.Code{
		Hash: hash, Kind: store.CodeVerification, Tenant: l.Tenant, UserID: l.UserID, LoginID: l.ID, Email: l.Email,
		CreatedAt: now, ExpiresAt: now.Add(rc.cfg.TokenLifetime),
	})
	if errors.Is(err, store.ErrNotFound) {
		// The login changed its email, or went, since the request: the
		// link would verify nothing.
		rc.k.Logger().LogAttrs(ctx, slog.LevelInfo, "auth: verification email not sent: the login or its email changed",
			slog.String("user_id", l.UserID))
		return
	}
	if err != nil {
		rc.k.MailFailed(ctx, "verification", l.UserID, "creating a verification token", err)
		return
	}
	if err := rc.k.Mail(ctx, rc.cfg.Email, l.Email, EmailData{
		Email:    l.Email,
		Link:     wire.LinkWithToken(rc.cfg.URL, tok, store.TenantID(l.Tenant)),
		ValidFor: kit.InWords(rc.cfg.TokenLifetime),
	}); err != nil {
		rc.k.MailFailed(ctx, "verification", l.UserID, "sending the verification email", err)
		return
	}
	rc.k.Emit(ctx, nil, kit.EventOf(kit.EventEmailVerificationSent, l))
}

// handleVerify uses up a verification token. A session is optional: the
// link may be opened in another browser. When one comes along and it is
// the verified login's, its claim is updated in the same answer.
func (rc *Recipe) handleVerify(w http.ResponseWriter, r *http.Request) {
	var req map[string]json.RawMessage
	if err := rc.k.ReadJSON(w, r, &req); err != nil {
		rc.k.Fail(w, r, err)
		return
	}
	tok, err := wire.TokenField(req, "email verification")
	if err != nil {
		rc.k.Fail(w, r, err)
		return
	}
	// A session that is sent must be good, before the token is spent: a
	// client told to refresh will post again.
	s, ok := rc.k.OptionalSession(w, r)
	if !ok {
		return
	}
	if !onetime.WellFormed(tok) {
		wire.Status(w, "EMAIL_VERIFICATION_INVALID_TOKEN_ERROR")
		return
	}
	ctx := r.Context()
	// The link proves that someone reads the inbox, not that they hold
	// the login, whatever session comes with it: it verifies the email
	// without proving it (store.Login.EmailProven).
	hash := sha256.Sum256([]byte(tok))
	if !rc.ofTenant(w, r, hash) {
		return
	}
	l, err := rc.k.Store().VerifyEmail(ctx, hash, rc.k.Now())
	if errors.Is(err, store.ErrNotFound) {
		wire.Status(w, "EMAIL_VERIFICATION_INVALID_TOKEN_ERROR")
		return
	} else if err != nil {
		rc.k.Fail(w, r, err)
		return
	}
	rc.k.Emit(ctx, r, kit.EventOf(kit.EventEmailVerified, l))
	rc.k.EmailVerified(ctx, l)
	if s != nil && startedWith(s, l) {
		if err := rc.k.SetEmailClaim(ctx, w, s, true, false); err != nil {
			// The email is verified; the claim catches up at the
			// next check.
			rc.k.Logger().LogAttrs(ctx, slog.LevelWarn, "auth: could not update the session's email claim",
				slog.String("error", err.Error()))
		}
	}
	wire.JSON(w, http.StatusOK, wire.OK)
}

// ofTenant reports whether the verification token of hash is the request
// tenant's, or answers the request itself: another tenant's token is
// none of this one's.
func (rc *Recipe) ofTenant(w http.ResponseWriter, r *http.Request, hash store.TokenHash) bool {
	c, err := rc.k.Store().Code(r.Context(), store.CodeVerification, hash, rc.k.Now())
	switch {
	case err == nil && store.TenantID(c.Tenant) == rc.k.Tenant(r.Context()).ID:
		return true
	case err == nil || errors.Is(err, store.ErrNotFound):
		wire.Status(w, "EMAIL_VERIFICATION_INVALID_TOKEN_ERROR")
	default:
		rc.k.Fail(w, r, err)
	}
	return false
}

// startedWith reports whether s was started with l.
func startedWith(s kit.Session, l store.Login) bool {
	id := s.LoginID()
	if id == "" {
		id = s.UserID()
	}
	return id == l.ID && s.UserID() == l.UserID
}

// handleIsVerified tells whether the email of the session's login method
// is verified, and writes the answer into the session's claim.
func (rc *Recipe) handleIsVerified(w http.ResponseWriter, r *http.Request) {
	s, l, ok := rc.k.SessionLogin(w, r)
	if !ok {
		return
	}
	verified := kit.EmailVerified(l)
	if err := rc.k.SetEmailClaim(r.Context(), w, s, verified, true); err != nil {
		rc.k.Fail(w, r, err)
		return
	}
	wire.JSON(w, http.StatusOK, struct {
		Status     string `json:"status"`
		IsVerified bool   `json:"isVerified"`
	}{"OK", verified})
}
