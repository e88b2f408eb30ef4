package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/latchkit/auth/store"
)

var _ store.TenantStore = (*Store)(nil)

// Tenants live in auth_tenants, their members in auth_tenant_members and
// the invitations to join them in auth_invitations (migration 18); a
// login's, code's and session's tenant is a column of its row.
//
// Locks: a method that changes a member locks the user's row first, as
// every method that changes a user's records does, then the tenant's row,
// shared; DeleteTenant locks the tenant's row exclusively before it
// touches anything. So a membership is added either before a deletion of
// its tenant, which then deletes it, or after, finding no tenant: no
// membership outlives its tenant. A login in a tenant with no record
// makes no membership, for the same reason.

// tenantQueries holds the statements of the tenants, with the dialect's
// placeholders.
type tenantQueries struct {
	insertTenant, updateTenant, tenant, tenants       string
	tenantForShare, tenantForUpdate, deleteTenant     string
	deleteMembers, deleteTenantRoles                  string
	tenantHandlesForUpdate, endTenantSessions         string
	join, leave, takeRoles                            string
	memberHandlesForUpdate, endMemberSessions         string
	membership, members, membersAfter, userTenants    string
	deleteUser                                        string
	insertInvitation, invitations, revokeInvitations  string
	invitationTenant, invitationForUpdate             string
	deleteTenantInvitations, deleteExpiredInvitations string
}

// invitationColumns are the columns scanInvitation reads, in its order.
const invitationColumns = `hash, tenant, email, role, invited_by, created_at, expires_at`

func newTenantQueries(d Dialect) tenantQueries {
	forUpdate, forShare := " FOR UPDATE", " FOR SHARE"
	switch d {
	case MySQL:
		forShare = " LOCK IN SHARE MODE" // MariaDB has no FOR SHARE
	case SQLite:
		forUpdate, forShare = "", ""
	}
	// Insert-if-absent: a duplicate is 0 rows (see newQueries).
	ignore := func(insert, key string) string {
		if d == MySQL {
			return insert + " ON DUPLICATE KEY UPDATE " + key + " = " + key
		}
		return insert + " ON CONFLICT DO NOTHING"
	}
	revoked := `'` + string(store.EndRevoked) + `'`
	q := tenantQueries{
		insertTenant:    ignore(`INSERT INTO auth_tenants (id, config, created_at, updated_at) VALUES (?, ?, ?, ?)`, "id"),
		updateTenant:    `UPDATE auth_tenants SET config = ?, updated_at = ? WHERE id = ?`,
		tenant:          `SELECT id, config, created_at, updated_at FROM auth_tenants WHERE id = ?`,
		tenants:         `SELECT id, config, created_at, updated_at FROM auth_tenants ORDER BY id`,
		tenantForShare:  `SELECT 1 FROM auth_tenants WHERE id = ?` + forShare,
		tenantForUpdate: `SELECT 1 FROM auth_tenants WHERE id = ?` + forUpdate,
		deleteTenant:    `DELETE FROM auth_tenants WHERE id = ?`,

		deleteMembers:     `DELETE FROM auth_tenant_members WHERE tenant = ?`,
		deleteTenantRoles: `DELETE FROM auth_user_roles WHERE tenant = ?`,
		// A tenant's sessions, through the index that leaves out the
		// public tenant's (argument: the tenant).
		tenantHandlesForUpdate: `SELECT handle FROM auth_sessions WHERE tenant = ? AND tenant <> '' AND end_reason IS NULL
			ORDER BY created_at DESC, handle` + forUpdate,
		endTenantSessions: `UPDATE auth_sessions SET end_reason = ` + revoked + `
			WHERE tenant = ? AND tenant <> '' AND end_reason IS NULL`,

		join:      ignore(`INSERT INTO auth_tenant_members (tenant, user_id, joined_at) VALUES (?, ?, ?)`, "tenant"),
		leave:     `DELETE FROM auth_tenant_members WHERE tenant = ? AND user_id = ?`,
		takeRoles: `DELETE FROM auth_user_roles WHERE tenant = ? AND user_id = ?`,
		// A member's sessions in the tenant (arguments: user, tenant).
		memberHandlesForUpdate: `SELECT handle FROM auth_sessions WHERE user_id = ? AND tenant = ? AND end_reason IS NULL
			ORDER BY created_at DESC, handle` + forUpdate,
		endMemberSessions: `UPDATE auth_sessions SET end_reason = ` + revoked + `
			WHERE user_id = ? AND tenant = ? AND end_reason IS NULL`,
		membership: `SELECT joined_at FROM auth_tenant_members WHERE tenant = ? AND user_id = ?`,
		members: `SELECT user_id, joined_at FROM auth_tenant_members WHERE tenant = ?
			ORDER BY joined_at, user_id LIMIT ?`,
		// After a member (arguments: tenant, its joined_at twice, its
		// id): the range on joined_at spelt out, as MySQL may not scan an
		// index for a row comparison.
		membersAfter: `SELECT user_id, joined_at FROM auth_tenant_members
			WHERE tenant = ? AND joined_at >= ? AND (joined_at > ? OR user_id > ?)
			ORDER BY joined_at, user_id LIMIT ?`,
		userTenants: `SELECT tenant FROM auth_tenant_members WHERE user_id = ? ORDER BY tenant`,
		deleteUser:  `DELETE FROM auth_tenant_members WHERE user_id = ?`,

		insertInvitation: ignore(`INSERT INTO auth_invitations (`+invitationColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?)`, "hash"),
		invitations: `SELECT ` + invitationColumns + ` FROM auth_invitations WHERE tenant = ? AND expires_at > ?
			ORDER BY created_at, hash`,
		revokeInvitations:        `DELETE FROM auth_invitations WHERE tenant = ? AND email = ?`,
		invitationTenant:         `SELECT tenant FROM auth_invitations WHERE hash = ?`,
		invitationForUpdate:      `SELECT ` + invitationColumns + ` FROM auth_invitations WHERE hash = ?` + forUpdate,
		deleteTenantInvitations:  `DELETE FROM auth_invitations WHERE tenant = ?`,
		deleteExpiredInvitations: `DELETE FROM auth_invitations WHERE expires_at <= ?`,
	}
	if d == Postgres {
		for _, p := range []*string{&q.insertTenant, &q.updateTenant, &q.tenant, &q.tenants, &q.tenantForShare,
			&q.tenantForUpdate, &q.deleteTenant, &q.deleteMembers, &q.deleteTenantRoles, &q.tenantHandlesForUpdate,
			&q.endTenantSessions, &q.join, &q.leave, &q.takeRoles, &q.memberHandlesForUpdate, &q.endMemberSessions,
			&q.membership, &q.members, &q.membersAfter, &q.userTenants, &q.deleteUser, &q.insertInvitation,
			&q.invitations, &q.revokeInvitations, &q.invitationTenant, &q.invitationForUpdate,
			&q.deleteTenantInvitations, &q.deleteExpiredInvitations} {
			*p = rebindQuery(*p)
		}
	}
	return q
}

// lockTenant runs query, tenantForShare or tenantForUpdate, on the tenant
// id: ErrNotFound if there is no such tenant.
func lockTenant(ctx context.Context, q querier, query, id string) error {
	var one int
	err := q.QueryRowContext(ctx, query, id).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return store.ErrNotFound
	}
	return err
}

// joinLoginTenant makes the user of l, a login this transaction added, a
// member of l's tenant, if it is not the public one and has a record.
func (s *Store) joinLoginTenant(ctx context.Context, q querier, l store.Login) error {
	if l.Tenant == "" {
		return nil
	}
	err := lockTenant(ctx, q, s.q.tenants.tenantForShare, l.Tenant)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	} else if err != nil {
		return err
	}
	_, err = q.ExecContext(ctx, s.q.tenants.join, l.Tenant, l.UserID, ms(l.CreatedAt))
	return err
}

// PutTenant implements store.TenantStore: an insert-if-absent, or the
// update of the row that is there, once locked. A deletion between the
// two leaves nothing to lock, and the insert is tried again. The lock,
// not the update's count, says that the row is there: MySQL counts a row
// written with the values it had as unchanged.
func (s *Store) PutTenant(ctx context.Context, t store.Tenant) (bool, error) {
	var created bool
	err := s.inTx(ctx, func(q querier) error {
		for range maxAttempts {
			n, err := affected(q.ExecContext(ctx, s.q.tenants.insertTenant, t.ID, orNull(t.Config),
				ms(t.UpdatedAt), ms(t.UpdatedAt)))
			if err != nil || n > 0 {
				created = n > 0
				return err
			}
			err = lockTenant(ctx, q, s.q.tenants.tenantForUpdate, t.ID)
			if errors.Is(err, store.ErrNotFound) {
				continue
			} else if err != nil {
				return err
			}
			_, err = q.ExecContext(ctx, s.q.tenants.updateTenant, orNull(t.Config), ms(t.UpdatedAt), t.ID)
			return err
		}
		return fmt.Errorf("tenant %q deleted %d times while it was written", t.ID, maxAttempts)
	})
	if err != nil {
		return false, fmt.Errorf("sqlstore: writing a tenant: %w", err)
	}
	return created, nil
}

// scanTenant reads a row of auth_tenants.
func scanTenant(row scanner) (store.Tenant, error) {
	var t store.Tenant
	var created, updated int64
	if err := row.Scan(&t.ID, &t.Config, &created, &updated); err != nil {
		return store.Tenant{}, err
	}
	t.CreatedAt, t.UpdatedAt = fromMS(created), fromMS(updated)
	return t, nil
}

// Tenant implements store.TenantStore.
func (s *Store) Tenant(ctx context.Context, id string) (store.Tenant, error) {
	t, err := scanTenant(s.db.QueryRowContext(ctx, s.q.tenants.tenant, id))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Tenant{}, store.ErrNotFound
	} else if err != nil {
		return store.Tenant{}, unavailable(fmt.Errorf("sqlstore: reading a tenant: %w", err))
	}
	return t, nil
}

// Tenants implements store.TenantStore.
func (s *Store) Tenants(ctx context.Context) ([]store.Tenant, error) {
	rows, err := s.db.QueryContext(ctx, s.q.tenants.tenants)
	if err != nil {
		return nil, unavailable(fmt.Errorf("sqlstore: listing tenants: %w", err))
	}
	defer rows.Close()
	out := []store.Tenant{}
	for rows.Next() {
		t, err := scanTenant(rows)
		if err != nil {
			return nil, unavailable(fmt.Errorf("sqlstore: listing tenants: %w", err))
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, unavailable(fmt.Errorf("sqlstore: listing tenants: %w", err))
	}
	return out, nil
}

// DeleteTenant implements store.TenantStore in one transaction. The
// invitations go before the members: an acceptance that held one commits
// its membership first, and the deletion of the members, a statement
// after, sees it.
func (s *Store) DeleteTenant(ctx context.Context, id string) ([]string, error) {
	var handles []string
	err := s.inTx(ctx, func(q querier) error {
		if err := lockTenant(ctx, q, s.q.tenants.tenantForUpdate, id); err != nil {
			return err
		}
		for _, query := range []string{s.q.tenants.deleteTenantInvitations, s.q.tenants.deleteMembers,
			s.q.tenants.deleteTenantRoles} {
			if _, err := q.ExecContext(ctx, query, id); err != nil {
				return err
			}
		}
		var err error
		if handles, err = queryHandles(ctx, q, s.q.tenants.tenantHandlesForUpdate, id); err != nil {
			return err
		}
		for _, query := range []string{s.q.tenants.endTenantSessions, s.q.tenants.deleteTenant} {
			if _, err := q.ExecContext(ctx, query, id); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, wrap("deleting a tenant", err)
	}
	return handles, nil
}

// AddMember implements store.TenantStore.
func (s *Store) AddMember(ctx context.Context, tenant, userID string, at time.Time) (bool, error) {
	var added bool
	err := s.inTx(ctx, func(q querier) error {
		if err := s.lockMember(ctx, q, tenant, userID); err != nil {
			return err
		}
		n, err := affected(q.ExecContext(ctx, s.q.tenants.join, tenant, userID, ms(at)))
		added = n > 0
		return err
	})
	if err != nil {
		return false, wrap("adding a member", err)
	}
	return added, nil
}

// lockMember locks the user's row, then the tenant's, shared: ErrNotFound
// if either does not exist.
func (s *Store) lockMember(ctx context.Context, q querier, tenant, userID string) error {
	if err := s.lockUser(ctx, q, userID); err != nil {
		return err
	}
	return lockTenant(ctx, q, s.q.tenants.tenantForShare, tenant)
}

// RemoveMember implements store.TenantStore in one transaction.
func (s *Store) RemoveMember(ctx context.Context, tenant, userID string) ([]string, error) {
	var handles []string
	err := s.inTx(ctx, func(q querier) error {
		if err := s.lockMember(ctx, q, tenant, userID); err != nil {
			return err
		}
		n, err := affected(q.ExecContext(ctx, s.q.tenants.leave, tenant, userID))
		if err != nil {
			return err
		}
		if n == 0 {
			return store.ErrNotFound
		}
		if _, err := q.ExecContext(ctx, s.q.tenants.takeRoles, tenant, userID); err != nil {
			return err
		}
		if handles, err = queryHandles(ctx, q, s.q.tenants.memberHandlesForUpdate, userID, tenant); err != nil {
			return err
		}
		_, err = q.ExecContext(ctx, s.q.tenants.endMemberSessions, userID, tenant)
		return err
	})
	if err != nil {
		return nil, wrap("removing a member", err)
	}
	return handles, nil
}

// Membership implements store.TenantStore.
func (s *Store) Membership(ctx context.Context, tenant, userID string) (store.Member, error) {
	var joined int64
	err := s.db.QueryRowContext(ctx, s.q.tenants.membership, tenant, userID).Scan(&joined)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Member{}, store.ErrNotFound
	} else if err != nil {
		return store.Member{}, unavailable(fmt.Errorf("sqlstore: reading a membership: %w", err))
	}
	return store.Member{Tenant: tenant, UserID: userID, JoinedAt: fromMS(joined)}, nil
}

// Members implements store.TenantStore: a range scan of the index on
// (tenant, joined_at, user_id) from the member named by after. A member
// who has left since ends the paging: there is no place left to resume
// from.
func (s *Store) Members(ctx context.Context, tenant, after string, limit int) ([]store.Member, error) {
	n := store.UserQuery{Limit: limit}.PageSize()
	query, args := s.q.tenants.members, []any{tenant, n}
	if after != "" {
		m, err := s.Membership(ctx, tenant, after)
		if errors.Is(err, store.ErrNotFound) {
			return []store.Member{}, nil
		} else if err != nil {
			return nil, err
		}
		joined := ms(m.JoinedAt)
		query, args = s.q.tenants.membersAfter, []any{tenant, joined, joined, after, n}
	}
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, unavailable(fmt.Errorf("sqlstore: listing members: %w", err))
	}
	defer rows.Close()
	out := []store.Member{}
	for rows.Next() {
		m := store.Member{Tenant: tenant}
		var joined int64
		if err := rows.Scan(&m.UserID, &joined); err != nil {
			return nil, unavailable(fmt.Errorf("sqlstore: listing members: %w", err))
		}
		m.JoinedAt = fromMS(joined)
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, unavailable(fmt.Errorf("sqlstore: listing members: %w", err))
	}
	return out, nil
}

// UserTenants implements store.TenantStore.
func (s *Store) UserTenants(ctx context.Context, userID string) ([]string, error) {
	out, err := queryStrings(ctx, s.db, s.q.tenants.userTenants, userID)
	if err != nil {
		return nil, unavailable(fmt.Errorf("sqlstore: listing a user's tenants: %w", err))
	}
	return out, nil
}

// CreateInvitation implements store.TenantStore. The tenant's shared lock
// orders it with a deletion of the tenant.
func (s *Store) CreateInvitation(ctx context.Context, inv store.Invitation) error {
	return wrap("creating an invitation", s.inTx(ctx, func(q querier) error {
		if err := lockTenant(ctx, q, s.q.tenants.tenantForShare, inv.Tenant); err != nil {
			return err
		}
		n, err := affected(q.ExecContext(ctx, s.q.tenants.insertInvitation, inv.Hash[:], inv.Tenant, inv.Email, inv.Role,
			inv.InvitedBy, ms(inv.CreatedAt), ms(inv.ExpiresAt)))
		if err == nil && n == 0 {
			return store.ErrConflict
		}
		return err
	}))
}

// scanInvitation reads the invitationColumns of a row.
func scanInvitation(row scanner) (store.Invitation, error) {
	var inv store.Invitation
	var h []byte
	var created, expires int64
	if err := row.Scan(&h, &inv.Tenant, &inv.Email, &inv.Role, &inv.InvitedBy, &created, &expires); err != nil {
		return store.Invitation{}, err
	}
	if len(h) != len(inv.Hash) {
		return store.Invitation{}, fmt.Errorf("an invitation's hash of %d bytes", len(h))
	}
	copy(inv.Hash[:], h)
	inv.CreatedAt, inv.ExpiresAt = fromMS(created), fromMS(expires)
	return inv, nil
}

// Invitations implements store.TenantStore.
func (s *Store) Invitations(ctx context.Context, tenant string, now time.Time) ([]store.Invitation, error) {
	rows, err := s.db.QueryContext(ctx, s.q.tenants.invitations, tenant, ms(now))
	if err != nil {
		return nil, unavailable(fmt.Errorf("sqlstore: listing invitations: %w", err))
	}
	defer rows.Close()
	out := []store.Invitation{}
	for rows.Next() {
		inv, err := scanInvitation(rows)
		if err != nil {
			return nil, unavailable(fmt.Errorf("sqlstore: listing invitations: %w", err))
		}
		out = append(out, inv)
	}
	if err := rows.Err(); err != nil {
		return nil, unavailable(fmt.Errorf("sqlstore: listing invitations: %w", err))
	}
	return out, nil
}

// RevokeInvitations implements store.TenantStore.
func (s *Store) RevokeInvitations(ctx context.Context, tenant, email string) (int, error) {
	var n int64
	err := s.write(ctx, func(ctx context.Context, q querier) (err error) {
		n, err = affected(q.ExecContext(ctx, s.q.tenants.revokeInvitations, tenant, email))
		return err
	})
	if err != nil {
		return 0, unavailable(fmt.Errorf("sqlstore: revoking invitations: %w", err))
	}
	return int(n), nil
}

// AcceptInvitation implements store.TenantStore in one transaction, which
// locks the user first, then the tenant, shared, then the invitation.
// Deleting the invitations of its tenant and address is what uses it up:
// of racing calls, one deletes it and the others, which waited on its
// lock, find none.
func (s *Store) AcceptInvitation(ctx context.Context, hash store.TokenHash, userID string, now time.Time) (store.Invitation, error) {
	var out store.Invitation
	err := s.inTx(ctx, func(q querier) error {
		var tenant string
		err := q.QueryRowContext(ctx, s.q.tenants.invitationTenant, hash[:]).Scan(&tenant)
		if errors.Is(err, sql.ErrNoRows) {
			return store.ErrNotFound
		} else if err != nil {
			return err
		}
		if err := s.lockMember(ctx, q, tenant, userID); err != nil {
			return err
		}
		inv, err := scanInvitation(q.QueryRowContext(ctx, s.q.tenants.invitationForUpdate, hash[:]))
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return store.ErrNotFound // used up by a racing call
		case err != nil:
			return err
		case inv.Tenant != tenant || ms(inv.ExpiresAt) <= ms(now):
			return store.ErrNotFound
		}
		if _, err := q.ExecContext(ctx, s.q.tenants.join, tenant, userID, ms(now)); err != nil {
			return err
		}
		if _, err := q.ExecContext(ctx, s.q.tenants.revokeInvitations, tenant, inv.Email); err != nil {
			return err
		}
		out = inv
		return nil
	})
	if err != nil {
		return store.Invitation{}, wrap("accepting an invitation", err)
	}
	return out, nil
}
