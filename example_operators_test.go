package auth_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/store"
	"github.com/latchkit/auth/store/memstore"
)

// Page through the users, newest first, as an operators' page would.
func ExampleAuth_ListUsers() {
	a, err := auth.New(auth.Config{Store: memstore.New()})
	if err != nil {
		log.Fatal(err)
	}
	srv := httptest.NewServer(a)
	defer srv.Close()
	for _, email := range []string{"ada@example.com", "grace@example.org", "alan@example.com"} {
		res, err := http.Post(srv.URL+"/auth/signup", "application/json", strings.NewReader(
			`{"formFields":[{"id":"email","value":"`+email+`"},{"id":"password","value":"analytical engine 1"}]}`))
		if err != nil {
			log.Fatal(err)
		}
		res.Body.Close()
	}

	ctx := context.Background()
	q := store.UserQuery{Newest: true, Limit: 2}
	for {
		page, err := a.ListUsers(ctx, q)
		if err != nil {
			log.Fatal(err)
		}
		for _, u := range page.Users {
			fmt.Println(u.Email)
		}
		if page.Next == "" {
			break
		}
		q.After = page.Next
	}
	n, _ := a.CountUsers(ctx, store.UserQuery{Email: "@example.com"})
	fmt.Println(n, "at example.com")
	// Output:
	// alan@example.com
	// grace@example.org
	// ada@example.com
	// 2 at example.com
}
