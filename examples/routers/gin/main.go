// Command gin shows the auth library in a gin-gonic/gin router: the auth
// handler mounted under /auth with gin.WrapH, a route group that
// RequireSession guards with a rule (a verified email) through a small
// gin middleware, a handler that reads the session, and a route outside
// the group that stays open.
//
//	go run ./gin -addr 127.0.0.1:8085
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

	"github.com/gin-gonic/gin"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/emailverification"
	"github.com/latchkit/auth/mailer"
	"github.com/latchkit/auth/store/memstore"
)

// newRouter mounts a's routes and the application's.
func newRouter(a *auth.Auth) *gin.Engine {
	r := gin.Default()
	r.Any("/auth/*path", gin.WrapH(a))
	r.GET("/health", health)
	api := r.Group("/api", requireSession(a, auth.VerifiedEmail()))
	api.GET("/me", me)
	return r
}

// requireSession is a.RequireSession as gin middleware: the rest of the
// chain runs inside it, with the request that carries the session, and
// not at all when it refuses the request.
func requireSession(a *auth.Auth, rules ...auth.Rule) gin.HandlerFunc {
	return func(c *gin.Context) {
		a.RequireSession(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
			c.Request = r
			c.Next()
		}), rules...).ServeHTTP(c.Writer, c.Request)
		c.Abort() // the chain has run, or must not
	}
}

// me answers with the id of the session's user.
func me(c *gin.Context) {
	s, _ := auth.SessionFromContext(c.Request.Context())
	c.JSON(http.StatusOK, gin.H{"userId": s.UserID})
}

// health is open to everyone.
func health(c *gin.Context) {
	c.JSON(http.StatusOK, gin.H{"status": "ok"})
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
	addr := flag.String("addr", "127.0.0.1:8085", "address to listen on")
	flag.Parse()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	a, err := auth.New(config("http://" + ln.Addr().String()))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("gin: listening on http://%s (auth under /auth, GET /api/me)\n", ln.Addr())
	srv := &http.Server{Handler: newRouter(a), ReadHeaderTimeout: 10 * time.Second}
	log.Fatal(srv.Serve(ln))
}
