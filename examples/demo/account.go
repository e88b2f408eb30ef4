package main

// The account page's API: what an application writes, on the library's
// Go API, for a signed-in user to see their login methods, sessions and
// second factors, end sessions and remove a login method. The page itself
// is index.html at /account; passkeys, authenticator apps, recovery codes
// and verification emails it manages through the library's own routes,
// with the SDK.

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/store"
)

// mountAccount adds the account page's API to mux. Each route is wrapped in
// RequireSession, which also refuses a browser's POST from another site
// when the session is in a cookie: the CSRF defence these routes need.
func mountAccount(mux *http.ServeMux, a *auth.Auth, places *sessionPlaces) {
	acc := &account{a: a, places: places}
	// A user whose email is not verified (required mode) still sees the
	// page, to ask for a link, and may end sessions; removing a login
	// method needs what the rest of the app needs. No route allows a
	// session that has a second factor to complete: the page comes after
	// it (auth.AllowPendingMFA is not given).
	unverified := auth.AllowUnverifiedEmail()
	mux.Handle("GET /api/account", a.RequireSession(http.HandlerFunc(acc.show), unverified))
	mux.Handle("POST /api/account/sessions/{handle}/revoke", a.RequireSession(http.HandlerFunc(acc.revokeSession), unverified))
	mux.Handle("POST /api/account/sessions/revoke-others", a.RequireSession(http.HandlerFunc(acc.revokeOthers), unverified))
	// Removing a way to sign in is sensitive: it needs a recent sign-in.
	mux.Handle("POST /api/account/logins/{id}/unlink", a.RequireSession(http.HandlerFunc(acc.unlink), auth.SignedInWithin(0)))
	// The page asks whether the sign-in is recent before it sends the
	// browser to a provider to link it, which needs one too: signing in
	// again there is simpler than after the trip.
	mux.Handle("POST /api/account/fresh", a.RequireSession(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		writeAccountJSON(w, http.StatusOK, map[string]bool{"fresh": true})
	}), auth.SignedInWithin(0)))
}

// beforeDeleteUser is the demo's Config.BeforeDeleteUser, which serves
// POST /auth/user/delete: the demo keeps nothing of a user that the
// library does not delete with them (the places of sessions age out of
// memory), so every user may delete their account. An application
// deletes or detaches its own rows of the user here, or refuses with a
// message the user sees.
func beforeDeleteUser(context.Context, string) error { return nil }

type account struct {
	a      *auth.Auth
	places *sessionPlaces
}

// accountView is the answer of GET /api/account. Times are Unix
// milliseconds, as the SDKs' are.
type accountView struct {
	User struct {
		ID         string `json:"id"`
		Email      string `json:"email"`
		TimeJoined int64  `json:"timeJoined"`
	} `json:"user"`
	Logins        []loginView   `json:"logins"`
	Sessions      []sessionView `json:"sessions"`
	SecondFactors struct {
		TOTP          []totpView `json:"totp"`
		RecoveryCodes int        `json:"recoveryCodes"`
	} `json:"secondFactors"`
}

type loginView struct {
	ID       string `json:"id"`
	Method   string `json:"method"`             // emailpassword, thirdparty, passwordless or webauthn
	Provider string `json:"provider,omitempty"` // the thirdPartyId of a third-party login
	Email    string `json:"email,omitempty"`
	Verified bool   `json:"verified"`
	Current  bool   `json:"current"` // this session was started with it
	Created  int64  `json:"createdAt"`
}

type sessionView struct {
	Handle    string `json:"handle"`
	LoginID   string `json:"loginId"` // the login method it was started with
	Created   int64  `json:"createdAt"`
	Refreshed int64  `json:"refreshedAt"`
	Expires   int64  `json:"expiresAt"`
	Current   bool   `json:"current"`
	// From is where the session started, absent when the demo did not
	// see it start (it keeps that in memory only).
	From *placeView `json:"from,omitempty"`
}

type placeView struct {
	Address string `json:"address"` // the client's IP address
	Device  string `json:"device"`  // "Chrome on Linux", from the User-Agent; empty if unknown
}

type totpView struct {
	Name     string `json:"name"`
	Verified bool   `json:"verified"`
	Created  int64  `json:"createdAt"`
}

// show answers GET /api/account: the session's user, read with UserByID,
// Sessions and SecondFactors. GET /api/live (live.go) sends the same
// sessions again whenever they change.
func (acc *account) show(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	s, _ := auth.SessionFromContext(ctx)
	u, err := acc.a.UserByID(ctx, s.UserID)
	if err != nil {
		accountError(w, err)
		return
	}
	sessions, err := sessionViews(ctx, acc.a, acc.places, s.UserID, s.Handle)
	if err != nil {
		accountError(w, err)
		return
	}
	factors, err := acc.a.SecondFactors(ctx, s.UserID)
	if err != nil {
		accountError(w, err)
		return
	}
	var v accountView
	v.User.ID, v.User.Email, v.User.TimeJoined = u.ID, u.Email, u.TimeJoined.UnixMilli()
	v.Logins = []loginView{}
	for _, l := range u.LoginMethods {
		v.Logins = append(v.Logins, loginView{ID: l.ID, Method: l.Method, Provider: l.ThirdPartyID, Email: l.Email,
			// A login without an email has none to verify.
			Verified: l.Email == "" || l.EmailVerified,
			Current:  l.ID == loginIDOf(s), Created: l.CreatedAt.UnixMilli()})
	}
	v.Sessions = sessions
	v.SecondFactors.TOTP = []totpView{}
	for _, d := range factors.TOTPDevices {
		v.SecondFactors.TOTP = append(v.SecondFactors.TOTP, totpView{Name: d.Name, Verified: d.Verified, Created: d.CreatedAt.UnixMilli()})
	}
	v.SecondFactors.RecoveryCodes = factors.RecoveryCodes
	writeAccountJSON(w, http.StatusOK, v)
}

// sessionViews lists the live sessions of a user, newest first, as the
// account page shows them: current is the handle of the session asking,
// GET /api/account's or the live connection's (live.go).
func sessionViews(ctx context.Context, a *auth.Auth, places *sessionPlaces, userID, current string) ([]sessionView, error) {
	sessions, err := a.Sessions(ctx, userID)
	if err != nil {
		return nil, err
	}
	views := []sessionView{}
	for _, si := range sessions {
		sv := sessionView{Handle: si.Handle, LoginID: si.LoginID, Created: si.CreatedAt.UnixMilli(),
			Refreshed: si.RefreshedAt.UnixMilli(), Expires: si.ExpiresAt.UnixMilli(), Current: si.Handle == current}
		if p, ok := places.of(si.Handle); ok {
			sv.From = &placeView{Address: p.address, Device: deviceOf(p.userAgent)}
		}
		views = append(views, sv)
	}
	return views, nil
}

// revokeSession answers POST /api/account/sessions/{handle}/revoke: it
// ends one of the user's own sessions. A handle that is not one of theirs
// is answered 404, as one that does not exist: RevokeSession itself ends
// any session, so the owner is checked here.
func (acc *account) revokeSession(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	s, _ := auth.SessionFromContext(ctx)
	sessions, err := acc.a.Sessions(ctx, s.UserID)
	if err != nil {
		accountError(w, err)
		return
	}
	handle := r.PathValue("handle")
	if !slices.ContainsFunc(sessions, func(si auth.SessionInfo) bool { return si.Handle == handle }) {
		accountError(w, auth.ErrNotFound)
		return
	}
	if err := acc.a.RevokeSession(ctx, handle); err != nil {
		accountError(w, err)
		return
	}
	writeAccountJSON(w, http.StatusOK, map[string]int{"revoked": 1})
}

// revokeOthers answers POST /api/account/sessions/revoke-others: it ends
// every session of the user but this one ("sign out everywhere else").
func (acc *account) revokeOthers(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	s, _ := auth.SessionFromContext(ctx)
	sessions, err := acc.a.Sessions(ctx, s.UserID)
	if err != nil {
		accountError(w, err)
		return
	}
	n := 0
	for _, si := range sessions {
		if si.Handle == s.Handle {
			continue
		}
		// One that ended meanwhile (signed out, expired) is not an error.
		err := acc.a.RevokeSession(ctx, si.Handle)
		if errors.Is(err, auth.ErrNotFound) {
			continue
		} else if err != nil {
			accountError(w, err)
			return
		}
		n++
	}
	writeAccountJSON(w, http.StatusOK, map[string]int{"revoked": n})
}

// unlink answers POST /api/account/logins/{id}/unlink: it removes one of
// the user's login methods with Unlink, which ends the sessions it
// started (this one, if it was signed in with it: signedOut says so) and
// refuses the user's last one, and a passkey that is the last second
// factor the app requires (409 each, with the reason to show).
func (acc *account) unlink(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	s, _ := auth.SessionFromContext(ctx)
	id := r.PathValue("id")
	if err := acc.a.Unlink(ctx, s.UserID, id); err != nil {
		accountError(w, err)
		return
	}
	writeAccountJSON(w, http.StatusOK, map[string]bool{"signedOut": id == loginIDOf(s)})
}

// loginIDOf is the login method a session was started with; a session
// from before users had several names none, and means the first.
func loginIDOf(s auth.Session) string {
	if s.LoginID == "" {
		return s.UserID
	}
	return s.LoginID
}

// accountError answers an error of the Go API: the library's sentinels
// say which answer, the cause stays in the server.
func accountError(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, auth.ErrLastLogin):
		writeAccountJSON(w, http.StatusConflict, map[string]string{"message": "This is your only way to sign in: add another before you remove it."})
	case errors.Is(err, auth.ErrLastFactor):
		writeAccountJSON(w, http.StatusConflict, map[string]string{"message": "This is your last second factor: set up another before you remove it."})
	case errors.Is(err, auth.ErrNotFound):
		writeAccountJSON(w, http.StatusNotFound, map[string]string{"message": "not found"})
	case errors.Is(err, store.ErrUnavailable):
		// The database is out of reach for now: try again, as the
		// library's own routes say.
		w.Header().Set("Retry-After", "1")
		writeAccountJSON(w, http.StatusServiceUnavailable, map[string]string{"message": "try again"})
	default:
		writeAccountJSON(w, http.StatusInternalServerError, map[string]string{"message": "internal error"})
	}
}

func writeAccountJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// ---- where sessions started ----

// sessionPlaces remembers where each session started: the library keeps
// no client information, so the demo records the address and User-Agent
// of each sign-in from its event (Config.OnEvent, EventSignIn), and
// forgets a session when it ends. It is in memory and bounded: a session
// started before the demo restarted, or pushed out by newer ones, shows
// as unknown. An application that wants this to last keeps it in its own
// database.
type sessionPlaces struct {
	mu    sync.Mutex
	max   int
	m     map[string]place
	order []string // handles in the order they were added, some gone from m
}

type place struct{ address, userAgent string }

// sessionStarts is the demo's table of where sessions started, filled by
// newAuth's event hook and read by the account page. One for the process:
// session handles are unique, so several Auths (as in tests) share it
// without mixing up their sessions.
var sessionStarts = newSessionPlaces(10_000)

func newSessionPlaces(max int) *sessionPlaces {
	return &sessionPlaces{max: max, m: map[string]place{}}
}

// record is the OnEvent hook that keeps sessionPlaces up to date.
func (p *sessionPlaces) record(_ context.Context, e auth.Event) {
	if p == nil || e.SessionHandle == "" {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch e.Kind {
	case auth.EventSignIn:
		addr, _, err := net.SplitHostPort(e.RemoteAddr)
		if err != nil {
			addr = e.RemoteAddr
		}
		for len(p.m) >= p.max && len(p.order) > 0 {
			delete(p.m, p.order[0])
			p.order = p.order[1:]
		}
		if len(p.order) >= 2*p.max {
			// Drop the handles of sessions that ended, so that order
			// stays bounded too.
			p.order = slices.DeleteFunc(p.order, func(h string) bool { _, ok := p.m[h]; return !ok })
		}
		p.m[e.SessionHandle] = place{address: addr, userAgent: e.UserAgent}
		p.order = append(p.order, e.SessionHandle)
	case auth.EventSignOut, auth.EventSessionRevoked, auth.EventTokenTheft:
		delete(p.m, e.SessionHandle)
	}
}

func (p *sessionPlaces) of(handle string) (place, bool) {
	if p == nil {
		return place{}, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	pl, ok := p.m[handle]
	return pl, ok
}

// eventHooks runs each of hooks for every event.
func eventHooks(hooks ...func(context.Context, auth.Event)) func(context.Context, auth.Event) {
	return func(ctx context.Context, e auth.Event) {
		for _, h := range hooks {
			h(ctx, e)
		}
	}
}

// deviceOf names a browser and system from a User-Agent, as in "Firefox
// on Linux": a few well-known substrings, good enough for a person to
// recognise their own devices, not for any decision. Empty if it knows
// neither.
func deviceOf(ua string) string {
	has := func(s string) bool { return strings.Contains(ua, s) }
	browser := ""
	switch {
	case has("Edg/"):
		browser = "Edge"
	case has("OPR/"):
		browser = "Opera"
	case has("Firefox/"):
		browser = "Firefox"
	case has("HeadlessChrome/"):
		browser = "Headless Chrome"
	case has("Chrome/") || has("Chromium/") || has("CriOS/"):
		browser = "Chrome"
	case has("Safari/") && has("Version/"):
		browser = "Safari"
	case strings.HasPrefix(ua, "curl/"):
		browser = "curl"
	case strings.HasPrefix(ua, "Go-http-client/"):
		browser = "a Go program"
	}
	system := ""
	switch {
	case has("Android"):
		system = "Android"
	case has("iPhone"):
		system = "iOS"
	case has("iPad"):
		system = "iPadOS"
	case has("CrOS"):
		system = "ChromeOS"
	case has("Windows"):
		system = "Windows"
	case has("Macintosh") || has("Mac OS X"):
		system = "macOS"
	case has("Linux"):
		system = "Linux"
	}
	switch {
	case browser != "" && system != "":
		return browser + " on " + system
	case browser != "":
		return browser
	case system != "":
		return "a browser on " + system
	}
	return ""
}
