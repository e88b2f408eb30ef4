package sqlstore_test

import (
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/internal/password"
	"github.com/latchkit/auth/internal/sqltest"
	"github.com/latchkit/auth/store"
	"github.com/latchkit/auth/store/sqlstore"
)

// A database made before users had login records (schema version 3, with
// the rows the store wrote then: the email and password hash on the user),
// once migrated, keeps every user, password and live session: each user
// signs in with their password and each session refreshes with its
// refresh token, over HTTP through the library. Migrating again changes
// nothing.
func TestUpgradeToLogins(t *testing.T) {
	const users, sessionsPerUser = 5, 2
	backends := append(slices.Clone(sqltest.Backends), sqltest.Backend{
		// An application may open SQLite with foreign keys enforced.
		Name: "sqlite-foreign-keys", Dialect: sqlstore.SQLite,
		Open: func(tb testing.TB) *sql.DB {
			db, err := sql.Open("sqlite", sqltest.SQLiteFileDSN(tb)+"&_pragma=foreign_keys(1)")
			if err != nil {
				tb.Fatal(err)
			}
			tb.Cleanup(func() { db.Close() })
			return db
		},
	})
	for _, b := range backends {
		t.Run(b.Name, func(t *testing.T) {
			ctx := t.Context()
			db := b.Open(t)
			st, err := sqlstore.New(db, b.Dialect)
			if err != nil {
				t.Fatal(err)
			}
			if err := st.MigrateTo(ctx, 3); err != nil {
				t.Fatalf("the schema before login records: %v", err)
			}
			old := oldRows{db: db, dialect: b.Dialect}
			type session struct{ handle, userID, refresh string }
			var sessions []session
			for i := range users {
				id, email := fmt.Sprintf("user-%d", i), fmt.Sprintf("User%d@example.com", i)
				// authtest's hashing parameters, so the hash needs no upgrade.
				old.user(t, id, strings.ToLower(email), password.Hash(passwordOf(i), password.Params{Memory: 64, Time: 1, Threads: 1}))
				for j := range sessionsPerUser {
					s := session{handle: fmt.Sprintf("%s-s%d", id, j), userID: id, refresh: newRefreshToken()}
					old.session(t, s.handle, id, s.refresh)
					sessions = append(sessions, s)
				}
			}

			if err := st.Migrate(ctx); err != nil {
				t.Fatalf("migrating: %v", err)
			}
			if err := st.Migrate(ctx); err != nil {
				t.Fatalf("migrating a second time: %v", err)
			}
			if b.Name == "sqlite-foreign-keys" {
				var on bool
				if err := db.QueryRowContext(ctx, "PRAGMA foreign_keys").Scan(&on); err != nil || !on {
					t.Errorf("foreign keys after the migration: %v, %v; want them still enforced", on, err)
				}
			}
			srv := authtest.NewServer(t, auth.Config{Store: st})

			for i := range users {
				email := fmt.Sprintf("user%d@example.com", i)
				c := srv.NewClient(authtest.Header)
				if res := c.SignIn(email, passwordOf(i)); res.Status != "OK" {
					t.Errorf("user %d signs in with the password set before the migration: %d %s", i, res.StatusCode, res.Body)
				}
				if res := c.SignIn(email, "wrong password 1"); res.Status != "WRONG_CREDENTIALS_ERROR" {
					t.Errorf("user %d, a wrong password: %d %s", i, res.StatusCode, res.Body)
				}
				u, err := srv.Auth.UserByEmail(ctx, email)
				if err != nil || u.ID != fmt.Sprintf("user-%d", i) || !u.TimeJoined.Equal(joined) {
					t.Errorf("UserByEmail(%s) = %+v, %v; want the same id and join time as before", email, u, err)
				}
				if res := c.SignUp(email, "another horse 1"); res.Status != "FIELD_ERROR" {
					t.Errorf("sign-up with the email of user %d: %d %s, want it taken", i, res.StatusCode, res.Body)
				}
			}
			for _, s := range sessions {
				c := srv.NewClient(authtest.Header)
				c.SetTokens("", s.refresh)
				res := c.Refresh()
				if res.StatusCode != http.StatusOK || !res.IssuedTokens() {
					t.Errorf("session %s refreshes with its refresh token from before the migration: %d %s", s.handle, res.StatusCode, res.Body)
					continue
				}
				if res := c.Get("/api/session"); !strings.Contains(string(res.Body), s.handle) || !strings.Contains(string(res.Body), s.userID) {
					t.Errorf("session %s after its refresh: %d %s", s.handle, res.StatusCode, res.Body)
				}
				// Migration 7: a session's login is its user's only one,
				// whose id is the user's.
				if got, err := st.Session(ctx, s.handle, authtest.Start); err != nil || got.LoginID != s.userID {
					t.Errorf("session %s after migration 7: LoginID %q, %v; want %q", s.handle, got.LoginID, err, s.userID)
				}
			}
			for i := range users {
				id := fmt.Sprintf("user-%d", i)
				logins, err := st.Logins(ctx, id)
				if err != nil || len(logins) != 1 || logins[0].ID != id || logins[0].OwnsEmail {
					t.Errorf("%s's login after migration 7: %+v, %v; want id %s, owning nothing", id, logins, err, id)
				}
			}
			// The migrated logins can be verified, own their email and be
			// deleted with their user.
			if _, err := st.SetEmailVerified(ctx, "user-1", true); err != nil {
				t.Errorf("SetEmailVerified on a migrated login: %v", err)
			}
			if l, err := st.ClaimEmail(ctx, "user-1"); err != nil || !l.OwnsEmail {
				t.Errorf("ClaimEmail on a migrated login: %+v, %v", l, err)
			}
			if _, err := st.DeleteUser(ctx, "user-2"); err != nil {
				t.Errorf("DeleteUser of a migrated user: %v", err)
			}
			// A new user joins the migrated database as usual.
			if res := srv.NewClient(authtest.Header).SignUp("newcomer@example.com", authtest.Password); res.Status != "OK" {
				t.Errorf("sign-up after the migration: %d %s", res.StatusCode, res.Body)
			}
			if logins, err := st.Logins(ctx, "user-0"); err != nil || len(logins) != 1 || logins[0].Method != store.MethodEmailPassword {
				t.Errorf("user-0's logins after the migration: %+v, %v; want its one email and password login", logins, err)
			}
		})
	}
}

func passwordOf(i int) string { return fmt.Sprintf("old horse %d", i) }

// joined is when the users of the old database signed up.
var joined = authtest.Start.Add(-24 * time.Hour)

// oldRows writes rows the way the store wrote them before login records,
// in the schema of migration 3.
type oldRows struct {
	db      *sql.DB
	dialect sqlstore.Dialect
}

func (o oldRows) exec(t *testing.T, query string, args ...any) {
	t.Helper()
	if o.dialect == sqlstore.Postgres {
		n := 0
		var b strings.Builder
		for _, r := range query {
			if r == '?' {
				n++
				fmt.Fprintf(&b, "$%d", n)
				continue
			}
			b.WriteRune(r)
		}
		query = b.String()
	}
	if _, err := o.db.ExecContext(t.Context(), query, args...); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

func (o oldRows) user(t *testing.T, id, email, hash string) {
	o.exec(t, `INSERT INTO auth_users (id, email, password_hash, time_joined) VALUES (?, ?, ?, ?)`,
		id, email, hash, joined.UnixMilli())
}

func (o oldRows) session(t *testing.T, handle, userID, refresh string) {
	hash := sha256.Sum256([]byte(refresh))
	created, expires := authtest.Start.Add(-time.Hour).UnixMilli(), authtest.Start.Add(100*24*time.Hour).UnixMilli()
	o.exec(t, `INSERT INTO auth_sessions (handle, user_id, created_at, refreshed_at, expires_at, current_hash)
		VALUES (?, ?, ?, ?, ?, ?)`, handle, userID, created, created, expires, hash[:])
	o.exec(t, `INSERT INTO auth_refresh_tokens (hash, session_handle, expires_at) VALUES (?, ?, ?)`,
		hash[:], handle, expires)
}

// newRefreshToken is a refresh token as the library makes them: 256 random
// bits in URL-safe base64.
func newRefreshToken() string {
	b := make([]byte, 32)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
