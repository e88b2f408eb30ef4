package auth_test

// Passkeys over HTTP, as the SDKs and a browser see them, with authtest's
// software authenticator in the browser's place: sign-up, sign-in, a
// second passkey, the list and removal, in every transfer mode; replays,
// a challenge answered twice, counters that go back, synced passkeys,
// other sites and origins, unknown credentials, options of the wrong
// ceremony or expired, a taken email, the last login method; malformed
// credentials; concurrent sign-ins with one assertion and with one
// counter value; and account linking. Recovery by a mailed link is in
// passkey_recovery_test.go.

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/passkey"
	"github.com/latchkit/auth/store"
	"github.com/latchkit/auth/store/memstore"
)

// ---- the helpers of the passkey tests ----

// pkApp is the site passkey servers are for: WebAuthn needs a domain
// name, and the test server's own URL is an IP address.
const pkApp = "https://app.example.com"

// pkServer starts a server with passkeys on, for the site pkApp unless
// cfg names another, and with an allowance of ceremonies no test meets
// unless cfg sets one.
func pkServer(t testing.TB, cfg auth.Config) *authtest.Server {
	t.Helper()
	if cfg.AppURL == "" {
		cfg.AppURL = pkApp
	}
	if cfg.Passkeys == nil {
		cfg.Passkeys = passkey.New(passkey.Config{})
	}
	if cfg.RateLimits.ClientPasskeyCeremonies == (auth.Rate{}) {
		cfg.RateLimits.ClientPasskeyCeremonies = auth.Rate{Burst: 1 << 30, Every: time.Nanosecond}
	}
	return authtest.NewServer(t, cfg)
}

// pkPost posts body to a passkey endpoint with c, as the SDKs do (rid
// webauthn), with c's session, keeping what the answer hands out.
func pkPost(c *authtest.Client, path string, body any) *authtest.Response {
	saved, had := c.Header["Rid"]
	c.Header.Set("rid", "webauthn")
	defer func() {
		if had {
			c.Header["Rid"] = saved
		} else {
			c.Header.Del("Rid")
		}
	}()
	return c.Do(http.MethodPost, "/auth"+path, body)
}

// pkOptions is the options answer of a ceremony: its id and the body an
// Authenticator takes.
type pkOptions struct {
	id   string
	body []byte
}

// pkOptionsOf reads an OK options answer.
func pkOptionsOf(t testing.TB, what string, res *authtest.Response) pkOptions {
	t.Helper()
	id, _ := res.JSON["webauthnGeneratedOptionsId"].(string)
	if res.StatusCode != http.StatusOK || res.Status != "OK" || id == "" {
		t.Fatalf("%s: %d %s, want OK with a webauthnGeneratedOptionsId", what, res.StatusCode, res.Body)
	}
	wantNoTokens(t, res)
	return pkOptions{id: id, body: res.Body}
}

// pkSignInOptions asks for sign-in options with c.
func pkSignInOptions(t testing.TB, c *authtest.Client) pkOptions {
	t.Helper()
	return pkOptionsOf(t, "webauthn/options/signin", c.PasskeySignInOptions())
}

// pkRegisterOptions asks for registration options for email with c.
func pkRegisterOptions(t testing.TB, c *authtest.Client, email string) pkOptions {
	t.Helper()
	return pkOptionsOf(t, "webauthn/options/register for "+email, c.PasskeyRegisterOptions(email))
}

// pkRecoveryOptions asks for registration options with a recovery
// token, as the SDKs' recovery page does.
func pkRecoveryOptions(c *authtest.Client, token string) *authtest.Response {
	return pkPost(c, "/webauthn/options/register", map[string]string{"recoverAccountToken": token})
}

// pkAssert has a sign options o.
func pkAssert(t testing.TB, a *authtest.Authenticator, o pkOptions, opts ...authtest.CeremonyOption) []byte {
	t.Helper()
	cred, err := a.Assert(o.body, opts...)
	if err != nil {
		t.Fatalf("the authenticator's assertion: %v", err)
	}
	return cred
}

// pkRegister has a register a credential for options o.
func pkRegister(t testing.TB, a *authtest.Authenticator, o pkOptions, opts ...authtest.CeremonyOption) []byte {
	t.Helper()
	cred, err := a.Register(o.body, opts...)
	if err != nil {
		t.Fatalf("the authenticator's registration: %v", err)
	}
	return cred
}

// pkWire is the user object of a passkey answer, with what the tests
// read of it.
type pkWire struct {
	ID            string   `json:"id"`
	IsPrimaryUser bool     `json:"isPrimaryUser"`
	TenantIDs     []string `json:"tenantIds"`
	Emails        []string `json:"emails"`
	PhoneNumbers  []string `json:"phoneNumbers"`
	ThirdParty    []any    `json:"thirdParty"`
	WebAuthn      *struct {
		CredentialIDs []string `json:"credentialIds"`
	} `json:"webauthn"`
	LoginMethods []pkMethod `json:"loginMethods"`
	TimeJoined   int64      `json:"timeJoined"`
}

// pkMethod is a login method of a user object.
type pkMethod struct {
	RecipeID     string   `json:"recipeId"`
	RecipeUserID string   `json:"recipeUserId"`
	TenantIDs    []string `json:"tenantIds"`
	Email        *string  `json:"email"`
	Verified     *bool    `json:"verified"`
	TimeJoined   int64    `json:"timeJoined"`
	WebAuthn     *struct {
		CredentialIDs []string `json:"credentialIds"`
	} `json:"webauthn"`
}

// pkSignedIn checks an OK answer of a passkey sign-up or sign-in: the
// keys the SDKs read (no createdNewRecipeUser, which node does not send
// either), a session in c's mode, and returns the user object.
func pkSignedIn(t testing.TB, what string, s *authtest.Server, c *authtest.Client, res *authtest.Response) pkWire {
	t.Helper()
	if res.StatusCode != http.StatusOK || res.Status != "OK" {
		t.Fatalf("%s: %d %s, want OK", what, res.StatusCode, res.Body)
	}
	if _, ok := res.JSON["createdNewRecipeUser"]; ok {
		t.Errorf("%s: createdNewRecipeUser in %s", what, res.Body)
	}
	var body struct{ User pkWire }
	if err := json.Unmarshal(res.Body, &body); err != nil {
		t.Fatalf("%s: %v in %s", what, err, res.Body)
	}
	// A session names the user in sub and the login method in rsub: the
	// first login's id is the user's, which wantTokens checks in full.
	ft := decodeFrontToken(t, res.Header.Get("Front-Token"))
	rsub, _ := ft.UP["rsub"].(string)
	if rsub == body.User.ID {
		wantTokens(t, s, res, c.Mode, body.User.ID)
	} else if !res.IssuedTokens() || ft.UID != body.User.ID || ft.UP["sub"] != body.User.ID ||
		!slices.ContainsFunc(body.User.LoginMethods, func(m pkMethod) bool { return m.RecipeUserID == rsub }) {
		t.Errorf("%s: front-token %+v, want a session of user %s by one of its login methods", what, ft, body.User.ID)
	}
	return body.User
}

// pkWantUser checks a user object: one user, a passkey login method for
// each id in creds, the first with email, unverified unless verified, the
// others without one; user.webauthn.credentialIds all of them, in order.
func pkWantUser(t testing.TB, what string, u pkWire, email string, verified bool, creds ...string) {
	t.Helper()
	if u.ID == "" || !slices.Equal(u.TenantIDs, []string{"public"}) || u.TimeJoined == 0 ||
		!slices.Equal(u.Emails, []string{email}) || len(u.PhoneNumbers) != 0 || len(u.ThirdParty) != 0 {
		t.Errorf("%s: user %+v, want one with the email %s alone", what, u, email)
	}
	if u.WebAuthn == nil || !slices.Equal(u.WebAuthn.CredentialIDs, creds) {
		t.Errorf("%s: user.webauthn %+v, want credentialIds %q", what, u.WebAuthn, creds)
	}
	if len(u.LoginMethods) != len(creds) {
		t.Fatalf("%s: %d login methods, want %d: %+v", what, len(u.LoginMethods), len(creds), u.LoginMethods)
	}
	for i, m := range u.LoginMethods {
		wantEmail := ""
		if i == 0 {
			wantEmail = email
		}
		got := ""
		if m.Email != nil {
			got = *m.Email
		}
		switch {
		case m.RecipeID != "webauthn" || m.RecipeUserID == "" || !slices.Equal(m.TenantIDs, []string{"public"}) || m.TimeJoined == 0:
			t.Errorf("%s: login method %d %+v, want a webauthn one", what, i, m)
		case i == 0 && m.RecipeUserID != u.ID:
			t.Errorf("%s: the first login method's recipeUserId %s, want the user's id %s", what, m.RecipeUserID, u.ID)
		case got != wantEmail || (m.Email != nil) != (wantEmail != ""):
			t.Errorf("%s: login method %d has the email %v, want %q", what, i, m.Email, wantEmail)
		case m.Verified == nil || *m.Verified != (verified && i == 0):
			t.Errorf("%s: login method %d verified %v, want %v", what, i, m.Verified, verified && i == 0)
		case m.WebAuthn == nil || !slices.Equal(m.WebAuthn.CredentialIDs, []string{creds[i]}):
			t.Errorf("%s: login method %d webauthn %+v, want credentialIds [%s]", what, i, m.WebAuthn, creds[i])
		}
	}
}

// pkRefused checks a refusal byte for byte, and that it started no
// session.
func pkRefused(t testing.TB, what string, res *authtest.Response, status string) {
	t.Helper()
	wantReply(t, what, res.StatusCode, res.Body, http.StatusOK, `{"status":"`+status+`"}`)
	if res.IssuedTokens() {
		t.Errorf("%s: the refusal issued tokens", what)
	}
}

// pkCredID is the webauthnCredentialId of the newest credential of a.
func pkCredID(a *authtest.Authenticator) string {
	creds := a.Credentials()
	return creds[len(creds)-1].EncodedID()
}

// pkSignUp signs a new passkey user up for email with a new client in
// mode m and a new authenticator, and returns them with the user.
func pkSignUp(t testing.TB, s *authtest.Server, m authtest.Mode, email string) (*authtest.Client, *authtest.Authenticator, pkWire) {
	t.Helper()
	c, a := s.NewClient(m), s.NewAuthenticator()
	u := pkSignedIn(t, "passkey sign-up of "+email, s, c, c.SignUpWithPasskey(a, email))
	return c, a, u
}

// pkLogin is the stored login of a passkey.
func pkLogin(t testing.TB, st store.Store, credID string) store.Login {
	t.Helper()
	l, err := st.Login(t.Context(), store.WebAuthnKey("app.example.com", credID))
	if err != nil {
		t.Fatalf("the login of passkey %s: %v", credID, err)
	}
	return l
}

// pkCounter is the sign counter a stored passkey has.
func pkCounter(t testing.TB, st store.Store, credID string) uint32 {
	t.Helper()
	var m struct {
		Credential struct {
			Authenticator struct{ SignCount uint32 }
		}
	}
	if err := json.Unmarshal(pkLogin(t, st, credID).Material, &m); err != nil {
		t.Fatalf("the material of passkey %s: %v", credID, err)
	}
	return m.Credential.Authenticator.SignCount
}

// ---- the flows, in every mode ----

// TestPasskeyEveryMode: in each transfer mode, a passkey sign-up starts a
// session and makes a user with one webauthn login method, unverified;
// a sign-in with it reaches that user; a second passkey added with the
// session signs in to the same user too, and both are listed; removing
// the first ends the sessions it started and it signs in no more, while
// the second carries on; the second, now the only login method, cannot
// be removed.
func TestPasskeyEveryMode(t *testing.T) {
	t.Parallel()
	for _, m := range authtest.Modes {
		t.Run(m.String(), func(t *testing.T) {
			t.Parallel()
			st := memstore.New()
			s := pkServer(t, auth.Config{Store: st})
			email := "pk-" + m.String() + "@example.com"
			up, a, u := pkSignUp(t, s, m, email)
			first := pkCredID(a)
			pkWantUser(t, "sign-up", u, email, false, first)
			if u.IsPrimaryUser {
				t.Errorf("sign-up: isPrimaryUser true, want false: a passkey proves nothing about its email")
			}
			wantSession(t, up, u.ID)

			// Sign-in, in a new browser.
			c := s.NewClient(m)
			got := pkSignedIn(t, "sign-in", s, c, c.SignInWithPasskey(a))
			pkWantUser(t, "sign-in", got, email, false, first)
			if got.ID != u.ID {
				t.Fatalf("sign-in reached user %s, want %s", got.ID, u.ID)
			}
			if n := pkCounter(t, st, first); n != 1 {
				t.Errorf("stored counter %d after one assertion, want 1", n)
			}

			// A second passkey, on another device, for the session's user.
			b := s.NewAuthenticator()
			if res := c.AddPasskey(b); res.StatusCode != http.StatusOK || string(res.Body) != `{"status":"OK"}` {
				t.Fatalf("adding a passkey: %d %s", res.StatusCode, res.Body)
			}
			second := pkCredID(b)
			c2 := s.NewClient(m)
			got = pkSignedIn(t, "sign-in with the second passkey", s, c2, c2.SignInWithPasskey(b))
			pkWantUser(t, "sign-in with the second passkey", got, email, false, first, second)
			if got.ID != u.ID {
				t.Fatalf("the second passkey reached user %s, want %s", got.ID, u.ID)
			}

			// Both listed, with the login methods' ids.
			res := c2.ListPasskeys()
			var list struct {
				Status      string
				Credentials []struct {
					WebauthnCredentialID string
					RelyingPartyID       string
					RecipeUserID         string
					CreatedAt            int64
				}
			}
			if err := json.Unmarshal(res.Body, &list); err != nil || res.StatusCode != http.StatusOK || list.Status != "OK" || len(list.Credentials) != 2 {
				t.Fatalf("list: %d %s, want OK and two credentials", res.StatusCode, res.Body)
			}
			for i, id := range []string{first, second} {
				l := list.Credentials[i]
				if l.WebauthnCredentialID != id || l.RelyingPartyID != "app.example.com" || l.RecipeUserID != got.LoginMethods[i].RecipeUserID ||
					l.CreatedAt != s.Clock.Now().UnixMilli() {
					t.Errorf("list entry %d: %+v, want credential %s of login %s", i, l, id, got.LoginMethods[i].RecipeUserID)
				}
			}
			wantNoTokens(t, res)

			// Removing the first: its sessions end, it signs in no more.
			if res := c2.RemovePasskey(first); res.StatusCode != http.StatusOK || string(res.Body) != `{"status":"OK"}` {
				t.Fatalf("removing the first passkey: %d %s", res.StatusCode, res.Body)
			}
			for _, old := range []*authtest.Client{up, c} {
				if res := old.Refresh(); res.StatusCode != http.StatusUnauthorized {
					t.Errorf("a session of the removed passkey refreshes: %d %s", res.StatusCode, res.Body)
				}
			}
			pkRefused(t, "the removed passkey", s.NewClient(m).SignInWithPasskey(a), "INVALID_CREDENTIALS_ERROR")
			wantSession(t, c2, u.ID)
			res = c2.ListPasskeys()
			if err := json.Unmarshal(res.Body, &list); err != nil || len(list.Credentials) != 1 || list.Credentials[0].WebauthnCredentialID != second {
				t.Errorf("list after the removal: %s, want the second passkey alone", res.Body)
			}
			// The second is the user's only way in now.
			res = c2.RemovePasskey(second)
			wantReply(t, "removing the last login method", res.StatusCode, res.Body, http.StatusOK,
				`{"status":"GENERAL_ERROR","message":"This is your only way to sign in: add another before you remove it."}`)
			c3 := s.NewClient(m)
			got = pkSignedIn(t, "sign-in after the removals", s, c3, c3.SignInWithPasskey(b))
			if got.ID != u.ID || len(got.LoginMethods) != 1 || got.LoginMethods[0].WebAuthn == nil || got.LoginMethods[0].WebAuthn.CredentialIDs[0] != second {
				t.Errorf("sign-in after the removals: %+v", got)
			}
		})
	}
}

// ---- what must be refused ----

// TestPasskeyReplay: an assertion signs in once. Posted again with its
// options, or with new options, it is refused, and the first session is
// the only one.
func TestPasskeyReplay(t *testing.T) {
	t.Parallel()
	s := pkServer(t, auth.Config{})
	_, a, u := pkSignUp(t, s, authtest.Header, "replay@example.com")
	c := s.NewClient(authtest.Header)
	o := pkSignInOptions(t, c)
	cred := pkAssert(t, a, o)
	pkSignedIn(t, "the first sign-in", s, c, c.PasskeySignIn(o.id, cred))
	for _, m := range authtest.Modes {
		pkRefused(t, "the assertion again, with its options, in "+m.String()+" mode", s.NewClient(m).PasskeySignIn(o.id, cred), "INVALID_CREDENTIALS_ERROR")
		r := s.NewClient(m)
		fresh := pkSignInOptions(t, r)
		pkRefused(t, "the assertion again, with new options, in "+m.String()+" mode", r.PasskeySignIn(fresh.id, cred), "INVALID_CREDENTIALS_ERROR")
		// Replay() is the authenticator's own copy of its last assertion.
		pkRefused(t, "Replay() with new options", r.PasskeySignIn(fresh.id, pkAssert(t, a, fresh, authtest.Replay())), "INVALID_CREDENTIALS_ERROR")
	}
	// The options that were refused the replay are still good for an
	// honest answer: a replay uses nothing up.
	r := s.NewClient(authtest.Header)
	fresh := pkSignInOptions(t, r)
	pkRefused(t, "a replay", r.PasskeySignIn(fresh.id, cred), "INVALID_CREDENTIALS_ERROR")
	if got := pkSignedIn(t, "an honest answer to the options a replay was refused", s, r, r.PasskeySignIn(fresh.id, pkAssert(t, a, fresh))); got.ID != u.ID {
		t.Errorf("signed in as %s, want %s", got.ID, u.ID)
	}
	sessions, err := s.Auth.Sessions(t.Context(), u.ID)
	if err != nil || len(sessions) != 3 { // the sign-up's, the first sign-in's, the last one's
		t.Errorf("%d sessions (%v), want 3", len(sessions), err)
	}
}

// TestPasskeyChallengeTwice: options are answered once. A fresh
// assertion of their challenge, correctly signed with a counter higher
// than any before, is refused once the options were used, whichever
// ceremony used them; so is one for options that a clone's assertion was
// refused, and then an honest one used.
func TestPasskeyChallengeTwice(t *testing.T) {
	t.Parallel()
	st := memstore.New()
	s := pkServer(t, auth.Config{Store: st})
	_, a, _ := pkSignUp(t, s, authtest.Header, "twice@example.com")
	id := pkCredID(a)
	c := s.NewClient(authtest.Header)
	o := pkSignInOptions(t, c)
	pkSignedIn(t, "the first sign-in", s, c, c.PasskeySignIn(o.id, pkAssert(t, a, o)))
	for _, n := range []uint32{2, 10, 1 << 31} {
		pkRefused(t, fmt.Sprintf("a new assertion with counter %d for used options", n),
			s.NewClient(authtest.Header).PasskeySignIn(o.id, pkAssert(t, a, o, authtest.WithCounter(n))), "INVALID_CREDENTIALS_ERROR")
	}
	if got := pkCounter(t, st, id); got != 1 {
		t.Errorf("stored counter %d after refused assertions, want 1", got)
	}
	// Registration options are answered once too: a second credential
	// for the options of a sign-up is not a second sign-up.
	r := s.NewClient(authtest.Header)
	reg := pkRegisterOptions(t, r, "twice-up@example.com")
	b := s.NewAuthenticator()
	pkSignedIn(t, "a sign-up", s, r, r.PasskeySignUp(reg.id, pkRegister(t, b, reg)))
	pkRefused(t, "another credential for the sign-up's options", s.NewClient(authtest.Header).PasskeySignUp(reg.id, pkRegister(t, s.NewAuthenticator(), reg)), "OPTIONS_NOT_FOUND_ERROR")
	pkRefused(t, "the sign-up's credential again", s.NewClient(authtest.Header).PasskeySignUp(reg.id, pkRegister(t, b, reg)), "OPTIONS_NOT_FOUND_ERROR")
}

// TestPasskeyCounterBackwards: an assertion whose counter is not above
// the stored one, where the passkey keeps a counter, is refused as a
// clone's: EventPasskeyCloneSuspected, a warning in the log, no session
// and nothing stored; the honest authenticator signs in afterwards.
func TestPasskeyCounterBackwards(t *testing.T) {
	t.Parallel()
	st := memstore.New()
	events := newEventLog()
	var log logCapture
	s := pkServer(t, auth.Config{Store: st, OnEvent: events.record, Logger: log.logger()})
	_, a, u := pkSignUp(t, s, authtest.Header, "clone@example.com")
	id := pkCredID(a)
	for range 3 {
		c := s.NewClient(authtest.Header)
		pkSignedIn(t, "an honest sign-in", s, c, c.SignInWithPasskey(a))
	}
	if got := pkCounter(t, st, id); got != 3 {
		t.Fatalf("stored counter %d after three sign-ins, want 3", got)
	}
	before := pkLogin(t, st, id).Material
	for i, n := range []uint32{3, 2, 0} {
		c := s.NewClient(authtest.Header)
		o := pkSignInOptions(t, c)
		pkRefused(t, fmt.Sprintf("an assertion with counter %d after 3", n), c.PasskeySignIn(o.id, pkAssert(t, a, o, authtest.WithCounter(n))), "INVALID_CREDENTIALS_ERROR")
		if got := events.of(auth.EventPasskeyCloneSuspected); len(got) != i+1 || got[i].UserID != u.ID || got[i].Method != "webauthn" {
			t.Errorf("counter %d: clone events %+v, want %d, the last for user %s", n, got, i+1, u.ID)
		}
		if after := pkLogin(t, st, id).Material; !bytes.Equal(after, before) {
			t.Errorf("counter %d: the stored passkey changed: %s", n, after)
		}
	}
	if recs := log.records(t, "auth: passkey sign-in refused: its counter did not grow, the key may have been cloned"); len(recs) != 3 || recs[0]["level"] != "WARN" || recs[0]["user_id"] != u.ID {
		t.Errorf("clone log records %v, want 3 warnings naming user %s", recs, u.ID)
	}
	// The authenticator's own next assertion carries 4.
	c := s.NewClient(authtest.Header)
	if got := pkSignedIn(t, "the honest authenticator after the clone", s, c, c.SignInWithPasskey(a)); got.ID != u.ID {
		t.Errorf("signed in as %s, want %s", got.ID, u.ID)
	}
	if got := pkCounter(t, st, id); got != 4 {
		t.Errorf("stored counter %d, want 4", got)
	}
	// A counter far ahead is no clone: it signs in, and then one just
	// behind it is refused.
	c = s.NewClient(authtest.Header)
	o := pkSignInOptions(t, c)
	pkSignedIn(t, "a counter far ahead", s, c, c.PasskeySignIn(o.id, pkAssert(t, a, o, authtest.WithCounter(1000))))
	o = pkSignInOptions(t, c)
	pkRefused(t, "the authenticator's own counter, now behind", c.PasskeySignIn(o.id, pkAssert(t, a, o)), "INVALID_CREDENTIALS_ERROR")
}

// TestPasskeySynced: a synced passkey (backup eligible) keeps its counter
// at 0, and signs in again and again; while one that counted once may not
// go back to 0.
func TestPasskeySynced(t *testing.T) {
	t.Parallel()
	st := memstore.New()
	events := newEventLog()
	s := pkServer(t, auth.Config{Store: st, OnEvent: events.record})
	a := s.NewAuthenticator()
	a.BackupEligible = true
	c := s.NewClient(authtest.Body)
	u := pkSignedIn(t, "sign-up with a synced passkey", s, c, c.SignUpWithPasskey(a, "synced@example.com"))
	for i := range 5 {
		c := s.NewClient(authtest.Header)
		if got := pkSignedIn(t, fmt.Sprintf("sign-in %d with a synced passkey", i+1), s, c, c.SignInWithPasskey(a)); got.ID != u.ID {
			t.Fatalf("signed in as %s, want %s", got.ID, u.ID)
		}
	}
	if n := a.Credentials()[0].Counter; n != 0 {
		t.Errorf("the synced passkey counted to %d", n)
	}
	if n := pkCounter(t, st, pkCredID(a)); n != 0 {
		t.Errorf("stored counter %d, want 0", n)
	}
	if got := events.of(auth.EventPasskeyCloneSuspected); len(got) != 0 {
		t.Errorf("clone events for a synced passkey: %+v", got)
	}
	// Once it counted, 0 is a clone's.
	c = s.NewClient(authtest.Header)
	o := pkSignInOptions(t, c)
	pkSignedIn(t, "a synced passkey that counts", s, c, c.PasskeySignIn(o.id, pkAssert(t, a, o, authtest.WithCounter(7))))
	o = pkSignInOptions(t, c)
	pkRefused(t, "back to 0 after 7", c.PasskeySignIn(o.id, pkAssert(t, a, o)), "INVALID_CREDENTIALS_ERROR")
}

// TestPasskeyOtherSite: a credential of another relying party, or a
// ceremony run on a page of another origin (a phishing page), is refused,
// for sign-in and for sign-up alike, and the sign-up makes nobody.
func TestPasskeyOtherSite(t *testing.T) {
	t.Parallel()
	st := memstore.New()
	s := pkServer(t, auth.Config{Store: st})
	_, a, _ := pkSignUp(t, s, authtest.Header, "site@example.com")
	for name, opt := range map[string]authtest.CeremonyOption{
		"another relying party":          authtest.WithRPID("evil.example"),
		"a parent domain":                authtest.WithRPID("example.com"),
		"a look-alike relying party":     authtest.WithRPID("app.example.com.evil.example"),
		"another origin":                 authtest.WithOrigin("https://evil.example"),
		"a look-alike origin":            authtest.WithOrigin("https://app.example.com.evil.example"),
		"the origin over http":           authtest.WithOrigin("http://app.example.com"),
		"the origin on another port":     authtest.WithOrigin("https://app.example.com:8443"),
		"a subdomain origin not allowed": authtest.WithOrigin("https://evil.app.example.com"),
	} {
		c := s.NewClient(authtest.Header)
		o := pkSignInOptions(t, c)
		pkRefused(t, "sign-in from "+name, c.PasskeySignIn(o.id, pkAssert(t, a, o, opt)), "INVALID_CREDENTIALS_ERROR")
		// The options are still good for the real site.
		pkSignedIn(t, "sign-in after one from "+name, s, c, c.PasskeySignIn(o.id, pkAssert(t, a, o)))

		email := "site-" + strings.ReplaceAll(name, " ", "-") + "@example.com"
		reg := pkRegisterOptions(t, c, email)
		pkRefused(t, "sign-up from "+name, c.PasskeySignUp(reg.id, pkRegister(t, s.NewAuthenticator(), reg, opt)), "INVALID_CREDENTIALS_ERROR")
		if logins, err := st.LoginsByEmail(t.Context(), email); err != nil || len(logins) != 0 {
			t.Errorf("sign-up from %s: logins %+v, %v; want none", name, logins, err)
		}
	}
}

// TestPasskeyUnknownCredential: a passkey the server never registered (an
// authenticator with a credential for the site made on another server),
// or one whose login is gone, is refused.
func TestPasskeyUnknownCredential(t *testing.T) {
	t.Parallel()
	s := pkServer(t, auth.Config{})
	elsewhere := pkServer(t, auth.Config{})
	_, stranger, _ := pkSignUp(t, elsewhere, authtest.Header, "stranger@example.com")
	pkRefused(t, "a credential of another server", s.NewClient(authtest.Header).SignInWithPasskey(stranger), "INVALID_CREDENTIALS_ERROR")

	// A user deleted with its passkey.
	_, a, u := pkSignUp(t, s, authtest.Header, "gone@example.com")
	if err := s.Auth.DeleteUser(t.Context(), u.ID); err != nil {
		t.Fatal(err)
	}
	pkRefused(t, "the passkey of a deleted user", s.NewClient(authtest.Header).SignInWithPasskey(a), "INVALID_CREDENTIALS_ERROR")

	// A credential id the server knows, with another key's signature
	// (the stranger's credential under a known one's id).
	_, known, _ := pkSignUp(t, s, authtest.Header, "known@example.com")
	c := s.NewClient(authtest.Header)
	o := pkSignInOptions(t, c)
	var forged map[string]any
	json.Unmarshal(pkAssert(t, stranger, o), &forged)
	forged["id"], forged["rawId"] = pkCredID(known), pkCredID(known)
	forged["response"].(map[string]any)["userHandle"] = base64.RawURLEncoding.EncodeToString(known.Credentials()[0].UserHandle)
	b, _ := json.Marshal(forged)
	pkRefused(t, "a known credential id with another key's signature", c.PasskeySignIn(o.id, b), "INVALID_CREDENTIALS_ERROR")
	// A known credential with another user's handle.
	var swapped map[string]any
	json.Unmarshal(pkAssert(t, known, o), &swapped)
	swapped["response"].(map[string]any)["userHandle"] = base64.RawURLEncoding.EncodeToString([]byte(u.ID))
	b, _ = json.Marshal(swapped)
	pkRefused(t, "a known credential with another user's handle", c.PasskeySignIn(o.id, b), "INVALID_CREDENTIALS_ERROR")
}

// TestPasskeyOptionsOfAnotherCeremony: options answer the ceremony they
// were made for. Sign-up options used to sign in are refused
// (INVALID_CREDENTIALS_ERROR, as every sign-in failure), sign-in and
// recovery options used to sign up are INVALID_OPTIONS_ERROR, and made-up
// ids are OPTIONS_NOT_FOUND_ERROR; none is used up by the mistake.
func TestPasskeyOptionsOfAnotherCeremony(t *testing.T) {
	t.Parallel()
	s := pkServer(t, auth.Config{})
	_, a, _ := pkSignUp(t, s, authtest.Header, "ceremony@example.com")
	c := s.NewClient(authtest.Header)

	reg := pkRegisterOptions(t, c, "ceremony-new@example.com")
	// The authenticator answers the registration options' challenge
	// with an assertion, as a page that mixed them up would.
	var ro map[string]any
	json.Unmarshal(reg.body, &ro)
	ro["rpId"] = "app.example.com"
	asSignIn, _ := json.Marshal(ro)
	pkRefused(t, "sign-in with registration options", c.PasskeySignIn(reg.id, pkAssert(t, a, pkOptions{reg.id, asSignIn})), "INVALID_CREDENTIALS_ERROR")

	si := pkSignInOptions(t, c)
	var so map[string]any
	json.Unmarshal(si.body, &so)
	so["rp"] = map[string]any{"id": "app.example.com", "name": "app.example.com"}
	so["user"] = map[string]any{"id": base64.RawURLEncoding.EncodeToString([]byte("made-up-user")), "name": "ceremony-new@example.com"}
	asReg, _ := json.Marshal(so)
	pkRefused(t, "sign-up with sign-in options", c.PasskeySignUp(si.id, pkRegister(t, s.NewAuthenticator(), pkOptions{si.id, asReg})), "INVALID_OPTIONS_ERROR")

	for _, id := range []string{"", "not-an-id", "00000000-0000-0000-0000-000000000000", si.id + " ", strings.ToUpper(si.id), reg.id + reg.id} {
		pkRefused(t, fmt.Sprintf("sign-up with options %q", id), c.PasskeySignUp(id, pkRegister(t, s.NewAuthenticator(), reg)), "OPTIONS_NOT_FOUND_ERROR")
		pkRefused(t, fmt.Sprintf("sign-in with options %q", id), c.PasskeySignIn(id, pkAssert(t, a, si)), "INVALID_CREDENTIALS_ERROR")
	}
	// Both options still work for their own ceremony.
	pkSignedIn(t, "the sign-in options, for a sign-in", s, c, c.PasskeySignIn(si.id, pkAssert(t, a, si)))
	c2 := s.NewClient(authtest.Header)
	pkSignedIn(t, "the registration options, for a sign-up", s, c2, c2.PasskeySignUp(reg.id, pkRegister(t, s.NewAuthenticator(), reg)))
}

// TestPasskeyOptionsExpire: options last 5 minutes, as their expiresAt
// says; a minute short they work, past it they are refused.
func TestPasskeyOptionsExpire(t *testing.T) {
	t.Parallel()
	s := pkServer(t, auth.Config{})
	_, a, _ := pkSignUp(t, s, authtest.Header, "late@example.com")
	c := s.NewClient(authtest.Header)
	now := s.Clock.Now()
	for _, o := range []pkOptions{pkSignInOptions(t, c), pkRegisterOptions(t, c, "late-new@example.com")} {
		var times struct{ CreatedAt, ExpiresAt, Timeout int64 }
		json.Unmarshal(o.body, &times)
		if times.CreatedAt != now.UnixMilli() || times.ExpiresAt != now.Add(5*time.Minute).UnixMilli() || times.Timeout != 60000 {
			t.Errorf("options %s: createdAt %d, expiresAt %d, timeout %d; want %d, 5 minutes later, 60000", o.body, times.CreatedAt, times.ExpiresAt, times.Timeout, now.UnixMilli())
		}
	}
	early, earlyReg := pkSignInOptions(t, c), pkRegisterOptions(t, c, "late-early@example.com")
	late, lateReg := pkSignInOptions(t, c), pkRegisterOptions(t, c, "late-late@example.com")
	s.Clock.Advance(4*time.Minute + 59*time.Second)
	pkSignedIn(t, "sign-in a second before the options expire", s, c, c.PasskeySignIn(early.id, pkAssert(t, a, early)))
	pkSignedIn(t, "sign-up a second before the options expire", s, c, c.PasskeySignUp(earlyReg.id, pkRegister(t, s.NewAuthenticator(), earlyReg)))
	s.Clock.Advance(time.Second)
	pkRefused(t, "sign-in as the options expire", s.NewClient(authtest.Header).PasskeySignIn(late.id, pkAssert(t, a, late)), "INVALID_CREDENTIALS_ERROR")
	pkRefused(t, "sign-up as the options expire", s.NewClient(authtest.Header).PasskeySignUp(lateReg.id, pkRegister(t, s.NewAuthenticator(), lateReg)), "OPTIONS_NOT_FOUND_ERROR")
	s.Clock.Advance(time.Hour)
	pkRefused(t, "sign-in an hour later", s.NewClient(authtest.Header).PasskeySignIn(late.id, pkAssert(t, a, late)), "INVALID_CREDENTIALS_ERROR")
}

// TestPasskeyEmailTaken: a second passkey sign-up for an email a passkey
// user has, however it is spelt, is EMAIL_ALREADY_EXISTS_ERROR; the
// email-exists endpoint says so, for passkey logins only.
func TestPasskeyEmailTaken(t *testing.T) {
	t.Parallel()
	s := pkServer(t, auth.Config{})
	_, _, u := pkSignUp(t, s, authtest.Header, "taken@example.com")
	for _, email := range []string{"taken@example.com", "Taken@Example.COM", "  taken@example.com "} {
		c := s.NewClient(authtest.Header)
		reg := pkRegisterOptions(t, c, email)
		pkRefused(t, "sign-up for "+email, c.PasskeySignUp(reg.id, pkRegister(t, s.NewAuthenticator(), reg)), "EMAIL_ALREADY_EXISTS_ERROR")
	}
	if got, err := s.Auth.UserByID(t.Context(), u.ID); err != nil || len(got.LoginMethods) != 1 {
		t.Errorf("the passkey user after the refused sign-ups: %+v, %v; want one login", got, err)
	}
	_, pw := s.SignedIn(authtest.Header)
	for email, want := range map[string]string{"taken@example.com": "true", "TAKEN@example.com": "true", "nobody@example.com": "false", pw.Email: "false"} {
		res := s.NewClient(authtest.Header).Get("/auth/webauthn/email/exists?email=" + strings.ReplaceAll(email, "@", "%40"))
		wantReply(t, "webauthn/email/exists for "+email, res.StatusCode, res.Body, http.StatusOK, `{"status":"OK","exists":`+want+`}`)
	}
	// A password user of the address signs up with a passkey of its own:
	// another user, with linking off.
	c := s.NewClient(authtest.Header)
	got := pkSignedIn(t, "a passkey sign-up for a password user's address", s, c, c.SignUpWithPasskey(s.NewAuthenticator(), pw.Email))
	if got.ID == pw.ID {
		t.Errorf("the passkey joined the password user %s with linking off", pw.ID)
	}
}

// TestPasskeyRemoveOthers: a credential of another user, or none, is
// CREDENTIAL_NOT_FOUND_ERROR, and stays; without a session the list and
// removal are refused.
func TestPasskeyRemoveOthers(t *testing.T) {
	t.Parallel()
	s := pkServer(t, auth.Config{})
	mallory, _, _ := pkSignUp(t, s, authtest.Header, "mallory@example.com")
	_, a, u := pkSignUp(t, s, authtest.Header, "victim@example.com")
	victim := pkCredID(a)
	for _, id := range []string{victim, strings.ToUpper(victim), victim + "=", "", "nope"} {
		res := mallory.RemovePasskey(id)
		if id == "" {
			if res.StatusCode != http.StatusBadRequest {
				t.Errorf("removing %q: %d %s, want 400", id, res.StatusCode, res.Body)
			}
			continue
		}
		pkRefused(t, fmt.Sprintf("removing %q, another user's or nobody's", id), res, "CREDENTIAL_NOT_FOUND_ERROR")
	}
	c := s.NewClient(authtest.Header)
	if got := pkSignedIn(t, "the victim's passkey after the attempts", s, c, c.SignInWithPasskey(a)); got.ID != u.ID {
		t.Errorf("signed in as %s, want %s", got.ID, u.ID)
	}
	anon := s.NewClient(authtest.Header)
	for what, res := range map[string]*authtest.Response{"list": anon.ListPasskeys(), "remove": anon.RemovePasskey(victim)} {
		if res.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s without a session: %d %s, want 401", what, res.StatusCode, res.Body)
		}
	}
}

// ---- malformed credentials ----

// pkEdit is a change to a credential, decoded as JSON.
type pkEdit func(cred, resp map[string]any)

// pkEdited returns cred with edit applied.
func pkEdited(t testing.TB, cred []byte, edit pkEdit) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(cred, &m); err != nil {
		t.Fatal(err)
	}
	resp, _ := m["response"].(map[string]any)
	edit(m, resp)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// pkB64 is base64url without padding, as the credential's members are.
func pkB64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// pkCBOR are CBOR items that are not an attestation object, or not a
// well-formed one.
var pkCBOR = map[string][]byte{
	"empty":                         {},
	"a truncated map":               {0xa3, 0x63, 'f', 'm', 't'},
	"an array":                      {0x83, 0x01, 0x02, 0x03},
	"an integer":                    {0x1a, 0xff, 0xff, 0xff, 0xff},
	"a map of wrong types":          {0xa3, 0x63, 'f', 'm', 't', 0x01, 0x67, 'a', 't', 't', 'S', 't', 'm', 't', 0x02, 0x68, 'a', 'u', 't', 'h', 'D', 'a', 't', 'a', 0x03},
	"a byte string 4 GiB long":      {0x5a, 0xff, 0xff, 0xff, 0xff, 0x00},
	"a map 2^63 entries long":       {0xbb, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
	"1000 nested arrays":            append(bytes.Repeat([]byte{0x81}, 1000), 0x00),
	"an indefinite map, unfinished": {0xbf, 0x63, 'f', 'm', 't', 0x64, 'n', 'o', 'n', 'e'},
	"a tag of a tag":                append(bytes.Repeat([]byte{0xd8, 0x18}, 500), 0x00),
	"random bytes":                  []byte("\x9f\xff\x00\xa1\x02\xde\xad\xbe\xef"),
	"an attestation object whose authData is short": {
		0xa3, 0x63, 'f', 'm', 't', 0x64, 'n', 'o', 'n', 'e', 0x67, 'a', 't', 't', 'S', 't', 'm', 't', 0xa0,
		0x68, 'a', 'u', 't', 'h', 'D', 'a', 't', 'a', 0x45, 1, 2, 3, 4, 5},
	"an attestation object whose authData claims credential data it lacks": append([]byte{
		0xa3, 0x63, 'f', 'm', 't', 0x64, 'n', 'o', 'n', 'e', 0x67, 'a', 't', 't', 'S', 't', 'm', 't', 0xa0,
		0x68, 'a', 'u', 't', 'h', 'D', 'a', 't', 'a', 0x58, 37}, append(bytes.Repeat([]byte{0}, 32), 0x45, 0, 0, 0, 0)...),
}

// pkClientData are clientDataJSON values that are not client data.
var pkClientData = map[string]string{
	"not base64url":      "!!!not base64!!!",
	"base64 of nothing":  "",
	"base64 of not JSON": pkB64([]byte("not json")),
	"base64 of an array": pkB64([]byte(`[1,2,3]`)),
	"challenge a number": pkB64([]byte(`{"type":"webauthn.get","challenge":12,"origin":"https://app.example.com"}`)),
	"origin an object":   pkB64([]byte(`{"type":"webauthn.get","challenge":"x","origin":{}}`)),
	"nested 2000 deep":   pkB64([]byte(`{"type":` + strings.Repeat("[", 2000) + strings.Repeat("]", 2000) + `}`)),
}

// pkClientDataRefused are clientDataJSON values that decode, as
// go-webauthn reads them, and fail its checks.
var pkClientDataRefused = map[string]string{
	"invalid UTF-8":          pkB64([]byte("{\"type\":\"webauthn.get\",\"challenge\":\"\xff\xfe\",\"origin\":\"https://app.example.com\"}")),
	"padded standard base64": base64.StdEncoding.EncodeToString([]byte(`{"type":"webauthn.get"}`)),
	"base64 of null":         pkB64([]byte(`null`)),
	"type missing":           pkB64([]byte(`{"challenge":"AAAA","origin":"https://app.example.com"}`)),
}

// pkMalformed is a credential that is not one, and what it must get: 400
// with a message, or (refused) the ceremony's refusal.
type pkMalformed struct {
	name    string
	edit    pkEdit
	refused bool
}

// pkMalformedCredentials are the edits of a valid credential that make it
// malformed, for a ceremony whose response carries field (the
// attestationObject of a registration, the signature of an assertion).
func pkMalformedCredentials(registration bool) []pkMalformed {
	bad := func(name string, edit pkEdit) pkMalformed { return pkMalformed{name: name, edit: edit} }
	refused := func(name string, edit pkEdit) pkMalformed { return pkMalformed{name: name, edit: edit, refused: true} }
	set := func(key string, v any) pkEdit { return func(c, _ map[string]any) { c[key] = v } }
	del := func(key string) pkEdit { return func(c, _ map[string]any) { delete(c, key) } }
	setR := func(key string, v any) pkEdit { return func(_, r map[string]any) { r[key] = v } }
	delR := func(key string) pkEdit { return func(_, r map[string]any) { delete(r, key) } }
	out := []pkMalformed{
		bad("no id", del("id")),
		bad("no rawId", del("rawId")),
		bad("no type", del("type")),
		bad("type not public-key", set("type", "password")),
		bad("id a number", set("id", 42)),
		bad("rawId an object", set("rawId", map[string]any{})),
		bad("id not base64url", set("id", "!!!")),
		bad("id and rawId differ", set("rawId", pkB64([]byte("another credential")))),
		bad("no response", del("response")),
		bad("response a string", set("response", "x")),
		bad("response an array", set("response", []any{})),
		bad("response null", set("response", nil)),
		bad("no clientDataJSON", delR("clientDataJSON")),
		bad("clientDataJSON a number", setR("clientDataJSON", 7)),
		bad("clientDataJSON an array", setR("clientDataJSON", []string{"x"})),
		bad("clientExtensionResults a string", set("clientExtensionResults", "x")),
		bad("authenticatorAttachment a number", set("authenticatorAttachment", 3)),
	}
	for name, cd := range pkClientData {
		out = append(out, bad("clientDataJSON "+name, setR("clientDataJSON", cd)))
	}
	for name, cd := range pkClientDataRefused {
		out = append(out, refused("clientDataJSON "+name, setR("clientDataJSON", cd)))
	}
	deep := json.RawMessage(strings.Repeat("[", 5000) + strings.Repeat("]", 5000))
	out = append(out, bad("response 5000 arrays deep", set("response", deep)))
	if registration {
		out = append(out,
			bad("no attestationObject", delR("attestationObject")),
			bad("attestationObject a number", setR("attestationObject", 1)),
			bad("attestationObject not base64url", setR("attestationObject", "%%%")),
			bad("transports a string", setR("transports", "usb")),
		)
		for name, b := range pkCBOR {
			out = append(out, bad("attestationObject "+name, setR("attestationObject", pkB64(b))))
		}
	} else {
		out = append(out,
			bad("no authenticatorData", delR("authenticatorData")),
			bad("authenticatorData a number", setR("authenticatorData", 1)),
			bad("signature an object", setR("signature", map[string]any{})),
			bad("authenticatorData not base64url", setR("authenticatorData", "***")),
			bad("authenticatorData short", setR("authenticatorData", pkB64([]byte{1, 2, 3}))),
			bad("userHandle a number", setR("userHandle", 5)),
			refused("signature not DER", setR("signature", pkB64([]byte("not a signature")))),
			refused("signature empty", setR("signature", "")),
			refused("no signature", delR("signature")),
			refused("authenticatorData of another length", setR("authenticatorData", pkB64(bytes.Repeat([]byte{0}, 37)))),
			refused("no userHandle", delR("userHandle")),
		)
	}
	return out
}

// TestPasskeyMalformedCredential sends credentials that are not one (bad
// JSON, members of the wrong type, missing members, garbage CBOR in the
// attestation object, garbage client data) to sign-up, sign-in, adding a
// passkey and recovery: a 400 with a message, or for a well-formed one
// that fails a check the ceremony's refusal; never a 5xx or a session,
// nothing stored, and the options still good for the real credential.
func TestPasskeyMalformedCredential(t *testing.T) {
	t.Parallel()
	st := memstore.New()
	s := pkServer(t, auth.Config{Store: st})
	signedIn, a, u := pkSignUp(t, s, authtest.Header, "malformed@example.com")
	recipeUser := u.LoginMethods[0].RecipeUserID
	check := func(t *testing.T, what string, res *authtest.Response, refused string, tc pkMalformed) {
		t.Helper()
		switch {
		case res.StatusCode >= 500:
			t.Errorf("%s: %d %s, want no 5xx", what, res.StatusCode, res.Body)
		case tc.refused:
			pkRefused(t, what, res, refused)
		case res.StatusCode != http.StatusBadRequest || res.Message == "" || len(res.JSON) != 1:
			t.Errorf("%s: %d %s, want 400 with a message", what, res.StatusCode, res.Body)
		}
		wantNoTokens(t, res)
	}
	t.Run("sign-in", func(t *testing.T) {
		c := s.NewClient(authtest.Header)
		o := pkSignInOptions(t, c)
		good := pkAssert(t, a, o)
		before := pkLogin(t, st, pkCredID(a)).Material
		for _, tc := range pkMalformedCredentials(false) {
			check(t, tc.name, c.PasskeySignIn(o.id, pkEdited(t, good, tc.edit)), "INVALID_CREDENTIALS_ERROR", tc)
		}
		if after := pkLogin(t, st, pkCredID(a)).Material; !bytes.Equal(before, after) {
			t.Errorf("the stored passkey changed")
		}
		pkSignedIn(t, "the real assertion after the malformed ones", s, c, c.PasskeySignIn(o.id, good))
	})
	t.Run("sign-up", func(t *testing.T) {
		c := s.NewClient(authtest.Header)
		reg := pkRegisterOptions(t, c, "malformed-new@example.com")
		good := pkRegister(t, s.NewAuthenticator(), reg)
		for _, tc := range pkMalformedCredentials(true) {
			check(t, tc.name, c.PasskeySignUp(reg.id, pkEdited(t, good, tc.edit)), "INVALID_CREDENTIALS_ERROR", tc)
		}
		if logins, err := st.LoginsByEmail(t.Context(), "malformed-new@example.com"); err != nil || len(logins) != 0 {
			t.Errorf("logins after malformed sign-ups: %+v, %v", logins, err)
		}
		pkSignedIn(t, "the real credential after the malformed ones", s, c, c.PasskeySignUp(reg.id, good))
	})
	t.Run("adding a passkey", func(t *testing.T) {
		reg := pkRegisterOptions(t, signedIn, "malformed@example.com")
		good := pkRegister(t, s.NewAuthenticator(), reg)
		for _, tc := range pkMalformedCredentials(true) {
			res := pkPost(signedIn, "/webauthn/credential", map[string]any{
				"webauthnGeneratedOptionsId": reg.id, "recipeUserId": recipeUser, "credential": json.RawMessage(pkEdited(t, good, tc.edit))})
			check(t, tc.name, res, "INVALID_CREDENTIALS_ERROR", tc)
		}
		res := pkPost(signedIn, "/webauthn/credential", map[string]any{"webauthnGeneratedOptionsId": reg.id, "recipeUserId": recipeUser, "credential": json.RawMessage(good)})
		wantReply(t, "the real credential after the malformed ones", res.StatusCode, res.Body, http.StatusOK, `{"status":"OK"}`)
	})
	t.Run("the body", func(t *testing.T) {
		c := s.NewClient(authtest.Header)
		o := pkSignInOptions(t, c)
		huge := `{"webauthnGeneratedOptionsId":"` + o.id + `","credential":{"id":"` + strings.Repeat("A", 200<<10) + `"}}`
		for _, path := range []string{"/webauthn/signin", "/webauthn/signup", "/user/webauthn/reset", "/webauthn/credential"} {
			for name, tc := range map[string]struct {
				body string
				code int
			}{
				"no options id":         {`{"credential":{}}`, 400},
				"no credential":         {`{"webauthnGeneratedOptionsId":"` + o.id + `"}`, 400},
				"credential null":       {`{"webauthnGeneratedOptionsId":"` + o.id + `","credential":null}`, 400},
				"credential a string":   {`{"webauthnGeneratedOptionsId":"` + o.id + `","credential":"{}"}`, 400},
				"credential an array":   {`{"webauthnGeneratedOptionsId":"` + o.id + `","credential":[{}]}`, 400},
				"credential a number":   {`{"webauthnGeneratedOptionsId":"` + o.id + `","credential":1}`, 400},
				"options id a number":   {`{"webauthnGeneratedOptionsId":1,"credential":{}}`, 400},
				"options id an object":  {`{"webauthnGeneratedOptionsId":{},"credential":{}}`, 400},
				"credential not JSON":   {`{"webauthnGeneratedOptionsId":"` + o.id + `","credential":{"id":}`, 400},
				"a body of 200 KB":      {huge, 413},
				"not JSON":              {`webauthnGeneratedOptionsId=x`, 400},
				"recipeUserId a number": {`{"webauthnGeneratedOptionsId":"` + o.id + `","credential":{},"recipeUserId":1}`, 400},
				"token an array":        {`{"webauthnGeneratedOptionsId":"` + o.id + `","credential":{},"token":["x"]}`, 400},
			} {
				res := send(t, s, http.MethodPost, "/auth"+path, tc.body, hdr("Content-Type", "application/json", "rid", "webauthn",
					"st-auth-mode", "header", "Authorization", "Bearer "+signedIn.AccessToken))
				if path == "/webauthn/signin" || path == "/webauthn/signup" || tc.code == 413 || !strings.Contains(name, "recipeUserId") && !strings.Contains(name, "token") {
					if res.StatusCode != tc.code || res.Message == "" {
						t.Errorf("%s, %s: %d %s, want %d with a message", path, name, res.StatusCode, res.Body, tc.code)
					}
				} else if res.StatusCode >= 500 {
					t.Errorf("%s, %s: %d %s", path, name, res.StatusCode, res.Body)
				}
				wantNoTokens(t, res)
			}
		}
		// The options were used by none of it.
		pkSignedIn(t, "sign-in after the malformed bodies", s, c, c.PasskeySignIn(o.id, pkAssert(t, a, o)))
	})
}

// ---- concurrent use ----

// pkRace posts n requests at once, each with a client of its own from
// clients, and returns the answers. The clients' connections are opened
// (TLS handshakes done) before the requests start, so that the requests
// reach the server together rather than one handshake apart.
func pkRace(n int, clients func(i int) *authtest.Client, post func(i int, c *authtest.Client) *authtest.Response) []*authtest.Response {
	out := make([]*authtest.Response, n)
	cs := make([]*authtest.Client, n)
	transports := map[http.RoundTripper]*http.Transport{}
	for i := range n {
		cs[i] = clients(i)
		tr, ok := transports[cs[i].HTTP.Transport]
		if !ok {
			tr = cs[i].HTTP.Transport.(*http.Transport).Clone()
			tr.MaxIdleConnsPerHost = n
			transports[cs[i].HTTP.Transport] = tr
		}
		hc := *cs[i].HTTP
		hc.Transport = tr
		cs[i].HTTP = &hc
	}
	var wg sync.WaitGroup
	for _, c := range cs {
		wg.Go(func() { c.Get("/auth/jwt/jwks.json") })
	}
	wg.Wait()
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			out[i] = post(i, cs[i])
		})
	}
	close(start)
	wg.Wait()
	return out
}

// pkTally counts the answers: OK ones (which must carry a session of
// user, if set) and refusals with status; anything else fails the test.
func pkTally(t testing.TB, what string, answers []*authtest.Response, refused, user string) (ok int) {
	t.Helper()
	for i, res := range answers {
		switch {
		case res.StatusCode == http.StatusOK && res.Status == "OK":
			ok++
			if !res.IssuedTokens() {
				t.Errorf("%s, request %d: OK without a session", what, i)
			}
			if u, _ := res.JSON["user"].(map[string]any); user != "" && (u == nil || u["id"] != user) {
				t.Errorf("%s, request %d: signed in as %v, want %s", what, i, u["id"], user)
			}
		default:
			wantReply(t, fmt.Sprintf("%s, request %d", what, i), res.StatusCode, res.Body, http.StatusOK, `{"status":"`+refused+`"}`)
			if res.IssuedTokens() {
				t.Errorf("%s, request %d: a refusal issued tokens", what, i)
			}
		}
	}
	return ok
}

// TestPasskeyConcurrentOneAssertion: one assertion posted 16 times at once
// signs in once: one session, whichever request wins; on one server, and
// on two servers (two Auth instances) sharing a store. A registration
// posted 16 times at once signs up once.
func TestPasskeyConcurrentOneAssertion(t *testing.T) {
	t.Parallel()
	const n = 16
	for _, servers := range []int{1, 2} {
		t.Run(fmt.Sprintf("%d servers", servers), func(t *testing.T) {
			t.Parallel()
			st := memstore.New()
			srv := []*authtest.Server{pkServer(t, auth.Config{Store: st})}
			if servers == 2 {
				srv = append(srv, pkServer(t, auth.Config{Store: st}))
			}
			_, a, u := pkSignUp(t, srv[0], authtest.Header, "race@example.com")
			for round := range 3 {
				o := pkSignInOptions(t, srv[0].NewClient(authtest.Header))
				cred := pkAssert(t, a, o)
				before, _ := srv[0].Auth.Sessions(t.Context(), u.ID)
				answers := pkRace(n, func(i int) *authtest.Client { return srv[i%servers].NewClient(authtest.Modes[i%3]) },
					func(_ int, c *authtest.Client) *authtest.Response { return c.PasskeySignIn(o.id, cred) })
				if ok := pkTally(t, fmt.Sprintf("round %d", round+1), answers, "INVALID_CREDENTIALS_ERROR", u.ID); ok != 1 {
					t.Errorf("round %d: %d of %d sign-ins with one assertion succeeded, want exactly 1", round+1, ok, n)
				}
				after, _ := srv[0].Auth.Sessions(t.Context(), u.ID)
				if len(after) != len(before)+1 {
					t.Errorf("round %d: %d sessions after, %d before, want one more", round+1, len(after), len(before))
				}
				if got := pkCounter(t, st, pkCredID(a)); got != uint32(round+1) {
					t.Errorf("round %d: stored counter %d, want %d", round+1, got, round+1)
				}
			}
			// One registration, posted at once.
			reg := pkRegisterOptions(t, srv[0].NewClient(authtest.Header), "race-up@example.com")
			cred := pkRegister(t, srv[0].NewAuthenticator(), reg)
			answers := pkRace(n, func(i int) *authtest.Client { return srv[i%servers].NewClient(authtest.Header) },
				func(_ int, c *authtest.Client) *authtest.Response { return c.PasskeySignUp(reg.id, cred) })
			// A loser finds the options used, the credential registered,
			// or, on another server (whose sign-up turns are its own),
			// the email taken by the winner's user.
			ok := 0
			for _, res := range answers {
				if res.Status == "OK" {
					ok++
				} else if res.Status != "OPTIONS_NOT_FOUND_ERROR" && res.Status != "INVALID_CREDENTIALS_ERROR" &&
					res.Status != "EMAIL_ALREADY_EXISTS_ERROR" || res.IssuedTokens() {
					t.Errorf("a concurrent sign-up with one credential: %d %s", res.StatusCode, res.Body)
				}
			}
			if logins, err := st.LoginsByEmail(t.Context(), "race-up@example.com"); ok != 1 || err != nil || len(logins) != 1 {
				t.Errorf("%d of %d sign-ups with one credential succeeded, %d logins (%v); want 1 and 1", ok, n, len(logins), err)
			}
		})
	}
}

// TestPasskeyConcurrentOneCounter: 16 assertions of one passkey, each for
// options of its own, all carrying the same counter value, posted at
// once. Each is valid alone; the compare-and-swap of the stored counter
// lets exactly one through: the others either lose the swap (the counter
// moved since they read it) or read it after it moved (and are taken for
// a clone's). With 16 distinct counter values, each value signs in at
// most once, and the stored counter ends at the highest that did.
func TestPasskeyConcurrentOneCounter(t *testing.T) {
	t.Parallel()
	const n = 16
	st := memstore.New()
	s := pkServer(t, auth.Config{Store: st})
	_, a, u := pkSignUp(t, s, authtest.Header, "counter-race@example.com")
	id := pkCredID(a)
	opts := make([]pkOptions, n)
	creds := make([][]byte, n)
	for i := range n {
		opts[i] = pkSignInOptions(t, s.NewClient(authtest.Header))
		creds[i] = pkAssert(t, a, opts[i], authtest.WithCounter(5))
	}
	answers := pkRace(n, func(int) *authtest.Client { return s.NewClient(authtest.Header) },
		func(i int, c *authtest.Client) *authtest.Response { return c.PasskeySignIn(opts[i].id, creds[i]) })
	if ok := pkTally(t, "one counter value", answers, "INVALID_CREDENTIALS_ERROR", u.ID); ok != 1 {
		t.Errorf("%d of %d sign-ins with one counter value succeeded, want exactly 1", ok, n)
	}
	if got := pkCounter(t, st, id); got != 5 {
		t.Errorf("stored counter %d, want 5", got)
	}

	// Distinct counters: 6 to 21, in an order of their own.
	counters := make([]uint32, n)
	for i := range n {
		opts[i] = pkSignInOptions(t, s.NewClient(authtest.Header))
		counters[i] = uint32(6 + (i*7)%n)
		creds[i] = pkAssert(t, a, opts[i], authtest.WithCounter(counters[i]))
	}
	answers = pkRace(n, func(int) *authtest.Client { return s.NewClient(authtest.Header) },
		func(i int, c *authtest.Client) *authtest.Response { return c.PasskeySignIn(opts[i].id, creds[i]) })
	ok := pkTally(t, "distinct counter values", answers, "INVALID_CREDENTIALS_ERROR", u.ID)
	highest := uint32(0)
	for i, res := range answers {
		if res.Status == "OK" {
			highest = max(highest, counters[i])
		}
	}
	if got := pkCounter(t, st, id); ok < 1 || got != highest {
		t.Errorf("%d sign-ins with distinct counters succeeded, stored counter %d; want at least one, and the highest that did (%d)", ok, got, highest)
	}
	t.Logf("16 concurrent sign-ins with distinct counters: %d succeeded", ok)
}

// TestPasskeyConcurrentOneEmail: 16 sign-ups for one email, each with
// options and an authenticator of its own, posted at once to two servers
// sharing a store that takes 20 ms to write a login: one passkey user
// has the email, and
// the others are refused (EMAIL_ALREADY_EXISTS_ERROR, or under account
// linking SIGN_UP_NOT_ALLOWED), as 16 sign-ups one after the other are.
func TestPasskeyConcurrentOneEmail(t *testing.T) {
	t.Parallel()
	const n = 16
	for _, linking := range []bool{false, true} {
		t.Run(fmt.Sprintf("linking %v", linking), func(t *testing.T) {
			t.Parallel()
			st := memstore.New()
			// A store that takes 20 ms to write a new login, as a
			// database under load may: the sign-ups overlap as they
			// would in production. Two servers share it.
			srv := []*authtest.Server{
				pkServer(t, auth.Config{Store: pkSlowSignUp{st}, AccountLinking: linking}),
				pkServer(t, auth.Config{Store: pkSlowSignUp{st}, AccountLinking: linking}),
			}
			s := srv[0]
			const email = "email-race@example.com"
			opts := make([]pkOptions, n)
			creds := make([][]byte, n)
			for i := range n {
				opts[i] = pkRegisterOptions(t, s.NewClient(authtest.Header), email)
				creds[i] = pkRegister(t, s.NewAuthenticator(), opts[i])
			}
			answers := pkRace(n, func(i int) *authtest.Client { return srv[i%2].NewClient(authtest.Header) },
				func(i int, c *authtest.Client) *authtest.Response { return c.PasskeySignUp(opts[i].id, creds[i]) })
			ok := 0
			for _, res := range answers {
				switch {
				case res.Status == "OK":
					ok++
				case res.Status == "EMAIL_ALREADY_EXISTS_ERROR" || linking && res.Status == "SIGN_UP_NOT_ALLOWED":
					wantNoTokens(t, res)
				default:
					t.Errorf("a concurrent sign-up: %d %s", res.StatusCode, res.Body)
				}
			}
			logins, err := st.LoginsByEmail(t.Context(), email)
			if ok != 1 || err != nil || len(logins) != 1 {
				users := map[string]bool{}
				for _, l := range logins {
					users[l.UserID] = true
				}
				t.Errorf("%d of %d concurrent passkey sign-ups for one email succeeded: %d passkey logins of %d users have %s (%v); want one",
					ok, n, len(logins), len(users), email, err)
			}
			// One after the other, they are refused.
			c := s.NewClient(authtest.Header)
			reg := pkRegisterOptions(t, c, email)
			if res := c.PasskeySignUp(reg.id, pkRegister(t, s.NewAuthenticator(), reg)); res.Status == "OK" {
				t.Errorf("a sign-up after them: %s, want a refusal", res.Body)
			}
		})
	}
}

// pkSlowSignUp is a memstore whose SignInUp waits 20 ms before it
// writes. It keeps the rate limits, as the memstore does, for every
// server that shares it.
type pkSlowSignUp struct{ *memstore.Store }

func (s pkSlowSignUp) SignInUp(ctx context.Context, l store.Login, u store.User) (store.Login, bool, error) {
	time.Sleep(20 * time.Millisecond)
	return s.Store.SignInUp(ctx, l, u)
}

// ---- the options on the wire ----

// TestPasskeyOptionsWire: the options answers have the members the SDKs
// hand to @simplewebauthn/browser, at the top level, as PROTOCOL.md §12
// lists them: for a registration rp, user (id base64url), challenge (32
// random bytes), pubKeyCredParams EdDSA, ES256, RS256, timeout 60000,
// excludeCredentials (empty for a sign-up), authenticatorSelection
// (resident key required, user verification preferred) and attestation
// none; for a sign-in rpId, challenge, timeout and userVerification, and
// no allowCredentials.
func TestPasskeyOptionsWire(t *testing.T) {
	t.Parallel()
	s := pkServer(t, auth.Config{})
	c := s.NewClient(authtest.Header)
	now := s.Clock.Now().UnixMilli()
	keys := func(m map[string]any) []string { return slices.Sorted(maps.Keys(m)) }
	challenge := func(what string, m map[string]any) {
		ch, _ := m["challenge"].(string)
		if b, err := base64.RawURLEncoding.Strict().DecodeString(ch); err != nil || len(b) != 32 {
			t.Errorf("%s: challenge %q, want 32 bytes in unpadded base64url", what, ch)
		}
	}

	reg := c.PasskeyRegisterOptions("wire@example.com").JSON
	if want := []string{"attestation", "authenticatorSelection", "challenge", "createdAt", "excludeCredentials", "expiresAt",
		"pubKeyCredParams", "rp", "status", "timeout", "user", "webauthnGeneratedOptionsId"}; !slices.Equal(keys(reg), want) {
		t.Errorf("registration options have the members %q, want %q", keys(reg), want)
	}
	challenge("registration options", reg)
	if ex, ok := reg["excludeCredentials"].([]any); !ok || len(ex) != 0 {
		t.Errorf("registration options' excludeCredentials %v, want []", reg["excludeCredentials"])
	}
	user, _ := reg["user"].(map[string]any)
	if id, _ := user["id"].(string); user["name"] != "wire@example.com" || user["displayName"] != "wire@example.com" || id == "" {
		t.Errorf("registration options' user %v", user)
	} else if b, err := base64.RawURLEncoding.Strict().DecodeString(id); err != nil || len(b) == 0 || len(b) > 64 {
		t.Errorf("user.id %q: want 1 to 64 bytes in unpadded base64url", id)
	}
	var algs []float64
	params, _ := reg["pubKeyCredParams"].([]any)
	for _, p := range params {
		m, _ := p.(map[string]any)
		algs = append(algs, m["alg"].(float64))
		if m["type"] != "public-key" {
			t.Errorf("pubKeyCredParams %v", p)
		}
	}
	sel, _ := reg["authenticatorSelection"].(map[string]any)
	rp, _ := reg["rp"].(map[string]any)
	switch {
	case !slices.Equal(algs, []float64{-8, -7, -257}):
		t.Errorf("pubKeyCredParams algorithms %v, want EdDSA, ES256, RS256", algs)
	case sel["residentKey"] != "required" || sel["requireResidentKey"] != true || sel["userVerification"] != "preferred":
		t.Errorf("authenticatorSelection %v", sel)
	case reg["attestation"] != "none" || reg["timeout"] != float64(60000) || rp["id"] != "app.example.com" || rp["name"] != "app.example.com":
		t.Errorf("registration options %v", reg)
	case reg["createdAt"] != float64(now) || reg["expiresAt"] != float64(now+5*60*1000):
		t.Errorf("registration options createdAt %v, expiresAt %v", reg["createdAt"], reg["expiresAt"])
	}

	si := c.PasskeySignInOptions().JSON
	if want := []string{"challenge", "createdAt", "expiresAt", "rpId", "status", "timeout", "userVerification", "webauthnGeneratedOptionsId"}; !slices.Equal(keys(si), want) {
		t.Errorf("sign-in options have the members %q, want %q", keys(si), want)
	}
	challenge("sign-in options", si)
	if si["rpId"] != "app.example.com" || si["userVerification"] != "preferred" || si["timeout"] != float64(60000) {
		t.Errorf("sign-in options %v", si)
	}
}

// TestPasskeyEventsNameNoProvider: a passkey's sign-up and sign-in events
// name the method and no third party: a passkey's ThirdParty in the store
// is its relying party, not a provider.
func TestPasskeyEventsNameNoProvider(t *testing.T) {
	events := newEventLog()
	s := pkServer(t, auth.Config{OnEvent: events.record})
	c, a, _ := pkSignUp(t, s, authtest.Header, "events@example.com")
	if res := c.SignInWithPasskey(a); res.Status != "OK" {
		t.Fatalf("passkey sign-in: %s", res.Body)
	}
	signIns := events.of(auth.EventSignIn)
	if len(signIns) != 2 {
		t.Fatalf("%d sign-in events, want 2 (sign-up and sign-in)", len(signIns))
	}
	for _, e := range append(signIns, events.of(auth.EventSignUp)...) {
		if e.Method != store.MethodWebAuthn || e.ThirdPartyID != "" {
			t.Errorf("%s event: method %q, third party %q; want %q and none", e.Kind, e.Method, e.ThirdPartyID, store.MethodWebAuthn)
		}
	}
}
