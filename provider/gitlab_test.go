package provider

import (
	"errors"
	"testing"

	"github.com/golang-jwt/jwt/v5"
)

func TestGitLab(t *testing.T) {
	f := newFakeIdP(t, "")
	p, err := GitLab(GitLabConfig{ClientID: testClient, ClientSecret: testSecret, BaseURL: f.URL + "/"})
	if err != nil {
		t.Fatal(err)
	}
	if p.ID() != "gitlab" {
		t.Errorf("ID %q", p.ID())
	}
	if q := authQuery(t, p); q.Get("code_challenge") == "" || q.Get("scope") != "openid email" {
		t.Errorf("authorisation URL %v", q)
	}
	f.set(func(f *fakeIdP) { f.claims = func(c jwt.MapClaims) { c["sub"], c["email_verified"] = "42", false } })
	id, err := exchange(p)
	if err != nil || id != (Identity{"42", "u1@example.com", false}) {
		t.Fatalf("Exchange = %+v, %v", id, err)
	}
	f.set(func(f *fakeIdP) { f.claims = func(c jwt.MapClaims) { c["iss"] = "https://gitlab.com" } })
	if _, err := exchange(p); !errors.Is(err, ErrIDToken) {
		t.Errorf("iss of gitlab.com for a self-managed instance: %v", err)
	}

	d, _ := GitLab(GitLabConfig{ClientID: testClient})
	if iss := d.(*oidcProvider).issuer; iss != "https://gitlab.com" {
		t.Errorf("default issuer %q", iss)
	}
	if _, err := GitLab(GitLabConfig{ClientID: testClient, BaseURL: "http://gitlab.example.com"}); !errors.Is(err, ErrConfig) {
		t.Errorf("http base URL: %v", err)
	}
}
