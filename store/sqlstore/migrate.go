package sqlstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"embed"
	"fmt"
	"io/fs"
	"math"
	mrand "math/rand/v2"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"
)

//go:embed migrations
var migrations embed.FS

// Migration is one versioned step of the schema.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// Migrations returns the schema steps of a dialect in order, for
// applications that run migrations with their own tool.
func Migrations(d Dialect) ([]Migration, error) {
	dir := path.Join("migrations", d.String())
	entries, err := fs.ReadDir(migrations, dir)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: no migrations for %v", d)
	}
	var out []Migration
	for _, e := range entries {
		v, _, ok := strings.Cut(e.Name(), "_")
		n, err := strconv.Atoi(v)
		if !ok || err != nil || !strings.HasSuffix(e.Name(), ".sql") {
			continue
		}
		b, err := fs.ReadFile(migrations, path.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		out = append(out, Migration{Version: n, Name: e.Name(), SQL: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	return out, nil
}

// Migrate brings the schema up to date: it creates auth_schema_migrations
// if needed and applies, in order, each migration it does not record.
// Instances starting together may all call it: a lock on the database
// lets one apply each step. On SQLite it also turns on WAL mode.
//
// Each step is one transaction, except on MySQL, which commits schema
// changes as it makes them; there a lock keeps instances from racing. On
// SQLite a step runs with foreign key enforcement off on its connection,
// as SQLite's procedure for rebuilding a table asks; if the application
// had turned it on, the keys are checked before the step commits.
func (s *Store) Migrate(ctx context.Context) error {
	return s.migrate(ctx, math.MaxInt)
}

// migrate applies the missing migrations up to version last.
func (s *Store) migrate(ctx context.Context, last int) error {
	all, err := Migrations(s.dialect)
	if err != nil {
		return err
	}
	var steps []Migration
	for _, m := range all {
		if m.Version <= last {
			steps = append(steps, m)
		}
	}
	if s.dialect == SQLite {
		if err := s.enableWAL(ctx); err != nil {
			return fmt.Errorf("sqlstore: enabling WAL: %w", err)
		}
	}
	create := `CREATE TABLE IF NOT EXISTS auth_schema_migrations (version INTEGER PRIMARY KEY, applied_at BIGINT NOT NULL)`
	if s.dialect == MySQL {
		_, err = s.db.ExecContext(ctx, create)
	} else {
		// Racing CREATE TABLE IF NOT EXISTS statements can fail: on
		// PostgreSQL with a unique violation in pg_type, on SQLite with
		// SQLITE_BUSY outside a transaction that took the write lock
		// first. Create the table under the lock that serialises the
		// steps below.
		err = s.inTx(ctx, func(q querier) error {
			if s.dialect == Postgres {
				if _, err := q.ExecContext(ctx, "SELECT pg_advisory_xact_lock(7305161)"); err != nil {
					return err
				}
			}
			_, err := q.ExecContext(ctx, create)
			return err
		})
	}
	if err != nil {
		return fmt.Errorf("sqlstore: creating auth_schema_migrations: %w", err)
	}
	// MySQL commits DDL implicitly, so its migrations cannot run in a
	// transaction; a named lock keeps instances from racing instead.
	if s.dialect == MySQL {
		conn, err := s.db.Conn(ctx)
		if err != nil {
			return err
		}
		defer conn.Close()
		var got int
		if err := conn.QueryRowContext(ctx, "SELECT GET_LOCK('auth_schema_migrations', 60)").Scan(&got); err != nil || got != 1 {
			return fmt.Errorf("sqlstore: taking the migration lock: %v", err)
		}
		defer conn.ExecContext(context.Background(), "SELECT RELEASE_LOCK('auth_schema_migrations')")
		for _, m := range steps {
			var n int
			if err := conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM auth_schema_migrations WHERE version = ?", m.Version).Scan(&n); err != nil {
				return err
			}
			if n > 0 {
				continue
			}
			for _, stmt := range statements(m.SQL) {
				if _, err := conn.ExecContext(ctx, stmt); err != nil {
					return fmt.Errorf("sqlstore: migration %s: %w", m.Name, err)
				}
			}
			if _, err := conn.ExecContext(ctx, "INSERT INTO auth_schema_migrations (version, applied_at) VALUES (?, ?)",
				m.Version, time.Now().UnixMilli()); err != nil {
				return err
			}
		}
		return nil
	}
	for _, m := range steps {
		err := s.migrationTx(ctx, func(q querier) error {
			if s.dialect == Postgres {
				// Serialises concurrent Migrate calls until commit.
				if _, err := q.ExecContext(ctx, "SELECT pg_advisory_xact_lock(7305161)"); err != nil {
					return err
				}
			}
			var n int
			check := "SELECT COUNT(*) FROM auth_schema_migrations WHERE version = ?"
			insert := "INSERT INTO auth_schema_migrations (version, applied_at) VALUES (?, ?)"
			if s.dialect == Postgres {
				check = "SELECT COUNT(*) FROM auth_schema_migrations WHERE version = $1"
				insert = "INSERT INTO auth_schema_migrations (version, applied_at) VALUES ($1, $2)"
			}
			if err := q.QueryRowContext(ctx, check, m.Version).Scan(&n); err != nil {
				return err
			}
			if n > 0 {
				return nil
			}
			for _, stmt := range statements(m.SQL) {
				if _, err := q.ExecContext(ctx, stmt); err != nil {
					return fmt.Errorf("%s: %w", m.Name, err)
				}
			}
			_, err := q.ExecContext(ctx, insert, m.Version, time.Now().UnixMilli())
			return err
		})
		if err != nil {
			return fmt.Errorf("sqlstore: migration: %w", err)
		}
	}
	return nil
}

// enableWAL turns on SQLite's WAL mode. Converting a database takes an
// exclusive lock, and SQLite answers a connection that asks while another
// is converting with SQLITE_BUSY at once, whatever the busy timeout; so
// instances starting together on a new file try again.
func (s *Store) enableWAL(ctx context.Context) error {
	for attempt := 1; ; attempt++ {
		var mode string
		err := s.db.QueryRowContext(ctx, "PRAGMA journal_mode=WAL").Scan(&mode)
		if err == nil || attempt == 200 || !strings.Contains(err.Error(), "database is locked") {
			return err
		}
		select {
		case <-time.After(time.Duration(1+mrand.IntN(10)) * time.Millisecond):
		case <-ctx.Done():
			return err
		}
	}
}

// statements splits a migration file into statements, dropping comments.
func statements(src string) []string {
	var lines []string
	for _, l := range strings.Split(src, "\n") {
		if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "--") {
			lines = append(lines, l)
		}
	}
	var out []string
	for _, st := range strings.Split(strings.Join(lines, "\n"), ";") {
		if st = strings.TrimSpace(st); st != "" {
			out = append(out, st)
		}
	}
	return out
}

// migrationTx runs f, one migration step, in a write transaction. On
// SQLite, which cannot switch foreign key enforcement inside a
// transaction, it turns enforcement off on the connection first if the
// application turned it on, checks every foreign key before committing,
// and turns it on again after.
func (s *Store) migrationTx(ctx context.Context, f func(q querier) error) error {
	if s.dialect != SQLite {
		return s.inTx(ctx, f)
	}
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	var enforced bool
	if err := conn.QueryRowContext(ctx, "PRAGMA foreign_keys").Scan(&enforced); err != nil {
		return err
	}
	if enforced {
		if _, err := conn.ExecContext(ctx, "PRAGMA foreign_keys = OFF"); err != nil {
			return err
		}
		// A fresh context: the connection goes back to the pool, and must
		// not go back without the application's setting.
		defer func() {
			if _, err := conn.ExecContext(context.Background(), "PRAGMA foreign_keys = ON"); err != nil {
				conn.Raw(func(any) error { return driver.ErrBadConn })
			}
		}()
	}
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return err
	}
	err = f(conn)
	if err == nil && enforced {
		err = foreignKeyCheck(ctx, conn)
	}
	if err == nil {
		_, err = conn.ExecContext(ctx, "COMMIT")
	}
	if err != nil {
		conn.ExecContext(context.Background(), "ROLLBACK")
		return err
	}
	return nil
}

// foreignKeyCheck reports a row of a SQLite database whose foreign key
// names no row.
func foreignKeyCheck(ctx context.Context, q querier) error {
	rows, err := q.QueryContext(ctx, "PRAGMA foreign_key_check")
	if err != nil {
		return err
	}
	defer rows.Close()
	if rows.Next() {
		var table, parent string
		var rowid sql.NullInt64
		var fk int
		if err := rows.Scan(&table, &rowid, &parent, &fk); err != nil {
			return err
		}
		return fmt.Errorf("a row of %s (rowid %v) refers to a missing row of %s", table, rowid.Int64, parent)
	}
	return rows.Err()
}
