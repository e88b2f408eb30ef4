package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/latchkit/auth"
)

// -tenants: a second tenant, acme, beside the public one. Acme's people
// sign in only with acme's own identity provider (a development provider
// of its own, under /dev/acme-oidc) and must complete TOTP; the page and
// the SuperTokens prebuilt UI take ?tenantId=acme. With -admin, the admin
// page lists the tenants, their members and invitations, and invites.

// The tenant -tenants makes, and its provider.
const (
	acmeTenant       = "acme"
	acmeProviderID   = "acme-sso"
	acmeProviderName = "Acme SSO"
	acmeOIDCPath     = "/dev/acme-oidc"
	acmeDomain       = "acme.example"
)

// newAcmeProvider is acme's development identity provider.
func newAcmeProvider(appURL string) (*devProvider, error) {
	p, err := newDevProviderAt(appURL, acmeOIDCPath, acmeProviderID, acmeProviderName)
	if err == nil {
		p.audience = "Acme"
	}
	return p, err
}

// setUpTenants writes acme's rules to the store, as every start finds
// them: its provider's secret is this run's.
func setUpTenants(ctx context.Context, a *auth.Auth, o options) error {
	if !o.tenants {
		return nil
	}
	p := o.acmeProvider
	return a.PutTenant(ctx, auth.Tenant{
		ID:                    acmeTenant,
		FirstFactors:          []string{auth.FactorThirdParty},
		RequiredSecondFactors: []string{auth.FactorTOTP},
		EmailDomains:          []string{acmeDomain},
		Providers: []auth.TenantProvider{{ID: acmeProviderID, Name: acmeProviderName, Issuer: p.iss.URL,
			ClientID: p.iss.ClientID, ClientSecret: p.iss.ClientSecret}},
	})
}

// printTenants says at start what -tenants made.
func printTenants(w io.Writer, o options) {
	if o.tenants {
		fmt.Fprintf(w, "demo: tenants on: %s signs in with %s (issuer %s) and TOTP: open %s/?tenantId=%s\n",
			acmeTenant, acmeProviderName, o.acmeProvider.iss.URL, o.appURL, acmeTenant)
	}
}

// tenants answers the admin page's view of the tenants: each with its
// members and its live invitations (GET /api/admin/tenants).
func (c *operatorConsole) tenants(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	tenants, err := c.a.Tenants(ctx)
	if err != nil {
		operatorError(w, err)
		return
	}
	type member struct {
		UserID string   `json:"userId"`
		Email  string   `json:"email"`
		Roles  []string `json:"roles"`
	}
	type invitation struct {
		Email     string    `json:"email"`
		Role      string    `json:"role"`
		ExpiresAt time.Time `json:"expiresAt"`
	}
	type view struct {
		ID          string       `json:"id"`
		Members     []member     `json:"members"`
		Invitations []invitation `json:"invitations"`
	}
	out := []view{}
	for _, t := range tenants {
		v := view{ID: t.ID, Members: []member{}, Invitations: []invitation{}}
		members, err := c.a.Members(ctx, t.ID, "", 0)
		var invs []auth.Invitation
		if err == nil {
			invs, err = c.a.Invitations(ctx, t.ID)
		}
		if err != nil {
			operatorError(w, err)
			return
		}
		for _, m := range members {
			v.Members = append(v.Members, member{m.UserID, m.Email, m.Roles})
		}
		for _, inv := range invs {
			v.Invitations = append(v.Invitations, invitation{inv.Email, inv.Role, inv.ExpiresAt})
		}
		out = append(out, v)
	}
	writeAccountJSON(w, http.StatusOK, out)
}

// invite mails an invitation to a tenant (POST /api/admin/tenants/invite,
// {tenant, email, role}).
func (c *operatorConsole) invite(w http.ResponseWriter, r *http.Request) {
	var req struct{ Tenant, Email, Role string }
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4<<10)).Decode(&req); err != nil {
		writeAccountJSON(w, http.StatusBadRequest, map[string]string{"message": "want {tenant, email, role}"})
		return
	}
	if err := c.a.Invite(r.Context(), req.Tenant, req.Email, req.Role); err != nil {
		writeAccountJSON(w, http.StatusBadRequest, map[string]string{"message": err.Error()})
		return
	}
	writeAccountJSON(w, http.StatusOK, map[string]string{"status": "OK"})
}
