// Package store defines the persistence contract of the auth library: the
// Store interface, the records it keeps and the errors it reports.
//
// A Store is shared by every instance of an application, so every change
// that matters for security is a single atomic method: creating a user with
// a unique login, rotating a refresh token, revoking sessions. An
// implementation must never split such a method into a read and a later
// write that another caller can interleave with; SQL implementations use one
// transaction or one conditional statement, the memory store one lock.
//
// Stores never read a clock. The caller passes the current time and every
// expiry in, which keeps implementations deterministic and lets tests travel
// in time. Stores start no goroutines: DeleteExpired is a method the
// application schedules.
//
// Secrets are never stored in plain text. Refresh tokens arrive here already
// hashed (TokenHash); passwords arrive as PHC strings. Signing keys are the
// exception, because the library must use them: it seals their material
// before a store sees it when the application gives it a secret, and
// otherwise they are in the clear; protect the database accordingly.
//
// Every implementation should pass the conformance suite in package
// storetest.
//
// # Room for new login methods
//
// Passwordless codes, passkeys and second factors (TOTP, recovery codes)
// fit this contract with at most one new method each.
//
// A login method's lasting material lives on its Login. A passwordless
// login is Method "passwordless" keyed by the normalised email, with no
// material; a passkey is Method "webauthn", ThirdParty the relying party's
// id and Subject the credential id, with the public key, sign counter,
// backup flags and transports as material. A user's second factors are
// one Login of Method "mfa" (MethodSecondFactors) whose material holds
// its TOTP devices (secrets sealed by the library, as signing keys are),
// the last TOTP time step it accepted, its recovery codes as one-way
// hashes, its run of wrong codes, and the factors the application requires
// of the user. One record, so that each change to it is one atomic
// compare-and-swap (UpdateLoginMaterial, ErrConflict when the stored
// material is not the one read): a TOTP step accepted once across
// instances, a recovery code spent once, the last factor of a user who
// must have one never removed by a race. A passkey's counter is swapped
// the same way in UseCeremony, with its ceremony. UpdatePasswordHash is
// that method for the password column. Which methods prove their email
// (Login.EmailProven) follows the account model: a passwordless code does,
// a passkey does not.
//
// Short-lived secrets handed to a person or a browser (reset and
// verification tokens, passwordless codes and link codes, WebAuthn
// ceremony options, passkey recovery links) become one record: a Code,
// known by the hash of its secret (for a six-digit code, the hash of a
// value derived from it under a key the store never sees, so that reading
// the table does not reveal it), with its kind, the flow it belongs to (a
// passwordless flow, a ceremony), the user, login and email it acts on,
// wrong attempts counted against a maximum, its expiry and kind-specific
// data. Generic methods create one and read one. Using a code is atomic
// with its effect, so each kind keeps one method that does both:
// ResetPassword and VerifyEmail; UsePasswordlessCode, which spends a code
// and ends the address's flows, or counts a wrong one against its flow
// (the login is then signed in, or up, with the UserStore's methods); for
// passkeys, deleting the ceremony's options in the step that accepts it
// and updates the counter.
//
// Reset and verification tokens are Code records (schema 10 on SQL), and
// so are passwordless flows and codes (schema 11), whose one method is
// UsePasswordlessCode, and passkey ceremonies and recovery links (schema
// 12, with Login.Material), whose one method is UseCeremony. Second
// factors (schema 13) add UpdateLoginMaterial for the user's record, and
// Session.Factors, the factors a session has completed, with
// UpdateSessionFactors: a session is the one thing a second factor
// changes that is not the user's.
package store

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"strconv"
	"strings"
	"time"
)

// Errors reported by stores. Implementations wrap or return them so that
// callers can test with errors.Is.
var (
	// ErrNotFound reports that a record does not exist or has expired.
	// Expired records are indistinguishable from missing ones, but for
	// sessions, which say so with an EndedError (which matches
	// ErrNotFound). A record has expired when its expiry is at or before
	// the time passed in.
	ErrNotFound = errors.New("store: not found")

	// ErrConflict reports that a record with the same unique key (a login's
	// key, a user or session id, a token hash, a key id) already exists.
	// Expired records may keep their keys until DeleteExpired removes them.
	ErrConflict = errors.New("store: conflict")

	// ErrTokenReused reports that a refresh token was presented after it had
	// already been exchanged. The store has ended the token's session
	// (EndTokenTheft) in the same atomic step.
	ErrTokenReused = errors.New("store: refresh token reused")

	// ErrRateLimited reports that a session has rotated its refresh token
	// as often as its allowance lets it (see Rotation.Burst); nothing
	// changed.
	ErrRateLimited = errors.New("store: rate limited")

	// ErrSessionsEnded reports that a session was not created because
	// every session of its user has been ended (a password reset,
	// RevokeUserSessions) since the credential that authorised it was
	// read: see User.SessionEpoch.
	ErrSessionsEnded = errors.New("store: the user's sessions were ended")

	// ErrEmailOwned reports that a login could not own its email
	// (Login.OwnsEmail) because another login of its tenant owns it;
	// nothing changed.
	ErrEmailOwned = errors.New("store: the email is owned by another user")

	// ErrLastLogin reports that a login was not removed because it is its
	// user's only one: a user always has a way to sign in.
	ErrLastLogin = errors.New("store: the user's last login")

	// ErrWrongCode reports that a code submitted to a flow is not one of
	// the flow's live codes (see UsePasswordlessCode).
	ErrWrongCode = errors.New("store: wrong code")

	// ErrCodeExpired reports that a code submitted to a flow is one of
	// the flow's codes, but has expired (see UsePasswordlessCode).
	ErrCodeExpired = errors.New("store: code expired")

	// ErrUnavailable reports that the store could not be reached or
	// answered that it cannot serve now: the database is down, restarting
	// or refusing connections, or a connection broke mid-request. The
	// same call may succeed a moment later. A write whose connection
	// broke as it committed may have taken effect. Implementations wrap
	// the cause with it; over HTTP it is a 503 with Retry-After.
	ErrUnavailable = errors.New("store: unavailable")

	// ErrBadCursor reports that a cursor given to UserLister.ListUsers
	// is not one a UserPage returned: it was cut, altered or made up.
	// Over HTTP it is a 400; nothing was read.
	ErrBadCursor = errors.New("store: bad cursor")

	// ErrBanned reports that CreateSession refused a session because its
	// user is banned (see Banner).
	ErrBanned = errors.New("store: the user is banned")
)

// TokenHash is the SHA-256 digest of a secret token. Stores index and
// compare tokens only through their hashes.
type TokenHash [32]byte

// User is an account: an identity. The ways it signs in are its logins
// (see Login).
type User struct {
	// ID is the unique, immutable identifier of the user.
	ID string
	// TimeJoined is when the user signed up.
	TimeJoined time.Time
	// SessionEpoch counts the times every session of the user has been
	// ended: ResetPassword and RevokeUserSessions advance it in the step
	// that deletes the sessions. A sign-in reads it together with the
	// credential it checks (Login.SessionEpoch) and CreateSession refuses
	// to start a session under an epoch that has passed, so a sign-in in
	// flight across a reset cannot outlive it. A new user's is zero;
	// CreateUser ignores the value given.
	SessionEpoch int64
	// Ban is the user's ban, the zero Ban when there is none. A Banner
	// keeps it; other stores leave it zero. CreateUser ignores the value
	// given.
	Ban Ban
}

// A Ban keeps a user from signing in (see Banner).
type Ban struct {
	// At is when the ban began; the zero time for no ban.
	At time.Time
	// Until is when it ends by itself; the zero time for a ban that lasts
	// until it is lifted.
	Until time.Time
	// Reason is the operator's note, for operators: it is never shown to
	// the user.
	Reason string
	// By is the id of the operator who banned the user, "" for the
	// application itself.
	By string
}

// ActiveAt reports whether the ban holds at t.
func (b Ban) ActiveAt(t time.Time) bool {
	return !b.At.IsZero() && (b.Until.IsZero() || t.Before(b.Until))
}

// Session is a signed-in session of a user: one lineage of refresh tokens,
// of which the store knows only the current one (by hash), and how many
// came before it.
type Session struct {
	// Handle is the unique, public identifier of the session.
	Handle string
	// UserID is the owner of the session.
	UserID string
	// LoginID is the login the user signed in with (Login.ID).
	LoginID string
	// Tenant is the tenant the session belongs to, "" for the public
	// tenant, as in LoginKey. Stores keep it as written.
	Tenant string
	// CreatedAt is when the user signed in.
	CreatedAt time.Time
	// RefreshedAt is when the current refresh token was issued.
	RefreshedAt time.Time
	// ExpiresAt is when the session ends unless it is refreshed before.
	ExpiresAt time.Time
	// Generation counts the session's exchanges: its first refresh token
	// is generation 0, and each exchange's successor one more.
	Generation int64
	// Factors is what the session has proved, in the library's encoding:
	// the factors it completed and when, and whether they meet what its
	// user must complete. Stores keep it as written by CreateSession and
	// change it only in UpdateSessionFactors; every method that returns
	// a session returns it. Nil for a session that has none.
	Factors []byte
}

// EndReason says why a session ended before its expiry.
type EndReason string

// The reasons a session ends.
const (
	EndSignedOut     EndReason = "signed_out"     // its user signed out
	EndRevoked       EndReason = "revoked"        // the application revoked it
	EndPasswordReset EndReason = "password_reset" // a password reset ended every session of its user
	EndTokenTheft    EndReason = "token_theft"    // a superseded refresh token came back (ErrTokenReused)
	EndBanned        EndReason = "banned"         // an operator banned its user (Banner)
)

// An EndedError reports that a session exists no more, and why: it ended
// (Reason is one of the EndReason constants) or expired (Reason is
// empty). It matches ErrNotFound with errors.Is, so a caller that needs
// no reason can ignore it. A store keeps the reason of an ended session
// until the session would have expired; after that, or after the
// session's user is deleted, the session is just not found.
type EndedError struct {
	Reason EndReason
}

func (e *EndedError) Error() string {
	if e.Reason == "" {
		return "store: session expired"
	}
	return "store: session ended: " + string(e.Reason)
}

// Is makes an EndedError match ErrNotFound.
func (e *EndedError) Is(target error) bool { return target == ErrNotFound }

// A CodeKind says what a Code is for.
type CodeKind string

// The kinds of Code.
const (
	// CodeReset resets the password of a user's email and password login
	// (ResetPassword).
	CodeReset CodeKind = "reset"
	// CodeVerification verifies the email of one login (VerifyEmail).
	CodeVerification CodeKind = "verification"
	// CodePasswordlessFlow is a passwordless sign-in flow: one browser's
	// attempt to sign in with an email or phone number, which the codes
	// sent for it belong to. Its Hash is the SHA-256 of the flow's secret
	// id, which only that browser holds; Email is the email or phone
	// number; Attempts counts the wrong codes submitted to it. It has no
	// user: whoever completes it signs in, or up.
	CodePasswordlessFlow CodeKind = "passwordless_flow"
	// CodePasswordless is one code of a passwordless flow (Flow), a code
	// to type or a link, used with UsePasswordlessCode. Its Hash is a
	// SHA-256 the library derives from the secret (for a typed code, under
	// the flow's secret id), so that no code is in the store.
	CodePasswordless CodeKind = "passwordless"
	// CodePasskeyOptions is a WebAuthn ceremony: the options a browser
	// was given to register or assert a passkey, known by the hash of
	// their id, with the ceremony's state (challenge and all) in Data.
	// Email is the address a registration is for, UserID the user that
	// adding a passkey or a recovery acts on; both empty for a sign-in.
	// It is used once, with UseCeremony.
	CodePasskeyOptions CodeKind = "webauthn_options"
	// CodePasskeyRecovery is a link mailed to a passkey user's address to
	// register a new passkey (UserID, Email), used with UseCeremony.
	CodePasskeyRecovery CodeKind = "webauthn_recovery"
	// CodeEmailChange is a link mailed to the address a user asked to
	// change theirs to (Email), from the address in Data; CodeEmailRevert
	// is the link mailed to the old address (Email) once the change is
	// made, to undo it, from the new one (Data). Both are used with
	// ChangeEmail.
	CodeEmailChange CodeKind = "email_change"
	CodeEmailRevert CodeKind = "email_revert"
)

// A Code is a one-time secret handed to a person or a browser, known to
// the store only by hash: a password reset or an email verification token,
// a passwordless flow or one of its codes (see the package doc for the
// kinds to come). Each kind has one method that uses it up together with
// its effect.
type Code struct {
	// Hash is the SHA-256 of the secret that was sent. Unique across
	// kinds.
	Hash TokenHash
	// Kind is what the code is for.
	Kind CodeKind
	// Tenant is the tenant the code was issued in, "" for the public
	// tenant, as in LoginKey. Stores keep it as written.
	Tenant string
	// UserID is the user the code acts on.
	UserID string
	// LoginID and Email bind a code to one login of the user and the
	// address that login had when the code was sent to it: set for
	// CodeVerification, empty for CodeReset. A passwordless flow and its
	// codes have no user or login; their Email is the email or phone
	// number the codes are sent to.
	LoginID string
	Email   string
	// Flow is, for CodePasswordless, the Hash of the flow the code
	// belongs to.
	Flow TokenHash
	// Attempts is, for CodePasswordlessFlow, how many wrong or expired
	// codes were submitted to the flow.
	Attempts int
	// Data is kind-specific: for CodePasskeyOptions, the ceremony's state,
	// as the library encodes it.
	Data []byte
	// CreatedAt is when the code was issued.
	CreatedAt time.Time
	// ExpiresAt is when it stops working.
	ExpiresAt time.Time
}

// SigningKey is a key that signs access tokens or refresh tokens. All
// instances of an application read the keys from the store, so a token
// signed by one instance verifies on every other.
type SigningKey struct {
	// ID is the key id ("kid" in an access token's header). Unique.
	ID string
	// Algorithm is the JWS algorithm of an access-token key, such as
	// "HS256" or "EdDSA", or "refresh" for a key that authenticates
	// refresh tokens.
	Algorithm string
	// Material is the secret: the HMAC key or the private key seed, or
	// that sealed by the library (an opaque string of bytes, longer).
	Material []byte
	// CreatedAt is when the key was made; the newest key signs.
	CreatedAt time.Time
	// SignUntil is when the key stops signing new tokens.
	SignUntil time.Time
	// VerifyUntil is when tokens signed by the key stop verifying and the
	// key may be deleted.
	VerifyUntil time.Time
}

// Rotation asks a store to exchange a session's current refresh token for
// its successor.
//
// The store keeps no record of superseded tokens. It tells them from the
// token's generation, which the caller reads from the token itself after
// checking its MAC: a token of a live session whose generation is behind
// the session's was superseded. Because only the server can make a token
// with a valid MAC, and makes exactly one per session and generation,
// nobody can present an old-looking token to end a session they do not
// hold.
type Rotation struct {
	// Handle names the session of the presented token. It is empty for a
	// token made before tokens named their session; the store then finds
	// the session by Presented among the tokens it kept for them, if it
	// has any (see RotateRefreshToken).
	Handle string
	// Generation is the presented token's generation (see
	// Session.Generation); ignored when Handle is empty.
	Generation int64
	// Presented is the hash of the refresh token the client sent.
	Presented TokenHash
	// Next is the hash of the successor, and NextKey the id of the key
	// that made it; the store keeps both until the next exchange.
	Next    TokenHash
	NextKey string
	// Now is the current time.
	Now time.Time
	// ExpiresAt is the new expiry of the session.
	ExpiresAt time.Time
	// ReuseWindow, when positive, lets the token just superseded be
	// presented again for that long after it was exchanged, to survive a
	// lost response or refreshes racing from several tabs: the caller then
	// answers with the same successor the exchange made. See
	// Store.RotateRefreshToken.
	ReuseWindow time.Duration
	// Burst and Every, when both are positive, bound how often the
	// session may rotate: Burst rotations at once, then one per Every. The
	// store keeps the allowance on the session as one time, the way a
	// RateLimitStore keeps an entry (see TakeRateLimit), so it costs the
	// same whatever the session's history.
	Burst int
	Every time.Duration
	// RolesOf, when not empty, asks a store that keeps roles (RoleStore)
	// for the user's roles and permissions in that tenant, read in the
	// same round trip as the rotation of a current token, where it can;
	// see Rotated.RolesRead. The access token the rotation is for carries
	// them, and one trip to the database is most of a refresh's cost.
	RolesOf string
}

// Reuse says which superseded refresh token came back.
type Reuse int

// The kinds of Reuse.
const (
	// ReusePrevious is the token just superseded, with no reuse window.
	ReusePrevious Reuse = iota + 1
	// ReuseAfterWindow is the token just superseded, presented again after
	// the reuse window had closed.
	ReuseAfterWindow
	// ReuseStale is a token superseded two or more exchanges ago: a
	// stale branch of the lineage.
	ReuseStale
)

// ReuseOf is the kind of reuse of a token behind generations behind its
// session's (at least one), presented with the given reuse window and
// not forgiven by it: for implementations of RotateRefreshToken.
func ReuseOf(behind int64, window time.Duration) Reuse {
	switch {
	case behind > 1:
		return ReuseStale
	case window > 0:
		return ReuseAfterWindow
	}
	return ReusePrevious
}

func (r Reuse) String() string {
	switch r {
	case ReusePrevious:
		return "previous"
	case ReuseAfterWindow:
		return "after_window"
	case ReuseStale:
		return "stale"
	}
	return "none"
}

// Rotated is what a rotation found.
type Rotated struct {
	// Session is the session: as updated by the exchange, as it is for a
	// Repeat, or as it was when a reuse ended it.
	Session Session
	// Repeat reports that the presented token is the one just superseded,
	// back within the reuse window: nothing changed, and the session's
	// current token is still the successor the exchange made, with the
	// key CurrentKey.
	Repeat     bool
	CurrentKey string
	// Reuse says which superseded token came back, with ErrTokenReused.
	Reuse Reuse
	// RolesRead reports that Roles and Permissions are what
	// RoleStore.UserRoles(Rotation.RolesOf, the session's user) returns
	// as of the rotation, read in its step. A store may leave it false
	// for any rotation (one that did not exchange a current token, or a
	// store that does not read them together); the caller then reads them
	// with UserRoles.
	RolesRead          bool
	Roles, Permissions []string
}

// Store persists users and their logins, sessions, one-time tokens and
// signing keys. Its methods are grouped by concern in the interfaces it
// embeds.
//
// All methods are safe for concurrent use, take a context first, and report
// the errors of this package (possibly wrapped). A method that returns any
// other error has changed nothing, or everything it was asked to: never a
// part.
type Store interface {
	UserStore
	SessionStore
	TokenStore
	KeyStore

	// DeleteExpired removes sessions (ended ones included), codes,
	// signing keys, (for a RateLimitStore) rate-limit
	// entries, and any refresh tokens kept from before tokens named their
	// session, that have expired at now. Applications call it on a schedule of their
	// choosing; correctness never depends on it, only storage size.
	DeleteExpired(ctx context.Context, now time.Time) error
}

// UserStore keeps users and their logins. A user has one or more logins;
// each login's key, its tenant included, is unique across all users.
// Ownership of an email (Login.OwnsEmail) is per tenant: every mention
// of another login that owns an email below means one of the same
// tenant.
type UserStore interface {
	// CreateUser adds u with its first login, first, in one step; the
	// store sets first.UserID to u.ID, and first.ID to u.ID if it is
	// empty. It returns ErrConflict if a user with u.ID, or a login with
	// first's key or ID, exists, and otherwise ErrEmailOwned if
	// first.OwnsEmail is set and another login owns first.Email; then
	// nothing is written. Of several concurrent calls with one login key
	// exactly one succeeds, and so of several that ask to own one email.
	CreateUser(ctx context.Context, u User, first Login) error

	// UserByID returns the user with the given id, or ErrNotFound.
	UserByID(ctx context.Context, id string) (User, error)

	// Login returns the login with key k, or ErrNotFound. The email and
	// password login of an email is Login(ctx, EmailPasswordKey(email)).
	Login(ctx context.Context, k LoginKey) (Login, error)

	// Logins returns the logins of a user, oldest (by CreatedAt) first:
	// its ways to sign in, without its MethodSecondFactors record, which
	// only Login finds (by SecondFactorsKey). An unknown user has none:
	// the result is empty and the error nil.
	Logins(ctx context.Context, userID string) ([]Login, error)

	// UserByLogin returns the user of the login with key k and the user's
	// logins as Logins returns them, the one with key k among them, read
	// in one step: a sign-in reads all it answers with at once. It returns
	// ErrNotFound if no login has key k, or if k is a SecondFactorsKey.
	UserByLogin(ctx context.Context, k LoginKey) (User, []Login, error)

	// LoginsByEmail returns the logins whose Email is email, of every
	// user and every tenant, oldest (by CreatedAt) first; none is an
	// empty result. Several users may share an email (see Login.Email).
	LoginsByEmail(ctx context.Context, email string) ([]Login, error)

	// SignInUp signs in or up with a third-party identity, in one step.
	// If a login with l's key exists, the store records the email the
	// provider now reports: Email becomes l.Email, and EmailVerified and
	// EmailProven become l's, or each stays true if the email is
	// unchanged (a verified address stays verified); if the email
	// changed, the login no longer owns one (OwnsEmail becomes false). It
	// returns the login as updated and false; l.OwnsEmail is ignored. Otherwise it
	// creates newUser with l as its first login, as CreateUser does
	// (OwnsEmail included), and returns l (with UserID and ID set) and
	// true. Of several concurrent calls with one key exactly one creates;
	// the others find its login. If the key is new it returns ErrConflict
	// if a user with newUser.ID or a login with l.ID exists, and
	// otherwise ErrEmailOwned as CreateUser does; then nothing is
	// written.
	SignInUp(ctx context.Context, l Login, newUser User) (Login, bool, error)

	// LinkLogin adds l to the existing user l.UserID, in one step, on
	// the condition account linking decided on, which it checks again:
	//
	//   - l.OwnsEmail unset: a login of l.UserID owns l.Email, so the
	//     login joins the user that owns its email; otherwise
	//     ErrNotFound.
	//   - l.OwnsEmail set (and l.EmailProven, or the request is ignored
	//     as above): no login owns l.Email, and l becomes its owner in
	//     the same step; otherwise ErrEmailOwned.
	//   - l.Email empty: the login has no address to join by or own (a
	//     passkey a signed-in user adds), and joins the user as it is.
	//
	// It returns ErrConflict, before anything else, if a login with l's
	// key or l.ID exists, and then ErrNotFound if the user does not
	// exist. On any error nothing is written.
	LinkLogin(ctx context.Context, l Login) error

	// AttachLogin adds l to the existing user l.UserID, in one step,
	// whatever its email: a login its user added while signed in, which
	// neither joins a user by its address nor owns it (l.OwnsEmail is
	// stored false), so that no other user's login is joined or evicted
	// by it. It returns ErrConflict if a login with l's key or l.ID
	// exists, and then ErrNotFound if the user does not exist; on any
	// error nothing is written.
	AttachLogin(ctx context.Context, l Login) error

	// ClaimEmail makes the login with the given id own its email, in one
	// step, if its email is proven and no login of another user owns it,
	// and returns the login as updated. If a login of the same user owns
	// it already, nothing changes and the login is returned as it is. It
	// returns ErrEmailOwned if a login of another user owns it, and
	// ErrNotFound if there is no such login, it has no email or its email
	// is not proven (Login.EmailProven); then nothing changes.
	ClaimEmail(ctx context.Context, loginID string) (Login, error)

	// SetEmailVerified records whether the email of the login with the
	// given id belongs to its user, as the application vouches: it sets
	// EmailVerified and EmailProven to verified (an unproven login no
	// longer owns its email), and returns the login as updated, or
	// ErrNotFound. Marking it verified voids the login's CodeVerification
	// tokens, which have nothing left to do.
	SetEmailVerified(ctx context.Context, loginID string, verified bool) (Login, error)

	// DeleteLogin removes the login with the given id from its user, ends
	// the sessions it started (Session.LoginID, EndRevoked) and removes the
	// codes bound to it, in one step, and returns the handles of the
	// sessions it ended. It returns ErrLastLogin if the login is its
	// user's only way to sign in (a MethodSecondFactors record is none),
	// and ErrNotFound if there is no such login; then nothing changes.
	// The other logins of the user are unchanged.
	DeleteLogin(ctx context.Context, loginID string) ([]string, error)

	// DeleteUser removes a user and everything the store keeps of it, in
	// one step: its logins, sessions (ended ones included), refresh
	// tokens and codes. It returns the handles of the
	// sessions that had not ended, or ErrNotFound if there is no such
	// user. Every token of
	// the user stops working at once, and a session authorised before
	// the deletion can no longer be created (CreateSession reports
	// ErrNotFound). A store that is a RoleStore also takes from the user
	// every role it holds, in every tenant, and one that is a TenantStore
	// forgets the user's memberships.
	DeleteUser(ctx context.Context, userID string) ([]string, error)

	// UpdatePasswordHash replaces the password hash of the user's email
	// and password login, or returns ErrNotFound if the user has none. It
	// is used to upgrade hashes made with old parameters. It succeeds only
	// if the stored hash still equals oldHash, so an upgrade never
	// overwrites a password changed in the meantime; otherwise it returns
	// ErrConflict. Like every change of the hash, it voids the user's
	// outstanding CodeReset codes.
	UpdatePasswordHash(ctx context.Context, userID, oldHash, newHash string) error

	// UpdateLoginMaterial sets the Material of the login with the given
	// id to new if it is still old (nil and empty are the same), in one
	// atomic step. It returns ErrConflict if it is not, and ErrNotFound if
	// there is no such login; then nothing changes. Of several concurrent
	// calls with the same old, at most one succeeds.
	UpdateLoginMaterial(ctx context.Context, loginID string, old, new []byte) error
}

// TokenStore keeps one-time codes (Code): password reset and email
// verification tokens, passwordless flows and their codes.
type TokenStore interface {
	// CreateCode adds c. For a CodePasswordlessFlow, UserID and LoginID
	// are empty and Attempts is stored as zero. A CodePasskeyOptions may
	// have no user; if it names one (UserID), the user must exist. For a CodePasswordless,
	// c.Flow must be a flow that has not expired at c.CreatedAt; the
	// store sets c.Email to the flow's, and the code is stored as given
	// otherwise. For the other kinds, when c.LoginID is set, the login
	// must exist and still have the address c.Email, and c.UserID, if not
	// empty, must be its user (the store sets it when empty); otherwise
	// the user c.UserID must exist. It returns ErrNotFound if not, and
	// ErrConflict if a code with c's hash exists, of any kind; then
	// nothing is written.
	CreateCode(ctx context.Context, c Code) error

	// Code returns the code of the given kind and hash if it exists and
	// has not expired at now, and ErrNotFound otherwise (a code of
	// another kind is not found). It changes nothing: it lets a
	// submission with an unknown code be refused before any costly work,
	// such as hashing a new password.
	Code(ctx context.Context, kind CodeKind, hash TokenHash, now time.Time) (Code, error)

	// ResetPassword uses up the CodeReset code with the given hash and sets
	// the password, in one atomic step. If the token exists, has not been
	// used and has not expired at now, and its user has an email and
	// password login, the store sets that login's password hash to
	// passwordHash and marks its email verified and proven (the token was
	// sent to it, and whoever opened it chose the password that now opens
	// the login), deletes every CodeReset code of the
	// user (this one included, so it works once), ends every session of
	// the user (EndPasswordReset) and advances its SessionEpoch, and returns the login as
	// updated and the handles of the revoked sessions. Otherwise it returns ErrNotFound and changes nothing. Of
	// several concurrent calls with one token at most one succeeds.
	//
	// If the login's email was not proven before (EmailProven false), the
	// reset is the address's owner taking back an account that whoever
	// chose the password may have made: in the same step the store
	// deletes every passkey login of the user (MethodWebAuthn), whatever
	// its email, with the codes bound to them, as DeleteLogin deletes a
	// login. A passkey that person added would otherwise open the account
	// after the owner's reset; a passkey recovery by mailed link drops
	// every earlier passkey likewise. No other login changes: the user's
	// provider and passwordless logins, and its record of second factors,
	// stay. If the email was proven before, no other login changes.
	ResetPassword(ctx context.Context, token TokenHash, passwordHash string, now time.Time) (Login, []string, error)

	// VerifyEmail uses up the CodeVerification code with the given hash, in
	// one atomic step. If the token exists and has not expired at now,
	// and its login still has the token's email, the store marks that
	// email verified (not proven: whoever opened the link reads the
	// inbox, but need not hold the login), deletes every CodeVerification
	// code of the login (this one included, so it works once) and returns
	// the login as updated. Otherwise it returns ErrNotFound and changes
	// nothing. Of several concurrent calls with one token at most one
	// succeeds.
	VerifyEmail(ctx context.Context, token TokenHash, now time.Time) (Login, error)

	// UsePasswordlessCode spends the CodePasswordless code with hash code
	// on the CodePasswordlessFlow with hash flow, in one atomic step, and
	// returns the flow as it is after the step. The outcomes:
	//
	//   - The flow does not exist or has expired at now: ErrNotFound, and
	//     nothing changes.
	//   - code is a code of the flow that has not expired at now: the
	//     store deletes every flow whose Email is the flow's, with all of
	//     their codes (so this one works once), and returns the flow and
	//     nil.
	//   - Otherwise (code is unknown, of another flow, or expired): if
	//     maxAttempts is positive, the flow's Attempts grows by one, and
	//     when it reaches maxAttempts the flow is deleted with its codes;
	//     with a maxAttempts of zero nothing changes. It returns the flow
	//     with its Attempts, and ErrCodeExpired if code is an expired code
	//     of the flow, ErrWrongCode if not.
	//
	// Of several concurrent calls with one code at most one succeeds, and
	// concurrent wrong codes are each counted.
	UsePasswordlessCode(ctx context.Context, flow, code TokenHash, now time.Time, maxAttempts int) (Code, error)

	// UseCeremony uses up the CodePasskeyOptions or CodePasskeyRecovery
	// code of the given kind and hash, in one atomic step, and returns it
	// as it was: it deletes the code (for a CodePasskeyRecovery, every
	// recovery code with its Email, so a link works once and makes the
	// others void) and, when update is not nil, sets the Material of the
	// login update.LoginID to update.New. It returns ErrNotFound if no
	// such code exists or it has expired at now, or if update names a
	// login that does not exist, and ErrConflict if that login's
	// Material is not update.Old (a passkey's counter moved meanwhile);
	// then nothing changes. Of several concurrent calls with one code at
	// most one succeeds.
	UseCeremony(ctx context.Context, kind CodeKind, hash TokenHash, now time.Time, update *MaterialUpdate) (Code, error)

	// ChangeEmail uses up the CodeEmailChange or CodeEmailRevert code of
	// the given kind and hash and moves its user from one address to
	// another, in one atomic step, and returns the code as it was and
	// the logins as updated. The address moved from is the code's Data,
	// the one moved to its Email, to which the link was sent. The logins
	// moved are the user's email and password, passwordless and passkey
	// logins whose Email is the one moved from (a provider's login keeps
	// the address the provider gives). Each gets the new Email, verified
	// (whoever opened the link reads the inbox) but not proven, and its
	// key follows for the kinds keyed by address; a login that owned the
	// old address stops owning it, and none owns the new one. The store
	// then deletes every CodeEmailChange code of the user (this one
	// included, so it works once), the user's CodeReset and
	// CodePasskeyRecovery codes and the moved logins' CodeVerification
	// codes, which were mailed to an address the user no longer has; a
	// revert deletes the user's CodeEmailRevert codes too. It returns ErrNotFound, and changes
	// nothing, if the code does not exist, has expired at now or no
	// login of the user has the old address; ErrEmailOwned if a login of
	// another user has the new address (whether or not it owns it); and
	// ErrConflict if a moved login's new key is taken. Of several
	// concurrent calls with one code at most one succeeds.
	ChangeEmail(ctx context.Context, kind CodeKind, hash TokenHash, now time.Time) (Code, []Login, error)
}

// A MaterialUpdate asks UseCeremony to compare and swap a login's
// Material: a passkey's new sign counter, written only if nobody wrote
// another since Old was read.
type MaterialUpdate struct {
	LoginID string
	Old     []byte
	New     []byte
}

// SessionStore keeps sessions, each with its current refresh token.
//
// A session that ends (RevokeSession, RevokeUserSessions, ResetPassword,
// DeleteLogin, theft) leaves a record of why until it would have expired,
// so that a token of it presented later is told apart from one the store
// never knew (EndedError). An ended session is found by no method but as
// that error.
type SessionStore interface {
	// CreateSession adds s, at generation 0, with refresh as its current
	// refresh token (s.LoginID, if empty, becomes s.UserID; s.Generation
	// is ignored), if the SessionEpoch of s's user is still epoch: the
	// epoch read with the credential that authorised the session. The
	// check and the insert are one atomic step with respect to
	// ResetPassword and RevokeUserSessions. It returns ErrSessionsEnded if
	// the epoch has passed, ErrConflict if the handle exists, and
	// ErrNotFound if the user does not; then nothing is written.
	CreateSession(ctx context.Context, s Session, refresh TokenHash, epoch int64) error

	// Session returns the session with the given handle if it is live at
	// now, and otherwise ErrNotFound or an EndedError.
	Session(ctx context.Context, handle string, now time.Time) (Session, error)

	// UserSessions returns the live sessions of a user at now, newest (by
	// CreatedAt) first. A user without sessions, or an unknown user, has
	// none: the result is empty and the error nil.
	UserSessions(ctx context.Context, userID string, now time.Time) ([]Session, error)

	// RotateRefreshToken exchanges the session's current refresh token
	// for r.Next in one atomic step. The store keeps a fixed amount per
	// session, whatever the number of exchanges. The outcomes, for the
	// session r.Handle:
	//
	//   - It is live at r.Now and r.Presented is its current token: r.Next
	//     (made with r.NextKey) becomes the current token, the generation
	//     advances by one, the exchange's time is r.Now, RefreshedAt is
	//     set to r.Now and ExpiresAt to r.ExpiresAt. The updated session
	//     is returned.
	//   - It is live, r.Generation is one behind the session's, r.ReuseWindow
	//     is positive and the last exchange was less than r.ReuseWindow
	//     before r.Now: Repeat, with the current token's key, and nothing
	//     changes, so retries never extend the window and there is still
	//     exactly one current token. (If the current token has no key, being
	//     of the format before tokens named their session, nobody can make
	//     it again: ErrNotFound, and nothing changes.)
	//   - It is live and r.Generation is behind the session's (any other
	//     case): the session ends (EndTokenTheft), and the store returns
	//     the session as it was and the kind of Reuse, with ErrTokenReused.
	//   - It has ended or expired: an EndedError, and nothing changes.
	//   - It does not exist, or r.Generation is not behind the session's
	//     and r.Presented is not its current token: ErrNotFound, and
	//     nothing changes. A token the store cannot place never harms a
	//     session.
	//   - r.Presented would take the first branch, but the session has
	//     spent its allowance of r.Burst and r.Every: ErrRateLimited, and
	//     nothing changes. A superseded token is theft whatever the
	//     allowance.
	//
	// When r.Handle is empty, the store looks r.Presented up among the
	// refresh tokens it kept from before tokens named their session. If it
	// has none, or the token has expired, the result is ErrNotFound. If the
	// token is its session's current one, the first branch applies; if it
	// is the session's previous one, it counts as one generation behind;
	// any other is ReuseStale. Stores that never held such tokens always
	// answer ErrNotFound.
	//
	// Of several concurrent calls with the same current token exactly one
	// takes the first branch.
	RotateRefreshToken(ctx context.Context, r Rotation) (Rotated, error)

	// RevokeSession ends a session for the given reason, whether or not
	// it has expired. It returns ErrNotFound if there is no such session or
	// it has ended already. Its tokens stop working at once.
	RevokeSession(ctx context.Context, handle string, why EndReason) error

	// RevokeUserSessions ends every session of a user that has not ended
	// (EndRevoked; it takes no time, so expired sessions not yet removed
	// are ended and reported too), advances its SessionEpoch in the same
	// step, so that no sign-in already in flight can start a session
	// after it, and returns the handles it ended (none for an unknown
	// user).
	RevokeUserSessions(ctx context.Context, userID string) ([]string, error)

	// UpdateSessionFactors sets the Factors of the session handle to new
	// if they are still old (nil and empty are the same), in one atomic
	// step. It returns ErrConflict if they are not, an EndedError if the
	// session has ended or expired at now, and ErrNotFound if there is no
	// such session; then nothing changes. Of several concurrent calls
	// with the same old, at most one succeeds.
	UpdateSessionFactors(ctx context.Context, handle string, old, new []byte, now time.Time) error
}

// KeyStore keeps the keys that sign access and refresh tokens.
type KeyStore interface {
	// SigningKeys returns the keys whose VerifyUntil is after now, newest
	// first.
	SigningKeys(ctx context.Context, now time.Time) ([]SigningKey, error)

	// AddSigningKey adds k, or returns ErrConflict if its ID exists.
	AddSigningKey(ctx context.Context, k SigningKey) error
}

// LegacyTokenStore is implemented by stores that kept refresh tokens of
// the format before tokens named their session (random strings, one record
// each), so that the sessions those tokens belong to keep working. It is
// optional: a store that never held such tokens need not implement it.
type LegacyTokenStore interface {
	// LegacyTokenSession returns the handle of the session a kept token
	// belongs to, whether current or superseded, or ErrNotFound if the
	// store kept no such token or it has expired at now. It changes
	// nothing; RotateRefreshToken with an empty Handle then exchanges it.
	LegacyTokenSession(ctx context.Context, token TokenHash, now time.Time) (string, error)
}

// RateLimitStore is implemented by stores that can hold the rate-limit
// state of the auth library, so that every instance of an application
// counts the same attempts: auth.New uses it by default
// (auth.NewStoreLimiter). It is optional: without it the library counts
// in memory, per process. Keys are opaque strings of at most
// 64 bytes. Entries whose time has passed are worth nothing; writes prune
// them (see TakeRateLimit) and DeleteExpired removes them.
type RateLimitStore interface {
	// RateLimit returns the time recorded for key, or the zero time if
	// there is none.
	RateLimit(ctx context.Context, key string) (time.Time, error)

	// TakeRateLimit counts an attempt for key if its allowance has one
	// left, in one atomic step. The allowance has one left if key has no
	// time recorded or its time is at most now plus burst-1 intervals of
	// every; then the store sets the time to the later of the recorded
	// time and now, plus every, and reports true. Otherwise it changes
	// nothing and reports false and the recorded time. Of any number of
	// concurrent calls on a key with no time recorded, exactly burst
	// report true. At least once a minute (of now), a call also removes
	// the entries whose time has passed, so the store holds little more
	// than the allowances still counting between DeleteExpired runs.
	TakeRateLimit(ctx context.Context, key string, every time.Duration, burst int, now time.Time) (bool, time.Time, error)

	// RefundRateLimit takes every off key's recorded time, giving back an
	// attempt TakeRateLimit counted, in one atomic step. A missing key is
	// not an error.
	RefundRateLimit(ctx context.Context, key string, every time.Duration) error

	// ResetRateLimit forgets key. Forgetting a missing key is not an
	// error.
	ResetRateLimit(ctx context.Context, key string) error

	// RateLimits returns the times recorded for keys, in their order, the
	// zero time for a key with none, in one read: what RateLimit returns
	// for each, for the cost of one.
	RateLimits(ctx context.Context, keys []string) ([]time.Time, error)

	// SpendRateLimits counts an attempt for each of spends whatever its
	// allowance has left, in one atomic step: it sets each key's time to
	// the later of its recorded time and now, plus its Every. The keys
	// are distinct. Like TakeRateLimit, a call removes the entries whose
	// time has passed at least once a minute. The auth library counts a
	// failed sign-in with it, once the password is checked: an instance
	// bounds its own concurrent attempts in memory, and reads what every
	// instance has spent with RateLimits before the check.
	SpendRateLimits(ctx context.Context, spends []RateLimitSpend, now time.Time) error
}

// RateLimitSpend is one attempt for SpendRateLimits to count: Key's time
// moves on by Every.
type RateLimitSpend struct {
	Key   string
	Every time.Duration
}

// Banner keeps bans, for operators. It is optional: banning needs a Store
// that implements it (memstore and sqlstore do).
//
// A Banner's CreateSession refuses, with ErrBanned, a session whose user
// is banned at the session's RefreshedAt (the moment it starts), in the
// same step as its check of the epoch: a sign-in in flight when the ban
// is made either started its session before, and the ban ends it, or
// finds the ban. Nothing else of the user changes: their logins, factors
// and roles stay as they were, and lifting the ban gives back none of the
// sessions it ended.
type Banner interface {
	// BanUser records b as the user's ban, replacing any before, and in
	// the same step ends every session of the user (EndBanned) and
	// advances the user's SessionEpoch; it returns the ended sessions'
	// handles. ErrNotFound if there is no such user.
	BanUser(ctx context.Context, userID string, b Ban) ([]string, error)

	// UnbanUser lifts the user's ban and returns the ban it lifted, the
	// zero Ban if there was none (one that had run out is lifted too).
	// ErrNotFound if there is no such user.
	UnbanUser(ctx context.Context, userID string) (Ban, error)
}

// AuditLog keeps the security events of an application (sign-ins and
// their failures, changes to logins, factors and roles, bans, operators'
// actions), for operators to read by user and by actor. It is optional:
// the audit log needs a Store that implements it (memstore and sqlstore
// do). Entries are never changed; PruneAudit removes the old ones.
type AuditLog interface {
	// AppendAudit records the entries, each under an ID of its own
	// that the store assigns (the entries' IDs are ignored).
	AppendAudit(ctx context.Context, entries []AuditEntry) error

	// ListAudit returns the page of entries q asks for, newest first, and
	// the cursor of the next one. ErrBadCursor if q.After is not a cursor
	// that ListAudit returned.
	ListAudit(ctx context.Context, q AuditQuery) (AuditPage, error)

	// PruneAudit removes the entries from before t and returns how many
	// it removed.
	PruneAudit(ctx context.Context, t time.Time) (int64, error)
}

// An AuditEntry is one security event. It holds no secret: no password,
// token, code or key, only who, what, when and from where.
type AuditEntry struct {
	// ID is the entry's id, unique in the log, which the store assigns.
	ID int64
	// Time is when it happened.
	Time time.Time
	// Kind is what happened: an auth.EventKind ("sign_in", ...).
	Kind string
	// UserID is the user it happened to, "" when no user is known (a
	// failed sign-in with an unknown address).
	UserID string
	// Actor is who did it: an operator acting on the user or as the
	// user, else the user of the request it happened in; "" for the
	// application's own call of its Go API, or a request with no user.
	Actor string
	// SessionHandle is the session it happened in, or to.
	SessionHandle string
	// Method and ThirdPartyID are the login method or factor it is
	// about, as auth.Event has them.
	Method, ThirdPartyID string
	// Reason says why a session was refused or ended.
	Reason string
	// Role is the role given, taken, created, changed or deleted.
	Role string
	// RemoteAddr and UserAgent are the client's, for an event of a
	// request.
	RemoteAddr, UserAgent string
}

// AuditQuery asks for a page of the audit log, newest first. UserID and
// Actor, when set, keep only the entries of that user, or by that actor.
type AuditQuery struct {
	UserID, Actor string
	// After is AuditPage.Next of the page before, "" for the first page.
	After string
	// Limit is the most entries a page holds: DefaultUserPage when zero
	// or less, at most MaxUserPage.
	Limit int
}

// PageSize is the number of entries a page of q holds at most.
func (q AuditQuery) PageSize() int { return pageSize(q.Limit) }

// AuditPage is a page of the audit log.
type AuditPage struct {
	Entries []AuditEntry
	// Next is the cursor of the next page (AuditQuery.After), or "" if
	// no entry came after this page when it was read.
	Next string
}

// AuditCursor is the cursor of a page that ends with the entry of id, for
// stores that list by id, newest first; ParseAuditCursor reads it back,
// or returns ErrBadCursor.
func AuditCursor(id int64) string { return "a" + strconv.FormatInt(id, 10) }

// ParseAuditCursor reads a cursor that AuditCursor made.
func ParseAuditCursor(c string) (int64, error) {
	rest, ok := strings.CutPrefix(c, "a")
	id, err := strconv.ParseInt(rest, 10, 64)
	if !ok || err != nil || id <= 0 || AuditCursor(id) != c {
		return 0, ErrBadCursor
	}
	return id, nil
}

// UserLister lists and counts users, for operators. It is optional: the
// operators' API needs a Store that implements it (memstore and sqlstore
// do).
//
// Users are listed in the order they joined, oldest or newest first, ties
// in TimeJoined (to the millisecond, what SQL stores keep) broken by ID in
// the store's order of ids. A page resumes after the last user of the page
// before (a cursor, not an offset), so users who sign up or are deleted
// while an operator pages never make another user appear twice or go
// missing: every user who exists throughout the paging is listed exactly
// once. New users join at the newest end, as their TimeJoined is now.
//
// The filters of a UserQuery match users by their logins, and all the
// given ones must match (several logins of a user may match different
// ones).
type UserLister interface {
	// ListUsers returns the page of users q asks for, and the cursor of
	// the next one. ErrBadCursor if q.After is not a cursor that ListUsers
	// returned.
	ListUsers(ctx context.Context, q UserQuery) (UserPage, error)

	// CountUsers counts the users that q's filters match; its paging
	// fields are ignored.
	CountUsers(ctx context.Context, q UserQuery) (int64, error)
}

// Page sizes of ListUsers: a UserQuery.Limit at or below zero asks for
// DefaultUserPage users, one above MaxUserPage for MaxUserPage.
const (
	DefaultUserPage = 100
	MaxUserPage     = 1000
)

// UserQuery asks for a page of users.
type UserQuery struct {
	// Newest lists the newest users first; otherwise the oldest come
	// first. The pages of one paging must all ask for the same order,
	// as a cursor only says where the last page ended.
	Newest bool
	// After is UserPage.Next of the page before, "" for the first page.
	After string
	// Limit is the most users a page holds: see PageSize.
	Limit int

	// Email, if not "", matches the users with a login whose email
	// contains it, case-insensitively. Stored emails are normalised
	// (lower-cased), so SQL stores lower-case Email and match it as it
	// is: a substring can use no index, and the stores check it while
	// walking users in order, which stays cheap when many users match.
	// A substring rather than a prefix, because operators search by
	// domain as often as by name.
	Email string
	// Provider, if not "", matches the users with a third-party login
	// (MethodThirdParty) of this provider id (LoginKey.ThirdParty),
	// exactly.
	Provider string
	// Phone, if not "", matches the users with a passwordless login of
	// a phone number that contains it.
	Phone string
	// Tenant, if not "", matches the users who belong to the tenant
	// with this id: PublicTenant for the users with a login in the public
	// tenant, another id for the members of that tenant (TenantStore).
	Tenant string
}

// PageSize is the number of users a page of q holds at most: Limit,
// within 1 and MaxUserPage, or DefaultUserPage if it is not positive.
func (q UserQuery) PageSize() int { return pageSize(q.Limit) }

func pageSize(limit int) int {
	switch {
	case limit <= 0:
		return DefaultUserPage
	case limit > MaxUserPage:
		return MaxUserPage
	}
	return limit
}

// UserPage is a page of users.
type UserPage struct {
	// Users are the users of the page, in the order asked for.
	Users []User
	// Next is the cursor of the next page (UserQuery.After), or "" if no
	// user came after this page when it was read.
	Next string
}

// UserCursor is the cursor of a page that ends with u, for stores that
// implement UserLister: u's TimeJoined in milliseconds and its ID, in an
// encoding callers should treat as opaque.
func UserCursor(u User) string {
	b := binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(u.ID)), uint64(u.TimeJoined.UnixMilli()))
	return base64.RawURLEncoding.EncodeToString(append(b, u.ID...))
}

// ParseUserCursor reads a cursor that UserCursor made: the TimeJoined in
// milliseconds and the ID of the user it ends after, or ErrBadCursor.
func ParseUserCursor(cursor string) (joinedMS int64, id string, err error) {
	b, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil || len(b) <= 8 {
		// Not echoed: a cursor comes from outside and may be anything.
		return 0, "", ErrBadCursor
	}
	return int64(binary.BigEndian.Uint64(b)), string(b[8:]), nil
}
