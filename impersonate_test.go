package auth_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/dashboard"
	"github.com/latchkit/auth/roles"
	"github.com/latchkit/auth/store"
)

// impFixture is a server with MFA (TOTP and passkeys offered), the email
// change, roles, impersonation and the audit log, an operator who holds
// the permission (signed in, in the mode under test), and a user. The
// application's routes: POST /admin/impersonate?user= and
// /admin/stop call the Go API; GET /api/operator says who is acting.
type impFixture struct {
	s        *authtest.Server
	roles    *roles.Recipe
	events   *eventLog
	op, user auth.User
	opClient *authtest.Client
}

func newImpFixture(t *testing.T, m authtest.Mode, imp auth.ImpersonationConfig) *impFixture {
	return newImpFixtureMFA(t, m, imp, auth.MFAConfig{Factors: []string{auth.FactorTOTP, auth.FactorWebAuthn}})
}

func newImpFixtureMFA(t *testing.T, m authtest.Mode, imp auth.ImpersonationConfig, mfa auth.MFAConfig) *impFixture {
	return newImpFixtureWith(t, m, imp, auth.Config{MFA: mfa})
}

// newImpFixtureWith is newImpFixture on cfg.
func newImpFixtureWith(t *testing.T, m authtest.Mode, imp auth.ImpersonationConfig, cfg auth.Config) *impFixture {
	t.Helper()
	f := &impFixture{roles: roles.New(roles.Config{}), events: newEventLog()}
	imp.Enabled = true
	cfg.Roles, cfg.Impersonation, cfg.Audit, cfg.OnEvent = f.roles, imp, auth.AuditConfig{Enabled: true}, f.events.record
	cfg.EmailChange.Enabled = true
	f.s = pkServer(t, cfg)
	a := f.s.Auth
	f.s.Mux.HandleFunc("POST /admin/impersonate", func(w http.ResponseWriter, r *http.Request) {
		if err := a.Impersonate(w, r, r.URL.Query().Get("user")); err != nil {
			impAnswerError(w, err)
		}
	})
	f.s.Mux.HandleFunc("POST /admin/stop", func(w http.ResponseWriter, r *http.Request) {
		if err := a.StopImpersonating(w, r); err != nil {
			impAnswerError(w, err)
		}
	})
	f.s.Mux.Handle("GET /api/operator", a.RequireSession(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sess, _ := auth.SessionFromContext(r.Context())
		json.NewEncoder(w).Encode(map[string]string{"userId": sess.UserID, "operator": sess.Operator})
	})))
	f.s.Mux.Handle("POST /api/sensitive", a.RequireSession(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte("done"))
	}), auth.SignedInWithin(time.Hour)))
	ctx := t.Context()
	if _, err := f.roles.CreateRole(ctx, "support", "users:impersonate"); err != nil {
		t.Fatal(err)
	}
	f.opClient, f.op = f.s.SignedInVerified(m)
	if _, err := f.roles.Give(ctx, f.op.ID, "support"); err != nil {
		t.Fatal(err)
	}
	_, f.user = f.s.SignedInVerified(authtest.Header)
	return f
}

// impAnswerError is how the fixture's application answers the Go API's
// refusals.
func impAnswerError(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	switch {
	case errors.Is(err, auth.ErrForbidden), errors.Is(err, auth.ErrNotImpersonating), errors.Is(err, store.ErrBanned):
		code = http.StatusForbidden
	case errors.Is(err, auth.ErrNotFound):
		code = http.StatusNotFound
	case errors.Is(err, auth.ErrUnauthorized), errors.Is(err, auth.ErrTryRefreshToken):
		code = http.StatusUnauthorized
	}
	http.Error(w, err.Error(), code)
}

// acting returns who c's session is, and the operator acting as them.
func acting(t *testing.T, c *authtest.Client) (userID, operator string) {
	t.Helper()
	res := c.Get("/api/operator")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/operator: %d %s", res.StatusCode, res.Body)
	}
	u, _ := res.JSON["userId"].(string)
	op, _ := res.JSON["operator"].(string)
	return u, op
}

// An operator with the permission acts as a user: the session is the
// user's, says who started it, and is refused every route that changes
// how the user gets in; its events name the operator, in the audit log
// too. Stopping gives the operator's own session back.
func TestImpersonate(t *testing.T) {
	mfModes(t, func(t *testing.T, m authtest.Mode) {
		f := newImpFixture(t, m, auth.ImpersonationConfig{})
		c := f.opClient
		res := c.Do(http.MethodPost, "/admin/impersonate?user="+f.user.ID, nil)
		if res.StatusCode != http.StatusOK || res.Status != "OK" || !res.IssuedTokens() {
			t.Fatalf("impersonate: %d %s", res.StatusCode, res.Body)
		}
		if u, op := acting(t, c); u != f.user.ID || op != f.op.ID {
			t.Fatalf("the session after impersonating: user %s, operator %s; want %s, %s", u, op, f.user.ID, f.op.ID)
		}
		impWantRefusals(t, f.s, c)
		if res := c.Refresh(); res.StatusCode != http.StatusOK {
			t.Fatalf("refresh within the impersonation: %d %s", res.StatusCode, res.Body)
		}
		if refreshes := f.events.of(auth.EventRefresh); len(refreshes) == 0 || refreshes[len(refreshes)-1].Operator != f.op.ID {
			t.Errorf("the impersonation's refresh event names no operator: %+v", refreshes)
		}

		res = c.Do(http.MethodPost, "/admin/stop", nil)
		if res.StatusCode != http.StatusOK || res.JSON["restored"] != true {
			t.Fatalf("stop: %d %s", res.StatusCode, res.Body)
		}
		if u, op := acting(t, c); u != f.op.ID || op != "" {
			t.Errorf("the session after stopping: user %s, operator %q; want the operator's own", u, op)
		}
		if res := c.Do(http.MethodPost, "/admin/stop", nil); res.StatusCode != http.StatusForbidden {
			t.Errorf("stop with the operator's own session: %d %s, want 403", res.StatusCode, res.Body)
		}
		kinds, entries := auditKinds(t, f.s.Auth, store.AuditQuery{Actor: f.op.ID})
		want := map[string]bool{"impersonation_started": false, "impersonation_ended": false}
		for i, k := range kinds {
			if _, ok := want[k]; ok {
				want[k] = entries[i].UserID == f.user.ID
			}
		}
		if !want["impersonation_started"] || !want["impersonation_ended"] {
			t.Errorf("the audit log by the operator: %v; want both impersonation events about the user", kinds)
		}
	})
}

// Without MFA a session's sign-in is as fresh as its start, but an
// operator's session as the user is never fresh.
func TestImpersonationNeverFresh(t *testing.T) {
	mfModes(t, func(t *testing.T, m authtest.Mode) {
		f := newImpFixtureMFA(t, m, auth.ImpersonationConfig{}, auth.MFAConfig{})
		c := f.opClient
		if res := c.Do(http.MethodPost, "/api/sensitive", nil); res.StatusCode != http.StatusOK {
			t.Fatalf("the operator's own fresh session: %d %s", res.StatusCode, res.Body)
		}
		if res := c.Do(http.MethodPost, "/admin/impersonate?user="+f.user.ID, nil); res.StatusCode != http.StatusOK {
			t.Fatalf("impersonate: %d %s", res.StatusCode, res.Body)
		}
		const refusal = `{"message":"Not allowed while an operator acts as this user."}`
		res := c.Do(http.MethodPost, "/auth/user/password/change", map[string]any{"formFields": []any{}})
		wantReply(t, "password change", res.StatusCode, res.Body, http.StatusForbidden, refusal)
		res = c.Do(http.MethodPost, "/api/sensitive", nil)
		if res.StatusCode != http.StatusForbidden || !strings.Contains(string(res.Body), `"st-fresh"`) {
			t.Errorf("an application route with SignedInWithin: %d %s, want 403 st-fresh", res.StatusCode, res.Body)
		}
	})
}

// An operator acting as a user who may use the dashboard's API may not:
// the user's permissions are not the operator's.
func TestImpersonationOpensNoDashboard(t *testing.T) {
	mfModes(t, func(t *testing.T, m authtest.Mode) {
		f := newImpFixtureWith(t, m, auth.ImpersonationConfig{}, auth.Config{Dashboard: dashboard.New(dashboard.Config{Permission: "users:list"})})
		ctx := t.Context()
		if _, err := f.roles.CreateRole(ctx, "viewer", "users:list"); err != nil {
			t.Fatal(err)
		}
		if _, err := f.roles.Give(ctx, f.user.ID, "viewer"); err != nil {
			t.Fatal(err)
		}
		userClient := f.s.NewClient(m)
		wantOK(t, "the user's own sign-in", userClient.SignIn(f.user.Email, authtest.Password))
		users := func(c *authtest.Client) int {
			if m == authtest.Cookie {
				// The dashboard app always sends one; a cookie counts only
				// beside it.
				c.Header.Set("Authorization", "Bearer -")
				defer c.Header.Del("Authorization")
			}
			return c.Get("/auth/dashboard/api/users/count").StatusCode
		}
		if got := users(userClient); got != http.StatusOK {
			t.Fatalf("the user's own session at the dashboard's API: %d, want 200", got)
		}
		if res := f.opClient.Do(http.MethodPost, "/admin/impersonate?user="+f.user.ID, nil); res.StatusCode != http.StatusOK {
			t.Fatalf("impersonate: %d %s", res.StatusCode, res.Body)
		}
		if got := users(f.opClient); got != http.StatusUnauthorized {
			t.Errorf("the operator acting as the user at the dashboard's API: %d, want 401", got)
		}
	})
}

// impWantRefusals checks that an impersonation session c is refused what
// would change how its user gets in, and changes nothing.
func impWantRefusals(t *testing.T, s *authtest.Server, c *authtest.Client) {
	t.Helper()
	const refusal = `{"message":"Not allowed while an operator acts as this user."}`
	for what, res := range map[string]*authtest.Response{
		"password change":  c.Do(http.MethodPost, "/auth/user/password/change", map[string]any{"formFields": []any{}}),
		"email change":     c.Do(http.MethodPost, "/auth/user/email/change", map[string]string{"email": "new@example.com"}),
		"TOTP device":      c.CreateTOTPDevice("phone"),
		"recovery codes":   c.NewRecoveryCodes(),
		"add a passkey":    c.AddPasskey(s.NewAuthenticator()),
		"remove a passkey": c.RemovePasskey("any"),
		"remove a device":  acRemoveDevice(c, "phone"),
	} {
		wantReply(t, what, res.StatusCode, res.Body, http.StatusForbidden, refusal)
	}
	if devices := mfDevices(t, c); len(devices) != 0 {
		t.Errorf("TOTP devices after the refusals: %v", devices)
	}
	// The application's routes that ask for a fresh sign-in refuse it too.
	res := c.Do(http.MethodPost, "/api/sensitive", nil)
	if res.StatusCode != http.StatusForbidden || !strings.Contains(string(res.Body), `"st-fresh"`) {
		t.Errorf("an application route with SignedInWithin: %d %s, want 403 st-fresh", res.StatusCode, res.Body)
	}
}

// The impersonation ends at its Lifetime, refreshes or not: its access
// token expires by then, and a refresh after is refused.
func TestImpersonationEnds(t *testing.T) {
	mfModes(t, func(t *testing.T, m authtest.Mode) {
		f := newImpFixture(t, m, auth.ImpersonationConfig{Lifetime: 10 * time.Minute})
		c := f.opClient
		if res := c.Do(http.MethodPost, "/admin/impersonate?user="+f.user.ID, nil); res.StatusCode != http.StatusOK {
			t.Fatalf("impersonate: %d %s", res.StatusCode, res.Body)
		}
		f.s.Clock.Advance(9 * time.Minute)
		if res := c.Refresh(); res.StatusCode != http.StatusOK {
			t.Fatalf("refresh at 9 minutes: %d %s", res.StatusCode, res.Body)
		}
		f.s.Clock.Advance(time.Minute)
		if res := c.Get("/api/operator"); res.StatusCode != http.StatusUnauthorized {
			t.Errorf("the access token at the end: %d %s, want 401", res.StatusCode, res.Body)
		}
		want401(t, "refresh at the end", c.Refresh(), "unauthorised", auth.ReasonSessionExpired)
		if ended := f.events.of(auth.EventImpersonationEnded); len(ended) != 1 || ended[0].Operator != f.op.ID {
			t.Errorf("impersonation_ended events: %+v", ended)
		}
	})
}

// Impersonate refuses an operator without the permission, another
// operator unless AllowOperators, the operator themselves, an
// impersonation session, a banned user and an unknown one.
func TestImpersonateRefusals(t *testing.T) {
	mfModes(t, func(t *testing.T, m authtest.Mode) {
		f := newImpFixture(t, m, auth.ImpersonationConfig{})
		ctx := t.Context()
		impersonate := func(c *authtest.Client, id string) int {
			return c.Do(http.MethodPost, "/admin/impersonate?user="+id, nil).StatusCode
		}
		plain, _ := f.s.SignedInVerified(m)
		other, otherOp := f.s.SignedInVerified(m)
		if _, err := f.roles.Give(ctx, otherOp.ID, "support"); err != nil {
			t.Fatal(err)
		}
		for what, got := range map[string]int{
			"without the permission": impersonate(plain, f.user.ID),
			"another operator":       impersonate(f.opClient, otherOp.ID),
			"oneself":                impersonate(f.opClient, f.op.ID),
			"an unknown user":        impersonate(f.opClient, "nobody"),
			"without a session":      impersonate(f.s.NewClient(m), f.user.ID),
		} {
			want := map[string]int{"an unknown user": 404, "without a session": 401}[what]
			if want == 0 {
				want = http.StatusForbidden
			}
			if got != want {
				t.Errorf("impersonate %s: %d, want %d", what, got, want)
			}
		}
		if err := f.s.Auth.BanUser(ctx, f.user.ID, auth.Ban{}); err != nil {
			t.Fatal(err)
		}
		if got := impersonate(other, f.user.ID); got != http.StatusForbidden {
			t.Errorf("impersonate a banned user: %d, want 403", got)
		}
		if err := f.s.Auth.UnbanUser(ctx, f.user.ID, ""); err != nil {
			t.Fatal(err)
		}
		if got := impersonate(other, f.user.ID); got != http.StatusOK {
			t.Fatalf("impersonate once unbanned: %d", got)
		}
		if got := impersonate(other, f.op.ID); got != http.StatusForbidden {
			t.Errorf("impersonate from an impersonation: %d, want 403", got)
		}
	})
}

// With AllowOperators an operator may act as another; without
// Config.Impersonation the Go API says it is off.
func TestImpersonateConfig(t *testing.T) {
	f := newImpFixture(t, authtest.Header, auth.ImpersonationConfig{AllowOperators: true})
	_, otherOp := f.s.SignedInVerified(authtest.Header)
	if _, err := f.roles.Give(t.Context(), otherOp.ID, "support"); err != nil {
		t.Fatal(err)
	}
	if res := f.opClient.Do(http.MethodPost, "/admin/impersonate?user="+otherOp.ID, nil); res.StatusCode != http.StatusOK {
		t.Errorf("impersonate another operator with AllowOperators: %d %s", res.StatusCode, res.Body)
	}
	s := authtest.NewServer(t, auth.Config{})
	req, _ := http.NewRequest(http.MethodPost, "/", nil)
	if err := s.Auth.Impersonate(nil, req, "u"); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("Impersonate without Config.Impersonation: %v, want errors.ErrUnsupported", err)
	}
}
