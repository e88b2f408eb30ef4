package auth_test

import (
	"net/http"
	"testing"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/store/memstore"
)

func TestRouting(t *testing.T) {
	t.Parallel()
	s := authtest.NewServer(t, auth.Config{SigningAlgorithm: auth.EdDSA})
	for _, tc := range []struct {
		method, path string
		code         int
	}{
		{"GET", "/auth/signup", http.StatusMethodNotAllowed},
		{"GET", "/auth/signin", http.StatusMethodNotAllowed},
		{"GET", "/auth/session/refresh", http.StatusMethodNotAllowed},
		{"GET", "/auth/signout", http.StatusMethodNotAllowed},
		{"POST", "/auth/emailpassword/email/exists?email=a@example.com", http.StatusMethodNotAllowed},
		{"POST", "/auth/jwt/jwks.json", http.StatusMethodNotAllowed},
		{"HEAD", "/auth/emailpassword/email/exists?email=a@example.com", http.StatusOK},
		{"GET", "/auth/nope", http.StatusNotFound},
		{"GET", "/authx/signup", http.StatusNotFound},
		// Preflight is never a 401.
		{"OPTIONS", "/auth/signup", http.StatusNoContent},
		{"OPTIONS", "/auth/session/refresh", http.StatusNoContent},
		{"OPTIONS", "/auth/signout", http.StatusNoContent},
		{"OPTIONS", "/auth/emailpassword/email/exists", http.StatusNoContent},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			t.Parallel()
			res := send(t, s, tc.method, tc.path, "", nil)
			if res.StatusCode != tc.code {
				t.Errorf("got %d %s, want %d", res.StatusCode, res.Body, tc.code)
			}
			if tc.code == http.StatusMethodNotAllowed && res.Header.Get("Allow") == "" {
				t.Error("405 without Allow")
			}
		})
	}
	t.Run("tenant public", func(t *testing.T) {
		t.Parallel()
		email := s.NewEmail()
		res := send(t, s, "POST", "/auth/public/signup", credBody(email, authtest.Password), hdr("rid", "emailpassword", "st-auth-mode", "header"))
		uid, _ := res.JSON["user"].(map[string]any)["id"].(string)
		wantTokens(t, s, res, authtest.Header, uid)
		res = send(t, s, "POST", "/auth/public/signin", credBody(email, authtest.Password), hdr("rid", "emailpassword", "st-auth-mode", "header"))
		wantTokens(t, s, res, authtest.Header, uid)
	})
}

func TestInstancesShareStore(t *testing.T) {
	t.Parallel()
	for _, alg := range []string{auth.HS256, auth.EdDSA} {
		for _, m := range authtest.Modes {
			t.Run(alg+"/"+m.String(), func(t *testing.T) {
				t.Parallel()
				shared := memstore.New()
				a := authtest.NewServer(t, auth.Config{Store: shared, SigningAlgorithm: alg})
				b := authtest.NewServer(t, auth.Config{Store: shared, SigningAlgorithm: alg})
				ca, u := a.SignedIn(m)
				access, refresh := ca.Tokens()

				cb := b.NewClient(m)
				cb.SetTokens(access, refresh)
				wantSession(t, cb, u.ID)
				access2, _ := wantTokens(t, b, cb.Refresh(), m, u.ID)
				wantSession(t, cb, u.ID)

				// Back on a: the token b issued works, the one b replaced is theft.
				ca.SetTokens(access2, "")
				wantSession(t, ca, u.ID)
				wantMessage(t, ca.Refresh(), http.StatusUnauthorized, "token theft detected")
				wantMessage(t, cb.Refresh(), http.StatusUnauthorized, "unauthorised")

				// A user made on b signs in on a.
				email := "shared-" + m.String() + "@example.com"
				if res := b.NewClient(m).SignUp(email, authtest.Password); res.Status != "OK" {
					t.Fatalf("sign-up on b: %s", res.Body)
				}
				c := a.NewClient(m)
				res := c.SignIn(email, authtest.Password)
				uid, _ := res.JSON["user"].(map[string]any)["id"].(string)
				wantTokens(t, a, res, m, uid)
				if res := b.NewClient(m).SignUp(email, authtest.Password); res.Status != "FIELD_ERROR" {
					t.Errorf("duplicate sign-up across instances: %s", res.Body)
				}
			})
		}
	}
}
