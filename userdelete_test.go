package auth_test

// Tests of Auth.DeleteUser as a user and the application see it: nothing
// the deleted user held works any more, in any transfer mode, and their
// email is free again; nobody else is touched.

import (
	"errors"
	"net/http"
	"testing"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/emailverification"
	"github.com/latchkit/auth/store/memstore"
)

func TestDeleteUser(t *testing.T) {
	t.Parallel()
	events := newEventLog()
	st := memstore.New()
	s := authtest.NewServer(t, auth.Config{
		Store: st, OnEvent: events.record,
		EmailVerification: emailverification.Config{Mode: emailverification.Optional},
	})
	// Another instance of the application on the same store, which reads
	// the store for every session.
	checking := authtest.NewServer(t, auth.Config{Store: st, CheckSessionInStore: true})
	ctx := t.Context()
	const email = "gone@example.com"

	// The user holds a session in each transfer mode, a reset link and a
	// verification link.
	clients := map[authtest.Mode]*authtest.Client{}
	first := s.NewClient(authtest.Cookie)
	uid := wantOK(t, "sign-up", first.SignUp(email, authtest.Password))
	clients[authtest.Cookie] = first
	for _, m := range []authtest.Mode{authtest.Header, authtest.Body} {
		c := s.NewClient(m)
		if got := wantOK(t, "sign-in, "+m.String(), c.SignIn(email, authtest.Password)); got != uid {
			t.Fatalf("sign-in as %s, want %s", got, uid)
		}
		clients[m] = c
	}
	other, ou := s.SignedIn(authtest.Header)
	resetTok := requestToken(t, s, email, 1)
	verifyTok := verificationToken(t, s, clients[authtest.Header], 2)

	handles := map[string]bool{}
	tokens := map[authtest.Mode][2]string{}
	for _, m := range authtest.Modes {
		c := clients[m]
		wantSession(t, c, uid)
		handles[handleOf(t, c)] = true
		access, refresh := c.Tokens()
		tokens[m] = [2]string{access, refresh}
	}
	if len(handles) != 3 {
		t.Fatalf("sessions %v, want three", handles)
	}

	if err := s.Auth.DeleteUser(ctx, uid); err != nil {
		t.Fatalf("DeleteUser: %v", err)
	}

	if u, err := s.Auth.UserByID(ctx, uid); !errors.Is(err, auth.ErrNotFound) {
		t.Errorf("UserByID after DeleteUser: %+v, %v; want ErrNotFound", u, err)
	}
	if u, err := s.Auth.UserByEmail(ctx, email); !errors.Is(err, auth.ErrNotFound) {
		t.Errorf("UserByEmail after DeleteUser: %+v, %v; want ErrNotFound", u, err)
	}
	if ss, err := s.Auth.Sessions(ctx, uid); err != nil || len(ss) != 0 {
		t.Errorf("Sessions after DeleteUser: %+v (%v), want none", ss, err)
	}
	if logins := loginsWithEmail(t, st, email); len(logins) != 0 {
		t.Errorf("logins of %s after DeleteUser: %+v", email, logins)
	}

	for _, m := range authtest.Modes {
		c := clients[m]
		access, refresh := tokens[m][0], tokens[m][1]
		// The access token is refused at once on this instance, though
		// it does not read the store for sessions.
		res := c.Get("/api/session")
		if res.StatusCode != http.StatusUnauthorized || res.Message != "unauthorised" || res.Header.Get("Front-Token") != "remove" {
			t.Errorf("%s: protected route with the deleted user's access token: %d %v %s, want 401 unauthorised and the tokens cleared",
				m, res.StatusCode, res.Header.Values("Front-Token"), res.Body)
		}
		c.SetTokens(access, refresh)
		if res := c.IsEmailVerified(); res.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s: GET /user/email/verify with the deleted user's token: %d %s, want 401", m, res.StatusCode, res.Body)
		}
		c.SetTokens(access, refresh)
		if res := c.Refresh(); res.StatusCode != http.StatusUnauthorized || res.Message != "unauthorised" || res.IssuedTokens() {
			t.Errorf("%s: refresh of the deleted user's session: %d %s, want 401 unauthorised", m, res.StatusCode, res.Body)
		}
	}
	// Another instance that checks the store refuses the access token too.
	if res := send(t, checking, "GET", "/api/session", "", hdr("Authorization", "Bearer "+tokens[authtest.Header][0])); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("an instance with CheckSessionInStore: %d %s, want 401", res.StatusCode, res.Body)
	}

	wantLinks := func(when string) {
		t.Helper()
		c := s.NewClient(authtest.Header)
		res := c.ResetPassword(resetTok, newPassword)
		wantReply(t, "reset link "+when, res.StatusCode, res.Body, http.StatusOK, invalidTokenBody)
		res = c.VerifyEmail(verifyTok)
		wantReply(t, "verification link "+when, res.StatusCode, res.Body, http.StatusOK, `{"status":"EMAIL_VERIFICATION_INVALID_TOKEN_ERROR"}`)
	}
	wantLinks("of the deleted user")
	wantSignIn(t, s, email, authtest.Password, false)

	// The email signs up again, as a new user, whom the old links and
	// tokens do not reach.
	again := s.NewClient(authtest.Header)
	nid := wantOK(t, "sign-up again", again.SignUp(email, authtest.Password))
	if nid == uid {
		t.Errorf("the new user has the deleted user's id %s", uid)
	}
	wantSession(t, again, nid)
	wantLinks("after a new sign-up with the email")
	wantSignIn(t, s, email, newPassword, false)
	if u, err := s.Auth.UserByID(ctx, nid); err != nil || u.LoginMethods[0].EmailVerified {
		t.Errorf("the new user: %+v (%v), want an unverified email", u, err)
	}
	c := clients[authtest.Header]
	c.SetTokens(tokens[authtest.Header][0], tokens[authtest.Header][1])
	if res := c.Get("/api/session"); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("the deleted user's access token after a new sign-up with the email: %d %s, want 401", res.StatusCode, res.Body)
	}

	// The other user is untouched.
	wantSession(t, other, ou.ID)
	if res := other.Refresh(); res.Status != "OK" {
		t.Errorf("the other user's refresh: %d %s", res.StatusCode, res.Body)
	}
	if u, err := s.Auth.UserByID(ctx, ou.ID); err != nil || u.Email != ou.Email {
		t.Errorf("the other user: %+v (%v)", u, err)
	}
	if ss, err := s.Auth.Sessions(ctx, ou.ID); err != nil || len(ss) != 1 {
		t.Errorf("the other user's sessions: %+v (%v), want one", ss, err)
	}

	deleted := events.of(auth.EventUserDeleted)
	if len(deleted) != 1 || deleted[0].UserID != uid {
		t.Errorf("user_deleted events %+v, want one for %s", deleted, uid)
	}
	revoked := map[string]bool{}
	for _, e := range events.of(auth.EventSessionRevoked) {
		if e.UserID != uid {
			t.Errorf("session_revoked event %+v, want only the deleted user's", e)
		}
		revoked[e.SessionHandle] = true
	}
	if len(revoked) != len(handles) {
		t.Errorf("session_revoked for %v, want %v", revoked, handles)
	}
	for h := range handles {
		if !revoked[h] {
			t.Errorf("no session_revoked event for session %s", h)
		}
	}

	if err := s.Auth.DeleteUser(ctx, uid); !errors.Is(err, auth.ErrNotFound) {
		t.Errorf("DeleteUser again: %v, want ErrNotFound", err)
	}
	if err := s.Auth.DeleteUser(ctx, "no-such-user"); !errors.Is(err, auth.ErrNotFound) {
		t.Errorf("DeleteUser of an unknown user: %v, want ErrNotFound", err)
	}
	if n := len(events.of(auth.EventUserDeleted)); n != 1 {
		t.Errorf("%d user_deleted events after deleting nobody, want 1", n)
	}
}

// Deleting a user with two login methods removes both; the email then
// belongs to nobody, and the next sign-up with it makes a new user.
func TestDeleteLinkedUser(t *testing.T) {
	t.Parallel()
	st := memstore.New()
	s, p := linkingServer(t, true, auth.Config{Store: st})
	const email = "ada@example.com"
	pw, tp, uid, _ := linkedUser(t, s, p, email, "ada-google")

	if err := s.Auth.DeleteUser(t.Context(), uid); err != nil {
		t.Fatalf("DeleteUser: %v", err)
	}
	for name, c := range map[string]*authtest.Client{"password": pw, "provider": tp} {
		access, refresh := c.Tokens()
		if res := c.Get("/api/session"); res.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s session's access token: %d %s, want 401", name, res.StatusCode, res.Body)
		}
		c.SetTokens(access, refresh)
		if res := c.Refresh(); res.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s session's refresh: %d %s, want 401", name, res.StatusCode, res.Body)
		}
	}
	if logins := loginsWithEmail(t, st, email); len(logins) != 0 {
		t.Errorf("logins of %s after DeleteUser: %+v", email, logins)
	}
	wantSignIn(t, s, email, authtest.Password, false)

	c := s.NewClient(authtest.Header)
	res := c.SignInWithProvider(p)
	nid := wantOK(t, "provider sign-in after DeleteUser", res)
	if nid == uid || res.JSON["createdNewRecipeUser"] != true {
		t.Errorf("provider sign-in after DeleteUser: %s, want a new user", res.Body)
	}
	if user := userObject(t, res); user["isPrimaryUser"] != true || len(loginMethodsOf(t, user)) != 1 {
		t.Errorf("user %v: want a primary user (verified email) with one login method", user)
	}
	wantSession(t, c, nid)
}
