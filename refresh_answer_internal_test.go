package auth

import (
	"bytes"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/latchkit/auth/internal/wire"
	"github.com/latchkit/auth/store/memstore"
)

// What a refresh answers is written without encoding/json and without a
// slice per header value. These tests hold each shortcut to what it stands
// in for, kept here as it was.

// referenceTokens is writeTokens, then the status beside the body, as the
// library wrote them with http.Header.Set, expose and wire.JSON.
func referenceTokens(a *Auth, w http.ResponseWriter, m mode, t issued) {
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
	wire.JSON(w, http.StatusOK, struct {
		Status string `json:"status"`
		bodyTokens
	}{"OK", body})

}

// referenceFrontToken is frontToken as it was, with a buffer on the heap.
func referenceFrontToken(userID string, accessExpiry time.Time, payload []byte) string {
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

// answers writes t in mode m both ways, each on a response that already
// has the headers of before (as CORS leaves them), and returns the two.
func answers(t *testing.T, a *Auth, m mode, tok issued, before http.Header) (want, got *httptest.ResponseRecorder) {
	t.Helper()
	want, got = httptest.NewRecorder(), httptest.NewRecorder()
	for k, v := range before {
		want.Header()[k] = append([]string(nil), v...)
		got.Header()[k] = append([]string(nil), v...)
	}
	referenceTokens(a, want, m, tok)
	writeRefreshed(got, a.putTokens(got, m, tok, true))
	return want, got
}

func sameAnswer(t *testing.T, want, got *httptest.ResponseRecorder) {
	t.Helper()
	if want.Code != got.Code {
		t.Errorf("status %d, want %d", got.Code, want.Code)
	}
	if !reflect.DeepEqual(want.Header(), got.Header()) {
		t.Errorf("headers\n got %q\nwant %q", got.Header(), want.Header())
	}
	if !bytes.Equal(want.Body.Bytes(), got.Body.Bytes()) {
		t.Errorf("body\n got %q\nwant %q", got.Body.Bytes(), want.Body.Bytes())
	}
}

func TestRefreshAnswerAsBefore(t *testing.T) {
	a, err := New(Config{Store: memstore.New(), Cookie: CookieConfig{Domain: "example.com", SameSite: http.SameSiteStrictMode}})
	if err != nil {
		t.Fatal(err)
	}
	tok := issued{
		access:        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1In0.c2ln",
		accessExpiry:  time.Unix(1900000000, 0),
		refresh:       "AQABAgMEBQYHCAkKC4wfCp56Q00zn14rHx8MnREAAAAAAAAABwAAAABxP7MAc2l4dGVlbiBieXRlIHNlYyRBCGS4Vw5nek4QyZ5TI7Y",
		refreshExpiry: time.Unix(1900086400, 0),
		frontToken:    frontToken("u", time.Unix(1900000000, 0), []byte(`{"sub":"u"}`)),
	}
	befores := map[string]http.Header{
		"nothing": nil,
		"CORS": {"Vary": {"Origin"}, "Access-Control-Allow-Origin": {"https://app.example"},
			headerExpose: {strings.Join(exposedHeaders, ", ")}},
		"others' headers": {headerExpose: {"x-mine, Front-Token", "x-other"}, "Content-Type": {"text/plain"},
			"Cache-Control": {"max-age=1"}, headerAccess: {"old"}},
		"an empty list": {headerExpose: {}},
	}
	// Tokens that encoding/json writes as they are, and some it escapes
	// (the answer then comes from encoding/json itself).
	odd := []issued{tok, {}, {access: "a"}, {refresh: "r"}, {access: "<&>", refresh: `"\`},
		{access: "é", refresh: "\u2028"}, {access: "\x00\x7f", refresh: "ok"}, {access: "ok", refresh: "\xff"}}
	for name, before := range befores {
		for _, m := range []mode{modeCookie, modeHeader, modeBody} {
			for i, o := range odd {
				o.frontToken, o.refreshExpiry = tok.frontToken, tok.refreshExpiry
				t.Run(name+"/"+m.String()+"/"+strconv.Itoa(i), func(t *testing.T) {
					want, got := answers(t, a, m, o, before)
					sameAnswer(t, want, got)
				})
			}
		}
	}
}

// The values putTokens sets share one array: each is capped at its length,
// so adding to one header leaves the others as they were.
func TestPutTokensValuesApart(t *testing.T) {
	a, err := New(Config{Store: memstore.New()})
	if err != nil {
		t.Fatal(err)
	}
	w := httptest.NewRecorder()
	a.putTokens(w, modeHeader, issued{access: "A", refresh: "R", frontToken: "F"}, true)
	h := w.Header()
	for _, k := range []string{"Cache-Control", headerFrontToken, headerAccess, headerRefresh, headerExpose, "Content-Type"} {
		if textproto.CanonicalMIMEHeaderKey(k) != k {
			t.Errorf("%q is not in canonical form", k)
		}
		h.Add(k, "added")
	}
	want := http.Header{
		"Cache-Control":  {"no-store", "added"},
		headerFrontToken: {"F", "added"},
		headerAccess:     {"A", "added"},
		headerRefresh:    {"R", "added"},
		headerExpose:     {exposedTokensJoined, "added"},
		"Content-Type":   {"application/json", "added"},
	}
	if !reflect.DeepEqual(h, want) {
		t.Errorf("headers %q, want %q", h, want)
	}
	if exposedFrontJoined != strings.Join(exposedFront, ", ") || exposedTokensJoined != strings.Join(exposedTokens, ", ") {
		t.Error("the joined lists of exposed headers are not the lists joined")
	}
}

// FuzzRefreshAnswer holds the answer of a refresh in body mode, written by
// hand when the tokens allow, to encoding/json's, for any tokens.
func FuzzRefreshAnswer(f *testing.F) {
	f.Add("eyJhbGciOiJIUzI1NiJ9.e30.c2ln", "AQAB-_", uint8(modeBody))
	f.Add("", "", uint8(modeHeader))
	f.Add("<&>", "\u2028\xff\"\\", uint8(modeBody))
	f.Add("\x1f ~\x7f", "é", uint8(modeCookie))
	a, err := New(Config{Store: memstore.New()})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, access, refresh string, m uint8) {
		tok := issued{access: access, refresh: refresh, frontToken: "F", refreshExpiry: time.Unix(1900000000, 0)}
		md := mode(m % 3)
		if md == modeCookie && (!validCookieValue(access) || !validCookieValue(refresh)) {
			md = modeBody // net/http drops, and logs, a cookie value it cannot send
		}
		want, got := answers(t, a, md, tok, nil)
		sameAnswer(t, want, got)
	})
}

// validCookieValue reports whether net/http sends v as a cookie's value
// without dropping bytes from it.
func validCookieValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 || c >= 0x7f || c == '"' || c == ';' || c == '\\' {
			return false
		}
	}
	return true
}

// FuzzFrontToken holds frontToken, whose buffers are on the stack, to what
// it was, for any user id, time and payload, short and long.
func FuzzFrontToken(f *testing.F) {
	f.Add("8c1f0a9e-7a43-4d33-9f5e-2b1f1f0c9d11", int64(1900000000123), []byte(`{"sub":"u","exp":1}`), uint16(0))
	f.Add("\"\\\x00é\xff", int64(-1), []byte{}, uint16(600))
	f.Fuzz(func(t *testing.T, uid string, ms int64, payload []byte, pad uint16) {
		// Past the stack buffers too.
		payload = append(payload, bytes.Repeat([]byte{'x'}, int(pad%2048))...)
		at := time.UnixMilli(ms)
		if got, want := frontToken(uid, at, payload), referenceFrontToken(uid, at, payload); got != want {
			t.Errorf("frontToken = %q, want %q", got, want)
		}
	})
}

// A refresh in header mode, the one the load test and most mobile clients
// use, allocates little; this bounds what it may come back to.
func TestRefreshAnswerAllocs(t *testing.T) {
	a, err := New(Config{Store: memstore.New()})
	if err != nil {
		t.Fatal(err)
	}
	tok := issued{access: "a.b.c", refresh: "r", frontToken: "F"}
	h := http.Header{}
	w := &headerOnly{h: h}
	n := testing.AllocsPerRun(100, func() {
		clear(h)
		writeRefreshed(w, a.putTokens(w, modeHeader, tok, true))
	})
	if n > 1 {
		t.Errorf("the headers and answer of a refresh take %v allocations, want at most 1", n)
	}
}

type headerOnly struct{ h http.Header }

func (w *headerOnly) Header() http.Header         { return w.h }
func (w *headerOnly) Write(b []byte) (int, error) { return len(b), nil }
func (w *headerOnly) WriteHeader(int)             {}
