package sqlstore_test

import (
	"testing"

	"github.com/latchkit/auth/internal/sqltest"
	"github.com/latchkit/auth/store"
	"github.com/latchkit/auth/store/sqlstore"
	"github.com/latchkit/auth/store/storetest"
)

// pgbouncer is PostgreSQL behind PgBouncer in transaction mode, as
// Supabase, Neon and RDS Proxy deployments run it: each transaction may
// get another server connection, so nothing may rely on a session's state
// (prepared statements, session locks, SET) outliving its transaction.
var pgbouncer = sharedBackend{"pgbouncer", "pgx", sqlstore.Postgres, sqltest.PgBouncerDSN}

// TestPgBouncer runs the store's conformance suite, the instances test and
// concurrent migrations behind PgBouncer in transaction mode. It needs
// AUTH_TEST_PGBOUNCER (CI starts one).
func TestPgBouncer(t *testing.T) {
	t.Run("conformance", func(t *testing.T) {
		// PostgreSQL's own run passes its statements in a tenant too.
		storetest.RunOnce(t, func(t *testing.T) store.Store { return sqltest.NewStore(t, sqltest.PgBouncerBackend) })
	})
	t.Run("instances", func(t *testing.T) {
		b := pgbouncer
		t.Run("round robin", func(t *testing.T) { testRoundRobin(t, b) })
		t.Run("concurrent refresh", func(t *testing.T) { testConcurrentRefresh(t, b) })
		t.Run("theft", func(t *testing.T) { testTheftAcrossInstances(t, b) })
		t.Run("revoke all sessions", func(t *testing.T) { testRevokeAcrossInstances(t, b) })
		t.Run("signing keys", func(t *testing.T) { testSigningKeysAcrossInstances(t, b) })
	})
	t.Run("migrate race", func(t *testing.T) {
		steps, err := sqlstore.Migrations(sqlstore.Postgres)
		if err != nil {
			t.Fatal(err)
		}
		for round := range 5 {
			migrateRace(t, pgbouncer, round, 4, len(steps))
		}
	})
}
