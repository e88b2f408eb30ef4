package auth_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/emailpassword"
	"github.com/latchkit/auth/mailer"
	"github.com/latchkit/auth/store/memstore"
)

// A Mailer turns on password reset. Here a Func stands in for a real
// one; the email is sent off the request path, after the answer.
func ExampleConfig_mailer() {
	sent := make(chan mailer.Message, 1)
	a, err := auth.New(auth.Config{
		Store:  memstore.New(),
		AppURL: "https://app.example.com", // where the reset page is
		Email: auth.EmailConfig{Mailer: mailer.Func(func(ctx context.Context, m mailer.Message) error {
			sent <- m
			return nil
		})},
	})
	if err != nil {
		log.Fatal(err)
	}
	srv := httptest.NewServer(a)
	defer srv.Close()
	post := func(path, body string) string {
		res, err := http.Post(srv.URL+path, "application/json", strings.NewReader(body))
		if err != nil {
			log.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return fmt.Sprint(res.StatusCode, " ", string(b))
	}
	if got := post("/auth/signup", `{"formFields":[{"id":"email","value":"ada@example.com"},{"id":"password","value":"analytical engine 1"}]}`); !strings.HasPrefix(got, `200 {"status":"OK"`) {
		log.Fatal(got)
	}

	fmt.Println(post("/auth/user/password/reset/token", `{"formFields":[{"id":"email","value":"ada@example.com"}]}`))
	m := <-sent
	fmt.Println("From:", m.From.String())
	fmt.Println("To:", m.To.String())
	fmt.Println("Subject:", m.Subject)
	for line := range strings.Lines(m.Text) {
		if page, _, ok := strings.Cut(line, "?token="); ok {
			fmt.Println("Link:", page+"?token=…")
		}
	}

	// On shutdown, after http.Server.Shutdown: wait for queued emails.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.Close(ctx); err != nil {
		log.Print(err)
	}
	// Output:
	// 200 {"status":"OK"}
	// From: <no-reply@app.example.com>
	// To: <ada@example.com>
	// Subject: Reset your password
	// Link: https://app.example.com/auth/reset-password?token=…
}

// Production sends through an SMTP relay or a provider's submission
// endpoint, configured by URL, with the sender and reset page spelled out.
func ExampleConfig_smtp() {
	m, err := mailer.NewSMTP("smtp://apikey:secret@smtp.example.com:587") // STARTTLS required
	if err != nil {
		log.Fatal(err)
	}
	a, err := auth.New(auth.Config{
		Store:  memstore.New(),
		AppURL: "https://app.example.com",
		Email: auth.EmailConfig{
			Mailer: m,
			From:   "Example <no-reply@example.com>",
		},
		EmailPassword: emailpassword.Config{ResetPasswordURL: "https://app.example.com/account/new-password"},
	})
	if err != nil {
		log.Fatal(err)
	}
	http.Handle("/auth/", a)
}
