package sqlstore_test

import (
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
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
	backends := append(slices.Clone(sqltest.Backends), sqliteForeignKeys)
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
				for range sessionsPerUser {
					s := session{handle: uuid.NewString(), userID: id, refresh: newRefreshToken()}
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

// sqliteForeignKeys is SQLite opened with foreign keys enforced, as an
// application may open it.
var sqliteForeignKeys = sqltest.Backend{
	Name: "sqlite-foreign-keys", Dialect: sqlstore.SQLite,
	Open: func(tb testing.TB) *sql.DB {
		db, err := sql.Open("sqlite", sqltest.SQLiteFileDSN(tb)+"&_pragma=foreign_keys(1)")
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { db.Close() })
		return db
	},
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

// A database made by the release before refresh tokens named their
// session (schema version 7, a row in auth_refresh_tokens for every token
// ever issued) keeps every session working once migrated: the current
// token refreshes into the new format, a superseded one is still theft,
// the token just superseded is forgiven inside the reuse window with the
// same successor, and the old rows go once they expire.
func TestUpgradeToStatelessRefresh(t *testing.T) {
	const window = 10 * time.Second
	for _, b := range sqltest.Backends {
		t.Run(b.Name, func(t *testing.T) {
			ctx := t.Context()
			st, old := beforeStatelessRefresh(t, b)
			db := old.db
			// Each session has refreshed twice: r0 and r1 are superseded,
			// r1 a second ago, and r2 is current.
			type lineage struct {
				handle string
				r      [3]string
			}
			lineages := make([]lineage, 5)
			for i := range lineages {
				l := &lineages[i]
				l.handle = uuid.NewString()
				for j := range l.r {
					l.r[j] = newRefreshToken()
				}
				old.lineage(t, l.handle, "u1", l.r[:])
			}
			if err := st.Migrate(ctx); err != nil {
				t.Fatalf("migrating: %v", err)
			}
			srv := authtest.NewServer(t, auth.Config{Store: st, RefreshReuseWindow: window})
			refresh := func(tok string) *authtest.Response {
				c := srv.NewClient(authtest.Header)
				c.SetTokens("", tok)
				return c.Refresh()
			}
			want := func(what string, res *authtest.Response, msg string, reason auth.Reason) {
				t.Helper()
				if res.StatusCode != http.StatusUnauthorized || res.Message != msg || res.Header.Get(auth.ReasonHeader) != string(reason) {
					t.Errorf("%s: %d %s %s, want 401 %q %s", what, res.StatusCode, res.Header.Get(auth.ReasonHeader), res.Body, msg, reason)
				}
			}

			// The current token moves the session to the new format, and
			// the new token goes on.
			l := lineages[0]
			res := refresh(l.r[2])
			next := res.Header.Get("St-Refresh-Token")
			if res.StatusCode != http.StatusOK || next == "" || len(next) == len(l.r[2]) {
				t.Fatalf("the current token of a session from before: %d %s", res.StatusCode, res.Body)
			}
			if got, err := st.Session(ctx, l.handle, authtest.Start); err != nil || got.Generation != 1 {
				t.Errorf("after its first refresh: %+v, %v; want generation 1", got, err)
			}
			// Retried inside the window: the same successor.
			if again := refresh(l.r[2]).Header.Get("St-Refresh-Token"); again != next {
				t.Errorf("the old current token again inside the window: another token than its successor")
			}
			if res := refresh(next); res.StatusCode != http.StatusOK {
				t.Fatalf("the new format's token: %d %s", res.StatusCode, res.Body)
			}
			// Now the old current token is two exchanges behind.
			want("the old current token after two exchanges", refresh(l.r[2]), "token theft detected", auth.ReasonTheftStale)

			// A token superseded before the migration is still theft.
			want("a token superseded before the migration", refresh(lineages[1].r[0]), "token theft detected", auth.ReasonTheftStale)
			want("that session's current token", refresh(lineages[1].r[2]), "unauthorised", auth.ReasonTokenTheft)
			// The token superseded just before the migration, back inside
			// the window: its successor is of the old format, which nobody
			// can make again, so the retry is refused and harms nothing.
			want("the previous token inside the window, before any new refresh", refresh(lineages[3].r[1]),
				"unauthorised", auth.ReasonUnknownToken)
			// The previous one, once the window has passed, is theft.
			srv.Clock.Advance(window)
			want("the token superseded just before the migration", refresh(lineages[2].r[1]), "token theft detected", auth.ReasonTheftAfterWindow)
			// Unknown tokens of the old format harm nothing.
			want("an unknown token of the old format", refresh(newRefreshToken()), "unauthorised", auth.ReasonUnknownToken)
			for _, l := range lineages[3:] {
				if res := refresh(l.r[2]); res.StatusCode != http.StatusOK {
					t.Errorf("another session's current token: %d %s", res.StatusCode, res.Body)
				}
			}

			// The rows of old tokens go with their expiry.
			count := func() int {
				var n int
				if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM auth_refresh_tokens").Scan(&n); err != nil {
					t.Fatal(err)
				}
				return n
			}
			if n := count(); n != 3*len(lineages) {
				t.Errorf("%d rows of old tokens before they expire, want %d", n, 3*len(lineages))
			}
			if err := st.DeleteExpired(ctx, authtest.Start.Add(101*24*time.Hour)); err != nil {
				t.Fatal(err)
			}
			if n := count(); n != 0 {
				t.Errorf("%d rows of old tokens after they expired, want 0", n)
			}
		})
	}
}

// beforeStatelessRefresh opens a database of b in the schema of the
// release before stateless refresh (version 7), with a user u1 as that
// release wrote it.
func beforeStatelessRefresh(t *testing.T, b sqltest.Backend) (*sqlstore.Store, oldRows) {
	t.Helper()
	db := b.Open(t)
	st, err := sqlstore.New(db, b.Dialect)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.MigrateTo(t.Context(), 7); err != nil {
		t.Fatalf("the schema before stateless refresh: %v", err)
	}
	old := oldRows{db: db, dialect: b.Dialect}
	old.exec(t, `INSERT INTO auth_users (id, time_joined, session_epoch) VALUES (?, ?, 0)`, "u1", joined.UnixMilli())
	old.exec(t, `INSERT INTO auth_logins (method, third_party, subject, id, user_id, email, email_verified, password_hash,
		created_at) VALUES ('emailpassword', '', 'u1@example.com', 'u1', 'u1', 'u1@example.com', FALSE, '', ?)`, joined.UnixMilli())
	return st, old
}

// lineage writes a session as the release before stateless refresh left
// it after len(tokens)-1 refreshes, the last a second ago: every token on
// record, the last current and the one before it previous.
func (o oldRows) lineage(t *testing.T, handle, userID string, tokens []string) {
	created := authtest.Start.Add(-time.Hour).UnixMilli()
	last := authtest.Start.Add(-time.Second).UnixMilli()
	expires := authtest.Start.Add(100 * 24 * time.Hour).UnixMilli()
	n := len(tokens)
	current, previous := sha256.Sum256([]byte(tokens[n-1])), sha256.Sum256([]byte(tokens[n-2]))
	o.exec(t, `INSERT INTO auth_sessions (handle, user_id, login_id, created_at, refreshed_at, expires_at, current_hash,
		previous_hash, superseded_at, refresh_allowance) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		handle, userID, userID, created, last, expires, current[:], previous[:], last, last)
	for i, tok := range tokens {
		h := sha256.Sum256([]byte(tok))
		// Each token kept the expiry it was issued with.
		o.exec(t, `INSERT INTO auth_refresh_tokens (hash, session_handle, expires_at) VALUES (?, ?, ?)`,
			h[:], handle, expires-int64(n-1-i)*1000)
	}
}

// The same upgrade, at the store: rotations with an empty Handle place the
// old tokens by their rows, for every outcome of the contract, and
// DeleteExpired removes the rows when they can place nothing more.
func TestUpgradeLegacyRotations(t *testing.T) {
	const window = 10 * time.Second
	for _, b := range sqltest.Backends {
		t.Run(b.Name, func(t *testing.T) {
			ctx := t.Context()
			st, old := beforeStatelessRefresh(t, b)
			db := old.db
			// Sessions a to e, each refreshed four times by the old
			// release, the last a second before authtest.Start: r0 to r2
			// are superseded, r3 is previous and r4 current.
			handles := []string{"a", "b", "c", "d", "e"}
			tok := func(handle string, i int) string { return fmt.Sprintf("%s/r%d", handle, i) }
			for _, h := range handles {
				var lineage []string
				for i := range 5 {
					lineage = append(lineage, tok(h, i))
				}
				old.lineage(t, h, "u1", lineage)
			}
			// A token of e that has expired, though e has not.
			expired := sha256.Sum256([]byte("e/expired"))
			old.exec(t, `INSERT INTO auth_refresh_tokens (hash, session_handle, expires_at) VALUES (?, ?, ?)`,
				expired[:], "e", authtest.Start.Add(-time.Minute).UnixMilli())
			if b.Dialect == sqlstore.SQLite {
				// SQLite enforces no foreign key unless asked: a token
				// whose session is gone, which migration 8 removes.
				orphan := sha256.Sum256([]byte("orphan/r0"))
				old.exec(t, `INSERT INTO auth_refresh_tokens (hash, session_handle, expires_at) VALUES (?, ?, ?)`,
					orphan[:], "gone", authtest.Start.Add(time.Hour).UnixMilli())
			}
			if err := st.Migrate(ctx); err != nil {
				t.Fatalf("migrating: %v", err)
			}
			tokenRows := func() int {
				t.Helper()
				var n int
				if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM auth_refresh_tokens").Scan(&n); err != nil {
					t.Fatal(err)
				}
				return n
			}
			if n, want := tokenRows(), 5*len(handles)+1; n != want {
				t.Fatalf("%d rows in auth_refresh_tokens after migration 8, want %d: those of live sessions stay, those of none go", n, want)
			}
			for _, h := range handles {
				if s, err := st.Session(ctx, h, authtest.Start); err != nil || s.Generation != 0 || s.LoginID != "u1" {
					t.Fatalf("session %s after migration 8: %+v, %v; want it live at generation 0", h, s, err)
				}
			}

			now := authtest.Start
			// rotate presents the old token presented, with no handle.
			rotate := func(presented, next string, now time.Time, window time.Duration) (store.Rotated, error) {
				return st.RotateRefreshToken(ctx, store.Rotation{Presented: sha256.Sum256([]byte(presented)),
					Next: sha256.Sum256([]byte(next)), NextKey: "k1", Now: now, ExpiresAt: now.Add(24 * time.Hour),
					ReuseWindow: window})
			}
			wantTheft := func(what string, got store.Rotated, err error, handle string, generation int64, want store.Reuse) {
				t.Helper()
				if !errors.Is(err, store.ErrTokenReused) || got.Reuse != want || got.Session.Handle != handle ||
					got.Session.Generation != generation {
					t.Errorf("%s: %+v, %v; want ErrTokenReused, Reuse %v, session %s at generation %d", what, got, err, want, handle, generation)
				}
				var ended *store.EndedError
				if _, err := st.Session(ctx, handle, now); !errors.As(err, &ended) || ended.Reason != store.EndTokenTheft {
					t.Errorf("%s: then Session(%s) = %v, want it ended for theft", what, handle, err)
				}
			}

			// a: the current old token moves the session to the new format:
			// generation 1, with the successor's hash and key current.
			got, err := rotate("a/r4", "a/n1", now, 0)
			if err != nil || got.Repeat || got.Session.Handle != "a" || got.Session.Generation != 1 ||
				!got.Session.RefreshedAt.Equal(now) || !got.Session.ExpiresAt.Equal(now.Add(24*time.Hour)) {
				t.Fatalf("the current token of a session from before: %+v, %v; want the session at generation 1", got, err)
			}
			if h, err := st.LegacyTokenSession(ctx, sha256.Sum256([]byte("a/r4")), now); err != nil || h != "a" {
				t.Errorf("LegacyTokenSession of a token just exchanged: %q, %v; want a", h, err)
			}
			// Presented again with no window: theft, of the previous token.
			got, err = rotate("a/r4", "a/x", now.Add(time.Second), 0)
			wantTheft("the old current token again, with no window", got, err, "a", 1, store.ReusePrevious)
			// An ended session is not theft again.
			var ended *store.EndedError
			if _, err := rotate("a/r0", "a/x", now.Add(time.Second), 0); !errors.As(err, &ended) || ended.Reason != store.EndTokenTheft {
				t.Errorf("an old token of a session ended for theft: %v, want EndedError{%s}", err, store.EndTokenTheft)
			}

			// b: inside a window the old current token is a Repeat, with the
			// key of its successor, which stays current.
			if _, err := rotate("b/r4", "b/n1", now, window); err != nil {
				t.Fatalf("the current token of b: %v", err)
			}
			got, err = rotate("b/r4", "b/x", now.Add(time.Second), window)
			if err != nil || !got.Repeat || got.CurrentKey != "k1" || got.Session.Generation != 1 {
				t.Errorf("the old current token again inside the window: %+v, %v; want a Repeat at generation 1 with key k1", got, err)
			}
			n1 := sha256.Sum256([]byte("b/n1"))
			got, err = st.RotateRefreshToken(ctx, store.Rotation{Handle: "b", Generation: 1, Presented: n1,
				Next: sha256.Sum256([]byte("b/n2")), NextKey: "k2", Now: now.Add(2 * time.Second), ExpiresAt: now.Add(24 * time.Hour),
				ReuseWindow: window})
			if err != nil || got.Session.Generation != 2 {
				t.Fatalf("the successor of an old token, in the new format: %+v, %v; want generation 2", got, err)
			}
			// Two exchanges behind now, whatever the window.
			got, err = rotate("b/r4", "b/x", now.Add(3*time.Second), window)
			wantTheft("the old current token, two exchanges later", got, err, "b", 2, store.ReuseStale)

			// c: a token superseded before the migration is a stale one.
			got, err = rotate("c/r0", "c/x", now, window)
			wantTheft("a token superseded three exchanges before the migration", got, err, "c", 0, store.ReuseStale)

			// d: the old release's previous token, superseded a second before
			// now, after a window of half a second.
			got, err = rotate("d/r3", "d/x", now, 500*time.Millisecond)
			wantTheft("the previous token of the old release, after the window", got, err, "d", 0, store.ReuseAfterWindow)

			// Tokens the store cannot place harm nothing.
			for _, tc := range []struct{ token, what string }{
				{"nobody/r0", "an unknown token of the old format"},
				{"e/expired", "an expired token of a live session"},
				{"orphan/r0", "a token of a session that is gone"},
			} {
				if _, err := rotate(tc.token, "e/x", now, window); !errors.Is(err, store.ErrNotFound) || errors.As(err, &ended) {
					t.Errorf("%s: %v, want ErrNotFound", tc.what, err)
				}
				if _, err := st.LegacyTokenSession(ctx, sha256.Sum256([]byte(tc.token)), now); !errors.Is(err, store.ErrNotFound) {
					t.Errorf("LegacyTokenSession of %s: %v, want ErrNotFound", tc.what, err)
				}
			}
			if s, err := st.Session(ctx, "e", now); err != nil || s.Generation != 0 {
				t.Errorf("e after tokens that could not be placed: %+v, %v; want it live and unchanged", s, err)
			}
			// e is still a session, whose superseded tokens are still placed.
			if h, err := st.LegacyTokenSession(ctx, sha256.Sum256([]byte("e/r0")), now); err != nil || h != "e" {
				t.Errorf("LegacyTokenSession of a superseded token: %q, %v; want e", h, err)
			}
			if got, err := rotate("e/r4", "e/n1", now, 0); err != nil || got.Session.Generation != 1 {
				t.Errorf("the current token of e: %+v, %v", got, err)
			}

			// DeleteExpired removes the expired token now, and any of no
			// session, and the rest once their sessions, ended or not, have
			// expired.
			if b.Dialect == sqlstore.SQLite {
				orphan := sha256.Sum256([]byte("orphan/r1"))
				old.exec(t, `INSERT INTO auth_refresh_tokens (hash, session_handle, expires_at) VALUES (?, ?, ?)`,
					orphan[:], "gone", now.Add(time.Hour).UnixMilli())
			}
			if err := st.DeleteExpired(ctx, now); err != nil {
				t.Fatal(err)
			}
			if n, want := tokenRows(), 5*len(handles); n != want {
				t.Errorf("%d rows in auth_refresh_tokens after DeleteExpired, want %d: the expired one goes, and any of no session", n, want)
			}
			if err := st.DeleteExpired(ctx, now.Add(101*24*time.Hour)); err != nil {
				t.Fatal(err)
			}
			var sessions int
			if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM auth_sessions").Scan(&sessions); err != nil {
				t.Fatal(err)
			}
			if n := tokenRows(); n != 0 || sessions != 0 {
				t.Errorf("after every session expired: %d rows in auth_refresh_tokens and %d in auth_sessions, want none", n, sessions)
			}
		})
	}
}

// A database of the release before proven emails (schema version 8),
// where a login could own an email it never verified, once migrated takes
// each login's verification as its proof, as that release did: a verified
// owner keeps its email, and a login that owned an address it never
// verified owns it no more, so that a proven login may claim it.
// Migrating again changes nothing.
func TestUpgradeToProvenEmails(t *testing.T) {
	for _, b := range sqltest.Backends {
		t.Run(b.Name, func(t *testing.T) {
			ctx := t.Context()
			st, old := storeAt(t, b, 8)
			type row struct {
				key            store.LoginKey
				id, email      string
				verified, owns bool
			}
			password := func(email string) store.LoginKey { return store.EmailPasswordKey(email) }
			google := func(subject string) store.LoginKey {
				return store.LoginKey{Method: store.MethodThirdParty, ThirdParty: "google", Subject: subject}
			}
			rows := []row{
				{password("a@example.com"), "u1", "a@example.com", true, true},   // a verified owner
				{google("g-2"), "u2", "b@example.com", false, true},              // owned an email it never verified
				{password("b@example.com"), "u3", "b@example.com", false, false}, // neither verified nor owning
				{google("g-4"), "u4", "b@example.com", true, false},              // verified, owning nothing
			}
			for _, r := range rows {
				old.exec(t, `INSERT INTO auth_users (id, time_joined, session_epoch) VALUES (?, ?, 0)`, r.id, joined.UnixMilli())
				var owned any
				if r.owns {
					owned = r.email
				}
				old.exec(t, `INSERT INTO auth_logins (method, third_party, subject, id, user_id, email, email_verified, password_hash,
					created_at, owned_email) VALUES (?, ?, ?, ?, ?, ?, ?, '', ?, ?)`,
					r.key.Method, r.key.ThirdParty, r.key.Subject, r.id, r.id, r.email, r.verified, joined.UnixMilli(), owned)
			}

			check := func(when string) {
				t.Helper()
				for _, r := range rows {
					l, err := st.Login(ctx, r.key)
					if err != nil {
						t.Errorf("%s: login %s: %v", when, r.id, err)
						continue
					}
					owns := r.owns && r.verified
					if l.EmailVerified != r.verified || l.EmailProven != r.verified || l.OwnsEmail != owns || l.Email != r.email {
						t.Errorf("%s: login %s = %+v; want Email %s, EmailVerified and EmailProven both %v (its verification before), OwnsEmail %v",
							when, r.id, l, r.email, r.verified, owns)
					}
				}
			}
			if err := st.Migrate(ctx); err != nil {
				t.Fatalf("migrating: %v", err)
			}
			check("after migration 9")
			if err := st.Migrate(ctx); err != nil {
				t.Fatalf("migrating a second time: %v", err)
			}
			check("after migrating a second time")

			// The verified owner still owns its email: another proven
			// login may not, and a login may join its user.
			err := st.CreateUser(ctx, store.User{ID: "u5", TimeJoined: joined}, store.Login{LoginKey: google("g-5"),
				Email: "a@example.com", EmailVerified: true, EmailProven: true, CreatedAt: joined, OwnsEmail: true})
			if !errors.Is(err, store.ErrEmailOwned) {
				t.Errorf("a proven login asking to own the email of a verified owner from before: %v, want ErrEmailOwned", err)
			}
			if err := st.LinkLogin(ctx, store.Login{LoginKey: google("g-6"), ID: "l6", UserID: "u1", Email: "a@example.com",
				EmailVerified: true, EmailProven: true, CreatedAt: joined}); err != nil {
				t.Errorf("a login joining the verified owner from before: %v", err)
			}
			// The address the unverified login owned is free: it cannot
			// claim it back, unproven, and a proven login can.
			if _, err := st.ClaimEmail(ctx, "u2"); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("ClaimEmail by the login that owned an email it never verified: %v, want ErrNotFound", err)
			}
			if l, err := st.ClaimEmail(ctx, "u4"); err != nil || !l.OwnsEmail {
				t.Errorf("ClaimEmail by a verified login of the email an unverified login owned: %+v, %v; want it owning the email", l, err)
			}
		})
	}
}

// storeAt opens a fresh database of backend b at schema version, and the
// writer of rows as the releases of that schema wrote them.
func storeAt(t *testing.T, b sqltest.Backend, version int) (*sqlstore.Store, oldRows) {
	t.Helper()
	db := b.Open(t)
	st, err := sqlstore.New(db, b.Dialect)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.MigrateTo(t.Context(), version); err != nil {
		t.Fatalf("the schema at version %d: %v", version, err)
	}
	return st, oldRows{db: db, dialect: b.Dialect}
}

// TestUpgradeToCodes builds a database at schema 9 with a reset token and
// a verification token as that release wrote them, migrates, and checks
// that both still work, once, as the codes they became.
func TestUpgradeToCodes(t *testing.T) {
	for _, b := range sqltest.Backends {
		t.Run(b.Name, func(t *testing.T) {
			ctx := t.Context()
			st, old := storeAt(t, b, 9)
			const email = "ada@example.com"
			old.exec(t, `INSERT INTO auth_users (id, time_joined, session_epoch) VALUES ('u1', ?, 0)`, joined.UnixMilli())
			old.exec(t, `INSERT INTO auth_logins (method, third_party, subject, id, user_id, email, email_verified, email_proven,
				password_hash, created_at) VALUES (?, '', ?, 'u1', 'u1', ?, ?, ?, 'old-hash', ?)`,
				store.MethodEmailPassword, email, email, false, false, joined.UnixMilli())
			reset, verify := sha256.Sum256([]byte("reset")), sha256.Sum256([]byte("verify"))
			expires := authtest.Start.Add(time.Hour).UnixMilli()
			old.exec(t, `INSERT INTO auth_reset_tokens (hash, user_id, created_at, expires_at) VALUES (?, 'u1', ?, ?)`,
				reset[:], joined.UnixMilli(), expires)
			old.exec(t, `INSERT INTO auth_verification_tokens (hash, login_id, user_id, email, created_at, expires_at)
				VALUES (?, 'u1', 'u1', ?, ?, ?)`, verify[:], email, joined.UnixMilli(), expires)
			if err := st.Migrate(ctx); err != nil {
				t.Fatalf("migrating: %v", err)
			}

			now := authtest.Start
			if c, err := st.Code(ctx, store.CodeReset, reset, now); err != nil || c.UserID != "u1" {
				t.Errorf("the reset token from before, as a code: %+v, %v", c, err)
			}
			if c, err := st.Code(ctx, store.CodeVerification, verify, now); err != nil || c.LoginID != "u1" || c.Email != email {
				t.Errorf("the verification token from before, as a code: %+v, %v", c, err)
			}
			if l, err := st.VerifyEmail(ctx, verify, now); err != nil || !l.EmailVerified {
				t.Errorf("verifying with the token from before: %+v, %v", l, err)
			}
			if l, _, err := st.ResetPassword(ctx, reset, "new-hash", now); err != nil || l.PasswordHash != "new-hash" {
				t.Errorf("resetting with the token from before: %+v, %v", l, err)
			}
			if _, _, err := st.ResetPassword(ctx, reset, "again", now); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("the reset token from before, a second time: %v, want ErrNotFound", err)
			}
		})
	}
}

// TestUpgradeToPasswordless builds a database at schema 10 with a reset
// and a verification code as that release wrote them, migrates, and checks
// that both still work, once; that passwordless flows and codes, which
// have no user, are added and used beside them; and that deleting the user
// still takes its codes and leaves the flows. SQLite rebuilds auth_codes:
// there the table must keep its indexes and its foreign key, also with
// enforcement on.
func TestUpgradeToPasswordless(t *testing.T) {
	for _, b := range append(slices.Clone(sqltest.Backends), sqliteForeignKeys) {
		t.Run(b.Name, func(t *testing.T) {
			ctx := t.Context()
			st, old := storeAt(t, b, 10)
			const email = "ada@example.com"
			old.exec(t, `INSERT INTO auth_users (id, time_joined, session_epoch) VALUES ('u1', ?, 0)`, joined.UnixMilli())
			old.exec(t, `INSERT INTO auth_logins (method, third_party, subject, id, user_id, email, email_verified, email_proven,
				password_hash, created_at) VALUES (?, '', ?, 'u1', 'u1', ?, ?, ?, 'old-hash', ?)`,
				store.MethodEmailPassword, email, email, false, false, joined.UnixMilli())
			// A second login, whose verification code none of the uses
			// below spends: only deleting the user does.
			old.exec(t, `INSERT INTO auth_logins (method, third_party, subject, id, user_id, email, email_verified, email_proven,
				password_hash, created_at) VALUES (?, 'google', 'g-2', 'l2', 'u1', ?, ?, ?, '', ?)`,
				store.MethodThirdParty, email, false, false, joined.UnixMilli())
			reset, verify, spare := sha256.Sum256([]byte("reset")), sha256.Sum256([]byte("verify")), sha256.Sum256([]byte("spare"))
			expires := authtest.Start.Add(time.Hour).UnixMilli()
			old.exec(t, `INSERT INTO auth_codes (hash, kind, user_id, created_at, expires_at) VALUES (?, 'reset', 'u1', ?, ?)`,
				reset[:], joined.UnixMilli(), expires)
			for _, c := range []struct {
				hash  [32]byte
				login string
			}{{verify, "u1"}, {spare, "l2"}} {
				old.exec(t, `INSERT INTO auth_codes (hash, kind, user_id, login_id, email, created_at, expires_at)
					VALUES (?, 'verification', 'u1', ?, ?, ?, ?)`, c.hash[:], c.login, email, joined.UnixMilli(), expires)
			}
			for range 2 {
				if err := st.Migrate(ctx); err != nil {
					t.Fatalf("migrating: %v", err)
				}
			}

			now := authtest.Start
			if c, err := st.Code(ctx, store.CodeReset, reset, now); err != nil || c.UserID != "u1" || c.Flow != (store.TokenHash{}) || c.Attempts != 0 {
				t.Errorf("the reset code from before: %+v, %v; want it of u1, with no flow and no attempts", c, err)
			}
			if c, err := st.Code(ctx, store.CodeVerification, verify, now); err != nil || c.LoginID != "u1" || c.Email != email {
				t.Errorf("the verification code from before: %+v, %v", c, err)
			}

			// A flow and its code, with no user, beside them.
			flow, code := sha256.Sum256([]byte("flow")), sha256.Sum256([]byte("code"))
			if err := st.CreateCode(ctx, store.Code{Hash: flow, Kind: store.CodePasswordlessFlow, Email: email,
				CreatedAt: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
				t.Fatalf("creating a flow after the migration: %v", err)
			}
			if err := st.CreateCode(ctx, store.Code{Hash: code, Kind: store.CodePasswordless, Flow: flow,
				CreatedAt: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
				t.Fatalf("creating a code of the flow after the migration: %v", err)
			}
			if err := st.CreateCode(ctx, store.Code{Hash: reset, Kind: store.CodePasswordless, Flow: flow,
				CreatedAt: now, ExpiresAt: now.Add(time.Hour)}); !errors.Is(err, store.ErrConflict) {
				t.Errorf("a passwordless code with the hash of the reset code from before: %v, want ErrConflict", err)
			}
			if f, err := st.UsePasswordlessCode(ctx, flow, reset, now, 5); !errors.Is(err, store.ErrWrongCode) || f.Attempts != 1 {
				t.Errorf("the reset code from before submitted to a flow: %+v, %v; want ErrWrongCode and one attempt", f, err)
			}
			if l, err := st.VerifyEmail(ctx, verify, now); err != nil || !l.EmailVerified {
				t.Errorf("verifying with the token from before: %+v, %v", l, err)
			}
			if l, _, err := st.ResetPassword(ctx, reset, "new-hash", now); err != nil || l.PasswordHash != "new-hash" {
				t.Errorf("resetting with the token from before: %+v, %v", l, err)
			}
			if _, _, err := st.ResetPassword(ctx, reset, "again", now); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("the reset token from before, a second time: %v, want ErrNotFound", err)
			}

			// The user goes with its codes; the flow, of no user, stays.
			if c, err := st.Code(ctx, store.CodeVerification, spare, now); err != nil || c.LoginID != "l2" {
				t.Errorf("the verification code from before of the user's other login: %+v, %v", c, err)
			}
			if _, err := st.DeleteUser(ctx, "u1"); err != nil {
				t.Fatalf("deleting the user after the migration: %v", err)
			}
			if _, err := st.Code(ctx, store.CodeVerification, spare, now); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("a verification code from before, once its user is deleted: %v, want ErrNotFound", err)
			}
			if f, err := st.UsePasswordlessCode(ctx, flow, code, now, 5); err != nil || f.Attempts != 1 || f.Email != email {
				t.Errorf("the code of the flow after its address's user was deleted: %+v, %v; want the flow, with its one attempt", f, err)
			}

			if b.Dialect != sqlstore.SQLite {
				return
			}
			rows, err := old.db.QueryContext(ctx, `SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'auth_codes'
				AND name NOT LIKE 'sqlite_autoindex%' ORDER BY name`)
			if err != nil {
				t.Fatal(err)
			}
			var indexes []string
			for rows.Next() {
				var name string
				if err := rows.Scan(&name); err != nil {
					t.Fatal(err)
				}
				indexes = append(indexes, name)
			}
			rows.Close()
			want := []string{"auth_codes_expires", "auth_codes_flow", "auth_codes_flows", "auth_codes_login", "auth_codes_user"}
			if !slices.Equal(indexes, want) {
				t.Errorf("the indexes of the rebuilt auth_codes: %q, want %q", indexes, want)
			}
			var parent string
			if err := old.db.QueryRowContext(ctx, `SELECT "table" FROM pragma_foreign_key_list('auth_codes')`).Scan(&parent); err != nil || parent != "auth_users" {
				t.Errorf("the foreign key of the rebuilt auth_codes: %q, %v; want auth_users", parent, err)
			}
		})
	}
}

// TestUpgradeToPasskeys builds a database at schema 11 with a login, a
// reset code and a passwordless flow as that release wrote them, migrates,
// and checks that they come back with no material and no data and still
// work; that passkeys, with material, and their ceremonies, with data, are
// added beside them; and that UseCeremony swaps the material of a login
// from before, which has none.
func TestUpgradeToPasskeys(t *testing.T) {
	for _, b := range append(slices.Clone(sqltest.Backends), sqliteForeignKeys) {
		t.Run(b.Name, func(t *testing.T) {
			ctx := t.Context()
			st, old := storeAt(t, b, 11)
			const email = "ada@example.com"
			old.exec(t, `INSERT INTO auth_users (id, time_joined, session_epoch) VALUES ('u1', ?, 0)`, joined.UnixMilli())
			old.exec(t, `INSERT INTO auth_logins (method, third_party, subject, id, user_id, email, email_verified, email_proven,
				password_hash, created_at, owned_email) VALUES (?, '', ?, 'u1', 'u1', ?, ?, ?, 'old-hash', ?, ?)`,
				store.MethodEmailPassword, email, email, true, true, joined.UnixMilli(), email)
			reset, flow := sha256.Sum256([]byte("reset")), sha256.Sum256([]byte("flow"))
			expires := authtest.Start.Add(time.Hour).UnixMilli()
			old.exec(t, `INSERT INTO auth_codes (hash, kind, user_id, created_at, expires_at) VALUES (?, 'reset', 'u1', ?, ?)`,
				reset[:], joined.UnixMilli(), expires)
			old.exec(t, `INSERT INTO auth_codes (hash, kind, email, created_at, expires_at) VALUES (?, ?, ?, ?, ?)`,
				flow[:], store.CodePasswordlessFlow, email, joined.UnixMilli(), expires)
			for range 2 {
				if err := st.Migrate(ctx); err != nil {
					t.Fatalf("migrating: %v", err)
				}
			}

			now := authtest.Start
			pw := store.EmailPasswordKey(email)
			if l, err := st.Login(ctx, pw); err != nil || l.Material != nil || l.PasswordHash != "old-hash" || !l.OwnsEmail {
				t.Errorf("the login from before: %+v, %v; want it as it was, with no material", l, err)
			}
			for _, c := range []struct {
				kind store.CodeKind
				hash store.TokenHash
			}{{store.CodeReset, reset}, {store.CodePasswordlessFlow, flow}} {
				if got, err := st.Code(ctx, c.kind, c.hash, now); err != nil || got.Data != nil {
					t.Errorf("the %s code from before: %+v, %v; want it, with no data", c.kind, got, err)
				}
			}

			// A passkey joins the user, with its material, and a
			// ceremony with its state.
			pk := store.Login{LoginKey: store.WebAuthnKey("example.com", "cred-1"), ID: "pk1", UserID: "u1", Email: email,
				Material: []byte("key, count 1"), CreatedAt: now}
			if err := st.LinkLogin(ctx, pk); err != nil {
				t.Fatalf("linking a passkey after the migration: %v", err)
			}
			options := sha256.Sum256([]byte("options"))
			if err := st.CreateCode(ctx, store.Code{Hash: options, Kind: store.CodePasskeyOptions, Data: []byte("state"),
				CreatedAt: now, ExpiresAt: now.Add(time.Minute)}); err != nil {
				t.Fatalf("creating a ceremony after the migration: %v", err)
			}
			if err := st.CreateCode(ctx, store.Code{Hash: reset, Kind: store.CodePasskeyOptions,
				CreatedAt: now, ExpiresAt: now.Add(time.Minute)}); !errors.Is(err, store.ErrConflict) {
				t.Errorf("a ceremony with the hash of the reset code from before: %v, want ErrConflict", err)
			}
			c, err := st.UseCeremony(ctx, store.CodePasskeyOptions, options, now,
				&store.MaterialUpdate{LoginID: "pk1", Old: pk.Material, New: []byte("key, count 2")})
			if err != nil || string(c.Data) != "state" {
				t.Errorf("using the ceremony: %+v, %v; want it with its state", c, err)
			}
			if l, err := st.Login(ctx, pk.LoginKey); err != nil || string(l.Material) != "key, count 2" {
				t.Errorf("the passkey after its ceremony: %+v, %v; want its new material", l, err)
			}

			// The login from before, with no material, is swapped from
			// none; the user's codes from before still work.
			recovery := sha256.Sum256([]byte("recovery"))
			if err := st.CreateCode(ctx, store.Code{Hash: recovery, Kind: store.CodePasskeyRecovery, UserID: "u1", Email: email,
				CreatedAt: now, ExpiresAt: now.Add(time.Minute)}); err != nil {
				t.Fatalf("creating a recovery link after the migration: %v", err)
			}
			if _, err := st.UseCeremony(ctx, store.CodePasskeyRecovery, recovery, now,
				&store.MaterialUpdate{LoginID: "u1", New: []byte("new")}); err != nil {
				t.Errorf("using a recovery link with an update of the login from before: %v", err)
			}
			if l, err := st.Login(ctx, pw); err != nil || string(l.Material) != "new" {
				t.Errorf("the login from before after an update: %+v, %v; want its new material", l, err)
			}
			if l, _, err := st.ResetPassword(ctx, reset, "new-hash", now); err != nil || l.PasswordHash != "new-hash" {
				t.Errorf("resetting with the code from before: %+v, %v", l, err)
			}
			if f, err := st.UsePasswordlessCode(ctx, flow, reset, now, 5); !errors.Is(err, store.ErrWrongCode) || f.Attempts != 1 {
				t.Errorf("a wrong code submitted to the flow from before: %+v, %v; want ErrWrongCode and one attempt", f, err)
			}
		})
	}
}

// TestUpgradeToSecondFactors builds a database at schema 12 with a login
// and two sessions as that release wrote them, one of them with a refresh
// token kept from before tokens named their session, migrates, and checks
// that the sessions come back with no factors, are swapped from none, and
// return their factors from a refresh, on the one-statement path and on
// the transaction's; that a record of second factors joins the user and is
// swapped like the login from before, which has no material; and that the
// record is no way to sign in.
func TestUpgradeToSecondFactors(t *testing.T) {
	for _, b := range append(slices.Clone(sqltest.Backends), sqliteForeignKeys) {
		t.Run(b.Name, func(t *testing.T) {
			ctx := t.Context()
			st, old := storeAt(t, b, 12)
			const email = "ada@example.com"
			old.exec(t, `INSERT INTO auth_users (id, time_joined, session_epoch) VALUES ('u1', ?, 0)`, joined.UnixMilli())
			old.exec(t, `INSERT INTO auth_logins (method, third_party, subject, id, user_id, email, email_verified, email_proven,
				password_hash, created_at, owned_email) VALUES (?, '', ?, 'u1', 'u1', ?, ?, ?, 'old-hash', ?, ?)`,
				store.MethodEmailPassword, email, email, true, true, joined.UnixMilli(), email)
			created, expires := authtest.Start.Add(-time.Hour).UnixMilli(), authtest.Start.Add(24*time.Hour).UnixMilli()
			current, kept := sha256.Sum256([]byte("s1/r0")), sha256.Sum256([]byte("kept"))
			old.exec(t, `INSERT INTO auth_sessions (handle, user_id, login_id, created_at, refreshed_at, expires_at, current_hash,
				generation, current_key) VALUES ('s1', 'u1', 'u1', ?, ?, ?, ?, 0, 'k')`, created, created, expires, current[:])
			old.exec(t, `INSERT INTO auth_sessions (handle, user_id, login_id, created_at, refreshed_at, expires_at, current_hash)
				VALUES ('s2', 'u1', 'u1', ?, ?, ?, ?)`, created, created, expires, kept[:])
			old.exec(t, `INSERT INTO auth_refresh_tokens (hash, session_handle, expires_at) VALUES (?, 's2', ?)`, kept[:], expires)
			for range 2 {
				if err := st.Migrate(ctx); err != nil {
					t.Fatalf("migrating: %v", err)
				}
			}

			now := authtest.Start
			for _, h := range []string{"s1", "s2"} {
				if got, err := st.Session(ctx, h, now); err != nil || got.Factors != nil || got.UserID != "u1" {
					t.Errorf("session %s from before: %+v, %v; want it, with no factors", h, got, err)
				}
				if err := st.UpdateSessionFactors(ctx, h, []byte("other"), []byte(h+" proved"), now); !errors.Is(err, store.ErrConflict) {
					t.Errorf("a swap of session %s from before, from factors: %v, want ErrConflict", h, err)
				}
				if err := st.UpdateSessionFactors(ctx, h, nil, []byte(h+" proved"), now); err != nil {
					t.Errorf("a swap of session %s from before, from none: %v", h, err)
				}
			}
			if got, err := st.UserSessions(ctx, "u1", now); err != nil || len(got) != 2 ||
				string(got[0].Factors) != got[0].Handle+" proved" || string(got[1].Factors) != got[1].Handle+" proved" {
				t.Errorf("the sessions from before after a swap: %+v, %v; want each with its factors", got, err)
			}
			next := sha256.Sum256([]byte("s1/r1"))
			rotated, err := st.RotateRefreshToken(ctx, store.Rotation{Handle: "s1", Presented: current, Next: next, NextKey: "k",
				Now: now, ExpiresAt: now.Add(time.Hour)})
			if err != nil || string(rotated.Session.Factors) != "s1 proved" || rotated.Session.Generation != 1 {
				t.Errorf("a refresh of a session from before: %+v, %v; want generation 1, with its factors", rotated.Session, err)
			}
			// A token without a handle takes the transaction's path.
			rotated, err = st.RotateRefreshToken(ctx, store.Rotation{Presented: kept, Next: sha256.Sum256([]byte("s2/r1")), NextKey: "k",
				Now: now, ExpiresAt: now.Add(time.Hour)})
			if err != nil || string(rotated.Session.Factors) != "s2 proved" || rotated.Session.Handle != "s2" {
				t.Errorf("a refresh of a session from before with its kept token: %+v, %v; want s2, with its factors", rotated.Session, err)
			}

			// A record of second factors joins the user; it and the login
			// from before, with no material, are swapped.
			mfa := store.Login{LoginKey: store.SecondFactorsKey("u1"), ID: "u1/mfa", UserID: "u1", Material: []byte("record 0"), CreatedAt: now}
			if err := st.LinkLogin(ctx, mfa); err != nil {
				t.Fatalf("linking a record of second factors after the migration: %v", err)
			}
			if err := st.UpdateLoginMaterial(ctx, "u1/mfa", []byte("record 0"), []byte("record 1")); err != nil {
				t.Errorf("a swap of the record of second factors: %v", err)
			}
			if err := st.UpdateLoginMaterial(ctx, "u1", nil, []byte("extra")); err != nil {
				t.Errorf("a swap of the login from before, from none: %v", err)
			}
			if l, err := st.Login(ctx, mfa.LoginKey); err != nil || string(l.Material) != "record 1" {
				t.Errorf("the record of second factors after a swap: %+v, %v", l, err)
			}
			if l, err := st.Login(ctx, store.EmailPasswordKey(email)); err != nil || string(l.Material) != "extra" || l.PasswordHash != "old-hash" {
				t.Errorf("the login from before after a swap: %+v, %v", l, err)
			}
			if _, err := st.DeleteLogin(ctx, "u1"); !errors.Is(err, store.ErrLastLogin) {
				t.Errorf("deleting the login from before, beside a record of second factors: %v, want ErrLastLogin", err)
			}
			if _, err := st.DeleteUser(ctx, "u1"); err != nil {
				t.Errorf("deleting the user after the migration: %v", err)
			}
			if _, err := st.Login(ctx, mfa.LoginKey); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("the record of second factors of a deleted user: %v, want ErrNotFound", err)
			}
		})
	}
}

// TestUpgradeToRoles builds a database at schema 13 with a user, its login
// and a session as that release wrote them, migrates, and checks that
// Migrations lists the step, that the user and the session are as they
// were, that roles are created, given and listed beside them, and that
// deleting the user takes its roles in every tenant. The tables' foreign
// keys hold on SQLite with enforcement on too.
func TestUpgradeToRoles(t *testing.T) {
	for _, b := range append(slices.Clone(sqltest.Backends), sqliteForeignKeys) {
		t.Run(b.Name, func(t *testing.T) {
			ctx := t.Context()
			steps, err := sqlstore.Migrations(b.Dialect)
			if err != nil || !slices.ContainsFunc(steps, func(m sqlstore.Migration) bool {
				return m.Version == 14 && m.Name == "0014_roles.sql"
			}) {
				t.Fatalf("Migrations(%v): step 14 must be 0014_roles.sql; got %d steps, %v", b.Dialect, len(steps), err)
			}
			st, old := storeAt(t, b, 13)
			const email = "ada@example.com"
			old.exec(t, `INSERT INTO auth_users (id, time_joined, session_epoch) VALUES ('u1', ?, 0)`, joined.UnixMilli())
			old.exec(t, `INSERT INTO auth_logins (method, third_party, subject, id, user_id, email, email_verified, email_proven,
				password_hash, created_at) VALUES (?, '', ?, 'u1', 'u1', ?, ?, ?, 'old-hash', ?)`,
				store.MethodEmailPassword, email, email, true, true, joined.UnixMilli())
			created, expires := authtest.Start.Add(-time.Hour).UnixMilli(), authtest.Start.Add(24*time.Hour).UnixMilli()
			current := sha256.Sum256([]byte("s1/r0"))
			old.exec(t, `INSERT INTO auth_sessions (handle, user_id, login_id, created_at, refreshed_at, expires_at, current_hash,
				generation, current_key) VALUES ('s1', 'u1', 'u1', ?, ?, ?, ?, 0, 'k')`, created, created, expires, current[:])
			for range 2 {
				if err := st.Migrate(ctx); err != nil {
					t.Fatalf("migrating: %v", err)
				}
			}
			if b.Name == "sqlite-foreign-keys" {
				var on bool
				if err := old.db.QueryRowContext(ctx, "PRAGMA foreign_keys").Scan(&on); err != nil || !on {
					t.Errorf("foreign keys after the migration: %v, %v; want them still enforced", on, err)
				}
			}

			now := authtest.Start
			if u, err := st.UserByID(ctx, "u1"); err != nil || !u.TimeJoined.Equal(joined) {
				t.Errorf("the user from before: %+v, %v", u, err)
			}
			if sess, err := st.Session(ctx, "s1", now); err != nil || sess.UserID != "u1" {
				t.Errorf("the session from before: %+v, %v", sess, err)
			}
			if roles, err := st.Roles(ctx); err != nil || len(roles) != 0 {
				t.Errorf("the roles after the migration: %q, %v; want none", roles, err)
			}
			if created, err := st.CreateRole(ctx, "editor", []string{"write", "read"}); err != nil || !created {
				t.Fatalf("creating a role after the migration: %v, %v", created, err)
			}
			for _, tenant := range []string{store.PublicTenant, "a"} {
				if had, err := st.GiveRole(ctx, tenant, "u1", "editor"); err != nil || had {
					t.Fatalf("giving the user from before a role in tenant %q: %v, %v", tenant, had, err)
				}
			}
			if roles, perms, err := st.UserRoles(ctx, "a", "u1"); err != nil || !slices.Equal(roles, []string{"editor"}) ||
				!slices.Equal(perms, []string{"write", "read"}) {
				t.Errorf("the roles of the user from before: %q, %q, %v", roles, perms, err)
			}
			if _, err := st.DeleteUser(ctx, "u1"); err != nil {
				t.Fatalf("deleting the user from before: %v", err)
			}
			for _, tenant := range []string{store.PublicTenant, "a"} {
				if users, err := st.UsersWithRole(ctx, tenant, "editor"); err != nil || len(users) != 0 {
					t.Errorf("the holders of the role in tenant %q once its user is deleted: %q, %v; want none", tenant, users, err)
				}
			}
			if existed, users, err := st.DeleteRole(ctx, "editor"); err != nil || !existed || len(users) != 0 {
				t.Errorf("deleting the role: %v, %q, %v; want it existing, held by nobody", existed, users, err)
			}
			if b.Dialect != sqlstore.SQLite {
				return
			}
			for _, table := range []string{"auth_role_permissions", "auth_user_roles"} {
				var parent, onDelete string
				err := old.db.QueryRowContext(ctx, `SELECT "table", on_delete FROM pragma_foreign_key_list(?)`, table).Scan(&parent, &onDelete)
				if err != nil || parent != "auth_roles" || onDelete != "CASCADE" {
					t.Errorf("the foreign key of %s: %q, %q, %v; want auth_roles, CASCADE", table, parent, onDelete, err)
				}
			}
		})
	}
}

// TestUpgradeToUserList builds a database at schema 14 with users as that
// release wrote them, two of them joined in the same millisecond,
// migrates twice, and checks that Migrations ends with the step, that its
// index is there, and that the users are listed in order, page by page.
func TestUpgradeToUserList(t *testing.T) {
	for _, b := range sqltest.Backends {
		t.Run(b.Name, func(t *testing.T) {
			ctx := t.Context()
			steps, err := sqlstore.Migrations(b.Dialect)
			if err != nil || len(steps) == 0 || !slices.ContainsFunc(steps, func(m sqlstore.Migration) bool { return m.Version == 15 && m.Name == "0015_user_list.sql" }) {
				t.Fatalf("Migrations(%v): a step must be 15, 0015_user_list.sql; got %d steps, %v", b.Dialect, len(steps), err)
			}
			st, old := storeAt(t, b, 14)
			for i, id := range []string{"u3", "u1", "u2"} {
				at := joined
				if i == 0 {
					at = joined.Add(time.Second)
				}
				email := id + "@example.com"
				old.exec(t, `INSERT INTO auth_users (id, time_joined, session_epoch) VALUES (?, ?, 0)`, id, at.UnixMilli())
				old.exec(t, `INSERT INTO auth_logins (method, third_party, subject, id, user_id, email, email_verified, email_proven,
					password_hash, created_at) VALUES (?, '', ?, ?, ?, ?, ?, ?, 'old-hash', ?)`,
					store.MethodEmailPassword, email, id, id, email, false, false, at.UnixMilli())
			}
			for range 2 {
				if err := st.Migrate(ctx); err != nil {
					t.Fatalf("migrating: %v", err)
				}
			}
			index := map[sqlstore.Dialect]string{
				sqlstore.Postgres: `SELECT COUNT(*) FROM pg_indexes WHERE tablename = 'auth_users' AND indexname = 'auth_users_joined'`,
				sqlstore.SQLite:   `SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND name = 'auth_users_joined'`,
				sqlstore.MySQL: `SELECT COUNT(DISTINCT index_name) FROM information_schema.statistics
					WHERE table_schema = DATABASE() AND table_name = 'auth_users' AND index_name = 'auth_users_joined'`,
			}[b.Dialect]
			var n int
			if err := old.db.QueryRowContext(ctx, index).Scan(&n); err != nil || n != 1 {
				t.Errorf("the index auth_users_joined after the migration: %d, %v; want it", n, err)
			}
			var got []string
			q := store.UserQuery{Limit: 2}
			for {
				page, err := st.ListUsers(ctx, q)
				if err != nil {
					t.Fatalf("listing the users from before: %v", err)
				}
				for _, u := range page.Users {
					got = append(got, u.ID)
				}
				if page.Next == "" {
					break
				}
				q.After = page.Next
			}
			if !slices.Equal(got, []string{"u1", "u2", "u3"}) {
				t.Errorf("the users from before, oldest first: %q; want u1, u2, u3", got)
			}
			if n, err := st.CountUsers(ctx, store.UserQuery{Email: "U2@"}); err != nil || n != 1 {
				t.Errorf("counting the users from before with an email containing U2@: %d, %v; want 1", n, err)
			}
		})
	}
}

// TestUpgradeToBans builds a database at schema 15 with a user and a
// session as that release wrote them, migrates twice, and checks that the
// user is read back with no ban, keeps their session, and can be banned,
// which ends it.
func TestUpgradeToBans(t *testing.T) {
	for _, b := range sqltest.Backends {
		t.Run(b.Name, func(t *testing.T) {
			ctx := t.Context()
			steps, err := sqlstore.Migrations(b.Dialect)
			if err != nil || len(steps) == 0 || !slices.ContainsFunc(steps, func(m sqlstore.Migration) bool { return m.Version == 16 && m.Name == "0016_bans.sql" }) {
				t.Fatalf("Migrations(%v): a step must be 16, 0016_bans.sql; got %d steps, %v", b.Dialect, len(steps), err)
			}
			st, old := storeAt(t, b, 15)
			old.exec(t, `INSERT INTO auth_users (id, time_joined, session_epoch) VALUES ('u1', ?, 0)`, joined.UnixMilli())
			old.exec(t, `INSERT INTO auth_logins (method, third_party, subject, id, user_id, email, email_verified, email_proven,
				password_hash, created_at) VALUES (?, '', 'u1@example.com', 'u1', 'u1', 'u1@example.com', ?, ?, 'old-hash', ?)`,
				store.MethodEmailPassword, false, false, joined.UnixMilli())
			for range 2 {
				if err := st.Migrate(ctx); err != nil {
					t.Fatalf("migrating: %v", err)
				}
			}
			u, err := st.UserByID(ctx, "u1")
			if err != nil || u.Ban != (store.Ban{}) {
				t.Fatalf("the user from before: %+v, %v; want no ban", u, err)
			}
			sess := store.Session{Handle: "s1", UserID: "u1", LoginID: "u1", CreatedAt: joined, RefreshedAt: joined, ExpiresAt: joined.Add(time.Hour)}
			if err := st.CreateSession(ctx, sess, store.TokenHash{1}, u.SessionEpoch); err != nil {
				t.Fatalf("a session for the user from before: %v", err)
			}
			if handles, err := st.BanUser(ctx, "u1", store.Ban{At: joined, Reason: "spam"}); err != nil || len(handles) != 1 {
				t.Fatalf("banning the user from before: %q, %v; want their one session ended", handles, err)
			}
			u, _ = st.UserByID(ctx, "u1")
			if !u.Ban.ActiveAt(joined.Add(time.Minute)) || u.Ban.Reason != "spam" {
				t.Errorf("the ban after the migration: %+v", u.Ban)
			}
		})
	}
}

// TestUpgradeToAudit migrates a database at schema 16 twice and checks
// that Migrations lists the step and that the log takes and gives back
// entries.
func TestUpgradeToAudit(t *testing.T) {
	for _, b := range sqltest.Backends {
		t.Run(b.Name, func(t *testing.T) {
			ctx := t.Context()
			steps, err := sqlstore.Migrations(b.Dialect)
			if err != nil || !slices.ContainsFunc(steps, func(m sqlstore.Migration) bool { return m.Version == 17 && m.Name == "0017_audit.sql" }) {
				t.Fatalf("Migrations(%v): a step must be 17, 0017_audit.sql; got %d steps, %v", b.Dialect, len(steps), err)
			}
			st, _ := storeAt(t, b, 16)
			for range 2 {
				if err := st.Migrate(ctx); err != nil {
					t.Fatalf("migrating: %v", err)
				}
			}
			if err := st.AppendAudit(ctx, []store.AuditEntry{{Time: joined, Kind: "sign_in", UserID: "u1"}}); err != nil {
				t.Fatalf("AppendAudit after the migration: %v", err)
			}
			if page, err := st.ListAudit(ctx, store.AuditQuery{UserID: "u1"}); err != nil || len(page.Entries) != 1 {
				t.Errorf("ListAudit after the migration: %+v, %v", page, err)
			}
		})
	}
}

// TestUpgradeToTenants builds a database at schema 17 with two users, a
// login that owns its email, a session and codes as that release wrote
// them, migrates twice, and checks that Migrations ends with the step,
// that everything from before reads back as the public tenant's and is
// found by the public tenant's keys only, and that the same address then
// signs up, and owns its email, in another tenant, whose member the new
// user becomes. The rebuilt table's foreign key holds on SQLite with
// enforcement on too.
func TestUpgradeToTenants(t *testing.T) {
	for _, b := range append(slices.Clone(sqltest.Backends), sqliteForeignKeys) {
		t.Run(b.Name, func(t *testing.T) {
			ctx := t.Context()
			steps, err := sqlstore.Migrations(b.Dialect)
			if err != nil || len(steps) == 0 || steps[len(steps)-1].Version != 18 || steps[len(steps)-1].Name != "0018_tenants.sql" {
				t.Fatalf("Migrations(%v): the last step must be 18, 0018_tenants.sql; got %d steps, %v", b.Dialect, len(steps), err)
			}
			st, old := storeAt(t, b, 17)
			writeBeforeTenants(t, old)
			for range 2 {
				if err := st.Migrate(ctx); err != nil {
					t.Fatalf("migrating: %v", err)
				}
			}
			checkPublicAfterTenants(t, st)
			checkTenantAfterTenants(t, st)
		})
	}
}

// The rows writeBeforeTenants writes.
const (
	tenantsEmail = "ada@example.com"
	tenantsReset = "reset of u1"
	tenantsFlow  = "flow of ada"
)

// writeBeforeTenants writes, as schema 17 had them, a user u1 with an
// email and password login that owns its email and a session s1, a user
// u2 with a provider's login, a reset code of u1 and a passwordless flow.
func writeBeforeTenants(t *testing.T, old oldRows) {
	t.Helper()
	ms := joined.UnixMilli()
	for _, id := range []string{"u1", "u2"} {
		old.exec(t, `INSERT INTO auth_users (id, time_joined, session_epoch) VALUES (?, ?, 0)`, id, ms)
	}
	old.exec(t, `INSERT INTO auth_logins (method, third_party, subject, id, user_id, email, email_verified, email_proven,
		password_hash, created_at, owned_email) VALUES (?, '', ?, 'u1', 'u1', ?, ?, ?, 'old-hash', ?, ?)`,
		store.MethodEmailPassword, tenantsEmail, tenantsEmail, true, true, ms, tenantsEmail)
	old.exec(t, `INSERT INTO auth_logins (method, third_party, subject, id, user_id, email, email_verified, email_proven,
		password_hash, created_at) VALUES (?, 'google', 'g-1', 'u2', 'u2', ?, ?, ?, '', ?)`,
		store.MethodThirdParty, tenantsEmail, true, true, ms)
	created, expires := authtest.Start.Add(-time.Hour).UnixMilli(), authtest.Start.Add(24*time.Hour).UnixMilli()
	current := sha256.Sum256([]byte("s1/r0"))
	old.exec(t, `INSERT INTO auth_sessions (handle, user_id, login_id, created_at, refreshed_at, expires_at, current_hash,
		generation, current_key) VALUES ('s1', 'u1', 'u1', ?, ?, ?, ?, 0, 'k')`, created, created, expires, current[:])
	reset, flow := sha256.Sum256([]byte(tenantsReset)), sha256.Sum256([]byte(tenantsFlow))
	old.exec(t, `INSERT INTO auth_codes (hash, kind, user_id, login_id, email, created_at, expires_at)
		VALUES (?, ?, 'u1', '', '', ?, ?)`, reset[:], string(store.CodeReset), created, expires)
	old.exec(t, `INSERT INTO auth_codes (hash, kind, user_id, login_id, email, created_at, expires_at)
		VALUES (?, ?, NULL, '', ?, ?, ?)`, flow[:], string(store.CodePasswordlessFlow), tenantsEmail, created, expires)
}

// checkPublicAfterTenants checks that what writeBeforeTenants wrote is the
// public tenant's, and found by its keys only.
func checkPublicAfterTenants(t *testing.T, st *sqlstore.Store) {
	t.Helper()
	ctx, now := t.Context(), authtest.Start
	key := store.EmailPasswordKey(tenantsEmail)
	if l, err := st.Login(ctx, key); err != nil || l.Tenant != "" || !l.OwnsEmail || l.PasswordHash != "old-hash" {
		t.Errorf("the login from before: %+v, %v; want it in the public tenant, owning its email", l, err)
	}
	if _, err := st.Login(ctx, key.In("acme")); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the login from before by its key in another tenant: %v, want ErrNotFound", err)
	}
	if u, logins, err := st.UserByLogin(ctx, store.LoginKey{Method: store.MethodThirdParty, ThirdParty: "google", Subject: "g-1"}); err != nil ||
		u.ID != "u2" || len(logins) != 1 || logins[0].Tenant != "" {
		t.Errorf("the provider's login from before: %+v, %+v, %v; want u2's, in the public tenant", u, logins, err)
	}
	if sess, err := st.Session(ctx, "s1", now); err != nil || sess.Tenant != "" || sess.UserID != "u1" {
		t.Errorf("the session from before: %+v, %v; want u1's, in the public tenant", sess, err)
	}
	if c, err := st.Code(ctx, store.CodeReset, sha256.Sum256([]byte(tenantsReset)), now); err != nil || c.Tenant != "" || c.UserID != "u1" {
		t.Errorf("the reset code from before: %+v, %v; want u1's, in the public tenant", c, err)
	}
	if c, err := st.Code(ctx, store.CodePasswordlessFlow, sha256.Sum256([]byte(tenantsFlow)), now); err != nil || c.Tenant != "" || c.Email != tenantsEmail {
		t.Errorf("the passwordless flow from before: %+v, %v; want it, in the public tenant", c, err)
	}
	if n, err := st.CountUsers(ctx, store.UserQuery{Tenant: store.PublicTenant}); err != nil || n != 2 {
		t.Errorf("counting the public tenant's users from before: %d, %v; want 2", n, err)
	}
}

// checkTenantAfterTenants checks that the address of the login from
// before signs up again in another tenant, owning it there too.
func checkTenantAfterTenants(t *testing.T, st *sqlstore.Store) {
	t.Helper()
	ctx := t.Context()
	if _, err := st.PutTenant(ctx, store.Tenant{ID: "acme", Config: []byte("{}"), UpdatedAt: joined}); err != nil {
		t.Fatalf("creating a tenant after the migration: %v", err)
	}
	l := store.Login{LoginKey: store.EmailPasswordKey(tenantsEmail).In("acme"), Email: tenantsEmail, EmailVerified: true,
		EmailProven: true, OwnsEmail: true, PasswordHash: "new-hash", CreatedAt: joined}
	if err := st.CreateUser(ctx, store.User{ID: "u3", TimeJoined: joined}, l); err != nil {
		t.Fatalf("the address of the login from before signing up in another tenant, owning it: %v", err)
	}
	if got, err := st.Login(ctx, l.LoginKey); err != nil || got.UserID != "u3" || got.Tenant != "acme" || !got.OwnsEmail {
		t.Errorf("the new tenant's login: %+v, %v; want u3's, in acme, owning its email", got, err)
	}
	if m, err := st.Membership(ctx, "acme", "u3"); err != nil || m.UserID != "u3" {
		t.Errorf("the membership of the new user: %+v, %v", m, err)
	}
	if logins, err := st.LoginsByEmail(ctx, tenantsEmail); err != nil || len(logins) != 3 {
		t.Errorf("the logins of the address, in every tenant: %+v, %v; want 3", logins, err)
	}
}
