package main

import (
	"bytes"
	"errors"
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
// by the database server's processes if it has any, by the whole machine,
// and by the machine's interrupt handlers (loopback traffic's among them),
// which no process is charged with.
type cpuReading struct {
	server, self, db, machine, irq time.Duration
	dbRead                         bool
	ok                             bool
}

// readCPU reads the four; ok is false if the server's or the machine's
// could not be read. dbNames are the command names of the database
// server's processes (postgres, or mysqld and mariadbd); none for an
// embedded database.
func readCPU(pid int, dbNames []string) cpuReading {
	srv, err1 := processCPU(pid)
	mach, irq, err2 := machineCPU()
	r := cpuReading{server: srv, self: selfCPU(), machine: mach, irq: irq, ok: err1 == nil && err2 == nil}
	if len(dbNames) > 0 {
		r.db, r.dbRead = namedCPU(dbNames), true
	}
	return r
}

// cpuUse is what a phase cost in CPU time: the server's, the load
// generator's, the database server's (if dbOK), the interrupt handlers',
// much of it the phase's own loopback traffic, and that of every other
// process on the machine (steal time included), which should be near zero
// for a clean measurement.
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
		// A process of the database that ended during the phase took
		// its time with it: that time shows among the others.
		u.db, u.dbOK = max(0, b.db-a.db), true
	}
	u.irq = max(0, b.irq-a.irq)
	u.other = max(0, b.machine-a.machine-u.server-u.client-u.db-u.irq)
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

// namedCPU sums the CPU time of the processes whose command name is one
// of names.
func namedCPU(names []string) time.Duration {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	var sum time.Duration
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		if err != nil || !slices.Contains(names, strings.TrimSpace(string(comm))) {
			continue
		}
		if t, err := processCPU(pid); err == nil {
			sum += t
		}
	}
	return sum
}

// processCPU reads the user and system time of process pid from
// /proc/PID/stat.
func processCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name, in brackets, may hold spaces: count from after it.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	// utime and stime are fields 14 and 15 of the line; f[0] is field 3.
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return time.Duration(utime+stime) * tick, nil
}

// machineCPU reads the busy time of all the machine's CPUs from
// /proc/stat: user, nice, system, irq, softirq and steal; and of those
// irq and softirq, the interrupt handlers'.
func machineCPU() (busy, irq time.Duration, err error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0, 0, fmt.Errorf("/proc/stat: unexpected first line %q", line)
	}
	var ticks [9]int64
	for _, i := range []int{1, 2, 3, 6, 7, 8} {
		if ticks[i], err = strconv.ParseInt(f[i], 10, 64); err != nil {
			return 0, 0, fmt.Errorf("/proc/stat: %v", err)
		}
	}
	busyTicks := ticks[1] + ticks[2] + ticks[3] + ticks[6] + ticks[7] + ticks[8]
	return time.Duration(busyTicks) * tick, time.Duration(ticks[6]+ticks[7]) * tick, nil
}

// selfCPU is the user and system time this process has used.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
