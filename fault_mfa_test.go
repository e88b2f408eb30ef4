package auth_test

// The fault sweep (fault_test.go) over multi-factor auth: a TOTP device
// made and set up (with the second factor required of every user, and
// chosen by the user, whose other session must then complete it too), a
// code and a wrong code, recovery codes made and used, /mfa/info
// bringing a session's token up to date, and the sign-in and refresh of
// sessions whose user must complete TOTP. Besides the sweep's
// invariants, each flow checks that a fault never lets a session through
// a protected route (RequireSession) without a second factor its store
// record shows completed; never lets a TOTP step be accepted twice for a
// user, nor a recovery code be used twice; never loses a wrong code from
// the run that locks the user out (the next wrong code reports the run
// exactly, and the fifth locks); and that whoever holds the device or
// the codes still gets through: by posting again, by asking /mfa/info
// (as the SDKs do on a 403), or with the next code. Recovery codes are
// among the sweep's secrets: they reach neither the store nor the log.

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/store"
)

// faultMFA is what an MFA flow holds.
type faultMFA struct {
	secret string           // the user's TOTP device's
	code   string           // the code the faulted request sends
	codes  []string         // the user's recovery codes, as shown
	other  *authtest.Client // another session of the user
	fails  int              // the run of wrong codes before the faulted request
}

// mfaRID is the rid the SDKs send to an MFA endpoint.
func mfaRID(path string) string {
	if strings.HasPrefix(path, "/mfa/") {
		return "multifactorauth"
	}
	return "totp"
}

// mfaSend sends body (as JSON, none if nil) to an MFA endpoint with c and
// its session.
func (e *faultEnv) mfaSend(c *authtest.Client, method, path string, body any) faultAnswer {
	e.t.Helper()
	var b []byte
	if body != nil {
		var err error
		if b, err = json.Marshal(body); err != nil {
			e.t.Fatal(err)
		}
	}
	access, _ := c.Tokens()
	return e.send(c, method, "/auth"+path, b, mfaRID(path), access)
}

// mfaPasses reports whether c's session passes a protected route. Any
// answer but 200 and the st-mfa 403 is a violation.
func (e *faultEnv) mfaPasses(what string, c *authtest.Client) bool {
	e.t.Helper()
	access, _ := c.Tokens()
	a := e.send(c, http.MethodGet, "/api/session", nil, "anti-csrf", access)
	switch {
	case a.err == nil && a.res.StatusCode == http.StatusOK:
		return true
	case a.err == nil && a.res.StatusCode == http.StatusForbidden && bytes.Contains(a.res.Body, []byte(`"id":"st-mfa"`)):
		return false
	}
	e.violation("%s: the protected route answered %v, want 200 or the st-mfa 403", what, a)
	return false
}

// mfaHonest checks that c's session passes a protected route only if its
// record in the store shows a second factor completed (TOTP or a
// recovery code), and reports whether it passes.
func (e *faultEnv) mfaHonest(what string, c *authtest.Client) bool {
	e.t.Helper()
	if !e.mfaPasses(what, c) {
		return false
	}
	handle := faultFrontHandle(c.FrontToken)
	s, err := e.mem.Session(e.t.Context(), handle, e.srv.Clock.Now())
	var claim struct {
		C map[string]int64 `json:"c"`
	}
	if err != nil || json.Unmarshal(s.Factors, &claim) != nil {
		e.violation("%s: the session %s passes, and its record is %v: %s", what, handle, err, s.Factors)
		return true
	}
	_, totp := claim.C[auth.FactorTOTP]
	_, recovery := claim.C[auth.FactorRecoveryCode]
	if !totp && !recovery {
		e.violation("%s: the session passes a protected route without its second factor: its record says %s", what, s.Factors)
	}
	return true
}

// mfaSignIn signs a new session of the flow's user in with c, outside
// any fault.
func (e *faultEnv) mfaSignIn(c *authtest.Client) {
	e.t.Helper()
	if a := e.signIn(c, e.email, authtest.Password); !a.ok() {
		e.t.Fatalf("setup: sign-in: %v", a)
	}
}

// mfaNextCode moves the clock to the next TOTP step and returns the
// device's code of it, which no request has used.
func (e *faultEnv) mfaNextCode() string {
	e.srv.Clock.Advance(30 * time.Second)
	return authtest.TOTPCode(e.mfa.secret, e.srv.Clock.Now())
}

// mfaWrongCode is a code no step near now has.
func (e *faultEnv) mfaWrongCode() string {
	now := e.srv.Clock.Now()
	for _, w := range []string{"000000", "111111", "222222", "333333"} {
		if w != authtest.TOTPCode(e.mfa.secret, now) && w != authtest.TOTPCode(e.mfa.secret, now.Add(-30*time.Second)) &&
			w != authtest.TOTPCode(e.mfa.secret, now.Add(30*time.Second)) {
			return w
		}
	}
	panic("unreachable")
}

// mfaMustSetUp makes and sets up a TOTP device for c's user, outside any
// fault, and keeps its secret.
func (e *faultEnv) mfaMustSetUp(c *authtest.Client) {
	e.t.Helper()
	a := e.mfaSend(c, http.MethodPost, "/totp/device", map[string]string{"deviceName": "phone"})
	e.mfa.secret, _ = a.res.JSON["secret"].(string)
	if !a.ok() || e.mfa.secret == "" {
		e.t.Fatalf("setup: TOTP device: %v", a)
	}
	if a := e.mfaSend(c, http.MethodPost, "/totp/device/verify", map[string]string{"deviceName": "phone", "totp": e.mfaNextCode()}); !a.ok() {
		e.t.Fatalf("setup: TOTP device verify: %v", a)
	}
}

// mfaMustCodes makes a new set of recovery codes with c, outside any
// fault, and keeps them, as secrets.
func (e *faultEnv) mfaMustCodes(c *authtest.Client) {
	e.t.Helper()
	a := e.mfaSend(c, http.MethodPost, "/mfa/recovery-codes", struct{}{})
	if !a.ok() || !e.mfaKeepCodes(a) {
		e.t.Fatalf("setup: recovery codes: %v", a)
	}
}

// mfaKeepCodes keeps the codes of an OK answer of POST
// /mfa/recovery-codes, as secrets, and reports whether there were ten.
func (e *faultEnv) mfaKeepCodes(a faultAnswer) bool {
	list, _ := a.res.JSON["codes"].([]any)
	e.mfa.codes = nil
	for _, v := range list {
		code, _ := v.(string)
		e.mfa.codes = append(e.mfa.codes, code)
		e.secrets[code] = true
		e.secrets[strings.ReplaceAll(code, "-", "")] = true
	}
	return len(e.mfa.codes) == 10
}

// mfaThrough gets c's session through the protected route, as the SDKs
// and a person would after an answer that was not OK: PUT /mfa/info,
// which brings the token up to the session's record, and then, if that
// is not enough, the device's next code.
func (e *faultEnv) mfaThrough(what string, c *authtest.Client) {
	e.t.Helper()
	if e.mfaHonest(what, c) {
		return
	}
	if a := e.mfaSend(c, http.MethodPut, "/mfa/info", nil); !a.ok() {
		e.violation("%s: /mfa/info: %v", what, a)
	}
	if e.mfaHonest(what+", after /mfa/info", c) {
		e.finding("MFA: a failed answer, and /mfa/info let the session through: the factor had been recorded")
		return
	}
	if a := e.mfaSend(c, http.MethodPost, "/totp/verify", map[string]string{"totp": e.mfaNextCode()}); !a.ok() {
		e.violation("%s: the next code: %v, want OK", what, a)
	}
	if !e.mfaHonest(what+", after the next code", c) {
		e.violation("%s: the session does not pass after the next code", what)
	}
}

// mfaStepOnce checks that the code the faulted request sent is refused
// to any session of the user now: its step was accepted once, by that
// request or by the client's retry.
func (e *faultEnv) mfaStepOnce(what string) {
	e.t.Helper()
	c := e.srv.NewClient(authtest.Header)
	e.mfaSignIn(c)
	if a := e.mfaSend(c, http.MethodPost, "/totp/verify", map[string]string{"totp": e.mfa.code}); a.ok() || !a.is(http.StatusOK, "INVALID_TOTP_ERROR") {
		e.violation("%s: the code again, in another session: %v, want INVALID_TOTP_ERROR", what, a)
	}
	if e.mfaHonest(what+": a session whose code was refused", c) {
		e.violation("%s: a session passes after its code was refused", what)
	}
}

// mfaFailures is the run of wrong codes an INVALID_*_ERROR reports.
func mfaFailures(a faultAnswer) int {
	if a.err != nil || a.api {
		return -1
	}
	n, _ := a.res.JSON["currentNumberOfFailedAttempts"].(float64)
	return int(n)
}

// mfaRemaining is the user's count of unused recovery codes.
func (e *faultEnv) mfaRemaining(c *authtest.Client) int {
	e.t.Helper()
	a := e.mfaSend(c, http.MethodGet, "/mfa/recovery-codes", nil)
	n, ok := a.res.JSON["remaining"].(float64)
	if !a.ok() || !ok {
		e.violation("recovery-code count: %v", a)
	}
	return int(n)
}

// faultMFAFlows are the flows of multi-factor auth.
func faultMFAFlows() []faultFlow {
	required := func(cfg *auth.Config) { cfg.MFA.Required = []string{auth.FactorTOTP} }
	header := []authtest.Mode{authtest.Header}
	// The TOTP steps move the clock: a request may reload the signing
	// keys, and a reload that fails keeps the keys it had.
	keys := map[string]bool{"SigningKeys": true}

	// device makes a TOTP device, for a user who must complete TOTP and
	// has none yet.
	device := faultFlow{
		name:      "mfa-totp-device",
		modes:     header,
		configure: required,
		tolerated: keys,
		setup:     func(e *faultEnv, c *authtest.Client) { e.mustSignUp(c) },
		run: func(e *faultEnv, c *authtest.Client) faultAnswer {
			return e.mfaSend(c, http.MethodPost, "/totp/device", map[string]string{"deviceName": "phone"})
		},
		after: func(e *faultEnv, c *authtest.Client, a faultAnswer) {
			made := e.committed("LinkLogin")
			if a.ok() && !made {
				e.violation("a TOTP device answered OK, but its record was not committed")
			}
			if e.mfaHonest("after a new device", c) {
				e.violation("a session passes with a device made and not set up")
			}
			if !a.ok() {
				// The person asks again: a new secret for the device.
				if a = e.mfaSend(c, http.MethodPost, "/totp/device", map[string]string{"deviceName": "phone"}); !a.ok() {
					e.violation("a TOTP device again, after a failure: %v, want OK", a)
					return
				}
			}
			e.mfa.secret, _ = a.res.JSON["secret"].(string)
			if a := e.mfaSend(c, http.MethodPost, "/totp/device/verify", map[string]string{"deviceName": "phone", "totp": e.mfaNextCode()}); !a.ok() {
				e.violation("the device's code, by the secret last shown: %v, want OK", a)
			}
			if !e.mfaHonest("after the device was set up", c) {
				e.violation("a session does not pass after setting its device up")
			}
			list := e.mfaSend(c, http.MethodGet, "/totp/device/list", nil)
			if !list.ok() || !bytes.Contains(list.res.Body, []byte(`"devices":[{"name":"phone","period":30,"skew":1,"verified":true}]`)) {
				e.violation("the devices after the set-up: %v, want the one, set up", list)
			}
		},
	}

	// verify sets a device up with its code: the first factor set up of
	// a user who must complete TOTP, with another session that has not.
	// The other sessions' reassessment is only logged when it fails.
	verify := faultFlow{
		name:          "mfa-totp-device-verify",
		modes:         faultModes,
		configure:     required,
		tolerated:     keys,
		toleratedFrom: "UserSessions",
		setup: func(e *faultEnv, c *authtest.Client) {
			e.mustSignUp(c)
			e.mfa.other = e.srv.NewClient(authtest.Header)
			e.mfaSignIn(e.mfa.other)
			a := e.mfaSend(c, http.MethodPost, "/totp/device", map[string]string{"deviceName": "phone"})
			if e.mfa.secret, _ = a.res.JSON["secret"].(string); !a.ok() {
				e.t.Fatalf("setup: TOTP device: %v", a)
			}
			e.mfa.code = e.mfaNextCode()
		},
		run: func(e *faultEnv, c *authtest.Client) faultAnswer {
			return e.mfaSend(c, http.MethodPost, "/totp/device/verify", map[string]string{"deviceName": "phone", "totp": e.mfa.code})
		},
		after: func(e *faultEnv, c *authtest.Client, a faultAnswer) {
			taken, completed := e.committed("UpdateLoginMaterial"), e.committed("UpdateSessionFactors")
			if a.ok() && (!taken || !completed || a.res.JSON["wasAlreadyVerified"] != false) {
				e.violation("a device set up answered %v, but committed the step %v, the session's factor %v", a, taken, completed)
			}
			// The client posts the code again.
			r := e.mfaSend(c, http.MethodPost, "/totp/device/verify", map[string]string{"deviceName": "phone", "totp": e.mfa.code})
			switch {
			case taken && r.ok():
				e.violation("a TOTP step accepted twice: %v", r)
			case taken && !(r.is(http.StatusOK, "INVALID_TOTP_ERROR") && mfaFailures(r) == 0):
				e.violation("the code again after its step was taken: %v, want INVALID_TOTP_ERROR, uncounted", r)
			case !taken && !r.ok():
				e.violation("the code again after a failure before its step was taken: %v, want OK", r)
			case taken && !a.ok():
				e.finding("MFA: a TOTP code failed after its step was taken: the person waits for the next code")
			}
			e.mfaThrough("after the device was set up", c)
			e.mfaStepOnce("after the device was set up")
			// The other session never passes without its own factor.
			if a := e.refresh(e.mfa.other); !a.ok() {
				e.violation("the other session's refresh: %v", a)
			}
			if e.mfaHonest("the other session", e.mfa.other) {
				e.violation("the other session passes without completing TOTP")
			}
		},
	}

	// optional sets a device up for a user to whom MFA is a choice, with
	// another session: that session passed before, and from its next
	// refresh on must complete TOTP too.
	optional := faultFlow{
		name:          "mfa-totp-device-verify-optional",
		modes:         header,
		configure:     func(cfg *auth.Config) { cfg.MFA.Factors = []string{auth.FactorTOTP} },
		tolerated:     keys,
		toleratedFrom: "UserSessions",
		setup: func(e *faultEnv, c *authtest.Client) {
			e.mustSignUp(c)
			e.mfa.other = e.srv.NewClient(authtest.Header)
			e.mfaSignIn(e.mfa.other)
			if !e.mfaPasses("setup: the other session", e.mfa.other) {
				e.t.Fatal("setup: a session of a user without MFA is refused")
			}
			a := e.mfaSend(c, http.MethodPost, "/totp/device", map[string]string{"deviceName": "phone"})
			if e.mfa.secret, _ = a.res.JSON["secret"].(string); !a.ok() {
				e.t.Fatalf("setup: TOTP device: %v", a)
			}
			e.mfa.code = e.mfaNextCode()
		},
		run: func(e *faultEnv, c *authtest.Client) faultAnswer {
			return e.mfaSend(c, http.MethodPost, "/totp/device/verify", map[string]string{"deviceName": "phone", "totp": e.mfa.code})
		},
		after: func(e *faultEnv, c *authtest.Client, a faultAnswer) {
			if !a.ok() {
				e.mfaSend(c, http.MethodPost, "/totp/device/verify", map[string]string{"deviceName": "phone", "totp": e.mfaNextCode()})
			}
			list := e.mfaSend(c, http.MethodGet, "/totp/device/list", nil)
			if !bytes.Contains(list.res.Body, []byte(`"verified":true`)) {
				e.violation("the device is not set up after the person's retry: %v", list)
				return
			}
			e.mfaStepOnce("after the device was set up")
			// The user now has TOTP: the other session, refreshed, must
			// complete it.
			if a := e.refresh(e.mfa.other); !a.ok() {
				e.violation("the other session's refresh: %v", a)
			}
			if e.mfaPasses("the user's other session, refreshed after the device was set up", e.mfa.other) {
				e.violation("the user set up TOTP (answer %v), and their other session, refreshed, still passes a protected route without it", a)
			}
		},
	}

	// code completes TOTP in a new session with the device's code.
	code := faultFlow{
		name:      "mfa-totp-verify",
		modes:     faultModes,
		configure: required,
		tolerated: keys,
		setup: func(e *faultEnv, c *authtest.Client) {
			first := e.srv.NewClient(authtest.Header)
			e.mustSignUp(first)
			e.mfaMustSetUp(first)
			e.mfaSignIn(c)
			e.mfa.code = e.mfaNextCode()
		},
		run: func(e *faultEnv, c *authtest.Client) faultAnswer {
			return e.mfaSend(c, http.MethodPost, "/totp/verify", map[string]string{"totp": e.mfa.code})
		},
		after: func(e *faultEnv, c *authtest.Client, a faultAnswer) {
			taken, completed := e.committed("UpdateLoginMaterial"), e.committed("UpdateSessionFactors")
			if a.ok() && (!taken || !completed) {
				e.violation("a TOTP code answered OK, but committed the step %v, the session's factor %v", taken, completed)
			}
			if !a.ok() && e.mfaHonest("after a failed code", c) && !completed {
				e.violation("a session passes after a failed code that completed nothing")
			}
			r := e.mfaSend(c, http.MethodPost, "/totp/verify", map[string]string{"totp": e.mfa.code})
			switch {
			case taken && r.ok():
				e.violation("a TOTP step accepted twice: %v", r)
			case taken && !(r.is(http.StatusOK, "INVALID_TOTP_ERROR") && mfaFailures(r) == 0):
				e.violation("the code again after its step was taken: %v, want INVALID_TOTP_ERROR, uncounted", r)
			case !taken && !r.ok():
				e.violation("the code again after a failure before its step was taken: %v, want OK", r)
			case taken && !a.ok():
				e.finding("MFA: a TOTP code failed after its step was taken: the person waits for the next code")
			}
			e.mfaThrough("after the code", c)
			e.mfaStepOnce("after the code")
		},
	}

	// wrong sends the third wrong code in a row: it is counted once or
	// not at all, and the run goes on from there to the lockout.
	wrong := faultFlow{
		name:      "mfa-totp-wrong",
		modes:     header,
		configure: required,
		tolerated: keys,
		status:    "INVALID_TOTP_ERROR",
		setup: func(e *faultEnv, c *authtest.Client) {
			first := e.srv.NewClient(authtest.Header)
			e.mustSignUp(first)
			e.mfaMustSetUp(first)
			e.mfaSignIn(c)
			for i := range 2 {
				if a := e.mfaSend(c, http.MethodPost, "/totp/verify", map[string]string{"totp": e.mfaWrongCode()}); mfaFailures(a) != i+1 {
					e.t.Fatalf("setup: wrong code %d: %v", i+1, a)
				}
			}
			e.mfa.fails = 2
			e.mfa.code = e.mfaWrongCode()
		},
		run: func(e *faultEnv, c *authtest.Client) faultAnswer {
			return e.mfaSend(c, http.MethodPost, "/totp/verify", map[string]string{"totp": e.mfa.code})
		},
		after: func(e *faultEnv, c *authtest.Client, a faultAnswer) {
			counted := e.committed("UpdateLoginMaterial")
			switch {
			case a.ok():
				e.violation("a wrong code completed TOTP: %v", a)
			case a.is(http.StatusOK, "INVALID_TOTP_ERROR") && (!counted || mfaFailures(a) != e.mfa.fails+1):
				e.violation("a wrong code answered %v, with its count committed %v; want the run of %d", a, counted, e.mfa.fails+1)
			}
			run := e.mfa.fails
			if counted {
				run++
			}
			// Wrong codes to the lockout, across two sessions: each
			// counts exactly once, and the fifth locks.
			other := e.srv.NewClient(authtest.Header)
			e.mfaSignIn(other)
			for i := 0; run < 5; i++ {
				s := c
				if i%2 == 1 {
					s = other
				}
				r := e.mfaSend(s, http.MethodPost, "/totp/verify", map[string]string{"totp": e.mfaWrongCode()})
				if run++; !r.is(http.StatusOK, "INVALID_TOTP_ERROR") || mfaFailures(r) != run {
					e.violation("wrong code %d of the run: %v, want INVALID_TOTP_ERROR with the run of %d: the count was lost", run, r, run)
				}
			}
			right := e.mfaNextCode()
			if r := e.mfaSend(c, http.MethodPost, "/totp/verify", map[string]string{"totp": right}); !r.is(http.StatusOK, "LIMIT_REACHED_ERROR") {
				e.violation("the right code after five wrong ones: %v, want LIMIT_REACHED_ERROR", r)
			}
			if e.mfaHonest("during the lockout", c) {
				e.violation("a session passes during the lockout")
			}
			// Past the lockout, the next code goes through.
			e.srv.Clock.Advance(15 * time.Minute)
			if r := e.refresh(c); !r.ok() {
				e.violation("refresh after the lockout: %v", r)
			}
			if r := e.mfaSend(c, http.MethodPost, "/totp/verify", map[string]string{"totp": e.mfaNextCode()}); !r.ok() {
				e.violation("the next code after the lockout: %v, want OK", r)
			}
			if !e.mfaHonest("after the lockout", c) {
				e.violation("a session does not pass with a right code after the lockout")
			}
		},
	}

	// newCodes makes a set of recovery codes in a session that completed
	// TOTP, which voids the set before.
	newCodes := faultFlow{
		name:      "mfa-recovery-new",
		modes:     header,
		configure: required,
		tolerated: keys,
		setup: func(e *faultEnv, c *authtest.Client) {
			e.mustSignUp(c)
			e.mfaMustSetUp(c)
			e.mfaMustCodes(c)
		},
		run: func(e *faultEnv, c *authtest.Client) faultAnswer {
			return e.mfaSend(c, http.MethodPost, "/mfa/recovery-codes", struct{}{})
		},
		after: func(e *faultEnv, c *authtest.Client, a faultAnswer) {
			old := slices.Clone(e.mfa.codes)
			stored := e.committed("UpdateLoginMaterial")
			if a.ok() && (!stored || !e.mfaKeepCodes(a)) {
				e.violation("new recovery codes answered %v, but their record committed %v", a, stored)
			}
			if !a.ok() {
				if stored {
					e.finding("MFA: new recovery codes were stored and not shown: the person asks again")
				}
				r := e.mfaSend(c, http.MethodPost, "/mfa/recovery-codes", struct{}{})
				if !r.ok() || !e.mfaKeepCodes(r) {
					e.violation("new recovery codes again: %v, want OK", r)
					return
				}
			}
			if n := e.mfaRemaining(c); n != 10 {
				e.violation("%d recovery codes after a new set, want 10", n)
			}
			// A code of the set shown works once; the old set, never.
			in := e.srv.NewClient(authtest.Header)
			e.mfaSignIn(in)
			if r := e.mfaSend(in, http.MethodPost, "/mfa/recovery-code/verify", map[string]string{"code": old[0]}); r.ok() {
				e.violation("a code of the voided set works: %v", r)
			}
			if r := e.mfaSend(in, http.MethodPost, "/mfa/recovery-code/verify", map[string]string{"code": e.mfa.codes[0]}); !r.ok() {
				e.violation("a code of the set shown: %v, want OK", r)
			}
			if !e.mfaHonest("after a recovery code", in) {
				e.violation("a session does not pass after a recovery code")
			}
			again := e.srv.NewClient(authtest.Header)
			e.mfaSignIn(again)
			if r := e.mfaSend(again, http.MethodPost, "/mfa/recovery-code/verify", map[string]string{"code": e.mfa.codes[0]}); r.ok() {
				e.violation("a recovery code used twice: %v", r)
			}
		},
	}

	// useCode completes the second factor of a new session with a
	// recovery code.
	useCode := faultFlow{
		name:      "mfa-recovery-use",
		modes:     faultModes,
		configure: required,
		tolerated: keys,
		setup: func(e *faultEnv, c *authtest.Client) {
			first := e.srv.NewClient(authtest.Header)
			e.mustSignUp(first)
			e.mfaMustSetUp(first)
			e.mfaMustCodes(first)
			e.mfaSignIn(c)
		},
		run: func(e *faultEnv, c *authtest.Client) faultAnswer {
			return e.mfaSend(c, http.MethodPost, "/mfa/recovery-code/verify", map[string]string{"code": e.mfa.codes[0]})
		},
		after: func(e *faultEnv, c *authtest.Client, a faultAnswer) {
			spent, completed := e.committed("UpdateLoginMaterial"), e.committed("UpdateSessionFactors")
			if a.ok() && (!spent || !completed || !a.is(http.StatusOK, "OK") || a.res.JSON["remaining"] != float64(9)) {
				e.violation("a recovery code answered %v, but committed its use %v, the session's factor %v", a, spent, completed)
			}
			left := 10
			if spent {
				left--
			}
			// The client posts the code again.
			r := e.mfaSend(c, http.MethodPost, "/mfa/recovery-code/verify", map[string]string{"code": e.mfa.codes[0]})
			switch {
			case spent && r.ok():
				e.violation("a recovery code used twice: %v", r)
			case spent && !(r.is(http.StatusOK, "INVALID_RECOVERY_CODE_ERROR") && mfaFailures(r) == 0):
				e.violation("the code again after it was used: %v, want INVALID_RECOVERY_CODE_ERROR, uncounted", r)
			case !spent && !r.ok():
				e.violation("the code again after a failure before it was used: %v, want OK", r)
			case !spent:
				left--
			case !a.ok() && !completed:
				e.finding("MFA: a recovery code was used up and the session's factor not recorded: the person uses another")
			}
			if !e.mfaHonest("after the recovery code", c) {
				if a := e.mfaSend(c, http.MethodPut, "/mfa/info", nil); !a.ok() {
					e.violation("/mfa/info: %v", a)
				}
				if !e.mfaHonest("after /mfa/info", c) {
					if r := e.mfaSend(c, http.MethodPost, "/mfa/recovery-code/verify", map[string]string{"code": e.mfa.codes[1]}); !r.ok() {
						e.violation("another recovery code: %v, want OK", r)
					}
					left--
					if !e.mfaHonest("after another recovery code", c) {
						e.violation("a session does not pass after a recovery code")
					}
				}
			}
			if n := e.mfaRemaining(c); n != left {
				e.violation("%d recovery codes left, want %d", n, left)
			}
			in := e.srv.NewClient(authtest.Header)
			e.mfaSignIn(in)
			if r := e.mfaSend(in, http.MethodPost, "/mfa/recovery-code/verify", map[string]string{"code": e.mfa.codes[0]}); r.ok() {
				e.violation("a recovery code used twice, in another session: %v", r)
			}
			if e.mfaHonest("a session whose recovery code was refused", in) {
				e.violation("a session passes after its recovery code was refused")
			}
		},
	}

	// info brings a session's token up to its record: the session
	// completed TOTP, and the answer that said so was lost (another
	// client held the same tokens).
	info := faultFlow{
		name:      "mfa-info",
		modes:     faultModes,
		configure: required,
		tolerated: keys,
		setup: func(e *faultEnv, c *authtest.Client) {
			first := e.srv.NewClient(authtest.Header)
			e.mustSignUp(first)
			e.mfaMustSetUp(first)
			e.mfaSignIn(c)
			// The same session in another client, whose answers c never
			// sees: c's token says the factor is still to come.
			twin := e.srv.NewClient(authtest.Header)
			twin.AccessToken, twin.RefreshToken, twin.FrontToken = c.AccessToken, c.RefreshToken, c.FrontToken
			if c.Mode == authtest.Cookie {
				twin.AccessToken = c.Cookie("sAccessToken", "/")
			}
			if a := e.mfaSend(twin, http.MethodPost, "/totp/verify", map[string]string{"totp": e.mfaNextCode()}); !a.ok() {
				e.t.Fatalf("setup: TOTP in the twin: %v", a)
			}
			e.mfa.other = e.srv.NewClient(authtest.Header)
			e.mfaSignIn(e.mfa.other)
		},
		run: func(e *faultEnv, c *authtest.Client) faultAnswer {
			return e.mfaSend(c, http.MethodPut, "/mfa/info", nil)
		},
		after: func(e *faultEnv, c *authtest.Client, a faultAnswer) {
			if a.ok() && !e.mfaHonest("after /mfa/info", c) {
				e.violation("/mfa/info answered OK, and the session whose record shows TOTP does not pass")
			}
			if !a.ok() {
				if r := e.mfaSend(c, http.MethodPut, "/mfa/info", nil); !r.ok() {
					e.violation("/mfa/info again: %v, want OK", r)
				}
				if !e.mfaHonest("after /mfa/info again", c) {
					e.violation("the session whose record shows TOTP does not pass after /mfa/info")
				}
			}
			// A session that completed nothing asks too: it never passes.
			if r := e.mfaSend(e.mfa.other, http.MethodPut, "/mfa/info", nil); !r.ok() {
				e.violation("/mfa/info of the other session: %v", r)
			}
			if e.mfaHonest("the other session", e.mfa.other) {
				e.violation("a session passes after /mfa/info without completing TOTP")
			}
		},
	}

	// signIn signs in a user who has TOTP set up: the session must
	// complete it.
	signIn := faultFlow{
		name:      "mfa-signin",
		modes:     faultModes,
		configure: required,
		tolerated: keys,
		setup: func(e *faultEnv, c *authtest.Client) {
			first := e.srv.NewClient(authtest.Header)
			e.mustSignUp(first)
			e.mfaMustSetUp(first)
		},
		run: func(e *faultEnv, c *authtest.Client) faultAnswer {
			return e.signIn(c, e.email, authtest.Password)
		},
		after: func(e *faultEnv, c *authtest.Client, a faultAnswer) {
			for _, call := range e.fs.Armed() {
				if call.Method != "CreateSession" || !call.Committed() {
					continue
				}
				var claim struct {
					C map[string]int64 `json:"c"`
					V bool             `json:"v"`
				}
				if s := call.Args[0].(store.Session); json.Unmarshal(s.Factors, &claim) != nil || claim.V || len(claim.C) != 1 {
					e.violation("a sign-in made a session whose factors are %s, want the first factor alone, not met", s.Factors)
				}
			}
			if !a.ok() {
				if r := e.signIn(c, e.email, authtest.Password); !r.ok() {
					e.violation("the sign-in again: %v, want OK", r)
					return
				}
			}
			if e.mfaHonest("after the sign-in", c) {
				e.violation("a session passes after a sign-in, before TOTP")
			}
			if a := e.mfaSend(c, http.MethodPost, "/totp/verify", map[string]string{"totp": e.mfaNextCode()}); !a.ok() {
				e.violation("TOTP after the sign-in: %v, want OK", a)
			}
			if !e.mfaHonest("after TOTP", c) {
				e.violation("a session does not pass after TOTP")
			}
		},
	}

	// refresh refreshes a session that completed TOTP and one that has
	// not: the first still passes, the second still does not.
	refresh := func(name string, completed bool) faultFlow {
		return faultFlow{
			name:  name,
			modes: faultModes,
			configure: func(cfg *auth.Config) {
				required(cfg)
				cfg.RefreshReuseWindow = 10 * time.Second
			},
			// The read of the user's second factors comes after the
			// rotation committed: when it fails the refresh answers OK
			// with a token without the claim, which fails closed.
			tolerated: map[string]bool{"Login": true},
			setup: func(e *faultEnv, c *authtest.Client) {
				first := e.srv.NewClient(authtest.Header)
				e.mustSignUp(first)
				e.mfaMustSetUp(first)
				e.mfaSignIn(c)
				if completed {
					if a := e.mfaSend(c, http.MethodPost, "/totp/verify", map[string]string{"totp": e.mfaNextCode()}); !a.ok() {
						e.t.Fatalf("setup: TOTP: %v", a)
					}
				}
				e.srv.Clock.Advance(time.Hour) // the access token expired
			},
			run: func(e *faultEnv, c *authtest.Client) faultAnswer {
				return e.refresh(c)
			},
			after: func(e *faultEnv, c *authtest.Client, a faultAnswer) {
				if !a.ok() {
					// Inside the reuse window, a retry gets the lost
					// exchange's successor, or does the exchange.
					e.srv.Clock.Advance(time.Second)
					if r := e.refresh(c); !r.ok() {
						e.violation("the refresh again, inside the window: %v, want OK", r)
						return
					}
				}
				passes := e.mfaHonest("after the refresh", c)
				if !passes && completed {
					// A token without the claim: the SDK asks
					// /mfa/info, which assesses the session again.
					e.mfaSend(c, http.MethodPut, "/mfa/info", nil)
					passes = e.mfaHonest("after /mfa/info", c)
				}
				if passes != completed {
					e.violation("a session that completed TOTP %v, refreshed: passes %v", completed, passes)
				}
			},
		}
	}

	return []faultFlow{device, verify, optional, code, wrong, newCodes, useCode, info, signIn,
		refresh("mfa-refresh", true), refresh("mfa-refresh-pending", false)}
}

// faultMFAStore is a store.Store whose writes of a user's second factors
// go through edit (on the decoded JSON of the old record and the new)
// while on is set: a store that loses part of what it is told.
type faultMFAStore struct {
	store.Store
	on   *atomic.Bool
	edit func(old, new map[string]any)
	// sessions, if set, replaces UserSessions.
	sessions func(ctx context.Context, userID string, now time.Time) ([]store.Session, error)
	// blindRefresh, if set, hides the user's record of second factors
	// from the read that follows each rotation: a refresh that does not
	// hold the session to what its user must complete now.
	blindRefresh bool
	rotated      atomic.Bool
}

func (b *faultMFAStore) RotateRefreshToken(ctx context.Context, r store.Rotation) (store.Rotated, error) {
	res, err := b.Store.RotateRefreshToken(ctx, r)
	if b.on.Load() && b.blindRefresh {
		b.rotated.Store(true)
	}
	return res, err
}

func (b *faultMFAStore) Login(ctx context.Context, k store.LoginKey) (store.Login, error) {
	if k.Method == store.MethodSecondFactors && b.rotated.CompareAndSwap(true, false) {
		return store.Login{}, store.ErrNotFound
	}
	return b.Store.Login(ctx, k)
}

func (b *faultMFAStore) UpdateLoginMaterial(ctx context.Context, loginID string, old, new []byte) error {
	if b.on.Load() && b.edit != nil {
		var o, n map[string]any
		if json.Unmarshal(old, &o) == nil && json.Unmarshal(new, &n) == nil && n != nil {
			b.edit(o, n)
			new, _ = json.Marshal(n)
		}
	}
	return b.Store.UpdateLoginMaterial(ctx, loginID, old, new)
}

func (b *faultMFAStore) UserSessions(ctx context.Context, userID string, now time.Time) ([]store.Session, error) {
	if b.on.Load() && b.sessions != nil {
		return b.sessions(ctx, userID, now)
	}
	return b.Store.UserSessions(ctx, userID, now)
}

// faultMFABreakages are the deliberate breakages of the MFA flows.
func faultMFABreakages() []faultBreakage {
	material := func(edit func(old, new map[string]any)) func(store.Store, *atomic.Bool) store.Store {
		return func(inner store.Store, on *atomic.Bool) store.Store {
			return &faultMFAStore{Store: inner, on: on, edit: edit}
		}
	}
	return []faultBreakage{
		{
			name: "a store that forgets the TOTP step accepted", flow: "mfa-totp-verify",
			store: material(func(old, new map[string]any) { new["step"] = old["step"] }),
		},
		{
			name: "a store that keeps a recovery code used", flow: "mfa-recovery-use",
			store: material(func(old, new map[string]any) { new["recovery"], new["recoveryUsed"] = old["recovery"], nil }),
		},
		{
			name: "a store that loses a wrong code's count", flow: "mfa-totp-wrong",
			store: material(func(old, new map[string]any) { new["failures"], new["failedAt"] = old["failures"], old["failedAt"] }),
		},
		{
			// The library, changed not to hold the user's other
			// sessions to a device set up: neither at once nor at
			// their refresh.
			name: "other sessions not held to a new device", flow: "mfa-totp-device-verify-optional",
			handler: func(st store.Store, on *atomic.Bool) store.Store {
				return &faultMFAStore{Store: st, on: on, blindRefresh: true,
					sessions: func(context.Context, string, time.Time) ([]store.Session, error) { return nil, nil }}
			},
		},
	}
}
