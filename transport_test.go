package auth_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
)

func TestExposeHeadersAppended(t *testing.T) {
	t.Parallel()
	s := authtest.NewServer(t, auth.Config{})
	app := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Access-Control-Expose-Headers", "X-Request-Id")
		s.Auth.ServeHTTP(w, r)
	}))
	t.Cleanup(app.Close)
	for _, m := range authtest.Modes {
		t.Run(m.String(), func(t *testing.T) {
			t.Parallel()
			res, err := sendTo(app.Client(), app.URL, "POST", "/auth/signup", credBody(s.NewEmail(), authtest.Password),
				hdr(append([]string{"rid", "emailpassword", "Content-Type", "application/json"}, modeHeaders(m)...)...))
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != "OK" {
				t.Fatalf("sign-up: %d %s", res.StatusCode, res.Body)
			}
			want := []string{"x-request-id", "front-token"}
			if m == authtest.Header {
				want = append(want, "st-access-token", "st-refresh-token")
			}
			if got := exposed(res); !slices.Equal(got, want) {
				t.Errorf("Access-Control-Expose-Headers %q, want %q", got, want)
			}
		})
	}
	t.Run("clearing", func(t *testing.T) {
		t.Parallel()
		res, err := sendTo(app.Client(), app.URL, "POST", "/auth/session/refresh", "", hdr("rid", "session"))
		if err != nil {
			t.Fatal(err)
		}
		wantMessage(t, res, http.StatusUnauthorized, "unauthorised")
		want := []string{"x-request-id", "front-token", "st-access-token", "st-refresh-token"}
		if got := exposed(res); !slices.Equal(got, want) {
			t.Errorf("Access-Control-Expose-Headers %q, want %q", got, want)
		}
	})
}

// The front-token's length varies with the issuer; whatever it is, the
// base64 is padded, as atob needs.
func TestFrontTokenPadding(t *testing.T) {
	t.Parallel()
	for _, iss := range []string{"https://api.example.com", "https://api.example.com/", "https://api.example.com//"} {
		t.Run(iss, func(t *testing.T) {
			t.Parallel()
			s := authtest.NewServer(t, auth.Config{Issuer: iss})
			c := s.NewClient(authtest.Header)
			res := c.SignUp(s.NewEmail(), authtest.Password)
			uid, _ := res.JSON["user"].(map[string]any)["id"].(string)
			wantTokens(t, s, res, authtest.Header, uid)
			wantTokens(t, s, c.Refresh(), authtest.Header, uid)
			wantSession(t, c, uid)
		})
	}
}

func TestCookieConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		cfg    auth.CookieConfig
		domain string
		secure bool
	}{
		{"default", auth.CookieConfig{}, "", true},
		{"domain", auth.CookieConfig{Domain: "example.com"}, "example.com", true},
		{"insecure", auth.CookieConfig{InsecureAllowHTTP: true}, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := authtest.NewServer(t, auth.Config{Cookie: tc.cfg})
			for _, res := range []*authtest.Response{
				send(t, s, "POST", "/auth/signup", credBody("a@example.com", authtest.Password), hdr("rid", "emailpassword")),
				send(t, s, "POST", refreshPath, "", hdr("rid", "session")), // clearing
			} {
				for _, name := range []string{"sAccessToken", "sRefreshToken"} {
					if c := cookiesOf(res)[name]; c == nil || c.Domain != tc.domain || c.Secure != tc.secure {
						t.Errorf("cookie %s: %v, want Domain=%q Secure=%v", name, c, tc.domain, tc.secure)
					}
				}
			}
		})
	}
}

// The bearer token wins over the cookie on protected endpoints too, and
// cookie values are read URL-decoded.
func TestRequireSessionTransports(t *testing.T) {
	t.Parallel()
	s := authtest.NewServer(t, auth.Config{})
	cc, cu := s.SignedIn(authtest.Cookie)
	hc, hu := s.SignedIn(authtest.Header)
	cookieAccess, cookieRefresh := cc.Tokens()
	headerAccess, _ := hc.Tokens()
	get := func(h http.Header) *authtest.Response { return send(t, s, "GET", "/api/session", "", h) }
	wantUser := func(res *authtest.Response, uid string) {
		t.Helper()
		if res.StatusCode != http.StatusOK || res.JSON["userId"] != uid {
			t.Errorf("got %d %s, want the session of %s", res.StatusCode, res.Body, uid)
		}
	}
	wantUser(get(hdr("Cookie", "sAccessToken="+cookieAccess, "Authorization", "Bearer "+headerAccess)), hu.ID)
	wantMessage(t, get(hdr("Cookie", "sAccessToken="+cookieAccess, "Authorization", "Bearer garbage")), http.StatusUnauthorized, "try refresh token")
	// Other schemes are not ours: the cookie decides.
	wantUser(get(hdr("Cookie", "sAccessToken="+cookieAccess, "Authorization", "Basic dXNlcjpwYXNz")), cu.ID)
	// The SDK's own script cookies carry no credentials.
	wantMessage(t, get(hdr("Cookie", "st-access-token="+headerAccess+"; sFrontToken="+hc.FrontToken)), http.StatusUnauthorized, "unauthorised")

	// Percent-encoded cookies, as node writes them.
	encoded := strings.ReplaceAll(cookieAccess, ".", "%2E")
	wantUser(get(hdr("Cookie", "sAccessToken="+encoded)), cu.ID)
	encodedRefresh := "%" + fmt.Sprintf("%02X", cookieRefresh[0]) + cookieRefresh[1:]
	res := send(t, s, "POST", refreshPath, "", hdr("rid", "session", "Cookie", "sRefreshToken="+encodedRefresh))
	wantTokens(t, s, res, authtest.Cookie, cu.ID)
}

func TestCSRFWithSameSiteNone(t *testing.T) {
	t.Parallel()
	s := authtest.NewServer(t, auth.Config{Cookie: auth.CookieConfig{SameSite: http.SameSiteNoneMode}})
	addRoutes(s)
	c, u := s.SignedIn(authtest.Cookie)
	t.Run("cookies are SameSite=None and Secure", func(t *testing.T) {
		c2 := s.NewClient(authtest.Cookie)
		res := c2.SignUp(s.NewEmail(), authtest.Password)
		uid, _ := res.JSON["user"].(map[string]any)["id"].(string)
		wantTokensSameSite(t, s, res, authtest.Cookie, uid, http.SameSiteNoneMode)
	})
	access, refresh := c.Tokens()
	cookie := "sAccessToken=" + access
	post := func(h http.Header) *authtest.Response { return send(t, s, "POST", "/api/any", `{}`, h) }

	wantMessage(t, post(hdr("Cookie", cookie)), http.StatusUnauthorized, "try refresh token")
	wantBody(t, post(hdr("Cookie", cookie, "rid", "anti-csrf")), fmt.Sprintf(`{"userId":%q,"method":"POST"}`, u.ID))
	// GET needs no rid.
	wantBody(t, send(t, s, "GET", "/api/any", "", hdr("Cookie", cookie)), fmt.Sprintf(`{"userId":%q,"method":"GET"}`, u.ID))
	// Bearer tokens are no CSRF risk.
	hc, hu := s.SignedIn(authtest.Header)
	wantBody(t, post(hdr("Authorization", "Bearer "+hc.AccessToken)), fmt.Sprintf(`{"userId":%q,"method":"POST"}`, hu.ID))
	// Nor with OptionalSession does a cross-site POST pass as signed out.
	wantMessage(t, send(t, s, "POST", "/api/optional", "", hdr("Cookie", cookie)), http.StatusUnauthorized, "try refresh token")
	// Sign-out is a cookie POST too.
	wantMessage(t, send(t, s, "POST", "/auth/signout", "", hdr("Cookie", cookie)), http.StatusUnauthorized, "try refresh token")

	// A cookie refresh without rid is refused and harms nothing.
	res := send(t, s, "POST", refreshPath, "", hdr("Cookie", "sRefreshToken="+refresh))
	wantMessage(t, res, http.StatusUnauthorized, "unauthorised")
	res = send(t, s, "POST", refreshPath, "", hdr("Cookie", "sRefreshToken="+refresh, "rid", "session"))
	wantTokensSameSite(t, s, res, authtest.Cookie, u.ID, http.SameSiteNoneMode)
}
