package provider

import (
	"errors"
	"strings"
	"testing"

	"github.com/golang-jwt/jwt/v5"
)

const (
	tenantA = "72f988bf-86f1-41af-91ab-2d7cd011db47"
	tenantB = "9188040d-6c67-4c5b-b112-36a304b66dad"
)

func issuerOf(tenant string) string { return strings.Replace(entraIssuer, "{tenantid}", tenant, 1) }

func newTestMicrosoft(t *testing.T, c MicrosoftConfig, docIssuer string) (Provider, *fakeIdP) {
	t.Helper()
	f := newFakeIdP(t, docIssuer)
	f.set(func(f *fakeIdP) {
		delete(f.doc, "code_challenge_methods_supported")
		f.claims = func(c jwt.MapClaims) { c["tid"], c["iss"] = tenantA, issuerOf(tenantA) }
	})
	c.ClientID, c.ClientSecret = testClient, testSecret
	p, err := Microsoft(c)
	if err != nil {
		t.Fatal(err)
	}
	tenant := c.Tenant
	if tenant == "" {
		tenant = "common"
	}
	o := p.(*oidcProvider)
	if want := "https://login.microsoftonline.com/" + tenant + "/v2.0"; o.discovery != want {
		t.Errorf("discovery at %q, want %q", o.discovery, want)
	}
	o.discovery = f.URL + "/" + tenant + "/v2.0"
	return p, f
}

func TestMicrosoft(t *testing.T) {
	p, f := newTestMicrosoft(t, MicrosoftConfig{}, entraIssuer)
	if p.ID() != "active-directory" {
		t.Errorf("ID %q", p.ID())
	}
	if q := authQuery(t, p); q.Get("code_challenge") != "challenge-1" || q.Get("nonce") != testNonce {
		t.Errorf("authorisation URL %v", q)
	}
	if _, d := f.counts(); d[0] != "/common/v2.0/.well-known/openid-configuration" {
		t.Errorf("discovery path %q", d[0])
	}
	// email_verified is not Entra's to say; xms_edov is.
	id, err := exchange(p)
	if err != nil || id != (Identity{"user-1", "u1@example.com", false}) {
		t.Fatalf("Exchange = %+v, %v", id, err)
	}
	form, _, _ := f.lastTokenRequest()
	if form.Get("code_verifier") != testVerif {
		t.Error("no verifier")
	}
	for _, tc := range []struct {
		name   string
		claims func(c jwt.MapClaims)
		issuer string // of the callback
		want   error
		id     Identity
	}{
		{name: "xms_edov true", claims: func(c jwt.MapClaims) { c["xms_edov"] = true }, id: Identity{"user-1", "u1@example.com", true}},
		{name: "xms_edov string", claims: func(c jwt.MapClaims) { c["xms_edov"] = "true" }, id: Identity{"user-1", "u1@example.com", true}},
		{name: "xms_edov false", claims: func(c jwt.MapClaims) { c["xms_edov"] = false }, id: Identity{"user-1", "u1@example.com", false}},
		{name: "xms_edov 1", claims: func(c jwt.MapClaims) { c["xms_edov"] = 1 }, id: Identity{"user-1", "u1@example.com", false}},
		{name: "no email", claims: func(c jwt.MapClaims) { delete(c, "email"); c["xms_edov"] = true }, id: Identity{"user-1", "", false}},
		{name: "other tenant's token", claims: func(c jwt.MapClaims) { c["tid"], c["iss"] = tenantB, issuerOf(tenantB) }, id: Identity{"user-1", "u1@example.com", false}},
		{name: "iss of another tenant than tid", claims: func(c jwt.MapClaims) { c["iss"] = issuerOf(tenantB) }, want: ErrIDToken},
		{name: "no tid", claims: func(c jwt.MapClaims) { delete(c, "tid") }, want: ErrIDToken},
		{name: "tid not a GUID", claims: func(c jwt.MapClaims) { c["tid"], c["iss"] = "common", issuerOf("common") }, want: ErrIDToken},
		{name: "iss the template", claims: func(c jwt.MapClaims) { c["iss"] = entraIssuer }, want: ErrIDToken},
		{name: "v1 issuer", claims: func(c jwt.MapClaims) { c["iss"] = "https://sts.windows.net/" + tenantA + "/" }, want: ErrIDToken},
		{name: "callback iss", issuer: issuerOf(tenantA), id: Identity{"user-1", "u1@example.com", false}},
		{name: "callback iss of another tenant", issuer: issuerOf(tenantB), want: ErrIssuer},
		{name: "callback iss the template", issuer: entraIssuer, want: ErrIssuer},
		{name: "callback iss elsewhere", issuer: "https://evil.example.com", want: ErrIssuer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.set(func(f *fakeIdP) {
				f.claims = func(c jwt.MapClaims) {
					c["tid"], c["iss"] = tenantA, issuerOf(tenantA)
					if tc.claims != nil {
						tc.claims(c)
					}
				}
			})
			id, err := exchange(p, func(r *ExchangeRequest) { r.Issuer = tc.issuer })
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) || id != tc.id {
				t.Errorf("%+v, %v; want %+v, %v", id, err, tc.id, tc.want)
			}
		})
	}
}

func TestMicrosoftTenants(t *testing.T) {
	p, _ := newTestMicrosoft(t, MicrosoftConfig{Tenants: []string{tenantB}}, entraIssuer)
	if _, err := exchange(p); !errors.Is(err, ErrNotAllowed) {
		t.Errorf("tenant not listed: %v", err)
	}
	p, _ = newTestMicrosoft(t, MicrosoftConfig{Tenants: []string{strings.ToUpper(tenantA)}}, entraIssuer)
	if _, err := exchange(p); err != nil {
		t.Errorf("tenant listed: %v", err)
	}

	// One tenant: its own issuer, and its tokens only.
	p, f := newTestMicrosoft(t, MicrosoftConfig{Tenant: tenantA}, issuerOf(tenantA))
	if _, err := exchange(p); err != nil {
		t.Errorf("single tenant: %v", err)
	}
	f.set(func(f *fakeIdP) { f.claims = func(c jwt.MapClaims) { c["tid"], c["iss"] = tenantB, issuerOf(tenantB) } })
	if _, err := exchange(p); !errors.Is(err, ErrIDToken) {
		t.Errorf("another tenant's token: %v", err)
	}
	p, f = newTestMicrosoft(t, MicrosoftConfig{Tenant: tenantA}, entraIssuer)
	f.set(func(f *fakeIdP) { f.claims = func(c jwt.MapClaims) { c["tid"], c["iss"] = tenantB, issuerOf(tenantB) } })
	if _, err := exchange(p); !errors.Is(err, ErrIDToken) {
		t.Errorf("another tenant's token, template document: %v", err)
	}
	p, _ = newTestMicrosoft(t, MicrosoftConfig{Tenant: tenantA}, issuerOf(tenantB))
	if _, err := exchange(p); !errors.Is(err, ErrDiscovery) {
		t.Errorf("document of another tenant: %v", err)
	}
	// consumers: the personal-account tenant's own issuer.
	p, f = newTestMicrosoft(t, MicrosoftConfig{Tenant: "consumers"}, issuerOf(tenantB))
	f.set(func(f *fakeIdP) { f.claims = func(c jwt.MapClaims) { c["tid"], c["iss"] = tenantB, issuerOf(tenantB) } })
	if _, err := exchange(p); err != nil {
		t.Errorf("consumers: %v", err)
	}
	f.set(func(f *fakeIdP) { f.claims = func(c jwt.MapClaims) { c["tid"], c["iss"] = tenantA, issuerOf(tenantA) } })
	if _, err := exchange(p); !errors.Is(err, ErrIDToken) {
		t.Errorf("consumers, work account: %v", err)
	}
	for _, c := range []MicrosoftConfig{
		{ClientID: testClient, Tenant: "common/../x"},
		{ClientID: testClient, Tenant: "common?x=1"},
		{ClientID: testClient, Tenants: []string{"contoso.com"}},
		{Tenant: "common"},
	} {
		if _, err := Microsoft(c); !errors.Is(err, ErrConfig) {
			t.Errorf("Microsoft(%+v): %v, want ErrConfig", c, err)
		}
	}
}
