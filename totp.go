package auth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/latchkit/auth/internal/totp"
	"github.com/latchkit/auth/internal/wire"
	"github.com/latchkit/auth/store"
)

// maxTOTPDevices bounds a user's authenticator apps, set up or not, so
// that the record of their second factors stays small.
const maxTOTPDevices = 10

// The TOTP endpoints' statuses, as the SDKs name them.
const (
	statusDeviceExists  = "DEVICE_ALREADY_EXISTS_ERROR"
	statusUnknownDevice = "UNKNOWN_DEVICE_ERROR"
	statusUnknownUser   = "UNKNOWN_USER_ID_ERROR"
	statusInvalidTOTP   = "INVALID_TOTP_ERROR"
	statusLimitReached  = "LIMIT_REACHED_ERROR"
)

// handleCreateTOTPDevice is POST /totp/device: a new authenticator app,
// not yet set up until a code of it is verified. A name already set up is
// refused; one not yet set up gets a new secret.
//
// Like every endpoint here that reads a body, it reads it before the
// session, so that an oversized one is refused unread, session or not.
func (a *Auth) handleCreateTOTPDevice(w http.ResponseWriter, r *http.Request) {
	var req struct {
		DeviceName *string `json:"deviceName"`
	}
	if err := a.readOptionalJSON(w, r, &req); err != nil {
		a.fail(w, r, err)
		return
	}
	if req.DeviceName != nil && (strings.TrimSpace(*req.DeviceName) == "" || len(*req.DeviceName) > 100) {
		a.fail(w, r, wire.BadRequest("deviceName must be a non-empty string of at most 100 bytes"))
		return
	}
	vt, _, logins, sf, ok := a.sessionForFactors(w, r)
	if !ok || a.refuseImpersonation(w, vt) {
		return
	}
	if !a.mayAddFactor(vt.mfaMet(), FactorTOTP, sf, logins) {
		wire.ClaimError(w, "st-mfa", wire.MsgSetupNotAllowed)
		return
	}
	if !a.addressesVerified(w, logins) || !a.signedInRecently(w, r, vt) {
		return
	}
	secret := totp.NewSecret()
	name, status, err := a.addTOTPDevice(r.Context(), vt.session.UserID, req.DeviceName, secret)
	switch {
	case err != nil:
		a.fail(w, r, err)
	case status == "GENERAL_ERROR":
		wire.GeneralError(w, fmt.Sprintf("You have %d authenticator apps already: remove one first.", maxTOTPDevices))
	case status != "":
		wire.Status(w, status)
	default:
		wire.JSON(w, http.StatusOK, struct {
			Status       string `json:"status"`
			DeviceName   string `json:"deviceName"`
			Secret       string `json:"secret"`
			QRCodeString string `json:"qrCodeString"`
		}{"OK", name, totp.Encode(secret), totp.URI(a.cfg.MFA.Issuer, primaryEmail(logins), secret, totpPeriod, totpDigits)})

	}
}

// addTOTPDevice adds a device not yet set up with secret to the user's
// second factors, named name (or, if nil, as SuperTokens names it), or
// replaces one of that name not yet set up. It returns the name, or the
// status of a refusal: a name set up already, or too many devices.
func (a *Auth) addTOTPDevice(ctx context.Context, userID string, name *string, secret []byte) (added, status string, err error) {
	_, err = a.changeSecondFactors(ctx, userID, func(sf *secondFactors, now time.Time) error {
		added, status = defaultDeviceName(sf), ""
		if name != nil {
			added = strings.TrimSpace(*name)
		}
		d := totpDevice{Name: added, Secret: secret, Created: now.UnixMilli()}
		if a.keys.seal.On() {
			d.Secret, d.Sealed = a.keys.seal.SealValue(totpSecretName(userID, added), secret), true
		}
		switch i := sf.device(added); {
		case i >= 0 && sf.TOTP[i].Verified:
			status = statusDeviceExists
			return errUnchanged
		case i >= 0:
			sf.TOTP[i] = d
		case len(sf.TOTP) >= maxTOTPDevices:
			status = "GENERAL_ERROR"
			return errUnchanged
		default:
			sf.TOTP = append(sf.TOTP, d)
		}
		return nil
	})
	return added, status, err
}

// totpSecretName binds a sealed TOTP secret to its user and device.
func totpSecretName(userID, device string) string {
	return "TOTP secret of device " + strconv.Quote(device) + " of user " + userID
}

// defaultDeviceName names a device as SuperTokens does: "TOTP Device n",
// n the number of devices set up, bumped until free.
func defaultDeviceName(sf *secondFactors) string {
	n := 0
	for _, d := range sf.TOTP {
		if d.Verified {
			n++
		}
	}
	for {
		name := "TOTP Device " + strconv.Itoa(n)
		if sf.device(name) < 0 || !sf.TOTP[sf.device(name)].Verified {
			return name
		}
		n++
	}
}

// handleListTOTPDevices is GET /totp/device/list. A session that has not
// completed its second factor sees only the devices not yet set up, which
// it may be setting up: nothing of those that would let it in.
func (a *Auth) handleListTOTPDevices(w http.ResponseWriter, r *http.Request) {
	vt, _, _, sf, ok := a.sessionForFactors(w, r)
	if !ok {
		return
	}
	type device struct {
		Name     string `json:"name"`
		Period   int    `json:"period"`
		Skew     int    `json:"skew"`
		Verified bool   `json:"verified"`
	}
	devices := []device{}
	for _, d := range sf.TOTP {
		if d.Verified && !vt.mfaMet() {
			continue
		}
		devices = append(devices, device{d.Name, int(totpPeriod / time.Second), totpSkew, d.Verified})
	}
	wire.JSON(w, http.StatusOK, struct {
		Status  string   `json:"status"`
		Devices []device `json:"devices"`
	}{"OK", devices})

}

// handleRemoveTOTPDevice is POST /totp/device/remove. A device set up
// can be removed only by a session that has met its requirement, and not
// if it is the last second factor of a user who must have one.
func (a *Auth) handleRemoveTOTPDevice(w http.ResponseWriter, r *http.Request) {
	var req struct {
		DeviceName *string `json:"deviceName"`
	}
	if err := a.readJSON(w, r, &req); err != nil {
		a.fail(w, r, err)
		return
	}
	if req.DeviceName == nil || *req.DeviceName == "" {
		a.fail(w, r, wire.BadRequest("Please provide the deviceName"))
		return
	}
	vt, _, logins, _, ok := a.sessionForFactors(w, r)
	if !ok || a.refuseImpersonation(w, vt) {
		return
	}
	existed, wasVerified, err := a.removeTOTPDevice(r.Context(), vt, logins, *req.DeviceName)
	var refused *ClaimError
	switch {
	case errors.Is(err, ErrLastFactor):
		wire.GeneralError(w, wire.MsgLastFactor)
		return
	case errors.As(err, &refused):
		a.failSession(w, r, err)
		return
	case err != nil:
		a.fail(w, r, err)
		return
	}
	if wasVerified {
		a.emit(r.Context(), r, Event{Kind: EventFactorRemoved, UserID: vt.session.UserID, SessionHandle: vt.handle, Method: FactorTOTP})
	}
	wire.JSON(w, http.StatusOK, struct {
		Status         string `json:"status"`
		DidDeviceExist bool   `json:"didDeviceExist"`
	}{"OK", existed})

}

// removeTOTPDevice removes the device name of the user of vt, whose
// logins are logins. A device set up is refused (a *ClaimError) to a
// session that has not met its requirement or has not signed in
// recently: removing one is a sensitive action, where a half-made one is
// the set-up's own to undo.
func (a *Auth) removeTOTPDevice(ctx context.Context, vt *verifiedToken, logins []store.Login, name string) (existed, wasVerified bool, err error) {
	stale := a.checkFresh(ctx, vt, a.cfg.FreshSignIn)
	_, err = a.changeSecondFactors(ctx, vt.session.UserID, func(sf *secondFactors, _ time.Time) error {
		existed, wasVerified = false, false
		i := sf.device(name)
		if i < 0 {
			return errUnchanged
		}
		existed, wasVerified = true, sf.TOTP[i].Verified
		switch {
		case !wasVerified:
			sf.TOTP = slices.Delete(sf.TOTP, i, i+1)
			return nil
		case !vt.mfaMet():
			return errMFAPending
		case stale != nil:
			return stale
		}
		sf.TOTP = slices.Delete(sf.TOTP, i, i+1)
		return a.keepsRequiredFactor(sf, logins)
	})
	return existed, wasVerified, err
}

// keepsRequiredFactor returns ErrLastFactor unless a user with second
// factors sf and logins (as they would be after a removal) can still
// complete one of the factors the application requires of them
// (Config.MFA.Required, RequireFactors), if it requires any. A factor the
// user set up of their own accord they may remove, as they added it: the
// requirement it made goes with it. Every path that removes a factor asks
// this one check.
func (a *Auth) keepsRequiredFactor(sf *secondFactors, logins []store.Login) error {
	req := slices.Clone(a.cfg.MFA.Required)
	req = append(req, sf.Required...)
	if len(req) == 0 {
		return nil
	}
	setUp := factorsSetUp(sf, logins)
	for _, f := range req {
		if slices.Contains(setUp, f) {
			return nil
		}
	}
	return ErrLastFactor
}

// totpCheck is the outcome of a TOTP code checked against a user's
// devices.
type totpCheck struct {
	status      string        // "" for OK, else the SDK's error status
	failures    int           // the run of wrong codes, with this one
	retryAfter  time.Duration // for statusLimitReached
	newlyProven bool          // the device was set up by this code
	notify      bool          // tell the user of the wrong code (see fail)
	counted     bool          // a wrong code, counted: the record changed
}

// checkTOTP checks code against the user's device named device (or, if
// device is empty, every device set up) and records the outcome in one
// compare-and-swap: the step accepted, so that no code of it or before
// works again, or a wrong code counted. A locked user's code is not
// checked, and nothing is recorded.
func (a *Auth) checkTOTP(ctx context.Context, vt *verifiedToken, device, code string) (totpCheck, *secondFactors, error) {
	userID := vt.session.UserID
	var res totpCheck
	sf, err := a.changeSecondFactors(ctx, userID, func(sf *secondFactors, now time.Time) error {
		res = totpCheck{}
		if wait := sf.locked(now); wait > 0 {
			res = totpCheck{status: statusLimitReached, retryAfter: wait, failures: sf.Failures}
			return errUnchanged
		}
		candidates := []int{}
		for i, d := range sf.TOTP {
			if device == "" && d.Verified || device != "" && d.Name == device {
				candidates = append(candidates, i)
			}
		}
		if len(candidates) == 0 {
			res.status = statusUnknownDevice
			if device == "" {
				res.status = statusUnknownUser
			}
			return errUnchanged
		}
		replay := false
		for _, i := range candidates {
			d := &sf.TOTP[i]
			secret, err := a.openTOTPSecret(userID, *d)
			if err != nil {
				return err
			}
			step, ok := totp.Match(secret, code, now, totpPeriod, totpSkew, totpDigits)
			if !ok {
				continue
			}
			if step <= sf.Step {
				replay = true
				continue
			}
			sf.Step, sf.Failures, sf.FailedAt = step, 0, 0
			res.newlyProven = !d.Verified
			d.Verified = true
			return nil
		}
		if replay {
			// A code already accepted, presented again: refused, and not
			// counted, since it guesses nothing and the user who just
			// used it must not be locked out by a double submit.
			res = totpCheck{status: statusInvalidTOTP, failures: sf.Failures}
			return errUnchanged
		}
		notify := sf.fail(now, !vt.mfaMet())
		res = totpCheck{status: statusInvalidTOTP, failures: sf.Failures, notify: notify}
		return nil
	})
	return res, sf, err
}

// openTOTPSecret returns a device's secret in the clear.
func (a *Auth) openTOTPSecret(userID string, d totpDevice) ([]byte, error) {
	if !d.Sealed {
		return d.Secret, nil
	}
	return a.keys.seal.OpenValue(totpSecretName(userID, d.Name), d.Secret)
}

// codeChecked completes factor in the session of vt if its code was
// accepted (res, sf and err are the check's), or answers the request
// itself and reports false.
func (a *Auth) codeChecked(w http.ResponseWriter, r *http.Request, vt *verifiedToken, m mode, factor string, res totpCheck, sf *secondFactors, logins []store.Login, err error) bool {
	if err == nil && res.status != "" {
		a.answerTOTP(w, r, vt, res)
		return false
	}
	if err == nil {
		err = a.completeFactor(r.Context(), w, r, vt, m, factor, a.requiredFactors(sf, logins))
	}
	if err != nil {
		a.fail(w, r, err)
		return false
	}
	return true
}

// answerTOTP answers a code that was not accepted, reports lockouts, and
// tells the user of a wrong code that followed a sign-in.
func (a *Auth) answerTOTP(w http.ResponseWriter, r *http.Request, vt *verifiedToken, res totpCheck) {
	userID := vt.session.UserID
	if res.notify {
		a.sendWrongCodeNotice(r.Context(), vt.session)
	}
	switch res.status {
	case statusLimitReached:
		wire.JSON(w, http.StatusOK, struct {
			Status     string `json:"status"`
			RetryAfter int64  `json:"retryAfterMs"`
			Current    int    `json:"currentNumberOfFailedAttempts"`
			Max        int    `json:"maxNumberOfFailedAttempts"`
		}{statusLimitReached, res.retryAfter.Milliseconds(), res.failures, mfaMaxFailures})

	case statusInvalidTOTP, statusInvalidRecoveryCode:
		a.emit(r.Context(), r, Event{Kind: EventFactorFailed, UserID: userID, Method: factorOfStatus(res.status)})
		if res.failures == mfaMaxFailures {
			a.cfg.Logger.LogAttrs(r.Context(), slog.LevelWarn, "auth: TOTP locked after wrong codes", slog.String("user_id", userID))
			a.emit(r.Context(), r, Event{Kind: EventMFALocked, UserID: userID})
		}
		wire.JSON(w, http.StatusOK, struct {
			Status  string `json:"status"`
			Current int    `json:"currentNumberOfFailedAttempts"`
			Max     int    `json:"maxNumberOfFailedAttempts"`
		}{res.status, res.failures, mfaMaxFailures})

	default:
		wire.Status(w, res.status)
	}
}

func factorOfStatus(status string) string {
	if status == statusInvalidRecoveryCode {
		return FactorRecoveryCode
	}
	return FactorTOTP
}

// readTOTPRequest reads the body of the TOTP verify endpoints.
func (a *Auth) readTOTPRequest(w http.ResponseWriter, r *http.Request, needDevice bool) (device, code string, ok bool) {
	var req struct {
		DeviceName *string `json:"deviceName"`
		TOTP       *string `json:"totp"`
	}
	err := a.readJSON(w, r, &req)
	switch {
	case err != nil:
	case needDevice && (req.DeviceName == nil || *req.DeviceName == ""):
		err = wire.BadRequest("Please provide the deviceName")
	case req.TOTP == nil:
		err = wire.BadRequest("Please provide the totp")
	}
	if err != nil {
		a.fail(w, r, err)
		return "", "", false
	}
	if needDevice {
		device = *req.DeviceName
	}
	return device, strings.TrimSpace(*req.TOTP), true
}

// handleVerifyTOTPDevice is POST /totp/device/verify: a code of a device
// sets it up, and completes TOTP in the session. The code is checked even
// for a device set up already, which then only completes the factor:
// SuperTokens answers that case without looking at the code, which lets
// a stolen session claim a fresh TOTP with any digits.
func (a *Auth) handleVerifyTOTPDevice(w http.ResponseWriter, r *http.Request) {
	device, code, ok := a.readTOTPRequest(w, r, true)
	if !ok {
		return
	}
	vt, m, logins, sf, ok := a.sessionForFactors(w, r)
	if !ok || a.refuseImpersonation(w, vt) {
		return
	}
	if i := sf.device(device); (i < 0 || !sf.TOTP[i].Verified) && !a.mayAddFactor(vt.mfaMet(), FactorTOTP, sf, logins) {
		wire.ClaimError(w, "st-mfa", wire.MsgSetupNotAllowed)
		return
	}
	userID := vt.session.UserID
	res, sf, err := a.checkTOTP(r.Context(), vt, device, code)
	if !a.codeChecked(w, r, vt, m, FactorTOTP, res, sf, logins, err) {
		return
	}
	if res.newlyProven {
		a.emit(r.Context(), r, Event{Kind: EventFactorAdded, UserID: userID, SessionHandle: vt.handle, Method: FactorTOTP})
		// The user must now complete TOTP: their other sessions too.
		if err := a.reassessSessions(r.Context(), userID, vt.handle, a.requiredFactors(sf, logins)); err != nil {
			a.cfg.Logger.LogAttrs(r.Context(), slog.LevelWarn, "auth: could not hold the user's other sessions to their new TOTP device",
				slog.String("user_id", userID), slog.String("error", err.Error()))
		}
	}
	wire.JSON(w, http.StatusOK, struct {
		Status             string `json:"status"`
		WasAlreadyVerified bool   `json:"wasAlreadyVerified"`
	}{"OK", !res.newlyProven})

}

// handleVerifyTOTP is POST /totp/verify: a code of any device the user
// has set up completes TOTP in the session.
func (a *Auth) handleVerifyTOTP(w http.ResponseWriter, r *http.Request) {
	_, code, ok := a.readTOTPRequest(w, r, false)
	if !ok {
		return
	}
	vt, m, logins, _, ok := a.sessionForFactors(w, r)
	if !ok {
		return
	}
	res, sf, err := a.checkTOTP(r.Context(), vt, "", code)
	if !a.codeChecked(w, r, vt, m, FactorTOTP, res, sf, logins, err) {
		return
	}
	wire.Status(w, "OK")
}
