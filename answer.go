package auth

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/latchkit/auth/store"
)

// The protocol's answers, shared by every feature: one home for the
// shapes the SDKs read.

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

func writeStatus(w http.ResponseWriter, status string) {
	writeJSON(w, http.StatusOK, struct {
		Status string `json:"status"`
	}{status})
}

// writeNotAllowed refuses a sign-up or sign-in for account linking's
// sake, with the SDKs' status and reason.
func writeNotAllowed(w http.ResponseWriter, status, reason string) {
	writeJSON(w, http.StatusOK, struct {
		Status string `json:"status"`
		Reason string `json:"reason"`
	}{status, reason})
}

// writeMFAPending answers 403 to a session that has not met its MFA
// requirement, as the SDKs' claim validators do.
func writeMFAPending(w http.ResponseWriter) {
	writeClaimError(w, errMFAPending.claim, errMFAPending.reason)
}

// errMFAPending is the refusal of a session that has not met its MFA
// requirement.
var errMFAPending = &claimFailure{"st-mfa", claimReason{Message: "MFA requirement for auth is not satisfied"}}

// claimReason is the reason of a failed claim in a 403 "invalid claim".
type claimReason struct {
	Message       string `json:"message"`
	ExpectedValue *bool  `json:"expectedValue,omitempty"`
	ActualValue   *bool  `json:"actualValue,omitempty"`
	FactorID      string `json:"factorId,omitempty"`
}

// writeClaimError answers 403 with the SDKs' "invalid claim" body.
func writeClaimError(w http.ResponseWriter, claim string, reason any) {
	type claimError struct {
		ID     string `json:"id"`
		Reason any    `json:"reason"`
	}
	writeJSON(w, http.StatusForbidden, struct {
		Message string       `json:"message"`
		Errors  []claimError `json:"claimValidationErrors"`
	}{"invalid claim", []claimError{{claim, reason}}})
}

// tooMany answers a throttled request: 429 with Retry-After in whole
// seconds. The answer does not depend on whether the account exists.
func tooMany(w http.ResponseWriter, wait time.Duration) {
	w.Header().Set("Retry-After", strconv.Itoa(int((wait+time.Second-1)/time.Second)))
	writeMessage(w, http.StatusTooManyRequests, "too many attempts, try again later")
}

// answerExists answers an exists endpoint with what found reports, or
// false without asking for an address that is not well-formed.
func (a *Auth) answerExists(w http.ResponseWriter, r *http.Request, valid bool, found func(context.Context) (bool, error)) {
	exists := false
	if valid {
		var err error
		if exists, err = found(r.Context()); err != nil {
			a.fail(w, r, err)
			return
		}
	}
	writeJSON(w, http.StatusOK, struct {
		Status string `json:"status"`
		Exists bool   `json:"exists"`
	}{"OK", exists})
}

// writeExists answers an exists endpoint: whether the login with key
// exists, which for an address that is not well-formed (valid false) it
// does not.
func (a *Auth) writeExists(w http.ResponseWriter, r *http.Request, key store.LoginKey, valid bool) {
	a.answerExists(w, r, valid, func(ctx context.Context) (bool, error) {
		_, err := a.store.Login(ctx, key)
		if errors.Is(err, store.ErrNotFound) {
			return false, nil
		}
		return err == nil, err
	})
}
