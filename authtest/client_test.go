package authtest_test

import (
	"bytes"
	"io"
	"net/http"
	"testing"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
)

func TestCredentials(t *testing.T) {
	got := string(authtest.Credentials("ada@example.com", `a "quoted" pass`))
	want := `{"formFields":[{"id":"email","value":"ada@example.com"},{"id":"password","value":"a \"quoted\" pass"}]}`
	if got != want {
		t.Errorf("Credentials = %s\nwant          %s", got, want)
	}

	// The body signs up over a plain request, as a frontend would send it.
	s := authtest.NewServer(t, auth.Config{})
	res, err := s.Client().Post(s.URL+"/auth/signup", "application/json",
		bytes.NewReader(authtest.Credentials(s.NewEmail(), authtest.Password)))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK || !bytes.HasPrefix(body, []byte(`{"status":"OK"`)) {
		t.Errorf("sign-up with Credentials: %d %s", res.StatusCode, body)
	}
}

func TestIssuedTokens(t *testing.T) {
	for _, m := range authtest.Modes {
		t.Run(m.String(), func(t *testing.T) {
			s := authtest.NewServer(t, auth.Config{})
			c, u := s.SignedIn(m)
			for _, tc := range []struct {
				name string
				res  func() *authtest.Response
				want bool
			}{
				{"sign-in", func() *authtest.Response { return s.NewClient(m).SignIn(u.Email, authtest.Password) }, true},
				{"refresh", c.Refresh, true},
				{"wrong password", func() *authtest.Response { return s.NewClient(m).SignIn(u.Email, "wrong horse 2") }, false},
				{"refresh without a token, which clears", s.NewClient(m).Refresh, false},
				{"protected route", func() *authtest.Response { return c.Get("/api/session") }, false},
				{"sign-out, which clears", c.SignOut, false},
			} {
				res := tc.res()
				if got := res.IssuedTokens(); got != tc.want {
					t.Errorf("%s: IssuedTokens() = %v, want %v; %d %v %s", tc.name, got, tc.want, res.StatusCode, res.Header, res.Body)
				}
			}
		})
	}
	for _, tc := range []struct {
		name string
		res  authtest.Response
		want bool
	}{
		{"nothing", authtest.Response{Header: http.Header{}}, false},
		{"access cookie", authtest.Response{Header: http.Header{"Set-Cookie": {"sAccessToken=x; Path=/"}}}, true},
		{"refresh cookie", authtest.Response{Header: http.Header{"Set-Cookie": {"sRefreshToken=x; Path=/auth/session/refresh"}}}, true},
		{"cleared cookie", authtest.Response{Header: http.Header{"Set-Cookie": {"sAccessToken=; Path=/; Expires=Thu, 01 Jan 1970 00:00:00 GMT"}}}, false},
		{"deleted cookie", authtest.Response{Header: http.Header{"Set-Cookie": {"sAccessToken=x; Path=/; Max-Age=0"}}}, false},
		{"another cookie", authtest.Response{Header: http.Header{"Set-Cookie": {"theme=dark"}}}, false},
		{"refresh header", authtest.Response{Header: http.Header{"St-Refresh-Token": {"x"}}}, true},
		{"empty header", authtest.Response{Header: http.Header{"St-Access-Token": {""}}}, false},
		{"body token", authtest.Response{JSON: map[string]any{"status": "OK", "accessToken": "x"}}, true},
		{"empty body token", authtest.Response{JSON: map[string]any{"refreshToken": ""}}, false},
	} {
		if got := tc.res.IssuedTokens(); got != tc.want {
			t.Errorf("%s: IssuedTokens() = %v, want %v", tc.name, got, tc.want)
		}
	}
}
