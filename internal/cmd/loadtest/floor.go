package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/latchkit/auth/store/sqlstore"
)

// The phase refresh-floor is the least a refresh over HTTP could cost on
// this machine and database: the refresh phase's load (the same client,
// concurrency, method, path and header-mode headers, of the demo's sizes)
// against a minimal server in a process of its own, as the demo is, whose
// one route runs the bare rotate statement (bareRotate's UPDATE ...
// RETURNING on a scratch table) on the same database, with the same
// driver, DSN and pool settings as the demo, and answers. net/http and
// one driver call, no library: refresh over refresh-floor is the share
// of that floor the library reaches. The server is this program started
// again with floorServerArg first.

// floorServerArg, as the first argument, makes the program the floor's
// server rather than the harness. It is not one of the harness's flags.
const floorServerArg = "-serve-refresh-floor"

// The lengths of the header values of the demo's refresh in header mode:
// the refresh token the client sends and gets back, the access token and
// the front token it gets back. Read from the demo's answer; the floor
// sends and answers values of these lengths.
const (
	refreshTokenLen = 103
	accessTokenLen  = 475
	frontTokenLen   = 456
)

// floorToken is worker w's bearer for the floor when its row holds cur: cur
// (64 hex digits), a dot, w, a dot, padded to the length of the demo's
// refresh token, so that the server can find the row from the token alone
// as the library finds the session.
func floorToken(w int, cur string) string {
	t := cur + "." + strconv.Itoa(w) + "."
	if n := refreshTokenLen - len(t); n > 0 {
		t += strings.Repeat("A", n)
	}
	return t
}

// parseFloorToken undoes floorToken.
func parseFloorToken(t string) (w int, cur string, ok bool) {
	cur, rest, ok := strings.Cut(t, ".")
	if !ok || len(cur) != 64 {
		return 0, "", false
	}
	ws, _, ok := strings.Cut(rest, ".")
	if !ok {
		return 0, "", false
	}
	w, err := strconv.Atoi(ws)
	if err != nil || w < 0 {
		return 0, "", false
	}
	return w, cur, true
}

// createScratch makes the scratch table of the bare rotate statement with
// a row for each of c workers, and returns the rows' values.
func createScratch(ctx context.Context, sqldb *sql.DB, ph []string, table string, c int) ([]string, error) {
	if _, err := sqldb.ExecContext(ctx, "CREATE TABLE "+table+" (id INTEGER PRIMARY KEY, cur TEXT NOT NULL)"); err != nil {
		return nil, fmt.Errorf("creating the scratch table: %w", err)
	}
	cur := make([]string, c)
	for w := range c {
		cur[w] = token()
		if _, err := sqldb.ExecContext(ctx, "INSERT INTO "+table+" (id, cur) VALUES ("+ph[0]+", "+ph[1]+")", w, cur[w]); err != nil {
			return nil, err
		}
	}
	return cur, nil
}

// rotateStatement is the bare rotate statement on table in the dialect of
// the placeholders ph, with returning its RETURNING clause or "".
func rotateStatement(table string, ph []string, returning string) string {
	return "UPDATE " + table + " SET cur = " + ph[0] + " WHERE id = " + ph[1] + " AND cur = " + ph[2] + returning
}

// rotate runs the bare rotate statement q once: row w from cur to next.
// It returns sql.ErrNoRows if the row did not hold cur.
func rotate(ctx context.Context, sqldb *sql.DB, q, returning string, w int, cur, next string) error {
	if returning == "" {
		res, err := sqldb.ExecContext(ctx, q, next, w, cur)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return sql.ErrNoRows
		}
		return nil
	}
	var id int
	return sqldb.QueryRowContext(ctx, q, next, w, cur).Scan(&id)
}

// floor is the floor's server for one run and its scratch table.
type floor struct {
	srv    *server
	cl     *client
	bearer []string // per worker
	drop   func()
}

// startFloor creates the scratch table in db and starts the floor's
// server on it: this program, from os.Executable, with floorServerArg.
func startFloor(ctx context.Context, db, dir, table string, c int) (*floor, error) {
	sqldb, ph, _, err := openSQL(db)
	if err != nil {
		return nil, err
	}
	defer sqldb.Close()
	cur, err := createScratch(ctx, sqldb, ph, table, c)
	drop := func() {
		if sqldb, _, _, err := openSQL(db); err == nil {
			sqldb.ExecContext(context.Background(), "DROP TABLE "+table)
			sqldb.Close()
		}
	}
	if err != nil {
		drop()
		return nil, err
	}
	exe, err := os.Executable()
	if err != nil {
		drop()
		return nil, err
	}
	logPath := filepath.Join(dir, "floor.log")
	logf, err := os.Create(logPath)
	if err != nil {
		drop()
		return nil, err
	}
	defer logf.Close()
	cmd := exec.Command(exe, floorServerArg, "-db", db, "-table", table)
	cmd.Stderr = logf
	srv, err := startServer(cmd, logPath, "the floor's server", "floor: listening on http://")
	if err != nil {
		drop()
		return nil, err
	}
	f := &floor{srv: srv, cl: newClient(srv.base, c, 30*time.Second), bearer: make([]string, c), drop: drop}
	for w := range c {
		f.bearer[w] = floorToken(w, cur[w])
	}
	return f, nil
}

func (f *floor) stop() {
	f.srv.stop()
	f.drop()
}

// phase runs the refresh phase's load against the floor.
func (f *floor) phase(ctx context.Context, c int, d time.Duration) result {
	return runPhase(ctx, "refresh-floor", c, d, func(ctx context.Context, w int) outcome {
		a, err := f.cl.do(ctx, "POST", "/auth/session/refresh", f.bearer[w], "")
		o := expect200(a, err, true)
		if o.err != "" {
			o.stop = true // as in refresh: the row's value is now unknown
			return o
		}
		ref, acc := a.hdr.Get("st-refresh-token"), a.hdr.Get("st-access-token")
		if ref == "" || acc == "" {
			return outcome{err: "200 without tokens", stop: true}
		}
		f.bearer[w] = ref
		return outcome{}
	})
}

// serveFloor is the floor's server: it opens db as the demo does, with
// the pool sqlstore.New gives the demo, listens on a free loopback port,
// prints its address, and serves POST /auth/session/refresh until
// SIGTERM.
func serveFloor(args []string) error {
	fs := flag.NewFlagSet("loadtest "+floorServerArg, flag.ContinueOnError)
	db := fs.String("db", "", "the harness's -db, postgres://... or sqlite:PATH")
	table := fs.String("table", "", "the scratch table the harness created")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *table == "" || (!isPostgres(*db) && !strings.HasPrefix(*db, "sqlite:") && !isMySQL(*db)) {
		return errors.New("want -db postgres://..., sqlite:PATH or mysql://... and -table NAME")
	}
	sqldb, ph, returning, err := openSQL(*db)
	if err != nil {
		return err
	}
	defer sqldb.Close()
	sqldb.SetMaxOpenConns(sqlstore.DefaultMaxOpenConns)
	sqldb.SetMaxIdleConns(sqlstore.DefaultMaxIdleConns)
	sqldb.SetConnMaxIdleTime(sqlstore.DefaultConnMaxIdleTime)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           floorHandler(sqldb, rotateStatement(*table, ph, returning), returning),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(shut)
	}()
	fmt.Printf("floor: listening on http://%s\n", ln.Addr())
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// floorHandler answers POST /auth/session/refresh with a bearer made by
// floorToken: it runs q, the bare rotate statement, to move the token's
// row from its value to a new one, and answers as the demo's refresh
// does, with the headers of its answer at their lengths and its body.
func floorHandler(sqldb *sql.DB, q, returning string) http.Handler {
	access, front := filler(accessTokenLen), filler(frontTokenLen)
	mux := http.NewServeMux()
	mux.HandleFunc("POST /auth/session/refresh", func(w http.ResponseWriter, r *http.Request) {
		bearer, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok {
			http.Error(w, `{"message":"no token"}`, http.StatusUnauthorized)
			return
		}
		worker, cur, ok := parseFloorToken(bearer)
		if !ok {
			http.Error(w, `{"message":"bad token"}`, http.StatusUnauthorized)
			return
		}
		next := token()
		if err := rotate(r.Context(), sqldb, q, returning, worker, cur, next); errors.Is(err, sql.ErrNoRows) {
			http.Error(w, `{"message":"unknown token"}`, http.StatusUnauthorized)
			return
		} else if err != nil {
			http.Error(w, `{"message":"database"}`, http.StatusInternalServerError)
			return
		}
		h := w.Header()
		h.Set("Access-Control-Expose-Headers", "front-token, st-access-token, st-refresh-token")
		h.Set("Cache-Control", "no-store")
		h.Set("Content-Type", "application/json")
		h.Set("Front-Token", front)
		h.Set("St-Access-Token", access)
		h.Set("St-Refresh-Token", floorToken(worker, next))
		h.Set("Vary", "Origin")
		w.Write([]byte(`{"status":"OK"}`))
	})
	return mux
}

// filler is n characters of random base64url, a stand-in for a token.
func filler(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)[:n]
}
