// Package passkey is the passkey recipe: sign-up and sign-in with a
// discoverable WebAuthn credential, the SuperTokens WebAuthn recipe (rid
// "webauthn"), with the relying party's checks on
// github.com/go-webauthn/webauthn. Give New's Recipe to
// auth.Config.Passkeys; the auth package does not import this one, so
// that applications without passkeys do not build go-webauthn.
//
// # Settings
//
// [Config] holds them; its zero value is usable once auth.Config.AppURL
// names the site the browser runs the ceremonies on.
//
// The options follow the SuperTokens backends, which the frontend SDKs
// expect: discoverable credentials (resident keys required), user
// verification preferred, no attestation, and the algorithms EdDSA,
// ES256 and RS256; the browser is asked to wait [Timeout] for the
// authenticator, and a ceremony's options answer for five minutes.
//
// # Routes
//
// Under auth.Config.BasePath:
//
//   - POST /webauthn/options/register: options to register a passkey,
//     for a new account's email or for the account a recovery link
//     names (recoverAccountToken);
//   - POST /webauthn/options/signin: options to sign in;
//   - POST /webauthn/signup, POST /webauthn/signin: finish a ceremony
//     (webauthnGeneratedOptionsId and the credential);
//   - GET /webauthn/credential/list, POST /webauthn/credential, POST
//     /webauthn/credential/remove: a signed-in user's passkeys; adding
//     and removing one needs a fresh sign-in (auth.Config.FreshSignIn,
//     403 st-fresh), and with email verification on adding one needs
//     the user's addresses verified (403 st-ev), here and as a second
//     factor;
//   - GET /webauthn/email/exists, unless auth.Config.DisableEmailExists;
//   - POST /user/webauthn/reset/token, POST /user/webauthn/reset: account
//     recovery by a mailed link, with auth.Config.Email.Mailer.
//
// Every failure of a ceremony is INVALID_CREDENTIALS_ERROR, as the SDKs
// expect; options that are gone are OPTIONS_NOT_FOUND_ERROR, and options
// of the wrong kind INVALID_OPTIONS_ERROR.
//
// # Limits
//
// Each client's options, sign-ups and sign-ins come out of
// auth.RateLimits.ClientPasskeyCeremonies (429 past it). Recovery
// requests share the password reset's allowances
// (auth.RateLimits.ClientResetRequests and ResetEmails).
//
// # Passkeys and accounts
//
// The relying party is the host of auth.Config.AppURL unless
// [Config.RelyingPartyID] names a parent domain of it; auth.New refuses
// one that is not the host, or a parent domain, of AppURL and of every
// auth.Config.AllowedOrigins entry. A ceremony's options are used up by
// the step that finishes it: sign-in deletes them together with the
// passkey's new counter (a compare-and-swap), and sign-up, recovery and
// adding a passkey delete them before adding the login. A sign-in whose
// counter did not grow, where the authenticator keeps one, is refused
// with auth.EventPasskeyCloneSuspected; synced passkeys, whose counter
// stays 0, sign in. One email has one passkey user: racing sign-ups take
// turns, for up to two seconds.
//
// A passkey proves nothing about its email (whoever made it need not
// read the inbox): passkey users start unverified and, under account
// linking, join nobody. A passkey a signed-in user adds has no email of
// its own. A recovery link proves the inbox, so recovery does what a
// password reset does: the new passkey proves and owns the address,
// every session ends, every earlier passkey goes, and the user's other
// logins with the address that prove nothing go too (a password among
// them is voided, for a reset to set again). Recovery is refused, with
// RECOVER_ACCOUNT_NOT_ALLOWED, where another user holds the address.
//
// With auth.Config.MFA on and webauthn among its factors, a passkey is a
// second factor: the SDKs' MFA screens sign up or sign in with a session
// and shouldTryLinkingWithSessionUser true, which registers or asserts a
// passkey of the session's user and completes webauthn in that session.
// A passkey added by POST /webauthn/credential completes it too, and the
// user's other sessions are held to it from their next refresh.
//
// # Events
//
// auth.EventSignUp, auth.EventSignIn and auth.EventSignInFailed with
// Method "webauthn"; auth.EventPasskeyAdded, auth.EventPasskeyRemoved,
// auth.EventPasskeyCloneSuspected; auth.EventResetEmailSent (Method
// "webauthn") for a recovery link; auth.EventFactorAdded and
// auth.EventFactorFailed for a passkey as a second factor.
package passkey

import (
	"embed"
	"errors"
	"fmt"
	htmltemplate "html/template"
	"maps"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	texttemplate "text/template"
	"time"

	"github.com/latchkit/auth/internal/kit"
	"github.com/latchkit/auth/mailer"
)

// DefaultRecoveryLifetime is how long a recovery link works unless
// Config.RecoveryLifetime says otherwise.
const DefaultRecoveryLifetime = time.Hour

// optionsLifetime is how long a ceremony's options can be answered: the
// browser gives up after Timeout.
const optionsLifetime = 5 * time.Minute

// Config configures sign-in with passkeys.
type Config struct {
	// RelyingPartyID is the WebAuthn relying party id, which binds every
	// passkey: changing it makes them all useless. Default the host of
	// auth.Config.AppURL, the site the browser runs the ceremonies on
	// (not the API's host, which may be another). It must be the host,
	// or a parent domain, of AppURL and of every
	// auth.Config.AllowedOrigins entry, and not an IP address: browsers
	// refuse those.
	RelyingPartyID string

	// RelyingPartyName is the name authenticators show. Default the
	// relying party id.
	RelyingPartyName string

	// RecoveryURL is the page recovery links open, with ?token=...&
	// tenantId=public added. Default auth.Config.AppURL +
	// "/auth/webauthn/recover", the page of the SuperTokens UI.
	RecoveryURL string

	// RecoveryEmail renders the recovery email. Default DefaultEmail().
	RecoveryEmail *mailer.Template

	// RecoveryLifetime is how long a recovery link works. Default
	// DefaultRecoveryLifetime, one hour.
	RecoveryLifetime time.Duration
}

// EmailData is what the recovery email templates can show.
type EmailData struct {
	Email    string // the recipient, whose account the link recovers
	Link     string // the recovery page, with the token in its query
	ValidFor string // how long the link works, in words: "1 hour"
}

//go:embed templates
var templateFS embed.FS

var defaultEmail = mailer.Template{
	Subject: texttemplate.Must(texttemplate.New("subject").Parse("Recover your account with a new passkey")),
	Text:    texttemplate.Must(texttemplate.ParseFS(templateFS, "templates/passkey_recovery.txt")),
	HTML:    htmltemplate.Must(htmltemplate.ParseFS(templateFS, "templates/passkey_recovery.html")),
}

// DefaultEmail returns the recovery email used when Config.RecoveryEmail
// is nil, as a starting point for one's own.
func DefaultEmail() mailer.Template { return kit.MustClone(defaultEmail) }

// A Recipe turns passkeys on for the auth.Config whose Passkeys field it
// is. One Recipe may serve several auth.Auth values, each with its own
// state.
type Recipe struct {
	c Config
	v *verifier
}

// New returns the recipe configured by c.
func New(c Config) *Recipe { return &Recipe{c: c, v: newVerifier()} }

// Build makes the recipe's routes for one auth.Auth: auth.New calls it,
// with the kernel's seam.
func (p *Recipe) Build(k kit.Kernel, setup kit.Setup) (map[string]kit.Route, error) {
	if p == nil {
		return nil, errors.New("auth: Config.Passkeys is a nil *passkey.Recipe: use passkey.New")
	}
	c := p.c
	if err := c.setDefaults(setup); err != nil {
		return nil, err
	}
	k.FirstFactors(kit.FactorWebAuthn)
	rc := &recipe{k: k, c: c, setup: setup, v: p.v, ceremonies: setup.Rates["ClientPasskeyCeremonies"],
		rp: relyingParty{ID: c.RelyingPartyID, Name: c.RelyingPartyName, Origins: slices.Sorted(maps.Keys(setup.FrontendOrigins))}}
	return rc.routes(), nil
}

func (c *Config) setDefaults(setup kit.Setup) error {
	app, ok := kit.HTTPURL(setup.AppURL)
	if !ok {
		return fmt.Errorf("auth: Config.AppURL %q must be an http or https URL with Passkeys: the relying party is its site", setup.AppURL)
	}
	if c.RelyingPartyID == "" {
		c.RelyingPartyID = app.Hostname()
	}
	c.RelyingPartyID = strings.ToLower(c.RelyingPartyID)
	if _, err := netip.ParseAddr(c.RelyingPartyID); err == nil || c.RelyingPartyID == "" {
		return fmt.Errorf("auth: Config.Passkeys.RelyingPartyID %q must be a domain name: browsers refuse WebAuthn on IP addresses (open the app on localhost instead)", c.RelyingPartyID)
	}
	for _, o := range slices.Sorted(maps.Keys(setup.FrontendOrigins)) {
		u, ok := kit.HTTPURL(o)
		if !ok || !hostWithin(u.Hostname(), c.RelyingPartyID) {
			return fmt.Errorf("auth: Config.Passkeys.RelyingPartyID %q is not the host, or a parent domain, of %q: browsers would refuse its passkeys there", c.RelyingPartyID, o)
		}
	}
	if c.RelyingPartyName == "" {
		c.RelyingPartyName = c.RelyingPartyID
	}
	return c.recoveryDefaults(setup)
}

// recoveryDefaults fills in and checks the settings of account recovery.
func (c *Config) recoveryDefaults(setup kit.Setup) error {
	if c.RecoveryURL == "" {
		c.RecoveryURL = strings.TrimRight(setup.AppURL, "/") + "/auth/webauthn/recover"
	}
	if u, err := url.Parse(c.RecoveryURL); err != nil || u.Host == "" {
		return fmt.Errorf("auth: Config.Passkeys.RecoveryURL %q is not an absolute URL", c.RecoveryURL)
	}
	if c.RecoveryEmail == nil {
		t := DefaultEmail()
		c.RecoveryEmail = &t
	} else if c.RecoveryEmail.Subject == nil || c.RecoveryEmail.Text == nil {
		return errors.New("auth: Config.Passkeys.RecoveryEmail needs a Subject and a Text template")
	}
	if c.RecoveryLifetime == 0 {
		c.RecoveryLifetime = DefaultRecoveryLifetime
	}
	if c.RecoveryLifetime < 0 {
		return errors.New("auth: Config.Passkeys.RecoveryLifetime must not be negative")
	}
	return nil
}

// hostWithin reports whether host is domain or a subdomain of it.
func hostWithin(host, domain string) bool {
	host = strings.ToLower(host)
	return host == domain || strings.HasSuffix(host, "."+domain) && net.ParseIP(host) == nil
}

// recipe is the passkey recipe of one auth.Auth.
type recipe struct {
	k          kit.Kernel
	c          Config
	setup      kit.Setup
	v          *verifier
	rp         relyingParty // made once, in one order: the verifier keeps its relying parties by value
	ceremonies kit.Rate     // each client's
}

// routes are the recipe's endpoints.
func (rc *recipe) routes() map[string]kit.Route {
	post := func(h http.HandlerFunc) kit.Route { return kit.Route{Method: http.MethodPost, Handle: h} }
	get := func(h http.HandlerFunc) kit.Route { return kit.Route{Method: http.MethodGet, Handle: h} }
	routes := map[string]kit.Route{
		"/webauthn/options/register":  post(rc.handleRegisterOptions),
		"/webauthn/options/signin":    post(rc.handleSignInOptions),
		"/webauthn/signup":            post(rc.handleSignUp),
		"/webauthn/signin":            post(rc.handleSignIn),
		"/webauthn/credential/list":   get(rc.handleList),
		"/webauthn/credential":        post(rc.handleAdd),
		"/webauthn/credential/remove": post(rc.handleRemove),
	}
	if !rc.setup.DisableEmailExists {
		routes["/webauthn/email/exists"] = get(rc.handleEmailExists)
	}
	if rc.setup.CanMail {
		routes["/user/webauthn/reset/token"] = post(rc.handleRecoveryRequest)
		routes["/user/webauthn/reset"] = post(rc.handleRecoverAccount)
	}
	return routes
}
