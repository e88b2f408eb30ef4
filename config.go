package auth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/mail"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/latchkit/auth/emailchange"
	"github.com/latchkit/auth/emailpassword"
	"github.com/latchkit/auth/emailverification"
	"github.com/latchkit/auth/internal/seal"
	"github.com/latchkit/auth/mailer"
	"github.com/latchkit/auth/passwordless"
	"github.com/latchkit/auth/store"
	"github.com/latchkit/auth/thirdparty"
)

// Defaults for the zero values of Config.
const (
	DefaultBasePath             = "/auth"
	DefaultIssuer               = "latchkit/auth"
	DefaultAccessTokenLifetime  = time.Hour
	DefaultRefreshTokenLifetime = 100 * 24 * time.Hour
	DefaultSigningKeyLifetime   = 30 * 24 * time.Hour
	DefaultMaxBodyBytes         = 16 << 10
	DefaultMailQueueSize        = 1000
	DefaultMailTimeout          = 10 * time.Second
	DefaultMailAttempts         = 3

	// MaxRefreshReuseWindow is the longest reuse window New accepts.
	MaxRefreshReuseWindow = time.Minute

	// DefaultFreshSignIn is how recent a sign-in the account's sensitive
	// routes ask for, and MaxFreshSignIn the longest New accepts.
	DefaultFreshSignIn = 5 * time.Minute
	MaxFreshSignIn     = 24 * time.Hour
)

// Config configures an Auth. The zero value of every field except Store
// means the documented default. Each feature has its own group
// (EmailPassword, Email, ThirdParty, EmailVerification, Passwordless,
// Passkeys, Cookie, RateLimits), whose zero
// value means the feature's defaults, or the feature off.
type Config struct {
	// Store keeps users, sessions and signing keys. Required. Every
	// instance of an application must use the same one.
	Store store.Store

	// BasePath is where the handler is mounted. Default "/auth"; mount the
	// handler with mux.Handle(BasePath+"/", a).
	BasePath string

	// AppURL is the public URL of the application's frontend, such as
	// "https://app.example.com". Required with Email.Mailer: the links in
	// emails point there.
	AppURL string

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

	// RefreshReuseWindow, if positive, lets a client present the refresh
	// token it last exchanged again within this time of the exchange, to
	// recover from a response it never received or from tabs refreshing
	// at once. Each retry gets the very successor the exchange made, so
	// there is still one live token; retries do not extend the window,
	// and a token two exchanges old is always theft. Default 0 (off): any
	// second use is theft. At most MaxRefreshReuseWindow.
	RefreshReuseWindow time.Duration

	// SigningAlgorithm signs access tokens: HS256 (default) or EdDSA. With
	// EdDSA the handler serves the public keys at <BasePath>/jwt/jwks.json.
	SigningAlgorithm string

	// SigningKeyLifetime is how long a signing key signs before a new one
	// replaces it. Keys keep verifying for an access-token lifetime after.
	// Default 30 days. To retire a key early (one suspected of leaking),
	// delete it from the Store: every instance stops signing and
	// verifying with it within KeyRefreshInterval.
	SigningKeyLifetime time.Duration

	// Secrets, if set, seal the signing keys (access-token and
	// refresh-token keys) before the Store sees them: each key's material
	// is encrypted with AES-256-GCM under a key derived from a secret, and
	// bound to its row. A read of the database alone (a leaked backup, an
	// injection elsewhere in the application) then no longer lets anyone
	// mint access tokens or refresh tokens. It does not help against an
	// attacker who has the running process or the secret, so keep the
	// secret where the database is not: an environment variable, a secret
	// manager. Every instance sharing the Store needs it.
	//
	// The first seals, all unseal, so a secret can be rotated: put the new
	// one first and keep the old one until every key sealed with it has
	// expired, at most SigningKeyLifetime + RefreshTokenLifetime after the
	// change (130 days by default). With several instances, add the new
	// secret last everywhere before moving it first, so that no instance
	// meets a key sealed with a secret it does not have yet.
	//
	// Each secret must be at least 32 bytes, and random: the output of
	// `openssl rand -base64 32`, say. New refuses shorter ones, repeated
	// patterns and placeholders with few distinct characters, and
	// duplicates.
	//
	// New reads the stored keys once and fails, with an error naming the
	// key, if one does not open: a key sealed while Secrets is empty, or
	// sealed with a secret that is not in the list. Nothing ever signs or
	// verifies with a key that did not open; should such a key appear
	// later, signing fails rather than guesses. A Store that cannot be
	// read then does not make New fail (New waits at most 10 seconds for
	// it); the keys are read again on first use.
	//
	// Keys in the clear when Secrets is first set keep verifying until
	// they expire, a key lifetime at most, but stop signing at once: a
	// new, sealed key replaces each. Only those keys verify in the clear;
	// any key written in the clear afterwards is refused. Default none:
	// keys are stored in the clear, and whoever can read the Store can
	// mint tokens.
	Secrets []string

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

	// Cookie configures the session cookies.
	Cookie CookieConfig

	// EmailPassword configures email and password sign-up, sign-in and
	// reset (package emailpassword): the password policy, how passwords
	// are hashed, and the reset links. It is always on.
	EmailPassword emailpassword.Config

	// Email configures outgoing mail. With a Mailer set, the password
	// reset endpoints are served.
	Email EmailConfig

	// ThirdParty configures sign-in with third-party providers. The zero
	// value means none.
	ThirdParty thirdparty.Config

	// EmailVerification configures the verification of users' email
	// addresses (package emailverification). The zero value means off.
	EmailVerification emailverification.Config

	// EmailChange lets a signed-in user change their account's email
	// address (package emailchange). The zero value means off.
	EmailChange emailchange.Config

	// Passwordless configures sign-in with one-time codes and links sent
	// by email. The zero value means off.
	Passwordless passwordless.Config

	// Passkeys turns on sign-in with passkeys (WebAuthn):
	// passkey.New(passkey.Config{...}), from package passkey, whose
	// documentation holds its settings and routes. Default nil: off.
	Passkeys Recipe

	// Roles turns on roles and permissions, carried in every access
	// token: roles.New(roles.Config{}), from package roles, whose methods
	// are the Go API and whose documentation holds the claims and the
	// rules. Default nil: off.
	Roles Recipe

	// Dashboard serves the SuperTokens dashboard, the operators' app, and
	// its API under BasePath: dashboard.New(dashboard.Config{...}), from
	// package dashboard, whose documentation holds its settings, routes
	// and events. Default nil: off.
	Dashboard Recipe

	// Audit turns on the audit log; see AuditConfig. Default off.
	Audit AuditConfig

	// Tenants serves tenants besides the public one; see TenantsConfig
	// and the package documentation, # Tenants. Default off.
	Tenants TenantsConfig

	// Impersonation lets operators act as a user; see
	// ImpersonationConfig. Default off.
	Impersonation ImpersonationConfig

	// MFA configures multi-factor authentication: TOTP and passkeys as
	// second factors, recovery codes. The zero value means off.
	MFA MFAConfig

	// TokenClaims adds claims of the application's own to every access
	// token, from a function it gives. Default none.
	TokenClaims TokenClaims

	// AccountLinking lets a new login method that proves its email (a
	// provider vouches for it) join the user who owns the address instead
	// of making a second user; a method that proves nothing joins nobody
	// (see the package documentation, # Account linking). Default off:
	// every sign-up makes a new user.
	AccountLinking bool

	// FreshSignIn is how recently a session must have completed a factor
	// (signed in, or completed a second factor again) for the account's
	// sensitive routes: adding a password, deleting the account, and the
	// routes of the application's own that SignedInWithin(0) guards. Past
	// it they answer 403 st-fresh, and the user signs in again. Default
	// DefaultFreshSignIn (5 minutes); at most MaxFreshSignIn.
	FreshSignIn time.Duration

	// BeforeDeleteUser, if set, serves POST <BasePath>/user/delete, where
	// a signed-in user deletes their own account after a fresh sign-in
	// (FreshSignIn): it is called first, with the user's id, for the
	// application to delete or detach its own data of the user, or to
	// refuse. An error refuses the deletion, answered DELETE_NOT_ALLOWED
	// with the error's message as the reason, which the frontend shows the
	// user; nil lets it go ahead, as DeleteUser, whose EventUserDeleted
	// follows. DeleteUser, the Go API, does not call it. Default nil: the
	// route is not served, and users cannot delete their accounts.
	BeforeDeleteUser func(ctx context.Context, userID string) error

	// DisableEmailExists turns off the endpoint that tells whether an
	// email has an account (the sign-up form uses it). It reveals which
	// emails are registered; sign-up reveals as much, but one at a time
	// and only with a password attempt.
	DisableEmailExists bool

	// MaxBodyBytes caps request bodies; larger ones are answered 413
	// before any JSON is decoded. Default 16 KiB.
	MaxBodyBytes int64

	// Limiter keeps the counts behind RateLimits, and the third-party
	// authorisation codes already presented, which must not be redeemed
	// twice. Default: NewStoreLimiter(Store) when the Store implements
	// store.RateLimitStore (memstore and sqlstore do), so that every
	// instance sharing the Store counts the same attempts and refuses a
	// code any of them has seen, at the cost of a store write per
	// counted attempt. A Store that wraps another must implement
	// store.RateLimitStore itself to keep this default. Otherwise
	// NewMemoryLimiter(0), at most 100,000 keys per allowance: each
	// instance counts on its own, so with N instances behind a load
	// balancer the effective limits are up to N times higher, and a
	// provider that accepts a code more than once would redeem it once
	// per instance. A Limiter set here is used as it is.
	Limiter Limiter

	// RateLimits bounds failed sign-ins, reset requests and emails,
	// sign-ups and new passwords, email-exists lookups, third-party
	// sign-ins, verification emails and each session's refreshes; see the
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

	// Now returns the current time. Default time.Now. Tests inject a clock
	// to travel in time.
	Now func() time.Time

	// Logger receives a record of every auth outcome and of internal
	// errors. Never tokens or passwords. Refreshes and refused sessions
	// (EventSessionRefused) are logged at Debug, token theft at Warn,
	// every other outcome at Info. Default: discard.
	Logger *slog.Logger

	// Metrics, if set, receives a count of every event and the time
	// password hashes wait for a slot, for a monitoring system.
	Metrics Metrics

	// OnEvent, if set, is called synchronously with each Event, of the
	// kinds EventKind lists: every sign-in that reaches the password check
	// (successful, failed or throttled) reports one, and every 401 of the
	// refresh endpoint or a protected route is an EventSessionRefused with
	// its Reason. Requests refused as malformed (400), too large (413) or
	// for lack of capacity (503) report nothing. Keep it fast; hand slow
	// work to a goroutine.
	OnEvent func(context.Context, Event)
}

// EmailConfig configures outgoing mail, which the password reset flow
// (EmailPassword's) and others need. The zero value means no mail: the
// reset endpoints are not served.
type EmailConfig struct {
	// Mailer sends email. Without one the reset endpoints are not served.
	// Config.AppURL is required with a Mailer.
	Mailer mailer.Mailer

	// From is the sender of email, "Name <address>" or an address.
	// Default "no-reply@" + the host of Config.AppURL.
	From string

	// QueueSize bounds the emails waiting to be sent; requests past it
	// are answered as usual but their email is dropped, logged and
	// reported. Default 1000.
	QueueSize int

	// Timeout bounds one delivery attempt. Default 10 seconds.
	Timeout time.Duration

	// Attempts is how often a failed delivery is tried in all, with a
	// pause of a second that doubles between attempts. Default 3.
	Attempts int
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

	// InsecureSkipOriginCheck lets RequireSession and OptionalSession pass
	// state-changing requests that carry their session in a cookie from
	// browsers on other origins. By default they are refused 403 unless the
	// origin is in Config.AllowedOrigins, against cross-site request
	// forgery from the same site's other subdomains, which SameSite=Lax
	// does not stop. Set it only when the application has a CSRF defence
	// of its own. The auth endpoints check the origin regardless.
	InsecureSkipOriginCheck bool
}

// withDefaults validates cfg and returns it with every default filled in
// and its slices copied, so the caller's Config can change afterwards
// without effect.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.Store == nil {
		return cfg, errors.New("auth: Config.Store is required")
	}
	if err := cfg.setBasePath(); err != nil {
		return cfg, err
	}
	if err := cfg.setLifetimesAndLimits(); err != nil {
		return cfg, err
	}
	cfg.Secrets = append([]string(nil), cfg.Secrets...)
	if err := seal.CheckSecrets(cfg.Secrets); err != nil {
		return cfg, err
	}
	if err := cfg.setFeatureDefaults(); err != nil {
		return cfg, err
	}
	if err := cfg.Cookie.setDefaults(); err != nil {
		return cfg, err
	}
	if err := cfg.setRateLimitDefaults(); err != nil {
		return cfg, err
	}
	cfg.setClientDefaults()
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return cfg, nil
}

func (cfg *Config) setBasePath() error {
	cfg.BasePath = strings.TrimRight(cfg.BasePath, "/")
	setDefault(&cfg.BasePath, DefaultBasePath)
	if !strings.HasPrefix(cfg.BasePath, "/") {
		return fmt.Errorf("auth: Config.BasePath %q must start with /", cfg.BasePath)
	}
	return nil
}

// setLifetimesAndLimits fills in and checks the tokens' lifetimes and
// signing, and the body limit.
func (cfg *Config) setLifetimesAndLimits() error {
	setDefault(&cfg.Issuer, DefaultIssuer)
	setDefault(&cfg.AccessTokenLifetime, DefaultAccessTokenLifetime)
	setDefault(&cfg.RefreshTokenLifetime, DefaultRefreshTokenLifetime)
	setDefault(&cfg.SigningKeyLifetime, DefaultSigningKeyLifetime)
	setDefault(&cfg.SigningAlgorithm, HS256)
	setDefault(&cfg.MaxBodyBytes, DefaultMaxBodyBytes)
	if cfg.AccessTokenLifetime < 0 || cfg.RefreshTokenLifetime < 0 || cfg.SigningKeyLifetime < 0 ||
		cfg.SessionCheckCache < 0 || cfg.MaxBodyBytes < 0 {
		return errors.New("auth: Config durations and limits must not be negative")
	}
	if cfg.AccessTokenLifetime >= cfg.RefreshTokenLifetime {
		return errors.New("auth: Config.AccessTokenLifetime must be shorter than RefreshTokenLifetime")
	}
	setDefault(&cfg.FreshSignIn, DefaultFreshSignIn)
	if cfg.FreshSignIn < 0 || cfg.FreshSignIn > MaxFreshSignIn {
		return fmt.Errorf("auth: Config.FreshSignIn must be between 0 and %v", MaxFreshSignIn)
	}
	if cfg.RefreshReuseWindow < 0 || cfg.RefreshReuseWindow > MaxRefreshReuseWindow {
		return fmt.Errorf("auth: Config.RefreshReuseWindow must be between 0 and %v", MaxRefreshReuseWindow)
	}
	if cfg.SigningAlgorithm != HS256 && cfg.SigningAlgorithm != EdDSA {
		return fmt.Errorf("auth: Config.SigningAlgorithm %q is not supported (HS256 or EdDSA)", cfg.SigningAlgorithm)
	}
	return nil
}

// setFeatureDefaults fills in and checks the groups of the optional
// features. Email verification needs the mailer that Email settles.
func (cfg *Config) setFeatureDefaults() error {
	if err := cfg.Email.setDefaults(cfg.AppURL); err != nil {
		return err
	}
	// The recipes' own settings are checked as auth.New builds them;
	// the lists are copied here, so that the Config kept and the
	// recipe's agree whatever the caller does with its slices.
	cfg.ThirdParty.Providers = slices.Clone(cfg.ThirdParty.Providers)
	cfg.ThirdParty.RedirectURIs = slices.Clone(cfg.ThirdParty.RedirectURIs)
	if err := cfg.TokenClaims.check(); err != nil {
		return err
	}
	if err := cfg.Audit.setDefaults(cfg.Store); err != nil {
		return err
	}
	if err := cfg.Impersonation.setDefaults(cfg.Store); err != nil {
		return err
	}
	if err := cfg.Tenants.setDefaults(cfg.Store, cfg.AppURL, cfg.BasePath); err != nil {
		return err
	}
	return cfg.MFA.setDefaults(cfg)
}

func (c *CookieConfig) setDefaults() error {
	switch c.SameSite {
	case 0, http.SameSiteDefaultMode:
		c.SameSite = http.SameSiteLaxMode
	case http.SameSiteNoneMode:
		if c.InsecureAllowHTTP {
			return errors.New("auth: SameSite=None cookies must be Secure; unset Cookie.InsecureAllowHTTP")
		}
	}
	return nil
}

func (cfg *Config) setRateLimitDefaults() error {
	if cfg.Limiter == nil {
		cfg.Limiter = defaultLimiter(cfg.Store)
	}
	cfg.RateLimits.setDefaults()
	for _, r := range cfg.RateLimits.rates() {
		if !r.valid() {
			return errors.New("auth: Config.RateLimits: every Rate needs a positive Burst and Every")
		}
	}
	if p := cfg.RateLimits.IPv6Prefix; p < 1 || p > 128 {
		return errors.New("auth: Config.RateLimits.IPv6Prefix must be between 1 and 128")
	}
	return nil
}

// defaultLimiter keeps the counts in the store when it can hold them, so
// that every instance sharing it counts the same attempts and remembers
// the same authorisation codes: counted per process, a code that the
// provider would redeem twice could start a session at every instance.
func defaultLimiter(s store.Store) Limiter {
	if ls, ok := s.(store.RateLimitStore); ok {
		return NewStoreLimiter(ls)
	}
	return NewMemoryLimiter(0)
}

// setClientDefaults copies the lists that say who the clients are, in the
// form the checks compare.
func (cfg *Config) setClientDefaults() {
	cfg.TrustedProxies = append([]netip.Prefix(nil), cfg.TrustedProxies...)
	cfg.AllowedOrigins = append([]string(nil), cfg.AllowedOrigins...)
	for i, o := range cfg.AllowedOrigins {
		cfg.AllowedOrigins[i] = strings.TrimRight(o, "/")
	}
}

func (e *EmailConfig) setDefaults(appURL string) error {
	if e.Mailer != nil {
		if err := e.setSenderDefaults(appURL); err != nil {
			return err
		}
	}
	setDefault(&e.QueueSize, DefaultMailQueueSize)
	setDefault(&e.Timeout, DefaultMailTimeout)
	setDefault(&e.Attempts, DefaultMailAttempts)
	if e.QueueSize < 0 || e.Timeout < 0 || e.Attempts < 0 {
		return errors.New("auth: Config.Email durations and limits must not be negative")
	}
	return nil
}

// setSenderDefaults fills in and checks what a mailer needs: the app the
// links point to, and the sender, derived from appURL.
func (e *EmailConfig) setSenderDefaults(appURL string) error {
	app, ok := httpURL(appURL)
	if !ok {
		return fmt.Errorf("auth: Config.AppURL %q must be an http or https URL when a Mailer is set", appURL)
	}
	setDefault(&e.From, "no-reply@"+app.Hostname())
	if _, err := mail.ParseAddress(e.From); err != nil {
		return fmt.Errorf("auth: Config.Email.From %q: %v", e.From, err)
	}
	return nil
}

// httpURL parses s and reports whether it is an absolute http or https
// URL.
func httpURL(s string) (*url.URL, bool) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, false
	}
	return u, true
}

func setDefault[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}
