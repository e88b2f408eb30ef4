// Command loadtest drives the demo server over HTTP on loopback and
// reports throughput, latency and the server's memory per phase, beside the
// baselines the performance targets are stated against, measured in the
// same run:
//
//	go run ./internal/cmd/loadtest -db memory -d 10s
//	go run ./internal/cmd/loadtest -db 'postgres://postgres@127.0.0.1:5432/test?sslmode=disable' -phases ping,me,refresh
//	go run ./internal/cmd/loadtest -db sqlite:/tmp/lt.db -phases refresh
//	go run ./internal/cmd/loadtest -db memory -phases ping,me,signup -runs 3
//
// Phases, each at fixed concurrency for a fixed time; -phases picks them,
// by default all but signup:
//
//   - ping: GET /api/ping, a trivial handler: the baseline for me.
//   - me: GET /api/me with a bearer access token, behind RequireSession.
//   - refresh: POST /auth/session/refresh in header mode, each worker
//     rotating its own session serially. With a SQL -db the harness also
//     runs a bare conditional UPDATE ... RETURNING on a scratch table in the
//     same database at the same concurrency: the baseline.
//   - signin: POST /auth/signin; beside it the raw argon2id rate at the
//     library's parameters, measured in this process while the server
//     idles, just before the phase and just after it, so that a drift in
//     the machine's speed during the phase weighs on both sides.
//   - signup: POST /auth/signup, each request with a new email; beside it
//     the raw argon2id rate measured the same way. The ratio is
//     informative: a sign-up also writes the user and its session.
//   - burst: in a fresh demo process, 500 sign-ins at once; every answer
//     must be 200, or 503 with Retry-After.
//
// With -runs N the phases run N times, each time against a fresh demo
// process with fresh users, and the report shows per row the median of
// each figure with its min–max, and holds the targets against the medians.
//
// Load generator and server share the machine's cores, so the absolute
// figures understate a dedicated server; the ratios compare like with like.
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	"golang.org/x/crypto/argon2"
	_ "modernc.org/sqlite"
)

// The targets of the performance brief.
const (
	targetMeVsPing       = 0.7
	targetRefreshVsBare  = 0.4
	targetRefreshMemory  = 10000.0 // per second
	targetSigninVsArgon2 = 0.9
	targetBurstRSS       = 256 << 20
	burstSize            = 500
	password             = "load test 1"
)

var allPhases = []string{"ping", "me", "refresh", "signin", "signup", "burst"}

type config struct {
	db     string
	c      int
	d      time.Duration
	phases []string
	demo   string
	runs   int
}

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "loadtest:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string) (config, error) {
	var cfg config
	var phases string
	fs := flag.NewFlagSet("loadtest", flag.ContinueOnError)
	fs.StringVar(&cfg.db, "db", "memory", "demo store: memory, sqlite:PATH or postgres://...")
	fs.IntVar(&cfg.c, "c", 16, "concurrent clients per phase (burst always uses 500)")
	fs.DurationVar(&cfg.d, "d", 10*time.Second, "duration of each phase")
	fs.StringVar(&phases, "phases", "ping,me,refresh,signin,burst", "comma-separated phases to run, in order, of: "+strings.Join(allPhases, ", "))
	fs.StringVar(&cfg.demo, "demo", "", "demo binary; default: go build ./examples/demo into a temporary directory")
	fs.IntVar(&cfg.runs, "runs", 1, "run the phases this many times, each with a fresh demo, and report medians with min–max")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	if cfg.c < 1 || cfg.d <= 0 || cfg.runs < 1 {
		return cfg, errors.New("-c, -d and -runs must be positive")
	}
	if cfg.db != "memory" && !strings.HasPrefix(cfg.db, "sqlite:") && !isPostgres(cfg.db) {
		return cfg, fmt.Errorf("-db %q: want memory, sqlite:PATH or postgres://...", cfg.db)
	}
	for _, p := range strings.Split(phases, ",") {
		p = strings.TrimSpace(p)
		if !slices.Contains(allPhases, p) {
			return cfg, fmt.Errorf("-phases: unknown phase %q", p)
		}
		cfg.phases = append(cfg.phases, p)
	}
	return cfg, nil
}

func isPostgres(db string) bool {
	return strings.HasPrefix(db, "postgres://") || strings.HasPrefix(db, "postgresql://")
}

// ---- the phase runner ----

// outcome is what one request came to: "" for success, else a short key
// for the error table ("401", "timeout", ...). stop ends the worker, for
// errors after which its state is useless (a revoked session).
type outcome struct {
	err  string
	stop bool
}

// result is one row of the report.
type result struct {
	name    string
	n       int
	elapsed time.Duration
	lat     []time.Duration // sorted
	errs    map[string]int
	rss     string // server memory after the phase, "" if not applicable
	hwm     int64  // the server's peak RSS in bytes, 0 if not applicable
	note    string
}

func (r result) rate() float64 {
	if r.elapsed <= 0 {
		return 0
	}
	return float64(r.n) / r.elapsed.Seconds()
}

// runPhase runs op on c workers until d has passed (a request under way
// then is finished and counted) and records every request's latency.
func runPhase(ctx context.Context, name string, c int, d time.Duration, op func(ctx context.Context, worker int) outcome) result {
	lats := make([][]time.Duration, c)
	errs := make([]map[string]int, c)
	start := time.Now()
	deadline := start.Add(d)
	var wg sync.WaitGroup
	for w := range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := make([]time.Duration, 0, 4096)
			e := map[string]int{}
			for ctx.Err() == nil && time.Now().Before(deadline) {
				t0 := time.Now()
				o := op(ctx, w)
				l = append(l, time.Since(t0))
				if o.err != "" {
					e[o.err]++
				}
				if o.stop {
					break
				}
			}
			lats[w], errs[w] = l, e
		}()
	}
	wg.Wait()
	r := result{name: name, elapsed: time.Since(start), errs: map[string]int{}}
	for w := range c {
		r.lat = append(r.lat, lats[w]...)
		for k, v := range errs[w] {
			r.errs[k] += v
		}
	}
	slices.Sort(r.lat)
	r.n = len(r.lat)
	return r
}

// percentile is the nearest-rank percentile (0 < p <= 100) of sorted
// latencies: the smallest value at or above p percent of them.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*p/100+0.999999999) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// ---- HTTP ----

type client struct {
	base string
	hc   *http.Client
}

func newClient(base string, conns int, timeout time.Duration) *client {
	tr := &http.Transport{
		Proxy:               nil, // loopback only, never a proxy
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		IdleConnTimeout:     time.Minute,
		DisableCompression:  true,
	}
	return &client{base: base, hc: &http.Client{Transport: tr, Timeout: timeout}}
}

// answer is a response read in full.
type answer struct {
	code int
	hdr  http.Header
	body []byte
}

func (c *client) do(ctx context.Context, method, path, bearer, body string) (answer, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return answer{}, err
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if strings.HasPrefix(path, "/auth/") {
		req.Header.Set("st-auth-mode", "header")
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	res, err := c.hc.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return answer{code: res.StatusCode, hdr: res.Header, body: b}, err
}

// errKey names a transport error for the error table.
func errKey(err error) string {
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout(), errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "canceled"
	default:
		return "no answer"
	}
}

// expect200 turns an answer into an outcome: 200 with, for the auth
// endpoints, {"status":"OK"}.
func expect200(a answer, err error, authStatus bool) outcome {
	if err != nil {
		return outcome{err: errKey(err)}
	}
	if a.code != http.StatusOK {
		return outcome{err: strconv.Itoa(a.code)}
	}
	if authStatus && !bytes.Contains(a.body, []byte(`"status":"OK"`)) {
		var s struct{ Status string }
		json.Unmarshal(a.body, &s)
		return outcome{err: "200 " + s.Status}
	}
	return outcome{}
}

func credentials(email string) string {
	b, _ := json.Marshal(map[string]any{"formFields": []map[string]string{
		{"id": "email", "value": email}, {"id": "password", "value": password},
	}})
	return string(b)
}

// session is a worker's user and tokens.
type session struct {
	email, access, refresh string
}

// signUp creates n users in header mode, a few at a time.
func signUp(ctx context.Context, cl *client, prefix string, n int) ([]session, error) {
	out := make([]session, n)
	errc := make(chan error, n)
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			email := fmt.Sprintf("%s-%d@example.com", prefix, i)
			a, err := cl.do(ctx, "POST", "/auth/signup", "", credentials(email))
			if o := expect200(a, err, true); o.err != "" {
				errc <- fmt.Errorf("sign-up %s: %s %s %v", email, o.err, bytes.TrimSpace(a.body), err)
				return
			}
			out[i] = session{email, a.hdr.Get("st-access-token"), a.hdr.Get("st-refresh-token")}
			if out[i].access == "" || out[i].refresh == "" {
				errc <- fmt.Errorf("sign-up %s: no tokens in the response headers", email)
			}
		}()
	}
	wg.Wait()
	close(errc)
	return out, <-errc
}

// ---- the demo process ----

type server struct {
	cmd  *exec.Cmd
	base string
	log  string
	done chan struct{}
}

// startDemo starts the demo on a free loopback port and waits for its
// listening line.
func startDemo(bin, db, dir, name string) (*server, error) {
	logPath := filepath.Join(dir, name+".log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd := exec.Command(bin, "-addr", "127.0.0.1:0", "-db", db, "-access-ttl", "1h")
	cmd.Stderr = logf // the auth log: a line per outcome, kept off the harness
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{cmd: cmd, log: logPath, done: make(chan struct{})}
	addrc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "demo: listening on http://"); ok {
				addrc <- strings.Fields(rest)[0]
				break
			}
		}
		io.Copy(io.Discard, stdout)
		cmd.Wait()
		close(s.done)
	}()
	select {
	case addr := <-addrc:
		s.base = "http://" + addr
		if !strings.HasPrefix(addr, "127.0.0.1:") {
			s.stop()
			return nil, fmt.Errorf("demo listens on %s, not loopback", addr)
		}
		return s, nil
	case <-s.done:
		return nil, fmt.Errorf("demo exited before listening: %s", tail(logPath))
	case <-time.After(60 * time.Second):
		s.stop()
		return nil, fmt.Errorf("demo did not listen within 60s: %s", tail(logPath))
	}
}

func (s *server) stop() {
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(15 * time.Second):
		s.cmd.Process.Kill()
		<-s.done
	}
}

// memory reads the server's peak (VmHWM) and current (VmRSS) resident set
// in bytes.
func (s *server) memory() (hwm, rss int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 3 && f[2] == "kB" {
			v, _ := strconv.ParseInt(f[1], 10, 64)
			switch f[0] {
			case "VmHWM:":
				hwm = v << 10
			case "VmRSS:":
				rss = v << 10
			}
		}
	}
	return hwm, rss, nil
}

func (s *server) memoryString() (string, int64) {
	hwm, rss, err := s.memory()
	if err != nil {
		return "?", 0
	}
	return fmt.Sprintf("%s (now %s)", mib(hwm), mib(rss)), hwm
}

func tail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(bytes.TrimSpace(b))
}

func buildDemo(dir string) (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %v", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(out)))
	bin := filepath.Join(dir, "demo")
	cmd := exec.Command("go", "build", "-o", bin, "./examples/demo")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./examples/demo: %v\n%s", err, out)
	}
	return bin, nil
}

// ---- baselines measured in the harness ----

// rawArgon2 measures argon2Rate for up to 5 s.
func rawArgon2(d time.Duration) result {
	d = min(d, 5*time.Second)
	log(fmt.Sprintf("raw argon2id in the harness for %s", d))
	return argon2Rate(d)
}

// combine merges two measurements of one thing into one row.
func combine(name string, a, b result) result {
	c := result{name: name, n: a.n + b.n, elapsed: a.elapsed + b.elapsed, errs: map[string]int{}}
	c.lat = append(slices.Clone(a.lat), b.lat...)
	slices.Sort(c.lat)
	for _, m := range []map[string]int{a.errs, b.errs} {
		for k, v := range m {
			c.errs[k] += v
		}
	}
	return c
}

// argon2Rate hashes at the library's default parameters on GOMAXPROCS
// goroutines for d.
func argon2Rate(d time.Duration) result {
	salt := make([]byte, 16)
	rand.Read(salt)
	return runPhase(context.Background(), "argon2id raw (harness)", runtime.GOMAXPROCS(0), d, func(context.Context, int) outcome {
		argon2.IDKey([]byte(password), salt, 2, 19*1024, 1, 32)
		return outcome{}
	})
}

// bareRotate runs the rotation's statement alone, a conditional UPDATE ...
// RETURNING, on a new scratch table in the demo's database: each worker
// swaps its own row's value, as each client rotates its own session.
func bareRotate(ctx context.Context, db, table string, c int, d time.Duration) (result, error) {
	driver, dsn, ph := "pgx", db, []string{"$1", "$2", "$3"}
	if path, ok := strings.CutPrefix(db, "sqlite:"); ok {
		// The demo's settings: WAL, busy timeout, synchronous=FULL.
		driver, ph = "sqlite", []string{"?", "?", "?"}
		dsn = "file:" + path + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)"
	}
	sqldb, err := sql.Open(driver, dsn)
	if err != nil {
		return result{}, err
	}
	defer sqldb.Close()
	sqldb.SetMaxOpenConns(c)
	sqldb.SetMaxIdleConns(c)
	if _, err := sqldb.ExecContext(ctx, "CREATE TABLE "+table+" (id INTEGER PRIMARY KEY, cur TEXT NOT NULL)"); err != nil {
		return result{}, fmt.Errorf("creating the scratch table: %w", err)
	}
	defer sqldb.ExecContext(context.Background(), "DROP TABLE "+table)
	cur := make([]string, c)
	for w := range c {
		cur[w] = token()
		if _, err := sqldb.ExecContext(ctx, "INSERT INTO "+table+" (id, cur) VALUES ("+ph[0]+", "+ph[1]+")", w, cur[w]); err != nil {
			return result{}, err
		}
	}
	q := "UPDATE " + table + " SET cur = " + ph[0] + " WHERE id = " + ph[1] + " AND cur = " + ph[2] + " RETURNING id"
	r := runPhase(ctx, "bare rotate (harness)", c, d, func(ctx context.Context, w int) outcome {
		next := token()
		var id int
		if err := sqldb.QueryRowContext(ctx, q, next, w, cur[w]).Scan(&id); errors.Is(err, sql.ErrNoRows) {
			return outcome{err: "no row", stop: true}
		} else if err != nil {
			return outcome{err: "sql error"}
		}
		cur[w] = next
		return outcome{}
	})
	return r, nil
}

// token is a fresh value like the stored SHA-256 of a refresh token.
func token() string {
	b := make([]byte, 32)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// ---- the run ----

// report is one run of the phases: its rows and its target checks.
type report struct {
	cfg    config
	rows   []result
	checks []check
}

// check is a target check. value is the figure held against target: the
// target is met when value >= target, or, for a ceiling, value < target.
// format and unit print value; detail is the line's text. Over several
// runs a check is held against the median, or, for an everyRun check (a
// guarantee rather than a rate), against the worst run.
type check struct {
	what          string
	value, target float64
	ceiling       bool
	everyRun      bool
	format, unit  string
	detail        string
}

func (c check) met() bool {
	if c.ceiling {
		return c.value < c.target
	}
	return c.value >= c.target
}

func (c check) line() string {
	mark := "met"
	if !c.met() {
		mark = "**MISSED**"
	}
	return fmt.Sprintf("- %s: %s: %s", c.what, c.detail, mark)
}

func run(args []string) error {
	cfg, err := parseFlags(args)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	dir, err := os.MkdirTemp("", "loadtest")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin := cfg.demo
	if bin == "" {
		log("building ./examples/demo")
		if bin, err = buildDemo(dir); err != nil {
			return err
		}
	}
	runID := fmt.Sprintf("lt%d-%d", time.Now().UnixNano(), os.Getpid())
	var runs []*report
	for i := 1; i <= cfg.runs; i++ {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		id := runID
		if cfg.runs > 1 {
			log(fmt.Sprintf("run %d of %d", i, cfg.runs))
			id = fmt.Sprintf("%s-r%d", runID, i)
		}
		rp, err := runOnce(ctx, cfg, bin, dir, id, i)
		if err != nil {
			return err
		}
		runs = append(runs, rp)
	}
	if len(runs) == 1 {
		printReport(os.Stdout, runs[0])
	} else {
		printSummary(os.Stdout, cfg, runs)
	}
	return nil
}

// runOnce runs the phases once, against a demo process of its own; runID
// makes its users' emails unique, n its scratch table's name.
func runOnce(ctx context.Context, cfg config, bin, dir, runID string, n int) (*report, error) {
	rp := &report{cfg: cfg}
	var srv *server
	var cl *client
	var users []session
	for _, phase := range cfg.phases {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if phase == "burst" {
			if err := burst(ctx, rp, bin, dir, runID); err != nil {
				return nil, err
			}
			continue
		}
		if srv == nil {
			log("starting the demo, -db " + redact(cfg.db))
			var err error
			if srv, err = startDemo(bin, cfg.db, dir, "demo"); err != nil {
				return nil, err
			}
			defer srv.stop()
			cl = newClient(srv.base, cfg.c, 30*time.Second)
			log(fmt.Sprintf("signing up %d users", cfg.c))
			if users, err = signUp(ctx, cl, runID, cfg.c); err != nil {
				return nil, err
			}
		}
		var argonBefore result
		if phase == "signin" || phase == "signup" {
			argonBefore = rawArgon2(cfg.d)
		}
		log("phase " + phase)
		var r result
		switch phase {
		case "ping":
			r = runPhase(ctx, "ping", cfg.c, cfg.d, func(ctx context.Context, w int) outcome {
				a, err := cl.do(ctx, "GET", "/api/ping", "", "")
				return expect200(a, err, false)
			})
		case "me":
			r = runPhase(ctx, "me", cfg.c, cfg.d, func(ctx context.Context, w int) outcome {
				a, err := cl.do(ctx, "GET", "/api/me", users[w].access, "")
				return expect200(a, err, false)
			})
		case "refresh":
			r = runPhase(ctx, "refresh", cfg.c, cfg.d, func(ctx context.Context, w int) outcome {
				a, err := cl.do(ctx, "POST", "/auth/session/refresh", users[w].refresh, "")
				o := expect200(a, err, true)
				if o.err != "" {
					// A 401 means the session is gone; anything else
					// leaves us unsure whether the token was used.
					o.stop = true
					return o
				}
				ref, acc := a.hdr.Get("st-refresh-token"), a.hdr.Get("st-access-token")
				if ref == "" || acc == "" {
					return outcome{err: "200 without tokens", stop: true}
				}
				users[w].refresh, users[w].access = ref, acc
				return outcome{}
			})
		case "signin":
			r = runPhase(ctx, "signin", cfg.c, cfg.d, func(ctx context.Context, w int) outcome {
				a, err := cl.do(ctx, "POST", "/auth/signin", "", credentials(users[w].email))
				return expect200(a, err, true)
			})
		case "signup":
			sent := make([]int, cfg.c) // per worker, so each email is new
			r = runPhase(ctx, "signup", cfg.c, cfg.d, func(ctx context.Context, w int) outcome {
				sent[w]++
				email := fmt.Sprintf("%s-signup-%d-%d@example.com", runID, w, sent[w])
				a, err := cl.do(ctx, "POST", "/auth/signup", "", credentials(email))
				return expect200(a, err, true)
			})
		}
		r.rss, r.hwm = srv.memoryString()
		rp.rows = append(rp.rows, r)

		// Baselines, while the server is idle.
		switch phase {
		case "refresh":
			if cfg.db != "memory" {
				log("bare rotate in the harness")
				table := fmt.Sprintf("loadtest_rotate_%d_%d", os.Getpid(), n)
				b, err := bareRotate(ctx, cfg.db, table, cfg.c, cfg.d)
				if err != nil {
					return nil, fmt.Errorf("bare rotate: %w", err)
				}
				rp.rows = append(rp.rows, b)
				ratio := 0.0
				if b.rate() > 0 {
					ratio = r.rate() / b.rate()
				}
				rp.checks = append(rp.checks, check{
					what:  fmt.Sprintf("refresh over HTTP vs bare rotate, %d clients (target ≥ %.1fx)", cfg.c, targetRefreshVsBare),
					value: ratio, target: targetRefreshVsBare, format: "%.2f", unit: "x",
					detail: fmt.Sprintf("%.0f/s vs %.0f/s = %.2fx; refresh p99 %s", r.rate(), b.rate(), r.rate()/b.rate(), ms(percentile(r.lat, 99))),
				})
			} else {
				rp.checks = append(rp.checks, check{
					what:  fmt.Sprintf("refresh over HTTP on memstore, %d clients (target ≥ %.0f/s)", cfg.c, targetRefreshMemory),
					value: r.rate(), target: targetRefreshMemory, format: "%.0f", unit: "/s",
					detail: fmt.Sprintf("%.0f/s; p99 %s", r.rate(), ms(percentile(r.lat, 99))),
				})
			}
		case "signin", "signup":
			argon := combine("argon2id raw (harness), around "+phase, argonBefore, rawArgon2(cfg.d))
			rp.rows = append(rp.rows, argon)
			what := fmt.Sprintf("sign-in vs raw argon2id m=19 MiB t=2 p=1 on %d goroutines (target ≥ %.2fx)", runtime.GOMAXPROCS(0), targetSigninVsArgon2)
			if phase == "signup" {
				what = fmt.Sprintf("sign-up vs raw argon2id m=19 MiB t=2 p=1 on %d goroutines (target ≥ %.2fx; informative: a sign-up also writes the user and its session)", runtime.GOMAXPROCS(0), targetSigninVsArgon2)
			}
			ratio := r.rate() / argon.rate()
			rp.checks = append(rp.checks, check{
				what: what, value: ratio, target: targetSigninVsArgon2, format: "%.2f", unit: "x",
				detail: fmt.Sprintf("%.1f/s vs %.1f/s = %.2fx", r.rate(), argon.rate(), ratio),
			})
		}
	}
	if ping, me := find(rp.rows, "ping"), find(rp.rows, "me"); ping != nil && me != nil {
		ratio := me.rate() / ping.rate()
		rp.checks = append(rp.checks, check{
			what:  fmt.Sprintf("/api/me vs /api/ping (target ≥ %.1fx)", targetMeVsPing),
			value: ratio, target: targetMeVsPing, format: "%.2f", unit: "x",
			detail: fmt.Sprintf("%.0f/s vs %.0f/s = %.2fx", me.rate(), ping.rate(), ratio),
		})
	}
	return rp, nil
}

// burst starts a fresh demo, so that its peak memory is the burst's own,
// and sends burstSize sign-ins at once, each on its own connection.
func burst(ctx context.Context, rp *report, bin, dir, runID string) error {
	log("phase burst: starting a fresh demo")
	s, err := startDemo(bin, rp.cfg.db, dir, "demo-burst")
	if err != nil {
		return err
	}
	defer s.stop()
	cl := newClient(s.base, burstSize, 30*time.Second)
	users, err := signUp(ctx, cl, runID+"-burst", 1)
	if err != nil {
		return err
	}
	before, _ := s.memoryString()
	body := credentials(users[0].email)
	var (
		mu      sync.Mutex
		lat     []time.Duration
		errs    = map[string]int{}
		codes   = map[int]int{}
		started sync.WaitGroup
		wg      sync.WaitGroup
	)
	gate := make(chan struct{})
	for range burstSize {
		started.Add(1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			started.Done()
			<-gate
			t0 := time.Now()
			a, err := cl.do(ctx, "POST", "/auth/signin", "", body)
			d := time.Since(t0)
			mu.Lock()
			defer mu.Unlock()
			lat = append(lat, d)
			switch {
			case err != nil:
				errs[errKey(err)]++
			case a.code == http.StatusOK:
				codes[a.code]++
				if !bytes.Contains(a.body, []byte(`"status":"OK"`)) {
					errs["200 not OK"]++
				}
			case a.code == http.StatusServiceUnavailable:
				codes[a.code]++
				if a.hdr.Get("Retry-After") == "" {
					errs["503 without Retry-After"]++
				} else {
					errs["503"]++
				}
			default:
				codes[a.code]++
				errs[strconv.Itoa(a.code)]++
			}
		}()
	}
	started.Wait()
	start := time.Now()
	close(gate)
	wg.Wait()
	r := result{name: fmt.Sprintf("burst (%d at once, fresh server)", burstSize), n: len(lat), elapsed: time.Since(start), lat: lat, errs: errs}
	slices.Sort(r.lat)
	r.rss, r.hwm = s.memoryString()
	r.note = "before the burst: " + before
	rp.rows = append(rp.rows, r)

	answered := codes[http.StatusOK] + codes[http.StatusServiceUnavailable] - errs["503 without Retry-After"]
	rp.checks = append(rp.checks, check{
		what:  fmt.Sprintf("burst of %d sign-ins: every answer 200, or 503 with Retry-After; none unanswered", burstSize),
		value: float64(answered), target: burstSize, format: "%.0f", unit: " answered", everyRun: true,
		detail: fmt.Sprintf("%d ok, %d 503 with Retry-After, %d other (%s)",
			codes[http.StatusOK], errs["503"], burstSize-answered, formatErrs(errs, "503")),
	})
	peak := math.Inf(1) // unread: missed
	if r.hwm > 0 {
		peak = float64(r.hwm) / (1 << 20)
	}
	rp.checks = append(rp.checks, check{
		what:  fmt.Sprintf("burst peak RSS of the server (target < %s)", mib(targetBurstRSS)),
		value: peak, target: targetBurstRSS / (1 << 20), ceiling: true, everyRun: true, format: "%.1f", unit: " MiB",
		detail: "VmHWM " + mib(r.hwm),
	})
	return nil
}

func find(rows []result, name string) *result {
	for i := range rows {
		if rows[i].name == name {
			return &rows[i]
		}
	}
	return nil
}

// ---- several runs ----

// spread is one figure across runs: its median, minimum and maximum.
type spread struct{ med, min, max float64 }

// spreadOf needs at least one value; the median of an even count is the
// mean of the middle two.
func spreadOf(xs []float64) spread {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	med := s[n/2]
	if n%2 == 0 {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	return spread{med: med, min: s[0], max: s[n-1]}
}

// summary is a row of the report over several runs.
type summary struct {
	name           string
	runs           int // runs that have the row
	n              int // requests, all runs
	rate, p50, p99 spread
	errs           map[string]int // all runs
	hwm            int64          // the highest peak RSS of the runs, 0 if not applicable
	notes          []string
}

// aggregate sums runs up: a summary per row name and a check per target,
// in the order they first appear. A check's value becomes the median of
// its runs' values, so that the target is held against the median, and
// its detail shows that median with the min–max.
func aggregate(runs []*report) ([]summary, []check) {
	var rows []summary
	rowAt := map[string]int{}
	var rates, p50s, p99s [][]float64
	for i, rp := range runs {
		for _, r := range rp.rows {
			j, ok := rowAt[r.name]
			if !ok {
				j = len(rows)
				rowAt[r.name] = j
				rows = append(rows, summary{name: r.name, errs: map[string]int{}})
				rates, p50s, p99s = append(rates, nil), append(p50s, nil), append(p99s, nil)
			}
			s := &rows[j]
			s.runs++
			s.n += r.n
			rates[j] = append(rates[j], r.rate())
			p50s[j] = append(p50s[j], float64(percentile(r.lat, 50)))
			p99s[j] = append(p99s[j], float64(percentile(r.lat, 99)))
			for k, v := range r.errs {
				s.errs[k] += v
			}
			s.hwm = max(s.hwm, r.hwm)
			if r.note != "" {
				s.notes = append(s.notes, fmt.Sprintf("run %d: %s", i+1, r.note))
			}
		}
	}
	for j := range rows {
		rows[j].rate, rows[j].p50, rows[j].p99 = spreadOf(rates[j]), spreadOf(p50s[j]), spreadOf(p99s[j])
	}

	var checks []check
	checkAt := map[string]int{}
	var values [][]float64
	for _, rp := range runs {
		for _, c := range rp.checks {
			j, ok := checkAt[c.what]
			if !ok {
				j = len(checks)
				checkAt[c.what] = j
				checks = append(checks, c)
				values = append(values, nil)
			}
			values[j] = append(values[j], c.value)
		}
	}
	for j := range checks {
		c := &checks[j]
		s := spreadOf(values[j])
		c.value = s.med
		basis := "median"
		if c.everyRun {
			c.value, basis = s.min, "worst run"
			if c.ceiling {
				c.value = s.max
			}
		}
		c.detail = fmt.Sprintf(basis+" "+c.format+"%s (min–max "+c.format+"–"+c.format+"%s, %d runs)",
			c.value, c.unit, s.min, s.max, c.unit, len(values[j]))
	}
	return rows, checks
}

// ---- output ----

// printReport prints one run.
func printReport(w io.Writer, rp *report) {
	fmt.Fprintf(w, "\n### loadtest: -db %s, -c %d, -d %s, GOMAXPROCS %d, %s\n\n",
		redact(rp.cfg.db), rp.cfg.c, rp.cfg.d, runtime.GOMAXPROCS(0), runtime.Version())
	fmt.Fprintln(w, "| phase | requests | ops/s | p50 | p99 | errors (by status) | server peak RSS (VmHWM) |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
	for _, r := range rp.rows {
		rss := r.rss
		if rss == "" {
			rss = "n/a"
		}
		fmt.Fprintf(w, "| %s | %d | %s | %s | %s | %s | %s |\n", r.name, r.n, rateString(r.rate()),
			ms(percentile(r.lat, 50)), ms(percentile(r.lat, 99)), formatErrs(r.errs, ""), rss)
	}
	fmt.Fprintln(w)
	for _, r := range rp.rows {
		if r.note != "" {
			fmt.Fprintf(w, "- %s: %s\n", r.name, r.note)
		}
	}
	printChecks(w, rp.checks)
}

// printSummary prints several runs: per row the median with the min–max.
func printSummary(w io.Writer, cfg config, runs []*report) {
	rows, checks := aggregate(runs)
	fmt.Fprintf(w, "\n### loadtest: -db %s, -c %d, -d %s, -runs %d, GOMAXPROCS %d, %s\n\n",
		redact(cfg.db), cfg.c, cfg.d, len(runs), runtime.GOMAXPROCS(0), runtime.Version())
	fmt.Fprintf(w, "Each run against a fresh demo. ops/s, p50 and p99: median (min–max) of the runs; requests and errors: all runs; peak RSS: the highest of the runs.\n\n")
	fmt.Fprintln(w, "| phase | runs | requests | ops/s | p50 | p99 | errors (by status) | server peak RSS (VmHWM) |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	toMs := func(v float64) string { return ms(time.Duration(v)) }
	for _, s := range rows {
		rss := "n/a"
		if s.hwm > 0 {
			rss = mib(s.hwm)
		}
		fmt.Fprintf(w, "| %s | %d | %d | %s | %s | %s | %s | %s |\n", s.name, s.runs, s.n,
			spreadString(s.rate, rateString), spreadString(s.p50, toMs), spreadString(s.p99, toMs),
			formatErrs(s.errs, ""), rss)
	}
	fmt.Fprintln(w)
	for _, s := range rows {
		for _, note := range s.notes {
			fmt.Fprintf(w, "- %s, %s\n", s.name, note)
		}
	}
	printChecks(w, checks)
}

func printChecks(w io.Writer, checks []check) {
	fmt.Fprintln(w, "\nTargets:")
	fmt.Fprintln(w)
	for _, c := range checks {
		fmt.Fprintln(w, c.line())
	}
	if len(checks) == 0 {
		fmt.Fprintln(w, "- none of the phases run has a target")
	}
}

// spreadString prints "median (min–max)".
func spreadString(s spread, f func(float64) string) string {
	return fmt.Sprintf("%s (%s–%s)", f(s.med), f(s.min), f(s.max))
}

// formatErrs lists error counts, most frequent first, but skip.
func formatErrs(errs map[string]int, skip string) string {
	keys := make([]string, 0, len(errs))
	for k, v := range errs {
		if k != skip && v > 0 {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return "0"
	}
	sort.Slice(keys, func(i, j int) bool {
		if errs[keys[i]] != errs[keys[j]] {
			return errs[keys[i]] > errs[keys[j]]
		}
		return keys[i] < keys[j]
	})
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s: %d", k, errs[k])
	}
	return b.String()
}

func rateString(r float64) string {
	if r >= 100 {
		return strconv.FormatFloat(r, 'f', 0, 64)
	}
	return strconv.FormatFloat(r, 'f', 1, 64)
}

func ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 2, 64) + " ms"
}

func mib(b int64) string {
	return strconv.FormatFloat(float64(b)/(1<<20), 'f', 1, 64) + " MiB"
}

func redact(db string) string {
	if u, err := url.Parse(db); err == nil && u.User != nil {
		return u.Redacted()
	}
	return db
}

func log(msg string) {
	fmt.Fprintf(os.Stderr, "%s loadtest: %s\n", time.Now().Format("15:04:05"), msg)
}
