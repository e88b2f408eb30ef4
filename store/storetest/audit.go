package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/latchkit/auth/store"
)

// auditTests run only for stores that implement store.AuditLog.
var auditTests = []test{
	{"RoundTrip", testAuditRoundTrip},
	{"NewestFirstByPage", testAuditPaging},
	{"Filters", testAuditFilters},
	{"PagingWhileAppending", testAuditConcurrentAppends},
	{"BadCursor", testAuditBadCursor},
	{"Prune", testAuditPrune},
}

func auditLog(t *testing.T, s store.Store) store.AuditLog {
	t.Helper()
	a, ok := s.(store.AuditLog)
	if !ok {
		t.Fatal("newStore returned a store that is not an AuditLog, unlike the first one")
	}
	return a
}

func mustAppend(t *testing.T, a store.AuditLog, entries ...store.AuditEntry) {
	t.Helper()
	if err := a.AppendAudit(t.Context(), entries); err != nil {
		t.Fatalf("AppendAudit: %v", err)
	}
}

// auditAll pages through the entries q matches and returns them.
func auditAll(t *testing.T, a store.AuditLog, q store.AuditQuery) []store.AuditEntry {
	t.Helper()
	var out []store.AuditEntry
	for pages := 1; ; pages++ {
		page, err := a.ListAudit(t.Context(), q)
		if err != nil {
			t.Fatalf("ListAudit(%+v): %v", q, err)
		}
		if len(page.Entries) > q.PageSize() {
			t.Fatalf("ListAudit: a page must hold at most Limit entries; got %d for %d", len(page.Entries), q.Limit)
		}
		out = append(out, page.Entries...)
		if page.Next == "" {
			return out
		}
		if len(page.Entries) == 0 || pages > 10000 {
			t.Fatalf("ListAudit: a page with a Next must hold entries; got %d after %d pages", len(page.Entries), pages)
		}
		q.After = page.Next
	}
}

func testAuditRoundTrip(t *testing.T, s store.Store) {
	a := auditLog(t, s)
	want := store.AuditEntry{Time: at(time.Minute), Kind: "sign_in", UserID: "u1", Actor: "op", SessionHandle: "s1",
		Method: "thirdparty", ThirdPartyID: "google", Reason: "revoked", Role: "admin", RemoteAddr: "192.0.2.1:5000", UserAgent: "Mozilla/5.0 ✓"}
	mustAppend(t, a, want, store.AuditEntry{Time: at(2 * time.Minute), Kind: "sign_in_failed"})
	page, err := a.ListAudit(t.Context(), store.AuditQuery{})
	if err != nil || len(page.Entries) != 2 || page.Next != "" {
		t.Fatalf("ListAudit: %+v, %v; want the 2 entries on one page", page, err)
	}
	got := page.Entries[1]
	if got.ID == 0 || got.ID == page.Entries[0].ID {
		t.Errorf("AppendAudit must give each entry an id of its own; got %d and %d", got.ID, page.Entries[0].ID)
	}
	want.ID = got.ID
	if !sameTime(got.Time, want.Time) {
		t.Errorf("the entry's Time: %v, want %v", got.Time, want.Time)
	}
	got.Time = want.Time
	if got != want {
		t.Errorf("the entry as read: %+v\nwant %+v", got, want)
	}
	if e := page.Entries[0]; e.Kind != "sign_in_failed" || e.UserID != "" || e.Actor != "" {
		t.Errorf("an entry with no user: %+v", e)
	}
}

func testAuditPaging(t *testing.T, s store.Store) {
	a := auditLog(t, s)
	for i := range 7 {
		mustAppend(t, a, store.AuditEntry{Time: at(time.Duration(i) * time.Second), Kind: fmt.Sprint("k", i), UserID: "u1"})
	}
	got := auditAll(t, a, store.AuditQuery{Limit: 3})
	if len(got) != 7 {
		t.Fatalf("paging by 3: %d entries, want 7", len(got))
	}
	for i, e := range got {
		if want := fmt.Sprint("k", 6-i); e.Kind != want {
			t.Errorf("entry %d: %s, want %s (newest first)", i, e.Kind, want)
		}
	}
}

func testAuditFilters(t *testing.T, s store.Store) {
	a := auditLog(t, s)
	mustAppend(t, a,
		store.AuditEntry{Time: at(0), Kind: "sign_in", UserID: "u1", Actor: "u1"},
		store.AuditEntry{Time: at(time.Second), Kind: "user_banned", UserID: "u1", Actor: "op"},
		store.AuditEntry{Time: at(2 * time.Second), Kind: "user_banned", UserID: "u2", Actor: "op"},
		store.AuditEntry{Time: at(3 * time.Second), Kind: "sign_in", UserID: "u2", Actor: "u2"})
	kinds := func(es []store.AuditEntry) (out []string) {
		for _, e := range es {
			out = append(out, e.UserID+"/"+e.Kind)
		}
		return out
	}
	if got := kinds(auditAll(t, a, store.AuditQuery{UserID: "u1", Limit: 1})); fmt.Sprint(got) != "[u1/user_banned u1/sign_in]" {
		t.Errorf("the entries of u1: %v", got)
	}
	if got := kinds(auditAll(t, a, store.AuditQuery{Actor: "op", Limit: 1})); fmt.Sprint(got) != "[u2/user_banned u1/user_banned]" {
		t.Errorf("the entries by op: %v", got)
	}
	if got := kinds(auditAll(t, a, store.AuditQuery{UserID: "u2", Actor: "op"})); fmt.Sprint(got) != "[u2/user_banned]" {
		t.Errorf("the entries of u2 by op: %v", got)
	}
}

// testAuditConcurrentAppends pages through the log while entries are
// appended: every entry there before the paging began is listed exactly
// once.
func testAuditConcurrentAppends(t *testing.T, s store.Store) {
	a := auditLog(t, s)
	const before = 60
	for i := range before {
		mustAppend(t, a, store.AuditEntry{Time: at(time.Duration(i) * time.Millisecond), Kind: "old", UserID: fmt.Sprint("u", i)})
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if err := a.AppendAudit(t.Context(), []store.AuditEntry{{Time: at(time.Hour), Kind: "new"}}); err != nil {
				t.Errorf("AppendAudit while paging: %v", err)
				return
			}
		}
	})
	got := auditAll(t, a, store.AuditQuery{Limit: 7})
	close(stop)
	wg.Wait()
	seen := map[int64]bool{}
	old := 0
	for _, e := range got {
		if seen[e.ID] {
			t.Errorf("entry %d listed twice", e.ID)
		}
		seen[e.ID] = true
		if e.Kind == "old" {
			old++
		}
	}
	if old != before {
		t.Errorf("the entries from before the paging: %d listed, want %d", old, before)
	}
}

func testAuditBadCursor(t *testing.T, s store.Store) {
	a := auditLog(t, s)
	for _, c := range []string{"x", "a", "a0", "a-1", "a01", "a1x", "u1"} {
		if _, err := a.ListAudit(t.Context(), store.AuditQuery{After: c}); !errors.Is(err, store.ErrBadCursor) {
			t.Errorf("ListAudit after %q: %v, want ErrBadCursor", c, err)
		}
	}
}

func testAuditPrune(t *testing.T, s store.Store) {
	a := auditLog(t, s)
	for i := range 5 {
		mustAppend(t, a, store.AuditEntry{Time: at(time.Duration(i) * time.Hour), Kind: fmt.Sprint("k", i)})
	}
	n, err := a.PruneAudit(t.Context(), at(2*time.Hour))
	if err != nil || n != 2 {
		t.Errorf("PruneAudit before hour 2: %d, %v; want 2 removed", n, err)
	}
	got := auditAll(t, a, store.AuditQuery{})
	if len(got) != 3 || got[2].Kind != "k2" {
		t.Errorf("after the prune: %+v, want k4, k3, k2", got)
	}
}
