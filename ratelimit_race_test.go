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

// A full memory limiter still counts: cheap reset requests that fill it
// cannot make new sign-in failures go uncounted.
func TestMemoryLimiterFullStillCountsSignIns(t *testing.T) {
	s := authtest.NewServer(t, auth.Config{Limiter: auth.NewMemoryLimiter(500), TrustedProxies: loopbackProxy})
	_, u := s.SignedIn(authtest.Header)
	for ip := range 50 {
		c := fromClient(s.NewClient(authtest.Header), fmt.Sprintf("192.0.2.%d", ip+1))
		for j := range 20 {
			if res := c.RequestPasswordReset(fmt.Sprintf("x%d.%d@example.org", ip, j)); res.StatusCode != http.StatusOK {
				t.Fatalf("reset request: %d", res.StatusCode)
			}
		}
	}
	attacker := fromClient(s.NewClient(authtest.Header), "198.51.100.8")
	got := map[int]int{}
	for i := range 30 {
		got[attacker.SignIn(u.Email, fmt.Sprintf("wrong password %d", i)).StatusCode]++
	}
	if got[http.StatusOK] != 10 || got[http.StatusTooManyRequests] != 20 {
		t.Errorf("30 wrong passwords after 1,000 reset requests filled the limiter: %v; want 10 checked and 20 refused", got)
	}
}

// The bound of NewMemoryLimiter(0) holds per kind of key, and a full kind
// drops its key closest to refilling rather than stop counting.
func TestMemoryLimiterFullEvicts(t *testing.T) {
	l := auth.NewMemoryLimiter(0)
	ctx := context.Background()
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	cheap := auth.Rate{Burst: 3, Every: 20 * time.Minute}
	for i := range 100_000 {
		l.Take(ctx, fmt.Sprintf("reset-email:%d", i), cheap, now)
	}
	r := auth.Rate{Burst: 1, Every: time.Hour}
	for _, k := range []string{"signin:victim", "reset-email:fresh"} {
		if d, _ := l.Take(ctx, k, r, now); d != 0 {
			t.Fatalf("first attempt on %s: wait %v", k, d)
		}
		if d, _ := l.Take(ctx, k, r, now); d != time.Hour {
			t.Errorf("second attempt on %s in a full limiter: wait %v; want 1h (counted)", k, d)
		}
	}
}

// BenchmarkMemoryLimiterFull: the cost of a new key's attempt once the
// limiter holds its bound of keys, none of them refilled.
func BenchmarkMemoryLimiterFull(b *testing.B) {
	l := auth.NewMemoryLimiter(0)
	ctx := context.Background()
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	r := auth.Rate{Burst: 3, Every: 20 * time.Minute}
	for i := range 100_000 {
		l.Take(ctx, fmt.Sprintf("reset-email:%d", i), r, now)
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		l.Take(ctx, fmt.Sprintf("reset-email:new%d", i), r, now)
	}
}

// Below its bound, the memory limiter answers as a plain map of times
// would, whatever the order of takes, refunds, resets and clock steps.
func TestMemoryLimiterMatchesModel(t *testing.T) {
	l := auth.NewMemoryLimiter(0)
	ctx := context.Background()
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	model := map[string]time.Time{}
	r := auth.Rate{Burst: 3, Every: time.Minute}
	seed := uint32(1)
	next := func(n int) int { seed = seed*1664525 + 1013904223; return int(seed>>8) % n }
	for i := range 20_000 {
		key := fmt.Sprintf("k%d:%d", next(2), next(40))
		switch op := next(10); {
		case op < 6:
			got, _ := l.Take(ctx, key, r, now)
			tat := model[key]
			want := max(0, tat.Sub(now)-2*time.Minute)
			if tat.IsZero() {
				want = 0
			}
			if want == 0 {
				model[key] = later(tat, now).Add(time.Minute)
			}
			if got != want {
				t.Fatalf("step %d: Take %s = %v, want %v", i, key, got, want)
			}
		case op < 8:
			l.Refund(ctx, key, r, now)
			if tat, ok := model[key]; ok {
				if tat = tat.Add(-time.Minute); tat.After(now) {
					model[key] = tat
				} else {
					delete(model, key)
				}
			}
		case op < 9:
			l.Reset(ctx, key)
			delete(model, key)
		default:
			now = now.Add(time.Duration(next(90)) * time.Second)
		}
	}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
