package sqlstore_test

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/latchkit/auth/internal/sqltest"
	"github.com/latchkit/auth/store"
	"github.com/latchkit/auth/store/sqlstore"
)

// After DeleteUser no row of any auth_ table mentions the user, its
// logins, its sessions or its tokens; another user's rows are all there.
// It reads the tables themselves, as an operator would, not the Store.
func TestDeleteUserLeavesNoRows(t *testing.T) {
	for _, b := range sqltest.Backends {
		t.Run(b.Name, func(t *testing.T) {
			ctx := t.Context()
			db := b.Open(t)
			st, err := sqlstore.New(db, b.Dialect)
			if err != nil {
				t.Fatal(err)
			}
			if err := st.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
			for _, id := range []string{"doomed", "keeper"} {
				fill(t, st, id, now)
				// And refresh tokens as the release before migration 8
				// kept them, of a live session and of the ended one.
				for _, handle := range []string{id + "-s0", id + "-ended"} {
					legacy := sha256.Sum256([]byte(handle + "/legacy"))
					oldRows{db: db, dialect: b.Dialect}.exec(t, `INSERT INTO auth_refresh_tokens (hash, session_handle, expires_at)
						VALUES (?, ?, ?)`, legacy[:], handle, now.Add(time.Hour).UnixMilli())
				}
			}
			before := countMentions(t, db, b.Dialect, "keeper")
			if before == 0 {
				t.Fatal("the other user has no rows to keep")
			}
			handles, err := st.DeleteUser(ctx, "doomed")
			if err != nil || len(handles) != 2 {
				t.Fatalf("DeleteUser = %v, %v; want the 2 session handles", handles, err)
			}
			if n := countMentions(t, db, b.Dialect, "doomed"); n != 0 {
				t.Errorf("%d rows mention the deleted user after DeleteUser, want 0", n)
			}
			if after := countMentions(t, db, b.Dialect, "keeper"); after != before {
				t.Errorf("the other user's rows: %d after, %d before", after, before)
			}
		})
	}
}

// fill gives a user two logins (one linked, owning its email), two
// sessions with a rotated refresh token each and one ended session, a reset token and a
// verification token. Every id, handle and email it writes contains id.
func fill(t *testing.T, st store.Store, id string, now time.Time) {
	t.Helper()
	ctx := t.Context()
	email := id + "@example.com"
	first := store.Login{LoginKey: store.EmailPasswordKey(email), Email: email, PasswordHash: "$argon2id$v=19$m=64,t=1,p=1$" + id + "$aGFzaA",
		EmailVerified: true, EmailProven: true, CreatedAt: now, OwnsEmail: true}
	if err := st.CreateUser(ctx, store.User{ID: id, TimeJoined: now}, first); err != nil {
		t.Fatal(err)
	}
	if err := st.LinkLogin(ctx, store.Login{
		LoginKey: store.LoginKey{Method: store.MethodThirdParty, ThirdParty: "google", Subject: id + "-google"},
		ID:       id + "-google", UserID: id, Email: email, EmailVerified: true, EmailProven: true, CreatedAt: now,
	}); err != nil {
		t.Fatal(err)
	}
	for i, login := range []string{id, id + "-google"} {
		handle := fmt.Sprintf("%s-s%d", id, i)
		r0 := sha256.Sum256([]byte(handle + "/r0"))
		if err := st.CreateSession(ctx, store.Session{Handle: handle, UserID: id, LoginID: login, CreatedAt: now, RefreshedAt: now,
			ExpiresAt: now.Add(time.Hour)}, r0, 0); err != nil {
			t.Fatal(err)
		}
		if _, err := st.RotateRefreshToken(ctx, store.Rotation{Handle: handle, Presented: r0, Next: sha256.Sum256([]byte(handle + "/r1")),
			NextKey: id + "-key", Now: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
	// And a session that has ended, whose row stays until it expires.
	ended := id + "-ended"
	if err := st.CreateSession(ctx, store.Session{Handle: ended, UserID: id, LoginID: id, CreatedAt: now, RefreshedAt: now,
		ExpiresAt: now.Add(time.Hour)}, sha256.Sum256([]byte(ended+"/r0")), 0); err != nil {
		t.Fatal(err)
	}
	if err := st.RevokeSession(ctx, ended, store.EndSignedOut); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateCode(ctx, store.Code{Hash: sha256.Sum256([]byte(id + "/reset")), Kind: store.CodeReset, UserID: id, CreatedAt: now,
		ExpiresAt: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateCode(ctx, store.Code{Hash: sha256.Sum256([]byte(id + "/verify")), Kind: store.CodeVerification, LoginID: id,
		Email: email, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
}

// countMentions counts the rows of every auth_ table (but the schema's
// own) that hold id in a text column, or the hash of one of the user's
// tokens.
func countMentions(t *testing.T, db *sql.DB, d sqlstore.Dialect, id string) int {
	t.Helper()
	ctx := context.Background()
	var hashes [][]byte
	for _, name := range []string{"-s0/r0", "-s0/r1", "-s1/r0", "-s1/r1", "/reset", "/verify"} {
		h := sha256.Sum256([]byte(id + name))
		hashes = append(hashes, h[:])
	}
	total := 0
	for _, table := range tables(t, db, d) {
		rows, err := db.QueryContext(ctx, "SELECT * FROM "+table)
		if err != nil {
			t.Fatalf("reading %s: %v", table, err)
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			if mentions(vals, id, hashes) {
				total++
			}
		}
		rows.Close()
	}
	return total
}

func mentions(vals []any, id string, hashes [][]byte) bool {
	for _, v := range vals {
		var b []byte
		switch v := v.(type) {
		case string:
			b = []byte(v)
		case []byte:
			b = v
		default:
			continue
		}
		if strings.Contains(string(b), id) {
			return true
		}
		for _, h := range hashes {
			if string(b) == string(h) {
				return true
			}
		}
	}
	return false
}

// tables lists the store's tables.
func tables(t *testing.T, db *sql.DB, d sqlstore.Dialect) []string {
	t.Helper()
	var query string
	switch d {
	case sqlstore.Postgres:
		query = `SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_name LIKE 'auth\_%'`
	case sqlstore.MySQL:
		query = `SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name LIKE 'auth\_%'`
	default:
		query = `SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'auth\_%' ESCAPE '\'`
	}
	rows, err := db.QueryContext(context.Background(), query)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		if name != "auth_schema_migrations" {
			out = append(out, name)
		}
	}
	if len(out) < 7 {
		t.Fatalf("found tables %v; want every auth_ table", out)
	}
	return out
}
