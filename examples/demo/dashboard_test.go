package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/dashboard"
)

const demoKey = "demo-dashboard-key-0123456789"

// -admin-api-key serves the dashboard's shell and its API to the key's
// holder, and to the sessions of -admin's users.
func TestDashboard(t *testing.T) {
	d := newTestDemo(t, nil, "-admin-api-key", demoKey, "-admin", "ada@example.com")
	if !strings.Contains(printAdmins(d.o), "/auth/dashboard") {
		t.Errorf("the start-up lines do not say where the dashboard is: %q", printAdmins(d.o))
	}
	shell := d.do("GET", "/auth/dashboard", "", "", nil)
	if shell.status != http.StatusOK || !strings.Contains(string(shell.body), `window.authMode = "api-key"`) ||
		!strings.Contains(string(shell.body), dashboard.DefaultBundleURL+"static/js/bundle.js") {
		t.Fatalf("the shell: %d %s", shell.status, shell.body)
	}
	ada, _ := okSession(t, "the admin's sign-up", d.do("POST", "/auth/signup", "emailpassword", "", credentials("ada@example.com", authtest.Password)))
	bob, _ := okSession(t, "another sign-up", d.do("POST", "/auth/signup", "emailpassword", "", credentials("bob@example.com", authtest.Password)))
	for _, tc := range []struct {
		name, bearer string
		want         int
	}{
		{"the key", demoKey, http.StatusOK},
		{"the admin's session", ada, http.StatusOK},
		{"another user's session", bob, http.StatusForbidden},
		{"a wrong key", demoKey + "x", http.StatusUnauthorized},
		{"nothing", "", http.StatusUnauthorized},
	} {
		res := d.do("GET", "/auth/dashboard/api/users?limit=10", "", tc.bearer, nil)
		if res.status != tc.want {
			t.Errorf("users with %s: %d %s, want %d", tc.name, res.status, res.body, tc.want)
		}
		if tc.want == http.StatusOK && !strings.Contains(string(res.body), `"ada@example.com"`) {
			t.Errorf("users with %s: %s, want ada among them", tc.name, res.body)
		}
	}
}

// -dashboard-bundle, or its environment twin, moves the app's build;
// without -admin-api-key there is no dashboard.
func TestDashboardOptions(t *testing.T) {
	d := newTestDemo(t, nil, "-admin-api-key", demoKey, "-dashboard-bundle", "https://assets.example.com/dashboard/")
	if shell := d.do("GET", "/auth/dashboard/", "", "", nil); !strings.Contains(string(shell.body), `src="https://assets.example.com/dashboard/static/js/bundle.js"`) {
		t.Errorf("the shell with -dashboard-bundle: %d %s", shell.status, shell.body)
	}
	env := map[string]string{"DEMO_ADMIN_API_KEY": demoKey, "DEMO_DASHBOARD_BUNDLE": "/static/dashboard/"}
	o, err := parseOptions(nil, func(k string) string { return env[k] })
	if err != nil || o.dashboard == nil || dashboardOf(o) == nil {
		t.Errorf("DEMO_ADMIN_API_KEY: %v, %v", o.dashboard, err)
	}
	off := newTestDemo(t, nil)
	if res := off.do("GET", "/auth/dashboard", "", "", nil); res.status != http.StatusNotFound {
		t.Errorf("the dashboard without -admin-api-key: %d", res.status)
	}
	if dashboardOf(off.o) != nil {
		t.Error("dashboardOf without -admin-api-key is not nil")
	}
}
