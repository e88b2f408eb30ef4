// Package emailpassword is the email and password recipe: sign-up and
// sign-in with an email and a password, and the password reset that a
// mailed link opens, for the SuperTokens frontend's EmailPassword recipe.
// It is on in every Auth; auth.Config's EmailPassword field sets it:
//
//	auth.Config{
//		Store:         st,
//		Email:         auth.EmailConfig{Mailer: m},
//		EmailPassword: emailpassword.Config{MaxConcurrentHashes: 4},
//	}
//
// # Routes
//
// Under the Auth's base path ("emailpassword" in the SDKs):
//
//   - POST /signup creates a user with an email and password login and
//     starts its session; FIELD_ERROR for a password the [Policy] refuses,
//     an address that is not well-formed, or an email taken;
//   - POST /signin checks an email and password and starts a session;
//     WRONG_CREDENTIALS_ERROR for an unknown email, a login without a
//     password and a wrong password alike;
//   - GET /emailpassword/email/exists, and its older path GET
//     /signup/email/exists (which passwordless shares, told apart by the
//     rid header), tell whether an email has a password login, unless
//     auth.Config's DisableEmailExists;
//   - with auth.Config's Email.Mailer: POST /user/password/reset/token
//     mails a reset link, POST /user/password/reset sets a new password
//     with its token (RESET_PASSWORD_INVALID_TOKEN_ERROR for a token that
//     is unknown, used or expired);
//   - POST /user/password/change, the library's own (the SDKs have no
//     such route), changes the password of the session's user, or adds
//     one: see # Changing the password.
//
// Sign-up and sign-in take a first factor (auth.Config's MFA may leave
// "emailpassword" out, then they answer 401); the session starts through
// the kernel's one sign-in path, and under account linking a password
// login that proves no address another user holds is refused
// (SIGN_UP_NOT_ALLOWED, SIGN_IN_NOT_ALLOWED).
//
// # Passwords
//
// New passwords pass the [Policy] (by default [DefaultPolicy]: 8 to 99
// characters with a letter and a digit) and a hard cap of 1024 bytes,
// whatever the policy says; sign-in checks neither. Passwords are put in
// Unicode normalisation form KC before they are hashed, so one typed with
// composed or decomposed accents, or fullwidth digits, is one password;
// a hash made from the password as typed still works and is upgraded.
//
// They are hashed with argon2id (the OWASP parameters, 19 MiB, 2
// iterations, 1 thread, unless [Config].Hashing says otherwise; weaker
// ones only with InsecureWeakHashing) in PHC strings. Stored hashes made
// with other parameters, argon2id or imported bcrypt, keep working and
// are replaced at the next successful sign-in.
//
// At most [Config].MaxConcurrentHashes hashes run at once, so a burst of
// sign-ins cannot exhaust memory: the requests beyond it wait their turn,
// in the order they came, holding no hashing memory, and past
// [Config].HashQueueTimeout or their request's deadline the answer is
// 503 with Retry-After. auth.Config's Metrics observes each wait.
//
// # Timing and enumeration
//
// An unknown email costs a sign-in the same work as a wrong password: a
// check against a dummy hash made with the current parameters. A stored
// hash that is not current (cheaper, or bcrypt past its 72 bytes) is
// checked against the dummy hash as well, and every refused sign-in takes
// at least as long as the slowest kind of check seen in the last 20
// minutes, so the kind of a user's hash does not tell the user from an
// unknown email. Sign-up takes its allowance and refuses a taken email
// before any hash; the reset request answers the same bytes, at once,
// for every email, and looks the email up off the request's path.
//
// # Password reset
//
// A reset link opens [Config].ResetPasswordURL, by default
// <AppURL>/auth/reset-password, the SuperTokens UI's page, with
// ?token=…&tenantId=public. Its token is 256 random bits, stored as
// SHA-256, valid for [Config].ResetTokenLifetime (an hour), and works
// once even when submissions race: one atomic Store operation sets the
// password, voids the user's other reset tokens, ends every session of
// the user and verifies the email (under account linking the login may
// then own it). The reset starts no session. An unknown or expired token
// is refused before the new password is hashed. A login whose password
// account linking voided gets a reset email too: a reset is how its
// holder sets one. A user without an email and password login gets none,
// and a reset never creates one.
//
// # Changing the password
//
// POST /user/password/change takes the SDKs' formFields, oldPassword and
// newPassword, with a session that has met its MFA requirement. The new
// password passes the policy of sign-up (FIELD_ERROR with id newPassword
// otherwise). A user with a password gives the current one, which is the
// fresh factor the change needs whatever the session's age; it is checked
// as a sign-in checks it, against the same limits (WRONG_CREDENTIALS_ERROR,
// counted as a failed sign-in of the login's email; 429 past them). A
// password that account linking voided matches nothing: a reset sets it.
//
// A user without a password (a provider, passwordless, a passkey) leaves
// oldPassword out and needs a fresh sign-in (auth.Config's FreshSignIn;
// 403 st-fresh otherwise). The password becomes an email and password
// login for the email the user owns under account linking, joined to the
// user as the account model joins a login; without linking, for the
// address one of the user's logins proves (a code sent to it, a provider
// that vouches for it). A user with no such email, or whose address has
// another user's password login, gets NO_EMAIL_FOR_PASSWORD_ERROR.
//
// Either way every other session of the user ends, in one step with any
// sign-in in flight, and the session that asked goes on under a new
// handle, with new tokens in the answer; with a Mailer the login's
// address is sent [Config].PasswordChangedEmail, with a link to the reset
// page in case the change was not its owner's.
//
// # Limits
//
// From auth.Config's RateLimits: failed sign-ins per email and client,
// per client, and per email (SignInFailures, ClientSignInFailures,
// AccountSignInFailures), each taken before the password is checked,
// and before the current password of a change; sign-ups, reset
// submissions and new passwords of a change per client
// (ClientNewPasswords); reset
// requests per client (ClientResetRequests, 429 past it) and reset emails
// per address (ResetEmails, past it the answer is the same and no email
// goes); exists lookups per client (ClientEmailChecks).
//
// # Events
//
// sign_up and then sign_in for a sign-up; sign_in, sign_in_failed (a
// wrong password or unknown email) or sign_in_throttled for a sign-in;
// reset_email_sent when a reset link is mailed (mail_failed when it could
// not be), and password_reset, then session_revoked for each session the
// reset ended; password_changed, then session_revoked for each other
// session, for a change, and sign_in_failed or sign_in_throttled for a
// wrong current password.
package emailpassword

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/latchkit/auth/internal/address"
	"github.com/latchkit/auth/internal/kit"
	"github.com/latchkit/auth/internal/password"
	"github.com/latchkit/auth/internal/wire"
	"github.com/latchkit/auth/store"
)

// The SDKs' reasons for refusing a password sign-up or sign-in under
// account linking. The UI shows them as they are, and keys its
// translations on them: keep them byte-identical.
const (
	reasonSignUp = "Cannot sign up due to security reasons. Please try logging in, use a different login method or contact support. (ERR_CODE_007)"
	reasonSignIn = "Cannot sign in due to security reasons. Please try resetting your password, use a different login method or contact support. (ERR_CODE_008)"
)

// Limits are the allowances of the recipe, from auth.RateLimits, beside
// the kernel's own of failed sign-ins and reset requests.
type Limits struct {
	// ClientNewPasswords bounds the sign-ups and reset submissions of one
	// client: each hashes a new password.
	ClientNewPasswords kit.Rate
}

// Recipe is email and password as one Auth serves it. Package auth makes
// it with New from its Config; an application does not.
type Recipe struct {
	k      kit.Kernel
	cfg    Config
	setup  kit.Setup
	limits Limits

	passwords hasher
	slots     chan struct{} // a hash in progress holds one
	params    password.Params
	dummyHash string                               // verified for unknown users, so they cost as much as known ones
	costs     checkCosts                           // what refused sign-ins are padded to
	pad       func(context.Context, time.Duration) // sleep; a test records instead
}

// New is for package auth: the recipe of c, with its defaults, for the
// kernel k. It makes the dummy hash, with the real parameters, and so
// takes as long as one hash.
func New(k kit.Kernel, c Config, setup kit.Setup, limits Limits) (*Recipe, error) {
	c, err := c.withDefaults(setup)
	if err != nil {
		return nil, err
	}
	p := &Recipe{k: k, cfg: c, setup: setup, limits: limits, pad: sleep,
		slots: make(chan struct{}, c.MaxConcurrentHashes), params: c.params()}
	p.passwords = argon2id{p.params}
	start := time.Now()
	p.dummyHash = p.passwords.hash("not a password of anyone")
	p.costs.observe(hashKind(p.dummyHash), time.Since(start), time.Now())
	k.FirstFactors(kit.FactorEmailPassword)
	return p, nil
}

// Routes are the recipe's endpoints, under the base path: the exists
// endpoints unless DisableEmailExists, the reset ones with a Mailer.
func (p *Recipe) Routes() map[string]kit.Route {
	post := func(h http.HandlerFunc) kit.Route { return kit.Route{Method: http.MethodPost, Handle: h} }
	get := func(h http.HandlerFunc) kit.Route { return kit.Route{Method: http.MethodGet, Handle: h} }
	routes := map[string]kit.Route{
		"/signup":               post(p.handleSignUp),
		"/signin":               post(p.handleSignIn),
		"/user/password/change": post(p.handleChangePassword),
	}
	if !p.setup.DisableEmailExists {
		// Two paths: FDI 1.16 and later, and older SDKs.
		routes["/emailpassword/email/exists"] = get(p.handleEmailExists)
		routes["/signup/email/exists"] = get(p.handleEmailExists)
	}
	if p.setup.CanMail {
		routes["/user/password/reset/token"] = post(p.handleResetRequest)
		routes["/user/password/reset"] = post(p.handleResetPassword)
	}
	return routes
}

// newPasswordLimit is the allowance of new password hashes (sign-ups and
// reset submissions) of r's client.
func (p *Recipe) newPasswordLimit(r *http.Request) kit.Limit {
	return kit.Limit{Key: kit.LimitKey("new-password-client", p.k.Client(r)), Rate: p.limits.ClientNewPasswords}
}

// handleSignUp creates a user with an email and a password and signs them
// in.
func (p *Recipe) handleSignUp(w http.ResponseWriter, r *http.Request) {
	if !p.k.FirstFactorAllowed(w, r, kit.FactorEmailPassword) {
		return
	}
	c, ok := p.credentials(w, r, true)
	if !ok {
		return
	}
	ctx := r.Context()
	// Taken before the email check too, so sign-up is no faster way to
	// ask which emails have accounts than the email-exists endpoint.
	if wait := p.k.Take(ctx, p.newPasswordLimit(r)); wait > 0 {
		wire.TooMany(w, wait)
		return
	}
	// A cheap check first, so a taken email costs no hash. CreateUser
	// decides for concurrent sign-ups.
	key := p.k.Tenant(ctx).Key(store.EmailPasswordKey(c.email))
	if _, err := p.k.Store().Login(ctx, key); err == nil {
		writeFieldErrors(w, []fieldError{{"email", msgEmailTaken}})
		return
	} else if !errors.Is(err, store.ErrNotFound) {
		p.k.Fail(w, r, err)
		return
	}
	// Under account linking, a new password proves no inbox, so it joins
	// nobody, owns nothing, and is refused where someone holds the
	// address.
	if !p.k.SignUpAllowed(w, r, c.email, "SIGN_UP_NOT_ALLOWED", reasonSignUp) {
		return
	}
	var hash string
	if err := p.withHashSlot(ctx, func() { hash = p.passwords.hash(c.password) }); err != nil {
		p.k.Fail(w, r, err)
		return
	}
	now := p.k.Now().Truncate(time.Millisecond)
	u := store.User{ID: uuid.NewString(), TimeJoined: now}
	l := store.Login{
		LoginKey:     key,
		ID:           u.ID,
		UserID:       u.ID,
		Email:        c.email,
		PasswordHash: hash,
		CreatedAt:    now,
	}
	if err := p.k.Store().CreateUser(ctx, u, l); errors.Is(err, store.ErrConflict) {
		writeFieldErrors(w, []fieldError{{"email", msgEmailTaken}})
		return
	} else if err != nil {
		p.k.Fail(w, r, fmt.Errorf("auth: creating a user: %w", err))
		return
	}
	p.k.Emit(ctx, r, kit.Event{Kind: kit.EventSignUp, UserID: u.ID, Method: l.Method})
	// Someone may have proven the address since the check above: then
	// this login's sign-ins are refused from now on, and so is this one.
	p.k.SignedIn(w, r, kit.Proven{Login: l, Factor: kit.FactorEmailPassword, User: u, Logins: []store.Login{l},
		NotAllowed: "SIGN_UP_NOT_ALLOWED", Reason: reasonSignUp})
}

// handleSignIn checks an email and password and starts a session.
//
// Unknown emails, users without a password and wrong passwords get the same
// answer after the same work: an unknown user's password is verified
// against a dummy hash made with the real parameters.
func (p *Recipe) handleSignIn(w http.ResponseWriter, r *http.Request) {
	if !p.k.FirstFactorAllowed(w, r, kit.FactorEmailPassword) {
		return
	}
	c, valid := p.credentials(w, r, false)
	if !valid {
		return
	}
	ctx := r.Context()
	settle, wait := p.k.TakeSignIn(r, c.email)
	if wait > 0 {
		p.k.Emit(ctx, r, kit.Event{Kind: kit.EventSignInThrottled, Method: store.MethodEmailPassword})
		wire.TooMany(w, wait)
		return
	}
	u, logins, l, err := p.passwordUser(ctx, p.k.Tenant(ctx).Key(store.EmailPasswordKey(c.email)))
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		settle(kit.AttemptAbandoned)
		p.k.Fail(w, r, err)
		return
	}
	known := err == nil
	ok, rehash, took, err := p.checkPassword(ctx, l, known, c.password)
	if err != nil {
		settle(kit.AttemptAbandoned)
		p.k.Fail(w, r, err)
		return
	}
	if !ok || !known {
		settle(kit.AttemptFailed)
		// Never quicker than the slowest kind of check lately either, so
		// that a stored hash costlier than the current parameters does not
		// tell its user from an unknown email.
		p.pad(ctx, p.costs.floor(time.Now())-took)
		p.k.Emit(ctx, r, kit.Event{Kind: kit.EventSignInFailed, UserID: l.UserID, Method: store.MethodEmailPassword})
		wire.JSON(w, http.StatusOK, struct {
			Status string `json:"status"`
		}{"WRONG_CREDENTIALS_ERROR"})

		return
	}
	settle(kit.AttemptSucceeded)
	if rehash {
		p.upgradeHash(ctx, l, c.password)
	}
	p.k.SignedIn(w, r, kit.Proven{Login: l, Factor: kit.FactorEmailPassword, User: u, Logins: logins,
		NotAllowed: "SIGN_IN_NOT_ALLOWED", Reason: reasonSignIn})
}

// checkPassword checks pw against l's hash, or, for an email that is not
// known, against a dummy hash with the real parameters, and reports how
// long the check took. An error means no hash slot was free in time.
func (p *Recipe) checkPassword(ctx context.Context, l store.Login, known bool, pw string) (ok, rehash bool, took time.Duration, err error) {
	hash := l.PasswordHash
	if !known {
		hash = p.dummyHash
	}
	if len(pw) > maxPasswordLen {
		return false, false, 0, nil
	}
	var verr error
	err = p.withHashSlot(ctx, func() {
		start := time.Now()
		ok, rehash, verr = p.passwords.verify(pw, hash)
		if known && !password.Current(hash, p.params) {
			// Never cheaper than an unknown email, which costs a check
			// with the current parameters: an imported or older hash may
			// be quicker, or refuse unhashed.
			p.passwords.verify(pw, p.dummyHash)
		}
		took = time.Since(start)
	})
	if err != nil {
		return false, false, 0, err
	}
	if password.Hashes(pw, hash) {
		// Only a full check tells what checking this kind costs.
		p.costs.observe(hashKind(hash), took, time.Now())
	}
	if verr != nil {
		p.k.Logger().LogAttrs(ctx, slog.LevelError, "auth: unusable password hash",
			slog.String("user_id", l.UserID), slog.String("error", verr.Error()))
	}
	return ok, rehash, took, nil
}

// credentials decodes the email and password of a request, or answers
// the request (400, 413 or FIELD_ERROR) and reports false.
func (p *Recipe) credentials(w http.ResponseWriter, r *http.Request, newPassword bool) (credentials, bool) {
	c, errs, err := p.decodeCredentials(w, r, newPassword)
	if err != nil {
		p.k.Fail(w, r, err)
		return c, false
	}
	if len(errs) > 0 {
		writeFieldErrors(w, errs)
		return c, false
	}
	return c, true
}

// handleEmailExists tells whether an email has a password login.
func (p *Recipe) handleEmailExists(w http.ResponseWriter, r *http.Request) {
	email, ok := p.k.LookupParam(w, r, "email")
	if !ok {
		return
	}
	email = address.Normalise(email)
	p.k.WriteExists(w, r, p.k.Tenant(r.Context()).Key(store.EmailPasswordKey(email)), wire.CheckEmail(email) == "")
}

// passwordUser returns the email and password login k that a
// password opens, with its user and the user's logins (one read of the
// store: a sign-in answers with them), or an error matching
// store.ErrNotFound. A login whose password was voided (account linking
// evicts the maker of an unproven login) has no hash and is none for
// sign-in; sign-up, the email-exists endpoint and reset still see it, as
// a reset gives it a password.
func (p *Recipe) passwordUser(ctx context.Context, k store.LoginKey) (store.User, []store.Login, store.Login, error) {
	u, logins, err := p.k.Store().UserByLogin(ctx, k)
	if err != nil {
		return store.User{}, nil, store.Login{}, err
	}
	for _, l := range logins {
		if l.LoginKey == k && l.PasswordHash != "" {
			return u, logins, l, nil
		}
	}
	return store.User{}, nil, store.Login{}, store.ErrNotFound
}
