package roles_test

import (
	"context"
	"fmt"
	"log"
	"net/http"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/roles"
	"github.com/latchkit/auth/store/memstore"
)

// A recipe value is both the setting and the Go API: give it to the
// Config, keep it, and guard routes with its rules.
func Example() {
	rr := roles.New(roles.Config{})
	a, err := auth.New(auth.Config{Store: memstore.New(), Roles: rr})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	if _, err := rr.CreateRole(ctx, "admin", "posts:write", "posts:read"); err != nil {
		log.Fatal(err)
	}
	if _, err := rr.Give(ctx, "user-1", "admin"); err != nil {
		log.Fatal(err)
	}
	roleList, permissions, err := rr.UserRoles(ctx, "user-1")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(roleList, permissions)

	mux := http.NewServeMux()
	mux.Handle("/auth/", a)
	mux.Handle("POST /api/posts", a.RequireSession(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Only sessions whose token carries posts:write get here.
	}), roles.RequirePermission("posts:write")))
	// Output: [admin] [posts:write posts:read]
}
