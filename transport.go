package auth

import (
	"encoding/base64"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Names on the wire, fixed by the SuperTokens frontend SDKs.
const (
	cookieAccess  = "sAccessToken"
	cookieRefresh = "sRefreshToken"

	headerAccess     = "St-Access-Token"
	headerRefresh    = "St-Refresh-Token"
	headerFrontToken = "Front-Token"
	headerAuthMode   = "St-Auth-Mode"
	headerBodyMode   = "Fg-Auth-Mode"
	headerExpose     = "Access-Control-Expose-Headers"

	// maxTokenLen bounds any token read from a request before it is
	// parsed. Real tokens are a few hundred bytes.
	maxTokenLen = 4096
)

// mode is how tokens travel between client and server.
type mode int

const (
	modeCookie mode = iota // sAccessToken and sRefreshToken cookies
	modeHeader             // st-access-token and st-refresh-token headers, Authorization: Bearer back
	modeBody               // accessToken and refreshToken in the JSON body, Authorization: Bearer back
)

func (m mode) String() string {
	switch m {
	case modeHeader:
		return "header"
	case modeBody:
		return "body"
	}
	return "cookie"
}

// newSessionMode is the transfer mode a sign-up or sign-in asks for.
// fg-auth-mode: body wins over st-auth-mode; neither means cookies.
func newSessionMode(r *http.Request) mode {
	if strings.EqualFold(r.Header.Get(headerBodyMode), "body") {
		return modeBody
	}
	if strings.EqualFold(r.Header.Get(headerAuthMode), "header") {
		return modeHeader
	}
	return modeCookie
}

// bearerMode is the mode of a response to a request that sent its token as
// a bearer token: body if it asks for it, headers otherwise.
func bearerMode(r *http.Request) mode {
	if strings.EqualFold(r.Header.Get(headerBodyMode), "body") {
		return modeBody
	}
	return modeHeader
}

// tokenFrom finds the token a request carries: the Authorization bearer
// token wins over the cookie. found is false when there is none. A request
// that carries a token in an unusable form (two cookies of the name,
// repeated Authorization headers, an undecodable or oversized value) has
// bad set; it is answered like an invalid token.
func tokenFrom(r *http.Request, cookie string) (tok string, m mode, found, bad bool) {
	if auths := r.Header.Values("Authorization"); len(auths) > 0 {
		if len(auths) > 1 {
			return "", modeHeader, true, true
		}
		if scheme, t, ok := strings.Cut(auths[0], " "); ok && strings.EqualFold(scheme, "Bearer") {
			t = strings.TrimSpace(t)
			if t != "" {
				return t, bearerMode(r), true, len(t) > maxTokenLen
			}
		}
	}
	cookies := r.CookiesNamed(cookie)
	switch len(cookies) {
	case 0:
		return "", modeCookie, false, false
	case 1:
	default:
		return "", modeCookie, true, true
	}
	v, err := url.PathUnescape(cookies[0].Value)
	if v == "" && err == nil {
		// An empty cookie is what clearing leaves behind: no token.
		return "", modeCookie, false, false
	}
	return v, modeCookie, true, err != nil || len(v) > maxTokenLen
}

// issued is a freshly issued pair of tokens.
type issued struct {
	access        string
	accessExpiry  time.Time
	refresh       string
	refreshExpiry time.Time
	frontToken    string
}

// bodyTokens are the tokens of body mode, beside status in the JSON answer.
type bodyTokens struct {
	AccessToken  string `json:"accessToken,omitempty"`
	RefreshToken string `json:"refreshToken,omitempty"`
}

// writeTokens puts a new pair of tokens on the response in mode m and
// returns what body mode adds to the JSON body.
func (a *Auth) writeTokens(w http.ResponseWriter, m mode, t issued) bodyTokens {
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set(headerFrontToken, t.frontToken)
	exposed := []string{"front-token"}
	var body bodyTokens
	switch m {
	case modeCookie:
		a.setCookie(w, cookieAccess, t.access, "/", t.refreshExpiry)
		a.setCookie(w, cookieRefresh, t.refresh, a.refreshPath, t.refreshExpiry)
	case modeHeader:
		h.Set(headerAccess, t.access)
		h.Set(headerRefresh, t.refresh)
		exposed = append(exposed, "st-access-token", "st-refresh-token")
	case modeBody:
		body = bodyTokens{AccessToken: t.access, RefreshToken: t.refresh}
	}
	expose(h, exposed...)
	return body
}

// clearTokens tells the client to forget its session: cookies expired,
// header tokens emptied, front-token removed.
func (a *Auth) clearTokens(w http.ResponseWriter, cookies, headers bool) {
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set(headerFrontToken, "remove")
	exposed := []string{"front-token"}
	if cookies {
		a.setCookie(w, cookieAccess, "", "/", time.Time{})
		a.setCookie(w, cookieRefresh, "", a.refreshPath, time.Time{})
	}
	if headers {
		h.Set(headerAccess, "")
		h.Set(headerRefresh, "")
		exposed = append(exposed, "st-access-token", "st-refresh-token")
	}
	expose(h, exposed...)
}

// setCookie sets a session cookie; a zero expiry deletes it.
func (a *Auth) setCookie(w http.ResponseWriter, name, value, path string, expires time.Time) {
	c := &http.Cookie{
		Name:     name,
		Value:    value,
		Path:     path,
		Domain:   a.cfg.Cookie.Domain,
		Expires:  expires,
		HttpOnly: true,
		Secure:   !a.cfg.Cookie.InsecureAllowHTTP,
		SameSite: a.cfg.Cookie.SameSite,
	}
	if expires.IsZero() {
		c.Expires = time.Unix(0, 0)
		c.MaxAge = -1
	}
	http.SetCookie(w, c)
}

// expose adds names to Access-Control-Expose-Headers, keeping what is there.
func expose(h http.Header, names ...string) {
	var have []string
	for _, v := range h.Values(headerExpose) {
		for _, n := range strings.Split(v, ",") {
			if n = strings.TrimSpace(n); n != "" {
				have = append(have, n)
			}
		}
	}
	for _, n := range names {
		dup := false
		for _, e := range have {
			dup = dup || strings.EqualFold(e, n)
		}
		if !dup {
			have = append(have, n)
		}
	}
	h.Set(headerExpose, strings.Join(have, ", "))
}

// frontToken builds the front-token header: standard base64 (with padding,
// as the SDKs decode it with atob) of {"uid", "ate" (ms), "up" (payload)}.
func frontToken(userID string, accessExpiry time.Time, payload []byte) string {
	buf := make([]byte, 0, 64+len(userID)+len(payload))
	buf = append(buf, `{"uid":`...)
	buf = strconv.AppendQuote(buf, userID)
	buf = append(buf, `,"ate":`...)
	buf = strconv.AppendInt(buf, accessExpiry.UnixMilli(), 10)
	buf = append(buf, `,"up":`...)
	buf = append(buf, payload...)
	buf = append(buf, '}')
	return base64.StdEncoding.EncodeToString(buf)
}

// csrfFailed reports whether a cookie-borne request fails the CSRF rule:
// with SameSite=None cookies, a state-changing request must carry a rid
// header, which a cross-site form cannot add.
func (a *Auth) csrfFailed(r *http.Request, m mode) bool {
	return m == modeCookie && a.cfg.Cookie.SameSite == http.SameSiteNoneMode &&
		r.Method != http.MethodGet && r.Method != http.MethodHead && r.Header.Get("rid") == ""
}
