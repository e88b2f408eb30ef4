package auth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/latchkit/auth/internal/kit"
	"github.com/latchkit/auth/internal/wire"
	"github.com/latchkit/auth/store"
)

// Errors of the Go API. Over HTTP they are the 401 answers of the protocol.
// A refused session comes as a *SessionError that matches one of them.
var (
	// ErrUnauthorized: the request carries no session, or its session has
	// ended. The wire message is "unauthorised".
	ErrUnauthorized = errors.New("auth: unauthorised")
	// ErrTryRefreshToken: the access token is expired or invalid; the
	// client should refresh and retry.
	ErrTryRefreshToken = errors.New("auth: try refresh token")
	// ErrTokenTheft: a refresh token was used twice; its session has been
	// revoked.
	ErrTokenTheft = errors.New("auth: token theft detected")
)

// ErrNotFound reports that a user or session does not exist. It is
// store.ErrNotFound, so the Go API's callers need not import package store.
var ErrNotFound = store.ErrNotFound

// ErrLastLogin reports that a login method was not unlinked because it is
// the user's only one. It is store.ErrLastLogin.
var ErrLastLogin = store.ErrLastLogin

// ErrLastFactor reports that a login method or second factor was not
// removed because it is the last second factor the user can complete of
// those the application requires (Config.MFA.Required, RequireFactors):
// without it, whoever holds the password would set up their own. Over
// HTTP it is the SDKs' GENERAL_ERROR, "This is your last second factor".
var ErrLastFactor = kit.ErrLastFactor

// A Reason says why a session was refused: a frontend can tell the user
// why they were signed out, and an operator can count each kind. Over HTTP
// every 401 from the refresh endpoint or a protected route carries it, in
// the ReasonHeader header and as "reason" beside "message" in the body.
type Reason string

// ReasonHeader is the response header that carries the Reason of a 401.
// CORS exposes it to the frontend.
const ReasonHeader = "Auth-Reason"

// The reasons of a SessionError.
const (
	ReasonNoToken      Reason = "no_token"      // the request carries no token
	ReasonMalformed    Reason = "malformed"     // the token is not one we could have issued
	ReasonExpired      Reason = "expired"       // the access token has expired
	ReasonInvalid      Reason = "invalid"       // signature, MAC, key, issuer or claims refused
	ReasonMissingRID   Reason = "missing_rid"   // SameSite=None cookies came without a rid header
	ReasonUnknownToken Reason = "unknown_token" // a refresh token of no session the store knows

	// The session has ended.
	ReasonSessionExpired Reason = "session_expired" // it reached its expiry unrefreshed
	ReasonSignedOut      Reason = "signed_out"      // its user signed out
	ReasonRevoked        Reason = "revoked"         // ended by the Go API, account linking or a passkey change, or its user deleted
	ReasonPasswordReset  Reason = "password_reset"  // a password reset ended every session of its user
	ReasonTokenTheft     Reason = "token_theft"     // it was ended earlier because a superseded refresh token came back
	ReasonBanned         Reason = "banned"          // its user was banned (BanUser)

	// A superseded refresh token came back and the session has just been
	// ended: the answer is "token theft detected". Which token it was
	// tells a client bug (refreshes racing without a reuse window) from
	// a replay.
	ReasonTheftPrevious    Reason = "token_theft_previous"     // the token just superseded, with no reuse window
	ReasonTheftAfterWindow Reason = "token_theft_after_window" // the token just superseded, after the reuse window
	ReasonTheftStale       Reason = "token_theft_stale"        // a token superseded two or more refreshes ago
)

// A SessionError reports why a session was refused. It matches the
// protocol's answer with errors.Is: ErrUnauthorized, ErrTryRefreshToken
// or ErrTokenTheft. An access token that is expired or invalid, or a
// missing rid header, means ErrTryRefreshToken; no token, or a revoked
// session, means ErrUnauthorized. At the refresh endpoint every refusal
// but theft means ErrUnauthorized. It unwraps to its cause where there is
// one, such as golang-jwt's jwt.ErrTokenExpired.
type SessionError struct {
	Reason Reason
	Err    error // the cause, or nil

	answer error
}

func (e *SessionError) Error() string {
	msg := e.answer.Error() + " (" + string(e.Reason) + ")"
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Is reports whether target is the protocol's answer for e.
func (e *SessionError) Is(target error) bool { return target == e.answer }

func (e *SessionError) Unwrap() error { return e.Err }

var errRIDRequired = errors.New("a rid header is required with SameSite=None cookies")

// Session errors without a cause, made once: the no-token answer is the
// common case of OptionalSession and of a first visit's refresh.
var (
	errNoToken    = &SessionError{Reason: ReasonNoToken, answer: ErrUnauthorized}
	errRevoked    = &SessionError{Reason: ReasonRevoked, answer: ErrUnauthorized}
	errMalformed  = &SessionError{Reason: ReasonMalformed, answer: ErrTryRefreshToken}
	errMissingRID = &SessionError{Reason: ReasonMissingRID, Err: errRIDRequired, answer: ErrTryRefreshToken}

	errRefreshNoToken    = errNoToken
	errRefreshMalformed  = &SessionError{Reason: ReasonMalformed, answer: ErrUnauthorized}
	errRefreshMissingRID = &SessionError{Reason: ReasonMissingRID, Err: errRIDRequired, answer: ErrUnauthorized}
	errRefreshInvalid    = &SessionError{Reason: ReasonInvalid, answer: ErrUnauthorized}
	errUnknownToken      = &SessionError{Reason: ReasonUnknownToken, answer: ErrUnauthorized}
	errSessionExpired    = &SessionError{Reason: ReasonSessionExpired, answer: ErrUnauthorized}
)

// endedError is the refusal of a session that ended for the given reason,
// or expired (an empty reason).
func endedError(why store.EndReason) *SessionError {
	reason := ReasonRevoked
	switch why {
	case "":
		reason = ReasonSessionExpired
	case store.EndSignedOut:
		reason = ReasonSignedOut
	case store.EndPasswordReset:
		reason = ReasonPasswordReset
	case store.EndTokenTheft:
		reason = ReasonTokenTheft
	case store.EndBanned:
		reason = ReasonBanned
	}
	return &SessionError{Reason: reason, answer: ErrUnauthorized}
}

// sessionEnded reports whether err refuses a session that has ended: the
// client's tokens are of no use any more, and are cleared.
func sessionEnded(err error) bool {
	var se *SessionError
	if !errors.As(err, &se) {
		return false
	}
	switch se.Reason {
	case ReasonRevoked, ReasonSignedOut, ReasonPasswordReset, ReasonTokenTheft, ReasonSessionExpired, ReasonBanned:
		return true
	}
	return false
}

// theftError is the answer to a reuse the store has just detected.
func theftError(reuse store.Reuse) *SessionError {
	reason := ReasonTheftStale
	switch reuse {
	case store.ReusePrevious:
		reason = ReasonTheftPrevious
	case store.ReuseAfterWindow:
		reason = ReasonTheftAfterWindow
	}
	return &SessionError{Reason: reason, answer: ErrTokenTheft}
}

// Failures of a request that are not session answers.
var (
	errBodyTooLarge = errors.New("request body too large")
	errOverloaded   = kit.ErrOverloaded
)

// msgUnavailable answers a request the store could not serve because the
// database is out of reach (store.ErrUnavailable).
const msgUnavailable = "service unavailable, try again shortly"

// fail answers an error. It is the one place that maps errors to HTTP;
// clients get a safe message, the log gets the cause.
func (a *Auth) fail(w http.ResponseWriter, r *http.Request, err error) {
	var bad wire.BadRequest
	var refused *ClaimError
	switch {
	case errors.As(err, &bad):
		wire.Message(w, http.StatusBadRequest, string(bad))
	case errors.As(err, &refused):
		var refusals []wire.Refusal
		for _, ce := range claimErrorsOf(err) {
			refusals = append(refusals, wire.Refusal{ID: ce.Claim, Reason: ce.Reason})
		}
		wire.ClaimErrors(w, refusals)
	case errors.Is(err, errBodyTooLarge):
		// Close rather than drain what is left of the body.
		w.Header().Set("Connection", "close")
		wire.Message(w, http.StatusRequestEntityTooLarge, "request body too large")
	case errors.Is(err, ErrUnauthorized):
		a.refuse(w, r, err, "unauthorised")
	case errors.Is(err, ErrTryRefreshToken):
		a.refuse(w, r, err, "try refresh token")
	case errors.Is(err, ErrTokenTheft):
		a.refuse(w, r, err, "token theft detected")
	case errors.Is(err, errOverloaded), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		w.Header().Set("Retry-After", "1")
		wire.Message(w, http.StatusServiceUnavailable, errOverloaded.Error())
	case errors.Is(err, store.ErrUnavailable):
		// The database is down or restarting: nothing was issued, and
		// the same request may succeed in a moment.
		a.cfg.Logger.LogAttrs(r.Context(), slog.LevelWarn, "auth: store unavailable",
			slog.String("path", r.URL.Path), slog.String("error", err.Error()))
		w.Header().Set("Retry-After", "1")
		wire.Message(w, http.StatusServiceUnavailable, msgUnavailable)
	default:
		a.cfg.Logger.LogAttrs(r.Context(), slog.LevelError, "auth: internal error",
			slog.String("path", r.URL.Path), slog.String("error", err.Error()))
		wire.Message(w, http.StatusInternalServerError, "internal error")
	}
}

// claimErrorsOf are the claim errors in err, in order: err itself, or
// those errors.Join put together.
func claimErrorsOf(err error) []*ClaimError {
	if ce, ok := err.(*ClaimError); ok {
		return []*ClaimError{ce}
	}
	var out []*ClaimError
	switch u := err.(type) {
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			out = append(out, claimErrorsOf(e)...)
		}
	case interface{ Unwrap() error }:
		out = claimErrorsOf(u.Unwrap())
	}
	return out
}

// failSession answers a request whose session could not be used, and
// clears the tokens of one that has ended (errRevoked included), so that
// the client stops sending them.
func (a *Auth) failSession(w http.ResponseWriter, r *http.Request, err error) {
	if sessionEnded(err) {
		a.clearTokens(w, true, true)
	}
	a.fail(w, r, err)
}

// refuse answers a 401 with the protocol's message and, beside it, the
// reason, and counts the refusal.
func (a *Auth) refuse(w http.ResponseWriter, r *http.Request, err error, msg string) {
	reason := ReasonNoToken
	var se *SessionError
	if errors.As(err, &se) {
		reason = se.Reason
	}
	a.emit(r.Context(), r, Event{Kind: EventSessionRefused, Reason: reason})
	w.Header().Set(ReasonHeader, string(reason))
	wire.JSON(w, http.StatusUnauthorized, struct {
		Message string `json:"message"`
		Reason  Reason `json:"reason"`
	}{msg, reason})

}

// recoverPanic, deferred, turns a panic below the handler (a Store or
// hook that panics) into a 500, so the client gets an answer and the
// cause is logged.
func (a *Auth) recoverPanic(w http.ResponseWriter, r *http.Request) {
	if v := recover(); v != nil {
		a.answerPanic(w, r, v)
	}
}

// answerPanic answers a recovered panic. http.ErrAbortHandler keeps its
// meaning.
func (a *Auth) answerPanic(w http.ResponseWriter, r *http.Request, v any) {
	if v == http.ErrAbortHandler {
		panic(v)
	}
	// The type only: a panic value may quote a token.
	a.cfg.Logger.LogAttrs(r.Context(), slog.LevelError, "auth: panic",
		slog.String("path", r.URL.Path), slog.String("type", fmt.Sprintf("%T", v)))
	wire.Message(w, http.StatusInternalServerError, "internal error")
}

// errAnswered reports that the response has been written already.
var errAnswered = errors.New("auth: answered")
