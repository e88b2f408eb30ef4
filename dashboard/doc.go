// Package dashboard serves the SuperTokens dashboard, the operators' app
// for users, sessions and roles, and the API it calls, beside the other
// routes of an auth.Auth. Give New's Recipe to auth.Config.Dashboard:
//
//	a, err := auth.New(auth.Config{
//		Store:     st,
//		Roles:     roles.New(roles.Config{}),
//		Dashboard: dashboard.New(dashboard.Config{APIKey: os.Getenv("DASHBOARD_API_KEY")}),
//	})
//
// and open <BasePath>/dashboard in a browser. The app itself is the
// SuperTokens dashboard's build, loaded from [Config].BundleURL (by
// default jsDelivr, [DefaultBundleURL]): its licence and supply chain are
// the application's to judge before it points operators at it, or it can
// host the build itself.
//
// # Settings
//
//   - [Config].APIKey: the key the app asks for ("api-key" mode), at
//     least [MinAPIKeyLen] bytes;
//   - [Config].Permission: the permission (package roles) that opens the
//     API to a session, default [DefaultPermission];
//   - [Config].BundleURL: where the app's build is.
//
// With no APIKey and roles off nobody could use the API, and auth.New
// fails. The Store must implement store.UserLister (memstore and
// sqlstore do).
//
// # Who may use the API
//
// Every route but the shell's answers only a request that carries
// "Authorization: Bearer <APIKey>" (the scheme in any case), compared in
// constant time; or, while auth.Config.Roles is on, a session whose user
// holds Permission, read from the store at every request, so that taking
// the role away closes the API at once. The session is a header-mode
// access token in the Authorization header, or the session cookie: the
// cookie counts only on a request that carries an Authorization header
// too (any value; the app always sends one), a header no page of another
// site can make a browser send, so that a link or form elsewhere cannot
// act with an operator's cookie, even through the state-changing GET of
// unlink. A session must have met its MFA requirement. In the app, an
// operator signed in to the application with the permission types any
// value into the key form.
//
// A request with neither is answered 401 {"message":"Unauthorised
// access"}, and a session without the permission 403 {"message":"You do
// not have access to this page"}: the app signs out on the first and
// shows its access-denied screen on the second. A client's requests
// refused with an Authorization header (a wrong key, a session that is
// none) are limited, by default 10 at once, then 1 a minute: past that, every
// request of that client with the header is answered 429 with
// Retry-After before its key is compared, the right key included, so
// that a key cannot be guessed at the server's speed
// (auth.RateLimits.ClientDashboardFailures). There is no
// email-and-password sign-in of dashboard accounts (the SDKs' POST
// /dashboard/api/signin): operators are the application's users with the
// permission, or holders of the key, so that path is not served (404) and
// the shell always says "api-key".
//
// # Routes
//
// Under the Auth's base path, and again under <base>/<tenantId>/...: the
// app adds the tenant's segment, even "public". The segment names the
// tenant a route works in (the users it lists, the tenant it shows or
// changes); a tenant that does not exist answers 404, as every route
// under its segment does, before the API's check:
//
//   - GET /dashboard, GET /dashboard/, GET /dashboard/roles and
//     GET /dashboard/tenants: the shell, with no key: the page that loads
//     the app, with a Content-Security-Policy that allows the bundle's
//     origin and the page's one inline script (by its hash); the web
//     fonts the app asks of Google are not loaded, and it shows the
//     browser's own (the app 0.13.0 was run against this package so, in
//     Chromium: sign-in with the key, the users' list and search, a
//     user's page with its sessions, the roles' page);
//   - POST /dashboard/api/key/validate: OK, or the 401 or 403 above;
//   - POST /dashboard/api/signout and POST /dashboard/api/analytics: OK;
//     nothing is kept, nothing is sent anywhere;
//   - GET /dashboard/api/users?limit=&timeJoinedOrder=&paginationToken=
//     and search tags (email, phone, provider; the first of values joined
//     with ";"): a page of the path's tenant's users (every user while
//     tenants are off), newest first by default, with nextPaginationToken
//     until the last page;
//   - GET /dashboard/api/users/count: {"status":"OK","count":n}, of the
//     same users;
//   - GET /dashboard/api/search/tags: the tags above;
//   - GET /dashboard/api/tenants: the "public" tenant, then every other
//     by id (auth.Config.Tenants), each with the factors that may start a
//     session: a tenant's own, or the deployment's;
//   - POST /dashboard/api/tenant: creates the tenant tenantId, with the
//     deployment's rules or the firstFactors given, as
//     auth.Auth.PutTenant: {"status":"OK","createdNew":true},
//     TENANT_ID_ALREADY_EXISTS_ERROR ("public" included),
//     INVALID_TENANT_ID_ERROR with a message, or
//     MULTITENANCY_NOT_ENABLED_IN_CORE_ERROR while tenants are off; a
//     factor the deployment does not offer, or an empty list, is 400;
//   - GET /dashboard/api/tenant: the path's tenant: its providers (id and
//     name), first factors, requiredSecondaryFactors (null for none),
//     coreConfig [] (its password and token rules are the Go API's to
//     set) and userCount. The public tenant's are Config's;
//   - DELETE /dashboard/api/tenant: deletes the path's tenant, as
//     auth.Auth.DeleteTenant: its sessions end, its users stay;
//     {"status":"OK","didExist":bool}, or
//     CANNOT_DELETE_PUBLIC_TENANT_ERROR;
//   - PUT /dashboard/api/tenant/first-factor and
//     PUT /dashboard/api/tenant/required-secondary-factor: adds factorId
//     to the path's tenant's first factors (starting from the
//     deployment's) or required second factors, or with enable false
//     takes it out; RECIPE_NOT_CONFIGURED_ON_BACKEND_SDK_ERROR with a
//     message for a factor the deployment does not offer,
//     MFA_NOT_INITIALIZED_ERROR for a second factor without
//     auth.Config.MFA, and isMFARequirementsForAuthOverridden always
//     false: the tenant's requirement adds to the application's. Taking
//     out the last first factor is 400, and so is any change to the public
//     tenant, whose rules are the application's configuration (auth.Config):
//     the API cannot change them, and answers so rather than a status that
//     would claim it had;
//   - GET /dashboard/api/thirdparty/config?thirdPartyId=,
//     PUT /dashboard/api/thirdparty/config and
//     DELETE /dashboard/api/thirdparty/config?thirdPartyId=: a provider of
//     the path's tenant, as the SDKs' ProviderConfig has it for an OpenID
//     Connect client of the tenant's own (thirdPartyId, name,
//     oidcDiscoveryEndpoint, one client:
//     clientId, clientSecret, scope); GET answers one empty client for a
//     provider the tenant has no client of (one of the deployment's shows
//     no secret); PUT sets one ({"status":"OK","createdNew":bool}), the
//     tenant keeping the deployment's providers it had; DELETE removes one
//     ({"status":"OK","didConfigExist":bool}), and with the tenant's last
//     provider, thirdparty from its first factors. The public tenant's are
//     400, as above;
//   - GET /dashboard/api/user?userId=: the user, with firstName and
//     lastName "FEATURE_NOT_ENABLED" (this library keeps no user
//     metadata), or NO_USER_FOUND_ERROR;
//   - PUT /dashboard/api/user: the app's edit of a login: names are not
//     kept, an email changes only by its holder's link (package
//     emailchange) and a phone number not at all, so a change of either is
//     EMAIL_CHANGE_NOT_ALLOWED_ERROR or PHONE_NUMBER_CHANGE_NOT_ALLOWED_ERROR;
//   - DELETE /dashboard/api/user?userId=&removeAllLinkedAccounts=: deletes
//     the user and ends every session of theirs, as auth.Auth.DeleteUser;
//     with removeAllLinkedAccounts false, only the login of that id, when
//     the user has others;
//   - POST /dashboard/api/user/emailpassword: creates a user with an email
//     and a password that passes the password policy; no session starts;
//   - POST /dashboard/api/user/passwordless: creates a user who signs in
//     with codes sent to the email or phoneNumber given (exactly one),
//     or finds the one who does (createdNewRecipeUser false); no session
//     starts, and the operator's word proves no inbox: the address is not
//     verified and owns nothing, and under account linking one another
//     user holds is refused. FEATURE_NOT_ENABLED_ERROR where passwordless
//     sign-in to that kind of address is off;
//   - GET /dashboard/api/user/email/verify?recipeUserId= and
//     PUT /dashboard/api/user/email/verify: whether a login's email is
//     verified, and marking it so or not (FEATURE_NOT_ENABLED_ERROR
//     without email verification);
//   - POST /dashboard/api/user/email/verify/token: mails the login's
//     verification link, from the user's allowance;
//   - GET /dashboard/api/user/metadata and PUT /dashboard/api/user/metadata:
//     FEATURE_NOT_ENABLED_ERROR, as the SDKs answer without user metadata;
//   - GET /dashboard/api/user/sessions?userId= and
//     POST /dashboard/api/user/sessions: the user's live sessions, and
//     ending those named in sessionHandles;
//   - PUT /dashboard/api/user/password: sets the password of an email and
//     password login, which the password policy must accept
//     (INVALID_PASSWORD_ERROR with its message), and ends every session of
//     the user, as a password reset does;
//   - GET /dashboard/api/user/unlink?recipeUserId=: removes the login from
//     its user, and the sessions it started;
//   - GET /dashboard/api/userroles/roles, PUT /dashboard/api/userroles/role,
//     DELETE /dashboard/api/userroles/role,
//     GET /dashboard/api/userroles/role/permissions,
//     PUT /dashboard/api/userroles/role/permissions/remove,
//     GET /dashboard/api/userroles/user/roles,
//     PUT /dashboard/api/userroles/user/roles and
//     DELETE /dashboard/api/userroles/user/roles: roles and permissions,
//     and users' roles in the "public" tenant, as package roles's Go API
//     makes them; FEATURE_NOT_ENABLED_ERROR while auth.Config.Roles is off.
//
// A route that names a login (recipeUserId) finds it by its user: the
// request's userId when it has one, or else the user whose id the login's
// is, as every user's first login has. A user or login that does not
// exist is {"status":"NO_USER_FOUND_ERROR"}, never a 5xx. Bad input is 400
// {"message":...}. Business outcomes are 200 with a status, as the SDKs
// answer them. Of the SDKs' tenant routes, a tenant's core settings
// (/dashboard/api/tenant/core-config) are not served (404): a tenant's
// password and token rules are set with auth.Auth.PutTenant, as are the
// providers' settings beyond an OpenID Connect client's.
//
// # Events
//
// The operators' changes report auth.Event values, with the request's
// address and user agent: auth.EventUserDeleted and
// auth.EventSessionRevoked for a deletion, auth.EventSessionRevoked for
// sessions ended or a login unlinked, auth.EventEmailVerified and
// auth.EventEmailUnverified, auth.EventPasswordSet (and
// auth.EventSessionRevoked for each session it ends), and
// auth.EventUserCreated; changes to roles auth.EventRoleGiven,
// auth.EventRoleTaken, auth.EventRoleCreated, auth.EventRoleChanged and
// auth.EventRoleDeleted, as package roles's Go API does; changes to
// tenants auth.EventTenantChanged and auth.EventTenantDeleted, as
// auth.Auth.PutTenant and auth.Auth.DeleteTenant report them, without
// the request's address. Each names the
// operator (auth.Event.Operator): the user of the session, or
// [KeyOperator] for a request with the API key.
package dashboard
