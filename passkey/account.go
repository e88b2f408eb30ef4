package passkey

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

// The passkeys of a signed-in user: list, add, remove; and account
// recovery by a mailed link, which registers a new passkey.

const (
	reasonRecovery = "Recover account link was not created because of account take over risk. Please contact support. (ERR_CODE_001)"
	msgLastLogin   = "This is your only way to sign in: add another before you remove it."
)

// handleList lists the passkeys of the session's user: with MFA on, to a
// session that has completed its second factor, as the list tells a
// first factor's holder what would let them in.
func (rc *recipe) handleList(w http.ResponseWriter, r *http.Request) {
	s, ok := rc.k.Session(w, r)
	if !ok {
		return
	}
	if s.FactorsPending() {
		wire.MFAPending(w)
		return
	}
	logins, err := rc.k.Store().Logins(r.Context(), s.UserID())
	if err != nil {
		rc.k.Fail(w, r, err)
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

// handleAdd registers another passkey for the session's user, with
// options made for the email of one of the user's login methods
// (recipeUserId). The passkey has no email of its own: it proves nothing
// about an inbox, and the user has the address through that method.
func (rc *recipe) handleAdd(w http.ResponseWriter, r *http.Request) {
	// The body first: an oversized one is refused unread, session or not.
	req, ok := rc.readCeremonyBody(w, r)
	if !ok {
		return
	}
	if req.RecipeUserID == nil {
		rc.k.Fail(w, r, wire.BadRequest("Please provide the recipeUserId"))
		return
	}
	s, ok := rc.adder(w, r)
	if !ok {
		return
	}
	opts, c, ok := rc.registrationOptions(w, r, req)
	if !ok {
		return
	}
	logins := s.Logins()
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
	if rc.setup.PasskeyFactor {
		// The passkey is a second factor now, proven by this ceremony:
		// complete it here, and hold the other sessions to it.
		answer = func(nl store.Login) {
			rc.k.FactorAdded(r, s, nl)
			rc.k.CompleteFactor(w, r, s, kit.FactorWebAuthn, nil)
		}
	}
	rc.register(w, r, opts, c, req.Credential, store.Login{LoginKey: inTenant(s.Tenant()), UserID: s.UserID()}, rc.link, answer)
}

// registrationOptions reads the options of a registration for an
// existing user, or answers the request.
func (rc *recipe) registrationOptions(w http.ResponseWriter, r *http.Request, req ceremonyRequest) (store.Code, ceremony, bool) {
	opts, c, found, ok := rc.ceremonyOptions(w, r, req)
	switch {
	case !ok:
		return opts, c, false
	case !found:
		wire.Status(w, statusOptionsNotFound)
		return opts, c, false
	case opts.Email == "" || opts.UserID != "" || len(c.Handle) == 0:
		wire.Status(w, statusInvalidOptions)
		return opts, c, false
	}
	return opts, c, true
}

// link adds the passkey l to its user, who must still be there.
func (rc *recipe) link(ctx context.Context, l store.Login) (string, error) {
	if err := rc.k.Store().LinkLogin(ctx, l); errors.Is(err, store.ErrNotFound) {
		return "", kit.ErrUserGone
	} else {
		return "", err
	}
}

// adder verifies the session of a request to add a passkey, and reads
// its user's logins and second factors, or answers the request. A
// passkey signs in on its own: with MFA on, a session that has not
// completed its second factor adds one only as that factor, or a stolen
// password would buy a lasting way in; with email verification on, the
// user's addresses must be verified (kit.Kernel's AddressesVerified); and
// like every new way in, it needs a fresh sign-in.
func (rc *recipe) adder(w http.ResponseWriter, r *http.Request) (kit.FactorSession, bool) {
	s, ok := rc.k.FactorSession(w, r)
	if ok && !s.MayAdd(kit.FactorWebAuthn) {
		wire.ClaimError(w, "st-mfa", wire.MsgSetupNotAllowed)
		ok = false
	}
	return s, ok && rc.k.AddressesVerified(w, s) && rc.k.SignedInRecently(w, r, s)
}

// register finishes a registration for an existing user: it checks the
// credential, uses up the options, and adds the passkey as nl (with its
// key, material and creation time filled in) with add, then answers OK,
// or the status add returns.
//
// answer, if set, answers instead of the plain OK, with the login added.
func (rc *recipe) register(w http.ResponseWriter, r *http.Request, opts store.Code, c ceremony, cred []byte, nl store.Login, add func(context.Context, store.Login) (string, error), answer func(store.Login)) {
	ctx := r.Context()
	pk, err := rc.v.FinishRegistration(rc.rp, passkeyUser{Handle: c.Handle, Name: opts.Email}, c.State, cred)
	if err != nil {
		rc.verifierFailed(w, r, statusInvalidCredentials, err)
		return
	}
	nl.LoginKey = store.WebAuthnKey(rc.rp.ID, base64.RawURLEncoding.EncodeToString(pk.CredentialID)).In(nl.Tenant)
	nl.ID, nl.Material, nl.CreatedAt = uuid.NewString(), pk.Material, rc.k.Now().Truncate(time.Millisecond)
	if !rc.useOptions(w, r, opts, nil) {
		return
	}
	status, err := add(ctx, nl)
	switch {
	case errors.Is(err, store.ErrConflict):
		wire.Status(w, statusInvalidCredentials) // registered already
		return
	case err != nil:
		rc.k.Fail(w, r, fmt.Errorf("auth: adding a passkey: %w", err))
		return
	case status != "":
		wire.Status(w, status)
		return
	}
	rc.k.Emit(ctx, r, kit.Event{Kind: kit.EventPasskeyAdded, UserID: nl.UserID, Method: store.MethodWebAuthn})
	if answer != nil {
		answer(nl)
		return
	}
	wire.JSON(w, http.StatusOK, wire.OK)
}

// handleRemove removes a passkey of the session's user; the sessions it
// started end.
func (rc *recipe) handleRemove(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ID *string `json:"webauthnCredentialId"`
	}
	if err := rc.k.ReadJSON(w, r, &req); err != nil {
		rc.k.Fail(w, r, err)
		return
	}
	if req.ID == nil || *req.ID == "" {
		rc.k.Fail(w, r, wire.BadRequest("Please provide the webauthnCredentialId"))
		return
	}
	s, ok := rc.k.Session(w, r)
	if !ok {
		return
	}
	if s.FactorsPending() {
		wire.MFAPending(w)
		return
	}
	if !rc.k.SignedInRecently(w, r, s) {
		return
	}
	ctx := r.Context()
	l, found, err := rc.passkeyOf(ctx, s.UserID(), *req.ID)
	if err == nil && found {
		err = rc.k.RemoveLogin(ctx, r, l.UserID, l.ID)
	}
	switch {
	case !found && err == nil, errors.Is(err, store.ErrNotFound):
		wire.Status(w, "CREDENTIAL_NOT_FOUND_ERROR")
	case errors.Is(err, kit.ErrLastFactor):
		wire.GeneralError(w, wire.MsgLastFactor)
	case errors.Is(err, store.ErrLastLogin):
		wire.GeneralError(w, msgLastLogin)
	case err != nil:
		rc.k.Fail(w, r, err)
	default:
		rc.k.Emit(ctx, r, kit.Event{Kind: kit.EventPasskeyRemoved, UserID: l.UserID, Method: store.MethodWebAuthn})
		wire.JSON(w, http.StatusOK, wire.OK)
	}
}

// passkeyOf finds the passkey of user userID whose credential id is id;
// found is false where there is none, as for an id no credential has, or
// another user's.
func (rc *recipe) passkeyOf(ctx context.Context, userID, id string) (l store.Login, found bool, err error) {
	if _, err := base64.RawURLEncoding.Strict().DecodeString(id); err != nil || len(id) > wire.MaxParamLen {
		return store.Login{}, false, nil
	}
	l, err = rc.passkeyLogin(ctx, userID, id)
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
// as fast, whoever the email belongs to: the work happens off the
// request path.
func (rc *recipe) handleRecoveryRequest(w http.ResponseWriter, r *http.Request) {
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
	email := address.Normalise(*req.Email)
	if msg := wire.CheckEmail(email); msg != "" {
		wire.GeneralError(w, msg)
		return
	}
	rc.k.QueueAccountEmail(w, r, "passkey recovery", email, rc.sendRecoveryEmail)
}

// recoverable returns the user whose passkey logins have email, the
// oldest's, and whether recovery may serve it: not where another user
// holds the address (owns or proves it), which would hand that user's
// address a way into this account.
func (rc *recipe) recoverable(ctx context.Context, email string) (userID string, allowed bool, err error) {
	logins, err := rc.k.Store().LoginsByEmail(ctx, email)
	if err != nil {
		return "", false, err
	}
	logins = rc.ofTenant(ctx, logins)
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

// sendRecoveryEmail is the off-path work of one recovery request.
func (rc *recipe) sendRecoveryEmail(ctx context.Context, email string) {
	userID, allowed, err := rc.recoverable(ctx, email)
	switch {
	case err != nil:
		rc.k.MailFailed(ctx, "passkey recovery", "", "looking up the user", err)
		return
	case userID == "":
		return // nobody to tell; the requester learns nothing either way
	case !allowed:
		rc.k.Logger().LogAttrs(ctx, slog.LevelWarn, "auth: passkey recovery email withheld: another user holds the address",
			slog.String("user_id", userID))
		return
	}
	tok, hash := onetime.New()
	now := rc.k.Now()
	lifetime := rc.c.RecoveryLifetime
	if err := rc.k.Store().CreateCode(ctx, store.Code{
		Hash: hash, Kind: store.CodePasskeyRecovery, Tenant: rc.k.Tenant(ctx).StoreID(), UserID: userID, Email: email,
		CreatedAt: now, ExpiresAt: now.Add(lifetime),
	}); err != nil {
		rc.k.MailFailed(ctx, "passkey recovery", userID, "creating a recovery token", err)
		return
	}
	if err := rc.k.Mail(ctx, rc.c.RecoveryEmail, email, EmailData{
		Email: email, Link: wire.LinkWithToken(rc.c.RecoveryURL, tok, rc.k.Tenant(ctx).ID), ValidFor: kit.InWords(lifetime),
	}); err != nil {
		rc.k.MailFailed(ctx, "passkey recovery", userID, "sending the recovery email", err)
		return
	}
	rc.k.Emit(ctx, nil, kit.Event{Kind: kit.EventResetEmailSent, UserID: userID, Method: store.MethodWebAuthn})
}

// handleRecoverAccount registers a new passkey with a recovery link. The
// link proves the inbox, so recovery does what a password reset does:
// the new passkey proves the address, every session of the user ends, and
// what a stranger who signed up with the address may hold stops working
// (see endUnprovenOf).
// No session starts: the person signs in with the new passkey.
func (rc *recipe) handleRecoverAccount(w http.ResponseWriter, r *http.Request) {
	req, opts, c, found, ok := rc.readCeremony(w, r)
	if !ok {
		return
	}
	tok, hash, ok := rc.recoveryLink(w, r, req.Token)
	switch {
	case !ok:
		return
	case !found:
		wire.Status(w, statusOptionsNotFound)
		return
	case opts.UserID != tok.UserID || opts.Email != tok.Email || len(c.Handle) == 0:
		wire.Status(w, statusInvalidOptions)
		return
	}
	if _, allowed, err := rc.recoverable(r.Context(), tok.Email); err != nil || !allowed {
		if err != nil {
			rc.k.Fail(w, r, err)
			return
		}
		wire.NotAllowed(w, "RECOVER_ACCOUNT_NOT_ALLOWED", reasonRecovery)
		return
	}
	nl := store.Login{LoginKey: store.LoginKey{Tenant: tok.Tenant}, UserID: tok.UserID, Email: tok.Email, EmailVerified: true, EmailProven: true}
	rc.register(w, r, opts, c, req.Credential, nl, func(ctx context.Context, l store.Login) (string, error) {
		return rc.addRecovered(ctx, r, l, hash)
	}, nil)
}

// recoveryLink finds the recovery link of token, and the token's hash,
// or answers the request.
func (rc *recipe) recoveryLink(w http.ResponseWriter, r *http.Request, token *string) (store.Code, [32]byte, bool) {
	if token == nil || !onetime.WellFormed(*token) {
		wire.Status(w, statusTokenInvalid)
		return store.Code{}, [32]byte{}, false
	}
	hash := sha256.Sum256([]byte(*token))
	tok, err := rc.k.Store().Code(r.Context(), store.CodePasskeyRecovery, hash, rc.k.Now())
	switch {
	case errors.Is(err, store.ErrNotFound) || (err == nil && tok.Tenant != rc.k.Tenant(r.Context()).StoreID()):
		wire.Status(w, statusTokenInvalid)
		return store.Code{}, [32]byte{}, false
	case err != nil:
		rc.k.Fail(w, r, err)
		return store.Code{}, [32]byte{}, false
	}
	return tok, hash, true
}

// addRecovered adds the passkey l of a recovery by the link whose hash is
// tokHash, ends what the user's other ways in give whoever made them,
// and uses the link up. The link is used up last: until every earlier
// way in has gone, a retry with it finishes what a failure interrupted.
func (rc *recipe) addRecovered(ctx context.Context, r *http.Request, l store.Login, tokHash [32]byte) (string, error) {
	st := rc.k.Store()
	logins, err := st.Logins(ctx, l.UserID)
	if err != nil {
		return "", err
	}
	// The new passkey proves the address, so it owns it unless a login
	// of the user does; that one may be an earlier passkey, which goes
	// below, and then the new one takes the address. It owns it with
	// account linking off too: a store adds a login with an address to an
	// existing user only as the address's owner or beside it, and the
	// address is this account's, which it proved.
	l.OwnsEmail = !kit.OwnedWithin(logins, l.Email)
	switch err := st.LinkLogin(ctx, l); {
	case errors.Is(err, store.ErrEmailOwned):
		// Another user came to own the address since the check.
		return "", errors.New("auth: passkey recovery: another user owns the address")
	case err != nil:
		return "", err
	}
	if err := rc.endUnprovenOf(ctx, r, logins, l.Email); err != nil {
		return "", err
	}
	if !l.OwnsEmail {
		if _, err := st.ClaimEmail(ctx, l.ID); err != nil && !errors.Is(err, store.ErrEmailOwned) {
			return "", err
		}
	}
	_, err = st.UseCeremony(ctx, store.CodePasskeyRecovery, tokHash, rc.k.Now(), nil)
	if errors.Is(err, store.ErrNotFound) {
		// A recovery with the same link finished first: it keeps its
		// passkey, this one goes.
		if _, err := st.DeleteLogin(ctx, l.ID); err != nil && !errors.Is(err, store.ErrNotFound) {
			return "", err
		}
		return statusTokenInvalid, nil
	}
	return "", err
}

// endUnprovenOf ends what a user's other ways in give whoever made them,
// once a recovery proved the address (logins are the user's, read before
// the new passkey joined): every earlier passkey goes, whatever its
// email (one added in a session has none), as do the logins with the
// address that prove nothing; a password among those is voided (a reset
// sets it again); and every session of the user ends.
func (rc *recipe) endUnprovenOf(ctx context.Context, r *http.Request, logins []store.Login, email string) error {
	var password *store.Login
	for i, l := range logins {
		switch {
		case l.Method == store.MethodEmailPassword && l.Email == email && !l.EmailProven:
			password = &logins[i]
		case l.Method == store.MethodWebAuthn, l.Email == email && !l.EmailProven:
			if _, err := rc.k.Store().DeleteLogin(ctx, l.ID); err != nil && !errors.Is(err, store.ErrNotFound) {
				return err
			}
		}
	}
	if password != nil {
		return rc.k.Evict(ctx, r, *password)
	}
	if len(logins) == 0 {
		return nil
	}
	handles, err := rc.k.Store().RevokeUserSessions(ctx, logins[0].UserID)
	for _, h := range handles {
		rc.k.Emit(ctx, r, kit.Event{Kind: kit.EventSessionRevoked, UserID: logins[0].UserID, SessionHandle: h})
	}
	return err
}

// signUpAsFactor registers a passkey for the session's user as a second
// factor, and completes it in the session: the SDKs' MFA screen signs up
// with a session and shouldTryLinkingWithSessionUser. The passkey has no
// email (the screen's address only names it in the authenticator), and
// the session is the same one, with a new access token.
func (rc *recipe) signUpAsFactor(w http.ResponseWriter, r *http.Request, req ceremonyRequest, opts store.Code, c ceremony) {
	s, ok := rc.adder(w, r)
	if !ok {
		return
	}
	rc.register(w, r, opts, c, req.Credential, store.Login{LoginKey: inTenant(s.Tenant()), UserID: s.UserID()}, rc.link, func(nl store.Login) {
		rc.k.FactorAdded(r, s, nl)
		rc.k.CompleteFactor(w, r, s, kit.FactorWebAuthn, &nl)
	})
}

// inTenant is the key of a login in tenant, to be completed.
func inTenant(tenant string) store.LoginKey { return store.LoginKey{}.In(tenant) }

// ofTenant are the logins among logins of the request's tenant: a
// passkey of another tenant's is none of this one's.
func (rc *recipe) ofTenant(ctx context.Context, logins []store.Login) []store.Login {
	tenant := rc.k.Tenant(ctx).StoreID()
	return slices.DeleteFunc(logins, func(l store.Login) bool { return l.Tenant != tenant })
}

// passkeyLogin finds the passkey id among the logins of the user userID:
// it may be of any tenant the user has a login in.
func (rc *recipe) passkeyLogin(ctx context.Context, userID, id string) (store.Login, error) {
	logins, err := rc.k.Store().Logins(ctx, userID)
	if err != nil {
		return store.Login{}, err
	}
	for _, l := range logins {
		if l.Method == store.MethodWebAuthn && l.ThirdParty == rc.rp.ID && l.Subject == id {
			return l, nil
		}
	}
	return store.Login{}, store.ErrNotFound
}
