package auth_test

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"log"
	"net/http/httptest"
	"strings"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/emailpassword"
	"github.com/latchkit/auth/store/memstore"
)

// Seal the signing keys with a secret kept outside the database, and
// rotate it: the new secret goes first, the old one stays after it until
// every key it sealed has expired.
func ExampleConfig_secrets() {
	// In production the secrets come from the environment or a secret
	// manager, never from the database; openssl rand -base64 32 makes one.
	newSecret := func() string {
		b := make([]byte, 32)
		rand.Read(b)
		return base64.StdEncoding.EncodeToString(b)
	}
	oldSecret, newerSecret := newSecret(), newSecret()
	st := memstore.New()
	// Cheap hashing, for the example only.
	cheap := emailpassword.Config{Hashing: emailpassword.Hashing{Memory: 64, Iterations: 1, Parallelism: 1}, InsecureWeakHashing: true}

	a, err := auth.New(auth.Config{Store: st, EmailPassword: cheap, Secrets: []string{oldSecret}})
	if err != nil {
		log.Fatal(err)
	}
	signUp := httptest.NewRequest("POST", "/auth/signup", bytes.NewReader(authtest.Credentials("ada@example.com", "correct horse 1")))
	signUp.Header.Set("st-auth-mode", "header")
	rec := httptest.NewRecorder()
	a.ServeHTTP(rec, signUp) // makes the first keys, sealed with oldSecret
	access := rec.Header().Get("st-access-token")

	// Rotation: the new secret seals from now on, the old one still opens.
	b, err := auth.New(auth.Config{Store: st, EmailPassword: cheap, Secrets: []string{newerSecret, oldSecret}})
	if err != nil {
		log.Fatal(err)
	}
	r := httptest.NewRequest("GET", "/api/me", nil)
	r.Header.Set("Authorization", "Bearer "+access)
	_, err = b.VerifyRequest(r)
	fmt.Println("old session after the rotation:", err == nil)

	// Dropping the old secret too early: New refuses to start.
	_, err = auth.New(auth.Config{Store: st, EmailPassword: cheap, Secrets: []string{newerSecret}})
	fmt.Println("without the old secret:", strings.Contains(fmt.Sprint(err), "wrong secret"))
	// Output:
	// old session after the rotation: true
	// without the old secret: true
}
