package auth

import (
	"context"
	"log/slog"
	"net/http"
	"net/netip"
	"time"

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

func setDefault[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}
