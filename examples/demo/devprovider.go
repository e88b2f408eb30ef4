package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"net/mail"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/latchkit/auth/internal/devoidc"
	"github.com/latchkit/auth/passwordless"
	"github.com/latchkit/auth/provider"
)

// The development provider's thirdPartyId and the name the page shows.
const (
	devProviderID   = "dev"
	devProviderName = "Dev provider"
	devOIDCPath     = "/dev/oidc"
)

// devRoutes serves what -dev adds under /dev/: the outbox of ob and,
// unless a real provider is configured, the development provider. Without
// -dev it serves nothing, and every /dev/ path is 404.
func devRoutes(mux *http.ServeMux, o options, ob *outbox) {
	if !o.dev {
		return
	}
	if ob != nil {
		ob.mount(mux)
	}
	if o.devProvider != nil {
		o.devProvider.mount(mux)
	}
	if o.acmeProvider != nil {
		o.acmeProvider.mount(mux)
	}
}

// printDev says at start what -dev turned on.
func printDev(w io.Writer, o options) {
	base := strings.TrimRight(o.appURL, "/")
	methods := []string{"email and password"}
	if o.devProvider != nil {
		methods = append(methods, "the development OpenID provider")
	}
	if o.passwordless != passwordless.Off {
		methods = append(methods, "passwordless by email ("+string(o.passwordless)+")")
	}
	if o.passkeys {
		methods = append(methods, "passkeys")
	}
	for _, p := range o.providers {
		if o.devProvider == nil || p != o.devProvider.provider {
			methods = append(methods, p.Name())
		}
	}
	fmt.Fprintf(w, "demo: development mode (-dev), for trying the demo on this machine only: sign-in with %s\n", strings.Join(methods, ", "))
	if o.devProvider != nil {
		fmt.Fprintf(w, "demo: development OpenID provider (development only, signs in anyone): issuer %s\n", o.devProvider.iss.URL)
	} else {
		fmt.Fprintln(w, "demo: development OpenID provider off: a real provider is configured")
	}
	fmt.Fprintf(w, "demo: outbox, the emails sent: %s/dev/outbox\n", base)
}

// devProvider is the development OpenID provider that -dev serves under
// /dev/oidc: a real one, found by discovery, whose sign-in page signs in
// whoever is typed, with no password. It is for trying third-party
// sign-in, email verification and linking with no account anywhere; the
// demo serves it only on a loopback address.
type devProvider struct {
	path     string // where it is served: devOIDCPath, or acme's
	audience string // whom its page signs in to, as its heading says
	iss      *devoidc.Issuer
	origin   string // the app's origin, the only one its form accepts posts from
	// provider is the provider.Provider the library signs in with,
	// made by provider.OIDC exactly as for a real provider.
	provider provider.Provider

	mu sync.Mutex
	// pending are the authorisation requests whose page is shown, by a
	// random id the form posts back: it names the request, and is the
	// form's proof that it was served here.
	pending map[string]pendingRequest
	// recent are the identities signed in during this run, newest first.
	recent []devoidc.Identity
}

type pendingRequest struct {
	req     devoidc.Request
	expires time.Time
}

// Limits of the in-memory state: a page is good for the lifetime of a
// code, and a short list of identities to pick from is enough.
const (
	devPendingMax = 1000
	devRecentMax  = 8
)

// newDevProvider makes the development provider for an app at appURL: its
// issuer is <appURL>/dev/oidc, its one client the demo, with a secret
// made for this run, and its one redirect URI the demo's callback page.
func newDevProvider(appURL string) (*devProvider, error) {
	return newDevProviderAt(appURL, devOIDCPath, devProviderID, devProviderName)
}

// newDevProviderAt is newDevProvider served under path, known to the
// library as the provider id: -tenants gives acme one of its own.
func newDevProviderAt(appURL, path, id, name string) (*devProvider, error) {
	u, err := url.Parse(appURL)
	if err != nil {
		return nil, err
	}
	issuer := strings.TrimRight(appURL, "/") + path
	p := &devProvider{
		path:     path,
		audience: "the demo",
		iss: &devoidc.Issuer{
			URL:          issuer,
			ClientID:     "demo",
			ClientSecret: devoidc.RandomString(24),
			RedirectURIs: []string{callbackURL(appURL, id)},
		},
		origin:  u.Scheme + "://" + u.Host,
		pending: map[string]pendingRequest{},
	}
	// provider.OIDC takes http only on loopback: localhost, 127.0.0.1 or
	// ::1. It fetches the discovery document at the first sign-in, from
	// the demo's own listener, so the listener need not be up yet.
	p.provider, err = provider.OIDC(provider.OIDCConfig{
		ID:           id,
		Name:         name,
		Issuer:       issuer,
		ClientID:     p.iss.ClientID,
		ClientSecret: p.iss.ClientSecret,
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}

// devSubject is the subject the provider gives an email: the same in
// every run, so that signing in twice as one identity is one user, even
// on a database that outlives the demo.
func devSubject(email string) string {
	sum := sha256.Sum256([]byte(strings.ToLower(email)))
	return "dev-" + hex.EncodeToString(sum[:12])
}

// mount serves the provider under its path (/dev/oidc).
func (p *devProvider) mount(mux *http.ServeMux) {
	mux.HandleFunc("GET "+p.path+devoidc.DiscoveryPath, p.iss.ServeDiscovery)
	mux.HandleFunc("GET "+p.path+devoidc.JWKSPath, p.iss.ServeJWKS)
	mux.HandleFunc("GET "+p.path+devoidc.AuthorizePath, p.authorizePage)
	mux.HandleFunc("POST "+p.path+devoidc.AuthorizePath, p.authorize)
	mux.HandleFunc("POST "+p.path+devoidc.TokenPath, p.iss.ServeToken)
}

// authorizePage shows the sign-in page for an authorisation request.
func (p *devProvider) authorizePage(w http.ResponseWriter, r *http.Request) {
	req, err := p.iss.CheckRequest(r.URL.Query())
	if err != nil {
		http.Error(w, "development provider: "+err.Error(), http.StatusBadRequest)
		return
	}
	id := devoidc.RandomString(18)
	now := time.Now()
	p.mu.Lock()
	for k, v := range p.pending {
		if now.After(v.expires) || len(p.pending) >= devPendingMax {
			delete(p.pending, k)
		}
	}
	p.pending[id] = pendingRequest{req: req, expires: now.Add(devoidc.CodeLifetime)}
	p.mu.Unlock()
	p.render(w, http.StatusOK, devPage{Request: id, Verified: true})
}

// authorize takes the page's form: an identity typed or picked, or
// Cancel. It sends the browser back to the app with a code, or with
// access_denied.
func (p *devProvider) authorize(w http.ResponseWriter, r *http.Request) {
	// A sign-in page must not take posts from other sites: the request
	// id proves the form was served here, and the browser's Origin (or
	// Sec-Fetch-Site) says where the post comes from.
	if o := r.Header.Get("Origin"); o != "" && o != p.origin {
		http.Error(w, "development provider: cross-origin form post refused", http.StatusForbidden)
		return
	}
	if s := r.Header.Get("Sec-Fetch-Site"); s != "" && s != "same-origin" && s != "none" {
		http.Error(w, "development provider: cross-site form post refused", http.StatusForbidden)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "development provider: bad form", http.StatusBadRequest)
		return
	}
	reqID := r.PostForm.Get("request")
	p.mu.Lock()
	pr, ok := p.pending[reqID]
	p.mu.Unlock()
	if !ok || time.Now().After(pr.expires) {
		http.Error(w, "development provider: this sign-in page has expired or was used; start again from the app", http.StatusBadRequest)
		return
	}
	if r.PostForm.Has("cancel") {
		p.forget(reqID)
		http.Redirect(w, r, p.iss.Back(pr.req, url.Values{"error": {"access_denied"}}), http.StatusSeeOther)
		return
	}
	id, err := devIdentity(r.PostForm.Get("email"), r.PostForm.Get("name"), r.PostForm.Get("email_verified") != "")
	if err != nil {
		page := devPage{Request: reqID, Email: r.PostForm.Get("email"), Name: r.PostForm.Get("name"),
			Verified: r.PostForm.Get("email_verified") != "", Error: err.Error()}
		p.render(w, http.StatusUnprocessableEntity, page)
		return
	}
	p.forget(reqID)
	p.remember(id)
	http.Redirect(w, r, p.iss.Grant(pr.req, id), http.StatusSeeOther)
}

// devIdentity checks what the form says: a plain email address, a name of
// reasonable length (the address's local part if none).
func devIdentity(email, name string, verified bool) (devoidc.Identity, error) {
	email, name = strings.TrimSpace(email), strings.TrimSpace(name)
	if a, err := mail.ParseAddress(email); err != nil || a.Address != email || len(email) > 254 {
		return devoidc.Identity{}, errors.New("Enter an email address, as in ada@example.com.")
	}
	if len(name) > 100 {
		return devoidc.Identity{}, errors.New("Enter a name of at most 100 characters.")
	}
	if name == "" {
		name, _, _ = strings.Cut(email, "@")
	}
	return devoidc.Identity{Subject: devSubject(email), Email: email, EmailVerified: verified, Name: name}, nil
}

func (p *devProvider) forget(reqID string) {
	p.mu.Lock()
	delete(p.pending, reqID)
	p.mu.Unlock()
}

// remember puts id first in the identities to pick from.
func (p *devProvider) remember(id devoidc.Identity) {
	p.mu.Lock()
	defer p.mu.Unlock()
	list := []devoidc.Identity{id}
	for _, old := range p.recent {
		if old.Subject != id.Subject && len(list) < devRecentMax {
			list = append(list, old)
		}
	}
	p.recent = list
}

// devPage is what the sign-in page shows.
type devPage struct {
	Request  string
	Email    string
	Name     string
	Verified bool
	Error    string
	Audience string // whom the page signs in to: the demo, or acme
	Recent   []devoidc.Identity
}

func (p *devProvider) render(w http.ResponseWriter, status int, page devPage) {
	p.mu.Lock()
	page.Recent = append([]devoidc.Identity(nil), p.recent...)
	p.mu.Unlock()
	page.Audience = p.audience
	devHeaders(w, "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
	// Under no-referrer, browsers send Origin: null with the form's post;
	// same-origin keeps the Origin that authorize checks.
	w.Header().Set("Referrer-Policy", "same-origin")
	w.WriteHeader(status)
	devPageTemplate.Execute(w, page)
}

// devHeaders sets the headers of the pages under /dev/: HTML, never
// cached, under csp, and no Referer (the outbox's links carry tokens).
func devHeaders(w http.ResponseWriter, csp string) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", csp)
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Content-Type-Options", "nosniff")
}

// devTemplate parses a page under /dev/, which may use the shared
// {{template "style"}}: the look of the two pages, plain, readable at
// 360 px, with a visible focus ring.
func devTemplate(name, text string) *template.Template {
	return template.Must(template.Must(template.New(name).Parse(devStyle)).Parse(text))
}

const devStyle = `{{define "style"}}
  body { font: 16px/1.5 system-ui, sans-serif; margin: 0 auto; padding: 1rem; color: #1a1a1a; }
  .dev { background: #fff4ce; border: 2px solid #8a6d00; border-radius: 6px; padding: .5rem .75rem; }
  .dev strong { text-transform: uppercase; letter-spacing: .05em; }
  h1 { font-size: 1.4rem; margin: 1rem 0 .5rem; }
  button { font: inherit; padding: .5rem 1rem; border-radius: 4px; border: 1px solid #1a4fa0; background: #1a4fa0; color: #fff; cursor: pointer; }
  button.secondary { background: #fff; color: #1a4fa0; }
  :focus-visible { outline: 3px solid #c25400; outline-offset: 2px; }
  .error { color: #a00000; font-weight: 600; }
{{end}}`

var devPageTemplate = devTemplate("dev", `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Development provider: sign in</title>
<style>{{template "style"}}
  body { max-width: 32rem; }
  h2 { font-size: 1.1rem; margin: 1.25rem 0 .5rem; }
  label { display: block; margin-top: .75rem; font-weight: 600; }
  input[type=email], input[type=text] { box-sizing: border-box; width: 100%; font: inherit; padding: .5rem; border: 1px solid #555; border-radius: 4px; }
  .check { display: flex; gap: .5rem; align-items: flex-start; font-weight: normal; }
  .check input { margin-top: .35rem; width: 1.1rem; height: 1.1rem; }
  .hint { color: #444; font-size: .9rem; margin: .25rem 0 0; }
  .actions { display: flex; flex-wrap: wrap; gap: .5rem; margin-top: 1rem; }
  button.pick { width: 100%; text-align: left; background: #f3f6fb; color: #1a1a1a; border-color: #9bb0d3; overflow-wrap: anywhere; }
  ul { list-style: none; padding: 0; margin: 0; display: grid; gap: .5rem; }
</style>
</head>
<body>
<main>
<p class="dev" role="note"><strong>Development only.</strong> This is the demo's own OpenID provider, served with <code>-dev</code> on a loopback address. It signs in whoever you type, with no password: never use it in production.</p>
<h1>Sign in to {{.Audience}}</h1>
{{if .Error}}<p id="error" class="error" role="alert">{{.Error}}</p>{{end}}
{{if .Recent}}
<h2 id="recent-title">Sign in again as</h2>
<ul aria-labelledby="recent-title">
{{range .Recent}}<li><form method="post"><input type="hidden" name="request" value="{{$.Request}}"><input type="hidden" name="email" value="{{.Email}}"><input type="hidden" name="name" value="{{.Name}}">{{if .EmailVerified}}<input type="hidden" name="email_verified" value="on">{{end}}<button class="pick" type="submit">{{.Name}} &lt;{{.Email}}&gt; — email {{if .EmailVerified}}verified{{else}}not verified{{end}}</button></form></li>
{{end}}</ul>
<h2>Or another identity</h2>
{{end}}
<form method="post">
<input type="hidden" name="request" value="{{.Request}}">
<label for="email">Email</label>
<input id="email" name="email" type="email" autocomplete="email" required value="{{.Email}}"{{if .Error}} aria-invalid="true" aria-describedby="error" autofocus{{end}}>
<label for="name">Name <span class="hint">(optional)</span></label>
<input id="name" name="name" type="text" autocomplete="name" value="{{.Name}}">
<label class="check" for="email_verified"><input id="email_verified" name="email_verified" type="checkbox"{{if .Verified}} checked{{end}} aria-describedby="verified-hint"> <span>The provider vouches for this email (email_verified)</span></label>
<p id="verified-hint" class="hint">Clear it to see what the app does with an email no one has proved: with account linking on, it joins no one.</p>
<div class="actions">
<button type="submit">Sign in</button>
<button class="secondary" type="submit" name="cancel" value="1" formnovalidate>Cancel</button>
</div>
</form>
</main>
</body>
</html>
`)
