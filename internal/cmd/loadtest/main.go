// Command loadtest drives the demo server (examples/demo) over HTTP on
// loopback and reports throughput, latency and the server's memory per
// phase, beside baselines measured in the same run, and the ratio of each
// phase to its baseline. It measures and compares nothing with targets:
// the targets, and the figures this tool gave, are in BENCHMARKS.md.
//
//	go run ./internal/cmd/loadtest -db memory -d 10s
//	go run ./internal/cmd/loadtest -db 'postgres://postgres@127.0.0.1:5432/test?sslmode=disable' -phases ping,me,refresh
//	go run ./internal/cmd/loadtest -db sqlite:/tmp/lt.db -phases refresh
//	go run ./internal/cmd/loadtest -db 'postgres://postgres@127.0.0.1:5432/test?sslmode=disable' -phases refresh,refresh-floor -runs 3
//	go run ./internal/cmd/loadtest -db memory -phases ping,me,signup -runs 3
//	go run ./internal/cmd/loadtest -db memory -d 4s -phases ping,me,ping,me,ping,me -runs 3
//	go run ./internal/cmd/loadtest -db 'postgres://postgres@127.0.0.1:5432/test?sslmode=disable' -phases signin,signin-betterauth -runs 3 -betterauth internal/cmd/betterauth/server.mjs
//	go run ./internal/cmd/loadtest -db 'postgres://postgres@127.0.0.1:5432/test?sslmode=disable' -phases burst,burst3 -runs 3
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
//   - refresh-floor: the refresh phase's load, the same requests and
//     answers of the same sizes, against a minimal server of this program's
//     own, started as a separate process as the demo is, whose one route
//     runs the bare rotate statement on the same database with the demo's
//     driver and pool settings: net/http and one driver call, no library.
//     The floor refresh is held against; it needs a SQL -db, and starts
//     no demo. -phases refresh,refresh-floor alternates the two in each
//     run; the report gives their ratio over all their turns.
//   - signin: POST /auth/signin; beside it the raw argon2id rate at the
//     library's parameters, measured in this process while the server
//     idles, just before the phase and just after it, so that a drift in
//     the machine's speed during the phase weighs on both sides.
//   - signup: POST /auth/signup, each request with a new email; beside it
//     the raw argon2id rate measured the same way. The ratio is
//     informative: a sign-up also writes the user and its session.
//   - signin-betterauth: POST /api/auth/sign-in/email to Better Auth
//     with @node-rs/argon2 at the same argon2id parameters, on the same
//     PostgreSQL server, started from the Node script -betterauth names
//     (internal/cmd/betterauth/server.mjs, after npm ci there), with users
//     signed up first: the peer of signin. -phases signin,signin-betterauth
//     alternates the two; the report gives the ratio over all their turns.
//   - burst: in a fresh demo process, 500 users signed up, then their
//     500 sign-ins at once, each from a loopback address of its own
//     (127.1.0.1, 127.1.0.2, ...), as many people at their own machines:
//     from one address the rate limits would refuse most of them. It
//     counts the answers that are 200, or 503 with Retry-After; its peak
//     RSS is the burst's own (after the sign-ups, as Linux can reset it).
//     On PostgreSQL it counts the demo's connections to the server at
//     their peak, a second after the burst and again after
//     sqlstore.DefaultConnMaxIdleTime, which makes the phase half a
//     minute longer.
//   - burst3: the burst over three fresh demos on the same database, as
//     three instances behind a load balancer: user i signs up and signs
//     in at demo i mod 3. On PostgreSQL each demo connects with an
//     application_name of its own, and one query every 5 ms counts the
//     connections of each, so that their total is the most they held at
//     one moment; the report gives it, each demo's peak, the sum of those
//     peaks, the totals after the burst as for burst, and the server's
//     max_connections less those reserved for superusers. Its peak RSS is
//     the highest of the three. It needs memory (three stores, one per
//     demo), PostgreSQL or MySQL: three processes on one SQLite file would
//     measure SQLite's lock, not the burst.
//
// A phase may be named more than once: -phases ping,me,ping,me,ping,me
// interleaves the two, and its row, and the ratio of me to ping, are over
// all of its turns, so that a drift in the machine's speed, or a burst of
// work by another process, weighs on both sides of the ratio.
//
// Load generator and server share the machine's cores, so what a phase
// costs the client weighs on its rate as much as what it costs the server.
// For each HTTP phase the report gives the CPU time per request of the
// server (the demo, or the phase's own server), of this process and of the
// database server's processes (PostgreSQL's, MySQL's or MariaDB's, read by
// their command names; SQLite runs inside the server), the cores the
// interrupt handlers took (the loopback traffic's share of the kernel),
// and the cores every other process on the machine used meanwhile: a
// figure measured while other processes took a core is not comparable
// with one measured on an idle machine.
// -cpuprofile FILE profiles the load generator itself.
//
// With -runs N the phases run N times, each time against a fresh demo
// process with fresh users, and the report shows per row the median of
// each figure with its min–max.
//
// The absolute figures understate a dedicated server; the ratios, measured
// in the same run, compare like with like.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"runtime/pprof"
	"slices"
	"strings"
	"syscall"
	"time"
)

const (
	burstSize = 500
	// burstInstances is how many demos the phase burst3 spreads its
	// sign-ins over.
	burstInstances = 3
	password       = "load test 1"
)

var allPhases = []string{"ping", "me", "refresh", "refresh-floor", "signin", "signup", "burst", "burst3", "signin-betterauth"}

type config struct {
	db     string
	c      int
	d      time.Duration
	phases []string
	demo   string
	runs   int
	// betterauth is the Node script of the Better Auth server that the
	// phase signin-betterauth starts.
	betterauth string
	// cpuprofile is a file for a CPU profile of this process, the load
	// generator, over the whole run.
	cpuprofile string
	// demoArgs are flags for the demo besides the harness's own (-admin
	// turns roles on, whose claims a refresh then reads).
	demoArgs []string
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == floorServerArg {
		if err := serveFloor(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "loadtest: floor server:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "loadtest:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string) (config, error) {
	var cfg config
	var phases string
	fs := flag.NewFlagSet("loadtest", flag.ContinueOnError)
	fs.StringVar(&cfg.db, "db", "memory", "demo store: memory, sqlite:PATH, postgres://... or mysql://...")
	fs.IntVar(&cfg.c, "c", 16, "concurrent clients per phase (burst always uses 500)")
	fs.DurationVar(&cfg.d, "d", 10*time.Second, "duration of each phase")
	fs.StringVar(&phases, "phases", "ping,me,refresh,signin,burst", "comma-separated phases to run, in order, of: "+strings.Join(allPhases, ", "))
	fs.StringVar(&cfg.demo, "demo", "", "demo binary; default: go build ./examples/demo into a temporary directory")
	fs.IntVar(&cfg.runs, "runs", 1, "run the phases this many times, each with a fresh demo, and report medians with min–max")
	fs.StringVar(&cfg.betterauth, "betterauth", "", "Node script of the Better Auth server for the phase signin-betterauth (internal/cmd/betterauth/server.mjs); it needs a postgres:// -db")
	fs.StringVar(&cfg.cpuprofile, "cpuprofile", "", "write a CPU profile of the load generator (this process, not the demo) to this file, for go tool pprof")
	demoArgs := fs.String("demo-args", "", "more flags for the demo, separated by spaces, such as \"-admin admin@example.com\" for roles in every token")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	cfg.demoArgs = strings.Fields(*demoArgs)
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	if cfg.c < 1 || cfg.d <= 0 || cfg.runs < 1 {
		return cfg, errors.New("-c, -d and -runs must be positive")
	}
	if cfg.db != "memory" && !strings.HasPrefix(cfg.db, "sqlite:") && !isPostgres(cfg.db) && !isMySQL(cfg.db) {
		return cfg, fmt.Errorf("-db %q: want memory, sqlite:PATH, postgres://... or mysql://...", cfg.db)
	}
	if isMySQL(cfg.db) {
		// Refused here rather than after the demo has started.
		if _, err := mysqlDSN(cfg.db); err != nil {
			return cfg, err
		}
	}
	for _, p := range strings.Split(phases, ",") {
		p = strings.TrimSpace(p)
		if !slices.Contains(allPhases, p) {
			return cfg, fmt.Errorf("-phases: unknown phase %q", p)
		}
		cfg.phases = append(cfg.phases, p)
	}
	if slices.Contains(cfg.phases, "signin-betterauth") && (cfg.betterauth == "" || !isPostgres(cfg.db)) {
		return cfg, errors.New("-phases signin-betterauth needs -betterauth SCRIPT and a postgres:// -db")
	}
	if slices.Contains(cfg.phases, "burst3") && strings.HasPrefix(cfg.db, "sqlite:") {
		return cfg, errors.New("-phases burst3 needs memory, or a postgres:// or mysql:// -db: its three demos would share one SQLite file")
	}
	if slices.Contains(cfg.phases, "refresh-floor") && cfg.db == "memory" {
		return cfg, errors.New("-phases refresh-floor needs a SQL -db: the floor is the bare rotate statement on it")
	}
	return cfg, nil
}

// needsDemo says whether one of phases runs against the demo: all but
// refresh-floor and signin-betterauth do.
func needsDemo(phases []string) bool {
	for _, p := range phases {
		if p != "refresh-floor" && p != "signin-betterauth" {
			return true
		}
	}
	return false
}

func isMySQL(db string) bool { return strings.HasPrefix(db, "mysql://") }

func isPostgres(db string) bool {
	return strings.HasPrefix(db, "postgres://") || strings.HasPrefix(db, "postgresql://")
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
	if cfg.cpuprofile != "" {
		f, err := os.Create(cfg.cpuprofile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}

	dir, err := os.MkdirTemp("", "loadtest")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin := cfg.demo
	if bin == "" && needsDemo(cfg.phases) {
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

func redact(db string) string {
	if u, err := url.Parse(db); err == nil && u.User != nil {
		return u.Redacted()
	}
	return db
}

func log(msg string) {
	fmt.Fprintf(os.Stderr, "%s loadtest: %s\n", time.Now().Format("15:04:05"), msg)
}
