package auth_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/emailverification"
	"github.com/latchkit/auth/store/memstore"
)

// Require a verified email on every protected route, except the page that
// asks the user to verify it. An unverified session gets the 403 the
// SDKs' EmailVerification recipe turns into its verify-email screen.
func ExampleAllowUnverifiedEmail() {
	mailbox := authtest.NewMailbox()
	a, err := auth.New(auth.Config{
		Store:             memstore.New(),
		AppURL:            "https://app.example",
		Email:             auth.EmailConfig{Mailer: mailbox},
		EmailVerification: emailverification.Config{Mode: emailverification.Required},
	})
	if err != nil {
		log.Fatal(err)
	}
	hello := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "hello") })
	mux := http.NewServeMux()
	mux.Handle("/auth/", a)
	mux.Handle("GET /api/hello", a.RequireSession(hello))
	mux.Handle("GET /api/please-verify", a.RequireSession(hello, auth.AllowUnverifiedEmail()))
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

	for _, path := range []string{"/api/hello", "/api/please-verify"} {
		req, _ = http.NewRequest("GET", srv.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+access)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			log.Fatal(err)
		}
		res.Body.Close()
		fmt.Println(path, res.StatusCode)
	}
	// Output:
	// /api/hello 403
	// /api/please-verify 200
}

// Manage a user's login methods and delete the user from the
// application's own code, an admin page for instance.
func ExampleAuth_DeleteUser() {
	st := memstore.New()
	a, err := auth.New(auth.Config{Store: st})
	if err != nil {
		log.Fatal(err)
	}
	srv := httptest.NewServer(a)
	defer srv.Close()
	res, err := http.Post(srv.URL+"/auth/signup", "application/json", strings.NewReader(
		`{"formFields":[{"id":"email","value":"ada@example.com"},{"id":"password","value":"analytical engine 1"}]}`))
	if err != nil {
		log.Fatal(err)
	}
	res.Body.Close()

	ctx := context.Background()
	u, _ := a.UserByEmail(ctx, "ada@example.com")
	m := u.LoginMethods[0]
	fmt.Println(m.Method, m.Email, m.EmailVerified)

	// Checked some other way, say by the support team:
	if err := a.SetEmailVerified(ctx, m.ID, true); err != nil {
		log.Fatal(err)
	}
	u, _ = a.UserByID(ctx, u.ID)
	fmt.Println("verified:", u.LoginMethods[0].EmailVerified)

	// A user always keeps one way to sign in.
	err = a.Unlink(ctx, u.ID, m.ID)
	fmt.Println(errors.Is(err, auth.ErrLastLogin))

	if err := a.DeleteUser(ctx, u.ID); err != nil {
		log.Fatal(err)
	}
	_, err = a.UserByID(ctx, u.ID)
	fmt.Println(errors.Is(err, auth.ErrNotFound))
	// Output:
	// emailpassword ada@example.com false
	// verified: true
	// true
	// true
}
