package auth

import (
	"context"
	"errors"
	"slices"

	"github.com/latchkit/auth/internal/kit"
)

// The operators' tenant API (kit.Tenants) is the Go API's: PutTenant and
// DeleteTenant, with their checks and events, never the store directly.

func (o operator) TenantsOn() bool { return o.a.cfg.Tenants.Enabled }

func (o operator) OfferedFactors() []string { return slices.Clone(o.a.available) }

func (o operator) SecondFactors() []string { return slices.Clone(o.a.cfg.MFA.Factors) }

func (o operator) Tenants(ctx context.Context) ([]kit.TenantView, error) {
	all, err := o.a.Tenants(ctx)
	if err != nil {
		return nil, tenantErr(err)
	}
	out := make([]kit.TenantView, 0, len(all))
	for _, t := range all {
		out = append(out, tenantView(t))
	}
	return out, nil
}

// Tenant reads the public tenant from Config, whose rules it is.
func (o operator) Tenant(ctx context.Context, id string) (kit.TenantView, error) {
	if id == PublicTenant {
		v := kit.TenantView{ID: id, FirstFactors: slices.Clone(o.a.firstFactors())}
		if len(o.a.cfg.MFA.Required) > 0 {
			v.RequiredSecondFactors = slices.Clone(o.a.cfg.MFA.Required)
		}
		for _, p := range o.a.cfg.ThirdParty.Providers {
			v.Providers = append(v.Providers, kit.TenantProviderView{ID: p.ID(), Name: p.Name()})
		}
		return v, nil
	}
	t, err := o.a.Tenant(ctx, id)
	if err != nil {
		return kit.TenantView{}, tenantErr(err)
	}
	return tenantView(t), nil
}

// CreateTenant reads before it writes: PutTenant replaces a tenant that
// exists, which a creation must not. Two operators creating one id at
// once both succeed, the second's rules winning, as two PutTenant calls.
func (o operator) CreateTenant(ctx context.Context, v kit.TenantView) error {
	if !o.TenantsOn() {
		return kit.ErrTenantsOff
	}
	if v.ID == PublicTenant {
		return kit.ErrTenantExists
	}
	if err := checkTenantID(v.ID); err != nil {
		return &kit.TenantRefusal{BadID: true, Reason: err.Error()}
	}
	_, err := o.a.Tenant(ctx, v.ID)
	switch {
	case err == nil:
		return kit.ErrTenantExists
	case !errors.Is(err, ErrUnknownTenant):
		return tenantErr(err)
	}
	return o.put(ctx, Tenant{ID: v.ID, FirstFactors: v.FirstFactors, RequiredSecondFactors: v.RequiredSecondFactors})
}

// UpdateTenant keeps what the operators' API does not show: providers,
// domains and the tenant's password and token rules.
func (o operator) UpdateTenant(ctx context.Context, v kit.TenantView) error {
	t, err := o.a.Tenant(ctx, v.ID)
	if err != nil {
		return tenantErr(err)
	}
	t.FirstFactors, t.RequiredSecondFactors = v.FirstFactors, v.RequiredSecondFactors
	return o.put(ctx, t)
}

// put writes t, refusing what checkTenant refuses with its reason.
func (o operator) put(ctx context.Context, t Tenant) error {
	if err := o.a.checkTenant(t); err != nil {
		return &kit.TenantRefusal{Reason: err.Error()}
	}
	return tenantErr(o.a.PutTenant(ctx, t))
}

func (o operator) DeleteTenant(ctx context.Context, id string) error {
	return tenantErr(o.a.DeleteTenant(ctx, id))
}

// tenantErr is err as the operators' API names it.
func tenantErr(err error) error {
	switch {
	case errors.Is(err, errTenantsOff):
		return kit.ErrTenantsOff
	case errors.Is(err, ErrUnknownTenant):
		return kit.ErrUnknownTenant
	}
	return err
}

func tenantView(t Tenant) kit.TenantView {
	v := kit.TenantView{ID: t.ID, FirstFactors: t.FirstFactors, RequiredSecondFactors: t.RequiredSecondFactors}
	for _, p := range t.Providers {
		v.Providers = append(v.Providers, kit.TenantProviderView{ID: p.ID, Name: p.Name, Issuer: p.Issuer,
			ClientID: p.ClientID, ClientSecret: p.ClientSecret, Scopes: p.Scopes})
	}
	return v
}

// PutTenantProvider gives the tenant its own list of providers, if it
// used the deployment's until then: those, and p.
func (o operator) PutTenantProvider(ctx context.Context, id string, p kit.TenantProviderView) (bool, error) {
	t, err := o.a.Tenant(ctx, id)
	if err != nil {
		return false, tenantErr(err)
	}
	o.ownProviders(&t)
	tp := TenantProvider{ID: p.ID, Name: p.Name, Issuer: p.Issuer, ClientID: p.ClientID, ClientSecret: p.ClientSecret, Scopes: p.Scopes}
	i := slices.IndexFunc(t.Providers, func(have TenantProvider) bool { return have.ID == p.ID })
	if i >= 0 {
		t.Providers[i] = tp
	} else {
		t.Providers = append(t.Providers, tp)
	}
	return i < 0, o.put(ctx, t)
}

// DeleteTenantProvider removes a provider of the tenant's own list; its
// last one gone, the tenant signs in with no provider: thirdparty leaves
// its first factors.
func (o operator) DeleteTenantProvider(ctx context.Context, id, pid string) (bool, error) {
	t, err := o.a.Tenant(ctx, id)
	if err != nil {
		return false, tenantErr(err)
	}
	o.ownProviders(&t)
	i := slices.IndexFunc(t.Providers, func(have TenantProvider) bool { return have.ID == pid })
	if i < 0 {
		return false, nil
	}
	t.Providers = slices.Delete(t.Providers, i, i+1)
	if len(t.Providers) == 0 {
		if t.FirstFactors == nil {
			t.FirstFactors = slices.Clone(o.a.firstFactors())
		}
		t.FirstFactors = slices.DeleteFunc(t.FirstFactors, func(f string) bool { return f == FactorThirdParty })
		t.Providers = nil
	}
	return true, o.put(ctx, t)
}

// ownProviders gives t a list of providers of its own, if it used the
// deployment's until then: those, named, so that a change to the list
// keeps what the tenant offered.
func (o operator) ownProviders(t *Tenant) {
	if t.Providers != nil {
		return
	}
	t.Providers = []TenantProvider{}
	for _, dp := range o.a.cfg.ThirdParty.Providers {
		t.Providers = append(t.Providers, TenantProvider{ID: dp.ID(), Name: dp.Name()})
	}
}
