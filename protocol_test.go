package auth_test

// Tests of the wire protocol (PROTOCOL.md, sections 1 to 5) over HTTP, in
// every token transfer mode where the mode matters.

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/store"
	"github.com/latchkit/auth/store/memstore"
)

// ---- 1. sign-up ----

func TestSignUpIssuesSession(t *testing.T) {
	t.Parallel()
	for _, m := range authtest.Modes {
		t.Run(m.String(), func(t *testing.T) {
			t.Parallel()
			s := authtest.NewServer(t, auth.Config{})
			c := s.NewClient(m)
			res := c.SignUp("  New.User@Example.COM\t", authtest.Password)
			user, _ := res.JSON["user"].(map[string]any)
			uid, _ := user["id"].(string)
			if uid == "" {
				t.Fatalf("no user id in %s", res.Body)
			}
			access, refresh := wantTokens(t, s, res, m, uid)
			if email := user["emails"]; !reflect.DeepEqual(email, []any{"new.user@example.com"}) {
				t.Errorf("emails %v, want the trimmed, lower-cased email", email)
			}
			if a, r := c.Tokens(); a != access || r != refresh {
				t.Errorf("client holds %q %q, the response issued %q %q", a, r, access, refresh)
			}
			wantSession(t, c, uid)
			u, err := s.Auth.UserByEmail(t.Context(), "new.user@example.com")
			if err != nil || u.ID != uid {
				t.Fatalf("UserByEmail: %v %v, want %s", u, err, uid)
			}
		})
	}
}

func keysOf(m map[string]any) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func TestUserObjectShape(t *testing.T) {
	t.Parallel()
	s := authtest.NewServer(t, auth.Config{})
	joined := float64(authtest.Start.UnixMilli())
	for _, tc := range []struct {
		fdi    string
		legacy bool
	}{
		{"", false},
		{"1.17", true},
		{"2.0", true},
		{"2.1", true},
		{"1.16,1.17", true},
		{"1.17,2.0", true},
		{"1.18", false},
		{"3.0", false},
		{"3.1,4.0,4.1,4.2", false},
		{"1.16,1.17,1.18,1.19,2.0,3.0,3.1,4.0,4.1", false},
	} {
		t.Run("fdi="+tc.fdi, func(t *testing.T) {
			t.Parallel()
			for _, path := range []string{"signup", "signin"} {
				c := s.NewClient(authtest.Header)
				if tc.fdi != "" {
					c.Header.Set("fdi-version", tc.fdi)
				}
				email := s.NewEmail()
				var res *authtest.Response
				if path == "signin" {
					s.NewClient(authtest.Header).SignUp(email, authtest.Password)
					res = c.SignIn(email, authtest.Password)
				} else {
					res = c.SignUp(email, authtest.Password)
				}
				if res.Status != "OK" {
					t.Fatalf("%s: %d %s", path, res.StatusCode, res.Body)
				}
				u, err := s.Auth.UserByEmail(t.Context(), email)
				if err != nil {
					t.Fatal(err)
				}
				user, _ := res.JSON["user"].(map[string]any)
				if tc.legacy {
					want := map[string]any{"id": u.ID, "email": email, "timeJoined": joined, "tenantIds": []any{"public"}}
					if !reflect.DeepEqual(user, want) {
						t.Errorf("%s: user %v, want the legacy shape %v", path, user, want)
					}
					continue
				}
				want := map[string]any{
					"id": u.ID, "isPrimaryUser": false, "tenantIds": []any{"public"},
					"emails": []any{email}, "phoneNumbers": []any{}, "thirdParty": []any{},
					"loginMethods": []any{map[string]any{
						"recipeId": "emailpassword", "recipeUserId": u.ID, "tenantIds": []any{"public"},
						"email": email, "timeJoined": joined, "verified": false,
					}},
					"timeJoined": joined,
				}
				if !reflect.DeepEqual(user, want) {
					t.Errorf("%s: user %v (keys %v), want %v", path, user, keysOf(user), want)
				}
			}
		})
	}
}

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

// ---- 2. sign-up errors and validation ----

func TestSignUpDuplicateEmail(t *testing.T) {
	t.Parallel()
	s := authtest.NewServer(t, auth.Config{})
	_, u := s.SignedIn(authtest.Header)
	const want = `{"status":"FIELD_ERROR","formFields":[{"id":"email","error":"This email already exists. Please sign in instead."}]}`
	for _, m := range authtest.Modes {
		for _, email := range []string{u.Email, "  " + strings.ToUpper(u.Email) + " "} {
			t.Run(m.String()+"/"+email, func(t *testing.T) {
				t.Parallel()
				res := s.NewClient(m).SignUp(email, "another password 9")
				wantBody(t, res, want)
				wantNoTokens(t, res)
			})
		}
	}
}

func TestSignUpValidation(t *testing.T) {
	t.Parallel()
	s := authtest.NewServer(t, auth.Config{})
	const (
		notOptional = "Field is not optional"
		badEmail    = "Email is invalid"
		short       = "Password must contain at least 8 characters, including a number"
		long        = "Password's length must be lesser than 100 characters"
		noLetter    = "Password must contain at least one alphabet"
		noDigit     = "Password must contain at least one number"
	)
	emoji := "\U0001F600" // two UTF-16 units
	ok := authtest.Password
	type fe struct{ id, msg string }
	for _, tc := range []struct {
		name string
		body string
		want []fe // nil: OK
	}{
		{"empty email", credBody("", ok), []fe{{"email", notOptional}}},
		{"blank email", credBody("   ", ok), []fe{{"email", notOptional}}},
		{"email field missing", `{"formFields":[{"id":"password","value":"` + ok + `"}]}`, []fe{{"email", notOptional}}},
		{"malformed email", credBody("not-an-email", ok), []fe{{"email", badEmail}}},
		{"email without tld", credBody("a@b", ok), []fe{{"email", badEmail}}},
		{"empty password", credBody("p1@example.com", ""), []fe{{"password", notOptional}}},
		{"password missing", `{"formFields":[{"id":"email","value":"p2@example.com"}]}`, []fe{{"password", notOptional}}},
		{"both empty", credBody("", ""), []fe{{"password", notOptional}, {"email", notOptional}}},
		{"short password", credBody("p3@example.com", "abc1"), []fe{{"password", short}}},
		{"7 characters", credBody("p4@example.com", "abcde12"), []fe{{"password", short}}},
		{"8 characters", credBody("p5@example.com", "abcdef12"), nil},
		{"99 characters", credBody("p6@example.com", "a1"+strings.Repeat("x", 97)), nil},
		{"100 characters", credBody("p7@example.com", "a1"+strings.Repeat("x", 98)), []fe{{"password", long}}},
		// 51 code points, but 100 UTF-16 units.
		{"49 astral characters", credBody("p8@example.com", "a1"+strings.Repeat(emoji, 49)), []fe{{"password", long}}},
		{"48 astral characters", credBody("p9@example.com", "a1"+strings.Repeat(emoji, 48)), nil},
		// 5 code points, but 8 UTF-16 units; 2 + 2*2 = 6 units is short.
		{"3 astral characters", credBody("p10@example.com", "a1"+strings.Repeat(emoji, 3)), nil},
		{"2 astral characters", credBody("p11@example.com", "a1"+strings.Repeat(emoji, 2)), []fe{{"password", short}}},
		{"no letter", credBody("p12@example.com", "12345678"), []fe{{"password", noLetter}}},
		{"non-ASCII letters only", credBody("p13@example.com", "ééééé123"), []fe{{"password", noLetter}}},
		{"no digit", credBody("p14@example.com", "abcdefgh"), []fe{{"password", noDigit}}},
		{"bad email and password", credBody("nope", "abc"), []fe{{"password", short}, {"email", badEmail}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := send(t, s, "POST", "/auth/signup", tc.body, hdr("rid", "emailpassword", "Content-Type", "application/json"))
			if tc.want == nil {
				if res.StatusCode != http.StatusOK || res.Status != "OK" {
					t.Fatalf("got %d %s, want OK", res.StatusCode, res.Body)
				}
				return
			}
			var fields []string
			for _, f := range tc.want {
				fields = append(fields, fmt.Sprintf(`{"id":%q,"error":%q}`, f.id, f.msg))
			}
			wantBody(t, res, `{"status":"FIELD_ERROR","formFields":[`+strings.Join(fields, ",")+`]}`)
			wantNoTokens(t, res)
		})
	}
}

func TestPasswordPolicy(t *testing.T) {
	t.Parallel()
	shared := memstore.New()
	lax := authtest.NewServer(t, auth.Config{Store: shared, Password: auth.PasswordConfig{Policy: func(p string) error {
		if len(p) < 3 {
			return errors.New("Three or more, please")
		}
		return nil
	}}})
	strict := authtest.NewServer(t, auth.Config{Store: shared})

	t.Run("custom policy message", func(t *testing.T) {
		res := lax.NewClient(authtest.Header).SignUp("c1@example.com", "ab")
		wantBody(t, res, `{"status":"FIELD_ERROR","formFields":[{"id":"password","error":"Three or more, please"}]}`)
	})
	t.Run("sign-in does not apply the policy", func(t *testing.T) {
		res := lax.NewClient(authtest.Header).SignUp("c2@example.com", "abc")
		if res.Status != "OK" {
			t.Fatalf("sign-up with the lax policy: %s", res.Body)
		}
		// The default policy refuses "abc", but sign-in must not apply it.
		if res := strict.NewClient(authtest.Header).SignUp("c3@example.com", "abc"); res.Status != "FIELD_ERROR" {
			t.Fatalf("strict sign-up of a short password: %s", res.Body)
		}
		c := strict.NewClient(authtest.Header)
		res = c.SignIn("c2@example.com", "abc")
		uid, _ := res.JSON["user"].(map[string]any)["id"].(string)
		wantTokens(t, strict, res, authtest.Header, uid)
	})
	t.Run("short or long wrong password", func(t *testing.T) {
		for _, pw := range []string{"x", "ab", "abd", strings.Repeat("y1", 60)} {
			res := strict.NewClient(authtest.Header).SignIn("c2@example.com", pw)
			wantBody(t, res, `{"status":"WRONG_CREDENTIALS_ERROR"}`)
		}
	})
}

// ---- 3. sign-in ----

func TestSignIn(t *testing.T) {
	t.Parallel()
	for _, m := range authtest.Modes {
		t.Run(m.String(), func(t *testing.T) {
			t.Parallel()
			s := authtest.NewServer(t, auth.Config{})
			first, u := s.SignedIn(m)
			c := s.NewClient(m)
			res := c.SignIn(" "+strings.ToUpper(u.Email), authtest.Password)
			wantTokens(t, s, res, m, u.ID)
			wantSession(t, c, u.ID)
			if handleOf(t, c) == handleOf(t, first) {
				t.Error("sign-in reused the session of the sign-up")
			}
			// Both sessions live side by side.
			wantSession(t, first, u.ID)
		})
	}
}

func TestSignInWrongCredentials(t *testing.T) {
	t.Parallel()
	for _, m := range authtest.Modes {
		t.Run(m.String(), func(t *testing.T) {
			t.Parallel()
			s := authtest.NewServer(t, auth.Config{})
			_, u := s.SignedIn(authtest.Header)
			wrong := s.NewClient(m).SignIn(u.Email, wrongPassword)
			unknown := s.NewClient(m).SignIn("nobody@example.com", wrongPassword)
			const want = `{"status":"WRONG_CREDENTIALS_ERROR"}`
			for _, res := range []*authtest.Response{wrong, unknown} {
				wantBody(t, res, want)
				wantNoTokens(t, res)
			}
			h1, h2 := wrong.Header.Clone(), unknown.Header.Clone()
			h1.Del("Date")
			h2.Del("Date")
			if !reflect.DeepEqual(h1, h2) {
				t.Errorf("headers differ:\nwrong password %v\nunknown email  %v", h1, h2)
			}
		})
	}
}

func TestSignInFieldErrors(t *testing.T) {
	t.Parallel()
	s := authtest.NewServer(t, auth.Config{})
	for _, tc := range []struct{ email, password, want string }{
		{"not-an-email", authtest.Password, `[{"id":"email","error":"Email is invalid"}]`},
		{"", authtest.Password, `[{"id":"email","error":"Field is not optional"}]`},
		{"a@example.com", "", `[{"id":"password","error":"Field is not optional"}]`},
	} {
		t.Run(tc.email+"/"+tc.password, func(t *testing.T) {
			t.Parallel()
			res := s.NewClient(authtest.Cookie).SignIn(tc.email, tc.password)
			wantBody(t, res, `{"status":"FIELD_ERROR","formFields":`+tc.want+`}`)
			wantNoTokens(t, res)
		})
	}
}

// Public endpoints ignore the credentials the SDK interceptor attaches.
func TestSignInWithStaleCredentials(t *testing.T) {
	t.Parallel()
	for _, m := range authtest.Modes {
		t.Run(m.String(), func(t *testing.T) {
			t.Parallel()
			s := authtest.NewServer(t, auth.Config{})
			c, u := s.SignedIn(m)
			s.Clock.Advance(accessExpired)
			res := c.SignIn(u.Email, authtest.Password)
			wantTokens(t, s, res, m, u.ID)
			wantSession(t, c, u.ID)
		})
	}
}

// ---- 4. email exists ----

func TestEmailExists(t *testing.T) {
	t.Parallel()
	s := authtest.NewServer(t, auth.Config{})
	_, u := s.SignedIn(authtest.Header)
	for _, path := range []string{"/auth/emailpassword/email/exists", "/auth/signup/email/exists"} {
		for _, tc := range []struct {
			email string
			want  bool
		}{
			{u.Email, true},
			{"  " + strings.ToUpper(u.Email) + " ", true},
			{"nobody@example.com", false},
			{"not an email", false},
		} {
			t.Run(path+"?"+tc.email, func(t *testing.T) {
				t.Parallel()
				// The SDK sends Content-Type: application/json with no body.
				res := send(t, s, "GET", path+"?email="+url.QueryEscape(tc.email), "", hdr("rid", "emailpassword", "Content-Type", "application/json"))
				wantBody(t, res, fmt.Sprintf(`{"status":"OK","exists":%v}`, tc.want))
			})
		}
		t.Run(path+" without email", func(t *testing.T) {
			t.Parallel()
			for _, q := range []string{"", "?mail=a@example.com"} {
				wantMessage(t, send(t, s, "GET", path+q, "", nil), http.StatusBadRequest, "Please provide the email as a GET param")
			}
		})
	}
	t.Run("disabled", func(t *testing.T) {
		t.Parallel()
		d := authtest.NewServer(t, auth.Config{DisableEmailExists: true})
		d.SignedIn(authtest.Header) // user1@example.com
		for _, path := range []string{"/auth/emailpassword/email/exists", "/auth/signup/email/exists"} {
			res := send(t, d, "GET", path+"?email=user1@example.com", "", nil)
			if res.StatusCode != http.StatusNotFound || bytes.Contains(res.Body, []byte("exists")) {
				t.Errorf("%s: %d %s, want 404", path, res.StatusCode, res.Body)
			}
		}
	})
}

// ---- 5. refresh ----

func TestRefreshRotates(t *testing.T) {
	t.Parallel()
	for _, m := range authtest.Modes {
		t.Run(m.String(), func(t *testing.T) {
			t.Parallel()
			s := authtest.NewServer(t, auth.Config{})
			c, u := s.SignedIn(m)
			a0, r0 := c.Tokens()
			f0 := c.FrontToken
			h0 := handleOf(t, c)
			res := c.Refresh()
			a1, r1 := wantTokens(t, s, res, m, u.ID)
			if m != authtest.Body {
				wantBody(t, res, `{"status":"OK"}`)
			}
			if a1 == a0 || r1 == r0 || c.FrontToken == f0 {
				t.Errorf("refresh handed back an old token: access %v, refresh %v, front %v", a1 == a0, r1 == r0, c.FrontToken == f0)
			}
			if h := handleOf(t, c); h != h0 {
				t.Errorf("refresh changed the session handle %s to %s", h0, h)
			}
			if a, r := c.Tokens(); a != a1 || r != r1 {
				t.Errorf("client holds %q %q after refresh", a, r)
			}
			wantSession(t, c, u.ID)

			// R0 again: theft. The session ends and every transport is cleared.
			c.SetTokens("", r0)
			res = c.Refresh()
			wantMessage(t, res, http.StatusUnauthorized, "token theft detected")
			wantCleared(t, res, true, true)
			// R1 belonged to the revoked session.
			c.SetTokens("", r1)
			res = c.Refresh()
			wantMessage(t, res, http.StatusUnauthorized, "unauthorised")
			wantCleared(t, res, true, true)
			if ss, err := s.Auth.Sessions(t.Context(), u.ID); err != nil || len(ss) != 0 {
				t.Errorf("sessions after theft: %v %v", ss, err)
			}
		})
	}
}

func TestRefreshWithoutToken(t *testing.T) {
	t.Parallel()
	s := authtest.NewServer(t, auth.Config{})
	for _, m := range authtest.Modes {
		t.Run(m.String(), func(t *testing.T) {
			t.Parallel()
			res := s.NewClient(m).Refresh()
			wantMessage(t, res, http.StatusUnauthorized, "unauthorised")
			wantCleared(t, res, true, true)
		})
	}
	t.Run("empty cleared cookie", func(t *testing.T) {
		t.Parallel()
		res := send(t, s, "POST", refreshPath, "", hdr("rid", "session", "Cookie", "sRefreshToken="))
		wantMessage(t, res, http.StatusUnauthorized, "unauthorised")
	})
}

func TestRefreshForgedTokenHarmsNoSession(t *testing.T) {
	t.Parallel()
	for _, m := range authtest.Modes {
		t.Run(m.String(), func(t *testing.T) {
			t.Parallel()
			s := authtest.NewServer(t, auth.Config{})
			victim, u := s.SignedIn(m)
			access, real := victim.Tokens()
			flipped := []byte(real)
			flipped[10] ^= 'a' ^ 'b'
			if flipped[10] == real[10] {
				t.Fatal("no change")
			}
			for _, forged := range []string{
				strings.Repeat("A", 43), // well-formed, unknown
				string(flipped),         // one character off the real token
				"garbage",               // not one of ours
				access,                  // an access token is no refresh token
				real + "x",              // the real token with a suffix
				base64.RawURLEncoding.EncodeToString(make([]byte, 32)), // all zero bits
			} {
				attacker := s.NewClient(m)
				attacker.SetTokens("", forged)
				res := attacker.Refresh()
				wantMessage(t, res, http.StatusUnauthorized, "unauthorised")
				wantCleared(t, res, true, true)
			}
			res := victim.Refresh()
			wantTokens(t, s, res, m, u.ID)
			wantSession(t, victim, u.ID)
		})
	}
}

func TestRefreshTimeout(t *testing.T) {
	t.Parallel()
	for _, m := range authtest.Modes {
		t.Run(m.String(), func(t *testing.T) {
			t.Parallel()
			s := authtest.NewServer(t, auth.Config{})
			c, u := s.SignedIn(m)
			// Each refresh moves the end of the session to now + 100 days.
			s.Clock.Advance(99 * day)
			wantTokens(t, s, c.Refresh(), m, u.ID)
			s.Clock.Advance(99 * day)
			wantTokens(t, s, c.Refresh(), m, u.ID)
			wantSession(t, c, u.ID)
			// Then 100 days without one end it.
			s.Clock.Advance(auth.DefaultRefreshTokenLifetime + time.Second)
			res := c.Refresh()
			wantMessage(t, res, http.StatusUnauthorized, "unauthorised")
			wantCleared(t, res, true, true)
		})
	}
}

// A superseded token that has expired is no evidence of theft: it is
// refused and harms no session.
func TestRefreshExpiredSupersededToken(t *testing.T) {
	t.Parallel()
	for _, m := range authtest.Modes {
		t.Run(m.String(), func(t *testing.T) {
			t.Parallel()
			s := authtest.NewServer(t, auth.Config{})
			c, u := s.SignedIn(m)
			_, r0 := c.Tokens()
			s.Clock.Advance(99 * day)
			_, r1 := wantTokens(t, s, c.Refresh(), m, u.ID)
			s.Clock.Advance(day + time.Second) // r0 has expired, r1 has not
			c.SetTokens("", r0)
			res := c.Refresh()
			wantMessage(t, res, http.StatusUnauthorized, "unauthorised")
			wantCleared(t, res, true, true)
			c.SetTokens("", r1)
			wantTokens(t, s, c.Refresh(), m, u.ID)
			wantSession(t, c, u.ID)
		})
	}
}

func TestRefreshBearerWinsOverCookie(t *testing.T) {
	t.Parallel()
	s := authtest.NewServer(t, auth.Config{})
	cookieClient, cu := s.SignedIn(authtest.Cookie)
	headerClient, hu := s.SignedIn(authtest.Header)
	_, cookieR := cookieClient.Tokens()
	_, headerR := headerClient.Tokens()
	res := send(t, s, "POST", refreshPath, "", hdr("rid", "session",
		"Cookie", "sRefreshToken="+cookieR, "Authorization", "Bearer "+headerR))
	// The bearer token was used, and the answer comes in its transport.
	wantTokens(t, s, res, authtest.Header, hu.ID)
	// The cookie's token was not touched.
	wantTokens(t, s, cookieClient.Refresh(), authtest.Cookie, cu.ID)
	// The bearer's was: using it again is theft.
	wantMessage(t, headerClient.Refresh(), http.StatusUnauthorized, "token theft detected")
}

func TestRefreshReuseWindow(t *testing.T) {
	t.Parallel()
	const window = 10 * time.Second
	for _, m := range authtest.Modes {
		t.Run(m.String(), func(t *testing.T) {
			t.Parallel()
			s := authtest.NewServer(t, auth.Config{RefreshReuseWindow: window})
			setup := func(t *testing.T) (*authtest.Client, auth.User, string, string) {
				c, u := s.SignedIn(m)
				_, r0 := c.Tokens()
				_, r1 := wantTokens(t, s, c.Refresh(), m, u.ID)
				return c, u, r0, r1
			}
			t.Run("retry inside the window continues the lineage", func(t *testing.T) {
				c, u, r0, r1 := setup(t)
				c.SetTokens("", r0)
				_, r2 := wantTokens(t, s, c.Refresh(), m, u.ID)
				if r2 == r1 {
					t.Fatal("the retry handed back the token it replaces")
				}
				wantSession(t, c, u.ID)
				wantTokens(t, s, c.Refresh(), m, u.ID)
				wantSession(t, c, u.ID)
			})
			t.Run("retry inside the window kills the replaced token", func(t *testing.T) {
				c, u, r0, r1 := setup(t)
				c.SetTokens("", r0)
				_, r2 := wantTokens(t, s, c.Refresh(), m, u.ID)
				c.SetTokens("", r1)
				wantMessage(t, c.Refresh(), http.StatusUnauthorized, "token theft detected")
				c.SetTokens("", r2)
				wantMessage(t, c.Refresh(), http.StatusUnauthorized, "unauthorised")
			})
			t.Run("outside the window is theft", func(t *testing.T) {
				c, _, r0, r1 := setup(t)
				// The subtests run in sequence, so moving the shared clock
				// is safe.
				s.Clock.Advance(window + time.Second)
				c.SetTokens("", r0)
				wantMessage(t, c.Refresh(), http.StatusUnauthorized, "token theft detected")
				c.SetTokens("", r1)
				wantMessage(t, c.Refresh(), http.StatusUnauthorized, "unauthorised")
			})
			t.Run("two generations old is theft", func(t *testing.T) {
				c, u, r0, _ := setup(t)
				_, r2 := wantTokens(t, s, c.Refresh(), m, u.ID)
				c.SetTokens("", r0)
				wantMessage(t, c.Refresh(), http.StatusUnauthorized, "token theft detected")
				c.SetTokens("", r2)
				wantMessage(t, c.Refresh(), http.StatusUnauthorized, "unauthorised")
			})
		})
	}
}

// ---- 6. protected endpoints ----

func TestRequireSessionNoToken(t *testing.T) {
	t.Parallel()
	s := authtest.NewServer(t, auth.Config{})
	for _, m := range authtest.Modes {
		t.Run(m.String(), func(t *testing.T) {
			t.Parallel()
			res := s.NewClient(m).Get("/api/session")
			wantMessage(t, res, http.StatusUnauthorized, "unauthorised")
			wantNoTokens(t, res)
		})
	}
}

func TestRequireSessionExpired(t *testing.T) {
	t.Parallel()
	for _, m := range authtest.Modes {
		t.Run(m.String(), func(t *testing.T) {
			t.Parallel()
			s := authtest.NewServer(t, auth.Config{})
			c, u := s.SignedIn(m)
			// Still valid within the leeway.
			s.Clock.Advance(time.Hour + time.Second)
			wantSession(t, c, u.ID)
			s.Clock.Advance(accessExpired - time.Hour - time.Second)
			res := c.Get("/api/session")
			wantMessage(t, res, http.StatusUnauthorized, "try refresh token")
			wantNoTokens(t, res)
			wantTokens(t, s, c.Refresh(), m, u.ID)
			wantSession(t, c, u.ID)
		})
	}
}

func TestRequireSessionInvalidToken(t *testing.T) {
	t.Parallel()
	other := authtest.NewServer(t, auth.Config{})
	oc, _ := other.SignedIn(authtest.Header)
	foreign, _ := oc.Tokens()
	for _, m := range authtest.Modes {
		t.Run(m.String(), func(t *testing.T) {
			t.Parallel()
			s := authtest.NewServer(t, auth.Config{})
			for _, tc := range []struct {
				name string
				bad  func(access, refresh string) string
			}{
				{"garbage", func(string, string) string { return "garbage" }},
				{"tampered signature", func(a, _ string) string {
					b := []byte(a)
					i := strings.LastIndexByte(a, '.') + 5
					b[i] = map[bool]byte{true: 'B', false: 'A'}[b[i] == 'A']
					return string(b)
				}},
				{"tampered payload", func(a, _ string) string {
					p := strings.Split(a, ".")
					raw, _ := base64.RawURLEncoding.DecodeString(p[1])
					var claims map[string]any
					json.Unmarshal(raw, &claims)
					claims["sub"] = "someone-else"
					raw, _ = json.Marshal(claims)
					return p[0] + "." + base64.RawURLEncoding.EncodeToString(raw) + "." + p[2]
				}},
				{"signed by another instance", func(string, string) string { return foreign }},
				{"refresh token", func(_, r string) string { return r }},
				{"signature stripped", func(a, _ string) string { return a[:strings.LastIndexByte(a, '.')+1] }},
			} {
				t.Run(tc.name, func(t *testing.T) {
					c, u := s.SignedIn(m)
					access, refresh := c.Tokens()
					c.SetTokens(tc.bad(access, refresh), "")
					res := c.Get("/api/session")
					wantMessage(t, res, http.StatusUnauthorized, "try refresh token")
					wantNoTokens(t, res)
					// The session itself is fine: a refresh repairs it.
					wantTokens(t, s, c.Refresh(), m, u.ID)
					wantSession(t, c, u.ID)
				})
			}
		})
	}
}

func TestRequireSessionOptionsPasses(t *testing.T) {
	t.Parallel()
	s := authtest.NewServer(t, auth.Config{Cookie: auth.CookieConfig{SameSite: http.SameSiteNoneMode}})
	addRoutes(s)
	for _, h := range []http.Header{nil, hdr("Authorization", "Bearer garbage"), hdr("Cookie", "sAccessToken=garbage")} {
		res := send(t, s, "OPTIONS", "/api/any", "", h)
		wantBody(t, res, `{"userId":"","method":"OPTIONS"}`)
	}
}

// Only OPTIONS passes unverified; every other method, including ones the
// application might serve by accident such as TRACE, needs a session.
func TestRequireSessionOtherMethods(t *testing.T) {
	t.Parallel()
	s := authtest.NewServer(t, auth.Config{})
	addRoutes(s)
	for _, method := range []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "TRACE", "PROPFIND"} {
		t.Run(method, func(t *testing.T) {
			t.Parallel()
			res := send(t, s, method, "/api/any", "", nil)
			if res.StatusCode != http.StatusUnauthorized {
				t.Errorf("%s without a session: %d %s, want 401", method, res.StatusCode, res.Body)
			}
			if method != "HEAD" {
				wantMessage(t, res, http.StatusUnauthorized, "unauthorised")
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

func TestRequireSessionCheckInStore(t *testing.T) {
	t.Parallel()
	for _, m := range authtest.Modes {
		t.Run(m.String(), func(t *testing.T) {
			t.Parallel()
			s := authtest.NewServer(t, auth.Config{CheckSessionInStore: true})
			ctx := t.Context()
			for _, tc := range []struct {
				name string
				end  func(c *authtest.Client, u auth.User)
			}{
				{"signed out", func(c *authtest.Client, _ auth.User) {
					access, _ := c.Tokens()
					wantBody(t, c.SignOut(), `{"status":"OK"}`)
					c.SetTokens(access, "")
				}},
				{"RevokeSession", func(c *authtest.Client, _ auth.User) {
					if err := s.Auth.RevokeSession(ctx, handleOf(t, c)); err != nil {
						t.Fatal(err)
					}
				}},
				{"RevokeAllSessions", func(c *authtest.Client, u auth.User) {
					if n, err := s.Auth.RevokeAllSessions(ctx, u.ID); err != nil || n != 1 {
						t.Fatalf("RevokeAllSessions: %d %v", n, err)
					}
				}},
			} {
				t.Run(tc.name, func(t *testing.T) {
					c, u := s.SignedIn(m)
					other, _ := s.SignedIn(m) // another user, untouched
					wantSession(t, c, u.ID)
					tc.end(c, u)
					res := c.Get("/api/session")
					wantMessage(t, res, http.StatusUnauthorized, "unauthorised")
					wantCleared(t, res, true, true)
					res = c.SignOut()
					if res.StatusCode != http.StatusUnauthorized {
						t.Errorf("sign-out with a revoked session: %d %s", res.StatusCode, res.Body)
					}
					if res := other.Get("/api/session"); res.StatusCode != http.StatusOK {
						t.Errorf("another user's session: %d %s", res.StatusCode, res.Body)
					}
				})
			}
		})
	}
}

// Without CheckSessionInStore a revoked session's access token works until
// it expires; the refresh token stops at once.
func TestRequireSessionRevokedWithoutStoreCheck(t *testing.T) {
	t.Parallel()
	for _, m := range authtest.Modes {
		t.Run(m.String(), func(t *testing.T) {
			t.Parallel()
			s := authtest.NewServer(t, auth.Config{})
			c, u := s.SignedIn(m)
			if err := s.Auth.RevokeSession(t.Context(), handleOf(t, c)); err != nil {
				t.Fatal(err)
			}
			wantSession(t, c, u.ID)
			s.Clock.Advance(30 * time.Minute)
			wantSession(t, c, u.ID)
			s.Clock.Advance(30*time.Minute + 6*time.Second)
			wantMessage(t, c.Get("/api/session"), http.StatusUnauthorized, "try refresh token")
			res := c.Refresh()
			wantMessage(t, res, http.StatusUnauthorized, "unauthorised")
			wantCleared(t, res, true, true)
		})
	}
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

func TestOptionalSession(t *testing.T) {
	t.Parallel()
	for _, m := range authtest.Modes {
		t.Run(m.String(), func(t *testing.T) {
			t.Parallel()
			s := authtest.NewServer(t, auth.Config{})
			addRoutes(s)
			wantBody(t, s.NewClient(m).Get("/api/optional"), `{"userId":"","method":"GET"}`)
			c, u := s.SignedIn(m)
			wantBody(t, c.Get("/api/optional"), fmt.Sprintf(`{"userId":%q,"method":"GET"}`, u.ID))
			access, _ := c.Tokens()
			c.SetTokens(access[:len(access)-3]+"xyz", "")
			wantMessage(t, c.Get("/api/optional"), http.StatusUnauthorized, "try refresh token")
			c.SetTokens(access, "")
			s.Clock.Advance(accessExpired)
			wantMessage(t, c.Get("/api/optional"), http.StatusUnauthorized, "try refresh token")
		})
	}
}

// ---- 7. sign-out ----

func TestSignOut(t *testing.T) {
	t.Parallel()
	for _, m := range authtest.Modes {
		t.Run(m.String(), func(t *testing.T) {
			t.Parallel()
			s := authtest.NewServer(t, auth.Config{})
			c, u := s.SignedIn(m)
			other, _ := s.SignedIn(m)
			second := s.NewClient(m) // a second session of the same user
			wantTokens(t, s, second.SignIn(u.Email, authtest.Password), m, u.ID)
			_, refresh := c.Tokens()
			res := c.SignOut()
			wantBody(t, res, `{"status":"OK"}`)
			wantCleared(t, res, m == authtest.Cookie, m != authtest.Cookie)
			if got := res.Header.Get("Cache-Control"); got != "no-store" {
				t.Errorf("Cache-Control %q", got)
			}
			c.SetTokens("", refresh)
			res = c.Refresh()
			wantMessage(t, res, http.StatusUnauthorized, "unauthorised")
			wantCleared(t, res, true, true)
			// Only that session ended.
			wantSession(t, second, u.ID)
			wantTokens(t, s, second.Refresh(), m, u.ID)
			wantTokens(t, s, other.Refresh(), m, userOf(t, other))
		})
	}
}

func TestSignOutWithoutSession(t *testing.T) {
	t.Parallel()
	s := authtest.NewServer(t, auth.Config{})
	for _, m := range authtest.Modes {
		t.Run(m.String(), func(t *testing.T) {
			t.Parallel()
			res := s.NewClient(m).SignOut()
			wantMessage(t, res, http.StatusUnauthorized, "unauthorised")
			wantNoTokens(t, res)
		})
	}
	t.Run("expired access token", func(t *testing.T) {
		t.Parallel()
		s := authtest.NewServer(t, auth.Config{})
		c, u := s.SignedIn(authtest.Header)
		s.Clock.Advance(accessExpired)
		wantMessage(t, c.SignOut(), http.StatusUnauthorized, "try refresh token")
		wantTokens(t, s, c.Refresh(), authtest.Header, u.ID)
		wantBody(t, c.SignOut(), `{"status":"OK"}`)
	})
}

// ---- 8. JWKS ----

func TestJWKS(t *testing.T) {
	t.Parallel()
	t.Run("HS256 has none", func(t *testing.T) {
		t.Parallel()
		s := authtest.NewServer(t, auth.Config{})
		s.SignedIn(authtest.Header)
		res := send(t, s, "GET", "/auth/jwt/jwks.json", "", nil)
		if res.StatusCode != http.StatusNotFound {
			t.Fatalf("got %d %s, want 404", res.StatusCode, res.Body)
		}
	})
	t.Run("EdDSA", func(t *testing.T) {
		t.Parallel()
		s := authtest.NewServer(t, auth.Config{SigningAlgorithm: auth.EdDSA})
		c, u := s.SignedIn(authtest.Header)
		wantSession(t, c, u.ID)
		access, _ := c.Tokens()
		header, _ := jwtParts(t, access)
		if header["alg"] != "EdDSA" {
			t.Fatalf("access token header %v", header)
		}
		res := send(t, s, "GET", "/auth/jwt/jwks.json", "", nil)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("jwks: %d %s", res.StatusCode, res.Body)
		}
		var set struct {
			Keys []map[string]string `json:"keys"`
		}
		if err := json.Unmarshal(res.Body, &set); err != nil {
			t.Fatal(err)
		}
		var jwk map[string]string
		for _, k := range set.Keys {
			if k["kid"] == header["kid"] {
				jwk = k
			}
		}
		if jwk == nil {
			t.Fatalf("no key with kid %v in %s", header["kid"], res.Body)
		}
		if jwk["kty"] != "OKP" || jwk["crv"] != "Ed25519" || jwk["alg"] != "EdDSA" || jwk["use"] != "sig" {
			t.Errorf("jwk %v", jwk)
		}
		if _, ok := jwk["d"]; ok {
			t.Fatal("the JWKS leaks the private key")
		}
		pub, err := base64.RawURLEncoding.DecodeString(jwk["x"])
		if err != nil || len(pub) != ed25519.PublicKeySize {
			t.Fatalf("x %q: %v", jwk["x"], err)
		}
		dot := strings.LastIndexByte(access, '.')
		sig, err := base64.RawURLEncoding.DecodeString(access[dot+1:])
		if err != nil {
			t.Fatal(err)
		}
		if !ed25519.Verify(pub, []byte(access[:dot]), sig) {
			t.Error("the access token does not verify with the published key")
		}
		if ed25519.Verify(pub, []byte(access[:dot]+"x"), sig) {
			t.Error("the published key verifies anything")
		}
		// Refreshed tokens verify too.
		res = c.Refresh()
		access, _ = wantTokens(t, s, res, authtest.Header, u.ID)
		dot = strings.LastIndexByte(access, '.')
		sig, _ = base64.RawURLEncoding.DecodeString(access[dot+1:])
		if !ed25519.Verify(pub, []byte(access[:dot]), sig) {
			t.Error("the refreshed access token does not verify with the published key")
		}
	})
}

// ---- 9. concurrency ----

// rotationLog records the order in which refresh tokens became current.
type rotationLog struct {
	*memstore.Store
	mu        sync.Mutex
	committed []store.TokenHash
}

func (l *rotationLog) RotateRefreshToken(ctx context.Context, r store.Rotation) (store.Session, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s, err := l.Store.RotateRefreshToken(ctx, r)
	if err == nil {
		l.committed = append(l.committed, r.Next)
	}
	return s, err
}

func TestConcurrentRefresh(t *testing.T) {
	t.Parallel()
	const n = 50
	for _, window := range []time.Duration{0, 30 * time.Second} {
		for _, m := range authtest.Modes {
			t.Run(fmt.Sprintf("%v/window=%v", m, window), func(t *testing.T) {
				t.Parallel()
				log := &rotationLog{Store: memstore.New()}
				s := authtest.NewServer(t, auth.Config{Store: log, RefreshReuseWindow: window})
				c, u := s.SignedIn(m)
				_, r0 := c.Tokens()

				results := make([]*authtest.Response, n)
				errs := make([]error, n)
				var wg sync.WaitGroup
				start := make(chan struct{})
				for i := range n {
					wg.Add(1)
					go func() {
						defer wg.Done()
						<-start
						results[i], errs[i] = sendTo(s.Client(), s.URL, "POST", refreshPath, "", refreshRequest(m, r0))
					}()
				}
				close(start)
				wg.Wait()

				var issued []string
				thefts := 0
				for i, res := range results {
					if errs[i] != nil {
						t.Fatalf("request %d: %v", i, errs[i])
					}
					switch {
					case res.StatusCode == http.StatusOK:
						tok := issuedRefresh(res, m)
						if tok == "" || res.Header.Get("Front-Token") == "" {
							t.Errorf("200 without a refresh token or front-token: %v %s", res.Header, res.Body)
						}
						issued = append(issued, tok)
					case res.StatusCode == http.StatusUnauthorized && res.Message == "token theft detected":
						thefts++
					case res.StatusCode == http.StatusUnauthorized && res.Message == "unauthorised":
					default:
						t.Errorf("request %d: %d %s", i, res.StatusCode, res.Body)
					}
				}
				if len(issued) == 0 {
					t.Fatal("no refresh succeeded")
				}
				if window == 0 {
					// Strict rotation: one winner; the losers' reuse ends the session.
					if len(issued) != 1 || thefts == 0 {
						t.Fatalf("%d successes and %d thefts, want 1 and some", len(issued), thefts)
					}
					res := send(t, s, "POST", refreshPath, "", refreshRequest(m, issued[0]))
					wantMessage(t, res, http.StatusUnauthorized, "unauthorised")
					if ss, _ := s.Auth.Sessions(t.Context(), u.ID); len(ss) != 0 {
						t.Errorf("%d sessions survive the theft", len(ss))
					}
					return
				}
				// Inside the window every retry succeeds, and only the last
				// token issued stays current.
				if len(issued) != n {
					t.Errorf("%d of %d refreshes succeeded inside the reuse window", len(issued), n)
				}
				log.mu.Lock()
				last := log.committed[len(log.committed)-1]
				log.mu.Unlock()
				var current string
				var others []string
				for _, tok := range issued {
					if sha256.Sum256([]byte(tok)) == last {
						current = tok
					} else {
						others = append(others, tok)
					}
				}
				if current == "" {
					t.Fatal("the last committed token was not handed out")
				}
				res := send(t, s, "POST", refreshPath, "", refreshRequest(m, current))
				if res.StatusCode != http.StatusOK {
					t.Fatalf("the current token: %d %s", res.StatusCode, res.Body)
				}
				// No other token is live: the first one presented is theft.
				for i, tok := range others {
					res := send(t, s, "POST", refreshPath, "", refreshRequest(m, tok))
					want := "unauthorised"
					if i == 0 {
						want = "token theft detected"
					}
					wantMessage(t, res, http.StatusUnauthorized, want)
				}
			})
		}
	}
}

// overlappingCreates holds the first CreateUser until a second one arrives
// (or a few seconds pass), so that two sign-ups of one email are sure to
// pass the cheap existence check before either creates the user.
type overlappingCreates struct {
	*memstore.Store
	calls atomic.Int32
	both  chan struct{}
}

func (s *overlappingCreates) CreateUser(ctx context.Context, u store.User) error {
	if s.calls.Add(1) == 2 {
		close(s.both)
	}
	select {
	case <-s.both:
	case <-time.After(5 * time.Second):
	}
	return s.Store.CreateUser(ctx, u)
}

func TestConcurrentSignUp(t *testing.T) {
	t.Parallel()
	const n = 16
	var mu sync.Mutex
	signUps := 0
	s := authtest.NewServer(t, auth.Config{
		Store: &overlappingCreates{Store: memstore.New(), both: make(chan struct{})},
		OnEvent: func(_ context.Context, e auth.Event) {
			if e.Kind == auth.EventSignUp {
				mu.Lock()
				signUps++
				mu.Unlock()
			}
		},
	})
	results := make([]*authtest.Response, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			email := "race@example.com"
			if i%2 == 1 {
				email = " RACE@Example.com "
			}
			results[i], errs[i] = sendTo(s.Client(), s.URL, "POST", "/auth/signup", credBody(email, authtest.Password),
				hdr("rid", "emailpassword", "st-auth-mode", "header"))
		}()
	}
	close(start)
	wg.Wait()
	const taken = `{"status":"FIELD_ERROR","formFields":[{"id":"email","error":"This email already exists. Please sign in instead."}]}`
	var winner string
	ok, dup := 0, 0
	for i, res := range results {
		if errs[i] != nil {
			t.Fatalf("request %d: %v", i, errs[i])
		}
		switch {
		case res.StatusCode == http.StatusOK && res.Status == "OK":
			ok++
			winner, _ = res.JSON["user"].(map[string]any)["id"].(string)
		case res.StatusCode == http.StatusOK && string(res.Body) == taken:
			dup++
		default:
			t.Errorf("request %d: %d %s", i, res.StatusCode, res.Body)
		}
	}
	if ok != 1 || dup != n-1 {
		t.Fatalf("%d OK and %d email-exists, want 1 and %d", ok, dup, n-1)
	}
	u, err := s.Auth.UserByEmail(t.Context(), "race@example.com")
	if err != nil || u.ID != winner {
		t.Fatalf("stored user %v %v, the winner was %s", u, err, winner)
	}
	mu.Lock()
	defer mu.Unlock()
	if signUps != 1 {
		t.Errorf("%d sign_up events, want 1", signUps)
	}
	if st := s.AuthConfig.Store.(*overlappingCreates); st.calls.Load() < 2 {
		t.Errorf("only %d sign-ups reached CreateUser; the race was not exercised", st.calls.Load())
	}
}

// ---- 10. events ----

func TestEvents(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var events []auth.Event
	s := authtest.NewServer(t, auth.Config{OnEvent: func(_ context.Context, e auth.Event) {
		mu.Lock()
		events = append(events, e)
		mu.Unlock()
	}})
	take := func() []auth.Event {
		mu.Lock()
		defer mu.Unlock()
		e := events
		events = nil
		return e
	}
	type ev struct {
		kind          auth.EventKind
		user, session string
		http          bool
	}
	want := func(t *testing.T, step string, want ...ev) {
		t.Helper()
		got := take()
		if len(got) != len(want) {
			t.Fatalf("%s: events %+v, want %+v", step, got, want)
		}
		for i, e := range got {
			w := want[i]
			if e.Kind != w.kind || e.UserID != w.user || e.SessionHandle != w.session ||
				(e.RemoteAddr != "") != w.http || !e.Time.Equal(s.Clock.Now()) {
				t.Errorf("%s: event %d = %+v, want %+v", step, i, e, w)
			}
		}
	}
	ctx := t.Context()
	email := "events@example.com"

	c := s.NewClient(authtest.Header)
	res := c.SignUp(email, authtest.Password)
	uid, _ := res.JSON["user"].(map[string]any)["id"].(string)
	h1 := handleOf(t, c)
	want(t, "sign-up", ev{auth.EventSignUp, uid, "", true}, ev{auth.EventSignIn, uid, h1, true})

	s.NewClient(authtest.Header).SignIn(email, wrongPassword)
	want(t, "wrong password", ev{auth.EventSignInFailed, uid, "", true})
	s.NewClient(authtest.Header).SignIn("nobody@example.com", wrongPassword)
	want(t, "unknown email", ev{auth.EventSignInFailed, "", "", true})

	c2 := s.NewClient(authtest.Cookie)
	c2.SignIn(email, authtest.Password)
	h2 := handleOf(t, c2)
	want(t, "sign-in", ev{auth.EventSignIn, uid, h2, true})

	s.Clock.Advance(time.Minute)
	c.Refresh()
	want(t, "refresh", ev{auth.EventRefresh, uid, h1, true})

	c.SignOut()
	want(t, "sign-out", ev{auth.EventSignOut, uid, h1, true})

	if err := s.Auth.RevokeSession(ctx, h2); err != nil {
		t.Fatal(err)
	}
	want(t, "RevokeSession", ev{auth.EventSessionRevoked, uid, h2, false})

	c3 := s.NewClient(authtest.Body)
	c3.SignIn(email, authtest.Password)
	h3 := handleOf(t, c3)
	_, r0 := c3.Tokens()
	c3.Refresh()
	take()
	c3.SetTokens("", r0)
	c3.Refresh()
	want(t, "theft", ev{auth.EventTokenTheft, uid, h3, true})

	// Failures that involve no session raise no event.
	c3.Refresh()
	s.NewClient(authtest.Header).Get("/api/session")
	want(t, "no session")

	c4 := s.NewClient(authtest.Header)
	c4.SignIn(email, authtest.Password)
	s.Clock.Advance(time.Second)
	c5 := s.NewClient(authtest.Header)
	c5.SignIn(email, authtest.Password)
	h4, h5 := handleOf(t, c4), handleOf(t, c5)
	take()
	if n, err := s.Auth.RevokeAllSessions(ctx, uid); err != nil || n != 2 {
		t.Fatalf("RevokeAllSessions: %d %v", n, err)
	}
	want(t, "RevokeAllSessions", ev{auth.EventSessionRevoked, uid, h5, false}, ev{auth.EventSessionRevoked, uid, h4, false})
}

// ---- 11. instances sharing a store ----

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
