// Command metrics shows how to export the auth library's metrics: an
// auth.Metrics that keeps counters and a histogram and serves them at
// /metrics in the Prometheus text exposition format, with no dependency
// beyond the standard library.
//
//	go run ./examples/metrics -addr 127.0.0.1:8082
//	curl http://127.0.0.1:8082/metrics
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"maps"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/store/memstore"
)

// hashWaitBuckets are the upper bounds, in seconds, of the hash-wait
// histogram: from "a slot was free" to the default queue deadline.
var hashWaitBuckets = []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2}

// promMetrics implements auth.Metrics, and
// renders Prometheus text.
type promMetrics struct {
	mu       sync.Mutex
	events   map[auth.EventKind]uint64
	refusals map[auth.Reason]uint64
	buckets  []uint64 // cumulative counts are computed when rendered
	waitSum  float64
	waitSeen uint64
}

func newPromMetrics() *promMetrics {
	return &promMetrics{events: make(map[auth.EventKind]uint64), refusals: make(map[auth.Reason]uint64),
		buckets: make([]uint64, len(hashWaitBuckets))}
}

func (m *promMetrics) CountEvent(kind auth.EventKind) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.events[kind]++
}

// CountRefusal counts a 401 by why, which a dashboard can watch for a rise
// in thefts or in sessions that end early.
func (m *promMetrics) CountRefusal(reason auth.Reason) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.refusals[reason]++
}

func (m *promMetrics) ObserveHashWait(d time.Duration) {
	s := d.Seconds()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.waitSum += s
	m.waitSeen++
	for i, le := range hashWaitBuckets {
		if s <= le {
			m.buckets[i]++
			break
		}
	}
}

// render writes the metrics in the text exposition format.
func (m *promMetrics) render(w io.Writer) {
	m.mu.Lock()
	defer m.mu.Unlock()
	writeCounter(w, "auth_events_total", "Authentication outcomes by kind.", "kind", m.events)
	writeCounter(w, "auth_refusals_total", "401 answers of refresh and protected routes, by reason.", "reason", m.refusals)
	fmt.Fprintln(w, "# HELP auth_hash_wait_seconds Time password hashes waited for a hashing slot.")
	fmt.Fprintln(w, "# TYPE auth_hash_wait_seconds histogram")
	var cum uint64
	for i, le := range hashWaitBuckets {
		cum += m.buckets[i]
		fmt.Fprintf(w, "auth_hash_wait_seconds_bucket{le=\"%g\"} %d\n", le, cum)
	}
	fmt.Fprintf(w, "auth_hash_wait_seconds_bucket{le=\"+Inf\"} %d\n", m.waitSeen)
	fmt.Fprintf(w, "auth_hash_wait_seconds_sum %g\n", m.waitSum)
	fmt.Fprintf(w, "auth_hash_wait_seconds_count %d\n", m.waitSeen)
}

// writeCounter writes a counter with one label, its values in the label's
// order.
func writeCounter[K ~string](w io.Writer, name, help, label string, counts map[K]uint64) {
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s counter\n", name, help, name)
	for _, k := range slices.Sorted(maps.Keys(counts)) {
		fmt.Fprintf(w, "%s{%s=%q} %d\n", name, label, k, counts[k])
	}
}

func (m *promMetrics) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	m.render(w)
}

func main() {
	addr := flag.String("addr", "127.0.0.1:8082", "address to listen on")
	flag.Parse()
	metrics := newPromMetrics()
	a, err := auth.New(auth.Config{Store: memstore.New(), Metrics: metrics})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/auth/", a)
	mux.Handle("GET /metrics", metrics)
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("metrics: listening on http://%s (auth under /auth, metrics at /metrics)\n", ln.Addr())
	log.Fatal(http.Serve(ln, mux))
}
