package auth_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/store"
	"github.com/latchkit/auth/store/memstore"
)

// gateStore holds every Login until each of n concurrent requests has
// either reached Login or been answered: every request that gets past the
// rate limit is then in flight at once, the widest window between a
// limit's check and its count.
type gateStore struct {
	*memstore.Store
	mu                  sync.Mutex
	cond                *sync.Cond
	n, arrived, settled int
}

func newGateStore() *gateStore {
	g := &gateStore{Store: memstore.New()}
	g.cond = sync.NewCond(&g.mu)
	return g
}

func (g *gateStore) arm(n int) {
	g.mu.Lock()
	g.n, g.arrived, g.settled = n, 0, 0
	g.mu.Unlock()
}

func (g *gateStore) Login(ctx context.Context, k store.LoginKey) (store.Login, error) {
	g.mu.Lock()
	if g.n > 0 {
		g.arrived++
		g.cond.Broadcast()
		for g.arrived+g.settled < g.n {
			g.cond.Wait()
		}
	}
	g.mu.Unlock()
	return g.Store.Login(ctx, k)
}

// answered records a request that was answered.
func (g *gateStore) answered() {
	g.mu.Lock()
	g.settled++
	g.cond.Broadcast()
	g.mu.Unlock()
}

// Concurrent wrong passwords are each counted before their hash: of 60 at
// once against an allowance of 10, exactly 10 are checked, with the
// default memory limiter and with the store limiter.
func TestSignInConcurrentFailuresTakeTheAllowance(t *testing.T) {
	for _, name := range []string{"memory", "store"} {
		t.Run(name, func(t *testing.T) {
			st := newGateStore()
			cfg := auth.Config{Store: st, RateLimits: auth.RateLimits{SignInFailures: auth.Rate{Burst: 10, Every: time.Hour}}}
			if name == "store" {
				cfg.Limiter = auth.NewStoreLimiter(st)
			}
			s := authtest.NewServer(t, cfg)
			email := s.NewEmail()
			const n = 60
			st.arm(n)
			codes := make(chan string, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					res := s.NewClient(authtest.Header).SignIn(email, fmt.Sprintf("wrong password %d", i))
					st.answered()
					codes <- fmt.Sprint(res.StatusCode, " ", res.Status)
				})
			}
			wg.Wait()
			close(codes)
			got := map[string]int{}
			for c := range codes {
				got[c]++
			}
			if got["200 WRONG_CREDENTIALS_ERROR"] != 10 || got[fmt.Sprint(http.StatusTooManyRequests, " ")] != n-10 {
				t.Errorf("%d concurrent wrong passwords against an allowance of 10: %v; want exactly 10 checked, the rest 429", n, got)
			}
		})
	}
}

// Concurrent reset requests for one email send at most ResetEmails emails.
func TestResetRequestsConcurrentPerEmail(t *testing.T) {
	st := memstore.New()
	s := authtest.NewServer(t, auth.Config{Store: st, Limiter: auth.NewStoreLimiter(st), TrustedProxies: loopbackProxy,
		RateLimits: auth.RateLimits{ResetEmails: auth.Rate{Burst: 3, Every: time.Hour}}})
	_, u := s.SignedIn(authtest.Header)
	const n = 100
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			c := fromClient(s.NewClient(authtest.Header), fmt.Sprintf("198.51.100.%d", i+1))
			if res := c.RequestPasswordReset(u.Email); res.Status != "OK" {
				t.Errorf("reset request: %d %s", res.StatusCode, res.Body)
			}
		})
	}
	wg.Wait()
	if err := s.Auth.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := len(s.Mailbox.Messages()); got != 3 {
		t.Errorf("%d concurrent reset requests for one email sent %d emails; want 3 (ResetEmails burst)", n, got)
	}
}
