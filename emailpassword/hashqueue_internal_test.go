package emailpassword

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/latchkit/auth/internal/kit"
)

// goodPassword is a password the default policy accepts.
const goodPassword = "correct horse 1"

// A sign-in that finds every hashing slot taken waits its turn, and is
// answered as any other once a slot frees within HashQueueTimeout and its
// request's deadline; past either, the kernel is handed kit.ErrOverloaded
// or the request's error, which it answers 503 with Retry-After. Time is
// synctest's: the waits are exact, and nothing waits for real.
func TestHashQueueWait(t *testing.T) {
	const queue = DefaultHashQueueTimeout
	for _, c := range []struct {
		name     string
		password string
		deadline time.Duration // of the request's context; 0: none
		hold     time.Duration // how long the slot stays taken
		code     int
		status   string        // of a 200
		err      error         // handed to the kernel's Fail, for a 503
		at       time.Duration // when the answer comes
	}{
		// As the last of a burst of 500 on two cores, at 25 ms a hash.
		{name: "freed within the wait", password: goodPassword, hold: 6500 * time.Millisecond,
			code: http.StatusOK, status: "OK", at: 6500 * time.Millisecond},
		{name: "freed just within the wait", password: goodPassword, hold: queue - time.Millisecond,
			code: http.StatusOK, status: "OK", at: queue - time.Millisecond},
		{name: "wrong password, freed within the wait", password: "not the password 1", hold: 3 * time.Second,
			code: http.StatusOK, status: "WRONG_CREDENTIALS_ERROR", at: 3 * time.Second},
		{name: "freed past the wait", password: goodPassword, hold: queue + time.Second,
			code: http.StatusServiceUnavailable, err: kit.ErrOverloaded, at: queue},
		{name: "request deadline first", password: goodPassword, deadline: 3 * time.Second, hold: 5 * time.Second,
			code: http.StatusServiceUnavailable, err: context.DeadlineExceeded, at: 3 * time.Second},
		{name: "request deadline past the wait", password: goodPassword, deadline: 2 * queue, hold: queue + time.Second,
			code: http.StatusServiceUnavailable, err: kit.ErrOverloaded, at: queue},
		{name: "request deadline past the slot", password: goodPassword, deadline: 5 * time.Second, hold: 4 * time.Second,
			code: http.StatusOK, status: "OK", at: 4 * time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p, k := queueRecipe(t)
				const email = "queued@example.com"
				if res := serveCredentials(t.Context(), p, "", "/auth/signup", email, goodPassword); res.Code != http.StatusOK {
					t.Fatalf("sign-up: %d %s", res.Code, res.Body)
				}
				release := holdHashSlot(p)
				ctx := t.Context()
				if c.deadline > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, c.deadline)
					defer cancel()
				}
				start := time.Now()
				answer := make(chan *httptest.ResponseRecorder)
				go func() { answer <- serveCredentials(ctx, p, "", "/auth/signin", email, c.password) }()
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
					if failed := k.failures(); len(failed) != 1 || !errors.Is(failed[0], c.err) {
						t.Errorf("the kernel was handed %v, want %v", failed, c.err)
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
// within the wait; the kernel observes each wait.
func TestHashQueueOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, k := queueRecipe(t)
		const n = 50
		// Each user at an address of their own, as a burst of people is.
		client := func(i int) string { return fmt.Sprintf("192.0.2.%d", i+1) }
		for i := range n {
			if res := serveCredentials(t.Context(), p, client(i), "/auth/signup", fmt.Sprintf("u%d@example.com", i), goodPassword); res.Code != http.StatusOK {
				t.Fatalf("sign-up: %d %s", res.Code, res.Body)
			}
		}
		k.resetWaits()
		release := holdHashSlot(p)
		codes := make([]int, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				codes[i] = serveCredentials(t.Context(), p, client(i), "/auth/signin", fmt.Sprintf("u%d@example.com", i), goodPassword).Code
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
		got := k.allWaits()
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

// queueRecipe is a recipe with one hashing slot, cheap hashes and the
// default queue wait.
func queueRecipe(t *testing.T) (*Recipe, *testKernel) {
	t.Helper()
	c := cheap
	c.MaxConcurrentHashes = 1
	return newTestRecipe(t, c, kit.Setup{})
}

// holdHashSlot takes one of p's password hashing slots, as a hash in
// progress would, until the returned function is called.
func holdHashSlot(p *Recipe) (release func()) {
	p.slots <- struct{}{}
	return func() { <-p.slots }
}
