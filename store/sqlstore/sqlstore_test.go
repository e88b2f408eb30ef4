package sqlstore_test

import (
	"testing"

	"github.com/latchkit/auth/internal/sqltest"
	"github.com/latchkit/auth/store"
	"github.com/latchkit/auth/store/storetest"
)

func TestConformance(t *testing.T) {
	for _, b := range sqltest.Backends {
		t.Run(b.Name, func(t *testing.T) {
			newStore := func(t *testing.T) store.Store { return sqltest.NewStore(t, b) }
			if b.Name == "sqlite-memory" {
				// The file's run passes SQLite's statements in a tenant.
				storetest.RunOnce(t, newStore)
				return
			}
			storetest.Run(t, newStore)
		})
	}
}
