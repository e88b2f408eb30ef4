package main

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/latchkit/auth/store/sqlstore"
)

// burstShape is what a burst phase sends: size sign-ins at once, spread
// round-robin over instances fresh demos on the same database, as a load
// balancer would spread them.
type burstShape struct {
	phase     string // burst or burst3
	size      int
	instances int
}

func burstShapeOf(phase string) burstShape {
	if phase == "burst3" {
		return burstShape{phase: phase, size: burstSize, instances: burstInstances}
	}
	return burstShape{phase: "burst", size: burstSize, instances: 1}
}

// rowName, what and of name the phase's row and figures. With one
// instance they are the names the burst always had, so that its figures
// read as before; with more, they name the phase, so that -phases
// burst,burst3 gives each its own.
func (b burstShape) rowName() string {
	if b.instances == 1 {
		return fmt.Sprintf("burst (%d at once, fresh server)", b.size)
	}
	return fmt.Sprintf("%s (%d at once over %d fresh servers)", b.phase, b.size, b.instances)
}

func (b burstShape) what() string {
	if b.instances == 1 {
		return fmt.Sprintf("burst of %d sign-ins", b.size)
	}
	return fmt.Sprintf("burst of %d sign-ins over %d servers (%s)", b.size, b.instances, b.phase)
}

func (b burstShape) of() string {
	if b.instances == 1 {
		return "the server"
	}
	return fmt.Sprintf("the %d servers of %s", b.instances, b.phase)
}

// burstDemo is one of a burst's demos, with the application_name its
// connections carry on PostgreSQL ("" elsewhere), which tells them apart
// from every other's in pg_stat_activity.
type burstDemo struct {
	*server
	app string
}

func startBurstDemos(db, bin, dir, runID string, b burstShape) ([]burstDemo, error) {
	var demos []burstDemo
	for i := range b.instances {
		d, err := startBurstDemo(db, bin, dir, runID, b, i)
		if err != nil {
			stopDemos(demos)
			return nil, err
		}
		demos = append(demos, d)
	}
	return demos, nil
}

func startBurstDemo(db, bin, dir, runID string, b burstShape, i int) (burstDemo, error) {
	name, app := "demo-burst", "loadtest-burst-"+runID
	if b.instances > 1 {
		name = fmt.Sprintf("demo-%s-%d", b.phase, i+1)
		app = fmt.Sprintf("loadtest-%s-%s-%d", b.phase, runID, i+1)
	}
	if !isPostgres(db) {
		app = ""
	} else {
		var err error
		if db, err = withApplicationName(db, app); err != nil {
			return burstDemo{}, err
		}
	}
	s, err := startDemo(bin, db, dir, name)
	return burstDemo{s, app}, err
}

func stopDemos(demos []burstDemo) {
	for _, d := range demos {
		d.stop()
	}
}

func appsOf(demos []burstDemo) []string {
	var apps []string
	for _, d := range demos {
		if d.app != "" {
			apps = append(apps, d.app)
		}
	}
	return apps
}

// burst starts fresh demos, so that their peak memory is the burst's own,
// signs up b.size users and sends their sign-ins at once, each on its own
// connection from a loopback address of its own (see burstClient): as
// many people signing in at the same moment from their own machines, not
// one client that the rate limits would turn away past its allowance.
// User i signs up and signs in at demo i mod b.instances. On PostgreSQL
// it also counts the demos' connections to the server, during the burst,
// a second after it and past the pool's idle time.
func burst(ctx context.Context, rp *report, bin, dir, runID string, b burstShape) error {
	log(fmt.Sprintf("phase %s: starting %d fresh demo(s)", b.phase, b.instances))
	demos, err := startBurstDemos(rp.cfg.db, bin, dir, runID, b)
	if err != nil {
		return err
	}
	defer stopDemos(demos)
	clients := make([]*client, b.size)
	emails := make([]string, b.size)
	for i := range clients {
		clients[i] = burstClient(demos[i%len(demos)].base, i)
		emails[i] = fmt.Sprintf("%s-%s-%d@example.com", runID, b.phase, i)
	}
	log(fmt.Sprintf("phase %s: signing up %d users", b.phase, b.size))
	if err := burstSignUps(ctx, clients, emails); err != nil {
		return err
	}
	var conns *connCounter
	if apps := appsOf(demos); len(apps) > 0 {
		if conns, err = countConnections(ctx, rp.cfg.db, apps); err != nil {
			return err
		}
		defer conns.db.Close()
	}
	before := resetPeaks(demos)
	t := fire(ctx, clients, emails, len(demos), conns)
	r := result{name: b.rowName(), n: len(t.lat), elapsed: t.elapsed, lat: t.lat, errs: t.errs, note: before}
	slices.Sort(r.lat)
	r.rss, r.hwm = highestPeak(demos)
	if len(demos) > 1 {
		r.note += "; peak RSS: the highest of the servers'"
	}
	rp.add(r)
	rp.figures = append(rp.figures, answerFigures(b, t)...)
	rp.figures = append(rp.figures, rssFigure(b, r.hwm))
	if conns != nil {
		return connFigures(ctx, rp, b, conns)
	}
	return nil
}

func burstSignUps(ctx context.Context, clients []*client, emails []string) error {
	return fewAtATime(len(clients), func(i int) error {
		a, err := clients[i].do(ctx, "POST", "/auth/signup", "", credentials(emails[i]))
		if o := expect200(a, err, true); o.err != "" {
			return fmt.Errorf("sign-up %s: %s %s %v", emails[i], o.err, bytes.TrimSpace(a.body), err)
		}
		return nil
	})
}

// resetPeaks says what the demos hold before the burst, after its
// sign-ups, and sets their peak RSS back to it (see resetPeak).
func resetPeaks(demos []burstDemo) string {
	var now []string
	reset := true
	for _, d := range demos {
		m, _ := d.memoryString()
		now = append(now, m)
		reset = d.resetPeak() && reset
	}
	note := "before the burst, after its sign-ups: " + strings.Join(now, ", ")
	if reset {
		return note + "; the peak is the burst's own"
	}
	return note + "; the peak includes the sign-ups"
}

// highestPeak is the memory of the demo with the highest peak RSS.
func highestPeak(demos []burstDemo) (string, int64) {
	var rss string
	var hwm int64 = -1
	for _, d := range demos {
		if s, h := d.memoryString(); h > hwm {
			rss, hwm = s, h
		}
	}
	return rss, hwm
}

// burstTally is what a burst's sign-ins came to.
type burstTally struct {
	mu      sync.Mutex
	lat     []time.Duration
	errs    map[string]int
	ok      []int // answers 200 with {"status":"OK"} by demo
	elapsed time.Duration
}

func newBurstTally(instances int) *burstTally {
	return &burstTally{errs: map[string]int{}, ok: make([]int, instances)}
}

// record counts the answer of a sign-in sent to demo inst after d.
func (t *burstTally) record(inst int, d time.Duration, a answer, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lat = append(t.lat, d)
	if err != nil {
		t.errs[errKey(err)]++
		return
	}
	switch {
	case a.code == http.StatusOK && bytes.Contains(a.body, []byte(`"status":"OK"`)):
		t.ok[inst]++
	case a.code == http.StatusOK:
		t.errs["200 not OK"]++
	case a.code == http.StatusServiceUnavailable && a.hdr.Get("Retry-After") == "":
		t.errs["503 without Retry-After"]++
	case a.code == http.StatusServiceUnavailable:
		t.errs["503"]++
	default:
		t.errs[strconv.Itoa(a.code)]++
	}
}

// fire sends sign-in i to the demo of clients[i] (demo i mod instances),
// all at once: each waits on a gate, opened when all are ready, and conns,
// if not nil, starts counting just before it opens.
func fire(ctx context.Context, clients []*client, emails []string, instances int, conns *connCounter) *burstTally {
	t := newBurstTally(instances)
	var started, wg sync.WaitGroup
	gate := make(chan struct{})
	for i := range clients {
		started.Add(1)
		wg.Go(func() {
			started.Done()
			<-gate
			t0 := time.Now()
			a, err := clients[i].do(ctx, "POST", "/auth/signin", "", credentials(emails[i]))
			t.record(i%instances, time.Since(t0), a, err)
		})
	}
	started.Wait()
	start := time.Now()
	if conns != nil {
		conns.start()
	}
	close(gate)
	wg.Wait()
	t.elapsed = time.Since(start)
	return t
}

func answerFigures(b burstShape, t *burstTally) []figure {
	ok, byDemo := 0, make([]string, len(t.ok))
	for i, n := range t.ok {
		ok += n
		byDemo[i] = strconv.Itoa(n)
	}
	perDemo := ""
	if len(t.ok) > 1 {
		perDemo = " (" + strings.Join(byDemo, ", ") + " by server)"
	}
	answered := ok + t.errs["503"]
	return []figure{
		{
			what:  b.what() + " answered 200, or 503 with Retry-After",
			value: float64(answered), format: "%.0f", unit: " answered", worstRun: true,
			detail: fmt.Sprintf("%d ok, %d 503 with Retry-After, %d other (%s)",
				ok, t.errs["503"], b.size-answered, formatErrs(t.errs, "503")),
		},
		{
			what:  b.what() + " answered 200",
			value: float64(ok), format: "%.0f", unit: " ok", worstRun: true,
			detail: fmt.Sprintf("%d ok of %d%s", ok, b.size, perDemo),
		},
	}
}

func rssFigure(b burstShape, hwm int64) figure {
	peak := math.Inf(1) // unread
	if hwm > 0 {
		peak = float64(hwm) / (1 << 20)
	}
	what := "burst peak RSS of the server"
	if b.instances > 1 {
		what = "burst peak RSS of " + b.of() + ", the highest"
	}
	return figure{
		what:  what,
		value: peak, higherIsWorse: true, worstRun: true, format: "%.1f", unit: " MiB",
		detail: "VmHWM " + mib(hwm),
	}
}

// connFigures reports the peak of the demos' connections during the
// burst, and how many they hold a second after it, when the pools have
// closed what they do not keep, and past sqlstore.DefaultConnMaxIdleTime,
// when they have closed what they kept; and the server's max_connections,
// which they all share.
func connFigures(ctx context.Context, rp *report, b burstShape, conns *connCounter) error {
	time.Sleep(time.Second)
	peaks, after, err := conns.stop(ctx)
	if err != nil {
		return err
	}
	log(fmt.Sprintf("phase %s: peak %d connections together (%v each), %d after it (%v); counting again in %v",
		b.phase, peaks.total, peaks.each, sum(after), after, sqlstore.DefaultConnMaxIdleTime))
	select {
	case <-time.After(sqlstore.DefaultConnMaxIdleTime):
	case <-ctx.Done():
		return ctx.Err()
	}
	idle, err := conns.count(ctx)
	if err != nil {
		return err
	}
	limit, reserved, err := maxConnections(ctx, conns.db)
	if err != nil {
		return err
	}
	rp.figures = append(rp.figures, peakFigures(b, peaks, limit-reserved)...)
	rp.figures = append(rp.figures,
		connCount("PostgreSQL connections of "+b.of()+" a second after the burst", sum(after),
			fmt.Sprintf("%d open", sum(after))),
		connCount(fmt.Sprintf("PostgreSQL connections of %s %v after the burst", b.of(), sqlstore.DefaultConnMaxIdleTime+time.Second), sum(idle),
			fmt.Sprintf("%d open (sqlstore.DefaultConnMaxIdleTime is %v)", sum(idle), sqlstore.DefaultConnMaxIdleTime)))
	rp.addFigureOnce(figure{
		what:  "PostgreSQL max_connections, less superuser_reserved_connections",
		value: float64(limit - reserved), format: "%.0f", unit: " connections",
		detail: fmt.Sprintf("%d less %d: %d", limit, reserved, limit-reserved),
	})
	return nil
}

// addFigureOnce adds f unless the run has a figure of its name already:
// for what -phases burst,burst3 both read, once a run, so that the
// summary's count of runs stays true.
func (rp *report) addFigureOnce(f figure) {
	if !slices.ContainsFunc(rp.figures, func(g figure) bool { return g.what == f.what }) {
		rp.figures = append(rp.figures, f)
	}
}

// peakFigures: with one demo, its peak; with more, their peak together,
// read in one query and so at one moment, each one's, and the sum of
// theirs, which they need not have reached at the same moment.
func peakFigures(b burstShape, p connPeaks, room int) []figure {
	together := connCount("burst peak PostgreSQL connections of "+b.of(), p.total,
		fmt.Sprintf("%d at most, sampled every 5 ms; max_connections leaves %d", p.total, room))
	if b.instances == 1 {
		return []figure{together}
	}
	together.what += " together"
	together.detail = fmt.Sprintf("%d at most at one moment, sampled every 5 ms; max_connections leaves %d", p.total, room)
	fs := []figure{together}
	for i, n := range p.each {
		fs = append(fs, connCount(fmt.Sprintf("burst peak PostgreSQL connections of server %d of %s", i+1, b.phase), n,
			fmt.Sprintf("%d at most", n)))
	}
	return append(fs, connCount("burst peak PostgreSQL connections of "+b.of()+", the sum of each one's", p.sumOfEach(),
		fmt.Sprintf("%d, each server's peak added, whenever it was", p.sumOfEach())))
}

func connCount(what string, n int64, detail string) figure {
	return figure{what: what, value: float64(n), higherIsWorse: true, worstRun: true, format: "%.0f", unit: " connections", detail: detail}
}

func sum(xs []int64) int64 {
	var s int64
	for _, x := range xs {
		s += x
	}
	return s
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

// maxConnections reads the server's max_connections and the connections
// of them it keeps for superusers.
func maxConnections(ctx context.Context, db *sql.DB) (limit, reserved int, err error) {
	if err := db.QueryRowContext(ctx, "SHOW max_connections").Scan(&limit); err != nil {
		return 0, 0, err
	}
	err = db.QueryRowContext(ctx, "SHOW superuser_reserved_connections").Scan(&reserved)
	return limit, reserved, err
}

// connPeaks are the highest connection counts seen: each application
// name's, and the highest total of one reading, the most that the names
// held at one moment. That total is at most the sum of each one's peak,
// which they may have reached at different moments.
type connPeaks struct {
	each  []int64
	total int64
}

// note takes in one reading, a count per application name.
func (p *connPeaks) note(counts []int64) {
	if p.each == nil {
		p.each = make([]int64, len(counts))
	}
	for i, n := range counts {
		p.each[i] = max(p.each[i], n)
	}
	p.total = max(p.total, sum(counts))
}

func (p connPeaks) sumOfEach() int64 { return sum(p.each) }

// A connCounter counts the PostgreSQL connections of some application
// names, from pg_stat_activity, each name's in the same query, every 5 ms
// between start and stop.
type connCounter struct {
	db    *sql.DB
	apps  []string
	peaks connPeaks // the sampler's until done is closed
	quit  chan struct{}
	done  chan struct{}
	first error
}

func countConnections(ctx context.Context, db string, apps []string) (*connCounter, error) {
	sqldb, _, _, err := openSQL(db)
	if err != nil {
		return nil, err
	}
	sqldb.SetMaxOpenConns(1)
	c := &connCounter{db: sqldb, apps: apps, quit: make(chan struct{}), done: make(chan struct{})}
	if _, err := c.count(ctx); err != nil {
		sqldb.Close()
		return nil, err
	}
	return c, nil
}

// count reads the connections of each of c.apps, in one snapshot of
// pg_stat_activity.
func (c *connCounter) count(ctx context.Context) ([]int64, error) {
	rows, err := c.db.QueryContext(ctx,
		"SELECT application_name, count(*) FROM pg_stat_activity WHERE application_name = ANY($1) GROUP BY application_name", c.apps)
	if err != nil {
		return nil, err
	}
	counts := make([]int64, len(c.apps))
	for err == nil && rows.Next() {
		var app string
		var n int64
		if err = rows.Scan(&app, &n); err == nil {
			if i := slices.Index(c.apps, app); i >= 0 {
				counts[i] = n
			}
		}
	}
	return counts, errors.Join(err, rows.Err(), rows.Close())
}

func (c *connCounter) start() {
	go func() {
		defer close(c.done)
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			counts, err := c.count(context.Background())
			if err != nil {
				c.first = err
				return
			}
			c.peaks.note(counts)
			select {
			case <-c.quit:
				return
			case <-t.C:
			}
		}
	}()
}

// stop ends the sampling and returns the peaks, and the counts now.
func (c *connCounter) stop(ctx context.Context) (connPeaks, []int64, error) {
	close(c.quit)
	<-c.done
	if c.first != nil {
		return connPeaks{}, nil, c.first
	}
	now, err := c.count(ctx)
	if err != nil {
		return connPeaks{}, nil, err
	}
	c.peaks.note(now)
	return c.peaks, now, nil
}
