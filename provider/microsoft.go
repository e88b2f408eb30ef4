package provider

import (
	"net/http"
	"regexp"
	"slices"
	"strings"
)

// MicrosoftConfig configures sign-in with Microsoft Entra ID (formerly
// Azure Active Directory).
type MicrosoftConfig struct {
	// ClientID and ClientSecret are the app registration. ClientID is
	// required.
	ClientID     string
	ClientSecret string
	// Tenant is the directory in the endpoints' paths: "common" (any
	// work, school or personal account; the default), "organizations",
	// "consumers", or one tenant's id or domain.
	Tenant string
	// Tenants, if not empty, lists the tenant ids (GUIDs) whose accounts
	// may sign in; others fail with ErrNotAllowed. With "common" or
	// "organizations" and no list, any Entra tenant's accounts are
	// admitted, as Microsoft signs tokens for all of them with the same
	// keys.
	Tenants []string
	// Scopes are requested; nil means openid and email.
	Scopes []string
	// HTTPClient is as in OIDCConfig.
	HTTPClient *http.Client
}

// entraIssuer is the issuer of Entra ID v2.0 tokens, for the tenant that
// is substituted.
const entraIssuer = "https://login.microsoftonline.com/{tenantid}/v2.0"

var (
	guidRE   = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
	tenantRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9.-]{0,252}$`)
)

// entraTenant returns the tenant of an issuer of the template's form, or
// "" if iss is not one.
func entraTenant(iss string) string {
	pre, suf, _ := strings.Cut(entraIssuer, "{tenantid}")
	t, ok := strings.CutPrefix(iss, pre)
	if !ok {
		return ""
	}
	t, ok = strings.CutSuffix(t, suf)
	if !ok || !guidRE.MatchString(t) {
		return ""
	}
	return t
}

// Microsoft returns the "active-directory" provider: OpenID Connect with
// Entra ID's v2.0 endpoints, and PKCE. The multi-tenant discovery
// documents name the issuer as a template, so each ID token's iss must be
// that template with the token's own tid substituted, which a token of
// one tenant cannot fake for another.
//
// The user is the ID token's sub (per application, as Entra issues it).
// Entra's email claim is whatever the tenant's administrator typed, so it
// is verified only when the xms_edov claim (email domain owner verified,
// an optional claim to enable in the app registration) is true.
func Microsoft(c MicrosoftConfig) (Provider, error) {
	app, err := newClient("active-directory", "Microsoft", c.ClientID, c.ClientSecret, c.Scopes, c.HTTPClient, "openid", "email")
	if err != nil {
		return nil, err
	}
	tenant := c.Tenant
	if tenant == "" {
		tenant = "common"
	}
	if !tenantRE.MatchString(tenant) {
		return nil, app.errorf(ErrConfig, "Tenant is not a tenant name or id")
	}
	for _, t := range c.Tenants {
		if !guidRE.MatchString(t) {
			return nil, app.errorf(ErrConfig, "Tenants holds %q, not a tenant id", t)
		}
	}
	p := &oidcProvider{
		client:    app,
		issuer:    entraIssuer,
		discovery: strings.Replace(entraIssuer, "{tenantid}", tenant, 1),
		// Entra accepts PKCE but its discovery documents do not say so.
		pkce: true,
		// The template for common and organizations; one tenant's issuer
		// otherwise (consumers is a tenant too), which must be the
		// configured one if that is an id.
		issuerOK: func(doc string) bool {
			if doc == entraIssuer {
				return true
			}
			t := entraTenant(doc)
			return t != "" && (!guidRE.MatchString(tenant) || strings.EqualFold(t, tenant))
		},
		tokenIssuer: func(iss, doc string, cl *claims) bool {
			if guidRE.MatchString(tenant) && !strings.EqualFold(cl.TID, tenant) {
				return false
			}
			return guidRE.MatchString(cl.TID) &&
				iss == strings.Replace(entraIssuer, "{tenantid}", cl.TID, 1) &&
				iss == strings.Replace(doc, "{tenantid}", cl.TID, 1)
		},
		// Checked against the ID token's iss after the exchange.
		callbackIssuer: func(iss, doc string) bool {
			t := entraTenant(iss)
			return t != "" && iss == strings.Replace(doc, "{tenantid}", t, 1)
		},
	}
	p.identity = func(cl *claims) (Identity, error) {
		if len(c.Tenants) > 0 && !slices.ContainsFunc(c.Tenants, func(t string) bool { return strings.EqualFold(t, cl.TID) }) {
			return Identity{}, p.errorf(ErrNotAllowed, "tenant not in Tenants")
		}
		return Identity{Subject: cl.Subject, Email: cl.Email, EmailVerified: cl.Email != "" && truthy(cl.EDOV)}, nil
	}
	return newOIDC(p)
}
