package dashboard_test

import (
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/dashboard"
	"github.com/latchkit/auth/roles"
	"github.com/latchkit/auth/store/memstore"
)

// The dashboard is served beside the other routes: the shell at
// /auth/dashboard, and its API to the holder of the key, or to a session
// whose user holds the "dashboard" permission through a role.
func Example() {
	a, err := auth.New(auth.Config{
		Store:     memstore.New(),
		Roles:     roles.New(roles.Config{}),
		Dashboard: dashboard.New(dashboard.Config{APIKey: "an-operators-key-of-32-characters"}),
	})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/auth/", a)
	srv := httptest.NewServer(mux)
	defer srv.Close()

	count := func(key string) {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/auth/dashboard/api/users/count", nil)
		req.Header.Set("Authorization", "Bearer "+key)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			log.Fatal(err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		fmt.Println(res.StatusCode, string(body))
	}
	count("an-operators-key-of-32-characters")
	count("a guess")
	// Output:
	// 200 {"status":"OK","count":0}
	// 401 {"message":"Unauthorised access"}
}
