package main

import (
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/latchkit/auth/authtest"
)

// passkeyDemo is a demo started with args whose page is on localhost, so
// that passkeys work, and the authenticator that stands in for a user's.
func passkeyDemo(t *testing.T, args ...string) (*testDemo, *authtest.Authenticator) {
	t.Helper()
	d := newTestDemo(t, func(o *options) {
		// The port is known only now.
		_, port, _ := net.SplitHostPort(o.addr)
		o.appURL = "http://localhost:" + port
	}, args...)
	return d, authtest.NewAuthenticator(d.o.appURL)
}

// registerFactor registers key for the user of the session access as the
// SDKs' MFA screen does, and returns the session's new access token.
func (d *testDemo) registerFactor(key *authtest.Authenticator, access, email string) string {
	d.t.Helper()
	reg := d.do("POST", "/auth/webauthn/options/register", "webauthn", access, map[string]any{"email": email})
	cred, err := key.Register(reg.body)
	if err != nil {
		d.t.Fatalf("register options %d %s: %v", reg.status, reg.body, err)
	}
	r := d.do("POST", "/auth/webauthn/signup", "webauthn", access, map[string]any{
		"webauthnGeneratedOptionsId": reg.field("webauthnGeneratedOptionsId"), "credential": json.RawMessage(cred),
		"shouldTryLinkingWithSessionUser": true,
	})
	if r.status != http.StatusOK || r.field("status") != "OK" || r.header.Get("st-access-token") == "" {
		d.t.Fatalf("passkey as a second factor: %d %s", r.status, r.body)
	}
	return r.header.Get("st-access-token")
}

// assertFactor completes the passkey in the session access, as the SDKs'
// MFA screen does, and returns the session's new access token.
func (d *testDemo) assertFactor(key *authtest.Authenticator, access string) string {
	d.t.Helper()
	opts := d.do("POST", "/auth/webauthn/options/signin", "webauthn", access, nil)
	cred, err := key.Assert(opts.body)
	if err != nil {
		d.t.Fatalf("sign-in options %d %s: %v", opts.status, opts.body, err)
	}
	r := d.do("POST", "/auth/webauthn/signin", "webauthn", access, map[string]any{
		"webauthnGeneratedOptionsId": opts.field("webauthnGeneratedOptionsId"), "credential": json.RawMessage(cred),
		"shouldTryLinkingWithSessionUser": true,
	})
	if r.status != http.StatusOK || r.field("status") != "OK" {
		d.t.Fatalf("the passkey as the second factor: %d %s", r.status, r.body)
	}
	return r.header.Get("st-access-token")
}

// verifyEmail asks for the verification link of the session access's
// address, email, and opens it.
func (d *testDemo) verifyEmail(access, email string) {
	d.t.Helper()
	if r := d.do("POST", "/auth/user/email/verify/token", "emailverification", access, nil); r.field("status") != "OK" {
		d.t.Fatalf("verification email: %d %s", r.status, r.body)
	}
	tok := d.verificationLink(email).Query().Get("token")
	if r := d.do("POST", "/auth/user/email/verify", "emailverification", "", map[string]any{"method": "token", "token": tok}); r.field("status") != "OK" {
		d.t.Fatalf("verification: %d %s", r.status, r.body)
	}
}

func (d *testDemo) passwordSession(path, email string) string {
	d.t.Helper()
	access, _ := okSession(d.t, path, d.do("POST", path, "emailpassword", "", json.RawMessage(authtest.Credentials(email, authtest.Password))))
	return access
}

// With -dev, MFA is each user's choice, as the demo says at start: a user
// who sets up a passkey on the MFA screen is asked for it at the next
// password sign-in, and /api/me opens only once it is given.
func TestDevPasskeyFactorAskedFor(t *testing.T) {
	d, key := passkeyDemo(t, "-dev")
	const email = "kay@example.com"
	access := d.passwordSession("/auth/signup", email)
	// A passkey waits for the address to be verified: until then the
	// set-up is refused as the SDKs' email verification claim is.
	reg := d.do("POST", "/auth/webauthn/options/register", "webauthn", access, map[string]any{"email": email})
	cred, err := key.Register(reg.body)
	if err != nil {
		t.Fatalf("register options %d %s: %v", reg.status, reg.body, err)
	}
	r := d.do("POST", "/auth/webauthn/signup", "webauthn", access, map[string]any{
		"webauthnGeneratedOptionsId": reg.field("webauthnGeneratedOptionsId"), "credential": json.RawMessage(cred),
		"shouldTryLinkingWithSessionUser": true,
	})
	if r.status != http.StatusForbidden || !strings.Contains(string(r.body), `"id":"st-ev"`) {
		t.Fatalf("a passkey at an unverified address: %d %s, want 403 st-ev", r.status, r.body)
	}
	d.verifyEmail(access, email)
	access = d.registerFactor(key, access, email)
	if me := d.do("GET", "/api/me", "", access, nil); me.status != http.StatusOK {
		t.Fatalf("/api/me of the session that set up the passkey: %d %s", me.status, me.body)
	}

	access = d.passwordSession("/auth/signin", email)
	if me := d.do("GET", "/api/me", "", access, nil); me.status != http.StatusForbidden || !strings.Contains(string(me.body), "st-mfa") {
		t.Fatalf("/api/me after the password alone: %d %s, want 403 st-mfa", me.status, me.body)
	}
	info := d.do("PUT", "/auth/mfa/info", "multifactorauth", access, nil)
	if next, _ := info.json["factors"].(map[string]any)["next"].([]any); len(next) != 1 || next[0] != "webauthn" {
		t.Fatalf("/auth/mfa/info: %s, want next [webauthn]", info.body)
	}
	access = d.assertFactor(key, access)
	if me := d.do("GET", "/api/me", "", access, nil); me.status != http.StatusOK || me.field("email") != email {
		t.Errorf("/api/me after the passkey: %d %s", me.status, me.body)
	}
}

// Where the demo requires a second factor (-mfa totp,webauthn), the
// account page refuses to unlink the passkey that is a user's only one:
// 409 with the reason, as the SDK's route refuses it.
func TestAccountKeepsLastFactor(t *testing.T) {
	d, key := passkeyDemo(t, "-passkeys", "-mfa", "totp,webauthn", "-app-url", "http://localhost")
	const email = "lee@example.com"
	access := d.registerFactor(key, d.passwordSession("/auth/signup", email), email)
	v := d.do("GET", "/api/account", "", access, nil)
	var account accountView
	if err := json.Unmarshal(v.body, &account); err != nil || v.status != http.StatusOK {
		t.Fatalf("GET /api/account: %d %s", v.status, v.body)
	}
	var passkeyLogin string
	for _, l := range account.Logins {
		if l.Method == "webauthn" {
			passkeyLogin = l.ID
		}
	}
	if passkeyLogin == "" {
		t.Fatalf("no passkey among the logins: %s", v.body)
	}
	r := d.do("POST", "/api/account/logins/"+passkeyLogin+"/unlink", "", access, nil)
	if r.status != http.StatusConflict || !strings.Contains(r.field("message"), "last second factor") {
		t.Fatalf("unlinking the only second factor: %d %s, want 409 with the reason", r.status, r.body)
	}
	access = d.passwordSession("/auth/signin", email)
	if r := d.do("POST", "/auth/totp/device", "totp", access, map[string]any{"deviceName": "thief"}); r.status != http.StatusForbidden {
		t.Errorf("a password-only session sets up TOTP: %d %s, want 403", r.status, r.body)
	}
	if me := d.do("GET", "/api/me", "", d.assertFactor(key, access), nil); me.status != http.StatusOK {
		t.Errorf("/api/me with the passkey kept: %d %s", me.status, me.body)
	}
}
