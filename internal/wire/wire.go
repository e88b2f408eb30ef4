// Package wire writes the answers of the SuperTokens frontend driver
// interface that every feature shares: the JSON shapes the SDKs read,
// in one home, so that a feature cannot answer in a shape of its own.
package wire

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/latchkit/auth/internal/address"
)

// OK is the body of a plain success: {"status":"OK"}.
var OK = struct {
	Status string `json:"status"`
}{"OK"}

// JSON answers status with v encoded. Only the library's own types reach
// it, and none fails to encode: a failure is a bug, and panics.
func JSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}

// Message answers status with {"message": msg}, the shape of the
// protocol's errors outside a 200.
func Message(w http.ResponseWriter, status int, msg string) {
	JSON(w, status, struct {
		Message string `json:"message"`
	}{msg})
}

// Status answers 200 with {"status": status}.
func Status(w http.ResponseWriter, status string) {
	JSON(w, http.StatusOK, struct {
		Status string `json:"status"`
	}{status})
}

// GeneralError answers 200 with the SDKs' GENERAL_ERROR, whose message
// the prebuilt UI shows the user as it is.
func GeneralError(w http.ResponseWriter, msg string) {
	JSON(w, http.StatusOK, struct {
		Status  string `json:"status"`
		Message string `json:"message"`
	}{"GENERAL_ERROR", msg})
}

// NotAllowed refuses a sign-up or sign-in for account linking's sake,
// with the SDKs' status and reason.
func NotAllowed(w http.ResponseWriter, status, reason string) {
	JSON(w, http.StatusOK, struct {
		Status string `json:"status"`
		Reason string `json:"reason"`
	}{status, reason})
}

// ClaimReason is the reason of a failed claim in a 403 "invalid claim".
type ClaimReason struct {
	Message       string `json:"message"`
	ExpectedValue *bool  `json:"expectedValue,omitempty"`
	ActualValue   *bool  `json:"actualValue,omitempty"`
	FactorID      string `json:"factorId,omitempty"`
}

// ClaimError answers 403 with the SDKs' "invalid claim" body, which their
// claim validators read. The reason is a ClaimReason, or a string where
// the SDKs' own backends send one.
func ClaimError(w http.ResponseWriter, claim string, reason any) {
	ClaimErrors(w, []Refusal{{claim, reason}})
}

// A Refusal is one entry of an "invalid claim" body: a claim and why it
// refused.
type Refusal struct {
	ID     string `json:"id"`
	Reason any    `json:"reason"`
}

// ClaimErrors answers 403 with the "invalid claim" body of several
// refusals, one entry each, as the SDKs' backends list every validator
// that failed.
func ClaimErrors(w http.ResponseWriter, refusals []Refusal) {
	JSON(w, http.StatusForbidden, struct {
		Message string    `json:"message"`
		Errors  []Refusal `json:"claimValidationErrors"`
	}{"invalid claim", refusals})
}

// TooMany answers a throttled request: 429 with Retry-After in whole
// seconds, rounded up. The answer does not depend on whether an account
// exists.
func TooMany(w http.ResponseWriter, wait time.Duration) {
	w.Header().Set("Retry-After", strconv.Itoa(int((wait+time.Second-1)/time.Second)))
	Message(w, http.StatusTooManyRequests, "too many attempts, try again later")
}

// BadRequest is malformed input, answered 400 with its message.
type BadRequest string

func (e BadRequest) Error() string { return string(e) }

// TokenField reads the "token" of a request that uses up a token sent by
// email, with the SDKs' messages for a missing or non-string one; what
// names the token ("password reset").
func TokenField(req map[string]json.RawMessage, what string) (string, error) {
	raw, ok := req["token"]
	if !ok || string(raw) == "null" {
		return "", BadRequest("Please provide the " + what + " token")
	}
	var tok string
	if err := json.Unmarshal(raw, &tok); err != nil {
		return "", BadRequest("The " + what + " token must be a string")
	}
	return tok, nil
}

// LinkWithToken adds a token and the tenant to a page's URL, as the SDKs'
// pages read them.
func LinkWithToken(page, tok, tenant string) string {
	// The token is URL-safe base64, a tenant id letters, digits and
	// dashes: nothing to escape.
	return WithQuery(page, "token="+tok+"&tenantId="+tenant)
}

// WithQuery adds query parameters, already escaped, to a page's URL,
// which may have a query of its own.
func WithQuery(page, query string) string {
	if strings.Contains(page, "?") {
		return page + "&" + query
	}
	return page + "?" + query
}

// The validation messages of email fields are the translation keys of the
// SuperTokens UI components: they must stay byte-identical.
const (
	MsgFieldNotOptional = "Field is not optional"
	MsgEmailInvalid     = "Email is invalid"
)

// CheckEmail returns the field error for a normalised email, or "" for
// one that address.Valid accepts.
func CheckEmail(email string) string {
	switch {
	case email == "":
		return MsgFieldNotOptional
	case !address.Valid(email):
		return MsgEmailInvalid
	}
	return ""
}

// MaxParamLen caps the strings a request names things by (an id, a
// provider's parameter, a code), where the protocol sets no bound of its
// own.
const MaxParamLen = 2048

// The SDKs' MFA answers that more than one feature gives.
const (
	// MsgSetupNotAllowed is the 403 reason for a factor set up by a
	// session that must complete another first, as the SuperTokens
	// backends word it.
	MsgSetupNotAllowed = "Not allowed to setup factor that is not in the next set of unsatisfied factors"
	// MsgLastFactor answers the removal of the last second factor of a
	// user whom MFA requires one of.
	MsgLastFactor = "This is your last second factor: set up another before you remove it."
)

// MFAPendingReason is the reason of a 403 to a session that has not met
// its MFA requirement.
var MFAPendingReason = ClaimReason{Message: "MFA requirement for auth is not satisfied"}

// MFAPending answers 403 to a session that has not met its MFA
// requirement, as the SDKs' claim validators do.
func MFAPending(w http.ResponseWriter) { ClaimError(w, "st-mfa", MFAPendingReason) }
