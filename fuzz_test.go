package auth_test

// Fuzz targets for the decoders of attacker input: request bodies, bearer
// tokens and cookies, the /signinup body and its PKCE verifier, the
// form_post callback, the email verification token, the passwordless
// consume body, passkey credentials, and the bodies of the TOTP and
// recovery-code checks (the st-mfa claim of a token is
// fuzz_mfa_internal_test.go's). Under plain go test
// they run their seeds; run one with
//
//	go test -run '^$' -fuzz FuzzSignIn -fuzztime 1m .
//
// The handler is called directly, so a panic is a crash the fuzzer reports,
// and header values can hold any bytes. The seeds are the cases of
// input_test.go and input_endpoints_test.go (malformedBodies,
// acceptedBodies, hostileCredentials, forgeries, garbageBodies), so a case
// added there seeds the fuzzer too; the fixtures they run on are in
// harness_test.go and input_endpoints_test.go.
//
// A fuzzing worker is a process of its own, with its own keys: a verifier
// or token issued while the seeds were made is not one it issued. The
// targets that need one name it in their inputs ({verifier}, {issued}),
// and put in the one their process was issued.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/mailer"
	"github.com/latchkit/auth/store"
)

// fuzzReply serves one request and decodes the answer, which must be a JSON
// object whatever the request.
func fuzzReply(t *testing.T, f *inFixture, req *http.Request) inReply {
	t.Helper()
	rec := httptest.NewRecorder()
	f.Mux.ServeHTTP(rec, req)
	r := inReply{code: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
	if err := json.Unmarshal(r.body, &r.json); err != nil {
		t.Fatalf("%s %s: %d, body %q is not a JSON object", req.Method, req.URL.Path, r.code, r.body)
	}
	r.message, _ = r.json["message"].(string)
	r.status, _ = r.json["status"].(string)
	if r.code >= 500 {
		t.Fatalf("%s %s: %d %s", req.Method, req.URL.Path, r.code, r.body)
	}
	return r
}

func FuzzSignIn(f *testing.F) { fuzzCredentials(f, "signin") }
func FuzzSignUp(f *testing.F) { fuzzCredentials(f, "signup") }

func fuzzCredentials(f *testing.F, ep string) {
	// Fuzzing sends far more failed sign-ins than any limit allows.
	fx := newInFixture(f, auth.Config{RateLimits: auth.RateLimits{
		SignInFailures:       auth.Rate{Burst: 1 << 30, Every: time.Nanosecond},
		ClientSignInFailures: auth.Rate{Burst: 1 << 30, Every: time.Nanosecond},
		ClientNewPasswords:   auth.Rate{Burst: 1 << 30, Every: time.Nanosecond},
		// The fuzzer signs in as one user at a rate no person reaches.
		AccountSignInFailures: auth.Rate{Burst: 1 << 30, Every: time.Nanosecond},
	}})
	_, known := fx.SignedIn(authtest.Header)
	for _, email := range []string{known.Email, "fuzz@example.com"} {
		for _, tc := range append(malformedBodies(), acceptedBodies()...) {
			if b := tc.body(email, authtest.Password); len(b) <= 20<<10 {
				f.Add([]byte(b))
			}
		}
	}
	f.Add([]byte(credBody(known.Email, "wrong password 1")))
	f.Add([]byte(`{"formFields":[{"id":"email","value":"\u0000@a.bc"},{"id":"password","value":"\ud800"}]}`))

	f.Fuzz(func(t *testing.T, body []byte) {
		before := fx.store.writes.Load()
		req := httptest.NewRequest("POST", "/auth/"+ep, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		r := fuzzReply(t, fx, req)
		switch {
		case r.code == http.StatusBadRequest || r.code == http.StatusRequestEntityTooLarge:
			if r.message == "" {
				t.Fatalf("%d without a message: %s", r.code, r.body)
			}
		case r.code == http.StatusOK && slices.Contains([]string{"FIELD_ERROR", "WRONG_CREDENTIALS_ERROR"}, r.status):
		case r.code == http.StatusOK && r.status == "OK":
			user, _ := r.json["user"].(map[string]any)
			id, _ := user["id"].(string)
			emails, _ := user["emails"].([]any)
			if len(emails) != 1 {
				t.Fatalf("OK without the user's email: %s", r.body)
			}
			email, _ := emails[0].(string)
			if ep == "signin" && id != known.ID {
				t.Fatalf("signed in as %q, not the only user with a password", id)
			}
			// What was stored is a clean, normalised email.
			if email != strings.ToLower(strings.TrimSpace(email)) || !utf8.ValidString(email) ||
				strings.ContainsFunc(email, unicode.IsControl) || len(email) > 256 {
				t.Fatalf("accepted email %q", email)
			}
			if u, err := fx.Auth.UserByEmail(t.Context(), email); err != nil || u.ID != id {
				t.Fatalf("user of %q: %v %v", email, u, err)
			}
			return
		default:
			t.Fatalf("got %d %s, want 200, 400 or 413", r.code, r.body)
		}
		wantNoTokens(t, r.response())
		if n := fx.store.writes.Load() - before; n != 0 {
			t.Fatalf("%d store writes for a refused request", n)
		}
	})
}

// credentialFixture signs a user in and lets every access token it issued
// expire, so no seed the fuzzer mutates is a valid credential, and returns
// seeds: the expired access token, forgeries, refresh-shaped tokens.
func credentialFixture(f *testing.F) (*inFixture, []string) {
	fx := newInFixture(f, auth.Config{})
	c, _ := fx.SignedIn(authtest.Header)
	access, _ := c.Tokens()
	g := newForger(f, fx, access)
	seeds := []string{access, "", "a.b.c", strings.Repeat("A", 5000),
		base64.RawURLEncoding.EncodeToString(make([]byte, 32))}
	for _, tok := range forgeries(f, g, access, "", c.FrontToken) {
		seeds = append(seeds, tok.token)
	}
	fx.Clock.Advance(24 * time.Hour) // past the exp of every seed
	return fx, seeds
}

// wantRefused checks the answers to a request with a hostile credential on
// the three endpoints that take one.
func wantRefused(t *testing.T, fx *inFixture, set func(*http.Request)) {
	t.Helper()
	before := fx.store.writes.Load()
	for _, ep := range []struct{ method, path string }{
		{"GET", "/api/session"},
		{"POST", "/auth/signout"},
		{"POST", "/auth/session/refresh"},
	} {
		req := httptest.NewRequest(ep.method, ep.path, nil)
		set(req)
		r := fuzzReply(t, fx, req)
		if r.code != http.StatusUnauthorized {
			t.Fatalf("%s: got %d %s, want 401", ep.path, r.code, r.body)
		}
		if ep.path == "/auth/session/refresh" {
			if r.message != "unauthorised" || r.header.Get("Front-Token") != "remove" {
				t.Fatalf("refresh: %s, front-token %q", r.body, r.header.Get("Front-Token"))
			}
		} else if r.message != "unauthorised" && r.message != "try refresh token" {
			t.Fatalf("%s: message %q", ep.path, r.message)
		}
	}
	if n := fx.store.writes.Load() - before; n != 0 {
		t.Fatalf("%d store writes", n)
	}
}

func FuzzBearer(f *testing.F) {
	fx, seeds := credentialFixture(f)
	for _, tok := range seeds {
		f.Add("Bearer " + tok)
	}
	for _, tc := range hostileCredentials() {
		for _, v := range tc.header(seeds[0])["Authorization"] {
			f.Add(v)
		}
	}
	// A refresh token's shape: version 1, then key id, handle, generation,
	// expiry, secret and MAC, all zero.
	shaped := make([]byte, 77)
	shaped[0] = 1
	f.Add("Bearer " + base64.RawURLEncoding.EncodeToString(shaped))
	f.Add("bearer\t" + seeds[0])
	f.Add("Bearer " + seeds[0] + "\x00")
	f.Add("Bearer \r\n" + seeds[0])
	f.Fuzz(func(t *testing.T, value string) {
		wantRefused(t, fx, func(r *http.Request) { r.Header["Authorization"] = []string{value} })
	})
}

func FuzzCookie(f *testing.F) {
	fx, seeds := credentialFixture(f)
	for _, tok := range seeds {
		f.Add("sAccessToken=" + tok + "; sRefreshToken=" + tok)
	}
	for _, tc := range hostileCredentials() {
		for _, v := range tc.header(seeds[0])["Cookie"] {
			f.Add(v)
		}
	}
	f.Add(`sAccessToken="` + seeds[0] + `"`)
	f.Add("sAccessToken=" + strings.ReplaceAll(seeds[0], ".", "%2E"))
	f.Add("sAccessToken=%; sRefreshToken=%%")
	f.Add(";;;=;=sAccessToken;sAccessToken==")
	f.Fuzz(func(t *testing.T, value string) {
		wantRefused(t, fx, func(r *http.Request) { r.Header["Cookie"] = []string{value} })
	})
}

// FuzzResetPassword feeds any body to the reset endpoint. No reset token
// was ever issued, so nothing can succeed, and nothing may be written.
func FuzzResetPassword(f *testing.F) {
	fx := newInFixture(f, auth.Config{RateLimits: auth.RateLimits{
		ClientNewPasswords: auth.Rate{Burst: 1 << 30, Every: time.Nanosecond},
	}})
	fx.SignedIn(authtest.Header)
	forged := base64.RawURLEncoding.EncodeToString(make([]byte, 32))
	for _, b := range []string{
		`{"method":"token","formFields":[{"id":"password","value":"new password 2"}],"token":"` + forged + `"}`,
		`{"formFields":[{"id":"password","value":"new password 2"}],"token":""}`,
		`{"formFields":[{"id":"password","value":null}],"token":null}`,
		`{"formFields":[{"id":"password","value":"x"}],"token":["` + forged + `"]}`,
		`{"formFields":[{"id":"password","value":"new password 2"}],"token":"` + forged + `\u0000"}`,
		`{"formFields":[],"token":1}`,
		`{"formFields":[{"ID":"password","value":"new password 2"}]}{}`,
		`[]`, `null`, ``,
	} {
		f.Add([]byte(b))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		before := fx.store.writes.Load()
		req := httptest.NewRequest("POST", "/auth/user/password/reset", bytes.NewReader(body))
		r := fuzzReply(t, fx, req)
		switch {
		case r.code == http.StatusBadRequest || r.code == http.StatusRequestEntityTooLarge:
			if r.message == "" {
				t.Fatalf("%d without a message: %s", r.code, r.body)
			}
		case r.code == http.StatusOK && (r.status == "FIELD_ERROR" || r.status == "RESET_PASSWORD_INVALID_TOKEN_ERROR"):
		default:
			t.Fatalf("got %d %s, want 400, 413 or a refusal", r.code, r.body)
		}
		wantNoTokens(t, r.response())
		if n := fx.store.writes.Load() - before; n != 0 {
			t.Fatalf("%d store writes", n)
		}
	})
}

// FuzzSignInUpBody feeds any body to /signinup. Each process is issued a
// verifier for each provider; {verifier} and {redirect} in a body stand for
// the fake OpenID provider's, so the fuzzer can reach the code exchange.
// No code it sends was issued by the provider: the answer is 400 or 413
// with a message, or the provider's refusal, and never a session. A code
// goes to the provider only with a verifier issued for its redirect URI.
func FuzzSignInUpBody(f *testing.F) {
	fx := newFullFixture(f, auth.Config{RateLimits: unlimited()})
	c := fx.NewClient(authtest.Header)
	redirect := callbackPage(fx.Server, authtest.ProviderID)
	_, v := issueVerifier(f, c, authtest.ProviderID, redirect)
	appleRedirect := callbackPage(fx.Server, "apple")
	_, appleV := issueVerifier(f, c, "apple", appleRedirect)
	issued := map[string]string{v: redirect, appleV: appleRedirect}
	expand := strings.NewReplacer("{verifier}", v, "{redirect}", redirect)

	seed := func(edit func(b, info, params map[string]any)) {
		params := map[string]any{"code": "seed-code", "state": "sdk-state"}
		info := map[string]any{"redirectURIOnProviderDashboard": "{redirect}", "redirectURIQueryParams": params, "pkceCodeVerifier": "{verifier}"}
		b := map[string]any{"thirdPartyId": authtest.ProviderID, "redirectURIInfo": info, "clientType": "web"}
		if edit != nil {
			edit(b, info, params)
		}
		body, err := json.Marshal(b)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(body)
	}
	seed(nil)
	seed(func(_, _, p map[string]any) { p["iss"] = fx.idp.URL })
	seed(func(_, _, p map[string]any) { p["iss"] = "https://evil.example" })
	seed(func(_, _, p map[string]any) { p["user"] = `{"name":{"firstName":"A"}}` })
	seed(func(b, _, _ map[string]any) { b["thirdPartyId"] = "apple" })
	seed(func(b, info, _ map[string]any) {
		b["thirdPartyId"], info["redirectURIOnProviderDashboard"], info["pkceCodeVerifier"] = "apple", appleRedirect, appleV
	})
	seed(func(_, info, _ map[string]any) { info["pkceCodeVerifier"] = v })
	seed(func(_, info, _ map[string]any) { info["pkceCodeVerifier"] = appleV })
	seed(func(_, info, _ map[string]any) { info["pkceCodeVerifier"] = "{verifier}x" })
	seed(func(_, info, _ map[string]any) { info["redirectURIOnProviderDashboard"] = "{redirect}/" })
	seed(func(b, _, _ map[string]any) { b["oAuthTokens"] = map[string]any{"access_token": "x"} })
	seed(func(b, _, _ map[string]any) { b["oAuthTokens"] = nil })
	seed(func(b, _, _ map[string]any) { delete(b, "redirectURIInfo") })
	seed(func(b, _, _ map[string]any) { b["thirdPartyId"] = 7 })
	seed(func(_, info, _ map[string]any) { info["redirectURIQueryParams"] = "code=1" })
	seed(func(_, _, p map[string]any) { p["code"] = 42 })
	seed(func(_, _, p map[string]any) { p["code"] = "" })
	seed(func(_, _, p map[string]any) { p["code"] = strings.Repeat("c", 3000) })
	seed(func(_, info, _ map[string]any) { delete(info, "pkceCodeVerifier") })
	for _, tc := range garbageBodies() {
		if len(tc.body) <= 20<<10 {
			f.Add([]byte(tc.body))
		}
	}
	f.Add([]byte(`{"thirdPartyId":"authtest","thirdPartyId":"apple","redirectURIInfo":{"redirectURIOnProviderDashboard":"{redirect}","redirectURIQueryParams":{"code":"a","code":"b"},"pkceCodeVerifier":"{verifier}"}}`))

	f.Fuzz(func(t *testing.T, body []byte) {
		body = []byte(expand.Replace(string(body)))
		before, exchanges := fx.store.writes.Load(), len(fx.idp.traffic.exchanged())
		req := httptest.NewRequest("POST", "/auth/signinup", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		r := fuzzReply(t, fx.inFixture, req)
		switch {
		case r.code == http.StatusBadRequest || r.code == http.StatusRequestEntityTooLarge:
			if r.message == "" {
				t.Fatalf("%d without a message: %s", r.code, r.body)
			}
		case r.code == http.StatusOK && string(r.body) == providerMessage:
		default:
			t.Fatalf("got %d %s, want 400, 413 or the provider's refusal", r.code, r.body)
		}
		for _, ex := range fx.idp.traffic.exchanged()[exchanges:] {
			if want, ok := issued[ex.Get("code_verifier")]; !ok || ex.Get("redirect_uri") != want {
				t.Fatalf("the provider was asked to redeem a code with verifier %q and redirect URI %q, not a pair the server issued",
					ex.Get("code_verifier"), ex.Get("redirect_uri"))
			}
		}
		wantNoTokens(t, r.response())
		if n := fx.store.writes.Load() - before; n != 0 {
			t.Fatalf("%d store writes", n)
		}
	})
}

// b64url is the alphabet of the verifier's parts.
const b64url = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

// FuzzPKCEVerifier posts the SDK's /signinup body with any verifier and
// redirect URI. {issued} and {redirect} stand for the verifier this process
// was issued and its redirect URI; then, if at is inside the verifier, the
// character there moves shift places along the base64url alphabet, as a
// tampered verifier arrives (the same edit in every process, whatever
// verifier it was issued). Only the issued verifier with the redirect URI
// it was issued for is taken, byte for byte, and reaches the provider
// (which refuses the made-up code); any other is a 400 that the provider
// never hears of.
func FuzzPKCEVerifier(f *testing.F) {
	fx := newFullFixture(f, auth.Config{RateLimits: unlimited()})
	c := fx.NewClient(authtest.Header)
	redirect := callbackPage(fx.Server, authtest.ProviderID)
	_, issued := issueVerifier(f, c, authtest.ProviderID, redirect)
	_, appleV := issueVerifier(f, c, "apple", callbackPage(fx.Server, "apple"))

	f.Add("{issued}", "{redirect}", uint8(0), uint8(0))
	// Each character in turn, changed to the next of the alphabet.
	for i := range min(len(issued), 255) {
		f.Add("{issued}", "{redirect}", uint8(i), uint8(1))
	}
	for _, s := range []struct{ verifier, redirect string }{
		{issued, "{redirect}"},
		{appleV, "{redirect}"},
		{"{issued}", "{redirect}/"},
		{"{issued}", "{redirect}#"},
		{"{issued}", "{redirect}?x=1"},
		{"{issued}", strings.Replace(redirect, "https://", "HTTPS://", 1)},
		{"{issued}", callbackPage(fx.Server, "apple")},
		{"{issued}", ""},
		{"{issued}x", "{redirect}"},
		{"x{issued}", "{redirect}"},
		{"{issued}{issued}", "{redirect}"},
		{"{issued}=", "{redirect}"},
		{" {issued}", "{redirect}"},
		{"{issued}\x00", "{redirect}"},
		{"", "{redirect}"},
		{".", "{redirect}"},
		{"....", "{redirect}"},
		{"a.b.c.d", "{redirect}"},
		{strings.Repeat("A", 43) + ".zzzzzz.AAAAAAAAAAAAAAAA.AAAAAAAAAAAAAAAAAAAAAA", "{redirect}"},
		{strings.Repeat("A", 43) + ".-1.AAAAAAAAAAAAAAAA.AAAAAAAAAAAAAAAAAAAAAA", "{redirect}"},
		{strings.Repeat("A", 43) + ".+zzzzzzzzzzzz.AAAAAAAAAAAAAAAA.AAAAAAAAAAAAAAAAAAAAAA", "{redirect}"},
		{strings.Repeat("v", 3000), "{redirect}"},
		{"\u00e9.\u00e9.\u00e9.\u00e9", "{redirect}"},
	} {
		f.Add(s.verifier, s.redirect, uint8(0), uint8(0))
	}

	f.Fuzz(func(t *testing.T, verifier, redirectURI string, at, shift uint8) {
		v := strings.ReplaceAll(verifier, "{issued}", issued)
		r := strings.ReplaceAll(redirectURI, "{redirect}", redirect)
		if n := int(shift) % len(b64url); n != 0 && int(at) < len(v) {
			b := []byte(v)
			i := strings.IndexByte(b64url, b[at]) // -1, before 'A', for a byte not in it
			b[at] = b64url[(i+n+len(b64url))%len(b64url)]
			v = string(b)
		}
		genuine := v == issued && r == redirect
		body, err := json.Marshal(sdkSignInUp(authtest.ProviderID, r, map[string]string{"code": "fuzz-code"}, v))
		if err != nil {
			t.Fatal(err)
		}
		before, exchanges := fx.store.writes.Load(), len(fx.idp.traffic.exchanged())
		req := httptest.NewRequest("POST", "/auth/signinup", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		res := fuzzReply(t, fx.inFixture, req)
		switch {
		case genuine:
			// The code is made up, or was presented before.
			if res.code != http.StatusOK || string(res.body) != providerMessage {
				t.Fatalf("the issued verifier: %d %s, want the provider's refusal", res.code, res.body)
			}
		case res.code == http.StatusBadRequest || res.code == http.StatusRequestEntityTooLarge:
			if res.message == "" {
				t.Fatalf("%d without a message: %s", res.code, res.body)
			}
		default:
			t.Fatalf("verifier %q with redirect URI %q: %d %s, want 400: only the verifier issued for this redirect URI is taken",
				v, r, res.code, res.body)
		}
		for _, ex := range fx.idp.traffic.exchanged()[exchanges:] {
			if !genuine || ex.Get("code_verifier") != issued || ex.Get("redirect_uri") != redirect {
				t.Fatalf("the provider was asked to redeem a code with verifier %q and redirect URI %q", ex.Get("code_verifier"), ex.Get("redirect_uri"))
			}
		}
		wantNoTokens(t, res.response())
		if n := fx.store.writes.Load() - before; n != 0 {
			t.Fatalf("%d store writes", n)
		}
	})
}

// relayedParams are the parameters of a form_post callback that the relay
// passes on to the frontend's callback page.
var relayedParams = []string{"code", "state", "user", "error", "error_description"}

// FuzzFormPostCallback posts any form to the relay of the provider that
// posts its callback. The state is given decoded: the target encodes it
// as the SDK does and puts it where {state} is in the form; {app} in the
// state stands for the app's origin. The relay answers 400 or 413 with a
// message, or 303 to exactly the provider's callback page on the app, with
// the relayed parameters as posted and nothing else; it writes nothing
// and starts no session.
func FuzzFormPostCallback(f *testing.F) {
	fx := newFullFixture(f, auth.Config{})
	app := fx.AuthConfig.AppURL
	page := callbackPage(fx.Server, "apple")
	expand := strings.NewReplacer("{app}", app)
	good := `{"frontendRedirectURI":"{app}/auth/callback/apple","stateForAuthProvider":"sdk-state"}`
	for _, s := range []struct{ form, state string }{
		{"code=c1&state={state}&user=%7B%22name%22%3A%7B%22firstName%22%3A%22A%22%7D%7D&id_token=an.id.token", good},
		{"error=user_cancelled_authorize&error_description=%0D%0Ax&state={state}", good},
		{"code=c&state={state}&state=x", good},
		{"state=x&code=c&state={state}", good},
		{"code=&state={state}", good},
		{"code=c&code=d&id_token=x&id_token=y&state={state}", good},
		{"code=%00%0D%0A&state={state}", good},
		{"code=c&state={state}", `{"frontendRedirectURI":"{app}/auth/callback/apple","frontendRedirectURI":"https://evil.example/auth/callback/apple"}`},
		{"code=c&state={state}", `{"frontendRedirectURI":"https://evil.example/auth/callback/apple"}`},
		{"code=c&state={state}", `{"frontendRedirectURI":"{app}/auth/callback/apple?next=/x"}`},
		{"code=c&state={state}", `{"frontendRedirectURI":"{app}/auth/callback/apple#"}`},
		{"code=c&state={state}", `{"frontendRedirectURI":"{app}/auth/callback/authtest"}`},
		{"code=c&state={state}", `{"frontendRedirectURI":"{app}//auth/callback/apple"}`},
		{"code=c&state={state}", `{"frontendRedirectURI":"{app}/auth/callback/apple/"}`},
		{"code=c&state={state}", `{"frontendRedirectURI":"{app}/auth/callback/%61pple"}`},
		{"code=c&state={state}", `{"frontendRedirectURI":"javascript:alert(1)//{app}/auth/callback/apple"}`},
		{"code=c&state={state}", `{"frontendRedirectURI":"{app}@evil.example/auth/callback/apple"}`},
		{"code=c&state={state}", `{"frontendRedirectURI":"{app}/auth/callback/apple\r\nSet-Cookie: x=1"}`},
		{"code=c&state={state}", `{"frontendRedirectURI":1}`},
		{"code=c&state={state}", `{"frontendRedirectURI":null}`},
		{"code=c&state={state}", `[]`},
		{"code=c&state={state}", `null`},
		{"code=c&state={state}", ``},
		{"code=c&state={state}", strings.Repeat("[", 2000)},
		{"code=c", good},
		{"", good},
		{"state", good},
		{"%zz&state={state}", good},
		{"code=c;state={state}", good},
		{"code=c&state=" + url.QueryEscape(base64.RawURLEncoding.EncodeToString([]byte(`{"frontendRedirectURI":"`+page+`"}`))), ""},
		{"code=c&state=%%%", ""},
	} {
		f.Add(s.form, s.state)
	}

	f.Fuzz(func(t *testing.T, form, state string) {
		stateParam := url.QueryEscape(base64.StdEncoding.EncodeToString([]byte(expand.Replace(state))))
		body := strings.ReplaceAll(form, "{state}", stateParam)
		before, exchanges := fx.store.writes.Load(), len(fx.idp.traffic.exchanged())
		req := httptest.NewRequest("POST", "/auth/callback/apple", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", "https://appleid.apple.com")
		req.Header.Set("Sec-Fetch-Site", "cross-site")
		rec := httptest.NewRecorder()
		fx.Mux.ServeHTTP(rec, req)
		res := &authtest.Response{StatusCode: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}
		switch rec.Code {
		case http.StatusSeeOther:
			wantRelayed(t, res, body, page)
		case http.StatusBadRequest, http.StatusRequestEntityTooLarge:
			var m struct{ Message string }
			if json.Unmarshal(res.Body, &m) != nil || m.Message == "" {
				t.Fatalf("%d with body %q, want a JSON message", rec.Code, res.Body)
			}
		default:
			t.Fatalf("got %d %s, want 303, 400 or 413", rec.Code, res.Body)
		}
		wantNoTokens(t, res)
		if n := fx.store.writes.Load() - before; n != 0 {
			t.Fatalf("%d store writes", n)
		}
		if n := len(fx.idp.traffic.exchanged()) - exchanges; n != 0 {
			t.Fatalf("the relay made %d code exchanges", n)
		}
	})
}

// wantRelayed checks the relay's 303: to page, with the relayed
// parameters of the posted form, each its first value, and no others.
func wantRelayed(t *testing.T, res *authtest.Response, form, page string) {
	t.Helper()
	loc := res.Header.Get("Location")
	dest, query, _ := strings.Cut(loc, "?")
	if dest != page || strings.ContainsFunc(loc, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		t.Fatalf("relayed to %q, want %s", loc, page)
	}
	got, err := url.ParseQuery(query)
	if err != nil {
		t.Fatalf("relayed query %q: %v", query, err)
	}
	posted, err := url.ParseQuery(form)
	if err != nil {
		t.Fatalf("relayed a form that does not parse: %v", err)
	}
	for name, vs := range got {
		if !slices.Contains(relayedParams, name) || len(vs) != 1 || vs[0] != posted.Get(name) || !posted.Has(name) {
			t.Fatalf("relayed %s=%q, posted %q", name, vs, posted[name])
		}
	}
	for _, name := range relayedParams {
		if posted.Has(name) && !got.Has(name) {
			t.Fatalf("%s was posted and not relayed: %s", name, loc)
		}
	}
	if len(res.Body) != 0 || res.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("303 with body %q and Cache-Control %q, want none and no-store", res.Body, res.Header.Get("Cache-Control"))
	}
}

// FuzzVerificationToken feeds any body to /user/email/verify, with or
// without the session of a user who was mailed a link. No token the fuzzer
// sends was issued: the answer is the protocol's invalid-token status, or
// 400 or 413 with a message, and the user's email stays unverified.
func FuzzVerificationToken(f *testing.F) {
	fx := newFullFixture(f, auth.Config{RateLimits: unlimited()})
	c, u := fx.SignedIn(authtest.Header)
	tok := verificationToken(f, fx.Server, c, 1) // a live token in the store
	shaped := strings.Repeat("A", len(tok))
	for _, token := range []string{
		js(shaped), js(base64.RawURLEncoding.EncodeToString(make([]byte, 32))), js(shaped + "="), js(shaped[1:]),
		js(strings.Replace(shaped, "A", "+", 1)), js(shaped + "\x00"), `""`, "null", "42", "true", "[]", "{}",
		`["` + shaped + `"]`, js(strings.Repeat("A", 10<<10)), js(" " + shaped), js("\u00e9" + shaped[2:]),
	} {
		for _, withSession := range []bool{false, true} {
			f.Add([]byte(`{"method":"token","token":`+token+`}`), withSession)
		}
	}
	for _, tc := range garbageBodies() {
		if len(tc.body) <= 20<<10 {
			f.Add([]byte(tc.body), false)
		}
	}
	f.Add([]byte(`{"token":"`+shaped+`","token":1}`), true)
	f.Add([]byte(`{"Token":"`+shaped+`"}`), false)

	access, _ := c.Tokens()
	f.Fuzz(func(t *testing.T, body []byte, withSession bool) {
		before := fx.store.writes.Load()
		req := httptest.NewRequest("POST", "/auth/user/email/verify", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if withSession {
			req.Header.Set("Authorization", "Bearer "+access)
			req.Header.Set("st-auth-mode", "header")
		}
		r := fuzzReply(t, fx.inFixture, req)
		switch {
		case r.code == http.StatusBadRequest || r.code == http.StatusRequestEntityTooLarge:
			if r.message == "" {
				t.Fatalf("%d without a message: %s", r.code, r.body)
			}
		case r.code == http.StatusOK && string(r.body) == `{"status":"EMAIL_VERIFICATION_INVALID_TOKEN_ERROR"}`:
		default:
			t.Fatalf("got %d %s, want 400, 413 or EMAIL_VERIFICATION_INVALID_TOKEN_ERROR", r.code, r.body)
		}
		wantNoTokens(t, r.response())
		if n := fx.store.writes.Load() - before; n != 0 {
			t.Fatalf("%d store writes", n)
		}
		if got, err := fx.Auth.UserByID(t.Context(), u.ID); err != nil || got.LoginMethods[0].EmailVerified {
			t.Fatalf("the user's email was verified by a token nobody mailed (%v)", err)
		}
	})
}

// fuzzLatestMail is a Mailer that keeps only the latest message, so that
// a fuzzing process that starts a flow now and then does not keep every
// message it ever sent.
type fuzzLatestMail struct {
	mu     sync.Mutex
	latest mailer.Message
	n      int
}

func (m *fuzzLatestMail) Send(_ context.Context, msg mailer.Message) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.latest, m.n = msg, m.n+1
	return nil
}

// after waits for the message after the nth.
func (m *fuzzLatestMail) after(t testing.TB, n int) mailer.Message {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		m.mu.Lock()
		msg, got := m.latest, m.n
		m.mu.Unlock()
		if got > n {
			return msg
		}
	}
	t.Fatalf("no message %d after 10s", n+1)
	return mailer.Message{}
}

// fuzzFlow is the live flow of a fuzzing process: its ids, code and link
// code, which the inputs name as {pre}, {device}, {code} and {link}.
type fuzzFlow struct {
	pre, device, code, link string
	hash                    store.TokenHash
}

// FuzzConsumeCodeBody feeds any body to /signinup/code/consume. Each
// process keeps a live flow for one address ({pre}, {device}, {code} and
// {link} in a body stand for its ids, its code and its link code), and
// starts another when it ends. The answer is 400 or 413 with a message,
// or one of the protocol's statuses; a session comes only for the flow's
// code typed with its device and id, or its link code with its id, as
// the handler reads the body (encoding/json into the SDK's fields), and
// a refused body writes nothing but the count of a wrong typed code.
func FuzzConsumeCodeBody(f *testing.F) {
	mail := &fuzzLatestMail{}
	fx := newFullFixture(f, auth.Config{RateLimits: unlimited(), Email: auth.EmailConfig{Mailer: mail}})
	const email = "fuzz-consume@example.com"
	var fl fuzzFlow
	renew := func(t testing.TB) {
		mail.mu.Lock()
		n := mail.n
		mail.mu.Unlock()
		req := httptest.NewRequest("POST", "/auth/signinup/code", strings.NewReader(`{"email":"`+email+`"}`))
		rec := httptest.NewRecorder()
		fx.Mux.ServeHTTP(rec, req)
		var started struct{ Status, DeviceID, PreAuthSessionID string }
		if err := json.Unmarshal(rec.Body.Bytes(), &started); err != nil || started.Status != "OK" {
			t.Fatalf("starting a flow: %d %s", rec.Code, rec.Body)
		}
		m := mail.after(t, n)
		u, err := url.Parse(plLinkIn.FindString(m.Text))
		sub := plCodeLine.FindStringSubmatch(m.Text)
		if err != nil || sub == nil || u.Fragment == "" {
			t.Fatalf("no code and link in:\n%s", m.Text)
		}
		h, _ := base64.RawURLEncoding.DecodeString(started.PreAuthSessionID)
		fl = fuzzFlow{pre: started.PreAuthSessionID, device: started.DeviceID, code: sub[1], link: u.Fragment, hash: store.TokenHash(h)}
	}
	renew(f)

	for _, b := range []string{
		`{"preAuthSessionId":"{pre}","deviceId":"{device}","userInputCode":"{code}"}`,
		`{"preAuthSessionId":"{pre}","linkCode":"{link}"}`,
		`{"preAuthSessionId":"{pre}","deviceId":"{device}","userInputCode":"000000"}`,
		`{"preAuthSessionId":"{pre}","deviceId":"{device}","userInputCode":" {code} ","shouldTryLinkingWithSessionUser":false}`,
		`{"preAuthSessionId":"{pre}","deviceId":"{device}","userInputCode":"{code}","linkCode":"{link}"}`,
		`{"preAuthSessionId":"{pre}","linkCode":"{code}"}`,
		`{"preAuthSessionId":"{pre}","deviceId":"{device}","userInputCode":"{link}"}`,
		`{"preAuthSessionId":"{pre}=","deviceId":"{device}","userInputCode":"{code}"}`,
		`{"preAuthSessionId":"{pre}","deviceId":"","userInputCode":"{code}"}`,
		`{"preAuthSessionId":"","linkCode":"{link}"}`,
		`{"preAuthSessionId":"{pre}","deviceId":"{device}","userInputCode":{code}}`,
		`{"preAuthSessionId":"{pre}","deviceId":["{device}"],"userInputCode":"{code}"}`,
		`{"PreAuthSessionId":"{pre}","DEVICEID":"{device}","userinputcode":"{code}"}`,
		`{"preAuthSessionId":"{pre}","deviceId":"{device}","userInputCode":"{code}","preAuthSessionId":"x"}`,
		`{"preAuthSessionId":"{pre}","linkCode":"{link}","shouldTryLinkingWithSessionUser":"yes"}`,
		`{"preAuthSessionId":"{pre}","deviceId":"{device}","userInputCode":"{code}\u0000"}`,
		`{"preAuthSessionId":"{pre}","linkCode":"{link}{link}"}`,
		`{"preAuthSessionId":null,"linkCode":"{link}"}`,
		`{"preAuthSessionId":"{pre}"}`,
		`{}`,
	} {
		f.Add([]byte(b))
	}
	for _, tc := range garbageBodies() {
		if len(tc.body) <= 20<<10 {
			f.Add([]byte(tc.body))
		}
	}

	f.Fuzz(func(t *testing.T, raw []byte) {
		if _, err := fx.mem.Code(t.Context(), store.CodePasswordlessFlow, fl.hash, fx.Clock.Now()); err != nil {
			renew(t) // the last input ended the flow
		}
		body := strings.NewReplacer("{pre}", fl.pre, "{device}", fl.device, "{code}", fl.code, "{link}", fl.link).Replace(string(raw))
		// What the handler reads: encoding/json into the SDK's fields.
		var read struct {
			PreAuthSessionID *string `json:"preAuthSessionId"`
			DeviceID         *string `json:"deviceId"`
			UserInputCode    *string `json:"userInputCode"`
			LinkCode         *string `json:"linkCode"`
		}
		json.Unmarshal([]byte(body), &read)
		is := func(p *string, want string) bool { return p != nil && *p == want }
		right := is(read.PreAuthSessionID, fl.pre) && (is(read.DeviceID, fl.device) && read.UserInputCode != nil &&
			strings.TrimSpace(*read.UserInputCode) == fl.code && read.LinkCode == nil ||
			is(read.LinkCode, fl.link) && read.DeviceID == nil && read.UserInputCode == nil)

		before := fx.store.writes.Load()
		req := httptest.NewRequest("POST", "/auth/signinup/code/consume", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		r := fuzzReply(t, fx.inFixture, req)
		switch {
		case r.code == http.StatusBadRequest || r.code == http.StatusRequestEntityTooLarge:
			if r.message == "" {
				t.Fatalf("%d without a message: %s", r.code, r.body)
			}
			if n := fx.store.writes.Load() - before; n != 0 {
				t.Fatalf("%d store writes for a refused body", n)
			}
		case r.code == http.StatusOK && r.status == "OK":
			if !right {
				t.Fatalf("signed in with %s; the flow's code %s, link code %s", body, fl.code, fl.link)
			}
			if !r.response().IssuedTokens() {
				t.Fatalf("OK without a session: %s", r.body)
			}
			if u, _ := r.json["user"].(map[string]any); u == nil || !slices.Contains(u["emails"].([]any), any(email)) {
				t.Fatalf("signed in as %s, want the user of %s", r.body, email)
			}
			return
		case r.code == http.StatusOK && slices.Contains([]string{"RESTART_FLOW_ERROR", "INCORRECT_USER_INPUT_CODE_ERROR", "EXPIRED_USER_INPUT_CODE_ERROR"}, r.status):
			if right {
				t.Fatalf("the flow's own code was refused: %s", r.body)
			}
			// The one write: a wrong typed code counted against its flow.
			if n := fx.store.writes.Load() - before; n > 1 || n == 1 && read.DeviceID == nil {
				t.Fatalf("%d store writes for %s", n, r.body)
			}
		default:
			t.Fatalf("got %d %s, want 400, 413 or a status of the protocol", r.code, r.body)
		}
		wantNoTokens(t, r.response())
	})
}

// fuzzPasskey is the live state of a FuzzPasskeyCredential process: a
// passkey user's authenticator, options of each ceremony and a valid
// credential for each, which the inputs name by their parts.
type fuzzPasskey struct {
	a                *authtest.Authenticator // the passkey user's
	signIn, register pkOptions
	assertion        map[string]string // the valid assertion's members: id, clientDataJSON, authenticatorData, signature, userHandle
	registration     map[string]string // the valid registration's: id, clientDataJSON, attestationObject
	assertionJSON    []byte
	registrationJSON []byte
	emails           int // the registrations made, each for an address of its own
}

// fuzzPasskeyPost posts body to a passkey endpoint of fx, directly, and
// returns the answer, which must be a JSON object and no 5xx.
func fuzzPasskeyPost(t testing.TB, fx *fullFixture, path string, body []byte) inReply {
	t.Helper()
	req := httptest.NewRequest("POST", "/auth"+path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("rid", "webauthn")
	rec := httptest.NewRecorder()
	fx.Mux.ServeHTTP(rec, req)
	r := inReply{code: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
	if err := json.Unmarshal(r.body, &r.json); err != nil || r.code >= 500 {
		t.Fatalf("POST %s: %d %s", path, r.code, r.body)
	}
	r.message, _ = r.json["message"].(string)
	r.status, _ = r.json["status"].(string)
	return r
}

// members decodes a credential's members that a body may name.
func (p *fuzzPasskey) members(t testing.TB, cred []byte) map[string]string {
	t.Helper()
	var c struct {
		ID       string
		Response map[string]any
	}
	if err := json.Unmarshal(cred, &c); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{"id": c.ID}
	for k, v := range c.Response {
		if s, ok := v.(string); ok {
			out[k] = s
		}
	}
	return out
}

// renewSignIn makes new sign-in options and a valid assertion for them.
func (p *fuzzPasskey) renewSignIn(t testing.TB, fx *fullFixture) {
	t.Helper()
	r := fuzzPasskeyPost(t, fx, "/webauthn/options/signin", nil)
	p.signIn = pkOptions{id: r.json["webauthnGeneratedOptionsId"].(string), body: r.body}
	p.assertionJSON = pkAssert(t, p.a, p.signIn)
	p.assertion = p.members(t, p.assertionJSON)
}

// renewRegister makes registration options for a new address and a
// valid registration for them.
func (p *fuzzPasskey) renewRegister(t testing.TB, fx *fullFixture) {
	t.Helper()
	p.emails++
	b, _ := json.Marshal(map[string]string{"email": fmt.Sprintf("fuzz-passkey-%d@example.com", p.emails)})
	r := fuzzPasskeyPost(t, fx, "/webauthn/options/register", b)
	p.register = pkOptions{id: r.json["webauthnGeneratedOptionsId"].(string), body: r.body}
	p.registrationJSON = pkRegister(t, fx.NewAuthenticator(), p.register)
	p.registration = p.members(t, p.registrationJSON)
}

// fuzzB64 decodes a credential member as go-webauthn does, leniently:
// base64url, padded or not.
func fuzzB64(s string) ([]byte, bool) {
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
	return b, err == nil
}

// FuzzPasskeyCredential feeds any body to /webauthn/signin (signUp false)
// or /webauthn/signup. Each process keeps live options of each ceremony
// and a valid credential for each: {options} in a body stands for the
// live options' id, {credential} for the valid credential, and {id},
// {clientDataJSON}, {authenticatorData}, {signature}, {userHandle} and
// {attestationObject} for its members. The answer is 400 or 413 with a
// message, or one of the protocol's statuses, and a refused body writes
// nothing; a session comes only for the live options with the valid
// credential's signed parts (the client data and authenticator data and
// the signature of an assertion; the client data and attestation object
// of a registration), as the handler reads them, and then for the
// passkey user of the assertion or a new user with the registration's
// address. With MFA on (as the fixture has it), a body that asks to act
// on the session (shouldTryLinkingWithSessionUser true) makes the passkey
// a second factor of it, and without a session is refused 401.
func FuzzPasskeyCredential(f *testing.F) {
	fx := newFullFixture(f, auth.Config{RateLimits: unlimited()})
	p := &fuzzPasskey{a: fx.NewAuthenticator()}
	c := fx.NewClient(authtest.Header)
	user := pkSignedIn(f, "the fuzz passkey user's sign-up", fx.Server, c, c.SignUpWithPasskey(p.a, "fuzz-passkey@example.com")).ID
	p.renewSignIn(f, fx)
	p.renewRegister(f, fx)

	signIn := `{"webauthnGeneratedOptionsId":"{options}","credential":{"id":"{id}","rawId":"{id}","type":"public-key",` +
		`"response":{"clientDataJSON":"{clientDataJSON}","authenticatorData":"{authenticatorData}","signature":"{signature}","userHandle":"{userHandle}"},` +
		`"clientExtensionResults":{},"authenticatorAttachment":"platform"}}`
	signUp := `{"webauthnGeneratedOptionsId":"{options}","credential":{"id":"{id}","rawId":"{id}","type":"public-key",` +
		`"response":{"clientDataJSON":"{clientDataJSON}","attestationObject":"{attestationObject}","transports":["internal"]},` +
		`"clientExtensionResults":{},"authenticatorAttachment":"platform"}}`
	for _, up := range []bool{false, true} {
		tmpl := signIn
		if up {
			tmpl = signUp
		}
		f.Add(up, []byte(`{"webauthnGeneratedOptionsId":"{options}","credential":{credential}}`))
		f.Add(up, []byte(tmpl))
		for _, tc := range pkMalformedCredentials(up) {
			var body map[string]any
			json.Unmarshal([]byte(tmpl), &body)
			cred := body["credential"].(map[string]any)
			tc.edit(cred, cred["response"].(map[string]any))
			b, _ := json.Marshal(body)
			if len(b) <= 20<<10 {
				f.Add(up, b)
			}
		}
		f.Add(up, []byte(`{"webauthnGeneratedOptionsId":"{options}{options}","credential":{credential}}`))
		f.Add(up, []byte(`{"webauthnGeneratedOptionsId":"{options}","credential":{credential},"webauthnGeneratedOptionsId":"x"}`))
		f.Add(up, []byte(`{"webauthnGeneratedOptionsId":"{options}","credential":{credential},"shouldTryLinkingWithSessionUser":true}`))
		f.Add(up, []byte(`{"webauthnGeneratedOptionsId":"{options}","credential":"{credential}"}`))
		f.Add(up, []byte(`{"webauthnGeneratedOptionsId":"{options}"}`))
		for _, tc := range garbageBodies() {
			if len(tc.body) <= 20<<10 {
				f.Add(up, []byte(tc.body))
			}
		}
	}
	f.Add(false, []byte(strings.ReplaceAll(signIn, `"{signature}"`, `"{signature}A"`)))
	f.Add(false, []byte(strings.ReplaceAll(signIn, `"{clientDataJSON}"`, `"{clientDataJSON}="`)))
	f.Add(true, []byte(strings.ReplaceAll(signUp, `"{attestationObject}"`, `"{attestationObject}AA"`)))

	f.Fuzz(func(t *testing.T, up bool, raw []byte) {
		now := fx.Clock.Now()
		if _, err := fx.mem.Code(t.Context(), store.CodePasskeyOptions, sha256.Sum256([]byte(p.signIn.id)), now); err != nil {
			p.renewSignIn(t, fx)
		}
		if _, err := fx.mem.Code(t.Context(), store.CodePasskeyOptions, sha256.Sum256([]byte(p.register.id)), now); err != nil {
			p.renewRegister(t, fx)
		}
		live, valid, cred, path := p.signIn.id, p.assertion, p.assertionJSON, "/webauthn/signin"
		signed := []string{"clientDataJSON", "authenticatorData", "signature"}
		if up {
			live, valid, cred, path = p.register.id, p.registration, p.registrationJSON, "/webauthn/signup"
			signed = []string{"clientDataJSON", "attestationObject"}
		}
		pairs := []string{"{options}", live, "{credential}", string(cred)}
		for k, v := range valid {
			pairs = append(pairs, "{"+k+"}", v)
		}
		body := strings.NewReplacer(pairs...).Replace(string(raw))

		// What the handler reads: encoding/json into its fields, and
		// the credential's members as go-webauthn decodes them.
		var read struct {
			OptionsID  *string `json:"webauthnGeneratedOptionsId"`
			Credential struct {
				Response map[string]any `json:"response"`
			} `json:"credential"`
			Link json.RawMessage `json:"shouldTryLinkingWithSessionUser"`
		}
		json.Unmarshal([]byte(body), &read)
		// With MFA on, a passkey that asks to act on the session is a
		// second factor of it: without one, it is refused 401.
		factor := string(read.Link) == "true"
		right := read.OptionsID != nil && *read.OptionsID == live
		for _, k := range signed {
			got, _ := read.Credential.Response[k].(string)
			g, ok1 := fuzzB64(got)
			w, ok2 := fuzzB64(valid[k])
			right = right && ok1 && ok2 && bytes.Equal(g, w)
		}

		before := fx.store.writes.Load()
		r := fuzzPasskeyPost(t, fx, path, []byte(body))
		switch {
		case r.code == http.StatusBadRequest || r.code == http.StatusRequestEntityTooLarge:
			if r.message == "" {
				t.Fatalf("%d without a message: %s", r.code, r.body)
			}
		case r.code == http.StatusOK && r.status == "OK":
			if !right || factor {
				t.Fatalf("signed in with %s; the live options %s and credential %s", body, live, cred)
			}
			if !r.response().IssuedTokens() {
				t.Fatalf("OK without a session: %s", r.body)
			}
			u, _ := r.json["user"].(map[string]any)
			switch {
			case !up && (u == nil || u["id"] != user):
				t.Fatalf("signed in as %v, want the passkey user %s", u["id"], user)
			case up && (u == nil || !slices.Contains(u["emails"].([]any), any(fmt.Sprintf("fuzz-passkey-%d@example.com", p.emails)))):
				t.Fatalf("signed up as %v, want the registration's address", u)
			}
			return
		case r.code == http.StatusOK && slices.Contains([]string{"INVALID_CREDENTIALS_ERROR", "OPTIONS_NOT_FOUND_ERROR", "INVALID_OPTIONS_ERROR"}, r.status):
			if len(r.json) != 1 {
				t.Fatalf("a refusal with more: %s", r.body)
			}
		case r.code == http.StatusUnauthorized && factor:
			if r.message != "unauthorised" {
				t.Fatalf("a second factor without a session: %s, want unauthorised", r.body)
			}
		default:
			t.Fatalf("got %d %s, want 400, 413, a status of the protocol, or 401 for a second factor without a session", r.code, r.body)
		}
		wantNoTokens(t, r.response())
		if n := fx.store.writes.Load() - before; n != 0 {
			t.Fatalf("%d store writes for a refused body: %s", n, r.body)
		}
	})
}

// fuzzMFASession is the session of a fuzzing process's MFA user, which has
// completed TOTP: its tokens, and when its access token was issued, at
// the server's clock.
type fuzzMFASession struct {
	access, refresh string
	issued          time.Time
}

// fuzzMFASignIn signs a new user of fx up, sets up a TOTP device (the
// default one, "TOTP Device 0") with the session, and returns the
// session, the device's secret, and the client, for use outside the fuzz
// function.
func fuzzMFASignIn(fx *fullFixture) (*fuzzMFASession, string, *authtest.Client) {
	c, _ := fx.SignedInVerified(authtest.Header)
	secret := c.SetUpTOTP()
	issued := fx.Clock.Now()
	fx.Clock.Advance(90 * time.Second) // past the step the set-up used
	return &fuzzMFASession{access: c.AccessToken, refresh: c.RefreshToken, issued: issued}, secret, c
}

// send serves a request with the session, directly, and keeps a rewritten
// access token (which ends when the one it replaces does); the answer
// must be a JSON object and no 5xx.
func (s *fuzzMFASession) send(t *testing.T, fx *fullFixture, method, path, rid string, body []byte) inReply {
	t.Helper()
	req := httptest.NewRequest(method, "/auth"+path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("rid", rid)
	req.Header.Set("st-auth-mode", "header")
	req.Header.Set("Authorization", "Bearer "+s.access)
	r := fuzzReply(t, fx.inFixture, req)
	if v := r.header.Get("St-Access-Token"); v != "" {
		s.access = v // with the expiry of the token it replaces
	}
	return r
}

// fresh refreshes the session if its access token is near its end.
func (s *fuzzMFASession) fresh(t *testing.T, fx *fullFixture) {
	t.Helper()
	if fx.Clock.Now().Sub(s.issued) < 50*time.Minute {
		return
	}
	req := httptest.NewRequest("POST", "/auth/session/refresh", nil)
	req.Header.Set("rid", "session")
	req.Header.Set("st-auth-mode", "header")
	req.Header.Set("Authorization", "Bearer "+s.refresh)
	r := fuzzReply(t, fx.inFixture, req)
	if r.status != "OK" {
		t.Fatalf("refresh: %d %s", r.code, r.body)
	}
	s.access, s.refresh, s.issued = r.header.Get("St-Access-Token"), r.header.Get("St-Refresh-Token"), fx.Clock.Now()
}

// fuzzMFALockout mirrors the run of wrong second-factor codes a user has
// (TOTP and recovery codes alike) as the store keeps it: how many in a
// row, the last when.
type fuzzMFALockout struct {
	failures int
	last     time.Time
}

// before waits out a lockout, so that the next code is checked.
func (l *fuzzMFALockout) before(fx *fullFixture) {
	if l.failures >= 5 && fx.Clock.Now().Sub(l.last) < 15*time.Minute {
		fx.Clock.Advance(15*time.Minute + time.Second)
	}
}

// wrong checks the answer to a wrong code: the protocol's status for it,
// with the run counted exactly (a run whose last code is 15 minutes old
// starts again), in one write.
func (l *fuzzMFALockout) wrong(t *testing.T, fx *fullFixture, r inReply, status string, writes int64) {
	t.Helper()
	want := l.failures + 1
	if fx.Clock.Now().Sub(l.last) >= 15*time.Minute {
		want = 1
	}
	l.check(t, r, status, want)
	if writes != 1 {
		t.Fatalf("%d store writes for a wrong code, want 1: its count", writes)
	}
	l.failures, l.last = want, fx.Clock.Now()
}

// again checks the answer to a code used already, presented again:
// refused with the run as it is, uncounted, nothing written.
func (l *fuzzMFALockout) again(t *testing.T, r inReply, status string, writes int64) {
	t.Helper()
	l.check(t, r, status, l.failures)
	if writes != 0 {
		t.Fatalf("%d store writes for a code used already", writes)
	}
}

func (l *fuzzMFALockout) check(t *testing.T, r inReply, status string, failures int) {
	t.Helper()
	if r.status != status || r.json["currentNumberOfFailedAttempts"] != float64(failures) || r.json["maxNumberOfFailedAttempts"] != float64(5) || len(r.json) != 3 {
		t.Fatalf("got %s, want %s with %d failures of 5", r.body, status, failures)
	}
}

// FuzzTOTPVerifyBody feeds any body to /totp/verify (device false) or
// /totp/device/verify with the session of a user who has a device set up,
// "TOTP Device 0". In a body, {code}, {prev} and {next} stand for the
// device's codes of the current step and of the steps either side, all
// unused (the clock moves on past any step a code was accepted for), and
// {device} for the device's name. The answer is 400 or 413 with a
// message and nothing written; a session's factor completed (a new
// access token, two writes: the step and the session) only for one of
// the three codes, trimmed, as the handler reads the body (encoding/json
// into deviceName and totp), and for the device by its exact name;
// UNKNOWN_DEVICE_ERROR for any other name, writing nothing; and for
// every other code INVALID_TOTP_ERROR, with the run of wrong codes
// counted exactly, in one write.
func FuzzTOTPVerifyBody(f *testing.F) {
	fx := newFullFixture(f, auth.Config{RateLimits: unlimited()})
	s, secret, _ := fuzzMFASignIn(fx)
	const device = "TOTP Device 0"
	var lock fuzzMFALockout

	for _, b := range []string{
		`{"totp":"{code}"}`,
		`{"totp":"{prev}"}`,
		`{"totp":"{next}"}`,
		`{"deviceName":"{device}","totp":"{code}"}`,
		`{"deviceName":"{device}","totp":" {code}\t"}`,
		`{"deviceName":"{device}","totp":"{code}{code}"}`,
		`{"deviceName":"{device}","totp":{code}}`,
		`{"deviceName":"{device}","totp":["{code}"]}`,
		`{"deviceName":"{device}","totp":null}`,
		`{"deviceName":"{device} ","totp":"{code}"}`,
		`{"deviceName":"","totp":"{code}"}`,
		`{"deviceName":"{device}"}`,
		`{"DeviceName":"{device}","TOTP":"{code}"}`,
		`{"deviceName":"{device}","totp":"{code}","totp":"000000"}`,
		`{"totp":"{code}\u0000"}`,
		`{"totp":"１２３４５６"}`,
		`{"totp":"000000"}`,
		`{"totp":"12345"}`,
		`{"totp":""}`,
		`{"totp":"{code}","userId":"someone else"}`,
		`{}`,
	} {
		f.Add(false, []byte(b))
		f.Add(true, []byte(b))
	}
	for _, tc := range garbageBodies() {
		if len(tc.body) <= 20<<10 {
			f.Add(true, []byte(tc.body))
		}
	}

	f.Fuzz(func(t *testing.T, onDevice bool, raw []byte) {
		lock.before(fx)
		s.fresh(t, fx)
		now := fx.Clock.Now()
		codes := []string{authtest.TOTPCode(secret, now), authtest.TOTPCode(secret, now.Add(-30*time.Second)), authtest.TOTPCode(secret, now.Add(30*time.Second))}
		body := strings.NewReplacer("{code}", codes[0], "{prev}", codes[1], "{next}", codes[2], "{device}", device).Replace(string(raw))
		// What the handler reads: encoding/json into the SDK's fields.
		var read struct {
			DeviceName *string `json:"deviceName"`
			TOTP       *string `json:"totp"`
		}
		json.Unmarshal([]byte(body), &read)
		right := read.TOTP != nil && slices.Contains(codes, strings.TrimSpace(*read.TOTP))
		path := "/totp/verify"
		if onDevice {
			path = "/totp/device/verify"
		}
		known := !onDevice || read.DeviceName != nil && *read.DeviceName == device

		before := fx.store.writes.Load()
		r := s.send(t, fx, "POST", path, "totp", []byte(body))
		writes := fx.store.writes.Load() - before
		switch {
		case r.code == http.StatusBadRequest || r.code == http.StatusRequestEntityTooLarge:
			if r.message == "" {
				t.Fatalf("%d without a message: %s", r.code, r.body)
			}
			if writes != 0 {
				t.Fatalf("%d store writes for a refused body", writes)
			}
		case r.code == http.StatusOK && r.status == "OK":
			if !right || !known {
				t.Fatalf("TOTP completed with %s; the codes %v", body, codes)
			}
			if r.header.Get("St-Access-Token") == "" || writes != 2 {
				t.Fatalf("OK %s with %d writes and access token %q, want a new one and two writes", r.body, writes, r.header.Get("St-Access-Token"))
			}
			if onDevice && string(r.body) != `{"status":"OK","wasAlreadyVerified":true}` || !onDevice && string(r.body) != `{"status":"OK"}` {
				t.Fatalf("OK: %s", r.body)
			}
			// The step is used up: the next codes are of later steps.
			lock.failures, lock.last = 0, time.Time{}
			fx.Clock.Advance(90 * time.Second)
			return
		case r.code == http.StatusOK && r.status == "UNKNOWN_DEVICE_ERROR":
			if known || string(r.body) != `{"status":"UNKNOWN_DEVICE_ERROR"}` || writes != 0 {
				t.Fatalf("%s for %s, with %d writes", r.body, body, writes)
			}
		case r.code == http.StatusOK && r.status == "INVALID_TOTP_ERROR":
			if right && known {
				t.Fatalf("a code of the device was refused: %s for %s", r.body, body)
			}
			lock.wrong(t, fx, r, "INVALID_TOTP_ERROR", writes)
		default:
			t.Fatalf("got %d %s, want 400, 413 or a status of the protocol", r.code, r.body)
		}
		wantNoTokens(t, r.response())
	})
}

// FuzzRecoveryCodeBody feeds any body to /mfa/recovery-code/verify with
// the session of a user who has recovery codes. In a body, {code} stands
// for an unused code of the current set, {used} for a code of the set
// used already, and {void} for a code of a set a new one voided; a new
// set comes when one is spent. The answer is 400 or 413 with a message
// and nothing written; the factor completed (a new access token, two
// writes: the code spent and the session) only for an unused code of at
// most 64 bytes, read as the handler reads it (encoding/json into code),
// in any case and with dashes and spaces anywhere; a code of the set used
// already is refused uncounted, writing nothing; and every other code is
// INVALID_RECOVERY_CODE_ERROR, with the run of wrong codes counted
// exactly, in one write. A code never works twice.
func FuzzRecoveryCodeBody(f *testing.F) {
	fx := newFullFixture(f, auth.Config{RateLimits: unlimited()})
	s, _, c := fuzzMFASignIn(fx)
	var lock fuzzMFALockout
	var unused, used, void []string
	norm := func(code string) string {
		return strings.Map(func(r rune) rune {
			if r == '-' || r == ' ' {
				return -1
			}
			return r
		}, strings.ToLower(code))
	}
	keep := func(codes []any) {
		void = append(void, unused...)
		void = append(void, used...)
		unused, used = nil, nil
		for _, c := range codes {
			unused = append(unused, c.(string))
		}
	}
	first := c.NewRecoveryCodes()
	if codes, _ := first.JSON["codes"].([]any); first.Status != "OK" || len(codes) != 10 {
		f.Fatalf("new recovery codes: %s", first.Body)
	}
	keep(first.JSON["codes"].([]any))
	// A code of the set used, for {used} from the start.
	if res := c.UseRecoveryCode(unused[9]); res.Status != "OK" {
		f.Fatalf("a recovery code: %s", res.Body)
	}
	used, unused = append(used, unused[9]), unused[:9]
	void = append(void, "aaaa-bbbb-cccc-dddd")

	for _, b := range []string{
		`{"code":"{code}"}`,
		`{"code":"{used}"}`,
		`{"code":"{void}"}`,
		`{"code":" {code} "}`,
		`{"code":"{code}{code}"}`,
		`{"code":"{code}","code":"x"}`,
		`{"code":["{code}"]}`,
		`{"code":{code}}`,
		`{"code":null}`,
		`{"Code":"{code}"}`,
		`{"code":"{code}\u0000"}`,
		`{"code":"\u212a{code}"}`,
		`{"code":"----------------------------------------------------------------"}`,
		`{"code":""}`,
		`{"code":"123456"}`,
		`{}`,
	} {
		f.Add([]byte(b))
	}
	for _, tc := range garbageBodies() {
		if len(tc.body) <= 20<<10 {
			f.Add([]byte(tc.body))
		}
	}

	f.Fuzz(func(t *testing.T, raw []byte) {
		if len(unused) == 0 {
			r := s.send(t, fx, "POST", "/mfa/recovery-codes", "multifactorauth", []byte("{}"))
			codes, _ := r.json["codes"].([]any)
			if r.status != "OK" || len(codes) != 10 {
				t.Fatalf("new recovery codes: %d %s", r.code, r.body)
			}
			keep(codes)
		}
		lock.before(fx)
		s.fresh(t, fx)
		someUsed := void[len(void)-1]
		if len(used) > 0 {
			someUsed = used[len(used)-1]
		}
		body := strings.NewReplacer("{code}", unused[0], "{used}", someUsed, "{void}", void[len(void)-1]).Replace(string(raw))
		var read struct {
			Code *string `json:"code"`
		}
		json.Unmarshal([]byte(body), &read)
		match, again := -1, false
		if read.Code != nil && len(*read.Code) <= 64 {
			for i, c := range unused {
				if norm(c) == norm(*read.Code) {
					match = i
				}
			}
			again = slices.ContainsFunc(used, func(c string) bool { return norm(c) == norm(*read.Code) })
		}
		before := fx.store.writes.Load()
		r := s.send(t, fx, "POST", "/mfa/recovery-code/verify", "multifactorauth", []byte(body))
		writes := fx.store.writes.Load() - before
		switch {
		case r.code == http.StatusBadRequest || r.code == http.StatusRequestEntityTooLarge:
			if r.message == "" {
				t.Fatalf("%d without a message: %s", r.code, r.body)
			}
			if writes != 0 {
				t.Fatalf("%d store writes for a refused body", writes)
			}
		case r.code == http.StatusOK && r.status == "OK":
			if match < 0 {
				t.Fatalf("a recovery code accepted: %s; unused %v, used %v", body, unused, used)
			}
			if want := fmt.Sprintf(`{"status":"OK","remaining":%d}`, len(unused)-1); string(r.body) != want || r.header.Get("St-Access-Token") == "" || writes != 2 {
				t.Fatalf("OK: %s with %d writes and access token %q, want %s, a new token and two writes", r.body, writes, r.header.Get("St-Access-Token"), want)
			}
			used = append(used, unused[match])
			unused = slices.Delete(unused, match, match+1)
			lock.failures, lock.last = 0, time.Time{}
			return
		case r.code == http.StatusOK && r.status == "INVALID_RECOVERY_CODE_ERROR" && again:
			lock.again(t, r, "INVALID_RECOVERY_CODE_ERROR", writes)
		case r.code == http.StatusOK && r.status == "INVALID_RECOVERY_CODE_ERROR":
			if match >= 0 {
				t.Fatalf("an unused recovery code was refused: %s for %s", r.body, body)
			}
			lock.wrong(t, fx, r, "INVALID_RECOVERY_CODE_ERROR", writes)
		default:
			t.Fatalf("got %d %s, want 400, 413 or a status of the protocol", r.code, r.body)
		}
		wantNoTokens(t, r.response())
	})
}
