package auth_test

import (
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/store/memstore"
)

// Mount the handler and protect a route. The client signs up in header
// mode, then calls the protected route with its access token.
func Example() {
	a, err := auth.New(auth.Config{Store: memstore.New()})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/auth/", a)
	mux.Handle("GET /api/hello", a.RequireSession(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s, _ := auth.SessionFromContext(r.Context())
		u, _ := a.UserByID(r.Context(), s.UserID)
		fmt.Fprintf(w, "hello %s", u.Email)
	})))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	req, _ := http.NewRequest("POST", srv.URL+"/auth/signup", strings.NewReader(
		`{"formFields":[{"id":"email","value":"ada@example.com"},{"id":"password","value":"analytical engine 1"}]}`))
	req.Header.Set("st-auth-mode", "header")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		log.Fatal(err)
	}
	res.Body.Close()
	access := res.Header.Get("st-access-token")

	req, _ = http.NewRequest("GET", srv.URL+"/api/hello", nil)
	req.Header.Set("Authorization", "Bearer "+access)
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		log.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	fmt.Println(res.StatusCode, string(body))
	// Output: 200 hello ada@example.com
}

// A request without a session is refused with the protocol's 401, which
// the frontend SDKs understand.
func ExampleAuth_RequireSession() {
	a, err := auth.New(auth.Config{Store: memstore.New()})
	if err != nil {
		log.Fatal(err)
	}
	h := a.RequireSession(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "secret")
	}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/api/secret", nil))
	fmt.Println(rec.Code, rec.Body.String())
	// Output: 401 {"message":"unauthorised"}
}

// OptionalSession serves signed-in and signed-out visitors alike.
func ExampleAuth_OptionalSession() {
	a, err := auth.New(auth.Config{Store: memstore.New()})
	if err != nil {
		log.Fatal(err)
	}
	h := a.OptionalSession(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s, ok := auth.SessionFromContext(r.Context()); ok {
			fmt.Fprintf(w, "welcome back, %s", s.UserID)
			return
		}
		fmt.Fprint(w, "welcome, stranger")
	}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	fmt.Println(rec.Body.String())
	// Output: welcome, stranger
}
