// Package kit is what the kernel, package auth, offers the recipes: the
// one seam through which a recipe in a package of its own serves its
// routes, reads the session of a request, takes allowances, sends mail
// and reports events. A recipe imports kit, never package auth and never
// another recipe; package auth builds each recipe that its Config turns
// on, handing it a Kernel, and mounts the routes the recipe returns.
//
// A recipe never starts or rewrites a session itself: the kernel owns
// tokens, claims and the one sign-in path, so that a recipe added later
// cannot issue a token that skips a check.
package kit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/latchkit/auth/internal/address"
	"github.com/latchkit/auth/mailer"
	"github.com/latchkit/auth/provider"
	"github.com/latchkit/auth/store"
)

// Kernel is the kernel as a recipe sees it.
type Kernel interface {
	Store() store.Store
	Now() time.Time
	Logger() *slog.Logger

	// ReadJSON decodes the JSON body of a request into v, within the
	// kernel's bound on a body's size; ReadOptionalJSON accepts an empty
	// body too.
	ReadJSON(w http.ResponseWriter, r *http.Request, v any) error
	ReadOptionalJSON(w http.ResponseWriter, r *http.Request, v any) error
	// Fail answers a request with the protocol's answer for err.
	Fail(w http.ResponseWriter, r *http.Request, err error)

	// Session verifies the session of a request without holding it to
	// any claim. When that fails it answers the request itself (clearing
	// the tokens of a session that has ended) and returns false.
	Session(w http.ResponseWriter, r *http.Request) (Session, bool)
	// SessionLogin is Session that reads the login the session was
	// started with too.
	SessionLogin(w http.ResponseWriter, r *http.Request) (Session, store.Login, bool)
	// OptionalSession is Session for a request that may come without a
	// session: nil then. It reads no login.
	OptionalSession(w http.ResponseWriter, r *http.Request) (Session, bool)
	// SetEmailClaim writes verified into the email claim (st-ev) of the
	// session's token, in a new access token on w, unless the token says
	// so already and always is false.
	SetEmailClaim(ctx context.Context, w http.ResponseWriter, s Session, verified, always bool) error
	// EmailVerified records, for account linking, that l's email was
	// just verified.
	EmailVerified(ctx context.Context, l store.Login)

	// Take takes one from each allowance, in order. If one is spent, it
	// gives back those it took and returns how long that one must wait.
	Take(ctx context.Context, limits ...Limit) time.Duration

	// Enqueue runs job off the request's path, in the kernel's outbox;
	// kind names it in logs ("verification"). The job's context has the
	// values of ctx (a request's trace, say) but not its end: the job
	// outlives the request, until the outbox closes.
	Enqueue(ctx context.Context, kind string, job func(context.Context))
	// Mail renders t with data for to and sends it through the outbox's
	// delivery; its error names the step that failed, for MailFailed.
	Mail(ctx context.Context, t *mailer.Template, to string, data any) error
	// MailFailed logs and reports an email of kind that was not sent.
	MailFailed(ctx context.Context, kind, userID, step string, err error)

	// Emit logs an event and passes it to the application's hook; r is
	// the request it happened in, or nil.
	Emit(ctx context.Context, r *http.Request, e Event)

	// ReadSignInRequest reads the JSON body of a sign-in request into
	// req, or answers the request itself and returns false.
	ReadSignInRequest(w http.ResponseWriter, r *http.Request, req SignInRequest) bool
	// SignIn signs in, or up, the holder of s.Login: the factor must be
	// one that may start a session; account linking joins the user who
	// owns the email where it may; the session starts through the one
	// sign-in path, with its claims and events. It answers the request.
	SignIn(w http.ResponseWriter, r *http.Request, s SignIn)
	// LookupParam reads the one query parameter of an exists endpoint,
	// and spends a lookup of the client's allowance, or answers the
	// request itself and returns false.
	LookupParam(w http.ResponseWriter, r *http.Request, name string) (string, bool)
	// WriteExists answers an exists endpoint: whether the login with key
	// exists, which for an address that is not well-formed (valid false)
	// it does not.
	WriteExists(w http.ResponseWriter, r *http.Request, key store.LoginKey, valid bool)
	// Client names the client of a request for its allowances: its
	// address, or its IPv6 network.
	Client(r *http.Request) string
	// Refund gives back one to each allowance.
	Refund(ctx context.Context, limits ...Limit)
	// Retry calls send with the outbox's timeout and retries, for a
	// message the recipe sends itself (a text message).
	Retry(ctx context.Context, send func(context.Context) error) error

	// SignedIn starts a session for the holder of p.Login, a login that
	// exists and has just proved itself, unless account linking refuses
	// it; a reset may have proved its email, which it then claims, as a
	// provider's sign-in would. It answers the request.
	SignedIn(w http.ResponseWriter, r *http.Request, p Proven)

	// FactorSession verifies the session of a request, as a session that
	// sets up or completes a second factor, and reads its user's logins
	// and second factors, or answers the request itself.
	FactorSession(w http.ResponseWriter, r *http.Request) (FactorSession, bool)
	// FactorAdded records that l, just added to the session's user, is a
	// second factor from now on: it holds the user's other sessions to
	// it, as a TOTP device set up does.
	FactorAdded(r *http.Request, s FactorSession, l store.Login)
	// CompleteFactor completes factor in the session s, with a new access
	// token on w, and answers OK, or, with by, the user signed in by by,
	// as the SDKs' sign-in answers.
	CompleteFactor(w http.ResponseWriter, r *http.Request, s FactorSession, factor string, by *store.Login)
	// RemoveLogin removes the login loginID of user userID and ends the
	// sessions it started. Its errors: store.ErrNotFound, store.ErrLastLogin
	// and ErrLastFactor.
	RemoveLogin(ctx context.Context, r *http.Request, userID, loginID string) error
	// Evict voids the unproven login l with an address the user's holder
	// has proven: the account model's step for a login a stranger may
	// have made.
	Evict(ctx context.Context, r *http.Request, l store.Login) error

	// QueueAccountEmail answers a request for an email of kind
	// ("reset", "passkey recovery") to email, which send, off the request path,
	// looks up and mails: the answer is the same, and as fast, whoever
	// the address belongs to. The client's and the address's allowances
	// are the kernel's.
	QueueAccountEmail(w http.ResponseWriter, r *http.Request, kind, email string, send func(context.Context, string))
	// AnswerExists answers an exists endpoint with what found reports,
	// or false without asking for an address that is not well-formed
	// (valid false).
	AnswerExists(w http.ResponseWriter, r *http.Request, valid bool, found func(context.Context) (bool, error))

	// FirstFactors declares, while the recipe is built, the factors with
	// which it starts sessions, in the order GET /loginmethods lists
	// them: what auth.Config.MFA.FirstFactors may name, and its default.
	FirstFactors(factors ...string)

	// RegisterClaim adds c to every access token and its check to every
	// RequireSession, while the recipe is built; it fails past the
	// kernel's bound on claims, or for a name that is taken.
	RegisterClaim(c Claim) error
	// RolesWithRotation asks, while the recipe is built, that each
	// refresh read the user's roles and permissions in tenant in the
	// rotation's own trip to the store, where the store can
	// (store.Rotation's RolesOf): the claims then find them in the
	// token's Reading under RotationRoles.
	RolesWithRotation(tenant string)

	// FirstFactorAllowed reports whether factor may start a session in
	// the request's tenant, or answers the request itself (401) and
	// returns false.
	FirstFactorAllowed(w http.ResponseWriter, r *http.Request, factor string) bool
	// FirstUse reports whether key is seen for the first time in the last
	// memory, across every instance sharing the limiter, and remembers
	// it. A limiter that cannot say is logged and counts as a repeat: the
	// check fails closed.
	FirstUse(ctx context.Context, key string, memory time.Duration) bool
	// MACKey is a key for purpose, derived from the current access-token
	// signing key so that it is never a token's key, with that key's id;
	// MACKeyByID is the key of id, while the keyring still verifies with
	// it.
	MACKey(ctx context.Context, purpose string) (id string, key []byte, err error)
	MACKeyByID(ctx context.Context, id, purpose string) ([]byte, bool)
	// ReadForm parses the form body of a request, within the kernel's
	// bound on a body's size, or answers the request itself (413, or 400
	// with msg) and returns false.
	ReadForm(w http.ResponseWriter, r *http.Request, msg string) bool

	// The password steps, which are the kernel's because its rate limits,
	// account linking and metrics hold them.

	// TakeSignIn takes a password sign-in attempt for email, from the
	// request's client, from the kernel's allowances of failed sign-ins,
	// before the password is checked; or returns how long to wait,
	// having taken nothing. settle ends the attempt once its outcome is
	// known: a failure stays counted, anything else is given back, and a
	// success forgets the failures for the email from that client.
	TakeSignIn(r *http.Request, email string) (settle func(AttemptOutcome), wait time.Duration)
	// SignUpAllowed reports whether a sign-up may create a user whose
	// login has email and proves no inbox (a password): under account
	// linking, not where another user owns or proves the address (then it
	// answers notAllowed with reason). It loads the signing key as well,
	// so that a store failure there cannot leave a new user without a
	// first session. When it returns false it has answered the request.
	SignUpAllowed(w http.ResponseWriter, r *http.Request, email, notAllowed, reason string) bool
	// ObserveHashWait reports how long a password hash waited for a
	// slot to the application's metrics.
	ObserveHashWait(d time.Duration)

	// The account's own routes: changes a signed-in user makes to their
	// account.

	// AccountSession verifies the session of a request to a route that
	// changes the account, which must have met its MFA requirement (or
	// is answered 403 st-mfa), and reads its user's logins; or answers
	// the request itself.
	AccountSession(w http.ResponseWriter, r *http.Request) (FactorSession, bool)
	// SignedInRecently reports whether the session s completed a factor
	// within auth.Config's FreshSignIn, or answers the request itself:
	// 403 with the fresh sign-in's "invalid claim" body (st-fresh).
	SignedInRecently(w http.ResponseWriter, r *http.Request, s Session) bool
	// AddressesVerified reports whether the user of s may gain a way in
	// that outlasts a password reset (a passkey, an authenticator app):
	// with email verification on, not while a login of theirs has an
	// address nobody verified; or answers the request itself, 403 with the
	// st-ev "invalid claim" body.
	AddressesVerified(w http.ResponseWriter, s FactorSession) bool
	// EndOtherSessions ends every session of s's user but s, in one step
	// with respect to sign-ins in flight, and answers OK: s goes on as a
	// new session, with the same login, factors and start, whose tokens
	// it writes on w.
	EndOtherSessions(w http.ResponseWriter, r *http.Request, s Session)

	// Operator is the kernel's side of the operators' API (operator.go).
	Operator() Operator

	// Tenant is the tenant the request of ctx is served in (or was, for
	// a job the request enqueued): the one its path names, or the public
	// tenant. Routes that act on a session act in the session's tenant
	// instead (Session.Tenant).
	Tenant(ctx context.Context) *Tenant
	// SessionTenant is the tenant of the session s.
	SessionTenant(ctx context.Context, s Session) *Tenant
}

// A Tenant is a tenant as the recipes see it (auth.Tenant).
type Tenant struct {
	// ID is the tenant's id, store.PublicTenant for the public tenant.
	ID string
	// FirstFactors are the factors that may start a session in it, nil
	// for the deployment's; RequiredSecondFactors the second factors each
	// of its users must complete.
	FirstFactors, RequiredSecondFactors []string
	// Providers are the providers its users sign in with.
	Providers []provider.Provider
	// EmailDomains are the domains of its people's addresses.
	EmailDomains []string
	// PasswordMinLength is the fewest characters of a new password there,
	// beside the deployment's policy; AccessTokenLifetime its sessions'
	// access tokens' lifetime, 0 for the deployment's.
	PasswordMinLength   int
	AccessTokenLifetime time.Duration
}

// Key is k in the tenant.
func (t *Tenant) Key(k store.LoginKey) store.LoginKey { return k.In(t.ID) }

// StoreID is the tenant's id as the store keeps it in a Code or Session:
// "" for the public tenant.
func (t *Tenant) StoreID() string { return store.LoginKey{}.In(t.ID).Tenant }

// Provider is the provider of the tenant's with the given id, or nil.
func (t *Tenant) Provider(id string) provider.Provider {
	for _, p := range t.Providers {
		if p.ID() == id {
			return p
		}
	}
	return nil
}

// AttemptOutcome is how a password sign-in attempt ended, for
// Kernel.TakeSignIn's settle.
type AttemptOutcome int

const (
	// AttemptAbandoned: it never got to its password (a store failure).
	AttemptAbandoned AttemptOutcome = iota
	// AttemptFailed: a wrong password, or an unknown email.
	AttemptFailed
	// AttemptSucceeded: the right password.
	AttemptSucceeded
)

// A Proven is a login that exists and has just proved itself (a password
// that checked out, a passkey's assertion), for
// Kernel.SignedIn.
type Proven struct {
	Login  store.Login
	Factor string // the factor it completes
	// User and Logins are the login's user and all the user's logins,
	// where the recipe read them already; with Logins nil the kernel
	// reads them.
	User   store.User
	Logins []store.Login
	// NotAllowed and Reason answer the request when account linking
	// refuses the login.
	NotAllowed, Reason string
}

// ErrOverloaded is the error a recipe hands Kernel.Fail for work turned
// away for lack of capacity (no password hashing slot in time): 503 with
// Retry-After.
var ErrOverloaded = errors.New("too many requests, try again shortly")

// A Session is the verified session of a request, as the kernel keeps it.
type Session interface {
	UserID() string
	// Tenant is the id of the tenant the session belongs to.
	Tenant() string
	// LoginID is the login method the session was started with.
	LoginID() string
	// FactorsPending reports whether MFA is on and the session has not
	// met its requirement yet.
	FactorsPending() bool
}

// A FactorSession is a session that sets up or completes a second
// factor, with its user's logins.
type FactorSession interface {
	Session
	Logins() []store.Login
	// MayAdd reports whether the session may set up factor now: with MFA
	// on, a session that has not met its requirement sets up only a
	// factor that would meet it.
	MayAdd(factor string) bool
}

// ErrUserGone reports that the user of a session is gone: Kernel.Fail
// answers it as a revoked session.
var ErrUserGone = errors.New("auth: the session's user is gone")

// ErrLastFactor reports that a login method or second factor was not
// removed because it is the user's last required second factor.
var ErrLastFactor = errors.New("auth: the user's last required second factor")

// Setup is what every recipe is built with, beside its own Config.
type Setup struct {
	AppURL             string // auth.Config's
	BasePath           string // auth.Config's: where the routes are served
	CanMail            bool   // whether auth.Config's Email has a Mailer
	DisableEmailExists bool   // auth.Config's: serve no exists endpoints
	AccountLinking     bool   // auth.Config's
	// FrontendOrigins are the origins of AppURL and AllowedOrigins.
	FrontendOrigins map[string]bool
	// InsecureHTTP is auth.Config's Cookie.InsecureAllowHTTP: http pages
	// on hosts other than loopback ones are the frontend's too.
	InsecureHTTP bool
	// CheckSessionInStore is auth.Config's: a claim's check reads the
	// store rather than trust a token's value.
	CheckSessionInStore bool
	// MFA is whether auth.Config's MFA is on, and PasskeyFactor whether
	// webauthn is among its factors.
	MFA, PasskeyFactor bool
	// Rates are auth.Config's RateLimits, by field name
	// ("ClientPasskeyCeremonies"), for a recipe built from a value of
	// its own package.
	Rates map[string]Rate
}

// OwnedWithin reports whether one of logins owns email.
func OwnedWithin(logins []store.Login, email string) bool {
	for _, l := range logins {
		if l.OwnsEmail && l.Email == email {
			return true
		}
	}
	return false
}

// HTTPURL parses s and reports whether it is an absolute http or https
// URL.
func HTTPURL(s string) (*url.URL, bool) {
	u, err := url.Parse(s)
	return u, err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// A Route is an endpoint a recipe serves under the base path.
type Route struct {
	Method string           // the one it serves; GET also answers HEAD
	Handle http.HandlerFunc // serves Method
	// Get, when set, serves GET (and HEAD) on a path whose Method is
	// another: the protocol puts two endpoints on one path.
	Get http.HandlerFunc
	// CrossSite exempts the route from the cross-origin check: a
	// provider's form_post callback comes from the provider's site.
	CrossSite bool
	// More serves further methods on the path, by method: the
	// dashboard's API puts up to three on one path.
	More map[string]http.HandlerFunc
}

// Rate is an allowance: Burst attempts at once, then one every Every.
type Rate struct {
	Burst int
	Every time.Duration
}

// A Limit is one allowance to take from: Key names whose (LimitKey makes
// one), Rate how much.
type Limit struct {
	Key  string
	Rate Rate
}

// LimitKey names an allowance of kind for parts (a user id, an address)
// without keeping emails or addresses in the limiter's state.
func LimitKey(kind string, parts ...string) string {
	h := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return kind + ":" + hex.EncodeToString(h[:16])
}

// An Event is what happened, for the application's hook: package auth
// reports it as an auth.Event of the same kind.
type Event struct {
	Kind          string
	UserID        string
	SessionHandle string
	Method        string // the login method, a store.Login's
	ThirdPartyID  string // the provider, for store.MethodThirdParty
	Role          string // the role given, taken, created, changed or deleted
}

type tenantIDKey struct{}

// WithTenantID is ctx naming the tenant that the calls made with it act
// in, other than the public one: the tenant of the session a claim's check
// (ClaimCheck) checks, of a protected handler's session, or the one an
// application names (auth.InTenant).
func WithTenantID(ctx context.Context, tenant string) context.Context {
	return context.WithValue(ctx, tenantIDKey{}, tenant)
}

// TenantIDOf is the tenant the calls made with ctx act in:
// store.PublicTenant unless WithTenantID named another.
func TenantIDOf(ctx context.Context) string {
	if t, ok := ctx.Value(tenantIDKey{}).(string); ok {
		return t
	}
	return store.PublicTenant
}

type operatorKey struct{}

// WithOperator is ctx naming the operator who acts through the calls made
// with it: the kernel's events of those calls name them.
func WithOperator(ctx context.Context, operator string) context.Context {
	return context.WithValue(ctx, operatorKey{}, operator)
}

// OperatorOf is the operator ctx names, or "".
func OperatorOf(ctx context.Context) string {
	op, _ := ctx.Value(operatorKey{}).(string)
	return op
}

// EventOf is an event of kind about the login l.
func EventOf(kind string, l store.Login) Event {
	return Event{Kind: kind, UserID: l.UserID, Method: l.Method, ThirdPartyID: ProviderOf(l)}
}

// ProviderOf is the provider of a third-party login, for an event's
// ThirdPartyID, or "" for a login of another method.
func ProviderOf(l store.Login) string {
	if l.Method != store.MethodThirdParty {
		return ""
	}
	return l.ThirdParty
}

// MustClone is a copy of a default email template, which is never
// executed and so always clones: what a Default...Email function hands
// out, so that no change made through one copy reaches another.
func MustClone(t mailer.Template) mailer.Template {
	c, err := t.Clone()
	if err != nil {
		panic(err)
	}
	return c
}

// The kinds of event the recipes report. Package auth names each as an
// auth.EventKind, where the list of every kind is documented.
const (
	EventSignUp                = "sign_up"
	EventSignInFailed          = "sign_in_failed"
	EventSignInThrottled       = "sign_in_throttled"
	EventEmailVerificationSent = "email_verification_sent"
	EventEmailVerified         = "email_verified"
	EventPasswordlessCodeSent  = "passwordless_code_sent"
	EventSessionRevoked        = "session_revoked"
	EventResetEmailSent        = "reset_email_sent"
	EventPasswordReset         = "password_reset"
	EventPasskeyAdded          = "passkey_added"
	EventPasskeyRemoved        = "passkey_removed"
	EventPasskeyCloneSuspected = "passkey_clone_suspected"
	EventFactorFailed          = "factor_failed"
	EventPasswordChanged       = "password_changed"
	EventEmailChanged          = "email_changed"
	EventEmailChangeUndone     = "email_change_undone"
	EventRoleGiven             = "role_given"
	EventRoleTaken             = "role_taken"
	EventRoleCreated           = "role_created"
	EventRoleChanged           = "role_changed"
	EventRoleDeleted           = "role_deleted"
)

// The factors a session can complete, named as the SDKs name them (the
// keys of the st-mfa claim's "c"). Package auth names each as
// auth.Factor...; FactorRecoveryCode is the library's own.
const (
	FactorEmailPassword = "emailpassword"
	FactorThirdParty    = "thirdparty"
	FactorOTPEmail      = "otp-email"
	FactorLinkEmail     = "link-email"
	FactorOTPPhone      = "otp-phone"
	FactorLinkPhone     = "link-phone"
	FactorWebAuthn      = "webauthn"
	FactorTOTP          = "totp"
	FactorRecoveryCode  = "recovery-code"
)

// FactorOf is the factor a sign-in with l completes: for passwordless,
// link tells a link from a typed code.
func FactorOf(l store.Login, link bool) string {
	switch l.Method {
	case store.MethodPasswordless:
		phone := address.IsPhone(l.Subject)
		switch {
		case phone && link:
			return FactorLinkPhone
		case phone:
			return FactorOTPPhone
		case link:
			return FactorLinkEmail
		}
		return FactorOTPEmail
	case store.MethodWebAuthn:
		return FactorWebAuthn
	case store.MethodThirdParty:
		return FactorThirdParty
	}
	return FactorEmailPassword
}

// LinkingField is shouldTryLinkingWithSessionUser, which the SDKs may send
// with the sign-in requests of third-party providers, passwordless and
// passkeys, as a boolean; Kernel.ReadSignInRequest refuses anything else.
// With a session, true adds the login of a provider or a passwordless
// address to the session's user (SignIn.LinkToSession); with MFA it
// registers or asserts a passkey as a second factor of the session's
// user, in that session.
type LinkingField struct {
	LinkSession json.RawMessage `json:"shouldTryLinkingWithSessionUser"`
}

// Linking is the field as sent, or nil.
func (f *LinkingField) Linking() json.RawMessage { return f.LinkSession }

// LinkRequested reports whether the field is true: the request asks to
// add its login to the session's user.
func (f *LinkingField) LinkRequested() bool { return string(f.LinkSession) == "true" }

// A SignInRequest is the body of a sign-in request: a struct that embeds
// LinkingField.
type SignInRequest interface{ Linking() json.RawMessage }

// A SignIn is a sign-in, or sign-up, that a recipe has checked: whoever
// sent the request holds Login.
type SignIn struct {
	// Login is the login as a sign-up would create it: its key, and its
	// email with what the sign-in proved of it (EmailVerified,
	// EmailProven).
	Login store.Login
	// LinkToSession is shouldTryLinkingWithSessionUser true: the login
	// is added to the user of the request's session instead, which must
	// have signed in recently, and no session starts.
	LinkToSession bool
	// Factor is the factor the sign-in completes (FactorOTPEmail, ...).
	Factor string
	// NotAllowed and Reason are the status and reason to answer when
	// account linking refuses the sign-in; an empty Reason is account
	// linking's own.
	NotAllowed, Reason string
	// What names the sign-in in an error: "signing in without a
	// password".
	What string
	// UserID is the id of the user a sign-up makes: default a new UUID.
	// A passkey's is the user handle it was registered under.
	UserID string
	// NoCreated leaves createdNewRecipeUser out of the answer, as the
	// SDKs' passkey sign-up has none.
	NoCreated bool
}

// InWords says a duration the way an email would: "1 hour", "30 minutes".
func InWords(d time.Duration) string {
	n, unit := int64(d/time.Second), "second"
	switch {
	case d >= 24*time.Hour && d%(24*time.Hour) == 0:
		n, unit = int64(d/(24*time.Hour)), "day"
	case d >= time.Hour && d%time.Hour == 0:
		n, unit = int64(d/time.Hour), "hour"
	case d >= time.Minute:
		n, unit = int64(d/time.Minute), "minute"
	}
	if n != 1 {
		unit += "s"
	}
	return strconv.FormatInt(n, 10) + " " + unit
}

// EmailVerified reports whether a login's email is known to be its
// user's. A login without an email has nothing to verify, and counts as
// verified, so that it is never locked out.
func EmailVerified(l store.Login) bool { return l.Email == "" || l.EmailVerified }
