package auth_test

// Tests of what ends, and when, as an application unlinks a login method
// or deletes a user whose sessions are live: refresh tokens at once on
// every instance; access tokens as Config.CheckSessionInStore and
// SessionCheckCache say, on the instance that made the change and on
// another sharing its store. In every transfer mode.

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/emailverification"
	"github.com/latchkit/auth/store/memstore"
)

// endCase is a way to run instances, and whether an ended session's
// access token still opens a protected route right after the change: on
// the instance that made it (here) and on another sharing the store
// (there).
type endCase struct {
	name                string
	check               bool          // Config.CheckSessionInStore
	cache               time.Duration // Config.SessionCheckCache
	liveHere, liveThere bool
}

// endFixture is two instances of one application on one store and one
// clock, and a user with two login methods (a password and a provider
// identity, one email) signed in with each in the mode under test.
type endFixture struct {
	clock        *authtest.Clock
	here, there  *authtest.Server
	uid, tpLogin string
	// pw and tp hold the sessions of the password and of the provider
	// login; tpHeader another session of the provider login, in header
	// mode.
	pw, tp, tpHeader *authtest.Client
}

func newEndFixture(t *testing.T, m authtest.Mode, tc endCase) *endFixture {
	t.Helper()
	f := &endFixture{clock: authtest.NewClock(authtest.Start)}
	cfg := auth.Config{Store: memstore.New(), Now: f.clock.Now, CheckSessionInStore: tc.check, SessionCheckCache: tc.cache}
	here, p := linkingServer(t, true, cfg)
	cfg.EmailVerification.Mode = emailverification.Optional
	f.here, f.there = here, authtest.NewServer(t, cfg)

	const email = "ada@example.com"
	_, f.tpHeader, f.uid, f.tpLogin = linkedUser(t, here, p, email, "ada-google")
	f.pw, f.tp = here.NewClient(m), here.NewClient(m)
	if got := wantOK(t, "password sign-in", f.pw.SignIn(email, authtest.Password)); got != f.uid {
		t.Fatalf("password sign-in as %s, want %s", got, f.uid)
	}
	if got := wantOK(t, "provider sign-in", f.tp.SignInWithProvider(p)); got != f.uid {
		t.Fatalf("provider sign-in as %s, want %s", got, f.uid)
	}
	return f
}

// presentAt returns a new client of srv in mode m that holds the given
// tokens, as another tab of the same browser would.
func presentAt(srv *authtest.Server, m authtest.Mode, access, refresh string) *authtest.Client {
	c := srv.NewClient(m)
	c.SetTokens(access, refresh)
	return c
}

// want401 checks a 401 with the protocol's message and its reason.
func want401(t testing.TB, what string, res *authtest.Response, msg string, reason auth.Reason) {
	t.Helper()
	want := fmt.Sprintf(`{"message":%q,"reason":%q}`, msg, reason)
	if res.StatusCode != http.StatusUnauthorized || string(res.Body) != want || res.Header.Get(auth.ReasonHeader) != string(reason) {
		t.Errorf("%s: %d %s (%s %q), want 401 %s", what, res.StatusCode, res.Body, auth.ReasonHeader, res.Header.Get(auth.ReasonHeader), want)
	}
}

// wantAccess presents an access token at srv's protected route: it must
// open it as uid if refused is empty, and otherwise be refused for that
// reason.
func wantAccess(t testing.TB, what string, srv *authtest.Server, m authtest.Mode, access, uid string, refused auth.Reason) {
	t.Helper()
	res := presentAt(srv, m, access, "").Get("/api/session")
	switch refused {
	case "":
		if res.StatusCode != http.StatusOK || res.JSON["userId"] != uid {
			t.Errorf("%s: %d %s, want 200 for %s", what, res.StatusCode, res.Body, uid)
		}
	case auth.ReasonExpired:
		want401(t, what, res, "try refresh token", refused)
	default:
		want401(t, what, res, "unauthorised", refused)
	}
}

// liveOr is the refusal wantAccess expects: none if live, else reason.
func liveOr(live bool, reason auth.Reason) auth.Reason {
	if live {
		return ""
	}
	return reason
}

// Unlink ends the sessions the unlinked login started: their refresh
// tokens at once on every instance, their access tokens at once where the
// store is read for each request (after the cache time on instances that
// did not unlink), else when they expire. The user's other sessions live
// on.
func TestUnlinkEndsTheLoginsSessions(t *testing.T) {
	t.Parallel()
	cases := []endCase{
		{name: "signature only", liveHere: true, liveThere: true},
		{name: "store read", check: true},
		{name: "store read, cached", check: true, cache: time.Minute, liveThere: true},
	}
	for _, m := range authtest.Modes {
		for _, tc := range cases {
			t.Run(m.String()+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				f := newEndFixture(t, m, tc)
				pwAccess, _ := f.pw.Tokens()
				tpAccess, tpRefresh := f.tp.Tokens()
				instances := []struct {
					name string
					srv  *authtest.Server
					live bool
				}{{"here", f.here, tc.liveHere}, {"there", f.there, tc.liveThere}}
				for _, in := range instances {
					wantAccess(t, "before Unlink, provider session "+in.name, in.srv, m, tpAccess, f.uid, "")
				}

				if err := f.here.Auth.Unlink(t.Context(), f.uid, f.tpLogin); err != nil {
					t.Fatalf("Unlink: %v", err)
				}
				for _, in := range instances {
					wantAccess(t, "unlinked login's access token "+in.name, in.srv, m, tpAccess, f.uid, liveOr(in.live, auth.ReasonRevoked))
					wantAccess(t, "other login's access token "+in.name, in.srv, m, pwAccess, f.uid, "")
					res := presentAt(in.srv, m, "", tpRefresh).Refresh()
					want401(t, "unlinked login's refresh "+in.name, res, "unauthorised", auth.ReasonRevoked)
				}
				want401(t, "unlinked login's other session's refresh", f.tpHeader.Refresh(), "unauthorised", auth.ReasonRevoked)
				ss, err := f.here.Auth.Sessions(t.Context(), f.uid)
				if err != nil || len(ss) != 2 {
					t.Errorf("sessions after Unlink: %+v (%v), want the two of the password login", ss, err)
				}
				for _, s := range ss {
					if s.LoginID != f.uid {
						t.Errorf("session %s of login %s after Unlink, want only the password login's", s.Handle, s.LoginID)
					}
				}

				if tc.cache > 0 {
					f.clock.Advance(tc.cache)
					wantAccess(t, "unlinked login's access token there after the cache time", f.there, m, tpAccess, f.uid, auth.ReasonRevoked)
				}
				f.clock.Advance(auth.DefaultAccessTokenLifetime)
				for _, in := range instances {
					wantAccess(t, "unlinked login's access token "+in.name+" at its expiry", in.srv, m, tpAccess, f.uid, auth.ReasonExpired)
				}
				if res := f.pw.Refresh(); res.Status != "OK" {
					t.Fatalf("refresh of the other login's session: %d %s", res.StatusCode, res.Body)
				}
				pwAccess, _ = f.pw.Tokens()
				for _, in := range instances {
					wantAccess(t, "other login's refreshed access token "+in.name, in.srv, m, pwAccess, f.uid, "")
				}
			})
		}
	}
}

// DeleteUser ends every session of the user, of every login method: the
// refresh tokens at once on every instance, the access tokens at once on
// the instance that deleted the user; on others at the next store read
// with CheckSessionInStore (after the cache time, if any), else when they
// expire. Another user's session lives on.
func TestDeleteUserEndsEverySession(t *testing.T) {
	t.Parallel()
	cases := []endCase{
		{name: "signature only", liveThere: true},
		{name: "store read", check: true},
		{name: "store read, cached", check: true, cache: time.Minute, liveThere: true},
	}
	for _, m := range authtest.Modes {
		for _, tc := range cases {
			t.Run(m.String()+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				f := newEndFixture(t, m, tc)
				bystander, bu := f.here.SignedIn(m)
				access := map[string]string{}
				refresh := map[string]string{}
				for name, c := range map[string]*authtest.Client{"password": f.pw, "provider": f.tp} {
					access[name], refresh[name] = c.Tokens()
				}
				instances := []struct {
					name string
					srv  *authtest.Server
					live bool
				}{{"here", f.here, tc.liveHere}, {"there", f.there, tc.liveThere}}
				for _, in := range instances {
					for name := range access {
						wantAccess(t, "before DeleteUser, "+name+" session "+in.name, in.srv, m, access[name], f.uid, "")
					}
				}

				if err := f.here.Auth.DeleteUser(t.Context(), f.uid); err != nil {
					t.Fatalf("DeleteUser: %v", err)
				}
				for _, in := range instances {
					for name := range access {
						wantAccess(t, name+" access token "+in.name, in.srv, m, access[name], f.uid, liveOr(in.live, auth.ReasonRevoked))
						// The store forgets the sessions of a deleted user.
						res := presentAt(in.srv, m, "", refresh[name]).Refresh()
						want401(t, name+" refresh "+in.name, res, "unauthorised", auth.ReasonRevoked)
					}
					wantAccess(t, "another user's access token "+in.name, in.srv, m, accessOf(bystander), bu.ID, "")
				}
				want401(t, "refresh of the provider login's other session", f.tpHeader.Refresh(), "unauthorised", auth.ReasonRevoked)

				if tc.cache > 0 {
					f.clock.Advance(tc.cache)
					for name := range access {
						wantAccess(t, name+" access token there after the cache time", f.there, m, access[name], f.uid, auth.ReasonRevoked)
					}
				}
				f.clock.Advance(auth.DefaultAccessTokenLifetime)
				for _, in := range instances {
					for name := range access {
						wantAccess(t, name+" access token "+in.name+" at its expiry", in.srv, m, access[name], f.uid, auth.ReasonExpired)
					}
				}
				if res := bystander.Refresh(); res.Status != "OK" {
					t.Fatalf("refresh of another user's session: %d %s", res.StatusCode, res.Body)
				}
				for _, in := range instances {
					wantAccess(t, "another user's refreshed access token "+in.name, in.srv, m, accessOf(bystander), bu.ID, "")
				}
			})
		}
	}
}

// accessOf is the access token a client holds.
func accessOf(c *authtest.Client) string {
	access, _ := c.Tokens()
	return access
}
