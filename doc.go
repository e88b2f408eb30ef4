// Package auth is session-based user authentication for Go web
// applications: sign-up and sign-in by email and password, third-party
// providers, passwordless codes and links, or passkeys; multi-factor
// auth; sessions in cookies, headers or the response body, with
// refresh-token rotation and theft detection; password reset, email
// verification and account linking. Its HTTP protocol is that of the
// SuperTokens frontend driver interface, so the SuperTokens frontend SDKs
// work against it unchanged.
//
// # Mounting
//
// An application builds an [Auth] from a [Config], mounts it at its base
// path, and wraps its own handlers with [Auth.RequireSession]:
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
// [New] validates the Config once and copies it; two Auths in one process
// are independent. A frontend served from another origin is named in
// [Config.AllowedOrigins], and the whole API wrapped with [Auth.CORS]. Call
// [Auth.Close] at shutdown, after http.Server's Shutdown, to send the email
// still queued.
//
// # Login methods and routes
//
// The handler serves the routes of each configured feature under
// [Config.BasePath] ("/auth"), and nothing else:
//
//   - email and password ("emailpassword"), always, set by
//     [Config.EmailPassword] (package [emailpassword]): POST /signup, POST
//     /signin, GET /emailpassword/email/exists and its older path GET
//     /signup/email/exists (unless [Config.DisableEmailExists]), POST
//     /user/password/change, and the password reset, with
//     [Config.Email].Mailer: POST /user/password/reset/token, POST
//     /user/password/reset;
//   - sessions ("session"): POST /session/refresh, POST /signout, and
//     with [Config.BeforeDeleteUser] POST /user/delete;
//   - with [Config.SigningAlgorithm] [EdDSA]: GET /jwt/jwks.json;
//   - third-party providers ("thirdparty"), with
//     [Config.ThirdParty].Providers (package thirdparty): GET
//     /authorisationurl, POST /signinup, and POST /callback/<id> for a
//     provider that posts its callback (Apple);
//   - email verification ("emailverification"), with
//     [Config.EmailVerification] (package emailverification): POST
//     /user/email/verify/token, POST /user/email/verify, GET
//     /user/email/verify;
//   - changing the account's email, with [Config.EmailChange] (package
//     emailchange): POST /user/email/change, POST
//     /user/email/change/verify, POST /user/email/change/undo;
//   - passwordless sign-in ("passwordless"), with [Config.Passwordless]
//     (package passwordless): POST /signinup/code, POST
//     /signinup/code/resend, POST /signinup/code/consume, and unless
//     Config.DisableEmailExists GET /passwordless/email/exists, GET
//     /passwordless/phonenumber/exists and GET /signup/phonenumber/exists;
//   - passkeys ("webauthn"), with [Config.Passkeys] (package passkey):
//     POST /webauthn/options/register, POST /webauthn/options/signin,
//     POST /webauthn/signup, POST /webauthn/signin, GET
//     /webauthn/credential/list, POST /webauthn/credential, POST
//     /webauthn/credential/remove, unless Config.DisableEmailExists GET
//     /webauthn/email/exists, and with Config.Email.Mailer POST
//     /user/webauthn/reset/token and POST /user/webauthn/reset;
//   - multi-factor auth ("multifactorauth", "totp"), with [Config.MFA]: PUT
//     /mfa/info, POST /mfa/recovery-codes, GET /mfa/recovery-codes, POST
//     /mfa/recovery-code/verify, and with TOTP among its factors POST
//     /totp/device, GET /totp/device/list, POST /totp/device/remove, POST
//     /totp/device/verify, POST /totp/verify;
//   - organisations, with [Config.Tenants] (# Tenants): POST
//     /tenant/invitations, POST /tenant/invitation/accept, GET
//     /tenant/members, POST /tenant/members/remove, POST /tenant/switch,
//     POST /tenant/discover and GET /user/tenants;
//   - always: GET /loginmethods.
//
// A [store.User] is an identity; the ways it signs in are its logins
// ([store.Login]), one for each feature above that signs in: an email and
// password, an identity at a provider, an email (or phone number) that
// passwordless codes are sent to, a passkey. A sign-up through a
// provider makes a new user even when another user has the same email:
// accounts are never merged silently. With [Config.AccountLinking],
// see # Account linking.
//
// # HTTP statuses
//
// Every business outcome is HTTP 200 with a JSON status, as the protocol
// has it: a wrong password is 200 WRONG_CREDENTIALS_ERROR. The other
// statuses:
//
//   - 401: a session problem, with its [Reason] (see # Sessions);
//   - 403: a browser's state-changing request from an origin not in
//     [Config.AllowedOrigins], to the handler or, with a cookie session, to a
//     protected route; and the SDKs' "invalid claim" body for a session
//     whose email is unverified where verification is required (st-ev),
//     or, with [Config.MFA], that has not completed its second factor or may
//     not set up the one it asks to (st-mfa), and for a session that has
//     not signed in recently where a route asks for it (st-fresh, see
//     # Account self-service);
//   - 400: a malformed request; 413: a body over [Config.MaxBodyBytes];
//   - 404: a path that no configured feature serves; 405: a method that
//     the path does not serve; 204: OPTIONS to the handler, and CORS
//     preflights;
//   - 429: past a rate limit, and 503: password hashing saturated or the
//     store out of reach, both with Retry-After;
//   - 303: the relay of a provider's form-post callback (Apple);
//   - 500: an error the library did not expect, logged with its cause.
//
// # Email and password
//
// Package [emailpassword], set by [Config.EmailPassword], serves sign-up
// and sign-in with a password and the password reset, and documents its
// settings (the policy, argon2id hashing and its concurrency, the reset
// links), routes, limits and events, and why a refused sign-in takes as
// long for an unknown email as for a wrong password. The reset needs
// [Config.Email].Mailer (and [Config.AppURL], where the links point): its
// mail goes from a bounded queue with retries ([EmailConfig]), and a
// failure is reported as [EventMailFailed]. A reset ends every session of
// the user and starts none.
//
// # Sign-in with a provider
//
// Package thirdparty, turned on by [Config.ThirdParty] with providers from
// package provider, redeems each authorisation code once, checks ID tokens
// and redirect URIs, and documents its settings and checks: the server
// keeps no state between the two steps of a sign-in, and a provider that
// fails, stalls or lies gets the client GENERAL_ERROR, never a 5xx.
// SECURITY.md lists each rule with its test.
//
// # Email verification
//
// Verification belongs to a login method's email: package
// emailverification, turned on by [Config.EmailVerification], mails the
// links that verify it and documents its settings, routes and limits.
// The st-ev claim it keeps in access tokens is the kernel's, and so are
// the rules: in required mode [Auth.RequireSession] and
// [Auth.OptionalSession] answer an unverified session 403 with the SDKs'
// "invalid claim" body, after reading the store again if the claim is
// missing or a false one is over 10 seconds old. [AllowUnverifiedEmail]
// exempts a route; [VerifiedEmail] requires a verified email on it in any
// mode, with verification off too (the route then reads the store).
//
// # Passwordless sign-in
//
// Package passwordless, turned on by [Config.Passwordless], signs people
// in, or up, with a code or a link sent to an email address or a phone
// number, and documents its flows, codes, limits and events. A
// passwordless login proves its address (see # Account linking): new
// users are created with it verified, and its sign-ins start sessions
// through the same path as every other way to sign in.
//
// # Passkeys
//
// Package passkey, turned on by [Config.Passkeys] = passkey.New(...),
// signs people up and in with discoverable passkeys, and alone imports
// go-webauthn; it documents its relying party, ceremonies, recovery,
// limits and events. A passkey proves nothing about its email: passkey
// users start unverified and, under account linking, join nobody; a
// recovery link proves the inbox and works as a password reset does.
//
// # Multi-factor authentication
//
// With [Config.MFA], a session starts with the factor it signed in with (a
// password, a provider, a passwordless code, a passkey) and must complete
// one of the second factors its user needs before any protected route lets
// it through: [Auth.RequireSession] and [Auth.OptionalSession] answer 403
// with the SDKs' st-mfa "invalid claim" body, and the SuperTokens
// frontends then ask for the factor. What a user needs is one of
// [MFAConfig.Required] (for everyone), of the factors
// [Auth.RequireFactors] names for them, and each second factor they have
// set up, whether or not the application asked them to: TOTP once they
// have an authenticator app, webauthn once they have a passkey where
// passkeys are among [MFAConfig.Factors], however it was added. A second
// factor set up is a second factor asked for, at every sign-in, whatever
// its first factor; the user's other sessions are held to it from their
// next refresh. The access token carries the factors completed and when
// (the st-mfa claim), and the session keeps them in the store, so a
// refresh carries them on; completing a factor gives the same session a
// new access token.
//
// TOTP follows RFC 6238 as authenticator apps do: SHA-1, six digits,
// 30-second steps, one step of skew either side. The secret is sealed
// with [Config.Secrets], as signing keys are (in the clear without them).
// A user's time step is accepted once, on any device, across instances:
// a code, even one seen over a shoulder, works once. Five wrong codes in
// a row, TOTP and recovery codes together, across sessions and instances,
// lock the user's TOTP for 15 minutes (LIMIT_REACHED_ERROR with
// retryAfterMs). The verify of a device already set up checks its code
// like any other. A factor can be set up by a session that has met its
// requirement, or, by one that has not, only while the user has none of
// the factors they need: a stolen password cannot add a device. Removing
// a device set up needs a session that met its requirement, and the last
// factor the application requires of a user cannot be removed by any
// path ([ErrLastFactor] from [Auth.Unlink]). A factor the user chose they may
// remove, and the requirement goes with it.
//
// A first factor alone cannot keep the owner out: the lockout holds TOTP
// codes only, so a right recovery code is taken while it lasts and lifts
// it, and a passkey is never locked. A wrong code from a session that has
// not met its requirement mails the owner ([MFAConfig.WrongCodeEmail], at
// most once in 15 minutes), and such a session sees none of the user's
// devices, passkeys or recovery codes. SECURITY.md has the arithmetic.
//
// Recovery codes (the library's own endpoints: the SuperTokens frontends
// have none) are ten codes of 80 bits, shown once, kept as SHA-256 hashes;
// a new set voids the old one. An unused code completes the second factor
// once ("recovery-code" in the claim, which meets any requirement but no
// [FactorWithin] rule) and reports [EventRecoveryCodeUsed].
//
// A passkey is a second factor through the SDKs' passkey routes with a
// session and shouldTryLinkingWithSessionUser: registering one adds it
// to the session's user, asserting one of theirs completes "webauthn" in
// the session. Such a passkey also signs in on its own, and a passkey
// sign-in completes "webauthn": where the requirement offers webauthn, a
// passkey is enough, as it holds a key and the user's gesture.
//
// An application's own account page uses the Go API: [Auth.SecondFactors]
// lists what a user has set up, [Auth.NewRecoveryCodes] makes a new set,
// and [Auth.ResetSecondFactors] is for its support, when a user has lost
// both their device and their codes.
//
// [FactorWithin] asks for a factor completed recently on a sensitive route
// (step-up). A password reset or passkey recovery leaves second factors
// as they are: the next sign-in still asks for one. (A reset drops the
// passkeys of a password whose address nobody had proven: see
// Account self-service, below.)
//
// # Account linking
//
// With [Config.AccountLinking], login methods with one email address
// belong to one user, and the model rests on one distinction: a login
// method's email is proven ([store.Login].EmailProven) when whoever holds
// the method has shown they read the inbox. A provider that vouches for
// the address (email_verified) proves it; so do setting the password from
// a reset link mailed to it (which ends every session and replaces what
// the account's maker chose), a passwordless code or link, a passkey's
// recovery by its mailed link, and [Auth.SetEmailVerified]. A verification
// link verifies the address, for the st-ev claim, but proves nothing about
// who holds the account: the person who clicked may have been sent the
// link by a stranger who signed up with their address, and the browser
// that opens it may carry a session a stranger planted there. A new
// password or passkey, and a provider that does not vouch for the address,
// prove nothing either.
//
// Only a login method that proves its email owns it (at most one does)
// or joins a user by it. A new method that proves the address joins the
// user that owns it; if nobody owns it, the user of the oldest method that
// proves it; failing that, the user of the address's email and password
// login, after ending what its maker holds, as a reset would: its password
// is voided (a reset sets a new one) and every session of the user ends.
// Otherwise it makes a new user that owns the address, and the sessions
// of every other user's unproven login with the address end. A new method
// that proves nothing is refused where someone owns the address
// (SIGN_IN_UP_NOT_ALLOWED, or SIGN_UP_NOT_ALLOWED for a password, with the
// SDKs' reasons) and otherwise makes a user of its own that owns nothing.
// Signing in with an unproven method whose address another user holds is
// refused (SIGN_IN_NOT_ALLOWED, SIGN_IN_UP_NOT_ALLOWED) until it is proven,
// by a reset for a password.
//
// Two properties follow, and TestAccountProperties checks them over every
// history of up to four steps (five on request) of an inbox's owner and a
// stranger:
//
//   - No takeover: nothing a person who cannot read an inbox does (sign
//     up with its address, sign in with a provider that reports it
//     unverified, ask for verification mail and have it opened, keep a
//     session or plant one in the owner's browser, change or add a
//     password or delete their account through it, ask to move an
//     account of their own address to the inbox's and have the link
//     opened) gives them a way into a user that the inbox's owner signs
//     into or uses.
//   - No lockout: the owner of an inbox gets into an account with the
//     address by self-service (a provider that vouches for it, or a
//     reset), and whatever a stranger made with the address then becomes
//     the owner's (joined after eviction, or taken by a reset) or stops
//     opening for the stranger.
//
// Without linking, users are never joined and own nothing; an email and
// password login a stranger made with an address is taken over by its
// owner's reset, and a stranger's account at a provider stays theirs,
// with the address unproven. A user is a primary user (isPrimaryUser) once
// it owns an email or has several login methods, and the user object
// lists every method in loginMethods, each with its own recipeUserId; its
// sessions name it in "sub" and the login method that signed in in "rsub"
// ([Session.LoginID]).
// A password reset acts only on email and password logins: a user who has
// none gets no reset email, and a reset never creates one.
//
// # Sessions
//
// Sign-up and sign-in start a session and return an access token and a
// refresh token, in cookies, in headers (st-auth-mode: header) or in the
// body (fg-auth-mode: body). An access token is a JWT accepted until it
// expires ([Config.AccessTokenLifetime]); [Auth.RequireSession] verifies
// it, and answers 401 "try refresh token" once it has expired, when the
// client exchanges its refresh token for a new pair. A session's errors
// are [*SessionError] values that say why (a [Reason]), and match
// [ErrUnauthorized], [ErrTryRefreshToken] or [ErrTokenTheft]. Over HTTP
// every 401 carries its Reason in the Auth-Reason header and beside the
// message: a frontend can tell a user who signed out elsewhere from one
// whose password was reset or whose session was stolen.
//
// The Go API is for the application's own code: it reads users
// ([Auth.UserByID], [Auth.UserByEmail]), lists and counts them for
// operators ([Auth.ListUsers], [Auth.CountUsers], with a Store that is a
// [store.UserLister]), bans them and lifts bans ([Auth.BanUser],
// [Auth.UnbanUser], with a [store.Banner]), reads the audit log
// ([Auth.AuditLog], with [Config.Audit]), acts as them for a while
// ([Auth.Impersonate], [Auth.StopImpersonating], with
// [Config.Impersonation]), lists and ends their sessions
// ([Auth.Sessions], [Auth.RevokeSession], [Auth.RevokeAllSessions]),
// changes their login methods ([Auth.SetEmailVerified], [Auth.Unlink])
// and their second factors ([Auth.SecondFactors], [Auth.RequireFactors],
// [Auth.NewRecoveryCodes], [Auth.ResetSecondFactors]), and deletes them
// ([Auth.DeleteUser]). It keeps tenants ([Auth.PutTenant], [Auth.Tenant],
// [Auth.Tenants], [Auth.DeleteTenant]; see # Tenants), invites to them
// and manages their members ([Auth.Invite], [Auth.Invitations],
// [Auth.RevokeInvitations], [Auth.Members], [Auth.RemoveMember],
// [Auth.UserTenants]).
//
// [Auth.VerifyToken] checks an access token that comes without an HTTP
// request (gRPC metadata, a WebSocket's first message, a queued job), with
// RequireSession's rules and reasons; a session that a claim refuses is a
// [*ClaimError]. Package grpcauth's interceptors check gRPC calls with it.
//
// Each refresh returns a new pair and moves the session's end to now plus
// [Config.RefreshTokenLifetime]. Of concurrent refreshes with one token
// exactly one wins and the others are theft: clients serialise their
// refreshes, as the SDKs do across tabs, or turn on
// [Config.RefreshReuseWindow], in which the token just exchanged gets the
// very same successor again.
//
// A session that ends (sign-out, a reset, theft, [Auth.RevokeSession],
// [Auth.RevokeAllSessions]) loses its refresh token at once. Its access
// tokens stop at once with [Config.CheckSessionInStore], for a store read
// per request (on other instances, within [Config.SessionCheckCache]), or
// else when they expire.
//
// # Account self-service
//
// A signed-in user changes their account through the library's own
// routes (the SuperTokens frontends have none; PROTOCOL.md has their
// bodies and answers), and none of them opens a takeover to whoever
// holds a session, or a password, for a moment.
//
// The sensitive ones need a fresh sign-in, as GitHub's sudo mode does: a
// factor completed within [Config.FreshSignIn] (5 minutes by default).
// Without MFA that is the sign-in that started the session; with
// [Config.MFA] it is the latest factor in the session's st-mfa claim, so
// completing TOTP or a passkey again counts too, and a session that has
// not met its requirement is refused for that first. Otherwise the answer
// is 403 with the "invalid claim" body of st-fresh, which no token
// carries: the frontend has the user sign in again (a sign-in with a
// session replaces its tokens) and retries. [SignedInWithin] puts the
// same rule on an application's own routes.
//
// POST /user/password/change (package [emailpassword]) changes the
// password with the current one, which is itself the fresh factor, and
// counts against the sign-in limits when it is wrong; a user without a
// password adds one after a fresh sign-in, for the email they own under
// account linking. POST /user/delete, served once [Config.BeforeDeleteUser]
// is set, deletes the user after a fresh sign-in and the application's
// consent, as [Auth.DeleteUser] does.
//
// A password changed ends every other session of the user in one step
// with the sign-ins in flight, as a reset does (the user's session
// epoch): the session that asked goes on under a new handle, with the
// same login, factors and start, its new tokens in the answer. Its user
// is mailed a notice.
//
// A signed-in user adds a way to sign in through the SDKs' own sign-in
// routes, sent with the session and shouldTryLinkingWithSessionUser true:
// a provider's /signinup (whatever email the provider gives) and
// passwordless's /signinup/code/consume (the address the code reached).
// The session must have met its MFA requirement and signed in recently,
// checked before the code is spent. The login joins the session's user
// and owns nothing: it joins no other user's login by its address and
// evicts none. One that is already another user's is refused
// (SIGN_IN_UP_NOT_ALLOWED), never moved; under account linking, so is a
// provider that does not vouch for its address. So is any login for a
// user with an address nobody has proven (a password's or a passkey's
// until a reset or a recovery, or one a provider gave without vouching
// for it): that user may be a stranger's, made with someone else's
// address, and what it gained would stay when the address's owner takes
// it back.
// The answer is OK with the user, and no tokens: the session goes on. A
// passkey is added by POST /webauthn/credential, a password by POST
// /user/password/change.
//
// Adding or removing a passkey or a TOTP device that is set up, and new
// recovery codes, need a fresh sign-in too, on top of the MFA rules they
// had. A TOTP device not yet set up is the set-up's to drop at any age,
// and verifying one is itself a factor. [Auth.Unlink] is the Go API's:
// an application's route for it puts [SignedInWithin] in front, as the
// demo does.
//
// With email verification on, a passkey or a TOTP device is added only
// to a user whose every address is verified; otherwise the answer is the
// SDKs' email verification claim error (403 st-ev), and their frontends
// send the user to verify it, then retry. Whoever signs up with someone
// else's address must not gain either: a passkey would still open the
// account after the owner's reset, and an app would be asked of the
// owner. For the same reason a reset of a password whose address nobody
// had proven drops the user's passkeys, as the eviction of such a
// password under account linking does; a verified address may still have
// been verified by an owner who opened a stranger's link, and then the
// reset is what takes the account back. Second factors stay: a reset
// must not let an inbox past them. With verification off, addresses are
// taken on trust.
//
// # Events, logs and metrics
//
// [Config.Logger] records every outcome, never a token or password:
// refreshes and refused sessions at Debug, token theft at Warn, the rest
// at Info. [Config.OnEvent] gets each [Event], and [Config.Metrics] counts
// them (examples/metrics exports the counts for Prometheus). Each event
// carries the client's RemoteAddr and UserAgent (its first 256 bytes),
// both empty for Go API calls; the user agent is not logged. An account
// page can keep those of [EventSignIn] to show where each session
// started, as the demo's does. A user agent is the client's claim: show
// it, do not decide on it.
//
// The kinds of [EventKind]:
//
//   - [EventSignUp] (sign_up): a user signed up, by any login method
//     ([Event.Method]); [EventSignIn] follows;
//   - [EventSignIn] (sign_in): a session started;
//   - [EventSignInFailed] (sign_in_failed): an unknown email or a wrong
//     password, a wrong or expired passwordless code or link, or a passkey
//     refused;
//   - [EventSignInThrottled] (sign_in_throttled): a sign-in refused by
//     [RateLimits] before the password (or code) check, or a passwordless
//     send to an address past its limit;
//   - [EventRefresh] (refresh): a session refreshed;
//   - [EventRefreshThrottled] (refresh_throttled): a session past
//     [RateLimits.SessionRefreshes];
//   - [EventSignOut] (sign_out): a user signed out;
//   - [EventSessionRevoked] (session_revoked): a session ended by the Go
//     API, a password reset, passkey recovery, account linking, or the
//     removal of the passkey it started with;
//   - [EventTokenTheft] (token_theft): a superseded refresh token came back;
//     [Event.Reason] says which;
//   - [EventSessionRefused] (session_refused): every 401 of refresh or a
//     protected route; [Event.Reason] says why;
//   - [EventResetEmailSent] (reset_email_sent): a password reset or passkey
//     recovery email was sent;
//   - [EventPasswordReset] (password_reset): a password was reset;
//   - [EventPasswordChanged] (password_changed): a user changed their
//     password, or added one, at POST /user/password/change;
//   - [EventEmailChanged] (email_changed): a user's address moved, by the
//     link to the new one (package emailchange);
//   - [EventEmailChangeUndone] (email_change_undone): by the notice's link
//     to the old address, which ends every session of the user;
//   - [EventMailFailed] (mail_failed): an email was not sent; the log says
//     why;
//   - [EventEmailVerificationSent] (email_verification_sent): a verification
//     email was sent;
//   - [EventEmailVerified] (email_verified): an email was verified, by a
//     link or [Auth.SetEmailVerified];
//   - [EventAccountLinked] (account_linked): a new login method joined an
//     existing user;
//   - [EventUserDeleted] (user_deleted): [Auth.DeleteUser] removed a user,
//     or a user deleted their account (POST /user/delete);
//   - [EventPasswordlessCodeSent] (passwordless_code_sent): a passwordless
//     code or link was sent;
//   - [EventPasskeyAdded] (passkey_added): a passkey was added to an
//     existing user, or by recovery;
//   - [EventPasskeyRemoved] (passkey_removed): a user removed a passkey;
//   - [EventPasskeyCloneSuspected] (passkey_clone_suspected): a passkey
//     sign-in refused because its counter did not grow: the key may be
//     cloned;
//   - [EventFactorCompleted] (factor_completed): a session completed a
//     second factor; [Event.Method] names it;
//   - [EventFactorFailed] (factor_failed): a wrong TOTP or recovery code, or
//     another user's passkey;
//   - [EventFactorAdded] (factor_added): a TOTP device set up, or a passkey
//     added as a second factor;
//   - [EventFactorRemoved] (factor_removed): a TOTP device removed, by its
//     user or [Auth.ResetSecondFactors];
//   - [EventFactorsRequired] (factors_required): [Auth.RequireFactors]
//     changed what a user must complete;
//   - [EventMFALocked] (mfa_locked): five wrong codes in a row locked a
//     user's TOTP for 15 minutes;
//   - [EventRecoveryCodesCreated] (recovery_codes_created): a new set of
//     recovery codes, which voids the old;
//   - [EventRecoveryCodeUsed] (recovery_code_used): a recovery code
//     completed a second factor;
//   - [EventRoleGiven] (role_given): a role given to a user, by package
//     roles' Go API or the dashboard; [Event.Role] names it;
//   - [EventRoleTaken] (role_taken): a role taken from a user;
//   - [EventRoleCreated] (role_created): a role created;
//   - [EventRoleChanged] (role_changed): permissions added to a role, or
//     removed;
//   - [EventRoleDeleted] (role_deleted): a role deleted, and taken from
//     every user who held it;
//   - [EventUserCreated] (user_created): an operator created a user with
//     an email and a password, through the dashboard's API; no session
//     starts;
//   - [EventPasswordSet] (password_set): an operator set a user's
//     password, through the dashboard's API; every session of the user
//     ends, as after a reset;
//   - [EventEmailUnverified] (email_unverified): an operator took back
//     the verification of a login's email, through the dashboard's API;
//   - [EventUserBanned] (user_banned): [Auth.BanUser] banned a user and
//     ended their sessions (an [EventSessionRevoked] each);
//     [Event.Operator] names who;
//   - [EventUserUnbanned] (user_unbanned): [Auth.UnbanUser] lifted a ban;
//   - [EventSignInBanned] (sign_in_banned): a banned user proved who they
//     are and was refused a session;
//   - [EventSignInNotMember] (sign_in_not_member): a user who is no longer
//     a member of a tenant proved who they are there and was refused;
//   - [EventTenantChanged] (tenant_changed): [Auth.PutTenant] created a
//     tenant or changed its rules; [Event.Tenant] names it, as it does
//     for every event of a request to a tenant's path;
//   - [EventTenantDeleted] (tenant_deleted): [Auth.DeleteTenant];
//   - [EventMemberInvited] (member_invited): an invitation was mailed;
//   - [EventMemberJoined] (member_joined): a user accepted one;
//   - [EventMemberRemoved] (member_removed): [Auth.RemoveMember], over
//     the Go API or HTTP; the user's sessions there ended;
//   - [EventTenantSwitch] (tenant_switched): a session moved to another
//     tenant of its user's;
//   - [EventImpersonationStarted] (impersonation_started): an operator
//     started a session as a user ([Auth.Impersonate]); every event of
//     that session names the operator in [Event.Operator];
//   - [EventImpersonationEnded] (impersonation_ended): the operator ended
//     it ([Auth.StopImpersonating]), or its time ran out.
//
// # Tenants
//
// With [Config.Tenants] on, one deployment serves several customers, each
// in a tenant of its own: its users, its sign-in rules and its own
// providers, such as a company's identity provider. The public tenant is
// [Config]'s and always exists; the others are data, which
// [Auth.PutTenant] writes to the store (a [store.TenantStore]) and every
// instance reads within [TenantsConfig.Refresh] (10 seconds by default;
// at once on the instance that wrote). A [Tenant] sets its first factors,
// the second factors each of its users must complete (with [Config.MFA]),
// and its providers: ones of Config.ThirdParty named by ID, or OpenID
// Connect clients of its own, found by discovery, whose secrets are
// sealed at rest with [Config.Secrets].
//
// The SDKs name the tenant after the base path: /auth/acme/signin. A
// route's exact path comes first (/auth/dashboard/... is never tenant
// "dashboard"), the segment is read lower-cased, /auth/public/... is the
// public tenant, and a tenant that does not exist answers 404
// {"message":"unknown tenant"}. GET /loginmethods answers each tenant's
// first factors and providers. Every sign-in route acts in the path's
// tenant; the routes of a session (refresh, sign-out, MFA, the account's
// own routes, sending verification mail) act in the session's, whatever
// the path says.
//
// Logins are unique per tenant: the same email in two tenants is two
// users, and account linking joins, and weighs, only logins of one
// tenant. A session belongs to the tenant it signed in to, which its
// access token names in tId ([Session.TenantID]); its roles are those its
// user holds in that tenant. Package roles' Go API acts in the public
// tenant, in the tenant of a protected handler's session, or in the one
// [InTenant] names.
// Reset, verification and recovery links name the tenant in tenantId,
// and so does a magic link; each of them, and a sign-in code, a passkey
// ceremony or a provider's sign-in, works only in the tenant it was
// issued in. A session adds no way in to another tenant's account. So
// nothing done in one tenant opens anything in another:
// TestTenantIsolation checks it over every history of up to four steps
// of a person in each of two tenants.
//
// A user signs in to a tenant other than the public one while a member of
// it: signing up there makes them one, and a member removed
// (store.TenantStore's RemoveMember) is refused there with
// SIGN_IN_NOT_ALLOWED, and their sessions there end.
//
// # Security model
//
// Passwords are hashed with argon2id (OWASP parameters by default) in PHC
// strings, under a concurrency limit so a burst of sign-ins cannot exhaust
// memory: the sign-ins beyond it wait their turn, holding no hashing memory,
// and past EmailPassword.HashQueueTimeout or their request's deadline the
// answer is 503 with Retry-After. Unknown emails cost the same hash as
// known ones, and sign-in answers both with the same bytes (see
// [emailpassword]).
//
// A session is a lineage of refresh tokens. A refresh token names its
// session and its generation, holds 128 secret bits and carries a MAC made
// with a refresh key kept in the Store; the Store keeps only the current
// token's SHA-256, the session's generation, when the token was issued and
// the session's refresh allowance, a fixed amount however often it
// refreshes, and a read of it yields no token that works. A token works
// exactly once: each refresh atomically replaces it. Presenting a token
// that was already exchanged (its generation is behind its session's)
// means it was copied, so the whole session ends and the answer is 401
// "token theft detected", however long ago the token was superseded
// (SuperTokens waits for the new token's first use). Forged, unknown and
// expired tokens are refused without touching any session.
//
// Access tokens are JWTs (HS256 by default, EdDSA optionally) checked with
// an explicit algorithm, a required expiry, issuer and token type, and keys
// that live in the Store, so every instance of an application verifies the
// tokens of every other and keys rotate. An access token is verified by its
// signature alone, so after sign-out or revocation it keeps working until
// it expires unless [Config.CheckSessionInStore] is set.
//
// Cookies are HttpOnly, Secure and SameSite=Lax by default; the refresh
// cookie is sent only to the refresh endpoint. Token responses carry
// Cache-Control: no-store. With SameSite=None, requests that carry cookies
// must also carry a rid header, which cross-site forms cannot send.
// Browsers' state-changing requests to the auth endpoints from origins not
// in [Config.AllowedOrigins] are refused, against login CSRF.
//
// That check, like any same-origin check, trusts the name the browser
// used: a page can point its own domain name at a server's address (DNS
// rebinding) and then talk to the server as its own origin. A public
// server gives such a page nothing its author could not get directly; an
// instance reachable only from loopback or a private network (a
// development server, an internal tool) gives it a way in. Such an
// instance should refuse requests whose Host is not one of its names, or
// be served over TLS under its real name, which a rebound name fails. The
// library does not compare Host with Config.AppURL itself: behind a proxy,
// or under several names, a handler sees Hosts that are not AppURL's, and
// only the server knows its names. A wrapper does it:
//
//	hosts := []string{"localhost:8080", "127.0.0.1:8080", "[::1]:8080"}
//	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
//		if !slices.Contains(hosts, strings.ToLower(r.Host)) {
//			http.Error(w, "misdirected request", http.StatusMisdirectedRequest)
//			return
//		}
//		mux.ServeHTTP(w, r)
//	})
//
// The demo (examples/demo, hosts.go) does this whenever it listens on
// loopback.
//
// # Recipes and the kernel
//
// Package auth is the kernel: sessions, tokens and their keys, the
// transfer modes, the claims tokens carry, the account model (linking),
// the one sign-in path, the protocol's answers, mail, limits, events and
// the Go API. Each way to sign in, and what comes after sign-in, is a
// recipe. Email and password, email verification, passwordless,
// third-party sign-in, passkeys and roles are packages of their own
// (emailpassword, emailverification, passwordless, thirdparty, passkey,
// roles); MFA is files of the kernel. Passkeys and roles plug in by a
// value of their package (passkey.New, roles.New: a [Recipe]) rather than
// a Config of its type: package auth does not import go-webauthn, and the
// roles value is the Go API of the Auth it serves.
//
// MFA stays in the kernel by design: it is the policy every other part
// consults, not a way to sign in beside them. Each sign-in asks it which
// factors the session must complete (the st-mfa claim), each refresh
// reassesses them, the removal of a login asks whether it is the last
// required factor, and [FactorWithin] and [AllowPendingMFA] read it. A
// package of its own would need the kernel to call back into it at each
// of those steps, a seam as wide as MFA itself. What the factors offer
// the recipes is in the seam instead: a session that sets up or
// completes a factor, a factor added, a factor completed in the session,
// and the refusal of the last one; passkeys use it to be a second factor.
//
// A recipe package imports an internal seam (internal/kit), never
// package auth and never another recipe; [New] builds each recipe its
// Config field turns on, handing it the seam, and mounts the routes it
// returns under [Config.BasePath]. Through the seam a recipe reads
// sessions, takes allowances, sends mail and reports events, and it starts
// a session only by its SignIn: that checks the factor may start one,
// applies account linking, adds the claims every token carries and emits
// the sign-up and sign-in events, so a recipe added later cannot issue a
// token that skips a check. The claims (the kernel's st-ev and st-mfa,
// and the st-role and st-perm of package roles) are registered
// with the kernel, which asks each for its value at sign-in and at every
// refresh, carries it into every token it rewrites, and runs its check,
// with the route's [Rule] values, in [Auth.RequireSession] and
// [Auth.VerifyToken].
//
// How a recipe plugs in, as roles does (package roles, about 550 lines,
// and one Config field here):
//
//   - its package imports internal/kit and what the kernel shares
//     (store, mailer, internal/wire), and New returns a value with a
//     Build(kit.Kernel, kit.Setup) method, a [Recipe];
//   - Build checks its settings, declares the first factors it offers
//     with Kernel.FirstFactors (for /loginmethods and MFA), registers its
//     claims with Kernel.RegisterClaim (a kit.Claim: its value at sign-in
//     and at refresh, how a token's value is read, and the check a
//     route's rules ask for) and returns its routes, which New mounts;
//   - its rules are kit.NewRule values naming its claim, which the
//     kernel hands to that claim's check; [Rule] is kit.Rule;
//   - it starts a session only through Kernel.SignIn or Kernel.SignedIn,
//     and refuses with a *[ClaimError], which the kernel answers 403.
//
// # Testing
//
// Package authtest runs an Auth on a test server with a manual clock and a
// mailbox, gives clients that speak the protocol in each transfer mode, and
// builds requests that carry a session for handler tests without a server.
// Package store/storetest is the conformance suite for a Store of one's
// own.
package auth
