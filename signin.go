package auth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/latchkit/auth/internal/password"
	"github.com/latchkit/auth/store"
)

// handleSignUp creates a user with an email and a password and signs them
// in.
func (a *Auth) handleSignUp(w http.ResponseWriter, r *http.Request) {
	c, ok := a.credentials(w, r, true)
	if !ok {
		return
	}
	ctx := r.Context()
	// A cheap check first, so a taken email costs no hash. CreateUser
	// decides for concurrent sign-ups.
	if _, err := a.store.UserByEmail(ctx, c.email); err == nil {
		writeFieldErrors(w, []fieldError{{"email", msgEmailTaken}})
		return
	} else if !errors.Is(err, store.ErrNotFound) {
		a.fail(w, r, err)
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
	u := store.User{
		ID:           uuid.NewString(),
		Email:        c.email,
		PasswordHash: hash,
		TimeJoined:   a.cfg.Now().Truncate(time.Millisecond),
	}
	if err := a.store.CreateUser(ctx, u); errors.Is(err, store.ErrConflict) {
		writeFieldErrors(w, []fieldError{{"email", msgEmailTaken}})
		return
	} else if err != nil {
		a.fail(w, r, fmt.Errorf("auth: creating a user: %w", err))
		return
	}
	a.emit(ctx, r, Event{Kind: EventSignUp, UserID: u.ID})
	s, tokens, err := a.createSession(ctx, w, r, u.ID)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	a.emit(ctx, r, Event{Kind: EventSignIn, UserID: u.ID, SessionHandle: s.Handle})
	writeUser(w, r, u, tokens)
}

// handleSignIn checks an email and password and starts a session.
//
// Unknown emails, users without a password and wrong passwords get the same
// answer after the same work: an unknown user's password is verified
// against a dummy hash made with the real parameters.
func (a *Auth) handleSignIn(w http.ResponseWriter, r *http.Request) {
	c, valid := a.credentials(w, r, false)
	if !valid {
		return
	}
	ctx := r.Context()
	// Failures count per email and client address together, so guessing
	// from elsewhere cannot lock the user out, and per address alone.
	client := a.clientAddr(r)
	limits := []limit{
		{limitKey("signin", c.email, client), a.cfg.RateLimits.SignInFailures},
		{limitKey("signin-client", client), a.cfg.RateLimits.ClientSignInFailures},
	}
	if wait := a.wait(ctx, limits...); wait > 0 {
		a.emit(ctx, r, Event{Kind: EventSignInThrottled})
		tooMany(w, wait)
		return
	}
	u, err := a.store.UserByEmail(ctx, c.email)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		a.fail(w, r, err)
		return
	}
	hash := u.PasswordHash
	if hash == "" {
		hash = a.dummyHash
	}
	var ok, rehash bool
	var verr error
	if len(c.password) <= maxPasswordLen {
		if err := a.withHashSlot(ctx, func() { ok, rehash, verr = a.passwords.verify(c.password, hash) }); err != nil {
			a.fail(w, r, err)
			return
		}
	}
	if verr != nil {
		a.cfg.Logger.LogAttrs(ctx, slog.LevelError, "auth: unusable password hash",
			slog.String("user_id", u.ID), slog.String("error", verr.Error()))
	}
	if !ok || u.PasswordHash == "" {
		a.count(ctx, limits...)
		a.emit(ctx, r, Event{Kind: EventSignInFailed, UserID: u.ID})
		writeJSON(w, http.StatusOK, struct {
			Status string `json:"status"`
		}{"WRONG_CREDENTIALS_ERROR"})
		return
	}
	if err := a.cfg.Limiter.Reset(ctx, limits[0].key); err != nil {
		a.limiterFailed(ctx, err)
	}
	if rehash {
		a.upgradeHash(ctx, u, c.password)
	}
	s, tokens, err := a.createSession(ctx, w, r, u.ID)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	a.emit(ctx, r, Event{Kind: EventSignIn, UserID: u.ID, SessionHandle: s.Handle})
	writeUser(w, r, u, tokens)
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

// upgradeHash replaces a hash made with old parameters. Failure only means
// the upgrade waits for the next sign-in.
func (a *Auth) upgradeHash(ctx context.Context, u store.User, pw string) {
	var hash string
	if err := a.withHashSlot(ctx, func() { hash = a.passwords.hash(pw) }); err != nil {
		return
	}
	if err := a.store.UpdatePasswordHash(ctx, u.ID, u.PasswordHash, hash); err != nil && !errors.Is(err, store.ErrConflict) {
		a.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "auth: upgrading a password hash",
			slog.String("user_id", u.ID), slog.String("error", err.Error()))
	}
}

// withHashSlot runs f, a password hash, once one of the
// Config.MaxConcurrentHashes slots is free. Waiting longer than
// Config.HashQueueTimeout fails with errOverloaded, answered 503.
func (a *Auth) withHashSlot(ctx context.Context, f func()) error {
	select {
	case a.hashSlots <- struct{}{}:
		a.observeHashWait(0)
	default:
		// Real time, not Config.Now: this is a wait in this process.
		start := time.Now()
		t := time.NewTimer(a.cfg.HashQueueTimeout)
		defer t.Stop()
		select {
		case a.hashSlots <- struct{}{}:
			a.observeHashWait(time.Since(start))
		case <-t.C:
			a.observeHashWait(time.Since(start))
			return errOverloaded
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	defer func() { <-a.hashSlots }()
	f()
	return nil
}

func (a *Auth) observeHashWait(d time.Duration) {
	if a.cfg.Metrics != nil {
		a.cfg.Metrics.ObserveHashWait(d)
	}
}

// handleEmailExists tells whether an email has a password login.
func (a *Auth) handleEmailExists(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if len(q["email"]) != 1 {
		writeMessage(w, http.StatusBadRequest, "Please provide the email as a GET param")
		return
	}
	email := normaliseEmail(q.Get("email"))
	exists := false
	if checkEmail(email) == "" {
		u, err := a.store.UserByEmail(r.Context(), email)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			a.fail(w, r, err)
			return
		}
		exists = err == nil && u.PasswordHash != ""
	}
	writeJSON(w, http.StatusOK, struct {
		Status string `json:"status"`
		Exists bool   `json:"exists"`
	}{"OK", exists})
}

func writeFieldErrors(w http.ResponseWriter, errs []fieldError) {
	writeJSON(w, http.StatusOK, struct {
		Status     string       `json:"status"`
		FormFields []fieldError `json:"formFields"`
	}{"FIELD_ERROR", errs})
}

// loginMethod and wireUser are the user object of FDI 1.18 and 3.x and later.
type loginMethod struct {
	RecipeID     string   `json:"recipeId"`
	RecipeUserID string   `json:"recipeUserId"`
	TenantIDs    []string `json:"tenantIds"`
	Email        string   `json:"email"`
	TimeJoined   int64    `json:"timeJoined"`
	Verified     bool     `json:"verified"`
}

type wireUser struct {
	ID            string        `json:"id"`
	IsPrimaryUser bool          `json:"isPrimaryUser"`
	TenantIDs     []string      `json:"tenantIds"`
	Emails        []string      `json:"emails"`
	PhoneNumbers  []string      `json:"phoneNumbers"`
	ThirdParty    []any         `json:"thirdParty"`
	LoginMethods  []loginMethod `json:"loginMethods"`
	TimeJoined    int64         `json:"timeJoined"`
}

// legacyUser is the user object of older clients.
type legacyUser struct {
	ID         string   `json:"id"`
	Email      string   `json:"email"`
	TimeJoined int64    `json:"timeJoined"`
	TenantIDs  []string `json:"tenantIds"`
}

var publicTenant = []string{"public"}

// writeUser answers a successful sign-up or sign-in.
func writeUser(w http.ResponseWriter, r *http.Request, u store.User, tokens bodyTokens) {
	joined := u.TimeJoined.UnixMilli()
	var user any
	if legacyFDI(r.Header.Get("fdi-version")) {
		user = legacyUser{ID: u.ID, Email: u.Email, TimeJoined: joined, TenantIDs: publicTenant}
	} else {
		user = wireUser{
			ID:           u.ID,
			TenantIDs:    publicTenant,
			Emails:       []string{u.Email},
			PhoneNumbers: []string{},
			ThirdParty:   []any{},
			LoginMethods: []loginMethod{{
				RecipeID: "emailpassword", RecipeUserID: u.ID, TenantIDs: publicTenant,
				Email: u.Email, TimeJoined: joined,
			}},
			TimeJoined: joined,
		}
	}
	writeJSON(w, http.StatusOK, struct {
		Status string `json:"status"`
		User   any    `json:"user"`
		bodyTokens
	}{"OK", user, tokens})
}

// legacyFDI reports whether the highest version in an fdi-version header is
// below 1.18 or is a 2.x, whose clients expect the legacy user object. No
// header means the latest.
func legacyFDI(header string) bool {
	if header == "" || len(header) > 256 {
		return false
	}
	bestMajor, bestMinor := -1, -1
	for _, v := range strings.Split(header, ",") {
		maj, min, ok := strings.Cut(strings.TrimSpace(v), ".")
		if !ok {
			continue
		}
		ma, err1 := strconv.Atoi(maj)
		mi, err2 := strconv.Atoi(min)
		if err1 != nil || err2 != nil || ma < 0 || mi < 0 {
			continue
		}
		if ma > bestMajor || ma == bestMajor && mi > bestMinor {
			bestMajor, bestMinor = ma, mi
		}
	}
	if bestMajor < 0 {
		return false
	}
	return bestMajor == 2 || bestMajor == 1 && bestMinor < 18 || bestMajor == 0
}

// passwordHasher hashes and verifies passwords; an interface so that a
// test inside the package can count the calls each path makes.
type passwordHasher interface {
	hash(pw string) string
	verify(pw, phc string) (ok, rehash bool, err error)
}

// argon2id is the passwordHasher of every Auth.
type argon2id struct{ params password.Params }

func (h argon2id) hash(pw string) string { return password.Hash(pw, h.params) }

func (h argon2id) verify(pw, phc string) (ok, rehash bool, err error) {
	return password.Verify(pw, phc, h.params)
}
