package authtest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"
)

// Mode is how a Client asks for its tokens.
type Mode int

const (
	// Cookie mode: no mode header; tokens travel in cookies, which the
	// client keeps in a cookie jar as a browser would.
	Cookie Mode = iota
	// Header mode: st-auth-mode: header; tokens come in st-access-token
	// and st-refresh-token headers and go back as Authorization: Bearer.
	Header
	// Body mode: fg-auth-mode: body; tokens come in the JSON body and go
	// back as Authorization: Bearer.
	Body
)

// The cookies of cookie mode.
const (
	accessCookie  = "sAccessToken"
	refreshCookie = "sRefreshToken"
)

// Modes lists every mode, for table tests.
var Modes = []Mode{Cookie, Header, Body}

// String returns the mode's name: "cookie", "header" or "body".
func (m Mode) String() string {
	switch m {
	case Header:
		return "header"
	case Body:
		return "body"
	}
	return "cookie"
}

// Client speaks the protocol to a Server in one mode and keeps the tokens
// it is given, like a frontend SDK. It is not safe for concurrent use.
type Client struct {
	// Mode is the transfer mode the client asks for.
	Mode Mode
	// HTTP sends the requests; in cookie mode its jar holds the tokens.
	HTTP *http.Client
	// AccessToken and RefreshToken are the tokens of header and body mode.
	// Tests may set them, to replay an old token for instance.
	AccessToken, RefreshToken string
	// FrontToken is the last front-token header received ("" after
	// "remove").
	FrontToken string
	// Header is added to every request; the SDKs send rid and fdi-version.
	Header http.Header
	// Tenant, when set, is the tenant the client signs in to: its id
	// goes after the base path, as the SDKs put it (auth.Tenant).
	Tenant string

	tb  testing.TB
	srv *Server
}

// Response is a response, read in full.
type Response struct {
	StatusCode int
	Header     http.Header
	Body       []byte
	// Status and Message are the "status" and "message" of a JSON body.
	Status, Message string
	// JSON is the body decoded, or nil if it is not a JSON object.
	JSON map[string]any
}

// IssuedTokens reports whether the response hands out an access or a
// refresh token in any transfer mode: a non-empty sAccessToken or
// sRefreshToken cookie, st-access-token or st-refresh-token header, or
// accessToken or refreshToken in the JSON body. A response that clears the
// tokens (empty values, front-token: remove) issues none.
//
// It is the check that a refused request started no session.
func (r *Response) IssuedTokens() bool {
	for _, line := range r.Header.Values("Set-Cookie") {
		c, err := http.ParseSetCookie(line)
		if err == nil && (c.Name == accessCookie || c.Name == refreshCookie) && c.Value != "" && c.MaxAge >= 0 {
			return true
		}
	}
	for _, h := range []string{"st-access-token", "st-refresh-token"} {
		if r.Header.Get(h) != "" {
			return true
		}
	}
	for _, k := range []string{"accessToken", "refreshToken"} {
		if v, ok := r.JSON[k]; ok && v != nil && v != "" {
			return true
		}
	}
	return false
}

// Credentials returns the JSON body the frontend SDKs send to sign up or
// sign in with an email and password:
//
//	{"formFields":[{"id":"email","value":"..."},{"id":"password","value":"..."}]}
//
// SignUp and SignIn send it; a test that builds its own request, with
// httptest.NewRequest for instance, can send it too.
func Credentials(email, password string) []byte {
	b, _ := json.Marshal(map[string]any{"formFields": []map[string]any{
		{"id": "email", "value": email},
		{"id": "password", "value": password},
	}})
	return b
}

// NewClient returns a new client in mode m, with no session yet.
func (s *Server) NewClient(m Mode) *Client {
	hc := s.Server.Client()
	jar, _ := cookiejar.New(nil)
	if m == Cookie {
		hc = &http.Client{Transport: hc.Transport, Jar: jar}
	}
	return &Client{Mode: m, HTTP: hc, Header: http.Header{}, tb: s.tb, srv: s}
}

// SignUp signs up with an email and password.
func (c *Client) SignUp(email, password string) *Response {
	c.tb.Helper()
	return c.do(http.MethodPost, c.path("/signup"), Credentials(email, password), "emailpassword", c.AccessToken)
}

// SignIn signs in with an email and password.
func (c *Client) SignIn(email, password string) *Response {
	c.tb.Helper()
	return c.do(http.MethodPost, c.path("/signin"), Credentials(email, password), "emailpassword", c.AccessToken)
}

// RequestPasswordReset asks for a reset email.
func (c *Client) RequestPasswordReset(email string) *Response {
	c.tb.Helper()
	b, _ := json.Marshal(map[string]any{"formFields": []map[string]any{{"id": "email", "value": email}}})
	return c.do(http.MethodPost, c.path("/user/password/reset/token"), b, "emailpassword", c.AccessToken)
}

// ResetPassword sets a new password with a reset token, as the SDKs send
// it.
func (c *Client) ResetPassword(token, password string) *Response {
	c.tb.Helper()
	b, _ := json.Marshal(map[string]any{
		"method":     "token",
		"formFields": []map[string]any{{"id": "password", "value": password}},
		"token":      token,
	})
	return c.do(http.MethodPost, c.path("/user/password/reset"), b, "emailpassword", c.AccessToken)
}

// SignInWithProvider signs in, or up, with the fake provider p, as the
// frontend SDK and a browser do: it asks the server for the authorisation
// URL with the SDK's callback page on the server's AppURL as the redirect
// URI, lets p sign its current identity in (see Provider.SetIdentity),
// and posts the code it sends back to /signinup with the verifier. The
// server must have p.Provider() among Config.ThirdParty.Providers.
func (c *Client) SignInWithProvider(p *Provider) *Response {
	c.tb.Helper()
	return c.withProvider(p, false)
}

// LinkWithProvider adds the identity p signs in to the user of c's
// session, as the SDKs do with shouldTryLinkingWithSessionUser: the
// sign-in of SignInWithProvider, sent with the session and the field
// true. The answer has the session's user and no tokens.
func (c *Client) LinkWithProvider(p *Provider) *Response {
	c.tb.Helper()
	return c.withProvider(p, true)
}

func (c *Client) withProvider(p *Provider, link bool) *Response {
	c.tb.Helper()
	redirect := strings.TrimRight(c.srv.AuthConfig.AppURL, "/") + "/auth/callback/" + p.ID
	q := url.Values{"thirdPartyId": {p.ID}, "redirectURIOnProviderDashboard": {redirect}}
	res := c.do(http.MethodGet, c.path("/authorisationurl?"+q.Encode()), nil, "thirdparty", "")
	authURL, _ := res.JSON["urlWithQueryParams"].(string)
	verifier, _ := res.JSON["pkceCodeVerifier"].(string)
	if res.Status != "OK" || authURL == "" {
		c.tb.Fatalf("authtest: authorisationurl answered %d %s", res.StatusCode, res.Body)
	}
	back := p.Authorize(c.tb, authURL)
	params := map[string]string{}
	for k := range back {
		params[k] = back.Get(k)
	}
	body := map[string]any{
		"thirdPartyId": p.ID,
		"redirectURIInfo": map[string]any{
			"redirectURIOnProviderDashboard": redirect,
			"redirectURIQueryParams":         params,
			"pkceCodeVerifier":               verifier,
		},
	}
	if link {
		body["shouldTryLinkingWithSessionUser"] = true
	}
	b, _ := json.Marshal(body)
	return c.do(http.MethodPost, c.path("/signinup"), b, "thirdparty", c.AccessToken)
}

// CreateCode starts a passwordless sign-in for email, as the SDKs'
// createCode does: the server mails a code, a link or both (see
// PasswordlessCode and PasswordlessLink), and answers with the flow's
// "deviceId" and "preAuthSessionId", which ConsumeCode and ResendCode
// take.
func (c *Client) CreateCode(email string) *Response {
	c.tb.Helper()
	b, _ := json.Marshal(map[string]string{"email": email})
	return c.do(http.MethodPost, c.path("/signinup/code"), b, "passwordless", "")
}

// ResendCode asks for another code of a passwordless flow.
func (c *Client) ResendCode(deviceID, preAuthSessionID string) *Response {
	c.tb.Helper()
	b, _ := json.Marshal(map[string]string{"deviceId": deviceID, "preAuthSessionId": preAuthSessionID})
	return c.do(http.MethodPost, c.path("/signinup/code/resend"), b, "passwordless", "")
}

// ConsumeCode signs in, or up, with a code typed into the page that
// started the flow.
func (c *Client) ConsumeCode(deviceID, preAuthSessionID, code string) *Response {
	c.tb.Helper()
	b, _ := json.Marshal(map[string]string{"deviceId": deviceID, "preAuthSessionId": preAuthSessionID, "userInputCode": code})
	return c.do(http.MethodPost, c.path("/signinup/code/consume"), b, "passwordless", "")
}

// ConsumeLink signs in, or up, with a passwordless link, as the SDKs'
// link page posts it: the preAuthSessionId from the query and the link
// code from the fragment. Any client may use it, not only the one that
// asked for it.
func (c *Client) ConsumeLink(link string) *Response {
	c.tb.Helper()
	u, err := url.Parse(link)
	if err != nil {
		c.tb.Fatalf("authtest: %v", err)
	}
	b, _ := json.Marshal(map[string]string{"preAuthSessionId": u.Query().Get("preAuthSessionId"), "linkCode": u.Fragment})
	return c.do(http.MethodPost, c.path("/signinup/code/consume"), b, "passwordless", "")
}

// SignInWithCode signs in, or up, without a password: it asks for a code
// for email, reads it from the server's Mailbox and consumes it. The
// server's Config.Passwordless.Flow must send codes.
func (c *Client) SignInWithCode(email string) *Response {
	c.tb.Helper()
	device, flow, code := c.mailedCode(email)
	return c.ConsumeCode(device, flow, code)
}

// mailedCode asks for a code for email and reads it from the server's
// Mailbox, with its flow's ids.
func (c *Client) mailedCode(email string) (device, flow, code string) {
	c.tb.Helper()
	if c.srv.Mailbox == nil {
		c.tb.Fatalf("authtest: a code is read from the server's Mailbox, and this server has another Mailer")
	}
	before := len(c.srv.Mailbox.Messages())
	res := c.CreateCode(email)
	device, _ = res.JSON["deviceId"].(string)
	flow, _ = res.JSON["preAuthSessionId"].(string)
	if res.Status != "OK" || device == "" {
		c.tb.Fatalf("authtest: signinup/code answered %d %s", res.StatusCode, res.Body)
	}
	m := c.srv.Mailbox.LastTo(c.tb, email, before, 5*time.Second)
	return device, flow, PasswordlessCode(c.tb, m)
}

// LinkWithCode adds the passwordless login of email to the user of c's
// session, as the SDKs do with shouldTryLinkingWithSessionUser: it asks
// for a code, reads it from the server's Mailbox and consumes it with the
// session and the field true. The answer has the session's user and no
// tokens.
func (c *Client) LinkWithCode(email string) *Response {
	c.tb.Helper()
	device, flow, code := c.mailedCode(email)
	b, _ := json.Marshal(map[string]any{"deviceId": device, "preAuthSessionId": flow,
		"userInputCode": code, "shouldTryLinkingWithSessionUser": true})
	return c.do(http.MethodPost, c.path("/signinup/code/consume"), b, "passwordless", c.AccessToken)
}

// SendVerificationEmail asks for a link that verifies the email of the
// session's login method; it lands in the Mailbox (see VerificationLink).
func (c *Client) SendVerificationEmail() *Response {
	c.tb.Helper()
	return c.do(http.MethodPost, c.path("/user/email/verify/token"), []byte("{}"), "emailverification", c.AccessToken)
}

// VerifyEmail uses a verification token, as the SDKs' verify page posts
// it, with the client's session if it has one.
func (c *Client) VerifyEmail(token string) *Response {
	c.tb.Helper()
	b, _ := json.Marshal(map[string]any{"method": "token", "token": token})
	return c.do(http.MethodPost, c.path("/user/email/verify"), b, "emailverification", c.AccessToken)
}

// IsEmailVerified asks whether the email of the session's login method is
// verified ("isVerified" in the JSON), which also brings the session's
// st-ev claim up to date, as the SDKs' claim refresh does.
func (c *Client) IsEmailVerified() *Response {
	c.tb.Helper()
	return c.do(http.MethodGet, c.path("/user/email/verify"), nil, "emailverification", c.AccessToken)
}

// Refresh exchanges the refresh token for a new pair.
func (c *Client) Refresh() *Response {
	c.tb.Helper()
	return c.do(http.MethodPost, c.sessionPath("/session/refresh"), nil, "session", c.RefreshToken)
}

// SignOut ends the session.
func (c *Client) SignOut() *Response {
	c.tb.Helper()
	return c.do(http.MethodPost, c.sessionPath("/signout"), nil, "session", c.AccessToken)
}

// Get sends a GET with the client's session to a path of the server.
func (c *Client) Get(path string) *Response {
	c.tb.Helper()
	return c.do(http.MethodGet, path, nil, "anti-csrf", c.AccessToken)
}

// Do sends a request with the client's session (the access token) to a
// path of the server. A non-nil body is sent as JSON.
func (c *Client) Do(method, path string, body any) *Response {
	c.tb.Helper()
	var b []byte
	if body != nil {
		var err error
		if b, err = json.Marshal(body); err != nil {
			c.tb.Fatalf("authtest: encoding body: %v", err)
		}
	}
	return c.do(method, path, b, "anti-csrf", c.AccessToken)
}

// Cookie returns the value of a cookie the jar would send to path, or "".
func (c *Client) Cookie(name, path string) string {
	if c.HTTP.Jar == nil {
		return ""
	}
	u, _ := url.Parse(c.srv.URL + path)
	for _, ck := range c.HTTP.Jar.Cookies(u) {
		if ck.Name == name {
			return ck.Value
		}
	}
	return ""
}

// SetCookie puts a cookie into the jar for the server, as a replayed or
// stolen cookie would arrive.
func (c *Client) SetCookie(name, value, path string) {
	u, _ := url.Parse(c.srv.URL)
	c.HTTP.Jar.SetCookies(u, []*http.Cookie{{Name: name, Value: value, Path: path, Secure: true}})
}

// sessionPath is the path of a route of the session's own, which the
// SDKs call without the tenant: the refresh token's cookie is scoped to
// it.
func (c *Client) sessionPath(p string) string { return c.basePath() + p }

// path is the path of a route in the client's tenant.
func (c *Client) path(p string) string {
	if c.Tenant != "" {
		return c.basePath() + "/" + c.Tenant + p
	}
	return c.basePath() + p
}

func (c *Client) basePath() string {
	base := c.srv.AuthConfig.BasePath
	if base == "" {
		base = "/auth"
	}
	return strings.TrimRight(base, "/")
}

func (c *Client) do(method, path string, body []byte, rid, bearer string) *Response {
	c.tb.Helper()
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(c.tb.Context(), method, c.srv.URL+path, r)
	if err != nil {
		c.tb.Fatalf("authtest: %v", err)
	}
	for k, v := range c.Header {
		req.Header[k] = v
	}
	if req.Header.Get("rid") == "" {
		req.Header.Set("rid", rid)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	switch c.Mode {
	case Header:
		req.Header.Set("st-auth-mode", "header")
	case Body:
		req.Header.Set("fg-auth-mode", "body")
	}
	if c.Mode != Cookie && bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	res, err := c.HTTP.Do(req)
	if err != nil {
		c.tb.Fatalf("authtest: %s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	out := &Response{StatusCode: res.StatusCode, Header: res.Header}
	if out.Body, err = io.ReadAll(res.Body); err != nil {
		c.tb.Fatalf("authtest: reading %s %s: %v", method, path, err)
	}
	if json.Unmarshal(out.Body, &out.JSON) == nil {
		out.Status, _ = out.JSON["status"].(string)
		out.Message, _ = out.JSON["message"].(string)
	}
	c.keep(out)
	return out
}

// keep stores the tokens a response hands out, as the SDKs do.
func (c *Client) keep(res *Response) {
	if ft, ok := res.Header[http.CanonicalHeaderKey("front-token")]; ok {
		if ft[0] == "remove" {
			c.FrontToken, c.AccessToken, c.RefreshToken = "", "", ""
		} else {
			c.FrontToken = ft[0]
		}
	}
	// Body mode gets a rewritten access token (a changed claim) in this
	// header too: a protected route's body is the application's.
	if v, ok := res.Header[http.CanonicalHeaderKey("st-access-token")]; ok && c.Mode != Cookie {
		c.AccessToken = v[0]
	}
	if v, ok := res.Header[http.CanonicalHeaderKey("st-refresh-token")]; ok && c.Mode == Header {
		c.RefreshToken = v[0]
	}
	if c.Mode == Body {
		if v, ok := res.JSON["accessToken"].(string); ok {
			c.AccessToken = v
		}
		if v, ok := res.JSON["refreshToken"].(string); ok {
			c.RefreshToken = v
		}
	}
}

// Tokens returns the access and refresh token the client holds, from the
// jar in cookie mode.
func (c *Client) Tokens() (access, refresh string) {
	if c.Mode == Cookie {
		base := c.path("")
		return c.Cookie(accessCookie, "/"), c.Cookie(refreshCookie, base+"/session/refresh")
	}
	return c.AccessToken, c.RefreshToken
}

// SetTokens replaces the tokens the client holds, in any mode; to replay
// an old refresh token, for instance. An empty value leaves that token be.
func (c *Client) SetTokens(access, refresh string) {
	if c.Mode == Cookie {
		if access != "" {
			c.SetCookie(accessCookie, access, "/")
		}
		if refresh != "" {
			c.SetCookie(refreshCookie, refresh, c.sessionPath("/session/refresh"))
		}
		return
	}
	if access != "" {
		c.AccessToken = access
	}
	if refresh != "" {
		c.RefreshToken = refresh
	}
}
