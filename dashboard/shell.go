package dashboard

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"html"
	"net/http"
	"net/url"
	"strings"
)

// shell is the page that loads the dashboard app: the same for every
// path of the app, made once.
type shell struct {
	page []byte
	csp  string
}

// newShell makes the shell of the build at bundle, for the app at
// appPath; connection is what the app shows as the server it manages.
func newShell(bundle, appPath, connection string) (shell, error) {
	source, err := bundleSource(bundle)
	if err != nil {
		return shell{}, err
	}
	base := strings.TrimSuffix(bundle, "/")
	// The app reads these globals; isSearchEnabled is a string, as the
	// SuperTokens backends send it.
	script := "\nwindow.staticBasePath = " + jsString(base+"/static") +
		";\nwindow.dashboardAppPath = " + jsString(appPath) +
		";\nwindow.connectionURI = " + jsString(connection) +
		";\nwindow.authMode = \"api-key\";\nwindow.isSearchEnabled = \"true\";\n"
	sum := sha256.Sum256([]byte(script))
	attr := html.EscapeString(base)
	page := `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>Dashboard</title>
<script>` + script + `</script>
<script defer src="` + attr + `/static/js/bundle.js"></script>
<link href="` + attr + `/static/css/main.css" rel="stylesheet" type="text/css">
<link rel="icon" type="image/x-icon" href="` + attr + `/static/media/favicon.ico">
</head>
<body><noscript>You need to enable JavaScript to run this app.</noscript><div id="root"></div></body>
</html>
`
	// The bundle's origin for its code, styles, images and fonts; the
	// inline script by its hash; the API on this origin. The app styles
	// elements inline, hence 'unsafe-inline' for styles alone.
	csp := "default-src 'none'; script-src " + source + " 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'" +
		"; style-src " + source + " 'unsafe-inline'; img-src " + source + " data:; font-src " + source + " data:" +
		"; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
	return shell{page: []byte(page), csp: csp}, nil
}

// bundleSource is the CSP source of the bundle's location: its origin,
// or 'self' for a path on the API's own.
func bundleSource(bundle string) (string, error) {
	u, err := url.Parse(bundle)
	switch {
	case err != nil:
	case strings.HasPrefix(bundle, "/") && !strings.HasPrefix(bundle, "//") && u.Host == "" && u.RawQuery == "":
		return "'self'", nil
	case (u.Scheme == "https" || u.Scheme == "http") && u.Host != "" && u.User == nil && u.RawQuery == "" && u.Fragment == "":
		return u.Scheme + "://" + u.Host, nil
	}
	return "", errors.New("auth: dashboard.Config.BundleURL must be an absolute http or https URL, or a path on this origin, without query: " + jsString(bundle))
}

// jsString is s as a JavaScript string literal that cannot end the
// script element: json.Marshal escapes <, > and &.
func jsString(s string) string {
	b, _ := json.Marshal(s) // a string always encodes
	return string(b)
}

// serve answers the shell. It needs no key: the app asks for one.
func (s shell) serve(w http.ResponseWriter, r *http.Request) {
	hdr := w.Header()
	hdr.Set("Content-Type", "text/html; charset=utf-8")
	hdr.Set("Content-Security-Policy", s.csp)
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("X-Frame-Options", "DENY")
	hdr.Set("Referrer-Policy", "no-referrer")
	hdr.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(s.page) // fails only once the client has gone
	}
}
