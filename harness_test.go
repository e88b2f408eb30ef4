package auth_test

// The helpers that the test files of this package share: sending raw
// requests, reading what an answer hands out (cookies, headers, the
// front-token, JWTs) and checking answers against the protocol. A helper
// that one file alone uses stays in that file.

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/emailverification"
	"github.com/latchkit/auth/mailer"
	"github.com/latchkit/auth/store"
	"github.com/latchkit/auth/store/memstore"
)

const (
	refreshPath   = "/auth/session/refresh"
	day           = 24 * time.Hour
	accessExpired = time.Hour + 6*time.Second // past the lifetime, with a margin
	wrongPassword = "wrong horse 2"
)

// ---- reading what an answer hands out ----

// frontTokenJSON is the decoded front-token header.
type frontTokenJSON struct {
	UID string         `json:"uid"`
	ATE int64          `json:"ate"`
	UP  map[string]any `json:"up"`
}

// decodeFrontToken decodes a front-token as the SDKs do: standard base64
// with padding (atob), then JSON with exactly uid, ate and up.
func decodeFrontToken(t testing.TB, v string) frontTokenJSON {
	t.Helper()
	if v == "" {
		t.Fatal("no front-token")
	}
	if strings.ContainsAny(v, ";,\" \t") {
		t.Errorf("front-token %q is not cookie-safe", v)
	}
	b, err := base64.StdEncoding.Strict().DecodeString(v)
	if err != nil {
		t.Fatalf("front-token %q is not standard padded base64: %v", v, err)
	}
	var ft frontTokenJSON
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ft); err != nil {
		t.Fatalf("front-token JSON %s: %v", b, err)
	}
	return ft
}

// jwtParts decodes the header and payload of a JWT without verifying it.
func jwtParts(t testing.TB, tok string) (header, payload map[string]any) {
	t.Helper()
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("access token %q is not a JWS", tok)
	}
	for i, dst := range []*map[string]any{&header, &payload} {
		b, err := base64.RawURLEncoding.DecodeString(parts[i])
		if err != nil {
			t.Fatalf("access token part %d: %v", i, err)
		}
		if err := json.Unmarshal(b, dst); err != nil {
			t.Fatalf("access token part %d: %v", i, err)
		}
	}
	return header, payload
}

func cookiesOf(res *authtest.Response) map[string]*http.Cookie {
	m := map[string]*http.Cookie{}
	for _, c := range (&http.Response{Header: res.Header}).Cookies() {
		m[c.Name] = c
	}
	return m
}

func exposed(res *authtest.Response) []string {
	var out []string
	for _, v := range res.Header.Values("Access-Control-Expose-Headers") {
		for _, n := range strings.Split(v, ",") {
			if n = strings.TrimSpace(n); n != "" {
				out = append(out, strings.ToLower(n))
			}
		}
	}
	return out
}

// ---- checking answers ----

// wantMessage checks a {"message": ...} answer byte for byte.
func wantMessage(t testing.TB, res *authtest.Response, code int, msg string) {
	t.Helper()
	if code == http.StatusUnauthorized {
		// Every 401 says why, in a header and beside the message; which
		// reason is the business of wantRefusal.
		wantRefusal(t, res, msg, auth.Reason(res.Header.Get(auth.ReasonHeader)))
		return
	}
	want := fmt.Sprintf(`{"message":%q}`, msg)
	if res.StatusCode != code || string(res.Body) != want {
		t.Fatalf("got %d %s, want %d %s", res.StatusCode, res.Body, code, want)
	}
}

// wantRefusal checks a 401 byte for byte: the protocol's message, and the
// reason in the body and in ReasonHeader.
func wantRefusal(t testing.TB, res *authtest.Response, msg string, reason auth.Reason) {
	t.Helper()
	want := fmt.Sprintf(`{"message":%q,"reason":%q}`, msg, reason)
	if res.StatusCode != http.StatusUnauthorized || string(res.Body) != want || reason == "" {
		t.Fatalf("got %d %s, want 401 %s", res.StatusCode, res.Body, want)
	}
	if got := res.Header.Get(auth.ReasonHeader); got != string(reason) {
		t.Fatalf("%s: %q, want %q", auth.ReasonHeader, got, reason)
	}
}

// wantBody checks a 200 answer byte for byte.
func wantBody(t testing.TB, res *authtest.Response, want string) {
	t.Helper()
	if res.StatusCode != http.StatusOK || string(res.Body) != want {
		t.Fatalf("got %d %s, want 200 %s", res.StatusCode, res.Body, want)
	}
}

// wantNoTokens checks that a response neither issues nor clears tokens:
// authtest finds none issued, and no Set-Cookie, front-token or
// st-*-token header and no token field in the body is there at all, not
// even an emptied one.
func wantNoTokens(t testing.TB, res *authtest.Response) {
	t.Helper()
	if res.IssuedTokens() {
		t.Errorf("the answer issues tokens: %d %v %s", res.StatusCode, res.Header, res.Body)
	}
	for _, h := range []string{"Front-Token", "St-Access-Token", "St-Refresh-Token", "Set-Cookie"} {
		if v, ok := res.Header[h]; ok {
			t.Errorf("unexpected %s: %q", h, v)
		}
	}
	for _, k := range []string{"accessToken", "refreshToken"} {
		if _, ok := res.JSON[k]; ok {
			t.Errorf("unexpected %s in body %s", k, res.Body)
		}
	}
}

func checkCookie(t testing.TB, c *http.Cookie, name, path string, sameSite http.SameSite, expires time.Time) {
	t.Helper()
	if c == nil {
		t.Fatalf("no %s cookie", name)
	}
	if c.Path != path || c.Domain != "" || !c.HttpOnly || !c.Secure || c.SameSite != sameSite {
		t.Errorf("cookie %s: Path=%q Domain=%q HttpOnly=%v Secure=%v SameSite=%v; want Path=%q, no Domain, HttpOnly, Secure, SameSite=%v",
			name, c.Path, c.Domain, c.HttpOnly, c.Secure, c.SameSite, path, sameSite)
	}
	if !c.Expires.Equal(expires) {
		t.Errorf("cookie %s expires %v, want %v", name, c.Expires, expires)
	}
}

// wantTokens checks a response that issues a session in mode m for user
// uid, and returns the tokens it hands out.
func wantTokens(t testing.TB, s *authtest.Server, res *authtest.Response, m authtest.Mode, uid string) (access, refresh string) {
	t.Helper()
	return wantTokensSameSite(t, s, res, m, uid, http.SameSiteLaxMode)
}

func wantTokensSameSite(t testing.TB, s *authtest.Server, res *authtest.Response, m authtest.Mode, uid string, sameSite http.SameSite) (access, refresh string) {
	t.Helper()
	return wantTokensUntil(t, s, res, m, uid, sameSite, s.Clock.Now().Add(auth.DefaultRefreshTokenLifetime))
}

// wantTokensUntil is wantTokensSameSite for a session that ends at end:
// a refresh repeated inside the reuse window keeps the end the exchange
// gave the session.
func wantTokensUntil(t testing.TB, s *authtest.Server, res *authtest.Response, m authtest.Mode, uid string, sameSite http.SameSite, end time.Time) (access, refresh string) {
	t.Helper()
	if res.StatusCode != http.StatusOK || res.Status != "OK" {
		t.Fatalf("got %d %s, want 200 OK", res.StatusCode, res.Body)
	}
	if got := res.Header.Get("Cache-Control"); got != "no-store" {
		t.Errorf("Cache-Control %q, want no-store", got)
	}
	now := s.Clock.Now()
	cookies := cookiesOf(res)
	_, hasHA := res.Header["St-Access-Token"]
	_, hasHR := res.Header["St-Refresh-Token"]
	_, hasBA := res.JSON["accessToken"]
	_, hasBR := res.JSON["refreshToken"]
	wantExpose := []string{"front-token"}
	switch m {
	case authtest.Cookie:
		if hasHA || hasHR || hasBA || hasBR {
			t.Errorf("cookie mode leaks tokens: headers %v, body %s", res.Header, res.Body)
		}
		ac, rc := cookies["sAccessToken"], cookies["sRefreshToken"]
		checkCookie(t, ac, "sAccessToken", "/", sameSite, end)
		checkCookie(t, rc, "sRefreshToken", refreshPath, sameSite, end)
		if n := len(res.Header.Values("Set-Cookie")); n != 2 {
			t.Errorf("%d Set-Cookie headers, want 2", n)
		}
		access, refresh = ac.Value, rc.Value
	case authtest.Header:
		if len(res.Header.Values("Set-Cookie")) != 0 || hasBA || hasBR {
			t.Errorf("header mode sets cookies or body tokens: %v %s", res.Header.Values("Set-Cookie"), res.Body)
		}
		access, refresh = res.Header.Get("St-Access-Token"), res.Header.Get("St-Refresh-Token")
		wantExpose = append(wantExpose, "st-access-token", "st-refresh-token")
	case authtest.Body:
		if len(res.Header.Values("Set-Cookie")) != 0 || hasHA || hasHR {
			t.Errorf("body mode sets cookies or token headers: %v", res.Header)
		}
		access, _ = res.JSON["accessToken"].(string)
		refresh, _ = res.JSON["refreshToken"].(string)
	}
	if access == "" || refresh == "" {
		t.Fatalf("mode %v: access %q, refresh %q", m, access, refresh)
	}
	if got := exposed(res); !slices.Equal(got, wantExpose) {
		t.Errorf("Access-Control-Expose-Headers %q, want %q", got, wantExpose)
	}
	// The refresh token: opaque, at least 128 bits, cookie- and header-safe.
	if len(refresh) < 22 || strings.ContainsFunc(refresh, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_')
	}) {
		t.Errorf("refresh token %q is not a URL-safe random token of 128+ bits", refresh)
	}

	ft := decodeFrontToken(t, res.Header.Get("Front-Token"))
	_, payload := jwtParts(t, access)
	if !reflect.DeepEqual(ft.UP, payload) {
		t.Errorf("front-token up %v differs from the access token payload %v", ft.UP, payload)
	}
	exp := now.Add(auth.DefaultAccessTokenLifetime)
	if ft.UID != uid || ft.ATE != exp.UnixMilli() {
		t.Errorf("front-token uid %q ate %d, want %q %d", ft.UID, ft.ATE, uid, exp.UnixMilli())
	}
	iss := s.AuthConfig.Issuer
	if iss == "" {
		iss = auth.DefaultIssuer
	}
	want := map[string]any{
		"sub": uid, "rsub": uid, "tId": "public", "iss": iss,
		"iat": float64(now.Unix()), "exp": float64(exp.Unix()),
	}
	for k, v := range want {
		if ft.UP[k] != v {
			t.Errorf("front-token up.%s = %v, want %v", k, ft.UP[k], v)
		}
	}
	if h, _ := ft.UP["sessionHandle"].(string); h == "" {
		t.Errorf("front-token up has no sessionHandle: %v", ft.UP)
	}
	if ft.ATE != int64(ft.UP["exp"].(float64))*1000 {
		t.Errorf("ate %d != exp*1000", ft.ATE)
	}
	return access, refresh
}

// wantCleared checks that a response clears the session: front-token
// remove, and the cookies and/or header tokens emptied.
func wantCleared(t testing.TB, res *authtest.Response, cookies, headers bool) {
	t.Helper()
	if got := res.Header.Values("Front-Token"); !slices.Equal(got, []string{"remove"}) {
		t.Errorf("front-token %q, want remove", got)
	}
	got := cookiesOf(res)
	for name, path := range map[string]string{"sAccessToken": "/", "sRefreshToken": refreshPath} {
		c := got[name]
		switch {
		case !cookies && c != nil:
			t.Errorf("unexpected cookie %v", c)
		case cookies && c == nil:
			t.Errorf("cookie %s not cleared", name)
		case cookies && (c.Value != "" || c.Path != path || c.Expires.Unix() != 0 || !c.HttpOnly || !c.Secure):
			t.Errorf("cookie %s not cleared as the protocol says: %q", name, c.Raw)
		}
	}
	for _, h := range []string{"St-Access-Token", "St-Refresh-Token"} {
		v, ok := res.Header[h]
		switch {
		case headers && !slices.Equal(v, []string{""}):
			t.Errorf("%s = %q (present %v), want one empty value", h, v, ok)
		case !headers && ok:
			t.Errorf("unexpected %s: %q", h, v)
		}
	}
	if headers && !slices.Contains(exposed(res), "st-access-token") {
		t.Errorf("Access-Control-Expose-Headers %q lacks st-access-token", exposed(res))
	}
	if !slices.Contains(exposed(res), "front-token") {
		t.Errorf("Access-Control-Expose-Headers %q lacks front-token", exposed(res))
	}
}

// ---- sending requests ----

// sendTo sends a plain request. It may run outside the test goroutine.
func sendTo(hc *http.Client, base, method, path, body string, hdr http.Header) (*authtest.Response, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, base+path, rd)
	if err != nil {
		return nil, err
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	res, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	out := &authtest.Response{StatusCode: res.StatusCode, Header: res.Header}
	if out.Body, err = io.ReadAll(res.Body); err != nil {
		return nil, err
	}
	if json.Unmarshal(out.Body, &out.JSON) == nil {
		out.Status, _ = out.JSON["status"].(string)
		out.Message, _ = out.JSON["message"].(string)
	}
	return out, nil
}

func send(t testing.TB, s *authtest.Server, method, path, body string, hdr http.Header) *authtest.Response {
	t.Helper()
	res, err := sendTo(s.Client(), s.URL, method, path, body, hdr)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return res
}

func hdr(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

// credBody is authtest.Credentials as a string, the form that send and the
// input suite's body tables take.
func credBody(email, password string) string {
	return string(authtest.Credentials(email, password))
}

// modeHeaders are the request headers of a transfer mode.
func modeHeaders(m authtest.Mode) []string {
	switch m {
	case authtest.Header:
		return []string{"st-auth-mode", "header"}
	case authtest.Body:
		return []string{"fg-auth-mode", "body"}
	}
	return nil
}

// ---- sessions and protected routes ----

func handleOf(t testing.TB, c *authtest.Client) string {
	t.Helper()
	h, _ := decodeFrontToken(t, c.FrontToken).UP["sessionHandle"].(string)
	return h
}

// wantSession checks that the client's access token opens /api/session as
// user uid.
func wantSession(t testing.TB, c *authtest.Client, uid string) {
	t.Helper()
	res := c.Get("/api/session")
	if res.StatusCode != http.StatusOK || res.JSON["userId"] != uid {
		t.Fatalf("GET /api/session: %d %s, want 200 for %s", res.StatusCode, res.Body, uid)
	}
}

// addRoutes adds /api/any (any method, RequireSession) and /api/optional
// (OptionalSession); both answer {"userId": ...} ("" without a session).
func addRoutes(s *authtest.Server) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		uid := ""
		if sess, ok := auth.SessionFromContext(r.Context()); ok {
			uid = sess.UserID
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"userId":%q,"method":%q}`, uid, r.Method)
	})
	s.Mux.Handle("/api/any", s.Auth.RequireSession(h))
	s.Mux.Handle("/api/optional", s.Auth.OptionalSession(h))
}

// ---- the raw-request fixture of the input and fuzz suites ----

// textColumnStore wraps the memory store. It counts the writes that took effect, so
// a test can show that a request wrote nothing, and it refuses emails that a
// SQL text column refuses (NUL bytes, invalid UTF-8), as a database would:
// such a value reaching the store is a 500 in production.
type textColumnStore struct {
	store.Store
	writes atomic.Int64
}

func sqlText(s string) error {
	if !utf8.ValidString(s) || strings.ContainsRune(s, 0) {
		return fmt.Errorf("textColumnStore: %q cannot be stored in a text column", s)
	}
	return nil
}

func (s *textColumnStore) counted(err error) error {
	if err == nil || errors.Is(err, store.ErrTokenReused) {
		s.writes.Add(1)
	}
	return err
}

func (s *textColumnStore) CreateUser(ctx context.Context, u store.User, first store.Login) error {
	if err := sqlText(first.Email); err != nil {
		return err
	}
	return s.counted(s.Store.CreateUser(ctx, u, first))
}

func (s *textColumnStore) Login(ctx context.Context, k store.LoginKey) (store.Login, error) {
	if err := sqlText(k.Subject); err != nil {
		return store.Login{}, err
	}
	return s.Store.Login(ctx, k)
}

func (s *textColumnStore) UpdatePasswordHash(ctx context.Context, userID, oldHash, newHash string) error {
	return s.counted(s.Store.UpdatePasswordHash(ctx, userID, oldHash, newHash))
}

func (s *textColumnStore) CreateCode(ctx context.Context, c store.Code) error {
	return s.counted(s.Store.CreateCode(ctx, c))
}

func (s *textColumnStore) ResetPassword(ctx context.Context, token store.TokenHash, hash string, now time.Time) (store.Login, []string, error) {
	u, handles, err := s.Store.ResetPassword(ctx, token, hash, now)
	return u, handles, s.counted(err)
}

func (s *textColumnStore) CreateSession(ctx context.Context, sess store.Session, refresh store.TokenHash, epoch int64) error {
	return s.counted(s.Store.CreateSession(ctx, sess, refresh, epoch))
}

func (s *textColumnStore) RotateRefreshToken(ctx context.Context, r store.Rotation) (store.Rotated, error) {
	res, err := s.Store.RotateRefreshToken(ctx, r)
	return res, s.counted(err)
}

func (s *textColumnStore) RevokeSession(ctx context.Context, handle string, why store.EndReason) error {
	return s.counted(s.Store.RevokeSession(ctx, handle, why))
}

func (s *textColumnStore) RevokeUserSessions(ctx context.Context, userID string) ([]string, error) {
	handles, err := s.Store.RevokeUserSessions(ctx, userID)
	if len(handles) > 0 {
		s.writes.Add(1)
	}
	return handles, err
}

func (s *textColumnStore) AddSigningKey(ctx context.Context, k store.SigningKey) error {
	return s.counted(s.Store.AddSigningKey(ctx, k))
}

// inFixture is a test server over a textColumnStore.
type inFixture struct {
	*authtest.Server
	store *textColumnStore
	mem   *memstore.Store
	hc    *http.Client
}

func newInFixture(t testing.TB, cfg auth.Config) *inFixture {
	t.Helper()
	mem := memstore.New()
	st := &textColumnStore{Store: mem}
	cfg.Store = st
	s := authtest.NewServer(t, cfg)
	return &inFixture{Server: s, store: st, mem: mem, hc: s.Client()}
}

// inReply is a response read in full.
type inReply struct {
	code    int
	header  http.Header
	body    []byte
	json    map[string]any
	message string
	status  string
}

// send makes a raw request. Headers are copied as given, repeats included.
// A transport error (which is what a panic in a handler looks like from
// outside) or a 5xx fails the test.
func (f *inFixture) send(t *testing.T, method, path string, body io.Reader, header http.Header) inReply {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, f.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	res, err := f.hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	r := inReply{code: res.StatusCode, header: res.Header}
	if r.body, err = io.ReadAll(res.Body); err != nil {
		t.Fatalf("%s %s: reading the answer: %v", method, path, err)
	}
	if json.Unmarshal(r.body, &r.json) == nil {
		r.message, _ = r.json["message"].(string)
		r.status, _ = r.json["status"].(string)
	}
	if r.code >= 500 {
		t.Errorf("%s %s: %d %s, want no 5xx", method, path, r.code, r.body)
	}
	return r
}

// wantMessage checks a {"message"} answer; msg "" accepts any non-empty
// message.
func (r inReply) wantMessage(t *testing.T, code int, msg string) {
	t.Helper()
	if r.code != code {
		t.Errorf("got %d %s, want %d", r.code, r.body, code)
		return
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
	if r.json == nil || r.message == "" {
		t.Errorf("body %s, want a JSON object with a message", r.body)
	} else if msg != "" && r.message != msg {
		t.Errorf("message %q, want %q", r.message, msg)
	}
}

// response is the reply as an authtest.Response, for the checks that take
// one (wantNoTokens).
func (r inReply) response() *authtest.Response {
	return &authtest.Response{StatusCode: r.code, Header: r.header, Body: r.body,
		Status: r.status, Message: r.message, JSON: r.json}
}

// wantRefreshRefused checks a 401 from the refresh endpoint: unauthorised, and the
// client told to forget its session.
func (r inReply) wantRefreshRefused(t *testing.T) {
	t.Helper()
	r.wantMessage(t, http.StatusUnauthorized, "unauthorised")
	if ft := r.header.Get("Front-Token"); ft != "remove" {
		t.Errorf("front-token %q, want remove", ft)
	}
}

// Password reset: the answers, the events and log of a reset, and the
// token in an emailed link; used by the reset, outbox and email tests.

// newPassword is a password that passes the default policy.
const newPassword = "brand new secret 7"

// okBody is the whole body of every OK answer of the reset endpoints.
const okBody = `{"status":"OK"}`

// urlSafe is the alphabet a reset token may use in a link that
// URLSearchParams reads back unchanged.
var urlSafe = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// wantReply checks the status code and the exact body of a response.
func wantReply(t testing.TB, what string, code int, body []byte, wantCode int, wantBody string) {
	t.Helper()
	if code != wantCode || string(body) != wantBody {
		t.Errorf("%s: %d %s, want %d %s", what, code, body, wantCode, wantBody)
	}
}

// sameBytes checks that two answers are indistinguishable: status, body and
// every header but Date.
func sameBytes(t testing.TB, what string, a, b *authtest.Response) {
	t.Helper()
	ha, hb := a.Header.Clone(), b.Header.Clone()
	ha.Del("Date")
	hb.Del("Date")
	if a.StatusCode != b.StatusCode || !bytes.Equal(a.Body, b.Body) || !reflect.DeepEqual(ha, hb) {
		t.Errorf("%s: answers differ:\n%d %v %s\n%d %v %s", what, a.StatusCode, ha, a.Body, b.StatusCode, hb, b.Body)
	}
}

// eventLog records what Config.OnEvent reports, and lets a test wait
// for reports made off the request path.
type eventLog struct {
	mu      sync.Mutex
	events  []auth.Event
	changed chan struct{} // closed and replaced on every event
}

func newEventLog() *eventLog { return &eventLog{changed: make(chan struct{})} }

func (r *eventLog) record(_ context.Context, e auth.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
	close(r.changed)
	r.changed = make(chan struct{})
}

// of returns the events of a kind so far.
func (r *eventLog) of(kind auth.EventKind) []auth.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []auth.Event
	for _, e := range r.events {
		if e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}

// waitFor waits until n events of a kind have been reported and returns
// them.
func (r *eventLog) waitFor(t testing.TB, kind auth.EventKind, n int, timeout time.Duration) []auth.Event {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		r.mu.Lock()
		changed := r.changed
		r.mu.Unlock()
		if got := r.of(kind); len(got) >= n {
			return got
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("%d %s events after %v, want %d", len(r.of(kind)), kind, timeout, n)
		}
	}
}

// logCapture is a Config.Logger writing JSON records to a buffer, for the
// reset tests, the fault sweep and the third-party log check.
type logCapture struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logCapture) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logCapture) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func (l *logCapture) logger() *slog.Logger {
	return slog.New(slog.NewJSONHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// records returns the records with a message.
func (l *logCapture) records(t testing.TB, msg string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for line := range strings.Lines(l.String()) {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if rec["msg"] == msg {
			out = append(out, rec)
		}
	}
	return out
}

// wantNoSecrets checks that no log record holds any of the secrets.
func (l *logCapture) wantNoSecrets(t testing.TB, secrets ...string) {
	t.Helper()
	text := l.String()
	for _, s := range secrets {
		if s != "" && strings.Contains(text, s) {
			t.Errorf("the log holds the secret %q:\n%s", s, text)
		}
	}
}

// tokenIn extracts the reset token of a message without failing, for use
// inside a Mailer.
var tokenIn = regexp.MustCompile(`[?&]token=([A-Za-z0-9_%-]+)`)

func tokenOf(m mailer.Message) string {
	if sub := tokenIn.FindStringSubmatch(m.Text); sub != nil {
		tok, _ := url.QueryUnescape(sub[1])
		return tok
	}
	return ""
}

// mailToken waits for the nth message of the server's Mailbox and returns
// it with its token.
func mailToken(t testing.TB, s *authtest.Server, n int) (mailer.Message, string) {
	t.Helper()
	msgs := s.Mailbox.WaitFor(t, n, 5*time.Second)
	m := msgs[n-1]
	_, tok := authtest.ResetLink(t, m)
	return m, tok
}

// requestToken asks for a reset email for email and returns the token it
// carries, the nth message of the Mailbox.
func requestToken(t testing.TB, s *authtest.Server, email string, n int) string {
	t.Helper()
	res := s.NewClient(authtest.Header).RequestPasswordReset(email)
	wantReply(t, "reset request", res.StatusCode, res.Body, http.StatusOK, okBody)
	m, tok := mailToken(t, s, n)
	if m.To.Address != email {
		t.Fatalf("message %d went to %s, want %s", n, m.To.Address, email)
	}
	return tok
}

// A storedUser is a user put into a store directly, with its first login:
// u.ID is the user's id, u.Email and u.PasswordHash its login's.
type storedUser struct {
	store.User
	store.Login
}

// passwordUser is a user who signs in with email and the password of hash.
func passwordUser(id, email, hash string) storedUser {
	return storedUser{
		User:  store.User{ID: id, TimeJoined: authtest.Start},
		Login: store.Login{LoginKey: store.EmailPasswordKey(email), UserID: id, Email: email, PasswordHash: hash, CreatedAt: authtest.Start},
	}
}

// socialUser is a user who signed up with a provider that reported email:
// no password login.
func socialUser(id, email string) storedUser {
	return storedUser{
		User: store.User{ID: id, TimeJoined: authtest.Start},
		Login: store.Login{LoginKey: store.LoginKey{Method: store.MethodThirdParty, ThirdParty: "google", Subject: "g-" + id},
			UserID: id, Email: email, EmailVerified: true, CreatedAt: authtest.Start},
	}
}

// addTo creates u in st.
func (u storedUser) addTo(tb testing.TB, st store.Store) storedUser {
	tb.Helper()
	if err := st.CreateUser(tb.Context(), u.User, u.Login); err != nil {
		tb.Fatalf("creating user %s: %v", u.User.ID, err)
	}
	return u
}

// ---- account linking: linking_test.go and userdelete_test.go ----

// linkingServer is a server with account linking on or off, email
// verification optional (its links are how a user proves an inbox), and
// the fake OpenID provider of authtest, whose identity each test sets
// before it signs in with it.
func linkingServer(t *testing.T, linking bool, cfg auth.Config) (*authtest.Server, *authtest.Provider) {
	t.Helper()
	p := authtest.NewProvider(t)
	cfg.AccountLinking = linking
	cfg.EmailVerification.Mode = emailverification.Optional
	cfg.ThirdParty.Providers = append(cfg.ThirdParty.Providers, p.Provider())
	return authtest.NewServer(t, cfg), p
}

// userObject is the user object of a sign-in answer.
func userObject(t testing.TB, res *authtest.Response) map[string]any {
	t.Helper()
	u, ok := res.JSON["user"].(map[string]any)
	if !ok {
		t.Fatalf("no user in %d %s", res.StatusCode, res.Body)
	}
	return u
}

// loginMethodsOf is the loginMethods of a user object.
func loginMethodsOf(t testing.TB, user map[string]any) []map[string]any {
	t.Helper()
	raw, _ := user["loginMethods"].([]any)
	out := make([]map[string]any, len(raw))
	for i, m := range raw {
		out[i], _ = m.(map[string]any)
	}
	return out
}

// wantOK checks an OK sign-in answer and returns its user's id.
func wantOK(t testing.TB, what string, res *authtest.Response) string {
	t.Helper()
	if res.StatusCode != http.StatusOK || res.Status != "OK" {
		t.Fatalf("%s: %d %s, want 200 OK", what, res.StatusCode, res.Body)
	}
	id, _ := userObject(t, res)["id"].(string)
	if id == "" {
		t.Fatalf("%s: no user id in %s", what, res.Body)
	}
	return id
}

// wantNotAllowed checks a refusal byte for byte, and that it starts no
// session.
func wantNotAllowed(t testing.TB, what string, res *authtest.Response, body string) {
	t.Helper()
	wantReply(t, what, res.StatusCode, res.Body, http.StatusOK, body)
	if res.IssuedTokens() {
		t.Errorf("%s: the refusal issued tokens", what)
	}
}

// signUpWith signs up with email and password and returns the client and
// the user's id.
func signUpWith(t testing.TB, s *authtest.Server, m authtest.Mode, email, password string) (*authtest.Client, string) {
	t.Helper()
	c := s.NewClient(m)
	return c, wantOK(t, "sign-up of "+email, c.SignUp(email, password))
}

// verifyByLink verifies the email of c's login method as its user does:
// a link is sent to it, and opened.
func verifyByLink(t testing.TB, s *authtest.Server, c *authtest.Client, n int) {
	t.Helper()
	tok := verificationToken(t, s, c, n)
	res := c.VerifyEmail(tok)
	wantReply(t, "verify email", res.StatusCode, res.Body, http.StatusOK, okBody)
}

// linkedUser makes a user who signed up with email and a password, verified
// the email, and then signed in with the provider as subject, which vouches
// for the same email: one user, two login methods. It returns the
// clients of both sessions (in header mode), the user's id and the id of
// the third-party login method.
func linkedUser(t testing.TB, s *authtest.Server, p *authtest.Provider, email, subject string) (pw, tp *authtest.Client, uid, tpLogin string) {
	t.Helper()
	pw, uid = signUpWith(t, s, authtest.Header, email, authtest.Password)
	if err := s.Auth.SetEmailVerified(t.Context(), uid, true); err != nil {
		t.Fatalf("verifying %s: %v", email, err)
	}
	p.SetIdentity(subject, email, true)
	tp = s.NewClient(authtest.Header)
	res := tp.SignInWithProvider(p)
	if got := wantOK(t, "provider sign-in of "+email, res); got != uid {
		t.Fatalf("provider sign-in of %s as %s, want the password user %s: %s", email, got, uid, res.Body)
	}
	for _, m := range loginMethodsOf(t, userObject(t, res)) {
		if m["recipeId"] == "thirdparty" {
			tpLogin, _ = m["recipeUserId"].(string)
		}
	}
	if tpLogin == "" || tpLogin == uid {
		t.Fatalf("linked third-party login id %q (user %s): %s", tpLogin, uid, res.Body)
	}
	return pw, tp, uid, tpLogin
}

// loginsWithEmail reads the logins of an email from the store, of every user.
func loginsWithEmail(t testing.TB, st store.Store, email string) []store.Login {
	t.Helper()
	logins, err := st.LoginsByEmail(t.Context(), email)
	if err != nil {
		t.Fatalf("logins of %s: %v", email, err)
	}
	return logins
}
