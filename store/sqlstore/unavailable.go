package sqlstore

import (
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/latchkit/auth/store"
)

// unavailableError is a failure to reach the database, or its refusal to
// serve now. It matches store.ErrUnavailable and unwraps to its cause.
type unavailableError struct{ err error }

func (e *unavailableError) Error() string { return "store unavailable: " + e.err.Error() }

func (e *unavailableError) Unwrap() []error { return []error{store.ErrUnavailable, e.err} }

// unavailable returns err wrapped to match store.ErrUnavailable if it says
// the database is out of reach, and err itself otherwise (nil stays nil).
func unavailable(err error) error {
	if err == nil || errors.Is(err, store.ErrUnavailable) || !outage(err) {
		return err
	}
	return &unavailableError{err}
}

// outage reports an error of the connection rather than of the statement:
// the server could not be reached, closed the connection, or says it is
// shutting down, starting up or out of connections. It recognises the
// drivers' errors by their standard interfaces, SQLSTATE and messages,
// without importing a driver.
func outage(err error) bool {
	var state interface{ SQLState() string }
	if errors.As(err, &state) {
		c := state.SQLState()
		switch {
		case strings.HasPrefix(c, "08"): // connection exception
			return true
		case c == "57P01", c == "57P02", c == "57P03": // admin or crash shutdown, cannot connect now
			return true
		case c == "53300": // too many connections
			return true
		}
		return false
	}
	var netErr net.Error
	var opErr *net.OpError
	switch {
	case errors.Is(err, driver.ErrBadConn), errors.Is(err, sql.ErrConnDone):
		return true
	case errors.As(err, &opErr), errors.As(err, &netErr):
		return true
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.ECONNABORTED), errors.Is(err, syscall.EPIPE):
		return true
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		// The server closed the connection mid-answer.
		return true
	}
	msg := err.Error()
	for _, m := range outageMessages {
		if strings.Contains(msg, m) {
			return true
		}
	}
	return false
}

// outageMessages are the drivers' outage errors that have no SQLSTATE,
// type or sentinel in common: pgx's closed connection and failed connect,
// go-sql-driver/mysql's broken connection and the server's "too many
// connections" (1040) and shutdown (1053), and SQLite's lock held past
// the busy timeout.
var outageMessages = []string{
	"conn closed",
	"failed to connect to",
	"invalid connection",
	"Error 1040",
	"Error 1053",
	"database is locked",
	"(SQLITE_BUSY)",
}
