package auth_test

import (
	"bytes"
	"fmt"
	"log"
	"net/http/httptest"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/emailpassword"
	"github.com/latchkit/auth/store/memstore"
)

// Every 401 says why in the Auth-Reason header, which a frontend can show
// the user: here a refresh token that was exchanged already, presented
// again, and then the live token of the session that theft ended.
func ExampleReasonHeader() {
	a, err := auth.New(auth.Config{Store: memstore.New(),
		// Cheap hashing, for the example only.
		EmailPassword: emailpassword.Config{Hashing: emailpassword.Hashing{Memory: 64, Iterations: 1, Parallelism: 1}, InsecureWeakHashing: true}})
	if err != nil {
		log.Fatal(err)
	}
	send := func(path, refreshToken string, body []byte) *httptest.ResponseRecorder {
		req := httptest.NewRequest("POST", path, bytes.NewReader(body))
		req.Header.Set("st-auth-mode", "header")
		if refreshToken != "" {
			req.Header.Set("Authorization", "Bearer "+refreshToken)
		}
		rec := httptest.NewRecorder()
		a.ServeHTTP(rec, req)
		return rec
	}
	first := send("/auth/signup", "", authtest.Credentials("ada@example.com", "correct horse 1")).Header().Get("st-refresh-token")
	second := send("/auth/session/refresh", first, nil).Header().Get("st-refresh-token")
	for _, tok := range []string{first, second} {
		rec := send("/auth/session/refresh", tok, nil)
		fmt.Println(rec.Code, rec.Header().Get(auth.ReasonHeader), rec.Body)
	}
	// Output:
	// 401 token_theft_previous {"message":"token theft detected","reason":"token_theft_previous"}
	// 401 token_theft {"message":"unauthorised","reason":"token_theft"}
}
