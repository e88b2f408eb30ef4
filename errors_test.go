package auth_test

import (
	"net/http"
	"testing"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/internal/faultstore"
	"github.com/latchkit/auth/store/memstore"
)

// A Store that panics gets the client a 500 with a message, not a cut
// connection, on the auth endpoints and behind RequireSession alike.
func TestStorePanicAnswers500(t *testing.T) {
	fs := faultstore.New(memstore.New())
	s := authtest.NewServer(t, auth.Config{Store: fs, CheckSessionInStore: true})
	c, u := s.SignedIn(authtest.Header)

	fs.Arm(faultstore.Plan{Call: 1, Method: "UserByLogin", When: faultstore.Before, Kind: faultstore.Panic})
	if res := c.SignIn(u.Email, authtest.Password); res.StatusCode != http.StatusInternalServerError || res.Message != "internal error" {
		t.Errorf("sign-in with a panicking store: %d %s; want 500 internal error", res.StatusCode, res.Body)
	}
	fs.Arm(faultstore.Plan{Call: 1, Method: "Session", When: faultstore.Before, Kind: faultstore.Panic})
	if res := c.Get("/api/session"); res.StatusCode != http.StatusInternalServerError || res.Message != "internal error" {
		t.Errorf("RequireSession with a panicking store: %d %s; want 500 internal error", res.StatusCode, res.Body)
	}
	fs.Disarm()
	if res := c.Get("/api/session"); res.StatusCode != http.StatusOK {
		t.Errorf("after the panics: %d %s", res.StatusCode, res.Body)
	}
}
