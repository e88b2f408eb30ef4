package emailverification_test

import (
	"context"
	"fmt"
	"log"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/emailverification"
	"github.com/latchkit/auth/mailer"
	"github.com/latchkit/auth/store/memstore"
)

// Links to the application's own page, valid for an hour. A signed-in
// user asks for one (the SDKs do on their "check your inbox" page); the
// email goes out off the request's path, so the example waits for it with
// Close.
func ExampleConfig() {
	var mu sync.Mutex
	var sent []mailer.Message
	a, err := auth.New(auth.Config{
		Store:  memstore.New(),
		AppURL: "https://app.example",
		Email: auth.EmailConfig{Mailer: mailer.Func(func(_ context.Context, m mailer.Message) error {
			mu.Lock()
			defer mu.Unlock()
			sent = append(sent, m)
			return nil
		})},
		EmailVerification: emailverification.Config{
			Mode:          emailverification.Optional,
			URL:           "https://app.example/welcome/verify",
			TokenLifetime: time.Hour,
		},
	})
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
	fmt.Println(strings.TrimSpace(call("/auth/user/email/verify/token", access, "").Body.String()))
	a.Close(context.Background())

	m := sent[0]
	fmt.Println(m.To.Address, "|", m.Subject)
	fmt.Println(strings.Contains(m.Text, "https://app.example/welcome/verify?token="), strings.Contains(m.Text, "1 hour"))
	// Output:
	// {"status":"OK"}
	// ada@example.com | Verify your email
	// true true
}
