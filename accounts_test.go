package auth_test

// The account model's two promises (doc.go "Account linking", SECURITY.md),
// checked over every short history of two people and one address:
//
//   - no takeover: nothing the stranger does without the inbox (sign up
//     with its address, sign in with a provider that reports it
//     unverified, ask for verification mail, keep a session, plant one in
//     the owner's browser, change or add a password through their session,
//     delete their account, ask to move an account of their own address
//     to the inbox's, which the owner may then open, add a provider to
//     that account while signed in) gives them a way into a user that the
//     inbox's owner signs into or uses;
//   - no lockout: whatever happened, the owner gets into an account with
//     the address by self-service (a provider that verified it, or a
//     reset), and, under account linking, nothing the stranger made with
//     the address opens any more once the owner has.
//
// TestAccountProperties enumerates every sequence of the actions below of
// up to accountDepth steps, with linking on and off, each on a fresh
// server, over HTTP in header mode. After every step both people try every
// way in they have (refresh each session they hold, sign in with each
// password they know and each provider identity that has signed in
// before), and the users each reaches are compared. After the last step
// the owner recovers, and the promises are checked once more.
//
// Actions that could not do anything in a state (opening mail that is not
// there, asking for mail without a session, a second sign-up) end the
// branch: the sequence would equal a shorter one.

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/emailpassword"
	"github.com/latchkit/auth/emailverification"
	"github.com/latchkit/auth/mailer"
	"github.com/latchkit/auth/passkey"
	"github.com/latchkit/auth/passwordless"
	"github.com/latchkit/auth/provider"
	"github.com/latchkit/auth/store"
	"github.com/latchkit/auth/store/memstore"
)

const (
	inbox       = "owner@example.com"
	appURL      = "https://app.example"
	ownerPass   = "owner-password-1"
	strangePass = "stranger-password-1"
	resetPass   = "owner-password-2"
	// ownerPass3 and strangePass2 are set through a session: changed
	// from the one the person knows, or added where they know none.
	ownerPass3   = "owner-password-3"
	strangePass2 = "stranger-password-2"
	// strangerOwn is an inbox the stranger reads, whose account they
	// may ask to move to the owner's address.
	strangerOwn = "stranger@example.com"
)

// An accountAction is one step of a history. It reports false when it
// could do nothing in the state it met.
type accountAction struct {
	name string
	do   func(w *accountWorld) bool
}

var accountActions = []accountAction{
	{"owner signs up with a password", func(w *accountWorld) bool {
		return w.untilSuccess("owner-signup", w.signUp(w.owner, ownerPass))
	}},
	{"owner signs in with google (verified)", func(w *accountWorld) bool {
		return w.untilSuccess("owner-google", w.providerSignIn(w.owner, "google", "owner-g", true))
	}},
	{"owner signs in with facebook (unverified)", func(w *accountWorld) bool {
		return w.untilSuccess("owner-fb", w.providerSignIn(w.owner, "facebook", "owner-fb", false))
	}},
	{"owner asks for verification mail", func(w *accountWorld) bool { return w.askVerification(w.owner) }},
	{"owner opens the newest verification or email change mail", func(w *accountWorld) bool { return w.openVerification() }},
	{"owner resets the password", func(w *accountWorld) bool { return w.reset() }},
	{"stranger signs up with a password", func(w *accountWorld) bool {
		return w.untilSuccess("stranger-signup", w.signUp(w.stranger, strangePass))
	}},
	{"stranger signs in with a provider reporting the address unverified", func(w *accountWorld) bool {
		return w.untilSuccess("stranger-oidc", w.providerSignIn(w.stranger, "oidc", "stranger-oidc", false))
	}},
	{"stranger asks for verification mail", func(w *accountWorld) bool { return w.askVerification(w.stranger) }},
	{"stranger plants their session in the owner's browser", func(w *accountWorld) bool { return w.plant() }},
	{"owner changes or adds the password through their session", func(w *accountWorld) bool {
		return w.untilSuccess("owner-change", w.changePassword(w.owner, ownerPass3))
	}},
	{"stranger changes or adds the password through their session", func(w *accountWorld) bool {
		return w.untilSuccess("stranger-change", w.changePassword(w.stranger, strangePass2))
	}},
	{"owner deletes their account", func(w *accountWorld) bool { return w.deleteAccount(w.owner) }},
	{"stranger deletes their account", func(w *accountWorld) bool { return w.deleteAccount(w.stranger) }},
	{"stranger signs up with a password at an address of their own", func(w *accountWorld) bool {
		return w.untilSuccess("stranger-own", w.signUpAt(w.stranger, strangerOwn, strangePass))
	}},
	{"stranger asks to move their own address's account to the address", func(w *accountWorld) bool { return w.askChange() }},
	{"stranger adds the unverified provider to their own address's account", func(w *accountWorld) bool {
		return w.untilSuccess("stranger-link", w.linkProvider(w.stranger, "oidc", "stranger-oidc", false))
	}},
	{"owner adds google (verified) to their account", func(w *accountWorld) bool {
		return w.untilSuccess("owner-link", w.linkProvider(w.owner, "google", "owner-g", true))
	}},
	{"stranger adds a passkey through their session", func(w *accountWorld) bool {
		return w.untilSuccess("stranger-passkey", w.addPasskey(w.stranger))
	}},
	{"stranger adds sign-in codes at an address of their own through their session", func(w *accountWorld) bool {
		return w.untilSuccess("stranger-code", w.linkCode(w.stranger))
	}},
}

// accountDepth is the longest history tried: 4 steps, 3 in race-enabled
// runs, ten times slower. AUTH_ACCOUNT_DEPTH asks for more: 5 steps of
// 18 actions were about 380,000 histories, ten minutes on two cores;
// the 20 of now are more.
var accountDepth = 4

func init() {
	if raceEnabled {
		accountDepth = 3
	}
	if d, err := strconv.Atoi(os.Getenv("AUTH_ACCOUNT_DEPTH")); err == nil && d > 0 {
		accountDepth = d
	}
}

func TestAccountProperties(t *testing.T) {
	for _, linking := range []bool{false, true} {
		t.Run("linking="+strconv.FormatBool(linking), func(t *testing.T) {
			t.Parallel()
			var e accountEnumeration
			e.walk(t, linking, nil)
			t.Logf("linking %v: %d sequences of up to %d steps, %d violating (%d takeover, %d lockout)",
				linking, e.sequences.Load(), accountDepth, e.violating.Load(), e.takeover.Load(), e.lockout.Load())
			for _, v := range e.examples() {
				t.Errorf("%s", v)
			}
		})
	}
}

type accountEnumeration struct {
	sequences, violating, takeover, lockout atomic.Int64

	mu    sync.Mutex
	first map[string]string // the shortest violating history of each kind of violation
}

func (e *accountEnumeration) walk(t *testing.T, linking bool, prefix []int) {
	for i := range accountActions {
		seq := append(slices.Clone(prefix), i)
		w := newAccountWorld(t, linking)
		ok := true
		for _, a := range seq {
			if ok = accountActions[a].do(w); !ok {
				break
			}
			w.observe()
		}
		if !ok {
			w.a.Close(context.Background())
			continue
		}
		w.recover()
		// Tens of thousands of worlds: each lets go of its server as
		// soon as it is done.
		w.a.Close(context.Background())
		e.sequences.Add(1)
		if len(w.violations) > 0 {
			e.violating.Add(1)
			if w.tookOver {
				e.takeover.Add(1)
			}
			if w.lockedOut {
				e.lockout.Add(1)
			}
			e.record(seq, w.violations)
		}
		if len(seq) < accountDepth {
			e.walk(t, linking, seq)
		}
	}
}

func (e *accountEnumeration) record(seq []int, violations []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.first == nil {
		e.first = map[string]string{}
	}
	names := make([]string, len(seq))
	for i, a := range seq {
		names[i] = accountActions[a].name
	}
	for _, v := range violations {
		kind := v
		if i := strings.Index(v, ":"); i > 0 {
			kind = v[:i]
		}
		if old, ok := e.first[kind]; !ok || strings.Count(old, " -> ") > len(seq)-1 {
			e.first[kind] = v + "\n\tafter: " + strings.Join(names, " -> ")
		}
	}
}

func (e *accountEnumeration) examples() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, v := range e.first {
		out = append(out, v)
	}
	slices.Sort(out)
	return out
}

// A person is one of the two actors: what they hold and know.
type person struct {
	name       string
	sessions   []accountTokens           // sessions they keep, refreshed at every step
	passwords  []string                  // passwords they know for the address
	identities []string                  // provider identities that signed in, as "provider/subject"
	ownUser    string                    // the user of the stranger's sign-up at an address of their own
	keys       []*authtest.Authenticator // passkeys added, one authenticator each
	codes      bool                      // codes to strangerOwn were added to a user
	reached    map[string]bool           // users reached at any step so far
}

type accountTokens struct{ access, refresh string }

type accountWorld struct {
	t        *testing.T
	linking  bool
	a        *auth.Auth
	st       store.Store
	idp      map[string]*scriptedProvider
	mail     *accountMailer
	owner    *person
	stranger *person
	done     map[string]bool
	opened   int // verification mails the owner has opened, oldest first
	// planted is a session of the stranger's that the owner's browser
	// carries (a shared device, a cookie set from a sibling subdomain):
	// it goes with the links the owner opens, and opens nothing for the
	// owner otherwise.
	planted *accountTokens

	violations          []string
	tookOver, lockedOut bool
}

func newAccountWorld(t *testing.T, linking bool) *accountWorld {
	t.Helper()
	w := &accountWorld{
		t: t, linking: linking, st: memstore.New(), mail: newAccountMailer(),
		idp:   map[string]*scriptedProvider{},
		owner: &person{name: "owner", reached: map[string]bool{}}, stranger: &person{name: "stranger", reached: map[string]bool{}},
		done: map[string]bool{},
	}
	var providers []provider.Provider
	for _, id := range []string{"google", "facebook", "oidc"} {
		w.idp[id] = &scriptedProvider{id: id, codes: map[string]provider.Identity{}}
		providers = append(providers, w.idp[id])
	}
	lots := auth.Rate{Burst: 1 << 20, Every: time.Hour}
	cfg := auth.Config{
		Store:          w.st,
		AppURL:         appURL,
		AccountLinking: linking,
		Logger:         slog.New(slog.DiscardHandler),
		RateLimits: auth.RateLimits{
			SignInFailures: lots, ClientSignInFailures: lots, AccountSignInFailures: lots, ResetEmails: lots,
			ClientResetRequests: lots, ClientNewPasswords: lots, ClientEmailChecks: lots, SessionRefreshes: lots,
			ClientThirdPartySignIns: lots, VerificationEmails: lots, ClientPasskeyCeremonies: lots,
		},
		Passkeys: passkey.New(passkey.Config{}),
	}
	cfg.RateLimits.PasswordlessSends, cfg.RateLimits.ClientPasswordlessSends, cfg.RateLimits.PasswordlessFailures = lots, lots, lots
	cfg.Passwordless.Flow = passwordless.Code
	cfg.EmailPassword.Hashing = emailpassword.Hashing{Memory: 64, Iterations: 1, Parallelism: 1}
	cfg.EmailPassword.InsecureWeakHashing = true
	cfg.Email.Mailer = w.mail
	cfg.EmailVerification.Mode = emailverification.Optional
	cfg.ThirdParty.Providers = providers
	cfg.BeforeDeleteUser = func(context.Context, string) error { return nil }
	cfg.EmailChange.Enabled = true
	a, err := auth.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	w.a = a
	return w
}

// untilSuccess runs a sign-up or sign-in step unless it succeeded
// before: once in, the person signs in again at every step anyway.
func (w *accountWorld) untilSuccess(key string, attempt func() bool) bool {
	if w.done[key] {
		return false
	}
	w.done[key] = attempt()
	return true
}

// send serves one request in header mode, with bearer as the
// Authorization, and decodes the answer.
func (w *accountWorld) send(method, path, rid, bearer string, body any) accountReply {
	var r *http.Request
	if body != nil {
		b, _ := json.Marshal(body)
		r = httptest.NewRequest(method, "https://api.example/auth"+path, strings.NewReader(string(b)))
		r.Header.Set("Content-Type", "application/json")
	} else {
		r = httptest.NewRequest(method, "https://api.example/auth"+path, nil)
	}
	r.Header.Set("rid", rid)
	r.Header.Set("st-auth-mode", "header")
	if bearer != "" {
		r.Header.Set("Authorization", "Bearer "+bearer)
	}
	rec := httptest.NewRecorder()
	w.a.ServeHTTP(rec, r)
	res := accountReply{code: rec.Code, header: rec.Header()}
	_ = json.Unmarshal(rec.Body.Bytes(), &res.json)
	res.status, _ = res.json["status"].(string)
	if res.code >= 500 {
		w.violate("server error: %s %s answered %d %s", method, path, rec.Code, rec.Body)
	}
	return res
}

type accountReply struct {
	code   int
	header http.Header
	json   map[string]any
	status string
}

// signedIn returns the user id and tokens of a successful sign-in or
// refresh, or "" if it was not one.
func (r accountReply) signedIn() (string, accountTokens) {
	tok := accountTokens{r.header.Get("st-access-token"), r.header.Get("st-refresh-token")}
	if r.code != http.StatusOK || tok.access == "" || tok.refresh == "" {
		return "", tok
	}
	ft, err := base64.StdEncoding.DecodeString(r.header.Get("front-token"))
	var front struct {
		UID string `json:"uid"`
	}
	if err != nil || json.Unmarshal(ft, &front) != nil || front.UID == "" {
		return "", tok
	}
	return front.UID, tok
}

func credentials(email, password string) map[string]any {
	return map[string]any{"formFields": []map[string]any{{"id": "email", "value": email}, {"id": "password", "value": password}}}
}

// signUp returns the sign-up step at the address; it reports whether it
// succeeded.
func (w *accountWorld) signUp(p *person, password string) func() bool {
	return w.signUpAt(p, inbox, password)
}

// signUpAt returns the sign-up step at email.
func (w *accountWorld) signUpAt(p *person, email, password string) func() bool {
	return func() bool {
		res := w.send("POST", "/signup", "emailpassword", "", credentials(email, password))
		uid, tok := res.signedIn()
		if uid != "" {
			p.sessions = append(p.sessions, tok)
			p.passwords = append(p.passwords, password)
			if email != inbox {
				p.ownUser = uid
			}
		}
		return uid != ""
	}
}

// askChange asks, with the session of the stranger's account at their
// own address, to move it to the owner's address, once: the link goes to
// the owner's inbox.
func (w *accountWorld) askChange() bool {
	if w.stranger.ownUser == "" || w.done["stranger-ask-change"] {
		return false
	}
	for _, s := range w.stranger.sessions {
		if userOfToken(s.access) == w.stranger.ownUser {
			w.done["stranger-ask-change"] = true
			before := w.mail.count()
			res := w.send("POST", "/user/email/change", "emailchange", s.access, map[string]any{"email": inbox})
			if res.status == "OK" && w.mail.waitForLink(before, "change-email") == nil {
				w.t.Fatalf("an email change link was promised and not sent")
			}
			return true
		}
	}
	return false
}

// userOfToken is the user an access token names (its sub), unchecked.
func userOfToken(access string) string {
	parts := strings.Split(access, ".")
	if len(parts) != 3 {
		return ""
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	var claims struct {
		Sub string `json:"sub"`
	}
	if err != nil || json.Unmarshal(payload, &claims) != nil {
		return ""
	}
	return claims.Sub
}

// providerSignIn returns the step of signing in at a provider whose
// identity subject reports the address, as the SDK and a browser do; it
// reports whether it succeeded.
func (w *accountWorld) providerSignIn(p *person, id, subject string, verified bool) func() bool {
	return func() bool {
		uid, tok := w.providerAttempt(id, subject, verified)
		if uid != "" {
			p.sessions = append(p.sessions, tok)
			p.identities = append(p.identities, id+"/"+subject+"/"+strconv.FormatBool(verified))
		}
		return uid != ""
	}
}

func (w *accountWorld) providerAttempt(id, subject string, verified bool) (string, accountTokens) {
	res := w.providerFlow(id, subject, verified, "")
	return res.signedIn()
}

// linkProvider returns the step of adding the provider identity to the
// user of the person's session (the stranger's: of their own address's
// account), as the SDKs do with shouldTryLinkingWithSessionUser; it
// reports whether it was added.
func (w *accountWorld) linkProvider(p *person, id, subject string, verified bool) func() bool {
	return func() bool {
		var session *accountTokens
		for i, s := range p.sessions {
			if p.ownUser == "" || userOfToken(s.access) == p.ownUser {
				session = &p.sessions[i]
			}
		}
		if session == nil {
			return false
		}
		res := w.providerFlow(id, subject, verified, session.access)
		if res.status != "OK" {
			return false
		}
		p.identities = append(p.identities, id+"/"+subject+"/"+strconv.FormatBool(verified))
		return true
	}
}

// providerFlow runs the provider's sign-in, with bearer's session and
// shouldTryLinkingWithSessionUser true if bearer is set.
func (w *accountWorld) providerFlow(id, subject string, verified bool, bearer string) accountReply {
	redirect := appURL + "/auth/callback/" + id
	q := url.Values{"thirdPartyId": {id}, "redirectURIOnProviderDashboard": {redirect}}
	res := w.send("GET", "/authorisationurl?"+q.Encode(), "thirdparty", "", nil)
	verifier, _ := res.json["pkceCodeVerifier"].(string)
	code := w.idp[id].issue(provider.Identity{Subject: subject, Email: inbox, EmailVerified: verified})
	body := map[string]any{
		"thirdPartyId": id,
		"redirectURIInfo": map[string]any{
			"redirectURIOnProviderDashboard": redirect,
			"redirectURIQueryParams":         map[string]string{"code": code},
			"pkceCodeVerifier":               verifier,
		},
	}
	if bearer != "" {
		body["shouldTryLinkingWithSessionUser"] = true
	}
	return w.send("POST", "/signinup", "thirdparty", bearer, body)
}

// askVerification asks for a verification email with the person's newest
// session, and waits for it.
func (w *accountWorld) askVerification(p *person) bool {
	if len(p.sessions) == 0 {
		return false
	}
	before := w.mail.count()
	res := w.send("POST", "/user/email/verify/token", "emailverification", p.sessions[len(p.sessions)-1].access, map[string]any{})
	if res.status != "OK" {
		return false
	}
	if w.mail.waitForLink(before, "verify-email") == nil {
		w.t.Fatalf("a verification email was promised and not sent")
	}
	return true
}

var tokenInLink = regexp.MustCompile(`https?://[^\s"<>]+/(verify-email|reset-password|change-email|undo-email-change)\?token=([A-Za-z0-9_-]+)`)

// openVerification opens the newest verification or email change mail in
// the owner's inbox that the owner has not opened, in the owner's
// browser: with the owner's newest session, if any.
func (w *accountWorld) openVerification() bool {
	msgs := w.mail.all()
	newest := -1
	for i := len(msgs) - 1; i >= w.opened; i-- {
		m := tokenInLink.FindStringSubmatch(msgs[i].Text)
		if m != nil && msgs[i].To.Address == inbox && (m[1] == "verify-email" || m[1] == "change-email") {
			newest = i
			break
		}
	}
	if newest < 0 {
		return false
	}
	w.opened = newest + 1
	tok := tokenInLink.FindStringSubmatch(msgs[newest].Text)[2]
	bearer := ""
	if s := w.owner.sessions; len(s) > 0 {
		bearer = s[len(s)-1].access
	}
	if w.planted != nil {
		bearer = w.planted.access
	}
	if tokenInLink.FindStringSubmatch(msgs[newest].Text)[1] == "change-email" {
		w.send("POST", "/user/email/change/verify", "emailchange", bearer, map[string]any{"token": tok})
		return true
	}
	w.send("POST", "/user/email/verify", "emailverification", bearer, map[string]any{"method": "token", "token": tok})
	return true
}

// plant puts the stranger's newest session in the owner's browser, once.
func (w *accountWorld) plant() bool {
	s := w.stranger.sessions
	if w.planted != nil || len(s) == 0 {
		return false
	}
	t := s[len(s)-1]
	w.planted = &t
	return true
}

// changePassword returns the step of changing the password with the
// person's newest session, from the last one they know, or of adding one
// where they know none (which needs the session's user to own the
// address). The session goes on with the answer's tokens.
func (w *accountWorld) changePassword(p *person, password string) func() bool {
	return func() bool {
		if len(p.sessions) == 0 {
			return false
		}
		fields := []map[string]any{{"id": "newPassword", "value": password}}
		if n := len(p.passwords); n > 0 {
			fields = append(fields, map[string]any{"id": "oldPassword", "value": p.passwords[n-1]})
		}
		last := len(p.sessions) - 1
		res := w.send("POST", "/user/password/change", "emailpassword", p.sessions[last].access, map[string]any{"formFields": fields})
		if uid, tok := res.signedIn(); uid != "" {
			p.sessions[last] = tok
			p.passwords = append(p.passwords, password)
		}
		return true
	}
}

// deleteAccount deletes the user of the person's newest session, once.
func (w *accountWorld) deleteAccount(p *person) bool {
	key := p.name + "-delete"
	if len(p.sessions) == 0 || w.done[key] {
		return false
	}
	w.done[key] = true
	last := len(p.sessions) - 1
	if res := w.send("POST", "/user/delete", "session", p.sessions[last].access, nil); res.status == "OK" {
		p.sessions = p.sessions[:last]
	}
	return true
}

// reset asks for a reset email for the address and, if one comes, sets a
// new password with it. It could do nothing if no email comes.
func (w *accountWorld) reset() bool {
	before := w.mail.count()
	w.send("POST", "/user/password/reset/token", "emailpassword", "",
		map[string]any{"formFields": []map[string]any{{"id": "email", "value": inbox}}})
	if _, err := w.st.Login(context.Background(), store.EmailPasswordKey(inbox)); err != nil {
		return false
	}
	m := w.mail.waitForLink(before, "reset-password")
	if m == nil {
		w.t.Fatalf("a reset email was due and did not come")
	}
	res := w.send("POST", "/user/password/reset", "emailpassword", "", map[string]any{
		"method": "token", "token": m[2], "formFields": []map[string]any{{"id": "password", "value": resetPass}},
	})
	if res.status == "OK" {
		w.owner.passwords = append(w.owner.passwords, resetPass)
	}
	return true
}

// addPasskey returns the step of adding a passkey through the person's
// newest session, for the address of its user's first login with one, as
// the SDKs' account page does.
func (w *accountWorld) addPasskey(p *person) func() bool {
	return func() bool {
		if len(p.sessions) == 0 {
			return false
		}
		s := p.sessions[len(p.sessions)-1]
		logins, err := w.st.Logins(context.Background(), userOfToken(s.access))
		if err != nil {
			return false
		}
		i := slices.IndexFunc(logins, func(l store.Login) bool { return l.Email != "" })
		if i < 0 {
			return false
		}
		key := authtest.NewAuthenticator(appURL)
		opts := w.send("POST", "/webauthn/options/register", "webauthn", s.access, map[string]any{"email": logins[i].Email})
		raw, _ := json.Marshal(opts.json)
		cred, err := key.Register(raw)
		if err != nil {
			return false
		}
		res := w.send("POST", "/webauthn/credential", "webauthn", s.access, map[string]any{
			"webauthnGeneratedOptionsId": opts.json["webauthnGeneratedOptionsId"], "credential": json.RawMessage(cred),
			"recipeUserId": logins[i].ID,
		})
		if res.status != "OK" {
			return false
		}
		p.keys = append(p.keys, key)
		return true
	}
}

// linkCode returns the step of adding sign-in codes at strangerOwn, an
// inbox the person reads, to the user of their newest session, as the
// SDKs do with shouldTryLinkingWithSessionUser.
func (w *accountWorld) linkCode(p *person) func() bool {
	return func() bool {
		if len(p.sessions) == 0 {
			return false
		}
		res := w.codeFlow(p.sessions[len(p.sessions)-1].access)
		if res.status != "OK" {
			return false
		}
		p.codes = true
		return true
	}
}

// codeFlow asks for a code at strangerOwn and consumes it, with bearer's
// session and shouldTryLinkingWithSessionUser true if bearer is set.
func (w *accountWorld) codeFlow(bearer string) accountReply {
	body := map[string]any{"email": strangerOwn}
	if bearer != "" {
		body["shouldTryLinkingWithSessionUser"] = true
	}
	before := w.mail.count()
	flow := w.send("POST", "/signinup/code", "passwordless", bearer, body)
	if flow.status != "OK" {
		return flow
	}
	code := authtest.PasswordlessCode(w.t, w.mail.waitFor(before, strangerOwn, signInCode))
	body = map[string]any{"deviceId": flow.json["deviceId"], "preAuthSessionId": flow.json["preAuthSessionId"], "userInputCode": code}
	if bearer != "" {
		body["shouldTryLinkingWithSessionUser"] = true
	}
	return w.send("POST", "/signinup/code/consume", "passwordless", bearer, body)
}

// passkeySignIn signs in with key, and returns the user it opens, or "".
func (w *accountWorld) passkeySignIn(key *authtest.Authenticator) string {
	opts := w.send("POST", "/webauthn/options/signin", "webauthn", "", nil)
	raw, _ := json.Marshal(opts.json)
	cred, err := key.Assert(raw)
	if err != nil {
		return ""
	}
	uid, _ := w.send("POST", "/webauthn/signin", "webauthn", "", map[string]any{
		"webauthnGeneratedOptionsId": opts.json["webauthnGeneratedOptionsId"], "credential": json.RawMessage(cred),
	}).signedIn()
	return uid
}

// reach is every user p gets into now: through each session they keep
// (refreshed, and dropped once it no longer refreshes), each password
// they know and each provider identity that signed in before.
func (w *accountWorld) reach(p *person) map[string]bool {
	users := map[string]bool{}
	var kept []accountTokens
	for _, s := range p.sessions {
		uid, tok := w.send("POST", "/session/refresh", "session", s.refresh, nil).signedIn()
		if uid != "" {
			users[uid] = true
			kept = append(kept, tok)
		}
	}
	p.sessions = kept
	addresses := []string{inbox}
	if p.ownUser != "" {
		addresses = append(addresses, strangerOwn)
	}
	for _, pw := range slices.Compact(slices.Clone(p.passwords)) {
		for _, a := range addresses {
			if uid, _ := w.send("POST", "/signin", "emailpassword", "", credentials(a, pw)).signedIn(); uid != "" {
				users[uid] = true
			}
		}
	}
	for _, key := range p.keys {
		if uid := w.passkeySignIn(key); uid != "" {
			users[uid] = true
		}
	}
	if p.codes {
		if uid, _ := w.codeFlow("").signedIn(); uid != "" {
			users[uid] = true
		}
	}
	for _, ident := range p.identities {
		parts := strings.Split(ident, "/")
		if uid, _ := w.providerAttempt(parts[0], parts[1], parts[2] == "true"); uid != "" {
			users[uid] = true
		}
	}
	return users
}

// observe checks the takeover promise after a step: no user the stranger
// gets into is one the owner gets into now or got into before.
func (w *accountWorld) observe() {
	ownerNow := w.reach(w.owner)
	for uid := range ownerNow {
		w.owner.reached[uid] = true
	}
	for uid := range w.reach(w.stranger) {
		w.stranger.reached[uid] = true
		if w.owner.reached[uid] {
			w.tookOver = true
			w.violate("takeover: the stranger gets into user %s, which the owner uses", uid)
		}
	}
}

// recover is what the owner does to prove the inbox and get in: sign in
// with a provider that verified the address, and if that is refused,
// reset the password. Then the owner must be in a user with the address
// and, under account linking, nothing the stranger holds may open a user
// with the address any more.
func (w *accountWorld) recover() {
	in := func() bool {
		for uid := range w.reach(w.owner) {
			if w.hasAddress(uid) {
				return true
			}
		}
		return false
	}
	if !w.providerSignIn(w.owner, "google", "owner-g", true)() {
		w.reset()
	}
	if !in() {
		w.lockedOut = true
		w.violate("lockout: neither a verified provider nor a reset gets the owner into an account with the address")
	}
	w.observe()
	if !w.linking {
		return
	}
	for uid := range w.reach(w.stranger) {
		if w.hasAddress(uid) {
			w.lockedOut = true
			w.violate("lockout: after the owner proved the inbox, the stranger still gets into user %s, which has the address", uid)
		}
	}
}

func (w *accountWorld) hasAddress(uid string) bool {
	logins, err := w.st.Logins(context.Background(), uid)
	if err != nil {
		w.t.Fatal(err)
	}
	for _, l := range logins {
		if l.Email == inbox {
			return true
		}
	}
	return false
}

func (w *accountWorld) violate(format string, args ...any) {
	w.violations = append(w.violations, fmt.Sprintf(format, args...))
}

// scriptedProvider is a provider whose codes the test issues: each code
// names the identity it signs in, once.
type scriptedProvider struct {
	id    string
	mu    sync.Mutex
	next  int
	codes map[string]provider.Identity
}

func (p *scriptedProvider) ID() string   { return p.id }
func (p *scriptedProvider) Name() string { return p.id }

func (p *scriptedProvider) AuthURL(_ context.Context, r provider.AuthRequest) (string, error) {
	return "https://idp.example/" + p.id + "/authorize?redirect_uri=" + url.QueryEscape(r.RedirectURI), nil
}

func (p *scriptedProvider) Exchange(_ context.Context, r provider.ExchangeRequest) (provider.Identity, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	ident, ok := p.codes[r.Code]
	if !ok {
		return provider.Identity{}, fmt.Errorf("%w: unknown code", provider.ErrExchange)
	}
	delete(p.codes, r.Code)
	return ident, nil
}

func (p *scriptedProvider) issue(ident provider.Identity) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.next++
	code := p.id + "-code-" + strconv.Itoa(p.next)
	p.codes[code] = ident
	return code
}

// accountMailer keeps every message, and wakes those waiting for one.
type accountMailer struct {
	mu      sync.Mutex
	msgs    []mailer.Message
	arrived chan struct{}
}

func newAccountMailer() *accountMailer { return &accountMailer{arrived: make(chan struct{}, 64)} }

func (m *accountMailer) Send(_ context.Context, msg mailer.Message) error {
	m.mu.Lock()
	m.msgs = append(m.msgs, msg)
	m.mu.Unlock()
	select {
	case m.arrived <- struct{}{}:
	default:
	}
	return nil
}

func (m *accountMailer) all() []mailer.Message {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.msgs)
}

func (m *accountMailer) count() int { return len(m.all()) }

// waitForLink waits, for at most a second, for a message after the
// first skip with a link to page ("verify-email", "reset-password"), and
// returns the link's match of tokenInLink, or nil. Other mail (a
// password change's notice) may come between, in any order.
// signInCode is a passwordless email's code, on a line of its own.
var signInCode = regexp.MustCompile(`(?m)^\s*[0-9]{6}\s*$`)

// waitFor returns the first message to the address after the first skip
// whose text matches, which the outbox sends after the answer.
func (m *accountMailer) waitFor(skip int, to string, text *regexp.Regexp) mailer.Message {
	deadline := time.After(5 * time.Second)
	for {
		for _, msg := range m.all()[skip:] {
			if msg.To.Address == to && text.MatchString(msg.Text) {
				return msg
			}
		}
		select {
		case <-m.arrived:
		case <-deadline:
			return mailer.Message{}
		}
	}
}

func (m *accountMailer) waitForLink(skip int, page string) []string {
	deadline := time.After(time.Second)
	for {
		for _, msg := range m.all()[skip:] {
			if match := tokenInLink.FindStringSubmatch(msg.Text); match != nil && match[1] == page {
				return match
			}
		}
		select {
		case <-m.arrived:
		case <-deadline:
			return nil
		}
	}
}
