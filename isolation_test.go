package auth_test

// Tenant isolation (doc.go "Tenants", SECURITY.md), checked over every
// short history of two people, one in the public tenant and one in acme,
// who sign up and in with the same address in every way there is:
//
//	nothing done in one tenant (a password, a session, a reset or
//	verification token, a sign-in code or link) opens anything in the
//	other.
//
// TestTenantIsolation enumerates every sequence of the actions below of
// up to accountDepth steps, each on a fresh server, over HTTP in header
// mode. After every step each person tries everything they hold in the
// other tenant: their password, each reset and verification token, each
// code and link not yet used, and each session (to add a provider to its
// user there); and every session anyone holds must be of their own
// tenant, and of a user no one reached in the other. Actions that could
// do nothing (a second sign-up, mail without an account or session) end
// the branch. TestTenantIsolationCatchesBreakage runs the same walk over a
// store that forgets the tenant of the codes it keeps, and wants it
// caught.

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/emailpassword"
	"github.com/latchkit/auth/emailverification"
	"github.com/latchkit/auth/passwordless"
	"github.com/latchkit/auth/provider"
	"github.com/latchkit/auth/store"
	"github.com/latchkit/auth/store/memstore"
)

// isoEmail is the address both people use, each in their own tenant.
const isoEmail = "same@example.com"

type isoFlow struct{ device, pre, code, link string }

// An isoActor is one of the two people: their tenant and what they hold.
type isoActor struct {
	name, tenant, password, subject string
	sessions                        []accountTokens
	resets, verifications, invites  []string
	flows                           []isoFlow
	done                            map[string]bool
}

// prefix is the path segment of the actor's tenant.
func (p *isoActor) prefix() string {
	if p.tenant == auth.PublicTenant {
		return ""
	}
	return "/" + p.tenant
}

type isoWorld struct {
	accountWorld // its send, mailer and provider
	people       [2]*isoActor
	reached      map[string]string // user id -> the tenant it was reached in
}

type isoAction struct {
	name string
	do   func(w *isoWorld, p *isoActor) bool
}

var isoActions = []isoAction{
	{"signs up with a password", (*isoWorld).signUp},
	{"signs in with a code", (*isoWorld).signInWithCode},
	{"signs in with the provider", (*isoWorld).signInWithProvider},
	{"asks for a reset", (*isoWorld).askReset},
	{"asks for a code and keeps it", (*isoWorld).askCode},
	{"asks for verification mail", (*isoWorld).askVerification},
	{"is invited to their tenant", (*isoWorld).invited},
}

func TestTenantIsolation(t *testing.T) {
	var e isoEnumeration
	e.walk(t, func(s store.Store) store.Store { return s }, nil)
	t.Logf("%d sequences of up to %d steps, %d violating", e.sequences.Load(), accountDepth, e.violating.Load())
	for _, v := range e.examples() {
		t.Errorf("%s", v)
	}
}

// TestTenantIsolationCatchesBreakage: a store that keeps every code as
// the public tenant's lets acme's reset token reset acme's account from
// the public tenant's path, and the walk must say so.
func TestTenantIsolationCatchesBreakage(t *testing.T) {
	var e isoEnumeration
	e.depth = 2
	e.walk(t, func(s store.Store) store.Store { return codesWithoutTenant{s.(tenantStore)} }, nil)
	if e.violating.Load() == 0 {
		t.Fatal("a store that forgets the codes' tenant went unnoticed")
	}
	t.Logf("caught: %d of %d sequences violating, such as %s", e.violating.Load(), e.sequences.Load(), e.examples()[0])
}

type tenantStore interface {
	store.Store
	store.TenantStore
}

// codesWithoutTenant is the deliberate breakage: codes lose their tenant.
type codesWithoutTenant struct{ tenantStore }

func (s codesWithoutTenant) CreateCode(ctx context.Context, c store.Code) error {
	c.Tenant = ""
	return s.tenantStore.CreateCode(ctx, c)
}

type isoEnumeration struct {
	sequences, violating atomic.Int64
	depth                int

	mu    sync.Mutex
	first map[string]string // the shortest violating history of each kind
}

func (e *isoEnumeration) record(names, violations []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.first == nil {
		e.first = map[string]string{}
	}
	for _, v := range violations {
		kind, _, _ := strings.Cut(v, ":")
		if old, ok := e.first[kind]; !ok || strings.Count(old, " -> ") > len(names)-1 {
			e.first[kind] = v + "\n\tafter: " + strings.Join(names, " -> ")
		}
	}
}

func (e *isoEnumeration) examples() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]string, 0, len(e.first))
	for _, v := range e.first {
		out = append(out, v)
	}
	slices.Sort(out)
	return out
}

func (e *isoEnumeration) walk(t *testing.T, wrap func(store.Store) store.Store, prefix []int) {
	depth := accountDepth
	if e.depth > 0 {
		depth = e.depth
	}
	for i := range 2 * len(isoActions) {
		seq := append(append([]int(nil), prefix...), i)
		w := newIsoWorld(t, wrap)
		ok := true
		for _, a := range seq {
			if ok = isoActions[a/2].do(w, w.people[a%2]); !ok {
				break
			}
			w.observe()
		}
		w.a.Close(context.Background())
		if !ok {
			continue
		}
		e.sequences.Add(1)
		if len(w.violations) > 0 {
			e.violating.Add(1)
			e.record(isoNames(seq), w.violations)
		}
		if len(seq) < depth {
			e.walk(t, wrap, seq)
		}
	}
}

func isoNames(seq []int) []string {
	names := make([]string, len(seq))
	for i, a := range seq {
		names[i] = []string{"public's", "acme's"}[a%2] + " person " + isoActions[a/2].name
	}
	return names
}

func newIsoWorld(t *testing.T, wrap func(store.Store) store.Store) *isoWorld {
	t.Helper()
	w := &isoWorld{reached: map[string]string{}}
	w.t, w.mail = t, newAccountMailer()
	w.st = wrap(memstore.New())
	idp := &scriptedProvider{id: "oidc", codes: map[string]provider.Identity{}}
	w.idp = map[string]*scriptedProvider{"oidc": idp}
	lots := auth.Rate{Burst: 1 << 20, Every: time.Hour}
	cfg := auth.Config{
		Store: w.st, AppURL: appURL, Logger: slog.New(slog.DiscardHandler),
		RateLimits: auth.RateLimits{
			SignInFailures: lots, ClientSignInFailures: lots, AccountSignInFailures: lots, ResetEmails: lots,
			ClientResetRequests: lots, ClientNewPasswords: lots, ClientEmailChecks: lots, SessionRefreshes: lots,
			ClientThirdPartySignIns: lots, VerificationEmails: lots,
			PasswordlessSends: lots, ClientPasswordlessSends: lots, PasswordlessFailures: lots,
		},
		Passwordless:      passwordless.Config{Flow: passwordless.CodeAndLink},
		EmailPassword:     emailpassword.Config{Hashing: emailpassword.Hashing{Memory: 64, Iterations: 1, Parallelism: 1}, InsecureWeakHashing: true},
		EmailVerification: emailverification.Config{Mode: emailverification.Optional},
		Tenants:           auth.TenantsConfig{Enabled: true},
	}
	cfg.Email.Mailer = w.mail
	cfg.ThirdParty.Providers = []provider.Provider{idp}
	a, err := auth.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.PutTenant(t.Context(), auth.Tenant{ID: "acme"}); err != nil {
		t.Fatal(err)
	}
	w.a = a
	w.people[0] = &isoActor{name: "public's person", tenant: auth.PublicTenant, password: "public-password-1", subject: "pub", done: map[string]bool{}}
	w.people[1] = &isoActor{name: "acme's person", tenant: "acme", password: "acme-password-1", subject: "acme", done: map[string]bool{}}
	return w
}

// once runs a sign-up or sign-in step unless it ran before.
func (p *isoActor) once(key string) bool {
	if p.done[key] {
		return false
	}
	p.done[key] = true
	return true
}

// signedIn keeps the session of an answer, if it started one, checking
// it is of the person's tenant and of a user not reached in the other.
func (w *isoWorld) signedIn(p *isoActor, what string, res accountReply) {
	uid, tok := res.signedIn()
	if uid == "" {
		return
	}
	if tid := tokenClaim(tok.access, "tId"); tid != p.tenant {
		w.violate("%s %s: a session of tenant %v, want %s", p.name, what, tid, p.tenant)
	}
	if t, ok := w.reached[uid]; ok && t != p.tenant {
		w.violate("%s %s: reached user %s of tenant %s", p.name, what, uid, t)
	}
	w.reached[uid] = p.tenant
	p.sessions = append(p.sessions, tok)
}

func (w *isoWorld) signUp(p *isoActor) bool {
	if !p.once("signup") {
		return false
	}
	res := w.send("POST", p.prefix()+"/signup", "emailpassword", "", credentials(isoEmail, p.password))
	w.signedIn(p, "signing up", res)
	return true
}

func (w *isoWorld) signInWithCode(p *isoActor) bool {
	if !p.once("code") {
		return false
	}
	f, ok := w.newFlow(p)
	if ok {
		res := w.send("POST", p.prefix()+"/signinup/code/consume", "passwordless", "",
			map[string]any{"deviceId": f.device, "preAuthSessionId": f.pre, "userInputCode": f.code})
		w.signedIn(p, "signing in with a code", res)
	}
	return true
}

func (w *isoWorld) askCode(p *isoActor) bool {
	if len(p.flows) > 0 {
		return false
	}
	if f, ok := w.newFlow(p); ok {
		p.flows = append(p.flows, f)
	}
	return true
}

// newFlow starts a passwordless flow in the person's tenant and reads its
// code and link from the mail.
func (w *isoWorld) newFlow(p *isoActor) (isoFlow, bool) {
	before := w.mail.count()
	res := w.send("POST", p.prefix()+"/signinup/code", "passwordless", "", map[string]any{"email": isoEmail})
	f := isoFlow{}
	f.device, _ = res.json["deviceId"].(string)
	f.pre, _ = res.json["preAuthSessionId"].(string)
	msg := w.mail.waitFor(before, isoEmail, signInCode)
	if res.status != "OK" || msg.Text == "" {
		w.violate("%s could not start a flow: %d %v", p.name, res.code, res.json)
		return f, false
	}
	f.code = strings.TrimSpace(signInCode.FindString(msg.Text))
	if i := strings.Index(msg.Text, "#"); i > 0 {
		f.link = strings.Fields(msg.Text[i+1:])[0]
	}
	if !strings.Contains(msg.Text, "tenantId="+p.tenant+"#") {
		w.violate("%s's magic link does not name %s: %s", p.name, p.tenant, msg.Text)
	}
	return f, true
}

func (w *isoWorld) signInWithProvider(p *isoActor) bool {
	if !p.once("provider") {
		return false
	}
	w.signedIn(p, "signing in with the provider", w.providerFlowIn(p.prefix(), p.subject, ""))
	return true
}

// providerFlowIn is providerFlow on a tenant's path.
func (w *isoWorld) providerFlowIn(prefix, subject, bearer string) accountReply {
	redirect := appURL + "/auth/callback/oidc"
	q := url.Values{"thirdPartyId": {"oidc"}, "redirectURIOnProviderDashboard": {redirect}}
	res := w.send("GET", prefix+"/authorisationurl?"+q.Encode(), "thirdparty", "", nil)
	verifier, _ := res.json["pkceCodeVerifier"].(string)
	code := w.idp["oidc"].issue(provider.Identity{Subject: subject, Email: isoEmail, EmailVerified: true})
	body := map[string]any{"thirdPartyId": "oidc", "redirectURIInfo": map[string]any{
		"redirectURIOnProviderDashboard": redirect, "redirectURIQueryParams": map[string]string{"code": code}, "pkceCodeVerifier": verifier}}
	if bearer != "" {
		body["shouldTryLinkingWithSessionUser"] = true
	}
	return w.send("POST", prefix+"/signinup", "thirdparty", bearer, body)
}

func (w *isoWorld) askReset(p *isoActor) bool {
	if !p.done["signup"] || len(p.resets) > 0 {
		return false
	}
	before := w.mail.count()
	w.send("POST", p.prefix()+"/user/password/reset/token", "emailpassword", "", map[string]any{
		"formFields": []map[string]string{{"id": "email", "value": isoEmail}}})
	if m := w.mail.waitForLink(before, "reset-password"); m != nil {
		p.resets = append(p.resets, m[2])
	}
	return true
}

func (w *isoWorld) askVerification(p *isoActor) bool {
	if len(p.sessions) == 0 || len(p.verifications) > 0 {
		return false
	}
	before := w.mail.count()
	res := w.send("POST", "/user/email/verify/token", "emailverification", p.sessions[len(p.sessions)-1].access, map[string]any{})
	if res.status == "OK" {
		if m := w.mail.waitForLink(before, "verify-email"); m != nil {
			p.verifications = append(p.verifications, m[2])
		}
	}
	return true
}

// invitationLink is the token of an invitation's link.
var invitationLink = regexp.MustCompile(`/auth/invitation\?token=([A-Za-z0-9_-]+)&tenantId=([a-z0-9-]+)`)

// invited has the operator invite the person to their tenant: one of its
// own, as there is nothing to invite to in the public tenant.
func (w *isoWorld) invited(p *isoActor) bool {
	if p.tenant == auth.PublicTenant || len(p.invites) > 0 {
		return false
	}
	before := w.mail.count()
	if err := w.a.Invite(w.t.Context(), p.tenant, isoEmail, ""); err != nil {
		w.t.Fatal(err)
	}
	if msg := w.mail.waitFor(before, isoEmail, invitationLink); msg.Text != "" {
		m := invitationLink.FindStringSubmatch(msg.Text)
		if m[2] != p.tenant {
			w.violate("%s's invitation names the tenant %s", p.name, m[2])
		}
		p.invites = append(p.invites, m[1])
	}
	return true
}

// observe has each person try what they hold in the other's tenant.
func (w *isoWorld) observe() {
	for i, p := range w.people {
		other := w.people[1-i].prefix()
		w.tryElsewhere(p, other)
	}
}

func (w *isoWorld) tryElsewhere(p *isoActor, other string) {
	opened := func(what string, res accountReply) {
		if res.status == "OK" {
			w.violate("%s's %s opened the other tenant: %v", p.name, what, res.json)
		}
	}
	if p.done["signup"] {
		opened("password", w.send("POST", other+"/signin", "emailpassword", "", credentials(isoEmail, p.password)))
	}
	for _, tok := range p.resets {
		opened("reset token", w.send("POST", other+"/user/password/reset", "emailpassword", "", map[string]any{
			"token": tok, "formFields": []map[string]string{{"id": "password", "value": "taken-over-1"}}}))
	}
	for _, tok := range p.verifications {
		opened("verification token", w.send("POST", other+"/user/email/verify", "emailverification", "", map[string]any{"method": "token", "token": tok}))
	}
	for _, f := range p.flows {
		opened("code", w.send("POST", other+"/signinup/code/consume", "passwordless", "",
			map[string]any{"deviceId": f.device, "preAuthSessionId": f.pre, "userInputCode": f.code}))
		if f.link != "" {
			opened("link", w.send("POST", other+"/signinup/code/consume", "passwordless", "",
				map[string]any{"preAuthSessionId": f.pre, "linkCode": f.link}))
		}
	}
	for _, s := range p.sessions {
		opened("session", w.providerFlowIn(other, "added-"+p.subject, s.access))
		opened("session's switch", w.send("POST", other+"/tenant/switch", "", s.access, nil))
		for _, tok := range p.invites {
			opened("invitation", w.send("POST", other+"/tenant/invitation/accept", "", s.access, map[string]any{"token": tok}))
		}
	}
	p.flows = nil // a link tried elsewhere is spent
}

// tokenClaim is a claim of an access token's payload, as a string.
func tokenClaim(access, claim string) string {
	parts := strings.Split(access, ".")
	if len(parts) != 3 {
		return ""
	}
	var claims map[string]any
	if b, err := base64.RawURLEncoding.DecodeString(parts[1]); err != nil || json.Unmarshal(b, &claims) != nil {
		return ""
	}
	s, _ := claims[claim].(string)
	return s
}
