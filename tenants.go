package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/latchkit/auth/internal/kit"
	"github.com/latchkit/auth/internal/wire"
	"github.com/latchkit/auth/mailer"
	"github.com/latchkit/auth/provider"
	"github.com/latchkit/auth/store"
)

// Tenants: one deployment serving several customers, each in a tenant of
// its own with its own users, sign-in rules and providers. The SDKs name
// the tenant in the path, after the base path (/auth/acme/signin); the
// public tenant is the one without a segment, and the only one until the
// application creates others (PutTenant).

// PublicTenant is the id of the tenant every deployment has: the one the
// SDKs use when they name none, configured by Config itself.
const PublicTenant = store.PublicTenant

// TenantsConfig turns tenants on.
type TenantsConfig struct {
	// Enabled serves the tenants the store keeps (a store.TenantStore)
	// under their path segments. Off, only the public tenant exists.
	Enabled bool
	// Refresh bounds how long an instance serves a tenant's configuration
	// as it read it: a change made through another instance takes effect
	// here within Refresh, one made here at once. Default 10 seconds.
	Refresh time.Duration

	// InvitationURL is the frontend's page that accepts an invitation
	// (Auth.Invite), which gets ?token=…&tenantId=… added. Default
	// AppURL + BasePath + "/invitation".
	InvitationURL string
	// InvitationLifetime is how long an invitation works. Default
	// DefaultInvitationLifetime, 7 days.
	InvitationLifetime time.Duration
	// InvitationEmail renders the invitation. Default
	// DefaultInvitationEmail().
	InvitationEmail *mailer.Template
	// InvitePermission is the permission, in a tenant, to invite to it
	// over HTTP, and MembersPermission to list and remove its members.
	// Defaults DefaultInvitePermission and DefaultMembersPermission.
	InvitePermission, MembersPermission string
}

// defaultTenantRefresh is TenantsConfig.Refresh's default.
const defaultTenantRefresh = 10 * time.Second

func (c *TenantsConfig) setDefaults(s store.Store, appURL, basePath string) error {
	if !c.Enabled {
		return nil
	}
	setDefault(&c.InvitationURL, strings.TrimRight(appURL, "/")+basePath+"/invitation")
	setDefault(&c.InvitationLifetime, DefaultInvitationLifetime)
	setDefault(&c.InvitePermission, DefaultInvitePermission)
	setDefault(&c.MembersPermission, DefaultMembersPermission)
	if c.InvitationEmail == nil {
		t := DefaultInvitationEmail()
		c.InvitationEmail = &t
	} else if c.InvitationEmail.Subject == nil || c.InvitationEmail.Text == nil {
		return errors.New("auth: Config.Tenants.InvitationEmail needs a Subject and a Text template")
	}
	if c.InvitationLifetime < 0 {
		return errors.New("auth: Config.Tenants.InvitationLifetime must not be negative")
	}
	if _, ok := s.(store.TenantStore); !ok {
		return errors.New("auth: Config.Tenants needs a Store that is a store.TenantStore (memstore and sqlstore are)")
	}
	if c.Refresh < 0 {
		return errors.New("auth: Config.Tenants.Refresh must not be negative")
	}
	setDefault(&c.Refresh, defaultTenantRefresh)
	return nil
}

// InTenant returns a copy of ctx whose Go API calls act in tenant, where
// they act in one: package roles' Give, Take, UserRoles, Permitted and
// UsersWithRole. A protected handler's context acts in its session's
// tenant already.
func InTenant(ctx context.Context, tenant string) context.Context {
	return kit.WithTenantID(ctx, tenant)
}

// A Tenant is a customer's space in the deployment, and its sign-in rules.
// Its users are its own: the same email in two tenants is two users,
// who are linked only within a tenant, and a session, code or link of one
// tenant opens nothing in another.
type Tenant struct {
	// ID is the tenant's id, as the SDKs put it in paths and in the tId
	// claim: 1 to 64 lower-case letters, digits and '-'. Not "public",
	// whose rules are Config's, nor a word the SDKs reserve (recipe,
	// config, users, hello, dashboard) or one starting "appid-".
	ID string
	// FirstFactors are the factors that may start a session (FactorEmailPassword,
	// FactorThirdParty, ...), among those the deployment's recipes offer;
	// nil for all of those (with MFA, those of Config.MFA.FirstFactors).
	FirstFactors []string
	// RequiredSecondFactors are second factors every user of the tenant
	// must complete, one of them, before their session is whole; it needs
	// Config.MFA. Nil for none beyond what the user set up.
	RequiredSecondFactors []string
	// Providers are the providers the tenant's users sign in with, in the
	// order the sign-in page lists them; nil for every one of
	// Config.ThirdParty.Providers.
	Providers []TenantProvider
	// EmailDomains are the domains of the addresses of the tenant's
	// people ("acme.example"): POST /tenant/discover sends a sign-in page
	// with such an address to the tenant. A domain belongs to one tenant.
	EmailDomains []string
	// PasswordMinLength is the fewest characters a new password of the
	// tenant's has, beside Config.EmailPassword's policy; 0 for none.
	PasswordMinLength int
	// AccessTokenLifetime is how long the access tokens of the tenant's
	// sessions work (how long one outlives its session's end without
	// Config.CheckSessionInStore); 0 for Config.AccessTokenLifetime.
	AccessTokenLifetime time.Duration
}

// A TenantProvider is a provider of a tenant's: one of
// Config.ThirdParty.Providers, named by its ID alone, or the tenant's own
// OpenID Connect client, found by discovery from Issuer (its company's
// identity provider).
type TenantProvider struct {
	// ID is the provider's id, as the frontend names it ("okta-acme").
	ID string
	// Name is the label of its button; "" for none.
	Name string
	// Issuer is the issuer URL of the tenant's own OpenID Connect
	// provider (see provider.OIDCConfig); "" to name one of
	// Config.ThirdParty.Providers.
	Issuer string
	// ClientID and ClientSecret are the client registered with the
	// provider; with Config.Secrets the secret is sealed at rest.
	ClientID, ClientSecret string
	// Scopes are requested in the authorisation URL; nil means openid
	// and email.
	Scopes []string
}

// ErrUnknownTenant reports a tenant that does not exist.
var ErrUnknownTenant = errors.New("auth: no such tenant")

// tenantIDPattern is what a tenant id may be, as the SuperTokens core has
// it.
var tenantIDPattern = regexp.MustCompile(`^[a-z0-9-]{1,64}$`)

// reservedTenantIDs cannot be tenants: the core's reserved words, and the
// first segments of this library's own routes.
var reservedTenantIDs = []string{"recipe", "config", "users", "hello", "dashboard", PublicTenant}

func checkTenantID(id string) error {
	if !tenantIDPattern.MatchString(id) || strings.HasPrefix(id, "appid-") || slices.Contains(reservedTenantIDs, id) {
		return fmt.Errorf("auth: %q is not a tenant id: 1 to 64 lower-case letters, digits and '-', not a reserved word", id)
	}
	return nil
}

// PutTenant creates the tenant t, or replaces the configuration of the
// tenant t.ID. Every instance serves it within Config.Tenants.Refresh.
func (a *Auth) PutTenant(ctx context.Context, t Tenant) error {
	ts, err := a.tenantStore()
	if err != nil {
		return err
	}
	rec, err := a.encodeTenant(t)
	if err != nil {
		return err
	}
	if err := a.domainTaken(ctx, t); err != nil {
		return err
	}
	now := a.cfg.Now()
	if _, err := ts.PutTenant(ctx, store.Tenant{ID: t.ID, Config: rec, UpdatedAt: now}); err != nil {
		return err
	}
	a.tenants.forget()
	a.emit(ctx, nil, Event{Kind: EventTenantChanged, Tenant: t.ID})
	return nil
}

// Tenant returns the configuration of the tenant id, or ErrUnknownTenant.
func (a *Auth) Tenant(ctx context.Context, id string) (Tenant, error) {
	ts, err := a.tenantStore()
	if err != nil {
		return Tenant{}, err
	}
	st, err := ts.Tenant(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return Tenant{}, ErrUnknownTenant
	}
	if err != nil {
		return Tenant{}, err
	}
	return a.decodeTenant(st)
}

// Tenants lists every tenant but the public one, by id.
func (a *Auth) Tenants(ctx context.Context) ([]Tenant, error) {
	ts, err := a.tenantStore()
	if err != nil {
		return nil, err
	}
	all, err := ts.Tenants(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Tenant, 0, len(all))
	for _, st := range all {
		t, err := a.decodeTenant(st)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// DeleteTenant deletes the tenant id: its sessions end, its memberships
// and invitations go, and its path answers 404. Its users stay, with
// their logins, until the application deletes them (DeleteUser).
func (a *Auth) DeleteTenant(ctx context.Context, id string) error {
	ts, err := a.tenantStore()
	if err != nil {
		return err
	}
	handles, err := ts.DeleteTenant(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return ErrUnknownTenant
	}
	if err != nil {
		return err
	}
	a.tenants.forget()
	now := a.cfg.Now()
	for _, h := range handles {
		a.evicted.Add(h, now, now.Add(a.cfg.AccessTokenLifetime+jwtLeeway))
	}
	a.emit(ctx, nil, Event{Kind: EventTenantDeleted, Tenant: id})
	return nil
}

// errTenantsOff is the error of the tenant API without tenants.
var errTenantsOff = errors.New("auth: tenants need Config.Tenants.Enabled and a Store that is a store.TenantStore")

func (a *Auth) tenantStore() (store.TenantStore, error) {
	ts, ok := a.store.(store.TenantStore)
	if !ok || !a.cfg.Tenants.Enabled {
		return nil, errTenantsOff
	}
	return ts, nil
}

// storedTenant is a tenant's configuration as the store keeps it
// (store.Tenant.Config).
type storedTenant struct {
	FirstFactors []string         `json:"firstFactors,omitempty"`
	Required     []string         `json:"requiredSecondFactors,omitempty"`
	Providers    []storedProvider `json:"providers"` // null: the deployment's; []: none
	EmailDomains []string         `json:"emailDomains,omitempty"`
	MinLength    int              `json:"passwordMinLength,omitempty"`
	AccessTTL    time.Duration    `json:"accessTokenLifetime,omitempty"`
}

type storedProvider struct {
	ID       string   `json:"id"`
	Name     string   `json:"name,omitempty"`
	Issuer   string   `json:"issuer,omitempty"`
	ClientID string   `json:"clientId,omitempty"`
	Secret   []byte   `json:"secret,omitempty"`
	Sealed   bool     `json:"sealed,omitempty"`
	Scopes   []string `json:"scopes,omitempty"`
}

// encodeTenant checks t and encodes it for the store, sealing its
// providers' secrets.
func (a *Auth) encodeTenant(t Tenant) ([]byte, error) {
	if err := a.checkTenant(t); err != nil {
		return nil, err
	}
	st := storedTenant{FirstFactors: t.FirstFactors, Required: t.RequiredSecondFactors, EmailDomains: t.EmailDomains,
		MinLength: t.PasswordMinLength, AccessTTL: t.AccessTokenLifetime}
	for _, p := range t.Providers {
		sp := storedProvider{ID: p.ID, Name: p.Name, Issuer: p.Issuer, ClientID: p.ClientID, Scopes: p.Scopes}
		if p.ClientSecret != "" {
			sp.Secret = []byte(p.ClientSecret)
			if a.keys.seal.On() {
				sp.Secret, sp.Sealed = a.keys.seal.SealValue(providerSecretName(t.ID, p.ID), sp.Secret), true
			}
		}
		st.Providers = append(st.Providers, sp)
	}
	return json.Marshal(st)
}

// providerSecretName binds a sealed client secret to its tenant and
// provider: copied to another, it does not open.
func providerSecretName(tenant, id string) string {
	return "client secret of " + id + " in tenant " + tenant
}

func (a *Auth) decodeTenant(st store.Tenant) (Tenant, error) {
	var rec storedTenant
	if err := json.Unmarshal(st.Config, &rec); err != nil {
		return Tenant{}, fmt.Errorf("auth: the configuration of tenant %q is malformed: %w", st.ID, err)
	}
	t := Tenant{ID: st.ID, FirstFactors: rec.FirstFactors, RequiredSecondFactors: rec.Required, EmailDomains: rec.EmailDomains,
		PasswordMinLength: rec.MinLength, AccessTokenLifetime: rec.AccessTTL}
	for _, sp := range rec.Providers {
		secret := sp.Secret
		if sp.Sealed {
			var err error
			if secret, err = a.keys.seal.OpenValue(providerSecretName(st.ID, sp.ID), sp.Secret); err != nil {
				return Tenant{}, err
			}
		}
		t.Providers = append(t.Providers, TenantProvider{ID: sp.ID, Name: sp.Name, Issuer: sp.Issuer,
			ClientID: sp.ClientID, ClientSecret: string(secret), Scopes: sp.Scopes})
	}
	return t, nil
}

// checkTenant reports what is wrong with t's configuration.
func (a *Auth) checkTenant(t Tenant) error {
	if err := checkTenantID(t.ID); err != nil {
		return err
	}
	if err := a.checkTenantFactors(t); err != nil {
		return err
	}
	if t.PasswordMinLength < 0 || t.PasswordMinLength > 256 {
		return fmt.Errorf("auth: tenant %s: PasswordMinLength %d is not within 0 and 256", t.ID, t.PasswordMinLength)
	}
	if t.AccessTokenLifetime < 0 || t.AccessTokenLifetime >= a.cfg.RefreshTokenLifetime {
		return fmt.Errorf("auth: tenant %s: AccessTokenLifetime must be positive, or 0, and shorter than Config.RefreshTokenLifetime", t.ID)
	}
	for _, d := range t.EmailDomains {
		if d == "" || d != strings.ToLower(d) || strings.ContainsAny(d, "@/ ") || !strings.Contains(d, ".") {
			return fmt.Errorf("auth: tenant %s: %q is not an email domain: lower-case, as in \"acme.example\"", t.ID, d)
		}
	}
	_, err := a.tenantProviders(t)
	return err
}

// checkTenantFactors reports what is wrong with t's factors.
func (a *Auth) checkTenantFactors(t Tenant) error {
	if t.FirstFactors != nil && len(t.FirstFactors) == 0 {
		return fmt.Errorf("auth: tenant %s: no first factor: nobody could sign in (nil FirstFactors are the deployment's)", t.ID)
	}
	for _, f := range t.FirstFactors {
		if !slices.Contains(a.available, f) {
			return fmt.Errorf("auth: tenant %s: %q is not a first factor the deployment offers (%s)", t.ID, f, strings.Join(a.available, ", "))
		}
	}
	if len(t.RequiredSecondFactors) > 0 && !a.mfaOn() {
		return fmt.Errorf("auth: tenant %s: RequiredSecondFactors need Config.MFA", t.ID)
	}
	for _, f := range t.RequiredSecondFactors {
		if !slices.Contains(a.cfg.MFA.Factors, f) {
			return fmt.Errorf("auth: tenant %s: %q is not one of Config.MFA.Factors", t.ID, f)
		}
	}
	return nil
}

// domainTaken reports a domain of t's that another tenant has.
func (a *Auth) domainTaken(ctx context.Context, t Tenant) error {
	if len(t.EmailDomains) == 0 {
		return nil
	}
	a.tenants.forget() // as the store has it now
	byID, err := a.tenantSnapshot(ctx)
	if err != nil {
		return err
	}
	for id, other := range byID {
		for _, d := range t.EmailDomains {
			if id != t.ID && slices.Contains(other.EmailDomains, d) {
				return fmt.Errorf("auth: tenant %s: the email domain %s is tenant %s's", t.ID, d, id)
			}
		}
	}
	return nil
}

// tenantProviders builds the providers of t.
func (a *Auth) tenantProviders(t Tenant) ([]provider.Provider, error) {
	if t.Providers == nil {
		return a.cfg.ThirdParty.Providers, nil
	}
	if a.thirdParty == nil {
		return nil, fmt.Errorf("auth: tenant %s: providers need Config.AppURL, which their redirect URIs are checked against", t.ID)
	}
	out := make([]provider.Provider, 0, len(t.Providers))
	for _, tp := range t.Providers {
		if slices.ContainsFunc(out, func(p provider.Provider) bool { return p.ID() == tp.ID }) {
			return nil, fmt.Errorf("auth: tenant %s: two providers have the ID %q", t.ID, tp.ID)
		}
		p, err := a.tenantProvider(tp)
		if err != nil {
			return nil, fmt.Errorf("auth: tenant %s: provider %q: %w", t.ID, tp.ID, err)
		}
		out = append(out, p)
	}
	return out, nil
}

func (a *Auth) tenantProvider(tp TenantProvider) (provider.Provider, error) {
	if tp.Issuer == "" {
		i := slices.IndexFunc(a.cfg.ThirdParty.Providers, func(p provider.Provider) bool { return p.ID() == tp.ID })
		if i < 0 {
			return nil, errors.New("not one of Config.ThirdParty.Providers, and no Issuer of its own")
		}
		return a.cfg.ThirdParty.Providers[i], nil
	}
	return provider.OIDC(provider.OIDCConfig{ID: tp.ID, Name: tp.Name, Issuer: tp.Issuer,
		ClientID: tp.ClientID, ClientSecret: tp.ClientSecret, Scopes: tp.Scopes})
}

// tenantCache is every tenant's configuration as this instance last read
// it, read again once it is older than Config.Tenants.Refresh.
type tenantCache struct {
	mu       sync.Mutex
	byID     map[string]*kit.Tenant
	raw      map[string][]byte // the stored configuration each was built from
	readAt   time.Time
	stale    bool
	inflight chan struct{} // closed when the read under way ends
}

// forget makes the next lookup read the store: a change made here takes
// effect here at once.
func (c *tenantCache) forget() {
	c.mu.Lock()
	c.stale = true
	c.mu.Unlock()
}

// tenant returns the tenant id names, or ErrUnknownTenant.
func (a *Auth) tenant(ctx context.Context, id string) (*kit.Tenant, error) {
	if id == PublicTenant {
		return a.publicTenant, nil
	}
	byID, err := a.tenantSnapshot(ctx)
	if err != nil {
		return nil, err
	}
	t, ok := byID[id]
	if !ok {
		return nil, ErrUnknownTenant
	}
	return t, nil
}

// tenantSnapshot returns the tenants as of at most Refresh ago. One
// request at a time reads the store; the others wait for it, or go on with
// the snapshot before it if there is one.
func (a *Auth) tenantSnapshot(ctx context.Context) (map[string]*kit.Tenant, error) {
	c := &a.tenants
	c.mu.Lock()
	fresh := c.byID != nil && !c.stale && a.cfg.Now().Sub(c.readAt) < a.cfg.Tenants.Refresh
	byID, wait := c.byID, c.inflight
	if fresh || (byID != nil && wait != nil) {
		c.mu.Unlock()
		return byID, nil
	}
	if wait == nil {
		done := make(chan struct{})
		c.inflight = done
		c.mu.Unlock()
		defer close(done)
		return a.readTenants(ctx)
	}
	c.mu.Unlock()
	select {
	case <-wait:
		return a.tenantSnapshot(ctx)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// readTenants reads every tenant from the store, keeping those whose
// configuration has not changed as they were, with their providers'
// discovery documents.
func (a *Auth) readTenants(ctx context.Context) (map[string]*kit.Tenant, error) {
	c := &a.tenants
	ts, err := a.tenantStore()
	var all []store.Tenant
	if err == nil {
		all, err = ts.Tenants(ctx)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.inflight = nil
	if err != nil {
		return nil, err
	}
	byID := make(map[string]*kit.Tenant, len(all))
	raw := make(map[string][]byte, len(all))
	for _, st := range all {
		if old, ok := c.raw[st.ID]; ok && string(old) == string(st.Config) {
			byID[st.ID], raw[st.ID] = c.byID[st.ID], old
			continue
		}
		t, err := a.buildTenant(st)
		if err != nil {
			a.cfg.Logger.ErrorContext(ctx, "auth: a tenant's configuration is not usable; its path answers 404", "tenant", st.ID, "error", err)
			continue
		}
		byID[st.ID], raw[st.ID] = t, st.Config
	}
	c.byID, c.raw, c.readAt, c.stale = byID, raw, a.cfg.Now(), false
	return byID, nil
}

func (a *Auth) buildTenant(st store.Tenant) (*kit.Tenant, error) {
	t, err := a.decodeTenant(st)
	if err != nil {
		return nil, err
	}
	ps, err := a.tenantProviders(t)
	if err != nil {
		return nil, err
	}
	return &kit.Tenant{ID: t.ID, FirstFactors: t.FirstFactors, RequiredSecondFactors: t.RequiredSecondFactors,
		Providers: ps, EmailDomains: t.EmailDomains, PasswordMinLength: t.PasswordMinLength,
		AccessTokenLifetime: t.AccessTokenLifetime}, nil
}

// tenantInStore is the tenant id as the store keeps it: "" for the public
// tenant.
func tenantInStore(id string) string { return store.LoginKey{}.In(id).Tenant }

type tenantKey struct{}

// requestTenant is the tenant a request is served in: the one its path
// names, or the public tenant.
func (a *Auth) requestTenant(r *http.Request) *kit.Tenant { return a.tenantOf(r.Context()) }

// tenantOf is the tenant of the request of ctx.
func (a *Auth) tenantOf(ctx context.Context) *kit.Tenant {
	if t, ok := ctx.Value(tenantKey{}).(*kit.Tenant); ok {
		return t
	}
	return a.publicTenant
}

// route finds the route of rest, the path under the base path, and the
// tenant it names. The exact path comes first, so that a route's own first
// segment (/dashboard/...) is never read as a tenant.
func (a *Auth) route(r *http.Request, rest string) (kit.Route, *kit.Tenant, error) {
	if rt, ok := a.routes[rest]; ok {
		return rt, a.publicTenant, nil
	}
	seg, tail, ok := strings.Cut(strings.TrimPrefix(rest, "/"), "/")
	rt, found := a.routes["/"+tail]
	if !ok || !found {
		return kit.Route{}, nil, errNoRoute
	}
	id := strings.ToLower(seg)
	if id == PublicTenant || !a.cfg.Tenants.Enabled {
		if id != PublicTenant {
			return kit.Route{}, nil, errNoRoute
		}
		return rt, a.publicTenant, nil
	}
	t, err := a.tenant(r.Context(), id)
	return rt, t, err
}

var errNoRoute = errors.New("not found")

// answerNoTenant answers a request whose path names a tenant that does
// not exist, or whose tenants could not be read.
func (a *Auth) answerNoTenant(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, errNoRoute):
		wire.Message(w, http.StatusNotFound, "not found")
	case errors.Is(err, ErrUnknownTenant):
		wire.Message(w, http.StatusNotFound, "unknown tenant")
	default:
		a.fail(w, r, err)
	}
}

// msgNotMember refuses a sign-in to a tenant the user is no longer a
// member of.
const msgNotMember = "You are not a member of this organisation. Please ask its administrator for an invitation."

// memberOrRefused reports whether the user userID, signing in with by,
// is a member of by's tenant (every user of the public tenant is), or
// answers the sign-in refused.
func (a *Auth) memberOrRefused(w http.ResponseWriter, r *http.Request, userID string, by store.Login, notAllowed string) bool {
	if by.Tenant == "" {
		return true
	}
	ts, err := a.tenantStore()
	if err == nil {
		_, err = ts.Membership(r.Context(), by.Tenant, userID)
	}
	switch {
	case err == nil:
		return true
	case errors.Is(err, store.ErrNotFound):
		if notAllowed == "" {
			notAllowed = "SIGN_IN_NOT_ALLOWED"
		}
		a.emit(r.Context(), r, Event{Kind: EventSignInNotMember, UserID: userID, Method: by.Method, ThirdPartyID: kit.ProviderOf(by)})
		wire.NotAllowed(w, notAllowed, msgNotMember)
	default:
		a.fail(w, r, err)
	}
	return false
}

// accessLifetime is how long the access tokens of a session in tenant (as
// the store keeps it) work. A tenant whose rules cannot be read now gets
// Config's.
func (a *Auth) accessLifetime(ctx context.Context, tenant string) time.Duration {
	if tenant != "" {
		if t, err := a.tenant(ctx, tenant); err == nil && t.AccessTokenLifetime > 0 {
			return t.AccessTokenLifetime
		}
	}
	return a.cfg.AccessTokenLifetime
}

// sessionTenant is the tenant of a session, for the recipes: its rules, or
// those of a tenant without any of its own where they cannot be read now.
func (a *Auth) sessionTenant(ctx context.Context, id string) *kit.Tenant {
	t, err := a.tenant(ctx, id)
	if err != nil {
		return &kit.Tenant{ID: id}
	}
	return t
}
