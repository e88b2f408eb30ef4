package auth_test

// Tests of account linking (PROTOCOL.md section 10) over HTTP, as a user
// of the SDKs meets it: which sign-ups join an existing user, which are
// refused and with what reason, who owns an email when sign-ups race, and
// the Go API's Unlink.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/emailverification"
	"github.com/latchkit/auth/provider"
	"github.com/latchkit/auth/store"
	"github.com/latchkit/auth/store/memstore"
	"github.com/latchkit/auth/thirdparty"
)

// The refusals of account linking, as the SDKs show them.
const (
	lkThirdPartySignUpRefused = `{"status":"SIGN_IN_UP_NOT_ALLOWED","reason":"Cannot sign in / up due to security reasons. Please try a different login method or contact support. (ERR_CODE_006)"}`
	lkPasswordSignUpRefused   = `{"status":"SIGN_UP_NOT_ALLOWED","reason":"Cannot sign up due to security reasons. Please try logging in, use a different login method or contact support. (ERR_CODE_007)"}`
	lkPasswordSignInRefused   = `{"status":"SIGN_IN_NOT_ALLOWED","reason":"Cannot sign in due to security reasons. Please try resetting your password, use a different login method or contact support. (ERR_CODE_008)"}`
	lkThirdPartySignInRefused = `{"status":"SIGN_IN_UP_NOT_ALLOWED","reason":"Cannot sign in / up due to security reasons. Please try a different login method or contact support. (ERR_CODE_004)"}`
	lkEmailChangeRefused      = `{"status":"SIGN_IN_UP_NOT_ALLOWED","reason":"Cannot sign in / up because new email cannot be applied to existing account. Please contact support. (ERR_CODE_005)"}`
)

// Off by default: a provider's user with the email of a password user is
// a second user, even when both emails are verified, and neither is a
// primary user.
func TestLinkingOffMakesTwoUsers(t *testing.T) {
	t.Parallel()
	s, p := linkingServer(t, false, auth.Config{})
	const email = "ada@example.com"
	_, pwID := signUpWith(t, s, authtest.Header, email, authtest.Password)
	if err := s.Auth.SetEmailVerified(t.Context(), pwID, true); err != nil {
		t.Fatal(err)
	}
	signIn := s.NewClient(authtest.Header).SignIn(email, authtest.Password)
	if wantOK(t, "password sign-in", signIn); userObject(t, signIn)["isPrimaryUser"] != false {
		t.Errorf("password user with linking off: isPrimaryUser %v, want false", userObject(t, signIn)["isPrimaryUser"])
	}

	p.SetIdentity("ada-google", email, true)
	res := s.NewClient(authtest.Header).SignInWithProvider(p)
	tpID := wantOK(t, "provider sign-in", res)
	if tpID == pwID || res.JSON["createdNewRecipeUser"] != true {
		t.Fatalf("provider sign-in: %s, want a new user besides %s", res.Body, pwID)
	}
	user := userObject(t, res)
	methods := loginMethodsOf(t, user)
	if user["isPrimaryUser"] != false || len(methods) != 1 || methods[0]["recipeUserId"] != tpID || methods[0]["recipeId"] != "thirdparty" {
		t.Errorf("user %v: want isPrimaryUser false and one thirdparty login method whose recipeUserId is the user's id", user)
	}
	for _, id := range []string{pwID, tpID} {
		u, err := s.Auth.UserByID(t.Context(), id)
		if err != nil || len(u.LoginMethods) != 1 || u.LoginMethods[0].ID != id {
			t.Errorf("user %s: %+v (%v), want one login method with the user's id", id, u, err)
		}
	}
}

// Both emails proven (the password by a reset from the inbox): the new
// login method joins the user who owns the email, which is a primary
// user; its session names the user in sub and the new login in rsub.
func TestLinkVerifiedJoinsVerified(t *testing.T) {
	t.Parallel()
	events := newEventLog()
	s, p := linkingServer(t, true, auth.Config{OnEvent: events.record})
	const email = "ada@example.com"
	_, uid := signUpWith(t, s, authtest.Header, email, authtest.Password)
	joined := float64(s.Clock.Now().UnixMilli())
	tok := requestToken(t, s, email, 1)
	if res := s.NewClient(authtest.Header).ResetPassword(tok, newPassword); res.Status != "OK" {
		t.Fatalf("reset: %d %s", res.StatusCode, res.Body)
	}
	// A user that owns its email is a primary user.
	signIn := s.NewClient(authtest.Header).SignIn(email, newPassword)
	if wantOK(t, "password sign-in", signIn) != uid || userObject(t, signIn)["isPrimaryUser"] != true {
		t.Errorf("password sign-in after the reset: %s, want user %s with isPrimaryUser true", signIn.Body, uid)
	}

	s.Clock.Advance(time.Minute)
	linkedAt := float64(s.Clock.Now().UnixMilli())
	p.SetIdentity("ada-google", email, true)
	c := s.NewClient(authtest.Header)
	res := c.SignInWithProvider(p)
	if got := wantOK(t, "provider sign-in", res); got != uid || res.JSON["createdNewRecipeUser"] != true {
		t.Fatalf("provider sign-in: %s, want user %s with createdNewRecipeUser true", res.Body, uid)
	}
	user := userObject(t, res)
	methods := loginMethodsOf(t, user)
	if len(methods) != 2 {
		t.Fatalf("loginMethods %v, want two", user["loginMethods"])
	}
	tpLogin, _ := methods[1]["recipeUserId"].(string)
	if tpLogin == "" || tpLogin == uid {
		t.Fatalf("the new login method's recipeUserId is %q, want its own, not the user's %s", tpLogin, uid)
	}
	tenants := []any{"public"}
	want := map[string]any{
		"id": uid, "isPrimaryUser": true, "tenantIds": tenants,
		"emails": []any{email}, "phoneNumbers": []any{},
		"thirdParty": []any{map[string]any{"id": authtest.ProviderID, "userId": "ada-google"}},
		"webauthn":   map[string]any{"credentialIds": []any{}},
		"loginMethods": []any{
			map[string]any{"recipeId": "emailpassword", "recipeUserId": uid, "tenantIds": tenants,
				"email": email, "timeJoined": joined, "verified": true},
			map[string]any{"recipeId": "thirdparty", "recipeUserId": tpLogin, "tenantIds": tenants,
				"email": email, "thirdParty": map[string]any{"id": authtest.ProviderID, "userId": "ada-google"},
				"timeJoined": linkedAt, "verified": true},
		},
		"timeJoined": joined,
	}
	if !reflect.DeepEqual(user, want) {
		t.Errorf("user %v,\nwant %v", user, want)
	}

	// The session: sub and uid are the user, rsub the new login.
	ft := decodeFrontToken(t, c.FrontToken)
	_, payload := jwtParts(t, c.AccessToken)
	if ft.UID != uid || payload["sub"] != uid || payload["rsub"] != tpLogin || ft.UP["rsub"] != tpLogin {
		t.Errorf("front-token uid %s, access token sub %v rsub %v: want %s and rsub %s", ft.UID, payload["sub"], payload["rsub"], uid, tpLogin)
	}
	wantClaim(t, c, true)
	wantSession(t, c, uid)
	h := handleOf(t, c)
	sessions, err := s.Auth.Sessions(t.Context(), uid)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, si := range sessions {
		if si.Handle == h {
			found = true
			if si.LoginID != tpLogin {
				t.Errorf("session %s: LoginID %s, want the third-party login %s", h, si.LoginID, tpLogin)
			}
		}
	}
	if !found {
		t.Errorf("Sessions of %s: %+v, lacks the provider's session %s", uid, sessions, h)
	}
	if res := c.Refresh(); res.Status != "OK" {
		t.Fatalf("refresh: %d %s", res.StatusCode, res.Body)
	}
	if _, payload := jwtParts(t, c.AccessToken); payload["sub"] != uid || payload["rsub"] != tpLogin {
		t.Errorf("after a refresh: sub %v rsub %v, want %s %s", payload["sub"], payload["rsub"], uid, tpLogin)
	}

	linked := events.of(auth.EventAccountLinked)
	if len(linked) != 1 || linked[0].UserID != uid || linked[0].Method != "thirdparty" || linked[0].ThirdPartyID != authtest.ProviderID {
		t.Errorf("account_linked events %+v, want one for %s by thirdparty/%s", linked, uid, authtest.ProviderID)
	}

	// Later sign-ins with either method are the same user.
	again := s.NewClient(authtest.Header).SignInWithProvider(p)
	if wantOK(t, "provider sign-in again", again) != uid || again.JSON["createdNewRecipeUser"] != false {
		t.Errorf("provider sign-in again: %s, want user %s, createdNewRecipeUser false", again.Body, uid)
	}
	signIn = s.NewClient(authtest.Header).SignIn(email, newPassword)
	if wantOK(t, "password sign-in", signIn) != uid || len(loginMethodsOf(t, userObject(t, signIn))) != 2 {
		t.Errorf("password sign-in: %s, want user %s with both login methods", signIn.Body, uid)
	}
	u, err := s.Auth.UserByID(t.Context(), uid)
	if err != nil || len(u.LoginMethods) != 2 || u.LoginMethods[0].ID != uid || u.LoginMethods[1].ID != tpLogin ||
		u.LoginMethods[1].ThirdPartyUserID != "ada-google" || !u.LoginMethods[1].EmailVerified {
		t.Errorf("Go API: %+v (%v), want the password login %s and the third-party login %s", u, err, uid, tpLogin)
	}
	if n := len(events.of(auth.EventAccountLinked)); n != 1 {
		t.Errorf("%d account_linked events after later sign-ins, want still 1", n)
	}
}

// A new login method whose email the provider does not vouch for proves
// nothing: it joins nobody and owns nothing. Where someone owns the
// address it is refused; otherwise it makes a user of its own, and the
// existing user is untouched.
func TestLinkUnverifiedNewLoginJoinsNobody(t *testing.T) {
	t.Parallel()
	for _, existingVerified := range []bool{true, false} {
		t.Run(fmt.Sprintf("existing verified %v", existingVerified), func(t *testing.T) {
			t.Parallel()
			st := memstore.New()
			s, p := linkingServer(t, true, auth.Config{Store: st})
			const email = "ada@example.com"
			_, uid := signUpWith(t, s, authtest.Header, email, authtest.Password)
			if existingVerified {
				if err := s.Auth.SetEmailVerified(t.Context(), uid, true); err != nil {
					t.Fatal(err)
				}
			}
			p.SetIdentity("ada-google", email, false)
			res := s.NewClient(authtest.Header).SignInWithProvider(p)
			logins := loginsWithEmail(t, st, email)
			if existingVerified {
				wantNotAllowed(t, "unverified provider sign-in", res, lkThirdPartySignUpRefused)
				wantNoTokens(t, res)
				if len(logins) != 1 || logins[0].UserID != uid {
					t.Errorf("logins of %s: %+v, want only the password user's", email, logins)
				}
			} else {
				other := wantOK(t, "unverified provider sign-in", res)
				if other == uid || len(logins) != 2 || logins[0].OwnsEmail || logins[1].OwnsEmail {
					t.Errorf("user %s, logins of %s: %+v, want two users, neither owning the address", other, email, logins)
				}
				if userObject(t, res)["isPrimaryUser"] != false {
					t.Errorf("the unverified login's user: %s, want not primary", res.Body)
				}
			}
			if u, err := s.Auth.UserByID(t.Context(), uid); err != nil || len(u.LoginMethods) != 1 {
				t.Errorf("user %s: %+v (%v), want one login method", uid, u, err)
			}
			wantSignIn(t, s, email, authtest.Password, true)
		})
	}
}

// Someone signs up with a password and an address they do not control.
// When the owner of the address signs in with a provider that vouches for
// it, the sign-in joins that account only after ending what its maker
// holds: the password no longer signs in and the maker's sessions end. A
// reset from the inbox then gives the owner a password of their own.
func TestLinkPreTakeoverEvicted(t *testing.T) {
	t.Parallel()
	st := memstore.New()
	events := newEventLog()
	s, p := linkingServer(t, true, auth.Config{Store: st, OnEvent: events.record})
	const victim = "victim@example.com"
	const attackerPassword = "attacker pw 1"
	attacker, aid := signUpWith(t, s, authtest.Cookie, victim, attackerPassword)
	wantSession(t, attacker, aid)

	p.SetIdentity("victim-google", victim, true)
	c := s.NewClient(authtest.Header)
	res := c.SignInWithProvider(p)
	if got := wantOK(t, "the owner's provider sign-in", res); got != aid || res.JSON["createdNewRecipeUser"] != true {
		t.Errorf("provider sign-in: %s, want the account %s, createdNewRecipeUser true", res.Body, aid)
	}
	if user := userObject(t, res); user["isPrimaryUser"] != true || len(loginMethodsOf(t, user)) != 2 {
		t.Errorf("user %v: want a primary user with two login methods", user)
	}
	wantSession(t, c, aid)
	if res := attacker.Refresh(); res.StatusCode != http.StatusUnauthorized || res.Header.Get("Auth-Reason") != string(auth.ReasonRevoked) {
		t.Errorf("the maker's refresh after the join: %d %s %q, want 401 revoked", res.StatusCode, res.Body, res.Header.Get("Auth-Reason"))
	}
	wantSignIn(t, s, victim, attackerPassword, false)
	if n := len(events.of(auth.EventSessionRevoked)); n != 1 {
		t.Errorf("%d session_revoked events, want 1 (the maker's session)", n)
	}
	logins := oneOwner(t, st, victim)
	if len(logins) != 2 || logins[0].UserID != aid || logins[1].UserID != aid || !logins[1].OwnsEmail || logins[0].PasswordHash != "" {
		t.Errorf("logins of %s: %+v, want both of user %s, the provider's owning the address, the password voided", victim, logins, aid)
	}

	// The password login is still there for a reset, which proves the
	// inbox again and sets the owner's own password.
	tok := requestToken(t, s, victim, 1)
	reset := s.NewClient(authtest.Header).ResetPassword(tok, newPassword)
	wantReply(t, "reset", reset.StatusCode, reset.Body, http.StatusOK, okBody)
	wantSignIn(t, s, victim, attackerPassword, false)
	wantSignIn(t, s, victim, newPassword, true)
	if got := wantOK(t, "provider sign-in after the reset", s.NewClient(authtest.Header).SignInWithProvider(p)); got != aid {
		t.Errorf("provider sign-in after the reset reached %s, want %s", got, aid)
	}
}

// A password sign-up with an address that a provider's user owns is
// refused: a new password proves no inbox, so it may join nobody. An
// address that a provider reported unverified is owned by nobody, and the
// sign-up makes a user of its own.
func TestLinkPasswordSignUpOfOwnedEmail(t *testing.T) {
	t.Parallel()
	for _, verified := range []bool{true, false} {
		t.Run(fmt.Sprintf("provider verified %v", verified), func(t *testing.T) {
			t.Parallel()
			st := memstore.New()
			s, p := linkingServer(t, true, auth.Config{Store: st})
			const email = "ada@example.com"
			p.SetIdentity("ada-google", email, verified)
			tpID := wantOK(t, "provider sign-up", s.NewClient(authtest.Header).SignInWithProvider(p))

			if !verified {
				uid := wantOK(t, "password sign-up", s.NewClient(authtest.Header).SignUp(email, authtest.Password))
				if uid == tpID {
					t.Errorf("the password sign-up joined the unverified provider user %s", tpID)
				}
				wantSignIn(t, s, email, authtest.Password, true)
				return
			}
			for _, m := range authtest.Modes {
				res := s.NewClient(m).SignUp(email, authtest.Password)
				wantNotAllowed(t, "password sign-up, "+m.String(), res, lkPasswordSignUpRefused)
				wantNoTokens(t, res)
			}
			if logins := loginsWithEmail(t, st, email); len(logins) != 1 || logins[0].UserID != tpID {
				t.Errorf("logins of %s: %+v, want only the provider user's", email, logins)
			}
			if _, err := s.Auth.UserByEmail(t.Context(), email); !errors.Is(err, auth.ErrNotFound) {
				t.Errorf("UserByEmail after the refused sign-up: %v, want ErrNotFound", err)
			}
			wantSignIn(t, s, email, authtest.Password, false)
		})
	}
}

// A password login made while linking was off, whose email another user
// has verified, cannot sign in once linking is on until its own email is
// verified; nor can a provider's login whose email is unverified.
func TestLinkPasswordSignInConflict(t *testing.T) {
	t.Parallel()
	st := memstore.New()
	before, p := linkingServer(t, false, auth.Config{Store: st})
	const email = "ada@example.com"
	_, pwID := signUpWith(t, before, authtest.Header, email, authtest.Password)
	p.SetIdentity("ada-google", email, true)
	tpID := wantOK(t, "provider sign-up", before.NewClient(authtest.Header).SignInWithProvider(p))
	if tpID == pwID {
		t.Fatalf("linking off, yet one user %s", tpID)
	}
	p.SetIdentity("bob-google", email, false)
	bobID := wantOK(t, "unverified provider sign-up", before.NewClient(authtest.Header).SignInWithProvider(p))

	after := authtest.NewServer(t, auth.Config{
		Store: st, AccountLinking: true,
		EmailVerification: emailverification.Config{Mode: emailverification.Optional},
		ThirdParty:        thirdparty.Config{Providers: []provider.Provider{p.Provider()}},
	})
	for _, m := range authtest.Modes {
		res := after.NewClient(m).SignIn(email, authtest.Password)
		wantNotAllowed(t, "password sign-in, "+m.String(), res, lkPasswordSignInRefused)
		wantNoTokens(t, res)
	}
	// A wrong password is still just that: the refusal tells nothing to
	// whoever does not know the password.
	wantSignIn(t, after, email, wrongPassword, false)
	res := after.NewClient(authtest.Header).SignInWithProvider(p)
	wantNotAllowed(t, "unverified provider sign-in", res, lkThirdPartySignInRefused)
	if u, err := after.Auth.UserByID(t.Context(), bobID); err != nil || len(u.LoginMethods) != 1 {
		t.Errorf("the refused provider's user: %+v (%v)", u, err)
	}
	// The provider's user whose email is verified signs in as before.
	p.SetIdentity("ada-google", email, true)
	res = after.NewClient(authtest.Header).SignInWithProvider(p)
	if wantOK(t, "provider sign-in", res) != tpID || res.JSON["createdNewRecipeUser"] != false {
		t.Errorf("provider sign-in: %s, want user %s, not created", res.Body, tpID)
	}

	if err := after.Auth.SetEmailVerified(t.Context(), pwID, true); err != nil {
		t.Fatal(err)
	}
	c := after.NewClient(authtest.Header)
	res = c.SignIn(email, authtest.Password)
	if wantOK(t, "password sign-in after verification", res) != pwID || len(loginMethodsOf(t, userObject(t, res))) != 1 {
		t.Errorf("password sign-in after verification: %s, want user %s with one login method", res.Body, pwID)
	}
	wantSession(t, c, pwID)
	// Nobody was merged behind the users' backs.
	res = after.NewClient(authtest.Header).SignInWithProvider(p)
	if wantOK(t, "provider sign-in", res) != tpID || len(loginMethodsOf(t, userObject(t, res))) != 1 {
		t.Errorf("provider sign-in after the password user's verification: %s, want user %s alone", res.Body, tpID)
	}
}

// A password login made while linking was off becomes a primary user,
// owning its email, once a password reset, whose emailed link proves the
// inbox and sets the password, proves it (PROTOCOL.md sections 8.3 and
// 10). A verification link verifies the email and proves nothing: the
// login stays a user of its own, owning nothing.
func TestLinkPreexistingLoginVerifiedBecomesPrimary(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"verification link", "password reset"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			st := memstore.New()
			off, _ := linkingServer(t, false, auth.Config{Store: st})
			const email = "ada@example.com"
			_, uid := signUpWith(t, off, authtest.Header, email, authtest.Password)

			on, _ := linkingServer(t, true, auth.Config{Store: st})
			password := authtest.Password
			switch how {
			case "verification link":
				c := on.NewClient(authtest.Header)
				wantOK(t, "sign-in", c.SignIn(email, password))
				verifyByLink(t, on, c, 1)
			case "password reset":
				tok := requestToken(t, on, email, 1)
				res := on.NewClient(authtest.Header).ResetPassword(tok, newPassword)
				wantReply(t, "reset", res.StatusCode, res.Body, http.StatusOK, okBody)
				password = newPassword
			}
			proves := how == "password reset"
			res := on.NewClient(authtest.Header).SignIn(email, password)
			if wantOK(t, "sign-in after verification", res) != uid || userObject(t, res)["isPrimaryUser"] != proves {
				t.Errorf("sign-in after the %s: %s, want user %s with isPrimaryUser %v", how, res.Body, uid, proves)
			}
			if logins := loginsWithEmail(t, st, email); len(logins) != 1 || logins[0].OwnsEmail != proves || !logins[0].EmailVerified {
				t.Errorf("after the %s: %+v, want the login verified, owning its email: %v", how, logins, proves)
			}
		})
	}
}

// A provider that now reports, for an identity of one user, an email that
// another user owns: the change is refused with ERR_CODE_005 (PROTOCOL.md
// section 7.2; ERR_CODE_004 is taken too for an unverified email, as a
// sign-in that would now conflict, section 10), nothing is written, and
// the user keeps the email they had, and with it their primary status.
func TestLinkProviderEmailChangeToOwnedEmail(t *testing.T) {
	t.Parallel()
	for _, verified := range []bool{true, false} {
		t.Run(fmt.Sprintf("new email verified %v", verified), func(t *testing.T) {
			t.Parallel()
			st := memstore.New()
			s, p := linkingServer(t, true, auth.Config{Store: st})
			const mine, theirs = "a@example.com", "b@example.com"
			_, bid := signUpWith(t, s, authtest.Header, theirs, authtest.Password)
			if err := s.Auth.SetEmailVerified(t.Context(), bid, true); err != nil {
				t.Fatal(err)
			}
			p.SetIdentity("a-sub", mine, true)
			aid := wantOK(t, "provider sign-up", s.NewClient(authtest.Header).SignInWithProvider(p))

			p.SetIdentity("a-sub", theirs, verified)
			res := s.NewClient(authtest.Header).SignInWithProvider(p)
			if !verified && string(res.Body) == lkThirdPartySignInRefused {
				wantNotAllowed(t, "provider sign-in with another user's email", res, lkThirdPartySignInRefused)
			} else {
				wantNotAllowed(t, "provider sign-in with another user's email", res, lkEmailChangeRefused)
			}
			if u, err := s.Auth.UserByID(t.Context(), aid); err != nil || len(u.LoginMethods) != 1 ||
				u.LoginMethods[0].Email != mine || !u.LoginMethods[0].EmailVerified {
				t.Errorf("after the refused change: %+v (%v), want the login to keep %s, verified", u, err, mine)
			}
			if logins := loginsWithEmail(t, st, theirs); len(logins) != 1 || logins[0].UserID != bid {
				t.Errorf("logins of %s: %+v, want only its owner's", theirs, logins)
			}

			p.SetIdentity("a-sub", mine, true)
			res = s.NewClient(authtest.Header).SignInWithProvider(p)
			if wantOK(t, "provider sign-in with the user's own email", res) != aid || userObject(t, res)["isPrimaryUser"] != true {
				t.Errorf("provider sign-in with %s: %s, want user %s, still a primary user", mine, res.Body, aid)
			}
		})
	}
}

// A password reset of a linked user touches only its password login; a
// user without one gets no reset email.
func TestLinkPasswordResetOnlyPasswordLogin(t *testing.T) {
	t.Parallel()
	events := newEventLog()
	s, p := linkingServer(t, true, auth.Config{OnEvent: events.record})
	const email = "ada@example.com"
	_, _, uid, tpLogin := linkedUser(t, s, p, email, "ada-google")
	before, err := s.Auth.UserByID(t.Context(), uid)
	if err != nil {
		t.Fatal(err)
	}

	tok := requestToken(t, s, email, 1)
	res := s.NewClient(authtest.Header).ResetPassword(tok, newPassword)
	wantReply(t, "reset", res.StatusCode, res.Body, http.StatusOK, okBody)
	after, err := s.Auth.UserByID(t.Context(), uid)
	if err != nil || len(after.LoginMethods) != 2 || !reflect.DeepEqual(after.LoginMethods[1], before.LoginMethods[1]) ||
		after.LoginMethods[0].ID != uid || after.LoginMethods[0].Method != "emailpassword" || !after.LoginMethods[0].EmailVerified {
		t.Errorf("after the reset: %+v (%v), want the password login and the untouched %+v", after.LoginMethods, err, before.LoginMethods[1])
	}
	wantSignIn(t, s, email, authtest.Password, false)
	signIn := s.NewClient(authtest.Header).SignIn(email, newPassword)
	if wantOK(t, "sign-in with the new password", signIn) != uid || len(loginMethodsOf(t, userObject(t, signIn))) != 2 {
		t.Errorf("sign-in with the new password: %s, want user %s with both login methods", signIn.Body, uid)
	}
	again := s.NewClient(authtest.Header).SignInWithProvider(p)
	if wantOK(t, "provider sign-in", again) != uid || again.JSON["createdNewRecipeUser"] != false {
		t.Errorf("provider sign-in after the reset: %s, want user %s, not created", again.Body, uid)
	}
	if _, payload := jwtParts(t, again.Header.Get("St-Access-Token")); payload["rsub"] != tpLogin {
		t.Errorf("provider session's rsub %v, want %s", payload["rsub"], tpLogin)
	}

	// A user who has only a provider's login gets no reset email.
	p.SetIdentity("solo-google", "solo@example.com", true)
	solo := wantOK(t, "provider sign-up", s.NewClient(authtest.Header).SignInWithProvider(p))
	res = s.NewClient(authtest.Header).RequestPasswordReset("solo@example.com")
	wantReply(t, "reset request for a provider's user", res.StatusCode, res.Body, http.StatusOK, okBody)
	if err := s.Auth.Close(t.Context()); err != nil { // waits for the mail queue
		t.Fatal(err)
	}
	if msgs := s.Mailbox.Messages(); len(msgs) != 1 {
		t.Errorf("%d emails, want only the linked user's reset email", len(msgs))
	}
	if n := len(events.of(auth.EventResetEmailSent)); n != 1 {
		t.Errorf("%d reset_email_sent events, want 1", n)
	}
	if u, err := s.Auth.UserByID(t.Context(), solo); err != nil || len(u.LoginMethods) != 1 || u.LoginMethods[0].Method != "thirdparty" {
		t.Errorf("provider's user %+v (%v), want its one third-party login", u, err)
	}
}

// raceAll runs fns at once, released together.
func raceAll(fns ...func()) {
	start := make(chan struct{})
	var wg sync.WaitGroup
	for _, fn := range fns {
		wg.Go(func() {
			<-start
			fn()
		})
	}
	close(start)
	wg.Wait()
}

// linkGate is a store whose LoginsByEmail, once armed for n callers, holds
// the answer of each of them until all n have read, so that racing
// sign-ups all look before any of them writes: the interleaving that a plain race meets
// only now and then. Calls past the n go straight through. Held with
// holdSignInUp, a SignInUp waits until a CreateUser has finished: the
// password sign-up writes first.
type linkGate struct {
	store.Store
	mu      sync.Mutex
	waiting int
	open    chan struct{}
	created chan struct{} // closed by the next CreateUser; nil: no hold
}

func (g *linkGate) holdSignInUp() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.created = make(chan struct{})
}

func (g *linkGate) CreateUser(ctx context.Context, u store.User, first store.Login) error {
	err := g.Store.CreateUser(ctx, u, first)
	g.mu.Lock()
	if g.created != nil {
		close(g.created)
		g.created = nil
	}
	g.mu.Unlock()
	return err
}

func (g *linkGate) SignInUp(ctx context.Context, l store.Login, newUser store.User) (store.Login, bool, error) {
	g.mu.Lock()
	created := g.created
	g.mu.Unlock()
	if created != nil {
		select {
		case <-created:
		case <-time.After(2 * time.Second):
		}
	}
	return g.Store.SignInUp(ctx, l, newUser)
}

func (g *linkGate) arm(n int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.waiting, g.open = n, make(chan struct{})
}

func (g *linkGate) LoginsByEmail(ctx context.Context, email string) ([]store.Login, error) {
	g.mu.Lock()
	var open chan struct{}
	if g.waiting > 0 {
		open = g.open
		if g.waiting--; g.waiting == 0 {
			close(open)
		}
	}
	g.mu.Unlock()
	// Read first, then wait: each racer has its answer before any of
	// them can go on to write.
	logins, err := g.Store.LoginsByEmail(ctx, email)
	if open != nil {
		select {
		case <-open:
		case <-time.After(2 * time.Second): // a racer that never came to look
		}
	}
	return logins, err
}

// oneOwner checks that the logins of an email all belong to one user
// and that exactly one of them owns it, and returns them.
func oneOwner(t testing.TB, st store.Store, email string) []store.Login {
	t.Helper()
	logins := loginsWithEmail(t, st, email)
	owners := 0
	for _, l := range logins {
		if l.UserID != logins[0].UserID {
			t.Errorf("%s belongs to two users, %s and %s: %+v", email, logins[0].UserID, l.UserID, logins)
		}
		if l.OwnsEmail {
			owners++
		}
	}
	if owners != 1 {
		t.Errorf("%d logins own %s, want 1: %+v", owners, email, logins)
	}
	return logins
}

// Two first sign-ins, with two providers that both vouch for one email,
// race: they make one user with both logins, or one is refused; never two
// users with the email. Every other round both look up the email before
// either writes.
func TestLinkConcurrentFirstSignIns(t *testing.T) {
	t.Parallel()
	st := memstore.New()
	gate := &linkGate{Store: st}
	a := &scripted{id: "idp"}
	b := &scripted{id: "idp2"}
	s := authtest.NewServer(t, auth.Config{
		Store: gate, AccountLinking: true,
		ThirdParty: thirdparty.Config{Providers: []provider.Provider{a, b}},
		RateLimits: auth.RateLimits{ClientThirdPartySignIns: auth.Rate{Burst: 1000, Every: time.Millisecond}},
	})
	for round := range 16 {
		email := fmt.Sprintf("race%d@example.com", round)
		providers := []*scripted{a, b}
		bodies := make([]map[string]any, len(providers))
		for i, p := range providers {
			p.set(provider.Identity{Subject: fmt.Sprintf("%s-%d", p.id, round), Email: email, EmailVerified: true}, nil)
			redirect := callbackURL(s, p.id)
			bodies[i] = signInUpBody(p.id, redirect, fmt.Sprintf("code-%d", round), authorisationURL(t, s.NewClient(authtest.Header), p.id, redirect))
		}
		replies := make([]*authtest.Response, len(providers))
		if round%2 == 0 {
			gate.arm(2)
		}
		raceAll(
			func() { replies[0] = s.NewClient(authtest.Header).Do("POST", "/auth/signinup", bodies[0]) },
			func() { replies[1] = s.NewClient(authtest.Header).Do("POST", "/auth/signinup", bodies[1]) },
		)
		var ids []string
		for i, res := range replies {
			switch res.Status {
			case "OK":
				user := userObject(t, res)
				ids = append(ids, user["id"].(string))
				if user["isPrimaryUser"] != true {
					t.Errorf("round %d, %s: isPrimaryUser %v, want true (a verified email)", round, providers[i].id, user["isPrimaryUser"])
				}
			default:
				wantNotAllowed(t, fmt.Sprintf("round %d, %s", round, providers[i].id), res, lkThirdPartySignUpRefused)
			}
		}
		if len(ids) == 0 {
			t.Errorf("round %d: both sign-ins refused", round)
			continue
		}
		if len(ids) == 2 && ids[0] != ids[1] {
			t.Errorf("round %d: two users %s and %s with %s", round, ids[0], ids[1], email)
		}
		logins := oneOwner(t, st, email)
		if len(logins) != len(ids) {
			t.Errorf("round %d: %d logins of %s for %d successful sign-ins", round, len(logins), email, len(ids))
		}
		u, err := s.Auth.UserByID(t.Context(), ids[0])
		if err != nil || len(u.LoginMethods) != len(ids) {
			t.Errorf("round %d: user %+v (%v), want %d login methods", round, u, err, len(ids))
		}
	}
}

// A password sign-up and a provider's sign-up of one email race. The
// provider, which proves the address, always gets in and ends up its only
// owner; the password sign-up is refused if it comes second, and if it
// came first, it no longer opens anything once the provider is in: the
// provider joined its user after voiding its password and ending its
// session, or, where both wrote at once, the password's sign-ins are
// refused and its session ended. Every other round both look up the email
// before either writes, and in half of those the password sign-up writes
// first.
func TestLinkConcurrentPasswordAndProvider(t *testing.T) {
	t.Parallel()
	st := memstore.New()
	gate := &linkGate{Store: st}
	p := &scripted{id: "idp"}
	s := authtest.NewServer(t, auth.Config{
		Store: gate, AccountLinking: true,
		ThirdParty: thirdparty.Config{Providers: []provider.Provider{p}},
		RateLimits: auth.RateLimits{
			ClientThirdPartySignIns: auth.Rate{Burst: 1000, Every: time.Millisecond},
			ClientNewPasswords:      auth.Rate{Burst: 1000, Every: time.Millisecond},
		},
	})
	outcomes := map[string]int{}
	for round := range 16 {
		email := fmt.Sprintf("race%d@example.com", round)
		p.set(provider.Identity{Subject: fmt.Sprintf("sub-%d", round), Email: email, EmailVerified: true}, nil)
		redirect := callbackURL(s, "idp")
		body := signInUpBody("idp", redirect, fmt.Sprintf("code-%d", round), authorisationURL(t, s.NewClient(authtest.Header), "idp", redirect))
		var pw, tp *authtest.Response
		pwClient := s.NewClient(authtest.Header)
		if round%2 == 0 {
			gate.arm(2)
		}
		if round%4 == 2 {
			gate.holdSignInUp()
		}
		raceAll(
			func() { pw = pwClient.SignUp(email, authtest.Password) },
			func() { tp = s.NewClient(authtest.Header).Do("POST", "/auth/signinup", body) },
		)
		owner := wantOK(t, fmt.Sprintf("round %d, provider", round), tp)
		logins := loginsWithEmail(t, st, email)
		for _, l := range logins {
			if l.OwnsEmail && (l.Method != store.MethodThirdParty || l.UserID != owner) {
				t.Errorf("round %d: %+v owns the address, want the provider's login of %s", round, l, owner)
			}
		}
		switch {
		case pw.Status == "GENERAL_ERROR":
			// Its user was made, and its session ended before it began.
			outcomes["password's session ended"]++
		case pw.Status != "OK":
			wantNotAllowed(t, fmt.Sprintf("round %d, password", round), pw, lkPasswordSignUpRefused)
			outcomes["password refused"]++
		case userObject(t, pw)["id"] == owner:
			outcomes["provider joined the password user"]++
		default:
			// Both decided before either wrote: the provider's user
			// owns the address, and the password's user is left with
			// a login that a reset from the inbox must prove.
			outcomes["two users"]++
		}
		if pw.Status == "OK" {
			if res := pwClient.Refresh(); res.StatusCode != http.StatusUnauthorized {
				t.Errorf("round %d: the password's session after the provider got in: %d %s, want 401", round, res.StatusCode, res.Body)
			}
			if res := s.NewClient(authtest.Header).SignIn(email, authtest.Password); res.Status == "OK" {
				t.Errorf("round %d: the password signs in after the provider got in: %s", round, res.Body)
			}
		}
	}
	if outcomes["password refused"] == 0 || outcomes["provider joined the password user"] == 0 {
		t.Errorf("outcomes %v: want the password refused in some rounds and joined in others", outcomes)
	}
	t.Logf("outcomes: %v", outcomes)
}

// Unlink removes one login method of a user and ends the sessions it
// started; the user keeps the others and their sessions. The last one
// cannot go.
func TestUnlink(t *testing.T) {
	t.Parallel()
	events := newEventLog()
	s, p := linkingServer(t, true, auth.Config{OnEvent: events.record})
	ctx := t.Context()

	single, su := s.SignedIn(authtest.Header)
	if err := s.Auth.Unlink(ctx, su.ID, su.LoginMethods[0].ID); !errors.Is(err, auth.ErrLastLogin) {
		t.Errorf("Unlink of the only login method: %v, want ErrLastLogin", err)
	}
	if u, err := s.Auth.UserByID(ctx, su.ID); err != nil || len(u.LoginMethods) != 1 {
		t.Errorf("after a refused Unlink: %+v (%v)", u, err)
	}
	if res := single.Refresh(); res.Status != "OK" {
		t.Errorf("refresh after a refused Unlink: %d %s", res.StatusCode, res.Body)
	}

	const email = "ada@example.com"
	pw, tp, uid, tpLogin := linkedUser(t, s, p, email, "ada-google")
	tpHandle := handleOf(t, tp)
	if err := s.Auth.Unlink(ctx, su.ID, tpLogin); !errors.Is(err, auth.ErrNotFound) {
		t.Errorf("Unlink of another user's login method: %v, want ErrNotFound", err)
	}
	if err := s.Auth.Unlink(ctx, uid, "no-such-login"); !errors.Is(err, auth.ErrNotFound) {
		t.Errorf("Unlink of an unknown login method: %v, want ErrNotFound", err)
	}

	if err := s.Auth.Unlink(ctx, uid, tpLogin); err != nil {
		t.Fatalf("Unlink: %v", err)
	}
	if res := tp.Refresh(); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("refresh of the unlinked method's session: %d %s, want 401", res.StatusCode, res.Body)
	}
	if res := pw.Refresh(); res.Status != "OK" {
		t.Errorf("refresh of the other method's session: %d %s", res.StatusCode, res.Body)
	}
	wantSession(t, pw, uid)
	u, err := s.Auth.UserByID(ctx, uid)
	if err != nil || len(u.LoginMethods) != 1 || u.LoginMethods[0].ID != uid {
		t.Errorf("after Unlink: %+v (%v), want only the password login", u, err)
	}
	if ss, err := s.Auth.Sessions(ctx, uid); err != nil || len(ss) != 1 || ss[0].LoginID != uid {
		t.Errorf("sessions after Unlink: %+v (%v), want the password session alone", ss, err)
	}
	revoked := events.of(auth.EventSessionRevoked)
	if len(revoked) != 1 || revoked[0].SessionHandle != tpHandle || revoked[0].UserID != uid {
		t.Errorf("session_revoked events %+v, want one for %s", revoked, tpHandle)
	}
	if err := s.Auth.Unlink(ctx, uid, tpLogin); !errors.Is(err, auth.ErrNotFound) {
		t.Errorf("Unlink again: %v, want ErrNotFound", err)
	}

	// The provider's identity may join again, as a new login method.
	tp = s.NewClient(authtest.Header)
	res := tp.SignInWithProvider(p)
	if wantOK(t, "provider sign-in after Unlink", res) != uid || res.JSON["createdNewRecipeUser"] != true {
		t.Fatalf("provider sign-in after Unlink: %s, want user %s, createdNewRecipeUser true", res.Body, uid)
	}
	methods := loginMethodsOf(t, userObject(t, res))
	if len(methods) != 2 || methods[1]["recipeUserId"] == tpLogin || methods[1]["recipeUserId"] == uid {
		t.Errorf("login methods %v: want a new recipeUserId, not %s", methods, tpLogin)
	}

	// Unlinking the first login method, whose id is the user's, keeps
	// the user and the provider's session.
	if err := s.Auth.Unlink(ctx, uid, uid); err != nil {
		t.Fatalf("Unlink of the password login: %v", err)
	}
	if res := pw.Refresh(); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("refresh of the password session: %d %s, want 401", res.StatusCode, res.Body)
	}
	if res := tp.Refresh(); res.Status != "OK" {
		t.Errorf("refresh of the provider's session: %d %s", res.StatusCode, res.Body)
	}
	wantSession(t, tp, uid)
	wantSignIn(t, s, email, authtest.Password, false)
	if u, err := s.Auth.UserByID(ctx, uid); err != nil || len(u.LoginMethods) != 1 || u.LoginMethods[0].Method != "thirdparty" {
		t.Errorf("after unlinking the password: %+v (%v), want user %s with the third-party login", u, err, uid)
	}
	if err := s.Auth.Unlink(ctx, uid, methods[1]["recipeUserId"].(string)); !errors.Is(err, auth.ErrLastLogin) {
		t.Errorf("Unlink of the last one: %v, want ErrLastLogin", err)
	}
	res = s.NewClient(authtest.Header).SignInWithProvider(p)
	if wantOK(t, "provider sign-in", res) != uid {
		t.Errorf("provider sign-in: %s, want user %s", res.Body, uid)
	}
}
