// Package provider signs users in with third-party identity providers:
// the Provider interface, OpenID Connect by discovery ([OIDC]) and presets
// for Google, GitHub, Apple, Microsoft Entra ID, GitLab and Discord.
//
// A Provider does the two server-side steps of the authorisation code flow.
// [Provider.AuthURL] builds the URL the browser is sent to, and
// [Provider.Exchange] turns the code the browser comes back with into an
// [Identity]. It keeps no state between the two: the caller supplies the
// PKCE code challenge and the nonce, and later the verifier and the same
// nonce (the auth package derives both from the verifier it hands to the
// frontend SDK).
//
// What a provider checks, so the caller need not:
//   - OpenID Connect: the ID token from the token endpoint is verified with
//     a key from the provider's JWKS (asymmetric algorithms only; keys are
//     cached and fetched again for an unknown key id), and its iss, aud,
//     azp, exp, iat, nbf and nonce claims are checked.
//   - The callback's iss parameter (RFC 9207), when the caller passes it,
//     must be the provider's issuer: a code meant for one provider is never
//     sent to another.
//   - An email counts as verified only where the provider vouches for it
//     (see each preset).
//
// Every call to a provider has a deadline (10 s unless the caller's context
// or HTTPClient sets one), follows no redirects and reads at most 1 MiB.
// Errors match one of the package's sentinels with errors.Is, and their
// text is safe to log: it never holds a code, token or response body.
package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"golang.org/x/oauth2"
)

// A Provider signs users in through one identity provider. Its methods are
// safe for concurrent use.
type Provider interface {
	// ID is the provider's thirdPartyId: "google", "github", "apple",
	// "active-directory", "gitlab", "discord", or the configured id of a
	// generic OpenID Connect provider. The frontend SDK uses the same ids.
	ID() string
	// Name is the display name, or "".
	Name() string
	// AuthURL returns the provider's authorisation URL for r. A provider
	// that needs its discovery document fetches it first, under ctx.
	AuthURL(ctx context.Context, r AuthRequest) (string, error)
	// Exchange redeems the code of r at the provider and returns who
	// signed in.
	Exchange(ctx context.Context, r ExchangeRequest) (Identity, error)
}

// AuthRequest is what goes into an authorisation URL.
type AuthRequest struct {
	// RedirectURI is where the provider sends the browser back, byte for
	// byte as registered there. Required.
	RedirectURI string
	// State, if not empty, is passed through. The frontend SDK sets its
	// own, so the auth package leaves it empty.
	State string
	// CodeChallenge is the PKCE S256 challenge of the verifier that
	// Exchange will get. A provider not known to accept PKCE leaves it out.
	CodeChallenge string
	// Nonce, if not empty, is sent to OpenID Connect providers, whose ID
	// token must then carry it. Other providers ignore it.
	Nonce string
}

// ExchangeRequest is what Exchange redeems.
type ExchangeRequest struct {
	// Code is the callback's code parameter. Required.
	Code string
	// RedirectURI is the one given to AuthURL. Required.
	RedirectURI string
	// CodeVerifier is the PKCE verifier whose challenge went to AuthURL.
	// It is sent only to providers that were sent the challenge.
	CodeVerifier string
	// Nonce is the one given to AuthURL. If not empty, the ID token must
	// carry it.
	Nonce string
	// Issuer is the callback's iss parameter (RFC 9207), or "" if it had
	// none. If not empty it must be the provider's issuer, or the code is
	// not redeemed: this defeats mix-up attacks between providers.
	Issuer string
}

// Identity is who signed in, as the provider says.
type Identity struct {
	// Subject is the provider's stable id for the user: never empty, and
	// never an email, which can change hands.
	Subject string
	// Email is the address the provider gives, as it gives it, or "" if
	// it gives none it vouches for (see each preset).
	Email string
	// EmailVerified is true only when the provider says it has verified
	// Email.
	EmailVerified bool
}

// A FormPoster is a Provider whose redirect to the RedirectURI is an HTTP
// POST of an HTML form (response_mode=form_post), as Apple's is. The
// redirect URI then has to be a server endpoint that relays the code to
// the frontend, not a frontend page.
type FormPoster interface {
	Provider
	FormPost() bool
}

// Errors, matched with errors.Is. Every error from this package matches
// exactly one of them.
var (
	// ErrConfig reports a configuration a constructor refuses, or an
	// AuthRequest without a redirect URI.
	ErrConfig = errors.New("provider: invalid configuration")
	// ErrDiscovery reports a discovery document that could not be
	// fetched, or that is not acceptable (wrong issuer, missing or
	// insecure endpoints).
	ErrDiscovery = errors.New("provider: discovery failed")
	// ErrIssuer reports a callback whose iss parameter is not the
	// provider's issuer. The code was not redeemed.
	ErrIssuer = errors.New("provider: callback from another issuer")
	// ErrExchange reports a failed call to the token endpoint or user
	// API: an error status, a timeout, an answer that does not parse or
	// lacks what is needed. Also a request that lacks a code or redirect
	// URI.
	ErrExchange = errors.New("provider: exchange failed")
	// ErrIDToken reports an ID token that was refused: missing, badly
	// signed, or with a claim that does not check out.
	ErrIDToken = errors.New("provider: ID token refused")
	// ErrNotAllowed reports a valid sign-in by an account the
	// configuration keeps out: another Google Workspace domain than
	// GoogleConfig.HostedDomain, a tenant not in MicrosoftConfig.Tenants.
	ErrNotAllowed = errors.New("provider: account not allowed")
)

// Timeout is the deadline of a call to a provider when neither the
// caller's context nor its HTTPClient sets a shorter one.
const Timeout = 10 * time.Second

// maxBody caps every response body read from a provider.
const maxBody = 1 << 20

// httpClient returns a copy of c (or of a zero client) that times out
// after Timeout unless c sets a timeout, follows no redirects (a redirect
// from a token endpoint would carry the client secret elsewhere) and
// refuses response bodies over maxBody.
func httpClient(c *http.Client) *http.Client {
	var hc http.Client
	if c != nil {
		hc = *c
	}
	if hc.Timeout == 0 {
		hc.Timeout = Timeout
	}
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	t := hc.Transport
	if t == nil {
		t = http.DefaultTransport
	}
	hc.Transport = limitTransport{t}
	return &hc
}

type limitTransport struct{ http.RoundTripper }

func (t limitTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	res, err := t.RoundTripper.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	res.Body = &limitedBody{ReadCloser: res.Body, left: maxBody}
	return res, nil
}

var errTooLarge = errors.New("response body over 1 MiB")

// limitedBody fails, rather than truncates, a body over its limit: a
// truncated JSON document could still parse.
type limitedBody struct {
	io.ReadCloser
	left int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, errTooLarge
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return n, errTooLarge
	}
	return n, err
}

// cause returns what may be said about err, an error from an HTTP call:
// transport errors (*url.Error, which names the URL, never a body) and
// context errors keep their chain; anything else is replaced by what, a
// short description, as its text may quote a response.
func cause(err error, what string) error {
	if ue, ok := errors.AsType[*url.Error](err); ok {
		return ue
	}
	for _, e := range []error{context.DeadlineExceeded, context.Canceled, errTooLarge} {
		if errors.Is(err, e) {
			return fmt.Errorf("%s: %w", what, e)
		}
	}
	return errors.New(what)
}

var errorCodeRE = regexp.MustCompile(`^[a-z_]{1,40}$`)

// client is what every provider has: its identity, the client registered
// with it and the HTTP client that reaches it.
type client struct {
	id, name     string
	clientID     string
	clientSecret func() (string, error) // Apple's is minted
	scopes       []string
	http         *http.Client
}

// newClient makes the client of the provider id, named name, from the
// fields that every Config has. It refuses an empty id or clientID, and
// nil scopes mean defaultScopes.
func newClient(id, name, clientID, clientSecret string, scopes []string, hc *http.Client, defaultScopes ...string) (client, error) {
	if id == "" {
		return client{}, fmt.Errorf("%w: no provider id", ErrConfig)
	}
	if clientID == "" {
		return client{}, fmt.Errorf("%w: %s: no client id", ErrConfig, id)
	}
	if scopes == nil {
		scopes = defaultScopes
	}
	return client{
		id: id, name: name,
		clientID:     clientID,
		clientSecret: func() (string, error) { return clientSecret, nil },
		scopes:       slices.Clone(scopes),
		http:         httpClient(hc),
	}, nil
}

func (c *client) ID() string   { return c.id }
func (c *client) Name() string { return c.name }

func (c *client) errorf(sentinel error, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", sentinel, c.id, fmt.Sprintf(format, args...))
}

func (c *client) wrapf(sentinel, err error, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s: %w", sentinel, c.id, fmt.Sprintf(format, args...), err)
}

// endpoint says how to reach an authorisation server.
type endpoint struct {
	authURL, tokenURL string
	style             oauth2.AuthStyle // never AutoDetect, which may send the secret twice
	pkce              bool
}

func (c *client) authCodeURL(e endpoint, r AuthRequest, nonce bool, extra url.Values) (string, error) {
	if r.RedirectURI == "" {
		return "", c.errorf(ErrConfig, "no redirect URI")
	}
	cfg := oauth2.Config{
		ClientID:    c.clientID,
		Endpoint:    oauth2.Endpoint{AuthURL: e.authURL},
		RedirectURL: r.RedirectURI,
		Scopes:      c.scopes,
	}
	var opts []oauth2.AuthCodeOption
	if e.pkce && r.CodeChallenge != "" {
		opts = append(opts,
			oauth2.SetAuthURLParam("code_challenge", r.CodeChallenge),
			oauth2.SetAuthURLParam("code_challenge_method", "S256"))
	}
	if nonce && r.Nonce != "" {
		opts = append(opts, oauth2.SetAuthURLParam("nonce", r.Nonce))
	}
	for k, vs := range extra {
		opts = append(opts, oauth2.SetAuthURLParam(k, vs[0]))
	}
	return cfg.AuthCodeURL(r.State, opts...), nil
}

// exchange redeems r's code at e's token endpoint.
func (c *client) exchange(ctx context.Context, e endpoint, r ExchangeRequest) (*oauth2.Token, error) {
	if r.Code == "" || r.RedirectURI == "" {
		return nil, c.errorf(ErrExchange, "no code or redirect URI")
	}
	secret, err := c.clientSecret()
	if err != nil {
		return nil, c.wrapf(ErrExchange, err, "client secret")
	}
	cfg := oauth2.Config{
		ClientID:     c.clientID,
		ClientSecret: secret,
		Endpoint:     oauth2.Endpoint{TokenURL: e.tokenURL, AuthStyle: e.style},
		RedirectURL:  r.RedirectURI,
	}
	var opts []oauth2.AuthCodeOption
	if e.pkce && r.CodeVerifier != "" {
		opts = append(opts, oauth2.VerifierOption(r.CodeVerifier))
	}
	tok, err := cfg.Exchange(context.WithValue(ctx, oauth2.HTTPClient, c.http), r.Code, opts...)
	if err != nil {
		if re, ok := errors.AsType[*oauth2.RetrieveError](err); ok {
			// The status and RFC 6749 error code (an enumerated value
			// such as invalid_grant) are safe; the description and body
			// are the provider's words.
			status := 0
			if re.Response != nil {
				status = re.Response.StatusCode
			}
			code := ""
			if errorCodeRE.MatchString(re.ErrorCode) {
				code = " " + re.ErrorCode
			}
			return nil, c.errorf(ErrExchange, "token endpoint answered %d%s", status, code)
		}
		return nil, c.wrapf(ErrExchange, cause(err, "token response refused"), "token endpoint")
	}
	return tok, nil
}

// getJSON reads the JSON answer of a GET of u with token as the bearer
// token into v.
func (c *client) getJSON(ctx context.Context, u, token string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return c.errorf(ErrConfig, "bad URL")
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "application/json")
	res, err := c.http.Do(req)
	if err != nil {
		return c.wrapf(ErrExchange, cause(err, "request failed"), "user API")
	}
	defer res.Body.Close()
	if res.StatusCode < 200 || res.StatusCode > 299 {
		return c.errorf(ErrExchange, "user API %s answered %d", req.URL.Path, res.StatusCode)
	}
	if err := json.NewDecoder(res.Body).Decode(v); err != nil {
		return c.wrapf(ErrExchange, cause(err, "not JSON"), "user API %s", req.URL.Path)
	}
	return nil
}

// checkURL refuses an endpoint URL that is not absolute https, or http on
// a loopback host (a local or test provider).
func checkURL(u string) error {
	p, err := url.Parse(u)
	if err != nil || p.Host == "" || p.User != nil || p.Fragment != "" {
		return errors.New("not an absolute URL")
	}
	switch p.Scheme {
	case "https":
		return nil
	case "http":
		if h := p.Hostname(); h == "localhost" || h == "127.0.0.1" || h == "::1" {
			return nil
		}
	}
	return errors.New("not https")
}

// truthy reports whether a claim is JSON true or the string "true", the
// two ways providers say a boolean (Apple sends strings). Anything else,
// "1" and "yes" included, is false.
func truthy(raw json.RawMessage) bool {
	s := strings.TrimSpace(string(raw))
	return s == "true" || s == `"true"`
}

// oauth2Provider is a plain OAuth 2.0 provider: a code exchange, then a
// call to the provider's user API with the access token.
type oauth2Provider struct {
	client
	endpoint
	// api is the user API's base URL.
	api string
	// user asks the user API who the token belongs to.
	user func(ctx context.Context, p *oauth2Provider, accessToken string) (Identity, error)
}

func (p *oauth2Provider) AuthURL(ctx context.Context, r AuthRequest) (string, error) {
	return p.authCodeURL(p.endpoint, r, false, nil)
}

func (p *oauth2Provider) Exchange(ctx context.Context, r ExchangeRequest) (Identity, error) {
	if r.Issuer != "" {
		// These providers name no issuer, so a callback that has one
		// came from somewhere else.
		return Identity{}, p.errorf(ErrIssuer, "the provider has no issuer, the callback has one")
	}
	tok, err := p.exchange(ctx, p.endpoint, r)
	if err != nil {
		return Identity{}, err
	}
	return p.user(ctx, p, tok.AccessToken)
}
