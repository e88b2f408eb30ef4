package sqltest

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// PostgresCPU is the CPU time used so far by every PostgreSQL process on
// this machine, from /proc: the server must run here. What a workload
// costs the database is the difference of two readings around it. It
// reports false where /proc shows no PostgreSQL process.
func PostgresCPU() (time.Duration, bool) {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var ticks int64
	found := false
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // the process has ended
		}
		open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
		if open < 0 || end < open || !bytes.HasPrefix(b[open+1:end], []byte("postgres")) {
			continue
		}
		// After the command: state, then fields 4 to 13; utime and stime
		// are the 14th and 15th fields of the line.
		f := strings.Fields(string(b[end+1:]))
		if len(f) < 13 {
			continue
		}
		user, err1 := strconv.ParseInt(f[11], 10, 64)
		sys, err2 := strconv.ParseInt(f[12], 10, 64)
		if err1 == nil && err2 == nil {
			ticks += user + sys
			found = true
		}
	}
	// Linux reports it in USER_HZ ticks, 100 a second.
	return time.Duration(ticks) * (time.Second / 100), found
}
