package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"time"

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
	driver, dsn, ph := "pgx", db, []string{"$1", "$2", "$3"}
	if path, ok := strings.CutPrefix(db, "sqlite:"); ok {
		// The demo's settings: WAL, busy timeout, synchronous=FULL.
		driver, ph = "sqlite", []string{"?", "?", "?"}
		dsn = "file:" + path + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)"
	}
	sqldb, err := sql.Open(driver, dsn)
	if err != nil {
		return result{}, err
	}
	defer sqldb.Close()
	sqldb.SetMaxOpenConns(c)
	sqldb.SetMaxIdleConns(c)
	if _, err := sqldb.ExecContext(ctx, "CREATE TABLE "+table+" (id INTEGER PRIMARY KEY, cur TEXT NOT NULL)"); err != nil {
		return result{}, fmt.Errorf("creating the scratch table: %w", err)
	}
	defer sqldb.ExecContext(context.Background(), "DROP TABLE "+table)
	cur := make([]string, c)
	for w := range c {
		cur[w] = token()
		if _, err := sqldb.ExecContext(ctx, "INSERT INTO "+table+" (id, cur) VALUES ("+ph[0]+", "+ph[1]+")", w, cur[w]); err != nil {
			return result{}, err
		}
	}
	q := "UPDATE " + table + " SET cur = " + ph[0] + " WHERE id = " + ph[1] + " AND cur = " + ph[2] + " RETURNING id"
	r := runPhase(ctx, "bare rotate (harness)", c, d, func(ctx context.Context, w int) outcome {
		next := token()
		var id int
		if err := sqldb.QueryRowContext(ctx, q, next, w, cur[w]).Scan(&id); errors.Is(err, sql.ErrNoRows) {
			return outcome{err: "no row", stop: true}
		} else if err != nil {
			return outcome{err: "sql error"}
		}
		cur[w] = next
		return outcome{}
	})
	return r, nil
}

// token is a fresh value like the stored SHA-256 of a refresh token.
func token() string {
	b := make([]byte, 32)
	rand.Read(b)
	return hex.EncodeToString(b)
}
