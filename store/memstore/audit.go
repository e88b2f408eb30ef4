package memstore

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/latchkit/auth/store"
)

var _ store.AuditLog = (*Store)(nil)

// auditLog holds the entries oldest first, so that ids and times grow
// along the slice.
type auditLog struct {
	mu      sync.RWMutex
	entries []store.AuditEntry
	lastID  int64
}

// AppendAudit implements store.AuditLog.
func (s *Store) AppendAudit(_ context.Context, entries []store.AuditEntry) error {
	a := &s.audit
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, e := range entries {
		a.lastID++
		e.ID = a.lastID
		a.entries = append(a.entries, e)
	}
	return nil
}

// ListAudit implements store.AuditLog.
func (s *Store) ListAudit(_ context.Context, q store.AuditQuery) (store.AuditPage, error) {
	before := int64(-1)
	if q.After != "" {
		id, err := store.ParseAuditCursor(q.After)
		if err != nil {
			return store.AuditPage{}, err
		}
		before = id
	}
	a := &s.audit
	a.mu.RLock()
	defer a.mu.RUnlock()
	n := q.PageSize()
	var page store.AuditPage
	for i := len(a.entries) - 1; i >= 0; i-- {
		e := a.entries[i]
		if before >= 0 && e.ID >= before || q.UserID != "" && e.UserID != q.UserID || q.Actor != "" && e.Actor != q.Actor {
			continue
		}
		if len(page.Entries) == n {
			page.Next = store.AuditCursor(page.Entries[n-1].ID)
			break
		}
		page.Entries = append(page.Entries, e)
	}
	return page, nil
}

// PruneAudit implements store.AuditLog.
func (s *Store) PruneAudit(_ context.Context, t time.Time) (int64, error) {
	a := &s.audit
	a.mu.Lock()
	defer a.mu.Unlock()
	before := len(a.entries)
	a.entries = slices.DeleteFunc(a.entries, func(e store.AuditEntry) bool { return e.Time.Before(t) })
	return int64(before - len(a.entries)), nil
}
