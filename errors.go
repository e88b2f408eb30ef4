package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
)

// Errors of the Go API. Over HTTP they are the 401 answers of the protocol.
var (
	// ErrUnauthorized: the request carries no session, or its session has
	// ended.
	ErrUnauthorized = errors.New("auth: unauthorised")
	// ErrTryRefreshToken: the access token is expired or invalid; the
	// client should refresh and retry.
	ErrTryRefreshToken = errors.New("auth: try refresh token")
	// ErrTokenTheft: a refresh token was used twice; its session has been
	// revoked.
	ErrTokenTheft = errors.New("auth: token theft detected")
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
