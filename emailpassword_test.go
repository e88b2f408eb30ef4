package auth_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
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

// overlappingCreates holds the first CreateUser until a second one arrives
// (or a few seconds pass), so that two sign-ups of one email are sure to
// pass the cheap existence check before either creates the user.
type overlappingCreates struct {
	*memstore.Store
	calls atomic.Int32
	both  chan struct{}
}

func (s *overlappingCreates) CreateUser(ctx context.Context, u store.User, first store.Login) error {
	if s.calls.Add(1) == 2 {
		close(s.both)
	}
	select {
	case <-s.both:
	case <-time.After(5 * time.Second):
	}
	return s.Store.CreateUser(ctx, u, first)
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
