package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"runtime"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib" // the bare rotate statement on PostgreSQL
	"golang.org/x/crypto/argon2"
	_ "modernc.org/sqlite" // and on SQLite
)

// rawArgon2 measures argon2Rate for up to 5 s.
func rawArgon2(d time.Duration) result {
	d = min(d, 5*time.Second)
	log(fmt.Sprintf("raw argon2id in the harness for %s", d))
	return argon2Rate(d)
}

// argon2Rate hashes at the library's default parameters on GOMAXPROCS
// goroutines for d.
func argon2Rate(d time.Duration) result {
	salt := make([]byte, 16)
	rand.Read(salt)
	return runPhase(context.Background(), "argon2id raw (harness)", runtime.GOMAXPROCS(0), d, func(context.Context, int) outcome {
		argon2.IDKey([]byte(password), salt, 2, 19*1024, 1, 32)
		return outcome{}
	})
}

// bareRotate runs the rotation's statement alone, a conditional UPDATE ...
// RETURNING, on a new scratch table in the demo's database: each worker
// swaps its own row's value, as each client rotates its own session.
func bareRotate(ctx context.Context, db, table string, c int, d time.Duration) (result, error) {
	sqldb, ph, returning, err := openSQL(db)
	if err != nil {
		return result{}, err
	}
	defer sqldb.Close()
	sqldb.SetMaxOpenConns(c)
	sqldb.SetMaxIdleConns(c)
	cur, err := createScratch(ctx, sqldb, ph, table, c)
	defer sqldb.ExecContext(context.Background(), "DROP TABLE "+table)
	if err != nil {
		return result{}, err
	}
	q := rotateStatement(table, ph, returning)
	r := runPhase(ctx, "bare rotate (harness)", c, d, func(ctx context.Context, w int) outcome {
		next := token()
		err := rotate(ctx, sqldb, q, returning, w, cur[w], next)
		if errors.Is(err, sql.ErrNoRows) {
			return outcome{err: "no row", stop: true}
		} else if err != nil {
			return outcome{err: "sql error"}
		}
		cur[w] = next
		return outcome{}
	})
	return r, nil
}

// openSQL opens the demo's database with its settings, and returns the
// placeholders of its dialect and the clause that returns an updated row
// (empty for MySQL, which cannot).
func openSQL(db string) (*sql.DB, []string, string, error) {
	driver, dsn, ph, returning := "pgx", db, []string{"$1", "$2", "$3"}, " RETURNING id"
	if path, ok := strings.CutPrefix(db, "sqlite:"); ok {
		// The demo's settings: WAL, busy timeout, synchronous=FULL.
		driver, ph = "sqlite", []string{"?", "?", "?"}
		dsn = "file:" + path + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)"
	}
	if isMySQL(db) {
		var err error
		if dsn, err = mysqlDSN(db); err != nil {
			return nil, nil, "", err
		}
		driver, ph, returning = "mysql", []string{"?", "?", "?"}, ""
	}
	sqldb, err := sql.Open(driver, dsn)
	return sqldb, ph, returning, err
}

// forgetLimits empties the demo's rate-limit table, which it keeps in the
// database: each run signs its users up from the same address, and must
// not find the allowance the runs before it spent.
func forgetLimits(ctx context.Context, db string) error {
	sqldb, _, _, err := openSQL(db)
	if err != nil {
		return err
	}
	defer sqldb.Close()
	if _, err := sqldb.ExecContext(ctx, "DELETE FROM auth_rate_limits"); err != nil {
		return fmt.Errorf("forgetting the rate limits of earlier runs: %w", err)
	}
	return nil
}

// mysqlDSN turns mysql://user:pass@host:port/db into the DSN of
// go-sql-driver/mysql, with the settings the demo uses.
func mysqlDSN(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || strings.Trim(u.Path, "/") == "" {
		return "", fmt.Errorf("-db: want mysql://user:pass@host:port/database")
	}
	cfg := mysql.NewConfig()
	cfg.Net, cfg.Addr, cfg.DBName = "tcp", u.Host, strings.Trim(u.Path, "/")
	cfg.InterpolateParams = true
	if u.User != nil {
		cfg.User = u.User.Username()
		cfg.Passwd, _ = u.User.Password()
	}
	return cfg.FormatDSN(), nil
}

// token is a fresh value like the stored SHA-256 of a refresh token.
func token() string {
	b := make([]byte, 32)
	rand.Read(b)
	return hex.EncodeToString(b)
}
