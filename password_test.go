package auth_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/internal/password"
	"github.com/latchkit/auth/store"
	"github.com/latchkit/auth/store/memstore"
)

// A sign-in that waits longer than HashQueueTimeout for a hashing slot is
// answered 503 with Retry-After; none goes unanswered.
func TestHashQueueDeadline(t *testing.T) {
	s := authtest.NewServer(t, auth.Config{
		// Slow enough that requests queue behind the single slot.
		Password: auth.PasswordConfig{
			Hashing:             auth.PasswordHashing{Memory: 32 * 1024, Iterations: 3, Parallelism: 1},
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

// A sign-in that finds every hashing slot taken waits its turn, and is
// answered as any other once a slot frees within HashQueueTimeout and its
// request's deadline; past either, 503 with Retry-After. Time is
// synctest's: the waits are exact, and nothing waits for real.
func TestHashQueueWait(t *testing.T) {
	const queue = auth.DefaultHashQueueTimeout
	for _, c := range []struct {
		name     string
		password string
		deadline time.Duration // of the request's context; 0: none
		hold     time.Duration // how long the slot stays taken
		code     int
		status   string        // of a 200
		at       time.Duration // when the answer comes
	}{
		// As the last of a burst of 500 on two cores, at 25 ms a hash.
		{name: "freed within the wait", password: authtest.Password, hold: 6500 * time.Millisecond,
			code: http.StatusOK, status: "OK", at: 6500 * time.Millisecond},
		{name: "freed just within the wait", password: authtest.Password, hold: queue - time.Millisecond,
			code: http.StatusOK, status: "OK", at: queue - time.Millisecond},
		{name: "wrong password, freed within the wait", password: "not the password 1", hold: 3 * time.Second,
			code: http.StatusOK, status: "WRONG_CREDENTIALS_ERROR", at: 3 * time.Second},
		{name: "freed past the wait", password: authtest.Password, hold: queue + time.Second,
			code: http.StatusServiceUnavailable, at: queue},
		{name: "request deadline first", password: authtest.Password, deadline: 3 * time.Second, hold: 5 * time.Second,
			code: http.StatusServiceUnavailable, at: 3 * time.Second},
		{name: "request deadline past the wait", password: authtest.Password, deadline: 2 * queue, hold: queue + time.Second,
			code: http.StatusServiceUnavailable, at: queue},
		{name: "request deadline past the slot", password: authtest.Password, deadline: 5 * time.Second, hold: 4 * time.Second,
			code: http.StatusOK, status: "OK", at: 4 * time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				a := queueAuth(t, nil)
				const email = "queued@example.com"
				if res := serve(t.Context(), a, "", "/auth/signup", email, authtest.Password); res.Code != http.StatusOK {
					t.Fatalf("sign-up: %d %s", res.Code, res.Body)
				}
				release := auth.HoldHashSlot(a)
				ctx := t.Context()
				if c.deadline > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, c.deadline)
					defer cancel()
				}
				start := time.Now()
				answer := make(chan *httptest.ResponseRecorder)
				go func() { answer <- serve(ctx, a, "", "/auth/signin", email, c.password) }()
				synctest.Wait() // the sign-in waits for the slot
				released := make(chan struct{})
				go func() {
					time.Sleep(c.hold)
					release()
					close(released)
				}()
				defer func() { <-released }()
				res := <-answer
				if at := time.Since(start); res.Code != c.code || at != c.at {
					t.Fatalf("answered %d after %v: %s; want %d after %v", res.Code, at, res.Body, c.code, c.at)
				}
				if c.code == http.StatusServiceUnavailable {
					if res.Header().Get("Retry-After") == "" {
						t.Error("503 without Retry-After")
					}
					return
				}
				var body struct{ Status string }
				if err := json.Unmarshal(res.Body.Bytes(), &body); err != nil || body.Status != c.status {
					t.Errorf("status %q (%v), want %q: %s", body.Status, err, c.status, res.Body)
				}
			})
		})
	}
}

// The sign-ins waiting for a slot take it in the order they came, and all
// of a burst far larger than the slots is answered once the slot frees
// within the wait.
func TestHashQueueOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		waits := &hashWaits{}
		a := queueAuth(t, waits)
		const n = 50
		// Each user at an address of their own, as a burst of people is:
		// one address would meet its rate limits.
		client := func(i int) string { return fmt.Sprintf("192.0.2.%d", i+1) }
		for i := range n {
			if res := serve(t.Context(), a, client(i), "/auth/signup", fmt.Sprintf("u%d@example.com", i), authtest.Password); res.Code != http.StatusOK {
				t.Fatalf("sign-up: %d %s", res.Code, res.Body)
			}
		}
		waits.reset()
		release := auth.HoldHashSlot(a)
		codes := make([]int, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				codes[i] = serve(t.Context(), a, client(i), "/auth/signin", fmt.Sprintf("u%d@example.com", i), authtest.Password).Code
			})
			synctest.Wait() // sign-in i waits for the slot
			time.Sleep(100 * time.Millisecond)
		}
		release()
		wg.Wait()
		for i, code := range codes {
			if code != http.StatusOK {
				t.Errorf("sign-in %d: %d, want 200", i, code)
			}
		}
		// Sign-in i came at i × 100 ms, and all took the slot at n × 100 ms,
		// one after the other: in their order, the waits shorten.
		got := waits.all()
		if len(got) != n {
			t.Fatalf("%d waits observed, want %d", len(got), n)
		}
		for i, d := range got {
			if want := time.Duration(n-i) * 100 * time.Millisecond; d != want {
				t.Errorf("the %d-th to take the slot waited %v, want %v (the sign-in that came %d-th)", i, d, want, i)
			}
		}
	})
}

// queueAuth is an Auth with one hashing slot, cheap hashes and the default
// queue wait; waits, if not nil, observes the waits for the slot.
func queueAuth(t *testing.T, waits *hashWaits) *auth.Auth {
	t.Helper()
	cfg := auth.Config{
		Store: memstore.New(),
		Password: auth.PasswordConfig{
			Hashing:             auth.PasswordHashing{Memory: 64, Iterations: 1, Parallelism: 1},
			InsecureWeakHashing: true,
			MaxConcurrentHashes: 1,
		},
	}
	if waits != nil {
		cfg.Metrics = waits
	}
	a, err := auth.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// serve sends a's handler an email and password in header mode, from
// the client address from, or httptest's if "".
func serve(ctx context.Context, a *auth.Auth, from, path, email, password string) *httptest.ResponseRecorder {
	body, _ := json.Marshal(map[string]any{"formFields": []map[string]string{
		{"id": "email", "value": email}, {"id": "password", "value": password},
	}})
	req := httptest.NewRequestWithContext(ctx, http.MethodPost, path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("st-auth-mode", "header")
	if from != "" {
		req.RemoteAddr = from + ":1234"
	}
	res := httptest.NewRecorder()
	a.ServeHTTP(res, req)
	return res
}

// hashWaits is a Metrics that keeps the waits for a hashing slot, in the
// order they ended.
type hashWaits struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (h *hashWaits) CountEvent(auth.EventKind) {}
func (h *hashWaits) CountRefusal(auth.Reason)  {}
func (h *hashWaits) ObserveHashWait(d time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.waits = append(h.waits, d)
}

func (h *hashWaits) reset() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.waits = nil
}

func (h *hashWaits) all() []time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.waits)
}

// A hash made with other parameters is replaced at the next sign-in.
func TestHashUpgradeAtSignIn(t *testing.T) {
	st := memstore.New()
	old := authtest.NewServer(t, auth.Config{Store: st,
		Password: auth.PasswordConfig{Hashing: auth.PasswordHashing{Memory: 64, Iterations: 1, Parallelism: 1}, InsecureWeakHashing: true}})
	email := old.NewEmail()
	if res := old.NewClient(authtest.Header).SignUp(email, authtest.Password); res.Status != "OK" {
		t.Fatalf("sign-up: %s", res.Body)
	}
	cur := authtest.NewServer(t, auth.Config{Store: st,
		Password: auth.PasswordConfig{Hashing: auth.PasswordHashing{Memory: 128, Iterations: 1, Parallelism: 1}, InsecureWeakHashing: true}})
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
	weak := auth.PasswordHashing{Memory: 1024, Iterations: 1, Parallelism: 1}
	if _, err := auth.New(auth.Config{Store: memstore.New(), Password: auth.PasswordConfig{Hashing: weak}}); err == nil {
		t.Error("New accepted 1 MiB x 1 argon2id")
	}
	if _, err := auth.New(auth.Config{Store: memstore.New(), Password: auth.PasswordConfig{Hashing: weak, InsecureWeakHashing: true}}); err != nil {
		t.Errorf("New with Password.InsecureWeakHashing: %v", err)
	}
}

func TestPasswordPolicy(t *testing.T) {
	t.Parallel()
	shared := memstore.New()
	lax := authtest.NewServer(t, auth.Config{Store: shared, Password: auth.PasswordConfig{Policy: func(p string) error {
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
