package auth

import (
	"context"
	"errors"
	"net/http"

	"github.com/latchkit/auth/internal/wire"
	"github.com/latchkit/auth/store"
)

// The protocol's answers that need the Auth; the others are in
// internal/wire.

// errMFAPending is the refusal of a session that has not met its MFA
// requirement.
var errMFAPending = newClaimError("st-mfa", wire.MFAPendingReason)

// answerExists answers an exists endpoint with what found reports, or
// false without asking for an address that is not well-formed.
func (a *Auth) answerExists(w http.ResponseWriter, r *http.Request, valid bool, found func(context.Context) (bool, error)) {
	exists := false
	if valid {
		var err error
		if exists, err = found(r.Context()); err != nil {
			a.fail(w, r, err)
			return
		}
	}
	wire.JSON(w, http.StatusOK, struct {
		Status string `json:"status"`
		Exists bool   `json:"exists"`
	}{"OK", exists})

}

// writeExists answers an exists endpoint: whether the login with key
// exists, which for an address that is not well-formed (valid false) it
// does not.
func (a *Auth) writeExists(w http.ResponseWriter, r *http.Request, key store.LoginKey, valid bool) {
	a.answerExists(w, r, valid, func(ctx context.Context) (bool, error) {
		_, err := a.store.Login(ctx, key)
		if errors.Is(err, store.ErrNotFound) {
			return false, nil
		}
		return err == nil, err
	})
}
