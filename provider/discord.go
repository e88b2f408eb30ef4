package provider

import (
	"context"
	"net/http"

	"golang.org/x/oauth2"
)

// DiscordConfig configures sign-in with Discord.
type DiscordConfig struct {
	// ClientID and ClientSecret are the application from Discord's
	// developer portal. ClientID is required.
	ClientID     string
	ClientSecret string
	// Scopes are requested; nil means identify and email.
	Scopes []string
	// HTTPClient is as in OIDCConfig.
	HTTPClient *http.Client
}

// Discord returns the "discord" provider: OAuth 2.0, then GET
// /api/users/@me. The user is its id; the email is its email, verified
// when verified is true.
func Discord(c DiscordConfig) (Provider, error) {
	app, err := newClient("discord", "Discord", c.ClientID, c.ClientSecret, c.Scopes, c.HTTPClient, "identify", "email")
	if err != nil {
		return nil, err
	}
	return &oauth2Provider{
		client: app,
		endpoint: endpoint{
			authURL:  "https://discord.com/oauth2/authorize",
			tokenURL: "https://discord.com/api/oauth2/token",
			style:    oauth2.AuthStyleInHeader,
		},
		api:  "https://discord.com/api",
		user: discordUser,
	}, nil
}

func discordUser(ctx context.Context, p *oauth2Provider, token string) (Identity, error) {
	var u struct {
		ID       string  `json:"id"`
		Email    *string `json:"email"`
		Verified bool    `json:"verified"`
	}
	if err := p.getJSON(ctx, p.api+"/users/@me", token, &u); err != nil {
		return Identity{}, err
	}
	if u.ID == "" {
		return Identity{}, p.errorf(ErrExchange, "user API gave no id")
	}
	id := Identity{Subject: u.ID}
	if u.Email != nil && *u.Email != "" {
		id.Email, id.EmailVerified = *u.Email, u.Verified
	}
	return id, nil
}
