package auth

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/latchkit/auth/internal/address"
	"github.com/latchkit/auth/internal/kit"
	"github.com/latchkit/auth/internal/onetime"
	"github.com/latchkit/auth/internal/wire"
	"github.com/latchkit/auth/store"
)

// The passkeys of a signed-in user: list, add, remove (rid "webauthn");
// and account recovery by a mailed link, which registers a new passkey.

const (
	reasonPasskeyRecovery = "Recover account link was not created because of account take over risk. Please contact support. (ERR_CODE_001)"
	msgLastLogin          = "This is your only way to sign in: add another before you remove it."
)

// handleListPasskeys lists the passkeys of the session's user: with MFA
// on, to a session that has completed its second factor, as the list
// tells a first factor's holder what would let them in.
func (a *Auth) handleListPasskeys(w http.ResponseWriter, r *http.Request) {
	vt, ok := a.passkeySession(w, r)
	if !ok {
		return
	}
	if a.mfaOn() && !vt.mfaMet() {
		writeMFAPending(w)
		return
	}
	logins, err := a.store.Logins(r.Context(), vt.session.UserID)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	type credential struct {
		ID           string `json:"webauthnCredentialId"`
		RelyingParty string `json:"relyingPartyId"`
		RecipeUserID string `json:"recipeUserId"`
		CreatedAt    int64  `json:"createdAt"`
	}
	list := []credential{}
	for _, l := range logins {
		if l.Method == store.MethodWebAuthn {
			list = append(list, credential{l.Subject, l.ThirdParty, l.ID, l.CreatedAt.UnixMilli()})
		}
	}
	wire.JSON(w, http.StatusOK, struct {
		Status      string       `json:"status"`
		Credentials []credential `json:"credentials"`
	}{"OK", list})

}

// passkeySession verifies the request's session, or answers it.
func (a *Auth) passkeySession(w http.ResponseWriter, r *http.Request) (*verifiedToken, bool) {
	vt, _, err := a.verifyRequest(r)
	if err != nil {
		a.failSession(w, r, err)
		return nil, false
	}
	return vt, true
}

// handleAddPasskey registers another passkey for the session's user, with
// options made for the email of one of the user's login methods
// (recipeUserId). The passkey has no email of its own: it proves nothing
// about an inbox, and the user has the address through that method.
func (a *Auth) handleAddPasskey(w http.ResponseWriter, r *http.Request) {
	// The body first: an oversized one is refused unread, session or not.
	req, ok := a.readCeremonyBody(w, r)
	if !ok {
		return
	}
	if req.RecipeUserID == nil {
		a.fail(w, r, wire.BadRequest("Please provide the recipeUserId"))
		return
	}
	vt, m, logins, sf, ok := a.passkeyAdder(w, r)
	if !ok {
		return
	}
	opts, c, found, ok := a.ceremonyOptions(w, r, req)
	switch {
	case !ok:
		return
	case !found:
		wire.Status(w, webauthnOptionsNotFound)
		return
	case opts.Email == "" || opts.UserID != "" || len(c.Handle) == 0:
		wire.Status(w, webauthnInvalidOptions)
		return
	}
	i := slices.IndexFunc(logins, func(l store.Login) bool { return l.ID == *req.RecipeUserID })
	switch {
	case i < 0:
		wire.GeneralError(w, "User not found")
		return
	case logins[i].Email != opts.Email:
		wire.GeneralError(w, "Email mismatch")
		return
	}
	var answer func(store.Login)
	if a.passkeyFactor() {
		// The passkey is a second factor now, proven by this ceremony:
		// complete it here, and hold the other sessions to it.
		answer = func(nl store.Login) {
			req := a.passkeyFactorAdded(r, vt, sf, append(logins, nl))
			if err := a.completeFactor(r.Context(), w, r, vt, m, FactorWebAuthn, req); err != nil {
				a.fail(w, r, err)
				return
			}
			wire.JSON(w, http.StatusOK, wire.OK)
		}
	}
	a.registerPasskey(w, r, opts, c, req.Credential, store.Login{UserID: vt.session.UserID}, func(ctx context.Context, l store.Login) (string, error) {
		if err := a.store.LinkLogin(ctx, l); errors.Is(err, store.ErrNotFound) {
			return "", errRevoked // the user is gone
		} else {
			return "", err
		}
	}, answer)
}

// passkeyAdder verifies the session of a request to add a passkey, and
// reads its user's logins and second factors, or answers the request. A
// passkey signs in on its own: with MFA on, a session that has not
// completed its second factor adds one only as that factor (the rule of
// mayAddFactor), or a stolen password would buy a lasting way in.
func (a *Auth) passkeyAdder(w http.ResponseWriter, r *http.Request) (*verifiedToken, mode, []store.Login, *secondFactors, bool) {
	if a.mfaOn() {
		vt, m, logins, sf, ok := a.sessionForFactors(w, r)
		if ok && !a.mayAddFactor(vt.mfaMet(), FactorWebAuthn, sf, logins) {
			wire.ClaimError(w, "st-mfa", msgSetupNotAllowed)
			ok = false
		}
		return vt, m, logins, sf, ok
	}
	vt, m, err := a.verifyRequest(r)
	var logins []store.Login
	if err == nil {
		logins, err = a.store.Logins(r.Context(), vt.session.UserID)
	}
	if err != nil {
		a.failSession(w, r, err)
		return nil, 0, nil, nil, false
	}
	return vt, m, logins, &secondFactors{}, true
}

// registerPasskey finishes a registration for an existing user: it checks
// the credential, uses up the options, and adds the passkey as nl (with
// its key, material and creation time filled in) with add, then answers
// OK, or the status add returns.
//
// answer, if set, answers instead of the plain OK, with the login added.
func (a *Auth) registerPasskey(w http.ResponseWriter, r *http.Request, opts store.Code, c ceremony, credential []byte, nl store.Login, add func(context.Context, store.Login) (string, error), answer func(store.Login)) {
	ctx := r.Context()
	rp := a.rp
	pk, err := a.cfg.Passkeys.Verifier.FinishRegistration(rp, PasskeyUser{Handle: c.Handle, Name: opts.Email}, c.State, credential)
	if err != nil {
		a.verifierFailed(w, r, webauthnInvalidCredentials, err)
		return
	}
	nl.LoginKey = store.WebAuthnKey(rp.ID, base64.RawURLEncoding.EncodeToString(pk.CredentialID))
	nl.ID, nl.Material, nl.CreatedAt = uuid.NewString(), pk.Material, a.cfg.Now().Truncate(time.Millisecond)
	if _, err := a.store.UseCeremony(ctx, store.CodePasskeyOptions, opts.Hash, a.cfg.Now(), nil); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			wire.Status(w, webauthnOptionsNotFound)
			return
		}
		a.fail(w, r, err)
		return
	}
	status, err := add(ctx, nl)
	switch {
	case errors.Is(err, store.ErrConflict):
		wire.Status(w, webauthnInvalidCredentials) // registered already
		return
	case err != nil:
		a.fail(w, r, fmt.Errorf("auth: adding a passkey: %w", err))
		return
	case status != "":
		wire.Status(w, status)
		return
	}
	a.emit(ctx, r, Event{Kind: EventPasskeyAdded, UserID: nl.UserID, Method: store.MethodWebAuthn})
	if answer != nil {
		answer(nl)
		return
	}
	wire.JSON(w, http.StatusOK, wire.OK)
}

// handleRemovePasskey removes a passkey of the session's user; the
// sessions it started end.
func (a *Auth) handleRemovePasskey(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ID *string `json:"webauthnCredentialId"`
	}
	if err := a.readJSON(w, r, &req); err != nil {
		a.fail(w, r, err)
		return
	}
	if req.ID == nil || *req.ID == "" {
		a.fail(w, r, wire.BadRequest("Please provide the webauthnCredentialId"))
		return
	}
	vt, ok := a.passkeySession(w, r)
	if !ok {
		return
	}
	if a.mfaOn() && !vt.mfaMet() {
		writeMFAPending(w)
		return
	}
	ctx := r.Context()
	l, found, err := a.passkeyOf(ctx, vt.session.UserID, *req.ID)
	switch {
	case err != nil:
		a.fail(w, r, err)
		return
	case !found:
		wire.Status(w, "CREDENTIAL_NOT_FOUND_ERROR")
		return
	}
	handles, err := a.removeLogin(ctx, l.UserID, l.ID)
	switch {
	case errors.Is(err, ErrLastFactor):
		wire.GeneralError(w, msgLastFactor)
		return
	case errors.Is(err, store.ErrLastLogin):
		wire.GeneralError(w, msgLastLogin)
		return
	case errors.Is(err, store.ErrNotFound):
		wire.Status(w, "CREDENTIAL_NOT_FOUND_ERROR")
		return
	case err != nil:
		a.fail(w, r, err)
		return
	}
	for _, h := range handles {
		a.emit(ctx, r, Event{Kind: EventSessionRevoked, UserID: l.UserID, SessionHandle: h})
	}
	a.emit(ctx, r, Event{Kind: EventPasskeyRemoved, UserID: l.UserID, Method: store.MethodWebAuthn})
	wire.JSON(w, http.StatusOK, wire.OK)
}

// passkeyOf finds the passkey of user userID whose credential id is id;
// found is false where there is none, as for an id no credential has, or
// another user's.
func (a *Auth) passkeyOf(ctx context.Context, userID, id string) (l store.Login, found bool, err error) {
	if _, err := base64.RawURLEncoding.Strict().DecodeString(id); err != nil || len(id) > wire.MaxParamLen {
		return store.Login{}, false, nil
	}
	l, err = a.store.Login(ctx, store.WebAuthnKey(a.cfg.Passkeys.RelyingPartyID, id))
	switch {
	case errors.Is(err, store.ErrNotFound):
		return store.Login{}, false, nil
	case err != nil:
		return store.Login{}, false, err
	}
	return l, l.UserID == userID, nil
}

// handleRecoveryRequest mails a link that registers a new passkey for the
// account of a passkey user with the email. The answer is the same, and
// as fast, whoever the email belongs to: the work happens in the outbox.
func (a *Auth) handleRecoveryRequest(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Email *string `json:"email"`
	}
	if err := a.readJSON(w, r, &req); err != nil {
		a.fail(w, r, err)
		return
	}
	if req.Email == nil {
		a.fail(w, r, wire.BadRequest("Please provide the email"))
		return
	}
	email := address.Normalise(*req.Email)
	if msg := wire.CheckEmail(email); msg != "" {
		wire.GeneralError(w, msg)
		return
	}
	a.queueAccountEmail(w, r, "passkey recovery", email, a.sendRecoveryEmail)
}

// recoverable returns the user whose passkey logins have email, the
// oldest's, and whether recovery may serve it: not where another user
// holds the address (owns or proves it), which would hand that user's
// address a way into this account.
func (a *Auth) recoverable(ctx context.Context, email string) (userID string, allowed bool, err error) {
	logins, err := a.store.LoginsByEmail(ctx, email)
	if err != nil {
		return "", false, err
	}
	for _, l := range logins {
		if l.Method == store.MethodWebAuthn {
			userID = l.UserID
			break
		}
	}
	if userID == "" {
		return "", false, nil
	}
	for _, l := range logins {
		if l.UserID != userID && (l.OwnsEmail || l.EmailProven) {
			return userID, false, nil
		}
	}
	return userID, true, nil
}

// sendRecoveryEmail is the outbox's work for one request.
func (a *Auth) sendRecoveryEmail(ctx context.Context, email string) {
	userID, allowed, err := a.recoverable(ctx, email)
	switch {
	case err != nil:
		a.mailFailed(ctx, "passkey recovery", "", "looking up the user", err)
		return
	case userID == "":
		return // nobody to tell; the requester learns nothing either way
	case !allowed:
		a.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "auth: passkey recovery email withheld: another user holds the address",
			slog.String("user_id", userID))
		return
	}
	tok, hash := onetime.New()
	now := a.cfg.Now()
	lifetime := a.cfg.Passkeys.RecoveryLifetime
	if err := a.store.CreateCode(ctx, store.Code{
		Hash: hash, Kind: store.CodePasskeyRecovery, UserID: userID, Email: email, CreatedAt: now, ExpiresAt: now.Add(lifetime),
	}); err != nil {
		a.mailFailed(ctx, "passkey recovery", userID, "creating a recovery token", err)
		return
	}
	if err := a.mail(ctx, a.cfg.Passkeys.RecoveryEmail, email, PasskeyRecoveryEmailData{
		Email: email, Link: wire.LinkWithToken(a.cfg.Passkeys.RecoveryURL, tok), ValidFor: kit.InWords(lifetime),
	}); err != nil {
		a.mailFailed(ctx, "passkey recovery", userID, "sending the recovery email", err)
		return
	}
	a.emit(ctx, nil, Event{Kind: EventResetEmailSent, UserID: userID, Method: store.MethodWebAuthn})
}

// handleRecoverAccount registers a new passkey with a recovery link. The
// link proves the inbox, so recovery does what a password reset does:
// the new passkey proves the address, every session of the user ends, and
// what a stranger who signed up with the address may hold stops working
// (see endUnprovenOf).
// No session starts: the person signs in with the new passkey.
func (a *Auth) handleRecoverAccount(w http.ResponseWriter, r *http.Request) {
	req, opts, c, found, ok := a.readCeremony(w, r)
	if !ok {
		return
	}
	tok, hash, ok := a.recoveryLink(w, r, req.Token)
	switch {
	case !ok:
		return
	case !found:
		wire.Status(w, webauthnOptionsNotFound)
		return
	case opts.UserID != tok.UserID || opts.Email != tok.Email || len(c.Handle) == 0:
		wire.Status(w, webauthnInvalidOptions)
		return
	}
	if _, allowed, err := a.recoverable(r.Context(), tok.Email); err != nil || !allowed {
		if err != nil {
			a.fail(w, r, err)
			return
		}
		wire.NotAllowed(w, "RECOVER_ACCOUNT_NOT_ALLOWED", reasonPasskeyRecovery)
		return
	}
	nl := store.Login{UserID: tok.UserID, Email: tok.Email, EmailVerified: true, EmailProven: true}
	a.registerPasskey(w, r, opts, c, req.Credential, nl, func(ctx context.Context, l store.Login) (string, error) {
		return a.addRecoveredPasskey(ctx, r, l, hash)
	}, nil)
}

// recoveryLink finds the recovery link of token, and the token's hash,
// or answers the request.
func (a *Auth) recoveryLink(w http.ResponseWriter, r *http.Request, token *string) (store.Code, [32]byte, bool) {
	if token == nil || !onetime.WellFormed(*token) {
		wire.Status(w, webauthnTokenInvalid)
		return store.Code{}, [32]byte{}, false
	}
	hash := sha256.Sum256([]byte(*token))
	tok, err := a.store.Code(r.Context(), store.CodePasskeyRecovery, hash, a.cfg.Now())
	switch {
	case errors.Is(err, store.ErrNotFound):
		wire.Status(w, webauthnTokenInvalid)
		return store.Code{}, [32]byte{}, false
	case err != nil:
		a.fail(w, r, err)
		return store.Code{}, [32]byte{}, false
	}
	return tok, hash, true
}

// addRecoveredPasskey adds the passkey l of a recovery by the link whose
// hash is tokHash, ends what the user's other ways in give whoever made
// them, and uses the link up. The link is used up last: until every
// earlier way in has gone, a retry with it finishes what a failure
// interrupted.
func (a *Auth) addRecoveredPasskey(ctx context.Context, r *http.Request, l store.Login, tokHash [32]byte) (string, error) {
	logins, err := a.store.Logins(ctx, l.UserID)
	if err != nil {
		return "", err
	}
	// The new passkey proves the address, so it owns it unless a login
	// of the user does; that one may be an earlier passkey, which goes
	// below, and then the new one takes the address. It owns it with
	// account linking off too: a store adds a login with an address to an
	// existing user only as the address's owner or beside it, and the
	// address is this account's, which it proved.
	l.OwnsEmail = !ownedWithin(logins, l.Email)
	switch err := a.store.LinkLogin(ctx, l); {
	case errors.Is(err, store.ErrEmailOwned):
		// Another user came to own the address since the check.
		return "", errors.New("auth: passkey recovery: another user owns the address")
	case err != nil:
		return "", err
	}
	if err := a.endUnprovenOf(ctx, r, logins, l.Email); err != nil {
		return "", err
	}
	if !l.OwnsEmail {
		if _, err := a.store.ClaimEmail(ctx, l.ID); err != nil && !errors.Is(err, store.ErrEmailOwned) {
			return "", err
		}
	}
	_, err = a.store.UseCeremony(ctx, store.CodePasskeyRecovery, tokHash, a.cfg.Now(), nil)
	if errors.Is(err, store.ErrNotFound) {
		// A recovery with the same link finished first: it keeps its
		// passkey, this one goes.
		if _, err := a.store.DeleteLogin(ctx, l.ID); err != nil && !errors.Is(err, store.ErrNotFound) {
			return "", err
		}
		return webauthnTokenInvalid, nil
	}
	return "", err
}

// endUnprovenOf ends what a user's other ways in give whoever made them,
// once a recovery proved the address (logins are the user's, read before
// the new passkey joined): every earlier passkey goes, whatever its
// email (one added in a session has none), as do the logins with the
// address that prove nothing; a password among those is voided (a reset
// sets it again); and every session of the user ends.
func (a *Auth) endUnprovenOf(ctx context.Context, r *http.Request, logins []store.Login, email string) error {
	var password *store.Login
	for i, l := range logins {
		switch {
		case l.Method == store.MethodEmailPassword && l.Email == email && !l.EmailProven:
			password = &logins[i]
		case l.Method == store.MethodWebAuthn, l.Email == email && !l.EmailProven:
			if _, err := a.store.DeleteLogin(ctx, l.ID); err != nil && !errors.Is(err, store.ErrNotFound) {
				return err
			}
		}
	}
	if password != nil {
		return a.evict(ctx, r, *password)
	}
	if len(logins) == 0 {
		return nil
	}
	handles, err := a.store.RevokeUserSessions(ctx, logins[0].UserID)
	for _, h := range handles {
		a.emit(ctx, r, Event{Kind: EventSessionRevoked, UserID: logins[0].UserID, SessionHandle: h})
	}
	return err
}

// linkingRequested reports whether a sign-in asks to act on the session
// it carries (shouldTryLinkingWithSessionUser true): the SDKs' MFA
// screens send it, to complete a passkey as a second factor.
func linkingRequested(f kit.LinkingField) bool { return string(f.LinkSession) == "true" }

// passkeySignUpAsFactor registers a passkey for the session's user as a
// second factor, and completes it in the session: the SDKs' MFA screen
// signs up with a session and shouldTryLinkingWithSessionUser. The
// passkey has no email (the screen's address only names it in the
// authenticator), and the session is the same one, with a new access
// token.
func (a *Auth) passkeySignUpAsFactor(w http.ResponseWriter, r *http.Request, req ceremonyRequest, opts store.Code, c ceremony) {
	vt, m, logins, sf, ok := a.sessionForFactors(w, r)
	if !ok {
		return
	}
	if !a.mayAddFactor(vt.mfaMet(), FactorWebAuthn, sf, logins) {
		wire.ClaimError(w, "st-mfa", msgSetupNotAllowed)
		return
	}
	userID := vt.session.UserID
	add := func(ctx context.Context, l store.Login) (string, error) {
		if err := a.store.LinkLogin(ctx, l); errors.Is(err, store.ErrNotFound) {
			return "", errRevoked // the user is gone
		} else {
			return "", err
		}
	}
	a.registerPasskey(w, r, opts, c, req.Credential, store.Login{UserID: userID}, add, func(nl store.Login) {
		req := a.passkeyFactorAdded(r, vt, sf, append(logins, nl))
		a.factorAnswer(w, r, vt, m, req, nl)
	})
}

// passkeyFactorAdded holds the user's other sessions to the passkey just
// added, a second factor from now on, as a TOTP device set up is, and
// returns what the user must complete now (logins has the passkey).
func (a *Auth) passkeyFactorAdded(r *http.Request, vt *verifiedToken, sf *secondFactors, logins []store.Login) []string {
	ctx, userID := r.Context(), vt.session.UserID
	req := a.requiredFactors(sf, logins)
	a.emit(ctx, r, Event{Kind: EventFactorAdded, UserID: userID, SessionHandle: vt.handle, Method: FactorWebAuthn})
	if err := a.reassessSessions(ctx, userID, vt.handle, req); err != nil {
		a.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "auth: could not hold the user's other sessions to their new passkey",
			slog.String("user_id", userID), slog.String("error", err.Error()))
	}
	return req
}

// factorAnswer completes a passkey as a second factor in the session of
// vt, whose user must complete one of req, and answers as the SDKs'
// passkey sign-up and sign-in do, with the user; the session's new access
// token is on w.
func (a *Auth) factorAnswer(w http.ResponseWriter, r *http.Request, vt *verifiedToken, m mode, req []string, by store.Login) {
	ctx := r.Context()
	if err := a.completeFactor(ctx, w, r, vt, m, FactorWebAuthn, req); err != nil {
		a.failSession(w, r, err)
		return
	}
	u, logins, err := a.user(ctx, vt.session.UserID)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeUser(w, r, u, logins, by, nil, bodyTokens{}, a.cfg.AccountLinking && primary(logins))
}
