package emailchange_test

import (
	"context"
	"fmt"
	"log"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/emailchange"
	"github.com/latchkit/auth/mailer"
	"github.com/latchkit/auth/store/memstore"
)

// A signed-in user asks to move their account to a new address; the
// link mailed there makes the change, and the old address is told, with
// a link to undo it. Emails go out off the request's path: the example
// waits for them with Close, and uses a second Auth on the same store to
// open the link, in the same session.
func ExampleConfig() {
	var mu sync.Mutex
	var sent []mailer.Message
	st := memstore.New()
	newAuth := func() *auth.Auth {
		a, err := auth.New(auth.Config{
			Store:  st,
			AppURL: "https://app.example",
			Email: auth.EmailConfig{Mailer: mailer.Func(func(_ context.Context, m mailer.Message) error {
				mu.Lock()
				defer mu.Unlock()
				sent = append(sent, m)
				return nil
			})},
			EmailChange: emailchange.Config{Enabled: true},
		})
		if err != nil {
			log.Fatal(err)
		}
		return a
	}
	call := func(a *auth.Auth, path, token, body string) string {
		req := httptest.NewRequest("POST", path, strings.NewReader(body))
		req.Header.Set("st-auth-mode", "header")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		rec := httptest.NewRecorder()
		a.ServeHTTP(rec, req)
		if t := rec.Header().Get("st-access-token"); t != "" {
			return t
		}
		return strings.TrimSpace(rec.Body.String())
	}
	tokenIn := func(m mailer.Message) string {
		u, _ := url.Parse(regexp.MustCompile(`https://\S+`).FindString(m.Text))
		return u.Query().Get("token")
	}

	a := newAuth()
	access := call(a, "/auth/signup", "", `{"formFields":[{"id":"email","value":"ada@example.com"},{"id":"password","value":"analytical engine 1"}]}`)
	fmt.Println(call(a, "/auth/user/email/change", access, `{"email":"ada@lovelace.example"}`))
	a.Close(context.Background())
	fmt.Println(sent[0].To.Address, "|", sent[0].Subject)

	b := newAuth()
	// The link is opened signed in to the account it changes.
	fmt.Println(call(b, "/auth/user/email/change/verify", access, `{"token":"`+tokenIn(sent[0])+`"}`))
	b.Close(context.Background())
	fmt.Println(sent[1].To.Address, "|", sent[1].Subject)
	// Output:
	// {"status":"OK"}
	// ada@lovelace.example | Confirm your new email address
	// {"status":"OK","email":"ada@lovelace.example"}
	// ada@example.com | The email address of your account was changed
}
