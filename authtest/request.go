package authtest

import (
	"net/http"
	"net/http/httptest"

	"github.com/latchkit/auth"
)

// NewRequest returns a new incoming server request, as
// httptest.NewRequest does, whose context carries session s as
// RequireSession would pass it on: auth.SessionFromContext returns s. It
// lets a test serve a protected handler with an httptest.ResponseRecorder,
// with no server, no store and no token.
//
// Serve the handler itself, not the one RequireSession wraps: the
// middleware verifies the request's token, and this request has none. The
// session is used as given; fill in the fields the handler reads. Like
// httptest.NewRequest, NewRequest panics on a malformed target. The request
// has no body; for one with a body, make it with httptest.NewRequest and
// add the session with auth.ContextWithSession.
func NewRequest(method, target string, s auth.Session) *http.Request {
	r := httptest.NewRequest(method, target, nil)
	return r.WithContext(auth.ContextWithSession(r.Context(), s))
}
