package auth

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/latchkit/auth/internal/address"
	"github.com/latchkit/auth/internal/kit"
	"github.com/latchkit/auth/internal/onetime"
	"github.com/latchkit/auth/internal/wire"
	"github.com/latchkit/auth/mailer"
	"github.com/latchkit/auth/store"
)

// Organisations on top of tenants: invitations by email to join a tenant
// with a role, its members and their roles, a member's removal, and a
// user's switching between the tenants they belong to. The routes are
// the library's own (PROTOCOL.md, "Tenants and organisations"); their
// rules are the package doc's (# Tenants).

// An Invitation asks the holder of an address to join a tenant.
type Invitation struct {
	Tenant, Email string
	// Role is the role the member gets in the tenant, "" for none.
	Role string
	// InvitedBy is the id of the user or operator who sent it, "" for
	// the application.
	InvitedBy            string
	CreatedAt, ExpiresAt time.Time
}

// A Member is a user's membership of a tenant.
type Member struct {
	UserID string
	// Email is the user's first address, "" for a user without one.
	Email string
	// Roles are the roles the user holds in the tenant (with a
	// store.RoleStore).
	Roles    []string
	JoinedAt time.Time
}

// InvitationEmailData is what the invitation templates can show.
type InvitationEmailData struct {
	Email    string // the recipient
	Tenant   string // the tenant's id
	Role     string // the role it grants, "" for none
	Link     string // the frontend's page that accepts it, with its token and the tenant
	ValidFor string // how long the link works, in words: "7 days"
}

// DefaultInvitationEmail returns the email used when
// Config.Tenants.InvitationEmail is nil.
func DefaultInvitationEmail() mailer.Template { return kit.MustClone(defaultInvitationEmail) }

// The defaults of TenantsConfig's invitations and permissions.
const (
	DefaultInvitationLifetime = 7 * 24 * time.Hour
	DefaultInvitePermission   = "members:invite"
	DefaultMembersPermission  = "members:manage"
)

// errUnknownRole refuses an invitation with a role that does not exist.
var errUnknownRole = errors.New("auth: Invite: no such role")

// ErrNotMember reports a user who is not a member of a tenant.
var ErrNotMember = errors.New("auth: not a member of the tenant")

// Invite mails an invitation to join tenant to email, with role (""
// for none; a role of package roles). It works once, for
// Config.Tenants.InvitationLifetime, for whoever signs in with that
// address. The operator of ctx (WithOperator) is its sender.
func (a *Auth) Invite(ctx context.Context, tenant, email, role string) error {
	inv, tok, err := a.newInvitation(ctx, tenant, email, role)
	if err != nil {
		return err
	}
	a.outbox.enqueue(a, mailJob{"invitation", context.WithoutCancel(ctx), func(ctx context.Context) {
		data := InvitationEmailData{Email: inv.Email, Tenant: inv.Tenant, Role: inv.Role,
			Link:     wire.LinkWithToken(a.cfg.Tenants.InvitationURL, tok, inv.Tenant),
			ValidFor: kit.InWords(a.cfg.Tenants.InvitationLifetime)}
		if err := a.mail(ctx, a.cfg.Tenants.InvitationEmail, inv.Email, data); err != nil {
			a.mailFailed(ctx, "invitation", "", "sending the invitation", err)
		}
	}})
	a.emit(ctx, nil, Event{Kind: EventMemberInvited, Tenant: inv.Tenant, Role: inv.Role})
	return nil
}

// newInvitation checks and stores an invitation, and returns it with its
// token.
func (a *Auth) newInvitation(ctx context.Context, tenant, email, role string) (store.Invitation, string, error) {
	ts, err := a.tenantStore()
	if err != nil {
		return store.Invitation{}, "", err
	}
	if tenant == PublicTenant {
		return store.Invitation{}, "", errors.New("auth: every user belongs to the public tenant: there is nothing to invite to")
	}
	email = address.Normalise(email)
	if msg := wire.CheckEmail(email); msg != "" {
		return store.Invitation{}, "", fmt.Errorf("auth: Invite: %s", msg)
	}
	if role != "" {
		rs, ok := a.store.(store.RoleStore)
		if !ok {
			return store.Invitation{}, "", errors.New("auth: an invitation with a role needs a Store that is a store.RoleStore")
		}
		if _, err := rs.RolePermissions(ctx, role); errors.Is(err, store.ErrNotFound) {
			return store.Invitation{}, "", fmt.Errorf("%w: %q", errUnknownRole, role)
		} else if err != nil {
			return store.Invitation{}, "", err
		}
	}
	if a.cfg.Email.Mailer == nil {
		return store.Invitation{}, "", errors.New("auth: invitations need Config.Email.Mailer")
	}
	tok, hash := onetime.New()
	now := a.cfg.Now()
	inv := store.Invitation{Hash: hash, Tenant: tenant, Email: email, Role: role, InvitedBy: kit.OperatorOf(ctx),
		CreatedAt: now, ExpiresAt: now.Add(a.cfg.Tenants.InvitationLifetime)}
	if err := ts.CreateInvitation(ctx, inv); errors.Is(err, store.ErrNotFound) {
		return inv, "", ErrUnknownTenant
	} else if err != nil {
		return inv, "", err
	}
	return inv, tok, nil
}

// Invitations lists the invitations of tenant that still work, oldest
// first.
func (a *Auth) Invitations(ctx context.Context, tenant string) ([]Invitation, error) {
	ts, err := a.tenantStore()
	if err != nil {
		return nil, err
	}
	invs, err := ts.Invitations(ctx, tenant, a.cfg.Now())
	out := make([]Invitation, len(invs))
	for i, inv := range invs {
		out[i] = Invitation{Tenant: inv.Tenant, Email: inv.Email, Role: inv.Role, InvitedBy: inv.InvitedBy,
			CreatedAt: inv.CreatedAt, ExpiresAt: inv.ExpiresAt}
	}
	return out, err
}

// RevokeInvitations voids every invitation of tenant to email.
func (a *Auth) RevokeInvitations(ctx context.Context, tenant, email string) error {
	ts, err := a.tenantStore()
	if err != nil {
		return err
	}
	_, err = ts.RevokeInvitations(ctx, tenant, address.Normalise(email))
	return err
}

// Members lists the members of tenant (not the public one, which every
// user belongs to) in the order they joined: at most limit (100 when not
// positive) after the member whose user id is after ("" for the first).
func (a *Auth) Members(ctx context.Context, tenant, after string, limit int) ([]Member, error) {
	ts, err := a.tenantStore()
	if err != nil {
		return nil, err
	}
	ms, err := ts.Members(ctx, tenant, after, limit)
	if err != nil {
		return nil, err
	}
	rs, _ := a.store.(store.RoleStore)
	out := make([]Member, len(ms))
	for i, m := range ms {
		out[i] = Member{UserID: m.UserID, JoinedAt: m.JoinedAt, Roles: []string{}}
		if logins, err := a.store.Logins(ctx, m.UserID); err == nil {
			out[i].Email = primaryEmail(logins)
		}
		if rs != nil {
			if roles, _, err := rs.UserRoles(ctx, tenant, m.UserID); err == nil && roles != nil {
				out[i].Roles = roles
			}
		}
	}
	return out, nil
}

// RemoveMember ends the membership of the user userID in tenant: their
// roles there go, their sessions there end, and they are refused there
// from now on (SIGN_IN_NOT_ALLOWED) until invited again. ErrNotMember if
// they are not a member.
func (a *Auth) RemoveMember(ctx context.Context, tenant, userID string) error {
	ts, err := a.tenantStore()
	if err != nil {
		return err
	}
	handles, err := ts.RemoveMember(ctx, tenant, userID)
	if errors.Is(err, store.ErrNotFound) {
		return ErrNotMember
	}
	if err != nil {
		return err
	}
	now := a.cfg.Now()
	for _, h := range handles {
		a.evicted.Add(h, now, now.Add(a.cfg.AccessTokenLifetime+jwtLeeway))
		a.emit(ctx, nil, Event{Kind: EventSessionRevoked, UserID: userID, SessionHandle: h, Tenant: tenant})
	}
	a.emit(ctx, nil, Event{Kind: EventMemberRemoved, UserID: userID, Tenant: tenant})
	return nil
}

// UserTenants lists the tenants the user userID belongs to: the public
// one if a login of theirs is in it, and those they are a member of.
func (a *Auth) UserTenants(ctx context.Context, userID string) ([]string, error) {
	logins, err := a.store.Logins(ctx, userID)
	if err != nil {
		return nil, err
	}
	if len(logins) == 0 {
		return nil, ErrNotFound
	}
	var out []string
	if slices.ContainsFunc(logins, func(l store.Login) bool { return l.Tenant == "" }) {
		out = append(out, PublicTenant)
	}
	if ts, err := a.tenantStore(); err == nil {
		more, err := ts.UserTenants(ctx, userID)
		if err != nil {
			return nil, err
		}
		out = append(out, more...)
	}
	return out, nil
}

// The routes of organisations.

func (a *Auth) organisationRoutes(routes map[string]kit.Route) {
	if !a.cfg.Tenants.Enabled {
		return
	}
	post := func(h http.HandlerFunc) kit.Route { return kit.Route{Method: http.MethodPost, Handle: h} }
	routes["/tenant/invitations"] = post(a.handleInvite)
	routes["/tenant/invitation/accept"] = post(a.handleAcceptInvitation)
	routes["/tenant/members"] = kit.Route{Method: http.MethodGet, Handle: a.handleMembers}
	routes["/tenant/members/remove"] = post(a.handleRemoveMember)
	routes["/tenant/switch"] = post(a.handleSwitchTenant)
	routes["/tenant/discover"] = post(a.handleDiscoverTenant)
	routes["/user/tenants"] = kit.Route{Method: http.MethodGet, Handle: a.handleUserTenants}
}

// tenantSession verifies the session of a request to a tenant's own
// route: a session in the path's tenant, held to its MFA requirement,
// whose user has permission there (with a store.RoleStore); or answers
// the request itself.
func (a *Auth) tenantSession(w http.ResponseWriter, r *http.Request, permission string) (*verifiedToken, bool) {
	vt, _, err := a.verifyRequest(r)
	if err != nil {
		a.failSession(w, r, err)
		return nil, false
	}
	t := a.requestTenant(r)
	switch {
	case vt.session.TenantID != t.ID || t.ID == PublicTenant:
		wire.Message(w, http.StatusForbidden, msgNotThisTenant)
		return nil, false
	case a.mfaOn() && !vt.mfaMet():
		a.fail(w, r, errMFAPending)
		return nil, false
	}
	rs, ok := a.store.(store.RoleStore)
	if !ok {
		wire.Message(w, http.StatusForbidden, msgNoPermission)
		return nil, false
	}
	_, perms, err := rs.UserRoles(r.Context(), t.ID, vt.session.UserID)
	if err != nil {
		a.fail(w, r, err)
		return nil, false
	}
	if !slices.Contains(perms, permission) {
		wire.Message(w, http.StatusForbidden, msgNoPermission)
		return nil, false
	}
	return vt, true
}

const (
	msgNotThisTenant = "This needs a session of this organisation: switch to it first."
	msgNoPermission  = "You do not have the permission to manage this organisation's members."
)

func (a *Auth) handleInvite(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Email *string `json:"email"`
		Role  string  `json:"role"`
	}
	if err := a.readJSON(w, r, &req); err != nil {
		a.fail(w, r, err)
		return
	}
	if req.Email == nil {
		a.fail(w, r, wire.BadRequest("Please provide the email"))
		return
	}
	vt, ok := a.tenantSession(w, r, a.cfg.Tenants.InvitePermission)
	if !ok {
		return
	}
	ctx := kit.WithOperator(r.Context(), vt.session.UserID)
	if msg := wire.CheckEmail(address.Normalise(*req.Email)); msg != "" {
		wire.GeneralError(w, msg)
		return
	}
	if wait := a.take(ctx, limit{key: kit.LimitKey("invitations", vt.session.UserID), rate: a.cfg.RateLimits.VerificationEmails}); wait > 0 {
		wire.TooMany(w, wait)
		return
	}
	if err := a.Invite(ctx, vt.session.TenantID, *req.Email, req.Role); err != nil {
		if errors.Is(err, errUnknownRole) {
			wire.Status(w, "UNKNOWN_ROLE_ERROR")
			return
		}
		a.fail(w, r, err)
		return
	}
	wire.JSON(w, http.StatusOK, wire.OK)
}

// handleAcceptInvitation makes the user of the request's session a member
// of the invitation's tenant. The session may be of any tenant, but its
// user must have a login with the invited address: the link proves the
// inbox, and binds the membership to whoever holds it there.
func (a *Auth) handleAcceptInvitation(w http.ResponseWriter, r *http.Request) {
	var req map[string]json.RawMessage
	if err := a.readJSON(w, r, &req); err != nil {
		a.fail(w, r, err)
		return
	}
	tok, err := wire.TokenField(req, "invitation")
	if err != nil {
		a.fail(w, r, err)
		return
	}
	vt, _, err := a.verifyRequest(r)
	if err != nil {
		a.failSession(w, r, err)
		return
	}
	if a.refuseImpersonation(w, vt) {
		return
	}
	inv, ok := a.acceptInvitation(w, r, vt.session.UserID, tok)
	if !ok {
		return
	}
	a.emit(r.Context(), r, Event{Kind: EventMemberJoined, UserID: vt.session.UserID, Tenant: inv.Tenant, Role: inv.Role})
	wire.JSON(w, http.StatusOK, struct {
		Status   string `json:"status"`
		TenantID string `json:"tenantId"`
	}{"OK", inv.Tenant})
}

// acceptInvitation uses up the invitation of tok for the user userID, or
// answers the request itself.
func (a *Auth) acceptInvitation(w http.ResponseWriter, r *http.Request, userID, tok string) (store.Invitation, bool) {
	ctx, t := r.Context(), a.requestTenant(r)
	ts, err := a.tenantStore()
	if err != nil {
		a.fail(w, r, err)
		return store.Invitation{}, false
	}
	hash := sha256.Sum256([]byte(tok))
	inv, found, err := a.liveInvitation(ctx, ts, t.ID, hash)
	if err != nil {
		a.fail(w, r, err)
		return inv, false
	}
	if !onetime.WellFormed(tok) || !found {
		wire.Status(w, "INVITATION_INVALID_ERROR")
		return inv, false
	}
	logins, err := a.store.Logins(ctx, userID)
	if err != nil || !slices.ContainsFunc(logins, func(l store.Login) bool { return l.Email == inv.Email }) {
		if err != nil {
			a.failSession(w, r, sessionGone(err))
			return inv, false
		}
		wire.Status(w, "INVITATION_EMAIL_MISMATCH_ERROR")
		return inv, false
	}
	if inv, err = ts.AcceptInvitation(ctx, hash, userID, a.cfg.Now()); errors.Is(err, store.ErrNotFound) {
		wire.Status(w, "INVITATION_INVALID_ERROR")
		return inv, false
	} else if err != nil {
		a.fail(w, r, err)
		return inv, false
	}
	if inv.Role != "" {
		if rs, ok := a.store.(store.RoleStore); ok {
			if _, err := rs.GiveRole(ctx, inv.Tenant, userID, inv.Role); err != nil {
				a.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "auth: an invitation's role could not be given",
					slog.String("user_id", userID), slog.String("tenant", inv.Tenant), slog.String("error", err.Error()))
			}
		}
	}
	return inv, true
}

// liveInvitation finds the live invitation of hash to tenant among the
// tenant's: an invitation of another tenant's is none of this one's.
func (a *Auth) liveInvitation(ctx context.Context, ts store.TenantStore, tenant string, hash store.TokenHash) (store.Invitation, bool, error) {
	invs, err := ts.Invitations(ctx, tenant, a.cfg.Now())
	for _, inv := range invs {
		if inv.Hash == hash {
			return inv, true, err
		}
	}
	return store.Invitation{}, false, err
}

func (a *Auth) handleMembers(w http.ResponseWriter, r *http.Request) {
	if _, ok := a.tenantSession(w, r, a.cfg.Tenants.MembersPermission); !ok {
		return
	}
	ctx, t := r.Context(), a.requestTenant(r).ID
	members, err := a.Members(ctx, t, r.URL.Query().Get("after"), 0)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	invs, err := a.Invitations(ctx, t)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	type member struct {
		UserID   string   `json:"userId"`
		Email    string   `json:"email,omitempty"`
		Roles    []string `json:"roles"`
		JoinedAt int64    `json:"joinedAt"`
	}
	type invitation struct {
		Email     string `json:"email"`
		Role      string `json:"role,omitempty"`
		ExpiresAt int64  `json:"expiresAt"`
	}
	out := struct {
		Status      string       `json:"status"`
		Members     []member     `json:"members"`
		Invitations []invitation `json:"invitations"`
	}{"OK", []member{}, []invitation{}}
	for _, m := range members {
		out.Members = append(out.Members, member{m.UserID, m.Email, m.Roles, m.JoinedAt.UnixMilli()})
	}
	for _, inv := range invs {
		out.Invitations = append(out.Invitations, invitation{inv.Email, inv.Role, inv.ExpiresAt.UnixMilli()})
	}
	wire.JSON(w, http.StatusOK, out)
}

func (a *Auth) handleRemoveMember(w http.ResponseWriter, r *http.Request) {
	var req struct {
		UserID *string `json:"userId"`
	}
	if err := a.readJSON(w, r, &req); err != nil {
		a.fail(w, r, err)
		return
	}
	if req.UserID == nil {
		a.fail(w, r, wire.BadRequest("Please provide the userId"))
		return
	}
	vt, ok := a.tenantSession(w, r, a.cfg.Tenants.MembersPermission)
	if !ok {
		return
	}
	ctx := kit.WithOperator(r.Context(), vt.session.UserID)
	switch err := a.RemoveMember(ctx, vt.session.TenantID, *req.UserID); {
	case errors.Is(err, ErrNotMember):
		wire.Status(w, "NOT_A_MEMBER_ERROR")
	case err != nil:
		a.fail(w, r, err)
	default:
		wire.JSON(w, http.StatusOK, wire.OK)
	}
}

func (a *Auth) handleUserTenants(w http.ResponseWriter, r *http.Request) {
	vt, _, err := a.verifyRequest(r)
	if err != nil {
		a.failSession(w, r, err)
		return
	}
	ids, err := a.UserTenants(r.Context(), vt.session.UserID)
	if err != nil {
		a.failSession(w, r, sessionGone(err))
		return
	}
	type tenant struct {
		TenantID string `json:"tenantId"`
		Current  bool   `json:"current"`
	}
	out := struct {
		Status  string   `json:"status"`
		Tenants []tenant `json:"tenants"`
	}{"OK", []tenant{}}
	for _, id := range ids {
		out.Tenants = append(out.Tenants, tenant{id, id == vt.session.TenantID})
	}
	wire.JSON(w, http.StatusOK, out)
}

// handleDiscoverTenant names the tenant of an email's domain
// (Tenant.EmailDomains), or the public one: where a sign-in page sends a
// user of an organisation with its own provider.
func (a *Auth) handleDiscoverTenant(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Email *string `json:"email"`
	}
	if err := a.readJSON(w, r, &req); err != nil {
		a.fail(w, r, err)
		return
	}
	if req.Email == nil {
		wire.JSON(w, http.StatusBadRequest, struct {
			Status  string `json:"status"`
			Message string `json:"message"`
		}{"ERROR", "Email is required"})
		return
	}
	if wait := a.take(r.Context(), limit{key: kit.LimitKey("email-check-client", a.limitClient(r)), rate: a.cfg.RateLimits.ClientEmailChecks}); wait > 0 {
		wire.TooMany(w, wait)
		return
	}
	tenant, err := a.tenantOfDomain(r.Context(), address.Normalise(*req.Email))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	wire.JSON(w, http.StatusOK, struct {
		Status string `json:"status"`
		Tenant string `json:"tenant"`
	}{"OK", tenant})
}

// tenantOfDomain is the tenant whose EmailDomains hold email's domain, or
// the public tenant.
func (a *Auth) tenantOfDomain(ctx context.Context, email string) (string, error) {
	_, domain, ok := strings.Cut(email, "@")
	if !ok || domain == "" {
		return PublicTenant, nil
	}
	byID, err := a.tenantSnapshot(ctx)
	if err != nil {
		return "", err
	}
	for id, t := range byID {
		if slices.Contains(t.EmailDomains, domain) {
			return id, nil
		}
	}
	return PublicTenant, nil
}

// handleSwitchTenant moves the request's session to the path's tenant, as
// a new session of the same user there, and ends the old one: a user of
// several tenants changes organisation without signing in again, where
// the tenant's rules allow it. They allow it if the user is a member
// there (or, for the public tenant, has a login in it), and the way the
// session signed in is one of the tenant's first factors (a provider, one
// of the tenant's providers); the new
// session keeps the second factors completed, and must complete what the
// tenant requires besides (MFA pending).
func (a *Auth) handleSwitchTenant(w http.ResponseWriter, r *http.Request) {
	vt, _, err := a.verifyRequest(r)
	if err != nil {
		a.failSession(w, r, err)
		return
	}
	if a.refuseImpersonation(w, vt) {
		return
	}
	ctx, t, old := r.Context(), a.requestTenant(r), *vt.session
	u, err := a.store.UserByID(ctx, old.UserID)
	var by store.Login
	if err == nil {
		by, err = a.loginOf(ctx, old.UserID, old.LoginID)
	}
	if err != nil {
		a.failSession(w, r, sessionGone(err))
		return
	}
	if status := a.switchRefused(ctx, t, old.UserID, by); status != "" {
		wire.Status(w, status)
		return
	}
	s, tokens, err := a.switchedSession(ctx, w, r, vt, t, u, by)
	if err != nil {
		a.failSession(w, r, err)
		return
	}
	if err := a.store.RevokeSession(ctx, vt.handle, store.EndSignedOut); err != nil {
		a.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "auth: the session switched from could not be ended",
			slog.String("user_id", old.UserID), slog.String("error", err.Error()))
	}
	a.emit(ctx, r, Event{Kind: EventTenantSwitch, UserID: u.ID, SessionHandle: s.Handle, Tenant: t.ID})
	wire.JSON(w, http.StatusOK, struct {
		Status   string `json:"status"`
		TenantID string `json:"tenantId"`
		bodyTokens
	}{"OK", t.ID, tokens})
}

// switchRefused is the status that refuses to move the user userID, whose
// session signed in with by, to t, or "".
func (a *Auth) switchRefused(ctx context.Context, t *kit.Tenant, userID string, by store.Login) string {
	if t.ID == PublicTenant {
		logins, err := a.store.Logins(ctx, userID)
		if err != nil || !slices.ContainsFunc(logins, func(l store.Login) bool { return l.Tenant == "" }) {
			return "NOT_A_MEMBER_ERROR"
		}
	} else if ts, err := a.tenantStore(); err != nil {
		return "NOT_A_MEMBER_ERROR"
	} else if _, err := ts.Membership(ctx, t.ID, userID); err != nil {
		return "NOT_A_MEMBER_ERROR"
	}
	first := a.tenantFirstFactors(t)
	if !slices.Contains(first, kit.FactorOf(by, false)) && !slices.Contains(first, kit.FactorOf(by, true)) {
		return "SIGN_IN_REQUIRED_ERROR"
	}
	// A provider's sign-in counts where the tenant has that provider: a
	// tenant that signs in with its company's provider takes no other.
	if by.Method == store.MethodThirdParty && t.Provider(by.ThirdParty) == nil {
		return "SIGN_IN_REQUIRED_ERROR"
	}
	return ""
}

// switchedSession starts the session of u in t that the session of vt
// becomes, with the factors it completed, and writes its tokens.
func (a *Auth) switchedSession(ctx context.Context, w http.ResponseWriter, r *http.Request, vt *verifiedToken, t *kit.Tenant, u store.User, by store.Login) (store.Session, bodyTokens, error) {
	var claim []byte
	if a.mfaOn() {
		done := map[string]int64{}
		if c := vt.factorsClaim(); c != nil {
			done = c.Done
		}
		logins, err := a.store.Logins(ctx, u.ID)
		if err != nil {
			return store.Session{}, bodyTokens{}, err
		}
		sf, err := a.sessionFactors(ctx, t.ID, u.ID)
		if err != nil {
			return store.Session{}, bodyTokens{}, err
		}
		claim = mfaClaim{Done: done, Met: met(a.requiredFactors(sf, logins), done)}.encode()
	}
	by.SessionEpoch = u.SessionEpoch
	s, tokens, err := a.createSessionIn(ctx, w, r, tenantInStore(t.ID), u.ID, by, claim)
	if errors.Is(err, store.ErrSessionsEnded) || errors.Is(err, store.ErrBanned) {
		return s, tokens, errRevoked
	}
	return s, tokens, err
}
