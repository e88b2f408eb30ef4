package auth

import (
	"net/http"
	"slices"
	"strings"
)

// CORSHeaders are the request headers the SuperTokens frontend SDKs send to
// an API on another origin; a preflight must allow them.
var CORSHeaders = []string{"rid", "fdi-version", "anti-csrf", "authorization", "st-auth-mode", "fg-auth-mode", "content-type"}

// exposedHeaders are the response headers the SDKs must be able to read.
var exposedHeaders = []string{"front-token", "st-access-token", "st-refresh-token", "anti-csrf"}

// CORS returns a middleware for an API that serves a frontend on another
// origin (another port counts): it answers preflight requests from the
// allowed origins, and lets their requests carry credentials and read the
// token headers. Wrap the whole API with it, the auth handler and the
// application's routes alike:
//
//	handler := auth.CORS("https://app.example.com")(mux)
//
// Each origin is an exact scheme://host[:port]; the request's Origin is
// echoed, never "*", as credentials require. Requests from other origins
// pass through without CORS headers, so browsers keep their answers from
// the page.
func CORS(allowedOrigins ...string) func(http.Handler) http.Handler {
	allowed := make([]string, len(allowedOrigins))
	for i, o := range allowedOrigins {
		allowed[i] = strings.TrimRight(o, "/")
	}
	allowHeaders := strings.Join(CORSHeaders, ", ")
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h := w.Header()
			h.Add("Vary", "Origin")
			origin := r.Header.Get("Origin")
			if origin == "" || !slices.Contains(allowed, origin) {
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
			// The handlers add what they set; state the whole list up
			// front so a response that sets none still exposes them.
			expose(h, exposedHeaders...)
			next.ServeHTTP(w, r)
		})
	}
}
