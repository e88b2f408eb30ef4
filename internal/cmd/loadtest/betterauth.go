package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// The phase signin-betterauth signs users in to Better Auth, hashing with
// @node-rs/argon2 at the library's parameters on the same PostgreSQL
// server, run by the Node script that -betterauth names
// (internal/cmd/betterauth/server.mjs): with the same client, the same
// concurrency and the same duration as the demo's signin phase, so that
// -phases signin,signin-betterauth -runs 3 alternates the two.

// startBetterAuth starts the Node script with BA_DATABASE_URL set to the
// harness's PostgreSQL DSN, on a free loopback port, and waits for its
// listening line. The script makes a database of its own and drops it
// when stopped.
func startBetterAuth(script, db, dir string) (*server, error) {
	if _, err := os.Stat(filepath.Join(filepath.Dir(script), "node_modules")); err != nil {
		return nil, fmt.Errorf("-betterauth %s: no node_modules beside it: run npm ci in %s", script, filepath.Dir(script))
	}
	logPath := filepath.Join(dir, "betterauth.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd := exec.Command("node", script)
	cmd.Env = append(os.Environ(), "BA_DATABASE_URL="+db, "NODE_ENV=production")
	cmd.Stderr = logf
	return startServer(cmd, logPath, "better auth", "betterauth: listening on http://")
}

// baCredentials is the JSON body of Better Auth's email sign-in and, with
// a name, its sign-up.
func baCredentials(email, name string) string {
	m := map[string]string{"email": email, "password": password}
	if name != "" {
		m["name"] = name
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// expectBAToken is expect200 for Better Auth: 200 with a session token in
// the body.
func expectBAToken(a answer, err error) outcome {
	if o := expect200(a, err, false); o.err != "" {
		return o
	}
	if !bytes.Contains(a.body, []byte(`"token":"`)) {
		return outcome{err: "200 without token"}
	}
	return outcome{}
}

// baSignUp creates n Better Auth users, a few at a time, and returns
// their emails.
func baSignUp(ctx context.Context, cl *client, prefix string, n int) ([]string, error) {
	out := make([]string, n)
	err := fewAtATime(n, func(i int) error {
		email := fmt.Sprintf("%s-%d@example.com", prefix, i)
		a, err := cl.do(ctx, "POST", "/api/auth/sign-up/email", "", baCredentials(email, "load test"))
		if o := expectBAToken(a, err); o.err != "" {
			return fmt.Errorf("better auth sign-up %s: %s %s %v", email, o.err, bytes.TrimSpace(a.body), err)
		}
		out[i] = email
		return nil
	})
	return out, err
}

// logResult logs a phase's requests and rate as it ends, so that each
// run's figures can be matched with what else the machine did meanwhile.
func logResult(r result) {
	log(fmt.Sprintf("phase %s done: %d requests in %.1fs, %s/s", r.name, r.n, r.elapsed.Seconds(), rateString(r.rate())))
}
