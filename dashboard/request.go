package dashboard

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/latchkit/auth/internal/wire"
	"github.com/latchkit/auth/store"
)

// The statuses of the API beside OK, as the SDKs name them.
const (
	statusNoUser          = "NO_USER_FOUND_ERROR"
	statusNotEnabled      = "FEATURE_NOT_ENABLED_ERROR"
	statusUnknownRole     = "UNKNOWN_ROLE_ERROR"
	statusEmailExists     = "EMAIL_ALREADY_EXISTS_ERROR"
	statusVerifiedAlready = "EMAIL_ALREADY_VERIFIED_ERROR"
)

// body is the JSON object of a request's body, or nil when it has
// answered the request (a 400 for anything else, a 413 past the
// kernel's bound).
func (h *api) body(w http.ResponseWriter, r *http.Request) map[string]json.RawMessage {
	var b map[string]json.RawMessage
	if err := h.k.ReadJSON(w, r, &b); err != nil {
		h.k.Fail(w, r, err)
		return nil
	}
	if b == nil { // the body was null
		wire.Message(w, http.StatusBadRequest, "the request body must be a JSON object")
		return nil
	}
	return b
}

// stringField is b's field name, which must be a string, or answers 400
// and returns false.
func stringField(w http.ResponseWriter, b map[string]json.RawMessage, name string) (string, bool) {
	var s string
	if raw, ok := b[name]; !ok || json.Unmarshal(raw, &s) != nil || string(raw) == "null" {
		wire.Message(w, http.StatusBadRequest, "Required parameter '"+name+"' is missing or has an invalid type")
		return "", false
	}
	return s, true
}

// stringFields are b's fields names, each of which must be a string, or
// answers 400 and returns false.
func stringFields(w http.ResponseWriter, b map[string]json.RawMessage, names ...string) ([]string, bool) {
	out := make([]string, len(names))
	for i, name := range names {
		var ok bool
		if out[i], ok = stringField(w, b, name); !ok {
			return nil, false
		}
	}
	return out, true
}

// loginParam is the login named by the query's recipeUserId (and
// userId), or it answers the request itself and returns false.
func (h *api) loginParam(w http.ResponseWriter, r *http.Request) (store.Login, bool) {
	loginID, ok := param(w, r, "recipeUserId")
	if !ok {
		return store.Login{}, false
	}
	return h.login(w, r, r.URL.Query().Get("userId"), loginID)
}

// stringsField is b's field name, which must be an array of strings, or
// answers 400 and returns false; optional lets it be absent (nil).
func stringsField(w http.ResponseWriter, b map[string]json.RawMessage, name string, optional bool) ([]string, bool) {
	raw, ok := b[name]
	if !ok && optional {
		return nil, true
	}
	var list []string
	if !ok || json.Unmarshal(raw, &list) != nil || list == nil {
		wire.Message(w, http.StatusBadRequest, "Required parameter '"+name+"' is missing or has an invalid type")
		return nil, false
	}
	return list, true
}

// param is the query parameter name, which must not be empty, or answers
// 400 and returns false.
func param(w http.ResponseWriter, r *http.Request, name string) (string, bool) {
	v := r.URL.Query().Get(name)
	if v == "" {
		wire.Message(w, http.StatusBadRequest, "Missing required parameter '"+name+"'")
		return "", false
	}
	return v, true
}

// login finds the login loginID of the user userID, or of the user
// whose id is loginID when userID is empty: the store finds a login by
// its user, and a user's first login has the user's id. It answers
// NO_USER_FOUND_ERROR itself when there is none.
func (h *api) login(w http.ResponseWriter, r *http.Request, userID, loginID string) (store.Login, bool) {
	if userID == "" {
		userID = loginID
	}
	logins, err := h.k.Store().Logins(r.Context(), userID)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		h.k.Fail(w, r, err)
		return store.Login{}, false
	}
	for _, l := range logins {
		if l.ID == loginID {
			return l, true
		}
	}
	wire.Status(w, statusNoUser)
	return store.Login{}, false
}

// failed answers err: a missing user is a status, never a 5xx; another
// error is the kernel's to answer.
func (h *api) failed(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, store.ErrNotFound) {
		wire.Status(w, statusNoUser)
		return
	}
	h.k.Fail(w, r, err)
}

// optionalString is b's field name if it is a string.
func optionalString(b map[string]json.RawMessage, name string) (string, bool) {
	var s string
	err := json.Unmarshal(b[name], &s)
	return s, err == nil
}

// loginByID is the login id of the user whose id it is too: a user's
// first login.
func (h *api) loginByID(ctx context.Context, id string) (store.Login, bool) {
	logins, err := h.k.Store().Logins(ctx, id)
	if err != nil {
		return store.Login{}, false
	}
	for _, l := range logins {
		if l.ID == id {
			return l, true
		}
	}
	return store.Login{}, false
}
