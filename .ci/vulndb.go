// Command vulndb serves .ci/lint's vulnerability check, which runs with no
// network but the Go module proxy.
//
//	go run .ci/vulndb.go layout OSV_DIR DB_DIR
//
// lays out the OSV reports of the golang.org/x/vulndb module (data/osv,
// one GO-*.json file each) as the database govulncheck reads with
// -db file://DB_DIR: index/db.json, index/modules.json and ID/<id>.json
// (go.dev/security/vuln/database#api). An index entry names no fixed
// version, so govulncheck reads every report of a module and checks
// its ranges itself.
//
//	govulncheck -format json ./... | go run .ci/vulndb.go judge
//
// prints the vulnerabilities the code reaches (symbol-level findings) and
// exits 1 if one is in a required module. One in the standard library is
// printed as a warning: it is fixed by building with a newer Go, a choice
// of whoever builds a binary, not of this module.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

func main() {
	var err error
	switch {
	case len(os.Args) == 4 && os.Args[1] == "layout":
		err = layout(os.Args[2], os.Args[3])
	case len(os.Args) == 2 && os.Args[1] == "judge":
		err = judge(os.Stdin, os.Stdout)
	default:
		err = errors.New("usage: vulndb layout OSV_DIR DB_DIR | vulndb judge < govulncheck.json")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "vulndb:", err)
		os.Exit(1)
	}
}

type entry struct {
	ID       string    `json:"id"`
	Modified time.Time `json:"modified"`
	Summary  string    `json:"summary"`
	Affected []struct {
		Package struct {
			Name string `json:"name"`
		} `json:"package"`
	} `json:"affected"`
}

type moduleVuln struct {
	ID       string    `json:"id"`
	Modified time.Time `json:"modified"`
}

type module struct {
	Path  string       `json:"path"`
	Vulns []moduleVuln `json:"vulns"`
}

func layout(osvDir, dbDir string) error {
	files, err := filepath.Glob(filepath.Join(osvDir, "GO-*.json"))
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("no GO-*.json report in %s", osvDir)
	}
	for _, d := range []string{"index", "ID"} {
		if err := os.MkdirAll(filepath.Join(dbDir, d), 0o755); err != nil {
			return err
		}
	}
	var modified time.Time
	modules := map[string]*module{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		var e entry
		if err := json.Unmarshal(b, &e); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		if filepath.Base(f) != e.ID+".json" {
			return fmt.Errorf("%s holds %q", f, e.ID)
		}
		if e.Modified.After(modified) {
			modified = e.Modified
		}
		for _, a := range e.Affected {
			m := modules[a.Package.Name]
			if m == nil {
				m = &module{Path: a.Package.Name}
				modules[m.Path] = m
			}
			if !slices.ContainsFunc(m.Vulns, func(v moduleVuln) bool { return v.ID == e.ID }) {
				m.Vulns = append(m.Vulns, moduleVuln{e.ID, e.Modified})
			}
		}
		if err := os.WriteFile(filepath.Join(dbDir, "ID", e.ID+".json"), b, 0o644); err != nil {
			return err
		}
	}
	index := make([]*module, 0, len(modules))
	for _, m := range modules {
		index = append(index, m)
	}
	slices.SortFunc(index, func(a, b *module) int { return strings.Compare(a.Path, b.Path) })
	if err := writeJSON(filepath.Join(dbDir, "index", "modules.json"), index); err != nil {
		return err
	}
	if err := writeJSON(filepath.Join(dbDir, "index", "db.json"), map[string]time.Time{"modified": modified}); err != nil {
		return err
	}
	fmt.Printf("vulndb: %d reports, %d modules\n", len(files), len(index))
	return nil
}

func writeJSON(name string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return os.WriteFile(name, b, 0o644)
}

// The messages of govulncheck -format json, as far as judge reads them.
type message struct {
	Config *struct {
		ScannerVersion string `json:"scanner_version"`
		GoVersion      string `json:"go_version"`
	} `json:"config"`
	OSV     *entry `json:"osv"`
	Finding *struct {
		OSV          string  `json:"osv"`
		FixedVersion string  `json:"fixed_version"`
		Trace        []frame `json:"trace"`
	} `json:"finding"`
}

type frame struct {
	Module   string `json:"module"`
	Version  string `json:"version"`
	Package  string `json:"package"`
	Function string `json:"function"`
	Receiver string `json:"receiver"`
	Position *struct {
		Filename string `json:"filename"`
		Line     int    `json:"line"`
	} `json:"position"`
}

func (f frame) symbol() string {
	s := f.Package + "."
	if f.Receiver != "" {
		s += strings.TrimPrefix(f.Receiver, "*") + "."
	}
	return s + f.Function
}

// A reached vulnerability: one per OSV entry and module.
type reached struct {
	id, module, version, fixed string
	calls                      []string // where the code calls in, first few
}

func judge(r io.Reader, w io.Writer) error {
	dec := json.NewDecoder(bufio.NewReader(r))
	summaries := map[string]string{}
	byKey := map[[2]string]*reached{}
	var order []*reached
	goVersion, scanned := "", false
	for {
		var m message
		if err := dec.Decode(&m); err == io.EOF {
			break
		} else if err != nil {
			return fmt.Errorf("reading govulncheck's output: %w", err)
		}
		switch {
		case m.Config != nil:
			goVersion, scanned = m.Config.GoVersion, true
		case m.OSV != nil:
			summaries[m.OSV.ID] = m.OSV.Summary
		case m.Finding != nil && len(m.Finding.Trace) > 0 && m.Finding.Trace[0].Function != "":
			t := m.Finding.Trace
			k := [2]string{m.Finding.OSV, t[0].Module}
			v := byKey[k]
			if v == nil {
				v = &reached{id: k[0], module: k[1], version: t[0].Version, fixed: m.Finding.FixedVersion}
				byKey[k] = v
				order = append(order, v)
			}
			// The last frame is where the code of this module calls in.
			// One call into the standard library is enough to show.
			limit := 3
			if v.module == "stdlib" {
				limit = 1
			}
			if in := t[len(t)-1]; in.Position != nil && len(v.calls) < limit {
				call := fmt.Sprintf("%s:%d: %s reaches %s", in.Position.Filename, in.Position.Line, in.symbol(), t[0].symbol())
				if !slices.Contains(v.calls, call) {
					v.calls = append(v.calls, call)
				}
			}
		}
	}
	if !scanned {
		return errors.New("no govulncheck output")
	}
	var modules, stdlib int
	for _, v := range order {
		kind := "FAIL"
		if v.module == "stdlib" {
			kind, v.module, v.version = "warning", "Go standard library", goVersion
			stdlib++
		} else {
			modules++
		}
		fixed := "no fixed version"
		if v.fixed != "" {
			fixed = "fixed in " + v.fixed
		}
		fmt.Fprintf(w, "%s: %s: %s %s (%s): %s\n", kind, v.id, v.module, v.version, fixed, summaries[v.id])
		for _, c := range v.calls {
			fmt.Fprintf(w, "    %s\n", c)
		}
	}
	fmt.Fprintf(w, "vulndb: the code reaches %d known vulnerabilities in required modules and %d in the standard library of %s\n", modules, stdlib, goVersion)
	if stdlib > 0 {
		fmt.Fprintf(w, "vulndb: the standard library's are fixed by building with a newer Go than %s (a warning: the builder of a binary chooses its Go)\n", goVersion)
	}
	if modules > 0 {
		return fmt.Errorf("%d known vulnerabilities reached in required modules: upgrade them (go get MODULE@FIXED)", modules)
	}
	return nil
}
