package auth

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"reflect"
	"strings"
	"time"

	"github.com/latchkit/auth/internal/kit"
)

// Rate is an allowance: Burst attempts at once, then one per Every.
type Rate struct {
	Burst int
	Every time.Duration
}

// RateLimits sets the allowances. A zero Rate means its default.
type RateLimits struct {
	// SignInFailures bounds failed sign-ins for one email from one client
	// address. Keyed by the pair, so an attacker elsewhere cannot lock
	// the user out. Default 10, then 1 every 6 minutes (10 an hour).
	SignInFailures Rate
	// ClientSignInFailures bounds failed sign-ins from one client address
	// over all emails, against credential stuffing. Default 100, then 1
	// every 36 seconds (100 an hour).
	ClientSignInFailures Rate
	// AccountSignInFailures is a backstop on failed sign-ins for one
	// email from all addresses together, against guessing from many
	// addresses. It does not lock the owner out: once it is spent, each
	// address gets one attempt per SignInFailures.Every for that email
	// instead of SignInFailures.Burst, so a user who types the password
	// right still signs in from anywhere, and one who mistypes waits an
	// interval. Default 100, then 1 every 36 seconds (100 an hour).
	AccountSignInFailures Rate
	// ResetEmails bounds reset emails sent to one address, so nobody can
	// flood an inbox. Requests past it are answered as usual, without an
	// email. Default 3, then 1 every 20 minutes.
	ResetEmails Rate
	// ClientResetRequests bounds reset requests from one client address.
	// Default 20, then 1 every 3 minutes.
	ClientResetRequests Rate
	// ClientNewPasswords bounds sign-ups and reset submissions from one
	// client address: each hashes a new password, and without a bound
	// one client could take every hash slot (EmailPassword.MaxConcurrentHashes)
	// from other users. Default 30, then 1 every 30 seconds (120 an
	// hour), room for a classroom behind one NAT.
	ClientNewPasswords Rate
	// ClientEmailChecks bounds lookups on the email-exists endpoint from
	// one client address, which would otherwise list accounts as fast as
	// it is asked. The sign-up forms ask once per email typed. Default
	// 50, then 1 every 10 seconds (360 an hour).
	ClientEmailChecks Rate
	// SessionRefreshes bounds how often one session may refresh, so that
	// nobody holding a session can make the store work, or grow, at the
	// server's full refresh rate. A client refreshes about once per
	// AccessTokenLifetime, and the SDKs once per page load at most, far
	// below it. The store keeps it on the session; past it, refresh
	// answers 429 and the refresh token stays valid. Default 60, then 1
	// every 2 seconds.
	SessionRefreshes Rate
	// ClientThirdPartySignIns bounds /signinup requests from one client
	// address: each makes the server call a provider. Default 30, then 1
	// every 10 seconds (360 an hour).
	ClientThirdPartySignIns Rate
	// VerificationEmails bounds the verification emails sent to one
	// user, and separately to one address (several users may have it
	// unverified), so that a page that asks for one at every load (the
	// SDKs' does) cannot flood an inbox. Past it, the send endpoint
	// answers GENERAL_ERROR asking the user to wait. Default 1, then 1
	// every minute.
	VerificationEmails Rate
	// PasswordlessSends bounds the passwordless codes sent to one email
	// address or phone number, new flows and resends together, so that
	// nobody can flood an inbox, nor start flows to guess a code in.
	// Past it, the endpoints answer GENERAL_ERROR asking the person to
	// wait. Default 5, then 1 every 5 minutes: a first code and a few
	// resends.
	PasswordlessSends Rate
	// ClientPasswordlessSends bounds the passwordless codes sent at the
	// request of one client address, to any address. Default 20, then 1
	// every 30 seconds (120 an hour).
	ClientPasswordlessSends Rate
	// PasswordlessFailures bounds the wrong or expired passwordless codes
	// entered for one email address or phone number, across all its
	// flows: each flow ends at its fifth, and this bounds how many flows'
	// worth of guesses anyone gets (see SECURITY.md for what it means
	// for a six-digit code). Past it, typed codes for the address are
	// refused unchecked until the allowance grows back; links still
	// work. Default 10, then 1 every 6 minutes (10 an hour).
	PasswordlessFailures Rate
	// ClientPasskeyCeremonies bounds the passkey options, sign-ups and
	// sign-ins asked for by one client address: each makes the server
	// store a ceremony or check a signature. A sign-in takes two (its
	// options and its answer). Default 60, then 1 every second.
	ClientPasskeyCeremonies Rate
	// ClientDashboardFailures bounds the requests to the dashboard's API
	// (Config.Dashboard) that one client address sends with an
	// Authorization header that opens nothing (a wrong key): past it, that
	// client's keys are not compared until it grows back. Default 10, then
	// 1 every minute.
	ClientDashboardFailures Rate

	// IPv6Prefix is the prefix length by which IPv6 clients are counted:
	// one host commonly holds a whole /64, so counting single addresses
	// would give it billions of allowances. Default 64; 128 counts each
	// address. IPv4 clients are counted by address.
	IPv6Prefix int
}

func (l *RateLimits) setDefaults() {
	def := func(r *Rate, burst int, every time.Duration) {
		if *r == (Rate{}) {
			*r = Rate{burst, every}
		}
	}
	def(&l.SignInFailures, 10, 6*time.Minute)
	def(&l.ClientSignInFailures, 100, 36*time.Second)
	def(&l.AccountSignInFailures, 100, 36*time.Second)
	def(&l.ResetEmails, 3, 20*time.Minute)
	def(&l.ClientResetRequests, 20, 3*time.Minute)
	def(&l.ClientNewPasswords, 30, 30*time.Second)
	def(&l.ClientEmailChecks, 50, 10*time.Second)
	def(&l.SessionRefreshes, 60, 2*time.Second)
	def(&l.ClientThirdPartySignIns, 30, 10*time.Second)
	def(&l.VerificationEmails, 1, time.Minute)
	def(&l.PasswordlessSends, 5, 5*time.Minute)
	def(&l.ClientPasswordlessSends, 20, 30*time.Second)
	def(&l.PasswordlessFailures, 10, 6*time.Minute)
	def(&l.ClientPasskeyCeremonies, 60, time.Second)
	def(&l.ClientDashboardFailures, 10, time.Minute)
	if l.IPv6Prefix == 0 {
		l.IPv6Prefix = 64
	}
}

// rates are the allowances, for validation.
func (l *RateLimits) rates() []Rate {
	return []Rate{l.SignInFailures, l.ClientSignInFailures, l.AccountSignInFailures,
		l.ResetEmails, l.ClientResetRequests, l.ClientNewPasswords, l.ClientEmailChecks, l.SessionRefreshes,
		l.ClientThirdPartySignIns, l.VerificationEmails, l.PasswordlessSends, l.ClientPasswordlessSends,
		l.PasswordlessFailures, l.ClientPasskeyCeremonies, l.ClientDashboardFailures}
}

// byName are the allowances by field name, as kit.Setup hands them to a
// recipe built from a value of its own package.
func (l *RateLimits) byName() map[string]kit.Rate {
	rates := map[string]kit.Rate{}
	v := reflect.ValueOf(l).Elem()
	for i := range v.NumField() {
		if r, ok := v.Field(i).Interface().(Rate); ok {
			rates[v.Type().Field(i).Name] = kit.Rate(r)
		}
	}
	return rates
}

func (r Rate) valid() bool { return r.Burst > 0 && r.Every > 0 }

// clientAddr is the address a request came from: the connection's peer,
// or, when that peer is a trusted proxy, the nearest untrusted address in
// X-Forwarded-For.
func (a *Auth) clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	peer, err := netip.ParseAddr(host)
	if err != nil || !a.trusted(peer) {
		return host
	}
	hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		hop, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			return peer.String() // a garbled chain: trust none of it
		}
		if !a.trusted(hop) {
			return hop.Unmap().String()
		}
		peer = hop
	}
	return peer.String()
}

// limitClient is the client as rate limits count it: its address, or for
// IPv6 its RateLimits.IPv6Prefix.
func (a *Auth) limitClient(r *http.Request) string {
	addr := a.clientAddr(r)
	ip, err := netip.ParseAddr(addr)
	if err != nil {
		return addr
	}
	if ip = ip.Unmap(); ip.Is4() {
		return ip.String()
	}
	p, err := ip.WithZone("").Prefix(a.cfg.RateLimits.IPv6Prefix)
	if err != nil {
		return addr
	}
	return p.String()
}

func (a *Auth) trusted(ip netip.Addr) bool {
	ip = ip.Unmap()
	for _, p := range a.cfg.TrustedProxies {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// limit is one allowance applied to one key.
type limit struct {
	key  string
	rate Rate
}

// take spends one attempt of each of limits, in order. If one has none
// left, it gives back those it took and returns how long that one must
// wait. A failing Limiter lets the attempt through: the error is logged,
// and the password hash still bounds how fast guesses go.
func (a *Auth) take(ctx context.Context, limits ...limit) time.Duration {
	now := a.cfg.Now()
	for i, l := range limits {
		wait, err := a.cfg.Limiter.Take(ctx, l.key, l.rate, now)
		if err != nil {
			a.limiterFailed(ctx, err)
			continue
		}
		if wait > 0 {
			a.refund(ctx, limits[:i]...)
			return wait
		}
	}
	return 0
}

// refund gives back an attempt taken from each of limits.
func (a *Auth) refund(ctx context.Context, limits ...limit) {
	now := a.cfg.Now()
	for _, l := range limits {
		if err := a.cfg.Limiter.Refund(ctx, l.key, l.rate, now); err != nil {
			a.limiterFailed(ctx, err)
		}
	}
}

// signInAttempt is a password attempt taken from its allowances (see
// Auth.takeSignIn), to settle once the password is checked.
type signInAttempt struct {
	// limits are the allowances it took.
	limits []limit
	// perEmail is the key of the allowance per email and client address,
	// which a right password resets.
	perEmail string
	// stored: the limiter is a storeLimiter, which counts the attempt in
	// the store only once it has failed.
	stored bool
	// recorded: the store had failures per email and address counting.
	recorded bool
}

// attemptOutcome is how a password attempt ended, as the recipe that
// checked it tells (kit.Kernel's TakeSignIn): kit.AttemptAbandoned when
// it never got to its password (a store failure), or one of these.
type attemptOutcome = kit.AttemptOutcome

const (
	// attemptFailed: a wrong password, or an unknown email.
	attemptFailed = kit.AttemptFailed
	// attemptSucceeded: the right password.
	attemptSucceeded = kit.AttemptSucceeded
)

// takeSignIn takes a sign-in attempt for email from client from its
// allowances, or returns how long to wait, having taken nothing.
//
// Failures count per email and client address together, so guessing from
// elsewhere cannot lock the user out, and per address alone; and per
// email from all addresses, as a backstop: once that is spent, every
// address gets one attempt per interval for the email, not a burst. Each
// attempt is taken before its hash, so concurrent guesses cannot all
// pass one check; settleSignIn counts it if it failed and gives it back
// otherwise, and a success forgets the failures per email and address.
func (a *Auth) takeSignIn(ctx context.Context, email, client string) (signInAttempt, time.Duration) {
	rl := a.cfg.RateLimits
	account := limit{kit.LimitKey("signin-account", email), rl.AccountSignInFailures}
	perEmail := limit{kit.LimitKey("signin", email, client), rl.SignInFailures}
	perClient := limit{kit.LimitKey("signin-client", client), rl.ClientSignInFailures}
	if sl, ok := a.cfg.Limiter.(storeLimiter); ok {
		att, wait, err := sl.takeSignIn(ctx, account, perEmail, perClient, a.cfg.Now())
		if err != nil {
			a.limiterFailed(ctx, err)
		}
		return att, wait
	}
	spent := a.take(ctx, account) > 0
	if spent {
		perEmail.rate = Rate{Burst: 1, Every: perEmail.rate.Every}
	}
	if wait := a.take(ctx, perEmail, perClient); wait > 0 {
		if !spent {
			a.refund(ctx, account)
		}
		return signInAttempt{}, wait
	}
	att := signInAttempt{limits: []limit{perEmail, perClient}, perEmail: perEmail.key}
	if !spent {
		att.limits = append(att.limits, account)
	}
	return att, 0
}

// settleSignIn ends an attempt takeSignIn took: a failure stays counted,
// anything else is given back, and a success forgets the failures per
// email and address.
func (a *Auth) settleSignIn(ctx context.Context, att signInAttempt, outcome attemptOutcome) {
	if att.stored {
		if err := a.cfg.Limiter.(storeLimiter).settleSignIn(ctx, att, outcome, a.cfg.Now()); err != nil {
			a.limiterFailed(ctx, err)
		}
		return
	}
	switch outcome {
	case attemptFailed:
	case attemptSucceeded:
		rest := make([]limit, 0, len(att.limits))
		for _, l := range att.limits {
			if l.key == att.perEmail {
				if err := a.cfg.Limiter.Reset(ctx, l.key); err != nil {
					a.limiterFailed(ctx, err)
				}
			} else {
				rest = append(rest, l)
			}
		}
		a.refund(ctx, rest...)
	default:
		a.refund(ctx, att.limits...)
	}
}

func (a *Auth) limiterFailed(ctx context.Context, err error) {
	a.cfg.Logger.LogAttrs(ctx, slog.LevelError, "auth: rate limiter", slog.String("error", err.Error()))
}
