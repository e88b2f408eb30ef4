package passkey

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/latchkit/auth/internal/address"
	"github.com/latchkit/auth/internal/kit"
	"github.com/latchkit/auth/internal/onetime"
	"github.com/latchkit/auth/internal/wire"
	"github.com/latchkit/auth/store"
)

// ceremony is what a CodePasskeyOptions keeps in Data.
type ceremony struct {
	State  []byte `json:"state"`
	Handle []byte `json:"handle,omitempty"` // the user handle of a registration
}

// The statuses of the WebAuthn recipe, and the reasons of its refusals
// under account linking, as the SuperTokens backends word them.
const (
	statusInvalidCredentials = "INVALID_CREDENTIALS_ERROR"
	statusOptionsNotFound    = "OPTIONS_NOT_FOUND_ERROR"
	statusInvalidOptions     = "INVALID_OPTIONS_ERROR"
	statusTokenInvalid       = "RECOVER_ACCOUNT_TOKEN_INVALID_ERROR"
	reasonSignUp             = "Cannot sign up due to security reasons. Please try logging in, use a different login method or contact support. (ERR_CODE_025)"
	reasonSignIn             = "Cannot sign in due to security reasons. Please try recovering your account, use a different login method or contact support. (ERR_CODE_030)"
)

// limit spends a ceremony of the client's allowance, or answers 429.
func (rc *recipe) limit(w http.ResponseWriter, r *http.Request) bool {
	perClient := kit.Limit{Key: kit.LimitKey("passkey-client", rc.k.Client(r)), Rate: rc.ceremonies}
	if wait := rc.k.Take(r.Context(), perClient); wait > 0 {
		wire.TooMany(w, wait)
		return false
	}
	return true
}

// handleRegisterOptions starts a registration: for a new account with an
// email, or for the account a recovery link names.
func (rc *recipe) handleRegisterOptions(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Email        *string `json:"email"`
		RecoverToken *string `json:"recoverAccountToken"`
	}
	if err := rc.k.ReadJSON(w, r, &req); err != nil {
		rc.k.Fail(w, r, err)
		return
	}
	if (req.Email == nil) == (req.RecoverToken == nil) {
		rc.k.Fail(w, r, wire.BadRequest("Please provide the email or the recoverAccountToken"))
		return
	}
	if !rc.limit(w, r) {
		return
	}
	now := rc.k.Now()
	opts := store.Code{Kind: store.CodePasskeyOptions, Tenant: rc.k.Tenant(r.Context()).StoreID(), CreatedAt: now, ExpiresAt: now.Add(optionsLifetime)}
	handle := []byte(uuid.NewString()) // a new account's id, should it be made
	if req.RecoverToken != nil {
		tok, ok := rc.recoveryToken(w, r, *req.RecoverToken)
		if !ok {
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
	options, state, err := rc.v.BeginRegistration(rc.rp, passkeyUser{Handle: handle, Name: opts.Email}, nil)
	if err != nil {
		rc.k.Fail(w, r, err)
		return
	}
	rc.writeOptions(w, r, opts, options, ceremony{State: state, Handle: handle})
}

// recoveryToken reads the recovery link a registration names, or answers
// the request.
func (rc *recipe) recoveryToken(w http.ResponseWriter, r *http.Request, token string) (store.Code, bool) {
	tok, err := rc.k.Store().Code(r.Context(), store.CodePasskeyRecovery, sha256.Sum256([]byte(token)), rc.k.Now())
	if errors.Is(err, store.ErrNotFound) || !onetime.WellFormed(token) || (err == nil && tok.Tenant != rc.k.Tenant(r.Context()).StoreID()) {
		wire.Status(w, statusTokenInvalid)
		return tok, false
	}
	if err != nil {
		rc.k.Fail(w, r, err)
		return tok, false
	}
	return tok, true
}

// handleSignInOptions starts a sign-in with a discoverable credential.
func (rc *recipe) handleSignInOptions(w http.ResponseWriter, r *http.Request) {
	var req struct{}
	if err := rc.k.ReadOptionalJSON(w, r, &req); err != nil {
		rc.k.Fail(w, r, err)
		return
	}
	if !rc.limit(w, r) {
		return
	}
	options, state, err := rc.v.BeginSignIn(rc.rp)
	if err != nil {
		rc.k.Fail(w, r, err)
		return
	}
	now := rc.k.Now()
	opts := store.Code{Kind: store.CodePasskeyOptions, Tenant: rc.k.Tenant(r.Context()).StoreID(), CreatedAt: now, ExpiresAt: now.Add(optionsLifetime)}
	rc.writeOptions(w, r, opts, options, ceremony{State: state})
}

// writeOptions stores a ceremony's options under a new id and answers
// them, the WebAuthn options' members at the top level, as
// @simplewebauthn/browser takes them from the SDKs.
func (rc *recipe) writeOptions(w http.ResponseWriter, r *http.Request, opts store.Code, options []byte, c ceremony) {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(options, &members); err != nil {
		rc.k.Fail(w, r, fmt.Errorf("auth: the passkey verifier's options: %w", err))
		return
	}
	id := uuid.NewString()
	opts.Hash = sha256.Sum256([]byte(id))
	opts.Data, _ = json.Marshal(c)
	if err := rc.k.Store().CreateCode(r.Context(), opts); err != nil {
		rc.k.Fail(w, r, fmt.Errorf("auth: storing passkey options: %w", err))
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

// linkingRequested reports whether a sign-in asks to act on the session
// it carries (shouldTryLinkingWithSessionUser true): the SDKs' MFA
// screens send it, to complete a passkey as a second factor.
func (req *ceremonyRequest) linkingRequested() bool { return string(req.LinkSession) == "true" }

// readCeremony reads the body of an endpoint that finishes a ceremony,
// and the ceremony's options (found false and nothing written if there
// are none: the caller answers), or answers the request itself (ok
// false).
func (rc *recipe) readCeremony(w http.ResponseWriter, r *http.Request) (req ceremonyRequest, opts store.Code, c ceremony, found, ok bool) {
	if req, ok = rc.readCeremonyBody(w, r); !ok {
		return req, opts, c, false, false
	}
	opts, c, found, ok = rc.ceremonyOptions(w, r, req)
	return req, opts, c, found, ok
}

// readCeremonyBody reads and checks the body of an endpoint that
// finishes a ceremony, or answers the request itself.
func (rc *recipe) readCeremonyBody(w http.ResponseWriter, r *http.Request) (req ceremonyRequest, ok bool) {
	if !rc.k.ReadSignInRequest(w, r, &req) {
		return req, false
	}
	if req.OptionsID == nil || len(req.Credential) == 0 || string(req.Credential) == "null" {
		rc.k.Fail(w, r, wire.BadRequest("Please provide the webauthnGeneratedOptionsId and the credential"))
		return req, false
	}
	if req.Credential[0] != '{' {
		rc.k.Fail(w, r, wire.BadRequest("the credential must be an object"))
		return req, false
	}
	return req, true
}

// ceremonyOptions spends a ceremony of the client's allowance and reads
// the options a request names (found false if there are none), or
// answers the request itself (ok false).
func (rc *recipe) ceremonyOptions(w http.ResponseWriter, r *http.Request, req ceremonyRequest) (opts store.Code, c ceremony, found, ok bool) {
	if !rc.limit(w, r) {
		return opts, c, false, false
	}
	opts, err := rc.k.Store().Code(r.Context(), store.CodePasskeyOptions, sha256.Sum256([]byte(*req.OptionsID)), rc.k.Now())
	if errors.Is(err, store.ErrNotFound) || (err == nil && opts.Tenant != rc.k.Tenant(r.Context()).StoreID()) {
		return opts, c, false, true
	}
	if err == nil {
		err = json.Unmarshal(opts.Data, &c)
	}
	if err != nil {
		rc.k.Fail(w, r, err)
		return opts, c, false, false
	}
	return opts, c, true, true
}

// verifierFailed answers a verifier's error: 400 for a response that is
// not a credential, status for one that fails its checks.
func (rc *recipe) verifierFailed(w http.ResponseWriter, r *http.Request, status string, err error) {
	switch {
	case errors.Is(err, errMalformed):
		rc.k.Fail(w, r, wire.BadRequest("the credential is malformed"))
	case errors.Is(err, errRefused):
		rc.k.Logger().LogAttrs(r.Context(), slog.LevelInfo, "auth: passkey refused", slog.String("error", err.Error()))
		rc.k.Emit(r.Context(), r, kit.Event{Kind: kit.EventSignInFailed, Method: store.MethodWebAuthn})
		wire.Status(w, status)
	default:
		rc.k.Fail(w, r, err)
	}
}

// handleSignUp makes a new user with a passkey, for the email the
// registration options were made for.
func (rc *recipe) handleSignUp(w http.ResponseWriter, r *http.Request) {
	req, opts, c, found, ok := rc.readCeremony(w, r)
	switch {
	case !ok:
		return
	case !found:
		wire.Status(w, statusOptionsNotFound)
		return
	case opts.Email == "" || opts.UserID != "" || len(c.Handle) == 0:
		wire.Status(w, statusInvalidOptions) // sign-in or recovery options
		return
	case rc.setup.MFA && req.linkingRequested():
		rc.signUpAsFactor(w, r, req, opts, c)
		return
	case !rc.k.FirstFactorAllowed(w, r, kit.FactorWebAuthn):
		return
	}
	release, ok := rc.emailFree(w, r, opts.Email)
	if !ok {
		return
	}
	defer release()
	nl, ok := rc.newPasskey(w, r, req, opts, c)
	if !ok {
		return
	}
	// The user's id is the handle the passkey was registered under.
	rc.k.SignIn(w, r, kit.SignIn{Login: nl, Factor: kit.FactorWebAuthn, NotAllowed: "SIGN_UP_NOT_ALLOWED",
		Reason: reasonSignUp, What: "signing up with a passkey", UserID: string(c.Handle), NoCreated: true})
}

// emailFree takes the turn of a passkey sign-up with email and checks
// that no passkey user has it: it returns the turn's release, or answers
// the request.
func (rc *recipe) emailFree(w http.ResponseWriter, r *http.Request, email string) (release func(), ok bool) {
	turn, ok := rc.signUpTurn(r.Context(), email)
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
	if taken, err := rc.emailExists(r.Context(), email); err != nil || taken {
		if err != nil {
			rc.k.Fail(w, r, err)
			return nil, false
		}
		wire.Status(w, "EMAIL_ALREADY_EXISTS_ERROR")
		return nil, false
	}
	free = true
	return turn, true
}

// newPasskey checks a sign-up's registration against its options and
// uses them up: it returns the new passkey's login, with its email, or
// answers the request. A credential registered already is refused.
func (rc *recipe) newPasskey(w http.ResponseWriter, r *http.Request, req ceremonyRequest, opts store.Code, c ceremony) (store.Login, bool) {
	ctx := r.Context()
	pk, err := rc.v.FinishRegistration(rc.rp, passkeyUser{Handle: c.Handle, Name: opts.Email}, c.State, req.Credential)
	if err != nil {
		rc.verifierFailed(w, r, statusInvalidCredentials, err)
		return store.Login{}, false
	}
	key := rc.k.Tenant(ctx).Key(store.WebAuthnKey(rc.rp.ID, base64.RawURLEncoding.EncodeToString(pk.CredentialID)))
	if _, err := rc.k.Store().Login(ctx, key); !errors.Is(err, store.ErrNotFound) {
		if err == nil {
			wire.Status(w, statusInvalidCredentials) // this credential is registered already
			return store.Login{}, false
		}
		rc.k.Fail(w, r, err)
		return store.Login{}, false
	}
	if !rc.useOptions(w, r, opts, nil) {
		return store.Login{}, false
	}
	now := rc.k.Now().Truncate(time.Millisecond)
	return store.Login{LoginKey: key, Email: opts.Email, Material: pk.Material, CreatedAt: now}, true
}

// useOptions uses up a registration's options, or answers the request:
// OPTIONS_NOT_FOUND_ERROR where they were used meanwhile.
func (rc *recipe) useOptions(w http.ResponseWriter, r *http.Request, opts store.Code, update *store.MaterialUpdate) bool {
	if _, err := rc.k.Store().UseCeremony(r.Context(), store.CodePasskeyOptions, opts.Hash, rc.k.Now(), update); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			wire.Status(w, statusOptionsNotFound)
			return false
		}
		rc.k.Fail(w, r, err)
		return false
	}
	return true
}

// signUpTurn waits for the turn of a passkey sign-up with email, so that
// one email gets one passkey user however many sign-ups race: nothing in
// the store is unique per email for logins that do not own it. The turn
// is an allowance of one in the kernel's limiter, which the store
// limiter shares between instances, given back when the sign-up ends
// (or, should the process die first, after a minute). A limiter that
// fails gives every turn, as allowances do. It reports false if the
// turn does not come within two seconds.
func (rc *recipe) signUpTurn(ctx context.Context, email string) (release func(), ok bool) {
	turn := kit.Limit{Key: kit.LimitKey("passkey-signup", rc.k.Tenant(ctx).ID, email), Rate: kit.Rate{Burst: 1, Every: time.Minute}}
	for deadline := time.Now().Add(2 * time.Second); ; {
		if rc.k.Take(ctx, turn) == 0 {
			return func() { rc.k.Refund(context.WithoutCancel(ctx), turn) }, true
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

// emailExists reports whether a passkey login has email.
func (rc *recipe) emailExists(ctx context.Context, email string) (bool, error) {
	logins, err := rc.k.Store().LoginsByEmail(ctx, email)
	for _, l := range rc.ofTenant(ctx, logins) {
		if l.Method == store.MethodWebAuthn {
			return true, err
		}
	}
	return false, err
}

// handleSignIn signs in with a discoverable passkey. Every failure is
// INVALID_CREDENTIALS_ERROR, as the SDKs expect. The options are used up
// in the step that records the passkey's new counter, so an assertion
// answers one ceremony once.
//
// With a session and shouldTryLinkingWithSessionUser, the passkey is a
// second factor: it must be the session user's, and it completes
// webauthn in that session instead of starting another.
func (rc *recipe) handleSignIn(w http.ResponseWriter, r *http.Request) {
	req, ok := rc.readCeremonyBody(w, r)
	if !ok {
		return
	}
	if rc.setup.MFA && req.linkingRequested() {
		s, ok := rc.k.FactorSession(w, r)
		if !ok {
			return
		}
		if login, ok := rc.assert(w, r, req, s.UserID()); ok {
			rc.k.CompleteFactor(w, r, s, kit.FactorWebAuthn, &login)
		}
		return
	}
	if !rc.k.FirstFactorAllowed(w, r, kit.FactorWebAuthn) {
		return
	}
	if login, ok := rc.assert(w, r, req, ""); ok {
		rc.k.SignedIn(w, r, kit.Proven{Login: login, Factor: kit.FactorWebAuthn, NotAllowed: "SIGN_IN_NOT_ALLOWED", Reason: reasonSignIn})
	}
}

// assert checks the assertion of a sign-in request against its options,
// and uses both up, recording the passkey's new counter: it returns the
// passkey's login, or answers the request. As a second factor, the
// passkey must be of the session's user, sessionUser.
func (rc *recipe) assert(w http.ResponseWriter, r *http.Request, req ceremonyRequest, sessionUser string) (store.Login, bool) {
	opts, c, found, ok := rc.ceremonyOptions(w, r, req)
	switch {
	case !ok:
		return store.Login{}, false
	case !found || opts.Email != "" || opts.UserID != "":
		wire.Status(w, statusInvalidCredentials)
		return store.Login{}, false
	}
	ctx := r.Context()
	var login store.Login
	find := func(id, handle []byte) ([]byte, error) {
		l, err := rc.k.Store().Login(ctx, rc.k.Tenant(ctx).Key(store.WebAuthnKey(rc.rp.ID, base64.RawURLEncoding.EncodeToString(id))))
		if errors.Is(err, store.ErrNotFound) {
			return nil, fmt.Errorf("%w: unknown credential", errRefused)
		}
		login = l
		return l.Material, err
	}
	pk, err := rc.v.FinishSignIn(rc.rp, c.State, req.Credential, find)
	if err != nil {
		rc.verifierFailed(w, r, statusInvalidCredentials, err)
		return store.Login{}, false
	}
	if !rc.assertionTrusted(w, r, pk, login, sessionUser) {
		return store.Login{}, false
	}
	update := &store.MaterialUpdate{LoginID: login.ID, Old: login.Material, New: pk.Material}
	if _, err := rc.k.Store().UseCeremony(ctx, store.CodePasskeyOptions, opts.Hash, rc.k.Now(), update); err != nil {
		if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrConflict) {
			// The options were used, or the passkey signed in, meanwhile.
			rc.k.Emit(ctx, r, kit.Event{Kind: kit.EventSignInFailed, UserID: login.UserID, Method: store.MethodWebAuthn})
			wire.Status(w, statusInvalidCredentials)
			return store.Login{}, false
		}
		rc.k.Fail(w, r, err)
		return store.Login{}, false
	}
	login.Material = pk.Material
	return login, true
}

// assertionTrusted refuses a verified assertion of the passkey login
// whose counter did not grow (a cloned key), or, as the second factor of
// sessionUser's session, another user's passkey, which proves nothing
// about that session.
func (rc *recipe) assertionTrusted(w http.ResponseWriter, r *http.Request, pk credential, login store.Login, sessionUser string) bool {
	ctx := r.Context()
	switch {
	case pk.CloneWarning:
		rc.k.Logger().LogAttrs(ctx, slog.LevelWarn, "auth: passkey sign-in refused: its counter did not grow, the key may have been cloned",
			slog.String("user_id", login.UserID), slog.String("login_id", login.ID))
		rc.k.Emit(ctx, r, kit.Event{Kind: kit.EventPasskeyCloneSuspected, UserID: login.UserID, Method: store.MethodWebAuthn})
	case sessionUser != "" && login.UserID != sessionUser:
		rc.k.Emit(ctx, r, kit.Event{Kind: kit.EventFactorFailed, UserID: sessionUser, Method: kit.FactorWebAuthn})
	default:
		return true
	}
	wire.Status(w, statusInvalidCredentials)
	return false
}

// handleEmailExists tells whether a passkey login has an email.
func (rc *recipe) handleEmailExists(w http.ResponseWriter, r *http.Request) {
	email, ok := rc.k.LookupParam(w, r, "email")
	if !ok {
		return
	}
	email = address.Normalise(email)
	rc.k.AnswerExists(w, r, wire.CheckEmail(email) == "", func(ctx context.Context) (bool, error) {
		return rc.emailExists(ctx, email)
	})
}
