package auth

import (
	"net/http"
	"slices"
	"strings"
)

// corsHeaders are the request headers the SuperTokens frontend SDKs send to
// an API on another origin; a preflight must allow them.
var corsHeaders = []string{"rid", "fdi-version", "anti-csrf", "authorization", "st-auth-mode", "fg-auth-mode", "content-type"}

// CORSHeaders returns the request headers the SuperTokens frontend SDKs
// send to an API on another origin, for an application that answers
// preflights with a CORS middleware of its own rather than CORS: rid,
// fdi-version, anti-csrf, authorization, st-auth-mode, fg-auth-mode and
// content-type.
func CORSHeaders() []string { return slices.Clone(corsHeaders) }

// exposedHeaders are the response headers the SDKs must be able to read.
var exposedHeaders = []string{"front-token", "st-access-token", "st-refresh-token", "anti-csrf", ReasonHeader}

// CORS is a middleware for an API that serves a frontend on another
// origin (another port counts), one of Config.AllowedOrigins: it answers
// their preflight requests, and lets their requests carry credentials and
// read the token headers. Wrap the whole API with it, the auth handler and
// the application's routes alike:
//
//	http.ListenAndServe(addr, a.CORS(mux))
//
// The request's Origin is echoed, never "*", as credentials require.
// Requests from other origins pass through without CORS headers, so
// browsers keep the answers from their pages.
func (a *Auth) CORS(next http.Handler) http.Handler {
	allowHeaders := strings.Join(corsHeaders, ", ")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Add("Vary", "Origin")
		origin := r.Header.Get("Origin")
		if origin == "" || !slices.Contains(a.cfg.AllowedOrigins, origin) {
			next.ServeHTTP(w, r)
			return
		}
		h.Set("Access-Control-Allow-Origin", origin)
		h.Set("Access-Control-Allow-Credentials", "true")
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			h.Set("Access-Control-Allow-Methods", "GET, POST, PUT, PATCH, DELETE")
			h.Set("Access-Control-Allow-Headers", allowHeaders)
			h.Set("Access-Control-Max-Age", "600")
			w.WriteHeader(http.StatusNoContent)
			return
		}
		// The handlers add what they set; state the whole list up front
		// so a response that sets none still exposes them.
		expose(h, exposedHeaders...)
		next.ServeHTTP(w, r)
	})
}

// crossOrigin refuses state-changing browser requests from origins that
// are not the API's own nor allowed: without it, a page on any site could
// post a form to the sign-in endpoint and sign the visitor in to the
// attacker's account (login CSRF), since a Lax cookie set by a top-level
// POST is kept. Requests that are not from browsers carry neither
// Sec-Fetch-Site nor Origin and pass.
func newCrossOrigin(allowed []string) (*http.CrossOriginProtection, error) {
	c := http.NewCrossOriginProtection()
	for _, o := range allowed {
		if err := c.AddTrustedOrigin(o); err != nil {
			return nil, err
		}
	}
	return c, nil
}
