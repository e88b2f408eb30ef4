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
	return a.putTokens(w, m, t, false)
}

// The lists of headers writeTokens exposes, and what expose makes of each
// on a response that exposes nothing yet.
var (
	exposedFront  = []string{"front-token"}
	exposedTokens = []string{"front-token", "st-access-token", "st-refresh-token"}
)

const (
	exposedFrontJoined  = "front-token"
	exposedTokensJoined = "front-token, st-access-token, st-refresh-token"
)

// putTokens is writeTokens, which also sets the Content-Type of a JSON
// answer when jsonAnswer is set. It sets what h.Set and expose would, in
// one allocation for every value where they would make one each: every
// key is in canonical form already, and each value's slice is capped at
// its length, so a later Add cannot write into its neighbour.
func (a *Auth) putTokens(w http.ResponseWriter, m mode, t issued, jsonAnswer bool) bodyTokens {
	h := w.Header()
	vals := make([]string, 0, 6)
	set := func(key, v string) {
		vals = append(vals, v)
		h[key] = vals[len(vals)-1 : len(vals) : len(vals)]
	}
	set("Cache-Control", "no-store")
	set(headerFrontToken, t.frontToken)
	exposed, joined := exposedFront, exposedFrontJoined
	var body bodyTokens
	switch m {
	case modeCookie:
		a.setCookie(w, cookieAccess, t.access, "/", t.refreshExpiry)
		a.setCookie(w, cookieRefresh, t.refresh, a.refreshPath, t.refreshExpiry)
	case modeHeader:
		set(headerAccess, t.access)
		set(headerRefresh, t.refresh)
		exposed, joined = exposedTokens, exposedTokensJoined
	case modeBody:
		body = bodyTokens{AccessToken: t.access, RefreshToken: t.refresh}
	}
	if len(h[headerExpose]) == 0 {
		// What expose would make of a response that exposes nothing.
		set(headerExpose, joined)
	} else {
		expose(h, exposed...)
	}
	if jsonAnswer {
		set("Content-Type", "application/json")
	}
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
// Its buffers are on the stack for the usual sizes: the string is its one
// allocation.
func frontToken(userID string, accessExpiry time.Time, payload []byte) string {
	var raw [512]byte
	buf := append(raw[:0], `{"uid":`...)
	buf = strconv.AppendQuote(buf, userID)
	buf = append(buf, `,"ate":`...)
	buf = strconv.AppendInt(buf, accessExpiry.UnixMilli(), 10)
	buf = append(buf, `,"up":`...)
	buf = append(buf, payload...)
	buf = append(buf, '}')
	var enc [700]byte
	return string(base64.StdEncoding.AppendEncode(enc[:0], buf))
}

// csrfFailed reports whether a cookie-borne request fails the CSRF rule:
// with SameSite=None cookies, a state-changing request must carry a rid
// header, which a cross-site form cannot add.
func (a *Auth) csrfFailed(r *http.Request, m mode) bool {
	return m == modeCookie && a.cfg.Cookie.SameSite == http.SameSiteNoneMode &&
		r.Method != http.MethodGet && r.Method != http.MethodHead && r.Header.Get("rid") == ""
}
