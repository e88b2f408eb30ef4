package sqlstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/latchkit/auth/store"
)

// The errors of a database out of reach match store.ErrUnavailable, and
// keep their cause; the errors of a statement do not.
func TestUnavailableClassifies(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{}}
	reset := &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"admin shutdown", &pgconn.PgError{Code: "57P01"}, true},
		{"crash shutdown", &pgconn.PgError{Code: "57P02"}, true},
		{"starting up", &pgconn.PgError{Code: "57P03"}, true},
		{"connection failure", &pgconn.PgError{Code: "08006"}, true},
		{"too many connections", &pgconn.PgError{Code: "53300"}, true},
		{"refused", refused, true},
		{"reset", fmt.Errorf("failed to receive message: %w", reset), true},
		{"bad conn", driver.ErrBadConn, true},
		{"conn done", sql.ErrConnDone, true},
		{"unexpected EOF", fmt.Errorf("receive: %w", io.ErrUnexpectedEOF), true},
		{"mysql invalid connection", mysql.ErrInvalidConn, true},
		{"mysql too many connections", &mysql.MySQLError{Number: 1040, Message: "Too many connections"}, true},
		{"sqlite busy", errors.New("database is locked (5) (SQLITE_BUSY)"), true},

		{"unique violation", &pgconn.PgError{Code: "23505"}, false},
		{"deadlock", &pgconn.PgError{Code: "40P01"}, false},
		{"syntax", &pgconn.PgError{Code: "42601"}, false},
		{"mysql duplicate", &mysql.MySQLError{Number: 1062}, false},
		{"no rows", sql.ErrNoRows, false},
		{"not found", store.ErrNotFound, false},
		{"canceled", context.Canceled, false},
		{"other", errors.New("sqlstore: something else"), false},
	} {
		err := unavailable(fmt.Errorf("sqlstore: doing it: %w", c.err))
		if got := errors.Is(err, store.ErrUnavailable); got != c.want {
			t.Errorf("%s: matches ErrUnavailable %v, want %v (%v)", c.name, got, c.want, err)
		}
		if !errors.Is(err, c.err) {
			t.Errorf("%s: the cause is lost: %v", c.name, err)
		}
	}
	if unavailable(nil) != nil {
		t.Error("unavailable(nil) is not nil")
	}
}
