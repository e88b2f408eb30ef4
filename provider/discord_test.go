package provider

import (
	"errors"
	"fmt"
	"net/http"
	"testing"
)

func newTestDiscord(t *testing.T, user string) (Provider, *fakeIdP) {
	t.Helper()
	f := newFakeIdP(t, "")
	f.handle("/token", func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		if u, s, ok := r.BasicAuth(); !ok || u != testClient || s != testSecret || r.PostForm.Get("code") != testCode {
			http.Error(w, `{"error":"invalid_client"}`, http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"access_token":"at-1","token_type":"Bearer","expires_in":604800,"scope":"identify email"}`)
	})
	f.handle("/api/users/@me", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer at-1" {
			http.Error(w, "", http.StatusUnauthorized)
			return
		}
		fmt.Fprint(w, user)
	})
	p, err := Discord(DiscordConfig{ClientID: testClient, ClientSecret: testSecret})
	if err != nil {
		t.Fatal(err)
	}
	d := p.(*oauth2Provider)
	if d.authURL != "https://discord.com/oauth2/authorize" || d.api != "https://discord.com/api" {
		t.Errorf("endpoints %q, %q", d.authURL, d.api)
	}
	d.authURL, d.tokenURL, d.api = f.URL+"/authorize", f.URL+"/token", f.URL+"/api"
	return p, f
}

func TestDiscord(t *testing.T) {
	for _, tc := range []struct {
		user    string
		want    Identity
		wantErr error
	}{
		{`{"id":"80351110224678912","username":"n","email":"n@example.com","verified":true}`, Identity{"80351110224678912", "n@example.com", true}, nil},
		{`{"id":"1","email":"n@example.com","verified":false}`, Identity{"1", "n@example.com", false}, nil},
		{`{"id":"1","email":null,"verified":true}`, Identity{"1", "", false}, nil},
		{`{"id":"1"}`, Identity{"1", "", false}, nil},
		{`{"id":"","email":"n@example.com"}`, Identity{}, ErrExchange},
		{`{"id":1}`, Identity{}, ErrExchange},
		{`[` + leakMarker, Identity{}, ErrExchange},
	} {
		p, _ := newTestDiscord(t, tc.user)
		id, err := exchange(p)
		if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) || id != tc.want {
			t.Errorf("%s: %+v, %v; want %+v, %v", tc.user, id, err, tc.want, tc.wantErr)
		}
		checkSafe(t, err)
	}
}

func TestDiscordAuthURL(t *testing.T) {
	p, _ := newTestDiscord(t, `{}`)
	q := authQuery(t, p)
	if q.Get("scope") != "identify email" || q.Has("code_challenge") || q.Has("nonce") || q.Get("client_id") != testClient {
		t.Errorf("authorisation URL %v", q)
	}
	if _, err := exchange(p, func(r *ExchangeRequest) { r.Issuer = "https://discord.com" }); !errors.Is(err, ErrIssuer) {
		t.Errorf("callback with an iss: %v", err)
	}
}
