package provider

import (
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
)

type countingTransport struct{ n atomic.Int32 }

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return http.DefaultTransport.RoundTrip(r)
}

// Every constructor takes its client the same way: the client id is
// required, the scopes given replace the defaults and are the caller's
// to change afterwards, and calls go through the HTTP client given.
func TestPresetClient(t *testing.T) {
	appleKey := pkcs8PEM(t, newECKey(t))
	type config struct {
		clientID string
		scopes   []string
		http     *http.Client
	}
	for _, tc := range []struct {
		id, name string
		issuer   string // of the fake; "" for its own URL
		make     func(f *fakeIdP, c config) (Provider, error)
	}{
		{"idp", "IdP", "", func(f *fakeIdP, c config) (Provider, error) {
			return OIDC(OIDCConfig{ID: "idp", Name: "IdP", Issuer: f.URL, ClientID: c.clientID, ClientSecret: testSecret, Scopes: c.scopes, HTTPClient: c.http})
		}},
		{"google", "Google", "https://accounts.google.com", func(_ *fakeIdP, c config) (Provider, error) {
			return Google(GoogleConfig{ClientID: c.clientID, ClientSecret: testSecret, Scopes: c.scopes, HTTPClient: c.http})
		}},
		{"apple", "Apple", "https://appleid.apple.com", func(_ *fakeIdP, c config) (Provider, error) {
			return Apple(AppleConfig{ClientID: c.clientID, TeamID: "TEAM123456", KeyID: "KEY1234567", PrivateKey: appleKey, Scopes: c.scopes, HTTPClient: c.http})
		}},
		{"active-directory", "Microsoft", entraIssuer, func(_ *fakeIdP, c config) (Provider, error) {
			return Microsoft(MicrosoftConfig{ClientID: c.clientID, ClientSecret: testSecret, Scopes: c.scopes, HTTPClient: c.http})
		}},
		{"gitlab", "GitLab", "", func(f *fakeIdP, c config) (Provider, error) {
			return GitLab(GitLabConfig{ClientID: c.clientID, ClientSecret: testSecret, BaseURL: f.URL, Scopes: c.scopes, HTTPClient: c.http})
		}},
		{"github", "GitHub", "", func(_ *fakeIdP, c config) (Provider, error) {
			return GitHub(GitHubConfig{ClientID: c.clientID, ClientSecret: testSecret, Scopes: c.scopes, HTTPClient: c.http})
		}},
		{"discord", "Discord", "", func(_ *fakeIdP, c config) (Provider, error) {
			return Discord(DiscordConfig{ClientID: c.clientID, ClientSecret: testSecret, Scopes: c.scopes, HTTPClient: c.http})
		}},
	} {
		t.Run(tc.id, func(t *testing.T) {
			f := newFakeIdP(t, tc.issuer)
			if p, err := tc.make(f, config{}); !errors.Is(err, ErrConfig) || p != nil {
				t.Errorf("no client id: %v, %v; want nil, ErrConfig", p, err)
			}
			scopes := []string{"openid", "profile"}
			rt := &countingTransport{}
			p, err := tc.make(f, config{clientID: testClient, scopes: scopes, http: &http.Client{Transport: rt}})
			if err != nil {
				t.Fatal(err)
			}
			if p.ID() != tc.id || p.Name() != tc.name {
				t.Errorf("ID, Name = %q, %q; want %q, %q", p.ID(), p.Name(), tc.id, tc.name)
			}
			oidc, _ := p.(*oidcProvider)
			if oidc != nil {
				oidc.discovery = f.URL
			}
			scopes[1] = "changed"
			q := authQuery(t, p)
			if q.Get("scope") != "openid profile" || q.Get("client_id") != testClient {
				t.Errorf("authorisation URL %v", q)
			}
			if oidc != nil && rt.n.Load() == 0 {
				t.Error("the discovery document was not fetched with the HTTP client given")
			}
		})
	}
}
