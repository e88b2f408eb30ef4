package provider

import (
	"context"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// OIDCConfig configures an OpenID Connect provider found by discovery.
type OIDCConfig struct {
	// ID is the thirdPartyId, as configured in the frontend. Required.
	ID string
	// Name is the display name; "" for none.
	Name string
	// Issuer is the issuer URL, exactly as the provider's ID tokens
	// state it. The discovery document is fetched from
	// Issuer + "/.well-known/openid-configuration" and must name the same
	// issuer. https is required, but for http on a loopback address.
	Issuer string
	// ClientID and ClientSecret are the client registered with the
	// provider. ClientID is required.
	ClientID     string
	ClientSecret string
	// Scopes are requested in the authorisation URL; nil means openid and
	// email.
	Scopes []string
	// HTTPClient makes the calls to the provider; nil means a client with
	// a Timeout deadline. Its CheckRedirect is replaced: redirects are
	// never followed.
	HTTPClient *http.Client
}

// OIDC returns a provider for any OpenID Connect provider that publishes a
// discovery document. The document is fetched at the first call that
// needs it, under that call's context, and kept for a day; a failed fetch
// is tried again at the next call. PKCE is used when the document lists
// S256 in code_challenge_methods_supported. The user is the ID token's
// sub, with its email, verified when email_verified is true or "true".
func OIDC(c OIDCConfig) (Provider, error) {
	app, err := newClient(c.ID, c.Name, c.ClientID, c.ClientSecret, c.Scopes, c.HTTPClient, "openid", "email")
	if err != nil {
		return nil, err
	}
	return newOIDC(&oidcProvider{client: app, issuer: c.Issuer})
}

// oidcProvider is OIDC and the OpenID Connect presets.
type oidcProvider struct {
	client
	// issuer is the expected issuer of the discovery document and, unless
	// checkIssuer says otherwise, of the ID tokens.
	issuer string
	// discovery is where the discovery document is fetched from, if not
	// from issuer; tests point presets at a fake with it.
	discovery string
	// pkce, if true, sends a code challenge whatever the discovery
	// document says, to a provider documented to accept one.
	pkce bool
	// authParams are added to the authorisation URL.
	authParams map[string][]string
	formPost   bool
	// issuerOK, if set, replaces the exact comparison of a discovery
	// document's issuer with issuer (Entra's multi-tenant template).
	issuerOK func(doc string) bool
	// tokenIssuer, if set, checks the ID token's iss against the
	// discovery document's issuer in place of exact equality.
	tokenIssuer func(iss, doc string, c *claims) bool
	// callbackIssuer, if set, checks the callback's iss in place of
	// exact equality with the discovery document's issuer.
	callbackIssuer func(iss, doc string) bool
	// identity maps verified claims to the user; nil means the standard
	// claims (sub, email, email_verified).
	identity func(c *claims) (Identity, error)
	now      func() time.Time

	mu   sync.Mutex
	meta *discovered
}

// newOIDC checks and completes p. It returns a Provider, so that a
// constructor can return its result as it is: a nil *oidcProvider would
// make a Provider that is not nil.
func newOIDC(p *oidcProvider) (Provider, error) {
	if err := checkURL(p.issuer); err != nil && p.issuerOK == nil {
		return nil, p.errorf(ErrConfig, "issuer: %v", err)
	}
	if p.now == nil {
		p.now = time.Now
	}
	return p, nil
}

func (p *oidcProvider) FormPost() bool { return p.formPost }

// discovered is a discovery document and what was made of it.
type discovered struct {
	issuer   string
	endpoint endpoint
	algs     []string
	keys     *keySet
	verifier *oidc.IDTokenVerifier
	at       time.Time
}

// rediscoverAfter is how long a discovery document is used before it is
// fetched again. A failed refetch keeps the old one.
const rediscoverAfter = 24 * time.Hour

// asymmetric are the ID-token signature algorithms accepted. HS256 and
// none are never: an HMAC key would be the client secret, and the token
// would prove nothing a client could not forge.
var asymmetric = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}

// discover returns the discovery document, fetching it if it has none or
// has had it for rediscoverAfter. Concurrent first calls may each fetch;
// the last success is kept.
func (p *oidcProvider) discover(ctx context.Context) (*discovered, error) {
	p.mu.Lock()
	m := p.meta
	p.mu.Unlock()
	if m != nil && p.now().Sub(m.at) < rediscoverAfter {
		return m, nil
	}
	fresh, err := p.fetchDiscovery(ctx, m)
	if err != nil {
		if m != nil {
			return m, nil
		}
		return nil, err
	}
	p.mu.Lock()
	p.meta = fresh
	p.mu.Unlock()
	return fresh, nil
}

func (p *oidcProvider) fetchDiscovery(ctx context.Context, old *discovered) (*discovered, error) {
	base := p.discovery
	if base == "" {
		base = p.issuer
	}
	u := strings.TrimSuffix(base, "/") + "/.well-known/openid-configuration"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, p.errorf(ErrConfig, "discovery URL")
	}
	req.Header.Set("Accept", "application/json")
	res, err := p.http.Do(req)
	if err != nil {
		return nil, p.wrapf(ErrDiscovery, cause(err, "request failed"), "discovery")
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, p.errorf(ErrDiscovery, "discovery document answered %d", res.StatusCode)
	}
	var doc struct {
		Issuer      string   `json:"issuer"`
		AuthURL     string   `json:"authorization_endpoint"`
		TokenURL    string   `json:"token_endpoint"`
		JWKSURL     string   `json:"jwks_uri"`
		Algs        []string `json:"id_token_signing_alg_values_supported"`
		PKCE        []string `json:"code_challenge_methods_supported"`
		AuthMethods []string `json:"token_endpoint_auth_methods_supported"`
	}
	if err := json.NewDecoder(res.Body).Decode(&doc); err != nil {
		return nil, p.wrapf(ErrDiscovery, cause(err, "not JSON"), "discovery document")
	}
	if p.issuerOK != nil && !p.issuerOK(doc.Issuer) || p.issuerOK == nil && doc.Issuer != p.issuer {
		return nil, p.errorf(ErrDiscovery, "discovery document names another issuer")
	}
	for _, u := range []string{doc.AuthURL, doc.TokenURL, doc.JWKSURL} {
		if err := checkURL(u); err != nil {
			return nil, p.errorf(ErrDiscovery, "endpoint %q: %v", u, err)
		}
	}
	m := &discovered{
		issuer: doc.Issuer,
		at:     p.now(),
		endpoint: endpoint{
			authURL:  doc.AuthURL,
			tokenURL: doc.TokenURL,
			pkce:     p.pkce || slices.Contains(doc.PKCE, "S256"),
		},
	}
	// The first client authentication the provider lists that we do;
	// client_secret_basic is the default when it lists none (OIDC
	// Discovery 1.0, section 3).
	m.endpoint.style = oauth2.AuthStyleInHeader
	if len(doc.AuthMethods) > 0 {
		i := slices.IndexFunc(doc.AuthMethods, func(s string) bool {
			return s == "client_secret_basic" || s == "client_secret_post"
		})
		if i < 0 {
			return nil, p.errorf(ErrDiscovery, "no client_secret_basic or client_secret_post at the token endpoint")
		}
		if doc.AuthMethods[i] == "client_secret_post" {
			m.endpoint.style = oauth2.AuthStyleInParams
		}
	}
	for _, a := range doc.Algs {
		if slices.Contains(asymmetric, a) {
			m.algs = append(m.algs, a)
		}
	}
	if len(m.algs) == 0 {
		m.algs = []string{"RS256"} // the one OIDC requires
	}
	// Keep the cached keys across a refetch that names the same key set.
	if old != nil && old.keys.url == doc.JWKSURL {
		m.keys = old.keys
	} else {
		m.keys = &keySet{url: doc.JWKSURL, http: p.http}
	}
	// go-oidc checks the token's form, its algorithm and its signature.
	// The claims are checked in verify, where each refusal gets a reason
	// of its own. go-oidc's claim checks could not give one: they fail as
	// text only (its typed expiry error comes with an nbf check that does
	// not have one), accept a token that has other audiences too, and
	// cannot check the issuer of an Entra token, which depends on its tid.
	m.verifier = oidc.NewVerifier(m.issuer, m.keys, &oidc.Config{
		SupportedSigningAlgs: m.algs,
		SkipClientIDCheck:    true,
		SkipExpiryCheck:      true,
		SkipIssuerCheck:      true,
	})
	return m, nil
}

func (p *oidcProvider) AuthURL(ctx context.Context, r AuthRequest) (string, error) {
	m, err := p.discover(ctx)
	if err != nil {
		return "", err
	}
	return p.authCodeURL(m.endpoint, r, true, p.authParams)
}

func (p *oidcProvider) Exchange(ctx context.Context, r ExchangeRequest) (Identity, error) {
	m, err := p.discover(ctx)
	if err != nil {
		return Identity{}, err
	}
	if r.Issuer != "" {
		ok := r.Issuer == m.issuer
		if p.callbackIssuer != nil {
			ok = p.callbackIssuer(r.Issuer, m.issuer)
		}
		if !ok {
			return Identity{}, p.errorf(ErrIssuer, "the callback's iss is not the provider's")
		}
	}
	tok, err := p.exchange(ctx, m.endpoint, r)
	if err != nil {
		return Identity{}, err
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return Identity{}, p.errorf(ErrIDToken, "no ID token in the token response")
	}
	c, err := p.verify(ctx, m, raw, r.Nonce)
	if err != nil {
		return Identity{}, err
	}
	if r.Issuer != "" && r.Issuer != c.Issuer {
		return Identity{}, p.errorf(ErrIssuer, "the callback's iss is not the ID token's")
	}
	if p.identity != nil {
		return p.identity(c)
	}
	return standardIdentity(c), nil
}

// claims are the ID token claims the providers use.
type claims struct {
	Issuer        string          `json:"iss"`
	Subject       string          `json:"sub"`
	Audience      json.RawMessage `json:"aud"`
	AZP           *string         `json:"azp"`
	Expiry        *float64        `json:"exp"`
	IssuedAt      *float64        `json:"iat"`
	NotBefore     *float64        `json:"nbf"`
	Nonce         string          `json:"nonce"`
	Email         string          `json:"email"`
	EmailVerified json.RawMessage `json:"email_verified"`
	HD            string          `json:"hd"`       // Google Workspace domain
	TID           string          `json:"tid"`      // Entra tenant
	EDOV          json.RawMessage `json:"xms_edov"` // Entra: email domain owner verified
}

func standardIdentity(c *claims) Identity {
	return Identity{Subject: c.Subject, Email: c.Email, EmailVerified: c.Email != "" && truthy(c.EmailVerified)}
}

// skew is the clock difference allowed where a skew would refuse a valid
// token (iat and nbf in the future). It never extends a token's life: exp
// is exact.
const skew = 5 * time.Minute

// maxAge is how old an ID token may be. One comes from the token endpoint
// moments after it was minted; an old one is a replay or a broken clock.
const maxAge = 10 * time.Minute

// verify checks raw, an ID token, as OpenID Connect Core 1.0 section
// 3.1.3.7 says, and returns its claims.
func (p *oidcProvider) verify(ctx context.Context, m *discovered, raw, nonce string) (*claims, error) {
	alg, _ := jwsHeader(raw)
	if alg == "" {
		return nil, p.errorf(ErrIDToken, "not a signed JWT")
	}
	if !slices.Contains(m.algs, alg) {
		if len(alg) > 10 {
			alg = alg[:10]
		}
		return nil, p.errorf(ErrIDToken, "algorithm %q not accepted", alg)
	}
	// go-oidc's errors are text that may quote the token or the key set;
	// the key set says which step failed.
	var kc keyCheck
	t, err := m.verifier.Verify(context.WithValue(ctx, keyCheckKey{}, &kc), raw)
	switch {
	case err == nil:
	case !kc.consulted:
		return nil, p.errorf(ErrIDToken, "not a signed JWT")
	case kc.fetchErr != nil:
		return nil, p.wrapf(ErrIDToken, kc.fetchErr, "the key set could not be fetched")
	case kc.verified:
		return nil, p.errorf(ErrIDToken, "claims do not parse")
	default:
		return nil, p.errorf(ErrIDToken, "signature not verified by any key of the key set")
	}
	var c claims
	if err := t.Claims(&c); err != nil {
		return nil, p.errorf(ErrIDToken, "claims do not parse")
	}
	ok := c.Issuer == m.issuer
	if p.tokenIssuer != nil {
		ok = p.tokenIssuer(c.Issuer, m.issuer, &c)
	}
	if !ok {
		return nil, p.errorf(ErrIDToken, "iss is not the provider's issuer")
	}
	var aud []string
	if json.Unmarshal(c.Audience, &aud) != nil {
		var one string
		if json.Unmarshal(c.Audience, &one) != nil {
			return nil, p.errorf(ErrIDToken, "aud is not a string or array")
		}
		aud = []string{one}
	}
	// The client must be the only audience: a token also meant for
	// another party is not ours alone.
	if len(aud) != 1 || aud[0] != p.clientID {
		return nil, p.errorf(ErrIDToken, "aud is not the client id")
	}
	if c.AZP != nil && *c.AZP != p.clientID {
		return nil, p.errorf(ErrIDToken, "azp is not the client id")
	}
	now := p.now()
	switch {
	case c.Expiry == nil:
		return nil, p.errorf(ErrIDToken, "no exp")
	case !now.Before(unix(*c.Expiry)):
		return nil, p.errorf(ErrIDToken, "expired")
	case c.IssuedAt == nil:
		return nil, p.errorf(ErrIDToken, "no iat")
	case unix(*c.IssuedAt).After(now.Add(skew)):
		return nil, p.errorf(ErrIDToken, "iat in the future")
	case unix(*c.IssuedAt).Before(now.Add(-maxAge - skew)):
		return nil, p.errorf(ErrIDToken, "iat too old")
	case c.NotBefore != nil && unix(*c.NotBefore).After(now.Add(skew)):
		return nil, p.errorf(ErrIDToken, "not valid yet (nbf)")
	}
	if nonce != "" && subtle.ConstantTimeCompare([]byte(c.Nonce), []byte(nonce)) != 1 {
		return nil, p.errorf(ErrIDToken, "nonce does not match")
	}
	if c.Subject == "" {
		return nil, p.errorf(ErrIDToken, "no sub")
	}
	return &c, nil
}

func unix(f float64) time.Time {
	sec := int64(f)
	return time.Unix(sec, int64((f-float64(sec))*1e9))
}

// jwsHeader returns the alg and kid of a compact JWS's header, or "" for
// what it lacks.
func jwsHeader(raw string) (alg, kid string) {
	h, _, ok := strings.Cut(raw, ".")
	if !ok {
		return "", ""
	}
	b, err := base64.RawURLEncoding.DecodeString(h)
	if err != nil {
		return "", ""
	}
	var hdr struct {
		Alg string `json:"alg"`
		Kid string `json:"kid"`
	}
	if json.Unmarshal(b, &hdr) != nil {
		return "", ""
	}
	return hdr.Alg, hdr.Kid
}
