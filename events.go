package auth

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/latchkit/auth/internal/kit"
)

// Event reports an authentication outcome to Config.OnEvent. A sign-up
// reports EventSignUp and then EventSignIn for the session it starts.
type Event struct {
	Kind          EventKind
	Time          time.Time
	UserID        string // empty when no user is known, as for a failed sign-in
	SessionHandle string // empty when no session is involved
	RemoteAddr    string // the client's address as the server saw it; empty for Go API calls
	// UserAgent is the request's User-Agent header, cut to its first
	// 256 bytes (whole UTF-8 characters, invalid bytes replaced): what an
	// account page shows of where a session started.
	// Empty for Go API calls. It is the client's word, not a fact: show
	// it, do not decide on it.
	UserAgent string
	// Method is the login method an event is about, a store.Login's
	// (such as [store.MethodPasswordless]; for [store.MethodThirdParty]
	// the provider is in ThirdPartyID), or, for the factor events, the
	// second factor (such as [FactorTOTP] or [FactorRecoveryCode]).
	// Empty where the event names neither, as for a session's refresh.
	Method       string
	ThirdPartyID string
	// Reason says why a session was refused or ended: set for
	// EventSessionRefused and EventTokenTheft.
	Reason Reason
	// Operator is the id of the operator who acted: set for what an
	// operator does to a user (EventUserBanned, EventUserUnbanned, ...),
	// for every event of a session an operator started as the user (see
	// Impersonate), and for the events of Go API calls made with a
	// context from WithOperator.
	Operator string
	// Role is the role given, taken, created, changed or deleted, for
	// the role events, and the role of an invitation.
	Role string
	// Tenant is the tenant the event happened in, other than the public
	// one: the path's, for what a request to a tenant's path did, and
	// the tenant of the tenant and member events.
	Tenant string
}

// WithOperator returns a copy of ctx that names the operator acting
// through the Go API calls made with it (an admin page's handler, say):
// their events name the operator (Event.Operator), and so does the audit
// log.
func WithOperator(ctx context.Context, operatorID string) context.Context {
	return kit.WithOperator(ctx, operatorID)
}

// EventKind names what happened.
type EventKind string

// The kinds of Event.
const (
	EventSignUp            EventKind = kit.EventSignUp
	EventSignIn            EventKind = "sign_in"
	EventSignInFailed      EventKind = kit.EventSignInFailed
	EventSignInThrottled   EventKind = kit.EventSignInThrottled // refused by RateLimits before checking the password or code, or a passwordless send
	EventRefresh           EventKind = "refresh"
	EventRefreshThrottled  EventKind = "refresh_throttled" // a session past RateLimits.SessionRefreshes
	EventSignOut           EventKind = "sign_out"
	EventSessionRevoked    EventKind = kit.EventSessionRevoked
	EventTokenTheft        EventKind = "token_theft"
	EventSessionRefused    EventKind = "session_refused" // a 401 from refresh or a protected route: see Reason
	EventResetEmailSent    EventKind = kit.EventResetEmailSent
	EventPasswordReset     EventKind = kit.EventPasswordReset
	EventPasswordChanged   EventKind = kit.EventPasswordChanged   // by its user, with the password or a fresh sign-in; or added
	EventEmailChanged      EventKind = kit.EventEmailChanged      // the account's address moved, by the link to the new one (package emailchange)
	EventEmailChangeUndone EventKind = kit.EventEmailChangeUndone // by the notice to the old address; every session of the user ended
	EventMailFailed        EventKind = "mail_failed"              // an email was not sent: see the log for why

	EventEmailVerificationSent EventKind = kit.EventEmailVerificationSent
	EventEmailVerified         EventKind = kit.EventEmailVerified // by a link, or SetEmailVerified through the Go API
	EventAccountLinked         EventKind = "account_linked"       // a new login method joined an existing user
	EventUserDeleted           EventKind = "user_deleted"
	EventPasswordlessCodeSent  EventKind = kit.EventPasswordlessCodeSent // a passwordless code or link was sent
	EventPasskeyAdded          EventKind = kit.EventPasskeyAdded         // a passkey was registered for an existing user, or by recovery
	EventPasskeyRemoved        EventKind = kit.EventPasskeyRemoved
	EventPasskeyCloneSuspected EventKind = kit.EventPasskeyCloneSuspected // a sign-in refused: the passkey's counter did not grow
	EventFactorCompleted       EventKind = "factor_completed"             // a session completed a second factor: see Method
	EventFactorFailed          EventKind = kit.EventFactorFailed          // a wrong TOTP or recovery code, or another user's passkey
	EventFactorAdded           EventKind = "factor_added"                 // a TOTP device set up, or a passkey added as a second factor
	EventFactorRemoved         EventKind = "factor_removed"               // a TOTP device removed, by its user or ResetSecondFactors
	EventFactorsRequired       EventKind = "factors_required"             // RequireFactors changed what a user must complete
	EventMFALocked             EventKind = "mfa_locked"                   // wrong codes in a row locked a user's TOTP
	EventRecoveryCodesCreated  EventKind = "recovery_codes_created"       // a new set, which voids the old
	EventRecoveryCodeUsed      EventKind = "recovery_code_used"

	EventUserBanned   EventKind = "user_banned"    // BanUser; every session of the user ended (EventSessionRevoked each)
	EventUserUnbanned EventKind = "user_unbanned"  // UnbanUser lifted a ban
	EventSignInBanned EventKind = "sign_in_banned" // a banned user proved who they are and was refused a session

	EventSignInNotMember EventKind = "sign_in_not_member" // a user removed from a tenant proved who they are there and was refused

	EventTenantChanged EventKind = "tenant_changed"  // PutTenant created a tenant or changed its rules: see Tenant
	EventTenantDeleted EventKind = "tenant_deleted"  // DeleteTenant; its sessions ended
	EventMemberInvited EventKind = "member_invited"  // Invite, or a member over HTTP: an invitation mailed
	EventMemberJoined  EventKind = "member_joined"   // a user accepted an invitation
	EventMemberRemoved EventKind = "member_removed"  // RemoveMember; the user's sessions in the tenant ended
	EventTenantSwitch  EventKind = "tenant_switched" // a session moved to another tenant of its user's (POST /tenant/switch)

	EventImpersonationStarted EventKind = "impersonation_started" // Impersonate: an operator's session as the user
	EventImpersonationEnded   EventKind = "impersonation_ended"   // StopImpersonating

	EventRoleGiven   EventKind = kit.EventRoleGiven   // package roles' Give, or the dashboard: see Role
	EventRoleTaken   EventKind = kit.EventRoleTaken   // package roles' Take, or the dashboard
	EventRoleCreated EventKind = kit.EventRoleCreated // a new role
	EventRoleChanged EventKind = kit.EventRoleChanged // permissions added to a role, or removed
	EventRoleDeleted EventKind = kit.EventRoleDeleted // a role deleted, and taken from every user who held it

	EventUserCreated     EventKind = "user_created"     // by an operator (package dashboard): no session started
	EventPasswordSet     EventKind = "password_set"     // by an operator (package dashboard): every session of the user ended
	EventEmailUnverified EventKind = "email_unverified" // an operator took an email's verification back (package dashboard)
)

// eventContext fills in what ctx says of e that its maker left out: the
// operator, and the tenant of the request or of the Go API call.
func (a *Auth) eventContext(ctx context.Context, e *Event) {
	if e.Operator == "" {
		e.Operator = kit.OperatorOf(ctx)
	}
	if t := a.tenantOf(ctx); e.Tenant == "" && t != a.publicTenant && t != nil {
		e.Tenant = t.ID
	}
	if t := kit.TenantIDOf(ctx); e.Tenant == "" && t != PublicTenant {
		e.Tenant = t // a Go API call in a tenant (InTenant)
	}
}

// emit logs an event and passes it to the hook.
func (a *Auth) emit(ctx context.Context, r *http.Request, e Event) {
	e.Time = a.cfg.Now()
	a.eventContext(ctx, &e)
	if r != nil {
		e.RemoteAddr = r.RemoteAddr
		e.UserAgent = cutUserAgent(r.UserAgent())
	}
	// Refreshes are routine and the most frequent event by far (one per
	// session per access-token lifetime); logging each at Info would
	// drown the events worth reading.
	level := slog.LevelInfo
	switch e.Kind {
	case EventRefresh, EventSessionRefused:
		level = slog.LevelDebug
	case EventTokenTheft:
		level = slog.LevelWarn
	}
	// The attributes are built only for a logger that keeps the record:
	// a refresh is logged at Debug, which most loggers discard.
	if a.cfg.Logger.Enabled(ctx, level) {
		logEvent(ctx, a.cfg.Logger, level, &e)
	}
	switch e.Kind {
	case EventSignOut, EventSessionRevoked, EventTokenTheft:
		a.liveSessions.Evict(e.SessionHandle)
	}
	if a.cfg.Metrics != nil {
		a.cfg.Metrics.CountEvent(e.Kind)
		if e.Kind == EventSessionRefused {
			a.cfg.Metrics.CountRefusal(e.Reason)
		}
	}
	if a.audit != nil && audited(e.Kind) {
		a.audit.add(auditEntry(&e, r != nil))
	}
	if a.cfg.OnEvent != nil {
		a.cfg.OnEvent(ctx, e)
	}
}

// maxUserAgent is how many bytes of a User-Agent header an Event keeps:
// enough for every browser's, not for a header made to fill memory
// wherever events are kept.
const maxUserAgent = 256

// cutUserAgent cuts ua to maxUserAgent bytes, at a character
// boundary, with invalid UTF-8 replaced.
func cutUserAgent(ua string) string {
	if len(ua) <= maxUserAgent && utf8.ValidString(ua) {
		return ua
	}
	ua = strings.ToValidUTF8(ua, "\uFFFD")
	if len(ua) <= maxUserAgent {
		return ua
	}
	n := maxUserAgent
	for n > 0 && !utf8.RuneStart(ua[n]) {
		n--
	}
	return ua[:n]
}

// logEvent writes e to l at level.
func logEvent(ctx context.Context, l *slog.Logger, level slog.Level, e *Event) {
	attrs := []slog.Attr{
		slog.String("kind", string(e.Kind)),
		slog.String("user_id", e.UserID),
		slog.String("session", e.SessionHandle),
		slog.String("remote_addr", e.RemoteAddr),
	}
	if e.Method != "" {
		attrs = append(attrs, slog.String("method", e.Method))
	}
	if e.ThirdPartyID != "" {
		attrs = append(attrs, slog.String("third_party", e.ThirdPartyID))
	}
	if e.Reason != "" {
		attrs = append(attrs, slog.String("reason", string(e.Reason)))
	}
	if e.Operator != "" {
		attrs = append(attrs, slog.String("operator", e.Operator))
	}
	if e.Role != "" {
		attrs = append(attrs, slog.String("role", e.Role))
	}
	if e.Tenant != "" {
		attrs = append(attrs, slog.String("tenant", e.Tenant))
	}
	l.LogAttrs(ctx, level, "auth event", attrs...)
}

// Metrics receives the library's counts and timings. Implementations must
// be safe for concurrent use and quick: they run on the request path.
// examples/metrics exports them in the Prometheus text format.
type Metrics interface {
	// CountEvent counts one outcome: sign-ins by result (EventSignIn,
	// EventSignInFailed, EventSignInThrottled), refreshes, token thefts,
	// mail failures and every other EventKind.
	CountEvent(kind EventKind)
	// CountRefusal counts a 401 of the refresh endpoint or a protected
	// route by its Reason (each EventSessionRefused, also counted by
	// CountEvent): how many users are signed out, and why.
	CountRefusal(reason Reason)
	// ObserveHashWait records how long a password hash waited for a free
	// slot: zero when one was free, up to HashQueueTimeout (or the
	// request's deadline) when the request was turned away.
	ObserveHashWait(d time.Duration)
}
