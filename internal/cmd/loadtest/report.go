package main

import (
	"fmt"
	"io"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// report is one run of the phases: its rows and its target checks.
type report struct {
	cfg    config
	rows   []result
	checks []check
}

// check is a target check. value is the figure held against target: the
// target is met when value >= target, or, for a ceiling, value < target.
// format and unit print value; detail is the line's text. Over several
// runs a check is held against the median, or, for an everyRun check (a
// guarantee rather than a rate), against the worst run.
type check struct {
	what          string
	value, target float64
	ceiling       bool
	everyRun      bool
	format, unit  string
	detail        string
}

func (c check) met() bool {
	if c.ceiling {
		return c.value < c.target
	}
	return c.value >= c.target
}

func (c check) line() string {
	mark := "met"
	if !c.met() {
		mark = "**MISSED**"
	}
	return fmt.Sprintf("- %s: %s: %s", c.what, c.detail, mark)
}

// spread is one figure across runs: its median, minimum and maximum.
type spread struct{ med, min, max float64 }

// spreadOf needs at least one value; the median of an even count is the
// mean of the middle two.
func spreadOf(xs []float64) spread {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	med := s[n/2]
	if n%2 == 0 {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	return spread{med: med, min: s[0], max: s[n-1]}
}

// summary is a row of the report over several runs.
type summary struct {
	name           string
	runs           int // runs that have the row
	n              int // requests, all runs
	rate, p50, p99 spread
	errs           map[string]int // all runs
	hwm            int64          // the highest peak RSS of the runs, 0 if not applicable
	notes          []string
}

// aggregate sums runs up: a summary per row name and a check per target,
// in the order they first appear. A check's value becomes the median of
// its runs' values, so that the target is held against the median, and
// its detail shows that median with the min–max.
func aggregate(runs []*report) ([]summary, []check) {
	var rows []summary
	rowAt := map[string]int{}
	var rates, p50s, p99s [][]float64
	for i, rp := range runs {
		for _, r := range rp.rows {
			j, ok := rowAt[r.name]
			if !ok {
				j = len(rows)
				rowAt[r.name] = j
				rows = append(rows, summary{name: r.name, errs: map[string]int{}})
				rates, p50s, p99s = append(rates, nil), append(p50s, nil), append(p99s, nil)
			}
			s := &rows[j]
			s.runs++
			s.n += r.n
			rates[j] = append(rates[j], r.rate())
			p50s[j] = append(p50s[j], float64(percentile(r.lat, 50)))
			p99s[j] = append(p99s[j], float64(percentile(r.lat, 99)))
			for k, v := range r.errs {
				s.errs[k] += v
			}
			s.hwm = max(s.hwm, r.hwm)
			if r.note != "" {
				s.notes = append(s.notes, fmt.Sprintf("run %d: %s", i+1, r.note))
			}
		}
	}
	for j := range rows {
		rows[j].rate, rows[j].p50, rows[j].p99 = spreadOf(rates[j]), spreadOf(p50s[j]), spreadOf(p99s[j])
	}

	var checks []check
	checkAt := map[string]int{}
	var values [][]float64
	for _, rp := range runs {
		for _, c := range rp.checks {
			j, ok := checkAt[c.what]
			if !ok {
				j = len(checks)
				checkAt[c.what] = j
				checks = append(checks, c)
				values = append(values, nil)
			}
			values[j] = append(values[j], c.value)
		}
	}
	for j := range checks {
		c := &checks[j]
		s := spreadOf(values[j])
		c.value = s.med
		basis := "median"
		if c.everyRun {
			c.value, basis = s.min, "worst run"
			if c.ceiling {
				c.value = s.max
			}
		}
		c.detail = fmt.Sprintf(basis+" "+c.format+"%s (min–max "+c.format+"–"+c.format+"%s, %d runs)",
			c.value, c.unit, s.min, s.max, c.unit, len(values[j]))
	}
	return rows, checks
}

// ---- output ----

// printReport prints one run.
func printReport(w io.Writer, rp *report) {
	fmt.Fprintf(w, "\n### loadtest: -db %s, -c %d, -d %s, GOMAXPROCS %d, %s\n\n",
		redact(rp.cfg.db), rp.cfg.c, rp.cfg.d, runtime.GOMAXPROCS(0), runtime.Version())
	fmt.Fprintln(w, "| phase | requests | ops/s | p50 | p99 | errors (by status) | server peak RSS (VmHWM) |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
	for _, r := range rp.rows {
		rss := r.rss
		if rss == "" {
			rss = "n/a"
		}
		fmt.Fprintf(w, "| %s | %d | %s | %s | %s | %s | %s |\n", r.name, r.n, rateString(r.rate()),
			ms(percentile(r.lat, 50)), ms(percentile(r.lat, 99)), formatErrs(r.errs, ""), rss)
	}
	fmt.Fprintln(w)
	for _, r := range rp.rows {
		if r.note != "" {
			fmt.Fprintf(w, "- %s: %s\n", r.name, r.note)
		}
	}
	printChecks(w, rp.checks)
}

// printSummary prints several runs: per row the median with the min–max.
func printSummary(w io.Writer, cfg config, runs []*report) {
	rows, checks := aggregate(runs)
	fmt.Fprintf(w, "\n### loadtest: -db %s, -c %d, -d %s, -runs %d, GOMAXPROCS %d, %s\n\n",
		redact(cfg.db), cfg.c, cfg.d, len(runs), runtime.GOMAXPROCS(0), runtime.Version())
	fmt.Fprintf(w, "Each run against a fresh demo. ops/s, p50 and p99: median (min–max) of the runs; requests and errors: all runs; peak RSS: the highest of the runs.\n\n")
	fmt.Fprintln(w, "| phase | runs | requests | ops/s | p50 | p99 | errors (by status) | server peak RSS (VmHWM) |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	toMs := func(v float64) string { return ms(time.Duration(v)) }
	for _, s := range rows {
		rss := "n/a"
		if s.hwm > 0 {
			rss = mib(s.hwm)
		}
		fmt.Fprintf(w, "| %s | %d | %d | %s | %s | %s | %s | %s |\n", s.name, s.runs, s.n,
			spreadString(s.rate, rateString), spreadString(s.p50, toMs), spreadString(s.p99, toMs),
			formatErrs(s.errs, ""), rss)
	}
	fmt.Fprintln(w)
	for _, s := range rows {
		for _, note := range s.notes {
			fmt.Fprintf(w, "- %s, %s\n", s.name, note)
		}
	}
	printChecks(w, checks)
}

func printChecks(w io.Writer, checks []check) {
	fmt.Fprintln(w, "\nTargets:")
	fmt.Fprintln(w)
	for _, c := range checks {
		fmt.Fprintln(w, c.line())
	}
	if len(checks) == 0 {
		fmt.Fprintln(w, "- none of the phases run has a target")
	}
}

// spreadString prints "median (min–max)".
func spreadString(s spread, f func(float64) string) string {
	return fmt.Sprintf("%s (%s–%s)", f(s.med), f(s.min), f(s.max))
}

// formatErrs lists error counts, most frequent first, but skip.
func formatErrs(errs map[string]int, skip string) string {
	keys := make([]string, 0, len(errs))
	for k, v := range errs {
		if k != skip && v > 0 {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return "0"
	}
	sort.Slice(keys, func(i, j int) bool {
		if errs[keys[i]] != errs[keys[j]] {
			return errs[keys[i]] > errs[keys[j]]
		}
		return keys[i] < keys[j]
	})
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s: %d", k, errs[k])
	}
	return b.String()
}

func rateString(r float64) string {
	if r >= 100 {
		return strconv.FormatFloat(r, 'f', 0, 64)
	}
	return strconv.FormatFloat(r, 'f', 1, 64)
}

func ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 2, 64) + " ms"
}

func mib(b int64) string {
	return strconv.FormatFloat(float64(b)/(1<<20), 'f', 1, 64) + " MiB"
}
