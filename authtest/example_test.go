package authtest_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/provider"
)

// An application's test of a page behind RequireSession, over HTTP: sign
// up, use the session, let the access token expire, refresh.
func ExampleNewServer() {
	testProfile := func(t testing.TB) {
		s := authtest.NewServer(t, auth.Config{})
		s.Mux.Handle("GET /profile", s.Auth.RequireSession(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			sess, _ := auth.SessionFromContext(r.Context())
			u, err := s.Auth.UserByID(r.Context(), sess.UserID)
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			fmt.Fprintf(w, "profile of %s", u.Email)
		})))

		c, _ := s.SignedIn(authtest.Header) // a new user, signed up over HTTP
		res := c.Get("/profile")
		fmt.Println(res.StatusCode, string(res.Body))

		s.Clock.Advance(2 * time.Hour) // past the access token's hour
		res = c.Get("/profile")
		fmt.Println(res.StatusCode, res.Message)

		res = c.Refresh() // as the frontend SDK does on that answer
		fmt.Println(res.StatusCode, res.IssuedTokens())
		res = c.Get("/profile")
		fmt.Println(res.StatusCode, string(res.Body))
	}
	run(testProfile) // as go test would, with the test's *testing.T
	// Output:
	// 200 profile of user1@example.com
	// 401 try refresh token
	// 200 true
	// 200 profile of user1@example.com
}

// A handler behind RequireSession, tested with no server: the request
// carries the session the middleware would have verified.
func ExampleNewRequest() {
	profile := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sess, ok := auth.SessionFromContext(r.Context())
		if !ok {
			http.Error(w, "no session", http.StatusUnauthorized)
			return
		}
		fmt.Fprintf(w, "profile of user %s", sess.UserID)
	})

	rec := httptest.NewRecorder()
	profile.ServeHTTP(rec, authtest.NewRequest("GET", "/profile", auth.Session{UserID: "u1"}))
	fmt.Println(rec.Code, rec.Body)
	// Output:
	// 200 profile of user u1
}

// A password reset from the email to the new password. The library sends
// reset emails off the request path, so the test waits for the message.
func ExampleMailbox_WaitFor() {
	testReset := func(t testing.TB) {
		s := authtest.NewServer(t, auth.Config{}) // s.Mailbox is the Mailer
		_, u := s.SignedIn(authtest.Header)

		s.NewClient(authtest.Header).RequestPasswordReset(u.Email)
		msgs := s.Mailbox.WaitFor(t, 1, 5*time.Second)
		_, token := authtest.ResetLink(t, msgs[0])
		fmt.Println("to", msgs[0].To.Address)

		res := s.NewClient(authtest.Header).ResetPassword(token, "a new password 2")
		fmt.Println("reset:", res.Status)
		res = s.NewClient(authtest.Header).SignIn(u.Email, "a new password 2")
		fmt.Println("sign-in:", res.Status, res.IssuedTokens())
	}
	run(testReset) // as go test would, with the test's *testing.T
	// Output:
	// to user1@example.com
	// reset: OK
	// sign-in: OK true
}

// An application's test of sign-in with a provider, with a fake one: the
// provider.Provider talks to it, and Authorize plays the browser.
func ExampleNewProvider() {
	testSignIn := func(t testing.TB) {
		fake := authtest.NewProvider(t)
		fake.SetIdentity("ada", "ada@example.com", true)
		p := fake.Provider() // or provider.OIDC with fake.URL as the issuer

		ctx := context.Background()
		const redirect = "https://app.example.com/auth/callback/authtest"
		verifier := "a-verifier-of-43-characters-or-more-0123456"
		sum := sha256.Sum256([]byte(verifier))
		u, err := p.AuthURL(ctx, provider.AuthRequest{
			RedirectURI:   redirect,
			CodeChallenge: base64.RawURLEncoding.EncodeToString(sum[:]),
			Nonce:         "n-1",
		})
		if err != nil {
			t.Fatalf("%v", err)
		}
		back := fake.Authorize(t, u) // the query of the redirect: code, iss
		id, err := p.Exchange(ctx, provider.ExchangeRequest{
			Code: back.Get("code"), RedirectURI: redirect, CodeVerifier: verifier,
			Nonce: "n-1", Issuer: back.Get("iss"),
		})
		fmt.Printf("%+v %v\n", id, err)

		fake.SetFault(authtest.FaultExpired)
		back = fake.Authorize(t, u)
		_, err = p.Exchange(ctx, provider.ExchangeRequest{
			Code: back.Get("code"), RedirectURI: redirect, CodeVerifier: verifier, Nonce: "n-1",
		})
		fmt.Println(errors.Is(err, provider.ErrIDToken), err)
	}
	run(testSignIn)
	// Output:
	// {Subject:ada Email:ada@example.com EmailVerified:true} <nil>
	// true provider: ID token refused: authtest: expired
}

// run calls a test function as go test would, for the examples above: an
// Example has no *testing.T of its own.
func run(test func(testing.TB)) {
	t := &exampleT{}
	ctx, cancel := context.WithCancel(context.Background())
	t.ctx = ctx
	done := make(chan struct{})
	go func() { // FailNow ends this goroutine, as in a test
		defer close(done)
		test(t)
	}()
	<-done
	cancel()
	for i := len(t.cleanups) - 1; i >= 0; i-- {
		t.cleanups[i]()
	}
}

// exampleT is the part of testing.TB that authtest and the examples use.
// The embedded TB is nil: any other method panics.
type exampleT struct {
	testing.TB
	ctx      context.Context
	mu       sync.Mutex
	cleanups []func()
}

func (t *exampleT) Helper()                  {}
func (t *exampleT) Context() context.Context { return t.ctx }

func (t *exampleT) Cleanup(f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cleanups = append(t.cleanups, f)
}

func (t *exampleT) Errorf(format string, args ...any) {
	fmt.Printf("FAIL: "+format+"\n", args...)
}

func (t *exampleT) Fatalf(format string, args ...any) {
	t.Errorf(format, args...)
	runtime.Goexit()
}
