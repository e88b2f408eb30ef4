package provider

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

func newTestGitHub(t *testing.T, user, emails string) (Provider, *fakeIdP) {
	t.Helper()
	f := newFakeIdP(t, "")
	f.handle("/login/oauth/access_token", func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		f.set(func(f *fakeIdP) { f.tokenForm, f.tokenHeader = r.PostForm, r.Header.Clone() })
		// GitHub answers form-encoded, and refuses with a 200.
		if r.PostForm.Get("code") != testCode {
			fmt.Fprint(w, "error=bad_verification_code&error_description="+leakMarker)
			return
		}
		fmt.Fprint(w, "access_token=at-1&scope=read%3Auser%2Cuser%3Aemail&token_type=bearer")
	})
	api := func(body string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "Bearer at-1" {
				http.Error(w, "", http.StatusUnauthorized)
				return
			}
			if code, ok := strings.CutPrefix(body, "status "); ok {
				var n int
				fmt.Sscan(code, &n)
				http.Error(w, leakMarker, n)
				return
			}
			fmt.Fprint(w, body)
		}
	}
	f.handle("/user", api(user))
	f.handle("/user/emails", api(emails))
	p, err := GitHub(GitHubConfig{ClientID: testClient, ClientSecret: testSecret})
	if err != nil {
		t.Fatal(err)
	}
	g := p.(*oauth2Provider)
	g.authURL, g.tokenURL, g.api = f.URL+"/login/oauth/authorize", f.URL+"/login/oauth/access_token", f.URL
	return p, f
}

func TestGitHub(t *testing.T) {
	const user = `{"login":"octocat","id":583231,"email":"public@example.com"}`
	for _, tc := range []struct {
		name         string
		user, emails string
		want         Identity
		wantErr      error
	}{
		{"primary verified", user,
			`[{"email":"other@example.com","primary":false,"verified":true},{"email":"octo@example.com","primary":true,"verified":true}]`,
			Identity{"583231", "octo@example.com", true}, nil},
		{"primary unverified", user,
			`[{"email":"octo@example.com","primary":true,"verified":false},{"email":"other@example.com","primary":false,"verified":true}]`,
			Identity{"583231", "", false}, nil},
		{"only non-primary", user, `[{"email":"other@example.com","primary":false,"verified":true}]`,
			Identity{"583231", "", false}, nil},
		{"no emails", user, `[]`, Identity{"583231", "", false}, nil},
		{"large id", `{"id":98765432101234}`, `[]`, Identity{"98765432101234", "", false}, nil},
		{"id a string", `{"id":"583231"}`, `[]`, Identity{}, ErrExchange},
		{"id a fraction", `{"id":1.5}`, `[]`, Identity{}, ErrExchange},
		{"id negative", `{"id":-1}`, `[]`, Identity{}, ErrExchange},
		{"no id", `{"login":"octocat"}`, `[]`, Identity{}, ErrExchange},
		{"user 500", "status 500", `[]`, Identity{}, ErrExchange},
		{"emails 403", user, "status 403", Identity{}, ErrExchange},
		{"emails garbage", user, `{"email":` + leakMarker, Identity{}, ErrExchange},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, _ := newTestGitHub(t, tc.user, tc.emails)
			id, err := exchange(p)
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) || id != tc.want {
				t.Errorf("%+v, %v; want %+v, %v", id, err, tc.want, tc.wantErr)
			}
			checkSafe(t, err)
		})
	}
}

func TestGitHubFlow(t *testing.T) {
	p, f := newTestGitHub(t, `{"id":1}`, `[]`)
	q := authQuery(t, p)
	if q.Get("scope") != "read:user user:email" || q.Get("code_challenge") != "challenge-1" || q.Get("code_challenge_method") != "S256" || q.Has("nonce") {
		t.Errorf("authorisation URL %v", q)
	}
	if _, err := exchange(p); err != nil {
		t.Fatal(err)
	}
	form, hdr, _ := f.lastTokenRequest()
	if form.Get("code_verifier") != testVerif || form.Get("client_secret") != testSecret || form.Get("client_id") != testClient || hdr.Get("Authorization") != "" {
		t.Errorf("token request %v, Authorization %q", form, hdr.Get("Authorization"))
	}
	_, err := exchange(p, func(r *ExchangeRequest) { r.Code = "used" })
	if !errors.Is(err, ErrExchange) || !strings.Contains(err.Error(), "bad_verification_code") {
		t.Errorf("refused code: %v", err)
	}
	checkSafe(t, err)
	if _, err := exchange(p, func(r *ExchangeRequest) { r.Issuer = "https://github.com" }); !errors.Is(err, ErrIssuer) {
		t.Errorf("callback with an iss: %v", err)
	}
}

func TestGitHubHangs(t *testing.T) {
	p, f := newTestGitHub(t, `{"id":1}`, `[]`)
	f.handle("/user/emails", f.hang)
	g := p.(*oauth2Provider)
	g.http = httpClient(&http.Client{Timeout: 200 * time.Millisecond})
	start := time.Now()
	if _, err := exchange(p); !errors.Is(err, ErrExchange) {
		t.Errorf("err = %v, want ErrExchange", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %v", d)
	}
}
