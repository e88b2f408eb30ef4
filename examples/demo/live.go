package main

// The account page's live list of sessions: GET /api/live, a WebSocket
// that sends the user's sessions when it opens and whenever they change,
// and closes when its own session ends. What an application writes to
// keep a session in a long-lived connection: check it when the
// connection opens, as every protected route does, then keep checking,
// since nothing comes back through the connection to be checked.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/store"
)

// The close codes of GET /api/live that the page acts on, in the range
// RFC 6455 leaves to applications.
const (
	// liveEnded: the connection's session ended (signed out, revoked,
	// token theft, password reset, user deleted, expired), or there was
	// none. The page shows the signed-out view. The reason is "session
	// ended", followed by ": " and the library's Reason where the store
	// still knows it (signed_out, revoked, password_reset, token_theft,
	// session_expired), or "unauthorised" when no session came at all.
	liveEnded websocket.StatusCode = 4001
	// liveRefresh: the access token the connection was opened with has
	// expired, or the first message's is expired or malformed ("try
	// refresh token"). The page refreshes the session over HTTP and
	// connects again.
	liveRefresh websocket.StatusCode = 4002
	// liveClaim: a claim refuses the session, as RequireSession's 403
	// "invalid claim" would, such as a second factor not completed.
	liveClaim websocket.StatusCode = 4003
)

const (
	// liveCheckEvery is how often a connection reads its user's
	// sessions again besides when one of the user's events wakes it:
	// another instance on the same store may have ended the session, or
	// started another, with no event here. It bounds how long a
	// connection outlives a session that ended elsewhere.
	liveCheckEvery = 5 * time.Second
	// liveFirstMessage is how long a connection without a session in its
	// request has to send its access token.
	liveFirstMessage = 10 * time.Second
	// livePingEvery is how often a connection is pinged, so that one
	// whose client went away without closing it is let go.
	livePingEvery = 30 * time.Second
	// liveWait bounds a store read, a write and a ping.
	liveWait = 5 * time.Second
	// livePerUser is how many live connections one user may hold at
	// once, each reading the store every liveCheckEvery: a tab each.
	livePerUser = 16
)

// liveRoutes mounts GET /api/live where the demo serves the account page.
//
// The session comes as for the account page's other routes (RequireSession
// with AllowUnverifiedEmail), checked before the upgrade: a request that
// carries an access token (the sAccessToken cookie, which a browser sends
// with the handshake, or an Authorization header, from a client other
// than a browser) that is refused is answered 401 or 403, as by any
// protected route, and not upgraded. A browser in header mode cannot set
// the Authorization header of a WebSocket: a request with no token is
// upgraded, and its first message must be the access token, as text,
// checked with VerifyToken and the same rule.
//
// Browsers send the page's origin with the handshake: one from another
// origin is refused 403 unless it is in -allowed-origin, since the
// cookies would come along (cross-site WebSocket hijacking).
func liveRoutes(mux *http.ServeMux, a *auth.Auth, st store.Store, o options) {
	if !o.features().Account {
		return
	}
	mountLive(mux, &live{a: a, st: st, places: sessionStarts, hub: liveUsers, origins: o.origins, every: liveCheckEvery})
}

func mountLive(mux *http.ServeMux, l *live) {
	mux.Handle("GET /api/live", l.a.OptionalSession(http.HandlerFunc(l.serve), auth.AllowUnverifiedEmail()))
}

type live struct {
	a       *auth.Auth
	st      store.Store
	places  *sessionPlaces
	hub     *liveHub
	origins []string      // as in -allowed-origin: scheme://host[:port]
	every   time.Duration // liveCheckEvery; tests wait less, or more
}

// liveMessage is what GET /api/live sends: the user's sessions, the
// connection's own marked current, in the shape of GET /api/account's.
type liveMessage struct {
	Type     string        `json:"type"` // "sessions"
	Sessions []sessionView `json:"sessions"`
}

func (l *live) serve(w http.ResponseWriter, r *http.Request) {
	s, signedIn := auth.SessionFromContext(r.Context())
	// Accept refuses an Origin of another host than the request's, and
	// not in the patterns: with a scheme, as -allowed-origin's are, the
	// scheme must match too.
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{OriginPatterns: l.origins})
	if err != nil {
		return // answered: 403 for the origin, 4xx for a bad handshake
	}
	c.SetReadLimit(8 << 10) // an access token and room to spare
	code, reason := l.follow(r.Context(), c, s, signedIn)
	// An error here says only that the client is gone, or does not
	// answer the close: the connection is closed either way.
	_ = c.Close(code, reason)
}

// follow checks the session of a connection, then sends its user's
// sessions as they change until the session ends, its access token
// expires, or the client goes. It returns how to close the connection.
func (l *live) follow(ctx context.Context, c *websocket.Conn, s auth.Session, signedIn bool) (websocket.StatusCode, string) {
	if !signedIn {
		var err error
		if s, err = l.firstMessage(ctx, c); err != nil {
			return liveRefusal(err)
		}
	}
	wake, leave, ok := l.hub.join(s.UserID)
	if !ok {
		return websocket.StatusTryAgainLater, "too many live connections"
	}
	defer leave()
	// The client sends nothing more: CloseRead answers its pings and its
	// close, and closes the connection if it sends a message.
	return l.watch(c.CloseRead(ctx), c, s, wake)
}

// watch sends the sessions of s's user whenever a check finds them
// changed: at once, when wake says so, and every l.every.
func (l *live) watch(ctx context.Context, c *websocket.Conn, s auth.Session, wake <-chan struct{}) (websocket.StatusCode, string) {
	expiry := time.NewTimer(time.Until(s.ExpiresAt))
	defer expiry.Stop()
	check := time.NewTicker(l.every)
	defer check.Stop()
	ping := time.NewTicker(livePingEvery)
	defer ping.Stop()
	var sent []byte
	for {
		msg, ended, err := l.check(ctx, s)
		switch {
		case ctx.Err() != nil:
			return websocket.StatusGoingAway, ""
		case err != nil:
			// The session cannot be confirmed: not kept open on trust.
			return websocket.StatusTryAgainLater, "try again"
		case ended != "":
			return liveEnded, ended
		case !bytes.Equal(msg, sent):
			if err := l.send(ctx, c, msg); err != nil {
				return websocket.StatusGoingAway, ""
			}
			sent = msg
		}
		select {
		case <-ctx.Done():
			return websocket.StatusGoingAway, ""
		case <-expiry.C:
			return liveRefresh, "access token expired"
		case <-wake:
		case <-check.C:
		case <-ping.C:
			// A client that went away without a word is let go.
			if err := l.send(ctx, c, nil); err != nil {
				return websocket.StatusGoingAway, ""
			}
		}
	}
}

// send writes msg to c, or pings it if msg is nil, within liveWait.
func (l *live) send(ctx context.Context, c *websocket.Conn, msg []byte) error {
	ctx, cancel := context.WithTimeout(ctx, liveWait)
	defer cancel()
	if msg == nil {
		return c.Ping(ctx)
	}
	return c.Write(ctx, websocket.MessageText, msg)
}

// firstMessage reads the access token a connection opened without one
// sends first, and verifies it.
func (l *live) firstMessage(ctx context.Context, c *websocket.Conn) (auth.Session, error) {
	ctx, cancel := context.WithTimeout(ctx, liveFirstMessage)
	defer cancel()
	typ, token, err := c.Read(ctx)
	if err != nil {
		return auth.Session{}, err
	}
	if typ != websocket.MessageText {
		return auth.Session{}, errNotText
	}
	return l.a.VerifyToken(ctx, string(token), auth.AllowUnverifiedEmail())
}

var errNotText = errors.New("demo: the access token must come as a text message")

// liveRefusal is the close code and reason for a first message that
// brought no session.
func liveRefusal(err error) (websocket.StatusCode, string) {
	var claim *auth.ClaimError
	switch {
	case errors.As(err, &claim):
		return liveClaim, "invalid claim"
	case errors.Is(err, auth.ErrTryRefreshToken):
		return liveRefresh, "try refresh token"
	case errors.Is(err, auth.ErrUnauthorized):
		return liveEnded, "unauthorised"
	case errors.Is(err, errNotText):
		return websocket.StatusUnsupportedData, "want the access token as text"
	}
	return websocket.StatusTryAgainLater, "try again"
}

// check reads the user's sessions and returns the message to send, or,
// if the connection's own session is not among them, why it ended.
func (l *live) check(ctx context.Context, s auth.Session) (msg []byte, ended string, err error) {
	ctx, cancel := context.WithTimeout(ctx, liveWait)
	defer cancel()
	views, err := sessionViews(ctx, l.a, l.places, s.UserID, s.Handle)
	if err != nil {
		return nil, "", err
	}
	if !slices.ContainsFunc(views, func(v sessionView) bool { return v.Current }) {
		return nil, l.whyEnded(ctx, s.Handle), nil
	}
	msg, err = json.Marshal(liveMessage{Type: "sessions", Sessions: views})
	return msg, "", err
}

// whyEnded is the close reason of a session that ended: with why, where
// the store still knows it, in the words of the Auth-Reason header that
// a protected route answers the session's requests with.
func (l *live) whyEnded(ctx context.Context, handle string) string {
	var ended *store.EndedError
	_, err := l.st.Session(ctx, handle, time.Now())
	if !errors.As(err, &ended) {
		// Deleted with its user, or cleaned up since.
		return "session ended"
	}
	if ended.Reason == "" {
		return "session ended: " + string(auth.ReasonSessionExpired)
	}
	return "session ended: " + string(ended.Reason)
}

// liveHub wakes a user's live connections when an event of the user's
// may have changed their sessions: each then reads them again, and sends
// them if they changed. Waking is all it does, so it cannot send a
// connection what another user's session changed.
type liveHub struct {
	mu    sync.Mutex
	users map[string]map[chan struct{}]bool
}

// liveUsers is the demo's hub, told of events by newAuth's event hook and
// read by GET /api/live. One for the process, as sessionStarts: user ids
// are unique, so several Auths (as in tests) share it.
var liveUsers = newLiveHub()

func newLiveHub() *liveHub {
	return &liveHub{users: map[string]map[chan struct{}]bool{}}
}

// notify is the OnEvent hook that wakes the connections of the event's
// user. It never blocks: a connection already woken reads the sessions
// once for all the events since.
func (h *liveHub) notify(_ context.Context, e auth.Event) {
	switch e.Kind {
	case auth.EventSignIn, auth.EventRefresh, auth.EventSignOut, auth.EventSessionRevoked,
		auth.EventTokenTheft, auth.EventPasswordReset, auth.EventUserDeleted:
	default:
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for wake := range h.users[e.UserID] {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
}

// join adds a connection of a user, unless the user has livePerUser
// already; leave removes it.
func (h *liveHub) join(userID string) (wake <-chan struct{}, leave func(), ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	conns := h.users[userID]
	if len(conns) >= livePerUser {
		return nil, nil, false
	}
	if conns == nil {
		conns = map[chan struct{}]bool{}
		h.users[userID] = conns
	}
	ch := make(chan struct{}, 1)
	conns[ch] = true
	return ch, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		delete(h.users[userID], ch)
		if len(h.users[userID]) == 0 {
			delete(h.users, userID)
		}
	}, true
}
