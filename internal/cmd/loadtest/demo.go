package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// server is a demo process the harness started: its address and its log.
type server struct {
	cmd  *exec.Cmd
	base string
	log  string
	done chan struct{}
}

// startDemo starts the demo on a free loopback port, with the flags extra
// besides the harness's own, and waits for its listening line.
func startDemo(bin, db, dir, name string, extra ...string) (*server, error) {
	logPath := filepath.Join(dir, name+".log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	// Each worker refreshes its one session as fast as it can: far past
	// the per-session bound, which is off here so that the phase measures
	// refreshes, not refusals. The bound is a column of the same
	// statement, so it costs the same either way.
	args := append([]string{"-addr", "127.0.0.1:0", "-db", db, "-access-ttl", "1h", "-session-refreshes", "off"}, extra...)
	cmd := exec.Command(bin, args...)
	cmd.Stderr = logf // the auth log: a line per outcome, kept off the harness
	return startServer(cmd, logPath, "demo", "demo: listening on http://")
}

// startServer starts cmd, whose standard error goes to the log at logPath,
// and waits for the line of its standard output that begins with prefix
// and goes on with the loopback address it listens on. name names the
// server in errors.
func startServer(cmd *exec.Cmd, logPath, name, prefix string) (*server, error) {
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
			if rest, ok := strings.CutPrefix(sc.Text(), prefix); ok {
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
			return nil, fmt.Errorf("%s listens on %s, not loopback", name, addr)
		}
		return s, nil
	case <-s.done:
		return nil, fmt.Errorf("%s exited before listening: %s", name, tail(logPath))
	case <-time.After(60 * time.Second):
		s.stop()
		return nil, fmt.Errorf("%s did not listen within 60s: %s", name, tail(logPath))
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

// resetPeak sets the server's peak RSS (VmHWM) back to its RSS now, so
// that the peak read next is of what follows, and reports whether it
// could (Linux 4.0 and later, clear_refs).
func (s *server) resetPeak() bool {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", s.cmd.Process.Pid), []byte("5"), 0) == nil
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
