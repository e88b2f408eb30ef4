package main

import (
	"context"
	"database/sql"
	"embed"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/dashboard"
	"github.com/latchkit/auth/emailchange"
	"github.com/latchkit/auth/emailpassword"
	"github.com/latchkit/auth/emailverification"
	"github.com/latchkit/auth/mailer"
	"github.com/latchkit/auth/otelauth"
	"github.com/latchkit/auth/passkey"
	"github.com/latchkit/auth/passwordless"
	"github.com/latchkit/auth/provider"
	"github.com/latchkit/auth/roles"
	"github.com/latchkit/auth/store"
	"github.com/latchkit/auth/store/memstore"
	"github.com/latchkit/auth/store/sqlstore"
	"github.com/latchkit/auth/thirdparty"
)

// static holds the web front end: index.html and app.js, built from web/
// (cd web && npm install && npm run build) and kept in the tree, so the demo
// needs only Go.
//
//go:embed static
var static embed.FS

var indexPage = func() []byte {
	b, err := static.ReadFile("static/index.html")
	if err != nil {
		panic(err)
	}
	return b
}()

// options are the demo's settings, from flags and environment.
type options struct {
	addr       string
	db         string
	accessTTL  time.Duration
	refreshTTL time.Duration
	resetTTL   time.Duration
	smtp       string
	appURL     string
	origins    []string      // frontends on other origins
	sameSite   http.SameSite // of the session cookies
	// refreshes bounds how often one session may refresh; zero is the
	// library's default.
	refreshes auth.Rate
	// freshSignIn is Config.FreshSignIn: how recent a sign-in deleting
	// the account and adding a password ask for.
	freshSignIn time.Duration
	// providers are the third-party sign-in providers, in the order the
	// page lists them; none unless configured.
	providers []provider.Provider
	// emailVerification is off, optional or required; accountLinking
	// joins a new login method to the user with its verified email.
	emailVerification emailverification.Mode
	accountLinking    bool
	// secrets seal the signing keys in the store (Config.Secrets); none
	// keeps them in the clear.
	secrets []string
	// passwordless is what a passwordless sign-in emails: a code, a link
	// or both; passwordless.Off serves no passwordless routes.
	passwordless passwordless.Flow
	// passkeys turns on sign-in with passkeys (WebAuthn); the relying
	// party is the host of appURL, which must be a domain name.
	passkeys bool
	// mfa are the second factors every user must complete one of after
	// signing in (auth.FactorTOTP, auth.FactorWebAuthn); none is off.
	mfa []string
	// mfaOffered are second factors users may set up if they choose
	// (auth.MFAConfig.Factors): -dev offers TOTP and passkeys.
	mfaOffered []string
	// dev is -dev: every sign-in method on, the development OpenID
	// provider and the outbox under /dev/, on a loopback address only.
	dev bool
	// devProvider is the development OpenID provider, also in providers;
	// nil without -dev, or when a real provider is configured.
	devProvider *devProvider
	// admins are the emails of -admin, whose users get the role admin;
	// roles is the roles recipe, on with -admin, nil otherwise.
	admins []string
	roles  *roles.Recipe
	// dashboard is the dashboard recipe, on with -admin-api-key, nil
	// otherwise.
	dashboard *dashboard.Recipe
	// otel is -otel: "" (off) or stdout; tel is otelauth, set up by
	// startOTel when on, nil otherwise.
	otel string
	tel  *otelauth.Telemetry
	// tenants is -tenants: the tenant acme beside the public one, which
	// signs in with acmeProvider, a development provider of its own.
	tenants      bool
	acmeProvider *devProvider
}

func main() {
	if err := run(os.Args[1:], os.Getenv); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

// parseOptions reads flags, each defaulting to its environment variable.
func parseOptions(args []string, getenv func(string) string) (options, error) {
	var o options
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	var origins, sameSite, refreshes, verification, secrets, passwordlessFlow, otelMode string
	var oidc provider.OIDCConfig
	var google provider.GoogleConfig
	var github provider.GitHubConfig
	env := func(name, def string) string {
		if v := getenv(name); v != "" {
			return v
		}
		return def
	}
	dur := func(p *time.Duration, name, envName string, def time.Duration, usage string) error {
		d := def
		if v := getenv(envName); v != "" {
			var err error
			if d, err = time.ParseDuration(v); err != nil {
				return fmt.Errorf("%s: %v", envName, err)
			}
		}
		fs.DurationVar(p, name, d, usage+" (env "+envName+")")
		return nil
	}
	fs.StringVar(&o.addr, "addr", env("DEMO_ADDR", "127.0.0.1:8080"), "address to listen on (env DEMO_ADDR)")
	fs.StringVar(&o.db, "db", env("DEMO_DB", "sqlite:auth.db"), "store: sqlite:PATH, postgres://..., mysql://user:pass@host:port/db or memory (env DEMO_DB)")
	fs.StringVar(&o.smtp, "smtp", env("DEMO_SMTP", ""), "SMTP server for password reset, verification and passwordless email: smtp://[user:pass@]host:port (STARTTLS, optional for a loopback relay such as Mailpit), smtps://... (TLS); unset: print email to stdout (env DEMO_SMTP)")
	fs.StringVar(&o.appURL, "app-url", env("DEMO_APP_URL", ""), "public URL of the app, the base of links in email; on a loopback -addr, its host is the one the demo answers besides localhost, 127.0.0.1 and [::1] on its port; default http://<addr>, or http://localhost:PORT with -dev (env DEMO_APP_URL)")
	fs.StringVar(&origins, "allowed-origin", env("DEMO_ALLOWED_ORIGIN", ""), "comma-separated origins of frontends on other origins, as in http://localhost:5173 (env DEMO_ALLOWED_ORIGIN)")
	fs.StringVar(&refreshes, "session-refreshes", env("DEMO_SESSION_REFRESHES", ""), "how often one session may refresh: BURST/INTERVAL, as in 60/2s (the default), or off, for load tests (env DEMO_SESSION_REFRESHES)")
	fs.StringVar(&sameSite, "samesite", env("DEMO_SAMESITE", "lax"), "SameSite of the session cookies: lax, strict or none; none needs Secure cookies, so https or a loopback -addr (env DEMO_SAMESITE)")
	fs.StringVar(&oidc.Issuer, "oidc-issuer", env("DEMO_OIDC_ISSUER", ""), "issuer URL of an OpenID Connect provider to sign in with, found by discovery: https, or http on loopback; needs -oidc-client-id (env DEMO_OIDC_ISSUER)")
	fs.StringVar(&oidc.ClientID, "oidc-client-id", env("DEMO_OIDC_CLIENT_ID", ""), "client id registered at the -oidc-issuer provider (env DEMO_OIDC_CLIENT_ID)")
	fs.StringVar(&oidc.ClientSecret, "oidc-client-secret", env("DEMO_OIDC_CLIENT_SECRET", ""), "client secret of -oidc-client-id; prefer the env twin (env DEMO_OIDC_CLIENT_SECRET)")
	fs.StringVar(&oidc.ID, "oidc-id", env("DEMO_OIDC_ID", "oidc"), "thirdPartyId of the -oidc-issuer provider: the last segment of its redirect URI, <app-url>/auth/callback/<id> (env DEMO_OIDC_ID)")
	fs.StringVar(&oidc.Name, "oidc-name", env("DEMO_OIDC_NAME", ""), "name the page shows for the -oidc-issuer provider, as in \"Sign in with <name>\"; default the -oidc-id (env DEMO_OIDC_NAME)")
	fs.StringVar(&google.ClientID, "google-client-id", env("DEMO_GOOGLE_CLIENT_ID", ""), "OAuth client id from the Google Cloud console: enables sign-in with Google; needs -google-client-secret (env DEMO_GOOGLE_CLIENT_ID)")
	fs.StringVar(&google.ClientSecret, "google-client-secret", env("DEMO_GOOGLE_CLIENT_SECRET", ""), "client secret of -google-client-id; prefer the env twin (env DEMO_GOOGLE_CLIENT_SECRET)")
	fs.StringVar(&github.ClientID, "github-client-id", env("DEMO_GITHUB_CLIENT_ID", ""), "client id of a GitHub OAuth app: enables sign-in with GitHub; needs -github-client-secret (env DEMO_GITHUB_CLIENT_ID)")
	fs.StringVar(&github.ClientSecret, "github-client-secret", env("DEMO_GITHUB_CLIENT_SECRET", ""), "client secret of -github-client-id; prefer the env twin (env DEMO_GITHUB_CLIENT_SECRET)")
	fs.StringVar(&verification, "email-verification", env("DEMO_EMAIL_VERIFICATION", "off"), "email verification: off, optional (the session says whether the email is verified) or required (also /api/me refuses an unverified one); links are emailed as reset links are (env DEMO_EMAIL_VERIFICATION)")
	var mfa string
	fs.StringVar(&mfa, "mfa", env("DEMO_MFA", "off"), "second factor every user must complete after signing in: off, totp, or totp,webauthn (one of them; webauthn needs -passkeys); the page sets up an authenticator app and shows recovery codes (env DEMO_MFA)")
	fs.StringVar(&otelMode, "otel", env("DEMO_OTEL", "off"), "OpenTelemetry: off, or stdout (a span for each auth request and store call, a line of JSON each on standard output; a traceparent header joins the caller's trace) (env DEMO_OTEL)")
	fs.StringVar(&passwordlessFlow, "passwordless", env("DEMO_PASSWORDLESS", "off"), "passwordless sign-in by email: off, code (a six-digit code to type), link (a link to open) or code-and-link; emailed as reset links are, links open <app-url>/auth/verify (env DEMO_PASSWORDLESS)")
	// Not defaulted from the environment like the others, so that -h
	// does not print the secret.
	fs.StringVar(&secrets, "secret", "", "secret that seals the signing keys in the store, at least 32 random bytes (openssl rand -base64 32); comma-separated to rotate: the first seals, all open; unset: keys in the clear; prefer the env twin (env DEMO_SECRET)")
	linking, err := envBool(getenv, "DEMO_ACCOUNT_LINKING")
	if err != nil {
		return o, err
	}
	fs.BoolVar(&o.accountLinking, "account-linking", linking, "join a new login method to the user who has its email when the method proves the address (a provider vouches for it); a method that proves nothing joins nobody (env DEMO_ACCOUNT_LINKING)")
	passkeys, err := envBool(getenv, "DEMO_PASSKEYS")
	if err != nil {
		return o, err
	}
	fs.BoolVar(&o.passkeys, "passkeys", passkeys, "sign-in with passkeys (WebAuthn); the relying party is the host of -app-url, which browsers refuse as an IP address: open the app on localhost, as in -app-url http://localhost:8080 (env DEMO_PASSKEYS)")
	dev, err := envBool(getenv, "DEMO_DEV")
	if err != nil {
		return o, err
	}
	tenants, err := envBool(getenv, "DEMO_TENANTS")
	if err != nil {
		return o, err
	}
	fs.BoolVar(&o.tenants, "tenants", tenants, "a second tenant, acme, beside the public one: its people sign in only with its own development provider (at /dev/acme-oidc) and must complete TOTP; open the page with ?tenantId=acme; needs -dev (env DEMO_TENANTS)")
	var admins []string
	adminFlag(fs, &admins)
	var apiKey, bundle string
	dashboardFlags(fs, env, &apiKey, &bundle)
	fs.BoolVar(&o.dev, "dev", dev, "development mode, to try everything offline: every sign-in method (email verification optional, account linking, passwordless code-and-link, passkeys, TOTP offered), a development OpenID provider at /dev/oidc and the emails sent at /dev/outbox; app URL http://localhost:PORT; other flags still win; loopback -addr only, answering only its own hosts (env DEMO_DEV)")
	for _, err := range []error{
		dur(&o.accessTTL, "access-ttl", "DEMO_ACCESS_TTL", auth.DefaultAccessTokenLifetime, "access token lifetime"),
		dur(&o.refreshTTL, "refresh-ttl", "DEMO_REFRESH_TTL", auth.DefaultRefreshTokenLifetime, "session lifetime without a refresh"),
		dur(&o.resetTTL, "reset-ttl", "DEMO_RESET_TTL", emailpassword.DefaultResetTokenLifetime, "password reset token lifetime"),
		dur(&o.freshSignIn, "fresh-sign-in", "DEMO_FRESH_SIGN_IN", auth.DefaultFreshSignIn, "how recent a sign-in deleting the account and adding a password need; past it the page asks for the password again"),
	} {
		if err != nil {
			return o, err
		}
	}
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	if o.dev {
		// -dev turns on what the command line leaves unsaid: a flag or
		// its environment twin still wins.
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		said := func(name, envName string) bool { return set[name] || getenv(envName) != "" }
		if !isLoopback(o.addr) {
			return o, fmt.Errorf("-dev: -addr %q is not a loopback address: the development provider signs in anyone who asks and the outbox shows every email, so -dev listens only on 127.0.0.1, ::1 or localhost", o.addr)
		}
		if o.appURL == "" {
			// Passkeys need a domain name: localhost, not 127.0.0.1.
			_, port, _ := net.SplitHostPort(o.addr)
			o.appURL = "http://localhost:" + port
		}
		if !said("email-verification", "DEMO_EMAIL_VERIFICATION") {
			verification = "optional"
		}
		if !said("account-linking", "DEMO_ACCOUNT_LINKING") {
			o.accountLinking = true
		}
		if !said("passwordless", "DEMO_PASSWORDLESS") {
			passwordlessFlow = string(passwordless.CodeAndLink)
		}
		if !said("passkeys", "DEMO_PASSKEYS") {
			o.passkeys = true
		}
		if !said("mfa", "DEMO_MFA") {
			o.mfaOffered = []string{auth.FactorTOTP}
			if o.passkeys {
				o.mfaOffered = append(o.mfaOffered, auth.FactorWebAuthn)
			}
		}
	}
	if o.appURL == "" {
		o.appURL = "http://" + o.addr
	}
	if o.admins = parseAdmins(admins, getenv); len(o.admins) > 0 {
		o.roles = roles.New(roles.Config{})
	}
	if apiKey != "" {
		o.dashboard = dashboard.New(dashboard.Config{APIKey: apiKey, BundleURL: bundle, Permission: dashboardPermission})
	}
	for _, origin := range strings.Split(origins, ",") {
		if origin = strings.TrimSpace(origin); origin == "" {
			continue
		}
		if u, err := url.Parse(origin); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
			strings.TrimRight(u.Path, "/") != "" || u.RawQuery != "" || u.User != nil {
			return o, fmt.Errorf("-allowed-origin %q: want an origin, as in https://app.example.com", origin)
		}
		o.origins = append(o.origins, origin)
	}
	secretSet := false
	fs.Visit(func(f *flag.Flag) { secretSet = secretSet || f.Name == "secret" })
	if !secretSet {
		secrets = getenv("DEMO_SECRET")
	}
	for _, secret := range strings.Split(secrets, ",") {
		// auth.New checks the secrets themselves, without echoing them.
		if secret = strings.TrimSpace(secret); secret != "" {
			o.secrets = append(o.secrets, secret)
		}
	}
	switch strings.ToLower(sameSite) {
	case "lax":
		o.sameSite = http.SameSiteLaxMode
	case "strict":
		o.sameSite = http.SameSiteStrictMode
	case "none":
		o.sameSite = http.SameSiteNoneMode
	default:
		return o, fmt.Errorf("-samesite %q: want lax, strict or none", sameSite)
	}
	switch strings.ToLower(verification) {
	case "off":
		o.emailVerification = emailverification.Off
	case "optional":
		o.emailVerification = emailverification.Optional
	case "required":
		o.emailVerification = emailverification.Required
	default:
		return o, fmt.Errorf("-email-verification %q: want off, optional or required", verification)
	}
	switch flow := passwordless.Flow(strings.ToLower(passwordlessFlow)); flow {
	case "off":
		o.passwordless = passwordless.Off
	case passwordless.Code, passwordless.Link, passwordless.CodeAndLink:
		o.passwordless = flow
	default:
		return o, fmt.Errorf("-passwordless %q: want off, code, link or code-and-link", passwordlessFlow)
	}
	if o.mfa, err = parseMFA(mfa, o.passkeys); err != nil {
		return o, err
	}
	if o.otel, err = parseOTel(otelMode); err != nil {
		return o, err
	}
	if o.freshSignIn <= 0 || o.freshSignIn > auth.MaxFreshSignIn {
		return o, fmt.Errorf("-fresh-sign-in %v: want more than 0 and at most %v", o.freshSignIn, auth.MaxFreshSignIn)
	}
	if o.refreshes, err = parseRate(refreshes); err != nil {
		return o, fmt.Errorf("-session-refreshes: %v", err)
	}
	if o.sameSite == http.SameSiteNoneMode && !isLoopback(o.addr) && strings.HasPrefix(o.appURL, "http:") {
		return o, errors.New("-samesite none needs Secure cookies: an https -app-url or a loopback -addr")
	}
	if u, err := url.Parse(o.appURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return o, fmt.Errorf("-app-url %q: want an http or https URL", o.appURL)
	}
	if o.passkeys {
		if err := checkPasskeyHost(o.appURL); err != nil {
			return o, err
		}
	}
	if o.smtp != "" {
		if _, err := mailer.NewSMTP(o.smtp); err != nil {
			return o, fmt.Errorf("-smtp: %v", err)
		}
	}
	if o.providers, err = providers(oidc, google, github); err != nil {
		return o, err
	}
	if o.tenants {
		if !o.dev {
			return o, errors.New("-tenants needs -dev: acme signs in with a development provider of its own")
		}
		if o.acmeProvider, err = newAcmeProvider(o.appURL); err != nil {
			return o, err
		}
		if !slices.Contains(o.mfa, auth.FactorTOTP) && !slices.Contains(o.mfaOffered, auth.FactorTOTP) {
			o.mfaOffered = append(o.mfaOffered, auth.FactorTOTP) // acme requires it
		}
	}
	// The development provider stands in for a real one: off when one is
	// configured.
	if o.dev && len(o.providers) == 0 {
		if o.devProvider, err = newDevProvider(o.appURL); err != nil {
			return o, fmt.Errorf("-dev: the development provider's issuer is on the app URL, which must be http on localhost or https: -app-url %q: %v", o.appURL, err)
		}
		o.providers = []provider.Provider{o.devProvider.provider}
	}
	return o, nil
}

// checkPasskeyHost refuses an app URL on an IP address with -passkeys:
// the relying party id is the URL's host, and browsers refuse WebAuthn
// on IP addresses, 127.0.0.1 included.
func checkPasskeyHost(appURL string) error {
	u, err := url.Parse(appURL)
	if err != nil {
		return fmt.Errorf("-app-url %q: want an http or https URL", appURL)
	}
	if net.ParseIP(u.Hostname()) == nil {
		return nil
	}
	local := "http://localhost"
	if port := u.Port(); port != "" {
		local += ":" + port
	}
	return fmt.Errorf("-passkeys: the app is on an IP address, %s, and browsers refuse passkeys there: use -app-url %s and open the demo at that URL (or another domain name)", u.Hostname(), local)
}

// envBool reads a boolean environment variable: unset or empty is false,
// anything strconv.ParseBool does not take is an error.
func envBool(getenv func(string) string, name string) (bool, error) {
	v := getenv(name)
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("%s %q: want true or false", name, v)
	}
	return b, nil
}

// thirdPartyID is what the demo accepts as -oidc-id: it names the callback
// page, /auth/callback/<id>, so it must be a plain path segment.
var thirdPartyID = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// providers makes the third-party providers the flags configure: the
// generic OpenID provider when its issuer is set, each preset when its
// client id is set. A setting for a provider that is not enabled is an
// error rather than ignored, so that a typo does not silently turn a
// provider off.
func providers(oidc provider.OIDCConfig, google provider.GoogleConfig, github provider.GitHubConfig) ([]provider.Provider, error) {
	var ps []provider.Provider
	add := func(p provider.Provider, err error) error {
		if err == nil {
			ps = append(ps, p)
		}
		return err
	}
	switch {
	case oidc.Issuer != "":
		if oidc.ClientID == "" {
			return nil, errors.New("-oidc-issuer needs -oidc-client-id")
		}
		if !thirdPartyID.MatchString(oidc.ID) {
			return nil, fmt.Errorf("-oidc-id %q: want lower-case letters, digits, - and _, as in oidc", oidc.ID)
		}
		if oidc.Name == "" {
			oidc.Name = oidc.ID
		}
		// provider.OIDC refuses an issuer that is not https (or http on
		// loopback, a local test provider).
		if err := add(provider.OIDC(oidc)); err != nil {
			return nil, fmt.Errorf("-oidc-issuer %q: %v", oidc.Issuer, err)
		}
	case oidc.ClientID != "", oidc.ClientSecret != "", oidc.ID != "oidc", oidc.Name != "":
		return nil, errors.New("-oidc-client-id, -oidc-client-secret, -oidc-id and -oidc-name need -oidc-issuer")
	}
	switch {
	case google.ClientID != "" && google.ClientSecret == "":
		return nil, errors.New("-google-client-id needs -google-client-secret")
	case google.ClientID != "":
		if err := add(provider.Google(google)); err != nil {
			return nil, fmt.Errorf("-google-client-id: %v", err)
		}
	case google.ClientSecret != "":
		return nil, errors.New("-google-client-secret needs -google-client-id")
	}
	switch {
	case github.ClientID != "" && github.ClientSecret == "":
		return nil, errors.New("-github-client-id needs -github-client-secret")
	case github.ClientID != "":
		if err := add(provider.GitHub(github)); err != nil {
			return nil, fmt.Errorf("-github-client-id: %v", err)
		}
	case github.ClientSecret != "":
		return nil, errors.New("-github-client-secret needs -github-client-id")
	}
	// Only -oidc-id is chosen; the presets have fixed ids.
	for i, p := range ps {
		for _, q := range ps[i+1:] {
			if p.ID() == q.ID() {
				return nil, fmt.Errorf("-oidc-id %q: %s uses that id", p.ID(), q.Name())
			}
		}
	}
	return ps, nil
}

// parseRate reads an allowance written BURST/INTERVAL, or off: so large
// that it is never spent.
func parseRate(s string) (auth.Rate, error) {
	switch s {
	case "":
		return auth.Rate{}, nil
	case "off":
		return auth.Rate{Burst: math.MaxInt32, Every: time.Millisecond}, nil
	}
	burst, every, ok := strings.Cut(s, "/")
	n, err := strconv.Atoi(burst)
	if !ok || err != nil || n < 1 {
		return auth.Rate{}, fmt.Errorf("%q: want BURST/INTERVAL, as in 60/2s, or off", s)
	}
	d, err := time.ParseDuration(every)
	if err != nil || d <= 0 {
		return auth.Rate{}, fmt.Errorf("%q: want BURST/INTERVAL, as in 60/2s, or off", s)
	}
	return auth.Rate{Burst: n, Every: d}, nil
}

// openStore opens the store named by -db and brings its schema up to date.
// The returned function closes the database.
func openStore(ctx context.Context, db string) (store.Store, func() error, error) {
	var driver, dsn string
	var dialect sqlstore.Dialect
	switch {
	case db == "memory":
		return memstore.New(), func() error { return nil }, nil
	case strings.HasPrefix(db, "sqlite:"):
		path := strings.TrimPrefix(db, "sqlite:")
		if path == "" {
			return nil, nil, errors.New("-db sqlite: needs a file path, as in sqlite:auth.db")
		}
		// WAL lets readers work beside the writer; the busy timeout
		// queues writers; synchronous=FULL makes every commit survive
		// power loss, not just a crash of the process.
		driver, dialect = "sqlite", sqlstore.SQLite
		dsn = "file:" + path + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)"
	case strings.HasPrefix(db, "postgres://"), strings.HasPrefix(db, "postgresql://"):
		driver, dialect = "pgx", sqlstore.Postgres
		var err error
		if dsn, err = postgresDSN(ctx, db); err != nil {
			return nil, nil, fmt.Errorf("-db %s: %w", redact(db), err)
		}
	case strings.HasPrefix(db, "mysql://"):
		var err error
		if dsn, err = mysqlDSN(db); err != nil {
			return nil, nil, err
		}
		driver, dialect = "mysql", sqlstore.MySQL
	default:
		return nil, nil, fmt.Errorf("-db %q: want memory, sqlite:PATH, postgres://... or mysql://...", db)
	}
	sqldb, err := sql.Open(driver, dsn)
	if err != nil {
		return nil, nil, err
	}
	// The pool is left to sqlstore.New, which bounds an unbounded one:
	// at most sqlstore.DefaultMaxOpenConns (9) connections per instance,
	// opened as the load needs them, each closed after 30 seconds unused.
	// Ten instances fit in PostgreSQL's default of 100 connections.
	st, err := sqlstore.New(sqldb, dialect)
	if err == nil {
		err = st.Migrate(ctx)
	}
	if err != nil {
		sqldb.Close()
		return nil, nil, fmt.Errorf("-db %s: %w", redact(db), err)
	}
	return st, sqldb.Close, nil
}

// postgresDSN is a postgres:// URL for pgx. Through a proxy, which may
// pool transactions (PgBouncer in transaction mode, as Supabase, Neon
// and RDS Proxy run it), it asks for the query mode that works there,
// unless the URL names one: pgx's default prepares each statement once
// on a server connection and keeps it there by name, and the proxy may
// give that connection to another client's next transaction, or to the
// next process. Exec mode sends each statement unnamed and keeps none.
// Connected directly, the default is faster. A proxy shows itself by a
// server port other than the URL's.
func postgresDSN(ctx context.Context, raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", err
	}
	q := u.Query()
	if q.Get("default_query_exec_mode") != "" {
		return raw, nil
	}
	port, err := serverPort(ctx, u)
	if err != nil {
		return "", err
	}
	urlPort := u.Port()
	if urlPort == "" {
		urlPort = "5432"
	}
	if !port.Valid || strconv.FormatInt(port.Int64, 10) == urlPort {
		return raw, nil
	}
	slog.Info("demo: PostgreSQL through a proxy: pgx query mode exec, which works with transaction pooling",
		"url_port", urlPort, "server_port", port.Int64)
	q.Set("default_query_exec_mode", "exec")
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// serverPort asks the server which port it listens on, in the simple
// protocol: pgx's default would leave the query behind as a statement
// prepared under a name made from its text, on a server connection that
// a proxy keeps when this process has gone, and the same probe of the
// next process to get that connection would fail with "prepared
// statement ... already exists".
func serverPort(ctx context.Context, u *url.URL) (sql.NullInt64, error) {
	probeURL := *u
	q := probeURL.Query()
	q.Set("default_query_exec_mode", "simple_protocol")
	probeURL.RawQuery = q.Encode()
	var port sql.NullInt64
	probe, err := sql.Open("pgx", probeURL.String())
	if err != nil {
		return port, err
	}
	defer probe.Close()
	err = probe.QueryRowContext(ctx, "SELECT inet_server_port()").Scan(&port)
	return port, err
}

// mysqlDSN turns mysql://user:pass@host:port/db?params into the DSN of
// go-sql-driver/mysql.
func mysqlDSN(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || strings.Trim(u.Path, "/") == "" {
		return "", fmt.Errorf("-db %q: want mysql://user:pass@host:port/database", redact(raw))
	}
	cfg := mysql.NewConfig()
	cfg.Net, cfg.Addr, cfg.DBName = "tcp", u.Host, strings.Trim(u.Path, "/")
	// One round trip per statement, not prepare, execute and close; the
	// driver escapes for the utf8mb4 connection it opens.
	cfg.InterpolateParams = true
	if u.User != nil {
		cfg.User = u.User.Username()
		cfg.Passwd, _ = u.User.Password()
	}
	return cfg.FormatDSN(), nil
}

// redact hides the password of a database URL.
func redact(db string) string {
	if u, err := url.Parse(db); err == nil && u.User != nil {
		return u.Redacted()
	}
	return db
}

func run(args []string, getenv func(string) string) error {
	o, err := parseOptions(args, getenv)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	st, closeStore, err := openStore(context.Background(), o.db)
	if err != nil {
		return err
	}
	defer closeStore()
	stopOTel, err := startOTel(&o, os.Stdout)
	if err != nil {
		return err
	}
	defer func() {
		if err := stopOTel(context.Background()); err != nil {
			fmt.Fprintln(os.Stderr, "demo: -otel:", err)
		}
	}()
	st = traceStore(o, st)
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	var m mailer.Mailer = mailer.NewLog(os.Stdout)
	if o.smtp != "" {
		if m, err = mailer.NewSMTP(o.smtp); err != nil {
			return err
		}
	}
	var ob *outbox
	if o.dev {
		ob = newOutbox(m)
		m = ob
	}
	a, err := newAuth(o, st, m, os.Stdout, logger)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           handler(a, st, o, ob, ln.Addr()),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go cleanExpired(ctx, st, logger)

	for _, p := range o.providers {
		if o.devProvider == nil || p != o.devProvider.provider {
			fmt.Printf("demo: sign-in with %s: redirect URI %s\n", p.Name(), callbackURL(o.appURL, p.ID()))
		}
	}
	if f := o.features(); f.EmailVerification != "off" || f.AccountLinking {
		fmt.Printf("demo: email verification %s, account linking %s\n", f.EmailVerification, onOff(f.AccountLinking))
	}
	if o.passwordless != passwordless.Off {
		fmt.Printf("demo: passwordless sign-in by email: %s\n", o.passwordless)
	}
	if o.passkeys {
		u, _ := url.Parse(o.appURL)
		fmt.Printf("demo: passkeys on, for %s (open the page there)\n", u.Scheme+"://"+u.Host)
	}
	if len(o.mfa) > 0 {
		fmt.Printf("demo: MFA on: every user completes %s after signing in\n", strings.Join(o.mfa, " or "))
	}
	if len(o.mfaOffered) > 0 {
		fmt.Printf("demo: MFA offered: users may set up %s, then complete it at each sign-in\n", strings.Join(o.mfaOffered, " or "))
	}
	fmt.Print(printAdmins(o))
	if o.dev {
		printDev(os.Stdout, o)
	}
	printTenants(os.Stdout, o)
	fmt.Printf("demo: listening on http://%s (store: %s)\n", ln.Addr(), redact(o.db))
	if o.dev {
		fmt.Printf("demo: open %s\n", o.appURL)
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = srv.Shutdown(shutdown)
	// Send the reset and verification emails still queued.
	return errors.Join(err, a.Close(shutdown))
}

// handler is everything the demo serves on a listener at addr: the routes
// of newMux and, with -dev, of devRoutes, under CORS for -allowed-origin,
// and on loopback only for its own hosts (guardHosts).
func handler(a *auth.Auth, st store.Store, o options, ob *outbox, addr net.Addr) http.Handler {
	mux := newMux(a, st, o.features())
	if o.roles != nil {
		adminRoutes(mux, a)
		mountOperators(mux, a, o.roles, o.tenants)
	}
	liveRoutes(mux, a, st, o)
	devRoutes(mux, o, ob)
	return guardHosts(a.CORS(traceAuth(o, mux)), o.appURL, addr)
}

// newAuth configures the library as the options say: m sends the reset
// and verification emails, stdout is where the demo tells of mail that
// could not be sent.
func newAuth(o options, st store.Store, m mailer.Mailer, stdout io.Writer, logger *slog.Logger) (*auth.Auth, error) {
	// The library counts attempts in the store by default, so several
	// demo instances on one database share the limits.
	a, err := auth.New(auth.Config{
		Store:                st,
		AccessTokenLifetime:  o.accessTTL,
		RefreshTokenLifetime: o.refreshTTL,
		Email:                auth.EmailConfig{Mailer: m},
		EmailPassword:        emailpassword.Config{ResetTokenLifetime: o.resetTTL},
		AppURL:               o.appURL,
		Logger:               logger,
		OnEvent:              traceEvents(o, eventHooks(tellMailFailures(stdout), sessionStarts.record, grantAdmin(o, st), liveUsers.notify)), // see account.go, admins.go, live.go and otel.go
		Metrics:              metricsOf(o),
		AllowedOrigins:       o.origins,
		RateLimits:           auth.RateLimits{SessionRefreshes: o.refreshes},
		// POST /auth/user/delete: users may delete their accounts
		// (account.go).
		BeforeDeleteUser: beforeDeleteUser,
		// Deleting the account and adding a password need a sign-in
		// this recent (-fresh-sign-in).
		FreshSignIn: o.freshSignIn,
		// The account page changes the account's email: links open
		// <app-url>/auth/change-email and /auth/undo-email-change, pages
		// of the demo.
		EmailChange: emailchange.Config{Enabled: true},
		// Each provider sends the browser back to the page at
		// <app-url>/auth/callback/<id>, the redirect URI to register.
		ThirdParty: thirdparty.Config{Providers: o.providers},
		// Verification links go to <app-url>/auth/verify-email, a page
		// of the demo, through the mailer of the reset emails.
		EmailVerification: emailverification.Config{Mode: o.emailVerification},
		AccountLinking:    o.accountLinking,
		// Codes and links go through the same mailer; links open
		// <app-url>/auth/verify, a page of the demo.
		Passwordless: passwordless.Config{Flow: o.passwordless},
		// With -passkeys, the relying party is the host of -app-url;
		// recovery links go through the same mailer and open
		// <app-url>/auth/webauthn/recover, a page of the demo (and of
		// the SuperTokens prebuilt UI).
		Passkeys: passkeyConfig(o),
		// With -admin, sessions carry their roles and permissions, the
		// admin page (/admin, operators.go) acts as users and reads the
		// audit log.
		Roles:         rolesOf(o),
		Impersonation: auth.ImpersonationConfig{Enabled: o.roles != nil, Permission: impersonatePermission},
		Audit:         auth.AuditConfig{Enabled: o.roles != nil},
		// With -admin-api-key, the dashboard at /auth/dashboard.
		Dashboard: dashboardOf(o),
		// With -mfa, every user sets up an authenticator app (or, with
		// totp,webauthn, a passkey) and completes it at each sign-in;
		// /api/me answers 403 st-mfa until they do.
		// With -dev, users may set up TOTP (or a passkey) themselves.
		MFA: auth.MFAConfig{Required: o.mfa, Factors: o.mfaOffered, Issuer: "auth demo"},
		// With -tenants, acme's rules are data, written at start
		// (tenants.go), and acme's people are invited from the admin
		// page.
		Tenants: auth.TenantsConfig{Enabled: o.tenants},
		// With -secret, a copy of the database alone cannot mint tokens;
		// a wrong secret stops the demo at start.
		Secrets: o.secrets,
		// Browsers and curl treat http://localhost and 127.0.0.1 as
		// secure, so Secure cookies work there; other hosts need TLS.
		// SameSite=None cookies must be Secure: auth.New refuses the
		// combination with InsecureAllowHTTP.
		Cookie: auth.CookieConfig{
			SameSite:          o.sameSite,
			InsecureAllowHTTP: !isLoopback(o.addr) && strings.HasPrefix(o.appURL, "http:"),
		},
	})
	if err != nil {
		return nil, err
	}
	if err := setUpTenants(context.Background(), a, o); err != nil {
		return nil, err
	}
	return a, setUpAdmins(context.Background(), o, st)
}

// parseMFA reads -mfa: off, or the factors of which every user must
// complete one.
func parseMFA(s string, passkeys bool) ([]string, error) {
	switch strings.ToLower(strings.ReplaceAll(s, " ", "")) {
	case "off", "":
		return nil, nil
	case "totp":
		return []string{auth.FactorTOTP}, nil
	case "totp,webauthn", "webauthn,totp":
		if !passkeys {
			return nil, errors.New("-mfa totp,webauthn needs -passkeys")
		}
		return []string{auth.FactorTOTP, auth.FactorWebAuthn}, nil
	}
	return nil, fmt.Errorf("-mfa %q: want off, totp or totp,webauthn", s)
}

// passkeyConfig is the passkey configuration of the options: off unless
// -passkeys.
func passkeyConfig(o options) auth.Recipe {
	if !o.passkeys {
		return nil
	}
	return passkey.New(passkey.Config{})
}

// me is the answer of GET /api/me and GET /api/verification.
type me struct {
	Email  string `json:"email"`
	UserID string `json:"userId"`
	// EmailVerified says whether the email of the login method the
	// session was started with is verified, read from the store; absent
	// while email verification is off, in /api/me.
	EmailVerified *bool `json:"emailVerified,omitempty"`
	// Roles and Permissions are the user's, read from the store, with
	// -admin (roles on); absent otherwise.
	Roles       []string `json:"roles,omitzero"`
	Permissions []string `json:"permissions,omitzero"`
	// Operator is the operator acting as the user (the admin page's
	// "Act as"), absent in the user's own sessions.
	Operator string `json:"operator,omitempty"`
	// TenantID is the tenant the session belongs to: "public", or acme
	// with -tenants.
	TenantID string `json:"tenantId"`
}

// features is the answer of GET /api/config: what the page must know of
// the server's settings that GET /auth/loginmethods does not say.
type features struct {
	EmailVerification string `json:"emailVerification"` // off, optional or required
	AccountLinking    bool   `json:"accountLinking"`
	// Passwordless is code, link or code-and-link; absent when off. The
	// page only shows it (it learns the flow from GET /auth/loginmethods,
	// as any SDK page would); the mux serves the link page by it.
	Passwordless string `json:"passwordless,omitempty"`
	// Passkeys is true with -passkeys; absent when off. Like
	// Passwordless, it is for show: the page learns it from GET
	// /auth/loginmethods (firstFactors webauthn).
	Passkeys bool `json:"passkeys,omitempty"`
	// MFA are the second factors of -mfa, one of which every user must
	// complete; absent when off.
	MFA []string `json:"mfa,omitempty"`
	// Dev is true with -dev, absent otherwise: the page shows that the
	// demo is in development mode, with links to /dev/outbox and to the
	// development provider.
	Dev bool `json:"dev,omitempty"`
	// Roles is true with -admin: /api/me lists the user's roles and
	// permissions, and GET /api/admin needs the role admin.
	Roles bool `json:"roles,omitempty"`
	// Account is true where the demo serves the account page (/account,
	// /api/account): with any feature beyond email and password, so that
	// the minimal server serves what it always has.
	Account bool `json:"account,omitempty"`
	// Tenants is true with -tenants: the admin page lists the tenants.
	Tenants bool `json:"tenants,omitempty"`
}

func (o options) features() features {
	f := features{EmailVerification: string(o.emailVerification), AccountLinking: o.accountLinking, Passwordless: string(o.passwordless), Passkeys: o.passkeys, MFA: o.mfa, Dev: o.dev, Roles: o.roles != nil, Tenants: o.tenants}
	if f.EmailVerification == "" {
		f.EmailVerification = "off"
	}
	f.Account = f.EmailVerification != "off" || f.AccountLinking || f.Passwordless != "" || f.Passkeys ||
		len(f.MFA) > 0 || len(o.mfaOffered) > 0 || len(o.providers) > 0 || f.Dev
	return f
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// newMux mounts the auth handler and the demo's own routes; f must say
// what a was configured with.
func newMux(a *auth.Auth, st store.Store, f features) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("/auth/", a)
	// The email cache is here for internal/cmd/loadtest, which measures
	// /api/me against /api/ping: without it, every /api/me on a SQL store
	// reads the user, and the figure is the database's, not the session
	// check's. An app that reads the user per request needs no such cache.
	emails := newEmailCache(func(ctx context.Context, userID string) (string, error) {
		u, err := a.UserByID(ctx, userID)
		return u.Email, err
	})
	// In required mode RequireSession answers a session whose email is
	// not verified 403 "invalid claim", before the handler runs.
	mux.Handle("GET /api/me", a.RequireSession(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s, _ := auth.SessionFromContext(r.Context())
		if f.EmailVerification != "off" {
			// The verification state can change at any moment: read it
			// rather than cache it.
			serveMe(w, r, a, st, f.Roles)
			return
		}
		email, err := emails.email(r.Context(), s.UserID)
		if errors.Is(err, store.ErrNotFound) {
			http.Error(w, `{"message":"unauthorised"}`, http.StatusUnauthorized)
			return
		} else if err != nil {
			http.Error(w, `{"message":"internal error"}`, http.StatusInternalServerError)
			return
		}
		m := me{Email: email, UserID: s.UserID, Operator: s.Operator, TenantID: s.TenantID}
		if err := withRoles(r.Context(), st, f.Roles, &m); err != nil {
			http.Error(w, `{"message":"internal error"}`, http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(m)
	})))
	// GET /api/verification is /api/me for a session whose email is not
	// verified, which required mode keeps out of /api/me: the page asks it
	// who is signed in, to show whom it asks to verify. Any route that an
	// unverified user must reach is wrapped the same way.
	mux.Handle("GET /api/verification", a.RequireSession(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		serveMe(w, r, a, st, f.Roles)
	}), auth.AllowUnverifiedEmail()))
	// GET /api/config tells the page what it cannot learn from the SDK:
	// whether to ask for a verified email, and how insistently.
	mux.HandleFunc("GET /api/config", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-cache")
		json.NewEncoder(w).Encode(f)
	})
	// GET /api/ping is here for internal/cmd/loadtest: a trivial handler,
	// the baseline its /api/me figure is measured against. An app does
	// not need it.
	mux.HandleFunc("GET /api/ping", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"ok":true}` + "\n"))
	})
	// The web front end. The reset page the emailed links open is the
	// same page: a more specific pattern than /auth/, so it wins over the
	// auth handler.
	page := func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Type", "text/html; charset=utf-8")
		h.Set("Cache-Control", "no-cache")
		// connect-src allows other http(s) origins: a copy of the page may
		// name an API on another origin (meta name="api-domain"); ws: and
		// wss: for the account page's live list (live.go), which 'self'
		// does not cover in every browser.
		h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; connect-src 'self' http: https: ws: wss:; frame-ancestors 'none'")
		h.Set("Referrer-Policy", "no-referrer") // reset and verification tokens are in the URL
		h.Set("X-Content-Type-Options", "nosniff")
		w.Write(indexPage)
	}
	mux.HandleFunc("GET /{$}", page)
	// The admin page, whose API is operators.go's.
	if f.Roles {
		mux.HandleFunc("GET /admin", page)
	}
	// The account page, and its API (account.go).
	if f.Account {
		mux.HandleFunc("GET /account", page)
		mountAccount(mux, a, sessionStarts)
	}
	mux.HandleFunc("GET /auth/reset-password", page)
	// The links that change the account's email, and undo a change
	// (emailchange.Config's URL and UndoURL defaults), open this page
	// too; each waits for a click.
	mux.HandleFunc("GET /auth/change-email", page)
	mux.HandleFunc("GET /auth/undo-email-change", page)
	// Verification links open this page too (emailverification.Config.URL's
	// default); with verification off it says so.
	mux.HandleFunc("GET /auth/verify-email", page)
	// Invitations to a tenant (-tenants) open this page too
	// (auth.TenantsConfig.InvitationURL's default).
	mux.HandleFunc("GET /auth/invitation", page)
	// The providers send the browser back here, to finish the sign-in
	// (POST /auth/callback/apple, Apple's form post, still goes to the
	// auth handler, which redirects here).
	mux.HandleFunc("GET /auth/callback/{thirdPartyId}", page)
	// Passwordless sign-in links open this page too
	// (passwordless.Config.LinkURL's default). It spends nothing by being
	// opened: its script posts the link's code, at once in the browser
	// that asked for the link, after a click in any other.
	if f.Passwordless == string(passwordless.Link) || f.Passwordless == string(passwordless.CodeAndLink) {
		mux.HandleFunc("GET /auth/verify", page)
	}
	// Passkey recovery links open this page too
	// (passkey.Config.RecoveryURL's default); it registers a new passkey
	// after a click.
	if f.Passkeys {
		mux.HandleFunc("GET /auth/webauthn/recover", page)
	}
	assets, _ := fs.Sub(static, "static")
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(assets)))
	return mux
}

// serveMe answers the session's user and whether the email of the login
// method it was started with is verified, both read from the store.
func serveMe(w http.ResponseWriter, r *http.Request, a *auth.Auth, st store.Store, withRoleList bool) {
	s, _ := auth.SessionFromContext(r.Context())
	u, err := a.UserByID(r.Context(), s.UserID)
	if errors.Is(err, store.ErrNotFound) {
		http.Error(w, `{"message":"unauthorised"}`, http.StatusUnauthorized)
		return
	} else if err != nil {
		http.Error(w, `{"message":"internal error"}`, http.StatusInternalServerError)
		return
	}
	// A session names its login method; one from before there were
	// several names none, and means the user's first.
	loginID := s.LoginID
	if loginID == "" {
		loginID = u.ID
	}
	verified := false
	for _, l := range u.LoginMethods {
		if l.ID == loginID {
			// A login without an email has none to verify: the library
			// counts it as verified.
			verified = l.Email == "" || l.EmailVerified
		}
	}
	m := me{Email: u.Email, UserID: u.ID, EmailVerified: &verified, Operator: s.Operator, TenantID: s.TenantID}
	if err := withRoles(r.Context(), st, withRoleList, &m); err != nil {
		http.Error(w, `{"message":"internal error"}`, http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(m)
}

// callbackURL is the redirect URI to register at a provider: the page the
// SDK asks the provider to send the browser back to.
func callbackURL(appURL, id string) string {
	u, err := url.Parse(appURL)
	if err != nil {
		return ""
	}
	return u.Scheme + "://" + u.Host + "/auth/callback/" + url.PathEscape(id)
}

// tellMailFailures says on w, where the demo prints reset and verification
// emails, that one was not sent: a user waiting for a link there would otherwise see
// nothing, the reason being only in the log on standard error.
func tellMailFailures(w io.Writer) func(context.Context, auth.Event) {
	return func(_ context.Context, e auth.Event) {
		if e.Kind == auth.EventMailFailed {
			fmt.Fprintln(w, "demo: an email could not be sent; the reason is in the log (standard error)")
		}
	}
}

// cleanExpired deletes expired sessions and keys once an hour.
func cleanExpired(ctx context.Context, st store.Store, logger *slog.Logger) {
	t := time.NewTicker(time.Hour)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := st.DeleteExpired(ctx, time.Now()); err != nil {
				logger.Warn("deleting expired sessions", "error", err)
			}
		}
	}
}

func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
