package auth_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/roles"
	"github.com/latchkit/auth/store"
	"github.com/latchkit/auth/store/memstore"
)

// auditKinds pages through the log q asks for and returns its kinds,
// newest first, with the entries.
func auditKinds(t *testing.T, a *auth.Auth, q store.AuditQuery) ([]string, []store.AuditEntry) {
	t.Helper()
	var kinds []string
	var entries []store.AuditEntry
	for {
		page, err := a.AuditLog(t.Context(), q)
		if err != nil {
			t.Fatalf("AuditLog(%+v): %v", q, err)
		}
		for _, e := range page.Entries {
			kinds = append(kinds, e.Kind)
		}
		entries = append(entries, page.Entries...)
		if page.Next == "" {
			return kinds, entries
		}
		q.After = page.Next
	}
}

// The audit log holds a user's security events, newest first, by user
// and by actor: their sign-up (which signs in), a failed and a good
// sign-in with the
// client's address and User-Agent, and an operator's ban with the
// sessions it ended, which name the operator. A refresh is routine and
// not there.
func TestAuditLog(t *testing.T) {
	mfModes(t, func(t *testing.T, m authtest.Mode) {
		s := authtest.NewServer(t, auth.Config{Audit: auth.AuditConfig{Enabled: true}})
		email := s.NewEmail()
		c := s.NewClient(m)
		c.Header.Set("User-Agent", "audit-test/1.0")
		uid := wantOK(t, "sign-up", c.SignUp(email, authtest.Password))
		wrong := s.NewClient(m).SignIn(email, "not the password 1")
		if wrong.Status != "WRONG_CREDENTIALS_ERROR" {
			t.Fatalf("a wrong password: %d %s", wrong.StatusCode, wrong.Body)
		}
		wantOK(t, "sign-in", c.SignIn(email, authtest.Password))
		if res := c.Refresh(); res.StatusCode != 200 {
			t.Fatalf("refresh: %d %s", res.StatusCode, res.Body)
		}
		if err := s.Auth.BanUser(t.Context(), uid, auth.Ban{Reason: "spam", By: "op-1"}); err != nil {
			t.Fatal(err)
		}

		kinds, entries := auditKinds(t, s.Auth, store.AuditQuery{UserID: uid, Limit: 2})
		want := []string{"user_banned", "session_revoked", "session_revoked", "sign_in", "sign_in_failed", "sign_in", "sign_up"}
		if !slices.Equal(kinds, want) {
			t.Errorf("the user's entries: %v, want %v", kinds, want)
		}
		signIn := entries[3]
		if signIn.Actor != uid || signIn.SessionHandle == "" || signIn.RemoteAddr == "" || signIn.UserAgent != "audit-test/1.0" ||
			signIn.Method != store.MethodEmailPassword || !signIn.Time.Equal(s.Clock.Now()) {
			t.Errorf("the sign-in's entry: %+v", signIn)
		}
		byOp, opEntries := auditKinds(t, s.Auth, store.AuditQuery{Actor: "op-1"})
		if !slices.Equal(byOp, want[:3]) || opEntries[0].UserID != uid {
			t.Errorf("the entries by the operator: %v, want %v about %s", byOp, want[:3], uid)
		}
	})
}

// Entries older than AuditConfig.Keep are removed when an instance
// starts (and hourly after).
func TestAuditLogKeep(t *testing.T) {
	st := memstore.New()
	clock := authtest.NewClock(authtest.Start)
	cfg := auth.Config{Store: st, Now: clock.Now, Audit: auth.AuditConfig{Enabled: true, Keep: time.Hour}}
	s := authtest.NewServer(t, cfg)
	_, u := s.SignedIn(authtest.Header)
	if kinds, _ := auditKinds(t, s.Auth, store.AuditQuery{UserID: u.ID}); len(kinds) != 2 {
		t.Fatalf("entries after sign-up and sign-in: %v", kinds)
	}
	clock.Advance(2 * time.Hour)
	later := authtest.NewServer(t, cfg)
	wantOK(t, "a sign-in later", later.NewClient(authtest.Header).SignIn(u.Email, authtest.Password))
	kinds, _ := auditKinds(t, later.Auth, store.AuditQuery{UserID: u.ID})
	if !slices.Equal(kinds, []string{"sign_in"}) {
		t.Errorf("entries after two hours, with Keep an hour: %v, want the new sign-in only", kinds)
	}
}

// Config.Audit needs a Store that keeps an audit log, and AuditLog says
// so when it is off.
func TestAuditLogConfig(t *testing.T) {
	_, err := auth.New(auth.Config{Store: struct{ store.Store }{memstore.New()}, Audit: auth.AuditConfig{Enabled: true}})
	if err == nil {
		t.Error("New with Config.Audit and a Store that keeps no log: no error")
	}
	s := authtest.NewServer(t, auth.Config{})
	if _, err := s.Auth.AuditLog(t.Context(), store.AuditQuery{}); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("AuditLog with the log off: %v, want errors.ErrUnsupported", err)
	}
}

// Changes of roles are in the audit log, with the role, and name the
// operator of a context from WithOperator; a role given twice is given
// once.
func TestAuditLogRoles(t *testing.T) {
	rr := roles.New(roles.Config{})
	s := authtest.NewServer(t, auth.Config{Roles: rr, Audit: auth.AuditConfig{Enabled: true}})
	_, u := s.SignedIn(authtest.Header)
	ctx := auth.WithOperator(t.Context(), "op-9")
	if _, err := rr.CreateRole(ctx, "editor", "posts:write"); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := rr.Give(ctx, u.ID, "editor"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := rr.Take(t.Context(), u.ID, "editor"); err != nil {
		t.Fatal(err)
	}
	kinds, entries := auditKinds(t, s.Auth, store.AuditQuery{Actor: "op-9"})
	if !slices.Equal(kinds, []string{"role_given", "role_created"}) || entries[0].Role != "editor" || entries[0].UserID != u.ID {
		t.Errorf("the entries by op-9: %v %+v", kinds, entries)
	}
	kinds, entries = auditKinds(t, s.Auth, store.AuditQuery{UserID: u.ID, Limit: 1})
	if kinds[0] != "role_taken" || entries[0].Actor != "" || entries[0].Role != "editor" {
		t.Errorf("the user's newest entry: %v %+v; want role_taken by no one named", kinds, entries[0])
	}
}

// blockingAudit is a store whose audit log takes no entry until released,
// as a database in an outage.
type blockingAudit struct {
	*memstore.Store
	release chan struct{}
}

func (s blockingAudit) AppendAudit(ctx context.Context, entries []store.AuditEntry) error {
	select {
	case <-s.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	return s.Store.AppendAudit(ctx, entries)
}

// A store that takes no audit entry holds a request up a second at most:
// past the queue, the entry is dropped and logged; once the store takes
// entries again, the log goes on.
func TestAuditLogStoreBehind(t *testing.T) {
	st := blockingAudit{memstore.New(), make(chan struct{})}
	logs := &logCapture{}
	s := authtest.NewServer(t, auth.Config{Store: st, Logger: logs.logger(), Audit: auth.AuditConfig{Enabled: true}})
	_, u := s.SignedIn(authtest.Header) // two entries
	ctx := t.Context()
	// The writer holds one batch; the queue takes 1,024 more entries.
	calls, slow := 0, time.Duration(0)
	for calls < 1100 && slow == 0 {
		start := time.Now()
		if err := s.Auth.SetEmailVerified(ctx, u.ID, true); err != nil {
			t.Fatal(err)
		}
		calls++
		if d := time.Since(start); d > 500*time.Millisecond {
			slow = d
		}
	}
	if slow == 0 || slow > 3*time.Second {
		t.Fatalf("after %d events, the slowest waited %v: want one to wait about a second, then go on", calls, slow)
	}
	if dropped := logs.records(t, "auth: audit entry dropped: the store is behind"); len(dropped) != 1 {
		t.Errorf("dropped entries logged: %d, want 1", len(dropped))
	}
	close(st.release)
	kinds, _ := auditKinds(t, s.Auth, store.AuditQuery{UserID: u.ID, Limit: store.MaxUserPage})
	if want := 2 + calls - 1; len(kinds) != want {
		t.Errorf("entries once the store takes them again: %d, want every event but the one dropped (%d)", len(kinds), want)
	}
}
