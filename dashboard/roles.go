package dashboard

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/latchkit/auth/internal/kit"
	"github.com/latchkit/auth/internal/wire"
	"github.com/latchkit/auth/store"
)

// maxName is the longest role name or permission, in bytes, as package
// roles has it.
const maxName = 255

// roleStore is the store's roles, or nil when it has answered the
// request: FEATURE_NOT_ENABLED_ERROR without auth.Config.Roles, as the
// SDKs answer without their roles recipe.
func (h *api) roleStore(w http.ResponseWriter) store.RoleStore {
	st := h.op.Roles()
	if st == nil {
		wire.Status(w, statusNotEnabled)
	}
	return st
}

// name trims a role or permission and checks its length, as package
// roles does, or answers 400.
func name(w http.ResponseWriter, kind, s string) (string, bool) {
	s = strings.TrimSpace(s)
	if s == "" || len(s) > maxName {
		wire.Message(w, http.StatusBadRequest, fmt.Sprintf("a %s must be 1 to %d bytes", kind, maxName))
		return "", false
	}
	return s, true
}

// names is name for each of a list, without repeats.
func names(w http.ResponseWriter, kind string, list []string) ([]string, bool) {
	out := []string{}
	for _, s := range list {
		n, ok := name(w, kind, s)
		if !ok {
			return nil, false
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out, true
}

// list answers OK with the list under key.
func list(w http.ResponseWriter, key string, l []string) {
	if l == nil {
		l = []string{}
	}
	wire.JSON(w, http.StatusOK, map[string]any{"status": "OK", key: l})
}

// flag answers OK with the boolean under key.
func flag(w http.ResponseWriter, key string, v bool) {
	wire.JSON(w, http.StatusOK, map[string]any{"status": "OK", key: v})
}

func (h *api) roles(w http.ResponseWriter, r *http.Request) {
	st := h.roleStore(w)
	if st == nil {
		return
	}
	roles, err := st.Roles(r.Context())
	if err != nil {
		h.k.Fail(w, r, err)
		return
	}
	list(w, "roles", roles)
}

// putRole creates a role, or adds permissions to one.
func (h *api) putRole(w http.ResponseWriter, r *http.Request) {
	st, role, perms, ok := h.roleBody(w, r, false)
	if !ok {
		return
	}
	created, err := st.CreateRole(r.Context(), role, perms)
	if err != nil {
		h.k.Fail(w, r, err)
		return
	}
	switch {
	case created:
		h.roleEvent(r, kit.EventRoleCreated, "", role)
	case len(perms) > 0:
		h.roleEvent(r, kit.EventRoleChanged, "", role)
	}
	flag(w, "createdNewRole", created)
}

// roleParam is the role named by the query, or "" when it has answered
// the request.
func roleParam(w http.ResponseWriter, r *http.Request) string {
	role, ok := param(w, r, "role")
	if !ok {
		return ""
	}
	role, _ = name(w, "role", role)
	return role
}

func (h *api) deleteRole(w http.ResponseWriter, r *http.Request) {
	st := h.roleStore(w)
	if st == nil {
		return
	}
	role := roleParam(w, r)
	if role == "" {
		return
	}
	existed, _, err := st.DeleteRole(r.Context(), role)
	if err != nil {
		h.k.Fail(w, r, err)
		return
	}
	if existed {
		h.roleEvent(r, kit.EventRoleDeleted, "", role)
	}
	flag(w, "didRoleExist", existed)
}

func (h *api) rolePermissions(w http.ResponseWriter, r *http.Request) {
	st := h.roleStore(w)
	if st == nil {
		return
	}
	role := roleParam(w, r)
	if role == "" {
		return
	}
	perms, err := st.RolePermissions(r.Context(), role)
	if h.roleFailed(w, r, err) {
		return
	}
	list(w, "permissions", perms)
}

// roleFailed answers err, UNKNOWN_ROLE_ERROR for a role that does not
// exist, and reports whether there was one.
func (h *api) roleFailed(w http.ResponseWriter, r *http.Request, err error) bool {
	switch {
	case errors.Is(err, store.ErrNotFound):
		wire.Status(w, statusUnknownRole)
	case err != nil:
		h.k.Fail(w, r, err)
	default:
		return false
	}
	return true
}

// roleBody reads the role and the permissions of a request's
// body, and the role store; optional lets the permissions be absent. Or
// it answers the request itself and returns false.
func (h *api) roleBody(w http.ResponseWriter, r *http.Request, optional bool) (st store.RoleStore, role string, perms []string, ok bool) {
	b := h.body(w, r)
	if b == nil {
		return nil, "", nil, false
	}
	if st = h.roleStore(w); st == nil {
		return nil, "", nil, false
	}
	if role, ok = stringField(w, b, "role"); !ok {
		return nil, "", nil, false
	}
	if perms, ok = stringsField(w, b, "permissions", optional); !ok {
		return nil, "", nil, false
	}
	if role, ok = name(w, "role", role); !ok {
		return nil, "", nil, false
	}
	if perms, ok = names(w, "permission", perms); !ok {
		return nil, "", nil, false
	}
	return st, role, perms, true
}

// removePermissions takes permissions from a role; none named takes
// them all, as the SDKs' core does.
func (h *api) removePermissions(w http.ResponseWriter, r *http.Request) {
	st, role, perms, ok := h.roleBody(w, r, true)
	if !ok {
		return
	}
	if h.roleFailed(w, r, st.RemovePermissions(r.Context(), role, perms)) {
		return
	}
	h.roleEvent(r, kit.EventRoleChanged, "", role)
	wire.JSON(w, http.StatusOK, wire.OK)
}

func (h *api) userRoles(w http.ResponseWriter, r *http.Request) {
	st := h.roleStore(w)
	if st == nil {
		return
	}
	userID, ok := param(w, r, "userId")
	if !ok {
		return
	}
	roles, _, err := st.UserRoles(r.Context(), store.PublicTenant, userID)
	if err != nil {
		h.k.Fail(w, r, err)
		return
	}
	list(w, "roles", roles)
}

// giveRole gives a role to a user who exists; the user's sessions carry
// it from their next refresh.
func (h *api) giveRole(w http.ResponseWriter, r *http.Request) {
	b := h.body(w, r)
	if b == nil {
		return
	}
	st := h.roleStore(w)
	if st == nil {
		return
	}
	f, ok := stringFields(w, b, "userId", "role")
	if !ok {
		return
	}
	userID, role := f[0], f[1]
	if role, ok = name(w, "role", role); !ok {
		return
	}
	ctx := r.Context()
	if _, err := h.k.Store().UserByID(ctx, userID); err != nil {
		h.failed(w, r, err)
		return
	}
	had, err := st.GiveRole(ctx, store.PublicTenant, userID, role)
	if h.roleFailed(w, r, err) {
		return
	}
	if !had {
		h.roleEvent(r, kit.EventRoleGiven, userID, role)
	}
	flag(w, "didUserAlreadyHaveRole", had)
}

func (h *api) takeRole(w http.ResponseWriter, r *http.Request) {
	st := h.roleStore(w)
	if st == nil {
		return
	}
	userID, ok := param(w, r, "userId")
	if !ok {
		return
	}
	role := roleParam(w, r)
	if role == "" {
		return
	}
	had, err := st.TakeRole(r.Context(), store.PublicTenant, userID, role)
	if h.roleFailed(w, r, err) {
		return
	}
	if had {
		h.roleEvent(r, kit.EventRoleTaken, userID, role)
	}
	flag(w, "didUserHaveRole", had)
}

// roleEvent reports a change of roles made through the API: to the user
// userID, or of the role itself when userID is "".
func (h *api) roleEvent(r *http.Request, kind, userID, role string) {
	h.k.Emit(r.Context(), r, kit.Event{Kind: kind, UserID: userID, Role: role})
}
