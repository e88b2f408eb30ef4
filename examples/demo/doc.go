// Command demo serves the auth library as an application would, to try it
// in a browser or with curl. It needs Go 1.26 or later and nothing else.
// To see every sign-in method at once, offline and with no account
// anywhere:
//
//	go run ./examples/demo -dev
//
// then open http://localhost:8080 (see # Development mode). Without -dev,
//
//	go run ./examples/demo
//
// serves email and password sign-in alone; open http://127.0.0.1:8080.
// It serves the auth routes under /auth,
// GET /api/me, which answers {"userId": ..., "email": ..., "tenantId":
// "public"} for a signed-in user, and a small web page at / built on supertokens-web-js: sign up,
// sign in, who am I, sign out, forgot password, and the reset page at
// /auth/reset-password that reset links open. /?mode=header uses header
// mode instead of cookies; a reset link opens in the mode the page was
// last used in on that browser, unless it has its own ?mode=. The built
// page is committed and embedded; its source is in examples/demo/web
// (npm install && npm run build there to rebuild), and e2e/ runs it in
// headless Chromium.
//
// Reset, verification and passwordless emails are printed to standard
// output, link and code included, unless -smtp names a server. Expired sessions and keys are
// deleted once an hour. Ctrl-C stops the demo after sending the email
// still queued.
//
// # Flags
//
// Every flag has an environment variable twin; the flag wins.
//
//	-addr host:port (DEMO_ADDR; default 127.0.0.1:8080)
//		the listen address; on loopback the demo answers only its own
//		hosts (# Hosts).
//	-db store (DEMO_DB; default sqlite:auth.db)
//		sqlite:PATH, postgres://..., mysql://user:pass@host:port/db or
//		memory; migrated at start. Through a proxy that may pool
//		transactions (PgBouncer), postgres:// gets pgx's
//		default_query_exec_mode=exec unless the URL names a mode.
//	-access-ttl duration (DEMO_ACCESS_TTL; default 1h)
//		the access token lifetime.
//	-refresh-ttl duration (DEMO_REFRESH_TTL; default 2400h, 100 days)
//		the session lifetime without a refresh.
//	-reset-ttl duration (DEMO_RESET_TTL; default 1h)
//		the password reset token lifetime.
//	-fresh-sign-in duration (DEMO_FRESH_SIGN_IN; default 5m)
//		how recent a sign-in the account page's sensitive actions need
//		(auth.Config.FreshSignIn, at most 24h); past it the page asks
//		for a second factor, the password or a passkey again. The browser tests shorten it
//		to reach that step.
//	-smtp url (DEMO_SMTP; default unset)
//		the SMTP server for password reset, verification and
//		passwordless email,
//		smtp://user:pass@host:port or smtps://... (see mailer.NewSMTP);
//		unset, email goes to standard output.
//	-app-url url (DEMO_APP_URL; default http://<addr>, or
//	http://localhost:PORT with -dev)
//		the public URL of the app, the base of links in email; on a
//		loopback -addr, its host is served besides the loopback names.
//	-allowed-origin origins (DEMO_ALLOWED_ORIGIN; default none)
//		comma-separated origins of pages on other origins
//		(auth.Config.AllowedOrigins, with Auth.CORS).
//	-samesite mode (DEMO_SAMESITE; default lax)
//		the cookies' SameSite: lax, strict or none.
//	-session-refreshes BURST/INTERVAL (DEMO_SESSION_REFRESHES; default 60/2s)
//		how often one session may refresh, or off (for the load harness).
//	-oidc-issuer url (DEMO_OIDC_ISSUER; default unset)
//		an OpenID Connect provider found by discovery (https, or http on
//		loopback); on when set.
//	-oidc-client-id id (DEMO_OIDC_CLIENT_ID)
//	-oidc-client-secret secret (DEMO_OIDC_CLIENT_SECRET)
//		the client registered at that provider.
//	-oidc-id id (DEMO_OIDC_ID; default oidc)
//		its thirdPartyId.
//	-oidc-name name (DEMO_OIDC_NAME; default the id)
//		the name on its button.
//	-google-client-id id (DEMO_GOOGLE_CLIENT_ID; default unset)
//	-google-client-secret secret (DEMO_GOOGLE_CLIENT_SECRET)
//		sign-in with Google, on when the id is set.
//	-github-client-id id (DEMO_GITHUB_CLIENT_ID; default unset)
//	-github-client-secret secret (DEMO_GITHUB_CLIENT_SECRET)
//		sign-in with GitHub, on when the id is set.
//	-email-verification mode (DEMO_EMAIL_VERIFICATION; default off)
//		off, optional or required (auth.Config.EmailVerification).
//	-passwordless flow (DEMO_PASSWORDLESS; default off)
//		passwordless sign-in by email (auth.Config.Passwordless): off,
//		code (a six-digit code to type), link (a link to open) or
//		code-and-link; off serves no passwordless routes.
//	-passkeys (DEMO_PASSKEYS; default false)
//		sign-in with passkeys (auth.Config.Passkeys, with
//		passkey.New(passkey.Config{})); the relying party is the host of -app-url,
//		which must be a domain name: browsers refuse WebAuthn on an IP
//		address, so the demo refuses to start on one. Use -app-url
//		http://localhost:8080 and open the page there.
//	-mfa factors (DEMO_MFA; default off)
//		a second factor every user must complete after signing in
//		(auth.Config.MFA.Required): off, totp (an authenticator app),
//		or totp,webauthn (either; webauthn needs -passkeys). /api/me
//		answers 403 st-mfa until the session has completed it.
//	-admin email (DEMO_ADMIN, comma-separated; default none)
//		repeatable: the user with this email gets the role admin, with
//		every permission the demo defines (users:impersonate,
//		users:read, users:write), at
//		start and at sign-up, sign-in or verification, once the email
//		is verified where -email-verification is not off
//		(auth.Config.Roles, with roles.New). See # Roles.
//	-admin-api-key key (DEMO_ADMIN_API_KEY; default unset)
//		serves the SuperTokens dashboard at <app-url>/auth/dashboard
//		and its API (users, sessions, email verification, passwords,
//		roles) to a request with this key, at least 20 bytes, and to the
//		sessions of users with the role admin (-admin), who may type any
//		value into the app's key form (auth.Config.Dashboard, with
//		dashboard.New). Prefer the environment twin: a flag shows in ps.
//	-dashboard-bundle url (DEMO_DASHBOARD_BUNDLE; default jsDelivr's
//		v0.15 build)
//		where the dashboard app's build is loaded from
//		(dashboard.Config.BundleURL): an http or https URL, or a path on
//		the demo's origin.
//	-tenants (DEMO_TENANTS; default false; needs -dev)
//		a second tenant, acme, beside the public one (auth.Config.Tenants):
//		its people sign in only with its own development provider, Acme
//		SSO at <app-url>/dev/acme-oidc, and must complete TOTP; addresses
//		at acme.example are discovered to it. Open
//		<app-url>/?tenantId=acme; /api/me says the session's tenantId.
//		With -admin, GET /api/admin/tenants lists the tenants with their
//		members and invitations, and POST /api/admin/tenants/invite
//		({tenant, email, role}) invites.
//	-account-linking (DEMO_ACCOUNT_LINKING; default false)
//		join a new login method that proves its email to the user who
//		owns it (auth.Config.AccountLinking).
//	-secret secrets (DEMO_SECRET; default unset)
//		seals the signing keys in the store (auth.Config.Secrets);
//		comma-separated to rotate, the first seals; unset, keys are kept
//		in the clear.
//	-otel mode (DEMO_OTEL; default off)
//		OpenTelemetry, with package otelauth: off, or stdout, which writes
//		a span for each request to the auth routes and each store call
//		under it, with the request's events, to standard output as a line
//		of JSON each; a request's traceparent header (W3C Trace Context)
//		puts its span in the caller's trace. The spans hold no token,
//		code, email or password. The library's metrics go to
//		OpenTelemetry's global MeterProvider, which the demo leaves unset.
//	-dev (DEMO_DEV; default false)
//		development mode: -email-verification optional,
//		-account-linking, -passwordless code-and-link, -passkeys, TOTP
//		and passkeys offered as second factors (auth.Config.MFA.Factors),
//		the development OpenID provider at /dev/oidc and the outbox at
//		/dev/outbox; the app URL defaults to http://localhost:PORT. A flag
//		it sets, or its environment twin, still wins. It refuses a
//		-addr that is not loopback, and answers only its own hosts.
//
// # Development mode
//
// -dev turns on every sign-in method the demo has, for a first try on
// one machine: email and password, a development OpenID provider,
// passwordless sign-in by email (code and link), passkeys, and TOTP or a
// passkey as an optional second factor, with email verification optional
// and account linking on. The app URL is http://localhost:PORT, since
// browsers refuse passkeys on 127.0.0.1, and the demo prints the URL to
// open. Flags still win: -dev -mfa totp requires TOTP of every user,
// -dev -passwordless code sends codes only. GET /api/config adds
// "dev": true, and the page says it is in development mode.
//
// The development provider is a real OpenID provider served by the demo
// itself, with the issuer <app-url>/dev/oidc: a discovery document, a
// JWKS with a key made at start, an authorisation page and a token
// endpoint. The library talks to it with provider.OIDC, found by
// discovery, as to any other; the page lists it as "Sign in with Dev
// provider". Its page, marked development only, signs in whoever is
// typed (an email, a name) or picked among the identities used before in
// the run, with a checkbox for whether the provider vouches for the email
// (email_verified): clear it to see that under account linking an
// unproven email joins no one. The subject is derived from the email, so
// one email is one identity across runs. The token endpoint checks the
// client secret, the redirect URI, the PKCE verifier and that a code is
// used once, within ten minutes. The provider is off whenever a real one
// is configured (-oidc-issuer, -google-client-id, -github-client-id).
//
// The outbox keeps the last 100 emails the demo sent in memory (reset,
// verification, passwordless codes and links, passkey recovery) and
// shows them at /dev/outbox, newest first, with their links clickable and
// the sign-in code easy to copy; the page reloads when one arrives.
// GET /dev/outbox.json answers the same list for scripts. The emails
// still go to standard output, or to -smtp.
//
// Because the provider signs in anyone who asks and the outbox shows
// every email, -dev starts only on a loopback -addr, and answers only the
// hosts it serves (# Hosts): a web page that points its own name at
// 127.0.0.1 gets 421 rather than the outbox. Without -dev, every path
// under /dev/ is 404.
//
// # Hosts
//
// On a loopback address, with or without -dev, the demo answers only
// requests whose Host is the app URL's host, or localhost, 127.0.0.1 or
// [::1] on the port it listens on; any other gets 421 Misdirected
// Request, on every route, with the hosts it serves. This is against DNS
// rebinding: a page the developer visits can point its own name at
// 127.0.0.1 and then, same-origin under that name, read the outbox and
// use the API, but its requests carry its name in Host. To open the demo
// under another name, as through a tunnel, give it with -app-url. On
// other addresses the demo answers any Host: whoever can reach it needs
// no rebinding, and behind a proxy it may be reached under names it
// cannot know (see the auth package's doc, # Security model).
//
// # The account page
//
// With -dev, or any feature flag beyond email and password, the signed-in
// page links to /account, the page an application builds on the
// library's Go API (account.go, the demo's own handlers behind
// RequireSession, short and commented to copy). GET /api/account answers
// the user's login methods with their email's verification state, the
// live sessions with when and where they started, and the second factors
// set up. Where a session started (the address and the browser) the
// library does not keep: the demo records it from Config.OnEvent's
// EventSignIn (Event.RemoteAddr and Event.UserAgent) in memory, as an
// application would in its own table, so a session from before a restart
// says unknown.
//
//	POST /api/account/sessions/{handle}/revoke  ends one of the user's sessions (another user's: 404)
//	POST /api/account/sessions/revoke-others    ends every session but this one
//	POST /api/account/logins/{id}/unlink        removes a login method (the last one: 409)
//
// A cross-site form post to them is refused by RequireSession.
//
// The page also changes the password (the library's POST
// /auth/user/password/change: with the current one, or, for a user
// without one, a new one for an email they have proven)
// and deletes the account (POST /auth/user/delete, served because the
// demo sets Config.BeforeDeleteUser, beforeDeleteUser in account.go). Adding
// a password, deleting the account, adding or removing a passkey or an
// authenticator app, new recovery codes and unlinking (the demo's route
// puts auth.SignedInWithin(0) in front of Unlink) need a sign-in within
// the last 5 minutes (Config.FreshSignIn, -fresh-sign-in): past it the
// answer is 403 with the st-fresh claim, and the page asks the user to
// prove it is them again, then retries. It asks for a second factor the
// user has set up first (an authenticator app's code, or a passkey that is
// one), which makes the same session fresh, since a new sign-in would ask
// for it anyway; else for the password, signing in again and ending the
// session it replaced; else for a passkey that signs in, whose session
// must be the same user's or is signed out. A user with none of them
// (a provider or codes by email only) is asked to sign out and in again. A changed password ends every other
// session of the user; the page's session goes on under a new handle,
// whose place the demo does not know (no sign-in reported it), and its
// live list reconnects rather than show the signed-out view.
// The page changes the account's email too (package emailchange, on in
// the demo): the request needs the same recent sign-in; the link to the
// new address opens <app-url>/auth/change-email, the notice's to the old
// one <app-url>/auth/undo-email-change, pages of the demo that use their
// token only after a click, so that a mail scanner spends nothing; the
// change is confirmed only signed in to the account it moves. The
// form shows where the account has an address of its own (a password,
// codes by email or a passkey); a provider's address is the provider's.
// e2e/demo-selfservice.test.mjs runs these in Chromium, in cookie and
// header mode, with -fresh-sign-in 4s: the password, deleting, and each
// way of proving it is you again.
//
// The page's list of sessions is live: GET /api/live (live.go) is a
// WebSocket that sends {"type": "sessions", "sessions": [...]}, the
// sessions as GET /api/account lists them (this connection's marked
// current), when it opens and whenever they change: a sign-in elsewhere,
// a sign-out, a session ended. It checks the session as the account
// routes do, before the upgrade: the sAccessToken cookie, which the
// browser sends with the handshake, or an Authorization header from a
// client that is not a browser; a refused one is answered 401 or 403, as
// by those routes, and not upgraded. A browser cannot set the
// Authorization header of a WebSocket, so a handshake with no token is
// upgraded and its first message must be the access token, as text,
// checked with Auth.VerifyToken (the page in header mode sends it).
// Nothing else may be sent (1008). A handshake from another origin than
// the demo's and -allowed-origin's is refused 403: the cookies would come
// along (cross-site WebSocket hijacking). The connection closes with
//
//	4001 "session ended" or "session ended: <reason>", <reason> as in an
//	     Auth-Reason header: the session ended (signed out, ended from
//	     another device, token theft, password reset, user deleted,
//	     expired); "unauthorised": the first message had no token.
//	     The page shows the signed-out view.
//	4002 "access token expired": the token it was opened with expired;
//	     "try refresh token": the first message's is expired or
//	     malformed. The page refreshes the session over HTTP and
//	     connects again.
//	4003 "invalid claim": a claim refuses the first message's session
//	     (a second factor to complete), as a 403 would.
//	1013 "try again": the store could not be read; "too many live
//	     connections": the user has 16 open.
//
// The events of this instance (Config.OnEvent) wake the user's
// connections, which read the sessions again at once; each also reads
// them every 5 seconds, for what another instance on the same store did.
// So a connection outlives its session by at most 5 seconds and a store
// read (given up after 5 seconds, which closes the connection 1013), and
// its access token not at all: a client whose session goes on refreshes
// and connects again. e2e/demo-live.test.mjs runs the page on
// it in Chromium, in cookie and header mode.
//
// Passkeys,
// authenticator apps, recovery codes and verification emails go through
// the library's routes with the SDK. "Link <provider>" signs in with the
// provider with shouldTryLinkingWithSessionUser, which adds it to the
// signed-in user whatever email it gives (one that is another account's
// is refused; under -account-linking so is a provider that does not vouch
// for its address), and the session goes on. "Add an email for sign-in
// codes" does the same with a passwordless code. Both need a recent
// sign-in, which the page asks for first with
//
//	POST /api/account/fresh                     200 if the sign-in is recent (auth.SignedInWithin(0)), else 403 st-fresh
//
// The demo with no feature flag serves no account page.
//
// # The page and the SDK
//
// The page uses supertokens-web-js as any frontend would. The SDK adds the
// session to every fetch to its apiDomain (any port of its host) and
// refreshes after a 401 "try refresh token"; ahead of time it refreshes
// only when the page loads. After sign-out elsewhere or token theft, the
// page's current access token works until it expires: the demo does not
// set CheckSessionInStore. The account page shows it within seconds, by
// its live list of sessions (# The account page). With -allowed-origin, a page on another port of
// the same host works in cookie mode with the default SameSite=Lax; across
// sites, cookie mode needs -samesite none and a browser that accepts
// third-party cookies, which Chromium blocks by default. The browser tests
// (cd e2e && npm ci && npm test) need Debian's chromium; CI installs it.
//
// # Email verification
//
// With -email-verification optional or required, verification emails go
// where reset emails go, and their links open /auth/verify-email, a page
// of the demo. The signed-in page shows whether the session's st-ev claim
// says the email is verified, with a button that sends a link. /api/me
// adds "emailVerified"; in required mode it answers an unverified session
// 403 "invalid claim", and GET /api/verification
// (RequireSession with AllowUnverifiedEmail) answers the same JSON for any session.
// GET /api/config tells the page the two settings.
//
// # Passwordless sign-in
//
// With -passwordless code, link or code-and-link, the signed-out page
// also offers "Email me a sign-in code" ("... link" with link): the
// email's code is typed into the page that asked for it, with Resend for
// a new one (the older codes keep working until they expire); five wrong
// or expired codes end the attempt, and the page starts again. Links open
// /auth/verify, a page of the demo: in the browser that asked for the
// link it signs in at once, in any other it waits for a click on
// Continue, so that a mail scanner that fetches the link spends nothing.
// A link works once. The email is printed as the reset email is:
//
//	--- email
//	From: ...
//	To: <ada@example.com>
//	Subject: Your sign-in code
//
//	Hello,
//
//	Your code to sign in as ada@example.com is
//
//	    123456
//
//	Or open this link to sign in:
//
//	http://127.0.0.1:8080/auth/verify?preAuthSessionId=...&tenantId=public#...
//	...
//	---
//
// Passwordless users are created with a verified email; with
// -account-linking, a passwordless sign-in joins the user who owns the
// address. The page learns the flow from GET /auth/loginmethods
// (firstFactors otp-email, link-email); GET /api/config also says it, as
// "passwordless", when it is on.
//
// # Passkeys
//
// With -passkeys, the demo serves the SuperTokens WebAuthn recipe's
// routes under /auth/webauthn and /auth/user/webauthn, GET
// /auth/loginmethods lists the factor webauthn (GET /api/config adds
// "passkeys": true), and the signed-out page offers "Sign in with a
// passkey", "Sign up with a passkey" for an email, and a recovery link by
// email. Browsers run WebAuthn only on a domain name, so the app URL must
// be one: localhost works over plain http.
//
//	go run ./examples/demo -db memory -passkeys -app-url http://localhost:8080
//
// The demo still listens on 127.0.0.1:8080; open http://localhost:8080,
// not 127.0.0.1, which is another origin where the browser refuses the
// passkeys (the page says so). A passkey user's email is unverified (a
// passkey proves nothing about the inbox), and under -account-linking a
// passkey sign-up joins nobody. Recovery emails are printed as the others
// are; their links open <app-url>/auth/webauthn/recover?token=...&tenantId=public,
// a page of the demo (the same path as the SuperTokens prebuilt UI's),
// where a click creates a new passkey for the account: the old ones stop
// working and every session of the account ends; then sign in with the
// new one. e2e/passkeys.test.mjs runs all of it in Chromium with its
// virtual authenticator, on this page and through the WebAuthn prebuilt
// UI of supertokens-auth-react.
//
// # Multi-factor auth
//
// With -mfa totp, every user sets up an authenticator app after signing
// up (the page shows a QR code and the secret as text) and types its code
// after each sign-in; until then /api/me answers 403 with the st-mfa
// claim error, as every protected route of an application would. The page
// then shows ten recovery codes once, lists the user's authenticator apps
// and makes a new set of codes. With -mfa totp,webauthn (and -passkeys), a
// passkey does instead.
//
//	go run ./examples/demo -db memory -mfa totp
//
// # Roles
//
// With -admin, access tokens carry the session's roles and permissions
// (st-role, st-perm, as the SDKs read them). /api/me adds "roles" and
// "permissions", the user's as the store has them; GET /api/admin answers
// a session with the role admin, and any other the SDKs' 403 "invalid
// claim" (st-role); GET /api/config adds "roles": true. The account page
// shows the roles the session's token carries. An admin who signs
// up has the role in the first session; one who existed at start has it
// from the start. With -email-verification optional or required, an
// address is not taken on its word: the admin gets the role once the
// email is verified, in the session's next token (a refresh), so whoever
// signs up first with an admin's address gains nothing before opening
// the link mailed to it. The start-up lines name the admins.
// e2e/roles.test.mjs runs it in Chromium with supertokens-auth-react's
// access-denied screen and web-js's validators.
//
//	go run ./examples/demo -db memory -admin ada@example.com
//
// # The admin page
//
// With -admin, /admin is an operators' console for sessions with the
// role admin (linked from the signed-in page as "Admin"), on the
// library's Go API (operators.go): find users by a part of their email,
// newest first, a page at a time; see one (ways to sign in, roles, live
// sessions, ban); ban them, for good or for some minutes, with a reason
// only operators see (their sessions end at once; their open page is
// signed out at its next refresh, within -access-ttl) and lift the ban;
// give and take roles; act as them (auth.Config.Impersonation, for 30
// minutes at most: the page then says who is acting, and refuses what
// would change how the user signs in) and stop, which gives the admin's
// own session back; and read the audit log (auth.Config.Audit), all of
// it or the user's. Its API, each for the role admin:
//
//	GET  /api/admin/users?email=&after=         a page of users
//	GET  /api/admin/users/{id}                  one user
//	POST /api/admin/users/{id}/ban              {"reason": "...", "minutes": 0}
//	POST /api/admin/users/{id}/unban
//	POST /api/admin/users/{id}/roles            {"role": "admin"}
//	POST /api/admin/users/{id}/roles/{role}/remove
//	POST /api/admin/users/{id}/impersonate      the user's session, in the answer's tokens
//	GET  /api/admin/audit?user=&after=          a page of the audit log
//
// and POST /api/impersonation/stop for the session an admin started as a
// user. /api/me adds "operator" in such a session. e2e/demo-admin.test.mjs
// runs the page in Chromium.
//
//	go run ./examples/demo -dev -admin ada@example.com
//
// # Sign-in with a provider
//
// With a provider configured, the page shows a "Sign in with ..." button
// for it, and serves the SDK's callback page at /auth/callback/<id>.
// Register the redirect URI the demo prints at start,
// <app-url>/auth/callback/<id> (http://127.0.0.1:8080/auth/callback/oidc
// by default), and open the page on that same origin (127.0.0.1 and
// localhost are two origins). To try it with no account anywhere, use
// -dev (# Development mode), or run the OpenID provider the browser tests
// use (any login and password; the
// login becomes the user's id, then Continue):
//
//	(cd e2e && npm ci && node oidc-provider.mjs --port 9000 --redirect-uri http://127.0.0.1:8080/auth/callback/oidc)
//	go run ./examples/demo -db memory -oidc-issuer http://127.0.0.1:9000 \
//	  -oidc-client-id demo -oidc-client-secret demo-secret
//
// The generic provider reads the email and email_verified from the ID
// token, not from the userinfo endpoint: a provider that leaves them out
// of its ID tokens gets NO_EMAIL_GIVEN_BY_PROVIDER. Without
// -account-linking, a provider's user is another user than an email and
// password user with the same email.
//
// # Load harness
//
// GET /api/ping and the one-minute email cache behind /api/me are there
// for the load harness, internal/cmd/loadtest; BENCHMARKS.md has its
// figures.
package main
