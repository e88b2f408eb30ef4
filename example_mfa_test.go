package auth_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/emailpassword"
	"github.com/latchkit/auth/store/memstore"
)

// mfBrowser is a frontend in header mode, for the MFA examples: it sends
// requests to h with its access token, and keeps the new one an answer
// hands out (a completed factor rewrites it).
type mfBrowser struct {
	h      http.Handler
	access string
}

// send sends a request and returns the answer's status and body.
func (b *mfBrowser) send(method, path, body string) (int, string) {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("st-auth-mode", "header")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if b.access != "" {
		req.Header.Set("Authorization", "Bearer "+b.access)
	}
	rec := httptest.NewRecorder()
	b.h.ServeHTTP(rec, req)
	if tok := rec.Header().Get("st-access-token"); tok != "" {
		b.access = tok
	}
	return rec.Code, rec.Body.String()
}

// signIn signs in (or up, with path /auth/signup) with a new session.
func (b *mfBrowser) signIn(path, email string) {
	b.access = ""
	b.send("POST", path, string(authtest.Credentials(email, "correct horse 1")))
}

// mfExampleMux mounts a at /auth/ and GET /api/me behind RequireSession
// with rules.
func mfExampleMux(a *auth.Auth, rules ...auth.Rule) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("/auth/", a)
	mux.Handle("GET /api/me", a.RequireSession(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "hello")
	}), rules...))
	return mux
}

// mfCheapHashing is for the examples only: the real parameters would make
// them slow.
var mfCheapHashing = emailpassword.Config{Hashing: emailpassword.Hashing{Memory: 64, Iterations: 1, Parallelism: 1}, InsecureWeakHashing: true}

// Every user must complete TOTP after their password. A new user's
// session is refused by protected routes, with the st-mfa claim error the
// SDKs answer with their MFA screens, until an authenticator app is set
// up with its first code; the session then goes on with a new access
// token.
func ExampleMFAConfig() {
	clock := authtest.NewClock(time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC))
	a, err := auth.New(auth.Config{
		Store:         memstore.New(),
		Now:           clock.Now,
		EmailPassword: mfCheapHashing,
		MFA:           auth.MFAConfig{Required: []string{auth.FactorTOTP}, Issuer: "Example"},
	})
	if err != nil {
		log.Fatal(err)
	}
	b := &mfBrowser{h: mfExampleMux(a)}
	b.signIn("/auth/signup", "ada@example.com")
	fmt.Println(b.send("GET", "/api/me", ""))

	_, body := b.send("PUT", "/auth/mfa/info", "")
	var info struct{ Factors struct{ Next []string } }
	json.Unmarshal([]byte(body), &info)
	fmt.Println("next:", info.Factors.Next)

	_, body = b.send("POST", "/auth/totp/device", `{"deviceName":"phone"}`)
	var device struct{ Secret, QRCodeString string }
	json.Unmarshal([]byte(body), &device)
	fmt.Println("QR code:", strings.Split(device.QRCodeString, "?")[0])

	// The code the app shows, typed in.
	code := authtest.TOTPCode(device.Secret, clock.Now())
	fmt.Println(b.send("POST", "/auth/totp/device/verify", `{"deviceName":"phone","totp":"`+code+`"}`))
	fmt.Println(b.send("GET", "/api/me", ""))
	// Output:
	// 403 {"message":"invalid claim","claimValidationErrors":[{"id":"st-mfa","reason":{"message":"MFA requirement for auth is not satisfied"}}]}
	// next: [totp]
	// QR code: otpauth://totp/Example:ada@example.com
	// 200 {"status":"OK","wasAlreadyVerified":false}
	// 200 hello
}

// A sensitive route asks for TOTP completed within the last five minutes
// (step-up). An older one is refused with the factor named, so that the
// frontend asks for a code again; the code makes the route open again.
func ExampleFactorWithin() {
	clock := authtest.NewClock(time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC))
	a, err := auth.New(auth.Config{
		Store:         memstore.New(),
		Now:           clock.Now,
		EmailPassword: mfCheapHashing,
		MFA:           auth.MFAConfig{Required: []string{auth.FactorTOTP}},
	})
	if err != nil {
		log.Fatal(err)
	}
	b := &mfBrowser{h: mfExampleMux(a, auth.FactorWithin(auth.FactorTOTP, 5*time.Minute))}
	b.signIn("/auth/signup", "ada@example.com")
	_, body := b.send("POST", "/auth/totp/device", `{"deviceName":"phone"}`)
	var device struct{ Secret string }
	json.Unmarshal([]byte(body), &device)
	b.send("POST", "/auth/totp/device/verify", `{"deviceName":"phone","totp":"`+authtest.TOTPCode(device.Secret, clock.Now())+`"}`)
	fmt.Println(b.send("GET", "/api/me", ""))

	clock.Advance(10 * time.Minute)
	fmt.Println(b.send("GET", "/api/me", ""))
	fmt.Println(b.send("POST", "/auth/totp/verify", `{"totp":"`+authtest.TOTPCode(device.Secret, clock.Now())+`"}`))
	fmt.Println(b.send("GET", "/api/me", ""))
	// Output:
	// 200 hello
	// 403 {"message":"invalid claim","claimValidationErrors":[{"id":"st-mfa","reason":{"message":"Factor validation failed: totp not completed within 300 seconds","factorId":"totp"}}]}
	// 200 {"status":"OK"}
	// 200 hello
}

// With TOTP offered but not required, the application requires it of one
// user: their next sign-in must complete it, and may set it up.
func ExampleAuth_RequireFactors() {
	a, err := auth.New(auth.Config{
		Store:         memstore.New(),
		EmailPassword: mfCheapHashing,
		MFA:           auth.MFAConfig{Factors: []string{auth.FactorTOTP}},
	})
	if err != nil {
		log.Fatal(err)
	}
	b := &mfBrowser{h: mfExampleMux(a)}
	b.signIn("/auth/signup", "ada@example.com")
	fmt.Println(b.send("GET", "/api/me", ""))

	ctx := context.Background()
	u, err := a.UserByEmail(ctx, "ada@example.com")
	if err != nil {
		log.Fatal(err)
	}
	if err := a.RequireFactors(ctx, u.ID, auth.FactorTOTP); err != nil {
		log.Fatal(err)
	}
	b.signIn("/auth/signin", "ada@example.com")
	code, _ := b.send("GET", "/api/me", "")
	fmt.Println(code)
	_, body := b.send("PUT", "/auth/mfa/info", "")
	var info struct {
		Factors struct{ Next, AllowedToSetup []string }
	}
	json.Unmarshal([]byte(body), &info)
	fmt.Println("next:", info.Factors.Next, "allowed to set up:", info.Factors.AllowedToSetup)
	// Output:
	// 200 hello
	// 403
	// next: [totp] allowed to set up: [totp]
}

// An account page makes a new set of recovery codes for a user through the
// Go API, shows them once, and lists what the user has set up.
func ExampleAuth_NewRecoveryCodes() {
	a, err := auth.New(auth.Config{
		Store:         memstore.New(),
		EmailPassword: mfCheapHashing,
		MFA:           auth.MFAConfig{Factors: []string{auth.FactorTOTP}},
	})
	if err != nil {
		log.Fatal(err)
	}
	b := &mfBrowser{h: mfExampleMux(a)}
	b.signIn("/auth/signup", "grace@example.com")
	ctx := context.Background()
	u, err := a.UserByEmail(ctx, "grace@example.com")
	if err != nil {
		log.Fatal(err)
	}
	codes, err := a.NewRecoveryCodes(ctx, u.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(codes), "codes like", len(codes[0]), "characters")
	sf, err := a.SecondFactors(ctx, u.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(sf.RecoveryCodes, "unused,", len(sf.TOTPDevices), "authenticator apps")
	// Output:
	// 10 codes like 19 characters
	// 10 unused, 0 authenticator apps
}
