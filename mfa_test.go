package auth_test

// Multi-factor auth over HTTP, as a user and the SDKs see it, in every
// transfer mode: TOTP after a password, replayed codes, the lockout after
// wrong codes, the verify of a device set up already, recovery codes,
// step-up with FactorWithin, concurrent uses of one code, who may set up
// and remove a factor, RequireFactors, passkeys as the second factor and
// passkeys a pending session may not add, first factors, password
// resets, the record of second factors, and the events reported.

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/passwordless"
	"github.com/latchkit/auth/store"
	"github.com/latchkit/auth/store/memstore"
)

// ---- the helpers of the MFA tests ----

const (
	// mfPendingBody is a protected route's answer to a session that has
	// not completed the second factor its user must complete.
	mfPendingBody = `{"message":"invalid claim","claimValidationErrors":[{"id":"st-mfa","reason":{"message":"MFA requirement for auth is not satisfied"}}]}`
	// mfSetUpRefusedBody answers a session that may not set up a factor.
	mfSetUpRefusedBody = `{"message":"invalid claim","claimValidationErrors":[{"id":"st-mfa","reason":"Not allowed to setup factor that is not in the next set of unsatisfied factors"}]}`
	// mfStaleBody is the step-up route's answer to a session whose TOTP
	// is older than five minutes, or missing.
	mfStaleBody = `{"message":"invalid claim","claimValidationErrors":[{"id":"st-mfa","reason":{"message":"Factor validation failed: totp not completed within 300 seconds","factorId":"totp"}}]}`

	// mfStepUpPath is a route that asks for TOTP within five minutes.
	mfStepUpPath = "/api/step-up"

	// mfMaxFailures and mfLockout are the lockout's rules: five wrong
	// codes in a row lock the user's second factors for 15 minutes.
	mfMaxFailures = 5
	mfLockout     = 15 * time.Minute
	// mfStep is TOTP's time step: a test that needs a code the server
	// has not accepted yet moves the clock by one.
	mfStep = 30 * time.Second
)

// mfServer starts a server whose users must complete TOTP after their
// password, unless cfg.MFA says otherwise, with mfStepUpPath on its Mux.
func mfServer(t testing.TB, cfg auth.Config) *authtest.Server {
	t.Helper()
	if len(cfg.MFA.Required) == 0 && len(cfg.MFA.Factors) == 0 {
		cfg.MFA.Required = []string{auth.FactorTOTP}
	}
	s := authtest.NewServer(t, cfg)
	mfStepUpRoute(s)
	return s
}

// mfStepUpRoute mounts mfStepUpPath, which asks for TOTP completed
// within the last five minutes, on s.
func mfStepUpRoute(s *authtest.Server) {
	s.Mux.Handle("GET "+mfStepUpPath, s.Auth.RequireSession(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sess, _ := auth.SessionFromContext(r.Context())
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"userId":%q}`, sess.UserID)
	}), auth.FactorWithin(auth.FactorTOTP, 5*time.Minute)))
}

// mfCall sends a request with c's session and the SDKs' rid for the
// recipe, keeping what the answer hands out.
func mfCall(c *authtest.Client, rid, method, path string, body any) *authtest.Response {
	saved, had := c.Header["Rid"]
	c.Header.Set("rid", rid)
	defer func() {
		if had {
			c.Header["Rid"] = saved
		} else {
			c.Header.Del("Rid")
		}
	}()
	return c.Do(method, path, body)
}

// mfWantPending checks that a protected route refuses c's session with
// the st-mfa claim error, its second factor not completed.
func mfWantPending(t testing.TB, what string, c *authtest.Client) {
	t.Helper()
	res := c.Get("/api/session")
	if res.StatusCode != http.StatusForbidden || string(res.Body) != mfPendingBody {
		t.Fatalf("%s: GET /api/session: %d %s, want 403 %s", what, res.StatusCode, res.Body, mfPendingBody)
	}
}

// mfWantOpen checks that a protected route lets c's session through as
// user uid, and returns the session's handle as the route saw it.
func mfWantOpen(t testing.TB, what string, c *authtest.Client, uid string) string {
	t.Helper()
	res := c.Get("/api/session")
	if res.StatusCode != http.StatusOK || res.JSON["userId"] != uid {
		t.Fatalf("%s: GET /api/session: %d %s, want 200 for user %s", what, res.StatusCode, res.Body, uid)
	}
	h, _ := res.JSON["sessionHandle"].(string)
	return h
}

// mfWantStepUp checks the step-up route's answer to c's session: let
// through, or refused for a TOTP that is not fresh.
func mfWantStepUp(t testing.TB, what string, c *authtest.Client, through bool) {
	t.Helper()
	res := c.Get(mfStepUpPath)
	switch {
	case through && res.StatusCode != http.StatusOK:
		t.Fatalf("%s: GET %s: %d %s, want 200", what, mfStepUpPath, res.StatusCode, res.Body)
	case !through && (res.StatusCode != http.StatusForbidden || string(res.Body) != mfStaleBody):
		t.Fatalf("%s: GET %s: %d %s, want 403 %s", what, mfStepUpPath, res.StatusCode, res.Body, mfStaleBody)
	}
}

// mfSignIn signs email in with the fixtures' password with a new client
// in mode m, and checks the answer is OK.
func mfSignIn(t testing.TB, s *authtest.Server, m authtest.Mode, email string) *authtest.Client {
	t.Helper()
	return mfSignInWith(t, s, m, email, authtest.Password)
}

func mfSignInWith(t testing.TB, s *authtest.Server, m authtest.Mode, email, password string) *authtest.Client {
	t.Helper()
	c := s.NewClient(m)
	if res := c.SignIn(email, password); res.StatusCode != http.StatusOK || res.Status != "OK" {
		t.Fatalf("sign-in of %s: %d %s, want 200 OK", email, res.StatusCode, res.Body)
	}
	return c
}

// mfSignOut signs c out.
func mfSignOut(t testing.TB, c *authtest.Client) {
	t.Helper()
	if res := c.SignOut(); res.StatusCode != http.StatusOK || res.Status != "OK" {
		t.Fatalf("sign-out: %d %s", res.StatusCode, res.Body)
	}
}

// mfSetUp adds an authenticator app named name for c's user and sets it
// up with its code of now, which completes TOTP in c's session; it
// returns the app's secret. The server must not have accepted a code of
// the current step for the user yet.
func mfSetUp(t testing.TB, s *authtest.Server, c *authtest.Client, name string) string {
	t.Helper()
	res := c.CreateTOTPDevice(name)
	secret, _ := res.JSON["secret"].(string)
	if res.StatusCode != http.StatusOK || res.Status != "OK" || secret == "" || res.JSON["deviceName"] != name {
		t.Fatalf("totp/device %q: %d %s, want OK with a secret", name, res.StatusCode, res.Body)
	}
	res = c.VerifyTOTPDevice(name, authtest.TOTPCode(secret, s.Clock.Now()))
	wantReply(t, "totp/device/verify of a new device", res.StatusCode, res.Body, http.StatusOK, `{"status":"OK","wasAlreadyVerified":false}`)
	return secret
}

// mfWrongCode returns six digits that are no code the server accepts
// now for secret: none of the steps around now, with room to spare.
func mfWrongCode(secret string, now time.Time) string {
	right := map[string]bool{}
	for i := -3; i <= 3; i++ {
		right[authtest.TOTPCode(secret, now.Add(time.Duration(i)*mfStep))] = true
	}
	for n := 123456; ; n++ {
		if code := fmt.Sprintf("%06d", n%1000000); !right[code] {
			return code
		}
	}
}

// mfNumber reads a number of a JSON answer, -1 if it is missing.
func mfNumber(res *authtest.Response, key string) int64 {
	v, ok := res.JSON[key].(float64)
	if !ok {
		return -1
	}
	return int64(v)
}

// mfWantWrong checks the answer to a wrong code: status, the run of
// wrong codes with this one, and the most there may be.
func mfWantWrong(t testing.TB, what string, res *authtest.Response, status string, current int64) {
	t.Helper()
	if res.StatusCode != http.StatusOK || res.Status != status ||
		mfNumber(res, "currentNumberOfFailedAttempts") != current || mfNumber(res, "maxNumberOfFailedAttempts") != mfMaxFailures {
		t.Fatalf("%s: %d %s, want %s with currentNumberOfFailedAttempts %d and maxNumberOfFailedAttempts %d",
			what, res.StatusCode, res.Body, status, current, mfMaxFailures)
	}
	if res.IssuedTokens() {
		t.Errorf("%s: a wrong code issued tokens", what)
	}
}

// mfWantLocked checks a LIMIT_REACHED_ERROR answer: a wait of at most
// the lockout, and the full run of wrong codes.
func mfWantLocked(t testing.TB, what string, res *authtest.Response) {
	t.Helper()
	wait := mfNumber(res, "retryAfterMs")
	if res.StatusCode != http.StatusOK || res.Status != "LIMIT_REACHED_ERROR" || wait <= 0 || wait > mfLockout.Milliseconds() ||
		mfNumber(res, "currentNumberOfFailedAttempts") != mfMaxFailures || mfNumber(res, "maxNumberOfFailedAttempts") != mfMaxFailures {
		t.Fatalf("%s: %d %s, want LIMIT_REACHED_ERROR with 0 < retryAfterMs <= %d and %d of %d attempts",
			what, res.StatusCode, res.Body, mfLockout.Milliseconds(), mfMaxFailures, mfMaxFailures)
	}
	if res.IssuedTokens() {
		t.Errorf("%s: a locked user's code issued tokens", what)
	}
}

// mfFactors is the "factors" of a PUT /mfa/info answer.
type mfFactors struct {
	Next           []string `json:"next"`
	AlreadySetup   []string `json:"alreadySetup"`
	AllowedToSetup []string `json:"allowedToSetup"`
}

// mfInfoOf asks PUT /mfa/info with c and returns its factors.
func mfInfoOf(t testing.TB, c *authtest.Client) mfFactors {
	t.Helper()
	res := c.MFAInfo()
	var body struct {
		Status  string              `json:"status"`
		Factors mfFactors           `json:"factors"`
		Emails  map[string][]string `json:"emails"`
	}
	if res.StatusCode != http.StatusOK || json.Unmarshal(res.Body, &body) != nil || body.Status != "OK" ||
		body.Factors.Next == nil || body.Factors.AlreadySetup == nil || body.Factors.AllowedToSetup == nil {
		t.Fatalf("PUT /mfa/info: %d %s, want OK with next, alreadySetup and allowedToSetup", res.StatusCode, res.Body)
	}
	// auth-react's passkey factor screen offers the first address of
	// emails.webauthn; without the key it asks the user to type one.
	if _, ok := body.Emails[auth.FactorWebAuthn]; !ok {
		t.Errorf("PUT /mfa/info: %s, want emails.webauthn", res.Body)
	}
	return body.Factors
}

// mfDevices lists the TOTP devices of c's user: name to whether it is
// set up.
func mfDevices(t testing.TB, c *authtest.Client) map[string]bool {
	t.Helper()
	res := mfCall(c, "totp", http.MethodGet, "/auth/totp/device/list", nil)
	var body struct {
		Status  string
		Devices []struct {
			Name     string
			Verified bool
		}
	}
	if res.StatusCode != http.StatusOK || json.Unmarshal(res.Body, &body) != nil || body.Status != "OK" {
		t.Fatalf("totp/device/list: %d %s", res.StatusCode, res.Body)
	}
	out := map[string]bool{}
	for _, d := range body.Devices {
		out[d.Name] = d.Verified
	}
	return out
}

// mfRemoveDevice asks to remove the TOTP device named name.
func mfRemoveDevice(c *authtest.Client, name string) *authtest.Response {
	return mfCall(c, "totp", http.MethodPost, "/auth/totp/device/remove", map[string]string{"deviceName": name})
}

// mfRecoveryCodes asks for a new set of recovery codes with c and
// returns them, checking the answer: ten codes, all different, each 16
// base32 characters in groups of four.
func mfRecoveryCodes(t testing.TB, c *authtest.Client) []string {
	t.Helper()
	res := c.NewRecoveryCodes()
	var body struct {
		Status string
		Codes  []string
	}
	if res.StatusCode != http.StatusOK || json.Unmarshal(res.Body, &body) != nil || body.Status != "OK" {
		t.Fatalf("POST /mfa/recovery-codes: %d %s, want OK", res.StatusCode, res.Body)
	}
	if len(body.Codes) != 10 {
		t.Fatalf("%d recovery codes, want 10: %s", len(body.Codes), res.Body)
	}
	seen := map[string]bool{}
	for _, code := range body.Codes {
		if !mfCodeFormat.MatchString(code) {
			t.Errorf("recovery code %q: want xxxx-xxxx-xxxx-xxxx in base32", code)
		}
		if seen[code] {
			t.Errorf("recovery code %q twice in one set", code)
		}
		seen[code] = true
	}
	return body.Codes
}

var mfCodeFormat = regexp.MustCompile(`^[a-z2-7]{4}-[a-z2-7]{4}-[a-z2-7]{4}-[a-z2-7]{4}$`)

// mfRemaining asks how many recovery codes c's user has left.
func mfRemaining(t testing.TB, c *authtest.Client) int64 {
	t.Helper()
	res := mfCall(c, "multifactorauth", http.MethodGet, "/auth/mfa/recovery-codes", nil)
	if res.StatusCode != http.StatusOK || res.Status != "OK" || mfNumber(res, "remaining") < 0 {
		t.Fatalf("GET /mfa/recovery-codes: %d %s, want OK with remaining", res.StatusCode, res.Body)
	}
	return mfNumber(res, "remaining")
}

// mfModes runs test in a subtest per transfer mode.
func mfModes(t *testing.T, test func(t *testing.T, m authtest.Mode)) {
	for _, m := range authtest.Modes {
		t.Run(m.String(), func(t *testing.T) { test(t, m) })
	}
}

// ---- TOTP after a password ----

// A user who must complete TOTP is refused by protected routes until they
// set up an authenticator app, then at each sign-in until they type its
// code; the session stays the same session, and a refresh keeps the
// factor.
func TestMFATOTPSignIn(t *testing.T) {
	mfModes(t, func(t *testing.T, m authtest.Mode) {
		s := mfServer(t, auth.Config{})
		c, u := s.SignedIn(m)

		res := c.Get("/api/session")
		wantReply(t, "a protected route right after sign-up", res.StatusCode, res.Body, http.StatusForbidden, mfPendingBody)
		info := mfInfoOf(t, c)
		if !slices.Equal(info.Next, []string{auth.FactorTOTP}) || !slices.Equal(info.AllowedToSetup, []string{auth.FactorTOTP}) ||
			!slices.Equal(info.AlreadySetup, []string{auth.FactorEmailPassword}) {
			t.Fatalf("mfa/info after sign-up: %+v, want next and allowedToSetup [totp], alreadySetup [emailpassword]", info)
		}

		handle := handleOf(t, c)
		secret := mfSetUp(t, s, c, "phone")
		if h := mfWantOpen(t, "after setting up TOTP", c, u.ID); h != handle || handleOf(t, c) != handle {
			t.Errorf("the session after TOTP is %s (front-token %s), want the same session %s", h, handleOf(t, c), handle)
		}
		if info := mfInfoOf(t, c); len(info.Next) != 0 || !slices.Contains(info.AlreadySetup, auth.FactorTOTP) {
			t.Errorf("mfa/info after TOTP: %+v, want nothing next and totp set up", info)
		}

		mfSignOut(t, c)
		c = mfSignIn(t, s, m, u.Email)
		mfWantPending(t, "a sign-in with the password alone", c)
		if info := mfInfoOf(t, c); !slices.Equal(info.Next, []string{auth.FactorTOTP}) {
			t.Errorf("mfa/info after sign-in: %+v, want next [totp]", info)
		}
		handle = handleOf(t, c)
		s.Clock.Advance(mfStep)
		res = c.CompleteTOTP(secret)
		wantReply(t, "totp/verify with the right code", res.StatusCode, res.Body, http.StatusOK, `{"status":"OK"}`)
		if h := mfWantOpen(t, "after the code", c, u.ID); h != handle || handleOf(t, c) != handle {
			t.Errorf("the session after the code is %s (front-token %s), want the same session %s", h, handleOf(t, c), handle)
		}

		if res := c.Refresh(); res.StatusCode != http.StatusOK {
			t.Fatalf("refresh: %d %s", res.StatusCode, res.Body)
		}
		if h := mfWantOpen(t, "after a refresh", c, u.ID); h != handle {
			t.Errorf("the session after a refresh is %s, want %s", h, handle)
		}
	})
}

// Each 30-second step's code is accepted once per user: presented again,
// in another session, it is refused (and not counted as a guess); the
// next step's code is accepted.
func TestMFATOTPReplay(t *testing.T) {
	mfModes(t, func(t *testing.T, m authtest.Mode) {
		s := mfServer(t, auth.Config{})
		c, u := s.SignedIn(m)
		secret := mfSetUp(t, s, c, "phone")
		used := authtest.TOTPCode(secret, s.Clock.Now()) // the set-up's
		mfSignOut(t, c)

		c = mfSignIn(t, s, m, u.Email)
		mfWantWrong(t, "the set-up's code again", c.VerifyTOTP(used), "INVALID_TOTP_ERROR", 0)
		mfWantPending(t, "after a replayed code", c)

		s.Clock.Advance(mfStep)
		next := authtest.TOTPCode(secret, s.Clock.Now())
		res := c.VerifyTOTP(next)
		wantReply(t, "the next step's code", res.StatusCode, res.Body, http.StatusOK, `{"status":"OK"}`)
		mfWantOpen(t, "after the next step's code", c, u.ID)

		other := mfSignIn(t, s, m, u.Email)
		mfWantWrong(t, "that code again, in another session", other.VerifyTOTP(next), "INVALID_TOTP_ERROR", 0)
		mfWantPending(t, "the other session", other)
	})
}

// Five wrong codes in a row lock the user's TOTP for 15 minutes, the
// right code included; the count is the user's, across sessions, and
// wrong TOTP and recovery codes count together. A right recovery code is
// taken meanwhile, and lifts the lock.
func TestMFALockout(t *testing.T) {
	t.Run("five wrong codes", func(t *testing.T) {
		mfModes(t, func(t *testing.T, m authtest.Mode) {
			s := mfServer(t, auth.Config{})
			c, u := s.SignedIn(m)
			secret := mfSetUp(t, s, c, "phone")
			mfSignOut(t, c)
			c = mfSignIn(t, s, m, u.Email)
			s.Clock.Advance(mfStep)

			for i := int64(1); i <= mfMaxFailures; i++ {
				res := c.VerifyTOTP(mfWrongCode(secret, s.Clock.Now()))
				mfWantWrong(t, fmt.Sprintf("wrong code %d", i), res, "INVALID_TOTP_ERROR", i)
			}
			mfWantLocked(t, "the right code after five wrong ones", c.CompleteTOTP(secret))
			mfWantPending(t, "while locked", c)

			s.Clock.Advance(mfLockout)
			res := c.CompleteTOTP(secret)
			wantReply(t, "the right code 15 minutes later", res.StatusCode, res.Body, http.StatusOK, `{"status":"OK"}`)
			mfWantOpen(t, "after the lockout", c, u.ID)
		})
	})

	t.Run("counted across sessions", func(t *testing.T) {
		mfModes(t, func(t *testing.T, m authtest.Mode) {
			s := mfServer(t, auth.Config{})
			c, u := s.SignedIn(m)
			secret := mfSetUp(t, s, c, "phone")
			a, b := mfSignIn(t, s, m, u.Email), mfSignIn(t, s, m, u.Email)
			s.Clock.Advance(mfStep)
			wrong := mfWrongCode(secret, s.Clock.Now())
			for i := int64(1); i <= 3; i++ {
				mfWantWrong(t, fmt.Sprintf("wrong code %d, in the first session", i), a.VerifyTOTP(wrong), "INVALID_TOTP_ERROR", i)
			}
			for i := int64(4); i <= 5; i++ {
				mfWantWrong(t, fmt.Sprintf("wrong code %d, in the second session", i), b.VerifyTOTP(wrong), "INVALID_TOTP_ERROR", i)
			}
			mfWantLocked(t, "the right code in the first session", a.CompleteTOTP(secret))
			mfWantLocked(t, "the right code in the second session", b.CompleteTOTP(secret))
			mfWantPending(t, "the first session", a)
			mfWantPending(t, "the second session", b)
		})
	})

	t.Run("TOTP and recovery codes together", func(t *testing.T) {
		mfModes(t, func(t *testing.T, m authtest.Mode) {
			s := mfServer(t, auth.Config{})
			c, u := s.SignedIn(m)
			secret := mfSetUp(t, s, c, "phone")
			codes := mfRecoveryCodes(t, c)
			c = mfSignIn(t, s, m, u.Email)
			s.Clock.Advance(mfStep)
			for i := int64(1); i <= 3; i++ {
				mfWantWrong(t, fmt.Sprintf("wrong TOTP code %d", i), c.VerifyTOTP(mfWrongCode(secret, s.Clock.Now())), "INVALID_TOTP_ERROR", i)
			}
			for i := int64(4); i <= 5; i++ {
				mfWantWrong(t, fmt.Sprintf("wrong recovery code %d", i), c.UseRecoveryCode("aaaa-aaaa-aaaa-aaaa"), "INVALID_RECOVERY_CODE_ERROR", i)
			}
			mfWantLocked(t, "a wrong recovery code", c.UseRecoveryCode("bbbb-bbbb-bbbb-bbbb"))
			mfWantLocked(t, "the right TOTP code", c.CompleteTOTP(secret))
			mfWantPending(t, "while locked", c)

			res := c.UseRecoveryCode(codes[0])
			wantReply(t, "a right recovery code, while locked", res.StatusCode, res.Body, http.StatusOK, `{"status":"OK","remaining":9}`)
			mfWantOpen(t, "after the recovery code", c, u.ID)
			d := mfSignIn(t, s, m, u.Email)
			s.Clock.Advance(mfStep)
			res = d.CompleteTOTP(secret)
			wantReply(t, "the right TOTP code once the recovery code lifted the lock", res.StatusCode, res.Body, http.StatusOK, `{"status":"OK"}`)
		})
	})
}

// The verify of a device set up already checks the code, as any verify
// does: a wrong one completes nothing, in a session that has not met its
// requirement or in one that has and asks for step-up. SuperTokens
// answers it OK without looking at the code.
func TestMFAVerifyOfDeviceSetUpChecksTheCode(t *testing.T) {
	t.Run("pending session", func(t *testing.T) {
		mfModes(t, func(t *testing.T, m authtest.Mode) {
			s := mfServer(t, auth.Config{})
			c, u := s.SignedIn(m)
			secret := mfSetUp(t, s, c, "phone")
			c = mfSignIn(t, s, m, u.Email)
			s.Clock.Advance(mfStep)

			res := c.VerifyTOTPDevice("phone", mfWrongCode(secret, s.Clock.Now()))
			mfWantWrong(t, "a wrong code for the device set up", res, "INVALID_TOTP_ERROR", 1)
			mfWantPending(t, "after a wrong code for the device set up", c)

			res = c.VerifyTOTPDevice("phone", authtest.TOTPCode(secret, s.Clock.Now()))
			wantReply(t, "the right code", res.StatusCode, res.Body, http.StatusOK, `{"status":"OK","wasAlreadyVerified":true}`)
			mfWantOpen(t, "after the right code", c, u.ID)
		})
	})

	t.Run("step-up", func(t *testing.T) {
		mfModes(t, func(t *testing.T, m authtest.Mode) {
			s := mfServer(t, auth.Config{})
			c, u := s.SignedIn(m)
			secret := mfSetUp(t, s, c, "phone")
			mfWantStepUp(t, "right after TOTP", c, true)

			s.Clock.Advance(6 * time.Minute)
			mfWantStepUp(t, "six minutes later", c, false)
			res := c.VerifyTOTPDevice("phone", mfWrongCode(secret, s.Clock.Now()))
			mfWantWrong(t, "a wrong code for the device set up", res, "INVALID_TOTP_ERROR", 1)
			mfWantStepUp(t, "after a wrong code", c, false)
			mfWantOpen(t, "after a wrong code", c, u.ID) // the session itself met its requirement

			res = c.VerifyTOTPDevice("phone", authtest.TOTPCode(secret, s.Clock.Now()))
			wantReply(t, "the right code", res.StatusCode, res.Body, http.StatusOK, `{"status":"OK","wasAlreadyVerified":true}`)
			mfWantStepUp(t, "after the right code", c, true)
		})
	})
}

// ---- recovery codes ----

// Recovery codes: ten, shown once, each completing the factor once; a new
// set voids the old; only a session that has met its requirement may ask
// for them; the store keeps none of them.
func TestMFARecoveryCodes(t *testing.T) {
	mfModes(t, func(t *testing.T, m authtest.Mode) {
		st := memstore.New()
		s := mfServer(t, auth.Config{Store: st})
		c, u := s.SignedIn(m)

		res := c.NewRecoveryCodes()
		wantReply(t, "recovery codes before TOTP", res.StatusCode, res.Body, http.StatusForbidden, mfPendingBody)
		mfSetUp(t, s, c, "phone")
		first := mfRecoveryCodes(t, c)
		if n := mfRemaining(t, c); n != 10 {
			t.Errorf("%d recovery codes remaining, want 10", n)
		}

		used := mfSignIn(t, s, m, u.Email)
		mfWantPending(t, "a sign-in with the password alone", used)
		res = used.UseRecoveryCode(first[0])
		wantReply(t, "a recovery code", res.StatusCode, res.Body, http.StatusOK, `{"status":"OK","remaining":9}`)
		mfWantOpen(t, "after a recovery code", used, u.ID)
		if n := mfRemaining(t, c); n != 9 {
			t.Errorf("%d recovery codes remaining after one was used, want 9", n)
		}

		again := mfSignIn(t, s, m, u.Email)
		// Refused, and not counted: a used code guesses nothing, and a
		// double submit must not count against the user.
		mfWantWrong(t, "the same recovery code again", again.UseRecoveryCode(first[0]), "INVALID_RECOVERY_CODE_ERROR", 0)
		mfWantWrong(t, "a wrong recovery code after it", again.UseRecoveryCode("aaaa-aaaa-aaaa-aaaa"), "INVALID_RECOVERY_CODE_ERROR", 1)
		mfWantPending(t, "after a used recovery code", again)

		// A code as a person may type it: upper case, spaces for dashes.
		typed := strings.ToUpper(strings.ReplaceAll(first[1], "-", " "))
		res = again.UseRecoveryCode(typed)
		wantReply(t, "a recovery code as typed", res.StatusCode, res.Body, http.StatusOK, `{"status":"OK","remaining":8}`)
		mfWantOpen(t, "after a recovery code as typed", again, u.ID)

		second := mfRecoveryCodes(t, c)
		if n := mfRemaining(t, c); n != 10 {
			t.Errorf("%d recovery codes remaining after a new set, want 10", n)
		}
		for _, code := range second {
			if slices.Contains(first, code) {
				t.Errorf("recovery code %q in both sets", code)
			}
		}
		late := mfSignIn(t, s, m, u.Email)
		mfWantWrong(t, "a code of the old set", late.UseRecoveryCode(first[2]), "INVALID_RECOVERY_CODE_ERROR", 1)
		mfWantPending(t, "after a code of the old set", late)
		res = late.UseRecoveryCode(second[0])
		wantReply(t, "a code of the new set", res.StatusCode, res.Body, http.StatusOK, `{"status":"OK","remaining":9}`)
		mfWantOpen(t, "after a code of the new set", late, u.ID)

		pending := mfSignIn(t, s, m, u.Email)
		res = pending.NewRecoveryCodes()
		wantReply(t, "recovery codes from a pending session", res.StatusCode, res.Body, http.StatusForbidden, mfPendingBody)
		if n := mfRemaining(t, c); n != 9 {
			t.Errorf("%d recovery codes remaining after a refused request for a new set, want 9", n)
		}

		l, err := st.Login(t.Context(), store.SecondFactorsKey(u.ID))
		if err != nil || len(l.Material) == 0 {
			t.Fatalf("the user's second factors in the store: %v, %d bytes", err, len(l.Material))
		}
		material := strings.ToLower(string(l.Material))
		for _, code := range slices.Concat(first, second) {
			for _, form := range []string{code, strings.ReplaceAll(code, "-", "")} {
				if strings.Contains(material, form) {
					t.Errorf("the store keeps recovery code %q as %q: %s", code, form, l.Material)
				}
			}
		}
	})
}

// ---- step-up ----

// FactorWithin refuses a session whose TOTP is older than asked, with the
// factor named for the frontend, and lets it through once it is fresh
// again; a recovery code is not TOTP.
func TestMFAStepUp(t *testing.T) {
	mfModes(t, func(t *testing.T, m authtest.Mode) {
		s := mfServer(t, auth.Config{})
		c, u := s.SignedIn(m)
		res := c.Get(mfStepUpPath)
		wantReply(t, "step-up before any second factor", res.StatusCode, res.Body, http.StatusForbidden, mfPendingBody)

		secret := mfSetUp(t, s, c, "phone")
		codes := mfRecoveryCodes(t, c)
		mfWantStepUp(t, "right after TOTP", c, true)
		s.Clock.Advance(5 * time.Minute)
		mfWantStepUp(t, "five minutes after TOTP", c, true)
		s.Clock.Advance(time.Minute)
		mfWantStepUp(t, "six minutes after TOTP", c, false)
		mfWantOpen(t, "a route without step-up, six minutes after TOTP", c, u.ID)

		res = c.CompleteTOTP(secret)
		wantReply(t, "TOTP again", res.StatusCode, res.Body, http.StatusOK, `{"status":"OK"}`)
		mfWantStepUp(t, "after TOTP again", c, true)

		rc := mfSignIn(t, s, m, u.Email)
		if res := rc.UseRecoveryCode(codes[0]); res.Status != "OK" {
			t.Fatalf("a recovery code: %d %s", res.StatusCode, res.Body)
		}
		mfWantOpen(t, "after a recovery code", rc, u.ID)
		mfWantStepUp(t, "after a recovery code", rc, false)
	})
}

// ---- concurrency ----

// One code presented by many requests at once completes the factor once.
func TestMFAConcurrentCodes(t *testing.T) {
	const n = 16
	// race sends n requests at once with copies of c's tokens, and
	// returns the answers.
	race := func(s *authtest.Server, c *authtest.Client, send func(*authtest.Client) *authtest.Response) []*authtest.Response {
		access, refresh := c.Tokens()
		clients := make([]*authtest.Client, n)
		for i := range clients {
			clients[i] = s.NewClient(c.Mode)
			clients[i].SetTokens(access, refresh)
		}
		answers := make([]*authtest.Response, n)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				answers[i] = send(clients[i])
			}()
		}
		close(start)
		wg.Wait()
		return answers
	}
	count := func(t *testing.T, answers []*authtest.Response, refused ...string) {
		t.Helper()
		ok := 0
		for _, res := range answers {
			switch {
			case res == nil:
				t.Fatal("a request got no answer")
			case res.StatusCode == http.StatusOK && res.Status == "OK":
				ok++
			case res.StatusCode != http.StatusOK || !slices.Contains(refused, res.Status):
				t.Errorf("an answer %d %s, want OK or one of %v", res.StatusCode, res.Body, refused)
			}
		}
		if ok != 1 {
			t.Errorf("%d of %d concurrent uses of one code answered OK, want exactly 1", ok, n)
		}
	}

	t.Run("one TOTP code from one session", func(t *testing.T) {
		mfModes(t, func(t *testing.T, m authtest.Mode) {
			s := mfServer(t, auth.Config{})
			c, u := s.SignedIn(m)
			secret := mfSetUp(t, s, c, "phone")
			c = mfSignIn(t, s, m, u.Email)
			s.Clock.Advance(mfStep)
			code := authtest.TOTPCode(secret, s.Clock.Now())
			answers := race(s, c, func(cl *authtest.Client) *authtest.Response { return cl.VerifyTOTP(code) })
			count(t, answers, "INVALID_TOTP_ERROR")
			c.MFAInfo() // brings c's token up to date with its session
			mfWantOpen(t, "the session after the race", c, u.ID)
		})
	})

	t.Run("one recovery code from one session", func(t *testing.T) {
		mfModes(t, func(t *testing.T, m authtest.Mode) {
			s := mfServer(t, auth.Config{})
			c, u := s.SignedIn(m)
			mfSetUp(t, s, c, "phone")
			codes := mfRecoveryCodes(t, c)
			signedIn := mfSignIn(t, s, m, u.Email)
			answers := race(s, signedIn, func(cl *authtest.Client) *authtest.Response { return cl.UseRecoveryCode(codes[0]) })
			count(t, answers, "INVALID_RECOVERY_CODE_ERROR", "LIMIT_REACHED_ERROR")
			if r := mfRemaining(t, c); r != 9 {
				t.Errorf("%d recovery codes remaining, want 9", r)
			}
		})
	})
}

// ---- who may set up and remove a factor ----

// A session that signed in with the password alone may not add a device
// beside the one the user has (a stolen password cannot add its own), nor
// remove the one the user has.
func TestMFASetUpRule(t *testing.T) {
	mfModes(t, func(t *testing.T, m authtest.Mode) {
		s := mfServer(t, auth.Config{})
		c, u := s.SignedIn(m)
		secret := mfSetUp(t, s, c, "phone")

		thief := mfSignIn(t, s, m, u.Email)
		res := thief.CreateTOTPDevice("mine")
		wantReply(t, "a new device from a pending session", res.StatusCode, res.Body, http.StatusForbidden, mfSetUpRefusedBody)
		s.Clock.Advance(mfStep)
		res = thief.VerifyTOTPDevice("mine", "123456")
		wantReply(t, "verify of an unknown device from a pending session", res.StatusCode, res.Body, http.StatusForbidden, mfSetUpRefusedBody)
		res = mfRemoveDevice(thief, "phone")
		wantReply(t, "removing the device from a pending session", res.StatusCode, res.Body, http.StatusForbidden, mfPendingBody)
		mfWantPending(t, "the pending session", thief)
		if got := mfDevices(t, c); len(got) != 1 || !got["phone"] {
			t.Fatalf("devices after the refusals: %v, want phone alone, set up", got)
		}

		// Once it has completed TOTP, the session may.
		if res := thief.CompleteTOTP(secret); res.Status != "OK" {
			t.Fatalf("totp/verify: %d %s", res.StatusCode, res.Body)
		}
		s.Clock.Advance(mfStep)
		mfSetUp(t, s, thief, "tablet")
		if got := mfDevices(t, c); len(got) != 2 || !got["phone"] || !got["tablet"] {
			t.Fatalf("devices: %v, want phone and tablet, set up", got)
		}
	})
}

// The last factor a user is required to have cannot be removed; one of
// two can.
func TestMFALastFactor(t *testing.T) {
	mfModes(t, func(t *testing.T, m authtest.Mode) {
		s := mfServer(t, auth.Config{})
		c, _ := s.SignedIn(m)
		mfSetUp(t, s, c, "phone")

		res := mfRemoveDevice(c, "phone")
		if res.StatusCode != http.StatusOK || res.Status != "GENERAL_ERROR" || res.Message == "" {
			t.Fatalf("removing the only device: %d %s, want GENERAL_ERROR with a message", res.StatusCode, res.Body)
		}
		if got := mfDevices(t, c); len(got) != 1 || !got["phone"] {
			t.Fatalf("devices after the refusal: %v, want phone, set up", got)
		}

		s.Clock.Advance(mfStep)
		mfSetUp(t, s, c, "tablet")
		res = mfRemoveDevice(c, "phone")
		wantReply(t, "removing one of two devices", res.StatusCode, res.Body, http.StatusOK, `{"status":"OK","didDeviceExist":true}`)
		if got := mfDevices(t, c); len(got) != 1 || !got["tablet"] {
			t.Fatalf("devices after the removal: %v, want tablet alone", got)
		}
		res = mfRemoveDevice(c, "phone")
		wantReply(t, "removing it again", res.StatusCode, res.Body, http.StatusOK, `{"status":"OK","didDeviceExist":false}`)
		res = mfRemoveDevice(c, "tablet")
		if res.Status != "GENERAL_ERROR" {
			t.Fatalf("removing the device left: %d %s, want GENERAL_ERROR", res.StatusCode, res.Body)
		}
	})
}

// ---- RequireFactors and opt-in ----

// With MFA offered but not required, RequireFactors holds a user to TOTP:
// new sign-ins at once, live sessions from their next refresh. A user who
// sets up TOTP of their own accord completes it at each sign-in.
func TestMFARequireFactors(t *testing.T) {
	optIn := auth.Config{MFA: auth.MFAConfig{Factors: []string{auth.FactorTOTP}}}

	t.Run("required by the application", func(t *testing.T) {
		mfModes(t, func(t *testing.T, m authtest.Mode) {
			s := mfServer(t, optIn)
			live, u := s.SignedIn(m)
			mfWantOpen(t, "a sign-up before RequireFactors", live, u.ID)
			mfWantOpen(t, "a sign-in before RequireFactors", mfSignIn(t, s, m, u.Email), u.ID)

			if err := s.Auth.RequireFactors(t.Context(), u.ID, auth.FactorTOTP); err != nil {
				t.Fatalf("RequireFactors: %v", err)
			}
			if res := live.Refresh(); res.StatusCode != http.StatusOK {
				t.Fatalf("refresh: %d %s", res.StatusCode, res.Body)
			}
			mfWantPending(t, "a live session after its refresh", live)

			c := mfSignIn(t, s, m, u.Email)
			mfWantPending(t, "a sign-in after RequireFactors", c)
			if info := mfInfoOf(t, c); !slices.Equal(info.Next, []string{auth.FactorTOTP}) || !slices.Contains(info.AllowedToSetup, auth.FactorTOTP) {
				t.Fatalf("mfa/info: %+v, want next [totp], allowed to set up", info)
			}
			mfSetUp(t, s, c, "phone")
			mfWantOpen(t, "after setting up TOTP", c, u.ID)
		})
	})

	t.Run("chosen by the user", func(t *testing.T) {
		mfModes(t, func(t *testing.T, m authtest.Mode) {
			s := mfServer(t, optIn)
			c, u := s.SignedIn(m)
			other := mfSignIn(t, s, m, u.Email)
			secret := mfSetUp(t, s, c, "phone")
			mfWantOpen(t, "after setting up TOTP", c, u.ID)
			if res := other.Refresh(); res.StatusCode != http.StatusOK {
				t.Fatalf("refresh of another session: %d %s", res.StatusCode, res.Body)
			}
			mfWantPending(t, "another session of the user, after its refresh", other)
			mfSignOut(t, c)

			c = mfSignIn(t, s, m, u.Email)
			mfWantPending(t, "a sign-in after setting up TOTP", c)
			s.Clock.Advance(mfStep)
			if res := c.CompleteTOTP(secret); res.Status != "OK" {
				t.Fatalf("totp/verify: %d %s", res.StatusCode, res.Body)
			}
			mfWantOpen(t, "after the code", c, u.ID)
		})
	})

	t.Run("errors", func(t *testing.T) {
		s := mfServer(t, optIn)
		_, u := s.SignedIn(authtest.Header)
		if err := s.Auth.RequireFactors(t.Context(), "no-such-user", auth.FactorTOTP); !errors.Is(err, auth.ErrNotFound) {
			t.Errorf("RequireFactors of an unknown user: %v, want ErrNotFound", err)
		}
		if err := s.Auth.RequireFactors(t.Context(), u.ID, auth.FactorWebAuthn); err == nil {
			t.Error("RequireFactors of a factor the server does not offer: no error")
		}
		off := authtest.NewServer(t, auth.Config{})
		_, v := off.SignedIn(authtest.Header)
		if err := off.Auth.RequireFactors(t.Context(), v.ID, auth.FactorTOTP); err == nil {
			t.Error("RequireFactors without Config.MFA: no error")
		}
	})
}

// ---- passkeys as the second factor ----

// A password user completes MFA with a passkey: registered as a second
// factor in the session, then asserted at each sign-in; another user's
// passkey completes nothing.
func TestMFAPasskeySecondFactor(t *testing.T) {
	mfModes(t, func(t *testing.T, m authtest.Mode) {
		s := pkServer(t, auth.Config{MFA: auth.MFAConfig{Required: []string{auth.FactorTOTP, auth.FactorWebAuthn}}})
		c, u := s.SignedIn(m)
		mfWantPending(t, "a password sign-up", c)
		if info := mfInfoOf(t, c); !slices.Contains(info.Next, auth.FactorWebAuthn) {
			t.Errorf("mfa/info: %+v, want webauthn next", info)
		}
		handle := handleOf(t, c)

		key := s.NewAuthenticator()
		o := pkRegisterOptions(t, c, u.Email)
		res := pkPost(c, "/webauthn/signup", map[string]any{
			"webauthnGeneratedOptionsId": o.id, "credential": json.RawMessage(pkRegister(t, key, o)),
			"shouldTryLinkingWithSessionUser": true,
		})
		if res.StatusCode != http.StatusOK || res.Status != "OK" || userObject(t, res)["id"] != u.ID {
			t.Fatalf("passkey sign-up as the second factor: %d %s, want OK for user %s", res.StatusCode, res.Body, u.ID)
		}
		if h := mfWantOpen(t, "after the passkey", c, u.ID); h != handle || handleOf(t, c) != handle {
			t.Errorf("the session after the passkey is %s (front-token %s), want the same session %s", h, handleOf(t, c), handle)
		}

		mfSignOut(t, c)
		c = mfSignIn(t, s, m, u.Email)
		mfWantPending(t, "a password sign-in", c)
		handle = handleOf(t, c)
		o = pkSignInOptions(t, c)
		res = pkPost(c, "/webauthn/signin", map[string]any{
			"webauthnGeneratedOptionsId": o.id, "credential": json.RawMessage(pkAssert(t, key, o)),
			"shouldTryLinkingWithSessionUser": true,
		})
		if res.StatusCode != http.StatusOK || res.Status != "OK" || userObject(t, res)["id"] != u.ID {
			t.Fatalf("passkey sign-in as the second factor: %d %s, want OK for user %s", res.StatusCode, res.Body, u.ID)
		}
		if h := mfWantOpen(t, "after the passkey", c, u.ID); h != handle {
			t.Errorf("the session after the passkey is %s, want the same session %s", h, handle)
		}

		strangerKey := s.NewAuthenticator()
		if res := s.NewClient(m).SignUpWithPasskey(strangerKey, s.NewEmail()); res.Status != "OK" {
			t.Fatalf("another user's passkey sign-up: %d %s", res.StatusCode, res.Body)
		}
		c = mfSignIn(t, s, m, u.Email)
		o = pkSignInOptions(t, c)
		res = pkPost(c, "/webauthn/signin", map[string]any{
			"webauthnGeneratedOptionsId": o.id, "credential": json.RawMessage(pkAssert(t, strangerKey, o)),
			"shouldTryLinkingWithSessionUser": true,
		})
		wantReply(t, "another user's passkey as the second factor", res.StatusCode, res.Body, http.StatusOK, `{"status":"INVALID_CREDENTIALS_ERROR"}`)
		if res.IssuedTokens() {
			t.Error("another user's passkey issued tokens")
		}
		mfWantPending(t, "after another user's passkey", c)
	})
}

// A session that signed in with the password alone, of a user who has set
// up TOTP, may not add a passkey to the account through
// /webauthn/credential either: where a passkey meets the requirement,
// a stolen password would otherwise be enough to get in.
func TestMFAPendingSessionAddsNoPasskey(t *testing.T) {
	mfModes(t, func(t *testing.T, m authtest.Mode) {
		s := pkServer(t, auth.Config{MFA: auth.MFAConfig{Required: []string{auth.FactorTOTP, auth.FactorWebAuthn}}})
		c, u := s.SignedIn(m)
		mfSetUp(t, s, c, "phone")

		thief := mfSignIn(t, s, m, u.Email)
		mfWantPending(t, "the thief's password sign-in", thief)
		thiefKey := s.NewAuthenticator()
		o := pkRegisterOptions(t, thief, u.Email)
		res := pkPost(thief, "/webauthn/signup", map[string]any{
			"webauthnGeneratedOptionsId": o.id, "credential": json.RawMessage(pkRegister(t, thiefKey, o)),
			"shouldTryLinkingWithSessionUser": true,
		})
		wantReply(t, "a passkey as a second factor, from a pending session", res.StatusCode, res.Body, http.StatusForbidden, mfSetUpRefusedBody)

		thiefKey = s.NewAuthenticator()
		res = thief.AddPasskey(thiefKey)
		if res.StatusCode != http.StatusForbidden || !strings.Contains(string(res.Body), `"id":"st-mfa"`) {
			t.Errorf("a passkey added by a pending session: %d %s, want 403 st-mfa", res.StatusCode, res.Body)
		}
		if list := c.ListPasskeys(); !strings.Contains(string(list.Body), `"credentials":[]`) {
			t.Errorf("the user's passkeys after the refusal: %s, want none", list.Body)
		}
		if len(thiefKey.Credentials()) > 0 {
			in := s.NewClient(m)
			in.SignInWithPasskey(thiefKey)
			if res := in.Get("/api/session"); res.StatusCode == http.StatusOK {
				t.Errorf("a sign-in with the passkey the pending session added: GET /api/session %d %s, want refused", res.StatusCode, res.Body)
			}
		}
	})
}

// ---- first factors ----

// MFAConfig.FirstFactors limits the factors that start a session: a
// passwordless sign-in is refused, and /loginmethods says so.
func TestMFAFirstFactors(t *testing.T) {
	mfModes(t, func(t *testing.T, m authtest.Mode) {
		s := mfServer(t, auth.Config{
			MFA:          auth.MFAConfig{Required: []string{auth.FactorTOTP}, FirstFactors: []string{auth.FactorEmailPassword}},
			Passwordless: passwordless.Config{Flow: passwordless.Code},
		})
		c := s.NewClient(m)
		res := c.SignInWithCode(s.NewEmail())
		if res.StatusCode != http.StatusUnauthorized || res.Message != "A valid session is required to authenticate with secondary factors" {
			t.Fatalf("a passwordless sign-in: %d %s, want 401", res.StatusCode, res.Body)
		}
		if res.IssuedTokens() {
			t.Error("the refused passwordless sign-in issued tokens")
		}

		res = mfCall(s.NewClient(m), "multitenancy", http.MethodGet, "/auth/loginmethods", nil)
		var body struct {
			Status       string
			FirstFactors []string
			Passwordless struct{ Enabled bool }
		}
		if res.StatusCode != http.StatusOK || json.Unmarshal(res.Body, &body) != nil ||
			!slices.Equal(body.FirstFactors, []string{auth.FactorEmailPassword}) || !body.Passwordless.Enabled {
			t.Fatalf("loginmethods: %d %s, want firstFactors [emailpassword], passwordless enabled", res.StatusCode, res.Body)
		}

		pw, _ := s.SignedIn(m)
		mfWantPending(t, "a password sign-up", pw)
	})
}

// ---- password reset ----

// A password reset leaves the TOTP device: the new password still needs
// the code.
func TestMFAPasswordResetKeepsTOTP(t *testing.T) {
	mfModes(t, func(t *testing.T, m authtest.Mode) {
		s := mfServer(t, auth.Config{})
		c, u := s.SignedIn(m)
		secret := mfSetUp(t, s, c, "phone")

		tok := requestToken(t, s, u.Email, 1)
		const newPassword = "battery staple 2"
		res := s.NewClient(m).ResetPassword(tok, newPassword)
		wantReply(t, "reset", res.StatusCode, res.Body, http.StatusOK, okBody)

		c = mfSignInWith(t, s, m, u.Email, newPassword)
		mfWantPending(t, "a sign-in with the new password", c)
		if info := mfInfoOf(t, c); !slices.Equal(info.Next, []string{auth.FactorTOTP}) || !slices.Contains(info.AlreadySetup, auth.FactorTOTP) {
			t.Errorf("mfa/info after the reset: %+v, want totp set up and next", info)
		}
		s.Clock.Advance(mfStep)
		if res := c.CompleteTOTP(secret); res.Status != "OK" {
			t.Fatalf("totp/verify with the device of before the reset: %d %s", res.StatusCode, res.Body)
		}
		mfWantOpen(t, "after the code", c, u.ID)
	})
}

// ---- the record of second factors ----

// A user's second factors are kept beside their login methods, but are
// none: the sign-in answer's user object and UserByID list the password
// alone, the user is no primary user for it, and PUT /mfa/info does not
// count it as a password.
func TestMFASecondFactorsAreNoLoginMethod(t *testing.T) {
	t.Run("password user", func(t *testing.T) {
		mfModes(t, func(t *testing.T, m authtest.Mode) {
			s := mfServer(t, auth.Config{AccountLinking: true})
			c, u := s.SignedIn(m)
			mfSetUp(t, s, c, "phone")

			c = s.NewClient(m)
			res := c.SignIn(u.Email, authtest.Password)
			user := userObject(t, res)
			methods := loginMethodsOf(t, user)
			if len(methods) != 1 || methods[0]["recipeId"] != "emailpassword" {
				t.Errorf("the sign-in answer's loginMethods: %v, want the emailpassword method alone", methods)
			}
			if user["isPrimaryUser"] != false {
				t.Errorf("the sign-in answer's isPrimaryUser: %v, want false for one login with an unverified email", user["isPrimaryUser"])
			}
			got, err := s.Auth.UserByID(t.Context(), u.ID)
			if err != nil {
				t.Fatal(err)
			}
			if len(got.LoginMethods) != 1 || got.LoginMethods[0].Method != store.MethodEmailPassword {
				t.Errorf("UserByID's LoginMethods: %+v, want the emailpassword method alone", got.LoginMethods)
			}
		})
	})

	t.Run("passkey user", func(t *testing.T) {
		mfModes(t, func(t *testing.T, m authtest.Mode) {
			s := pkServer(t, auth.Config{MFA: auth.MFAConfig{Factors: []string{auth.FactorTOTP}}})
			c := s.NewClient(m)
			if res := c.SignUpWithPasskey(s.NewAuthenticator(), s.NewEmail()); res.Status != "OK" {
				t.Fatalf("passkey sign-up: %d %s", res.StatusCode, res.Body)
			}
			mfSetUp(t, s, c, "phone")
			info := mfInfoOf(t, c)
			if slices.Contains(info.AlreadySetup, auth.FactorEmailPassword) || !slices.Contains(info.AlreadySetup, auth.FactorWebAuthn) ||
				!slices.Contains(info.AlreadySetup, auth.FactorTOTP) {
				t.Errorf("mfa/info of a user without a password: alreadySetup %v, want webauthn and totp, no emailpassword", info.AlreadySetup)
			}
		})
	})
}

// ---- events ----

// The MFA events name the user, the session where there is one, and the
// factor.
func TestMFAEvents(t *testing.T) {
	mfModes(t, func(t *testing.T, m authtest.Mode) {
		events := newEventLog()
		s := mfServer(t, auth.Config{OnEvent: events.record})
		c, u := s.SignedIn(m)
		handle := handleOf(t, c)
		want := func(kind auth.EventKind, n int, method, session string) {
			t.Helper()
			got := events.of(kind)
			if len(got) != n {
				t.Fatalf("%d %s events, want %d: %+v", len(got), kind, n, got)
			}
			e := got[n-1]
			if e.UserID != u.ID || e.Method != method || e.SessionHandle != session {
				t.Errorf("%s event %+v, want user %s, method %q, session %q", kind, e, u.ID, method, session)
			}
		}

		mfSetUp(t, s, c, "phone")
		want(auth.EventFactorAdded, 1, auth.FactorTOTP, handle)
		want(auth.EventFactorCompleted, 1, auth.FactorTOTP, handle)
		s.Clock.Advance(mfStep)
		codesSecret := mfSetUp(t, s, c, "tablet")
		want(auth.EventFactorAdded, 2, auth.FactorTOTP, handle)
		if res := mfRemoveDevice(c, "phone"); res.Status != "OK" {
			t.Fatalf("removing a device: %d %s", res.StatusCode, res.Body)
		}
		want(auth.EventFactorRemoved, 1, auth.FactorTOTP, handle)

		codes := mfRecoveryCodes(t, c)
		want(auth.EventRecoveryCodesCreated, 1, "", handle)
		rc := mfSignIn(t, s, m, u.Email)
		if res := rc.UseRecoveryCode(codes[0]); res.Status != "OK" {
			t.Fatalf("a recovery code: %d %s", res.StatusCode, res.Body)
		}
		want(auth.EventRecoveryCodeUsed, 1, "", handleOf(t, rc))
		want(auth.EventFactorCompleted, 3, auth.FactorRecoveryCode, handleOf(t, rc))

		if err := s.Auth.RequireFactors(t.Context(), u.ID, auth.FactorTOTP); err != nil {
			t.Fatal(err)
		}
		want(auth.EventFactorsRequired, 1, "", "")

		guesser := mfSignIn(t, s, m, u.Email)
		s.Clock.Advance(mfStep)
		wrong := mfWrongCode(codesSecret, s.Clock.Now())
		for range mfMaxFailures + 1 {
			guesser.VerifyTOTP(wrong)
		}
		if got := events.of(auth.EventFactorFailed); len(got) != mfMaxFailures || got[0].UserID != u.ID || got[0].Method != auth.FactorTOTP {
			t.Errorf("factor_failed events %+v, want %d for user %s, method totp", got, mfMaxFailures, u.ID)
		}
		want(auth.EventMFALocked, 1, "", "")
	})
}
