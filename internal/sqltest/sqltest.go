// Package sqltest opens throwaway databases for tests of the SQL store:
// SQLite files and in-memory databases, and, when their DSNs are set,
// PostgreSQL schemas and MySQL/MariaDB databases that are dropped when the
// test ends.
//
// PostgreSQL and MySQL tests read AUTH_TEST_POSTGRES and AUTH_TEST_MYSQL.
// Without them the tests skip, except under CI=true, where a missing or
// unreachable database fails the test.
package sqltest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"

	"github.com/latchkit/auth/store/sqlstore"
)

// Environment variables naming the test servers.
const (
	PostgresEnv = "AUTH_TEST_POSTGRES" // e.g. postgres://postgres@127.0.0.1:5432/test
	MySQLEnv    = "AUTH_TEST_MYSQL"    // e.g. root@tcp(127.0.0.1:3306)/test
	// PgBouncerEnv names a PgBouncer in transaction mode in front of the
	// server of AUTH_TEST_POSTGRES, e.g.
	// postgres://postgres@127.0.0.1:6432/test?sslmode=disable.
	PgBouncerEnv = "AUTH_TEST_PGBOUNCER"
)

func name() string {
	b := make([]byte, 6)
	rand.Read(b)
	return "authtest_" + hex.EncodeToString(b)
}

// unavailable skips, or fails in CI.
func unavailable(tb testing.TB, format string, args ...any) {
	tb.Helper()
	if os.Getenv("CI") == "true" {
		tb.Fatalf(format+" (required in CI)", args...)
	}
	tb.Skipf(format, args...)
}

// SQLiteDSN is the modernc.org/sqlite DSN the library recommends for a
// database file: WAL, a busy timeout that queues writers, full sync.
func SQLiteDSN(path string) string {
	return "file:" + path + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)"
}

// SQLiteFile opens a fresh SQLite database file in a temporary directory.
func SQLiteFile(tb testing.TB) *sql.DB {
	tb.Helper()
	db, err := sql.Open("sqlite", SQLiteDSN(filepath.Join(tb.TempDir(), "auth.db")))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

// SQLiteFileDSN is SQLiteFile, for tests that open the database more than
// once: it returns the DSN of a fresh file in a temporary directory.
func SQLiteFileDSN(tb testing.TB) string {
	tb.Helper()
	return SQLiteDSN(filepath.Join(tb.TempDir(), "auth.db"))
}

// SQLiteMemory opens a fresh in-memory SQLite database. It has one
// connection: each connection to ":memory:" is a database of its own.
func SQLiteMemory(tb testing.TB) *sql.DB {
	tb.Helper()
	db, err := sql.Open("sqlite", "file::memory:?_pragma=busy_timeout(10000)")
	if err != nil {
		tb.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	db.SetConnMaxIdleTime(0)
	db.SetConnMaxLifetime(0)
	tb.Cleanup(func() { db.Close() })
	return db
}

// Postgres creates a schema of its own on the server of AUTH_TEST_POSTGRES
// and returns a pool whose connections use it; the schema is dropped at
// the end of the test.
func Postgres(tb testing.TB) *sql.DB {
	tb.Helper()
	dsn := os.Getenv(PostgresEnv)
	if dsn == "" {
		unavailable(tb, "%s is not set", PostgresEnv)
	}
	admin, err := sql.Open("pgx", dsn)
	if err != nil {
		tb.Fatal(err)
	}
	defer admin.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := admin.PingContext(ctx); err != nil {
		unavailable(tb, "PostgreSQL at %s: %v", PostgresEnv, err)
	}
	schema := name()
	if _, err := admin.ExecContext(ctx, "CREATE SCHEMA "+schema); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		admin, err := sql.Open("pgx", dsn)
		if err != nil {
			return
		}
		defer admin.Close()
		admin.Exec("DROP SCHEMA " + schema + " CASCADE")
	})
	u, err := url.Parse(dsn)
	if err != nil {
		tb.Fatalf("%s: %v", PostgresEnv, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	db, err := sql.Open("pgx", u.String())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

// PostgresDSN is Postgres, for tests that need to open the database
// again (from another process, say): it returns the DSN of the schema.
func PostgresDSN(tb testing.TB) string {
	tb.Helper()
	db := Postgres(tb)
	var schema string
	if err := db.QueryRow("SELECT current_schema()").Scan(&schema); err != nil {
		tb.Fatal(err)
	}
	u, _ := url.Parse(os.Getenv(PostgresEnv))
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// PgBouncerQueryExecMode is the pgx query mode that works behind a
// transaction-pooling proxy: the extended protocol with the unnamed
// statement, no prepared statements kept on a server connection that the
// next transaction may not get.
const PgBouncerQueryExecMode = "exec"

// PgBouncerDSN creates a database of its own on the server of
// AUTH_TEST_POSTGRES and returns the DSN that reaches it through the
// PgBouncer of AUTH_TEST_PGBOUNCER, in the query mode that works there
// (PgBouncerQueryExecMode). The database is dropped at the end of the
// test. (A database rather than a schema: PgBouncer does not pass a
// search_path on to the server.)
func PgBouncerDSN(tb testing.TB) string {
	tb.Helper()
	bouncer := os.Getenv(PgBouncerEnv)
	if bouncer == "" {
		unavailable(tb, "%s is not set", PgBouncerEnv)
	}
	direct := os.Getenv(PostgresEnv)
	if direct == "" {
		unavailable(tb, "%s is not set (%s names a PgBouncer in front of it)", PostgresEnv, PgBouncerEnv)
	}
	admin, err := sql.Open("pgx", direct)
	if err != nil {
		tb.Fatal(err)
	}
	defer admin.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := admin.PingContext(ctx); err != nil {
		unavailable(tb, "PostgreSQL at %s: %v", PostgresEnv, err)
	}
	dbName := name()
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+dbName); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		admin, err := sql.Open("pgx", direct)
		if err != nil {
			return
		}
		defer admin.Close()
		// FORCE: PgBouncer keeps server connections to it.
		admin.Exec("DROP DATABASE " + dbName + " WITH (FORCE)")
	})
	u, err := url.Parse(bouncer)
	if err != nil {
		tb.Fatalf("%s: %v", PgBouncerEnv, err)
	}
	u.Path = "/" + dbName
	q := u.Query()
	if q.Get("default_query_exec_mode") == "" {
		q.Set("default_query_exec_mode", PgBouncerQueryExecMode)
	}
	u.RawQuery = q.Encode()
	dsn := u.String()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	if err := db.PingContext(ctx); err != nil {
		unavailable(tb, "PgBouncer at %s: %v", PgBouncerEnv, err)
	}
	return dsn
}

// PgBouncer opens a pool on a database of its own through the PgBouncer
// of AUTH_TEST_PGBOUNCER (see PgBouncerDSN).
func PgBouncer(tb testing.TB) *sql.DB {
	tb.Helper()
	db, err := sql.Open("pgx", PgBouncerDSN(tb))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

// PgBouncerBackend is PostgreSQL through PgBouncer in transaction mode.
// It is not among Backends: the tests that run there say so.
var PgBouncerBackend = Backend{"pgbouncer", sqlstore.Postgres, PgBouncer}

// MySQL creates a database of its own on the server of AUTH_TEST_MYSQL
// and returns a pool for it; the database is dropped at the end of the
// test.
func MySQL(tb testing.TB) *sql.DB {
	tb.Helper()
	db, err := sql.Open("mysql", MySQLDSN(tb))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

// MySQLDSN is MySQL, for tests that need to open the database again: it
// creates the database and returns its DSN, for go-sql-driver/mysql.
func MySQLDSN(tb testing.TB) string {
	tb.Helper()
	dsn := os.Getenv(MySQLEnv)
	if dsn == "" {
		unavailable(tb, "%s is not set", MySQLEnv)
	}
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		tb.Fatalf("%s: %v", MySQLEnv, err)
	}
	admin, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		tb.Fatal(err)
	}
	defer admin.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := admin.PingContext(ctx); err != nil {
		unavailable(tb, "MySQL at %s: %v", MySQLEnv, err)
	}
	dbName := name()
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+dbName); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		admin, err := sql.Open("mysql", cfg.FormatDSN())
		if err != nil {
			return
		}
		defer admin.Close()
		admin.Exec("DROP DATABASE " + dbName)
	})
	cfg.DBName = dbName
	return cfg.FormatDSN()
}

// Backend is a way to open a fresh database for the SQL store.
type Backend struct {
	Name    string
	Dialect sqlstore.Dialect
	Open    func(testing.TB) *sql.DB
}

// Backends lists every backend, for table tests.
var Backends = []Backend{
	{"sqlite-file", sqlstore.SQLite, SQLiteFile},
	{"sqlite-memory", sqlstore.SQLite, SQLiteMemory},
	{"postgres", sqlstore.Postgres, Postgres},
	{"mysql", sqlstore.MySQL, MySQL},
}

// NewStore opens a fresh, migrated store on b.
func NewStore(tb testing.TB, b Backend) *sqlstore.Store {
	tb.Helper()
	s, err := sqlstore.New(b.Open(tb), b.Dialect)
	if err != nil {
		tb.Fatal(err)
	}
	if err := s.Migrate(context.Background()); err != nil {
		tb.Fatalf("migrate %s: %v", b.Name, err)
	}
	return s
}
