package emailpassword_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http/httptest"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/emailpassword"
	"github.com/latchkit/auth/mailer"
	"github.com/latchkit/auth/store/memstore"
)

// A policy of the application's own, reset links to its own page that
// work for half an hour, and at most four hashes at once. A password the
// policy refuses is a field error with the policy's message; a reset
// request is answered at once and mailed off the request's path, so the
// example waits for it with Close.
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
		EmailPassword: emailpassword.Config{
			Policy: func(pw string) error {
				if utf8.RuneCountInString(pw) < 12 {
					return errors.New("Use at least 12 characters")
				}
				return nil
			},
			MaxConcurrentHashes: 4,
			ResetPasswordURL:    "https://app.example/account/new-password",
			ResetTokenLifetime:  30 * time.Minute,
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	call := func(path, body string) string {
		req := httptest.NewRequest("POST", path, strings.NewReader(body))
		req.Header.Set("st-auth-mode", "header")
		rec := httptest.NewRecorder()
		a.ServeHTTP(rec, req)
		return strings.TrimSpace(rec.Body.String())
	}
	fmt.Println(call("/auth/signup", `{"formFields":[{"id":"email","value":"ada@example.com"},{"id":"password","value":"engine 1"}]}`))
	signedUp := call("/auth/signup", `{"formFields":[{"id":"email","value":"ada@example.com"},{"id":"password","value":"analytical engine"}]}`)
	fmt.Println(strings.HasPrefix(signedUp, `{"status":"OK"`))
	fmt.Println(call("/auth/user/password/reset/token", `{"formFields":[{"id":"email","value":"ada@example.com"}]}`))
	a.Close(context.Background())

	m := sent[0]
	fmt.Println(m.To.Address, "|", m.Subject)
	fmt.Println(strings.Contains(m.Text, "https://app.example/account/new-password?token="), strings.Contains(m.Text, "30 minutes"))
	// Output:
	// {"status":"FIELD_ERROR","formFields":[{"id":"password","error":"Use at least 12 characters"}]}
	// true
	// {"status":"OK"}
	// ada@example.com | Reset your password
	// true true
}
