package auth_test

// Fuzz targets for the decoders of attacker input: request bodies, bearer
// tokens and cookies. Under plain go test they run their seeds; run one with
//
//	go test -run '^$' -fuzz FuzzSignIn -fuzztime 1m .
//
// The handler is called directly, so a panic is a crash the fuzzer reports,
// and header values can hold any bytes. The seeds are the cases of
// input_test.go (malformedBodies, acceptedBodies, hostileCredentials,
// forgeries), so a case added there seeds the fuzzer too; the fixture they
// run on is in harness_test.go.

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
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
