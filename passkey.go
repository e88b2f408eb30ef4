package auth

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/latchkit/auth/internal/address"
	"github.com/latchkit/auth/internal/kit"
	"github.com/latchkit/auth/internal/onetime"
	"github.com/latchkit/auth/internal/wire"
	"github.com/latchkit/auth/mailer"
	"github.com/latchkit/auth/store"
)

// A PasskeyVerifier runs the relying party's side of WebAuthn: it makes
// the options a browser needs for a ceremony and checks what the browser's
// authenticator answers. Package passkey provides one, on
// github.com/go-webauthn/webauthn; this package only routes, stores and
// signs in, so that applications without passkeys do not build
// go-webauthn.
type PasskeyVerifier interface {
	// BeginRegistration returns the options of a registration ceremony
	// for user, excluding the credentials in exclude, as the JSON object
	// of WebAuthn's PublicKeyCredentialCreationOptionsJSON, and the
	// ceremony's state, to keep until it ends.
	BeginRegistration(rp RelyingParty, user PasskeyUser, exclude [][]byte) (options, state []byte, err error)
	// FinishRegistration checks a RegistrationResponseJSON against the
	// ceremony's state and returns the new passkey. Its error wraps
	// ErrPasskeyMalformed for a response that is not a credential, and
	// ErrPasskeyRefused for one that fails a check.
	FinishRegistration(rp RelyingParty, user PasskeyUser, state, response []byte) (Passkey, error)
	// BeginSignIn returns the options of a sign-in ceremony with a
	// discoverable credential (PublicKeyCredentialRequestOptionsJSON) and
	// its state.
	BeginSignIn(rp RelyingParty) (options, state []byte, err error)
	// FinishSignIn checks an AuthenticationResponseJSON against the
	// ceremony's state, with the stored passkey that find returns for
	// the credential id and user handle the response names, and returns
	// the passkey as updated by the sign-in (its counter), with
	// CloneWarning set if the counter did not grow. Errors as for
	// FinishRegistration; an error of find is returned as it is.
	FinishSignIn(rp RelyingParty, state, response []byte, find FindPasskey) (Passkey, error)
}

// FindPasskey returns the Material of the stored passkey with a
// credential id and user handle, or an error.
type FindPasskey func(credentialID, userHandle []byte) ([]byte, error)

// RelyingParty is the WebAuthn relying party: its id, a host name that
// every origin's host is or ends with; its name, which authenticators
// show; and the origins the browser may run the ceremonies on.
type RelyingParty struct {
	ID      string
	Name    string
	Origins []string
}

// PasskeyUser is the account a passkey is registered for: its user handle
// (the WebAuthn user.id, at most 64 bytes) and the name authenticators
// show, the email.
type PasskeyUser struct {
	Handle []byte
	Name   string
}

// A Passkey is a WebAuthn credential as a PasskeyVerifier reports it.
type Passkey struct {
	CredentialID []byte
	UserHandle   []byte
	// Material is the credential as the verifier encodes it (public key,
	// counter, flags), stored with the login as it is.
	Material       []byte
	SignCount      uint32
	BackupEligible bool
	// CloneWarning reports a sign-in whose counter did not grow where
	// the authenticator keeps one: two copies of the key may exist.
	CloneWarning bool
}

// Errors a PasskeyVerifier wraps: the request is answered 400 for the
// first, INVALID_CREDENTIALS_ERROR for the second.
var (
	ErrPasskeyMalformed = errors.New("auth: the passkey response is not a credential")
	ErrPasskeyRefused   = errors.New("auth: the passkey response fails the checks")
)

// DefaultPasskeyRecoveryLifetime is how long a passkey recovery link
// works unless PasskeyConfig.RecoveryLifetime says otherwise.
const DefaultPasskeyRecoveryLifetime = time.Hour

// passkeyOptionsLifetime is how long a ceremony's options can be
// answered: the browser gives up after a minute (passkey.Timeout).
const passkeyOptionsLifetime = 5 * time.Minute

// PasskeyConfig configures sign-in with passkeys, the SuperTokens WebAuthn
// recipe. The zero value means off. A passkey proves nothing about its
// email (the person who made it need not read the inbox): passkey users
// start unverified, and under Config.AccountLinking a passkey sign-up
// joins nobody.
type PasskeyConfig struct {
	// Verifier checks the ceremonies: passkey.New() from package
	// passkey. Without one, no passkey endpoint is served.
	Verifier PasskeyVerifier

	// RelyingPartyID is the WebAuthn relying party id, which binds every
	// passkey: changing it makes them all useless. Default the host of
	// Config.AppURL, the site the browser runs the ceremonies on (not the
	// API's host, which may be another). New checks that it is the host,
	// or a parent domain, of AppURL and of every Config.AllowedOrigins
	// entry, and not an IP address: browsers refuse those.
	RelyingPartyID string

	// RelyingPartyName is the name authenticators show. Default the
	// relying party id.
	RelyingPartyName string

	// RecoveryURL is the page recovery links open, with ?token=...&
	// tenantId=public added. Default Config.AppURL +
	// "/auth/webauthn/recover", the page of the SuperTokens UI. Recovery
	// is served with Config.Email.Mailer.
	RecoveryURL string

	// RecoveryEmail renders the recovery email. Default
	// DefaultPasskeyRecoveryEmail().
	RecoveryEmail *mailer.Template

	// RecoveryLifetime is how long a recovery link works. Default
	// DefaultPasskeyRecoveryLifetime, one hour.
	RecoveryLifetime time.Duration
}

// PasskeyRecoveryEmailData is what the passkey recovery email templates
// can show.
type PasskeyRecoveryEmailData struct {
	Email    string // the recipient, whose account the link recovers
	Link     string // the recovery page, with the token in its query
	ValidFor string // how long the link works, in words: "1 hour"
}

func (c *PasskeyConfig) setDefaults(cfg *Config) error {
	if c.Verifier == nil {
		return nil
	}
	app, ok := httpURL(cfg.AppURL)
	if !ok {
		return fmt.Errorf("auth: Config.AppURL %q must be an http or https URL with Passkeys: the relying party is its site", cfg.AppURL)
	}
	setDefault(&c.RelyingPartyID, app.Hostname())
	c.RelyingPartyID = strings.ToLower(c.RelyingPartyID)
	if _, err := netip.ParseAddr(c.RelyingPartyID); err == nil || c.RelyingPartyID == "" {
		return fmt.Errorf("auth: Config.Passkeys.RelyingPartyID %q must be a domain name: browsers refuse WebAuthn on IP addresses (open the app on localhost instead)", c.RelyingPartyID)
	}
	for _, o := range append([]string{cfg.AppURL}, cfg.AllowedOrigins...) {
		u, ok := httpURL(o)
		if !ok || !hostWithin(u.Hostname(), c.RelyingPartyID) {
			return fmt.Errorf("auth: Config.Passkeys.RelyingPartyID %q is not the host, or a parent domain, of %q: browsers would refuse its passkeys there", c.RelyingPartyID, o)
		}
	}
	setDefault(&c.RelyingPartyName, c.RelyingPartyID)
	setDefault(&c.RecoveryURL, strings.TrimRight(cfg.AppURL, "/")+"/auth/webauthn/recover")
	if u, err := url.Parse(c.RecoveryURL); err != nil || u.Host == "" {
		return fmt.Errorf("auth: Config.Passkeys.RecoveryURL %q is not an absolute URL", c.RecoveryURL)
	}
	if c.RecoveryEmail == nil {
		t := DefaultPasskeyRecoveryEmail()
		c.RecoveryEmail = &t
	} else if c.RecoveryEmail.Subject == nil || c.RecoveryEmail.Text == nil {
		return errors.New("auth: Config.Passkeys.RecoveryEmail needs a Subject and a Text template")
	}
	setDefault(&c.RecoveryLifetime, DefaultPasskeyRecoveryLifetime)
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

// relyingParty is the relying party of the configuration: made once in
// New, in one order, so that every ceremony names the same one (the
// verifier keeps its relying parties by value).
func relyingParty(c PasskeyConfig, frontendOrigins map[string]bool) RelyingParty {
	return RelyingParty{ID: c.RelyingPartyID, Name: c.RelyingPartyName, Origins: slices.Sorted(maps.Keys(frontendOrigins))}
}

// ceremony is what a CodePasskeyOptions keeps in Data.
type ceremony struct {
	State  []byte `json:"state"`
	Handle []byte `json:"handle,omitempty"` // the user handle of a registration
}

// The statuses of the WebAuthn recipe.
const (
	webauthnInvalidCredentials = "INVALID_CREDENTIALS_ERROR"
	webauthnOptionsNotFound    = "OPTIONS_NOT_FOUND_ERROR"
	webauthnInvalidOptions     = "INVALID_OPTIONS_ERROR"
	webauthnTokenInvalid       = "RECOVER_ACCOUNT_TOKEN_INVALID_ERROR"
	reasonPasskeySignUp        = "Cannot sign up due to security reasons. Please try logging in, use a different login method or contact support. (ERR_CODE_025)"
	reasonPasskeySignIn        = "Cannot sign in due to security reasons. Please try recovering your account, use a different login method or contact support. (ERR_CODE_030)"
)

// passkeyLimit is the client's allowance of ceremonies.
func (a *Auth) passkeyLimit(w http.ResponseWriter, r *http.Request) bool {
	perClient := limit{kit.LimitKey("passkey-client", a.limitClient(r)), a.cfg.RateLimits.ClientPasskeyCeremonies}
	if wait := a.take(r.Context(), perClient); wait > 0 {
		wire.TooMany(w, wait)
		return false
	}
	return true
}

// handleRegisterOptions starts a registration: for a new account with an
// email, or for the account a recovery link names.
func (a *Auth) handleRegisterOptions(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Email        *string `json:"email"`
		RecoverToken *string `json:"recoverAccountToken"`
	}
	if err := a.readJSON(w, r, &req); err != nil {
		a.fail(w, r, err)
		return
	}
	if (req.Email == nil) == (req.RecoverToken == nil) {
		a.fail(w, r, wire.BadRequest("Please provide the email or the recoverAccountToken"))
		return
	}
	if !a.passkeyLimit(w, r) {
		return
	}
	ctx, now := r.Context(), a.cfg.Now()
	opts := store.Code{Kind: store.CodePasskeyOptions, CreatedAt: now, ExpiresAt: now.Add(passkeyOptionsLifetime)}
	handle := []byte(uuid.NewString()) // a new account's id, should it be made
	if req.RecoverToken != nil {
		tok, err := a.store.Code(ctx, store.CodePasskeyRecovery, sha256.Sum256([]byte(*req.RecoverToken)), now)
		if errors.Is(err, store.ErrNotFound) || !onetime.WellFormed(*req.RecoverToken) {
			wire.Status(w, webauthnTokenInvalid)
			return
		}
		if err != nil {
			a.fail(w, r, err)
			return
		}
		// The account's own handle, and no credential excluded: an
		// authenticator that still holds the account's lost passkey
		// replaces it, as the SDKs expect (they have no answer to an
		// authenticator that refuses).
		opts.UserID, opts.Email, handle = tok.UserID, tok.Email, []byte(tok.UserID)
	} else {
		opts.Email = address.Normalise(*req.Email)
		if msg := wire.CheckEmail(opts.Email); msg != "" {
			wire.JSON(w, http.StatusOK, struct {
				Status string `json:"status"`
				Err    string `json:"err"`
			}{"INVALID_EMAIL_ERROR", msg})

			return
		}
	}
	options, state, err := a.cfg.Passkeys.Verifier.BeginRegistration(a.rp, PasskeyUser{Handle: handle, Name: opts.Email}, nil)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	a.writeOptions(w, r, opts, options, ceremony{State: state, Handle: handle})
}

// handleSignInOptions starts a sign-in with a discoverable credential.
func (a *Auth) handleSignInOptions(w http.ResponseWriter, r *http.Request) {
	var req struct{}
	if err := a.readOptionalJSON(w, r, &req); err != nil {
		a.fail(w, r, err)
		return
	}
	if !a.passkeyLimit(w, r) {
		return
	}
	options, state, err := a.cfg.Passkeys.Verifier.BeginSignIn(a.rp)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	now := a.cfg.Now()
	opts := store.Code{Kind: store.CodePasskeyOptions, CreatedAt: now, ExpiresAt: now.Add(passkeyOptionsLifetime)}
	a.writeOptions(w, r, opts, options, ceremony{State: state})
}

// writeOptions stores a ceremony's options under a new id and answers
// them, the WebAuthn options' members at the top level, as
// @simplewebauthn/browser takes them from the SDKs.
func (a *Auth) writeOptions(w http.ResponseWriter, r *http.Request, opts store.Code, options []byte, c ceremony) {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(options, &members); err != nil {
		a.fail(w, r, fmt.Errorf("auth: the passkey verifier's options: %w", err))
		return
	}
	id := uuid.NewString()
	opts.Hash = sha256.Sum256([]byte(id))
	opts.Data, _ = json.Marshal(c)
	if err := a.store.CreateCode(r.Context(), opts); err != nil {
		a.fail(w, r, fmt.Errorf("auth: storing passkey options: %w", err))
		return
	}
	for k, v := range map[string]any{
		"status": "OK", "webauthnGeneratedOptionsId": id,
		"createdAt": opts.CreatedAt.UnixMilli(), "expiresAt": opts.ExpiresAt.UnixMilli(),
	} {
		members[k], _ = json.Marshal(v)
	}
	wire.JSON(w, http.StatusOK, members)
}

// ceremonyRequest is the body of the endpoints that finish a ceremony.
type ceremonyRequest struct {
	OptionsID    *string         `json:"webauthnGeneratedOptionsId"`
	Credential   json.RawMessage `json:"credential"`
	RecipeUserID *string         `json:"recipeUserId"`
	Token        *string         `json:"token"`
	kit.LinkingField
}

// readCeremony reads the body of an endpoint that finishes a ceremony,
// and the ceremony's options (found false and nothing written if there
// are none: the caller answers), or answers the request itself (ok
// false).
func (a *Auth) readCeremony(w http.ResponseWriter, r *http.Request) (req ceremonyRequest, opts store.Code, c ceremony, found, ok bool) {
	if req, ok = a.readCeremonyBody(w, r); !ok {
		return req, opts, c, false, false
	}
	opts, c, found, ok = a.ceremonyOptions(w, r, req)
	return req, opts, c, found, ok
}

// readCeremonyBody reads and checks the body of an endpoint that
// finishes a ceremony, or answers the request itself.
func (a *Auth) readCeremonyBody(w http.ResponseWriter, r *http.Request) (req ceremonyRequest, ok bool) {
	if !a.readSignInRequest(w, r, &req) {
		return req, false
	}
	if req.OptionsID == nil || len(req.Credential) == 0 || string(req.Credential) == "null" {
		a.fail(w, r, wire.BadRequest("Please provide the webauthnGeneratedOptionsId and the credential"))
		return req, false
	}
	if req.Credential[0] != '{' {
		a.fail(w, r, wire.BadRequest("the credential must be an object"))
		return req, false
	}
	return req, true
}

// ceremonyOptions spends a ceremony of the client's allowance and reads
// the options a request names (found false if there are none), or
// answers the request itself (ok false).
func (a *Auth) ceremonyOptions(w http.ResponseWriter, r *http.Request, req ceremonyRequest) (opts store.Code, c ceremony, found, ok bool) {
	if !a.passkeyLimit(w, r) {
		return opts, c, false, false
	}
	opts, err := a.store.Code(r.Context(), store.CodePasskeyOptions, sha256.Sum256([]byte(*req.OptionsID)), a.cfg.Now())
	if errors.Is(err, store.ErrNotFound) {
		return opts, c, false, true
	}
	if err == nil {
		err = json.Unmarshal(opts.Data, &c)
	}
	if err != nil {
		a.fail(w, r, err)
		return opts, c, false, false
	}
	return opts, c, true, true
}

// verifierFailed answers a verifier's error: 400 for a response that is
// not a credential, status for one that fails its checks.
func (a *Auth) verifierFailed(w http.ResponseWriter, r *http.Request, status string, err error) {
	switch {
	case errors.Is(err, ErrPasskeyMalformed):
		a.fail(w, r, wire.BadRequest("the credential is malformed"))
	case errors.Is(err, ErrPasskeyRefused):
		a.cfg.Logger.LogAttrs(r.Context(), slog.LevelInfo, "auth: passkey refused", slog.String("error", err.Error()))
		a.emit(r.Context(), r, Event{Kind: EventSignInFailed, Method: store.MethodWebAuthn})
		wire.Status(w, status)
	default:
		a.fail(w, r, err)
	}
}

// handlePasskeySignUp makes a new user with a passkey, for the email the
// registration options were made for.
func (a *Auth) handlePasskeySignUp(w http.ResponseWriter, r *http.Request) {
	req, opts, c, found, ok := a.readCeremony(w, r)
	switch {
	case !ok:
		return
	case !found:
		wire.Status(w, webauthnOptionsNotFound)
		return
	case opts.Email == "" || opts.UserID != "" || len(c.Handle) == 0:
		wire.Status(w, webauthnInvalidOptions) // sign-in or recovery options
		return
	case a.mfaOn() && linkingRequested(req.LinkingField):
		a.passkeySignUpAsFactor(w, r, req, opts, c)
		return
	case !a.firstFactorAllowed(w, FactorWebAuthn):
		return
	}
	release, ok := a.emailFreeForPasskey(w, r, opts.Email)
	if !ok {
		return
	}
	defer release()
	nl, ok := a.newPasskey(w, r, req, opts, c)
	if !ok {
		return
	}
	a.passkeySignedUp(w, r, nl, store.User{ID: string(c.Handle), TimeJoined: nl.CreatedAt})
}

// emailFreeForPasskey takes the turn of a passkey sign-up with email and
// checks that no passkey user has it: it returns the turn's release, or
// answers the request.
func (a *Auth) emailFreeForPasskey(w http.ResponseWriter, r *http.Request, email string) (release func(), ok bool) {
	turn, ok := a.signUpTurn(r.Context(), email)
	if !ok {
		wire.GeneralError(w, "Another sign-up with this email is under way. Please try again.")
		return nil, false
	}
	// The turn goes back on every way out but success, a panic included.
	free := false
	defer func() {
		if !free {
			turn()
		}
	}()
	if taken, err := a.passkeyEmailExists(r.Context(), email); err != nil || taken {
		if err != nil {
			a.fail(w, r, err)
			return nil, false
		}
		wire.Status(w, "EMAIL_ALREADY_EXISTS_ERROR")
		return nil, false
	}
	free = true
	return turn, true
}

// passkeySignedUp makes the user of the new passkey nl (newUser, or under
// account linking whoever the account model says), and signs them in.
func (a *Auth) passkeySignedUp(w http.ResponseWriter, r *http.Request, nl store.Login, newUser store.User) {
	ctx := r.Context()
	var res linked
	var err error
	if a.cfg.AccountLinking {
		res, err = a.signInUpLinking(ctx, r, nl, newUser)
		if err == nil && res.refusal != "" {
			wire.NotAllowed(w, "SIGN_UP_NOT_ALLOWED", reasonPasskeySignUp)
			return
		}
	} else {
		res, err = a.signInUpAlone(ctx, nl, newUser)
	}
	if err != nil {
		a.fail(w, r, fmt.Errorf("auth: signing up with a passkey: %w", err))
		return
	}
	if res.created && res.user.ID == newUser.ID {
		a.emit(ctx, r, Event{Kind: EventSignUp, UserID: res.user.ID, Method: store.MethodWebAuthn})
	}
	// The SDKs' passkey sign-up answer has no createdNewRecipeUser.
	a.signedIn(w, r, res.user, res.logins, res.login, nil, FactorWebAuthn)
}

// newPasskey checks a sign-up's registration against its options and
// uses them up: it returns the new passkey's login, with its email, or
// answers the request. A credential registered already is refused.
func (a *Auth) newPasskey(w http.ResponseWriter, r *http.Request, req ceremonyRequest, opts store.Code, c ceremony) (store.Login, bool) {
	ctx := r.Context()
	rp := a.rp
	pk, err := a.cfg.Passkeys.Verifier.FinishRegistration(rp, PasskeyUser{Handle: c.Handle, Name: opts.Email}, c.State, req.Credential)
	if err != nil {
		a.verifierFailed(w, r, webauthnInvalidCredentials, err)
		return store.Login{}, false
	}
	key := store.WebAuthnKey(rp.ID, base64.RawURLEncoding.EncodeToString(pk.CredentialID))
	if _, err := a.store.Login(ctx, key); !errors.Is(err, store.ErrNotFound) {
		if err == nil {
			wire.Status(w, webauthnInvalidCredentials) // this credential is registered already
			return store.Login{}, false
		}
		a.fail(w, r, err)
		return store.Login{}, false
	}
	if _, err := a.store.UseCeremony(ctx, store.CodePasskeyOptions, opts.Hash, a.cfg.Now(), nil); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			wire.Status(w, webauthnOptionsNotFound) // used meanwhile
			return store.Login{}, false
		}
		a.fail(w, r, err)
		return store.Login{}, false
	}
	now := a.cfg.Now().Truncate(time.Millisecond)
	return store.Login{LoginKey: key, Email: opts.Email, Material: pk.Material, CreatedAt: now}, true
}

// signUpTurn waits for the turn of a passkey sign-up with email, so that
// one email gets one passkey user however many sign-ups race: nothing in
// the store is unique per email for logins that do not own it. The turn
// is an allowance of one in the Limiter, which the store limiter shares
// between instances, given back when the sign-up ends (or, should the
// process die first, after a minute). It reports false if the turn does
// not come within two seconds.
func (a *Auth) signUpTurn(ctx context.Context, email string) (release func(), ok bool) {
	turn := limit{kit.LimitKey("passkey-signup", email), Rate{Burst: 1, Every: time.Minute}}
	for deadline := time.Now().Add(2 * time.Second); ; {
		wait, err := a.cfg.Limiter.Take(ctx, turn.key, turn.rate, a.cfg.Now())
		if err != nil {
			a.limiterFailed(ctx, err)
			return func() {}, true // no turns without a limiter: fail open, as allowances do
		}
		if wait == 0 {
			return func() { a.refund(context.WithoutCancel(ctx), turn) }, true
		}
		if time.Now().After(deadline) {
			return nil, false
		}
		select {
		case <-time.After(10 * time.Millisecond):
		case <-ctx.Done():
			return nil, false
		}
	}
}

// passkeyEmailExists reports whether a passkey login has email.
func (a *Auth) passkeyEmailExists(ctx context.Context, email string) (bool, error) {
	logins, err := a.store.LoginsByEmail(ctx, email)
	for _, l := range logins {
		if l.Method == store.MethodWebAuthn {
			return true, err
		}
	}
	return false, err
}

// handlePasskeySignIn signs in with a discoverable passkey. Every failure
// is INVALID_CREDENTIALS_ERROR, as the SDKs expect. The options are used
// up in the step that records the passkey's new counter, so an assertion
// answers one ceremony once.
//
// With a session and shouldTryLinkingWithSessionUser, the passkey is a
// second factor: it must be the session user's, and it completes
// webauthn in that session instead of starting another.
func (a *Auth) handlePasskeySignIn(w http.ResponseWriter, r *http.Request) {
	req, ok := a.readCeremonyBody(w, r)
	if !ok {
		return
	}
	if a.mfaOn() && linkingRequested(req.LinkingField) {
		vt, m, logins, sf, ok := a.sessionForFactors(w, r)
		if !ok {
			return
		}
		if login, ok := a.assertPasskey(w, r, req, vt.session.UserID); ok {
			a.factorAnswer(w, r, vt, m, a.requiredFactors(sf, logins), login)
		}
		return
	}
	if !a.firstFactorAllowed(w, FactorWebAuthn) {
		return
	}
	login, ok := a.assertPasskey(w, r, req, "")
	if !ok {
		return
	}
	if conflict, err := a.signInConflicts(r.Context(), login); err != nil || conflict {
		if err != nil {
			a.fail(w, r, err)
			return
		}
		wire.NotAllowed(w, "SIGN_IN_NOT_ALLOWED", reasonPasskeySignIn)
		return
	}
	u, logins, err := a.user(r.Context(), login.UserID)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	for _, l := range logins {
		if l.ID == login.ID {
			login = l
		}
	}
	a.signedIn(w, r, u, logins, login, nil, FactorWebAuthn)
}

// assertPasskey checks the assertion of a sign-in request against its
// options, and uses both up, recording the passkey's new counter: it
// returns the passkey's login, or answers the request. As a second
// factor, the passkey must be of the session's user, sessionUser.
func (a *Auth) assertPasskey(w http.ResponseWriter, r *http.Request, req ceremonyRequest, sessionUser string) (store.Login, bool) {
	opts, c, found, ok := a.ceremonyOptions(w, r, req)
	switch {
	case !ok:
		return store.Login{}, false
	case !found || opts.Email != "" || opts.UserID != "":
		wire.Status(w, webauthnInvalidCredentials)
		return store.Login{}, false
	}
	ctx := r.Context()
	rp := a.rp
	var login store.Login
	find := func(id, handle []byte) ([]byte, error) {
		l, err := a.store.Login(ctx, store.WebAuthnKey(rp.ID, base64.RawURLEncoding.EncodeToString(id)))
		if errors.Is(err, store.ErrNotFound) {
			return nil, fmt.Errorf("%w: unknown credential", ErrPasskeyRefused)
		}
		login = l
		return l.Material, err
	}
	pk, err := a.cfg.Passkeys.Verifier.FinishSignIn(rp, c.State, req.Credential, find)
	if err != nil {
		a.verifierFailed(w, r, webauthnInvalidCredentials, err)
		return store.Login{}, false
	}
	if !a.assertionTrusted(w, r, pk, login, sessionUser) {
		return store.Login{}, false
	}
	update := &store.MaterialUpdate{LoginID: login.ID, Old: login.Material, New: pk.Material}
	if _, err := a.store.UseCeremony(ctx, store.CodePasskeyOptions, opts.Hash, a.cfg.Now(), update); err != nil {
		if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrConflict) {
			// The options were used, or the passkey signed in, meanwhile.
			a.emit(ctx, r, Event{Kind: EventSignInFailed, UserID: login.UserID, Method: store.MethodWebAuthn})
			wire.Status(w, webauthnInvalidCredentials)
			return store.Login{}, false
		}
		a.fail(w, r, err)
		return store.Login{}, false
	}
	login.Material = pk.Material
	return login, true
}

// assertionTrusted refuses a verified assertion of the passkey login
// whose counter did not grow (a cloned key), or, as the second factor of
// sessionUser's session, another user's passkey, which proves nothing
// about that session.
func (a *Auth) assertionTrusted(w http.ResponseWriter, r *http.Request, pk Passkey, login store.Login, sessionUser string) bool {
	ctx := r.Context()
	switch {
	case pk.CloneWarning:
		a.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "auth: passkey sign-in refused: its counter did not grow, the key may have been cloned",
			slog.String("user_id", login.UserID), slog.String("login_id", login.ID))
		a.emit(ctx, r, Event{Kind: EventPasskeyCloneSuspected, UserID: login.UserID, Method: store.MethodWebAuthn})
	case sessionUser != "" && login.UserID != sessionUser:
		a.emit(ctx, r, Event{Kind: EventFactorFailed, UserID: sessionUser, Method: FactorWebAuthn})
	default:
		return true
	}
	wire.Status(w, webauthnInvalidCredentials)
	return false
}

// handlePasskeyEmailExists tells whether a passkey login has an email.
func (a *Auth) handlePasskeyEmailExists(w http.ResponseWriter, r *http.Request) {
	email, ok := a.lookupParam(w, r, "email")
	if !ok {
		return
	}
	email = address.Normalise(email)
	a.answerExists(w, r, wire.CheckEmail(email) == "", func(ctx context.Context) (bool, error) {
		return a.passkeyEmailExists(ctx, email)
	})
}

// passkeyRoutes adds the passkey endpoints to routes.
func (a *Auth) passkeyRoutes(routes map[string]kit.Route) {
	if a.cfg.Passkeys.Verifier == nil {
		return
	}
	post := func(h http.HandlerFunc) kit.Route { return kit.Route{Method: http.MethodPost, Handle: h} }
	get := func(h http.HandlerFunc) kit.Route { return kit.Route{Method: http.MethodGet, Handle: h} }
	routes["/webauthn/options/register"] = post(a.handleRegisterOptions)
	routes["/webauthn/options/signin"] = post(a.handleSignInOptions)
	routes["/webauthn/signup"] = post(a.handlePasskeySignUp)
	routes["/webauthn/signin"] = post(a.handlePasskeySignIn)
	routes["/webauthn/credential/list"] = get(a.handleListPasskeys)
	routes["/webauthn/credential"] = post(a.handleAddPasskey)
	routes["/webauthn/credential/remove"] = post(a.handleRemovePasskey)
	if !a.cfg.DisableEmailExists {
		routes["/webauthn/email/exists"] = get(a.handlePasskeyEmailExists)
	}
	if a.cfg.Email.Mailer != nil {
		routes["/user/webauthn/reset/token"] = post(a.handleRecoveryRequest)
		routes["/user/webauthn/reset"] = post(a.handleRecoverAccount)
	}
}
