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
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/latchkit/auth/store/sqlstore"
)

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
