package wire

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// Each answer is the exact body the SDKs read.
func TestAnswers(t *testing.T) {
	yes, no := true, false
	for _, c := range []struct {
		write  func(http.ResponseWriter)
		status int
		body   string
	}{
		{func(w http.ResponseWriter) { JSON(w, http.StatusOK, OK) }, 200, `{"status":"OK"}`},
		{func(w http.ResponseWriter) { Message(w, http.StatusUnauthorized, "try refresh token") }, 401, `{"message":"try refresh token"}`},
		{func(w http.ResponseWriter) { Status(w, "EMAIL_ALREADY_VERIFIED_ERROR") }, 200, `{"status":"EMAIL_ALREADY_VERIFIED_ERROR"}`},
		{func(w http.ResponseWriter) { GeneralError(w, "Try again.") }, 200, `{"status":"GENERAL_ERROR","message":"Try again."}`},
		{func(w http.ResponseWriter) { NotAllowed(w, "SIGN_IN_NOT_ALLOWED", "ERR_CODE_1") }, 200,
			`{"status":"SIGN_IN_NOT_ALLOWED","reason":"ERR_CODE_1"}`},
		{func(w http.ResponseWriter) {
			ClaimError(w, "st-ev", ClaimReason{Message: "wrong value", ExpectedValue: &yes, ActualValue: &no})
		}, 403, `{"message":"invalid claim","claimValidationErrors":[{"id":"st-ev","reason":{"message":"wrong value","expectedValue":true,"actualValue":false}}]}`},
		{func(w http.ResponseWriter) { ClaimError(w, "st-mfa", "Not allowed") }, 403,
			`{"message":"invalid claim","claimValidationErrors":[{"id":"st-mfa","reason":"Not allowed"}]}`},
	} {
		rec := httptest.NewRecorder()
		c.write(rec)
		if rec.Code != c.status || rec.Body.String() != c.body || rec.Header().Get("Content-Type") != "application/json" {
			t.Errorf("%d %s (%s), want %d %s", rec.Code, rec.Body, rec.Header().Get("Content-Type"), c.status, c.body)
		}
	}
}

// TooMany rounds the wait up to whole seconds, so a client that waits as
// told is not refused again.
func TestTooMany(t *testing.T) {
	for wait, want := range map[time.Duration]string{time.Millisecond: "1", time.Second: "1", 1001 * time.Millisecond: "2"} {
		rec := httptest.NewRecorder()
		TooMany(rec, wait)
		if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != want || !strings.Contains(rec.Body.String(), "too many") {
			t.Errorf("TooMany(%v): %d Retry-After %q, want 429 %q", wait, rec.Code, rec.Header().Get("Retry-After"), want)
		}
	}
}
