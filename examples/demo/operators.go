package main

// The admin page, /admin: the demo's own operators' console, on the
// library's Go API (ListUsers, UserByID, BanUser, UnbanUser, Impersonate,
// StopImpersonating, AuditLog) and package roles'. Sessions with the role
// admin use it; the others get the SDKs' 403 "invalid claim".

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/roles"
	"github.com/latchkit/auth/store"
)

// impersonatePermission is the permission Impersonate asks of an
// operator: the role admin has it.
const impersonatePermission = "users:impersonate"

// operatorConsole serves the admin page's API.
type operatorConsole struct {
	a     *auth.Auth
	roles *roles.Recipe
}

// mountOperators serves the admin page's API to sessions with the role
// admin, and POST /api/impersonation/stop to the session an operator
// started as a user, which is the user's and holds no role of an admin.
func mountOperators(mux *http.ServeMux, a *auth.Auth, rr *roles.Recipe, tenantsOn bool) {
	c := &operatorConsole{a: a, roles: rr}
	// The Go API's calls name the admin as the operator, in their events
	// and the audit log.
	admin := func(pattern string, h http.HandlerFunc) {
		mux.Handle(pattern, a.RequireSession(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s, _ := auth.SessionFromContext(r.Context())
			h(w, r.WithContext(auth.WithOperator(r.Context(), s.UserID)))
		}), roles.Require("admin")))
	}
	admin("GET /api/admin/users", c.users)
	admin("GET /api/admin/users/{id}", c.user)
	admin("POST /api/admin/users/{id}/ban", c.ban)
	admin("POST /api/admin/users/{id}/unban", c.unban)
	admin("POST /api/admin/users/{id}/roles", c.giveRole)
	admin("POST /api/admin/users/{id}/roles/{role}/remove", c.takeRole)
	admin("POST /api/admin/users/{id}/impersonate", c.impersonate)
	admin("GET /api/admin/audit", c.audit)
	if tenantsOn {
		admin("GET /api/admin/tenants", c.tenants)
		admin("POST /api/admin/tenants/invite", c.invite)
	}
	mux.Handle("POST /api/impersonation/stop", a.RequireSession(http.HandlerFunc(c.stop)))
}

// listedUser is a user in the list.
type listedUser struct {
	ID         string    `json:"id"`
	Email      string    `json:"email"`
	TimeJoined time.Time `json:"timeJoined"`
	Methods    []string  `json:"methods"`
	Banned     bool      `json:"banned"`
}

// users answers a page of users, newest first: ?email= filters by a part
// of the address, ?after= is the cursor of the page before.
func (c *operatorConsole) users(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	page, err := c.a.ListUsers(r.Context(), store.UserQuery{Newest: true, Email: q.Get("email"), After: q.Get("after"), Limit: 20})
	if err != nil {
		operatorError(w, err)
		return
	}
	now := time.Now()
	out := struct {
		Users []listedUser `json:"users"`
		Next  string       `json:"next,omitempty"`
	}{Users: []listedUser{}, Next: page.Next}
	for _, u := range page.Users {
		lu := listedUser{ID: u.ID, Email: u.Email, TimeJoined: u.TimeJoined, Methods: []string{}, Banned: u.Ban.ActiveAt(now)}
		for _, m := range u.LoginMethods {
			lu.Methods = append(lu.Methods, m.Method)
		}
		out.Users = append(out.Users, lu)
	}
	writeAccountJSON(w, http.StatusOK, out)
}

// user answers one user: their ways in, ban, roles and live sessions.
func (c *operatorConsole) user(w http.ResponseWriter, r *http.Request) {
	ctx, id := r.Context(), r.PathValue("id")
	u, err := c.a.UserByID(ctx, id)
	if err != nil {
		operatorError(w, err)
		return
	}
	roleList, _, err := c.roles.UserRoles(ctx, id)
	if err != nil {
		operatorError(w, err)
		return
	}
	sessions, err := c.a.Sessions(ctx, id)
	if err != nil {
		operatorError(w, err)
		return
	}
	type ban struct {
		At     time.Time  `json:"at"`
		Until  *time.Time `json:"until,omitempty"`
		Reason string     `json:"reason"`
		By     string     `json:"by"`
	}
	out := struct {
		auth.User
		Banned   *ban     `json:"banned,omitempty"`
		Roles    []string `json:"roles"`
		Sessions int      `json:"sessions"`
	}{User: u, Roles: append([]string{}, roleList...), Sessions: len(sessions)}
	if u.Ban.ActiveAt(time.Now()) {
		out.Banned = &ban{At: u.Ban.At, Reason: u.Ban.Reason, By: u.Ban.By}
		if !u.Ban.Until.IsZero() {
			out.Banned.Until = &u.Ban.Until
		}
	}
	writeAccountJSON(w, http.StatusOK, out)
}

// ban bans the user: {"reason": "...", "minutes": 0 for good}.
func (c *operatorConsole) ban(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Reason  string `json:"reason"`
		Minutes int    `json:"minutes"`
	}
	if json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096)).Decode(&body) != nil || body.Minutes < 0 || len(body.Reason) > 500 {
		writeAccountJSON(w, http.StatusBadRequest, map[string]string{"message": "send {\"reason\": text, \"minutes\": 0 or more}"})
		return
	}
	s, _ := auth.SessionFromContext(r.Context())
	b := auth.Ban{Reason: body.Reason, By: s.UserID}
	if body.Minutes > 0 {
		b.Until = time.Now().Add(time.Duration(body.Minutes) * time.Minute)
	}
	c.done(w, c.a.BanUser(r.Context(), r.PathValue("id"), b))
}

func (c *operatorConsole) unban(w http.ResponseWriter, r *http.Request) {
	s, _ := auth.SessionFromContext(r.Context())
	c.done(w, c.a.UnbanUser(r.Context(), r.PathValue("id"), s.UserID))
}

// giveRole gives a role that exists: {"role": "admin"}.
func (c *operatorConsole) giveRole(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Role string `json:"role"`
	}
	if json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096)).Decode(&body) != nil || body.Role == "" {
		writeAccountJSON(w, http.StatusBadRequest, map[string]string{"message": "send {\"role\": name}"})
		return
	}
	ctx, id := r.Context(), r.PathValue("id")
	if _, err := c.a.UserByID(ctx, id); err != nil {
		operatorError(w, err)
		return
	}
	_, err := c.roles.Give(ctx, id, body.Role)
	c.done(w, err)
}

func (c *operatorConsole) takeRole(w http.ResponseWriter, r *http.Request) {
	_, err := c.roles.Take(r.Context(), r.PathValue("id"), r.PathValue("role"))
	c.done(w, err)
}

// impersonate starts a session as the user in the operator's browser: the
// answer carries its tokens, as a sign-in's does.
func (c *operatorConsole) impersonate(w http.ResponseWriter, r *http.Request) {
	if err := c.a.Impersonate(w, r, r.PathValue("id")); err != nil {
		operatorError(w, err)
	}
}

// stop ends the session an operator started as a user, and gives the
// operator's own back.
func (c *operatorConsole) stop(w http.ResponseWriter, r *http.Request) {
	if err := c.a.StopImpersonating(w, r); err != nil {
		operatorError(w, err)
	}
}

// audit answers a page of the audit log: ?user= of a user, ?after= the
// cursor of the page before.
func (c *operatorConsole) audit(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	page, err := c.a.AuditLog(r.Context(), store.AuditQuery{UserID: q.Get("user"), After: q.Get("after"), Limit: 50})
	if err != nil {
		operatorError(w, err)
		return
	}
	if page.Entries == nil {
		page.Entries = []store.AuditEntry{}
	}
	writeAccountJSON(w, http.StatusOK, page)
}

func (c *operatorConsole) done(w http.ResponseWriter, err error) {
	if err != nil {
		operatorError(w, err)
		return
	}
	writeAccountJSON(w, http.StatusOK, map[string]string{"status": "OK"})
}

// operatorError answers the Go API's errors with a status and a message
// the page shows.
func operatorError(w http.ResponseWriter, err error) {
	code, msg := http.StatusInternalServerError, "internal error"
	switch {
	case errors.Is(err, auth.ErrNotFound):
		code, msg = http.StatusNotFound, "no such user"
	case errors.Is(err, store.ErrBadCursor):
		code, msg = http.StatusBadRequest, "bad cursor"
	case errors.Is(err, roles.ErrUnknownRole):
		code, msg = http.StatusBadRequest, "no such role"
	case errors.Is(err, auth.ErrForbidden):
		code, msg = http.StatusForbidden, "not allowed: operators do not act as operators, or as themselves"
	case errors.Is(err, store.ErrBanned):
		code, msg = http.StatusForbidden, "the user is banned"
	case errors.Is(err, auth.ErrNotImpersonating):
		code, msg = http.StatusBadRequest, "this session is no operator's"
	case errors.Is(err, auth.ErrUnauthorized), errors.Is(err, auth.ErrTryRefreshToken):
		code, msg = http.StatusUnauthorized, "unauthorised"
	}
	writeAccountJSON(w, code, map[string]string{"message": msg})
}
