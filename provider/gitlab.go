package provider

import (
	"net/http"
	"strings"
)

// GitLabConfig configures sign-in with GitLab.
type GitLabConfig struct {
	// ClientID and ClientSecret are the application registered in
	// GitLab. ClientID is required.
	ClientID     string
	ClientSecret string
	// BaseURL is the GitLab instance; "" means https://gitlab.com. It is
	// also the issuer.
	BaseURL string
	// Scopes are requested; nil means openid and email.
	Scopes []string
	// HTTPClient is as in OIDCConfig.
	HTTPClient *http.Client
}

// GitLab returns the "gitlab" provider: OpenID Connect with the instance
// as issuer. The user is the ID token's sub; the email is verified when
// email_verified says so.
func GitLab(c GitLabConfig) (Provider, error) {
	app, err := newClient("gitlab", "GitLab", c.ClientID, c.ClientSecret, c.Scopes, c.HTTPClient, "openid", "email")
	if err != nil {
		return nil, err
	}
	base := strings.TrimSuffix(c.BaseURL, "/")
	if base == "" {
		base = "https://gitlab.com"
	}
	return newOIDC(&oidcProvider{client: app, issuer: base})
}
