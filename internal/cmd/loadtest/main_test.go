package main

import (
	"bytes"
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
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
	if cfg.runs != 1 {
		t.Errorf("default -runs = %d, want 1", cfg.runs)
	}
	cfg, err = parseFlags([]string{"-phases", "ping,signup", "-runs", "3"})
	if err != nil || cfg.runs != 3 || len(cfg.phases) != 2 || cfg.phases[1] != "signup" {
		t.Errorf("parseFlags(-phases ping,signup -runs 3) = %+v, %v", cfg, err)
	}
	if cfg, err := parseFlags([]string{"-cpuprofile", "/tmp/lt.pprof"}); err != nil || cfg.cpuprofile != "/tmp/lt.pprof" {
		t.Errorf("parseFlags(-cpuprofile /tmp/lt.pprof) = %+v, %v", cfg, err)
	}
	if cfg, err := parseFlags([]string{"-demo-args", " -admin  a@example.com "}); err != nil || !slices.Equal(cfg.demoArgs, []string{"-admin", "a@example.com"}) {
		t.Errorf("parseFlags(-demo-args) = %+v, %v", cfg, err)
	}
	if cfg, err := parseFlags([]string{"-db", "mysql://root@127.0.0.1:3306/test"}); err != nil || cfg.db != "mysql://root@127.0.0.1:3306/test" {
		t.Errorf("parseFlags(-db mysql://root@127.0.0.1:3306/test) = %+v, %v", cfg, err)
	}
	if cfg, _ := parseFlags(nil); slices.Contains(cfg.phases, "signup") {
		t.Errorf("default phases %q include signup", cfg.phases)
	}
	for _, args := range [][]string{{"-phases", "nope"}, {"-db", "mysql://x"}, {"-db", "mariadb://x/test"}, {"-c", "0"}, {"-runs", "0"}} {
		if _, err := parseFlags(args); err == nil {
			t.Errorf("parseFlags(%q) accepted", args)
		}
	}
}

func TestSpreadOf(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want spread
	}{
		{[]float64{5}, spread{5, 5, 5}},
		{[]float64{3, 1, 2}, spread{2, 1, 3}},
		{[]float64{4, 1, 3, 2}, spread{2.5, 1, 4}},
		{[]float64{10, 10, 1, 10, 100}, spread{10, 1, 100}},
	} {
		in := slices.Clone(tc.in)
		if got := spreadOf(in); got != tc.want {
			t.Errorf("spreadOf(%v) = %+v, want %+v", tc.in, got, tc.want)
		}
		if !slices.Equal(in, tc.in) {
			t.Errorf("spreadOf(%v) reordered its argument to %v", tc.in, in)
		}
	}
}

// row is a result of rate requests in a second, with the given p50 and
// p99 (nearest rank of two latencies), errors and peak RSS in MiB.
func row(name string, rate int, p50, p99 time.Duration, errs map[string]int, rssMiB int64) result {
	if errs == nil {
		errs = map[string]int{}
	}
	return result{name: name, n: rate, elapsed: time.Second, lat: []time.Duration{p50, p99}, errs: errs, hwm: rssMiB << 20}
}

func TestAggregateRows(t *testing.T) {
	const ms = time.Millisecond
	for _, tc := range []struct {
		name string
		runs [][]result
		want []summary
	}{
		{
			name: "one run",
			runs: [][]result{{row("ping", 100, 1*ms, 5*ms, map[string]int{"503": 2}, 20)}},
			want: []summary{{name: "ping", runs: 1, n: 100,
				rate: spread{100, 100, 100}, p50: spread{1e6, 1e6, 1e6}, p99: spread{5e6, 5e6, 5e6},
				errs: map[string]int{"503": 2}, hwm: 20 << 20}},
		},
		{
			name: "three runs: medians, ranges, total errors, highest RSS",
			runs: [][]result{
				{row("ping", 100, 2*ms, 9*ms, map[string]int{"503": 1}, 10), row("argon2id raw (harness)", 8, 200*ms, 300*ms, nil, 0)},
				{row("ping", 300, 1*ms, 4*ms, map[string]int{"503": 2, "timeout": 1}, 30), row("argon2id raw (harness)", 10, 150*ms, 250*ms, nil, 0)},
				{row("ping", 200, 3*ms, 6*ms, nil, 20), row("argon2id raw (harness)", 9, 180*ms, 400*ms, nil, 0)},
			},
			want: []summary{
				{name: "ping", runs: 3, n: 600,
					rate: spread{200, 100, 300}, p50: spread{2e6, 1e6, 3e6}, p99: spread{6e6, 4e6, 9e6},
					errs: map[string]int{"503": 3, "timeout": 1}, hwm: 30 << 20},
				{name: "argon2id raw (harness)", runs: 3, n: 27,
					rate: spread{9, 8, 10}, p50: spread{180e6, 150e6, 200e6}, p99: spread{300e6, 250e6, 400e6},
					errs: map[string]int{}, hwm: 0},
			},
		},
		{
			name: "two runs: the median is the mean of the two",
			runs: [][]result{
				{row("me", 100, 1*ms, 3*ms, nil, 10)},
				{row("me", 200, 2*ms, 4*ms, nil, 12)},
			},
			want: []summary{{name: "me", runs: 2, n: 300,
				rate: spread{150, 100, 200}, p50: spread{1.5e6, 1e6, 2e6}, p99: spread{3.5e6, 3e6, 4e6},
				errs: map[string]int{}, hwm: 12 << 20}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var runs []*report
			for _, rows := range tc.runs {
				runs = append(runs, &report{rows: rows})
			}
			got, _ := aggregate(runs)
			if len(got) != len(tc.want) {
				t.Fatalf("aggregate gave %d rows, want %d: %+v", len(got), len(tc.want), got)
			}
			for i, w := range tc.want {
				g := got[i]
				if g.name != w.name || g.runs != w.runs || g.n != w.n || g.rate != w.rate || g.p50 != w.p50 || g.p99 != w.p99 || g.hwm != w.hwm {
					t.Errorf("row %d = %+v,\nwant %+v", i, g, w)
				}
				if len(g.errs) != len(w.errs) {
					t.Errorf("row %s errors %v, want %v", w.name, g.errs, w.errs)
				}
				for k, v := range w.errs {
					if g.errs[k] != v {
						t.Errorf("row %s errors %v, want %v", w.name, g.errs, w.errs)
					}
				}
			}
		})
	}
}

func TestAggregateFigures(t *testing.T) {
	ratio := func(v float64) figure {
		return figure{what: "me vs ping", value: v, format: "%.2f", unit: "x", detail: "one run"}
	}
	rss := func(v float64) figure {
		return figure{what: "burst RSS", value: v, format: "%.1f", unit: " MiB"}
	}
	answered := func(v float64) figure {
		return figure{what: "burst answered", value: v, worstRun: true, format: "%.0f", unit: " answered"}
	}
	peak := func(v float64) figure {
		f := rss(v)
		f.worstRun, f.higherIsWorse = true, true
		return f
	}
	for _, tc := range []struct {
		name       string
		runs       []figure
		value      float64
		wantDetail string
	}{
		{"worst run: the lowest", []figure{answered(500), answered(499), answered(500)}, 499, "worst run 499 answered (min–max 499–500 answered, 3 runs)"},
		{"worst run: all equal", []figure{answered(500), answered(500)}, 500, "worst run 500 answered (min–max 500–500 answered, 2 runs)"},
		{"worst run, higher is worse: the highest", []figure{peak(100), peak(300), peak(120)}, 300, "worst run 300.0 MiB (min–max 100.0–300.0 MiB, 3 runs)"},
		{"one run", []figure{ratio(0.5)}, 0.5, "median 0.50x (min–max 0.50–0.50x, 1 runs)"},
		{"three runs: the median", []figure{ratio(0.5), ratio(0.9), ratio(0.8)}, 0.8, "median 0.80x (min–max 0.50–0.90x, 3 runs)"},
		{"even: the mean of the middle two", []figure{ratio(0.6), ratio(0.8)}, 0.7, "median 0.70x (min–max 0.60–0.80x, 2 runs)"},
		{"median of a figure without worstRun", []figure{rss(300), rss(100), rss(200)}, 200, "median 200.0 MiB (min–max 100.0–300.0 MiB, 3 runs)"},
		{"an unread RSS shows", []figure{peak(math.Inf(1)), peak(100)}, math.Inf(1), "worst run +Inf MiB (min–max 100.0–+Inf MiB, 2 runs)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var runs []*report
			for _, f := range tc.runs {
				runs = append(runs, &report{figures: []figure{f}})
			}
			_, got := aggregate(runs)
			if len(got) != 1 {
				t.Fatalf("aggregate gave %d figures, want 1: %+v", len(got), got)
			}
			if got[0].value != tc.value || got[0].detail != tc.wantDetail {
				t.Errorf("figure = value %v, detail %q;\nwant value %v, detail %q",
					got[0].value, got[0].detail, tc.value, tc.wantDetail)
			}
		})
	}

	// Figures keep their order and are aggregated by what they are.
	_, got := aggregate([]*report{
		{figures: []figure{ratio(0.9), rss(100)}},
		{figures: []figure{ratio(0.5), rss(300)}},
		{figures: []figure{ratio(0.8), rss(290)}},
	})
	if len(got) != 2 || got[0].what != "me vs ping" || got[0].value != 0.8 || got[1].what != "burst RSS" || got[1].value != 290 {
		t.Errorf("two figures over three runs: %+v", got)
	}
}

func TestPrintReports(t *testing.T) {
	const ms = time.Millisecond
	cfg := config{db: "memory", c: 4, d: time.Second}
	me := figure{what: "/api/me vs /api/ping", value: 0.5, format: "%.2f", unit: "x",
		detail: "50/s vs 100/s = 0.50x"}

	// One run: the lines as they always were, and the ratio without a
	// verdict.
	var out bytes.Buffer
	printReport(&out, &report{cfg: cfg, rows: []result{row("ping", 100, ms, 2*ms, nil, 0)}, figures: []figure{me}})
	for _, want := range []string{
		"### loadtest: -db memory, -c 4, -d 1s, GOMAXPROCS ",
		"| ping | 100 | 100 | 1.00 ms | 2.00 ms | 0 | n/a |\n",
		"- /api/me vs /api/ping: 50/s vs 100/s = 0.50x\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("one run's report lacks %q:\n%s", want, out.String())
		}
	}
	for _, unwanted := range []string{"target", ": met", "MISSED"} {
		if strings.Contains(out.String(), unwanted) {
			t.Errorf("one run's report says %q:\n%s", unwanted, out.String())
		}
	}

	// Three runs: medians and ranges.
	me2, me3 := me, me
	me2.value, me3.value = 0.8, 0.9
	burst := row("burst (500 at once, fresh server)", 500, ms, 2*ms, map[string]int{"503": 7}, 40)
	burst.note = "before the burst: 9.0 MiB"
	out.Reset()
	printSummary(&out, cfg, []*report{
		{rows: []result{row("ping", 100, ms, 3*ms, nil, 0), burst}, figures: []figure{me}},
		{rows: []result{row("ping", 300, 2*ms, 4*ms, nil, 0), burst}, figures: []figure{me2}},
		{rows: []result{row("ping", 200, 3*ms, 5*ms, map[string]int{"timeout": 1}, 0), burst}, figures: []figure{me3}},
	})
	for _, want := range []string{
		"-runs 3, GOMAXPROCS ",
		"| ping | 3 | 600 | 200 (100–300) | 2.00 ms (1.00 ms–3.00 ms) | 4.00 ms (3.00 ms–5.00 ms) | timeout: 1 | n/a |\n",
		"| burst (500 at once, fresh server) | 3 | 1500 | 500 (500–500) | ",
		"| 503: 21 | 40.0 MiB |\n",
		"- burst (500 at once, fresh server), run 2: before the burst: 9.0 MiB\n",
		"- /api/me vs /api/ping: median 0.80x (min–max 0.50–0.90x, 3 runs)\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("three runs' report lacks %q:\n%s", want, out.String())
		}
	}
}

func TestCombine(t *testing.T) {
	const ms = time.Millisecond
	a := result{name: "a", n: 10, elapsed: time.Second, lat: []time.Duration{1 * ms, 3 * ms}, errs: map[string]int{"503": 1}}
	b := result{name: "b", n: 30, elapsed: time.Second, lat: []time.Duration{2 * ms}, errs: map[string]int{"503": 2, "timeout": 1}}
	c := combine("both", a, b)
	if c.name != "both" || c.rate() != 20 {
		t.Errorf("combine: %s at %v/s, want both at 20/s", c.name, c.rate())
	}
	if !slices.Equal(c.lat, []time.Duration{1 * ms, 2 * ms, 3 * ms}) {
		t.Errorf("combined latencies %v, want sorted 1 2 3 ms", c.lat)
	}
	if c.errs["503"] != 3 || c.errs["timeout"] != 1 {
		t.Errorf("combined errors %v", c.errs)
	}
	// A note both turns share is said once.
	a.note, b.note = "same", "same"
	if c := combine("both", a, b); c.note != "same" {
		t.Errorf("combined notes %q, want one", c.note)
	}
	if len(a.lat) != 2 || a.lat[1] != 3*ms {
		t.Errorf("combine changed its input: %v", a.lat)
	}
}

// TestRepeatedPhases: a phase run more than once in a run is one row over
// all its turns, and the ratio of me to ping is over all of theirs.
func TestRepeatedPhases(t *testing.T) {
	const ms = time.Millisecond
	rp := &report{}
	rp.add(row("ping", 100, ms, 2*ms, nil, 10))
	rp.add(row("me", 50, ms, 3*ms, map[string]int{"503": 1}, 12))
	rp.add(row("ping", 300, 2*ms, 4*ms, nil, 11))
	rp.add(row("me", 250, ms, 5*ms, nil, 9))
	if len(rp.rows) != 2 || rp.rows[0].name != "ping" || rp.rows[1].name != "me" {
		t.Fatalf("rows %+v, want ping then me", rp.rows)
	}
	ping, me := rp.rows[0], rp.rows[1]
	if ping.n != 400 || ping.elapsed != 2*time.Second || ping.rate() != 200 || len(ping.lat) != 4 {
		t.Errorf("ping over two turns: %d requests in %v, %d latencies", ping.n, ping.elapsed, len(ping.lat))
	}
	if me.rate() != 150 || me.errs["503"] != 1 || me.hwm != 12<<20 {
		t.Errorf("me over two turns: %v/s, errors %v, peak %d", me.rate(), me.errs, me.hwm)
	}
	if !slices.IsSorted(me.lat) {
		t.Errorf("latencies not sorted: %v", me.lat)
	}
	if got := turns([]string{"ping", "me", "ping", "me", "refresh"}, "me", "ping"); got != ", over 2 turns of me and 2 of ping" {
		t.Errorf("turns = %q", got)
	}
	if got := turns([]string{"ping", "me"}, "me", "ping"); got != "" {
		t.Errorf("one turn each: turns = %q, want none", got)
	}
}

func TestCPU(t *testing.T) {
	// This process, read the way the demo is read.
	if _, err := processCPU(os.Getpid()); err != nil {
		t.Errorf("processCPU(self): %v", err)
	}
	if _, err := interruptCPU(); err != nil {
		t.Errorf("interruptCPU: %v", err)
	}
	if db, others, err := processesCPU([]string{"postgres"}, os.Getpid()); err != nil || others <= 0 || db < 0 {
		t.Errorf("processesCPU = %v, %v, %v", db, others, err)
	}
	a := cpuReading{server: 1 * time.Second, self: 2 * time.Second, others: 10 * time.Second, ok: true}
	b := cpuReading{server: 3 * time.Second, self: 5 * time.Second, others: 11 * time.Second, ok: true}
	if u, ok := cpuBetween(a, b); !ok || u != (cpuUse{server: 2 * time.Second, client: 3 * time.Second, other: time.Second}) {
		t.Errorf("cpuBetween = %+v, %v", u, ok)
	}
	// A process that ended unwaited for can make the others' share come
	// out below zero.
	b.others = 9 * time.Second
	if u, _ := cpuBetween(a, b); u.other != 0 {
		t.Errorf("other = %v, want 0", u.other)
	}
	// The database server's time, read on both sides, and the interrupt
	// handlers' are columns of their own.
	a.db, a.dbRead, a.irq = 4*time.Second, true, time.Second
	b.db, b.dbRead, b.irq, b.others = 5*time.Second, true, 1500*time.Millisecond, 10500*time.Millisecond
	if u, ok := cpuBetween(a, b); !ok || u != (cpuUse{server: 2 * time.Second, client: 3 * time.Second, db: time.Second, dbOK: true, irq: 500 * time.Millisecond, other: 500 * time.Millisecond}) {
		t.Errorf("cpuBetween with the database and interrupts = %+v, %v", u, ok)
	}
	if u, _ := cpuBetween(a, cpuReading{server: 3 * time.Second, self: 5 * time.Second, others: 11 * time.Second, ok: true}); u.dbOK {
		t.Errorf("cpuBetween with one database reading = %+v, want none", u)
	}
	if _, ok := cpuBetween(a, cpuReading{}); ok {
		t.Error("cpuBetween accepted a failed reading")
	}

	// Per request in the report; rows without a reading have no line.
	const ms = time.Millisecond
	r := row("me", 1000, ms, 2*ms, nil, 0)
	r.cpu, r.cpuOK = cpuUse{server: 15 * ms, client: 20 * ms, irq: 50 * ms, other: 100 * ms}, true
	r2 := r
	r2.cpu.server = 25 * ms
	var out bytes.Buffer
	rdb := r
	rdb.name, rdb.cpu.db, rdb.cpu.dbOK = "refresh", 40*ms, true
	printReport(&out, &report{cfg: config{db: "memory", c: 4, d: time.Second}, rows: []result{r, rdb, row("argon2id raw (harness)", 9, ms, ms, nil, 0)}})
	if want := "| refresh | 15.0 µs | 20.0 µs | 40.0 µs | 0.05 cores | 0.10 cores |\n"; !strings.Contains(out.String(), want) {
		t.Errorf("report lacks %q:\n%s", want, out.String())
	}
	if want := "| me | 15.0 µs | 20.0 µs | n/a | 0.05 cores | 0.10 cores |\n"; !strings.Contains(out.String(), want) {
		t.Errorf("report lacks %q:\n%s", want, out.String())
	}
	if strings.Contains(out.String(), "| argon2id raw (harness) | n/a") || strings.Count(out.String(), "argon2id") != 1 {
		t.Errorf("a row without CPU readings is in the CPU table:\n%s", out.String())
	}
	out.Reset()
	printSummary(&out, config{db: "memory", c: 4, d: time.Second}, []*report{{rows: []result{r}}, {rows: []result{r2}}})
	if want := "| me | 20.0 µs (15.0 µs–25.0 µs) | 20.0 µs (20.0 µs–20.0 µs) | n/a | 0.05 cores (0.05 cores–0.05 cores) | 0.10 cores (0.10 cores–0.10 cores) |\n"; !strings.Contains(out.String(), want) {
		t.Errorf("summary lacks %q:\n%s", want, out.String())
	}
}
