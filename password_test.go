package auth_test

import (
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/emailpassword"
	"github.com/latchkit/auth/internal/password"
	"github.com/latchkit/auth/store"
	"github.com/latchkit/auth/store/memstore"
)

// A sign-in that waits longer than HashQueueTimeout for a hashing slot is
// answered 503 with Retry-After; none goes unanswered.
func TestHashQueueDeadline(t *testing.T) {
	s := authtest.NewServer(t, auth.Config{
		// Slow enough that requests queue behind the single slot.
		EmailPassword: emailpassword.Config{
			Hashing:             emailpassword.Hashing{Memory: 32 * 1024, Iterations: 3, Parallelism: 1},
			MaxConcurrentHashes: 1,
			HashQueueTimeout:    time.Millisecond,
		},
	})
	email := s.NewEmail()
	if res := s.NewClient(authtest.Header).SignUp(email, authtest.Password); res.Status != "OK" {
		t.Fatalf("sign-up: %d %s", res.StatusCode, res.Body)
	}
	const n = 8
	codes := make([]int, n)
	retry := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			res := s.NewClient(authtest.Header).SignIn(email, authtest.Password)
			codes[i], retry[i] = res.StatusCode, res.Header.Get("Retry-After")
		})
	}
	wg.Wait()
	var ok, busy int
	for i, c := range codes {
		switch {
		case c == http.StatusOK:
			ok++
		case c == http.StatusServiceUnavailable && retry[i] != "":
			busy++
		default:
			t.Errorf("sign-in %d: status %d, Retry-After %q; want 200, or 503 with Retry-After", i, c, retry[i])
		}
	}
	if ok == 0 || busy == 0 {
		t.Errorf("%d signed in and %d were turned away; want some of each", ok, busy)
	}
}

// A hash made with other parameters is replaced at the next sign-in.
func TestHashUpgradeAtSignIn(t *testing.T) {
	st := memstore.New()
	old := authtest.NewServer(t, auth.Config{Store: st,
		EmailPassword: emailpassword.Config{Hashing: emailpassword.Hashing{Memory: 64, Iterations: 1, Parallelism: 1}, InsecureWeakHashing: true}})
	email := old.NewEmail()
	if res := old.NewClient(authtest.Header).SignUp(email, authtest.Password); res.Status != "OK" {
		t.Fatalf("sign-up: %s", res.Body)
	}
	cur := authtest.NewServer(t, auth.Config{Store: st,
		EmailPassword: emailpassword.Config{Hashing: emailpassword.Hashing{Memory: 128, Iterations: 1, Parallelism: 1}, InsecureWeakHashing: true}})
	if res := cur.NewClient(authtest.Header).SignIn(email, authtest.Password); res.Status != "OK" {
		t.Fatalf("sign-in with old hash: %s", res.Body)
	}
	u, err := st.Login(t.Context(), store.EmailPasswordKey(email))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(u.PasswordHash, "$m=128,t=1,p=1$") {
		t.Errorf("hash after sign-in = %q; want it upgraded to m=128", u.PasswordHash)
	}
	if res := cur.NewClient(authtest.Header).SignIn(email, authtest.Password); res.Status != "OK" {
		t.Errorf("sign-in with the upgraded hash: %s", res.Body)
	}
}

// New refuses password hashing below the OWASP minimum unless told the
// weakness is intended.
func TestWeakHashingRefused(t *testing.T) {
	weak := emailpassword.Hashing{Memory: 1024, Iterations: 1, Parallelism: 1}
	if _, err := auth.New(auth.Config{Store: memstore.New(), EmailPassword: emailpassword.Config{Hashing: weak}}); err == nil {
		t.Error("New accepted 1 MiB x 1 argon2id")
	}
	if _, err := auth.New(auth.Config{Store: memstore.New(), EmailPassword: emailpassword.Config{Hashing: weak, InsecureWeakHashing: true}}); err != nil {
		t.Errorf("New with Password.InsecureWeakHashing: %v", err)
	}
}

func TestPasswordPolicy(t *testing.T) {
	t.Parallel()
	shared := memstore.New()
	lax := authtest.NewServer(t, auth.Config{Store: shared, EmailPassword: emailpassword.Config{Policy: func(p string) error {
		if len(p) < 3 {
			return errors.New("Three or more, please")
		}
		return nil
	}}})
	strict := authtest.NewServer(t, auth.Config{Store: shared})

	t.Run("custom policy message", func(t *testing.T) {
		res := lax.NewClient(authtest.Header).SignUp("c1@example.com", "ab")
		wantBody(t, res, `{"status":"FIELD_ERROR","formFields":[{"id":"password","error":"Three or more, please"}]}`)
	})
	t.Run("sign-in does not apply the policy", func(t *testing.T) {
		res := lax.NewClient(authtest.Header).SignUp("c2@example.com", "abc")
		if res.Status != "OK" {
			t.Fatalf("sign-up with the lax policy: %s", res.Body)
		}
		// The default policy refuses "abc", but sign-in must not apply it.
		if res := strict.NewClient(authtest.Header).SignUp("c3@example.com", "abc"); res.Status != "FIELD_ERROR" {
			t.Fatalf("strict sign-up of a short password: %s", res.Body)
		}
		c := strict.NewClient(authtest.Header)
		res = c.SignIn("c2@example.com", "abc")
		uid, _ := res.JSON["user"].(map[string]any)["id"].(string)
		wantTokens(t, strict, res, authtest.Header, uid)
	})
	t.Run("short or long wrong password", func(t *testing.T) {
		for _, pw := range []string{"x", "ab", "abd", strings.Repeat("y1", 60)} {
			res := strict.NewClient(authtest.Header).SignIn("c2@example.com", pw)
			wantBody(t, res, `{"status":"WRONG_CREDENTIALS_ERROR"}`)
		}
	})
}

// Passwords are Unicode-normalised (NFKC, as NIST SP 800-63B 5.1.1.2
// asks) before they are hashed or checked: the same password typed on a
// system that composes accents and on one that does not, or with an input
// method in fullwidth mode, signs in (security review F17).
func TestPasswordUnicodeNormalised(t *testing.T) {
	t.Parallel()
	s := authtest.NewServer(t, auth.Config{})
	email := s.NewEmail()
	composed := "p\u00e4sswort12"            // ä as one code point (NFC)
	decomposed := "pa\u0308sswort12"         // a and a combining diaeresis (NFD)
	fullwidth := "p\u00e4sswort\uff11\uff12" // fullwidth digits 1 and 2
	if res := s.NewClient(authtest.Header).SignUp(email, composed); res.Status != "OK" {
		t.Fatalf("sign-up: %d %s", res.StatusCode, res.Body)
	}
	for _, pw := range []string{composed, decomposed, fullwidth} {
		if res := s.NewClient(authtest.Header).SignIn(email, pw); res.Status != "OK" {
			t.Errorf("sign-in with %+q: %d %s", pw, res.StatusCode, res.Body)
		}
	}
	if res := s.NewClient(authtest.Header).SignIn(email, "passwort12"); res.Status != "WRONG_CREDENTIALS_ERROR" {
		t.Errorf("sign-in without the umlaut: %d %s, want WRONG_CREDENTIALS_ERROR", res.StatusCode, res.Body)
	}
}

// A hash made before passwords were normalised, from the password as it
// was typed, still signs in with that input, and is then replaced by the
// hash of the normalised password.
func TestPasswordHashOfUnnormalisedInput(t *testing.T) {
	t.Parallel()
	st := memstore.New()
	s := authtest.NewServer(t, auth.Config{Store: st})
	decomposed := "pa\u0308sswort12"
	old := password.Hash(decomposed, password.Params{Memory: 64, Time: 1, Threads: 1})
	passwordUser("u-old", "old@example.com", old).addTo(t, st)
	if res := s.NewClient(authtest.Header).SignIn("old@example.com", decomposed); res.Status != "OK" {
		t.Fatalf("sign-in as typed before: %d %s", res.StatusCode, res.Body)
	}
	u, err := st.Login(t.Context(), store.EmailPasswordKey("old@example.com"))
	if err != nil {
		t.Fatal(err)
	}
	if u.PasswordHash == old {
		t.Error("the hash of the unnormalised password was kept; want it replaced")
	}
	if res := s.NewClient(authtest.Header).SignIn("old@example.com", "p\u00e4sswort12"); res.Status != "OK" {
		t.Errorf("sign-in with the composed form after the upgrade: %d %s", res.StatusCode, res.Body)
	}
}
