package main

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/latchkit/auth/store/sqlstore"
)

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
	cpu     cpuUse // during the phase, if cpuOK
	cpuOK   bool
}

// cpuPerRequest is the server's, the load generator's and the database
// server's CPU time per request (db is -1 where there is no database
// server to read: memory, SQLite), and the cores that the interrupt
// handlers and other processes used meanwhile.
func (r result) cpuPerRequest() (server, client, db time.Duration, irqCores, otherCores float64, ok bool) {
	if !r.cpuOK || r.n == 0 || r.elapsed <= 0 {
		return 0, 0, 0, 0, 0, false
	}
	n := time.Duration(r.n)
	db = -1
	if r.cpu.dbOK {
		db = r.cpu.db / n
	}
	sec := r.elapsed.Seconds()
	return r.cpu.server / n, r.cpu.client / n, db, r.cpu.irq.Seconds() / sec, r.cpu.other.Seconds() / sec, true
}

func (r result) rate() float64 {
	if r.elapsed <= 0 {
		return 0
	}
	return float64(r.n) / r.elapsed.Seconds()
}

// combine merges two measurements of one thing into one row: the rate
// over both, all latencies and errors; the memory read after the later.
func combine(name string, a, b result) result {
	c := result{name: name, n: a.n + b.n, elapsed: a.elapsed + b.elapsed, errs: map[string]int{}}
	c.lat = append(slices.Clone(a.lat), b.lat...)
	slices.Sort(c.lat)
	for _, m := range []map[string]int{a.errs, b.errs} {
		for k, v := range m {
			c.errs[k] += v
		}
	}
	c.rss, c.hwm = b.rss, max(a.hwm, b.hwm)
	if a.cpuOK && b.cpuOK {
		c.cpuOK = true
		c.cpu = cpuUse{server: a.cpu.server + b.cpu.server, client: a.cpu.client + b.cpu.client,
			db: a.cpu.db + b.cpu.db, dbOK: a.cpu.dbOK && b.cpu.dbOK, irq: a.cpu.irq + b.cpu.irq, other: a.cpu.other + b.cpu.other}
	}
	var notes []string
	for _, n := range []string{a.note, b.note} {
		if n != "" && !slices.Contains(notes, n) {
			notes = append(notes, n)
		}
	}
	c.note = strings.Join(notes, "; ")
	return c
}

// add appends a phase's row to the report, or merges it into the row of
// the same phase run earlier in this run: -phases ping,me,ping,me
// interleaves the two so that a drift in the machine's speed, or another
// process's burst of work, weighs on both; each row and ratio is then
// over all of a phase's turns.
func (rp *report) add(r result) {
	for i := range rp.rows {
		if rp.rows[i].name == r.name {
			rp.rows[i] = combine(r.name, rp.rows[i], r)
			return
		}
	}
	rp.rows = append(rp.rows, r)
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

// runOnce runs the phases once, against a demo process of its own; runID
// makes its users' emails unique, n its scratch table's name.
func runOnce(ctx context.Context, cfg config, bin, dir, runID string, n int) (*report, error) {
	rp := &report{cfg: cfg}
	var srv *server
	var cl *client
	var users []session
	var ba *server // Better Auth, for signin-betterauth
	var baClient *client
	var baUsers []string
	var fl *floor // the floor's server, for refresh-floor
	dbNames := dbProcessNames(cfg.db)
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
		if phase == "signin-betterauth" {
			if ba == nil {
				log("starting better auth: node " + cfg.betterauth)
				var err error
				if ba, err = startBetterAuth(cfg.betterauth, cfg.db, dir); err != nil {
					return nil, err
				}
				defer ba.stop()
				baClient = newClient(ba.base, cfg.c, 30*time.Second)
				log(fmt.Sprintf("signing up %d better auth users", cfg.c))
				if baUsers, err = baSignUp(ctx, baClient, runID+"-ba", cfg.c); err != nil {
					return nil, err
				}
			}
			log("phase " + phase)
			cpu0 := readCPU(ba.cmd.Process.Pid, dbNames)
			r := runPhase(ctx, phase, cfg.c, cfg.d, func(ctx context.Context, w int) outcome {
				a, err := baClient.do(ctx, "POST", "/api/auth/sign-in/email", "", baCredentials(baUsers[w], ""))
				return expectBAToken(a, err)
			})
			r.cpu, r.cpuOK = cpuBetween(cpu0, readCPU(ba.cmd.Process.Pid, dbNames))
			r.rss, r.hwm = ba.memoryString()
			r.note = "its server CPU is the Node process's"
			logResult(r)
			rp.add(r)
			continue
		}
		if phase == "refresh-floor" {
			if fl == nil {
				log("starting the floor's server, -db " + redact(cfg.db))
				var err error
				table := fmt.Sprintf("loadtest_floor_%d_%d", os.Getpid(), n)
				if fl, err = startFloor(ctx, cfg.db, dir, table, cfg.c); err != nil {
					return nil, fmt.Errorf("refresh-floor: %w", err)
				}
				defer fl.stop()
			}
			log("phase " + phase)
			cpu0 := readCPU(fl.srv.cmd.Process.Pid, dbNames)
			r := fl.phase(ctx, cfg.c, cfg.d)
			r.cpu, r.cpuOK = cpuBetween(cpu0, readCPU(fl.srv.cmd.Process.Pid, dbNames))
			r.rss, r.hwm = fl.srv.memoryString()
			r.note = "net/http and the bare rotate statement in a process of the harness's own; its server CPU is that process's"
			logResult(r)
			rp.add(r)
			continue
		}
		if srv == nil {
			log("starting the demo, -db " + redact(cfg.db))
			var err error
			if srv, err = startDemo(bin, cfg.db, dir, "demo"); err != nil {
				return nil, err
			}
			defer srv.stop()
			if cfg.db != "memory" {
				if err := forgetLimits(ctx, cfg.db); err != nil {
					return nil, err
				}
			}
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
		cpu0 := readCPU(srv.cmd.Process.Pid, dbNames)
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
		r.cpu, r.cpuOK = cpuBetween(cpu0, readCPU(srv.cmd.Process.Pid, dbNames))
		r.rss, r.hwm = srv.memoryString()
		logResult(r)
		rp.add(r)

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
				rp.add(b)
				ratio := 0.0
				if b.rate() > 0 {
					ratio = r.rate() / b.rate()
				}
				rp.figures = append(rp.figures, figure{
					what:  fmt.Sprintf("refresh over HTTP vs bare rotate, %d clients", cfg.c),
					value: ratio, format: "%.2f", unit: "x",
					detail: fmt.Sprintf("%.0f/s vs %.0f/s = %.2fx; refresh p99 %s", r.rate(), b.rate(), r.rate()/b.rate(), ms(percentile(r.lat, 99))),
				})
			} else {
				rp.figures = append(rp.figures, figure{
					what:  fmt.Sprintf("refresh over HTTP on memstore, %d clients", cfg.c),
					value: r.rate(), format: "%.0f", unit: "/s",
					detail: fmt.Sprintf("%.0f/s; p99 %s", r.rate(), ms(percentile(r.lat, 99))),
				})
			}
		case "signin", "signup":
			argon := combine("argon2id raw (harness), around "+phase, argonBefore, rawArgon2(cfg.d))
			rp.add(argon)
			what := fmt.Sprintf("sign-in vs raw argon2id m=19 MiB t=2 p=1 on %d goroutines", runtime.GOMAXPROCS(0))
			if phase == "signup" {
				what = fmt.Sprintf("sign-up vs raw argon2id m=19 MiB t=2 p=1 on %d goroutines (a sign-up also writes the user and its session)", runtime.GOMAXPROCS(0))
			}
			ratio := r.rate() / argon.rate()
			rp.figures = append(rp.figures, figure{
				what: what, value: ratio, format: "%.2f", unit: "x",
				detail: fmt.Sprintf("%.1f/s vs %.1f/s = %.2fx", r.rate(), argon.rate(), ratio),
			})
		}
	}
	// Over every turn of each: see add.
	if refresh, fr := find(rp.rows, "refresh"), find(rp.rows, "refresh-floor"); refresh != nil && fr != nil && fr.rate() > 0 {
		ratio := refresh.rate() / fr.rate()
		cpu := ""
		if rs, _, _, _, _, ok := refresh.cpuPerRequest(); ok {
			if fs, _, _, _, _, ok := fr.cpuPerRequest(); ok {
				cpu = fmt.Sprintf("; server CPU per request %s vs %s", us(rs), us(fs))
			}
		}
		rp.figures = append(rp.figures, figure{
			what:  fmt.Sprintf("refresh over HTTP vs its floor (net/http and the bare rotate statement), %d clients", cfg.c),
			value: ratio, format: "%.2f", unit: "x",
			detail: fmt.Sprintf("%.0f/s vs %.0f/s = %.2fx%s%s", refresh.rate(), fr.rate(), ratio, cpu, turns(cfg.phases, "refresh", "refresh-floor")),
		})
	}
	if demo, peer := find(rp.rows, "signin"), find(rp.rows, "signin-betterauth"); demo != nil && peer != nil && peer.rate() > 0 {
		ratio := demo.rate() / peer.rate()
		rp.figures = append(rp.figures, figure{
			what:  fmt.Sprintf("demo sign-in vs Better Auth with @node-rs/argon2, %d clients", cfg.c),
			value: ratio, format: "%.2f", unit: "x",
			detail: fmt.Sprintf("%.1f/s vs %.1f/s = %.2fx%s", demo.rate(), peer.rate(), ratio, turns(cfg.phases, "signin", "signin-betterauth")),
		})
	}
	if ping, me := find(rp.rows, "ping"), find(rp.rows, "me"); ping != nil && me != nil {
		ratio := me.rate() / ping.rate()
		rp.figures = append(rp.figures, figure{
			what:  "/api/me vs /api/ping",
			value: ratio, format: "%.2f", unit: "x",
			detail: fmt.Sprintf("%.0f/s vs %.0f/s = %.2fx%s", me.rate(), ping.rate(), ratio, turns(cfg.phases, "me", "ping")),
		})
	}
	return rp, nil
}

// burst starts a fresh demo, so that its peak memory is the burst's own,
// signs up burstSize users and sends their sign-ins at once, each on its
// own connection from a loopback address of its own (see burstClient):
// as many people signing in at the same moment from their own machines,
// not one client that the rate limits would turn away past its allowance.
// On PostgreSQL it also counts the demo's connections to the server,
// during the burst and a second after it.
func burst(ctx context.Context, rp *report, bin, dir, runID string) error {
	log("phase burst: starting a fresh demo")
	db, app := rp.cfg.db, ""
	if isPostgres(db) {
		// A name of the demo's own, to count its connections only.
		var err error
		app = "loadtest-burst-" + runID
		if db, err = withApplicationName(db, app); err != nil {
			return err
		}
	}
	s, err := startDemo(bin, db, dir, "demo-burst")
	if err != nil {
		return err
	}
	defer s.stop()
	clients := make([]*client, burstSize)
	for i := range clients {
		clients[i] = burstClient(s.base, i)
	}
	log(fmt.Sprintf("phase burst: signing up %d users", burstSize))
	emails := make([]string, burstSize)
	err = fewAtATime(burstSize, func(i int) error {
		emails[i] = fmt.Sprintf("%s-burst-%d@example.com", runID, i)
		a, err := clients[i].do(ctx, "POST", "/auth/signup", "", credentials(emails[i]))
		if o := expect200(a, err, true); o.err != "" {
			return fmt.Errorf("sign-up %s: %s %s %v", emails[i], o.err, bytes.TrimSpace(a.body), err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	var conns *connCounter
	if app != "" {
		if conns, err = countConnections(ctx, rp.cfg.db, app); err != nil {
			return err
		}
		defer conns.db.Close()
	}
	before, _ := s.memoryString()
	before = "before the burst, after its sign-ups: " + before
	if s.resetPeak() {
		before += "; the peak is the burst's own"
	} else {
		before += "; the peak includes the sign-ups"
	}
	var (
		mu      sync.Mutex
		lat     []time.Duration
		errs    = map[string]int{}
		codes   = map[int]int{}
		started sync.WaitGroup
		wg      sync.WaitGroup
	)
	gate := make(chan struct{})
	for i := range burstSize {
		started.Add(1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			started.Done()
			<-gate
			t0 := time.Now()
			a, err := clients[i].do(ctx, "POST", "/auth/signin", "", credentials(emails[i]))
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
	if conns != nil {
		conns.start()
	}
	close(gate)
	wg.Wait()
	r := result{name: fmt.Sprintf("burst (%d at once, fresh server)", burstSize), n: len(lat), elapsed: time.Since(start), lat: lat, errs: errs}
	slices.Sort(r.lat)
	r.rss, r.hwm = s.memoryString()
	r.note = before
	rp.add(r)

	answered := codes[http.StatusOK] + codes[http.StatusServiceUnavailable] - errs["503 without Retry-After"]
	rp.figures = append(rp.figures, figure{
		what:  fmt.Sprintf("burst of %d sign-ins answered 200, or 503 with Retry-After", burstSize),
		value: float64(answered), format: "%.0f", unit: " answered", worstRun: true,
		detail: fmt.Sprintf("%d ok, %d 503 with Retry-After, %d other (%s)",
			codes[http.StatusOK], errs["503"], burstSize-answered, formatErrs(errs, "503")),
	})
	rp.figures = append(rp.figures, figure{
		what:  fmt.Sprintf("burst of %d sign-ins answered 200", burstSize),
		value: float64(codes[http.StatusOK]), format: "%.0f", unit: " ok", worstRun: true,
		detail: fmt.Sprintf("%d ok of %d", codes[http.StatusOK], burstSize),
	})
	peak := math.Inf(1) // unread
	if r.hwm > 0 {
		peak = float64(r.hwm) / (1 << 20)
	}
	rp.figures = append(rp.figures, figure{
		what:  "burst peak RSS of the server",
		value: peak, higherIsWorse: true, worstRun: true, format: "%.1f", unit: " MiB",
		detail: "VmHWM " + mib(r.hwm),
	})
	if conns != nil {
		return connFigures(ctx, rp, conns)
	}
	return nil
}

// connFigures reports the peak of the demo's connections during the
// burst, and how many it holds a second after it, when the pool has
// closed what it does not keep, and past sqlstore.DefaultConnMaxIdleTime,
// when it has closed what it kept.
func connFigures(ctx context.Context, rp *report, conns *connCounter) error {
	time.Sleep(time.Second)
	peak, after, err := conns.stop(ctx)
	if err != nil {
		return err
	}
	log(fmt.Sprintf("phase burst: %d connections after it; counting again in %v", after, sqlstore.DefaultConnMaxIdleTime))
	select {
	case <-time.After(sqlstore.DefaultConnMaxIdleTime):
	case <-ctx.Done():
		return ctx.Err()
	}
	idle, err := conns.count(ctx)
	if err != nil {
		return err
	}
	rp.figures = append(rp.figures,
		figure{
			what:  "burst peak PostgreSQL connections of the server",
			value: float64(peak), higherIsWorse: true, worstRun: true, format: "%.0f", unit: " connections",
			detail: fmt.Sprintf("%d at most, sampled every 5 ms", peak),
		},
		figure{
			what:  "PostgreSQL connections of the server a second after the burst",
			value: float64(after), higherIsWorse: true, worstRun: true, format: "%.0f", unit: " connections",
			detail: fmt.Sprintf("%d open", after),
		},
		figure{
			what:  fmt.Sprintf("PostgreSQL connections of the server %v after the burst", sqlstore.DefaultConnMaxIdleTime+time.Second),
			value: float64(idle), higherIsWorse: true, worstRun: true, format: "%.0f", unit: " connections",
			detail: fmt.Sprintf("%d open (sqlstore.DefaultConnMaxIdleTime is %v)", idle, sqlstore.DefaultConnMaxIdleTime),
		})
	return nil
}

// burstClient is a client for the burst's request i, whose connections
// come from a loopback address of its own (127.1.0.1, 127.1.0.2, ...):
// Linux answers the whole of 127.0.0.0/8 on the loopback interface, and
// the demo counts each address's sign-ins and sign-ups apart.
func burstClient(base string, i int) *client {
	c := newClient(base, 1, 30*time.Second)
	local := &net.TCPAddr{IP: net.IPv4(127, 1, byte(i/250), byte(i%250+1))}
	c.hc.Transport.(*http.Transport).DialContext = (&net.Dialer{Timeout: 10 * time.Second, LocalAddr: local}).DialContext
	return c
}

// withApplicationName sets application_name in a postgres:// URL.
func withApplicationName(db, app string) (string, error) {
	u, err := url.Parse(db)
	if err != nil {
		return "", err
	}
	q := u.Query()
	q.Set("application_name", app)
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// A connCounter counts the PostgreSQL connections of one application
// name, from pg_stat_activity, every 5 ms between start and stop.
type connCounter struct {
	db    *sql.DB
	app   string
	peak  atomic.Int64
	quit  chan struct{}
	done  chan struct{}
	first error
}

func countConnections(ctx context.Context, db, app string) (*connCounter, error) {
	sqldb, _, _, err := openSQL(db)
	if err != nil {
		return nil, err
	}
	sqldb.SetMaxOpenConns(1)
	c := &connCounter{db: sqldb, app: app, quit: make(chan struct{}), done: make(chan struct{})}
	if _, err := c.count(ctx); err != nil {
		sqldb.Close()
		return nil, err
	}
	return c, nil
}

func (c *connCounter) count(ctx context.Context) (int64, error) {
	var n int64
	err := c.db.QueryRowContext(ctx, "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", c.app).Scan(&n)
	return n, err
}

func (c *connCounter) start() {
	go func() {
		defer close(c.done)
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			n, err := c.count(context.Background())
			if err != nil {
				c.first = err
				return
			}
			if n > c.peak.Load() {
				c.peak.Store(n)
			}
			select {
			case <-c.quit:
				return
			case <-t.C:
			}
		}
	}()
}

// stop ends the sampling and returns the peak, and the count now.
func (c *connCounter) stop(ctx context.Context) (peak, now int64, err error) {
	close(c.quit)
	<-c.done
	if c.first != nil {
		return 0, 0, c.first
	}
	now, err = c.count(ctx)
	return max(c.peak.Load(), now), now, err
}

// turns says how many turns of phases a and b a run had, when more than
// one.
func turns(phases []string, a, b string) string {
	na, nb := 0, 0
	for _, p := range phases {
		switch p {
		case a:
			na++
		case b:
			nb++
		}
	}
	if na == 1 && nb == 1 {
		return ""
	}
	return fmt.Sprintf(", over %d turns of %s and %d of %s", na, a, nb, b)
}

func find(rows []result, name string) *result {
	for i := range rows {
		if rows[i].name == name {
			return &rows[i]
		}
	}
	return nil
}
