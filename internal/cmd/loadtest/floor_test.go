package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMain lets startFloor start this test binary as the floor's server,
// as the harness starts itself.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == floorServerArg {
		if err := serveFloor(os.Args[2:]); err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestParseFlagsFloor(t *testing.T) {
	pg := "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	for _, db := range []string{pg, "sqlite:/tmp/x.db", "mysql://root@127.0.0.1:3306/test"} {
		cfg, err := parseFlags([]string{"-db", db, "-phases", "refresh,refresh-floor,refresh,refresh-floor", "-runs", "3"})
		if err != nil || len(cfg.phases) != 4 || cfg.phases[1] != "refresh-floor" || cfg.runs != 3 {
			t.Errorf("parseFlags(-db %s -phases refresh,refresh-floor,...) = %+v, %v", db, cfg, err)
		}
	}
	if _, err := parseFlags([]string{"-phases", "refresh-floor"}); err == nil || !strings.Contains(err.Error(), "SQL -db") {
		t.Errorf("parseFlags(-db memory -phases refresh-floor) = %v, want a refusal that asks for a SQL -db", err)
	}
	if cfg, _ := parseFlags(nil); !needsDemo(cfg.phases) {
		t.Error("the default phases need no demo")
	}
	if needsDemo([]string{"refresh-floor", "refresh-floor"}) {
		t.Error("-phases refresh-floor would build and start the demo")
	}
	if !needsDemo([]string{"refresh-floor", "refresh"}) {
		t.Error("-phases refresh-floor,refresh would start no demo")
	}
}

func TestFloorToken(t *testing.T) {
	cur := token()
	for _, w := range []int{0, 7, 15, 12345} {
		tok := floorToken(w, cur)
		if len(tok) != refreshTokenLen {
			t.Errorf("floorToken(%d) is %d characters, want the demo's %d", w, len(tok), refreshTokenLen)
		}
		gw, gcur, ok := parseFloorToken(tok)
		if !ok || gw != w || gcur != cur {
			t.Errorf("parseFloorToken(floorToken(%d, cur)) = %d, %q, %v", w, gw, gcur, ok)
		}
	}
	for _, bad := range []string{"", "abc", cur, cur + ".x.", cur + ".-1.", cur[1:] + ".1."} {
		if _, _, ok := parseFloorToken(bad); ok {
			t.Errorf("parseFloorToken(%q) accepted", bad)
		}
	}
}

// TestFloorHandler refreshes through the floor's route on a SQLite file:
// each answer moves the row to the token it returns, with the demo's
// headers at their lengths, and a token already used is refused.
func TestFloorHandler(t *testing.T) {
	ctx := context.Background()
	db := "sqlite:" + filepath.Join(t.TempDir(), "floor.db")
	sqldb, ph, returning, err := openSQL(db)
	if err != nil {
		t.Fatal(err)
	}
	defer sqldb.Close()
	cur, err := createScratch(ctx, sqldb, ph, "scratch", 2)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(floorHandler(sqldb, rotateStatement("scratch", ph, returning), returning))
	defer srv.Close()
	cl := newClient(srv.URL, 2, 5*time.Second)

	bearer := floorToken(1, cur[1])
	first := bearer
	for i := range 3 {
		a, err := cl.do(ctx, "POST", "/auth/session/refresh", bearer, "")
		if o := expect200(a, err, true); o.err != "" {
			t.Fatalf("refresh %d: %s %s %v", i, o.err, a.body, err)
		}
		for h, n := range map[string]int{"St-Refresh-Token": refreshTokenLen, "St-Access-Token": accessTokenLen, "Front-Token": frontTokenLen} {
			if got := len(a.hdr.Get(h)); got != n {
				t.Errorf("refresh %d: %s of %d characters, want %d", i, h, got, n)
			}
		}
		if a.hdr.Get("St-Refresh-Token") == bearer {
			t.Fatalf("refresh %d answered the token it was sent", i)
		}
		bearer = a.hdr.Get("St-Refresh-Token")
	}
	_, want, _ := parseFloorToken(bearer)
	var got string
	if err := sqldb.QueryRow("SELECT cur FROM scratch WHERE id = 1").Scan(&got); err != nil || got != want {
		t.Errorf("row 1 holds %q, %v; want the last token's %q", got, err, want)
	}
	var other string
	if err := sqldb.QueryRow("SELECT cur FROM scratch WHERE id = 0").Scan(&other); err != nil || other != cur[0] {
		t.Errorf("row 0 holds %q, %v; want it untouched", other, err)
	}
	for name, tok := range map[string]string{"a used token": first, "no token": "", "a malformed token": "nope"} {
		a, err := cl.do(ctx, "POST", "/auth/session/refresh", tok, "")
		if err != nil || a.code != http.StatusUnauthorized {
			t.Errorf("%s: %d %v, want 401", name, a.code, err)
		}
	}
}

// TestFloorPhase starts the floor's server as the harness does, in a
// process of its own on a SQLite file, and runs the phase against it.
func TestFloorPhase(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process and runs for half a second")
	}
	ctx := context.Background()
	dir := t.TempDir()
	db := "sqlite:" + filepath.Join(dir, "floor.db")
	f, err := startFloor(ctx, db, dir, "floor_scratch", 4)
	if err != nil {
		t.Fatal(err)
	}
	if f.srv.cmd.Process.Pid == os.Getpid() {
		t.Fatal("the floor's server runs in the harness's process")
	}
	cpu0 := readCPU(f.srv.cmd.Process.Pid, nil)
	r := f.phase(ctx, 4, 500*time.Millisecond)
	use, ok := cpuBetween(cpu0, readCPU(f.srv.cmd.Process.Pid, nil))
	if r.n == 0 || len(r.errs) != 0 {
		t.Errorf("refresh-floor: %d requests, errors %v", r.n, r.errs)
	}
	if !ok || use.server <= 0 {
		t.Errorf("the floor's server used %v of CPU (read: %v), want some", use.server, ok)
	}
	// A second turn goes on from the tokens of the first.
	if r := f.phase(ctx, 4, 200*time.Millisecond); r.n == 0 || len(r.errs) != 0 {
		t.Errorf("second turn: %d requests, errors %v", r.n, r.errs)
	}
	f.stop()
	sqldb, _, _, err := openSQL(db)
	if err != nil {
		t.Fatal(err)
	}
	defer sqldb.Close()
	var n int
	if err := sqldb.QueryRow("SELECT count(*) FROM sqlite_master WHERE name = 'floor_scratch'").Scan(&n); err != nil || n != 0 {
		t.Errorf("the scratch table is left after stop: %d, %v", n, err)
	}
}

func TestProcessesCPU(t *testing.T) {
	if got := dbProcessNames("sqlite:/tmp/x.db"); got != nil {
		t.Errorf("dbProcessNames(sqlite) = %q, want none", got)
	}
	if got := dbProcessNames("postgres://x/y"); len(got) != 1 || got[0] != "postgres" {
		t.Errorf("dbProcessNames(postgres) = %q", got)
	}
	// This process, counted as the database by its command name, and
	// left out of the others.
	name, _, err := processStat(os.Getpid(), false)
	if err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(50 * time.Millisecond); time.Now().Before(end); {
	}
	self, _ := processCPU(os.Getpid())
	db, _, err := processesCPU([]string{name})
	if err != nil || db < self {
		t.Errorf("processesCPU(this process's name %q) = %v, %v; below its own %v", name, db, err, self)
	}
	if dbButSelf, _, _ := processesCPU([]string{name}, os.Getpid()); db-dbButSelf < self {
		t.Errorf("processesCPU skipping this process took %v off, less than its %v", db-dbButSelf, self)
	}
}
