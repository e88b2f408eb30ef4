package main

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"
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
		if phase == "burst" || phase == "burst3" {
			if err := burst(ctx, rp, bin, dir, runID, burstShapeOf(phase)); err != nil {
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
			if srv, err = startDemo(bin, cfg.db, dir, "demo", cfg.demoArgs...); err != nil {
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
