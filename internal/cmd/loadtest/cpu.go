package main

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Linux reports CPU time in /proc in USER_HZ ticks, 100 a second.
const tick = time.Second / 100

// cpuReading is the CPU time used so far by the server under load (the
// demo, or the phase's own server), by this process (the load generator),
// by the database server's processes if it has any, by every other
// process, and by the machine's interrupt handlers (loopback traffic's
// among them), which no process is charged with.
type cpuReading struct {
	server, self, db, others, irq time.Duration
	dbRead                        bool
	ok                            bool
}

// readCPU reads the five; ok is false if the server's, the processes' or
// the machine's could not be read. dbNames are the command names of the
// database server's processes (postgres, or mysqld and mariadbd); none for
// an embedded database.
func readCPU(pid int, dbNames []string) cpuReading {
	srv, err1 := processCPU(pid)
	irq, err2 := interruptCPU()
	db, others, err3 := processesCPU(dbNames, pid, os.Getpid())
	return cpuReading{server: srv, self: selfCPU(), db: db, others: others, irq: irq,
		dbRead: len(dbNames) > 0, ok: err1 == nil && err2 == nil && err3 == nil}
}

// cpuUse is what a phase cost in CPU time: the server's, the load
// generator's, the database server's (if dbOK), the interrupt handlers',
// much of it the phase's own loopback traffic, and that of every other
// process on the machine, which should be near zero for a clean
// measurement.
type cpuUse struct {
	server, client, db, irq, other time.Duration
	dbOK                           bool
}

func cpuBetween(a, b cpuReading) (cpuUse, bool) {
	if !a.ok || !b.ok {
		return cpuUse{}, false
	}
	u := cpuUse{server: b.server - a.server, client: b.self - a.self}
	if a.dbRead && b.dbRead {
		u.db, u.dbOK = max(0, b.db-a.db), true
	}
	u.irq = max(0, b.irq-a.irq)
	// A process that ended during the phase without a parent to wait
	// for it took its time with it: the difference can fall below zero.
	u.other = max(0, b.others-a.others)
	return u, true
}

// dbProcessNames are the command names of the processes of the database
// server db names: none for memory and SQLite, which run in the demo.
func dbProcessNames(db string) []string {
	switch {
	case isPostgres(db):
		return []string{"postgres"}
	case isMySQL(db):
		return []string{"mysqld", "mariadbd"}
	}
	return nil
}

// processesCPU sums, over the machine's processes, the CPU time of each
// and of its children that ended and were waited for: of the processes
// whose command name is one of dbNames, and of the others but the
// processes skip. The children's time makes the sums' differences between
// two readings count a process that ran and ended between them, such as
// one of a build's compilers, and not a process that ended after being
// counted: its time moves to its parent's.
func processesCPU(dbNames []string, skip ...int) (db, others time.Duration, err error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0, 0, err
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || slices.Contains(skip, pid) {
			continue
		}
		name, t, err := processStat(pid, true)
		if err != nil {
			continue // ended since the directory was read
		}
		if slices.Contains(dbNames, name) {
			db += t
		} else {
			others += t
		}
	}
	return db, others, nil
}

// processCPU reads the user and system time of process pid from
// /proc/PID/stat.
func processCPU(pid int) (time.Duration, error) {
	_, t, err := processStat(pid, false)
	return t, err
}

// processStat reads the command name and the user and system time of
// process pid from /proc/PID/stat, with children the time of its children
// that ended and were waited for.
func processStat(pid int, children bool) (string, time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", 0, err
	}
	// The command name, in brackets, may hold spaces: count from after it.
	i, j := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if i < 0 || j < i {
		return "", 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(b[j+1:]))
	if len(f) < 15 {
		return "", 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	// utime, stime, cutime and cstime are fields 14 to 17 of the line;
	// f[0] is field 3.
	fields := f[11:13]
	if children {
		fields = f[11:15]
	}
	var sum int64
	for _, v := range fields {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return "", 0, fmt.Errorf("/proc/%d/stat: %v", pid, err)
		}
		sum += n
	}
	return string(b[i+1 : j]), time.Duration(sum) * tick, nil
}

// interruptCPU reads the time all the machine's CPUs spent in interrupt
// handlers, irq and softirq, from /proc/stat.
func interruptCPU() (time.Duration, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 8 || f[0] != "cpu" {
		return 0, fmt.Errorf("/proc/stat: unexpected first line %q", line)
	}
	irq, err1 := strconv.ParseInt(f[6], 10, 64)
	softirq, err2 := strconv.ParseInt(f[7], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/stat: unexpected first line %q", line)
	}
	return time.Duration(irq+softirq) * tick, nil
}

// selfCPU is the user and system time this process has used.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
