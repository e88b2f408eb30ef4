package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	var lat []time.Duration
	for i := 1; i <= 100; i++ {
		lat = append(lat, time.Duration(i)*time.Millisecond)
	}
	for _, tc := range []struct {
		p    float64
		want time.Duration
	}{{50, 50 * time.Millisecond}, {99, 99 * time.Millisecond}, {100, 100 * time.Millisecond}, {0.5, time.Millisecond}} {
		if got := percentile(lat, tc.p); got != tc.want {
			t.Errorf("percentile(1..100 ms, %v) = %v, want %v", tc.p, got, tc.want)
		}
	}
	if got := percentile([]time.Duration{7}, 99); got != 7 {
		t.Errorf("percentile of one = %v, want 7", got)
	}
	if got := percentile(nil, 99); got != 0 {
		t.Errorf("percentile of none = %v, want 0", got)
	}
	// 1000 values: p99 is the 990th.
	lat = lat[:0]
	for i := 1; i <= 1000; i++ {
		lat = append(lat, time.Duration(i))
	}
	if got := percentile(lat, 99); got != 990 {
		t.Errorf("p99 of 1..1000 = %v, want 990", got)
	}
}

// TestRunPhase drives an httptest server for a second through the same
// runner and client the harness uses, with one request in ten refused.
func TestRunPhase(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for a second")
	}
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1)%10 == 0 {
			w.Header().Set("Retry-After", "1")
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"status":"OK"}`))
	}))
	defer srv.Close()
	cl := newClient(srv.URL, 4, 5*time.Second)
	r := runPhase(context.Background(), "test", 4, time.Second, func(ctx context.Context, w int) outcome {
		a, err := cl.do(ctx, "POST", "/auth/signin", "", credentials("a@example.com"))
		return expect200(a, err, true)
	})
	if r.n == 0 || int64(r.n) != n.Load() {
		t.Fatalf("runner counted %d requests, server saw %d", r.n, n.Load())
	}
	if r.elapsed < time.Second || r.elapsed > 3*time.Second {
		t.Errorf("elapsed %v, want about 1s", r.elapsed)
	}
	if want := r.n / 10; r.errs["503"] != want || len(r.errs) != 1 {
		t.Errorf("errors %v, want 503: %d only", r.errs, want)
	}
	p50, p99 := percentile(r.lat, 50), percentile(r.lat, 99)
	if p50 <= 0 || p50 > p99 || p99 > r.lat[len(r.lat)-1] {
		t.Errorf("p50 %v, p99 %v, max %v: out of order", p50, p99, r.lat[len(r.lat)-1])
	}

	// Stopping a worker ends only that worker.
	r = runPhase(context.Background(), "stop", 3, 200*time.Millisecond, func(ctx context.Context, w int) outcome {
		if w == 0 {
			return outcome{err: "401", stop: true}
		}
		return outcome{}
	})
	if r.errs["401"] != 1 {
		t.Errorf("a stopping worker counted %d errors, want 1", r.errs["401"])
	}

	var out bytes.Buffer
	printReport(&out, &report{cfg: config{db: "memory", c: 4, d: time.Second}, rows: []result{r}})
	if !strings.Contains(out.String(), "| stop | ") || !strings.Contains(out.String(), "401: 1") {
		t.Errorf("report lacks the row:\n%s", out.String())
	}
}

func TestParseFlags(t *testing.T) {
	cfg, err := parseFlags([]string{"-db", "sqlite:/tmp/x.db", "-phases", "refresh, ping", "-c", "3"})
	if err != nil || cfg.c != 3 || len(cfg.phases) != 2 || cfg.phases[0] != "refresh" || cfg.phases[1] != "ping" {
		t.Errorf("parseFlags = %+v, %v", cfg, err)
	}
	for _, args := range [][]string{{"-phases", "nope"}, {"-db", "mysql://x"}, {"-c", "0"}} {
		if _, err := parseFlags(args); err == nil {
			t.Errorf("parseFlags(%q) accepted", args)
		}
	}
}
