package auth

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// FuzzMFAClaim signs, with the server's own key, access tokens of a live
// session whose st-mfa claim is any JSON (put into the payload as it is,
// as the signer puts the claim it keeps), and sends each to a
// protected route (RequireSession), to a step-up route
// (FactorWithin("totp", 5*time.Minute)) and to PUT /mfa/info. A claim
// that is not a JSON object of the claim's shape ({"c":{factor: Unix
// seconds},"v":bool}, factor ids of 1 to 32 bytes) is refused 401 "try
// refresh token" everywhere (as is a token too long to read, whatever
// its claim); one that is passes the protected route
// exactly when v is true, and the step-up route when besides c has
// "totp" at most 300 seconds before now; the other answers are the SDKs'
// 403 st-mfa bodies; /mfa/info answers OK from the session's claim in the
// store, whatever the token's said. Never a panic, never a 5xx. Run it
// with
//
//	go test -run '^$' -fuzz FuzzMFAClaim -fuzztime 1m .
func FuzzMFAClaim(f *testing.F) {
	for _, s := range []string{
		`{"c":{"emailpassword":1893553445},"v":true}`,
		`{"c":{"emailpassword":1893553445},"v":false}`,
		`{"c":{"emailpassword":1893553445,"totp":1893553440},"v":true}`,
		`{"c":{"totp":1893553144},"v":true}`,
		`{"c":{"totp":1893553145},"v":true}`,
		`{"c":{"totp":99999999999999},"v":true}`,
		`{"c":{"totp":-9223372036854775808},"v":true}`,
		`{"c":{"totp":9223372036854775807},"v":true}`,
		`{"c":{"totp":1e300},"v":true}`,
		`{"c":{"totp":1.5},"v":true}`,
		`{"c":{"totp":"1893553440"},"v":true}`,
		`{"c":{"":1},"v":true}`,
		`{"c":{"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa":1},"v":true}`,
		`{"c":{"recovery-code":0},"v":true}`,
		`{"c":null,"v":true}`,
		`{"c":[],"v":true}`,
		`{"v":"true"}`,
		`{"v":1}`,
		`{"V":true,"C":{"TOTP":1893553440}}`,
		`{"c":{},"v":true,"v":false}`,
		`{"c":{},"v":true,"extra":{"deep":[1,2,3]}}`,
		`{}`,
		`null`,
		`true`,
		`[]`,
		`"{\"v\":true}"`,
		` {"c":{"totp":1893553440},"v":true} `,
		`{"c":{"totp":1893553440,"totp":1},"v":true}`,
		`{"c":{"\u0000":1},"v":true}`,
		"",
	} {
		f.Add([]byte(s))
	}

	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC) // 1893553445
	a, key := tokenAuth(f, Config{SigningAlgorithm: HS256, Now: func() time.Time { return now },
		MFA: MFAConfig{Factors: []string{FactorTOTP}}})
	req := httptest.NewRequest("POST", "/auth/signup", strings.NewReader(`{"formFields":[{"id":"email","value":"fuzz-mfa@example.com"},{"id":"password","value":"fuzz mfa secret 1"}]}`))
	req.Header.Set("st-auth-mode", "header")
	rec := httptest.NewRecorder()
	a.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		f.Fatalf("sign-up: %d %s", rec.Code, rec.Body)
	}
	var base jsonClaims
	if _, err := a.parser.ParseWithClaims(rec.Header().Get("st-access-token"), &base, func(*jwt.Token) (any, error) { return key.verify, nil }); err != nil || base.MFA == nil {
		f.Fatalf("the session's token: %v, st-mfa %s", err, base.MFA)
	}
	reached := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	protected := a.RequireSession(reached)
	stepUp := a.RequireSession(reached, FactorWithin(FactorTOTP, 5*time.Minute))
	const unsatisfied = `{"message":"invalid claim","claimValidationErrors":[{"id":"st-mfa","reason":{"message":"MFA requirement for auth is not satisfied"}}]}`
	const stale = `{"message":"invalid claim","claimValidationErrors":[{"id":"st-mfa","reason":{"message":"Factor validation failed: totp not completed within 300 seconds","factorId":"totp"}}]}`

	f.Fuzz(func(t *testing.T, claim []byte) {
		if len(claim) > 0 && !json.Valid(claim) {
			// The server signs only claims it encoded, or read back from
			// its store as JSON: bytes that are not would make another
			// payload, not another claim.
			return
		}
		jc := base
		jc.MFA = json.RawMessage(claim)
		if len(claim) == 0 {
			jc.MFA = nil // no claim at all
		}
		c := jc.claims()
		tok, _, err := signAccessToken(key, &c, nil)
		if err != nil {
			t.Fatalf("signAccessToken: %v", err)
		}

		// What the server must make of it, read independently: the
		// payload is JSON only if the claim is; the claim must then be
		// an object of the claim's shape.
		var read struct {
			C map[string]int64 `json:"c"`
			V bool             `json:"v"`
		}
		readable := len(claim) == 0 || json.Unmarshal(claim, &read) == nil
		for k := range read.C {
			readable = readable && len(k) >= 1 && len(k) <= 32
		}
		at, done := read.C[FactorTOTP]
		fresh := done && now.Sub(time.Unix(at, 0)) <= 5*time.Minute

		serve := func(h http.Handler, method, path string) *httptest.ResponseRecorder {
			req := httptest.NewRequest(method, path, nil)
			req.Header.Set("Authorization", "Bearer "+tok)
			req.Header.Set("st-auth-mode", "header")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code >= 500 {
				t.Fatalf("%s %s with st-mfa %q: %d %s", method, path, claim, rec.Code, rec.Body)
			}
			return rec
		}
		want := func(what string, rec *httptest.ResponseRecorder, code int, body string) {
			t.Helper()
			if rec.Code != code || body != "" && strings.TrimSpace(rec.Body.String()) != body {
				t.Fatalf("%s with st-mfa %q: %d %s, want %d %s", what, claim, rec.Code, rec.Body, code, body)
			}
		}
		refused := `{"message":"try refresh token","reason":"invalid"}`
		if len(tok) > maxTokenLen {
			refused, readable = `{"message":"try refresh token","reason":"malformed"}`, false // too long to read
		}
		p, s := serve(protected, "GET", "/api/me"), serve(stepUp, "GET", "/api/sensitive")
		switch {
		case !readable:
			want("the protected route", p, http.StatusUnauthorized, refused)
			want("the step-up route", s, http.StatusUnauthorized, refused)
		case !read.V || len(claim) == 0:
			want("the protected route", p, http.StatusForbidden, unsatisfied)
			want("the step-up route", s, http.StatusForbidden, unsatisfied)
		case !fresh:
			want("the protected route", p, http.StatusNoContent, "")
			want("the step-up route", s, http.StatusForbidden, stale)
		default:
			want("the protected route", p, http.StatusNoContent, "")
			want("the step-up route", s, http.StatusNoContent, "")
		}

		info := serve(a, "PUT", "/auth/mfa/info")
		if !readable {
			want("/mfa/info", info, http.StatusUnauthorized, refused)
			return
		}
		want("/mfa/info", info, http.StatusOK, "")
		var answer struct {
			Status  string
			Factors struct{ Next, AlreadySetup, AllowedToSetup []string }
		}
		if err := json.Unmarshal(info.Body.Bytes(), &answer); err != nil || answer.Status != "OK" || answer.Factors.Next == nil {
			t.Fatalf("/mfa/info with st-mfa %q: %s", claim, info.Body)
		}
		// The store's claim, not the token's: the session's own, rewritten
		// into a new token whenever the token's differs from it.
		if rewritten := info.Header().Get("st-access-token"); (rewritten != "") != (string(claim) != string(base.MFA)) {
			t.Fatalf("/mfa/info with st-mfa %q: new token %v", claim, rewritten != "")
		}
	})
}
