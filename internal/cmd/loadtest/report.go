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

// report is one run of the phases: its rows and its figures.
type report struct {
	cfg     config
	rows    []result
	figures []figure
}

// figure is a figure of the run worth reading on its own: a ratio to its
// baseline, a rate, a count. The tool only measures; the targets these are
// compared with are stated in BENCHMARKS.md. format and unit print value;
// detail is the line's text. Over several runs a figure is the median of
// its runs, or, with worstRun (for what must hold in every run, such as
// every burst request answered), its worst run: the lowest, or with
// higherIsWorse the highest.
type figure struct {
	what          string
	value         float64
	worstRun      bool
	higherIsWorse bool
	format, unit  string
	detail        string
}

func (f figure) line() string {
	return fmt.Sprintf("- %s: %s", f.what, f.detail)
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
	// CPU per request of the server, the load generator and the database
	// server, the cores of other processes; cpuRuns counts the runs that
	// measured them, dbRuns those that read the database server's too.
	serverCPU, clientCPU, dbCPU, irqCores, otherCores spread
	cpuRuns, dbRuns                                   int
}

// aggregate sums runs up: a summary per row name and per figure, in the
// order they first appear. A figure's value becomes the median of its
// runs' values (or the worst run's), and its detail shows that value with
// the min–max.
func aggregate(runs []*report) ([]summary, []figure) {
	var rows []summary
	rowAt := map[string]int{}
	var rates, p50s, p99s [][]float64
	var srvCPU, cliCPU, dbCPU, irq, other [][]float64
	for i, rp := range runs {
		for _, r := range rp.rows {
			j, ok := rowAt[r.name]
			if !ok {
				j = len(rows)
				rowAt[r.name] = j
				rows = append(rows, summary{name: r.name, errs: map[string]int{}})
				rates, p50s, p99s = append(rates, nil), append(p50s, nil), append(p99s, nil)
				srvCPU, cliCPU, dbCPU, other = append(srvCPU, nil), append(cliCPU, nil), append(dbCPU, nil), append(other, nil)
				irq = append(irq, nil)
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
			if srv, cli, db, irqc, oth, ok := r.cpuPerRequest(); ok {
				irq[j] = append(irq[j], irqc)
				s.cpuRuns++
				if db >= 0 {
					s.dbRuns++
					dbCPU[j] = append(dbCPU[j], float64(db))
				}
				srvCPU[j] = append(srvCPU[j], float64(srv))
				cliCPU[j] = append(cliCPU[j], float64(cli))
				other[j] = append(other[j], oth)
			}
			if r.note != "" {
				s.notes = append(s.notes, fmt.Sprintf("run %d: %s", i+1, r.note))
			}
		}
	}
	for j := range rows {
		rows[j].rate, rows[j].p50, rows[j].p99 = spreadOf(rates[j]), spreadOf(p50s[j]), spreadOf(p99s[j])
		if rows[j].cpuRuns > 0 {
			rows[j].serverCPU, rows[j].clientCPU, rows[j].otherCores = spreadOf(srvCPU[j]), spreadOf(cliCPU[j]), spreadOf(other[j])
			rows[j].irqCores = spreadOf(irq[j])
		}
		if rows[j].dbRuns > 0 {
			rows[j].dbCPU = spreadOf(dbCPU[j])
		}
	}

	var figures []figure
	figureAt := map[string]int{}
	var values [][]float64
	for _, rp := range runs {
		for _, f := range rp.figures {
			j, ok := figureAt[f.what]
			if !ok {
				j = len(figures)
				figureAt[f.what] = j
				figures = append(figures, f)
				values = append(values, nil)
			}
			values[j] = append(values[j], f.value)
		}
	}
	for j := range figures {
		f := &figures[j]
		s := spreadOf(values[j])
		f.value = s.med
		basis := "median"
		if f.worstRun {
			f.value, basis = s.min, "worst run"
			if f.higherIsWorse {
				f.value = s.max
			}
		}
		f.detail = fmt.Sprintf(basis+" "+f.format+"%s (min–max "+f.format+"–"+f.format+"%s, %d runs)",
			f.value, f.unit, s.min, s.max, f.unit, len(values[j]))
	}
	return rows, figures
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
	var cpu [][6]string
	for _, r := range rp.rows {
		if srv, cli, db, irq, oth, ok := r.cpuPerRequest(); ok {
			dbs := "n/a"
			if db >= 0 {
				dbs = us(db)
			}
			cpu = append(cpu, [6]string{r.name, us(srv), us(cli), dbs, cores(irq), cores(oth)})
		}
	}
	printCPU(w, cpu)
	printFigures(w, rp.figures)
}

// printSummary prints several runs: per row the median with the min–max.
func printSummary(w io.Writer, cfg config, runs []*report) {
	rows, figures := aggregate(runs)
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
	var cpu [][6]string
	toUs := func(v float64) string { return us(time.Duration(v)) }
	for _, s := range rows {
		if s.cpuRuns > 0 {
			dbs := "n/a"
			if s.dbRuns > 0 {
				dbs = spreadString(s.dbCPU, toUs)
			}
			cpu = append(cpu, [6]string{s.name, spreadString(s.serverCPU, toUs), spreadString(s.clientCPU, toUs), dbs,
				spreadString(s.irqCores, cores), spreadString(s.otherCores, cores)})
		}
	}
	printCPU(w, cpu)
	printFigures(w, figures)
}

// printCPU prints the CPU table: per phase, the CPU time per request of
// the server under load (the demo, or the phase's own server) and of the
// load generator, which share the machine's cores, so that a phase that
// costs the client more shows apart from one that costs the server more;
// that of the database server's processes (n/a for memory and SQLite,
// which run inside the server); the cores the interrupt handlers took,
// which loopback traffic keeps busy; and the cores that other processes
// took meanwhile, which should be near 0 for a clean measurement.
func printCPU(w io.Writer, rows [][6]string) {
	if len(rows) == 0 {
		return
	}
	fmt.Fprintln(w, "\nCPU time per request, and the cores other processes used during the phase:")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| phase | server CPU/request | load generator CPU/request | database server CPU/request | interrupts | other processes |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	for _, r := range rows {
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |\n", r[0], r[1], r[2], r[3], r[4], r[5])
	}
}

// printFigures prints the ratios to the baselines and the other figures;
// BENCHMARKS.md holds what they are compared with.
func printFigures(w io.Writer, figures []figure) {
	if len(figures) == 0 {
		return
	}
	fmt.Fprintln(w, "\nRatios to the baselines, and other figures:")
	fmt.Fprintln(w)
	for _, f := range figures {
		fmt.Fprintln(w, f.line())
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

func us(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Microsecond), 'f', 1, 64) + " µs"
}

func cores(c float64) string {
	return strconv.FormatFloat(c, 'f', 2, 64) + " cores"
}

func mib(b int64) string {
	return strconv.FormatFloat(float64(b)/(1<<20), 'f', 1, 64) + " MiB"
}
