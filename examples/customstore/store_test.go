package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/store"
	"github.com/latchkit/auth/store/memstore"
	"github.com/latchkit/auth/store/storetest"
)

// The wrapper must keep every promise of the contract that the inner store
// keeps, atomicity under concurrency included.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		return newAuditStore(memstore.New(), io.Discard)
	})
}

// syncBuffer is a bytes.Buffer that the server's handlers may write while
// the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// A sign-up, a refresh and the replay of the first refresh token leave
// their trail, and the trail gives away no secret.
func TestAuditTrail(t *testing.T) {
	var trail syncBuffer
	mem := memstore.New()
	s := authtest.NewServer(t, auth.Config{Store: newAuditStore(mem, &trail)})

	c, u := s.SignedIn(authtest.Header)
	access0, refresh0 := c.Tokens()
	res := c.Get("/api/session")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/session: %d %s", res.StatusCode, res.Body)
	}
	handle, _ := res.JSON["sessionHandle"].(string)
	if handle == "" {
		t.Fatalf("GET /api/session: no handle in %s", res.Body)
	}

	if res := c.Refresh(); res.StatusCode != http.StatusOK {
		t.Fatalf("refresh: %d %s", res.StatusCode, res.Body)
	}
	access1, refresh1 := c.Tokens()
	if refresh1 == refresh0 {
		t.Fatal("refresh did not rotate the refresh token")
	}

	// Replay the exchanged token, as a thief holding a copy would.
	c.SetTokens("", refresh0)
	if res := c.Refresh(); res.StatusCode != http.StatusUnauthorized || res.Message != "token theft detected" {
		t.Fatalf("replayed refresh: %d %s, want 401 token theft detected", res.StatusCode, res.Body)
	}

	// Read the trail only now: every store call of a request returns
	// before its response is sent.
	got := trail.String()
	t.Logf("audit trail:\n%s", got)

	want := []string{
		`level=INFO msg="user created" user_id=` + u.ID + ` login_method=emailpassword`,
		`level=INFO msg="session created" user_id=` + u.ID + ` session=` + handle,
		`level=INFO msg="session refreshed" user_id=` + u.ID + ` session=` + handle,
		`level=WARN msg="refresh token reuse detected, session ended" user_id=` + u.ID + ` session=` + handle + ` reuse=previous`,
	}
	rest := got
	for _, w := range want {
		i := strings.Index(rest, w)
		if i < 0 {
			t.Fatalf("trail lacks, in this order, %q", w)
		}
		rest = rest[i+len(w):]
	}

	stored, err := mem.Login(t.Context(), store.EmailPasswordKey(u.Email))
	if err != nil {
		t.Fatal(err)
	}
	secrets := map[string]string{
		"password hash": stored.PasswordHash,
		"PHC prefix":    "$argon2id",
		"password":      authtest.Password,
	}
	for name, tok := range map[string]string{
		"first access token": access0, "first refresh token": refresh0,
		"second access token": access1, "second refresh token": refresh1,
	} {
		if tok == "" {
			t.Fatalf("client holds no %s", name)
		}
		sum := sha256.Sum256([]byte(tok))
		secrets[name] = tok
		secrets["hash of "+name] = hex.EncodeToString(sum[:])
	}
	for name, secret := range secrets {
		if strings.Contains(got, secret) {
			t.Errorf("trail contains the %s", name)
		}
	}
}
