package passkey_test

import (
	"encoding/json"
	"fmt"
	"log"
	"net/http/httptest"
	"strings"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/passkey"
	"github.com/latchkit/auth/store/memstore"
)

// Passkeys are on once Config.Passkeys has the recipe. The relying party
// is the site of AppURL; the options answer is what the SDKs hand to the
// browser's WebAuthn call.
func Example() {
	a, err := auth.New(auth.Config{
		Store:    memstore.New(),
		AppURL:   "https://app.example.com",
		Passkeys: passkey.New(passkey.Config{}),
	})
	if err != nil {
		log.Fatal(err)
	}
	rec := httptest.NewRecorder()
	a.ServeHTTP(rec, httptest.NewRequest("POST", "/auth/webauthn/options/register",
		strings.NewReader(`{"email":"kate@example.com"}`)))
	var options struct {
		Status string
		RP     struct{ ID string }
		User   struct{ Name string }
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &options); err != nil {
		log.Fatal(err)
	}
	fmt.Println(options.Status, options.RP.ID, options.User.Name)
	// Output: OK app.example.com kate@example.com
}
