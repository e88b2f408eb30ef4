// Package authtest helps test applications that use the auth library, as
// net/http/httptest helps test handlers.
//
// # Over HTTP
//
// [NewServer] starts an HTTPS test server with an *auth.Auth mounted at
// its base path, over a fresh memory store, a manual [Clock] and a
// [Mailbox], and closes it when the test ends. The application adds its
// own routes to [Server.Mux]. [Server.NewClient] returns a [Client] that
// speaks the protocol in one token transfer mode ([Cookie], [Header] or
// [Body]) and keeps its tokens as a frontend SDK would; [Server.SignedIn]
// is a new user's signed-in client in one call:
//
//	func TestProfile(t *testing.T) {
//		s := authtest.NewServer(t, auth.Config{})
//		s.Mux.Handle("GET /profile", s.Auth.RequireSession(profile))
//		c, _ := s.SignedIn(authtest.Header)
//		res := c.Get("/profile") // 200
//		s.Clock.Advance(2 * time.Hour)
//		res = c.Get("/profile") // 401 "try refresh token"
//		c.Refresh()
//		// ...
//	}
//
// [Modes] lists the transfer modes, for a test that runs in each. Reset
// emails land in Server.Mailbox; [Mailbox.WaitFor] waits for them, as they
// are sent off the request path, and [ResetLink] reads the link and token.
//
// # Without a server
//
// [NewRequest] returns a request whose context carries an auth.Session, for
// a handler behind RequireSession or OptionalSession, served with an
// httptest.ResponseRecorder: no server, store or token.
//
// # Third-party sign-in
//
// [NewProvider] starts a fake OpenID Connect provider: discovery, JWKS,
// an authorisation endpoint that signs a chosen user in at once, and a
// token endpoint that checks client, code, redirect URI and PKCE.
// [Provider.Provider] is the provider.Provider for it, [Provider.Authorize]
// plays the browser, and [Provider.SetFault] makes it fail in the ways
// real providers do.
//
// # Passwordless sign-in
//
// [Client.SignInWithCode] asks for a code, reads it from Server.Mailbox and
// signs in with it. For a test that takes the steps itself,
// [Client.CreateCode], [Client.ResendCode], [Client.ConsumeCode] and
// [Client.ConsumeLink] are the endpoints, and [PasswordlessCode] and
// [PasswordlessLink] read the code and the link of a message
// ([Mailbox.LastTo] finds it).
//
// # Passkeys
//
// [NewAuthenticator] (or [Server.NewAuthenticator]) is a software WebAuthn
// authenticator that holds its keys in memory, so that passkey flows are
// tested without a browser: [Client.SignUpWithPasskey],
// [Client.SignInWithPasskey], [Client.AddPasskey], [Client.ListPasskeys]
// and [Client.RemovePasskey] drive the ceremonies with it. Its counter and
// its answers can be bent to test what the server refuses: a counter
// rolled back ([Authenticator.SetCounter], [WithCounter]), another origin
// or relying party ([WithOrigin], [WithRPID]), a replay ([Replay]).
// Passkeys need a host name: give the server an AppURL on localhost or a
// domain, as browsers refuse WebAuthn on IP addresses.
//
// # Multi-factor auth
//
// With Config.MFA, [Client.SetUpTOTP] adds an authenticator app for the
// session's user and sets it up, completing TOTP in the session, and
// returns its secret; [TOTPCode] is the code an app shows for that secret
// at a time, and [Client.CompleteTOTP] completes TOTP after a later
// sign-in. The server accepts a time step once per user, so a test that
// needs another code advances the server's Clock by 30 seconds first.
// [Client.MFAInfo], [Client.CreateTOTPDevice], [Client.VerifyTOTPDevice],
// [Client.VerifyTOTP], [Client.NewRecoveryCodes] and
// [Client.UseRecoveryCode] are the endpoints one by one.
//
// # Raw requests
//
// A test that builds its own requests sends [Credentials] as the body of a
// sign-up or sign-in, and checks with [Response.IssuedTokens] that a refused
// request started no session.
package authtest
