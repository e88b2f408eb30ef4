// Package authtest helps test applications that use the auth library, in
// the way net/http/httptest helps test handlers: a running server for an
// *auth.Auth, a client that speaks the protocol in each token transfer
// mode, fixtures for users and sessions, and a clock to travel in time.
package authtest
