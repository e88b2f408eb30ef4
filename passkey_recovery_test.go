package auth_test

// Passkey account recovery over HTTP, as the SDKs' recovery page runs it:
// a link mailed to a passkey user's address, registration options made
// with its token, a new authenticator's credential, and what the
// recovery ends (the old passkeys, the sessions) and proves (the
// address); the link working once, and not after its hour; no mail and
// no recovery where another user holds the address. And passkey sign-up
// under account linking.

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/passwordless"
	"github.com/latchkit/auth/provider"
	"github.com/latchkit/auth/store"
	"github.com/latchkit/auth/store/memstore"
	"github.com/latchkit/auth/thirdparty"
)

// pkRequestRecovery asks for a recovery link for email with c, as the
// SDKs' generateRecoverAccountToken does, and checks the answer.
func pkRequestRecovery(t testing.TB, c *authtest.Client, email string) {
	t.Helper()
	res := pkPost(c, "/user/webauthn/reset/token", map[string]string{"email": email})
	wantReply(t, "user/webauthn/reset/token for "+email, res.StatusCode, res.Body, http.StatusOK, `{"status":"OK"}`)
	wantNoTokens(t, res)
}

// pkRecoveryLink waits for the recovery message to email after the first
// after messages, checks its link, and returns the link's token.
func pkRecoveryLink(t testing.TB, s *authtest.Server, email string, after int) string {
	t.Helper()
	m := s.Mailbox.LastTo(t, email, after, 5*time.Second)
	link, token := authtest.ResetLink(t, m)
	u, err := url.Parse(link)
	if err != nil || u.Scheme+"://"+u.Host+u.Path != s.AuthConfig.AppURL+"/auth/webauthn/recover" || u.Query().Get("tenantId") != "public" || len(u.Query()) != 2 {
		t.Errorf("recovery link %s, want %s/auth/webauthn/recover?token=…&tenantId=public", link, s.AuthConfig.AppURL)
	}
	if !urlSafe.MatchString(token) || len(token) < 43 {
		t.Errorf("recovery token %q: want 256 bits, URL-safe", token)
	}
	if !strings.Contains(m.Text, "1 hour") {
		t.Errorf("the recovery message does not say how long the link works:\n%s", m.Text)
	}
	return token
}

// pkRecover registers a new passkey of a for the account of a recovery
// token, as the SDKs' recovery page does: options with the token, a
// credential, /user/webauthn/reset. It returns the answer of the last.
func pkRecover(t testing.TB, c *authtest.Client, a *authtest.Authenticator, token string) *authtest.Response {
	t.Helper()
	o := pkOptionsOf(t, "webauthn/options/register with a recovery token", pkRecoveryOptions(c, token))
	return pkRecoverWith(c, o, pkRegister(t, a, o), token)
}

// pkRecoverWith posts a recovery with options o and credential cred.
func pkRecoverWith(c *authtest.Client, o pkOptions, cred []byte, token string) *authtest.Response {
	return pkPost(c, "/user/webauthn/reset", map[string]any{
		"token": token, "webauthnGeneratedOptionsId": o.id, "credential": json.RawMessage(cred),
	})
}

// TestPasskeyRecovery: a passkey user asks for a recovery link; the
// link's token gets registration options for the user's address, with
// the account's own user handle and nothing excluded; a new
// authenticator's credential for them
// recovers the account: OK and no session. Then every earlier passkey of
// the user (the one it signed up with, and one added in a session) signs
// in no more, every session of the user has ended, and the new passkey
// signs in, to the same user, with the address verified. The link works
// once.
func TestPasskeyRecovery(t *testing.T) {
	t.Parallel()
	for _, m := range authtest.Modes {
		t.Run(m.String(), func(t *testing.T) {
			t.Parallel()
			st := memstore.New()
			events := newEventLog()
			s := pkServer(t, auth.Config{Store: st, OnEvent: events.record})
			email := "recover-" + m.String() + "@example.com"
			up, lost, u := pkSignUp(t, s, m, email)
			other := s.NewAuthenticator()
			if res := up.AddPasskey(other); res.Status != "OK" {
				t.Fatalf("adding a passkey: %d %s", res.StatusCode, res.Body)
			}
			c2 := s.NewClient(m)
			pkSignedIn(t, "a sign-in before the recovery", s, c2, c2.SignInWithPasskey(other))

			c := s.NewClient(m)
			pkRequestRecovery(t, c, email)
			token := pkRecoveryLink(t, s, email, 0)

			res := pkRecoveryOptions(c, token)
			o := pkOptionsOf(t, "options with the recovery token", res)
			var opts struct {
				User struct {
					ID, Name, DisplayName string
				}
				ExcludeCredentials []struct{ ID, Type string }
			}
			json.Unmarshal(res.Body, &opts)
			// The account's own user handle, and nothing excluded: an
			// authenticator that still holds the lost passkey replaces it
			// (the SDKs have no answer to one that refuses).
			if opts.User.Name != email || opts.User.DisplayName != email || opts.User.ID != base64.RawURLEncoding.EncodeToString([]byte(u.ID)) {
				t.Errorf("recovery options for user %+v, want the name %s and the handle of user %s", opts.User, email, u.ID)
			}
			if len(opts.ExcludeCredentials) != 0 {
				t.Errorf("recovery options exclude %+v, want nothing", opts.ExcludeCredentials)
			}

			// Options for a second try, got before the link is used.
			spare := pkOptionsOf(t, "more options with the recovery token", pkRecoveryOptions(c, token))

			fresh := s.NewAuthenticator()
			res = pkRecoverWith(c, o, pkRegister(t, fresh, o), token)
			wantReply(t, "recovery", res.StatusCode, res.Body, http.StatusOK, `{"status":"OK"}`)
			wantNoTokens(t, res)

			for name, a := range map[string]*authtest.Authenticator{"the passkey of the sign-up": lost, "the passkey added in a session": other} {
				pkRefused(t, name+" after the recovery", s.NewClient(m).SignInWithPasskey(a), "INVALID_CREDENTIALS_ERROR")
			}
			for _, old := range []*authtest.Client{up, c2} {
				if res := old.Refresh(); res.StatusCode != http.StatusUnauthorized {
					t.Errorf("a session from before the recovery refreshes: %d %s", res.StatusCode, res.Body)
				}
				if res := old.Get("/api/session"); res.StatusCode == http.StatusOK && s.AuthConfig.CheckSessionInStore {
					t.Errorf("a session from before the recovery opens a route")
				}
			}
			if sessions, err := s.Auth.Sessions(t.Context(), u.ID); err != nil || len(sessions) != 0 {
				t.Errorf("%d sessions after the recovery (%v), want none", len(sessions), err)
			}

			in := s.NewClient(m)
			got := pkSignedIn(t, "the new passkey", s, in, in.SignInWithPasskey(fresh))
			if got.ID != u.ID {
				t.Fatalf("the new passkey signs in as %s, want the recovered user %s", got.ID, u.ID)
			}
			if len(got.LoginMethods) != 1 || got.LoginMethods[0].Email == nil || *got.LoginMethods[0].Email != email ||
				got.LoginMethods[0].Verified == nil || !*got.LoginMethods[0].Verified || got.LoginMethods[0].WebAuthn == nil ||
				!slices.Equal(got.LoginMethods[0].WebAuthn.CredentialIDs, []string{pkCredID(fresh)}) {
				t.Errorf("the recovered user's login methods %+v, want the new passkey alone, with %s verified", got.LoginMethods, email)
			}
			l := pkLogin(t, st, pkCredID(fresh))
			if !l.EmailProven || !l.EmailVerified || l.UserID != u.ID {
				t.Errorf("the new passkey's login %+v, want %s proven and verified, of user %s", l, email, u.ID)
			}
			if got := events.of(auth.EventPasskeyAdded); len(got) != 2 || got[1].UserID != u.ID {
				t.Errorf("passkey_added events %+v, want the added one and the recovery's", got)
			}

			// The link works once: for options, and for a recovery with
			// options got before it was used.
			pkRefused(t, "options with the used token", pkRecoveryOptions(c, token), "RECOVER_ACCOUNT_TOKEN_INVALID_ERROR")
			pkRefused(t, "a second recovery with the token", pkRecoverWith(c, spare, pkRegister(t, s.NewAuthenticator(), spare), token), "RECOVER_ACCOUNT_TOKEN_INVALID_ERROR")
			in2 := s.NewClient(m)
			if got := pkSignedIn(t, "the new passkey after the second try", s, in2, in2.SignInWithPasskey(fresh)); len(got.LoginMethods) != 1 {
				t.Errorf("the second try changed the user: %+v", got.LoginMethods)
			}
		})
	}
}

// pkDrain waits until the server's outbox has sent everything queued, and
// returns the messages: the server sends no more after it.
func pkDrain(t testing.TB, s *authtest.Server) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := s.Auth.Close(ctx); err != nil {
		t.Fatal(err)
	}
	var to []string
	for _, m := range s.Mailbox.Messages() {
		to = append(to, m.To.Address)
	}
	return to
}

// TestPasskeyRecoveryMailedToPasskeyUsers: the request answers the same
// for every well-formed address, and mails only the address of a passkey
// user: not an unknown one, not a password or passwordless user's, not a
// passkey added in a session (it has no address of its own).
func TestPasskeyRecoveryMailedToPasskeyUsers(t *testing.T) {
	t.Parallel()
	s := pkServer(t, auth.Config{Passwordless: passwordless.Config{Flow: passwordless.Code}})
	pkSignUp(t, s, authtest.Header, "pk-user@example.com")
	pw, pwUser := s.SignedIn(authtest.Header)
	if res := pw.AddPasskey(s.NewAuthenticator()); res.Status != "OK" {
		t.Fatalf("adding a passkey: %s", res.Body)
	}
	if res := plSignIn(t, s, s.NewClient(authtest.Header), "pl-user@example.com"); res.Status != "OK" {
		t.Fatalf("passwordless sign-up: %s", res.Body)
	}
	mails := len(s.Mailbox.Messages())
	for _, email := range []string{"nobody@example.com", pwUser.Email, "pl-user@example.com", " PK-User@Example.com "} {
		pkRequestRecovery(t, s.NewClient(authtest.Header), email)
	}
	if to := pkDrain(t, s)[mails:]; !slices.Equal(to, []string{"pk-user@example.com"}) {
		t.Errorf("recovery mail went to %q, want the passkey user alone", to)
	}
}

// TestPasskeyRecoveryLinkLifetime: a link works for an hour; the newest
// of two links voids the other once used; a made-up, cut or lengthened
// token is refused.
func TestPasskeyRecoveryLinkLifetime(t *testing.T) {
	t.Parallel()
	s := pkServer(t, auth.Config{})
	const email = "lifetime@example.com"
	_, _, u := pkSignUp(t, s, authtest.Header, email)
	c := s.NewClient(authtest.Header)

	pkRequestRecovery(t, c, email)
	late := pkRecoveryLink(t, s, email, 0)
	s.Clock.Advance(time.Hour)
	pkRefused(t, "options with a token an hour old", pkRecoveryOptions(c, late), "RECOVER_ACCOUNT_TOKEN_INVALID_ERROR")

	pkRequestRecovery(t, c, email)
	first := pkRecoveryLink(t, s, email, 1)
	pkRequestRecovery(t, c, email)
	second := pkRecoveryLink(t, s, email, 2)
	o := pkOptionsOf(t, "options with the first token", pkRecoveryOptions(c, first))
	for name, tok := range map[string]string{"cut": first[:len(first)-1], "lengthened": first + "A", "made up": lhRandomToken(), "upper-cased": strings.ToUpper(first)} {
		pkRefused(t, "options with a token "+name, pkRecoveryOptions(c, tok), "RECOVER_ACCOUNT_TOKEN_INVALID_ERROR")
		pkRefused(t, "a recovery with a token "+name, pkRecoverWith(c, o, pkRegister(t, s.NewAuthenticator(), o), tok), "RECOVER_ACCOUNT_TOKEN_INVALID_ERROR")
	}
	// Options made with a token are for its account, not another's.
	pkSignUp(t, s, authtest.Header, "lifetime-y@example.com")
	pkRequestRecovery(t, c, "lifetime-y@example.com")
	theirs := pkRecoveryLink(t, s, "lifetime-y@example.com", 3)
	pkRefused(t, "a recovery with options of another account's token", pkRecoverWith(c, o, pkRegister(t, s.NewAuthenticator(), o), theirs), "INVALID_OPTIONS_ERROR")
	// 59 minutes on, both links work; options got with the first, before
	// the second is used, do not outlive it.
	s.Clock.Advance(59 * time.Minute)
	o = pkOptionsOf(t, "options with the first token 59 minutes on", pkRecoveryOptions(c, first))
	o2 := pkOptionsOf(t, "options with the second token 59 minutes on", pkRecoveryOptions(c, second))
	a := s.NewAuthenticator()
	res := pkRecoverWith(c, o2, pkRegister(t, a, o2), second)
	wantReply(t, "recovery with the second link 59 minutes on", res.StatusCode, res.Body, http.StatusOK, `{"status":"OK"}`)
	pkRefused(t, "the first link after the second was used", pkRecoverWith(c, o, pkRegister(t, s.NewAuthenticator(), o), first), "RECOVER_ACCOUNT_TOKEN_INVALID_ERROR")
	in := s.NewClient(authtest.Header)
	if got := pkSignedIn(t, "the recovered passkey", s, in, in.SignInWithPasskey(a)); got.ID != u.ID {
		t.Errorf("signed in as %s, want %s", got.ID, u.ID)
	}
	// Options of a sign-up, or a sign-in, do not recover.
	pkRequestRecovery(t, c, email)
	third := pkRecoveryLink(t, s, email, 4)
	reg := pkRegisterOptions(t, c, "lifetime-other@example.com")
	pkRefused(t, "a recovery with sign-up options", pkRecoverWith(c, reg, pkRegister(t, s.NewAuthenticator(), reg), third), "INVALID_OPTIONS_ERROR")
	si := pkSignInOptions(t, c)
	var so map[string]any
	json.Unmarshal(si.body, &so)
	so["rp"] = map[string]any{"id": "app.example.com"}
	so["user"] = map[string]any{"id": base64.RawURLEncoding.EncodeToString([]byte("x")), "name": email}
	asReg, _ := json.Marshal(so)
	pkRefused(t, "a recovery with sign-in options", pkRecoverWith(c, si, pkRegister(t, s.NewAuthenticator(), pkOptions{si.id, asReg}), third), "INVALID_OPTIONS_ERROR")
	// Nor are a token's options a sign-up's.
	o3 := pkOptionsOf(t, "options with the third token", pkRecoveryOptions(c, third))
	pkRefused(t, "a sign-up with recovery options", c.PasskeySignUp(o3.id, pkRegister(t, s.NewAuthenticator(), o3)), "INVALID_OPTIONS_ERROR")
}

// TestPasskeyRecoveryHeldByOther: where another user holds the passkey
// user's address (a passwordless user, or a provider that vouched for
// it, proved it), a recovery request mails nothing, and a token mailed
// before the other user came is refused: RECOVER_ACCOUNT_NOT_ALLOWED,
// with the SDKs' reason, and nothing changes.
func TestPasskeyRecoveryHeldByOther(t *testing.T) {
	t.Parallel()
	for _, other := range []string{"passwordless", "provider"} {
		for _, linking := range []bool{false, true} {
			t.Run(other+"/linking "+map[bool]string{false: "off", true: "on"}[linking], func(t *testing.T) {
				t.Parallel()
				st := memstore.New()
				p := authtest.NewProvider(t)
				s := pkServer(t, auth.Config{Store: st, AccountLinking: linking,
					Passwordless: passwordless.Config{Flow: passwordless.Code},
					ThirdParty:   thirdparty.Config{Providers: append([]provider.Provider(nil), p.Provider())}})
				const email = "held@example.com"
				pkc, a, u := pkSignUp(t, s, authtest.Header, email)
				c := s.NewClient(authtest.Header)
				pkRequestRecovery(t, c, email)
				token := pkRecoveryLink(t, s, email, 0)
				o := pkOptionsOf(t, "options with the token", pkRecoveryOptions(c, token))

				// Another user proves the address.
				var res *authtest.Response
				if other == "passwordless" {
					res = plSignIn(t, s, s.NewClient(authtest.Header), email)
				} else {
					p.SetIdentity("held-provider", email, true)
					res = s.NewClient(authtest.Header).SignInWithProvider(p)
				}
				if res.Status != "OK" || userObject(t, res)["id"] == u.ID {
					t.Fatalf("the other user's sign-in: %s, want a user other than %s", res.Body, u.ID)
				}
				mails := len(s.Mailbox.Messages())
				pkRequestRecovery(t, c, email)

				res = pkRecoverWith(c, o, pkRegister(t, s.NewAuthenticator(), o), token)
				wantReply(t, "recovery while another user holds the address", res.StatusCode, res.Body, http.StatusOK,
					`{"status":"RECOVER_ACCOUNT_NOT_ALLOWED","reason":"Recover account link was not created because of account take over risk. Please contact support. (ERR_CODE_001)"}`)
				wantNoTokens(t, res)
				if to := pkDrain(t, s); len(to) != mails {
					t.Errorf("recovery mail went to %q while another user holds the address", to[mails:])
				}
				// Nothing changed: the passkey's session carries on, and
				// the passkey signs in, unless account linking refuses it
				// while another user owns its address.
				wantSession(t, pkc, u.ID)
				in := s.NewClient(authtest.Header)
				res = in.SignInWithPasskey(a)
				if linking {
					wantReply(t, "the passkey, whose address another user owns", res.StatusCode, res.Body, http.StatusOK,
						`{"status":"SIGN_IN_NOT_ALLOWED","reason":"Cannot sign in due to security reasons. Please try recovering your account, use a different login method or contact support. (ERR_CODE_030)"}`)
					wantNoTokens(t, res)
				} else if got := pkSignedIn(t, "the passkey after the refusal", s, in, res); got.ID != u.ID || len(got.LoginMethods) != 1 {
					t.Errorf("the passkey user after the refusal: %+v", got)
				}
			})
		}
	}
}

// TestPasskeyRecoveryUnderLinking: with account linking on, the recovered
// passkey proves and owns its address, so a later sign-in that proves it
// (passwordless) joins the recovered user; before the recovery, the
// passkey user owned nothing, and such a sign-in made a user of its own.
func TestPasskeyRecoveryUnderLinking(t *testing.T) {
	t.Parallel()
	st := memstore.New()
	s := pkServer(t, auth.Config{Store: st, AccountLinking: true, Passwordless: passwordless.Config{Flow: passwordless.Code}})
	const email = "linked-recovery@example.com"
	_, a, u := pkSignUp(t, s, authtest.Header, email)
	if l := pkLogin(t, st, pkCredID(a)); l.OwnsEmail || l.EmailProven {
		t.Errorf("a passkey sign-up's login owns or proves its address: %+v", l)
	}
	c := s.NewClient(authtest.Header)
	pkRequestRecovery(t, c, email)
	token := pkRecoveryLink(t, s, email, 0)
	fresh := s.NewAuthenticator()
	if res := pkRecover(t, c, fresh, token); res.Status != "OK" {
		t.Fatalf("recovery: %d %s", res.StatusCode, res.Body)
	}
	l := pkLogin(t, st, pkCredID(fresh))
	if !l.OwnsEmail || !l.EmailProven || !l.EmailVerified {
		t.Errorf("the recovered passkey's login %+v, want it to own %s, proven and verified", l, email)
	}
	// A second recovery: the newest passkey is the one that owns the
	// address, as after the first.
	pkRequestRecovery(t, c, email)
	token = pkRecoveryLink(t, s, email, 1)
	second := s.NewAuthenticator()
	if res := pkRecover(t, c, second, token); res.Status != "OK" {
		t.Fatalf("second recovery: %d %s", res.StatusCode, res.Body)
	}
	if _, err := st.Login(t.Context(), store.WebAuthnKey("app.example.com", pkCredID(fresh))); err == nil {
		t.Errorf("the first recovery's passkey outlived the second recovery")
	}
	if l := pkLogin(t, st, pkCredID(second)); !l.OwnsEmail || !l.EmailProven || !l.EmailVerified {
		t.Errorf("the second recovery's passkey: owns %v, proven %v, verified %v; want it to own %s, proven and verified (the first recovery's passkey, which owned it, is gone)",
			l.OwnsEmail, l.EmailProven, l.EmailVerified, email)
	}
	res := plSignIn(t, s, s.NewClient(authtest.Header), email)
	if res.Status != "OK" || userObject(t, res)["id"] != u.ID {
		t.Errorf("a passwordless sign-in with the recovered address: %s, want it to join user %s", res.Body, u.ID)
	}
}

// TestPasskeyRecoveryOwnsWithoutLinking: with account linking off, a
// recovered passkey proves its address and owns it, which a password
// reset's login does not: a store adds a login with an address to an
// existing user only as the address's owner or beside its owner, and
// nobody owns it without linking. Ownership is account linking's, so it
// changes nothing until linking is turned on; then the address is the
// account's that proved it.
func TestPasskeyRecoveryOwnsWithoutLinking(t *testing.T) {
	t.Parallel()
	st := memstore.New()
	s := pkServer(t, auth.Config{Store: st})
	const email = "unlinked-recovery@example.com"
	pkSignUp(t, s, authtest.Header, email)
	c := s.NewClient(authtest.Header)
	pkRequestRecovery(t, c, email)
	fresh := s.NewAuthenticator()
	if res := pkRecover(t, c, fresh, pkRecoveryLink(t, s, email, 0)); res.Status != "OK" {
		t.Fatalf("recovery: %d %s", res.StatusCode, res.Body)
	}
	if l := pkLogin(t, st, pkCredID(fresh)); !l.OwnsEmail || !l.EmailProven || !l.EmailVerified {
		t.Errorf("the recovered passkey's login with linking off: owns %v, proven %v, verified %v; want %s owned, proven and verified",
			l.OwnsEmail, l.EmailProven, l.EmailVerified, email)
	}
	// A reset's password login proves its address and owns nothing.
	_, pw := s.SignedIn(authtest.Header)
	before := len(s.Mailbox.Messages())
	if res := s.NewClient(authtest.Header).RequestPasswordReset(pw.Email); res.Status != "OK" {
		t.Fatal(res.Body)
	}
	_, tok := authtest.ResetLink(t, s.Mailbox.LastTo(t, pw.Email, before, 5*time.Second))
	if res := s.NewClient(authtest.Header).ResetPassword(tok, "a new password 12"); res.Status != "OK" {
		t.Fatal(res.Body)
	}
	if l, err := st.Login(t.Context(), store.EmailPasswordKey(pw.Email)); err != nil || l.OwnsEmail || !l.EmailProven {
		t.Errorf("the reset password login with linking off: %+v, %v; want it proven and owning nothing", l, err)
	}
}

// TestPasskeySignUpUnderLinking: with account linking on, a passkey
// sign-up for an address another user owns (a passwordless user, or a
// provider that vouched for it) is SIGN_UP_NOT_ALLOWED with the SDKs'
// reason, and makes nobody; for an address only an unproven login has (a
// password sign-up), it makes a user of its own, which owns nothing.
// With linking off, each makes a user of its own.
func TestPasskeySignUpUnderLinking(t *testing.T) {
	t.Parallel()
	for _, linking := range []bool{false, true} {
		t.Run(map[bool]string{false: "linking off", true: "linking on"}[linking], func(t *testing.T) {
			t.Parallel()
			st := memstore.New()
			p := authtest.NewProvider(t)
			s := pkServer(t, auth.Config{Store: st, AccountLinking: linking,
				Passwordless: passwordless.Config{Flow: passwordless.Code},
				ThirdParty:   thirdparty.Config{Providers: append([]provider.Provider(nil), p.Provider())}})
			if res := plSignIn(t, s, s.NewClient(authtest.Header), "pl-owner@example.com"); res.Status != "OK" {
				t.Fatalf("passwordless sign-up: %s", res.Body)
			}
			p.SetIdentity("tp-owner", "tp-owner@example.com", true)
			if res := s.NewClient(authtest.Header).SignInWithProvider(p); res.Status != "OK" {
				t.Fatalf("provider sign-up: %s", res.Body)
			}
			_, pw := s.SignedIn(authtest.Header)
			for _, email := range []string{"pl-owner@example.com", "tp-owner@example.com", pw.Email} {
				others, _ := st.LoginsByEmail(t.Context(), email)
				c := s.NewClient(authtest.Header)
				reg := pkRegisterOptions(t, c, email)
				res := c.PasskeySignUp(reg.id, pkRegister(t, s.NewAuthenticator(), reg))
				if linking && email != pw.Email {
					wantReply(t, "a passkey sign-up for "+email+", which another user owns", res.StatusCode, res.Body, http.StatusOK,
						`{"status":"SIGN_UP_NOT_ALLOWED","reason":"Cannot sign up due to security reasons. Please try logging in, use a different login method or contact support. (ERR_CODE_025)"}`)
					wantNoTokens(t, res)
					if logins, _ := st.LoginsByEmail(t.Context(), email); len(logins) != len(others) {
						t.Errorf("the refused sign-up left logins: %+v", logins)
					}
					continue
				}
				got := pkSignedIn(t, "a passkey sign-up for "+email, s, c, res)
				if slices.ContainsFunc(others, func(l store.Login) bool { return l.UserID == got.ID }) || got.IsPrimaryUser {
					t.Errorf("a passkey sign-up for %s joined user %s, or is primary", email, got.ID)
				}
				if l := pkLogin(t, st, got.WebAuthn.CredentialIDs[0]); l.OwnsEmail || l.EmailProven || l.EmailVerified {
					t.Errorf("the passkey login %+v owns, proves or verifies %s", l, email)
				}
			}
		})
	}
}

// TestPasskeyRecoveryOnTheSameDevice: the authenticator that holds the
// lost passkey registers the recovery's (the options exclude nothing),
// and then signs in with the new one only.
func TestPasskeyRecoveryOnTheSameDevice(t *testing.T) {
	t.Parallel()
	s := pkServer(t, auth.Config{})
	const email = "same-device@example.com"
	_, a, u := pkSignUp(t, s, authtest.Header, email)
	old := a.Credentials()[0].ID
	c := s.NewClient(authtest.Header)
	pkRequestRecovery(t, c, email)
	if res := pkRecover(t, c, a, pkRecoveryLink(t, s, email, 0)); res.Status != "OK" {
		t.Fatalf("recovery on the same device: %d %s", res.StatusCode, res.Body)
	}
	in := s.NewClient(authtest.Header)
	if got := pkSignedIn(t, "the recovered passkey", s, in, in.SignInWithPasskey(a)); got.ID != u.ID {
		t.Errorf("signed in as %s, want %s", got.ID, u.ID)
	}
	o := pkSignInOptions(t, in)
	pkRefused(t, "the lost passkey", in.PasskeySignIn(o.id, pkAssert(t, a, o, authtest.WithCredential(old))), "INVALID_CREDENTIALS_ERROR")
}
