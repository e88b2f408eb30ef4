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
	"runtime"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/latchkit/auth/internal/password"
	"github.com/latchkit/auth/store"
)

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

// Close stops taking reset emails and waits for the queued ones to be
// sent. If ctx ends first, deliveries in flight are abandoned, every email
// still queued is logged and reported as EventMailFailed, and Close returns
// ctx's error. Call it when the server shuts down, after http.Server's
// Shutdown. The session endpoints keep working after Close.
func (a *Auth) Close(ctx context.Context) error {
	o := a.outbox
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return nil
	}
	o.closed = true
	close(o.queue)
	o.mu.Unlock()

	done := make(chan struct{})
	go func() { o.workers.Wait(); close(done) }()
	select {
	case <-done:
		o.stop()
		return nil
	case <-ctx.Done():
	}
	// The workers may be gone, or stuck; account for what is still queued.
	// Drain the queue before aborting the deliveries in flight: once
	// aborted, a worker would pick up the next queued email and report it
	// itself, possibly after Close has returned. Workers that are still
	// sending report their own outcome when their Mailer returns.
	for range o.queue {
		a.cfg.Logger.LogAttrs(ctx, slog.LevelError, "auth: reset email dropped", slog.String("reason", "shutdown"))
		a.emit(ctx, nil, Event{Kind: EventMailFailed})
	}
	o.stop()
	return ctx.Err()
}
