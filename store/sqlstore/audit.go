package sqlstore

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/latchkit/auth/store"
)

var _ store.AuditLog = (*Store)(nil)

const auditColumns = "id, at, kind, user_id, actor, session_handle, method, third_party, reason, role, remote_addr, user_agent"

// auditInsertRow is the placeholders of one entry in an insert.
const auditInsertRow = "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"

// The longest a field of an entry is kept, in bytes: what MariaDB's
// columns hold. The library's own fields are far shorter; an
// application's operator id may not be.
const (
	maxAuditField     = 255
	maxAuditUserAgent = 512
)

// AppendAudit implements store.AuditLog in one statement.
func (s *Store) AppendAudit(ctx context.Context, entries []store.AuditEntry) error {
	if len(entries) == 0 {
		return nil
	}
	var b strings.Builder
	b.WriteString("INSERT INTO auth_audit (at, kind, user_id, actor, session_handle, method, third_party, reason, role, remote_addr, user_agent) VALUES ")
	args := make([]any, 0, 11*len(entries))
	for i, e := range entries {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(auditInsertRow)
		args = append(args, ms(e.Time), clip(e.Kind, maxAuditField), clip(e.UserID, maxAuditField), clip(e.Actor, maxAuditField),
			clip(e.SessionHandle, maxAuditField), clip(e.Method, maxAuditField), clip(e.ThirdPartyID, maxAuditField),
			clip(e.Reason, maxAuditField), clip(e.Role, maxAuditField), clip(e.RemoteAddr, maxAuditField), clip(e.UserAgent, maxAuditUserAgent))
	}
	if _, err := s.db.ExecContext(ctx, s.bind(b.String()), args...); err != nil {
		return unavailable(fmt.Errorf("sqlstore: appending to the audit log: %w", err))
	}
	return nil
}

// ListAudit implements store.AuditLog.
func (s *Store) ListAudit(ctx context.Context, q store.AuditQuery) (store.AuditPage, error) {
	var conds []string
	var args []any
	if q.After != "" {
		id, err := store.ParseAuditCursor(q.After)
		if err != nil {
			return store.AuditPage{}, err
		}
		conds, args = append(conds, "id < ?"), append(args, id)
	}
	if q.UserID != "" {
		conds, args = append(conds, "user_id = ?"), append(args, q.UserID)
	}
	if q.Actor != "" {
		conds, args = append(conds, "actor = ?"), append(args, q.Actor)
	}
	n := q.PageSize()
	args = append(args, n+1)
	where := ""
	if len(conds) > 0 {
		where = " WHERE " + strings.Join(conds, " AND ")
	}
	query := "SELECT " + auditColumns + " FROM auth_audit" + where + " ORDER BY id DESC LIMIT ?"
	rows, err := s.db.QueryContext(ctx, s.bind(query), args...)
	if err != nil {
		return store.AuditPage{}, unavailable(fmt.Errorf("sqlstore: reading the audit log: %w", err))
	}
	defer rows.Close()
	var page store.AuditPage
	for rows.Next() {
		var e store.AuditEntry
		var at int64
		if err := rows.Scan(&e.ID, &at, &e.Kind, &e.UserID, &e.Actor, &e.SessionHandle, &e.Method, &e.ThirdPartyID,
			&e.Reason, &e.Role, &e.RemoteAddr, &e.UserAgent); err != nil {
			return store.AuditPage{}, unavailable(fmt.Errorf("sqlstore: reading the audit log: %w", err))
		}
		e.Time = fromMS(at)
		page.Entries = append(page.Entries, e)
	}
	if err := rows.Err(); err != nil {
		return store.AuditPage{}, unavailable(fmt.Errorf("sqlstore: reading the audit log: %w", err))
	}
	if len(page.Entries) > n {
		page.Entries = page.Entries[:n]
		page.Next = store.AuditCursor(page.Entries[n-1].ID)
	}
	return page, nil
}

// PruneAudit implements store.AuditLog.
func (s *Store) PruneAudit(ctx context.Context, t time.Time) (int64, error) {
	n, err := affected(s.db.ExecContext(ctx, s.bind("DELETE FROM auth_audit WHERE at < ?"), ms(t)))
	if err != nil {
		return 0, unavailable(fmt.Errorf("sqlstore: pruning the audit log: %w", err))
	}
	return n, nil
}

// bind is query with PostgreSQL's placeholders where the dialect needs
// them.
func (s *Store) bind(query string) string {
	if s.dialect == Postgres {
		return rebindQuery(query)
	}
	return query
}

// clip cuts s to at most n bytes, at a character boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
