package main

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/latchkit/auth/authtest"
)

// The admin page's API, with -admin: an admin finds a user, sees them,
// gives a role, bans them (their refresh is refused) and lifts the ban,
// acts as another user (whose /api/me then names the admin as operator)
// and stops, and reads the audit log of it; anyone else gets the SDKs'
// 403.
func TestOperators(t *testing.T) {
	d := newTestDemo(t, nil, "-admin", "ada@example.com")
	ada, _ := okSession(t, "the admin's sign-up", d.do("POST", "/auth/signup", "emailpassword", "", credentials("ada@example.com", authtest.Password)))
	bob, bobRefresh := okSession(t, "bob's sign-up", d.do("POST", "/auth/signup", "emailpassword", "", credentials("bob@example.com", authtest.Password)))
	okSession(t, "carol's sign-up", d.do("POST", "/auth/signup", "emailpassword", "", credentials("carol@example.com", authtest.Password)))

	if res := d.do("GET", "/api/admin/users", "", bob, nil); res.status != http.StatusForbidden {
		t.Errorf("a user who is no admin: %d %s, want 403", res.status, res.body)
	}
	list := d.do("GET", "/api/admin/users?email="+url.QueryEscape("bob@"), "", ada, nil)
	var users struct {
		Users []struct{ ID, Email string }
	}
	if json.Unmarshal(list.body, &users); list.status != http.StatusOK || len(users.Users) != 1 || users.Users[0].Email != "bob@example.com" {
		t.Fatalf("find bob: %d %s", list.status, list.body)
	}
	bobID := users.Users[0].ID
	if res := d.do("GET", "/api/admin/users/nobody", "", ada, nil); res.status != http.StatusNotFound {
		t.Errorf("an unknown user: %d %s, want 404", res.status, res.body)
	}
	opWant(t, "give bob the role admin", d.do("POST", "/api/admin/users/"+bobID+"/roles", "", ada, map[string]string{"role": "admin"}), 200)
	opWant(t, "a role that does not exist", d.do("POST", "/api/admin/users/"+bobID+"/roles", "", ada, map[string]string{"role": "nope"}), 400)
	opWant(t, "take it back", d.do("POST", "/api/admin/users/"+bobID+"/roles/admin/remove", "", ada, nil), 200)

	opWant(t, "ban bob", d.do("POST", "/api/admin/users/"+bobID+"/ban", "", ada, map[string]any{"reason": "spam", "minutes": 0}), 200)
	if res := d.do("POST", "/auth/session/refresh", "session", bobRefresh, nil); res.status != http.StatusUnauthorized || res.header.Get("Auth-Reason") != "banned" {
		t.Errorf("bob's refresh after the ban: %d %s (%s)", res.status, res.body, res.header.Get("Auth-Reason"))
	}
	signIn := d.do("POST", "/auth/signin", "emailpassword", "", credentials("bob@example.com", authtest.Password))
	if signIn.field("status") != "SIGN_IN_NOT_ALLOWED" {
		t.Errorf("bob's sign-in while banned: %d %s", signIn.status, signIn.body)
	}
	if res := d.do("GET", "/api/admin/users/"+bobID, "", ada, nil); !strings.Contains(string(res.body), `"reason":"spam"`) {
		t.Errorf("bob's page while banned: %d %s", res.status, res.body)
	}
	opWant(t, "lift the ban", d.do("POST", "/api/admin/users/"+bobID+"/unban", "", ada, nil), 200)
	okSession(t, "bob's sign-in after", d.do("POST", "/auth/signin", "emailpassword", "", credentials("bob@example.com", authtest.Password)))

	acting := d.do("POST", "/api/admin/users/"+bobID+"/impersonate", "", ada, nil)
	asBob := acting.header.Get("St-Access-Token")
	if acting.status != http.StatusOK || asBob == "" {
		t.Fatalf("act as bob: %d %s", acting.status, acting.body)
	}
	me := d.do("GET", "/api/me", "", asBob, nil)
	if me.field("email") != "bob@example.com" || me.field("operator") == "" {
		t.Errorf("/api/me while acting as bob: %s", me.body)
	}
	stop := d.do("POST", "/api/impersonation/stop", "", asBob, nil)
	if stop.status != http.StatusOK || stop.json["restored"] != true {
		t.Fatalf("stop: %d %s", stop.status, stop.body)
	}
	if me := d.do("GET", "/api/me", "", stop.header.Get("St-Access-Token"), nil); me.field("email") != "ada@example.com" {
		t.Errorf("/api/me after stopping: %s", me.body)
	}

	audit := d.do("GET", "/api/admin/audit?user="+bobID, "", ada, nil)
	for _, kind := range []string{"role_given", "role_taken", "user_banned", "user_unbanned", "sign_in_banned", "impersonation_started", "impersonation_ended"} {
		if !strings.Contains(string(audit.body), `"Kind":"`+kind+`"`) {
			t.Errorf("bob's audit log lacks %s: %s", kind, audit.body)
		}
	}
}

func opWant(t *testing.T, what string, r reply, status int) {
	t.Helper()
	if r.status != status {
		t.Errorf("%s: %d %s, want %d", what, r.status, r.body, status)
	}
}
