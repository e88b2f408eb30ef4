package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/mailer"
	"github.com/latchkit/auth/store"
	"github.com/latchkit/auth/store/memstore"
)

// liveDemo is the demo as run serves it, on a real listener, with the
// store at hand.
type liveDemo struct {
	t   *testing.T
	url string
	a   *auth.Auth
	st  store.Store
}

// newLiveDemo serves the demo with the account page (-account-linking)
// and args, its live connections reading the store every every (the
// demo's is liveCheckEvery): an hour shows that what arrives came from
// an event. srv, if not nil, sets the server's timeouts.
func newLiveDemo(t *testing.T, every time.Duration, srv *http.Server, args ...string) *liveDemo {
	t.Helper()
	return serveDemo(t, every, srv, append([]string{"-account-linking"}, args...)...)
}

// serveDemo serves the demo with args, as run does (handler) when every
// is zero, and with every instead of liveCheckEvery otherwise.
func serveDemo(t *testing.T, every time.Duration, srv *http.Server, args ...string) *liveDemo {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	o, err := parseOptions(append([]string{"-addr", ln.Addr().String(), "-db", "memory"}, args...), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	st := memstore.New()
	a, err := newAuth(o, st, mailer.NewLog(io.Discard), io.Discard, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if srv == nil {
		srv = &http.Server{}
	}
	srv.Handler = handler(a, st, o, nil, ln.Addr())
	if every != 0 {
		// handler's routes, with this live route's.
		mux := newMux(a, st, o.features())
		mountLive(mux, &live{a: a, st: st, places: sessionStarts, hub: liveUsers, origins: o.origins, every: every})
		srv.Handler = guardHosts(a.CORS(mux), o.appURL, ln.Addr())
	}
	ts := &httptest.Server{Listener: ln, Config: srv}
	ts.Start()
	t.Cleanup(func() {
		ts.Close()
		a.Close(context.Background())
	})
	return &liveDemo{t: t, url: ts.URL, a: a, st: st}
}

// signIn signs email in (up: signs up) in mode m, "header" or "cookie",
// as a browser with User-Agent ua, and returns the access token.
func (d *liveDemo) signIn(m, email, ua string, up bool) string {
	d.t.Helper()
	path := "/auth/signin"
	if up {
		path = "/auth/signup"
	}
	req, _ := http.NewRequest("POST", d.url+path, strings.NewReader(string(authtest.Credentials(email, authtest.Password))))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("st-auth-mode", m)
	req.Header.Set("User-Agent", ua)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		d.t.Fatal(err)
	}
	res.Body.Close()
	access := res.Header.Get("st-access-token")
	for _, c := range res.Cookies() {
		if c.Name == "sAccessToken" {
			access = c.Value
		}
	}
	if res.StatusCode != http.StatusOK || access == "" {
		d.t.Fatalf("%s %s in %s mode: %d, no access token", path, email, m, res.StatusCode)
	}
	return access
}

// dial opens GET /api/live with header (nil: none) as the handshake's,
// and returns the connection, or the handshake's HTTP status if it was
// refused.
func (d *liveDemo) dial(header http.Header) (*websocket.Conn, int) {
	d.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, res, err := websocket.Dial(ctx, d.url+"/api/live", &websocket.DialOptions{HTTPHeader: header})
	if err != nil {
		if res == nil {
			d.t.Fatalf("dialling /api/live: %v", err)
		}
		return nil, res.StatusCode
	}
	d.t.Cleanup(func() { _ = c.CloseNow() })
	return c, http.StatusSwitchingProtocols
}

// dialHeader opens GET /api/live as a page in header mode does: with no
// token in the handshake, and the access token as the first message.
func (d *liveDemo) dialHeader(access string) *websocket.Conn {
	d.t.Helper()
	c, status := d.dial(http.Header{"Origin": {d.url}})
	if c == nil {
		d.t.Fatalf("GET /api/live with no token: %d, want an upgrade", status)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c.Write(ctx, websocket.MessageText, []byte(access)); err != nil {
		d.t.Fatalf("sending the access token: %v", err)
	}
	return c
}

// cookieHeader is the handshake of a page in cookie mode on origin.
func cookieHeader(access, origin string) http.Header {
	return http.Header{"Cookie": {"sAccessToken=" + access}, "Origin": {origin}}
}

// next reads the next message of c, which must be a list of sessions.
func next(t *testing.T, c *websocket.Conn) liveMessage {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	typ, b, err := c.Read(ctx)
	if err != nil {
		t.Fatalf("reading /api/live: %v, want a message", err)
	}
	var m liveMessage
	if err := json.Unmarshal(b, &m); err != nil || typ != websocket.MessageText || m.Type != "sessions" {
		t.Fatalf("message %s (%v): %v, want the sessions as JSON text", b, typ, err)
	}
	return m
}

// closed waits for the server to close c, and returns the close code and
// reason. within bounds the wait: generous, for CI under -race.
func closed(t *testing.T, c *websocket.Conn, within time.Duration) (websocket.StatusCode, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	for {
		_, b, err := c.Read(ctx)
		if err == nil {
			// An update sent before the end, such as the list without
			// a session that another ending took away.
			t.Logf("message before the close: %s", b)
			continue
		}
		var ce websocket.CloseError
		if !errors.As(err, &ce) {
			t.Fatalf("reading /api/live: %v, want a close within %v", err, within)
		}
		return ce.Code, ce.Reason
	}
}

func currentOf(m liveMessage) (sessionView, bool) {
	for _, s := range m.Sessions {
		if s.Current {
			return s, true
		}
	}
	return sessionView{}, false
}

// TestLive: the connection sends the user's sessions when it opens and
// when they change, on this instance, at once: a sign-in elsewhere, a
// session ended elsewhere.
func TestLive(t *testing.T) {
	t.Parallel()
	d := newLiveDemo(t, time.Hour, nil)
	email := "lin@example.com"
	access := d.signIn("header", email, chromeLinux, true)
	c := d.dialHeader(access)
	m := next(t, c)
	cur, ok := currentOf(m)
	if len(m.Sessions) != 1 || !ok || cur.From == nil || cur.From.Device != "Chrome on Linux" || cur.Created == 0 || cur.Expires <= cur.Created {
		t.Fatalf("sessions %+v, want this one, from Chrome on Linux", m.Sessions)
	}

	// The user signs in on another device.
	d.signIn("cookie", email, firefoxMac, false)
	m = next(t, c)
	if len(m.Sessions) != 2 || m.Sessions[0].Current || m.Sessions[0].From == nil || m.Sessions[0].From.Device != "Firefox on macOS" {
		t.Fatalf("after a sign-in elsewhere: sessions %+v, want the new one first, from Firefox on macOS, then this one", m.Sessions)
	}
	if c, ok := currentOf(m); !ok || c.Handle != cur.Handle {
		t.Errorf("current %+v, want %s", c, cur.Handle)
	}

	// It is ended, from the account page of this device, say.
	if err := d.a.RevokeSession(t.Context(), m.Sessions[0].Handle); err != nil {
		t.Fatal(err)
	}
	if m = next(t, c); len(m.Sessions) != 1 || !m.Sessions[0].Current {
		t.Fatalf("after ending the other session: %+v, want this one alone", m.Sessions)
	}

	// Another user's sign-in sends nothing here: the next message is
	// the one after this user's next sign-in.
	d.signIn("header", "other@example.com", chromeLinux, true)
	d.signIn("header", email, chromeLinux, false)
	if m = next(t, c); len(m.Sessions) != 2 {
		t.Fatalf("after another sign-in: %+v, want two sessions", m.Sessions)
	}
}

// TestLiveCookie: in cookie mode the session comes in the handshake's
// sAccessToken cookie, as a browser sends it.
func TestLiveCookie(t *testing.T) {
	t.Parallel()
	d := serveDemo(t, 0, nil, "-account-linking") // as run serves it
	access := d.signIn("cookie", "coco@example.com", firefoxMac, true)
	c, status := d.dial(cookieHeader(access, d.url))
	if c == nil {
		t.Fatalf("GET /api/live with the cookie: %d, want an upgrade", status)
	}
	if m := next(t, c); len(m.Sessions) != 1 || !m.Sessions[0].Current {
		t.Fatalf("sessions %+v, want this one", m.Sessions)
	}
	// The page sends nothing: a message from it ends the connection.
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	c.Write(ctx, websocket.MessageText, []byte("hello"))
	if code, _ := closed(t, c, 20*time.Second); code != websocket.StatusPolicyViolation {
		t.Errorf("after a message from the page: closed %d, want %d", code, websocket.StatusPolicyViolation)
	}
}

// TestLiveClosesWhenSessionEnds: the connection closes with 4001 when
// its session ends, however it ends: at once when this instance ends it
// (with no periodic check to find it), at the next check when only the
// store knows (another instance ended it).
func TestLiveClosesWhenSessionEnds(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		every  time.Duration
		end    func(t *testing.T, d *liveDemo, access, handle, userID string)
		reason string
	}{
		{"signed out over HTTP", time.Hour, func(t *testing.T, d *liveDemo, access, _, _ string) {
			req, _ := http.NewRequest("POST", d.url+"/auth/signout", nil)
			req.Header.Set("Authorization", "Bearer "+access)
			req.Header.Set("st-auth-mode", "header")
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusOK {
				t.Fatalf("POST /auth/signout: %d", res.StatusCode)
			}
		}, "session ended: signed_out"},
		{"revoked by the Go API", time.Hour, func(t *testing.T, d *liveDemo, _, handle, _ string) {
			if err := d.a.RevokeSession(t.Context(), handle); err != nil {
				t.Fatal(err)
			}
		}, "session ended: revoked"},
		{"user deleted", time.Hour, func(t *testing.T, d *liveDemo, _, _, userID string) {
			if err := d.a.DeleteUser(t.Context(), userID); err != nil {
				t.Fatal(err)
			}
		}, "session ended"},
		{"revoked by another instance", 100 * time.Millisecond, func(t *testing.T, d *liveDemo, _, handle, _ string) {
			// Straight in the store: no event on this instance.
			if err := d.st.RevokeSession(t.Context(), handle, store.EndRevoked); err != nil {
				t.Fatal(err)
			}
		}, "session ended: revoked"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := newLiveDemo(t, tc.every, nil)
			access := d.signIn("header", "end@example.com", chromeLinux, true)
			c := d.dialHeader(access)
			cur, ok := currentOf(next(t, c))
			if !ok {
				t.Fatal("no current session")
			}
			s, err := d.a.VerifyToken(t.Context(), access)
			if err != nil {
				t.Fatal(err)
			}
			tc.end(t, d, access, cur.Handle, s.UserID)
			if code, reason := closed(t, c, 20*time.Second); code != liveEnded || reason != tc.reason {
				t.Errorf("closed %d %q, want %d %q", code, reason, liveEnded, tc.reason)
			}
		})
	}
}

// TestLiveAccessTokenExpiry: the connection closes with 4002 when its
// access token expires, for the page to refresh and connect again.
func TestLiveAccessTokenExpiry(t *testing.T) {
	t.Parallel()
	d := newLiveDemo(t, time.Hour, nil, "-access-ttl", "2s")
	access := d.signIn("header", "tess@example.com", chromeLinux, true)
	c := d.dialHeader(access)
	next(t, c)
	if code, reason := closed(t, c, 20*time.Second); code != liveRefresh || reason != "access token expired" {
		t.Errorf("closed %d %q, want %d, access token expired", code, reason, liveRefresh)
	}
	// Connecting again with the expired token: refused, refresh.
	c = d.dialHeader(access)
	if code, _ := closed(t, c, 20*time.Second); code != liveRefresh {
		t.Errorf("with the expired token: closed %d, want %d", code, liveRefresh)
	}
	c, status := d.dial(cookieHeader(access, d.url))
	if c != nil || status != http.StatusUnauthorized {
		t.Errorf("with the expired token in the cookie: %d, want 401 before the upgrade", status)
	}
}

// TestLiveRefusesWithoutSession: a handshake with a token that is
// refused is answered as any protected route; a connection whose first
// message is not a good access token is closed.
func TestLiveRefusesWithoutSession(t *testing.T) {
	t.Parallel()
	d := newLiveDemo(t, time.Hour, nil, "-mfa", "totp")
	for _, tc := range []struct {
		name   string
		header http.Header
		status int
	}{
		{"forged cookie", cookieHeader("not-a-token", ""), http.StatusUnauthorized},
		{"forged bearer", http.Header{"Authorization": {"Bearer not-a-token"}}, http.StatusUnauthorized},
		{"second factor pending, cookie", cookieHeader(d.signIn("cookie", "mfa@example.com", chromeLinux, true), ""), http.StatusForbidden},
	} {
		if c, status := d.dial(tc.header); c != nil || status != tc.status {
			t.Errorf("%s: %d, want %d before the upgrade", tc.name, status, tc.status)
		}
	}
	pending := d.signIn("header", "mfa2@example.com", chromeLinux, true)
	for _, tc := range []struct {
		name  string
		first []byte
		typ   websocket.MessageType
		code  websocket.StatusCode
	}{
		{"empty", nil, websocket.MessageText, liveEnded},
		{"forged", []byte("not-a-token"), websocket.MessageText, liveRefresh},
		{"binary", []byte(pending), websocket.MessageBinary, websocket.StatusUnsupportedData},
		{"second factor pending", []byte(pending), websocket.MessageText, liveClaim},
	} {
		c, status := d.dial(nil)
		if c == nil {
			t.Fatalf("%s: %d, want an upgrade", tc.name, status)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		c.Write(ctx, tc.typ, tc.first)
		cancel()
		if code, reason := closed(t, c, 20*time.Second); code != tc.code {
			t.Errorf("first message %s: closed %d %q, want %d", tc.name, code, reason, tc.code)
		}
	}
}

// TestLiveOrigin: a handshake from another origin is refused 403, with
// or without a session, unless the origin is in -allowed-origin.
func TestLiveOrigin(t *testing.T) {
	t.Parallel()
	d := newLiveDemo(t, time.Hour, nil, "-allowed-origin", "http://localhost:5173")
	access := d.signIn("cookie", "olive@example.com", chromeLinux, true)
	for _, tc := range []struct {
		origin string
		status int
	}{
		{"http://evil.example", http.StatusForbidden},
		{"https://localhost:5173", http.StatusForbidden}, // another scheme
		{"http://localhost:5174", http.StatusForbidden},
		{"null", http.StatusForbidden},
		{"http://localhost:5173", http.StatusSwitchingProtocols},
		{d.url, http.StatusSwitchingProtocols},
	} {
		if _, status := d.dial(cookieHeader(access, tc.origin)); status != tc.status {
			t.Errorf("with the cookie, Origin %s: %d, want %d", tc.origin, status, tc.status)
		}
		if _, status := d.dial(http.Header{"Origin": {tc.origin}}); status != tc.status {
			t.Errorf("with no token, Origin %s: %d, want %d", tc.origin, status, tc.status)
		}
	}
}

// TestLiveOutlastsServerTimeouts: run's server times requests out; a
// live connection is not a request, and lasts past them (net/http clears
// the connection's deadlines when Accept takes it over).
func TestLiveOutlastsServerTimeouts(t *testing.T) {
	t.Parallel()
	const timeout = 3 * time.Second
	d := newLiveDemo(t, time.Hour, &http.Server{ReadTimeout: timeout, WriteTimeout: timeout})
	email := "tim@example.com"
	c := d.dialHeader(d.signIn("header", email, chromeLinux, true))
	next(t, c)
	time.Sleep(timeout + time.Second)
	d.signIn("header", email, firefoxMac, false)
	if m := next(t, c); len(m.Sessions) != 2 {
		t.Errorf("sessions %+v, want two", m.Sessions)
	}
}

// TestLivePerUser: one user holds at most livePerUser connections.
func TestLivePerUser(t *testing.T) {
	t.Parallel()
	d := newLiveDemo(t, time.Hour, nil)
	access := d.signIn("header", "many@example.com", chromeLinux, true)
	var conns []*websocket.Conn
	for range livePerUser {
		c := d.dialHeader(access)
		next(t, c)
		conns = append(conns, c)
	}
	c := d.dialHeader(access)
	if code, _ := closed(t, c, 20*time.Second); code != websocket.StatusTryAgainLater {
		t.Errorf("connection %d: closed %d, want %d", livePerUser+1, code, websocket.StatusTryAgainLater)
	}
	// One closes: there is room again.
	conns[0].Close(websocket.StatusNormalClosure, "")
	deadline := time.Now().Add(20 * time.Second)
	for {
		c := d.dialHeader(access)
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		_, _, err := c.Read(ctx)
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after one closed: %v, want room for another", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestNoLiveOnMinimalServer: GET /api/live is where the account page is.
func TestNoLiveOnMinimalServer(t *testing.T) {
	t.Parallel()
	d := serveDemo(t, 0, nil)
	res, err := http.Get(d.url + "/api/live")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusNotFound {
		t.Errorf("GET /api/live on the minimal server: %d, want 404", res.StatusCode)
	}
}
