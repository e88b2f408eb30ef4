package provider

import (
	"errors"
	"testing"

	"github.com/golang-jwt/jwt/v5"
)

func newTestGoogle(t *testing.T, f *fakeIdP, hd string) Provider {
	t.Helper()
	p, err := Google(GoogleConfig{ClientID: testClient, ClientSecret: testSecret, HostedDomain: hd})
	if err != nil {
		t.Fatal(err)
	}
	p.(*oidcProvider).discovery = f.URL
	return p
}

func TestGoogle(t *testing.T) {
	f := newFakeIdP(t, "https://accounts.google.com")
	p := newTestGoogle(t, f, "")
	if p.ID() != "google" {
		t.Errorf("ID %q", p.ID())
	}
	if q := authQuery(t, p); q.Get("scope") != "openid email" || q.Get("code_challenge") == "" || q.Get("nonce") != testNonce || q.Has("hd") {
		t.Errorf("authorisation URL %v", q)
	}
	id, err := exchange(p, func(r *ExchangeRequest) { r.Issuer = "https://accounts.google.com" })
	if err != nil || id != (Identity{"user-1", "u1@example.com", true}) {
		t.Fatalf("Exchange = %+v, %v", id, err)
	}
	// Google's documented alternative form of its issuer.
	f.set(func(f *fakeIdP) { f.claims = func(c jwt.MapClaims) { c["iss"] = "accounts.google.com" } })
	if _, err := exchange(p); err != nil {
		t.Errorf("iss accounts.google.com: %v", err)
	}
	f.set(func(f *fakeIdP) { f.claims = func(c jwt.MapClaims) { c["iss"] = f.URL } })
	if _, err := exchange(p); !errors.Is(err, ErrIDToken) {
		t.Errorf("iss of the server: %v", err)
	}
}

func TestGoogleHostedDomain(t *testing.T) {
	f := newFakeIdP(t, "https://accounts.google.com")
	p := newTestGoogle(t, f, "example.com")
	if q := authQuery(t, p); q.Get("hd") != "example.com" {
		t.Errorf("hd = %q", q.Get("hd"))
	}
	for _, tc := range []struct {
		hd   any
		want error
	}{
		{"example.com", nil},
		{"Example.COM", nil},
		{"other.com", ErrNotAllowed},
		{"", ErrNotAllowed},
		{nil, ErrNotAllowed}, // a gmail.com account
	} {
		f.set(func(f *fakeIdP) {
			f.claims = func(c jwt.MapClaims) {
				if tc.hd != nil {
					c["hd"] = tc.hd
				}
			}
		})
		if _, err := exchange(p); !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
			t.Errorf("hd %v: err = %v, want %v", tc.hd, err, tc.want)
		}
	}
}
