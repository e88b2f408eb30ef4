package sqlstore

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	mrand "math/rand/v2"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/latchkit/auth/store"
)

// Dialect names the SQL flavour of a database.
type Dialect int

// The supported dialects.
const (
	Postgres Dialect = iota + 1
	SQLite
	MySQL
)

func (d Dialect) String() string {
	switch d {
	case Postgres:
		return "postgres"
	case SQLite:
		return "sqlite"
	case MySQL:
		return "mysql"
	}
	return "Dialect(" + strconv.Itoa(int(d)) + ")"
}

// Store implements store.Store on a SQL database.
type Store struct {
	db      *sql.DB
	dialect Dialect
	q       queries
	writes  writeLock  // SQLite's one writer at a time; nil elsewhere
	queued  writeQueue // SQLite's writes waiting to be committed together
	// limitsPruned is the time (ms) TakeRateLimit last deleted passed
	// rate-limit rows.
	limitsPruned atomic.Int64
}

var (
	_ store.Store          = (*Store)(nil)
	_ store.RateLimitStore = (*Store)(nil)
)

// New returns a Store using db, which speaks dialect. It does not touch
// the database; call Migrate before first use. If db's open connections
// are unbounded, as sql.Open leaves them, New bounds them with
// DefaultMaxOpenConns and the defaults beside it.
func New(db *sql.DB, dialect Dialect) (*Store, error) {
	if db == nil {
		return nil, errors.New("sqlstore: nil *sql.DB")
	}
	switch dialect {
	case Postgres, SQLite, MySQL:
	default:
		return nil, fmt.Errorf("sqlstore: unknown dialect %v", dialect)
	}
	boundPool(db)
	return &Store{db: db, dialect: dialect, q: newQueries(dialect), writes: newWriteLock(dialect)}, nil
}

// querier is what a transaction and a connection have in common.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// inTx runs f in a write transaction and commits if f returns nil. On
// SQLite it holds the store's write lock (see writeLock), and the
// transaction begins IMMEDIATE, taking the database's write lock up
// front: a deferred transaction that reads and then writes can fail with
// SQLITE_BUSY at once, whatever the busy timeout.
func (s *Store) inTx(ctx context.Context, f func(q querier) error) error {
	return retrying(ctx, func() error { return s.inTxOnce(ctx, f) })
}

// retrying runs f, a transaction or a single statement, again while it
// loses a deadlock or a serialisation conflict, up to maxAttempts times.
// An error that says the database is out of reach comes back matching
// store.ErrUnavailable.
func retrying(ctx context.Context, f func() error) error {
	for attempt := 1; ; attempt++ {
		err := f()
		if err == nil || attempt == maxAttempts || !retryable(err) {
			return unavailable(err)
		}
		// Another transaction won a deadlock or a serialisation
		// conflict; nothing of this one was committed. Try again after
		// a short, random pause.
		// Exponential, jittered: 1-2 ms, 2-4 ms, ... up to about 0.5 s.
		pause := time.Duration(1<<min(attempt-1, 9)) * time.Millisecond
		select {
		case <-time.After(pause + time.Duration(mrand.Int64N(int64(pause)))):
		case <-ctx.Done():
			return unavailable(err)
		}
	}
}

// maxAttempts is how often a transaction that lost a deadlock is tried.
const maxAttempts = 10

// retryable reports a transaction aborted to break a deadlock or a
// serialisation conflict, recognised by SQLSTATE or MySQL error number
// (without importing a driver).
func retryable(err error) bool {
	var state interface{ SQLState() string }
	if errors.As(err, &state) {
		c := state.SQLState()
		return c == "40001" || c == "40P01"
	}
	msg := err.Error()
	return strings.Contains(msg, "Error 1213") || strings.Contains(msg, "Error 1205") || strings.Contains(msg, "(40001)")
}

func (s *Store) inTxOnce(ctx context.Context, f func(q querier) error) error {
	if s.dialect != SQLite {
		// READ COMMITTED: MySQL then takes no gap locks on plain
		// searches, which is where its deadlocks come from; the rows
		// this package changes are locked explicitly anyway.
		tx, err := s.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
		if err != nil {
			return err
		}
		if err := f(tx); err != nil {
			tx.Rollback()
			return err
		}
		return tx.Commit()
	}
	if err := s.writes.lock(ctx); err != nil {
		return err
	}
	defer s.writes.unlock()
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return err
	}
	if err := f(conn); err != nil {
		// A fresh context: the rollback must run even if ctx is done, or
		// the connection goes back to the pool inside a transaction.
		conn.ExecContext(context.Background(), "ROLLBACK")
		return err
	}
	if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
		conn.ExecContext(context.Background(), "ROLLBACK")
		return err
	}
	return nil
}

func ms(t time.Time) int64 { return t.UnixMilli() }

func fromMS(v int64) time.Time { return time.UnixMilli(v).UTC() }

// orNull is b as a statement's argument: NULL for nil, whatever the
// driver makes of a nil slice.
func orNull(b []byte) any {
	if b == nil {
		return nil
	}
	return b
}

// affected returns the rows a statement changed.
func affected(res sql.Result, err error) (int64, error) {
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// CreateUser implements store.Store.
func (s *Store) CreateUser(ctx context.Context, u store.User, first store.Login) error {
	return s.inTx(ctx, func(q querier) error {
		_, err := s.insertUser(ctx, q, u, first)
		if err != nil && !errors.Is(err, store.ErrConflict) && !errors.Is(err, store.ErrEmailOwned) {
			return unavailable(fmt.Errorf("sqlstore: creating a user: %w", err))
		}
		return err
	})
}

// insertUser adds u with its first login and returns the login as
// stored. It returns ErrConflict if u.ID exists, and errLoginConflict if
// first's key does; the caller's transaction then writes nothing.
func (s *Store) insertUser(ctx context.Context, q querier, u store.User, first store.Login) (store.Login, error) {
	n, err := affected(q.ExecContext(ctx, s.q.insertUser, u.ID, ms(u.TimeJoined)))
	if err != nil {
		return store.Login{}, err
	}
	if n == 0 {
		return store.Login{}, store.ErrConflict
	}
	first.UserID, first.SessionEpoch = u.ID, 0
	if first.ID == "" {
		first.ID = u.ID
	}
	first.OwnsEmail = first.OwnsEmail && first.EmailProven && first.Email != ""
	first.EmailVerified = first.EmailVerified || first.EmailProven
	// A concurrent transaction inserting the same key makes this insert
	// wait for it, then affect nothing.
	if err := s.insertLogin(ctx, q, first); err != nil {
		return store.Login{}, err
	}
	return first, s.joinLoginTenant(ctx, q, first)
}

// insertLogin adds l. If a unique key refuses it, it returns
// errLoginConflict for l's key, ErrConflict for its id and ErrEmailOwned
// for the email it asks to own.
func (s *Store) insertLogin(ctx context.Context, q querier, l store.Login) error {
	var owned any
	if l.OwnsEmail && l.EmailProven && l.Email != "" {
		owned = l.Email
	}
	n, err := affected(q.ExecContext(ctx, s.q.insertLogin, l.Tenant, l.Method, l.ThirdParty, l.Subject, l.ID, l.UserID,
		l.Email, l.EmailVerified || l.EmailProven, l.EmailProven, orNull(l.Material), l.PasswordHash, ms(l.CreatedAt), owned))
	if err != nil {
		return err
	}
	if n == 1 {
		return nil
	}
	// Which key refused it: the statement waited for any concurrent
	// insert of the same key, so these reads see its row.
	if taken, err := s.loginKeyTaken(ctx, q, l); err != nil {
		return err
	} else if taken {
		return errLoginConflict
	}
	var one int
	if err := q.QueryRowContext(ctx, s.q.loginIDTaken, l.ID).Scan(&one); err == nil {
		return store.ErrConflict
	} else if !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	if l.OwnsEmail {
		return store.ErrEmailOwned
	}
	return store.ErrConflict
}

// loginKeyTaken reports whether l's key is on record.
func (s *Store) loginKeyTaken(ctx context.Context, q querier, l store.Login) (bool, error) {
	_, err := scanLogin(q.QueryRowContext(ctx, s.q.login, keyArgs(l.LoginKey)...))
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

// UserByID implements store.Store.
func (s *Store) UserByID(ctx context.Context, id string) (store.User, error) {
	u, err := scanUser(s.db.QueryRowContext(ctx, s.q.userByID, id))
	if errors.Is(err, sql.ErrNoRows) {
		return store.User{}, store.ErrNotFound
	} else if err != nil {
		return store.User{}, unavailable(fmt.Errorf("sqlstore: reading a user: %w", err))
	}
	return u, nil
}

// userColumns are the columns of a store.User, which scanUser reads.
const userColumns = "id, time_joined, session_epoch, banned_at, banned_until, ban_reason, banned_by"

func scanUser(row scanner) (store.User, error) {
	var u store.User
	var joined int64
	var at, until sql.NullInt64
	var reason, by sql.NullString
	if err := row.Scan(&u.ID, &joined, &u.SessionEpoch, &at, &until, &reason, &by); err != nil {
		return store.User{}, err
	}
	u.TimeJoined = fromMS(joined)
	if at.Valid {
		u.Ban = store.Ban{At: fromMS(at.Int64), Reason: reason.String, By: by.String}
		if until.Valid {
			u.Ban.Until = fromMS(until.Int64)
		}
	}
	return u, nil
}

// scanLogin reads the loginColumns of a row.
func scanLogin(row interface{ Scan(...any) error }) (store.Login, error) {
	var l store.Login
	var created int64
	err := row.Scan(&l.Tenant, &l.Method, &l.ThirdParty, &l.Subject, &l.ID, &l.UserID, &l.Email, &l.EmailVerified, &l.EmailProven,
		&l.Material, &l.PasswordHash, &created, &l.OwnsEmail, &l.SessionEpoch)
	l.CreatedAt = fromMS(created)
	return l, err
}

// keyArgs are the arguments of loginKeyIs for k.
func keyArgs(k store.LoginKey) []any {
	return []any{k.Tenant, k.Method, k.ThirdParty, k.Subject}
}

// Login implements store.Store.
func (s *Store) Login(ctx context.Context, k store.LoginKey) (store.Login, error) {
	l, err := scanLogin(s.db.QueryRowContext(ctx, s.q.login, keyArgs(k)...))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Login{}, store.ErrNotFound
	} else if err != nil {
		return store.Login{}, unavailable(fmt.Errorf("sqlstore: reading a login: %w", err))
	}
	return l, nil
}

// Logins implements store.Store.
func (s *Store) Logins(ctx context.Context, userID string) ([]store.Login, error) {
	return s.logins(ctx, s.q.userLogins, userID)
}

// UserByLogin implements store.Store.
func (s *Store) UserByLogin(ctx context.Context, k store.LoginKey) (store.User, []store.Login, error) {
	if k.Method == store.MethodSecondFactors {
		return store.User{}, nil, store.ErrNotFound
	}
	rows, err := s.db.QueryContext(ctx, s.q.userByLogin, keyArgs(k)...)
	if err != nil {
		return store.User{}, nil, unavailable(fmt.Errorf("sqlstore: reading a user's logins: %w", err))
	}
	defer rows.Close()
	var u store.User
	logins := []store.Login{}
	for rows.Next() {
		var l store.Login
		var created, joined int64
		err := rows.Scan(&l.Tenant, &l.Method, &l.ThirdParty, &l.Subject, &l.ID, &l.UserID, &l.Email, &l.EmailVerified, &l.EmailProven,
			&l.Material, &l.PasswordHash, &created, &l.OwnsEmail, &l.SessionEpoch, &joined)
		if err != nil {
			return store.User{}, nil, unavailable(fmt.Errorf("sqlstore: reading a user's logins: %w", err))
		}
		l.CreatedAt = fromMS(created)
		u = store.User{ID: l.UserID, TimeJoined: fromMS(joined), SessionEpoch: l.SessionEpoch}
		logins = append(logins, l)
	}
	if err := rows.Err(); err != nil {
		return store.User{}, nil, unavailable(fmt.Errorf("sqlstore: reading a user's logins: %w", err))
	}
	if len(logins) == 0 {
		return store.User{}, nil, store.ErrNotFound
	}
	return u, logins, nil
}

// logins runs a query of loginColumns with one argument.
func (s *Store) logins(ctx context.Context, query, arg string) ([]store.Login, error) {
	rows, err := s.db.QueryContext(ctx, query, arg)
	if err != nil {
		return nil, unavailable(fmt.Errorf("sqlstore: reading logins: %w", err))
	}
	defer rows.Close()
	out := []store.Login{}
	for rows.Next() {
		l, err := scanLogin(rows)
		if err != nil {
			return nil, unavailable(fmt.Errorf("sqlstore: reading logins: %w", err))
		}
		out = append(out, l)
	}
	if err := rows.Err(); err != nil {
		return nil, unavailable(fmt.Errorf("sqlstore: reading logins: %w", err))
	}
	return out, nil
}

// LoginsByEmail implements store.Store.
func (s *Store) LoginsByEmail(ctx context.Context, email string) ([]store.Login, error) {
	return s.logins(ctx, s.q.loginsByEmail, email)
}

// errLoginConflict reports that a login's key was taken, by a row on
// record or by a concurrent transaction, when insertUser came to it.
var errLoginConflict = fmt.Errorf("%w: login key taken", store.ErrConflict)

// SignInUp implements store.Store. A call that loses the race to create a
// login rolls back, and the next attempt finds the winner's login.
func (s *Store) SignInUp(ctx context.Context, l store.Login, newUser store.User) (store.Login, bool, error) {
	for attempt := 1; ; attempt++ {
		var out store.Login
		created := false
		err := s.inTx(ctx, func(q querier) error {
			old, err := scanLogin(q.QueryRowContext(ctx, s.q.loginForUpdate, keyArgs(l.LoginKey)...))
			if err == nil {
				same := old.Email == l.Email
				old.EmailVerified = l.EmailVerified || l.EmailProven || old.EmailVerified && same
				old.EmailProven = l.EmailProven || old.EmailProven && same
				old.OwnsEmail = old.OwnsEmail && same
				old.Email = l.Email
				out = old
				var owned any
				if old.OwnsEmail {
					owned = old.Email
				}
				_, err = q.ExecContext(ctx, s.q.updateLoginEmail, append([]any{old.Email, old.EmailVerified, old.EmailProven, owned},
					keyArgs(l.LoginKey)...)...)
				return err
			} else if !errors.Is(err, sql.ErrNoRows) {
				return err
			}
			out, err = s.insertUser(ctx, q, newUser, l)
			created = err == nil
			return err
		})
		switch {
		case errors.Is(err, errLoginConflict) && attempt < maxAttempts:
			continue
		case errors.Is(err, store.ErrConflict), errors.Is(err, store.ErrEmailOwned):
			return store.Login{}, false, err
		case err != nil:
			return store.Login{}, false, unavailable(fmt.Errorf("sqlstore: signing in with a third party: %w", err))
		}
		return out, created, nil
	}
}

// UpdatePasswordHash implements store.Store.
func (s *Store) UpdatePasswordHash(ctx context.Context, userID, oldHash, newHash string) error {
	return s.inTx(ctx, func(q querier) error {
		// The user first, as every method that changes a user's records
		// locks it first (see the lock order in queries.go).
		var one int
		if err := q.QueryRowContext(ctx, s.q.userExists, userID).Scan(&one); errors.Is(err, sql.ErrNoRows) {
			return store.ErrNotFound
		} else if err != nil {
			return unavailable(fmt.Errorf("sqlstore: updating a password hash: %w", err))
		}
		n, err := affected(q.ExecContext(ctx, s.q.updatePassword, newHash, userID, oldHash))
		if err != nil {
			return unavailable(fmt.Errorf("sqlstore: updating a password hash: %w", err))
		}
		if n == 0 {
			err := q.QueryRowContext(ctx, s.q.passwordLoginExists, userID).Scan(&one)
			if errors.Is(err, sql.ErrNoRows) {
				return store.ErrNotFound
			} else if err != nil {
				return unavailable(fmt.Errorf("sqlstore: updating a password hash: %w", err))
			}
			return store.ErrConflict
		}
		if _, err := q.ExecContext(ctx, s.q.deleteUserResets, userID); err != nil {
			return unavailable(fmt.Errorf("sqlstore: voiding reset tokens: %w", err))
		}
		return nil
	})
}

// CreateSession implements store.Store.
func (s *Store) CreateSession(ctx context.Context, sess store.Session, refresh store.TokenHash, epoch int64) error {
	loginID := sess.LoginID
	if loginID == "" {
		loginID = sess.UserID
	}
	// One statement checks the epoch and inserts, under a shared lock on
	// the user's row: a reset or a revocation of every session advances
	// the epoch under an exclusive one, so either the session exists
	// before they end every session, or the insert sees the new epoch.
	var n int64
	err := s.write(ctx, func(ctx context.Context, q querier) (err error) {
		n, err = affected(q.ExecContext(ctx, s.q.insertSession, sess.Handle, loginID, sess.Tenant,
			ms(sess.CreatedAt), ms(sess.RefreshedAt), ms(sess.ExpiresAt), refresh[:], orNull(sess.Factors), sess.UserID, epoch,
			ms(sess.RefreshedAt)))
		return err
	})
	if isUniqueViolation(err) {
		return store.ErrConflict
	} else if err != nil {
		return unavailable(fmt.Errorf("sqlstore: creating a session: %w", err))
	}
	if n > 0 {
		return nil
	}
	// No row: the user is gone, banned, or its epoch was not epoch.
	u, err := scanUser(s.db.QueryRowContext(ctx, s.q.userByID, sess.UserID))
	if errors.Is(err, sql.ErrNoRows) {
		return store.ErrNotFound
	} else if err != nil {
		return unavailable(fmt.Errorf("sqlstore: creating a session: %w", err))
	}
	if u.SessionEpoch == epoch && u.Ban.ActiveAt(sess.RefreshedAt) {
		return store.ErrBanned
	}
	return store.ErrSessionsEnded
}

const sessionColumns = "handle, user_id, login_id, tenant, created_at, refreshed_at, expires_at, generation, factors"

type scanner interface{ Scan(dest ...any) error }

func scanSession(r scanner, extra ...any) (store.Session, error) {
	var s store.Session
	var created, refreshed, expires int64
	dest := append([]any{&s.Handle, &s.UserID, &s.LoginID, &s.Tenant, &created, &refreshed, &expires, &s.Generation, &s.Factors}, extra...)
	if err := r.Scan(dest...); err != nil {
		return store.Session{}, err
	}
	s.CreatedAt, s.RefreshedAt, s.ExpiresAt = fromMS(created), fromMS(refreshed), fromMS(expires)
	return s, nil
}

// Session implements store.Store.
func (s *Store) Session(ctx context.Context, handle string, now time.Time) (store.Session, error) {
	var ended sql.NullString
	sess, err := scanSession(s.db.QueryRowContext(ctx, s.q.session, handle), &ended)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Session{}, store.ErrNotFound
	} else if err != nil {
		return store.Session{}, unavailable(fmt.Errorf("sqlstore: reading a session: %w", err))
	}
	if err := liveAt(sess, ended, ms(now)); err != nil {
		return store.Session{}, err
	}
	return sess, nil
}

// UserSessions implements store.Store.
func (s *Store) UserSessions(ctx context.Context, userID string, now time.Time) ([]store.Session, error) {
	rows, err := s.db.QueryContext(ctx, s.q.userSessions, userID, ms(now))
	if err != nil {
		return nil, unavailable(fmt.Errorf("sqlstore: listing sessions: %w", err))
	}
	defer rows.Close()
	var out []store.Session
	for rows.Next() {
		sess, err := scanSession(rows)
		if err != nil {
			return nil, unavailable(fmt.Errorf("sqlstore: listing sessions: %w", err))
		}
		out = append(out, sess)
	}
	if err := rows.Err(); err != nil {
		return nil, unavailable(fmt.Errorf("sqlstore: listing sessions: %w", err))
	}
	return out, nil
}

// liveAt returns nil if a session that ended for the given reason (NULL:
// it has not) is live at now, and otherwise the EndedError that says why
// not.
func liveAt(sess store.Session, ended sql.NullString, now int64) error {
	switch {
	case ended.Valid:
		return &store.EndedError{Reason: store.EndReason(ended.String)}
	case ms(sess.ExpiresAt) <= now:
		return &store.EndedError{}
	}
	return nil
}

// RotateRefreshToken implements store.Store. The common case, the current
// token of a live session, is one conditional UPDATE: on PostgreSQL and
// SQLite it returns the session; MySQL cannot, so a read of the session's
// fixed columns follows it. The user's roles asked for (RolesOf) come in
// the same statement as the session. Everything else is a transaction
// that locks the session row first, and leaves the roles to UserRoles.
func (s *Store) RotateRefreshToken(ctx context.Context, r store.Rotation) (store.Rotated, error) {
	every, limit := allowanceOf(r)
	now := ms(r.Now)
	if r.Handle != "" {
		args := []any{r.Next[:], r.NextKey, now, now, ms(r.ExpiresAt), now, every, r.Handle, r.Presented[:], now, limit}
		out, err := s.rotateCurrent(ctx, r, args)
		switch {
		case err == nil:
			return out, nil
		case !errors.Is(err, sql.ErrNoRows):
			return store.Rotated{}, unavailable(fmt.Errorf("sqlstore: rotating a refresh token: %w", err))
		}
		// Not the current token of a live session: find out what it is.
	}
	var out store.Rotated
	reused := false
	err := s.inTx(ctx, func(q querier) error {
		handle, legacy := r.Handle, r.Handle == ""
		if legacy {
			var tokenExpires int64
			err := q.QueryRowContext(ctx, s.q.legacyToken, r.Presented[:]).Scan(&handle, &tokenExpires)
			if errors.Is(err, sql.ErrNoRows) {
				return store.ErrNotFound
			} else if err != nil {
				return err
			}
			if tokenExpires <= now {
				return store.ErrNotFound
			}
		}
		var current, previous []byte
		var superseded sql.NullInt64
		var allowance int64
		var key string
		var ended sql.NullString
		sess, err := scanSession(q.QueryRowContext(ctx, s.q.sessionForUpdate, handle),
			&current, &previous, &superseded, &allowance, &key, &ended)
		if errors.Is(err, sql.ErrNoRows) {
			return store.ErrNotFound
		} else if err != nil {
			return err
		}
		if err := liveAt(sess, ended, now); err != nil {
			return err
		}
		if string(current) == string(r.Presented[:]) {
			// The current token, which the one statement above did not
			// take: a token without a handle, or one past its allowance.
			if allowance > limit {
				return store.ErrRateLimited
			}
			allowance = max(allowance, now) + every
			if _, err := q.ExecContext(ctx, s.q.rotate, r.Next[:], r.NextKey, now, now, ms(r.ExpiresAt), allowance, handle); err != nil {
				return err
			}
			sess.RefreshedAt, sess.ExpiresAt = fromMS(now), fromMS(ms(r.ExpiresAt))
			sess.Generation++
			out.Session = sess
			return nil
		}
		behind := sess.Generation - r.Generation
		if legacy {
			// A token of the old format was generation 0 of its session,
			// and the one before the current if it is the previous.
			behind = 2
			if string(previous) == string(r.Presented[:]) {
				behind = 1
			}
		}
		switch {
		case behind <= 0:
			return store.ErrNotFound
		case behind == 1 && r.ReuseWindow > 0 && superseded.Valid && now-superseded.Int64 < r.ReuseWindow.Milliseconds():
			if key == "" {
				// The current token is one of the old format, which
				// nobody can make again: refuse the retry, harming
				// nothing.
				return store.ErrNotFound
			}
			out = store.Rotated{Session: sess, Repeat: true, CurrentKey: key}
			return nil
		}
		// Superseded: end the session, and commit that.
		out, reused = store.Rotated{Session: sess, Reuse: store.ReuseOf(behind, r.ReuseWindow)}, true
		_, err = q.ExecContext(ctx, s.q.endTheft, handle)
		return err
	})
	var ended *store.EndedError
	switch {
	case err == nil && reused:
		return out, store.ErrTokenReused
	case errors.As(err, &ended), errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrRateLimited):
		return store.Rotated{}, err
	case err != nil:
		return store.Rotated{}, unavailable(fmt.Errorf("sqlstore: rotating a refresh token: %w", err))
	}
	return out, nil
}

// rotateCurrent runs the one-statement rotation of a current token. It
// returns sql.ErrNoRows if the token was not one. What the update wrote
// is known, so only the rest of the row is read back: on PostgreSQL and
// SQLite in the statement, on MySQL, which cannot return what it updates,
// in a read after it. Of that rest only the factors ever change; the read
// on MySQL returns them as they are then. The roles asked for come with
// the rest of the row.
func (s *Store) rotateCurrent(ctx context.Context, r store.Rotation, args []any) (store.Rotated, error) {
	sess := store.Session{Handle: r.Handle, RefreshedAt: fromMS(ms(r.Now)), ExpiresAt: fromMS(ms(r.ExpiresAt)),
		Generation: r.Generation + 1}
	var created int64
	if s.dialect != MySQL {
		query, dest := s.q.rotateCurrent, []any{&sess.UserID, &sess.LoginID, &sess.Tenant, &created, &sess.Factors}
		var roles []byte
		if r.RolesOf != "" {
			query, args, dest = s.q.rotateCurrentRoles, append(args, r.RolesOf), append(dest, &roles)
		}
		err := s.write(ctx, func(ctx context.Context, q querier) error {
			return q.QueryRowContext(ctx, query, args...).Scan(dest...)
		})
		if err != nil {
			return store.Rotated{}, err
		}
		sess.CreatedAt = fromMS(created)
		out := store.Rotated{Session: sess}
		if r.RolesOf != "" {
			// The rotation has committed: roles that cannot be read
			// from the answer are left to the caller's UserRoles,
			// rather than failing a refresh whose token is spent.
			if l, err := rolesFromJSON(roles); err == nil {
				out.RolesRead, out.Roles, out.Permissions = true, l.roles, l.permissions
			}
		}
		return out, nil
	}
	// Only the update is tried again after a deadlock: once it has
	// committed, trying it again would find the token superseded.
	var n int64
	err := retrying(ctx, func() (err error) {
		n, err = affected(s.db.ExecContext(ctx, s.q.rotateCurrent, args...))
		return err
	})
	if err != nil {
		return store.Rotated{}, err
	}
	if n == 0 {
		return store.Rotated{}, sql.ErrNoRows
	}
	if r.RolesOf != "" {
		return s.rotatedWithRoles(ctx, r, sess)
	}
	err = s.db.QueryRowContext(ctx, s.q.rotatedSession, r.Handle).Scan(&sess.UserID, &sess.LoginID, &sess.Tenant, &created, &sess.Factors)
	sess.CreatedAt = fromMS(created)
	return store.Rotated{Session: sess}, err
}

// rotatedWithRoles is MySQL's read after the rotation of a current token
// that asks for roles: the rest of the session's row and the user's roles
// in one statement, a row for each role and permission.
func (s *Store) rotatedWithRoles(ctx context.Context, r store.Rotation, sess store.Session) (store.Rotated, error) {
	rows, err := s.db.QueryContext(ctx, s.q.rotatedSessionRoles, r.RolesOf, r.Handle)
	if err != nil {
		return store.Rotated{}, err
	}
	defer rows.Close()
	l, found := newRoleList(), false
	var created int64
	for rows.Next() {
		var role, permission sql.NullString
		if err := rows.Scan(&sess.UserID, &sess.LoginID, &sess.Tenant, &created, &sess.Factors, &role, &permission); err != nil {
			return store.Rotated{}, err
		}
		found = true
		if role.Valid {
			l.add(role.String, permission)
		}
	}
	if err := rows.Err(); err != nil {
		return store.Rotated{}, err
	}
	if !found {
		return store.Rotated{}, sql.ErrNoRows
	}
	sess.CreatedAt = fromMS(created)
	return store.Rotated{Session: sess, RolesRead: true, Roles: l.roles, Permissions: l.permissions}, nil
}

// UpdateSessionFactors implements store.Store in one conditional UPDATE,
// which only a live session with the factors old passes. When it changes
// no row, a read of the session says why.
func (s *Store) UpdateSessionFactors(ctx context.Context, handle string, old, new []byte, now time.Time) error {
	query, args := s.q.swapFactors, []any{orNull(new), handle, ms(now), old}
	if len(old) == 0 {
		query, args = s.q.swapFactorsFromNone, args[:3]
	}
	var n int64
	err := s.write(ctx, func(ctx context.Context, q querier) (err error) {
		n, err = affected(q.ExecContext(ctx, query, args...))
		return err
	})
	if err != nil {
		return unavailable(fmt.Errorf("sqlstore: updating a session's factors: %w", err))
	}
	if n > 0 {
		return nil
	}
	var ended sql.NullString
	sess, err := scanSession(s.db.QueryRowContext(ctx, s.q.session, handle), &ended)
	if errors.Is(err, sql.ErrNoRows) {
		return store.ErrNotFound
	} else if err != nil {
		return unavailable(fmt.Errorf("sqlstore: updating a session's factors: %w", err))
	}
	if err := liveAt(sess, ended, ms(now)); err != nil {
		return err
	}
	return swapMissed(sess.Factors, old, new)
}

// swapMissed is the answer of a compare-and-swap from old to new that
// changed no row of a record that exists, now holding stored: MySQL
// counts a row set to the value it had as unchanged, so a swap to the
// bytes already there succeeded; any other is a conflict.
func swapMissed(stored, old, new []byte) error {
	if bytes.Equal(stored, old) && bytes.Equal(old, new) {
		return nil
	}
	return store.ErrConflict
}

// allowanceOf returns a rotation's allowance interval and the latest
// allowance time at which it may still rotate, in milliseconds, as
// TakeRateLimit counts: with no allowance set, every rotation may.
func allowanceOf(r store.Rotation) (every, limit int64) {
	if r.Burst <= 0 || r.Every <= 0 {
		return 0, math.MaxInt64
	}
	every = r.Every.Milliseconds()
	return every, ms(r.Now) + int64(r.Burst-1)*every
}

// RevokeSession implements store.Store. The row stays, with the reason,
// until DeleteExpired removes it with the session's expiry.
func (s *Store) RevokeSession(ctx context.Context, handle string, why store.EndReason) error {
	var n int64
	err := s.write(ctx, func(ctx context.Context, q querier) (err error) {
		n, err = affected(q.ExecContext(ctx, s.q.endSession, string(why), handle))
		return err
	})
	if err != nil {
		return unavailable(fmt.Errorf("sqlstore: revoking a session: %w", err))
	}
	if n == 0 {
		return store.ErrNotFound
	}
	return nil
}

// revokeUser ends every live session of a user, advances its session
// epoch and returns the handles. The epoch's update locks the user first,
// as every method that changes a user's records does.
func (s *Store) revokeUser(ctx context.Context, q querier, userID string, why store.EndReason) ([]string, error) {
	if _, err := q.ExecContext(ctx, s.q.endEpoch, userID); err != nil {
		return nil, err
	}
	handles, err := queryHandles(ctx, q, s.q.userHandlesForUpdate, userID)
	if err != nil {
		return nil, err
	}
	if len(handles) == 0 {
		return handles, nil
	}
	if _, err := q.ExecContext(ctx, s.q.endUserSessions, string(why), userID); err != nil {
		return nil, err
	}
	return handles, nil
}

// queryHandles runs a query of session handles.
func queryHandles(ctx context.Context, q querier, query string, args ...any) ([]string, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	handles := []string{}
	for rows.Next() {
		var h string
		if err := rows.Scan(&h); err != nil {
			return nil, err
		}
		handles = append(handles, h)
	}
	return handles, rows.Err()
}

// RevokeUserSessions implements store.Store.
func (s *Store) RevokeUserSessions(ctx context.Context, userID string) ([]string, error) {
	var handles []string
	err := s.inTx(ctx, func(q querier) error {
		var err error
		handles, err = s.revokeUser(ctx, q, userID, store.EndRevoked)
		return err
	})
	if err != nil {
		return nil, unavailable(fmt.Errorf("sqlstore: revoking sessions: %w", err))
	}
	return handles, nil
}

// Code implements store.Store.
func (s *Store) Code(ctx context.Context, kind store.CodeKind, hash store.TokenHash, now time.Time) (store.Code, error) {
	c := store.Code{Hash: hash, Kind: kind}
	var userID sql.NullString
	var flow []byte
	var created, expires int64
	err := s.db.QueryRowContext(ctx, s.q.code, hash[:], string(kind), ms(now)).Scan(&c.Tenant, &userID, &c.LoginID, &c.Email, &flow,
		&c.Attempts, &c.Data, &created, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Code{}, store.ErrNotFound
	} else if err != nil {
		return store.Code{}, unavailable(fmt.Errorf("sqlstore: reading a code: %w", err))
	}
	c.UserID = userID.String
	copy(c.Flow[:], flow)
	c.CreatedAt, c.ExpiresAt = fromMS(created), fromMS(expires)
	return c, nil
}

// ResetPassword implements store.Store. Deleting the token row is what
// uses it up: of racing calls, one deletes it and the others find none.
func (s *Store) ResetPassword(ctx context.Context, token store.TokenHash, passwordHash string, now time.Time) (store.Login, []string, error) {
	var l store.Login
	var handles []string
	err := s.inTx(ctx, func(q querier) error {
		// Lock the user first, then the token: the order every other
		// method takes.
		var userID string
		err := q.QueryRowContext(ctx, s.q.resetUser, token[:]).Scan(&userID)
		if errors.Is(err, sql.ErrNoRows) {
			return store.ErrNotFound
		} else if err != nil {
			return err
		}
		var one int
		if err := q.QueryRowContext(ctx, s.q.userExists, userID).Scan(&one); errors.Is(err, sql.ErrNoRows) {
			return store.ErrNotFound
		} else if err != nil {
			return err
		}
		var expires int64
		err = q.QueryRowContext(ctx, s.q.resetForUpdate, token[:]).Scan(&userID, &expires)
		if errors.Is(err, sql.ErrNoRows) {
			return store.ErrNotFound // used up by a racing call
		} else if err != nil {
			return err
		}
		if expires <= ms(now) {
			return store.ErrNotFound
		}
		if _, err := q.ExecContext(ctx, s.q.deleteUserResets, userID); err != nil {
			return err
		}
		if err := s.resetLogin(ctx, q, userID, passwordHash); err != nil {
			return err
		}
		if handles, err = s.revokeUser(ctx, q, userID, store.EndPasswordReset); err != nil {
			return err
		}
		l, err = scanLogin(q.QueryRowContext(ctx, s.q.passwordLogin, userID))
		return err
	})
	switch {
	case errors.Is(err, store.ErrNotFound):
		return store.Login{}, nil, err
	case err != nil:
		return store.Login{}, nil, unavailable(fmt.Errorf("sqlstore: resetting a password: %w", err))
	}
	return l, handles, nil
}

// resetLogin sets the new password of the user's email and password login,
// which it locks first. Until a reset proves the login's email, whoever
// chose its password may not own the address, and a passkey they added
// would outlast the owner's reset: the owner taking the account back drops
// the user's passkeys, as DeleteLogin deletes a login, with the codes bound
// to them. Their sessions need nothing here: the reset ends every session
// of the user.
func (s *Store) resetLogin(ctx context.Context, q querier, userID, passwordHash string) error {
	var proven bool
	err := q.QueryRowContext(ctx, s.q.passwordForUpdate, userID).Scan(&proven)
	if errors.Is(err, sql.ErrNoRows) {
		return store.ErrNotFound // the user has no password login
	} else if err != nil {
		return err
	}
	if !proven {
		for _, query := range []string{s.q.dropPasskeyCodes, s.q.dropPasskeys} {
			if _, err := q.ExecContext(ctx, query, userID); err != nil {
				return err
			}
		}
	}
	_, err = q.ExecContext(ctx, s.q.setPassword, passwordHash, userID)
	return err
}

// SigningKeys implements store.Store.
func (s *Store) SigningKeys(ctx context.Context, now time.Time) ([]store.SigningKey, error) {
	rows, err := s.db.QueryContext(ctx, s.q.signingKeys, ms(now))
	if err != nil {
		return nil, unavailable(fmt.Errorf("sqlstore: reading signing keys: %w", err))
	}
	defer rows.Close()
	var out []store.SigningKey
	for rows.Next() {
		var k store.SigningKey
		var created, signUntil, verifyUntil int64
		if err := rows.Scan(&k.ID, &k.Algorithm, &k.Material, &created, &signUntil, &verifyUntil); err != nil {
			return nil, unavailable(fmt.Errorf("sqlstore: reading signing keys: %w", err))
		}
		k.CreatedAt, k.SignUntil, k.VerifyUntil = fromMS(created), fromMS(signUntil), fromMS(verifyUntil)
		out = append(out, k)
	}
	if err := rows.Err(); err != nil {
		return nil, unavailable(fmt.Errorf("sqlstore: reading signing keys: %w", err))
	}
	return out, nil
}

// AddSigningKey implements store.Store.
func (s *Store) AddSigningKey(ctx context.Context, k store.SigningKey) error {
	var n int64
	err := s.write(ctx, func(ctx context.Context, q querier) (err error) {
		n, err = affected(q.ExecContext(ctx, s.q.insertKey, k.ID, k.Algorithm, k.Material,
			ms(k.CreatedAt), ms(k.SignUntil), ms(k.VerifyUntil)))
		return err
	})
	if err != nil {
		return unavailable(fmt.Errorf("sqlstore: adding a signing key: %w", err))
	}
	if n == 0 {
		return store.ErrConflict
	}
	return nil
}

// DeleteExpired implements store.Store. It deletes in batches of
// statements, each its own transaction, so it never holds locks long.
func (s *Store) DeleteExpired(ctx context.Context, now time.Time) error {
	for _, query := range []string{
		s.q.deleteExpiredSessionTokens,
		s.q.deleteExpiredSessions,
		s.q.deleteExpiredTokens,
		s.q.deleteExpiredCodes,
		s.q.deleteExpiredKeys,
		s.q.deleteExpiredLimits,
		s.q.tenants.deleteExpiredInvitations,
	} {
		err := s.inTx(ctx, func(q querier) error {
			_, err := q.ExecContext(ctx, query, ms(now))
			return err
		})
		if err != nil {
			return unavailable(fmt.Errorf("sqlstore: deleting expired rows: %w", err))
		}
	}
	return nil
}

// isUniqueViolation recognises a unique-key violation without importing a
// driver: SQLSTATE 23505 (PostgreSQL) through the SQLState method pgx and
// lib/pq errors have.
func isUniqueViolation(err error) bool {
	if err == nil {
		return false
	}
	var state interface{ SQLState() string }
	if errors.As(err, &state) {
		return state.SQLState() == "23505"
	}
	msg := err.Error()
	return strings.Contains(msg, "23505") || strings.Contains(msg, "Error 1062") || strings.Contains(msg, "UNIQUE constraint failed")
}
