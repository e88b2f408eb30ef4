package provider

import (
	"net/http"
	"strings"
)

// GoogleConfig configures sign-in with Google.
type GoogleConfig struct {
	// ClientID and ClientSecret are the OAuth client from the Google
	// Cloud console. ClientID is required.
	ClientID     string
	ClientSecret string
	// Scopes are requested; nil means openid and email.
	Scopes []string
	// HostedDomain, if set, admits only accounts of that Google
	// Workspace domain: the ID token's hd claim must name it, or Exchange
	// fails with ErrNotAllowed. It also goes to Google as the hd
	// parameter, which only narrows the account chooser.
	HostedDomain string
	// HTTPClient is as in OIDCConfig.
	HTTPClient *http.Client
}

// Google returns the "google" provider: OpenID Connect with issuer
// https://accounts.google.com. The user is the ID token's sub; the email
// is verified when email_verified says so.
func Google(c GoogleConfig) (Provider, error) {
	app, err := newClient("google", "Google", c.ClientID, c.ClientSecret, c.Scopes, c.HTTPClient, "openid", "email")
	if err != nil {
		return nil, err
	}
	p := &oidcProvider{
		client: app,
		issuer: "https://accounts.google.com",
		// Google documents iss as either form
		// (developers.google.com/identity/openid-connect).
		tokenIssuer: func(iss, doc string, _ *claims) bool {
			return iss == doc || iss == "accounts.google.com"
		},
	}
	if d := c.HostedDomain; d != "" {
		p.authParams = map[string][]string{"hd": {d}}
		p.identity = func(cl *claims) (Identity, error) {
			if !strings.EqualFold(cl.HD, d) {
				return Identity{}, p.errorf(ErrNotAllowed, "the account is not of the hosted domain")
			}
			return standardIdentity(cl), nil
		}
	}
	return newOIDC(p)
}
