package sqltest

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"sync/atomic"
	"testing"
)

// Counter counts the calls a *sql.DB makes to its driver: statements,
// queries, and transaction begins and ends, each one round trip to a
// server database.
type Counter struct{ n atomic.Int64 }

// Load returns the count so far.
func (c *Counter) Load() int64 { return c.n.Load() }

// Counted opens the DSN with the named driver through a wrapper that
// counts round trips.
func Counted(tb testing.TB, driverName, dsn string) (*sql.DB, *Counter) {
	tb.Helper()
	c := &Counter{}
	return wrapped(tb, driverName, dsn, c, nil), c
}

// Failing opens the DSN with the named driver through a wrapper that
// fails each statement for which fail returns an error, with that error
// and without sending it: a statement of the caller's choice fails, and
// the connection and its transaction are as they were.
func Failing(tb testing.TB, driverName, dsn string, fail func(query string) error) *sql.DB {
	tb.Helper()
	return wrapped(tb, driverName, dsn, &Counter{}, fail)
}

func wrapped(tb testing.TB, driverName, dsn string, c *Counter, fail func(string) error) *sql.DB {
	tb.Helper()
	probe, err := sql.Open(driverName, dsn)
	if err != nil {
		tb.Fatal(err)
	}
	d := probe.Driver()
	probe.Close()
	db := sql.OpenDB(&countingConnector{dsn: dsn, d: d, c: c, fail: fail})
	tb.Cleanup(func() { db.Close() })
	return db
}

type countingConnector struct {
	dsn  string
	d    driver.Driver
	c    *Counter
	fail func(query string) error // nil: none fails
}

func (k *countingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	var conn driver.Conn
	var err error
	if dc, ok := k.d.(driver.DriverContext); ok {
		var cn driver.Connector
		if cn, err = dc.OpenConnector(k.dsn); err != nil {
			return nil, err
		}
		conn, err = cn.Connect(ctx)
	} else {
		conn, err = k.d.Open(k.dsn)
	}
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: conn, c: k.c, fail: k.fail}, nil
}

func (k *countingConnector) Driver() driver.Driver { return k.d }

// countingConn forwards to the real connection, counting each call that
// goes to the server, unless fail stops it first. It offers only the
// context interfaces, so database/sql always comes through them.
type countingConn struct {
	driver.Conn
	c    *Counter
	fail func(query string) error
}

func (c *countingConn) failed(q string) error {
	if c.fail == nil {
		return nil
	}
	return c.fail(q)
}

func (c *countingConn) QueryContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	if err := c.failed(q); err != nil {
		return nil, err
	}
	c.c.n.Add(1)
	return c.Conn.(driver.QueryerContext).QueryContext(ctx, q, args)
}

func (c *countingConn) ExecContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Result, error) {
	if err := c.failed(q); err != nil {
		return nil, err
	}
	c.c.n.Add(1)
	return c.Conn.(driver.ExecerContext).ExecContext(ctx, q, args)
}

func (c *countingConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	c.c.n.Add(1)
	tx, err := c.Conn.(driver.ConnBeginTx).BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return &countingTx{Tx: tx, c: c.c}, nil
}

func (c *countingConn) CheckNamedValue(v *driver.NamedValue) error {
	if ch, ok := c.Conn.(driver.NamedValueChecker); ok {
		return ch.CheckNamedValue(v)
	}
	return driver.ErrSkip
}

func (c *countingConn) ResetSession(ctx context.Context) error {
	if r, ok := c.Conn.(driver.SessionResetter); ok {
		return r.ResetSession(ctx)
	}
	return nil
}

type countingTx struct {
	driver.Tx
	c *Counter
}

func (t *countingTx) Commit() error   { t.c.n.Add(1); return t.Tx.Commit() }
func (t *countingTx) Rollback() error { t.c.n.Add(1); return t.Tx.Rollback() }
