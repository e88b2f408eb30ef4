package dashboard

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"slices"
	"strings"

	"github.com/latchkit/auth/internal/kit"
	"github.com/latchkit/auth/internal/wire"
	"github.com/latchkit/auth/store"
)

// access is what a request may do with the API.
type access int

const (
	denied    access = iota // no key and no session: 401
	forbidden               // a session without the permission: 403
	allowed
)

// guard puts next behind the API's check.
func (h *api) guard(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		// Answers about users are nobody's to keep.
		w.Header().Set("Cache-Control", "no-store")
		op, refused := h.answerRefusal(w, r)
		if refused {
			return
		}
		next(w, r.WithContext(kit.WithOperator(r.Context(), op)))
	}
}

// validateKey answers the app's sign-in form: whether the key (or the
// session) opens the API.
func (h *api) validateKey(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	if _, refused := h.answerRefusal(w, r); refused {
		return
	}
	// The app sends {}; read it, as every route with a body is read,
	// within the kernel's bound.
	var ignored map[string]any
	if err := h.k.ReadOptionalJSON(w, r, &ignored); err != nil {
		h.k.Fail(w, r, err)
		return
	}
	wire.JSON(w, http.StatusOK, wire.OK)
}

// answerRefusal answers a request that may not use the API, and reports
// whether it did; otherwise it returns the operator the request acts
// for. Every refusal has a JSON body: the app's sign-in form reads it
// before it looks at the status.
func (h *api) answerRefusal(w http.ResponseWriter, r *http.Request) (operator string, refused bool) {
	// A request with the header spends one of the client's allowance of
	// failures before its key is compared, and gets it back unless it
	// fails: past the allowance no key is tried, so that keys cannot be
	// guessed at the server's speed.
	var limit []kit.Limit
	if r.Header.Get("Authorization") != "" {
		limit = []kit.Limit{{Key: kit.LimitKey("dashboard-key", h.k.Client(r)), Rate: h.failures}}
		if wait := h.k.Take(r.Context(), limit...); wait > 0 {
			unread(w, r)
			wire.TooMany(w, wait)
			return "", true
		}
	}
	a, op, err := h.access(r)
	if a != denied || err != nil {
		h.k.Refund(r.Context(), limit...)
	}
	switch {
	case err != nil:
		unread(w, r)
		h.k.Fail(w, r, err)
	case a == denied:
		unread(w, r)
		wire.Message(w, http.StatusUnauthorized, msgUnauthorised)
	case a == forbidden:
		unread(w, r)
		wire.Message(w, http.StatusForbidden, msgNoAccess)
	default:
		return op, false
	}
	return "", true
}

// unread closes the connection after the answer to a request whose body
// is refused unread: without it, net/http would wait to read up to
// 256 KB of the body before it answers.
func unread(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength != 0 {
		w.Header().Set("Connection", "close")
	}
}

// KeyOperator is the operator that events name for what a request with
// the API key does: the key names no one.
const KeyOperator = "api-key"

// access decides what r may do, and for whom: the API key (KeyOperator);
// else a session whose user holds the permission, read from the store
// now (the user).
func (h *api) access(r *http.Request) (access, string, error) {
	if h.keyMatches(r) {
		return allowed, KeyOperator, nil
	}
	roles := h.op.Roles()
	if roles == nil {
		return denied, "", nil
	}
	userID, ok := h.sessionUser(r)
	if !ok {
		return denied, "", nil
	}
	_, permissions, err := roles.UserRoles(r.Context(), store.PublicTenant, userID)
	if err != nil {
		return denied, "", err
	}
	if slices.Contains(permissions, h.permission) {
		return allowed, userID, nil
	}
	return forbidden, "", nil
}

// keyMatches reports whether r carries "Authorization: Bearer <APIKey>",
// the scheme in any case, comparing hashes so that the time taken says
// nothing of the key.
func (h *api) keyMatches(r *http.Request) bool {
	auths := r.Header.Values("Authorization")
	if !h.hasKey || len(auths) != 1 {
		return false
	}
	scheme, key, ok := strings.Cut(strings.TrimSpace(auths[0]), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(key)))
	return subtle.ConstantTimeCompare(sum[:], h.key[:]) == 1
}

// sessionUser is the user of r's session: a header-mode access token in
// the Authorization header, or else the session cookie. A cookie counts
// only beside an Authorization header (whatever it holds: the dashboard
// app always sends one), a header no page of another site can make a
// browser send, so that a link or a form elsewhere cannot act with an
// operator's cookie, even by GET (unlink is a GET). For the same reason
// the kernel's own check for cookies, the rid header, is met here.
func (h *api) sessionUser(r *http.Request) (string, bool) {
	if r.Header.Get("Authorization") == "" {
		return "", false
	}
	if id, ok := h.op.RequestUser(r); ok {
		return id, true
	}
	cookie := r.Clone(r.Context())
	cookie.Header.Del("Authorization")
	cookie.Header.Set("rid", "dashboard")
	return h.op.RequestUser(cookie)
}
