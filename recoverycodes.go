package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/latchkit/auth/internal/wire"
)

// Recovery codes stand in for a second factor once each, for a user who
// has lost theirs. They are the library's own: the SuperTokens frontends
// have none (PROTOCOL.md, Recovery codes).
const (
	recoveryCodeCount = 10
	// A code is 16 characters of base32, 80 bits, shown in groups of
	// four: too many to guess online, and too many to find from a hash
	// that leaked (the store keeps SHA-256 only).
	recoveryCodeChars = 16
	recoveryAlphabet  = "abcdefghijklmnopqrstuvwxyz234567"

	statusInvalidRecoveryCode = "INVALID_RECOVERY_CODE_ERROR"
)

// newRecoveryCode returns a random code, as shown: xxxx-xxxx-xxxx-xxxx.
func newRecoveryCode() string {
	b := make([]byte, recoveryCodeChars)
	rand.Read(b)
	var sb strings.Builder
	for i, c := range b {
		if i > 0 && i%4 == 0 {
			sb.WriteByte('-')
		}
		sb.WriteByte(recoveryAlphabet[c&31])
	}
	return sb.String()
}

// newRecoveryCodes returns a new set of codes, and their hashes.
func newRecoveryCodes() (codes, hashes []string) {
	codes = make([]string, recoveryCodeCount)
	hashes = make([]string, recoveryCodeCount)
	for i := range codes {
		codes[i] = newRecoveryCode()
		hashes[i] = recoveryCodeHash(codes[i])
	}
	return codes, hashes
}

// recoveryCodeHash is the hash a recovery code is kept as: of the code
// without its dashes and spaces, lower-cased, as a person may type it.
func recoveryCodeHash(code string) string {
	code = strings.Map(func(r rune) rune {
		if r == '-' || r == ' ' {
			return -1
		}
		return r
	}, strings.ToLower(code))
	sum := sha256.Sum256([]byte(code))
	return hex.EncodeToString(sum[:])
}

// handleNewRecoveryCodes is POST /mfa/recovery-codes: a new set of
// recovery codes, shown this once, which voids the old set. Only a
// session that has met its MFA requirement may ask.
func (a *Auth) handleNewRecoveryCodes(w http.ResponseWriter, r *http.Request) {
	vt, _, _, _, ok := a.sessionForFactors(w, r)
	if !ok || a.refuseImpersonation(w, vt) {
		return
	}
	if !vt.mfaMet() {
		wire.MFAPending(w)
		return
	}
	if !a.signedInRecently(w, r, vt) {
		return
	}
	codes, hashes := newRecoveryCodes()
	if _, err := a.changeSecondFactors(r.Context(), vt.session.UserID, func(sf *secondFactors, _ time.Time) error {
		sf.RecoveryCodes, sf.UsedRecoveryCodes = hashes, nil
		return nil
	}); err != nil {
		a.fail(w, r, err)
		return
	}
	a.emit(r.Context(), r, Event{Kind: EventRecoveryCodesCreated, UserID: vt.session.UserID, SessionHandle: vt.handle})
	wire.JSON(w, http.StatusOK, struct {
		Status string   `json:"status"`
		Codes  []string `json:"codes"`
	}{"OK", codes})

}

// handleCountRecoveryCodes is GET /mfa/recovery-codes: how many unused
// recovery codes the user has. The codes themselves are never shown
// again: the store has only their hashes. Only a session that has met
// its requirement may ask: the count is none of a first factor's business.
func (a *Auth) handleCountRecoveryCodes(w http.ResponseWriter, r *http.Request) {
	vt, _, _, sf, ok := a.sessionForFactors(w, r)
	if !ok {
		return
	}
	if !vt.mfaMet() {
		wire.MFAPending(w)
		return
	}
	wire.JSON(w, http.StatusOK, struct {
		Status    string `json:"status"`
		Remaining int    `json:"remaining"`
	}{"OK", len(sf.RecoveryCodes)})

}

// handleVerifyRecoveryCode is POST /mfa/recovery-code/verify: an unused
// recovery code completes the session's second factor, once. Wrong codes
// count in the same run as wrong TOTP codes. A lockout does not stop a
// right code, which ends it: whoever holds only the first factor cannot
// keep out an owner who has their codes (SECURITY.md, Second factors).
func (a *Auth) handleVerifyRecoveryCode(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Code *string `json:"code"`
	}
	if err := a.readJSON(w, r, &req); err != nil {
		a.fail(w, r, err)
		return
	}
	if req.Code == nil || len(*req.Code) > 64 {
		a.fail(w, r, wire.BadRequest("Please provide the code, a recovery code"))
		return
	}
	vt, m, logins, _, ok := a.sessionForFactors(w, r)
	if !ok {
		return
	}
	userID := vt.session.UserID
	hash := []byte(recoveryCodeHash(*req.Code))
	var res totpCheck
	sf, err := a.changeSecondFactors(r.Context(), userID, func(sf *secondFactors, now time.Time) error {
		res = sf.spendRecoveryCode(hash, now, !vt.mfaMet())
		if res.status != "" && !res.counted {
			return errUnchanged
		}
		return nil
	})
	if !a.codeChecked(w, r, vt, m, FactorRecoveryCode, res, sf, logins, err) {
		return
	}
	a.emit(r.Context(), r, Event{Kind: EventRecoveryCodeUsed, UserID: userID, SessionHandle: vt.handle})
	wire.JSON(w, http.StatusOK, struct {
		Status    string `json:"status"`
		Remaining int    `json:"remaining"`
	}{"OK", len(sf.RecoveryCodes)})

}

// spendRecoveryCode uses up the recovery code of hash, or counts it wrong
// (see fail; pending as there). A right code is taken while the user is
// locked, and lifts the lock: at 80 bits a code is not guessed online, so
// the lockout guards the TOTP codes alone. A wrong one is then refused
// uncounted, and so is one used already (a double submit).
func (sf *secondFactors) spendRecoveryCode(hash []byte, now time.Time, pending bool) totpCheck {
	found := -1
	for i, h := range sf.RecoveryCodes {
		if subtle.ConstantTimeCompare([]byte(h), hash) == 1 {
			found = i
		}
	}
	used := false
	for _, h := range sf.UsedRecoveryCodes {
		used = used || subtle.ConstantTimeCompare([]byte(h), hash) == 1
	}
	wait := sf.locked(now)
	switch {
	case found >= 0:
		sf.UsedRecoveryCodes = append(sf.UsedRecoveryCodes, sf.RecoveryCodes[found])
		sf.RecoveryCodes = slices.Delete(sf.RecoveryCodes, found, found+1)
		sf.Failures, sf.FailedAt = 0, 0
		return totpCheck{}
	case wait > 0:
		return totpCheck{status: statusLimitReached, retryAfter: wait, failures: sf.Failures}
	case used:
		return totpCheck{status: statusInvalidRecoveryCode, failures: sf.Failures}
	}
	notify := sf.fail(now, pending)
	return totpCheck{status: statusInvalidRecoveryCode, failures: sf.Failures, notify: notify, counted: true}
}
