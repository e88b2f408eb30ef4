package dashboard

import (
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/latchkit/auth/internal/address"
	"github.com/latchkit/auth/internal/kit"
	"github.com/latchkit/auth/internal/wire"
	"github.com/latchkit/auth/store"
)

// searchTags are the search tags of the list of users, as the SDKs name
// them.
var searchTags = []string{"email", "phone", "provider"}

func (h *api) searchTags(w http.ResponseWriter, r *http.Request) {
	wire.JSON(w, http.StatusOK, struct {
		Status string   `json:"status"`
		Tags   []string `json:"tags"`
	}{"OK", searchTags})
}

// userQuery reads the query of GET /users, or answers 400.
func userQuery(w http.ResponseWriter, r *http.Request) (store.UserQuery, bool) {
	query := r.URL.Query()
	limit, ok := param(w, r, "limit")
	if !ok {
		return store.UserQuery{}, false
	}
	n, err := strconv.Atoi(limit)
	if err != nil || n < 1 {
		wire.Message(w, http.StatusBadRequest, "'limit' must be a positive integer")
		return store.UserQuery{}, false
	}
	q := store.UserQuery{Limit: n, After: query.Get("paginationToken"), Newest: true}
	switch query.Get("timeJoinedOrder") {
	case "", "DESC":
	case "ASC":
		q.Newest = false
	default:
		wire.Message(w, http.StatusBadRequest, "timeJoinedOrder must be one of ASC or DESC")
		return store.UserQuery{}, false
	}
	// The app joins several values of a tag with ";"; the store matches
	// one, the first.
	for _, tag := range []struct {
		name string
		to   *string
	}{{"email", &q.Email}, {"phone", &q.Phone}, {"provider", &q.Provider}} {
		for _, v := range strings.Split(query.Get(tag.name), ";") {
			if v = strings.ToLower(strings.TrimSpace(v)); v != "" {
				*tag.to = v
				break
			}
		}
	}
	return q, true
}

func (h *api) listUsers(w http.ResponseWriter, r *http.Request) {
	q, ok := userQuery(w, r)
	if !ok {
		return
	}
	ctx := r.Context()
	q.Tenant = h.pathTenant(r)
	page, err := h.users.ListUsers(ctx, q)
	if errors.Is(err, store.ErrBadCursor) {
		wire.Message(w, http.StatusBadRequest, "invalid paginationToken")
		return
	} else if err != nil {
		h.k.Fail(w, r, err)
		return
	}
	users := make([]wire.User, 0, len(page.Users))
	for _, u := range page.Users {
		logins, err := h.k.Store().Logins(ctx, u.ID)
		if err != nil {
			h.k.Fail(w, r, err)
			return
		}
		if len(logins) > 0 { // none: deleted since the page was read
			users = append(users, wire.UserOf(u, logins, h.setup.AccountLinking && wire.Primary(logins)))
		}
	}
	wire.JSON(w, http.StatusOK, struct {
		Status string      `json:"status"`
		Users  []wire.User `json:"users"`
		Next   string      `json:"nextPaginationToken,omitempty"`
	}{"OK", users, page.Next})
}

func (h *api) countUsers(w http.ResponseWriter, r *http.Request) {
	n, err := h.users.CountUsers(r.Context(), store.UserQuery{Tenant: h.pathTenant(r)})
	if err != nil {
		h.k.Fail(w, r, err)
		return
	}
	wire.JSON(w, http.StatusOK, struct {
		Status string `json:"status"`
		Count  int64  `json:"count"`
	}{"OK", n})
}

func (h *api) getUser(w http.ResponseWriter, r *http.Request) {
	id, ok := param(w, r, "userId")
	if !ok {
		return
	}
	ctx := r.Context()
	u, err := h.k.Store().UserByID(ctx, id)
	if err != nil {
		h.failed(w, r, err)
		return
	}
	logins, err := h.k.Store().Logins(ctx, id)
	if err != nil {
		h.failed(w, r, err)
		return
	}
	out := wire.UserOf(u, logins, h.setup.AccountLinking && wire.Primary(logins))
	// The SDKs' name for a user's names without the user metadata
	// recipe, which this library does not keep.
	notEnabled := "FEATURE_NOT_ENABLED"
	out.FirstName, out.LastName = &notEnabled, &notEnabled
	wire.JSON(w, http.StatusOK, struct {
		Status string    `json:"status"`
		User   wire.User `json:"user"`
	}{"OK", out})
}

// deleteUser deletes the user userId, and with it every session; or,
// with removeAllLinkedAccounts false, only the login of that id when the
// user has others.
func (h *api) deleteUser(w http.ResponseWriter, r *http.Request) {
	id, ok := param(w, r, "userId")
	if !ok {
		return
	}
	ctx := r.Context()
	all := strings.ToLower(strings.TrimSpace(r.URL.Query().Get("removeAllLinkedAccounts")))
	if all != "" && all != "true" {
		if l, found := h.loginByID(ctx, id); found {
			err := h.k.RemoveLogin(ctx, r, l.UserID, l.ID)
			if !errors.Is(err, store.ErrLastLogin) {
				h.answer(w, r, err)
				return
			}
			id = l.UserID // the user's last: the user goes with it
		}
	}
	h.answer(w, r, h.op.DeleteUser(ctx, r, id))
}

// answer answers OK, or err.
func (h *api) answer(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, kit.ErrLastFactor):
		wire.Message(w, http.StatusBadRequest, "the login is the user's last required second factor")
	case err != nil:
		h.failed(w, r, err)
	default:
		wire.JSON(w, http.StatusOK, wire.OK)
	}
}

// putUser answers the app's edit of a login: the names live in user
// metadata, which this library does not keep, and an address changes
// only by its holder's link (package emailchange).
func (h *api) putUser(w http.ResponseWriter, r *http.Request) {
	b := h.body(w, r)
	if b == nil {
		return
	}
	fields := map[string]string{}
	for _, name := range []string{"recipeId", "recipeUserId", "firstName", "lastName", "email", "phone"} {
		v, ok := stringField(w, b, name)
		if !ok {
			return
		}
		fields[name] = strings.TrimSpace(v)
	}
	switch fields["recipeId"] {
	case store.MethodEmailPassword, store.MethodThirdParty, store.MethodPasswordless, store.MethodWebAuthn:
	default:
		wire.Message(w, http.StatusBadRequest, "Invalid recipe id")
		return
	}
	userID, _ := optionalString(b, "userId")
	l, ok := h.login(w, r, userID, fields["recipeUserId"])
	if !ok {
		return
	}
	switch {
	case fields["email"] != "" && !strings.EqualFold(fields["email"], l.Email):
		refuse(w, "EMAIL_CHANGE_NOT_ALLOWED_ERROR", "An email changes only by a link sent to the new address, which its user asks for")
	case fields["phone"] != "" && fields["phone"] != l.Subject:
		refuse(w, "PHONE_NUMBER_CHANGE_NOT_ALLOWED_ERROR", "A phone number cannot be changed here")
	default:
		wire.JSON(w, http.StatusOK, wire.OK)
	}
}

// refuse answers status with its reason, in "error" as the SDKs put it.
func refuse(w http.ResponseWriter, status, reason string) {
	wire.JSON(w, http.StatusOK, struct {
		Status string `json:"status"`
		Error  string `json:"error"`
	}{status, reason})
}

func (h *api) createPasswordUser(w http.ResponseWriter, r *http.Request) {
	b := h.body(w, r)
	if b == nil {
		return
	}
	f, ok := stringFields(w, b, "email", "password")
	if !ok {
		return
	}
	u, l, badEmail, badPassword, err := h.op.CreatePasswordUser(r.Context(), r, f[0], f[1])
	switch {
	case errors.Is(err, store.ErrConflict):
		wire.Status(w, statusEmailExists)
	case err != nil:
		h.k.Fail(w, r, err)
	case badEmail != "":
		message(w, "EMAIL_VALIDATION_ERROR", badEmail)
	case badPassword != "":
		message(w, "PASSWORD_VALIDATION_ERROR", badPassword)
	default:
		wire.JSON(w, http.StatusOK, struct {
			Status       string    `json:"status"`
			User         wire.User `json:"user"`
			RecipeUserID string    `json:"recipeUserId"`
		}{"OK", wire.UserOf(u, []store.Login{l}, h.setup.AccountLinking && wire.Primary([]store.Login{l})), l.ID})
	}
}

// message answers status with its message.
func message(w http.ResponseWriter, status, msg string) {
	wire.JSON(w, http.StatusOK, struct {
		Status  string `json:"status"`
		Message string `json:"message"`
	}{status, msg})
}

// createPasswordlessUser creates a user who signs in with codes sent to
// an email address or a phone number: exactly one of email and
// phoneNumber. FEATURE_NOT_ENABLED_ERROR where passwordless sign-in to
// that kind of address is off.
func (h *api) createPasswordlessUser(w http.ResponseWriter, r *http.Request) {
	b := h.body(w, r)
	if b == nil {
		return
	}
	email, hasEmail := optionalString(b, "email")
	phone, hasPhone := optionalString(b, "phoneNumber")
	if hasEmail == hasPhone {
		wire.Message(w, http.StatusBadRequest, "Please provide exactly one of email or phoneNumber")
		return
	}
	contact, factors := address.Normalise(email), []string{kit.FactorOTPEmail, kit.FactorLinkEmail}
	bad, badStatus := wire.CheckEmail(contact), "EMAIL_VALIDATION_ERROR"
	if hasPhone {
		var ok bool
		contact, ok = address.NormalisePhone(phone)
		factors, badStatus, bad = []string{kit.FactorOTPPhone, kit.FactorLinkPhone}, "PHONE_VALIDATION_ERROR", ""
		if !ok {
			bad = "Phone number is invalid"
		}
	}
	if !slices.ContainsFunc(factors, func(f string) bool { return slices.Contains(h.op.FirstFactors(), f) }) {
		wire.Status(w, statusNotEnabled)
		return
	}
	if bad != "" {
		message(w, badStatus, bad)
		return
	}
	u, l, created, err := h.op.CreatePasswordlessUser(r.Context(), r, contact)
	if errors.Is(err, store.ErrConflict) {
		message(w, badStatus, "This address belongs to another account")
		return
	} else if err != nil {
		h.k.Fail(w, r, err)
		return
	}
	wire.JSON(w, http.StatusOK, struct {
		Status       string    `json:"status"`
		CreatedNew   bool      `json:"createdNewRecipeUser"`
		User         wire.User `json:"user"`
		RecipeUserID string    `json:"recipeUserId"`
	}{"OK", created, wire.UserOf(u, []store.Login{l}, false), l.ID})
}

// unlink removes a login from its user, and the sessions it started. A
// login that is its user's only one is linked to nothing: OK, as the
// SDKs answer.
func (h *api) unlink(w http.ResponseWriter, r *http.Request) {
	l, ok := h.loginParam(w, r)
	if !ok {
		return
	}
	err := h.k.RemoveLogin(r.Context(), r, l.UserID, l.ID)
	if errors.Is(err, store.ErrLastLogin) {
		err = nil
	}
	h.answer(w, r, err)
}
