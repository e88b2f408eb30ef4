package otelauth

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/latchkit/auth/store"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Store wraps st so that each of its calls is a span under the span of
// its context (see the package documentation). The wrapper implements
// store.Store and, of the optional interfaces the library and its
// recipes look for, those st implements: store.LegacyTokenStore,
// store.RateLimitStore and store.RoleStore. It is always a
// store.UserLister, a store.Banner, a store.AuditLog and a
// store.TenantStore, whose calls answer an error matching
// errors.ErrUnsupported where st lists no users, keeps no bans, keeps no
// audit log or keeps no tenants, as auth.Auth's ListUsers and BanUser do
// for a Store that is none. Any other method of
// st is not reachable through it; keep st for the application's own use
// of them.
func (t *Telemetry) Store(st store.Store) store.Store {
	s := &tracedStore{tracer: t.tracer, inner: st}
	legacy, hasLegacy := st.(store.LegacyTokenStore)
	limits, hasLimits := st.(store.RateLimitStore)
	roles, hasRoles := st.(store.RoleStore)
	l := &tracedLegacy{s, legacy}
	r := &tracedRateLimits{s, limits}
	o := &tracedRoles{s, roles}
	switch {
	case hasLegacy && hasLimits && hasRoles:
		return &struct {
			*tracedStore
			*tracedLegacy
			*tracedRateLimits
			*tracedRoles
		}{s, l, r, o}
	case hasLegacy && hasLimits:
		return &struct {
			*tracedStore
			*tracedLegacy
			*tracedRateLimits
		}{s, l, r}
	case hasLegacy && hasRoles:
		return &struct {
			*tracedStore
			*tracedLegacy
			*tracedRoles
		}{s, l, o}
	case hasLimits && hasRoles:
		return &struct {
			*tracedStore
			*tracedRateLimits
			*tracedRoles
		}{s, r, o}
	case hasLegacy:
		return &struct {
			*tracedStore
			*tracedLegacy
		}{s, l}
	case hasLimits:
		return &struct {
			*tracedStore
			*tracedRateLimits
		}{s, r}
	case hasRoles:
		return &struct {
			*tracedStore
			*tracedRoles
		}{s, o}
	}
	return s
}

// tracedStore is a store.Store whose calls are spans.
type tracedStore struct {
	tracer trace.Tracer
	inner  store.Store
}

// The optional interfaces, each traced by a type of its own that Store
// combines with a tracedStore when the wrapped store has it.
type (
	tracedLegacy struct {
		*tracedStore
		inner store.LegacyTokenStore
	}
	tracedRateLimits struct {
		*tracedStore
		inner store.RateLimitStore
	}
	tracedRoles struct {
		*tracedStore
		inner store.RoleStore
	}
)

var (
	_ store.Store            = (*tracedStore)(nil)
	_ store.UserLister       = (*tracedStore)(nil)
	_ store.Banner           = (*tracedStore)(nil)
	_ store.AuditLog         = (*tracedStore)(nil)
	_ store.TenantStore      = (*tracedStore)(nil)
	_ store.LegacyTokenStore = (*tracedLegacy)(nil)
	_ store.RateLimitStore   = (*tracedRateLimits)(nil)
	_ store.RoleStore        = (*tracedRoles)(nil)
)

// start starts the span of a call.
func (s *tracedStore) start(ctx context.Context, name string) (context.Context, trace.Span) {
	return s.tracer.Start(ctx, name)
}

// The outcomes of store calls, made once.
var (
	outcomeOK               = keyOutcome.String("ok")
	outcomeRepeat           = keyOutcome.String("repeat")
	outcomeNotFound         = keyOutcome.String("not_found")
	outcomeExpired          = keyOutcome.String("expired")
	outcomeEnded            = keyOutcome.String("ended")
	outcomeConflict         = keyOutcome.String("conflict")
	outcomeTokenReused      = keyOutcome.String("token_reused")
	outcomeRateLimited      = keyOutcome.String("rate_limited")
	outcomeSessionsEnded    = keyOutcome.String("sessions_ended")
	outcomeBanned           = keyOutcome.String("banned")
	outcomeEmailOwned       = keyOutcome.String("email_owned")
	outcomeLastLogin        = keyOutcome.String("last_login")
	outcomeWrongCode        = keyOutcome.String("wrong_code")
	outcomeCodeExpired      = keyOutcome.String("code_expired")
	outcomeUnavailable      = keyOutcome.String("unavailable")
	outcomeCanceled         = keyOutcome.String("canceled")
	outcomeDeadlineExceeded = keyOutcome.String("deadline_exceeded")
	outcomeError            = keyOutcome.String("error")
)

// outcomes maps the store's errors, which a caller expects and handles,
// to their outcomes.
var outcomes = []struct {
	err     error
	outcome attribute.KeyValue
}{
	{store.ErrNotFound, outcomeNotFound},
	{store.ErrConflict, outcomeConflict},
	{store.ErrTokenReused, outcomeTokenReused},
	{store.ErrRateLimited, outcomeRateLimited},
	{store.ErrSessionsEnded, outcomeSessionsEnded},
	{store.ErrBanned, outcomeBanned},
	{store.ErrEmailOwned, outcomeEmailOwned},
	{store.ErrLastLogin, outcomeLastLogin},
	{store.ErrWrongCode, outcomeWrongCode},
	{store.ErrCodeExpired, outcomeCodeExpired},
	{context.Canceled, outcomeCanceled},
}

// end ends the span of a call that returned err, with its outcome. The
// error's message stays out of the span: a database's can quote the
// values of a statement.
func end(span trace.Span, err error) {
	defer span.End()
	switch {
	case !span.IsRecording():
		return
	case err == nil:
		span.SetAttributes(outcomeOK)
		return
	}
	var ended *store.EndedError
	if errors.As(err, &ended) {
		if ended.Reason == "" {
			span.SetAttributes(outcomeExpired)
		} else {
			span.SetAttributes(outcomeEnded, keyReason.String(string(ended.Reason)))
		}
		return
	}
	for _, o := range outcomes {
		if errors.Is(err, o.err) {
			span.SetAttributes(o.outcome)
			return
		}
	}
	switch {
	case errors.Is(err, store.ErrUnavailable):
		span.SetAttributes(outcomeUnavailable)
		span.SetStatus(codes.Error, "store unavailable")
	case errors.Is(err, context.DeadlineExceeded):
		span.SetAttributes(outcomeDeadlineExceeded)
		span.SetStatus(codes.Error, "deadline exceeded")
	default:
		span.SetAttributes(outcomeError)
		span.SetStatus(codes.Error, "store error")
	}
}

// DeleteExpired implements store.Store.
func (s *tracedStore) DeleteExpired(ctx context.Context, now time.Time) error {
	ctx, span := s.start(ctx, "auth.store DeleteExpired")
	err := s.inner.DeleteExpired(ctx, now)
	end(span, err)
	return err
}

// CreateUser implements store.Store.
func (s *tracedStore) CreateUser(ctx context.Context, u store.User, first store.Login) error {
	ctx, span := s.start(ctx, "auth.store CreateUser")
	err := s.inner.CreateUser(ctx, u, first)
	end(span, err)
	return err
}

// UserByID implements store.Store.
func (s *tracedStore) UserByID(ctx context.Context, id string) (store.User, error) {
	ctx, span := s.start(ctx, "auth.store UserByID")
	r0, err := s.inner.UserByID(ctx, id)
	end(span, err)
	return r0, err
}

// Login implements store.Store.
func (s *tracedStore) Login(ctx context.Context, k store.LoginKey) (store.Login, error) {
	ctx, span := s.start(ctx, "auth.store Login")
	r0, err := s.inner.Login(ctx, k)
	end(span, err)
	return r0, err
}

// Logins implements store.Store.
func (s *tracedStore) Logins(ctx context.Context, userID string) ([]store.Login, error) {
	ctx, span := s.start(ctx, "auth.store Logins")
	r0, err := s.inner.Logins(ctx, userID)
	end(span, err)
	return r0, err
}

// UserByLogin implements store.Store.
func (s *tracedStore) UserByLogin(ctx context.Context, k store.LoginKey) (store.User, []store.Login, error) {
	ctx, span := s.start(ctx, "auth.store UserByLogin")
	r0, r1, err := s.inner.UserByLogin(ctx, k)
	end(span, err)
	return r0, r1, err
}

// LoginsByEmail implements store.Store.
func (s *tracedStore) LoginsByEmail(ctx context.Context, email string) ([]store.Login, error) {
	ctx, span := s.start(ctx, "auth.store LoginsByEmail")
	r0, err := s.inner.LoginsByEmail(ctx, email)
	end(span, err)
	return r0, err
}

// SignInUp implements store.Store.
func (s *tracedStore) SignInUp(ctx context.Context, l store.Login, newUser store.User) (store.Login, bool, error) {
	ctx, span := s.start(ctx, "auth.store SignInUp")
	r0, r1, err := s.inner.SignInUp(ctx, l, newUser)
	end(span, err)
	return r0, r1, err
}

// LinkLogin implements store.Store.
func (s *tracedStore) LinkLogin(ctx context.Context, l store.Login) error {
	ctx, span := s.start(ctx, "auth.store LinkLogin")
	err := s.inner.LinkLogin(ctx, l)
	end(span, err)
	return err
}

// ClaimEmail implements store.Store.
func (s *tracedStore) ClaimEmail(ctx context.Context, loginID string) (store.Login, error) {
	ctx, span := s.start(ctx, "auth.store ClaimEmail")
	r0, err := s.inner.ClaimEmail(ctx, loginID)
	end(span, err)
	return r0, err
}

// SetEmailVerified implements store.Store.
func (s *tracedStore) SetEmailVerified(ctx context.Context, loginID string, verified bool) (store.Login, error) {
	ctx, span := s.start(ctx, "auth.store SetEmailVerified")
	r0, err := s.inner.SetEmailVerified(ctx, loginID, verified)
	end(span, err)
	return r0, err
}

// DeleteLogin implements store.Store.
func (s *tracedStore) DeleteLogin(ctx context.Context, loginID string) ([]string, error) {
	ctx, span := s.start(ctx, "auth.store DeleteLogin")
	r0, err := s.inner.DeleteLogin(ctx, loginID)
	end(span, err)
	return r0, err
}

// DeleteUser implements store.Store.
func (s *tracedStore) DeleteUser(ctx context.Context, userID string) ([]string, error) {
	ctx, span := s.start(ctx, "auth.store DeleteUser")
	r0, err := s.inner.DeleteUser(ctx, userID)
	end(span, err)
	return r0, err
}

// UpdatePasswordHash implements store.Store.
func (s *tracedStore) UpdatePasswordHash(ctx context.Context, userID, oldHash, newHash string) error {
	ctx, span := s.start(ctx, "auth.store UpdatePasswordHash")
	err := s.inner.UpdatePasswordHash(ctx, userID, oldHash, newHash)
	end(span, err)
	return err
}

// UpdateLoginMaterial implements store.Store.
func (s *tracedStore) UpdateLoginMaterial(ctx context.Context, loginID string, old, new []byte) error {
	ctx, span := s.start(ctx, "auth.store UpdateLoginMaterial")
	err := s.inner.UpdateLoginMaterial(ctx, loginID, old, new)
	end(span, err)
	return err
}

// CreateCode implements store.Store.
func (s *tracedStore) CreateCode(ctx context.Context, c store.Code) error {
	ctx, span := s.start(ctx, "auth.store CreateCode")
	err := s.inner.CreateCode(ctx, c)
	end(span, err)
	return err
}

// Code implements store.Store.
func (s *tracedStore) Code(ctx context.Context, kind store.CodeKind, hash store.TokenHash, now time.Time) (store.Code, error) {
	ctx, span := s.start(ctx, "auth.store Code")
	r0, err := s.inner.Code(ctx, kind, hash, now)
	end(span, err)
	return r0, err
}

// ResetPassword implements store.Store.
func (s *tracedStore) ResetPassword(ctx context.Context, token store.TokenHash, passwordHash string, now time.Time) (store.Login, []string, error) {
	ctx, span := s.start(ctx, "auth.store ResetPassword")
	r0, r1, err := s.inner.ResetPassword(ctx, token, passwordHash, now)
	end(span, err)
	return r0, r1, err
}

// VerifyEmail implements store.Store.
func (s *tracedStore) VerifyEmail(ctx context.Context, token store.TokenHash, now time.Time) (store.Login, error) {
	ctx, span := s.start(ctx, "auth.store VerifyEmail")
	r0, err := s.inner.VerifyEmail(ctx, token, now)
	end(span, err)
	return r0, err
}

// UsePasswordlessCode implements store.Store.
func (s *tracedStore) UsePasswordlessCode(ctx context.Context, flow, code store.TokenHash, now time.Time, maxAttempts int) (store.Code, error) {
	ctx, span := s.start(ctx, "auth.store UsePasswordlessCode")
	r0, err := s.inner.UsePasswordlessCode(ctx, flow, code, now, maxAttempts)
	end(span, err)
	return r0, err
}

// UseCeremony implements store.Store.
func (s *tracedStore) UseCeremony(ctx context.Context, kind store.CodeKind, hash store.TokenHash, now time.Time, update *store.MaterialUpdate) (store.Code, error) {
	ctx, span := s.start(ctx, "auth.store UseCeremony")
	r0, err := s.inner.UseCeremony(ctx, kind, hash, now, update)
	end(span, err)
	return r0, err
}

// AttachLogin implements store.Store.
func (s *tracedStore) AttachLogin(ctx context.Context, l store.Login) error {
	ctx, span := s.start(ctx, "auth.store AttachLogin")
	err := s.inner.AttachLogin(ctx, l)
	end(span, err)
	return err
}

// ChangeEmail implements store.Store.
func (s *tracedStore) ChangeEmail(ctx context.Context, kind store.CodeKind, hash store.TokenHash, now time.Time) (store.Code, []store.Login, error) {
	ctx, span := s.start(ctx, "auth.store ChangeEmail")
	r0, r1, err := s.inner.ChangeEmail(ctx, kind, hash, now)
	end(span, err)
	return r0, r1, err
}

// CreateSession implements store.Store.
func (s *tracedStore) CreateSession(ctx context.Context, sess store.Session, refresh store.TokenHash, epoch int64) error {
	ctx, span := s.start(ctx, "auth.store CreateSession")
	err := s.inner.CreateSession(ctx, sess, refresh, epoch)
	end(span, err)
	return err
}

// Session implements store.Store.
func (s *tracedStore) Session(ctx context.Context, handle string, now time.Time) (store.Session, error) {
	ctx, span := s.start(ctx, "auth.store Session")
	r0, err := s.inner.Session(ctx, handle, now)
	end(span, err)
	return r0, err
}

// UserSessions implements store.Store.
func (s *tracedStore) UserSessions(ctx context.Context, userID string, now time.Time) ([]store.Session, error) {
	ctx, span := s.start(ctx, "auth.store UserSessions")
	r0, err := s.inner.UserSessions(ctx, userID, now)
	end(span, err)
	return r0, err
}

// RotateRefreshToken implements store.Store.
func (s *tracedStore) RotateRefreshToken(ctx context.Context, r store.Rotation) (store.Rotated, error) {
	ctx, span := s.start(ctx, "auth.store RotateRefreshToken")
	rot, err := s.inner.RotateRefreshToken(ctx, r)
	switch {
	case err == nil && rot.Repeat:
		span.SetAttributes(outcomeRepeat)
		span.End()
	case errors.Is(err, store.ErrTokenReused):
		span.SetAttributes(outcomeTokenReused, keyReason.String(rot.Reuse.String()))
		span.End()
	default:
		end(span, err)
	}
	return rot, err
}

// RevokeSession implements store.Store.
func (s *tracedStore) RevokeSession(ctx context.Context, handle string, why store.EndReason) error {
	ctx, span := s.start(ctx, "auth.store RevokeSession")
	err := s.inner.RevokeSession(ctx, handle, why)
	end(span, err)
	return err
}

// RevokeUserSessions implements store.Store.
func (s *tracedStore) RevokeUserSessions(ctx context.Context, userID string) ([]string, error) {
	ctx, span := s.start(ctx, "auth.store RevokeUserSessions")
	r0, err := s.inner.RevokeUserSessions(ctx, userID)
	end(span, err)
	return r0, err
}

// UpdateSessionFactors implements store.Store.
func (s *tracedStore) UpdateSessionFactors(ctx context.Context, handle string, old, new []byte, now time.Time) error {
	ctx, span := s.start(ctx, "auth.store UpdateSessionFactors")
	err := s.inner.UpdateSessionFactors(ctx, handle, old, new, now)
	end(span, err)
	return err
}

// SigningKeys implements store.Store.
func (s *tracedStore) SigningKeys(ctx context.Context, now time.Time) ([]store.SigningKey, error) {
	ctx, span := s.start(ctx, "auth.store SigningKeys")
	r0, err := s.inner.SigningKeys(ctx, now)
	end(span, err)
	return r0, err
}

// AddSigningKey implements store.Store.
func (s *tracedStore) AddSigningKey(ctx context.Context, k store.SigningKey) error {
	ctx, span := s.start(ctx, "auth.store AddSigningKey")
	err := s.inner.AddSigningKey(ctx, k)
	end(span, err)
	return err
}

// LegacyTokenSession implements store.LegacyTokenStore.
func (s *tracedLegacy) LegacyTokenSession(ctx context.Context, token store.TokenHash, now time.Time) (string, error) {
	ctx, span := s.start(ctx, "auth.store LegacyTokenSession")
	r0, err := s.inner.LegacyTokenSession(ctx, token, now)
	end(span, err)
	return r0, err
}

// RateLimit implements store.RateLimitStore.
func (s *tracedRateLimits) RateLimit(ctx context.Context, key string) (time.Time, error) {
	ctx, span := s.start(ctx, "auth.store RateLimit")
	r0, err := s.inner.RateLimit(ctx, key)
	end(span, err)
	return r0, err
}

// TakeRateLimit implements store.RateLimitStore.
func (s *tracedRateLimits) TakeRateLimit(ctx context.Context, key string, every time.Duration, burst int, now time.Time) (bool, time.Time, error) {
	ctx, span := s.start(ctx, "auth.store TakeRateLimit")
	r0, r1, err := s.inner.TakeRateLimit(ctx, key, every, burst, now)
	end(span, err)
	return r0, r1, err
}

// RefundRateLimit implements store.RateLimitStore.
func (s *tracedRateLimits) RefundRateLimit(ctx context.Context, key string, every time.Duration) error {
	ctx, span := s.start(ctx, "auth.store RefundRateLimit")
	err := s.inner.RefundRateLimit(ctx, key, every)
	end(span, err)
	return err
}

// ResetRateLimit implements store.RateLimitStore.
func (s *tracedRateLimits) ResetRateLimit(ctx context.Context, key string) error {
	ctx, span := s.start(ctx, "auth.store ResetRateLimit")
	err := s.inner.ResetRateLimit(ctx, key)
	end(span, err)
	return err
}

// RateLimits implements store.RateLimitStore.
func (s *tracedRateLimits) RateLimits(ctx context.Context, keys []string) ([]time.Time, error) {
	ctx, span := s.start(ctx, "auth.store RateLimits")
	r0, err := s.inner.RateLimits(ctx, keys)
	end(span, err)
	return r0, err
}

// SpendRateLimits implements store.RateLimitStore.
func (s *tracedRateLimits) SpendRateLimits(ctx context.Context, spends []store.RateLimitSpend, now time.Time) error {
	ctx, span := s.start(ctx, "auth.store SpendRateLimits")
	err := s.inner.SpendRateLimits(ctx, spends, now)
	end(span, err)
	return err
}

// CreateRole implements store.RoleStore.
func (s *tracedRoles) CreateRole(ctx context.Context, role string, permissions []string) (bool, error) {
	ctx, span := s.start(ctx, "auth.store CreateRole")
	r0, err := s.inner.CreateRole(ctx, role, permissions)
	end(span, err)
	return r0, err
}

// RemovePermissions implements store.RoleStore.
func (s *tracedRoles) RemovePermissions(ctx context.Context, role string, permissions []string) error {
	ctx, span := s.start(ctx, "auth.store RemovePermissions")
	err := s.inner.RemovePermissions(ctx, role, permissions)
	end(span, err)
	return err
}

// DeleteRole implements store.RoleStore.
func (s *tracedRoles) DeleteRole(ctx context.Context, role string) (bool, []string, error) {
	ctx, span := s.start(ctx, "auth.store DeleteRole")
	r0, r1, err := s.inner.DeleteRole(ctx, role)
	end(span, err)
	return r0, r1, err
}

// Roles implements store.RoleStore.
func (s *tracedRoles) Roles(ctx context.Context) ([]string, error) {
	ctx, span := s.start(ctx, "auth.store Roles")
	r0, err := s.inner.Roles(ctx)
	end(span, err)
	return r0, err
}

// RolePermissions implements store.RoleStore.
func (s *tracedRoles) RolePermissions(ctx context.Context, role string) ([]string, error) {
	ctx, span := s.start(ctx, "auth.store RolePermissions")
	r0, err := s.inner.RolePermissions(ctx, role)
	end(span, err)
	return r0, err
}

// RolesWithPermission implements store.RoleStore.
func (s *tracedRoles) RolesWithPermission(ctx context.Context, permission string) ([]string, error) {
	ctx, span := s.start(ctx, "auth.store RolesWithPermission")
	r0, err := s.inner.RolesWithPermission(ctx, permission)
	end(span, err)
	return r0, err
}

// GiveRole implements store.RoleStore.
func (s *tracedRoles) GiveRole(ctx context.Context, tenant, userID, role string) (bool, error) {
	ctx, span := s.start(ctx, "auth.store GiveRole")
	r0, err := s.inner.GiveRole(ctx, tenant, userID, role)
	end(span, err)
	return r0, err
}

// TakeRole implements store.RoleStore.
func (s *tracedRoles) TakeRole(ctx context.Context, tenant, userID, role string) (bool, error) {
	ctx, span := s.start(ctx, "auth.store TakeRole")
	r0, err := s.inner.TakeRole(ctx, tenant, userID, role)
	end(span, err)
	return r0, err
}

// UserRoles implements store.RoleStore.
func (s *tracedRoles) UserRoles(ctx context.Context, tenant, userID string) ([]string, []string, error) {
	ctx, span := s.start(ctx, "auth.store UserRoles")
	r0, r1, err := s.inner.UserRoles(ctx, tenant, userID)
	end(span, err)
	return r0, r1, err
}

// UsersWithRole implements store.RoleStore.
func (s *tracedRoles) UsersWithRole(ctx context.Context, tenant, role string) ([]string, error) {
	ctx, span := s.start(ctx, "auth.store UsersWithRole")
	r0, err := s.inner.UsersWithRole(ctx, tenant, role)
	end(span, err)
	return r0, err
}

// ListUsers implements store.UserLister.
func (s *tracedStore) ListUsers(ctx context.Context, q store.UserQuery) (store.UserPage, error) {
	ctx, span := s.start(ctx, "auth.store ListUsers")
	l, err := s.lister()
	var r0 store.UserPage
	if err == nil {
		r0, err = l.ListUsers(ctx, q)
	}
	end(span, err)
	return r0, err
}

// CountUsers implements store.UserLister.
func (s *tracedStore) CountUsers(ctx context.Context, q store.UserQuery) (int64, error) {
	ctx, span := s.start(ctx, "auth.store CountUsers")
	l, err := s.lister()
	var r0 int64
	if err == nil {
		r0, err = l.CountUsers(ctx, q)
	}
	end(span, err)
	return r0, err
}

// lister is the wrapped store's store.UserLister, or an error matching
// errors.ErrUnsupported.
func (s *tracedStore) lister() (store.UserLister, error) {
	if l, ok := s.inner.(store.UserLister); ok {
		return l, nil
	}
	return nil, fmt.Errorf("otelauth: the wrapped %T lists no users (store.UserLister): %w", s.inner, errors.ErrUnsupported)
}

// BanUser implements store.Banner.
func (s *tracedStore) BanUser(ctx context.Context, userID string, b store.Ban) ([]string, error) {
	ctx, span := s.start(ctx, "auth.store BanUser")
	bn, err := s.banner()
	var r0 []string
	if err == nil {
		r0, err = bn.BanUser(ctx, userID, b)
	}
	end(span, err)
	return r0, err
}

// UnbanUser implements store.Banner.
func (s *tracedStore) UnbanUser(ctx context.Context, userID string) (store.Ban, error) {
	ctx, span := s.start(ctx, "auth.store UnbanUser")
	bn, err := s.banner()
	var r0 store.Ban
	if err == nil {
		r0, err = bn.UnbanUser(ctx, userID)
	}
	end(span, err)
	return r0, err
}

// banner is the wrapped store's store.Banner, or an error matching
// errors.ErrUnsupported.
func (s *tracedStore) banner() (store.Banner, error) {
	if b, ok := s.inner.(store.Banner); ok {
		return b, nil
	}
	return nil, fmt.Errorf("otelauth: the wrapped %T keeps no bans (store.Banner): %w", s.inner, errors.ErrUnsupported)
}

// AppendAudit implements store.AuditLog.
func (s *tracedStore) AppendAudit(ctx context.Context, entries []store.AuditEntry) error {
	ctx, span := s.start(ctx, "auth.store AppendAudit")
	a, err := s.auditLog()
	if err == nil {
		err = a.AppendAudit(ctx, entries)
	}
	end(span, err)
	return err
}

// ListAudit implements store.AuditLog.
func (s *tracedStore) ListAudit(ctx context.Context, q store.AuditQuery) (store.AuditPage, error) {
	ctx, span := s.start(ctx, "auth.store ListAudit")
	a, err := s.auditLog()
	var r0 store.AuditPage
	if err == nil {
		r0, err = a.ListAudit(ctx, q)
	}
	end(span, err)
	return r0, err
}

// PruneAudit implements store.AuditLog.
func (s *tracedStore) PruneAudit(ctx context.Context, t time.Time) (int64, error) {
	ctx, span := s.start(ctx, "auth.store PruneAudit")
	a, err := s.auditLog()
	var r0 int64
	if err == nil {
		r0, err = a.PruneAudit(ctx, t)
	}
	end(span, err)
	return r0, err
}

// auditLog is the wrapped store's store.AuditLog, or an error matching
// errors.ErrUnsupported.
func (s *tracedStore) auditLog() (store.AuditLog, error) {
	if a, ok := s.inner.(store.AuditLog); ok {
		return a, nil
	}
	return nil, fmt.Errorf("otelauth: the wrapped %T keeps no audit log (store.AuditLog): %w", s.inner, errors.ErrUnsupported)
}

// PutTenant implements store.TenantStore.
func (s *tracedStore) PutTenant(ctx context.Context, t store.Tenant) (bool, error) {
	ctx, span := s.start(ctx, "auth.store PutTenant")
	ts, err := s.tenantStore()
	var r0 bool
	if err == nil {
		r0, err = ts.PutTenant(ctx, t)
	}
	end(span, err)
	return r0, err
}

// Tenant implements store.TenantStore.
func (s *tracedStore) Tenant(ctx context.Context, id string) (store.Tenant, error) {
	ctx, span := s.start(ctx, "auth.store Tenant")
	ts, err := s.tenantStore()
	var r0 store.Tenant
	if err == nil {
		r0, err = ts.Tenant(ctx, id)
	}
	end(span, err)
	return r0, err
}

// Tenants implements store.TenantStore.
func (s *tracedStore) Tenants(ctx context.Context) ([]store.Tenant, error) {
	ctx, span := s.start(ctx, "auth.store Tenants")
	ts, err := s.tenantStore()
	var r0 []store.Tenant
	if err == nil {
		r0, err = ts.Tenants(ctx)
	}
	end(span, err)
	return r0, err
}

// DeleteTenant implements store.TenantStore.
func (s *tracedStore) DeleteTenant(ctx context.Context, id string) ([]string, error) {
	ctx, span := s.start(ctx, "auth.store DeleteTenant")
	ts, err := s.tenantStore()
	var r0 []string
	if err == nil {
		r0, err = ts.DeleteTenant(ctx, id)
	}
	end(span, err)
	return r0, err
}

// AddMember implements store.TenantStore.
func (s *tracedStore) AddMember(ctx context.Context, tenant, userID string, at time.Time) (bool, error) {
	ctx, span := s.start(ctx, "auth.store AddMember")
	ts, err := s.tenantStore()
	var r0 bool
	if err == nil {
		r0, err = ts.AddMember(ctx, tenant, userID, at)
	}
	end(span, err)
	return r0, err
}

// RemoveMember implements store.TenantStore.
func (s *tracedStore) RemoveMember(ctx context.Context, tenant, userID string) ([]string, error) {
	ctx, span := s.start(ctx, "auth.store RemoveMember")
	ts, err := s.tenantStore()
	var r0 []string
	if err == nil {
		r0, err = ts.RemoveMember(ctx, tenant, userID)
	}
	end(span, err)
	return r0, err
}

// Membership implements store.TenantStore.
func (s *tracedStore) Membership(ctx context.Context, tenant, userID string) (store.Member, error) {
	ctx, span := s.start(ctx, "auth.store Membership")
	ts, err := s.tenantStore()
	var r0 store.Member
	if err == nil {
		r0, err = ts.Membership(ctx, tenant, userID)
	}
	end(span, err)
	return r0, err
}

// Members implements store.TenantStore.
func (s *tracedStore) Members(ctx context.Context, tenant, after string, limit int) ([]store.Member, error) {
	ctx, span := s.start(ctx, "auth.store Members")
	ts, err := s.tenantStore()
	var r0 []store.Member
	if err == nil {
		r0, err = ts.Members(ctx, tenant, after, limit)
	}
	end(span, err)
	return r0, err
}

// UserTenants implements store.TenantStore.
func (s *tracedStore) UserTenants(ctx context.Context, userID string) ([]string, error) {
	ctx, span := s.start(ctx, "auth.store UserTenants")
	ts, err := s.tenantStore()
	var r0 []string
	if err == nil {
		r0, err = ts.UserTenants(ctx, userID)
	}
	end(span, err)
	return r0, err
}

// CreateInvitation implements store.TenantStore.
func (s *tracedStore) CreateInvitation(ctx context.Context, inv store.Invitation) error {
	ctx, span := s.start(ctx, "auth.store CreateInvitation")
	ts, err := s.tenantStore()
	if err == nil {
		err = ts.CreateInvitation(ctx, inv)
	}
	end(span, err)
	return err
}

// Invitations implements store.TenantStore.
func (s *tracedStore) Invitations(ctx context.Context, tenant string, now time.Time) ([]store.Invitation, error) {
	ctx, span := s.start(ctx, "auth.store Invitations")
	ts, err := s.tenantStore()
	var r0 []store.Invitation
	if err == nil {
		r0, err = ts.Invitations(ctx, tenant, now)
	}
	end(span, err)
	return r0, err
}

// RevokeInvitations implements store.TenantStore.
func (s *tracedStore) RevokeInvitations(ctx context.Context, tenant, email string) (int, error) {
	ctx, span := s.start(ctx, "auth.store RevokeInvitations")
	ts, err := s.tenantStore()
	var r0 int
	if err == nil {
		r0, err = ts.RevokeInvitations(ctx, tenant, email)
	}
	end(span, err)
	return r0, err
}

// AcceptInvitation implements store.TenantStore.
func (s *tracedStore) AcceptInvitation(ctx context.Context, hash store.TokenHash, userID string, now time.Time) (store.Invitation, error) {
	ctx, span := s.start(ctx, "auth.store AcceptInvitation")
	ts, err := s.tenantStore()
	var r0 store.Invitation
	if err == nil {
		r0, err = ts.AcceptInvitation(ctx, hash, userID, now)
	}
	end(span, err)
	return r0, err
}

// tenantStore is the wrapped store's store.TenantStore, or an error
// matching errors.ErrUnsupported.
func (s *tracedStore) tenantStore() (store.TenantStore, error) {
	if ts, ok := s.inner.(store.TenantStore); ok {
		return ts, nil
	}
	return nil, fmt.Errorf("otelauth: the wrapped %T keeps no tenants (store.TenantStore): %w", s.inner, errors.ErrUnsupported)
}
