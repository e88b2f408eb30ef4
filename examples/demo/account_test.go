package main

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/emailverification"
	"github.com/latchkit/auth/mailer"
	"github.com/latchkit/auth/provider"
	"github.com/latchkit/auth/store"
	"github.com/latchkit/auth/store/memstore"
	"github.com/latchkit/auth/thirdparty"
)

const (
	chromeLinux = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
	firefoxMac  = "Mozilla/5.0 (Macintosh; Intel Mac OS X 14.5; rv:128.0) Gecko/20100101 Firefox/128.0"
)

// accountServer is an authtest server with the account API mounted, as an
// application mounts it, and the event hook that records where sessions
// start; p is a provider to link, with account linking on.
func accountServer(t *testing.T) (*authtest.Server, *authtest.Provider) {
	t.Helper()
	places := newSessionPlaces(100)
	p := authtest.NewProvider(t)
	s := authtest.NewServer(t, auth.Config{
		OnEvent:        places.record,
		AccountLinking: true,
		ThirdParty:     thirdparty.Config{Providers: []provider.Provider{p.Provider()}},
	})
	mountAccount(s.Mux, s.Auth, places)
	return s, p
}

// signIn signs email in with a new client in mode m, as a browser with
// User-Agent ua, signing up first if up.
func signIn(t *testing.T, s *authtest.Server, m authtest.Mode, email, ua string, up bool) *authtest.Client {
	t.Helper()
	c := s.NewClient(m)
	c.Header.Set("User-Agent", ua)
	res := c.SignIn(email, authtest.Password)
	if up {
		res = c.SignUp(email, authtest.Password)
	}
	if res.Status != "OK" {
		t.Fatalf("signing in %s: %d %s", email, res.StatusCode, res.Body)
	}
	return c
}

// getAccount reads GET /api/account as c.
func getAccount(t *testing.T, c *authtest.Client) accountView {
	t.Helper()
	res := c.Get("/api/account")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/account: %d %s", res.StatusCode, res.Body)
	}
	var v accountView
	if err := json.Unmarshal(res.Body, &v); err != nil {
		t.Fatalf("GET /api/account: %v: %s", err, res.Body)
	}
	return v
}

func current(v accountView) (sessionView, bool) {
	for _, s := range v.Sessions {
		if s.Current {
			return s, true
		}
	}
	return sessionView{}, false
}

// alive reports whether c's session still refreshes.
func alive(t *testing.T, c *authtest.Client) bool {
	t.Helper()
	res := c.Refresh()
	return res.StatusCode == http.StatusOK
}

// TestAccountShowsUserAndSessions: GET /api/account names the user, the
// login method this session used, and each live session with where it
// started (address and browser), this one marked.
func TestAccountShowsUserAndSessions(t *testing.T) {
	t.Parallel()
	s, _ := accountServer(t)
	email := "ada@example.com"
	first := signIn(t, s, authtest.Header, email, chromeLinux, true)
	s.Clock.Advance(time.Minute) // the second session is the newer
	second := signIn(t, s, authtest.Cookie, email, firefoxMac, false)

	v := getAccount(t, first)
	if v.User.Email != email || v.User.ID == "" {
		t.Errorf("user %+v, want %s", v.User, email)
	}
	if len(v.Logins) != 1 || v.Logins[0].Method != "emailpassword" || v.Logins[0].Email != email || !v.Logins[0].Current || v.Logins[0].Verified {
		t.Errorf("logins %+v, want one emailpassword login, this session's, not verified", v.Logins)
	}
	if len(v.Sessions) != 2 {
		t.Fatalf("sessions %+v, want 2", v.Sessions)
	}
	// Newest first: the Firefox one, then this one.
	want := []struct {
		device  string
		current bool
	}{{"Firefox on macOS", false}, {"Chrome on Linux", true}}
	for i, w := range want {
		got := v.Sessions[i]
		if got.From == nil || got.From.Device != w.device || got.From.Address != "127.0.0.1" || got.Current != w.current ||
			got.LoginID != v.Logins[0].ID || got.Created == 0 || got.Expires <= got.Created {
			t.Errorf("session %d = %+v (from %+v), want %s from 127.0.0.1, current %v", i, got, got.From, w.device, w.current)
		}
	}
	if v.SecondFactors.TOTP == nil || len(v.SecondFactors.TOTP) != 0 || v.SecondFactors.RecoveryCodes != 0 {
		t.Errorf("second factors %+v, want none", v.SecondFactors)
	}
	// The other session sees itself as current.
	if c, ok := current(getAccount(t, second)); !ok || c.Handle != v.Sessions[0].Handle {
		t.Errorf("second session's current %+v, want %s", c, v.Sessions[0].Handle)
	}

	// Without a session: 401, as every protected route.
	if res := s.NewClient(authtest.Header).Get("/api/account"); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET /api/account without a session: %d, want 401", res.StatusCode)
	}
}

// TestAccountPlaceUnknown: a session the demo did not see start (it
// restarted since) has no "from".
func TestAccountPlaceUnknown(t *testing.T) {
	t.Parallel()
	places := newSessionPlaces(100)
	s := authtest.NewServer(t, auth.Config{}) // no hook: as before a restart
	mountAccount(s.Mux, s.Auth, places)
	c := signIn(t, s, authtest.Header, "bo@example.com", chromeLinux, true)
	v := getAccount(t, c)
	if len(v.Sessions) != 1 || v.Sessions[0].From != nil {
		t.Errorf("sessions %+v, want one with no from", v.Sessions)
	}
	if res := c.Get("/api/account"); !strings.Contains(string(res.Body), `"current":true`) || strings.Contains(string(res.Body), `"from"`) {
		t.Errorf("body %s: want no from at all", res.Body)
	}
}

// TestAccountRevokeSession: a user ends one of their other sessions; its
// refresh token stops working, theirs does not, and the list loses it.
// Another user's session, or one that does not exist, is 404 and ends
// nothing.
func TestAccountRevokeSession(t *testing.T) {
	t.Parallel()
	s, _ := accountServer(t)
	me := signIn(t, s, authtest.Header, "cy@example.com", chromeLinux, true)
	other := signIn(t, s, authtest.Body, "cy@example.com", firefoxMac, false)
	stranger := signIn(t, s, authtest.Header, "di@example.com", chromeLinux, true)

	v := getAccount(t, me)
	mine, _ := current(v)
	var otherHandle string
	for _, ss := range v.Sessions {
		if !ss.Current {
			otherHandle = ss.Handle
		}
	}
	strangerHandle, _ := current(getAccount(t, stranger))

	for _, h := range []string{strangerHandle.Handle, "no-such-session"} {
		if res := me.Do("POST", "/api/account/sessions/"+h+"/revoke", nil); res.StatusCode != http.StatusNotFound {
			t.Errorf("revoking %s: %d %s, want 404", h, res.StatusCode, res.Body)
		}
	}
	if !alive(t, stranger) {
		t.Fatal("the other user's session ended")
	}

	res := me.Do("POST", "/api/account/sessions/"+otherHandle+"/revoke", nil)
	if res.StatusCode != http.StatusOK || res.JSON["revoked"] != 1.0 {
		t.Fatalf("revoking my other session: %d %s", res.StatusCode, res.Body)
	}
	if alive(t, other) {
		t.Error("the revoked session still refreshes")
	}
	if !alive(t, me) {
		t.Error("this session ended")
	}
	v = getAccount(t, me)
	if len(v.Sessions) != 1 || v.Sessions[0].Handle != mine.Handle {
		t.Errorf("sessions after revoking %+v, want only %s", v.Sessions, mine.Handle)
	}
}

// TestAccountRevokeOthers: "sign out everywhere else" ends every session
// of the user but this one, and no one else's.
func TestAccountRevokeOthers(t *testing.T) {
	t.Parallel()
	s, _ := accountServer(t)
	me := signIn(t, s, authtest.Cookie, "ed@example.com", chromeLinux, true)
	others := []*authtest.Client{
		signIn(t, s, authtest.Header, "ed@example.com", firefoxMac, false),
		signIn(t, s, authtest.Body, "ed@example.com", chromeLinux, false),
	}
	stranger := signIn(t, s, authtest.Header, "fa@example.com", chromeLinux, true)

	res := me.Do("POST", "/api/account/sessions/revoke-others", nil)
	if res.StatusCode != http.StatusOK || res.JSON["revoked"] != 2.0 {
		t.Fatalf("revoke-others: %d %s, want 2 revoked", res.StatusCode, res.Body)
	}
	for i, c := range others {
		if alive(t, c) {
			t.Errorf("other session %d still refreshes", i)
		}
	}
	if !alive(t, me) || !alive(t, stranger) {
		t.Error("this session, or another user's, ended")
	}
	if v := getAccount(t, me); len(v.Sessions) != 1 || !v.Sessions[0].Current {
		t.Errorf("sessions %+v, want this one only", v.Sessions)
	}
}

// TestAccountUnlink: a provider that vouches for the user's email joins
// their account (linking by verified email); unlinking it removes the
// login and ends the sessions it started, not the others. The last login
// method cannot be unlinked; nor can another user's.
func TestAccountUnlink(t *testing.T) {
	t.Parallel()
	s, p := accountServer(t)
	email := "gu@example.com"
	me := signIn(t, s, authtest.Header, email, chromeLinux, true)
	base := getAccount(t, me)
	// Linking needs the existing login's email verified too.
	if err := s.Auth.SetEmailVerified(t.Context(), base.Logins[0].ID, true); err != nil {
		t.Fatal(err)
	}
	p.SetIdentity("gu-at-provider", email, true)
	viaProvider := s.NewClient(authtest.Header)
	if res := viaProvider.SignInWithProvider(p); res.Status != "OK" {
		t.Fatalf("provider sign-in: %d %s", res.StatusCode, res.Body)
	}
	v := getAccount(t, me)
	if len(v.Logins) != 2 {
		t.Fatalf("logins after provider sign-in %+v, want it linked", v.Logins)
	}
	linked := v.Logins[1]
	if linked.Method != "thirdparty" || linked.Provider != authtest.ProviderID || !linked.Verified || linked.Current {
		t.Errorf("linked login %+v", linked)
	}
	if c, _ := current(getAccount(t, viaProvider)); c.LoginID != linked.ID {
		t.Errorf("provider session's login %s, want %s", c.LoginID, linked.ID)
	}

	stranger := signIn(t, s, authtest.Header, "ha@example.com", chromeLinux, true)
	if res := stranger.Do("POST", "/api/account/logins/"+linked.ID+"/unlink", nil); res.StatusCode != http.StatusNotFound {
		t.Errorf("another user unlinking: %d %s, want 404", res.StatusCode, res.Body)
	}

	// Removing a way in needs a recent sign-in: a stale session is
	// refused st-fresh, and one signed in again is let through.
	s.Clock.Advance(6 * time.Minute)
	res := me.Do("POST", "/api/account/logins/"+linked.ID+"/unlink", nil)
	if res.StatusCode != http.StatusForbidden || !strings.Contains(string(res.Body), `"id":"st-fresh"`) {
		t.Fatalf("unlink with an old sign-in: %d %s, want 403 st-fresh", res.StatusCode, res.Body)
	}
	if res := me.SignIn(email, authtest.Password); res.Status != "OK" {
		t.Fatalf("signing in again: %d %s", res.StatusCode, res.Body)
	}
	res = me.Do("POST", "/api/account/logins/"+linked.ID+"/unlink", nil)
	if res.StatusCode != http.StatusOK || res.JSON["signedOut"] != false {
		t.Fatalf("unlink: %d %s", res.StatusCode, res.Body)
	}
	if alive(t, viaProvider) {
		t.Error("the session the provider started still refreshes")
	}
	if v := getAccount(t, me); len(v.Logins) != 1 || v.Logins[0].ID != base.Logins[0].ID {
		t.Errorf("logins after unlink %+v", v.Logins)
	}

	// The last one: refused with the reason, nothing removed.
	res = me.Do("POST", "/api/account/logins/"+base.Logins[0].ID+"/unlink", nil)
	if res.StatusCode != http.StatusConflict || !strings.Contains(res.Message, "only way to sign in") {
		t.Errorf("unlinking the last login: %d %s, want 409 with the reason", res.StatusCode, res.Body)
	}
	if !alive(t, me) {
		t.Error("refusing to unlink ended the session")
	}
}

// TestAccountUnlinkCurrent: unlinking the login method this session was
// started with says that it signed this session out.
func TestAccountUnlinkCurrent(t *testing.T) {
	t.Parallel()
	s, p := accountServer(t)
	email := "io@example.com"
	pw := signIn(t, s, authtest.Header, email, chromeLinux, true)
	if err := s.Auth.SetEmailVerified(t.Context(), getAccount(t, pw).Logins[0].ID, true); err != nil {
		t.Fatal(err)
	}
	p.SetIdentity("io-at-provider", email, true)
	c := s.NewClient(authtest.Header)
	if res := c.SignInWithProvider(p); res.Status != "OK" {
		t.Fatalf("provider sign-in: %d %s", res.StatusCode, res.Body)
	}
	cur, _ := current(getAccount(t, c))
	res := c.Do("POST", "/api/account/logins/"+cur.LoginID+"/unlink", nil)
	if res.StatusCode != http.StatusOK || res.JSON["signedOut"] != true {
		t.Fatalf("unlink: %d %s, want signedOut", res.StatusCode, res.Body)
	}
	if alive(t, c) || !alive(t, pw) {
		t.Error("want this session ended, the password one alive")
	}
}

// TestAccountCrossSite: a form another site posts in the user's browser
// carries the session cookie (SameSite=Lax lets a top-level POST through
// on a same-site subdomain, and older browsers any) and is refused 403;
// the same request from the page's own origin goes through.
func TestAccountCrossSite(t *testing.T) {
	t.Parallel()
	s, _ := accountServer(t)
	me := signIn(t, s, authtest.Cookie, "jo@example.com", chromeLinux, true)
	other := signIn(t, s, authtest.Header, "jo@example.com", firefoxMac, false)
	for _, path := range []string{"/api/account/sessions/revoke-others", "/api/account/logins/" + getAccount(t, me).Logins[0].ID + "/unlink"} {
		for _, h := range []map[string]string{
			{"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"},
			{"Sec-Fetch-Site": "same-site", "Origin": "https://other.example.test"},
			{"Origin": "https://evil.example"}, // an older browser: no Sec-Fetch-Site
		} {
			for k, v := range h {
				me.Header.Set(k, v)
			}
			res := me.Do("POST", path, nil)
			if res.StatusCode != http.StatusForbidden {
				t.Errorf("POST %s with %v: %d %s, want 403", path, h, res.StatusCode, res.Body)
			}
			for k := range h {
				me.Header.Del(k)
			}
		}
	}
	if !alive(t, other) {
		t.Fatal("a cross-site post ended a session")
	}
	me.Header.Set("Sec-Fetch-Site", "same-origin")
	me.Header.Set("Origin", s.URL)
	if res := me.Do("POST", "/api/account/sessions/revoke-others", nil); res.StatusCode != http.StatusOK {
		t.Errorf("same-origin POST: %d %s", res.StatusCode, res.Body)
	}
	if alive(t, other) {
		t.Error("the same-origin revoke-others left the other session")
	}
}

// TestAccountInDemo: the demo serves the account page at /account and its
// API, and records where sessions start, as its flags configure it.
func TestAccountInDemo(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	o, err := parseOptions([]string{"-addr", ln.Addr().String(), "-db", "memory", "-email-verification", "optional"}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	st := memstore.New()
	a, err := newAuth(o, st, mailer.NewLog(io.Discard), io.Discard, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: a.CORS(newMux(a, st, o.features()))}}
	srv.Start()
	t.Cleanup(func() {
		srv.Close()
		a.Close(t.Context())
	})

	res, err := http.Get(srv.URL + "/account")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.Contains(string(body), `id="account"`) {
		t.Errorf("GET /account: %d, want the page with its account view", res.StatusCode)
	}

	req, _ := http.NewRequest("POST", srv.URL+"/auth/signup", strings.NewReader(string(authtest.Credentials("ka@example.com", authtest.Password))))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("st-auth-mode", "header")
	req.Header.Set("User-Agent", firefoxMac)
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	access := res.Header.Get("st-access-token")
	if res.StatusCode != http.StatusOK || access == "" {
		t.Fatalf("sign-up: %d", res.StatusCode)
	}
	req, _ = http.NewRequest("GET", srv.URL+"/api/account", nil)
	req.Header.Set("Authorization", "Bearer "+access)
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var v accountView
	if err := json.NewDecoder(res.Body).Decode(&v); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/account: %d %v", res.StatusCode, err)
	}
	if len(v.Sessions) != 1 || v.Sessions[0].From == nil || v.Sessions[0].From.Device != "Firefox on macOS" {
		t.Errorf("sessions %+v, want one from Firefox on macOS", v.Sessions)
	}
}

// The minimal server, with no feature flag, serves no account page: what
// it serves is what it always has.
func TestNoAccountOnMinimalServer(t *testing.T) {
	t.Parallel()
	o, err := parseOptions([]string{"-db", "memory"}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if o.features().Account {
		t.Errorf("features() = %+v, want no account page", o.features())
	}
	st := memstore.New()
	a, err := newAuth(o, st, mailer.NewLog(io.Discard), io.Discard, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(t.Context()) })
	srv := httptest.NewServer(a.CORS(newMux(a, st, o.features())))
	t.Cleanup(srv.Close)
	for _, path := range []string{"/account", "/api/account"} {
		res, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s on the minimal server: %d, want 404", path, res.StatusCode)
		}
	}
	for _, args := range [][]string{{"-passkeys", "-app-url", "http://localhost:8080"}, {"-mfa", "totp"}, {"-account-linking"}, {"-passwordless", "code"}} {
		o, err := parseOptions(append([]string{"-db", "memory"}, args...), func(string) string { return "" })
		if err != nil || !o.features().Account {
			t.Errorf("%v: features() = %+v, %v; want the account page", args, o.features(), err)
		}
	}
}

func TestDeviceOf(t *testing.T) {
	t.Parallel()
	for ua, want := range map[string]string{
		chromeLinux: "Chrome on Linux",
		firefoxMac:  "Firefox on macOS",
		"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Edg/131.0.0.0":           "Edge on Windows",
		"Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1": "Safari on iOS",
		"Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36":                   "Chrome on Android",
		"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/131.0.0.0 Safari/537.36":                           "Headless Chrome on Linux",
		"curl/8.5.0":         "curl",
		"Go-http-client/1.1": "a Go program",
		"":                   "",
		"something else":     "",
	} {
		if got := deviceOf(ua); got != want {
			t.Errorf("deviceOf(%q) = %q, want %q", ua, got, want)
		}
	}
}

// TestSessionPlacesBounded: the table of where sessions started keeps at
// most its bound, forgetting the oldest, and forgets a session that ends.
func TestSessionPlacesBounded(t *testing.T) {
	t.Parallel()
	p := newSessionPlaces(3)
	ctx := t.Context()
	for _, h := range []string{"a", "b", "c", "d"} {
		p.record(ctx, auth.Event{Kind: auth.EventSignIn, SessionHandle: h, RemoteAddr: "192.0.2.1:1234", UserAgent: "curl/8"})
	}
	if _, ok := p.of("a"); ok {
		t.Error("the oldest was kept past the bound")
	}
	if pl, ok := p.of("d"); !ok || pl.address != "192.0.2.1" || pl.userAgent != "curl/8" {
		t.Errorf("d: %+v %v", pl, ok)
	}
	p.record(ctx, auth.Event{Kind: auth.EventSignOut, SessionHandle: "c"})
	if _, ok := p.of("c"); ok {
		t.Error("a signed-out session was kept")
	}
	for i := range 50 {
		h := string(rune('e' + i))
		p.record(ctx, auth.Event{Kind: auth.EventSignIn, SessionHandle: h})
		p.record(ctx, auth.Event{Kind: auth.EventSessionRevoked, SessionHandle: h})
	}
	if len(p.m) > 3 || len(p.order) > 6 {
		t.Errorf("table holds %d places and %d handles, want at most 3 and 6", len(p.m), len(p.order))
	}
}

// TestAccountRules: with email verification required, a user whose email
// is not verified still reads the page and ends sessions (to ask for a
// link, or to throw out someone else), but does not unlink; a session
// with a second factor to complete gets none of it.
func TestAccountRules(t *testing.T) {
	t.Parallel()
	t.Run("unverified email", func(t *testing.T) {
		t.Parallel()
		s := authtest.NewServer(t, auth.Config{EmailVerification: emailverification.Config{Mode: emailverification.Required}})
		mountAccount(s.Mux, s.Auth, newSessionPlaces(10))
		c, u := s.SignedIn(authtest.Header)
		if res := c.Get("/api/account"); res.StatusCode != http.StatusOK {
			t.Errorf("GET /api/account: %d %s, want 200", res.StatusCode, res.Body)
		}
		if res := c.Do("POST", "/api/account/sessions/revoke-others", nil); res.StatusCode != http.StatusOK {
			t.Errorf("revoke-others: %d %s, want 200", res.StatusCode, res.Body)
		}
		res := c.Do("POST", "/api/account/logins/"+u.LoginMethods[0].ID+"/unlink", nil)
		if res.StatusCode != http.StatusForbidden || !strings.Contains(string(res.Body), "st-ev") {
			t.Errorf("unlink: %d %s, want 403 st-ev", res.StatusCode, res.Body)
		}
	})
	t.Run("pending second factor", func(t *testing.T) {
		t.Parallel()
		s := authtest.NewServer(t, auth.Config{MFA: auth.MFAConfig{Required: []string{auth.FactorTOTP}}})
		mountAccount(s.Mux, s.Auth, newSessionPlaces(10))
		c, u := s.SignedIn(authtest.Header)
		for _, r := range []struct{ method, path string }{
			{"GET", "/api/account"},
			{"POST", "/api/account/sessions/revoke-others"},
			{"POST", "/api/account/logins/" + u.LoginMethods[0].ID + "/unlink"},
		} {
			if res := c.Do(r.method, r.path, nil); res.StatusCode != http.StatusForbidden || !strings.Contains(string(res.Body), "st-mfa") {
				t.Errorf("%s %s: %d %s, want 403 st-mfa", r.method, r.path, res.StatusCode, res.Body)
			}
		}
	})
}

// The account routes answer a database out of reach as the library's own
// do: 503, try again.
func TestAccountErrorUnavailable(t *testing.T) {
	rec := httptest.NewRecorder()
	accountError(rec, fmt.Errorf("reading sessions: %w", store.ErrUnavailable))
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" {
		t.Errorf("an unavailable store: %d, Retry-After %q; want 503 with Retry-After", rec.Code, rec.Header().Get("Retry-After"))
	}
}

// TestAccountDeleteAfterSigningInAgain runs the page's steps for deleting
// the account once its sign-in is old: the library answers 403 st-fresh,
// the page signs in again, ends the session it replaced through the
// account API, and sends the delete again, which beforeDeleteUser lets
// through.
func TestAccountDeleteAfterSigningInAgain(t *testing.T) {
	places := newSessionPlaces(100)
	s := authtest.NewServer(t, auth.Config{OnEvent: places.record, BeforeDeleteUser: beforeDeleteUser})
	mountAccount(s.Mux, s.Auth, places)
	for _, m := range authtest.Modes {
		t.Run(m.String(), func(t *testing.T) {
			email := s.NewEmail()
			c := signIn(t, s, m, email, chromeLinux, true)
			old, _ := c.Get("/api/session").JSON["sessionHandle"].(string)
			s.Clock.Advance(6 * time.Minute)
			res := c.Do(http.MethodPost, "/auth/user/delete", nil)
			if res.StatusCode != http.StatusForbidden || !strings.Contains(string(res.Body), `"id":"st-fresh"`) {
				t.Fatalf("delete with an old sign-in: %d %s, want 403 st-fresh", res.StatusCode, res.Body)
			}
			if res := c.SignIn(email, authtest.Password); res.Status != "OK" {
				t.Fatalf("signing in again: %d %s", res.StatusCode, res.Body)
			}
			if res := c.Do(http.MethodPost, "/api/account/sessions/"+old+"/revoke", nil); res.StatusCode != http.StatusOK {
				t.Fatalf("ending the replaced session: %d %s", res.StatusCode, res.Body)
			}
			if res := c.Do(http.MethodPost, "/auth/user/delete", nil); res.Status != "OK" {
				t.Fatalf("delete after signing in again: %d %s", res.StatusCode, res.Body)
			}
			if _, err := s.Auth.UserByEmail(t.Context(), email); err == nil {
				t.Fatalf("the user %s is still there", email)
			}
		})
	}
}
