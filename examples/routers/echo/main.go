// Command echo shows the auth library in a labstack/echo router: the auth
// handler mounted under /auth with echo.WrapHandler, a route group that
// RequireSession guards with a rule (a verified email) through
// echo.WrapMiddleware, a handler that reads the session, and a route
// outside the group that stays open.
//
//	go run ./echo -addr 127.0.0.1:8084
//
// GET /api/me answers {"userId": ...} to a signed-in user whose email is
// verified. Verification emails are written to stderr: the SuperTokens
// frontend asks for one (POST /auth/user/email/verify/token) and sends its
// token back (POST /auth/user/email/verify).
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/emailverification"
	"github.com/latchkit/auth/mailer"
	"github.com/latchkit/auth/store/memstore"
)

// newRouter mounts a's routes and the application's.
func newRouter(a *auth.Auth) *echo.Echo {
	e := echo.New()
	e.Any("/auth/*", echo.WrapHandler(a))
	e.GET("/health", health)
	api := e.Group("/api", echo.WrapMiddleware(func(next http.Handler) http.Handler {
		return a.RequireSession(next, auth.VerifiedEmail())
	}))
	api.GET("/me", me)
	return e
}

// me answers with the id of the session's user.
func me(c echo.Context) error {
	s, _ := auth.SessionFromContext(c.Request().Context())
	return c.JSON(http.StatusOK, map[string]string{"userId": s.UserID})
}

// health is open to everyone.
func health(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
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
	addr := flag.String("addr", "127.0.0.1:8084", "address to listen on")
	flag.Parse()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	a, err := auth.New(config("http://" + ln.Addr().String()))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("echo: listening on http://%s (auth under /auth, GET /api/me)\n", ln.Addr())
	srv := &http.Server{Handler: newRouter(a), ReadHeaderTimeout: 10 * time.Second}
	log.Fatal(srv.Serve(ln))
}
