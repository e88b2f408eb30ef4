package auth_test

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"go/parser"
	"go/token"
	"log/slog"
	"net/http"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/dashboard"
	"github.com/latchkit/auth/emailverification"
	"github.com/latchkit/auth/passwordless"
	"github.com/latchkit/auth/roles"
	"github.com/latchkit/auth/store"
	"github.com/latchkit/auth/store/memstore"
)

const dashKey = "dashboard-test-key-0123456789"

// dashServer is a server with the dashboard (key dashKey), roles, email
// verification and an event log; the role "operator" holds the
// dashboard's permission.
func dashServer(t *testing.T, cfg auth.Config) (*authtest.Server, *roles.Recipe, *eventLog) {
	t.Helper()
	rr := roles.New(roles.Config{})
	cfg.Roles = rr
	if cfg.Dashboard == nil {
		cfg.Dashboard = dashboard.New(dashboard.Config{APIKey: dashKey})
	}
	if cfg.EmailVerification.Mode == "" {
		cfg.EmailVerification.Mode = emailverification.Optional
	}
	if cfg.RateLimits.ClientDashboardFailures == (auth.Rate{}) {
		// The suites send many refused requests from one address.
		cfg.RateLimits.ClientDashboardFailures = auth.Rate{Burst: 1 << 30, Every: time.Nanosecond}
	}
	ev := newEventLog()
	cfg.OnEvent = ev.record
	s := authtest.NewServer(t, cfg)
	if _, err := rr.CreateRole(t.Context(), "operator", dashboard.DefaultPermission); err != nil {
		t.Fatal(err)
	}
	return s, rr, ev
}

// dash sends a request to the dashboard's API, under /auth/dashboard/api,
// with the key, as the app does; a non-nil body goes as JSON.
func dash(t *testing.T, s *authtest.Server, method, path string, body any) *authtest.Response {
	t.Helper()
	return dashAs(t, s, method, "/auth/dashboard/api"+path, body, hdr("Authorization", "Bearer "+dashKey))
}

// dashAs sends a request to path with the headers h.
func dashAs(t *testing.T, s *authtest.Server, method, path string, body any, h http.Header) *authtest.Response {
	t.Helper()
	var b string
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		b = string(raw)
		h.Set("Content-Type", "application/json")
	}
	return send(t, s, method, path, b, h)
}

// wantStatus checks a 200 with the JSON status want.
func wantStatus(t *testing.T, what string, res *authtest.Response, want string) {
	t.Helper()
	if res.StatusCode != http.StatusOK || res.Status != want {
		t.Fatalf("%s: %d %s, want 200 with status %s", what, res.StatusCode, res.Body, want)
	}
}

// dashRoutes are the API's routes, each with a request that passes the
// check: what the access test sends each way.
var dashRoutes = []struct {
	method, path string
	body         any
}{
	{"POST", "/signout", map[string]any{}},
	{"POST", "/analytics", map[string]any{"email": "a@example.com", "dashboardVersion": "0.13"}},
	{"GET", "/users?limit=10", nil},
	{"GET", "/users/count", nil},
	{"GET", "/search/tags", nil},
	{"GET", "/tenants", nil},
	{"GET", "/tenant", nil},
	{"POST", "/tenant", map[string]any{"tenantId": "acme"}},
	{"DELETE", "/tenant", nil},
	{"PUT", "/tenant/first-factor", map[string]any{"factorId": "emailpassword", "enable": true}},
	{"PUT", "/tenant/required-secondary-factor", map[string]any{"factorId": "totp", "enable": true}},
	{"GET", "/thirdparty/config?thirdPartyId=x", nil},
	{"PUT", "/thirdparty/config", map[string]any{"providerConfig": map[string]any{"thirdPartyId": "x"}}},
	{"DELETE", "/thirdparty/config?thirdPartyId=x", nil},
	{"GET", "/user?userId=nobody", nil},
	{"PUT", "/user", map[string]any{"recipeId": "emailpassword", "recipeUserId": "nobody", "firstName": "", "lastName": "", "email": "", "phone": ""}},
	{"DELETE", "/user?userId=nobody", nil},
	{"POST", "/user/emailpassword", map[string]any{"email": "not an email", "password": "x"}},
	{"POST", "/user/passwordless", map[string]any{"email": "a@example.com"}},
	{"GET", "/user/email/verify?recipeUserId=nobody", nil},
	{"PUT", "/user/email/verify", map[string]any{"recipeUserId": "nobody", "verified": true}},
	{"POST", "/user/email/verify/token", map[string]any{"recipeUserId": "nobody"}},
	{"GET", "/user/metadata?userId=nobody", nil},
	{"PUT", "/user/metadata", map[string]any{"userId": "nobody", "data": "{}"}},
	{"GET", "/user/sessions?userId=nobody", nil},
	{"POST", "/user/sessions", map[string]any{"sessionHandles": []string{}}},
	{"PUT", "/user/password", map[string]any{"recipeUserId": "nobody", "newPassword": "x"}},
	{"GET", "/user/unlink?recipeUserId=nobody", nil},
	{"GET", "/userroles/roles", nil},
	{"PUT", "/userroles/role", map[string]any{"role": "viewer", "permissions": []string{}}},
	{"DELETE", "/userroles/role?role=nobody", nil},
	{"GET", "/userroles/role/permissions?role=operator", nil},
	{"PUT", "/userroles/role/permissions/remove", map[string]any{"role": "nobody", "permissions": []string{"x"}}},
	{"GET", "/userroles/user/roles?userId=nobody", nil},
	{"PUT", "/userroles/user/roles", map[string]any{"userId": "nobody", "role": "operator"}},
	{"DELETE", "/userroles/user/roles?userId=nobody&role=operator", nil},
	{"POST", "/key/validate", map[string]any{}},
}

// TestDashboardRoutesListed compares dashRoutes, with the shell's, with
// what the handler serves under /dashboard, so that a route added is
// tested for its check.
func TestDashboardRoutesListed(t *testing.T) {
	t.Parallel()
	s, _, _ := dashServer(t, auth.Config{})
	var served []string
	for _, r := range auth.Routes(s.Auth) {
		if _, path, _ := strings.Cut(r, " "); strings.HasPrefix(path, "/dashboard") {
			served = append(served, r)
		}
	}
	listed := []string{"GET /dashboard", "GET /dashboard/", "GET /dashboard/roles", "GET /dashboard/tenants"}
	for _, r := range dashRoutes {
		path, _, _ := strings.Cut(r.path, "?")
		listed = append(listed, r.method+" /dashboard/api"+path)
	}
	compareLists(t, "dashRoutes", listed, "the handler's /dashboard routes", served)
}

func TestDashboardAccess(t *testing.T) {
	t.Parallel()
	s, rr, _ := dashServer(t, auth.Config{})
	ctx := t.Context()
	lacking, _ := s.SignedIn(authtest.Header)
	holder, op := s.SignedIn(authtest.Header)
	if _, err := rr.Give(ctx, op.ID, "operator"); err != nil {
		t.Fatal(err)
	}
	cookieHolder, cop := s.SignedIn(authtest.Cookie)
	if _, err := rr.Give(ctx, cop.ID, "operator"); err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(s.URL)
	cookie := "sAccessToken=" + cookieValue(cookieHolder.HTTP.Jar.Cookies(u), "sAccessToken")
	cases := []struct {
		name string
		h    http.Header
		want int // 0: let in
	}{
		{"no Authorization", hdr(), http.StatusUnauthorized},
		{"a wrong key", hdr("Authorization", "Bearer "+dashKey+"x"), http.StatusUnauthorized},
		{"the key without its scheme", hdr("Authorization", dashKey), http.StatusUnauthorized},
		{"a prefix of the key", hdr("Authorization", "Bearer "+dashKey[:10]), http.StatusUnauthorized},
		{"the key twice", hdr("Authorization", "Bearer "+dashKey, "Authorization", "Bearer "+dashKey), http.StatusUnauthorized},
		{"the key", hdr("Authorization", "Bearer "+dashKey), 0},
		{"the key, the header and scheme in other cases", http.Header{"authorization": {"bEARER " + dashKey}}, 0},
		{"a session without the permission", hdr("Authorization", "Bearer "+lacking.AccessToken), http.StatusForbidden},
		{"a session with the permission", hdr("Authorization", "Bearer "+holder.AccessToken), 0},
		{"a cookie session with the permission, no Authorization", hdr("Cookie", cookie), http.StatusUnauthorized},
		{"a cookie session with the permission, any Authorization", hdr("Cookie", cookie, "Authorization", "Bearer typed"), 0},
	}
	for _, r := range dashRoutes {
		for _, tc := range cases {
			h := http.Header{}
			for k, v := range tc.h {
				h[k] = v
			}
			res := dashAs(t, s, r.method, "/auth/dashboard/api"+r.path, r.body, h)
			what := r.method + " " + r.path + " with " + tc.name
			switch tc.want {
			case 0:
				if res.StatusCode == http.StatusUnauthorized || res.StatusCode == http.StatusForbidden || res.StatusCode >= 500 {
					t.Errorf("%s: %d %s, want it let in", what, res.StatusCode, res.Body)
				}
				if res.JSON == nil {
					t.Errorf("%s: body %q, want JSON", what, res.Body)
				}
			case http.StatusUnauthorized:
				wantDashMessage(t, res, tc.want, "Unauthorised access")
			case http.StatusForbidden:
				wantDashMessage(t, res, tc.want, "You do not have access to this page")
			}
		}
	}
	// Taking the role away closes the API at once, without a refresh.
	if _, err := rr.Take(ctx, op.ID, "operator"); err != nil {
		t.Fatal(err)
	}
	res := dashAs(t, s, "GET", "/auth/dashboard/api/users/count", nil, hdr("Authorization", "Bearer "+holder.AccessToken))
	wantDashMessage(t, res, http.StatusForbidden, "You do not have access to this page")
}

func cookieValue(cs []*http.Cookie, name string) string {
	for _, c := range cs {
		if c.Name == name {
			return c.Value
		}
	}
	return ""
}

func TestDashboardShell(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		bundle, origin, static string
	}{
		{"", "https://cdn.jsdelivr.net", dashboard.DefaultBundleURL + "static"},
		{"https://assets.example.com/dash/", "https://assets.example.com", "https://assets.example.com/dash/static"},
		{"/static/dashboard", "'self'", "/static/dashboard/static"},
	} {
		s, _, _ := dashServer(t, auth.Config{Dashboard: dashboard.New(dashboard.Config{APIKey: dashKey, BundleURL: tc.bundle})})
		for _, path := range []string{"/auth/dashboard", "/auth/dashboard/", "/auth/dashboard/?userid=abc", "/auth/dashboard/roles",
			"/auth/dashboard/tenants", "/auth/public/dashboard"} {
			res := send(t, s, "GET", path, "", nil)
			page := string(res.Body)
			if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
				t.Fatalf("GET %s: %d %s %s", path, res.StatusCode, res.Header.Get("Content-Type"), page)
			}
			for _, want := range []string{
				`window.authMode = "api-key";`, `window.isSearchEnabled = "true";`,
				`window.dashboardAppPath = "/auth/dashboard";`, `window.staticBasePath = "` + tc.static + `";`,
				`src="` + tc.static + `/js/bundle.js"`, `href="` + tc.static + `/css/main.css"`,
			} {
				if !strings.Contains(page, want) {
					t.Errorf("GET %s (bundle %q): the page lacks %s:\n%s", path, tc.bundle, want, page)
				}
			}
			csp := res.Header.Get("Content-Security-Policy")
			m := regexp.MustCompile(`(?s)<script>(.*?)</script>`).FindStringSubmatch(page)
			if m == nil {
				t.Fatalf("GET %s: no inline script", path)
			}
			sum := sha256.Sum256([]byte(m[1]))
			for _, want := range []string{"script-src " + tc.origin + " 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'",
				"style-src " + tc.origin, "connect-src 'self'", "frame-ancestors 'none'"} {
				if !strings.Contains(csp, want) {
					t.Errorf("GET %s: the CSP %q lacks %q", path, csp, want)
				}
			}
		}
	}
}

func TestDashboardConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		cfg   auth.Config
		wants string
	}{
		{"no key, roles off", auth.Config{Dashboard: dashboard.New(dashboard.Config{})}, "nobody could use the dashboard"},
		{"a short key", auth.Config{Dashboard: dashboard.New(dashboard.Config{APIKey: "short"})}, "at least 20 bytes"},
		{"a key with a space", auth.Config{Dashboard: dashboard.New(dashboard.Config{APIKey: "a key of more than twenty bytes"})}, "spaces"},
		{"a bundle with a query", auth.Config{Dashboard: dashboard.New(dashboard.Config{APIKey: dashKey, BundleURL: "https://x.example/?a=b"})}, "BundleURL"},
		{"a bundle not on http", auth.Config{Dashboard: dashboard.New(dashboard.Config{APIKey: dashKey, BundleURL: "javascript:alert(1)"})}, "BundleURL"},
		{"a nil recipe", auth.Config{Dashboard: (*dashboard.Recipe)(nil)}, "nil"},
		{"a store that lists no users", auth.Config{Store: unlisted{memstore.New()}, Dashboard: dashboard.New(dashboard.Config{APIKey: dashKey})}, "UserLister"},
	} {
		cfg := tc.cfg
		if cfg.Store == nil {
			cfg.Store = memstore.New()
		}
		_, err := auth.New(cfg)
		if err == nil || !strings.Contains(err.Error(), tc.wants) {
			t.Errorf("%s: New returned %v, want an error naming %q", tc.name, err, tc.wants)
		}
	}
	// Roles on and no key: sessions with the permission only.
	if _, err := auth.New(auth.Config{Store: memstore.New(), Roles: roles.New(roles.Config{}), Dashboard: dashboard.New(dashboard.Config{})}); err != nil {
		t.Errorf("no key with roles on: %v", err)
	}
}

// unlisted is a Store that is no store.UserLister.
type unlisted struct{ store.Store }

// dashUsers signs up n users a minute apart and returns their ids, oldest
// first.
func dashUsers(t *testing.T, s *authtest.Server, n int) []string {
	t.Helper()
	var ids []string
	for range n {
		_, u := s.SignedIn(authtest.Header)
		ids = append(ids, u.ID)
		s.Clock.Advance(time.Minute)
	}
	return ids
}

// idsOf are the ids of a list of users.
func idsOf(t *testing.T, res *authtest.Response) []string {
	t.Helper()
	users, ok := res.JSON["users"].([]any)
	if !ok {
		t.Fatalf("no users in %s", res.Body)
	}
	ids := []string{}
	for _, u := range users {
		ids = append(ids, u.(map[string]any)["id"].(string))
	}
	return ids
}

func TestDashboardListUsers(t *testing.T) {
	t.Parallel()
	s, _, _ := dashServer(t, auth.Config{})
	ids := dashUsers(t, s, 5)
	newest := slices.Clone(ids)
	slices.Reverse(newest)
	for _, tc := range []struct {
		order string
		want  []string
	}{{"", newest}, {"DESC", newest}, {"ASC", ids}} {
		var got []string
		token, pages := "", 0
		for {
			q := url.Values{"limit": {"2"}}
			if tc.order != "" {
				q.Set("timeJoinedOrder", tc.order)
			}
			if token != "" {
				q.Set("paginationToken", token)
			}
			// The app puts the tenant's segment in, even for public.
			res := dashAs(t, s, "GET", "/auth/public/dashboard/api/users?"+q.Encode(), nil, hdr("Authorization", "Bearer "+dashKey))
			wantStatus(t, "users "+q.Encode(), res, "OK")
			got = append(got, idsOf(t, res)...)
			pages++
			next, has := res.JSON["nextPaginationToken"]
			if !has {
				break
			}
			if token, _ = next.(string); token == "" || pages > 5 {
				t.Fatalf("nextPaginationToken %v after %d pages", next, pages)
			}
		}
		if !slices.Equal(got, tc.want) || pages != 3 {
			t.Errorf("order %q: %v in %d pages, want %v in 3", tc.order, got, pages, tc.want)
		}
	}
	res := dash(t, s, "GET", "/users/count", nil)
	if res.Status != "OK" || res.JSON["count"] != float64(5) {
		t.Errorf("count: %s, want 5", res.Body)
	}
	for _, tc := range []struct{ query, msg string }{
		{"", "Missing required parameter 'limit'"},
		{"limit=0", "'limit' must be a positive integer"},
		{"limit=ten", "'limit' must be a positive integer"},
		{"limit=10&timeJoinedOrder=up", "timeJoinedOrder must be one of ASC or DESC"},
		{"limit=10&paginationToken=forged", "invalid paginationToken"},
	} {
		wantDashMessage(t, dash(t, s, "GET", "/users?"+tc.query, nil), http.StatusBadRequest, tc.msg)
	}
}

func TestDashboardSearch(t *testing.T) {
	t.Parallel()
	s, p := linkingServer(t, false, auth.Config{Roles: roles.New(roles.Config{}), Dashboard: dashboard.New(dashboard.Config{APIKey: dashKey})})
	signUpWith(t, s, authtest.Header, "ada@acme.test", authtest.Password)
	signUpWith(t, s, authtest.Header, "bob@other.test", authtest.Password)
	p.SetIdentity("g-1", "cy@other.test", true)
	if res := s.NewClient(authtest.Header).SignInWithProvider(p); res.Status != "OK" {
		t.Fatal(string(res.Body))
	}
	res := dash(t, s, "GET", "/search/tags", nil)
	if !reflect.DeepEqual(res.JSON, map[string]any{"status": "OK", "tags": []any{"email", "phone", "provider"}}) {
		t.Errorf("search tags: %s", res.Body)
	}
	emailsOf := func(res *authtest.Response) []string {
		var out []string
		for _, u := range res.JSON["users"].([]any) {
			out = append(out, u.(map[string]any)["emails"].([]any)[0].(string))
		}
		slices.Sort(out)
		return out
	}
	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"email=ACME", []string{"ada@acme.test"}},
		{"email=other.test", []string{"bob@other.test", "cy@other.test"}},
		{"email=%3Bbob", []string{"bob@other.test"}},
		{"provider=" + authtest.ProviderID, []string{"cy@other.test"}},
		{"email=nobody", nil},
	} {
		res := dash(t, s, "GET", "/users?limit=1000&"+tc.query, nil)
		wantStatus(t, tc.query, res, "OK")
		if got := emailsOf(res); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.query, got, tc.want)
		}
	}
}

func TestDashboardGetUser(t *testing.T) {
	t.Parallel()
	s, _, _ := dashServer(t, auth.Config{})
	_, u := s.SignedIn(authtest.Header)
	res := dash(t, s, "GET", "/user?userId="+u.ID, nil)
	joined := float64(u.TimeJoined.UnixMilli())
	want := map[string]any{"status": "OK", "user": map[string]any{
		"id": u.ID, "isPrimaryUser": false, "tenantIds": []any{"public"},
		"emails": []any{u.Email}, "phoneNumbers": []any{}, "thirdParty": []any{},
		"webauthn": map[string]any{"credentialIds": []any{}}, "timeJoined": joined,
		"loginMethods": []any{map[string]any{"recipeId": "emailpassword", "recipeUserId": u.ID, "tenantIds": []any{"public"},
			"email": u.Email, "timeJoined": joined, "verified": false}},
		"firstName": "FEATURE_NOT_ENABLED", "lastName": "FEATURE_NOT_ENABLED",
	}}
	if !reflect.DeepEqual(res.JSON, want) {
		t.Errorf("GET user:\n%s\nwant\n%v", res.Body, want)
	}
	wantStatus(t, "a missing user", dash(t, s, "GET", "/user?userId=nobody", nil), "NO_USER_FOUND_ERROR")
	wantDashMessage(t, dash(t, s, "GET", "/user", nil), http.StatusBadRequest, "Missing required parameter 'userId'")
	wantDashMessage(t, dash(t, s, "GET", "/user?userId=", nil), http.StatusBadRequest, "Missing required parameter 'userId'")
	wantStatus(t, "metadata", dash(t, s, "GET", "/user/metadata?userId="+u.ID, nil), "FEATURE_NOT_ENABLED_ERROR")
	wantStatus(t, "metadata put", dash(t, s, "PUT", "/user/metadata", map[string]any{"userId": u.ID, "data": `{"a":1}`}), "FEATURE_NOT_ENABLED_ERROR")
	res = dash(t, s, "GET", "/tenants", nil)
	if !reflect.DeepEqual(res.JSON, map[string]any{"status": "OK", "tenants": []any{
		map[string]any{"tenantId": "public", "firstFactors": []any{"emailpassword"}}}}) {
		t.Errorf("tenants: %s", res.Body)
	}
}

func TestDashboardDeleteUser(t *testing.T) {
	t.Parallel()
	s, _, ev := dashServer(t, auth.Config{})
	c, u := s.SignedIn(authtest.Header)
	other, _ := s.SignedIn(authtest.Header)
	wantStatus(t, "delete", dash(t, s, "DELETE", "/user?userId="+u.ID, nil), "OK")
	if res := c.Refresh(); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("the deleted user's refresh: %d %s, want 401", res.StatusCode, res.Body)
	}
	if res := c.Get("/auth/user/email/verify"); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("the deleted user's access token: %d %s, want 401", res.StatusCode, res.Body)
	}
	if res := other.Refresh(); res.StatusCode != http.StatusOK {
		t.Errorf("another user's refresh: %d %s", res.StatusCode, res.Body)
	}
	if got := ev.of(auth.EventUserDeleted); len(got) != 1 || got[0].UserID != u.ID || got[0].RemoteAddr == "" {
		t.Errorf("user_deleted events %+v, want one for %s with the request's address", got, u.ID)
	}
	wantStatus(t, "GET the deleted user", dash(t, s, "GET", "/user?userId="+u.ID, nil), "NO_USER_FOUND_ERROR")
	wantStatus(t, "delete again", dash(t, s, "DELETE", "/user?userId="+u.ID, nil), "NO_USER_FOUND_ERROR")
	wantDashMessage(t, dash(t, s, "DELETE", "/user", nil), http.StatusBadRequest, "Missing required parameter 'userId'")
}

func TestDashboardUnlink(t *testing.T) {
	t.Parallel()
	s, p := linkingServer(t, true, auth.Config{Dashboard: dashboard.New(dashboard.Config{APIKey: dashKey}), Roles: roles.New(roles.Config{})})
	pw, tp, uid, tpLogin := linkedUser(t, s, p, "ada@example.com", "g-ada")
	wantStatus(t, "unlink", dash(t, s, "GET", "/user/unlink?userId="+uid+"&recipeUserId="+tpLogin, nil), "OK")
	if res := tp.Refresh(); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("the unlinked login's session: %d %s, want 401", res.StatusCode, res.Body)
	}
	if res := pw.Refresh(); res.StatusCode != http.StatusOK {
		t.Errorf("the other login's session: %d %s", res.StatusCode, res.Body)
	}
	res := dash(t, s, "GET", "/user?userId="+uid, nil)
	if ms := res.JSON["user"].(map[string]any)["loginMethods"].([]any); len(ms) != 1 {
		t.Errorf("after unlink: %s", res.Body)
	}
	// The user's only login is linked to nothing: OK, and still there.
	wantStatus(t, "unlink the last", dash(t, s, "GET", "/user/unlink?recipeUserId="+uid, nil), "OK")
	wantStatus(t, "the user", dash(t, s, "GET", "/user?userId="+uid, nil), "OK")
	wantStatus(t, "unlink nobody", dash(t, s, "GET", "/user/unlink?recipeUserId=nobody", nil), "NO_USER_FOUND_ERROR")

	// removeAllLinkedAccounts=false deletes only the login of that id
	// while the user has others, and the sessions it started.
	pw2, tp2, uid2, _ := linkedUser(t, s, p, "bea@example.com", "g-bea")
	wantStatus(t, "delete one login", dash(t, s, "DELETE", "/user?removeAllLinkedAccounts=false&userId="+uid2, nil), "OK")
	if res := pw2.Refresh(); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("the deleted login's session: %d %s, want 401", res.StatusCode, res.Body)
	}
	if res := tp2.Refresh(); res.StatusCode != http.StatusOK {
		t.Errorf("the remaining login's session: %d %s", res.StatusCode, res.Body)
	}
	res = dash(t, s, "GET", "/user?userId="+uid2, nil)
	if ms, _ := res.JSON["user"].(map[string]any)["loginMethods"].([]any); len(ms) != 1 || ms[0].(map[string]any)["recipeId"] != "thirdparty" {
		t.Errorf("after deleting one login: %s", res.Body)
	}
	// Its last login goes with the user.
	wantStatus(t, "delete the last login", dash(t, s, "DELETE", "/user?removeAllLinkedAccounts=False&userId="+uid, nil), "OK")
	wantStatus(t, "the user of the last login", dash(t, s, "GET", "/user?userId="+uid, nil), "NO_USER_FOUND_ERROR")
	wantDashMessage(t, dash(t, s, "GET", "/user/unlink", nil), http.StatusBadRequest, "Missing required parameter 'recipeUserId'")
}

func TestDashboardPassword(t *testing.T) {
	t.Parallel()
	s, _, ev := dashServer(t, auth.Config{})
	c, u := s.SignedIn(authtest.Header)
	weak := map[string]any{"recipeUserId": u.ID, "newPassword": "short"}
	res := dash(t, s, "PUT", "/user/password?userId="+u.ID, weak)
	if !reflect.DeepEqual(res.JSON, map[string]any{"status": "INVALID_PASSWORD_ERROR", "error": "Password must contain at least 8 characters, including a number"}) {
		t.Errorf("a weak password: %d %s", res.StatusCode, res.Body)
	}
	if res := c.Refresh(); res.StatusCode != http.StatusOK {
		t.Fatalf("a refused password ended the session: %d %s", res.StatusCode, res.Body)
	}
	const pw = "a new password 2"
	wantStatus(t, "set", dash(t, s, "PUT", "/user/password?userId="+u.ID, map[string]any{"recipeUserId": u.ID, "newPassword": pw}), "OK")
	if res := c.Refresh(); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("the user's session after the password was set: %d %s, want 401", res.StatusCode, res.Body)
	}
	if res := s.NewClient(authtest.Header).SignIn(u.Email, authtest.Password); res.Status != "WRONG_CREDENTIALS_ERROR" {
		t.Errorf("the old password: %s", res.Body)
	}
	if res := s.NewClient(authtest.Header).SignIn(u.Email, pw); res.Status != "OK" {
		t.Errorf("the new password: %s", res.Body)
	}
	if got := ev.of(auth.EventPasswordSet); len(got) != 1 || got[0].UserID != u.ID {
		t.Errorf("password_set events %+v", got)
	}
	if got := ev.of(auth.EventSessionRevoked); len(got) != 1 || got[0].UserID != u.ID {
		t.Errorf("session_revoked events %+v, want the one session", got)
	}
	wantStatus(t, "a missing login", dash(t, s, "PUT", "/user/password", map[string]any{"recipeUserId": "nobody", "newPassword": pw}), "NO_USER_FOUND_ERROR")
	for _, body := range []any{map[string]any{"recipeUserId": u.ID}, map[string]any{"recipeUserId": u.ID, "newPassword": 12345678}, []string{}, "x"} {
		if res := dash(t, s, "PUT", "/user/password", body); res.StatusCode != http.StatusBadRequest || res.Message == "" {
			t.Errorf("body %v: %d %s, want 400 with a message", body, res.StatusCode, res.Body)
		}
	}
}

func TestDashboardVerify(t *testing.T) {
	t.Parallel()
	s, _, ev := dashServer(t, auth.Config{})
	_, u := s.SignedIn(authtest.Header)
	isVerified := func() any {
		res := dash(t, s, "GET", "/user/email/verify?recipeUserId="+u.ID, nil)
		wantStatus(t, "verify GET", res, "OK")
		return res.JSON["isVerified"]
	}
	if v := isVerified(); v != false {
		t.Fatalf("isVerified %v after sign-up", v)
	}
	wantStatus(t, "send", dash(t, s, "POST", "/user/email/verify/token", map[string]any{"recipeUserId": u.ID}), "OK")
	if m := s.Mailbox.LastTo(t, u.Email, 0, 5*time.Second); !strings.Contains(m.Text, "verify") {
		t.Errorf("the verification email: %+v", m)
	}
	wantStatus(t, "verify", dash(t, s, "PUT", "/user/email/verify", map[string]any{"recipeUserId": u.ID, "verified": true}), "OK")
	if v := isVerified(); v != true {
		t.Errorf("isVerified %v after PUT true", v)
	}
	wantStatus(t, "send when verified", dash(t, s, "POST", "/user/email/verify/token", map[string]any{"recipeUserId": u.ID}), "EMAIL_ALREADY_VERIFIED_ERROR")
	wantStatus(t, "unverify", dash(t, s, "PUT", "/user/email/verify", map[string]any{"recipeUserId": u.ID, "verified": false}), "OK")
	if v := isVerified(); v != false {
		t.Errorf("isVerified %v after PUT false", v)
	}
	if len(ev.of(auth.EventEmailVerified)) != 1 || len(ev.of(auth.EventEmailUnverified)) != 1 {
		t.Errorf("events: %d email_verified, %d email_unverified, want one each", len(ev.of(auth.EventEmailVerified)), len(ev.of(auth.EventEmailUnverified)))
	}
	wantStatus(t, "a missing login", dash(t, s, "PUT", "/user/email/verify", map[string]any{"recipeUserId": "nobody", "verified": true}), "NO_USER_FOUND_ERROR")
	wantStatus(t, "GET a missing login", dash(t, s, "GET", "/user/email/verify?recipeUserId=nobody", nil), "NO_USER_FOUND_ERROR")
	wantDashMessage(t, dash(t, s, "PUT", "/user/email/verify", map[string]any{"recipeUserId": u.ID, "verified": "yes"}),
		http.StatusBadRequest, "Required parameter 'verified' is missing or has an invalid type")

	off := authtest.NewServer(t, auth.Config{Dashboard: dashboard.New(dashboard.Config{APIKey: dashKey})})
	_, ou := off.SignedIn(authtest.Header)
	wantStatus(t, "GET without verification", dash(t, off, "GET", "/user/email/verify?recipeUserId="+ou.ID, nil), "FEATURE_NOT_ENABLED_ERROR")
	wantStatus(t, "PUT without verification", dash(t, off, "PUT", "/user/email/verify", map[string]any{"recipeUserId": ou.ID, "verified": true}), "FEATURE_NOT_ENABLED_ERROR")
}

func TestDashboardSessions(t *testing.T) {
	t.Parallel()
	s, _, ev := dashServer(t, auth.Config{})
	first, u := s.SignedIn(authtest.Header)
	second := s.NewClient(authtest.Header)
	if res := second.SignIn(u.Email, authtest.Password); res.Status != "OK" {
		t.Fatal(string(res.Body))
	}
	res := dash(t, s, "GET", "/user/sessions?userId="+u.ID, nil)
	wantStatus(t, "sessions", res, "OK")
	list, _ := res.JSON["sessions"].([]any)
	if len(list) != 2 {
		t.Fatalf("sessions: %s", res.Body)
	}
	item := list[0].(map[string]any)
	if got := keysOf(item); !slices.Equal(got, []string{"accessTokenPayload", "expiry", "recipeUserId", "sessionDataInDatabase",
		"sessionHandle", "tenantId", "timeCreated", "userId"}) {
		t.Errorf("a session's keys: %v", got)
	}
	if item["userId"] != u.ID || !reflect.DeepEqual(item["recipeUserId"], map[string]any{"recipeUserId": u.ID}) || item["tenantId"] != "public" ||
		item["timeCreated"].(float64) < 1e12 || item["expiry"].(float64) <= item["timeCreated"].(float64) {
		t.Errorf("a session: %v", item)
	}
	handle := handleOf(t, first)
	wantStatus(t, "revoke", dash(t, s, "POST", "/user/sessions", map[string]any{"sessionHandles": []string{handle, "no-such-handle"}}), "OK")
	if res := first.Refresh(); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("the revoked session: %d %s", res.StatusCode, res.Body)
	}
	if res := second.Refresh(); res.StatusCode != http.StatusOK {
		t.Errorf("the other session: %d %s", res.StatusCode, res.Body)
	}
	if got := ev.of(auth.EventSessionRevoked); len(got) != 1 || got[0].SessionHandle != handle {
		t.Errorf("session_revoked events %+v", got)
	}
	res = dash(t, s, "GET", "/user/sessions?userId="+u.ID, nil)
	if list, _ := res.JSON["sessions"].([]any); len(list) != 1 {
		t.Errorf("sessions after the revocation: %s", res.Body)
	}
	res = dash(t, s, "GET", "/user/sessions?userId=nobody", nil)
	if !reflect.DeepEqual(res.JSON, map[string]any{"status": "OK", "sessions": []any{}}) {
		t.Errorf("sessions of nobody: %s", res.Body)
	}
	for _, body := range []any{map[string]any{"sessionHandles": "x"}, map[string]any{}, map[string]any{"sessionHandles": []int{1}}} {
		wantDashMessage(t, dash(t, s, "POST", "/user/sessions", body), http.StatusBadRequest,
			"Required parameter 'sessionHandles' is missing or has an invalid type")
	}
}

func TestDashboardCreateUser(t *testing.T) {
	t.Parallel()
	s, _, ev := dashServer(t, auth.Config{})
	res := dash(t, s, "POST", "/user/emailpassword", map[string]any{"email": " Ada@Example.com", "password": authtest.Password})
	wantStatus(t, "create", res, "OK")
	user, _ := res.JSON["user"].(map[string]any)
	if user["emails"] == nil || !reflect.DeepEqual(user["emails"], []any{"ada@example.com"}) || res.JSON["recipeUserId"] != user["id"] {
		t.Errorf("create: %s", res.Body)
	}
	if res.IssuedTokens() {
		t.Error("creating a user started a session")
	}
	if c := s.NewClient(authtest.Header); c.SignIn("ada@example.com", authtest.Password).Status != "OK" {
		t.Error("the created user cannot sign in")
	}
	if got := ev.of(auth.EventUserCreated); len(got) != 1 || got[0].UserID != user["id"] {
		t.Errorf("user_created events %+v", got)
	}
	wantStatus(t, "again", dash(t, s, "POST", "/user/emailpassword", map[string]any{"email": "ada@example.com", "password": authtest.Password}), "EMAIL_ALREADY_EXISTS_ERROR")
	res = dash(t, s, "POST", "/user/emailpassword", map[string]any{"email": "not an email", "password": authtest.Password})
	if res.Status != "EMAIL_VALIDATION_ERROR" || res.Message == "" {
		t.Errorf("a bad email: %s", res.Body)
	}
	res = dash(t, s, "POST", "/user/emailpassword", map[string]any{"email": "bob@example.com", "password": "short"})
	if res.Status != "PASSWORD_VALIDATION_ERROR" || res.Message == "" {
		t.Errorf("a weak password: %s", res.Body)
	}
	wantStatus(t, "passwordless", dash(t, s, "POST", "/user/passwordless", map[string]any{"email": "cy@example.com"}), "FEATURE_NOT_ENABLED_ERROR")
}

// With passwordless sign-in by email on, an operator creates a user who
// then signs in with a code as that same user; the address is not taken
// as verified, phone numbers stay off, and bad input is refused.
func TestDashboardCreatePasswordlessUser(t *testing.T) {
	t.Parallel()
	s, _, events := dashServer(t, auth.Config{Passwordless: passwordless.Config{Flow: passwordless.Code}})
	res := dash(t, s, "POST", "/user/passwordless", map[string]any{"email": " Cy@Example.com "})
	user, _ := res.JSON["user"].(map[string]any)
	id, _ := user["id"].(string)
	if res.Status != "OK" || res.JSON["createdNewRecipeUser"] != true || id == "" || !strings.Contains(string(res.Body), `"verified":false`) {
		t.Fatalf("create: %s", res.Body)
	}
	again := dash(t, s, "POST", "/user/passwordless", map[string]any{"email": "cy@example.com"})
	if again.Status != "OK" || again.JSON["createdNewRecipeUser"] != false || !strings.Contains(string(again.Body), id) {
		t.Errorf("create again: %s", again.Body)
	}
	if got := wantOK(t, "the user's code sign-in", s.NewClient(authtest.Header).SignInWithCode("cy@example.com")); got != id {
		t.Errorf("the code signed in %s, want the created user %s", got, id)
	}
	if created := events.of(auth.EventUserCreated); len(created) != 1 || created[0].UserID != id || created[0].Operator != dashboard.KeyOperator {
		t.Errorf("user_created events: %+v", created)
	}
	wantStatus(t, "a phone number with phones off", dash(t, s, "POST", "/user/passwordless", map[string]any{"phoneNumber": "+14155550100"}), "FEATURE_NOT_ENABLED_ERROR")
	wantStatus(t, "a bad email", dash(t, s, "POST", "/user/passwordless", map[string]any{"email": "not an email"}), "EMAIL_VALIDATION_ERROR")
	for _, body := range []map[string]any{{}, {"email": "a@example.com", "phoneNumber": "+14155550100"}, {"email": 7}} {
		if res := dash(t, s, "POST", "/user/passwordless", body); res.StatusCode != http.StatusBadRequest {
			t.Errorf("%v: %d %s, want 400", body, res.StatusCode, res.Body)
		}
	}
}

func TestDashboardPutUser(t *testing.T) {
	t.Parallel()
	s, _, _ := dashServer(t, auth.Config{})
	_, u := s.SignedIn(authtest.Header)
	edit := func(email string) map[string]any {
		return map[string]any{"recipeId": "emailpassword", "recipeUserId": u.ID, "userId": u.ID, "firstName": "Ada", "lastName": "", "email": email, "phone": ""}
	}
	wantStatus(t, "the same email", dash(t, s, "PUT", "/user", edit(u.Email)), "OK")
	res := dash(t, s, "PUT", "/user", edit("new@example.com"))
	if res.Status != "EMAIL_CHANGE_NOT_ALLOWED_ERROR" || res.JSON["error"] == "" {
		t.Errorf("an email change: %s", res.Body)
	}
	bad := edit(u.Email)
	bad["recipeId"] = "magic"
	wantDashMessage(t, dash(t, s, "PUT", "/user", bad), http.StatusBadRequest, "Invalid recipe id")
	missing := edit(u.Email)
	delete(missing, "phone")
	wantDashMessage(t, dash(t, s, "PUT", "/user", missing), http.StatusBadRequest, "Required parameter 'phone' is missing or has an invalid type")
	nobody := edit(u.Email)
	nobody["recipeUserId"], nobody["userId"] = "nobody", "nobody"
	wantStatus(t, "nobody", dash(t, s, "PUT", "/user", nobody), "NO_USER_FOUND_ERROR")
}

func TestDashboardRoles(t *testing.T) {
	t.Parallel()
	s, rr, _ := dashServer(t, auth.Config{})
	_, u := s.SignedIn(authtest.Header)
	steps := []struct {
		method, path string
		body         any
		want         map[string]any
	}{
		{"PUT", "/userroles/role", map[string]any{"role": "admin", "permissions": []string{"posts:write"}}, map[string]any{"status": "OK", "createdNewRole": true}},
		{"PUT", "/userroles/role", map[string]any{"role": "admin", "permissions": []string{"posts:read"}}, map[string]any{"status": "OK", "createdNewRole": false}},
		{"GET", "/userroles/roles", nil, map[string]any{"status": "OK", "roles": []any{"operator", "admin"}}},
		{"GET", "/userroles/role/permissions?role=admin", nil, map[string]any{"status": "OK", "permissions": []any{"posts:write", "posts:read"}}},
		{"GET", "/userroles/role/permissions?role=nobody", nil, map[string]any{"status": "UNKNOWN_ROLE_ERROR"}},
		{"PUT", "/userroles/role/permissions/remove", map[string]any{"role": "admin", "permissions": []string{"posts:write"}}, map[string]any{"status": "OK"}},
		{"GET", "/userroles/role/permissions?role=admin", nil, map[string]any{"status": "OK", "permissions": []any{"posts:read"}}},
		{"PUT", "/userroles/role/permissions/remove", map[string]any{"role": "nobody", "permissions": []string{"x"}}, map[string]any{"status": "UNKNOWN_ROLE_ERROR"}},
		{"PUT", "/userroles/user/roles", map[string]any{"userId": u.ID, "role": "admin"}, map[string]any{"status": "OK", "didUserAlreadyHaveRole": false}},
		{"PUT", "/userroles/user/roles", map[string]any{"userId": u.ID, "role": "admin"}, map[string]any{"status": "OK", "didUserAlreadyHaveRole": true}},
		{"PUT", "/userroles/user/roles", map[string]any{"userId": u.ID, "role": "nobody"}, map[string]any{"status": "UNKNOWN_ROLE_ERROR"}},
		{"PUT", "/userroles/user/roles", map[string]any{"userId": "nobody", "role": "admin"}, map[string]any{"status": "NO_USER_FOUND_ERROR"}},
		{"GET", "/userroles/user/roles?userId=" + u.ID, nil, map[string]any{"status": "OK", "roles": []any{"admin"}}},
		// The app adds the tenant's segment to the user-role routes.
		{"GET", "/../../public/dashboard/api/userroles/user/roles?userId=" + u.ID, nil, map[string]any{"status": "OK", "roles": []any{"admin"}}},
		{"DELETE", "/userroles/user/roles?userId=" + u.ID + "&role=admin", nil, map[string]any{"status": "OK", "didUserHaveRole": true}},
		{"DELETE", "/userroles/user/roles?userId=" + u.ID + "&role=admin", nil, map[string]any{"status": "OK", "didUserHaveRole": false}},
		{"DELETE", "/userroles/user/roles?userId=" + u.ID + "&role=nobody", nil, map[string]any{"status": "UNKNOWN_ROLE_ERROR"}},
		{"DELETE", "/userroles/role?role=admin", nil, map[string]any{"status": "OK", "didRoleExist": true}},
		{"DELETE", "/userroles/role?role=admin", nil, map[string]any{"status": "OK", "didRoleExist": false}},
	}
	for _, st := range steps {
		path := "/auth/dashboard/api" + st.path
		if strings.HasPrefix(st.path, "/../../") {
			path = "/auth" + strings.TrimPrefix(st.path, "/../..")
		}
		res := dashAs(t, s, st.method, path, st.body, hdr("Authorization", "Bearer "+dashKey))
		if res.StatusCode != http.StatusOK || !reflect.DeepEqual(res.JSON, st.want) {
			t.Errorf("%s %s: %d %s, want %v", st.method, st.path, res.StatusCode, res.Body, st.want)
		}
	}
	if roles, err := rr.Roles(t.Context()); err != nil || !slices.Equal(roles, []string{"operator"}) {
		t.Errorf("roles through the Go API: %v %v", roles, err)
	}
	for _, tc := range []struct {
		method, path string
		body         any
	}{
		{"PUT", "/userroles/role", map[string]any{"role": "x", "permissions": "posts"}},
		{"PUT", "/userroles/role", map[string]any{"role": "x"}},
		{"PUT", "/userroles/role", map[string]any{"role": " ", "permissions": []string{}}},
		{"PUT", "/userroles/role", map[string]any{"role": strings.Repeat("r", 256), "permissions": []string{}}},
		{"PUT", "/userroles/role", map[string]any{"role": "x", "permissions": []string{""}}},
		{"DELETE", "/userroles/role", nil},
		{"GET", "/userroles/role/permissions", nil},
		{"GET", "/userroles/user/roles", nil},
		{"PUT", "/userroles/user/roles", map[string]any{"role": "admin"}},
	} {
		if res := dash(t, s, tc.method, tc.path, tc.body); res.StatusCode != http.StatusBadRequest || res.Message == "" {
			t.Errorf("%s %s %v: %d %s, want 400 with a message", tc.method, tc.path, tc.body, res.StatusCode, res.Body)
		}
	}

	off := authtest.NewServer(t, auth.Config{Dashboard: dashboard.New(dashboard.Config{APIKey: dashKey})})
	for _, r := range dashRoutes {
		if strings.HasPrefix(r.path, "/userroles/") {
			wantStatus(t, r.method+" "+r.path+" with roles off", dash(t, off, r.method, r.path, r.body), "FEATURE_NOT_ENABLED_ERROR")
		}
	}
}

func TestDashboardMisc(t *testing.T) {
	t.Parallel()
	s, _, _ := dashServer(t, auth.Config{})
	wantStatus(t, "key/validate", dash(t, s, "POST", "/key/validate", map[string]any{}), "OK")
	wantDashMessage(t, dashAs(t, s, "POST", "/auth/dashboard/api/key/validate", map[string]any{}, hdr("Authorization", "Bearer wrong")),
		http.StatusUnauthorized, "Unauthorised access")
	// Dashboard accounts with passwords are not supported: the route is
	// not served.
	if res := dash(t, s, "POST", "/signin", map[string]any{"email": "a@example.com", "password": "x"}); res.StatusCode != http.StatusNotFound {
		t.Errorf("signin: %d %s, want 404", res.StatusCode, res.Body)
	}
	if res := dash(t, s, "POST", "/user", map[string]any{}); res.StatusCode != http.StatusMethodNotAllowed || res.Header.Get("Allow") != "DELETE, GET, PUT, OPTIONS" {
		t.Errorf("POST /user: %d %q %s, want 405 naming DELETE, GET and PUT", res.StatusCode, res.Header.Get("Allow"), res.Body)
	}
	if res := dash(t, s, "HEAD", "/users/count", nil); res.StatusCode != http.StatusOK {
		t.Errorf("HEAD /users/count: %d", res.StatusCode)
	}
	if res := dash(t, s, "GET", "/users/count", nil); res.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("Cache-Control %q, want no-store", res.Header.Get("Cache-Control"))
	}
}

// TestDashboardBadInput sends each route of the API bodies and queries
// that are not what it takes: a clear 4xx, or a status, never a 5xx.
func TestDashboardBadInput(t *testing.T) {
	t.Parallel()
	s, _, _ := dashServer(t, auth.Config{})
	bodies := []string{"", "null", "[]", `"x"`, "{", `{"recipeUserId":null,"userId":7,"role":[],"permissions":{},"sessionHandles":null,"verified":null}`,
		`{"recipeUserId":"","newPassword":"","email":"","password":"","role":"","userId":""}`, strings.Repeat("x", 20000)}
	for _, r := range dashRoutes {
		path, _, _ := strings.Cut(r.path, "?")
		for _, query := range []string{"", "?userId=&recipeUserId=&role=&limit=", "?userId=%00&recipeUserId=" + strings.Repeat("a", 3000)} {
			for _, body := range bodies {
				h := hdr("Authorization", "Bearer "+dashKey, "Content-Type", "application/json")
				res := send(t, s, r.method, "/auth/dashboard/api"+path+query, body, h)
				if res.StatusCode >= 500 || res.JSON == nil {
					t.Errorf("%s %s%s with %.40q: %d %s, want a JSON answer below 500", r.method, path, query, body, res.StatusCode, res.Body)
				}
			}
		}
	}
}

// TestDashboardDocRoutes checks the routes that package dashboard's doc
// lists against those it serves.
func TestDashboardDocRoutes(t *testing.T) {
	t.Parallel()
	f, err := parser.ParseFile(token.NewFileSet(), "dashboard/doc.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range docRoute.FindAllStringSubmatch(f.Doc.Text(), -1) {
		path, _, _ := strings.Cut(strings.TrimRight(m[2], ".,;:)"), "?")
		if r := m[1] + " " + path; !slices.Contains(got, r) {
			got = append(got, r)
		}
	}
	s, _, _ := dashServer(t, auth.Config{})
	var want []string
	for _, r := range auth.Routes(s.Auth) {
		if _, path, _ := strings.Cut(r, " "); strings.HasPrefix(path, "/dashboard") {
			want = append(want, r)
		}
	}
	// The sign-in of dashboard accounts is named as not served.
	got = slices.DeleteFunc(got, func(r string) bool { return r == "POST /dashboard/api/signin" })
	compareLists(t, "package dashboard's doc", got, "the routes it serves", want)
}

// TestDashboardSessionWithoutRoles: with roles off, a session is no way
// in, whatever its user.
func TestDashboardSessionWithoutRoles(t *testing.T) {
	t.Parallel()
	s := authtest.NewServer(t, auth.Config{Dashboard: dashboard.New(dashboard.Config{APIKey: dashKey})})
	c, _ := s.SignedIn(authtest.Header)
	wantDashMessage(t, dashAs(t, s, "GET", "/auth/dashboard/api/users/count", nil, hdr("Authorization", "Bearer "+c.AccessToken)),
		http.StatusUnauthorized, "Unauthorised access")
}

// wantDashMessage checks an answer of code whose body is exactly
// {"message": msg}.
func wantDashMessage(t *testing.T, res *authtest.Response, code int, msg string) {
	t.Helper()
	if res.StatusCode != code || !reflect.DeepEqual(res.JSON, map[string]any{"message": msg}) {
		t.Errorf("got %d %s, want %d {\"message\":%q}", res.StatusCode, res.Body, code, msg)
	}
}

// A change of roles through the API reports its event, naming as the
// operator the key (dashboard.KeyOperator) or the session's user.
func TestDashboardRoleEvents(t *testing.T) {
	s, rr, events := dashServer(t, auth.Config{})
	_, u := s.SignedIn(authtest.Header)
	wantStatus(t, "create", dash(t, s, http.MethodPut, "/userroles/role", map[string]any{"role": "editor", "permissions": []string{}}), "OK")
	wantStatus(t, "give", dash(t, s, http.MethodPut, "/userroles/user/roles", map[string]string{"userId": u.ID, "role": "editor"}), "OK")
	given := events.of(auth.EventRoleGiven)
	if len(given) != 1 || given[0].UserID != u.ID || given[0].Role != "editor" || given[0].Operator != dashboard.KeyOperator {
		t.Errorf("role_given events: %+v", given)
	}
	created := events.of(auth.EventRoleCreated)
	if i := slices.IndexFunc(created, func(e auth.Event) bool { return e.Role == "editor" }); i < 0 || created[i].Operator != dashboard.KeyOperator {
		t.Errorf("role_created events: %+v, want editor's by the key", created)
	}
	if _, err := rr.CreateRole(t.Context(), "operators", "dashboard"); err != nil {
		t.Fatal(err)
	}
	op, opUser := s.SignedIn(authtest.Header)
	if _, err := rr.Give(t.Context(), opUser.ID, "operators"); err != nil {
		t.Fatal(err)
	}
	res := op.Do(http.MethodDelete, "/auth/dashboard/api/userroles/user/roles?userId="+u.ID+"&role=editor", nil)
	wantStatus(t, "take, by a session", res, "OK")
	if taken := events.of(auth.EventRoleTaken); len(taken) != 1 || taken[0].Operator != opUser.ID {
		t.Errorf("role_taken events: %+v, want the session's user as the operator", taken)
	}
}

// A client's refused requests are limited: past the allowance, every
// request of that client with an Authorization header is 429 before its
// key is compared, the right key included; the allowance grows back,
// and requests that open the API spend none of it.
func TestDashboardKeyGuessesLimited(t *testing.T) {
	s, _, _ := dashServer(t, auth.Config{RateLimits: auth.RateLimits{ClientDashboardFailures: auth.Rate{Burst: 3, Every: time.Minute}}})
	key := func(k string) int {
		return dashAs(t, s, http.MethodGet, "/auth/dashboard/api/users/count", nil, hdr("Authorization", "Bearer "+k)).StatusCode
	}
	for range 5 {
		if got := key(dashKey); got != http.StatusOK {
			t.Fatalf("the right key: %d, want 200, spending nothing", got)
		}
	}
	for i := range 3 {
		if got := key("guess-" + strconv.Itoa(i)); got != http.StatusUnauthorized {
			t.Errorf("wrong key %d: %d, want 401", i, got)
		}
	}
	res := dashAs(t, s, http.MethodGet, "/auth/dashboard/api/users/count", nil, hdr("Authorization", "Bearer guess-3"))
	if res.StatusCode != http.StatusTooManyRequests || res.Header.Get("Retry-After") == "" {
		t.Errorf("a fourth wrong key: %d (Retry-After %q), want 429", res.StatusCode, res.Header.Get("Retry-After"))
	}
	if got := key(dashKey); got != http.StatusTooManyRequests {
		t.Errorf("the right key past the allowance: %d, want 429", got)
	}
	s.Clock.Advance(time.Minute)
	if got := key(dashKey); got != http.StatusOK {
		t.Errorf("the right key a minute later: %d, want 200", got)
	}
}

// Neither the API key, a wrong one, nor a password an operator sets is in
// any log record, event or audit entry.
func TestDashboardSecretsNotLogged(t *testing.T) {
	logs := &logCapture{}
	s, _, events := dashServer(t, auth.Config{Logger: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Audit: auth.AuditConfig{Enabled: true}})
	const wrong, password = "a-wrong-key-0123456789-abcdef", "Operator-set-pw-91"
	dashAs(t, s, http.MethodGet, "/auth/dashboard/api/users/count", nil, hdr("Authorization", "Bearer "+wrong))
	res := dash(t, s, http.MethodPost, "/user/emailpassword", map[string]any{"email": "op-made@example.com", "password": password})
	user, _ := res.JSON["user"].(map[string]any)
	id, _ := user["id"].(string)
	wantStatus(t, "create", res, "OK")
	wantStatus(t, "set the password", dash(t, s, http.MethodPut, "/user/password?userId="+id, map[string]any{"recipeUserId": id, "newPassword": password + "x"}), "OK")
	page, err := s.Auth.AuditLog(t.Context(), store.AuditQuery{Limit: store.MaxUserPage})
	if err != nil || len(page.Entries) == 0 {
		t.Fatalf("the audit log: %d entries, %v", len(page.Entries), err)
	}
	all := logs.String() + fmt.Sprintf("%+v %+v", events.of(auth.EventUserCreated), page.Entries)
	for _, secret := range []string{dashKey, wrong, password} {
		if strings.Contains(all, secret) {
			t.Errorf("%q is in the logs, events or audit log", secret)
		}
	}
	if !strings.Contains(all, "password_set") || !strings.Contains(all, "user_created") {
		t.Error("the check read nothing: no password_set or user_created in the logs and audit log")
	}
}
