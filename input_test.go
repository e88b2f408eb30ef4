package auth_test

// Hostile input on every endpoint, sent over HTTP as raw requests: the
// answer is a 4xx with a JSON {"message"} (or the protocol's 200 FIELD_ERROR
// and 401 answers), never a 5xx or a panic, and nothing is written.

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/store"
)

func bearer(tok string) http.Header { return hdr("Authorization", "Bearer "+tok) }

func cookie(v string) http.Header { return hdr("Cookie", v) }

// js is a JSON string literal.
func js(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func formBody(elems ...string) string { return `{"formFields":[` + strings.Join(elems, ",") + `]}` }
func emailField(v string) string      { return `{"id":"email","value":` + v + `}` }
func passwordField(v string) string   { return `{"id":"password","value":` + v + `}` }

// chunked hides the length of a body, so it is sent chunked.
type chunked struct{ io.Reader }

type bodyCase struct {
	name string
	body func(email, password string) string
	// header replaces the default headers (JSON content type, rid).
	header  http.Header
	chunked bool
	// The expected answer: code with message ("" = any), or, for 200,
	// a FIELD_ERROR with these field errors.
	code    int
	message string
	fields  map[string]string
}

const (
	msgMissing     = "Missing input param: formFields"
	msgNotArray    = "formFields must be an array"
	msgNotObject   = "All elements of formFields must be an object"
	msgNoIDValue   = "All elements of formFields must contain an 'id' and 'value' field"
	msgEmailString = "email value must be a string"
	msgPwString    = "password value must be a string"
	msgTooMany     = "Are you sending too many formFields?"
	msgEmailBad    = "Email is invalid"
	msgNotOptional = "Field is not optional"
)

func malformedBodies() []bodyCase {
	bad := func(name string, body func(e, p string) string, msg string) bodyCase {
		return bodyCase{name: name, body: body, code: http.StatusBadRequest, message: msg}
	}
	fieldErr := func(name string, body func(e, p string) string, fields map[string]string) bodyCase {
		return bodyCase{name: name, body: body, code: http.StatusOK, fields: fields}
	}
	const mb = 1 << 20
	tenMB := strings.Repeat("a1", 5*mb)
	withNUL := func(e string) string { return strings.Replace(e, "@", "\x00@", 1) }
	return []bodyCase{
		// Not one JSON object.
		bad("empty body", func(e, p string) string { return "" }, ""),
		bad("whitespace only", func(e, p string) string { return " \r\n\t " }, ""),
		bad("not JSON", func(e, p string) string { return "email=" + e + "&password=" + p }, ""),
		bad("truncated JSON", func(e, p string) string { b := credBody(e, p); return b[:len(b)-2] }, ""),
		bad("top-level array", func(e, p string) string { return "[" + credBody(e, p) + "]" }, ""),
		bad("top-level string", func(e, p string) string { return js(credBody(e, p)) }, ""),
		bad("top-level number", func(e, p string) string { return "42" }, ""),
		bad("top-level true", func(e, p string) string { return "true" }, ""),
		bad("top-level null", func(e, p string) string { return "null" }, ""),
		bad("object then object", func(e, p string) string { return credBody(e, p) + "{}" }, ""),
		bad("object then word", func(e, p string) string { return credBody(e, p) + " x" }, ""),
		bad("object then brace", func(e, p string) string { return credBody(e, p) + "}" }, ""),
		bad("object then string", func(e, p string) string { return credBody(e, p) + ` "x"` }, ""),
		bad("two objects on lines", func(e, p string) string { return credBody(e, p) + "\n" + credBody(e, p) }, ""),
		bad("byte order mark", func(e, p string) string { return "\xef\xbb\xbf" + credBody(e, p) }, ""),
		bad("raw NUL byte", func(e, p string) string { return credBody(e, p) + "\x00" }, ""),
		bad("raw control character in a string", func(e, p string) string {
			return formBody(emailField(`"`+strings.Replace(e, "@", "\x01@", 1)+`"`), passwordField(js(p)))
		}, ""),
		bad("invalid UTF-8 in the email", func(e, p string) string {
			return formBody(emailField(`"`+strings.Replace(e, "@", "\xff\xfe@", 1)+`"`), passwordField(js(p)))
		}, ""),
		bad("invalid UTF-8 in the password", func(e, p string) string {
			return formBody(emailField(js(e)), passwordField(`"`+p+"\xc3\x28"+`"`))
		}, ""),
		{name: "gzip-encoded body", body: func(e, p string) string {
			var b bytes.Buffer
			z := gzip.NewWriter(&b)
			z.Write([]byte(credBody(e, p)))
			z.Close()
			return b.String()
		}, header: hdr("Content-Type", "application/json", "Content-Encoding", "gzip"), code: http.StatusBadRequest},

		// formFields itself.
		bad("no formFields", func(e, p string) string { return `{"fields":[]}` }, msgMissing),
		bad("empty object", func(e, p string) string { return `{}` }, msgMissing),
		bad("formFields in another case", func(e, p string) string {
			return strings.Replace(credBody(e, p), "formFields", "FormFields", 1)
		}, msgMissing),
		bad("formFields null", func(e, p string) string { return `{"formFields":null}` }, msgMissing),
		bad("formFields object", func(e, p string) string {
			return `{"formFields":{"email":` + js(e) + `,"password":` + js(p) + `}}`
		}, msgNotArray),
		bad("formFields string", func(e, p string) string { return `{"formFields":` + js(e) + `}` }, msgNotArray),
		bad("formFields number", func(e, p string) string { return `{"formFields":1}` }, msgNotArray),
		bad("formFields true", func(e, p string) string { return `{"formFields":true}` }, msgNotArray),
		bad("formFields repeated, invalid last", func(e, p string) string {
			return strings.TrimSuffix(credBody(e, p), "}") + `,"formFields":"x"}`
		}, msgNotArray),

		// Its elements.
		bad("element string", func(e, p string) string { return formBody(emailField(js(e)), js(p)) }, msgNotObject),
		bad("element number", func(e, p string) string { return formBody(emailField(js(e)), "1") }, msgNotObject),
		bad("element null", func(e, p string) string { return formBody(emailField(js(e)), "null") }, msgNotObject),
		bad("element array", func(e, p string) string {
			return formBody(emailField(js(e)), `["password",`+js(p)+`]`)
		}, msgNotObject),
		bad("element true", func(e, p string) string { return formBody("true", emailField(js(e))) }, msgNotObject),
		bad("element without id", func(e, p string) string {
			return formBody(emailField(js(e)), `{"value":`+js(p)+`}`)
		}, msgNoIDValue),
		bad("element without value", func(e, p string) string {
			return formBody(emailField(js(e)), `{"id":"password"}`)
		}, msgNoIDValue),
		bad("empty element", func(e, p string) string { return formBody(emailField(js(e)), `{}`) }, msgNoIDValue),
		bad("id a number", func(e, p string) string {
			return formBody(emailField(js(e)), `{"id":1,"value":`+js(p)+`}`)
		}, msgNoIDValue),
		bad("id null", func(e, p string) string {
			return formBody(emailField(js(e)), `{"id":null,"value":`+js(p)+`}`)
		}, msgNoIDValue),
		bad("id an array", func(e, p string) string {
			return formBody(emailField(js(e)), `{"id":["password"],"value":`+js(p)+`}`)
		}, msgNoIDValue),
		bad("id an object", func(e, p string) string {
			return formBody(emailField(js(e)), `{"id":{"password":1},"value":`+js(p)+`}`)
		}, msgNoIDValue),
		bad("keys in another case", func(e, p string) string {
			return formBody(emailField(js(e)), `{"ID":"password","VALUE":`+js(p)+`}`)
		}, msgNoIDValue),
		bad("duplicated id", func(e, p string) string { return formBody(emailField(js(e)), emailField(js(e))) }, ""),
		bad("duplicated id, other value", func(e, p string) string {
			return formBody(emailField(js(e)), emailField(js("other@example.com")))
		}, ""),
		bad("unknown id", func(e, p string) string {
			return formBody(emailField(js(e)), `{"id":"username","value":`+js(p)+`}`)
		}, ""),
		bad("id in another case", func(e, p string) string {
			return formBody(emailField(js(e)), `{"id":"Password","value":`+js(p)+`}`)
		}, ""),
		bad("too many fields", func(e, p string) string {
			return formBody(emailField(js(e)), passwordField(js(p)), `{"id":"name","value":"x"}`)
		}, msgTooMany),
		bad("hundreds of fields", func(e, p string) string {
			return formBody(strings.Split(strings.Repeat(emailField(js(e))+"\n", 300), "\n")[:300]...)
		}, msgTooMany),

		// Values of the wrong type.
		bad("email a number", func(e, p string) string { return formBody(emailField("1"), passwordField(js(p))) }, msgEmailString),
		bad("email true", func(e, p string) string { return formBody(emailField("true"), passwordField(js(p))) }, msgEmailString),
		bad("email an object", func(e, p string) string {
			return formBody(emailField(`{"value":`+js(e)+`}`), passwordField(js(p)))
		}, msgEmailString),
		bad("email an array", func(e, p string) string { return formBody(emailField("["+js(e)+"]"), passwordField(js(p))) }, msgEmailString),
		bad("password a number", func(e, p string) string { return formBody(emailField(js(e)), passwordField("12345678")) }, msgPwString),
		bad("password false", func(e, p string) string { return formBody(emailField(js(e)), passwordField("false")) }, msgPwString),
		bad("password an object", func(e, p string) string { return formBody(emailField(js(e)), passwordField(`{}`)) }, msgPwString),
		bad("password an array", func(e, p string) string { return formBody(emailField(js(e)), passwordField("["+js(p)+"]")) }, msgPwString),
		fieldErr("email null", func(e, p string) string { return formBody(emailField("null"), passwordField(js(p))) },
			map[string]string{"email": msgNotOptional}),
		fieldErr("password null", func(e, p string) string { return formBody(emailField(js(e)), passwordField("null")) },
			map[string]string{"password": msgNotOptional}),
		fieldErr("no fields", func(e, p string) string { return formBody() },
			map[string]string{"email": msgNotOptional, "password": msgNotOptional}),

		// Hostile email values.
		fieldErr("NUL byte in the email", func(e, p string) string { return credBody(withNUL(e), p) },
			map[string]string{"email": msgEmailBad}),
		fieldErr("NUL byte in a quoted email", func(e, p string) string { return credBody("\"vic\x00tim\"@example.com", p) },
			map[string]string{"email": msgEmailBad}),
		fieldErr("escape sequence in the email", func(e, p string) string {
			return credBody(strings.Replace(e, "@", "\x1b[31m@", 1), p)
		}, map[string]string{"email": msgEmailBad}),
		fieldErr("DEL in the email", func(e, p string) string { return credBody(strings.Replace(e, "@", "\x7f@", 1), p) },
			map[string]string{"email": msgEmailBad}),
		fieldErr("C1 control in the email", func(e, p string) string {
			return credBody(strings.Replace(e, "@", "\u0085@", 1), p)
		}, map[string]string{"email": msgEmailBad}),
		fieldErr("header injection in the email", func(e, p string) string { return credBody(e+"\r\nBcc: x@example.com", p) },
			map[string]string{"email": msgEmailBad}),
		fieldErr("10 KB email", func(e, p string) string { return credBody(strings.Repeat("a", 10<<10)+e, p) },
			map[string]string{"email": msgEmailBad}),

		// Oversized and deeply nested bodies.
		{name: "100 KB email", body: func(e, p string) string { return credBody(strings.Repeat("a", 100<<10)+e, p) },
			code: http.StatusRequestEntityTooLarge},
		{name: "10 MB password", body: func(e, p string) string { return credBody(e, tenMB) },
			code: http.StatusRequestEntityTooLarge},
		{name: "10 MB password, chunked", body: func(e, p string) string { return credBody(e, tenMB) }, chunked: true,
			code: http.StatusRequestEntityTooLarge},
		{name: "10 MB of unknown key", body: func(e, p string) string {
			return strings.TrimSuffix(credBody(e, p), "}") + `,"x":"` + tenMB + `"}`
		}, code: http.StatusRequestEntityTooLarge},
		{name: "100000 brackets", body: func(e, p string) string {
			return formBody(emailField(strings.Repeat("[", 100000)))
		}, code: http.StatusRequestEntityTooLarge},
		bad("15000 open brackets", func(e, p string) string {
			return formBody(emailField(js(e)), passwordField(strings.Repeat("[", 15000)))
		}, ""),
		bad("8000 nested arrays", func(e, p string) string {
			return formBody(emailField(strings.Repeat("[", 8000)+strings.Repeat("]", 8000)), passwordField(js(p)))
		}, msgEmailString),
		bad("2000 nested objects in an unknown key", func(e, p string) string {
			return `{"x":` + strings.Repeat(`{"a":`, 2000) + "1" + strings.Repeat("}", 2000) + `,"formFields":1}`
		}, msgNotArray),
	}
}

// acceptedBodies are odd but valid requests: they succeed.
func acceptedBodies() []bodyCase {
	ok := func(name string, body func(e, p string) string, header http.Header) bodyCase {
		return bodyCase{name: name, body: body, header: header, code: http.StatusOK}
	}
	jsonHdr := hdr("Content-Type", "application/json", "rid", "emailpassword")
	return []bodyCase{
		ok("unknown top-level keys of the SDKs", func(e, p string) string {
			return `{"formFields":[` + emailField(js(e)) + "," + passwordField(js(p)) +
				`],"shouldTryLinkingWithSessionUser":false,"method":"token"}`
		}, jsonHdr),
		ok("shouldTryLinkingWithSessionUser true", func(e, p string) string {
			return `{"shouldTryLinkingWithSessionUser":true,"formFields":[` + emailField(js(e)) + "," + passwordField(js(p)) + `]}`
		}, jsonHdr),
		ok("odd unknown keys", func(e, p string) string {
			return strings.TrimSuffix(credBody(e, p), "}") +
				`,"__proto__":{"admin":true},"constructor":null,"x":[1,{"y":[]}],"FORMFIELDS":1}`
		}, jsonHdr),
		ok("extra keys in elements", func(e, p string) string {
			return formBody(`{"id":"email","value":`+js(e)+`,"optional":true}`, `{"validate":"x","id":"password","value":`+js(p)+`}`)
		}, jsonHdr),
		ok("fields in reverse order", func(e, p string) string { return formBody(passwordField(js(p)), emailField(js(e))) }, jsonHdr),
		ok("surrounding whitespace", func(e, p string) string { return "\r\n\t " + credBody(e, p) + " \n\r\n" }, jsonHdr),
		ok("formFields repeated, valid last", func(e, p string) string {
			return `{"formFields":"x",` + strings.TrimPrefix(credBody(e, p), "{")
		}, jsonHdr),
		ok("email padded and upper-cased", func(e, p string) string { return credBody(" \t"+strings.ToUpper(e)+"\n ", p) }, jsonHdr),
		ok("no Content-Type", credBody, hdr("rid", "emailpassword")),
		ok("Content-Type text/plain", credBody, hdr("Content-Type", "text/plain")),
		ok("repeated Content-Type", credBody, hdr("Content-Type", "application/json", "Content-Type", "application/json")),
		ok("conflicting Content-Types", credBody, hdr("Content-Type", "application/xml", "Content-Type", "application/json; charset=utf-8")),
		ok("unknown rid", credBody, hdr("Content-Type", "application/json", "rid", "\u00fcnknown")),
		// The SDK's interceptor adds stale credentials to public calls
		// (PROTOCOL.md section 6): never a 401.
		ok("stale and hostile credentials", credBody, hdr("Content-Type", "application/json",
			"Authorization", "Bearer a.b.c", "Authorization", "Basic eDp5",
			"Cookie", "sAccessToken=%zz; sAccessToken=x; sRefreshToken=; st-access-token=a.b.c")),
	}
}

func TestCredentialBodies(t *testing.T) {
	f := newInFixture(t, auth.Config{})
	_, known := f.SignedIn(authtest.Header)
	for _, ep := range []string{"signup", "signin"} {
		for _, tc := range append(malformedBodies(), acceptedBodies()...) {
			t.Run(ep+"/"+tc.name, func(t *testing.T) {
				email := known.Email
				if ep == "signup" {
					email = f.NewEmail()
				}
				var body io.Reader = strings.NewReader(tc.body(email, authtest.Password))
				if tc.chunked {
					body = chunked{body}
				}
				header := tc.header
				if header == nil {
					header = hdr("Content-Type", "application/json", "rid", "emailpassword")
				}
				before := f.store.writes.Load()
				r := f.send(t, "POST", "/auth/"+ep, body, header)

				if tc.code == http.StatusOK && tc.fields == nil {
					if r.code != http.StatusOK || r.status != "OK" {
						t.Fatalf("got %d %s, want OK", r.code, r.body)
					}
					if ep == "signup" {
						if _, err := f.Auth.UserByEmail(t.Context(), email); err != nil {
							t.Errorf("user %s after sign-up: %v", email, err)
						}
					}
					return
				}
				switch {
				case tc.fields != nil:
					if r.code != http.StatusOK || r.status != "FIELD_ERROR" {
						t.Fatalf("got %d %s, want 200 FIELD_ERROR", r.code, r.body)
					}
					got := map[string]string{}
					for _, fe := range r.json["formFields"].([]any) {
						fe := fe.(map[string]any)
						got[fe["id"].(string)] = fe["error"].(string)
					}
					if !maps.Equal(got, tc.fields) {
						t.Errorf("field errors %v, want %v", got, tc.fields)
					}
				default:
					r.wantMessage(t, tc.code, tc.message)
				}
				wantNoTokens(t, r.response())
				if n := f.store.writes.Load() - before; n != 0 {
					t.Errorf("%d store writes, want none", n)
				}
				if ep == "signup" {
					if _, err := f.Auth.UserByEmail(t.Context(), email); !errors.Is(err, store.ErrNotFound) {
						t.Errorf("user %s exists after a refused sign-up (err %v)", email, err)
					}
				}
			})
		}
	}
}

// With a larger body cap, nesting beyond what the decoder allows is still a
// 400.
func TestDeepNestingUnderLargeCap(t *testing.T) {
	f := newInFixture(t, auth.Config{MaxBodyBytes: 1 << 20})
	f.SignedIn(authtest.Header)
	for name, body := range map[string]string{
		"100000 open brackets":     formBody(emailField(strings.Repeat("[", 100000))),
		"100000 nested arrays":     formBody(emailField(strings.Repeat("[", 100000) + strings.Repeat("]", 100000))),
		"50000 nested objects":     `{"x":` + strings.Repeat(`{"a":`, 50000) + "1" + strings.Repeat("}", 50000) + "}",
		"100 KB email":             credBody(strings.Repeat("a", 100<<10)+"@example.com", authtest.Password),
		"email at the byte cap":    credBody(strings.Repeat("a", 245)+"@example.com", authtest.Password),
		"100 KB password":          credBody(f.NewEmail(), "a1"+strings.Repeat("b", 100<<10)),
		"password at 1 KB cap":     credBody(f.NewEmail(), "a1"+strings.Repeat("b", 1023)),
		"100000 empty elements":    formBody(strings.Split(strings.Repeat("{}\n", 100000), "\n")[:100000]...),
		"100000 unknown keys":      "{" + strings.Repeat(`"k":1,`, 100000) + `"formFields":[]}`,
		"email value 5000 deep":    formBody(emailField(strings.Repeat(`{"a":`, 5000)+"1"+strings.Repeat("}", 5000)), passwordField(`"x"`)),
		"password value 9000 deep": formBody(emailField(`"a@example.com"`), passwordField(strings.Repeat("[", 9000)+strings.Repeat("]", 9000))),
	} {
		t.Run(name, func(t *testing.T) {
			for _, ep := range []string{"signup", "signin"} {
				before := f.store.writes.Load()
				r := f.send(t, "POST", "/auth/"+ep, strings.NewReader(body), hdr("Content-Type", "application/json"))
				switch {
				case r.code == http.StatusBadRequest:
					r.wantMessage(t, http.StatusBadRequest, "")
				case r.code == http.StatusOK && (r.status == "FIELD_ERROR" || r.status == "WRONG_CREDENTIALS_ERROR"):
				default:
					t.Errorf("%s: got %d %s, want 400 or a refusal", ep, r.code, r.body)
				}
				wantNoTokens(t, r.response())
				if n := f.store.writes.Load() - before; n != 0 {
					t.Errorf("%s: %d store writes, want none", ep, n)
				}
			}
		})
	}
}

// A password is hashed, never stored, so NUL bytes and control characters
// in it are kept, not cut: the part before a NUL is not the password.
func TestPasswordWithNULIsNotTruncated(t *testing.T) {
	f := newInFixture(t, auth.Config{})
	email := f.NewEmail()
	pw := "abc12345\x00\x01\x1b\u0085 and more"
	c := f.NewClient(authtest.Header)
	if r := c.SignUp(email, pw); r.StatusCode != http.StatusOK || r.Status != "OK" {
		t.Fatalf("sign-up: %d %s", r.StatusCode, r.Body)
	}
	for _, wrong := range []string{"abc12345", "abc12345\x00", "abc12345\x00\x01\x1b\u0085 and mor", "abc12345 \x01\x1b\u0085 and more"} {
		before := f.store.writes.Load()
		if r := c.SignIn(email, wrong); r.StatusCode != http.StatusOK || r.Status != "WRONG_CREDENTIALS_ERROR" {
			t.Errorf("sign-in with %q: %d %s, want WRONG_CREDENTIALS_ERROR", wrong, r.StatusCode, r.Body)
		}
		if n := f.store.writes.Load() - before; n != 0 {
			t.Errorf("sign-in with %q: %d store writes, want none", wrong, n)
		}
	}
	if r := c.SignIn(email, pw); r.StatusCode != http.StatusOK || r.Status != "OK" {
		t.Errorf("sign-in with the password: %d %s", r.StatusCode, r.Body)
	}
}

// Long passwords are refused before any work at sign-up, and never match at
// sign-in; neither is a 5xx.
func TestLongPasswords(t *testing.T) {
	f := newInFixture(t, auth.Config{})
	_, known := f.SignedIn(authtest.Header)
	long := "a1" + strings.Repeat("x", 2000)
	hdr := hdr("Content-Type", "application/json")

	email := f.NewEmail()
	r := f.send(t, "POST", "/auth/signup", strings.NewReader(credBody(email, long)), hdr)
	if r.code != http.StatusOK || r.status != "FIELD_ERROR" || !strings.Contains(string(r.body), "Password's length must be lesser than 100 characters") {
		t.Errorf("sign-up with a 2 KB password: %d %s, want the length FIELD_ERROR", r.code, r.body)
	}
	if _, err := f.Auth.UserByEmail(t.Context(), email); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("user created: %v", err)
	}
	r = f.send(t, "POST", "/auth/signin", strings.NewReader(credBody(known.Email, long)), hdr)
	if r.code != http.StatusOK || r.status != "WRONG_CREDENTIALS_ERROR" {
		t.Errorf("sign-in with a 2 KB password: %d %s, want WRONG_CREDENTIALS_ERROR", r.code, r.body)
	}
	wantNoTokens(t, r.response())
}

// rawRequest writes a request on its own TLS connection and reads the
// answer; body is sent as is, whatever Content-Length claims.
func (f *inFixture) rawRequest(t *testing.T, head, body string) *http.Response {
	t.Helper()
	cfg := f.hc.Transport.(*http.Transport).TLSClientConfig.Clone()
	conn, err := tls.Dial("tcp", f.Listener.Addr().String(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(conn, head+"\r\n"+body); err != nil {
		t.Fatal(err)
	}
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer: %v (does the server wait for a body it will refuse?)", err)
	}
	t.Cleanup(func() { res.Body.Close() })
	return res
}

// A body declared larger than the cap is refused at once: the server reads
// no more of it than it needs, here nothing.
func TestDeclaredOversizeBodyRefusedUnread(t *testing.T) {
	f := newInFixture(t, auth.Config{})
	for _, ep := range []string{"signup", "signin"} {
		for _, length := range []int{100 << 10, 10 << 20, 1 << 40} {
			t.Run(fmt.Sprintf("%s/%d", ep, length), func(t *testing.T) {
				head := fmt.Sprintf("POST /auth/%s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n", ep, length)
				res := f.rawRequest(t, head, `{"formFields":[`)
				if res.StatusCode != http.StatusRequestEntityTooLarge {
					t.Errorf("got %d, want 413", res.StatusCode)
				}
				var m struct{ Message string }
				if err := json.NewDecoder(res.Body).Decode(&m); err != nil || m.Message == "" {
					t.Errorf("body: %v %+v, want a message", err, m)
				}
			})
		}
	}
}

func TestEmailExistsHostileQueries(t *testing.T) {
	f := newInFixture(t, auth.Config{})
	_, known := f.SignedIn(authtest.Header)
	nul := strings.Replace(known.Email, "@", "\x00@", 1)
	yes, no := true, false
	cases := []struct {
		name   string
		query  string
		code   int
		exists *bool
	}{
		{"known email", "?email=" + url.QueryEscape(known.Email), 200, &yes},
		{"known email padded and upper-cased", "?email=" + url.QueryEscape("  "+strings.ToUpper(known.Email)+"\t"), 200, &yes},
		{"unknown parameter beside", "?x=1&email=" + url.QueryEscape(known.Email) + "&y", 200, &yes},
		{"no query", "", 400, nil},
		{"no email parameter", "?mail=" + url.QueryEscape(known.Email), 400, nil},
		{"parameter in another case", "?Email=" + url.QueryEscape(known.Email), 400, nil},
		{"parameter with brackets", "?email[]=" + url.QueryEscape(known.Email), 400, nil},
		{"repeated email", "?email=a%40example.com&email=" + url.QueryEscape(known.Email), 400, nil},
		{"repeated known email", "?email=" + url.QueryEscape(known.Email) + "&email=" + url.QueryEscape(known.Email), 400, nil},
		{"repeated, one empty", "?email=" + url.QueryEscape(known.Email) + "&email=", 400, nil},
		{"broken percent-encoding", "?email=%zz" + url.QueryEscape(known.Email), 400, nil},
		{"semicolon separator", "?email=" + url.QueryEscape(known.Email) + ";x=1", 400, nil},
		{"empty email", "?email=", 200, &no},
		{"email without value", "?email", 200, &no},
		{"blank email", "?email=%20%20", 200, &no},
		{"NUL byte", "?email=" + url.QueryEscape(nul), 200, &no},
		{"NUL byte at the end", "?email=" + url.QueryEscape(known.Email) + "%00", 200, &no},
		{"control characters", "?email=" + url.QueryEscape(strings.Replace(known.Email, "@", "\x1b\x7f@", 1)), 200, &no},
		{"invalid UTF-8", "?email=%ff%fe%40example.com", 200, &no},
		{"invalid UTF-8 in a known email", "?email=" + url.QueryEscape(strings.Replace(known.Email, "@", "\xc3@", 1)), 200, &no},
		{"100 KB email", "?email=" + strings.Repeat("a", 100<<10) + "%40example.com", 200, &no},
		{"SQL", "?email=" + url.QueryEscape("' OR '1'='1"), 200, &no},
		{"wildcard", "?email=" + url.QueryEscape("%@example.com"), 200, &no},
	}
	for _, path := range []string{"/auth/emailpassword/email/exists", "/auth/signup/email/exists"} {
		for _, tc := range cases {
			t.Run(path+"/"+tc.name, func(t *testing.T) {
				// The SDK sends a JSON Content-Type with no body; a
				// body, if any, is ignored.
				r := f.send(t, "GET", path+tc.query, strings.NewReader(`{"email":1}`), hdr("Content-Type", "application/json", "rid", "emailpassword"))
				if tc.exists == nil {
					r.wantMessage(t, tc.code, "")
					return
				}
				if r.code != tc.code || r.status != "OK" || r.json["exists"] != *tc.exists {
					t.Errorf("got %d %s, want %d exists %v", r.code, r.body, tc.code, *tc.exists)
				}
			})
		}
	}
}

func TestUnknownPathsAndMethods(t *testing.T) {
	f := newInFixture(t, auth.Config{})
	cases := []struct {
		method, path string
		code         int
	}{
		{"GET", "/auth", 404},
		{"GET", "/auth/", 404},
		{"POST", "/auth/nope", 404},
		{"POST", "/auth/signin/", 404},
		{"POST", "/auth/SIGNIN", 404},
		{"POST", "/auth/signin%00", 404},
		{"POST", "/auth/signin%2F", 404},
		{"POST", "/auth/signin.json", 404},
		{"POST", "/auth/tenant1/signin", 404},
		{"POST", "/auth/public/public/signin", 404},
		{"POST", "/auth/session", 404},
		{"GET", "/auth/jwt/jwks.json", 404}, // HS256: no public keys
		{"GET", "/auth/" + strings.Repeat("a/", 20000), 404},
		{"GET", "/auth/signup", 405},
		{"GET", "/auth/signin", 405},
		{"PUT", "/auth/signin", 405},
		{"DELETE", "/auth/signup", 405},
		{"PATCH", "/auth/signin", 405},
		{"GET", "/auth/session/refresh", 405},
		{"GET", "/auth/signout", 405},
		{"DELETE", "/auth/signout", 405},
		{"POST", "/auth/emailpassword/email/exists?email=a%40example.com", 405},
		{"PUT", "/auth/signup/email/exists?email=a%40example.com", 405},
		{"FOO", "/auth/signin", 405},
		{"CONNECTX", "/auth/session/refresh", 405},
		{"TRACE", "/auth/signout", 405},
		{"get", "/auth/emailpassword/email/exists?email=a%40example.com", 405},
		{"post", "/auth/signin", 405},
	}
	for _, tc := range cases {
		t.Run(tc.method+" "+tc.path[:min(len(tc.path), 40)], func(t *testing.T) {
			r := f.send(t, tc.method, tc.path, strings.NewReader(credBody("a@example.com", authtest.Password)), hdr("Content-Type", "application/json"))
			r.wantMessage(t, tc.code, "")
			if tc.code == http.StatusMethodNotAllowed && r.header.Get("Allow") == "" {
				t.Errorf("405 without Allow")
			}
			wantNoTokens(t, r.response())
		})
	}
	if _, err := f.Auth.UserByEmail(t.Context(), "a@example.com"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a user was created: %v", err)
	}
	// HEAD of a POST endpoint is a 405 too, without a body.
	if r := f.send(t, "HEAD", "/auth/signin", nil, nil); r.code != http.StatusMethodNotAllowed {
		t.Errorf("HEAD /auth/signin: %d", r.code)
	}
}

// Every method, TRACE and OPTIONS included, needs a session; only a CORS
// preflight is answered without one, by the middleware itself.
func TestRequireSessionEveryMethod(t *testing.T) {
	f := newInFixture(t, auth.Config{})
	reached := func(w http.ResponseWriter, r *http.Request) {
		if _, ok := auth.SessionFromContext(r.Context()); !ok {
			w.Header().Set("X-Reached", "without a session")
		}
		w.WriteHeader(http.StatusNoContent)
	}
	f.Mux.Handle("/api/any", f.Auth.RequireSession(http.HandlerFunc(reached)))
	f.Mux.Handle("/api/optional", f.Auth.OptionalSession(http.HandlerFunc(reached)))
	for _, method := range []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "CONNECTX", "FOO"} {
		t.Run(method, func(t *testing.T) {
			for _, tc := range []struct {
				header http.Header
				msg    string
			}{
				{nil, "unauthorised"},
				{bearer("a.b.c"), "try refresh token"},
				{cookie("sAccessToken=%zz"), "try refresh token"},
			} {
				r := f.send(t, method, "/api/any", nil, tc.header)
				if method == "HEAD" {
					if r.code != http.StatusUnauthorized {
						t.Errorf("%v: got %d, want 401", tc.header, r.code)
					}
				} else {
					r.wantMessage(t, http.StatusUnauthorized, tc.msg)
				}
				if tc.header != nil {
					r = f.send(t, method, "/api/optional", nil, tc.header)
					if r.code != http.StatusUnauthorized {
						t.Errorf("optional, %v: got %d (%s), want 401", tc.header, r.code, r.header.Get("X-Reached"))
					}
				}
			}
		})
	}
	preflight := http.Header{"Origin": {"https://elsewhere.example"}, "Access-Control-Request-Method": {"POST"}}
	for _, path := range []string{"/api/any", "/api/optional"} {
		r := f.send(t, "OPTIONS", path, nil, preflight)
		if r.code != http.StatusNoContent || r.header.Get("X-Reached") != "" {
			t.Errorf("preflight to %s: got %d (%s), want 204 from the middleware, the handler not run", path, r.code, r.header.Get("X-Reached"))
		}
	}
}

// credCase is a hostile way to present a credential. valid is the real
// token for the endpoint: the access token for protected routes and
// sign-out, the refresh token for refresh. access is the answer of a
// protected route.
type credCase struct {
	name   string
	header func(valid string) http.Header
	access string
}

func hostileCredentials() []credCase {
	const none, invalid = "unauthorised", "try refresh token"
	huge := strings.Repeat("A", 100<<10)
	two := func(name string, vals ...string) func(string) http.Header {
		return func(valid string) http.Header {
			h := http.Header{}
			for _, v := range vals {
				h.Add(name, strings.ReplaceAll(v, "VALID", valid))
			}
			return h
		}
	}
	c := func(v string) func(string) http.Header {
		return func(valid string) http.Header { return cookie(strings.ReplaceAll(v, "VALID", valid)) }
	}
	a := func(v string) func(string) http.Header {
		return func(valid string) http.Header {
			return hdr("Authorization", strings.ReplaceAll(v, "VALID", valid))
		}
	}
	return []credCase{
		{"nothing", func(string) http.Header { return nil }, none},
		{"Bearer alone", a("Bearer"), none},
		{"Bearer and a space", a("Bearer "), none},
		{"Bearer and spaces", a("Bearer     "), none},
		{"Basic", a("Basic dXNlcjpwYXNz"), none},
		{"Basic with the token", a("Basic VALID"), none},
		{"token without scheme", a("VALID"), none},
		{"100 KB bearer token", a("Bearer " + huge), invalid},
		{"two Authorization headers, valid first", two("Authorization", "Bearer VALID", "Bearer a.b.c"), invalid},
		{"two Authorization headers, valid last", two("Authorization", "Bearer a.b.c", "Bearer VALID"), invalid},
		{"two Authorization headers, both valid", two("Authorization", "Bearer VALID", "Bearer VALID"), invalid},
		{"non-ASCII token", a("Bearer \u00fcn\u00efc\u00f6d\u00e9.\u2603.\U0001F600"), invalid},
		{"Latin-1 bytes", a("Bearer \xe9\xff\xfe"), invalid},
		{"a.b.c", a("Bearer a.b.c"), invalid},
		{"dots", a("Bearer ...."), invalid},
		{"five segments", a("Bearer a.b.c.d.e"), invalid},
		{"token and more", a("Bearer VALID x"), invalid},
		{"token with padding", a("Bearer VALID="), invalid},
		{"token twice", a("Bearer VALID,VALID"), invalid},
		{"two sAccessToken cookies, valid first", c("sAccessToken=VALID; sAccessToken=garbage; sRefreshToken=VALID; sRefreshToken=garbage"), invalid},
		{"two cookies, valid last", c("sAccessToken=garbage; sAccessToken=VALID; sRefreshToken=garbage; sRefreshToken=VALID"), invalid},
		{"two Cookie headers", two("Cookie", "sAccessToken=VALID; sRefreshToken=VALID", "sAccessToken=VALID; sRefreshToken=VALID"), invalid},
		{"percent-encoded garbage", c("sAccessToken=%zz; sRefreshToken=%zz"), invalid},
		{"percent-encoded NUL", c("sAccessToken=VALID%00; sRefreshToken=VALID%00"), invalid},
		{"100 KB cookie", c("sAccessToken=" + huge + "; sRefreshToken=" + huge), invalid},
		{"empty cookies", c("sAccessToken=; sRefreshToken="), none},
		{"quoted empty cookies", c(`sAccessToken=""; sRefreshToken=""`), none},
		{"cookie names in another case", c("saccesstoken=VALID; SREFRESHTOKEN=VALID"), none},
		// The SDK's own script cookies are never credentials.
		{"SDK script cookies", c("st-access-token=VALID; st-refresh-token=VALID; sFrontToken=VALID; sAntiCsrf=VALID; st-last-access-token-update=1700000000000"), none},
		{"sIdRefreshToken", c("sIdRefreshToken=VALID"), none},
	}
}

func TestHostileCredentials(t *testing.T) {
	f := newInFixture(t, auth.Config{})
	c, u := f.SignedIn(authtest.Header)
	access, refresh := c.Tokens()
	for _, tc := range hostileCredentials() {
		t.Run(tc.name, func(t *testing.T) {
			before := f.store.writes.Load()
			r := f.send(t, "GET", "/api/session", nil, tc.header(access))
			r.wantMessage(t, http.StatusUnauthorized, tc.access)
			r = f.send(t, "POST", "/auth/signout", nil, withRid(tc.header(access), "session"))
			r.wantMessage(t, http.StatusUnauthorized, tc.access)
			r = f.send(t, "POST", "/auth/session/refresh", nil, withRid(tc.header(refresh), "session"))
			r.wantRefreshRefused(t)
			if n := f.store.writes.Load() - before; n != 0 {
				t.Errorf("%d store writes, want none", n)
			}
		})
	}
	// Nothing was harmed: the session is still there, and its tokens work.
	if ss, err := f.Auth.Sessions(t.Context(), u.ID); err != nil || len(ss) != 1 {
		t.Fatalf("sessions after the attacks: %v %v, want 1", len(ss), err)
	}
	if r := f.send(t, "GET", "/api/session", nil, bearer(access)); r.code != http.StatusOK {
		t.Errorf("access token after the attacks: %d %s", r.code, r.body)
	}
	// Script cookies beside the real cookie change nothing.
	r := f.send(t, "GET", "/api/session", nil, cookie("st-access-token=x; sFrontToken=x; sAccessToken="+access+"; sAntiCsrf=x"))
	if r.code != http.StatusOK {
		t.Errorf("real cookie among script cookies: %d %s", r.code, r.body)
	}
	if r := c.Refresh(); r.StatusCode != http.StatusOK {
		t.Errorf("refresh after the attacks: %d %s", r.StatusCode, r.Body)
	}
}

func withRid(h http.Header, rid string) http.Header {
	h = h.Clone()
	if h == nil {
		h = http.Header{}
	}
	h.Set("rid", rid)
	return h
}

// forger makes access tokens: with the real signing key (read from the
// store, as an attacker who has the key would) to show that the claim
// checks hold on their own, and with other keys and algorithms.
type forger struct {
	kid    string
	key    any // the real key to sign with
	method jwt.SigningMethod
	claims jwt.MapClaims // of a genuine access token
	header map[string]any
}

func newForger(t testing.TB, f *inFixture, access string) *forger {
	t.Helper()
	claims := jwt.MapClaims{}
	tok, _, err := jwt.NewParser().ParseUnverified(access, claims)
	if err != nil {
		t.Fatal(err)
	}
	kid, _ := tok.Header["kid"].(string)
	keys, err := f.mem.SigningKeys(t.Context(), f.Clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if k.ID != kid {
			continue
		}
		g := &forger{kid: kid, claims: claims, header: tok.Header}
		switch k.Algorithm {
		case auth.HS256:
			g.key, g.method = k.Material, jwt.SigningMethodHS256
		case auth.EdDSA:
			g.key, g.method = ed25519.NewKeyFromSeed(k.Material), jwt.SigningMethodEdDSA
		}
		return g
	}
	t.Fatalf("no key %q in the store", kid)
	return nil
}

// sign signs the genuine claims, changed by edit, with method and key;
// the header carries the real kid unless edit changes it.
func (g *forger) sign(t testing.TB, method jwt.SigningMethod, key any, edit func(h map[string]any, c jwt.MapClaims)) string {
	t.Helper()
	tok := jwt.NewWithClaims(method, maps.Clone(g.claims))
	tok.Header["kid"] = g.kid
	if edit != nil {
		edit(tok.Header, tok.Claims.(jwt.MapClaims))
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// real signs with the real key.
func (g *forger) real(t testing.TB, edit func(h map[string]any, c jwt.MapClaims)) string {
	return g.sign(t, g.method, g.key, edit)
}

func b64(v any) string {
	var b []byte
	switch v := v.(type) {
	case string:
		b = []byte(v)
	default:
		b, _ = json.Marshal(v)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

type forged struct {
	name, token string
}

func forgeries(t testing.TB, g *forger, genuine, refresh, frontToken string) []forged {
	now := time.Unix(int64(g.claims["iat"].(float64)), 0)
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	_, edKey, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	attacker := make([]byte, 32)
	rand.Read(attacker)
	claim := func(k string, v any) func(map[string]any, jwt.MapClaims) {
		return func(_ map[string]any, c jwt.MapClaims) {
			if v == nil {
				delete(c, k)
			} else {
				c[k] = v
			}
		}
	}
	header := func(k string, v any) func(map[string]any, jwt.MapClaims) {
		return func(h map[string]any, _ jwt.MapClaims) {
			if v == nil {
				delete(h, k)
			} else {
				h[k] = v
			}
		}
	}
	parts := strings.Split(genuine, ".")
	edited := maps.Clone(g.claims)
	edited["sub"] = "someone-else"
	noneHeader := map[string]any{"alg": "none", "typ": "JWT", "kid": g.kid}
	return []forged{
		{"alg none", g.sign(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, nil)},
		{"alg none, genuine signature kept", b64(noneHeader) + "." + parts[1] + "." + parts[2]},
		{"alg NONE, no signature", b64(map[string]any{"alg": "NONE", "kid": g.kid}) + "." + parts[1] + "."},
		{"alg empty", b64(map[string]any{"alg": "", "kid": g.kid}) + "." + parts[1] + "." + parts[2]},
		{"no alg", b64(map[string]any{"kid": g.kid}) + "." + parts[1] + "." + parts[2]},
		{"HS256 with an attacker key, real kid", g.sign(t, jwt.SigningMethodHS256, attacker, nil)},
		{"HS256 with an attacker key, no kid", g.sign(t, jwt.SigningMethodHS256, attacker, header("kid", nil))},
		{"HS256 with an empty key", hs256(parts[0]+"."+parts[1], nil)},
		{"HS384 with the real key", g.sign(t, jwt.SigningMethodHS384, g.key, nil)},
		{"HS512 with the real key", g.sign(t, jwt.SigningMethodHS512, g.key, nil)},
		{"RS256 with an attacker key", g.sign(t, jwt.SigningMethodRS256, rsaKey, nil)},
		{"RS256 with the key embedded as jwk", g.sign(t, jwt.SigningMethodRS256, rsaKey, header("jwk", map[string]any{
			"kty": "RSA", "n": base64.RawURLEncoding.EncodeToString(rsaKey.N.Bytes()), "e": "AQAB"}))},
		{"RS256 with jku", g.sign(t, jwt.SigningMethodRS256, rsaKey, header("jku", "https://attacker.example/jwks.json"))},
		{"PS256 with an attacker key", g.sign(t, jwt.SigningMethodPS256, rsaKey, nil)},
		{"ES256 with an attacker key", g.sign(t, jwt.SigningMethodES256, ecKey, nil)},
		{"EdDSA with an attacker key", g.sign(t, jwt.SigningMethodEdDSA, edKey, nil)},
		{"unknown kid, real key", g.real(t, header("kid", "no-such-key"))},
		{"no kid, real key", g.real(t, header("kid", nil))},
		{"empty kid, real key", g.real(t, header("kid", ""))},
		{"kid a number, real key", g.real(t, header("kid", 1))},
		{"kid an object, real key", g.real(t, header("kid", map[string]any{"id": g.kid}))},
		{"kid path traversal, real key", g.real(t, header("kid", "../../../../../dev/null"))},
		{"kid SQL, real key", g.real(t, header("kid", "x' UNION SELECT 'secret' --"))},
		{"kid 3 KB, real key", g.real(t, header("kid", strings.Repeat("k", 3000)))},
		{"no exp", g.real(t, claim("exp", nil))},
		{"exp in the past", g.real(t, func(_ map[string]any, c jwt.MapClaims) {
			c["iat"], c["exp"] = now.Add(-2*time.Hour).Unix(), now.Add(-time.Hour).Unix()
		})},
		{"exp null", g.real(t, claim("exp", json.RawMessage("null")))},
		{"iat in the future", g.real(t, func(_ map[string]any, c jwt.MapClaims) {
			c["iat"], c["exp"] = now.Add(time.Hour).Unix(), now.Add(2*time.Hour).Unix()
		})},
		{"no iat", g.real(t, claim("iat", nil))},
		{"iat a string", g.real(t, claim("iat", "yesterday"))},
		{"wrong iss", g.real(t, claim("iss", "https://other.example"))},
		{"no iss", g.real(t, claim("iss", nil))},
		{"iss an array", g.real(t, claim("iss", []string{g.claims["iss"].(string)}))},
		{"no tokenType", g.real(t, claim("tokenType", nil))},
		{"tokenType refresh", g.real(t, claim("tokenType", "refresh"))},
		{"tokenType reset", g.real(t, claim("tokenType", "reset"))},
		{"tokenType in another case", g.real(t, claim("tokenType", "Access"))},
		{"tokenType a number", g.real(t, claim("tokenType", 1))},
		{"no sub", g.real(t, claim("sub", nil))},
		{"empty sub", g.real(t, claim("sub", ""))},
		{"sub a number", g.real(t, claim("sub", 1))},
		{"no sessionHandle", g.real(t, claim("sessionHandle", nil))},
		{"nbf in the future", g.real(t, claim("nbf", now.Add(time.Hour).Unix()))},
		{"payload edited, signature kept", parts[0] + "." + b64(edited) + "." + parts[2]},
		{"signature stripped", parts[0] + "." + parts[1] + "."},
		{"signature cut", parts[0] + "." + parts[1] + "." + parts[2][:len(parts[2])-2]},
		{"signature flipped", parts[0] + "." + parts[1] + "." + flip(parts[2])},
		{"signature padded", genuine + "="},
		{"standard base64 signature", parts[0] + "." + parts[1] + "." + strings.NewReplacer("-", "+", "_", "/").Replace(parts[2]) + "="},
		{"header only", parts[0]},
		{"two segments", parts[0] + "." + parts[1]},
		{"four segments", genuine + "." + parts[2]},
		{"JSON instead of base64", `{"alg":"none"}.` + parts[1] + "."},
		{"header not JSON", b64("not json") + "." + parts[1] + "." + parts[2]},
		{"header an array", b64([]any{"HS256"}) + "." + parts[1] + "." + parts[2]},
		{"payload an array", parts[0] + "." + b64([]any{1}) + "." + parts[2]},
		{"refresh token as access token", refresh},
		{"front-token as access token", frontToken},
	}
}

// hs256 signs a JWT signing input with HMAC-SHA256 and a key of any length.
func hs256(input string, key []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(input))
	return input + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// flip changes the last character of a base64url string but one, which
// changes the decoded bytes.
func flip(s string) string {
	b := []byte(s)
	i := len(b) - 2
	if b[i] == 'A' {
		b[i] = 'B'
	} else {
		b[i] = 'A'
	}
	return string(b)
}

func TestForgedAccessTokens(t *testing.T) {
	f := newInFixture(t, auth.Config{})
	c, u := f.SignedIn(authtest.Header)
	access, refresh := c.Tokens()
	g := newForger(t, f, access)

	// The forger itself works: the genuine claims, re-signed with the real
	// key, make a token that passes. Each forgery below differs from this
	// in one respect.
	if r := f.send(t, "GET", "/api/session", nil, bearer(g.real(t, nil))); r.code != http.StatusOK {
		t.Fatalf("re-signed genuine token: %d %s", r.code, r.body)
	}

	tokens := forgeries(t, g, access, refresh, c.FrontToken)
	// A token of another deployment, with its own store and key.
	other := newInFixture(t, auth.Config{})
	oc, _ := other.SignedIn(authtest.Header)
	oa, _ := oc.Tokens()
	tokens = append(tokens, forged{"token of another deployment", oa})

	for _, tc := range tokens {
		t.Run(tc.name, func(t *testing.T) {
			before := f.store.writes.Load()
			for _, h := range []http.Header{bearer(tc.token), cookie("sAccessToken=" + url.PathEscape(tc.token))} {
				r := f.send(t, "GET", "/api/session", nil, h)
				r.wantMessage(t, http.StatusUnauthorized, "try refresh token")
				r = f.send(t, "POST", "/auth/signout", nil, withRid(h, "session"))
				r.wantMessage(t, http.StatusUnauthorized, "try refresh token")
			}
			// Presented as refresh tokens (but the real one):
			// unauthorised, never theft.
			for _, h := range []http.Header{bearer(tc.token), cookie("sRefreshToken=" + url.PathEscape(tc.token))} {
				if tc.token != refresh {
					f.send(t, "POST", "/auth/session/refresh", nil, withRid(h, "session")).wantRefreshRefused(t)
				}
			}
			if n := f.store.writes.Load() - before; n != 0 {
				t.Errorf("%d store writes, want none", n)
			}
		})
	}

	// A refresh token of the right shape that was never issued.
	fake := base64.RawURLEncoding.EncodeToString(make([]byte, 32))
	for _, h := range []http.Header{bearer(fake), cookie("sRefreshToken=" + fake)} {
		f.send(t, "POST", "/auth/session/refresh", nil, withRid(h, "session")).wantRefreshRefused(t)
	}

	// The session came to no harm.
	if ss, err := f.Auth.Sessions(t.Context(), u.ID); err != nil || len(ss) != 1 {
		t.Fatalf("sessions after the forgeries: %d %v, want 1", len(ss), err)
	}
	if r := f.send(t, "GET", "/api/session", nil, bearer(access)); r.code != http.StatusOK {
		t.Errorf("genuine access token: %d %s", r.code, r.body)
	}
	// Once expired, the genuine token is refused too; the refresh token
	// then gets a new one.
	f.Clock.Advance(time.Hour + time.Minute)
	f.send(t, "GET", "/api/session", nil, bearer(access)).wantMessage(t, http.StatusUnauthorized, "try refresh token")
	if r := c.Refresh(); r.StatusCode != http.StatusOK {
		t.Fatalf("refresh: %d %s", r.StatusCode, r.Body)
	}
	if r := c.Get("/api/session"); r.StatusCode != http.StatusOK {
		t.Errorf("refreshed access token: %d %s", r.StatusCode, r.Body)
	}
}

// With EdDSA the public key is public: using it as an HMAC secret (the
// classic algorithm confusion) must not work.
func TestForgedAccessTokensEdDSA(t *testing.T) {
	f := newInFixture(t, auth.Config{SigningAlgorithm: auth.EdDSA})
	c, _ := f.SignedIn(authtest.Header)
	access, _ := c.Tokens()
	g := newForger(t, f, access)
	if r := f.send(t, "GET", "/api/session", nil, bearer(g.real(t, nil))); r.code != http.StatusOK {
		t.Fatalf("re-signed genuine token: %d %s", r.code, r.body)
	}

	r := f.send(t, "GET", "/auth/jwt/jwks.json", nil, nil)
	keys, _ := r.json["keys"].([]any)
	if r.code != http.StatusOK || len(keys) == 0 {
		t.Fatalf("jwks: %d %s", r.code, r.body)
	}
	x, _ := keys[0].(map[string]any)["x"].(string)
	pub, err := base64.RawURLEncoding.DecodeString(x)
	if err != nil || len(pub) != ed25519.PublicKeySize {
		t.Fatalf("jwks x %q: %v", x, err)
	}
	_, attacker, _ := ed25519.GenerateKey(rand.Reader)
	for _, tc := range []forged{
		{"HS256 with the public key as secret", g.sign(t, jwt.SigningMethodHS256, pub, nil)},
		{"HS256 with the JWK x as secret", g.sign(t, jwt.SigningMethodHS256, []byte(x), nil)},
		{"EdDSA with an attacker key", g.sign(t, jwt.SigningMethodEdDSA, attacker, nil)},
		{"alg none", g.sign(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, nil)},
		{"tokenType refresh", g.real(t, func(_ map[string]any, c jwt.MapClaims) { c["tokenType"] = "refresh" })},
		{"no exp", g.real(t, func(_ map[string]any, c jwt.MapClaims) { delete(c, "exp") })},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.send(t, "GET", "/api/session", nil, bearer(tc.token)).wantMessage(t, http.StatusUnauthorized, "try refresh token")
		})
	}
}

func TestJWKSHostileRequests(t *testing.T) {
	f := newInFixture(t, auth.Config{SigningAlgorithm: auth.EdDSA})
	f.SignedIn(authtest.Header)
	for _, tc := range []struct {
		name, method, path string
		header             http.Header
		code               int
	}{
		{"plain", "GET", "/auth/jwt/jwks.json", nil, 200},
		{"query", "GET", "/auth/jwt/jwks.json?kid=../../x&kid=%zz&" + strings.Repeat("a", 10<<10), nil, 200},
		{"hostile credentials", "GET", "/auth/jwt/jwks.json", hdr("Authorization", "Bearer a.b.c", "Authorization", "x", "Cookie", "sAccessToken=%zz"), 200},
		{"POST", "POST", "/auth/jwt/jwks.json", hdr("Content-Type", "application/json"), 405},
		{"PUT", "PUT", "/auth/jwt/jwks.json", nil, 405},
		{"DELETE", "DELETE", "/auth/jwt/jwks.json", nil, 405},
		{"other file", "GET", "/auth/jwt/jwks", nil, 404},
		{"below", "GET", "/auth/jwt/jwks.json/x", nil, 404},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := f.send(t, tc.method, tc.path, strings.NewReader(`{"keys":[]}`), tc.header)
			if tc.code != http.StatusOK {
				r.wantMessage(t, tc.code, "")
				return
			}
			if keys, _ := r.json["keys"].([]any); r.code != http.StatusOK || len(keys) == 0 {
				t.Errorf("got %d %s, want the keys", r.code, r.body)
			}
		})
	}
}

// Refresh and sign-out carry no body; whatever body arrives is ignored.
func TestSessionEndpointsIgnoreBodies(t *testing.T) {
	f := newInFixture(t, auth.Config{})
	c, u := f.SignedIn(authtest.Header)
	for _, body := range []string{"not json", `{"formFields":1}` + "\x00\xff", strings.Repeat("[", 10000)} {
		_, refresh := c.Tokens()
		r := f.send(t, "POST", "/auth/session/refresh", strings.NewReader(body), withRid(hdr("Authorization", "Bearer "+refresh, "st-auth-mode", "header"), "session"))
		if r.code != http.StatusOK || r.status != "OK" {
			t.Fatalf("refresh with body %.20q: %d %s", body, r.code, r.body)
		}
		c.SetTokens(r.header.Get("St-Access-Token"), r.header.Get("St-Refresh-Token"))
	}
	access, _ := c.Tokens()
	r := f.send(t, "POST", "/auth/signout", strings.NewReader(`{"x":`), withRid(bearer(access), "session"))
	if r.code != http.StatusOK || r.status != "OK" {
		t.Fatalf("sign-out with a broken body: %d %s", r.code, r.body)
	}
	if ss, _ := f.Auth.Sessions(t.Context(), u.ID); len(ss) != 0 {
		t.Errorf("%d sessions after sign-out", len(ss))
	}
}

// resetCase is a request to a password reset endpoint and its expected
// answer: code and message, or for 200 the status (and field errors).
type resetCase struct {
	name    string
	body    string
	header  http.Header
	code    int
	message string
	status  string
	fields  map[string]string
}

func (f *inFixture) runResetCases(t *testing.T, path string, cases []resetCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			header := tc.header
			if header == nil {
				header = hdr("Content-Type", "application/json", "rid", "emailpassword")
			}
			before := f.store.writes.Load()
			r := f.send(t, "POST", path, strings.NewReader(tc.body), header)
			switch {
			case tc.code != http.StatusOK:
				r.wantMessage(t, tc.code, tc.message)
			case r.code != http.StatusOK || r.status != tc.status:
				t.Errorf("got %d %s, want 200 %s", r.code, r.body, tc.status)
			case tc.fields != nil:
				got := map[string]string{}
				for _, fe := range r.json["formFields"].([]any) {
					fe := fe.(map[string]any)
					got[fe["id"].(string)] = fe["error"].(string)
				}
				if !maps.Equal(got, tc.fields) {
					t.Errorf("field errors %v, want %v", got, tc.fields)
				}
			}
			wantNoTokens(t, r.response())
			if n := f.store.writes.Load() - before; n != 0 {
				t.Errorf("%d store writes, want none", n)
			}
		})
	}
}

// A hostile request for a reset email sends none, even when it names a
// real user.
func TestResetRequestBodies(t *testing.T) {
	f := newInFixture(t, auth.Config{})
	_, known := f.SignedIn(authtest.Header)
	e := js(known.Email)
	body := func(elems ...string) string { return formBody(elems...) }
	ok := body(emailField(e))
	bad := func(name, b, msg string) resetCase {
		return resetCase{name: name, body: b, code: http.StatusBadRequest, message: msg}
	}
	fieldErr := func(name, b, msg string) resetCase {
		return resetCase{name: name, body: b, code: http.StatusOK, status: "FIELD_ERROR", fields: map[string]string{"email": msg}}
	}
	f.runResetCases(t, "/auth/user/password/reset/token", []resetCase{
		bad("empty body", "", ""),
		bad("not JSON", "email="+known.Email, ""),
		bad("top-level array", "["+ok+"]", ""),
		bad("top-level null", "null", ""),
		bad("object then object", ok+"{}", ""),
		bad("object then word", ok+" x", ""),
		bad("invalid UTF-8", body(emailField(`"`+strings.Replace(known.Email, "@", "\xff@", 1)+`"`))+"\xff", ""),
		bad("no formFields", `{"email":`+e+`}`, msgMissing),
		bad("formFields in another case", `{"FormFields":[`+emailField(e)+`]}`, msgMissing),
		bad("formFields object", `{"formFields":{"email":`+e+`}}`, msgNotArray),
		bad("formFields string", `{"formFields":`+e+`}`, msgNotArray),
		bad("element string", body(e), msgNotObject),
		bad("element null", body("null"), msgNotObject),
		bad("element without value", body(`{"id":"email"}`), msgNoIDValue),
		bad("id a number", body(`{"id":1,"value":`+e+`}`), msgNoIDValue),
		bad("keys in another case", body(`{"ID":"email","VALUE":`+e+`}`), msgNoIDValue),
		bad("email and password", body(emailField(e), passwordField(`"x"`)), msgTooMany),
		bad("email twice", body(emailField(e), emailField(e)), msgTooMany),
		bad("password instead of email", body(passwordField(e)), ""),
		bad("email a number", body(emailField("1")), msgEmailString),
		bad("email an array", body(emailField("["+e+"]")), msgEmailString),
		bad("email an object", body(emailField(`{"email":`+e+`}`)), msgEmailString),
		bad("15000 open brackets", body(emailField(strings.Repeat("[", 15000))), ""),
		fieldErr("email null", body(emailField("null")), msgNotOptional),
		fieldErr("no fields", body(), msgNotOptional),
		fieldErr("NUL byte in the email", body(emailField(js(strings.Replace(known.Email, "@", "\x00@", 1)))), msgEmailBad),
		fieldErr("control characters in the email", body(emailField(js(known.Email+"\r\nBcc: x@example.com"))), msgEmailBad),
		fieldErr("10 KB email", body(emailField(js(strings.Repeat("a", 10<<10)+known.Email))), msgEmailBad),
		{name: "100 KB email", body: body(emailField(js(strings.Repeat("a", 100<<10) + known.Email))), code: http.StatusRequestEntityTooLarge},
	})

	// Well-formed requests, odd as they are, do send the email. Nothing
	// above did: once the outbox has drained, only these are in the box.
	accepted := []string{
		`{"method":"token","shouldTryLinkingWithSessionUser":false,"formFields":[` + emailField(e) + `]}`,
		body(`{"id":"email","value":` + js(" "+strings.ToUpper(known.Email)) + `,"x":1}`),
	}
	for _, b := range accepted {
		r := f.send(t, "POST", "/auth/user/password/reset/token", strings.NewReader(b), hdr("Authorization", "Bearer a.b.c"))
		if r.code != http.StatusOK || r.status != "OK" {
			t.Errorf("%s: got %d %s, want OK", b, r.code, r.body)
		}
	}
	f.Mailbox.WaitFor(t, len(accepted), 10*time.Second)
	if err := f.Auth.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := len(f.Mailbox.Messages()); got != len(accepted) {
		t.Errorf("%d reset emails, want %d", got, len(accepted))
	}
}

// A hostile reset carrying a valid token neither uses it up nor changes
// the password.
func TestResetPasswordBodies(t *testing.T) {
	f := newInFixture(t, auth.Config{})
	c, known := f.SignedIn(authtest.Header)
	if r := c.RequestPasswordReset(known.Email); r.StatusCode != http.StatusOK {
		t.Fatalf("reset request: %d %s", r.StatusCode, r.Body)
	}
	_, tok := authtest.ResetLink(t, f.Mailbox.WaitFor(t, 1, 10*time.Second)[0])
	const newPw = "new password 2"
	pw := passwordField(js(newPw))
	reset := func(fields, token string) string {
		return `{"method":"token","formFields":[` + fields + `],"token":` + token + `}`
	}
	ok := reset(pw, js(tok))
	bad := func(name, b, msg string) resetCase {
		return resetCase{name: name, body: b, code: http.StatusBadRequest, message: msg}
	}
	invalid := func(name, token string) resetCase {
		return resetCase{name: name, body: reset(pw, token), code: http.StatusOK, status: "RESET_PASSWORD_INVALID_TOKEN_ERROR"}
	}
	f.runResetCases(t, "/auth/user/password/reset", []resetCase{
		bad("empty body", "", ""),
		bad("not JSON", "token="+tok, ""),
		bad("top-level array", "["+ok+"]", ""),
		bad("object then object", ok+"{}", ""),
		bad("object then word", ok+" x", ""),
		bad("invalid UTF-8", reset(passwordField(`"new password 2\xff"`), js(tok)), ""),
		bad("no formFields", `{"method":"token","token":`+js(tok)+`}`, msgMissing),
		bad("formFields object", `{"formFields":{"password":"x"},"token":`+js(tok)+`}`, msgNotArray),
		bad("element string", reset(js(newPw), js(tok)), msgNotObject),
		bad("id a number", reset(`{"id":1,"value":`+js(newPw)+`}`, js(tok)), msgNoIDValue),
		bad("keys in another case", reset(`{"ID":"password","VALUE":`+js(newPw)+`}`, js(tok)), msgNoIDValue),
		bad("password and email", reset(pw+","+emailField(js(known.Email)), js(tok)), msgTooMany),
		bad("email instead of password", reset(emailField(js(newPw)), js(tok)), ""),
		bad("password a number", reset(passwordField("12345678"), js(tok)), msgPwString),
		bad("password an array", reset(passwordField("["+js(newPw)+"]"), js(tok)), msgPwString),
		bad("no token", `{"method":"token","formFields":[`+pw+`]}`, ""),
		bad("token null", reset(pw, "null"), ""),
		bad("token in another case", `{"formFields":[`+pw+`],"Token":`+js(tok)+`}`, ""),
		bad("token a number", reset(pw, "1"), ""),
		bad("token an array", reset(pw, "["+js(tok)+"]"), ""),
		bad("token an object", reset(pw, `{"token":`+js(tok)+`}`), ""),
		bad("token repeated, invalid last", reset(pw, js(tok)+`,"token":1`), ""),
		bad("15000 open brackets", reset(pw, strings.Repeat("[", 15000)), ""),
		invalid("empty token", `""`),
		invalid("token with a NUL byte", js(tok+"\x00")),
		invalid("token with a space", js(" "+tok)),
		invalid("token cut", js(tok[:len(tok)-1])),
		invalid("token with padding", js(tok+"=")),
		invalid("token percent-encoded", js(url.QueryEscape(tok+"+"))),
		invalid("token in another case", js(strings.ToUpper(tok))),
		invalid("10 KB token", js(strings.Repeat("A", 10<<10))),
		invalid("forged token", js(base64.RawURLEncoding.EncodeToString(make([]byte, 32)))),
		{name: "password null", body: reset(passwordField("null"), js(tok)), code: http.StatusOK, status: "FIELD_ERROR",
			fields: map[string]string{"password": msgNotOptional}},
		{name: "weak password", body: reset(passwordField(`"short1"`), js(tok)), code: http.StatusOK, status: "FIELD_ERROR",
			fields: map[string]string{"password": "Password must contain at least 8 characters, including a number"}},
		{name: "10 MB password", body: reset(passwordField(js(strings.Repeat("a1", 5<<20))), js(tok)), code: http.StatusRequestEntityTooLarge},
	})

	// The password is unchanged, and the token still works.
	if r := f.NewClient(authtest.Header).SignIn(known.Email, authtest.Password); r.Status != "OK" {
		t.Fatalf("sign-in with the old password: %d %s", r.StatusCode, r.Body)
	}
	if r := c.ResetPassword(tok, newPw); r.StatusCode != http.StatusOK || r.Status != "OK" {
		t.Fatalf("reset with the token: %d %s", r.StatusCode, r.Body)
	}
	if r := f.NewClient(authtest.Header).SignIn(known.Email, newPw); r.Status != "OK" {
		t.Errorf("sign-in with the new password: %d %s", r.StatusCode, r.Body)
	}
}
