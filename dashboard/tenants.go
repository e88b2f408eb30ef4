package dashboard

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/latchkit/auth/internal/kit"
	"github.com/latchkit/auth/internal/wire"
	"github.com/latchkit/auth/store"
)

// The statuses of the tenant routes, as the SDKs name them.
const (
	statusUnknownTenant    = "UNKNOWN_TENANT_ERROR"
	statusTenantExists     = "TENANT_ID_ALREADY_EXISTS_ERROR"
	statusBadTenantID      = "INVALID_TENANT_ID_ERROR"
	statusTenantsOff       = "MULTITENANCY_NOT_ENABLED_IN_CORE_ERROR"
	statusPublicForever    = "CANNOT_DELETE_PUBLIC_TENANT_ERROR"
	statusMFAOff           = "MFA_NOT_INITIALIZED_ERROR"
	statusFactorNotOffered = "RECIPE_NOT_CONFIGURED_ON_BACKEND_SDK_ERROR"
)

// msgPublicRules refuses a change to the public tenant's rules, which
// are the application's configuration: the API cannot change them, and
// an OK would claim it had.
const msgPublicRules = "the public tenant's rules are the application's configuration (auth.Config), which the dashboard cannot change"

// pathTenant is the id of the tenant the request's path names, for the
// store's queries: "" (every user) while tenants are off.
func (h *api) pathTenant(r *http.Request) string {
	if !h.op.TenantsOn() {
		return ""
	}
	return h.k.Tenant(r.Context()).ID
}

// tenantFactors are v's first factors: its own, or the deployment's.
func (h *api) tenantFactors(v kit.TenantView) []string {
	if v.FirstFactors != nil {
		return v.FirstFactors
	}
	if ff := h.op.FirstFactors(); ff != nil {
		return ff
	}
	return []string{}
}

// tenants lists the public tenant, then the others by id: the app opens
// the first unless the operator picked another.
func (h *api) tenants(w http.ResponseWriter, r *http.Request) {
	type tenant struct {
		TenantID     string   `json:"tenantId"`
		FirstFactors []string `json:"firstFactors"`
	}
	ctx := r.Context()
	views, err := h.op.Tenants(ctx)
	if err != nil && !errors.Is(err, kit.ErrTenantsOff) {
		h.k.Fail(w, r, err)
		return
	}
	public, err := h.op.Tenant(ctx, store.PublicTenant)
	if err != nil {
		h.k.Fail(w, r, err)
		return
	}
	out := []tenant{{store.PublicTenant, h.tenantFactors(public)}}
	for _, v := range views {
		out = append(out, tenant{v.ID, h.tenantFactors(v)})
	}
	wire.JSON(w, http.StatusOK, struct {
		Status  string   `json:"status"`
		Tenants []tenant `json:"tenants"`
	}{"OK", out})
}

// createTenant creates a tenant with the deployment's rules, or the
// first factors given.
func (h *api) createTenant(w http.ResponseWriter, r *http.Request) {
	b := h.body(w, r)
	if b == nil {
		return
	}
	id, ok := stringField(w, b, "tenantId")
	if !ok {
		return
	}
	factors, ok := stringsField(w, b, "firstFactors", true)
	if !ok || !nonEmpty(w, factors) {
		return
	}
	err := h.op.CreateTenant(r.Context(), kit.TenantView{ID: strings.TrimSpace(id), FirstFactors: factors})
	if h.tenantRefused(w, r, err) {
		return
	}
	wire.JSON(w, http.StatusOK, struct {
		Status     string `json:"status"`
		CreatedNew bool   `json:"createdNew"`
	}{"OK", true})
}

// nonEmpty refuses an empty list of first factors, 400: a tenant where
// nothing may start a session is one nobody can use, and the list's
// absence already means the deployment's.
func nonEmpty(w http.ResponseWriter, factors []string) bool {
	if factors != nil && len(factors) == 0 {
		wire.Message(w, http.StatusBadRequest, "a tenant needs at least one first factor")
		return false
	}
	return true
}

// tenantRefused answers err, if not nil, and reports whether it did.
func (h *api) tenantRefused(w http.ResponseWriter, r *http.Request, err error) bool {
	var refusal *kit.TenantRefusal
	switch {
	case err == nil:
		return false
	case errors.As(err, &refusal) && refusal.BadID:
		message(w, statusBadTenantID, refusal.Reason)
	case errors.As(err, &refusal):
		wire.Message(w, http.StatusBadRequest, refusal.Reason)
	case errors.Is(err, kit.ErrTenantExists):
		wire.Status(w, statusTenantExists)
	case errors.Is(err, kit.ErrTenantsOff):
		wire.Status(w, statusTenantsOff)
	case errors.Is(err, kit.ErrUnknownTenant):
		wire.Status(w, statusUnknownTenant)
	default:
		h.k.Fail(w, r, err)
	}
	return true
}

// getTenant answers the rules of the path's tenant, read from the store
// rather than this instance's snapshot, with its number of users.
func (h *api) getTenant(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	v, err := h.op.Tenant(ctx, h.k.Tenant(ctx).ID)
	if h.tenantRefused(w, r, err) {
		return
	}
	n, err := h.users.CountUsers(ctx, store.UserQuery{Tenant: h.pathTenant(r)})
	if err != nil {
		h.k.Fail(w, r, err)
		return
	}
	type provider struct {
		ID   string `json:"thirdPartyId"`
		Name string `json:"name"`
	}
	providers := []provider{}
	for _, p := range v.Providers {
		providers = append(providers, provider{p.ID, p.Name})
	}
	type tenant struct {
		ID         string `json:"tenantId"`
		ThirdParty struct {
			Providers []provider `json:"providers"`
		} `json:"thirdParty"`
		FirstFactors []string `json:"firstFactors"`
		Required     []string `json:"requiredSecondaryFactors"`
		CoreConfig   []any    `json:"coreConfig"`
		UserCount    int64    `json:"userCount"`
	}
	t := tenant{ID: v.ID, FirstFactors: h.tenantFactors(v), Required: v.RequiredSecondFactors, CoreConfig: []any{}, UserCount: n}
	t.ThirdParty.Providers = providers
	wire.JSON(w, http.StatusOK, struct {
		Status string `json:"status"`
		Tenant tenant `json:"tenant"`
	}{"OK", t})
}

// deleteTenant deletes the path's tenant, as auth.Auth.DeleteTenant: its
// sessions end, its users stay.
func (h *api) deleteTenant(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id := h.k.Tenant(ctx).ID
	if id == store.PublicTenant {
		wire.Status(w, statusPublicForever)
		return
	}
	err := h.op.DeleteTenant(ctx, id)
	if err != nil && !errors.Is(err, kit.ErrUnknownTenant) {
		h.k.Fail(w, r, err)
		return
	}
	wire.JSON(w, http.StatusOK, struct {
		Status   string `json:"status"`
		DidExist bool   `json:"didExist"`
	}{"OK", err == nil})
}

// factorToggle reads {"factorId","enable"}, or answers 400.
func (h *api) factorToggle(w http.ResponseWriter, r *http.Request) (string, bool, bool) {
	b := h.body(w, r)
	if b == nil {
		return "", false, false
	}
	factor, ok := stringField(w, b, "factorId")
	if !ok {
		return "", false, false
	}
	var enable bool
	if raw, ok := b["enable"]; !ok || json.Unmarshal(raw, &enable) != nil || string(raw) == "null" {
		wire.Message(w, http.StatusBadRequest, "Required parameter 'enable' is missing or has an invalid type")
		return "", false, false
	}
	return factor, enable, true
}

// toggle is list with factor in it or not, in list's order.
func toggle(list []string, factor string, enable bool) []string {
	out := slices.DeleteFunc(slices.Clone(list), func(f string) bool { return f == factor })
	if enable {
		out = append(out, factor)
	}
	return out
}

// changeableTenant is the path's tenant, read from the store, or it
// answers: the public tenant's rules are not the API's to change.
func (h *api) changeableTenant(w http.ResponseWriter, r *http.Request) (kit.TenantView, bool) {
	ctx := r.Context()
	id := h.k.Tenant(ctx).ID
	if id == store.PublicTenant {
		wire.Message(w, http.StatusBadRequest, msgPublicRules)
		return kit.TenantView{}, false
	}
	v, err := h.op.Tenant(ctx, id)
	return v, !h.tenantRefused(w, r, err)
}

// putFirstFactor lets a factor start a session in the path's tenant, or
// stops it; the tenant's list is the deployment's until then.
func (h *api) putFirstFactor(w http.ResponseWriter, r *http.Request) {
	factor, enable, ok := h.factorToggle(w, r)
	if !ok {
		return
	}
	if !slices.Contains(h.op.OfferedFactors(), factor) {
		message(w, statusFactorNotOffered, "Please initialise the recipe that offers "+factor+" in the application's configuration")
		return
	}
	v, ok := h.changeableTenant(w, r)
	if !ok {
		return
	}
	v.FirstFactors = toggle(h.tenantFactors(v), factor, enable)
	if !nonEmpty(w, v.FirstFactors) || h.tenantRefused(w, r, h.op.UpdateTenant(r.Context(), v)) {
		return
	}
	wire.JSON(w, http.StatusOK, wire.OK)
}

// putSecondFactor requires a second factor of every user of the path's
// tenant, or stops requiring it. The application's own requirements
// (auth.Config.MFA, RequireFactors) are never overridden by this list,
// so isMFARequirementsForAuthOverridden is false.
func (h *api) putSecondFactor(w http.ResponseWriter, r *http.Request) {
	factor, enable, ok := h.factorToggle(w, r)
	if !ok {
		return
	}
	second := h.op.SecondFactors()
	switch {
	case len(second) == 0:
		wire.Status(w, statusMFAOff)
		return
	case !slices.Contains(second, factor):
		message(w, statusFactorNotOffered, "Please add "+factor+" to the application's second factors (auth.Config.MFA.Factors)")
		return
	}
	v, ok := h.changeableTenant(w, r)
	if !ok {
		return
	}
	if v.RequiredSecondFactors = toggle(v.RequiredSecondFactors, factor, enable); len(v.RequiredSecondFactors) == 0 {
		v.RequiredSecondFactors = nil
	}
	if h.tenantRefused(w, r, h.op.UpdateTenant(r.Context(), v)) {
		return
	}
	wire.JSON(w, http.StatusOK, struct {
		Status     string `json:"status"`
		Overridden bool   `json:"isMFARequirementsForAuthOverridden"`
	}{"OK", false})
}

// providerConfig is the part of the SDKs' ProviderConfig that a tenant's
// own OpenID Connect client has: the rest (endpoints, claim maps,
// provider-specific settings) comes from discovery.
type providerConfig struct {
	ThirdPartyID          string           `json:"thirdPartyId"`
	Name                  string           `json:"name,omitempty"`
	OIDCDiscoveryEndpoint string           `json:"oidcDiscoveryEndpoint,omitempty"`
	Clients               []providerClient `json:"clients"`
}

type providerClient struct {
	ClientID     string   `json:"clientId"`
	ClientSecret string   `json:"clientSecret"`
	Scope        []string `json:"scope,omitempty"`
}

// discoverySuffix is what a discovery endpoint adds to its issuer.
const discoverySuffix = "/.well-known/openid-configuration"

// getProviderConfig answers the configuration of a provider of the path's
// tenant: one not configured yet has one empty client, as the SDKs'
// backends answer it. A provider of the deployment's shows no secret:
// its client is the application's configuration.
func (h *api) getProviderConfig(w http.ResponseWriter, r *http.Request) {
	id, ok := param(w, r, "thirdPartyId")
	if !ok {
		return
	}
	v, ok := h.changeableTenant(w, r)
	if !ok {
		return
	}
	pc := providerConfig{ThirdPartyID: id, Clients: []providerClient{{}}}
	if i := slices.IndexFunc(v.Providers, func(p kit.TenantProviderView) bool { return p.ID == id }); i >= 0 {
		p := v.Providers[i]
		pc.Name = p.Name
		if p.Issuer != "" {
			pc.OIDCDiscoveryEndpoint = p.Issuer + discoverySuffix
			pc.Clients = []providerClient{{ClientID: p.ClientID, ClientSecret: p.ClientSecret, Scope: p.Scopes}}
		}
	}
	wire.JSON(w, http.StatusOK, struct {
		Status         string           `json:"status"`
		ProviderConfig answeredProvider `json:"providerConfig"`
	}{"OK", answeredProvider{providerConfig: pc}})
}

// answeredProvider is a providerConfig as GET answers it: nothing of the
// provider's calls is overridden, as the library has no such hooks.
type answeredProvider struct {
	providerConfig
	AuthorisationRedirectOverridden bool `json:"isGetAuthorisationRedirectUrlOverridden"`
	ExchangeOverridden              bool `json:"isExchangeAuthCodeForOAuthTokensOverridden"`
	UserInfoOverridden              bool `json:"isGetUserInfoOverridden"`
}

// putProviderConfig sets the tenant's own OpenID Connect client for a
// provider: its issuer (the discovery endpoint, with or without its
// well-known suffix) and one client.
func (h *api) putProviderConfig(w http.ResponseWriter, r *http.Request) {
	b := h.body(w, r)
	if b == nil {
		return
	}
	var pc *providerConfig
	if raw, ok := b["providerConfig"]; !ok || json.Unmarshal(raw, &pc) != nil || pc == nil ||
		pc.ThirdPartyID == "" || len(pc.Clients) != 1 || pc.OIDCDiscoveryEndpoint == "" {
		wire.Message(w, http.StatusBadRequest, "providerConfig needs a thirdPartyId, an oidcDiscoveryEndpoint and one client")
		return
	}
	if _, ok := h.changeableTenant(w, r); !ok {
		return
	}
	c := pc.Clients[0]
	created, err := h.op.PutTenantProvider(r.Context(), h.k.Tenant(r.Context()).ID, kit.TenantProviderView{
		ID: pc.ThirdPartyID, Name: pc.Name, Issuer: strings.TrimSuffix(pc.OIDCDiscoveryEndpoint, discoverySuffix),
		ClientID: c.ClientID, ClientSecret: c.ClientSecret, Scopes: c.Scope})
	if h.tenantRefused(w, r, err) {
		return
	}
	wire.JSON(w, http.StatusOK, struct {
		Status     string `json:"status"`
		CreatedNew bool   `json:"createdNew"`
	}{"OK", created})
}

// deleteProviderConfig removes a provider from the path's tenant.
func (h *api) deleteProviderConfig(w http.ResponseWriter, r *http.Request) {
	id, ok := param(w, r, "thirdPartyId")
	if !ok {
		return
	}
	if _, ok := h.changeableTenant(w, r); !ok {
		return
	}
	existed, err := h.op.DeleteTenantProvider(r.Context(), h.k.Tenant(r.Context()).ID, id)
	if h.tenantRefused(w, r, err) {
		return
	}
	wire.JSON(w, http.StatusOK, struct {
		Status         string `json:"status"`
		DidConfigExist bool   `json:"didConfigExist"`
	}{"OK", existed})
}
