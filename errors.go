package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

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

// A Reason says why a session was refused.
type Reason string

// The reasons of a SessionError.
const (
	ReasonNoToken      Reason = "no_token"      // the request carries no token
	ReasonMalformed    Reason = "malformed"     // the token is not one we could have issued
	ReasonExpired      Reason = "expired"       // the access token has expired
	ReasonInvalid      Reason = "invalid"       // signature, key, issuer or claims refused
	ReasonMissingRID   Reason = "missing_rid"   // SameSite=None cookies came without a rid header
	ReasonRevoked      Reason = "revoked"       // the session has ended (seen with CheckSessionInStore)
	ReasonUnknownToken Reason = "unknown_token" // a refresh token of no live session
	ReasonTokenTheft   Reason = "token_theft"   // a superseded refresh token came back
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
	errUnknownToken      = &SessionError{Reason: ReasonUnknownToken, answer: ErrUnauthorized}
	errTokenTheft        = &SessionError{Reason: ReasonTokenTheft, answer: ErrTokenTheft}
)

// Failures of a request that are not session answers.
var (
	errBodyTooLarge = errors.New("request body too large")
	errOverloaded   = errors.New("too many requests, try again shortly")
)

// badRequest is malformed input, answered 400 with its message.
type badRequest string

func (e badRequest) Error() string { return string(e) }

// fail answers an error. It is the one place that maps errors to HTTP;
// clients get a safe message, the log gets the cause.
func (a *Auth) fail(w http.ResponseWriter, r *http.Request, err error) {
	var bad badRequest
	switch {
	case errors.As(err, &bad):
		writeMessage(w, http.StatusBadRequest, string(bad))
	case errors.Is(err, errBodyTooLarge):
		// Close rather than drain what is left of the body.
		w.Header().Set("Connection", "close")
		writeMessage(w, http.StatusRequestEntityTooLarge, "request body too large")
	case errors.Is(err, ErrUnauthorized):
		writeMessage(w, http.StatusUnauthorized, "unauthorised")
	case errors.Is(err, ErrTryRefreshToken):
		writeMessage(w, http.StatusUnauthorized, "try refresh token")
	case errors.Is(err, ErrTokenTheft):
		writeMessage(w, http.StatusUnauthorized, "token theft detected")
	case errors.Is(err, errOverloaded), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		w.Header().Set("Retry-After", "1")
		writeMessage(w, http.StatusServiceUnavailable, errOverloaded.Error())
	default:
		a.cfg.Logger.LogAttrs(r.Context(), slog.LevelError, "auth: internal error",
			slog.String("path", r.URL.Path), slog.String("error", err.Error()))
		writeMessage(w, http.StatusInternalServerError, "internal error")
	}
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
	writeMessage(w, http.StatusInternalServerError, "internal error")
}

func writeMessage(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, struct {
		Message string `json:"message"`
	}{msg})
}

// writeGeneralError answers 200 with the SDKs' GENERAL_ERROR, whose
// message the prebuilt UI shows the user as it is.
func writeGeneralError(w http.ResponseWriter, msg string) {
	writeJSON(w, http.StatusOK, struct {
		Status  string `json:"status"`
		Message string `json:"message"`
	}{"GENERAL_ERROR", msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		// Only our own types reach here; none fails to marshal.
		panic(err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}

// errAnswered reports that the response has been written already.
var errAnswered = errors.New("auth: answered")

var statusOK = struct {
	Status string `json:"status"`
}{"OK"}
