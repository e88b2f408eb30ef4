package main

import (
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

// hostRoute is a request the host check must stop for a foreign Host and
// let through for the demo's own, and what a good answer is.
type hostRoute struct {
	method, path, rid string
	body              any
	ok                func(reply) bool
}

func hostRoutes(email, password string) []hostRoute {
	status200 := func(r reply) bool { return r.status == http.StatusOK }
	statusOK := func(r reply) bool { return r.status == http.StatusOK && r.field("status") == "OK" }
	return []hostRoute{
		{"GET", "/dev/outbox.json", "", nil, func(r reply) bool { return status200(r) && r.json["emails"] != nil }},
		{"POST", "/auth/user/password/reset/token", "emailpassword",
			map[string]any{"formFields": []map[string]string{{"id": "email", "value": email}}}, statusOK},
		{"POST", "/auth/signin", "emailpassword", credentials(email, password), statusOK},
		{"GET", "/", "", nil, func(r reply) bool { return status200(r) && strings.Contains(string(r.body), "<html") }},
	}
}

// sendAs sends route as a page at origin would, same-origin, to Host host.
func (d *testDemo) sendAs(host, origin string, route hostRoute) reply {
	d.t.Helper()
	req := d.request(route.method, route.path, route.rid, "", route.body)
	req.Host = host
	req.Header.Set("Origin", origin)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	return d.send(req)
}

// TestDevHosts checks that a -dev demo answers only the hosts it serves:
// a page that rebinds its own name to 127.0.0.1 (DNS rebinding) gets 421
// on every route, the outbox and the auth API included, while the
// loopback names on the demo's port and the app URL's host work.
func TestDevHosts(t *testing.T) {
	for _, args := range [][]string{
		{"-dev"}, // the app URL is http://localhost:PORT
		{"-dev", "-app-url", "https://dev.example"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			d := newTestDemo(t, nil, args...)
			port := mustPort(t, d.url)
			app, _ := url.Parse(d.o.appURL)
			const ada, password = "ada@example.com", "correct horse 1"
			okSession(t, "sign-up", d.do("POST", "/auth/signup", "emailpassword", "", credentials(ada, password)))

			origin := func(host string) string {
				if strings.EqualFold(host, app.Host) {
					return app.Scheme + "://" + host
				}
				return "http://" + host
			}
			served := []string{"localhost:" + port, "127.0.0.1:" + port, "[::1]:" + port, app.Host, strings.ToUpper(app.Host)}
			refused := []string{"evil.example:" + port, "evil.example", "localhost:" + strconv.Itoa(mustAtoi(t, port)+1)}
			for _, route := range hostRoutes(ada, password) {
				for _, host := range served {
					if r := d.sendAs(host, origin(host), route); !route.ok(r) {
						t.Errorf("%s %s, Host %s: %d %.100q; want it served", route.method, route.path, host, r.status, r.body)
					}
				}
				for _, host := range refused {
					r := d.sendAs(host, origin(host), route)
					if r.status != http.StatusMisdirectedRequest || !strings.HasPrefix(r.header.Get("Content-Type"), "text/plain") ||
						!strings.Contains(string(r.body), "localhost:"+port) || !strings.Contains(string(r.body), app.Host) {
						t.Errorf("%s %s, Host %s: %d %.100q; want 421 naming the hosts served", route.method, route.path, host, r.status, r.body)
					}
				}
			}
		})
	}
}

// TestHostsWithoutDev checks that without -dev the demo answers only its
// own hosts on loopback too, and every Host on other addresses.
func TestHostsWithoutDev(t *testing.T) {
	d := newTestDemo(t, nil)
	port := mustPort(t, d.url)
	signIn := hostRoutes("ada@example.com", "correct horse 1")[2]
	if r := d.sendAs("evil.example:"+port, "http://evil.example:"+port, signIn); r.status != http.StatusMisdirectedRequest {
		t.Errorf("on loopback, Host evil.example: %d %s, want 421", r.status, r.body)
	}
	if r := d.sendAs("127.0.0.1:"+port, "http://127.0.0.1:"+port, signIn); r.status != http.StatusOK {
		t.Errorf("on loopback, Host 127.0.0.1: %d %s, want 200", r.status, r.body)
	}

	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	h := guardHosts(ok, "https://app.example", &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 8080})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "http://other.example/", nil))
	if rec.Code != http.StatusOK {
		t.Errorf("on 192.0.2.1, Host other.example: %d, want 200", rec.Code)
	}
}

func mustPort(t *testing.T, rawURL string) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil || u.Port() == "" {
		t.Fatalf("no port in %q", rawURL)
	}
	return u.Port()
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
