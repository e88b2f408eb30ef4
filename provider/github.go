package provider

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"

	"golang.org/x/oauth2"
)

// GitHubConfig configures sign-in with GitHub.
type GitHubConfig struct {
	// ClientID and ClientSecret are the OAuth app (or GitHub app)
	// registered with GitHub. ClientID is required.
	ClientID     string
	ClientSecret string
	// Scopes are requested; nil means read:user and user:email, which
	// GET /user/emails needs.
	Scopes []string
	// HTTPClient is as in OIDCConfig.
	HTTPClient *http.Client
}

// GitHub returns the "github" provider: OAuth 2.0 with PKCE, then GET
// /user and /user/emails. The user is the numeric id, as a decimal
// string. The email is the primary address, and only if GitHub has
// verified it: an unverified address is anyone's claim, so then there is
// no email at all.
func GitHub(c GitHubConfig) (Provider, error) {
	app, err := newClient("github", "GitHub", c.ClientID, c.ClientSecret, c.Scopes, c.HTTPClient, "read:user", "user:email")
	if err != nil {
		return nil, err
	}
	return &oauth2Provider{
		client: app,
		endpoint: endpoint{
			authURL:  "https://github.com/login/oauth/authorize",
			tokenURL: "https://github.com/login/oauth/access_token",
			style:    oauth2.AuthStyleInParams,
			// S256 since July 2025 (GitHub changelog 2025-07-14).
			pkce: true,
		},
		api:  "https://api.github.com",
		user: githubUser,
	}, nil
}

func githubUser(ctx context.Context, p *oauth2Provider, token string) (Identity, error) {
	var u struct {
		ID json.RawMessage `json:"id"` // a number; json.Number would take "1" too
	}
	if err := p.getJSON(ctx, p.api+"/user", token, &u); err != nil {
		return Identity{}, err
	}
	n, err := strconv.ParseUint(string(u.ID), 10, 64)
	if err != nil || n == 0 {
		return Identity{}, p.errorf(ErrExchange, "user API gave no numeric id")
	}
	var emails []struct {
		Email    string `json:"email"`
		Primary  bool   `json:"primary"`
		Verified bool   `json:"verified"`
	}
	if err := p.getJSON(ctx, p.api+"/user/emails", token, &emails); err != nil {
		return Identity{}, err
	}
	id := Identity{Subject: strconv.FormatUint(n, 10)}
	for _, e := range emails {
		if e.Primary && e.Verified && e.Email != "" {
			id.Email, id.EmailVerified = e.Email, true
			break
		}
	}
	return id, nil
}
