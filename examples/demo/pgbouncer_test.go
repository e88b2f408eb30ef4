package main

import (
	"fmt"
	"net/url"
	"testing"

	"github.com/latchkit/auth/internal/sqltest"
)

// TestPgBouncerRestart starts the demo on a plain DSN through PgBouncer in
// transaction mode, signs up, in and refreshes, stops it, and does the
// same with a second process. PgBouncer hands the second process the
// server connections the first one used, with whatever it left on them: a
// statement the first prepared by name there (pgx names them after their
// text) makes the second one's identical statement fail with "prepared
// statement ... already exists". It needs AUTH_TEST_PGBOUNCER (CI starts
// one).
func TestPgBouncerRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: TestPgBouncerRestart builds the demo and starts it twice")
	}
	db := plainDSN(t, sqltest.PgBouncerDSN(t))
	bin := buildDemo(t)
	for start := range 2 {
		ok := t.Run(fmt.Sprintf("start %d", start+1), func(t *testing.T) {
			d := startDemo(t, bin, db)
			email := newEmail("pgbouncer", start)
			okSession(t, "sign-up", d.signUp(email, "old password 1"))
			_, refresh := okSession(t, "sign-in", d.signIn(email, "old password 1"))
			okSession(t, "refresh", d.refresh(refresh))
			d.kill()
		})
		if !ok {
			return
		}
	}
}

// plainDSN is dsn without a pgx query mode: as an operator would write
// it, leaving the demo to find the proxy.
func plainDSN(t *testing.T, dsn string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Del("default_query_exec_mode")
	u.RawQuery = q.Encode()
	return u.String()
}
