// Command customstore shows how an application writes its own store.Store:
// auditStore wraps any store and writes an audit trail of every
// security-relevant change to it, and the auth routes run on top.
//
//	go run ./examples/customstore
//
// The audit trail goes to standard error. store_test.go proves the store
// with the conformance suite, storetest.Run.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/store"
	"github.com/latchkit/auth/store/memstore"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8081", "address to listen on")
	flag.Parse()

	audit := newAuditStore(memstore.New(), os.Stderr)
	a, err := auth.New(auth.Config{Store: audit})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/auth/", a)

	// Listen before printing, so that the address printed is one that
	// answers (and the real port when -addr asks for port 0).
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("customstore: listening on http://%s/auth/ (audit trail on stderr)\n", ln.Addr())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	log.Fatal(srv.Serve(ln))
}

// auditStore is a store.Store that records every security-relevant change
// made through it: users created, passwords changed, sessions created,
// rotated, stolen and revoked, reset tokens issued and used, signing keys
// added. Recording it at the store, rather than in Config.OnEvent, catches
// every change whichever code path makes it: HTTP handlers, the Go API, or
// an admin tool sharing the store.
//
// Every method calls the wrapped store exactly once and logs only after it
// returns, so each change stays the single atomic step the inner store
// makes it; the wrapper adds no read-then-write. A change is logged only
// when it happened: the contract says a failed call changed nothing, with
// the one exception of ErrTokenReused, which revokes a session.
//
// The trail holds user ids, session handles and key ids, never a secret:
// no password hash, no token hash, no key material. Those are what an
// attacker who reads the logs would want, and ids are enough to follow a
// user or a session through the trail.
type auditStore struct {
	inner store.Store
	log   *slog.Logger
}

// Every method is written out instead of embedding store.Store: should the
// interface gain a method, this stops compiling, rather than letting the
// new change through unaudited.
var _ store.Store = (*auditStore)(nil)

// newAuditStore wraps inner and writes the trail to w as slog text lines,
// one per change. Writes to w are serialised.
func newAuditStore(inner store.Store, w io.Writer) *auditStore {
	return &auditStore{inner: inner, log: slog.New(slog.NewTextHandler(w, nil))}
}

// CreateUser implements store.Store.
func (s *auditStore) CreateUser(ctx context.Context, u store.User, first store.Login) error {
	err := s.inner.CreateUser(ctx, u, first)
	if err == nil {
		s.log.InfoContext(ctx, "user created", "user_id", u.ID, "login_method", first.Method)
	}
	return err
}

// UserByID implements store.Store.
func (s *auditStore) UserByID(ctx context.Context, id string) (store.User, error) {
	return s.inner.UserByID(ctx, id)
}

// Login implements store.Store.
func (s *auditStore) Login(ctx context.Context, k store.LoginKey) (store.Login, error) {
	return s.inner.Login(ctx, k)
}

// Logins implements store.Store.
func (s *auditStore) Logins(ctx context.Context, userID string) ([]store.Login, error) {
	return s.inner.Logins(ctx, userID)
}

// UserByLogin implements store.Store.
func (s *auditStore) UserByLogin(ctx context.Context, k store.LoginKey) (store.User, []store.Login, error) {
	return s.inner.UserByLogin(ctx, k)
}

// LoginsByEmail implements store.Store.
func (s *auditStore) LoginsByEmail(ctx context.Context, email string) ([]store.Login, error) {
	return s.inner.LoginsByEmail(ctx, email)
}

// LinkLogin implements store.Store. Account linking joins a new login
// method to an existing user.
func (s *auditStore) LinkLogin(ctx context.Context, l store.Login) error {
	err := s.inner.LinkLogin(ctx, l)
	if err == nil {
		s.log.InfoContext(ctx, "login method linked", "user_id", l.UserID, "login_method", l.Method, "third_party", l.ThirdParty)
	}
	return err
}

// ClaimEmail implements store.Store.
func (s *auditStore) ClaimEmail(ctx context.Context, loginID string) (store.Login, error) {
	return s.inner.ClaimEmail(ctx, loginID)
}

// SetEmailVerified implements store.Store.
func (s *auditStore) SetEmailVerified(ctx context.Context, loginID string, verified bool) (store.Login, error) {
	l, err := s.inner.SetEmailVerified(ctx, loginID, verified)
	if err == nil {
		s.log.InfoContext(ctx, "email verification set", "user_id", l.UserID, "verified", verified)
	}
	return l, err
}

// DeleteLogin implements store.Store.
func (s *auditStore) DeleteLogin(ctx context.Context, loginID string) ([]string, error) {
	handles, err := s.inner.DeleteLogin(ctx, loginID)
	if err == nil {
		s.log.InfoContext(ctx, "login method unlinked", "login_id", loginID, "sessions", len(handles))
	}
	return handles, err
}

// DeleteUser implements store.Store.
func (s *auditStore) DeleteUser(ctx context.Context, userID string) ([]string, error) {
	handles, err := s.inner.DeleteUser(ctx, userID)
	if err == nil {
		s.log.InfoContext(ctx, "user deleted", "user_id", userID, "sessions", len(handles))
	}
	return handles, err
}

// VerifyEmail implements store.Store.
func (s *auditStore) VerifyEmail(ctx context.Context, token store.TokenHash, now time.Time) (store.Login, error) {
	l, err := s.inner.VerifyEmail(ctx, token, now)
	if err == nil {
		s.log.InfoContext(ctx, "email verified", "user_id", l.UserID)
	}
	return l, err
}

// AttachLogin implements store.Store.
func (s *auditStore) AttachLogin(ctx context.Context, l store.Login) error {
	err := s.inner.AttachLogin(ctx, l)
	if err == nil {
		s.log.InfoContext(ctx, "login attached", "user_id", l.UserID, "method", l.Method)
	}
	return err
}

// ChangeEmail implements store.Store.
func (s *auditStore) ChangeEmail(ctx context.Context, kind store.CodeKind, hash store.TokenHash, now time.Time) (store.Code, []store.Login, error) {
	c, logins, err := s.inner.ChangeEmail(ctx, kind, hash, now)
	if err == nil {
		s.log.InfoContext(ctx, "email changed", "kind", string(kind), "user_id", c.UserID)
	}
	return c, logins, err
}

// UsePasswordlessCode implements store.Store. A passwordless flow has no
// user yet: the sign-in that follows is audited by the methods it calls.
func (s *auditStore) UsePasswordlessCode(ctx context.Context, flow, code store.TokenHash, now time.Time, maxAttempts int) (store.Code, error) {
	c, err := s.inner.UsePasswordlessCode(ctx, flow, code, now, maxAttempts)
	switch {
	case err == nil:
		s.log.InfoContext(ctx, "passwordless code used")
	case errors.Is(err, store.ErrWrongCode), errors.Is(err, store.ErrCodeExpired):
		s.log.InfoContext(ctx, "passwordless code refused", "attempts", c.Attempts)
	}
	return c, err
}

// UseCeremony implements store.Store. A passkey ceremony or recovery link
// used is logged with the user it acts on, if any (a sign-in's ceremony
// has none until the passkey names it), and the login whose counter it
// moved; never the material.
func (s *auditStore) UseCeremony(ctx context.Context, kind store.CodeKind, hash store.TokenHash, now time.Time, update *store.MaterialUpdate) (store.Code, error) {
	c, err := s.inner.UseCeremony(ctx, kind, hash, now, update)
	if err == nil {
		attrs := []any{"kind", string(kind), "user_id", c.UserID}
		if update != nil {
			attrs = append(attrs, "login_id", update.LoginID)
		}
		s.log.InfoContext(ctx, "passkey ceremony used", attrs...)
	}
	return c, err
}

// SignInUp implements store.Store. A sign-up through a provider creates a
// user; a sign-in may change the login's email, which is logged too.
func (s *auditStore) SignInUp(ctx context.Context, l store.Login, newUser store.User) (store.Login, bool, error) {
	got, created, err := s.inner.SignInUp(ctx, l, newUser)
	switch {
	case err != nil:
	case created:
		s.log.InfoContext(ctx, "user created", "user_id", got.UserID, "login_method", got.Method, "third_party", got.ThirdParty)
	default:
		s.log.InfoContext(ctx, "third-party sign-in", "user_id", got.UserID, "third_party", got.ThirdParty)
	}
	return got, created, err
}

// UpdatePasswordHash implements store.Store. The library calls it to
// upgrade a hash to new parameters; the password stays the same, but the
// credential changed and the user's reset tokens are void, so it is logged.
func (s *auditStore) UpdatePasswordHash(ctx context.Context, userID, oldHash, newHash string) error {
	err := s.inner.UpdatePasswordHash(ctx, userID, oldHash, newHash)
	if err == nil {
		s.log.InfoContext(ctx, "password changed", "user_id", userID)
	}
	return err
}

// UpdateLoginMaterial implements store.Store. A user's record of second
// factors changes here (a TOTP device added or removed, a recovery code
// spent), and so may a passkey's: the login is logged, never the
// material, which holds sealed secrets and hashed codes.
func (s *auditStore) UpdateLoginMaterial(ctx context.Context, loginID string, old, new []byte) error {
	err := s.inner.UpdateLoginMaterial(ctx, loginID, old, new)
	if err == nil {
		s.log.InfoContext(ctx, "login material changed", "login_id", loginID)
	}
	return err
}

// CreateCode implements store.Store. A reset token being issued is worth
// a line of audit; a verification link is not.
func (s *auditStore) CreateCode(ctx context.Context, c store.Code) error {
	err := s.inner.CreateCode(ctx, c)
	if err == nil && c.Kind == store.CodeReset {
		s.log.InfoContext(ctx, "reset token issued", "user_id", c.UserID, "expires_at", c.ExpiresAt)
	}
	return err
}

// Code implements store.Store.
func (s *auditStore) Code(ctx context.Context, kind store.CodeKind, hash store.TokenHash, now time.Time) (store.Code, error) {
	return s.inner.Code(ctx, kind, hash, now)
}

// ResetPassword implements store.Store.
func (s *auditStore) ResetPassword(ctx context.Context, token store.TokenHash, passwordHash string, now time.Time) (store.Login, []string, error) {
	l, handles, err := s.inner.ResetPassword(ctx, token, passwordHash, now)
	if err == nil {
		s.log.InfoContext(ctx, "reset used", "user_id", l.UserID, "revoked_sessions", handles)
	}
	return l, handles, err
}

// CreateSession implements store.Store.
func (s *auditStore) CreateSession(ctx context.Context, sess store.Session, refresh store.TokenHash, epoch int64) error {
	err := s.inner.CreateSession(ctx, sess, refresh, epoch)
	if err == nil {
		s.log.InfoContext(ctx, "session created", "user_id", sess.UserID, "session", sess.Handle)
	}
	return err
}

// Session implements store.Store.
func (s *auditStore) Session(ctx context.Context, handle string, now time.Time) (store.Session, error) {
	return s.inner.Session(ctx, handle, now)
}

// UserSessions implements store.Store.
func (s *auditStore) UserSessions(ctx context.Context, userID string, now time.Time) ([]store.Session, error) {
	return s.inner.UserSessions(ctx, userID, now)
}

// RotateRefreshToken implements store.Store. Reuse is logged as a warning:
// it means a refresh token was stolen, or a client is badly broken.
func (s *auditStore) RotateRefreshToken(ctx context.Context, r store.Rotation) (store.Rotated, error) {
	res, err := s.inner.RotateRefreshToken(ctx, r)
	sess := res.Session
	switch {
	case err == nil && res.Repeat:
		s.log.InfoContext(ctx, "session refresh repeated inside the reuse window", "user_id", sess.UserID, "session", sess.Handle)
	case err == nil:
		s.log.InfoContext(ctx, "session refreshed", "user_id", sess.UserID, "session", sess.Handle)
	case errors.Is(err, store.ErrTokenReused):
		s.log.WarnContext(ctx, "refresh token reuse detected, session ended", "user_id", sess.UserID, "session", sess.Handle,
			"reuse", res.Reuse)
	}
	return res, err
}

// RevokeSession implements store.Store. The owner is not logged: finding
// it would take a read before the revocation, which the contract's single
// atomic step does not need; the handle leads back to it in the trail.
func (s *auditStore) RevokeSession(ctx context.Context, handle string, why store.EndReason) error {
	err := s.inner.RevokeSession(ctx, handle, why)
	if err == nil {
		s.log.InfoContext(ctx, "session revoked", "session", handle, "reason", why)
	}
	return err
}

// UpdateSessionFactors implements store.Store. A session that completes
// a second factor gains access it did not have, so it is logged, by
// handle.
func (s *auditStore) UpdateSessionFactors(ctx context.Context, handle string, old, new []byte, now time.Time) error {
	err := s.inner.UpdateSessionFactors(ctx, handle, old, new, now)
	if err == nil {
		s.log.InfoContext(ctx, "session factors changed", "session", handle)
	}
	return err
}

// RevokeUserSessions implements store.Store.
func (s *auditStore) RevokeUserSessions(ctx context.Context, userID string) ([]string, error) {
	handles, err := s.inner.RevokeUserSessions(ctx, userID)
	if err == nil {
		s.log.InfoContext(ctx, "sessions revoked", "user_id", userID, "sessions", handles)
	}
	return handles, err
}

// SigningKeys implements store.Store.
func (s *auditStore) SigningKeys(ctx context.Context, now time.Time) ([]store.SigningKey, error) {
	return s.inner.SigningKeys(ctx, now)
}

// AddSigningKey implements store.Store. A new key is logged because it
// decides which tokens verify; its material never is.
func (s *auditStore) AddSigningKey(ctx context.Context, k store.SigningKey) error {
	err := s.inner.AddSigningKey(ctx, k)
	if err == nil {
		s.log.InfoContext(ctx, "signing key added", "key_id", k.ID, "algorithm", k.Algorithm, "sign_until", k.SignUntil)
	}
	return err
}

// DeleteExpired implements store.Store. Removing what has expired changes
// no one's access, so it is housekeeping, not audit.
func (s *auditStore) DeleteExpired(ctx context.Context, now time.Time) error {
	return s.inner.DeleteExpired(ctx, now)
}
