package otelauth_test

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/latchkit/auth/otelauth"
	"github.com/latchkit/auth/store"
	"github.com/latchkit/auth/store/memstore"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

func newTelemetry(t *testing.T) (*otelauth.Telemetry, *tracetest.InMemoryExporter) {
	t.Helper()
	spans := tracetest.NewInMemoryExporter()
	tel, err := otelauth.New(otelauth.Config{TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))})
	if err != nil {
		t.Fatal(err)
	}
	return tel, spans
}

// failing is a store whose UserByID fails with err.
type failing struct {
	store.Store
	err error
}

func (f failing) UserByID(context.Context, string) (store.User, error) { return store.User{}, f.err }

// TestStoreOutcomes shows the outcome of a store call for each error a
// store may report, the span's status, and that no error's message is in
// the span: a database's error can quote a statement's values.
func TestStoreOutcomes(t *testing.T) {
	t.Parallel()
	const quoted = `ERROR: duplicate key value violates unique constraint (email)=(ada@example.com)`
	for _, tc := range []struct {
		err             error
		outcome, reason string
		status          codes.Code
	}{
		{nil, "ok", "", codes.Unset},
		{store.ErrNotFound, "not_found", "", codes.Unset},
		{fmt.Errorf("%s: %w", quoted, store.ErrConflict), "conflict", "", codes.Unset},
		{&store.EndedError{Reason: store.EndSignedOut}, "ended", "signed_out", codes.Unset},
		{&store.EndedError{}, "expired", "", codes.Unset},
		{store.ErrWrongCode, "wrong_code", "", codes.Unset},
		{fmt.Errorf("dial tcp db.internal:5432: %w", store.ErrUnavailable), "unavailable", "", codes.Error},
		{context.Canceled, "canceled", "", codes.Unset},
		{fmt.Errorf("query: %w", context.DeadlineExceeded), "deadline_exceeded", "", codes.Error},
		{errors.New(quoted), "error", "", codes.Error},
	} {
		tel, spans := newTelemetry(t)
		st := tel.Store(failing{memstore.New(), tc.err})
		if _, err := st.UserByID(t.Context(), "u1"); err != tc.err {
			t.Errorf("UserByID returned %v, want %v as the store returned it", err, tc.err)
		}
		got := spans.GetSpans()
		if len(got) != 1 {
			t.Fatalf("%v: %d spans, want 1", tc.err, len(got))
		}
		s := got[0]
		if s.Name != "auth.store UserByID" || attr(s.Attributes, "auth.outcome") != tc.outcome ||
			attr(s.Attributes, "auth.reason") != tc.reason || s.Status.Code != tc.status {
			t.Errorf("%v: span %q %v %v, want outcome %q, reason %q, status %v", tc.err, s.Name, s.Attributes, s.Status, tc.outcome, tc.reason, tc.status)
		}
		wantNoSecrets(t, got, []string{quoted, "db.internal"})
	}
}

// legacy implements store.LegacyTokenStore, which memstore does not.
type legacy struct{}

func (legacy) LegacyTokenSession(context.Context, store.TokenHash, time.Time) (string, error) {
	return "", store.ErrNotFound
}

// TestStoreInterfaces shows that the wrapper of a store implements each
// optional interface of package store that the store implements, and no
// other, and that a call through one is a span.
func TestStoreInterfaces(t *testing.T) {
	t.Parallel()
	m := memstore.New()
	var l legacy
	type S = store.Store
	type (
		L = store.LegacyTokenStore
		R = store.RateLimitStore
		O = store.RoleStore
	)
	for name, inner := range map[string]store.Store{
		"none": struct{ S }{m},
		"legacy": struct {
			S
			L
		}{m, l},
		"limits": struct {
			S
			R
		}{m, m},
		"roles": struct {
			S
			O
		}{m, m},
		"legacy+limits": struct {
			S
			L
			R
		}{m, l, m},
		"legacy+roles": struct {
			S
			L
			O
		}{m, l, m},
		"limits+roles": struct {
			S
			R
			O
		}{m, m, m},
		"all": struct {
			S
			L
			R
			O
		}{m, l, m, m},
	} {
		tel, spans := newTelemetry(t)
		st := tel.Store(inner)
		for _, has := range []struct {
			name string
			of   func(any) bool
		}{
			{"LegacyTokenStore", func(s any) bool { _, ok := s.(L); return ok }},
			{"RateLimitStore", func(s any) bool { _, ok := s.(R); return ok }},
			{"RoleStore", func(s any) bool { _, ok := s.(O); return ok }},
		} {
			if has.of(st) != has.of(inner) {
				t.Errorf("%s: the wrapper implements store.%s: %v, the store: %v", name, has.name, has.of(st), has.of(inner))
			}
		}
		if rs, ok := st.(O); ok {
			if _, err := rs.CreateRole(t.Context(), "admin", []string{"posts:write"}); err != nil {
				t.Fatal(err)
			}
			if got := spans.GetSpans(); len(got) != 1 || got[0].Name != "auth.store CreateRole" {
				t.Errorf("%s: spans %v, want auth.store CreateRole", name, got)
			}
		}
	}
}

// The wrapper lists users, in a span, where the wrapped store does, and
// says errors.ErrUnsupported where it does not.
func TestStoreUserLister(t *testing.T) {
	t.Parallel()
	m := memstore.New()
	first := store.Login{LoginKey: store.EmailPasswordKey("ada@example.com"), Email: "ada@example.com", PasswordHash: "x"}
	if err := m.CreateUser(t.Context(), store.User{ID: "u1", TimeJoined: time.Now()}, first); err != nil {
		t.Fatal(err)
	}
	tel, spans := newTelemetry(t)
	page, err := tel.Store(m).(store.UserLister).ListUsers(t.Context(), store.UserQuery{})
	if err != nil || len(page.Users) != 1 {
		t.Errorf("ListUsers through the wrapper: %+v, %v; want the one user", page, err)
	}
	if got := spans.GetSpans(); len(got) != 1 || got[0].Name != "auth.store ListUsers" {
		t.Errorf("spans %v, want auth.store ListUsers", got)
	}
	plain := tel.Store(struct{ store.Store }{m}).(store.UserLister)
	if _, err := plain.CountUsers(t.Context(), store.UserQuery{}); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("CountUsers through the wrapper of a store that lists no users: %v, want errors.ErrUnsupported", err)
	}
}

// The wrapper bans, in a span, where the wrapped store does, and says
// errors.ErrUnsupported where it does not.
func TestStoreBanner(t *testing.T) {
	t.Parallel()
	m := memstore.New()
	first := store.Login{LoginKey: store.EmailPasswordKey("ada@example.com"), Email: "ada@example.com", PasswordHash: "x"}
	if err := m.CreateUser(t.Context(), store.User{ID: "u1", TimeJoined: time.Now()}, first); err != nil {
		t.Fatal(err)
	}
	tel, spans := newTelemetry(t)
	if _, err := tel.Store(m).(store.Banner).BanUser(t.Context(), "u1", store.Ban{At: time.Now()}); err != nil {
		t.Errorf("BanUser through the wrapper: %v", err)
	}
	if u, _ := m.UserByID(t.Context(), "u1"); u.Ban.At.IsZero() {
		t.Error("BanUser through the wrapper must reach the wrapped store")
	}
	if got := spans.GetSpans(); len(got) != 1 || got[0].Name != "auth.store BanUser" {
		t.Errorf("spans %v, want auth.store BanUser", got)
	}
	plain := tel.Store(struct{ store.Store }{m}).(store.Banner)
	if _, err := plain.UnbanUser(t.Context(), "u1"); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("UnbanUser through the wrapper of a store that keeps no bans: %v, want errors.ErrUnsupported", err)
	}
}

// The wrapper keeps the audit log, in spans, where the wrapped store
// does, and says errors.ErrUnsupported where it does not.
func TestStoreAuditLog(t *testing.T) {
	t.Parallel()
	m := memstore.New()
	tel, spans := newTelemetry(t)
	a := tel.Store(m).(store.AuditLog)
	if err := a.AppendAudit(t.Context(), []store.AuditEntry{{Time: time.Now(), Kind: "sign_in"}}); err != nil {
		t.Errorf("AppendAudit through the wrapper: %v", err)
	}
	if page, err := m.ListAudit(t.Context(), store.AuditQuery{}); err != nil || len(page.Entries) != 1 {
		t.Errorf("the wrapped store's log: %+v, %v; want the entry", page, err)
	}
	if got := spans.GetSpans(); len(got) != 1 || got[0].Name != "auth.store AppendAudit" {
		t.Errorf("spans %v, want auth.store AppendAudit", got)
	}
	plain := tel.Store(struct{ store.Store }{m}).(store.AuditLog)
	if _, err := plain.PruneAudit(t.Context(), time.Now()); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("PruneAudit through the wrapper of a store that keeps no log: %v, want errors.ErrUnsupported", err)
	}
}

// The wrapper keeps tenants, in spans, where the wrapped store does, and
// says errors.ErrUnsupported where it does not.
func TestStoreTenantStore(t *testing.T) {
	t.Parallel()
	m := memstore.New()
	tel, spans := newTelemetry(t)
	ts := tel.Store(m).(store.TenantStore)
	if created, err := ts.PutTenant(t.Context(), store.Tenant{ID: "acme", UpdatedAt: time.Now()}); err != nil || !created {
		t.Errorf("PutTenant through the wrapper: %v, %v; want the tenant created", created, err)
	}
	if _, err := m.Tenant(t.Context(), "acme"); err != nil {
		t.Errorf("PutTenant through the wrapper must reach the wrapped store: %v", err)
	}
	if got := spans.GetSpans(); len(got) != 1 || got[0].Name != "auth.store PutTenant" {
		t.Errorf("spans %v, want auth.store PutTenant", got)
	}
	plain := tel.Store(struct{ store.Store }{m}).(store.TenantStore)
	if _, err := plain.Tenants(t.Context()); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("Tenants through the wrapper of a store that keeps no tenants: %v, want errors.ErrUnsupported", err)
	}
	if err := plain.CreateInvitation(t.Context(), store.Invitation{Tenant: "acme"}); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("CreateInvitation through the wrapper of a store that keeps no tenants: %v, want errors.ErrUnsupported", err)
	}
}

// TestStoreInterfacesKnown fails when package store declares an
// interface that Store does not know of: an optional interface the
// library looks for, which the wrapper must pass through (as
// TestStoreInterfaces shows for the others), or a part of store.Store.
func TestStoreInterfacesKnown(t *testing.T) {
	known := []string{
		"Store", "UserStore", "SessionStore", "TokenStore", "KeyStore", // store.Store
		"LegacyTokenStore", "RateLimitStore", "RoleStore", "UserLister", "Banner", "AuditLog", "TenantStore", // optional
	}
	files, err := filepath.Glob("../store/*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("package store's files: %v, %v", files, err)
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, spec := range gd.Specs {
				ts, ok := spec.(*ast.TypeSpec)
				if !ok {
					continue
				}
				if _, isInterface := ts.Type.(*ast.InterfaceType); isInterface && !slices.Contains(known, ts.Name.Name) {
					t.Errorf("store.%s is an interface otelauth.Store does not know: pass it through the wrapper", ts.Name.Name)
				}
			}
		}
	}
}
