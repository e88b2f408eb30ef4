package dashboard

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/latchkit/auth/internal/wire"
	"github.com/latchkit/auth/store"
)

// getVerified answers whether a login's email is verified.
func (h *api) getVerified(w http.ResponseWriter, r *http.Request) {
	if !h.op.Verification() {
		wire.Status(w, statusNotEnabled)
		return
	}
	l, ok := h.loginParam(w, r)
	if !ok {
		return
	}
	if l.Email == "" {
		wire.Message(w, http.StatusBadRequest, "the login has no email")
		return
	}
	wire.JSON(w, http.StatusOK, struct {
		Status     string `json:"status"`
		IsVerified bool   `json:"isVerified"`
	}{"OK", l.EmailVerified})
}

// putVerified marks a login's email verified, or takes that back.
func (h *api) putVerified(w http.ResponseWriter, r *http.Request) {
	b := h.body(w, r)
	if b == nil {
		return
	}
	loginID, ok := stringField(w, b, "recipeUserId")
	if !ok {
		return
	}
	var verified bool
	if raw, ok := b["verified"]; !ok || json.Unmarshal(raw, &verified) != nil || string(raw) == "null" {
		wire.Message(w, http.StatusBadRequest, "Required parameter 'verified' is missing or has an invalid type")
		return
	}
	if !h.op.Verification() {
		wire.Status(w, statusNotEnabled)
		return
	}
	if loginID == "" {
		wire.Status(w, statusNoUser)
		return
	}
	h.answer(w, r, h.op.SetEmailVerified(r.Context(), r, loginID, verified))
}

// sendVerification mails the verification link of a login's email.
func (h *api) sendVerification(w http.ResponseWriter, r *http.Request) {
	b := h.body(w, r)
	if b == nil {
		return
	}
	loginID, ok := stringField(w, b, "recipeUserId")
	if !ok {
		return
	}
	if !h.op.Verification() {
		wire.Status(w, statusNotEnabled)
		return
	}
	userID, _ := optionalString(b, "userId")
	l, ok := h.login(w, r, userID, loginID)
	switch {
	case !ok:
	case l.Email == "":
		wire.Message(w, http.StatusBadRequest, "the login has no email")
	case l.EmailVerified:
		wire.Status(w, statusVerifiedAlready)
	default:
		if wait := h.op.SendVerification(r.Context(), l); wait > 0 {
			wire.TooMany(w, wait)
			return
		}
		wire.JSON(w, http.StatusOK, wire.OK)
	}
}

// metadata answers as the SDKs do without the user metadata recipe:
// this library keeps no metadata of users.
func (h *api) metadata(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPut && h.body(w, r) == nil {
		return // read within the kernel's bound, as every body is
	}
	wire.Status(w, statusNotEnabled)
}

// setPassword sets a login's password, as a reset does: the policy
// first, then every session of the user ends.
func (h *api) setPassword(w http.ResponseWriter, r *http.Request) {
	b := h.body(w, r)
	if b == nil {
		return
	}
	f, ok := stringFields(w, b, "recipeUserId", "newPassword")
	if !ok {
		return
	}
	loginID, pw := f[0], f[1]
	l, ok := h.login(w, r, r.URL.Query().Get("userId"), loginID)
	if !ok {
		return
	}
	if l.Method != store.MethodEmailPassword {
		wire.Message(w, http.StatusBadRequest, "only an email and password login has a password")
		return
	}
	refused, err := h.op.SetPassword(r.Context(), r, l.UserID, pw)
	switch {
	case err != nil:
		h.failed(w, r, err)
	case refused != "":
		refuse(w, "INVALID_PASSWORD_ERROR", refused)
	default:
		wire.JSON(w, http.StatusOK, wire.OK)
	}
}

// session is a session as the app lists it: the SDKs'
// getSessionInformation, whose recipeUserId is an object.
type session struct {
	Handle       string         `json:"sessionHandle"`
	TimeCreated  int64          `json:"timeCreated"`
	Expiry       int64          `json:"expiry"`
	UserID       string         `json:"userId"`
	RecipeUserID recipeUserID   `json:"recipeUserId"`
	Data         map[string]any `json:"sessionDataInDatabase"`
	TenantID     string         `json:"tenantId"`
	Payload      map[string]any `json:"accessTokenPayload"`
}

type recipeUserID struct {
	ID string `json:"recipeUserId"`
}

// sessions lists the live sessions of a user.
func (h *api) sessions(w http.ResponseWriter, r *http.Request) {
	userID, ok := param(w, r, "userId")
	if !ok {
		return
	}
	ss, err := h.k.Store().UserSessions(r.Context(), userID, h.k.Now())
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		h.k.Fail(w, r, err)
		return
	}
	out := make([]session, len(ss))
	for i, s := range ss {
		login := s.LoginID
		if login == "" {
			login = s.UserID // a session from before users had several logins
		}
		out[i] = session{Handle: s.Handle, TimeCreated: ms(s.CreatedAt), Expiry: ms(s.ExpiresAt), UserID: s.UserID,
			RecipeUserID: recipeUserID{login}, Data: map[string]any{}, TenantID: store.PublicTenant, Payload: map[string]any{}}
	}
	wire.JSON(w, http.StatusOK, struct {
		Status   string    `json:"status"`
		Sessions []session `json:"sessions"`
	}{"OK", out})
}

func ms(t time.Time) int64 { return t.UnixMilli() }

// revokeSessions ends the sessions named; one that has ended already is
// no error.
func (h *api) revokeSessions(w http.ResponseWriter, r *http.Request) {
	b := h.body(w, r)
	if b == nil {
		return
	}
	handles, ok := stringsField(w, b, "sessionHandles", false)
	if !ok {
		return
	}
	for _, handle := range handles {
		if err := h.op.RevokeSession(r.Context(), r, handle); err != nil && !errors.Is(err, store.ErrNotFound) {
			h.k.Fail(w, r, err)
			return
		}
	}
	wire.JSON(w, http.StatusOK, wire.OK)
}
