// Package auth is session-based user authentication for Go web
// applications: email and password sign-up and sign-in, sessions carried in
// cookies, headers or the response body, refresh-token rotation with theft
// detection, and sign-out. Its HTTP protocol is that of the SuperTokens
// frontend driver interface, so the SuperTokens frontend SDKs work against
// it unchanged.
//
// An application builds an Auth from a Config, mounts it, and wraps its own
// handlers with RequireSession:
//
//	a, err := auth.New(auth.Config{Store: memstore.New()})
//	if err != nil {
//		log.Fatal(err)
//	}
//	mux := http.NewServeMux()
//	mux.Handle("/auth/", a)
//	mux.Handle("GET /api/me", a.RequireSession(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
//		s, _ := auth.SessionFromContext(r.Context())
//		fmt.Fprintln(w, "hello", s.UserID)
//	})))
//
// # Security model
//
// Passwords are hashed with argon2id (OWASP parameters by default) in PHC
// strings, under a concurrency limit so a burst of sign-ins cannot exhaust
// memory; past a queue deadline the answer is 503 with Retry-After. Unknown
// emails cost the same hash as known ones, and sign-in answers both with the
// same bytes.
//
// A session is a lineage of refresh tokens. A refresh token is 256 random
// bits, stored only as its SHA-256 hash, and works exactly once: each
// refresh atomically replaces it in the Store. Presenting a token that was
// already exchanged means it was copied, so the whole session is revoked
// and the answer is 401 "token theft detected". Forged, unknown and expired
// tokens are refused without touching any session.
//
// Access tokens are JWTs (HS256 by default, EdDSA optionally) checked with
// an explicit algorithm, a required expiry, issuer and token type, and keys
// that live in the Store, so every instance of an application verifies the
// tokens of every other and keys rotate. An access token is verified by its
// signature alone, so after sign-out or revocation it keeps working until
// it expires (Config.AccessTokenLifetime, one hour by default) unless
// Config.CheckSessionInStore is set; refresh tokens stop at once.
//
// Cookies are HttpOnly, Secure and SameSite=Lax by default; the refresh
// cookie is sent only to the refresh endpoint. Token responses carry
// Cache-Control: no-store. With SameSite=None, requests that carry cookies
// must also carry a rid header, which cross-site forms cannot send.
package auth
