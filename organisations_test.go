package auth_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/roles"
	"github.com/latchkit/auth/store"
)

// orgServer is a tenant server with roles: "admin" may invite to and
// manage a tenant's members, "viewer" nothing; ann is acme's admin.
func orgServer(t *testing.T, m authtest.Mode) (s *authtest.Server, ann *authtest.Client, annID string) {
	t.Helper()
	rr := roles.New(roles.Config{})
	s, _ = tenantServer(t, auth.Config{Roles: rr})
	ctx := t.Context()
	if _, err := rr.CreateRole(ctx, "admin", auth.DefaultInvitePermission, auth.DefaultMembersPermission); err != nil {
		t.Fatal(err)
	}
	if _, err := rr.CreateRole(ctx, "viewer", "posts:read"); err != nil {
		t.Fatal(err)
	}
	ann = tenantClient(s, m, "acme")
	annID = wantTenantSession(t, "ann's sign-up", ann.SignUp("ann@acme.example", "correct horse battery 9"), "acme")
	if _, err := s.AuthConfig.Store.(store.RoleStore).GiveRole(ctx, "acme", annID, "admin"); err != nil {
		t.Fatal(err)
	}
	s.Clock.Advance(s.AuthConfig.AccessTokenLifetime + time.Second)
	if res := ann.Refresh(); res.StatusCode != http.StatusOK { // her token now carries the role
		t.Fatalf("ann's refresh: %d %s", res.StatusCode, res.Body)
	}
	return s, ann, annID
}

// invite has c invite email to its tenant with role, and returns the
// mailed link's token.
func invite(t *testing.T, s *authtest.Server, c *authtest.Client, email, role string) string {
	t.Helper()
	n := len(s.Mailbox.Messages())
	res := c.Do(http.MethodPost, "/auth/acme/tenant/invitations", map[string]string{"email": email, "role": role})
	if res.StatusCode != http.StatusOK || res.Status != "OK" {
		t.Fatalf("invite %s: %d %s", email, res.StatusCode, res.Body)
	}
	msg := s.Mailbox.LastTo(t, email, n, 5*time.Second)
	link, tok := authtest.ResetLink(t, msg)
	if !strings.Contains(link, "/auth/invitation?token=") || !strings.HasSuffix(link, "&tenantId=acme") {
		t.Errorf("the invitation link %s: want the invitation page with the token and acme", link)
	}
	return tok
}

// TestTenantsInvitation: an admin of acme invites a user of the public
// tenant, who accepts with their own session, becomes a member with the
// role, switches to acme without signing in again, and loses it all when
// removed.
func TestTenantsInvitation(t *testing.T) {
	for _, m := range authtest.Modes {
		t.Run(m.String(), func(t *testing.T) {
			s, ann, annID := orgServer(t, m)
			tok := invite(t, s, ann, "Bob@Example.com", "viewer")

			bob := tenantClient(s, m, "")
			bobID := wantTenantSession(t, "bob's sign-up in public", bob.SignUp("bob@example.com", "correct horse battery 9"), "public")
			carol := tenantClient(s, m, "")
			wantTenantSession(t, "carol's sign-up", carol.SignUp("carol@example.com", "correct horse battery 9"), "public")
			res := carol.Do(http.MethodPost, "/auth/acme/tenant/invitation/accept", map[string]string{"token": tok})
			wantReply(t, "carol accepts bob's invitation", res.StatusCode, res.Body, http.StatusOK, `{"status":"INVITATION_EMAIL_MISMATCH_ERROR"}`)
			res = bob.Do(http.MethodPost, "/auth/tenant/invitation/accept", map[string]string{"token": tok})
			wantReply(t, "acme's invitation on the public path", res.StatusCode, res.Body, http.StatusOK, `{"status":"INVITATION_INVALID_ERROR"}`)
			res = bob.Do(http.MethodPost, "/auth/acme/tenant/invitation/accept", map[string]string{"token": tok})
			wantReply(t, "bob accepts", res.StatusCode, res.Body, http.StatusOK, `{"status":"OK","tenantId":"acme"}`)
			res = bob.Do(http.MethodPost, "/auth/acme/tenant/invitation/accept", map[string]string{"token": tok})
			wantReply(t, "the invitation again", res.StatusCode, res.Body, http.StatusOK, `{"status":"INVITATION_INVALID_ERROR"}`)

			res = ann.Get("/auth/acme/tenant/members")
			if res.StatusCode != http.StatusOK || !strings.Contains(string(res.Body), `{"userId":"`+bobID+`","email":"bob@example.com","roles":["viewer"]`) ||
				!strings.Contains(string(res.Body), `{"userId":"`+annID+`","email":"ann@acme.example","roles":["admin"]`) {
				t.Errorf("acme's members: %d %s, want ann the admin and bob the viewer", res.StatusCode, res.Body)
			}
			res = bob.Get("/auth/user/tenants")
			wantReply(t, "bob's tenants", res.StatusCode, res.Body, http.StatusOK,
				`{"status":"OK","tenants":[{"tenantId":"public","current":true},{"tenantId":"acme","current":false}]}`)

			// Bob moves to acme: a new session there, the old one ended.
			oldAccess, oldRefresh := bob.Tokens()
			res = bob.Do(http.MethodPost, "/auth/acme/tenant/switch", nil)
			if res.StatusCode != http.StatusOK || res.Status != "OK" || !res.IssuedTokens() {
				t.Fatalf("bob's switch: %d %s", res.StatusCode, res.Body)
			}
			if ft := decodeFrontToken(t, res.Header.Get("Front-Token")); ft.UP["tId"] != "acme" || ft.UID != bobID {
				t.Errorf("bob's switched session: tId %v of %s, want acme of %s", ft.UP["tId"], ft.UID, bobID)
			}
			stale := tenantClient(s, m, "")
			stale.SetTokens(oldAccess, oldRefresh)
			if m != authtest.Cookie {
				if res := stale.Refresh(); res.StatusCode != http.StatusUnauthorized {
					t.Errorf("the session switched from: refresh %d %s, want 401", res.StatusCode, res.Body)
				}
			}
			// A viewer may not manage members.
			if res := bob.Get("/auth/acme/tenant/members"); res.StatusCode != http.StatusForbidden {
				t.Errorf("a viewer lists members: %d %s, want 403", res.StatusCode, res.Body)
			}

			// Removed: bob's acme session ends, and he cannot come back.
			res = ann.Do(http.MethodPost, "/auth/acme/tenant/members/remove", map[string]string{"userId": bobID})
			wantReply(t, "ann removes bob", res.StatusCode, res.Body, http.StatusOK, `{"status":"OK"}`)
			if res := bob.Refresh(); res.StatusCode != http.StatusUnauthorized {
				t.Errorf("bob's acme session after his removal: refresh %d %s, want 401", res.StatusCode, res.Body)
			}
			bob = tenantClient(s, m, "")
			wantTenantSession(t, "bob signs in to public again", bob.SignIn("bob@example.com", "correct horse battery 9"), "public")
			res = bob.Do(http.MethodPost, "/auth/acme/tenant/switch", nil)
			wantReply(t, "bob's switch after removal", res.StatusCode, res.Body, http.StatusOK, `{"status":"NOT_A_MEMBER_ERROR"}`)
		})
	}
}

// TestTenantsRemovedMemberRefused: a member of acme by sign-up, removed,
// is refused there with the reason the SDKs show.
func TestTenantsRemovedMemberRefused(t *testing.T) {
	s, _, _ := orgServer(t, authtest.Header)
	dan := tenantClient(s, authtest.Header, "acme")
	danID := wantTenantSession(t, "dan's sign-up", dan.SignUp("dan@acme.example", "correct horse battery 9"), "acme")
	if err := s.Auth.RemoveMember(t.Context(), "acme", danID); err != nil {
		t.Fatal(err)
	}
	if err := s.Auth.RemoveMember(t.Context(), "acme", danID); err != auth.ErrNotMember {
		t.Errorf("RemoveMember again: %v, want ErrNotMember", err)
	}
	res := tenantClient(s, authtest.Header, "acme").SignIn("dan@acme.example", "correct horse battery 9")
	wantReply(t, "dan signs in after his removal", res.StatusCode, res.Body, http.StatusOK,
		`{"status":"SIGN_IN_NOT_ALLOWED","reason":"You are not a member of this organisation. Please ask its administrator for an invitation."}`)
}

// TestTenantsDiscover: the discovery route names the tenant of an
// address's domain, and the public tenant for any other.
func TestTenantsDiscover(t *testing.T) {
	s, _ := tenantServer(t, auth.Config{})
	if err := s.Auth.PutTenant(t.Context(), auth.Tenant{ID: "acme", EmailDomains: []string{"acme.example"}}); err != nil {
		t.Fatal(err)
	}
	for email, want := range map[string]string{"Ann@ACME.example": "acme", "ann@gmail.com": "public", "not an email": "public"} {
		res := send(t, s, http.MethodPost, "/auth/tenant/discover", `{"email":"`+email+`"}`, nil)
		wantReply(t, email, res.StatusCode, res.Body, http.StatusOK, `{"status":"OK","tenant":"`+want+`"}`)
	}
	res := send(t, s, http.MethodPost, "/auth/tenant/discover", `{}`, nil)
	wantReply(t, "no email", res.StatusCode, res.Body, http.StatusBadRequest, `{"status":"ERROR","message":"Email is required"}`)
	if err := s.Auth.PutTenant(t.Context(), auth.Tenant{ID: "acme", EmailDomains: []string{"@acme.example"}}); err == nil {
		t.Error("PutTenant took the email domain @acme.example")
	}
	if err := s.Auth.PutTenant(t.Context(), auth.Tenant{ID: "globex", EmailDomains: []string{"acme.example"}}); err == nil {
		t.Error("PutTenant gave globex acme's email domain")
	}
}

// TestTenantsSwitchKeepsTenantRules: a member moves only where the way
// their session signed in is one of the tenant's: a provider the tenant
// does not have, or a password where it takes none, needs a sign-in there.
func TestTenantsSwitchKeepsTenantRules(t *testing.T) {
	s, p := tenantServer(t, auth.Config{})
	sso := authtest.NewProvider(t)
	sso.ID = "globex-sso"
	err := s.Auth.PutTenant(t.Context(), auth.Tenant{ID: "globex", FirstFactors: []string{auth.FactorThirdParty},
		Providers: []auth.TenantProvider{{ID: sso.ID, Issuer: sso.URL, ClientID: sso.ClientID, ClientSecret: sso.ClientSecret}}})
	if err != nil {
		t.Fatal(err)
	}
	ts := s.AuthConfig.Store.(store.TenantStore)
	byProvider, byPassword := tenantClient(s, authtest.Header, ""), tenantClient(s, authtest.Header, "")
	for c, res := range map[*authtest.Client]*authtest.Response{
		byProvider: byProvider.SignInWithProvider(p), byPassword: byPassword.SignUp(s.NewEmail(), "correct horse battery 9"),
	} {
		uid := wantTenantSession(t, "a sign-in in public", res, "public")
		if _, err := ts.AddMember(t.Context(), "globex", uid, s.Clock.Now()); err != nil {
			t.Fatal(err)
		}
		res := c.Do(http.MethodPost, "/auth/globex/tenant/switch", nil)
		wantReply(t, "a switch to globex", res.StatusCode, res.Body, http.StatusOK, `{"status":"SIGN_IN_REQUIRED_ERROR"}`)
	}
	// The same session into acme, which has the provider but of which
	// the user is no member.
	res := byProvider.Do(http.MethodPost, "/auth/acme/tenant/switch", nil)
	wantReply(t, "a switch to acme, not a member", res.StatusCode, res.Body, http.StatusOK, `{"status":"NOT_A_MEMBER_ERROR"}`)
}

// TestTenantsInviteRefusals: what an invitation over HTTP refuses.
func TestTenantsInviteRefusals(t *testing.T) {
	s, ann, _ := orgServer(t, authtest.Header)
	res := ann.Do(http.MethodPost, "/auth/acme/tenant/invitations", map[string]string{"email": "x@example.com", "role": "nosuch"})
	wantReply(t, "an unknown role", res.StatusCode, res.Body, http.StatusOK, `{"status":"UNKNOWN_ROLE_ERROR"}`)
	res = ann.Do(http.MethodPost, "/auth/acme/tenant/invitations", map[string]string{"email": "not an address"})
	if res.StatusCode != http.StatusOK || res.Status != "GENERAL_ERROR" {
		t.Errorf("a malformed address: %d %s, want GENERAL_ERROR", res.StatusCode, res.Body)
	}
	res = ann.Do(http.MethodPost, "/auth/tenant/invitations", map[string]string{"email": "x@example.com"})
	if res.StatusCode != http.StatusForbidden {
		t.Errorf("an invitation on the public tenant's path: %d %s, want 403", res.StatusCode, res.Body)
	}
	if got := len(s.Mailbox.Messages()); got != 0 {
		t.Errorf("%d emails sent for refused invitations", got)
	}
}

// TestTenantsRolesAreTheTenants: a role held in one tenant authorises
// nothing in a session of another, read from the token or, with
// CheckSessionInStore, from the store.
func TestTenantsRolesAreTheTenants(t *testing.T) {
	for _, inStore := range []bool{false, true} {
		t.Run(fmt.Sprintf("CheckSessionInStore=%v", inStore), func(t *testing.T) {
			rr := roles.New(roles.Config{})
			s, _ := tenantServer(t, auth.Config{Roles: rr, CheckSessionInStore: inStore})
			ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
			s.Mux.Handle("/api/admin", s.Auth.RequireSession(ok, roles.Require("admin")))
			if _, err := rr.CreateRole(t.Context(), "admin"); err != nil {
				t.Fatal(err)
			}
			email, pw := s.NewEmail(), "correct horse battery 9"
			pub, acme := tenantClient(s, authtest.Header, ""), tenantClient(s, authtest.Header, "acme")
			pubID := wantTenantSession(t, "sign-up in public", pub.SignUp(email, pw), "public")
			wantTenantSession(t, "sign-up in acme, another user", acme.SignUp(email, pw), "acme")
			// The same user, in two tenants: a member of acme too.
			if _, err := s.AuthConfig.Store.(store.TenantStore).AddMember(t.Context(), "acme", pubID, s.Clock.Now()); err != nil {
				t.Fatal(err)
			}
			if _, err := rr.Give(t.Context(), pubID, "admin"); err != nil { // in the public tenant
				t.Fatal(err)
			}
			res := pub.Do(http.MethodPost, "/auth/acme/tenant/switch", nil) // password: one of acme's
			if res.Status != "OK" {
				t.Fatalf("the switch: %d %s", res.StatusCode, res.Body)
			}
			if res := pub.Get("/api/admin"); res.StatusCode != http.StatusForbidden {
				t.Errorf("a public admin's session in acme: %d %s, want 403", res.StatusCode, res.Body)
			}
			// Given in acme (auth.InTenant), the role holds there from the
			// session's next token.
			if _, err := rr.Give(auth.InTenant(t.Context(), "acme"), pubID, "admin"); err != nil {
				t.Fatal(err)
			}
			if roles, _, _ := rr.UserRoles(auth.InTenant(t.Context(), "acme"), pubID); len(roles) != 1 {
				t.Errorf("the user's roles in acme: %v, want admin", roles)
			}
			s.Clock.Advance(auth.DefaultAccessTokenLifetime + time.Second)
			if res := pub.Refresh(); res.StatusCode != http.StatusOK {
				t.Fatalf("refresh: %d %s", res.StatusCode, res.Body)
			}
			if res := pub.Get("/api/admin"); res.StatusCode != http.StatusOK {
				t.Errorf("the admin of acme's session in acme: %d %s, want 200", res.StatusCode, res.Body)
			}
			other := tenantClient(s, authtest.Header, "")
			wantTenantSession(t, "sign-in in public", other.SignIn(email, pw), "public")
			if res := other.Get("/api/admin"); res.StatusCode != http.StatusOK {
				t.Errorf("the admin's session in public: %d %s, want 200", res.StatusCode, res.Body)
			}
		})
	}
}
