package auth

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/latchkit/auth/internal/address"
	"github.com/latchkit/auth/internal/kit"
	"github.com/latchkit/auth/internal/wire"
	"github.com/latchkit/auth/store"
)

// User is an account, as the Go API reports it.
type User struct {
	// ID is the user's unique, immutable id: the "sub" of their access
	// tokens and Session.UserID.
	ID string
	// Email is the email the user is known by, normalised (trimmed and
	// lower-cased): that of their email and password login, or else of
	// their first login method.
	Email string
	// TimeJoined is when the user signed up.
	TimeJoined time.Time
	// LoginMethods are the ways the user signs in, oldest first.
	LoginMethods []LoginMethod
	// Ban is the user's ban (see BanUser), the zero Ban if there is none;
	// one that has run out (Ban.ActiveAt) stays until it is lifted.
	Ban Ban
}

// LoginMethod is one way a user signs in.
type LoginMethod struct {
	// ID names the login method (the SDKs' recipeUserId, and
	// Session.LoginID of the sessions it starts). A user's first login
	// method has the user's id.
	ID string
	// Method is the kind of login, one of package store's login methods
	// (such as [store.MethodEmailPassword] or [store.MethodWebAuthn]);
	// never [store.MethodSecondFactors], which is no way to sign in.
	Method string
	// ThirdPartyID is the provider ("google", ...) of a third-party
	// login, and ThirdPartyUserID the provider's id for the user.
	ThirdPartyID, ThirdPartyUserID string
	// Email is the login's email, normalised, and EmailVerified whether
	// it is known to be the user's: a provider vouched for it, a link or
	// code sent to it was used, or the application said so with
	// SetEmailVerified.
	Email         string
	EmailVerified bool
	// CreatedAt is when the login was added.
	CreatedAt time.Time
	// Tenant is the id of the tenant the login belongs to (PublicTenant,
	// or one of Tenants).
	Tenant string
}

// SessionInfo is a live session as the Store keeps it: what Sessions
// lists and RevokeSession ends. (A Session, by contrast, is what an
// access token says.)
type SessionInfo struct {
	Handle      string    // names the session; Session.Handle of its access tokens
	UserID      string    // the owner
	LoginID     string    // the login method it was started with
	Tenant      string    // the tenant it belongs to
	CreatedAt   time.Time // when the user signed in
	RefreshedAt time.Time // when its tokens were last refreshed
	ExpiresAt   time.Time // when it ends unless refreshed before
	Generation  int64     // how many times it has been refreshed
	// Factors are the factors the session completed (FactorTOTP, ...),
	// each with when it last did, while Config.MFA is on.
	Factors map[string]time.Time
}

// user reads a user and its logins.
func (a *Auth) user(ctx context.Context, id string) (store.User, []store.Login, error) {
	u, err := a.store.UserByID(ctx, id)
	if err != nil {
		return store.User{}, nil, err
	}
	logins, err := a.store.Logins(ctx, id)
	return u, logins, err
}

// primaryEmail is the email a user is known by: that of their email and
// password login, or else of their first login.
func primaryEmail(logins []store.Login) string {
	for _, l := range logins {
		if l.Method == store.MethodEmailPassword {
			return l.Email
		}
	}
	if len(logins) > 0 {
		return logins[0].Email
	}
	return ""
}

// UserByID returns a user, or an error matching ErrNotFound.
func (a *Auth) UserByID(ctx context.Context, id string) (User, error) {
	u, logins, err := a.user(ctx, id)
	if err != nil {
		return User{}, err
	}
	methods := make([]LoginMethod, len(logins))
	for i, l := range logins {
		methods[i] = LoginMethod{ID: l.ID, Method: l.Method, Email: l.Email, EmailVerified: l.EmailVerified,
			CreatedAt: l.CreatedAt, Tenant: store.TenantID(l.Tenant)}
		if l.Method == store.MethodThirdParty {
			methods[i].ThirdPartyID, methods[i].ThirdPartyUserID = l.ThirdParty, l.Subject
		}
	}
	return User{ID: u.ID, Email: primaryEmail(logins), TimeJoined: u.TimeJoined, LoginMethods: methods, Ban: u.Ban}, nil
}

// UserByEmail returns the user who signs in with an email and a password
// (the email compared after normalising it as sign-in does) in the tenant
// of ctx (InTenant; the public one by default), or an error matching
// ErrNotFound.
func (a *Auth) UserByEmail(ctx context.Context, email string) (User, error) {
	l, err := a.store.Login(ctx, store.EmailPasswordKey(address.Normalise(email)).In(kit.TenantIDOf(ctx)))
	if err != nil {
		return User{}, err
	}
	return a.UserByID(ctx, l.UserID)
}

// Sessions returns the live sessions of a user, newest first.
func (a *Auth) Sessions(ctx context.Context, userID string) ([]SessionInfo, error) {
	ss, err := a.store.UserSessions(ctx, userID, a.cfg.Now())
	if err != nil {
		return nil, err
	}
	infos := make([]SessionInfo, len(ss))
	for i, s := range ss {
		infos[i] = SessionInfo{Handle: s.Handle, UserID: s.UserID, LoginID: s.LoginID, Tenant: store.TenantID(s.Tenant), CreatedAt: s.CreatedAt,
			RefreshedAt: s.RefreshedAt, ExpiresAt: s.ExpiresAt, Generation: s.Generation}
		if c, err := decodeClaim(s.Factors); err == nil && len(s.Factors) > 0 {
			infos[i].Factors = make(map[string]time.Time, len(c.Done))
			for f, at := range c.Done {
				infos[i].Factors[f] = time.Unix(at, 0)
			}
		}
	}
	return infos, nil
}

// RevokeSession ends a session: its refresh token stops working at once,
// its access tokens when they expire (or at once with
// Config.CheckSessionInStore). It returns an error matching ErrNotFound
// if there is no such session.
func (a *Auth) RevokeSession(ctx context.Context, handle string) error {
	s, err := a.store.Session(ctx, handle, a.cfg.Now())
	if err != nil {
		return err
	}
	if err := a.store.RevokeSession(ctx, handle, store.EndRevoked); err != nil {
		return err
	}
	a.emit(ctx, nil, Event{Kind: EventSessionRevoked, UserID: s.UserID, SessionHandle: handle})
	return nil
}

// RevokeAllSessions ends every session of a user and returns how many it
// ended. Sign-ins in flight, whose credential was checked before, start
// no session after it: they are answered GENERAL_ERROR.
func (a *Auth) RevokeAllSessions(ctx context.Context, userID string) (int, error) {
	handles, err := a.store.RevokeUserSessions(ctx, userID)
	for _, h := range handles {
		a.emit(ctx, nil, Event{Kind: EventSessionRevoked, UserID: userID, SessionHandle: h})
	}
	return len(handles), err
}

// SetEmailVerified records whether the email of a login method (by its
// LoginMethod.ID) belongs to its user, as an app does after checking it
// some other way, or to take back a verification. Sessions see the change
// at their next refresh, or at once where a check reads it (RequireSession
// in required mode re-reads an unverified claim). It returns an error
// matching ErrNotFound if there is no such login method.
func (a *Auth) SetEmailVerified(ctx context.Context, loginID string, verified bool) error {
	l, err := a.store.SetEmailVerified(ctx, loginID, verified)
	if err != nil {
		return err
	}
	if verified {
		a.emit(ctx, nil, Event{Kind: EventEmailVerified, UserID: l.UserID, Method: l.Method, ThirdPartyID: kit.ProviderOf(l)})
		a.afterVerified(ctx, l)
	}
	return nil
}

// Unlink removes a login method (by its LoginMethod.ID) from user
// userID: it no longer signs in, and the sessions it started
// (Session.LoginID) end. Their refresh tokens stop working at once, on
// every instance. Their access tokens, with Config.CheckSessionInStore,
// stop at once on this instance and at the next store read on others
// (within Config.SessionCheckCache); without it they keep opening
// protected routes as the user until they expire
// (Config.AccessTokenLifetime), as after RevokeSession. The user keeps
// the other login methods and the sessions they started. It returns an
// error matching ErrLastLogin if it is the user's only one (delete the
// user instead), ErrLastFactor if it is a passkey, the last second
// factor that Config.MFA requires of the user, and ErrNotFound if the
// user has no such login method.
func (a *Auth) Unlink(ctx context.Context, userID, loginID string) error {
	handles, err := a.removeLogin(ctx, userID, loginID)
	if err != nil {
		return err
	}
	for _, h := range handles {
		a.emit(ctx, nil, Event{Kind: EventSessionRevoked, UserID: userID, SessionHandle: h})
	}
	return nil
}

// removeLogin removes the login loginID of user userID (ErrNotFound if
// the user has none such), unless it is the user's last required second
// factor (ErrLastFactor) or last login (store.ErrLastLogin), and returns
// the handles of the sessions it started, which end with it. Two
// removals of a user's last two factors racing each other can both pass
// the check: it takes a session that met the requirement (or the
// application) to remove either, so it is the owner's doing, not a way
// around the factor.
func (a *Auth) removeLogin(ctx context.Context, userID, loginID string) ([]string, error) {
	if loginID == "" {
		loginID = userID // a session from before users had several logins
	}
	logins, err := a.store.Logins(ctx, userID)
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(logins, func(l store.Login) bool { return l.ID == loginID })
	if i < 0 {
		return nil, store.ErrNotFound
	}
	if a.mfaOn() {
		sf, err := a.secondFactors(ctx, userID)
		if err != nil {
			return nil, err
		}
		if err := a.keepsRequiredFactor(sf, slices.Delete(logins, i, i+1)); err != nil {
			return nil, err
		}
	}
	return a.store.DeleteLogin(ctx, loginID)
}

// DeleteUser removes a user and everything kept of them: every login
// method, session, refresh token, reset and verification link, and the
// rate-limit entries kept for their emails and login methods. Every
// session of the user ends, whichever login method started it. Their
// refresh tokens stop working at once on every instance (the store no
// longer knows them: ReasonRevoked). Their access tokens stop at
// once on this instance, with or without Config.CheckSessionInStore; on
// others they work until they expire (Config.AccessTokenLifetime), or,
// with Config.CheckSessionInStore, until the store is next read for them
// (within Config.SessionCheckCache). A sign-in in flight starts no
// session. It returns an error matching ErrNotFound if there is no such
// user.
func (a *Auth) DeleteUser(ctx context.Context, userID string) error {
	return a.deleteUser(ctx, nil, userID)
}

// deleteUser is DeleteUser, whose events name r, the request that asked
// for it, or nil.
func (a *Auth) deleteUser(ctx context.Context, r *http.Request, userID string) error {
	logins, err := a.store.Logins(ctx, userID)
	if err != nil {
		return err
	}
	handles, err := a.store.DeleteUser(ctx, userID)
	now := a.cfg.Now()
	if err == nil || errors.Is(err, store.ErrNotFound) {
		// Not found too: an earlier call may have deleted the user and
		// lost the store's answer; their access tokens stop here all
		// the same.
		a.deleted.Add(userID, now, now.Add(a.cfg.AccessTokenLifetime+jwtLeeway))
	}
	if err != nil {
		return err
	}
	for _, h := range handles {
		a.emit(ctx, r, Event{Kind: EventSessionRevoked, UserID: userID, SessionHandle: h})
	}
	// The entries keyed by the user and their emails. Those keyed by
	// an email and a client address together hold a hash of both, and
	// expire on their own.
	keys := []string{kit.LimitKey("verify-email", userID)}
	for _, l := range logins {
		keys = append(keys, kit.LimitKey("signin-account", l.Email), kit.LimitKey("reset-email", l.Email))
	}
	for _, key := range keys {
		if err := a.cfg.Limiter.Reset(ctx, key); err != nil {
			a.limiterFailed(ctx, err)
		}
	}
	a.emit(ctx, r, Event{Kind: EventUserDeleted, UserID: userID})
	return nil
}

// legacyUser is the user object of older clients.
type legacyUser struct {
	ID         string           `json:"id"`
	Email      string           `json:"email"`
	TimeJoined int64            `json:"timeJoined"`
	TenantIDs  []string         `json:"tenantIds"`
	ThirdParty *wire.ThirdParty `json:"thirdParty,omitempty"`
}

// writeUser answers a successful sign-up or sign-in by the login by. For
// a third-party sign-in, created tells whether it created the login (the
// SDK's createdNewRecipeUser); it is nil for the password routes.
// isPrimary is the user object's isPrimaryUser.
func writeUser(w http.ResponseWriter, r *http.Request, u store.User, logins []store.Login, by store.Login, created *bool, tokens bodyTokens, isPrimary bool) {
	joined := u.TimeJoined.UnixMilli()
	var user any
	legacy := legacyFDI(r.Header.Get("fdi-version"))
	if legacy {
		lu := legacyUser{ID: u.ID, Email: primaryEmail(logins), TimeJoined: joined, TenantIDs: wire.TenantsOf(by.Tenant)}
		if by.Method == store.MethodThirdParty {
			lu.Email, lu.ThirdParty = by.Email, &wire.ThirdParty{ID: by.ThirdParty, UserID: by.Subject}
		}
		user = lu
	} else {
		user = wire.UserOf(u, logins, isPrimary)
	}
	if created == nil {
		wire.JSON(w, http.StatusOK, struct {
			Status string `json:"status"`
			User   any    `json:"user"`
			bodyTokens
		}{"OK", user, tokens})

		return
	}
	if legacy {
		wire.JSON(w, http.StatusOK, struct {
			Status         string `json:"status"`
			CreatedNewUser bool   `json:"createdNewUser"`
			User           any    `json:"user"`
			bodyTokens
		}{"OK", *created, user, tokens})

		return
	}
	wire.JSON(w, http.StatusOK, struct {
		Status               string `json:"status"`
		CreatedNewRecipeUser bool   `json:"createdNewRecipeUser"`
		User                 any    `json:"user"`
		bodyTokens
	}{"OK", *created, user, tokens})

}

// legacyFDI reports whether the highest version in an fdi-version header is
// below 1.18 or is a 2.x, whose clients expect the legacy user object. No
// header means the latest.
func legacyFDI(header string) bool {
	if header == "" || len(header) > 256 {
		return false
	}
	major, minor, ok := highestVersion(header)
	if !ok {
		return false
	}
	return major == 2 || major == 1 && minor < 18 || major == 0
}

// highestVersion is the highest major.minor version in a comma-separated
// list, and whether there is one; entries that are not such a version are
// passed over.
func highestVersion(list string) (major, minor int, ok bool) {
	major, minor = -1, -1
	for _, v := range strings.Split(list, ",") {
		ma, mi, valid := parseVersion(strings.TrimSpace(v))
		if valid && (ma > major || ma == major && mi > minor) {
			major, minor = ma, mi
		}
	}
	return major, minor, major >= 0
}

// parseVersion reads "major.minor", both non-negative integers.
func parseVersion(v string) (major, minor int, ok bool) {
	maj, min, ok := strings.Cut(v, ".")
	if !ok {
		return 0, 0, false
	}
	ma, err1 := strconv.Atoi(maj)
	mi, err2 := strconv.Atoi(min)
	if err1 != nil || err2 != nil || ma < 0 || mi < 0 {
		return 0, 0, false
	}
	return ma, mi, true
}
