// Command chi shows the auth library in a go-chi/chi router: the auth
// handler mounted under /auth, a route group that RequireSession guards
// with a rule (a verified email), a handler that reads the session, and a
// route outside the group that stays open. chi routes take net/http
// handlers and middleware as they are, so nothing is adapted.
//
//	go run ./chi -addr 127.0.0.1:8083
//
// GET /api/me answers {"userId": ...} to a signed-in user whose email is
// verified. Verification emails are written to stderr: the SuperTokens
// frontend asks for one (POST /auth/user/email/verify/token) and sends its
// token back (POST /auth/user/email/verify).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/emailverification"
	"github.com/latchkit/auth/mailer"
	"github.com/latchkit/auth/store/memstore"
)

// newRouter mounts a's routes and the application's.
func newRouter(a *auth.Auth) http.Handler {
	r := chi.NewRouter()
	r.Mount("/auth", a)
	r.Get("/health", health)
	r.Route("/api", func(r chi.Router) {
		r.Use(func(next http.Handler) http.Handler {
			return a.RequireSession(next, auth.VerifiedEmail())
		})
		r.Get("/me", me)
	})
	return r
}

// me answers with the id of the session's user.
func me(w http.ResponseWriter, r *http.Request) {
	s, _ := auth.SessionFromContext(r.Context())
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]string{"userId": s.UserID})
}

// health is open to everyone.
func health(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintln(w, `{"status":"ok"}`)
}

// config is the auth configuration of an API served at appURL.
func config(appURL string) auth.Config {
	return auth.Config{
		Store:  memstore.New(),
		AppURL: appURL,
		// Plain HTTP, for local development: remove behind TLS.
		Cookie: auth.CookieConfig{InsecureAllowHTTP: true},
		// Verification links go to stderr; use mailer.NewSMTP in production.
		Email:             auth.EmailConfig{Mailer: mailer.NewLog(os.Stderr)},
		EmailVerification: emailverification.Config{Mode: emailverification.Optional},
	}
}

func main() {
	addr := flag.String("addr", "127.0.0.1:8083", "address to listen on")
	flag.Parse()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	a, err := auth.New(config("http://" + ln.Addr().String()))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("chi: listening on http://%s (auth under /auth, GET /api/me)\n", ln.Addr())
	srv := &http.Server{Handler: newRouter(a), ReadHeaderTimeout: 10 * time.Second}
	log.Fatal(srv.Serve(ln))
}
