package main

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/latchkit/auth/authtest"
)

// -admin is repeatable, DEMO_ADMIN is its comma-separated twin, and
// either turns roles on.
func TestParseOptionsAdmin(t *testing.T) {
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	o, err := parseOptions(nil, getenv)
	if err != nil || o.admins != nil || o.roles != nil || rolesOf(o) != nil {
		t.Fatalf("default: %q, %v, %v; want no admins and roles off", o.admins, o.roles, err)
	}
	o, err = parseOptions([]string{"-admin", " Ada@Example.com", "-admin", "bob@example.com", "-admin", "ada@example.com"}, getenv)
	if err != nil || !reflect.DeepEqual(o.admins, []string{"ada@example.com", "bob@example.com"}) || o.roles == nil {
		t.Errorf("-admin twice: %q, %v", o.admins, err)
	}
	env["DEMO_ADMIN"] = "carol@example.com, dan@example.com"
	if o, _ := parseOptions(nil, getenv); !reflect.DeepEqual(o.admins, []string{"carol@example.com", "dan@example.com"}) {
		t.Errorf("DEMO_ADMIN: %q", o.admins)
	}
	if o, _ := parseOptions([]string{"-admin", "ada@example.com"}, getenv); !reflect.DeepEqual(o.admins, []string{"ada@example.com"}) {
		t.Errorf("-admin over DEMO_ADMIN: %q", o.admins)
	}
}

// With -admin, the admin's session carries the role from sign-up on,
// /api/me lists roles and permissions, and /api/admin lets the admin in
// and answers anyone else the SDKs' 403.
func TestAdmin(t *testing.T) {
	d := newTestDemo(t, nil, "-admin", "ada@example.com")
	if !strings.Contains(printAdmins(d.o), "ada@example.com gets the role admin") {
		t.Errorf("the start-up line: %q", printAdmins(d.o))
	}
	ada, _ := okSession(t, "the admin's sign-up", d.do("POST", "/auth/signup", "emailpassword", "", credentials("ada@example.com", authtest.Password)))
	bob, _ := okSession(t, "another sign-up", d.do("POST", "/auth/signup", "emailpassword", "", credentials("bob@example.com", authtest.Password)))

	me := d.do("GET", "/api/me", "", ada, nil)
	var got struct {
		Roles, Permissions []string
	}
	if json.Unmarshal(me.body, &got); me.status != http.StatusOK || !reflect.DeepEqual(got.Roles, []string{"admin"}) ||
		!reflect.DeepEqual(got.Permissions, demoPermissions) {
		t.Errorf("the admin's /api/me: %d %s", me.status, me.body)
	}
	if res := d.do("GET", "/api/admin", "", ada, nil); res.status != http.StatusOK {
		t.Errorf("the admin's /api/admin: %d %s", res.status, res.body)
	}
	me = d.do("GET", "/api/me", "", bob, nil)
	if json.Unmarshal(me.body, &got); me.status != http.StatusOK || len(got.Roles) != 0 || got.Roles == nil {
		t.Errorf("another user's /api/me: %d %s, want roles []", me.status, me.body)
	}
	res := d.do("GET", "/api/admin", "", bob, nil)
	want := `{"message":"invalid claim","claimValidationErrors":[{"id":"st-role","reason":{"message":"wrong value","expectedToInclude":"admin","actualValue":[]}}]}`
	if res.status != http.StatusForbidden || strings.TrimSpace(string(res.body)) != want {
		t.Errorf("another user's /api/admin: %d %s, want 403 %s", res.status, res.body, want)
	}
	if cfg := d.do("GET", "/api/config", "", "", nil); cfg.json["roles"] != true {
		t.Errorf("/api/config: %s, want roles true", cfg.body)
	}
}

// Without -admin, /api/me has no roles, /api/admin is not served.
func TestNoAdmin(t *testing.T) {
	d := newTestDemo(t, nil)
	access, _ := okSession(t, "sign-up", d.do("POST", "/auth/signup", "emailpassword", "", credentials("ada@example.com", authtest.Password)))
	if me := d.do("GET", "/api/me", "", access, nil); me.status != http.StatusOK || strings.Contains(string(me.body), "roles") {
		t.Errorf("/api/me without -admin: %d %s", me.status, me.body)
	}
	if res := d.do("GET", "/api/admin", "", access, nil); res.status != http.StatusNotFound {
		t.Errorf("/api/admin without -admin: %d", res.status)
	}
}

// Where emails are verified, an admin's address gives the role only once
// it is verified: a sign-up with it alone opens nothing.
func TestAdminNeedsVerifiedEmail(t *testing.T) {
	d := newTestDemo(t, nil, "-admin", "ada@example.com", "-email-verification", "optional")
	access, refresh := okSession(t, "the sign-up", d.do("POST", "/auth/signup", "emailpassword", "", credentials("ada@example.com", authtest.Password)))
	if res := d.do("GET", "/api/admin", "", access, nil); res.status != http.StatusForbidden {
		t.Errorf("/api/admin with an unverified admin's email: %d %s, want 403", res.status, res.body)
	}
	if r := d.do("POST", "/auth/user/email/verify/token", "emailverification", access, nil); r.field("status") != "OK" {
		t.Fatalf("send: %d %s", r.status, r.body)
	}
	token := d.verificationLink("ada@example.com").Query().Get("token")
	if v := d.do("POST", "/auth/user/email/verify", "emailverification", "", map[string]string{"method": "token", "token": token}); v.field("status") != "OK" {
		t.Fatalf("verify: %d %s", v.status, v.body)
	}
	access, _ = okSession(t, "the refresh", d.do("POST", "/auth/session/refresh", "session", refresh, nil))
	if res := d.do("GET", "/api/admin", "", access, nil); res.status != http.StatusOK {
		t.Errorf("/api/admin once verified and refreshed: %d %s", res.status, res.body)
	}
}
