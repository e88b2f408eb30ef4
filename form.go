package auth

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"unicode/utf8"

	"github.com/latchkit/auth/internal/kit"
	"github.com/latchkit/auth/internal/wire"
)

// readJSON decodes the body of r into v. It refuses bodies over the
// configured size, anything that is not one JSON value, and trailing data.
// Unknown keys are ignored: the SuperTokens SDKs send some.
func (a *Auth) readJSON(w http.ResponseWriter, r *http.Request, v any) error {
	return a.decodeBody(w, r, v, false)
}

// readOptionalJSON is readJSON for endpoints whose body may be empty, as
// the SDKs send it when they have nothing to say; v is then untouched.
func (a *Auth) readOptionalJSON(w http.ResponseWriter, r *http.Request, v any) error {
	return a.decodeBody(w, r, v, true)
}

func (a *Auth) decodeBody(w http.ResponseWriter, r *http.Request, v any, mayBeEmpty bool) error {
	if err := a.capBody(w, r); err != nil {
		return err
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		if bodyTooLarge(err) {
			return errBodyTooLarge
		}
		return wire.BadRequest("could not read the request body")
	}
	if len(bytes.TrimSpace(body)) == 0 {
		if mayBeEmpty {
			return nil
		}
		return wire.BadRequest("the request body must be a JSON object")
	}
	if !utf8.Valid(body) {
		return wire.BadRequest("the request body is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(v); err != nil {
		return wire.BadRequest("the request body must be a JSON object")
	}
	if _, err := dec.Token(); err != io.EOF {
		return wire.BadRequest("unexpected data after the JSON object")
	}
	return nil
}

// capBody refuses, unread, a body declared larger than MaxBodyBytes, and
// makes reading past it fail with an error bodyTooLarge recognises.
func (a *Auth) capBody(w http.ResponseWriter, r *http.Request) error {
	if r.ContentLength > a.cfg.MaxBodyBytes {
		return errBodyTooLarge
	}
	r.Body = http.MaxBytesReader(w, r.Body, a.cfg.MaxBodyBytes)
	return nil
}

// bodyTooLarge reports an error of reading past capBody's limit.
func bodyTooLarge(err error) bool {
	var tooLarge *http.MaxBytesError
	return errors.As(err, &tooLarge)
}

// readSignInRequest reads the JSON body of a passwordless or passkey
// request into req, or answers the request itself and reports false.
func (a *Auth) readSignInRequest(w http.ResponseWriter, r *http.Request, req kit.SignInRequest) bool {
	err := a.readJSON(w, r, req)
	if raw := req.Linking(); err == nil && raw != nil && string(raw) != "null" {
		var b bool
		if json.Unmarshal(raw, &b) != nil {
			err = wire.BadRequest("shouldTryLinkingWithSessionUser must be a boolean")
		}
	}
	if err != nil {
		a.fail(w, r, err)
		return false
	}
	return true
}

// lookupParam reads the one query parameter of an exists endpoint, and
// spends a lookup of the client's allowance, or answers the request
// itself and reports false.
func (a *Auth) lookupParam(w http.ResponseWriter, r *http.Request, name string) (string, bool) {
	q := r.URL.Query()
	if len(q[name]) != 1 {
		wire.Message(w, http.StatusBadRequest, "Please provide the "+name+" as a GET param")
		return "", false
	}
	perClient := limit{kit.LimitKey("exists-client", a.limitClient(r)), a.cfg.RateLimits.ClientEmailChecks}
	if wait := a.take(r.Context(), perClient); wait > 0 {
		wire.TooMany(w, wait)
		return "", false
	}
	return q.Get(name), true
}
