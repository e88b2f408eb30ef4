package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/mail"
	"net/netip"
	"net/url"
	"runtime"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/latchkit/auth/internal/password"
	"github.com/latchkit/auth/mailer"
	"github.com/latchkit/auth/store"
)

// Defaults for the zero values of Config.
const (
	DefaultBasePath             = "/auth"
	DefaultIssuer               = "latchkit/auth"
	DefaultAccessTokenLifetime  = time.Hour
	DefaultRefreshTokenLifetime = 100 * 24 * time.Hour
	DefaultResetTokenLifetime   = time.Hour
	DefaultSigningKeyLifetime   = 30 * 24 * time.Hour
	DefaultHashQueueTimeout     = 2 * time.Second
	DefaultMaxBodyBytes         = 16 << 10
	DefaultMailQueueSize        = 1000
	DefaultMailTimeout          = 10 * time.Second
	DefaultMailAttempts         = 3

	// MaxRefreshReuseWindow is the longest reuse window New accepts.
	MaxRefreshReuseWindow = time.Minute
)

// jwtLeeway absorbs clock differences between application instances.
const jwtLeeway = 5 * time.Second

// Config configures an Auth. The zero value of every field except Store
// means the documented default.
type Config struct {
	// Store keeps users, sessions and signing keys. Required. Every
	// instance of an application must use the same one.
	Store store.Store

	// BasePath is where the handler is mounted. Default "/auth"; mount the
	// handler with mux.Handle(BasePath+"/", a).
	BasePath string

	// Issuer is the "iss" claim of access tokens, which must match when
	// they are verified. Default "latchkit/auth". Set it to the API's URL
	// to keep two deployments that share a Store from accepting each
	// other's tokens.
	Issuer string

	// AccessTokenLifetime is how long an access token is accepted. Default
	// one hour. Revoking a session does not stop its access tokens before
	// they expire unless CheckSessionInStore is set.
	AccessTokenLifetime time.Duration

	// RefreshTokenLifetime is how long a session lasts without a refresh;
	// each refresh moves the end to now plus this. Default 100 days.
	RefreshTokenLifetime time.Duration

	// ResetTokenLifetime is how long a password reset token is valid.
	// Default one hour.
	ResetTokenLifetime time.Duration

	// RefreshReuseWindow, if positive, lets a client present the refresh
	// token it last exchanged again within this time of the exchange, to
	// recover from a response it never received. Each retry gets a new
	// token and the one it replaces stops working, so there is never more
	// than one live token; a token two exchanges old is always theft.
	// Default 0 (off): any second use is theft. At most
	// MaxRefreshReuseWindow.
	RefreshReuseWindow time.Duration

	// SigningAlgorithm signs access tokens: HS256 (default) or EdDSA. With
	// EdDSA the handler serves the public keys at <BasePath>/jwt/jwks.json.
	SigningAlgorithm string

	// SigningKeyLifetime is how long a signing key signs before a new one
	// replaces it. Keys keep verifying for an access-token lifetime after.
	// Default 30 days.
	SigningKeyLifetime time.Duration

	// CheckSessionInStore makes RequireSession look the session up in the
	// Store on every request, so a revoked session is refused at once. It
	// costs a store read per request. Default off: access tokens are
	// verified by signature alone and stay valid until they expire.
	CheckSessionInStore bool

	// SessionCheckCache, with CheckSessionInStore, lets an instance trust
	// that a session it found live is still live for this long, saving
	// store reads. Revocations made through this instance take effect at
	// once regardless; those made through others within this time.
	// Default 0: every request reads the store.
	SessionCheckCache time.Duration

	// DisableEmailExists turns off the endpoint that tells whether an
	// email has an account (the sign-up form uses it). It reveals which
	// emails are registered; sign-up reveals as much, but one at a time
	// and only with a password attempt.
	DisableEmailExists bool

	// PasswordPolicy checks new passwords. Default DefaultPasswordPolicy.
	PasswordPolicy PasswordPolicy

	// PasswordHashing sets the argon2id parameters of new password hashes.
	// The zero value means the OWASP recommendation (19 MiB, 2 iterations,
	// 1 thread); weaker parameters are refused unless
	// InsecureWeakPasswordHashing is set. Hashes made with other
	// parameters are upgraded at the next successful sign-in.
	PasswordHashing PasswordHashing

	// InsecureWeakPasswordHashing allows PasswordHashing below the OWASP
	// minimum. Only for tests, where hashing would dominate run time.
	InsecureWeakPasswordHashing bool

	// MaxConcurrentHashes bounds how many password hashes run at once, and
	// so the memory they take (19 MiB each by default). Default
	// GOMAXPROCS.
	MaxConcurrentHashes int

	// HashQueueTimeout is how long a sign-in or sign-up waits for a hashing
	// slot before it is answered 503 with Retry-After. Default 2 seconds.
	HashQueueTimeout time.Duration

	// MaxBodyBytes caps request bodies; larger ones are answered 413
	// before any JSON is decoded. Default 16 KiB.
	MaxBodyBytes int64

	// Cookie configures the session cookies.
	Cookie CookieConfig

	// Limiter keeps the counts behind RateLimits. Default
	// NewMemoryLimiter(0): each instance counts on its own, so with N
	// instances behind a load balancer the effective limits are up to N
	// times higher.
	Limiter Limiter

	// RateLimits bounds failed sign-ins and reset requests; see the
	// fields for the defaults. Throttled requests get 429 with
	// Retry-After.
	RateLimits RateLimits

	// TrustedProxies are the addresses of reverse proxies whose
	// X-Forwarded-For header names the client. Default none: the client
	// is the connection's peer, which a client cannot forge.
	TrustedProxies []netip.Prefix

	// AllowedOrigins are the origins ("https://app.example.com",
	// "http://localhost:3000") of frontends served from another origin
	// than the API. Browsers' state-changing requests to the auth
	// endpoints from any other origin are refused (403), against login
	// CSRF; (*Auth).CORS answers these origins' preflights.
	AllowedOrigins []string

	// Mailer sends password reset email. Without one the reset endpoints
	// are not served.
	Mailer mailer.Mailer

	// AppURL is the public URL of the application's frontend, such as
	// "https://app.example.com". Required with a Mailer: reset links
	// point there.
	AppURL string

	// ResetPasswordURL is the page reset links open, with ?token=...&
	// tenantId=public added. Default AppURL + "/auth/reset-password", the
	// page of the SuperTokens UI.
	ResetPasswordURL string

	// EmailFrom is the sender of email, "Name <address>" or an address.
	// Default "no-reply@" + the host of AppURL.
	EmailFrom string

	// ResetEmail renders the password reset email. Default
	// DefaultResetEmail.
	ResetEmail *EmailTemplate

	// MailQueueSize bounds the reset emails waiting to be sent; requests
	// past it are answered as usual but their email is dropped, logged and
	// reported. Default 1000.
	MailQueueSize int

	// MailTimeout bounds one delivery attempt. Default 10 seconds.
	MailTimeout time.Duration

	// MailAttempts is how often a failed delivery is tried in all, with a
	// pause of a second that doubles between attempts. Default 3.
	MailAttempts int

	// Now returns the current time. Default time.Now. Tests inject a clock
	// to travel in time.
	Now func() time.Time

	// Logger receives a record of every auth outcome and of internal
	// errors. Never tokens or passwords. Refreshes are logged at Debug,
	// token theft at Warn, every other outcome at Info. Default: discard.
	Logger *slog.Logger

	// Metrics, if set, receives a count of every event and the time
	// password hashes wait for a slot, for a monitoring system.
	Metrics Metrics

	// OnEvent, if set, is called synchronously after every sign-up,
	// sign-in that reaches the password check (successful, failed or
	// throttled), refresh, sign-out, revocation, token theft, password
	// reset and mail failure. Requests refused as malformed, or for lack
	// of capacity, report nothing. Keep it fast; hand slow work to a
	// goroutine.
	OnEvent func(context.Context, Event)
}

// PasswordHashing holds argon2id parameters.
type PasswordHashing struct {
	Memory      uint32 // KiB
	Iterations  uint32
	Parallelism uint8
}

// CookieConfig configures the sAccessToken and sRefreshToken cookies. Both
// are always HttpOnly; the refresh cookie is sent only to the refresh path.
type CookieConfig struct {
	// SameSite defaults to Lax. Use None when the frontend is on another
	// site; requests that carry cookies must then send a rid header
	// (the SuperTokens SDKs do), which is the CSRF defence.
	SameSite http.SameSite

	// Domain, if set, shares the cookies with subdomains. Default: none,
	// the cookies belong to the API's host alone.
	Domain string

	// InsecureAllowHTTP drops the Secure attribute so cookies travel over
	// plain HTTP. Browsers and curl treat http://localhost as secure, so
	// local development needs it only for other hosts.
	InsecureAllowHTTP bool
}

// Auth serves the authentication endpoints and verifies sessions. Create it
// with New; it is safe for concurrent use.
type Auth struct {
	cfg         Config
	store       store.Store
	keys        *keyring
	parser      *jwt.Parser
	passwords   passwordHasher
	hashSlots   chan struct{}
	dummyHash   string // verified for unknown users, so they cost as much as known ones
	refreshPath string
	outbox      *outbox
	xorigin     *http.CrossOriginProtection

	liveSessions sessionCache // for Config.SessionCheckCache
	verified     tokenCache   // access tokens verified before, in session.go
}

// New validates cfg, fills in its defaults and returns an Auth.
func New(cfg Config) (*Auth, error) {
	if cfg.Store == nil {
		return nil, errors.New("auth: Config.Store is required")
	}
	cfg.BasePath = strings.TrimRight(cfg.BasePath, "/")
	if cfg.BasePath == "" {
		cfg.BasePath = DefaultBasePath
	}
	if !strings.HasPrefix(cfg.BasePath, "/") {
		return nil, fmt.Errorf("auth: Config.BasePath %q must start with /", cfg.BasePath)
	}
	setDefault(&cfg.Issuer, DefaultIssuer)
	setDefault(&cfg.AccessTokenLifetime, DefaultAccessTokenLifetime)
	setDefault(&cfg.RefreshTokenLifetime, DefaultRefreshTokenLifetime)
	setDefault(&cfg.ResetTokenLifetime, DefaultResetTokenLifetime)
	setDefault(&cfg.SigningKeyLifetime, DefaultSigningKeyLifetime)
	setDefault(&cfg.SigningAlgorithm, HS256)
	setDefault(&cfg.HashQueueTimeout, DefaultHashQueueTimeout)
	setDefault(&cfg.MaxBodyBytes, DefaultMaxBodyBytes)
	setDefault(&cfg.MaxConcurrentHashes, runtime.GOMAXPROCS(0))
	if cfg.AccessTokenLifetime < 0 || cfg.RefreshTokenLifetime < 0 || cfg.ResetTokenLifetime < 0 ||
		cfg.SigningKeyLifetime < 0 || cfg.SessionCheckCache < 0 || cfg.HashQueueTimeout < 0 || cfg.MaxBodyBytes < 0 || cfg.MaxConcurrentHashes < 0 {
		return nil, errors.New("auth: Config durations and limits must not be negative")
	}
	if cfg.AccessTokenLifetime >= cfg.RefreshTokenLifetime {
		return nil, errors.New("auth: Config.AccessTokenLifetime must be shorter than RefreshTokenLifetime")
	}
	if cfg.RefreshReuseWindow < 0 || cfg.RefreshReuseWindow > MaxRefreshReuseWindow {
		return nil, fmt.Errorf("auth: Config.RefreshReuseWindow must be between 0 and %v", MaxRefreshReuseWindow)
	}
	if cfg.SigningAlgorithm != HS256 && cfg.SigningAlgorithm != EdDSA {
		return nil, fmt.Errorf("auth: Config.SigningAlgorithm %q is not supported (HS256 or EdDSA)", cfg.SigningAlgorithm)
	}
	if cfg.PasswordPolicy == nil {
		cfg.PasswordPolicy = DefaultPasswordPolicy
	}
	hp := password.Params{Memory: cfg.PasswordHashing.Memory, Time: cfg.PasswordHashing.Iterations, Threads: cfg.PasswordHashing.Parallelism}
	if hp == (password.Params{}) {
		hp = password.Default
	}
	if hp.Memory == 0 || hp.Time == 0 || hp.Threads == 0 {
		return nil, errors.New("auth: Config.PasswordHashing needs Memory, Iterations and Parallelism")
	}
	// OWASP lists equivalent argon2id settings from 46 MiB x 1 down to
	// 7 MiB x 5; all do at least this much work.
	if !cfg.InsecureWeakPasswordHashing && (hp.Memory < 7*1024 || uint64(hp.Memory)*uint64(hp.Time) < 35*1024) {
		return nil, errors.New("auth: Config.PasswordHashing is below the OWASP minimum (19 MiB, 2 iterations)")
	}
	switch cfg.Cookie.SameSite {
	case 0, http.SameSiteDefaultMode:
		cfg.Cookie.SameSite = http.SameSiteLaxMode
	case http.SameSiteNoneMode:
		if cfg.Cookie.InsecureAllowHTTP {
			return nil, errors.New("auth: SameSite=None cookies must be Secure; unset Cookie.InsecureAllowHTTP")
		}
	}
	if cfg.Mailer != nil {
		app, err := url.Parse(cfg.AppURL)
		if err != nil || (app.Scheme != "http" && app.Scheme != "https") || app.Host == "" {
			return nil, fmt.Errorf("auth: Config.AppURL %q must be an http or https URL when a Mailer is set", cfg.AppURL)
		}
		setDefault(&cfg.ResetPasswordURL, strings.TrimRight(cfg.AppURL, "/")+"/auth/reset-password")
		if u, err := url.Parse(cfg.ResetPasswordURL); err != nil || u.Host == "" {
			return nil, fmt.Errorf("auth: Config.ResetPasswordURL %q is not an absolute URL", cfg.ResetPasswordURL)
		}
		setDefault(&cfg.EmailFrom, "no-reply@"+app.Hostname())
		if _, err := mail.ParseAddress(cfg.EmailFrom); err != nil {
			return nil, fmt.Errorf("auth: Config.EmailFrom %q: %v", cfg.EmailFrom, err)
		}
	}
	if cfg.ResetEmail == nil {
		cfg.ResetEmail = &DefaultResetEmail
	} else if cfg.ResetEmail.Subject == nil || cfg.ResetEmail.Text == nil {
		return nil, errors.New("auth: Config.ResetEmail needs a Subject and a Text template")
	}
	setDefault(&cfg.MailQueueSize, DefaultMailQueueSize)
	setDefault(&cfg.MailTimeout, DefaultMailTimeout)
	setDefault(&cfg.MailAttempts, DefaultMailAttempts)
	if cfg.MailQueueSize < 0 || cfg.MailTimeout < 0 || cfg.MailAttempts < 0 {
		return nil, errors.New("auth: Config mail limits must not be negative")
	}
	if cfg.Limiter == nil {
		cfg.Limiter = NewMemoryLimiter(0)
	}
	cfg.RateLimits.setDefaults()
	for _, r := range []Rate{cfg.RateLimits.SignInFailures, cfg.RateLimits.ClientSignInFailures,
		cfg.RateLimits.ResetEmails, cfg.RateLimits.ClientResetRequests} {
		if !r.valid() {
			return nil, errors.New("auth: Config.RateLimits: every Rate needs a positive Burst and Every")
		}
	}
	cfg.TrustedProxies = append([]netip.Prefix(nil), cfg.TrustedProxies...)
	cfg.AllowedOrigins = append([]string(nil), cfg.AllowedOrigins...)
	for i, o := range cfg.AllowedOrigins {
		cfg.AllowedOrigins[i] = strings.TrimRight(o, "/")
	}
	xorigin, err := newCrossOrigin(cfg.AllowedOrigins)
	if err != nil {
		return nil, fmt.Errorf("auth: Config.AllowedOrigins: %w", err)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}

	a := &Auth{
		cfg:         cfg,
		store:       cfg.Store,
		hashSlots:   make(chan struct{}, cfg.MaxConcurrentHashes),
		refreshPath: cfg.BasePath + "/session/refresh",
		outbox:      newOutbox(cfg.MailQueueSize, cfg.MailAttempts, cfg.MailTimeout, time.Second),
		xorigin:     xorigin,
	}
	a.keys = &keyring{
		store:       cfg.Store,
		alg:         cfg.SigningAlgorithm,
		signFor:     cfg.SigningKeyLifetime,
		verifyExtra: cfg.AccessTokenLifetime + jwtLeeway,
		now:         cfg.Now,
	}
	a.parser = jwt.NewParser(
		jwt.WithValidMethods([]string{cfg.SigningAlgorithm}),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithIssuer(cfg.Issuer),
		jwt.WithLeeway(jwtLeeway),
		jwt.WithStrictDecoding(),
		jwt.WithTimeFunc(cfg.Now),
	)
	a.passwords = argon2id{hp}
	a.dummyHash = a.passwords.hash("not a password of anyone")
	return a, nil
}

func setDefault[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}

// ServeHTTP serves the endpoints under the base path.
func (a *Auth) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	defer a.recoverPanic(w, r)
	rest, ok := strings.CutPrefix(r.URL.Path, a.cfg.BasePath)
	if !ok || (rest != "" && rest[0] != '/') {
		writeMessage(w, http.StatusNotFound, "not found")
		return
	}
	// The SDKs put a tenant id after the base path for tenants other than
	// "public"; only the public tenant exists here.
	if t, ok := strings.CutPrefix(rest, "/public/"); ok {
		rest = "/" + t
	}
	var h http.HandlerFunc
	method := http.MethodPost
	switch rest {
	case "/signup":
		h = a.handleSignUp
	case "/signin":
		h = a.handleSignIn
	case "/emailpassword/email/exists", "/signup/email/exists":
		if a.cfg.DisableEmailExists {
			break
		}
		h, method = a.handleEmailExists, http.MethodGet
	case "/session/refresh":
		h = a.handleRefresh
	case "/signout":
		h = a.handleSignOut
	case "/user/password/reset/token":
		if a.cfg.Mailer != nil {
			h = a.handleResetRequest
		}
	case "/user/password/reset":
		if a.cfg.Mailer != nil {
			h = a.handleResetPassword
		}
	case "/jwt/jwks.json":
		if a.cfg.SigningAlgorithm == EdDSA {
			h, method = a.serveJWKS, http.MethodGet
		}
	}
	switch {
	case h == nil:
		writeMessage(w, http.StatusNotFound, "not found")
	case r.Method == http.MethodOptions:
		w.Header().Set("Allow", method+", OPTIONS")
		w.WriteHeader(http.StatusNoContent)
	case r.Method != method && !(method == http.MethodGet && r.Method == http.MethodHead):
		w.Header().Set("Allow", method+", OPTIONS")
		writeMessage(w, http.StatusMethodNotAllowed, "method not allowed")
	case a.xorigin.Check(r) != nil:
		writeMessage(w, http.StatusForbidden, "cross-origin request refused: add the page's origin to Config.AllowedOrigins")
	default:
		h(w, r)
	}
}

// Event reports an authentication outcome to Config.OnEvent. A sign-up
// reports EventSignUp and then EventSignIn for the session it starts.
type Event struct {
	Kind          EventKind
	Time          time.Time
	UserID        string // empty when no user is known, as for a failed sign-in
	SessionHandle string // empty when no session is involved
	RemoteAddr    string // the client's address as the server saw it; empty for Go API calls
}

// EventKind names what happened.
type EventKind string

// The kinds of Event.
const (
	EventSignUp          EventKind = "sign_up"
	EventSignIn          EventKind = "sign_in"
	EventSignInFailed    EventKind = "sign_in_failed"
	EventSignInThrottled EventKind = "sign_in_throttled" // refused by RateLimits before checking the password
	EventRefresh         EventKind = "refresh"
	EventSignOut         EventKind = "sign_out"
	EventSessionRevoked  EventKind = "session_revoked"
	EventTokenTheft      EventKind = "token_theft"
	EventResetEmailSent  EventKind = "reset_email_sent"
	EventPasswordReset   EventKind = "password_reset"
	EventMailFailed      EventKind = "mail_failed" // a reset email was not sent: see the log for why
)

// emit logs an event and passes it to the hook.
func (a *Auth) emit(ctx context.Context, r *http.Request, e Event) {
	e.Time = a.cfg.Now()
	if r != nil {
		e.RemoteAddr = r.RemoteAddr
	}
	// Refreshes are routine and the most frequent event by far (one per
	// session per access-token lifetime); logging each at Info would
	// drown the events worth reading.
	level := slog.LevelInfo
	switch e.Kind {
	case EventRefresh:
		level = slog.LevelDebug
	case EventTokenTheft:
		level = slog.LevelWarn
	}
	a.cfg.Logger.LogAttrs(ctx, level, "auth event",
		slog.String("kind", string(e.Kind)),
		slog.String("user_id", e.UserID),
		slog.String("session", e.SessionHandle),
		slog.String("remote_addr", e.RemoteAddr))
	switch e.Kind {
	case EventSignOut, EventSessionRevoked, EventTokenTheft:
		a.liveSessions.evict(e.SessionHandle)
	}
	if a.cfg.Metrics != nil {
		a.cfg.Metrics.CountEvent(e.Kind)
	}
	if a.cfg.OnEvent != nil {
		a.cfg.OnEvent(ctx, e)
	}
}

// Metrics receives the library's counts and timings. Implementations must
// be safe for concurrent use and quick: they run on the request path.
// examples/metrics exports them in the Prometheus text format.
type Metrics interface {
	// CountEvent counts one outcome: sign-ins by result (EventSignIn,
	// EventSignInFailed, EventSignInThrottled), refreshes, token thefts,
	// mail failures and every other EventKind.
	CountEvent(kind EventKind)
	// ObserveHashWait records how long a password hash waited for a free
	// slot: zero when one was free, up to HashQueueTimeout when the
	// request was turned away.
	ObserveHashWait(d time.Duration)
}

// Errors of the Go API. Over HTTP they are the 401 answers of the protocol.
var (
	// ErrUnauthorized: the request carries no session, or its session has
	// ended.
	ErrUnauthorized = errors.New("auth: unauthorised")
	// ErrTryRefreshToken: the access token is expired or invalid; the
	// client should refresh and retry.
	ErrTryRefreshToken = errors.New("auth: try refresh token")
	// ErrTokenTheft: a refresh token was used twice; its session has been
	// revoked.
	ErrTokenTheft = errors.New("auth: token theft detected")
)

// Failures of a request that are not session answers.
var (
	errBodyTooLarge = errors.New("request body too large")
	errOverloaded   = errors.New("too many requests, try again shortly")
)

// badRequest is malformed input, answered 400 with its message.
type badRequest string

func (e badRequest) Error() string { return string(e) }

// fail answers an error. It is the one place that maps errors to HTTP;
// clients get a safe message, the log gets the cause.
func (a *Auth) fail(w http.ResponseWriter, r *http.Request, err error) {
	var bad badRequest
	switch {
	case errors.As(err, &bad):
		writeMessage(w, http.StatusBadRequest, string(bad))
	case errors.Is(err, errBodyTooLarge):
		// Close rather than drain what is left of the body.
		w.Header().Set("Connection", "close")
		writeMessage(w, http.StatusRequestEntityTooLarge, "request body too large")
	case errors.Is(err, ErrUnauthorized):
		writeMessage(w, http.StatusUnauthorized, "unauthorised")
	case errors.Is(err, ErrTryRefreshToken):
		writeMessage(w, http.StatusUnauthorized, "try refresh token")
	case errors.Is(err, ErrTokenTheft):
		writeMessage(w, http.StatusUnauthorized, "token theft detected")
	case errors.Is(err, errOverloaded), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		w.Header().Set("Retry-After", "1")
		writeMessage(w, http.StatusServiceUnavailable, errOverloaded.Error())
	default:
		a.cfg.Logger.LogAttrs(r.Context(), slog.LevelError, "auth: internal error",
			slog.String("path", r.URL.Path), slog.String("error", err.Error()))
		writeMessage(w, http.StatusInternalServerError, "internal error")
	}
}

// recoverPanic, deferred, turns a panic below the handler (a Store or
// hook that panics) into a 500, so the client gets an answer and the
// cause is logged.
func (a *Auth) recoverPanic(w http.ResponseWriter, r *http.Request) {
	if v := recover(); v != nil {
		a.answerPanic(w, r, v)
	}
}

// answerPanic answers a recovered panic. http.ErrAbortHandler keeps its
// meaning.
func (a *Auth) answerPanic(w http.ResponseWriter, r *http.Request, v any) {
	if v == http.ErrAbortHandler {
		panic(v)
	}
	// The type only: a panic value may quote a token.
	a.cfg.Logger.LogAttrs(r.Context(), slog.LevelError, "auth: panic",
		slog.String("path", r.URL.Path), slog.String("type", fmt.Sprintf("%T", v)))
	writeMessage(w, http.StatusInternalServerError, "internal error")
}

func writeMessage(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, struct {
		Message string `json:"message"`
	}{msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		// Only our own types reach here; none fails to marshal.
		panic(err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}

// User is an account, as the Go API reports it.
type User struct {
	ID         string
	Email      string
	TimeJoined time.Time
}

func publicUser(u store.User) User {
	return User{ID: u.ID, Email: u.Email, TimeJoined: u.TimeJoined}
}

// UserByID returns a user, or an error matching store.ErrNotFound.
func (a *Auth) UserByID(ctx context.Context, id string) (User, error) {
	u, err := a.store.UserByID(ctx, id)
	return publicUser(u), err
}

// UserByEmail returns the user with an email (compared after trimming and
// lower-casing), or an error matching store.ErrNotFound.
func (a *Auth) UserByEmail(ctx context.Context, email string) (User, error) {
	u, err := a.store.UserByEmail(ctx, normaliseEmail(email))
	return publicUser(u), err
}

// Sessions returns the live sessions of a user, newest first.
func (a *Auth) Sessions(ctx context.Context, userID string) ([]store.Session, error) {
	return a.store.UserSessions(ctx, userID, a.cfg.Now())
}

// RevokeSession ends a session: its refresh token stops working at once,
// its access tokens when they expire (or at once with
// Config.CheckSessionInStore). It returns an error matching
// store.ErrNotFound if there is no such session.
func (a *Auth) RevokeSession(ctx context.Context, handle string) error {
	s, err := a.store.Session(ctx, handle, a.cfg.Now())
	if err != nil {
		return err
	}
	if err := a.store.RevokeSession(ctx, handle); err != nil {
		return err
	}
	a.emit(ctx, nil, Event{Kind: EventSessionRevoked, UserID: s.UserID, SessionHandle: handle})
	return nil
}

// RevokeAllSessions ends every session of a user and returns how many it
// ended.
func (a *Auth) RevokeAllSessions(ctx context.Context, userID string) (int, error) {
	handles, err := a.store.RevokeUserSessions(ctx, userID)
	for _, h := range handles {
		a.emit(ctx, nil, Event{Kind: EventSessionRevoked, UserID: userID, SessionHandle: h})
	}
	return len(handles), err
}
