package auth

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

// handleSignUp creates a user with an email and a password and signs them
// in.
func (a *Auth) handleSignUp(w http.ResponseWriter, r *http.Request) {
	if !a.firstFactorAllowed(w, FactorEmailPassword) {
		return
	}
	c, ok := a.credentials(w, r, true)
	if !ok {
		return
	}
	ctx := r.Context()
	// Taken before the email check too, so sign-up is no faster way to
	// ask which emails have accounts than the email-exists endpoint.
	if wait := a.take(ctx, a.newPasswordLimit(r)); wait > 0 {
		wire.TooMany(w, wait)
		return
	}
	// A cheap check first, so a taken email costs no hash. CreateUser
	// decides for concurrent sign-ups.
	if _, err := a.store.Login(ctx, store.EmailPasswordKey(c.email)); err == nil {
		writeFieldErrors(w, []fieldError{{"email", msgEmailTaken}})
		return
	} else if !errors.Is(err, store.ErrNotFound) {
		a.fail(w, r, err)
		return
	}
	// Under account linking, a new password proves no inbox, so it joins
	// nobody, owns nothing, and is refused where someone owns the
	// address (see planLink).
	if refused, err := a.signUpRefused(ctx, c.email); err != nil {
		a.fail(w, r, err)
		return
	} else if refused {
		wire.NotAllowed(w, "SIGN_UP_NOT_ALLOWED", reasonEmailPasswordSignUp)
		return
	}
	// Load the signing key before the user exists, so that a store
	// failure there cannot leave an account without its first session.
	if _, err := a.keys.signer(ctx); err != nil {
		a.fail(w, r, err)
		return
	}
	var hash string
	if err := a.withHashSlot(ctx, func() { hash = a.passwords.hash(c.password) }); err != nil {
		a.fail(w, r, err)
		return
	}
	now := a.cfg.Now().Truncate(time.Millisecond)
	u := store.User{ID: uuid.NewString(), TimeJoined: now}
	l := store.Login{
		LoginKey:     store.EmailPasswordKey(c.email),
		ID:           u.ID,
		UserID:       u.ID,
		Email:        c.email,
		PasswordHash: hash,
		CreatedAt:    now,
	}
	if err := a.store.CreateUser(ctx, u, l); errors.Is(err, store.ErrConflict) {
		writeFieldErrors(w, []fieldError{{"email", msgEmailTaken}})
		return
	} else if err != nil {
		a.fail(w, r, fmt.Errorf("auth: creating a user: %w", err))
		return
	}
	a.emit(ctx, r, Event{Kind: EventSignUp, UserID: u.ID, Method: l.Method})
	// Someone may have proven the address since the check above: then
	// this login's sign-ins are refused from now on, and so is this one.
	if conflict, err := a.signInConflicts(ctx, l); err != nil {
		a.fail(w, r, err)
		return
	} else if conflict {
		wire.NotAllowed(w, "SIGN_UP_NOT_ALLOWED", reasonEmailPasswordSignUp)
		return
	}
	a.signedIn(w, r, u, []store.Login{l}, l, nil, FactorEmailPassword)
}

// signUpRefused reports whether account linking refuses a password
// sign-up with email: a login owns the address or proves it, and the new
// login, which proves nothing, would be refused at every sign-in.
func (a *Auth) signUpRefused(ctx context.Context, email string) (bool, error) {
	if !a.cfg.AccountLinking {
		return false, nil
	}
	return a.heldByOther(ctx, email, "")
}

// handleSignIn checks an email and password and starts a session.
//
// Unknown emails, users without a password and wrong passwords get the same
// answer after the same work: an unknown user's password is verified
// against a dummy hash made with the real parameters.
func (a *Auth) handleSignIn(w http.ResponseWriter, r *http.Request) {
	if !a.firstFactorAllowed(w, FactorEmailPassword) {
		return
	}
	c, valid := a.credentials(w, r, false)
	if !valid {
		return
	}
	ctx := r.Context()
	att, wait := a.takeSignIn(ctx, c.email, a.limitClient(r))
	if wait > 0 {
		a.emit(ctx, r, Event{Kind: EventSignInThrottled, Method: store.MethodEmailPassword})
		wire.TooMany(w, wait)
		return
	}
	u, logins, l, err := a.passwordUser(ctx, c.email)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		a.settleSignIn(ctx, att, attemptAbandoned)
		a.fail(w, r, err)
		return
	}
	known := err == nil
	ok, rehash, took, err := a.checkPassword(ctx, l, known, c.password)
	if err != nil {
		a.settleSignIn(ctx, att, attemptAbandoned)
		a.fail(w, r, err)
		return
	}
	if !ok || !known {
		a.settleSignIn(ctx, att, attemptFailed)
		// Never quicker than the slowest kind of check lately either, so
		// that a stored hash costlier than the current parameters does not
		// tell its user from an unknown email.
		a.pad(ctx, a.checkCosts.floor(time.Now())-took)
		a.emit(ctx, r, Event{Kind: EventSignInFailed, UserID: l.UserID, Method: store.MethodEmailPassword})
		wire.JSON(w, http.StatusOK, struct {
			Status string `json:"status"`
		}{"WRONG_CREDENTIALS_ERROR"})

		return
	}
	a.settleSignIn(ctx, att, attemptSucceeded)
	if rehash {
		a.upgradeHash(ctx, l, c.password)
	}
	a.passwordSignedIn(w, r, u, logins, l)
}

// passwordSignedIn starts the session of a password that checked out,
// unless account linking refuses the login (it does not prove an address
// another user holds).
func (a *Auth) passwordSignedIn(w http.ResponseWriter, r *http.Request, u store.User, logins []store.Login, l store.Login) {
	ctx := r.Context()
	if conflict, err := a.signInConflicts(ctx, l); err != nil {
		a.fail(w, r, err)
		return
	} else if conflict {
		wire.NotAllowed(w, "SIGN_IN_NOT_ALLOWED", reasonEmailPasswordSignIn)
		return
	}
	if a.cfg.AccountLinking && l.EmailProven && !kit.OwnedWithin(logins, l.Email) {
		// A reset proved the address but could not claim it (a fault,
		// or another owner since gone): claim it now, as a provider's
		// sign-in would.
		if owned := a.afterVerified(ctx, l); owned.OwnsEmail {
			var err error
			if u, logins, err = a.user(ctx, l.UserID); err != nil {
				a.fail(w, r, err)
				return
			}
		}
	}
	a.signedIn(w, r, u, logins, l, nil, FactorEmailPassword)
}

// checkPassword checks pw against l's hash, or, for an email that is not
// known, against a dummy hash with the real parameters, and reports how
// long the check took. An error means no hash slot was free in time.
func (a *Auth) checkPassword(ctx context.Context, l store.Login, known bool, pw string) (ok, rehash bool, took time.Duration, err error) {
	hash := l.PasswordHash
	if !known {
		hash = a.dummyHash
	}
	if len(pw) > maxPasswordLen {
		return false, false, 0, nil
	}
	var verr error
	err = a.withHashSlot(ctx, func() {
		start := time.Now()
		ok, rehash, verr = a.passwords.verify(pw, hash)
		if known && !password.Current(hash, a.hashParams) {
			// Never cheaper than an unknown email, which costs a check
			// with the current parameters: an imported or older hash may
			// be quicker, or refuse unhashed.
			a.passwords.verify(pw, a.dummyHash)
		}
		took = time.Since(start)
	})
	if err != nil {
		return false, false, 0, err
	}
	if password.Hashes(pw, hash) {
		// Only a full check tells what checking this kind costs.
		a.checkCosts.observe(hashKind(hash), took, time.Now())
	}
	if verr != nil {
		a.cfg.Logger.LogAttrs(ctx, slog.LevelError, "auth: unusable password hash",
			slog.String("user_id", l.UserID), slog.String("error", verr.Error()))
	}
	return ok, rehash, took, nil
}

// credentials decodes the email and password of a request, or answers
// the request (400, 413 or FIELD_ERROR) and reports false.
func (a *Auth) credentials(w http.ResponseWriter, r *http.Request, newPassword bool) (credentials, bool) {
	c, errs, err := a.decodeCredentials(w, r, newPassword)
	if err != nil {
		a.fail(w, r, err)
		return c, false
	}
	if len(errs) > 0 {
		writeFieldErrors(w, errs)
		return c, false
	}
	return c, true
}

// handleEmailExists tells whether an email has a password login.
func (a *Auth) handleEmailExists(w http.ResponseWriter, r *http.Request) {
	email, ok := a.lookupParam(w, r, "email")
	if !ok {
		return
	}
	email = address.Normalise(email)
	a.writeExists(w, r, store.EmailPasswordKey(email), wire.CheckEmail(email) == "")
}

func writeFieldErrors(w http.ResponseWriter, errs []fieldError) {
	wire.JSON(w, http.StatusOK, struct {
		Status     string       `json:"status"`
		FormFields []fieldError `json:"formFields"`
	}{"FIELD_ERROR", errs})

}

// passwordUser returns the email and password login of email that a
// password opens, with its user and the user's logins (one read of the
// store: a sign-in answers with them), or an error matching
// store.ErrNotFound. A login whose
// password was voided (account linking evicts the maker of an unproven
// login) has no hash and is none for sign-in; sign-up, the email-exists
// endpoint and reset still see it, as a reset gives it a password.
func (a *Auth) passwordUser(ctx context.Context, email string) (store.User, []store.Login, store.Login, error) {
	k := store.EmailPasswordKey(email)
	u, logins, err := a.store.UserByLogin(ctx, k)
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
