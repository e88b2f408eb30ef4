package authtest

import (
	"encoding/base32"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/latchkit/auth/internal/totp"
)

// TOTPCode returns the code an authenticator app shows at t for a TOTP
// secret as the server hands it out (the "secret" of CreateTOTPDevice's
// answer: base32, as in the QR code's URI): 6 digits, 30-second steps.
// The server accepts each 30-second step once per user, so a test that
// needs a second code advances the server's Clock first.
func TOTPCode(secret string, t time.Time) string {
	key, err := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(strings.ToUpper(secret))
	if err != nil {
		panic("authtest: TOTPCode: the secret is not base32: " + err.Error())
	}
	return totp.Code(key, totp.Step(t, 30*time.Second), 6)
}

// MFAInfo asks what the session must still complete and what its user
// may set up (PUT /mfa/info), as the SDKs do when a route answers 403
// st-mfa; the answer also brings the session's claim up to date.
func (c *Client) MFAInfo() *Response {
	c.tb.Helper()
	return c.do(http.MethodPut, c.path("/mfa/info"), nil, "multifactorauth", c.AccessToken)
}

// CreateTOTPDevice adds an authenticator app for the session's user, not
// set up until VerifyTOTPDevice: the answer has its "deviceName",
// "secret" and "qrCodeString". An empty name lets the server choose one.
func (c *Client) CreateTOTPDevice(name string) *Response {
	c.tb.Helper()
	body := map[string]string{}
	if name != "" {
		body["deviceName"] = name
	}
	b, _ := json.Marshal(body)
	return c.do(http.MethodPost, c.path("/totp/device"), b, "totp", c.AccessToken)
}

// VerifyTOTPDevice sets up a device with a code of it, and completes TOTP
// in the session.
func (c *Client) VerifyTOTPDevice(name, code string) *Response {
	c.tb.Helper()
	b, _ := json.Marshal(map[string]string{"deviceName": name, "totp": code})
	return c.do(http.MethodPost, c.path("/totp/device/verify"), b, "totp", c.AccessToken)
}

// VerifyTOTP completes TOTP in the session with a code of any device the
// user has set up.
func (c *Client) VerifyTOTP(code string) *Response {
	c.tb.Helper()
	b, _ := json.Marshal(map[string]string{"totp": code})
	return c.do(http.MethodPost, c.path("/totp/verify"), b, "totp", c.AccessToken)
}

// SetUpTOTP adds an authenticator app for the session's user and sets it
// up with its current code (at the server's clock), which also completes
// TOTP in the session, and returns the device's secret for TOTPCode. The
// server must offer TOTP (Config.MFA).
func (c *Client) SetUpTOTP() (secret string) {
	c.tb.Helper()
	res := c.CreateTOTPDevice("")
	secret, _ = res.JSON["secret"].(string)
	name, _ := res.JSON["deviceName"].(string)
	if res.Status != "OK" || secret == "" {
		c.tb.Fatalf("authtest: totp/device answered %d %s", res.StatusCode, res.Body)
	}
	if res := c.VerifyTOTPDevice(name, TOTPCode(secret, c.srv.AuthConfig.Now())); res.Status != "OK" {
		c.tb.Fatalf("authtest: totp/device/verify answered %d %s", res.StatusCode, res.Body)
	}
	return secret
}

// CompleteTOTP completes TOTP in the session with the current code (at
// the server's clock) of a device set up with secret.
func (c *Client) CompleteTOTP(secret string) *Response {
	c.tb.Helper()
	return c.VerifyTOTP(TOTPCode(secret, c.srv.AuthConfig.Now()))
}

// NewRecoveryCodes asks for a new set of recovery codes (the answer's
// "codes"), which voids the old set.
func (c *Client) NewRecoveryCodes() *Response {
	c.tb.Helper()
	return c.do(http.MethodPost, c.path("/mfa/recovery-codes"), []byte("{}"), "multifactorauth", c.AccessToken)
}

// UseRecoveryCode completes the session's second factor with a recovery
// code.
func (c *Client) UseRecoveryCode(code string) *Response {
	c.tb.Helper()
	b, _ := json.Marshal(map[string]string{"code": code})
	return c.do(http.MethodPost, c.path("/mfa/recovery-code/verify"), b, "multifactorauth", c.AccessToken)
}
