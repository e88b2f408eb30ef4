package authtest

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/emailpassword"
	"github.com/latchkit/auth/store/memstore"
)

// Server is a running HTTPS test server with an *auth.Auth mounted at its
// base path. Add the application's own routes to Mux.
//
// The embedded *httptest.Server keeps its meaning: Client is its plain
// *http.Client and Config its *http.Server. NewClient makes a client that
// speaks the auth protocol, and AuthConfig is the auth.Config.
type Server struct {
	*httptest.Server
	// Auth is the Auth under test, made by auth.New from AuthConfig.
	Auth *auth.Auth
	// AuthConfig is the config as passed to auth.New, with the test
	// defaults filled in.
	AuthConfig auth.Config
	// Clock is the clock of AuthConfig.Now, or nil if the caller set Now.
	Clock *Clock
	// Mux is the server's handler: the Auth at its base path and
	// GET /api/session are on it; add the application's routes.
	Mux *http.ServeMux
	// Mailbox receives the reset and verification emails, unless
	// AuthConfig.Email.Mailer was set.
	Mailbox *Mailbox

	tb    testing.TB
	users atomic.Int64
}

// Start is the time a Server's clock starts at.
var Start = time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)

// NewServer starts a server for an Auth made from cfg, and closes it when
// the test ends. Unset fields get test defaults: a fresh memstore, a Clock
// at Start, cheap password hashing (the real parameters would dominate a
// test's run time), a Mailbox as the Mailer and the server's own URL as
// AppURL. Set those fields to test with something else.
//
// Besides the auth routes, the server answers GET /api/session behind
// RequireSession with the session as JSON: {"userId", "sessionHandle"}.
func NewServer(tb testing.TB, cfg auth.Config) *Server {
	tb.Helper()
	s := &Server{tb: tb, Mux: http.NewServeMux()}
	if cfg.Store == nil {
		cfg.Store = memstore.New()
	}
	if cfg.Now == nil {
		s.Clock = NewClock(Start)
		cfg.Now = s.Clock.Now
	}
	if cfg.EmailPassword.Hashing == (emailpassword.Hashing{}) {
		cfg.EmailPassword.Hashing = emailpassword.Hashing{Memory: 64, Iterations: 1, Parallelism: 1}
		cfg.EmailPassword.InsecureWeakHashing = true
	}
	s.Server = httptest.NewUnstartedServer(s.Mux)
	// Clients of a closing test server abandon TLS handshakes; that is
	// not worth a log line.
	s.Server.Config.ErrorLog = log.New(io.Discard, "", 0)
	if cfg.Email.Mailer == nil {
		s.Mailbox = NewMailbox()
		cfg.Email.Mailer = s.Mailbox
	}
	if cfg.AppURL == "" {
		cfg.AppURL = "https://" + s.Server.Listener.Addr().String()
	}
	a, err := auth.New(cfg)
	if err != nil {
		s.Server.Close()
		tb.Fatalf("authtest: auth.New: %v", err)
	}
	s.Auth, s.AuthConfig = a, cfg
	base := cfg.BasePath
	if base == "" {
		base = auth.DefaultBasePath
	}
	s.Mux.Handle(base+"/", a)
	s.Mux.Handle("GET /api/session", a.RequireSession(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sess, _ := auth.SessionFromContext(r.Context())
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"userId":%q,"sessionHandle":%q}`, sess.UserID, sess.Handle)
	})))
	s.Server.StartTLS()
	tb.Cleanup(func() {
		s.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := a.Close(ctx); err != nil {
			tb.Errorf("authtest: closing the Auth: %v", err)
		}
	})
	return s
}

// Password is the password fixtures sign up with.
const Password = "correct horse 1"

// NewEmail returns an email no other call on this server returned.
func (s *Server) NewEmail() string {
	return fmt.Sprintf("user%d@example.com", s.users.Add(1))
}

// SignedIn signs up a new user over HTTP with a client in mode m and
// returns the client, holding the session, and the user. The user's email
// is not verified, as after any sign-up with a password.
func (s *Server) SignedIn(m Mode) (*Client, auth.User) {
	s.tb.Helper()
	c := s.NewClient(m)
	email := s.NewEmail()
	if res := c.SignUp(email, Password); res.StatusCode != http.StatusOK || res.Status != "OK" {
		s.tb.Fatalf("authtest: sign-up of %s: %d %s", email, res.StatusCode, res.Body)
	}
	u, err := s.Auth.UserByEmail(s.tb.Context(), email)
	if err != nil {
		s.tb.Fatalf("authtest: user %s after sign-up: %v", email, err)
	}
	return c, u
}

// SignedInVerified is SignedIn for a user whose email is verified: it
// signs up, marks the email verified through the Go API, and signs in
// again, so that the client's session says so from the start.
func (s *Server) SignedInVerified(m Mode) (*Client, auth.User) {
	s.tb.Helper()
	first, u := s.SignedIn(m)
	if err := s.Auth.SetEmailVerified(s.tb.Context(), u.LoginMethods[0].ID, true); err != nil {
		s.tb.Fatalf("authtest: marking %s verified: %v", u.Email, err)
	}
	first.SignOut()
	c := s.NewClient(m)
	if res := c.SignIn(u.Email, Password); res.StatusCode != http.StatusOK || res.Status != "OK" {
		s.tb.Fatalf("authtest: sign-in of %s: %d %s", u.Email, res.StatusCode, res.Body)
	}
	u, err := s.Auth.UserByID(s.tb.Context(), u.ID)
	if err != nil {
		s.tb.Fatalf("authtest: user %s: %v", u.ID, err)
	}
	return c, u
}
