package main

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/latchkit/auth/internal/sqltest"
)

func TestParseFlagsBurst3(t *testing.T) {
	for _, db := range []string{"memory", "postgres://postgres@127.0.0.1:5432/test?sslmode=disable", "mysql://root@127.0.0.1:3306/test"} {
		cfg, err := parseFlags([]string{"-db", db, "-phases", "burst,burst3", "-runs", "3"})
		if err != nil || !slices.Equal(cfg.phases, []string{"burst", "burst3"}) {
			t.Errorf("parseFlags(-db %s -phases burst,burst3) = %+v, %v", db, cfg, err)
		}
		if !needsDemo(cfg.phases) {
			t.Errorf("-phases burst,burst3 would build no demo")
		}
	}
	if _, err := parseFlags([]string{"-db", "sqlite:/tmp/x.db", "-phases", "burst3"}); err == nil || !strings.Contains(err.Error(), "SQLite") {
		t.Errorf("parseFlags(-db sqlite:... -phases burst3) = %v, want a refusal that names SQLite", err)
	}
	if cfg, _ := parseFlags(nil); slices.Contains(cfg.phases, "burst3") {
		t.Errorf("default phases %q include burst3", cfg.phases)
	}
}

// TestBurstNames: the burst keeps the names its rows and figures had, so
// that they read as before; burst3's are its own, so that both can run
// in one run.
func TestBurstNames(t *testing.T) {
	one, three := burstShapeOf("burst"), burstShapeOf("burst3")
	if one != (burstShape{"burst", 500, 1}) || three != (burstShape{"burst3", 500, 3}) {
		t.Fatalf("shapes %+v, %+v", one, three)
	}
	if got := one.rowName(); got != "burst (500 at once, fresh server)" {
		t.Errorf("burst row %q", got)
	}
	if got := one.what() + " answered 200"; got != "burst of 500 sign-ins answered 200" {
		t.Errorf("burst figure %q", got)
	}
	if got := rssFigure(one, 1<<20).what; got != "burst peak RSS of the server" {
		t.Errorf("burst RSS figure %q", got)
	}
	var names []string
	for _, b := range []burstShape{one, three} {
		names = append(names, b.rowName(), rssFigure(b, 0).what)
		for _, f := range answerFigures(b, newBurstTally(b.instances)) {
			names = append(names, f.what)
		}
		for _, f := range peakFigures(b, connPeaks{each: make([]int64, b.instances)}, 97) {
			names = append(names, f.what)
		}
	}
	for i, n := range names {
		if slices.Contains(names[i+1:], n) {
			t.Errorf("two rows or figures named %q", n)
		}
	}
	if got := len(peakFigures(three, connPeaks{each: []int64{9, 8, 7}, total: 20}, 97)); got != 5 {
		t.Errorf("burst3 has %d peak figures, want 5: together, each of 3, their sum", got)
	}
}

// TestConnPeaks: the total peak is the most held at one moment, not the
// sum of each one's peak.
func TestAddFigureOnce(t *testing.T) {
	rp := &report{}
	limit := figure{what: "PostgreSQL max_connections, less superuser_reserved_connections", value: 97}
	rp.addFigureOnce(limit)
	rp.addFigureOnce(figure{what: "burst peak", value: 9})
	rp.addFigureOnce(limit)
	if len(rp.figures) != 2 {
		t.Errorf("figures %+v, want max_connections once", rp.figures)
	}
}

func TestConnPeaks(t *testing.T) {
	var p connPeaks
	for _, counts := range [][]int64{{0, 0, 0}, {9, 1, 0}, {2, 9, 3}, {0, 4, 9}, {1, 1, 1}} {
		p.note(counts)
	}
	if !slices.Equal(p.each, []int64{9, 9, 9}) || p.total != 14 || p.sumOfEach() != 27 {
		t.Errorf("peaks %+v, sum of each %d; want 9, 9, 9 each, 14 together, 27 summed", p, p.sumOfEach())
	}
}

func TestBurstTally(t *testing.T) {
	tl := newBurstTally(2)
	ok := answer{code: http.StatusOK, body: []byte(`{"status":"OK","user":{}}`)}
	busy := answer{code: http.StatusServiceUnavailable, hdr: http.Header{"Retry-After": {"1"}}}
	for i, a := range []answer{ok, ok, ok, busy, {code: http.StatusServiceUnavailable, hdr: http.Header{}},
		{code: http.StatusOK, body: []byte(`{"status":"WRONG_CREDENTIALS_ERROR"}`)}, {code: http.StatusTooManyRequests}} {
		tl.record(i%2, time.Millisecond, a, nil)
	}
	tl.record(1, time.Second, answer{}, context.DeadlineExceeded)
	if !slices.Equal(tl.ok, []int{2, 1}) || len(tl.lat) != 8 {
		t.Errorf("ok by demo %v, %d latencies; want 2, 1 and 8", tl.ok, len(tl.lat))
	}
	want := map[string]int{"503": 1, "503 without Retry-After": 1, "200 not OK": 1, "429": 1, "timeout": 1}
	if fmt.Sprint(tl.errs) != fmt.Sprint(want) {
		t.Errorf("errors %v, want %v", tl.errs, want)
	}
	fs := answerFigures(burstShape{"burst3", 8, 2}, tl)
	if fs[0].value != 4 || fs[1].value != 3 || fs[1].detail != "3 ok of 8 (2, 1 by server)" {
		t.Errorf("figures %+v", fs)
	}
}

// TestBurstOverThreeDemos runs burst3's code, at 30 sign-ins, over three
// demos built from ./examples/demo on memory: each demo gets its third of
// the sign-ups and sign-ins, and every sign-in is answered.
func TestBurstOverThreeDemos(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts the demo")
	}
	dir := t.TempDir()
	bin, err := buildDemo(dir)
	if err != nil {
		t.Fatal(err)
	}
	rp := &report{cfg: config{db: "memory"}}
	b := burstShape{phase: "burst3", size: 30, instances: 3}
	if err := burst(t.Context(), rp, bin, dir, "test", b); err != nil {
		t.Fatal(err)
	}
	if len(rp.rows) != 1 || rp.rows[0].name != "burst3 (30 at once over 3 fresh servers)" || rp.rows[0].n != 30 || len(rp.rows[0].errs) != 0 {
		t.Fatalf("rows %+v", rp.rows)
	}
	if rp.rows[0].hwm <= 0 || !strings.Contains(rp.rows[0].note, "highest") {
		t.Errorf("peak RSS %d, note %q", rp.rows[0].hwm, rp.rows[0].note)
	}
	var details []string
	for _, f := range rp.figures {
		details = append(details, f.what+": "+f.detail)
	}
	if !slices.Contains(details, "burst of 30 sign-ins over 3 servers (burst3) answered 200: 30 ok of 30 (10, 10, 10 by server)") {
		t.Errorf("figures:\n%s", strings.Join(details, "\n"))
	}
	for i := 1; i <= 3; i++ {
		log, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("demo-burst3-%d.log", i)))
		if n := strings.Count(string(log), "kind=sign_up "); err != nil || n != 10 {
			t.Errorf("demo %d logged %d sign-ups, want 10: %v", i, n, err)
		}
	}
}

// TestConnCounter counts connections of two application names, in
// PostgreSQL, when $AUTH_TEST_POSTGRES names one.
func TestConnCounter(t *testing.T) {
	dsn := os.Getenv(sqltest.PostgresEnv)
	if dsn == "" {
		t.Skip("$" + sqltest.PostgresEnv + " is not set")
	}
	apps := []string{fmt.Sprintf("loadtest-test-%d-a", os.Getpid()), fmt.Sprintf("loadtest-test-%d-b", os.Getpid())}
	hold := func(app string, n int) {
		u, err := withApplicationName(dsn, app)
		if err != nil {
			t.Fatal(err)
		}
		db, err := sql.Open("pgx", u)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		for range n {
			conn, err := db.Conn(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { conn.Close() })
		}
	}
	hold(apps[0], 3)
	hold(apps[1], 1)
	c, err := countConnections(t.Context(), dsn, apps)
	if err != nil {
		t.Fatal(err)
	}
	defer c.db.Close()
	c.start()
	time.Sleep(20 * time.Millisecond)
	peaks, now, err := c.stop(t.Context())
	if err != nil || !slices.Equal(now, []int64{3, 1}) || !slices.Equal(peaks.each, []int64{3, 1}) || peaks.total != 4 {
		t.Errorf("counted %v, peaks %+v, %v; want 3 and 1", now, peaks, err)
	}
	limit, reserved, err := maxConnections(t.Context(), c.db)
	if err != nil || limit <= reserved || reserved < 0 {
		t.Errorf("max_connections %d, reserved %d, %v", limit, reserved, err)
	}
}
