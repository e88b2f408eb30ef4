package auth_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/emailpassword"
	"github.com/latchkit/auth/store/memstore"
)

// Mount the handler and protect a route. The client signs up in header
// mode, then calls the protected route with its access token.
func Example() {
	a, err := auth.New(auth.Config{Store: memstore.New()})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/auth/", a)
	mux.Handle("GET /api/hello", a.RequireSession(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s, _ := auth.SessionFromContext(r.Context())
		u, _ := a.UserByID(r.Context(), s.UserID)
		fmt.Fprintf(w, "hello %s", u.Email)
	})))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	req, _ := http.NewRequest("POST", srv.URL+"/auth/signup", strings.NewReader(
		`{"formFields":[{"id":"email","value":"ada@example.com"},{"id":"password","value":"analytical engine 1"}]}`))
	req.Header.Set("st-auth-mode", "header")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		log.Fatal(err)
	}
	res.Body.Close()
	access := res.Header.Get("st-access-token")

	req, _ = http.NewRequest("GET", srv.URL+"/api/hello", nil)
	req.Header.Set("Authorization", "Bearer "+access)
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		log.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	fmt.Println(res.StatusCode, string(body))
	// Output: 200 hello ada@example.com
}

// A request without a session is refused with the protocol's 401, which
// the frontend SDKs understand.
func ExampleAuth_RequireSession() {
	a, err := auth.New(auth.Config{Store: memstore.New()})
	if err != nil {
		log.Fatal(err)
	}
	h := a.RequireSession(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "secret")
	}))
	for _, method := range []string{"GET", "POST", "OPTIONS"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(method, "/api/secret", nil))
		fmt.Println(method, rec.Code, rec.Body.String())
	}
	// Output:
	// GET 401 {"message":"unauthorised","reason":"no_token"}
	// POST 401 {"message":"unauthorised","reason":"no_token"}
	// OPTIONS 401 {"message":"unauthorised","reason":"no_token"}
}

// OptionalSession serves signed-in and signed-out visitors alike.
func ExampleAuth_OptionalSession() {
	a, err := auth.New(auth.Config{Store: memstore.New()})
	if err != nil {
		log.Fatal(err)
	}
	h := a.OptionalSession(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s, ok := auth.SessionFromContext(r.Context()); ok {
			fmt.Fprintf(w, "welcome back, %s", s.UserID)
			return
		}
		fmt.Fprint(w, "welcome, stranger")
	}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	fmt.Println(rec.Body.String())
	// Output: welcome, stranger
}

// VerifyRequest's errors match the protocol's answers with errors.Is:
// ErrUnauthorized when there is no session, ErrTryRefreshToken when the
// client should refresh and retry. A *SessionError says why, and unwraps
// to golang-jwt's error where one is the cause.
func ExampleAuth_VerifyRequest_errors() {
	clock := authtest.NewClock(time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC))
	a, err := auth.New(auth.Config{
		Store: memstore.New(),
		Now:   clock.Now,
		// Cheap hashing, for the example only.
		EmailPassword: emailpassword.Config{Hashing: emailpassword.Hashing{Memory: 64, Iterations: 1, Parallelism: 1}, InsecureWeakHashing: true},
	})
	if err != nil {
		log.Fatal(err)
	}
	// Sign up in header mode, as a client would, for an access token.
	signUp := httptest.NewRequest("POST", "/auth/signup", bytes.NewReader(authtest.Credentials("ada@example.com", "correct horse 1")))
	signUp.Header.Set("st-auth-mode", "header")
	rec := httptest.NewRecorder()
	a.ServeHTTP(rec, signUp)
	access := rec.Header().Get("st-access-token")

	verify := func(authorization string) {
		r := httptest.NewRequest("GET", "/api/me", nil)
		if authorization != "" {
			r.Header.Set("Authorization", authorization)
		}
		_, err := a.VerifyRequest(r)
		var se *auth.SessionError
		switch {
		case err == nil:
			fmt.Println("session")
		case errors.As(err, &se):
			fmt.Printf("unauthorized=%v try-refresh=%v reason=%s jwt-expired=%v\n",
				errors.Is(err, auth.ErrUnauthorized), errors.Is(err, auth.ErrTryRefreshToken),
				se.Reason, errors.Is(err, jwt.ErrTokenExpired))
		}
	}
	verify("")
	verify("Bearer " + access)
	forged := []byte(access) // one character of the signature changed
	if i := len(forged) - 5; forged[i] == 'A' {
		forged[i] = 'B'
	} else {
		forged[i] = 'A'
	}
	verify("Bearer " + string(forged))
	clock.Advance(time.Hour) // the token's lifetime, to the instant
	verify("Bearer " + access)
	// Output:
	// unauthorized=true try-refresh=false reason=no_token jwt-expired=false
	// session
	// unauthorized=false try-refresh=true reason=invalid jwt-expired=false
	// unauthorized=false try-refresh=true reason=expired jwt-expired=true
}

// Check a token that arrives without an HTTP request: here, in a job that
// a handler queued with the caller's access token. The worker holds the
// token to the same rules as RequireSession; once the user signs out, the
// token is refused (with CheckSessionInStore, at once).
func ExampleAuth_VerifyToken() {
	a, err := auth.New(auth.Config{Store: memstore.New(), CheckSessionInStore: true})
	if err != nil {
		log.Fatal(err)
	}
	call := func(path, token, body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("POST", path, strings.NewReader(body))
		req.Header.Set("st-auth-mode", "header")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		rec := httptest.NewRecorder()
		a.ServeHTTP(rec, req)
		return rec
	}
	access := call("/auth/signup", "", `{"formFields":[{"id":"email","value":"ada@example.com"},{"id":"password","value":"analytical engine 1"}]}`).
		Header().Get("st-access-token")

	job := struct{ Token string }{access} // what a queue would carry
	s, err := a.VerifyToken(context.Background(), job.Token)
	fmt.Println(s.UserID != "", err)

	call("/auth/signout", access, "")
	_, err = a.VerifyToken(context.Background(), job.Token)
	var se *auth.SessionError
	fmt.Println(errors.Is(err, auth.ErrUnauthorized), errors.As(err, &se) && se.Reason == auth.ReasonSignedOut)
	// Output:
	// true <nil>
	// true true
}
