// Package monitoring reads what the Prometheus rules and the Grafana dashboard of
// artifacts/monitoring ask of the binaries: which metric each of their PromQL expressions
// selects, from which binary's scrape job. The tests of pkg/apiserver and pkg/agent, and the
// e2e suite, check those metrics against what the binaries export (Missing).
package monitoring

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// The binaries, named as the scrape jobs the rules assume.
const (
	APIServer = "gitops-apiserver"
	Agent     = "gitops-agent"
)

// jobs maps the job matchers of the rules (the job names) and of the dashboard (its
// variables) to the binary scraped.
var jobs = map[string]string{
	APIServer: APIServer, "$apiserver_job": APIServer, "${apiserver_job}": APIServer,
	Agent: Agent, "$agent_job": Agent, "${agent_job}": Agent,
}

// generated are the series Prometheus writes itself, which no binary exports.
var generated = map[string]bool{"up": true, "scrape_duration_seconds": true, "scrape_samples_scraped": true}

// Dir is artifacts/monitoring of this repository, found from the working folder (go test runs a
// package's tests in its folder), not from this file's path, which -trimpath removes.
func Dir() string {
	dir, err := os.Getwd()
	if err != nil {
		return filepath.Join("artifacts", "monitoring")
	}
	for {
		candidate := filepath.Join(dir, "artifacts", "monitoring")
		if info, err := os.Stat(candidate); err == nil && info.IsDir() {
			return candidate
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return filepath.Join("artifacts", "monitoring")
		}
		dir = parent
	}
}

// RulesFile is a Prometheus rules file.
type RulesFile struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []Rule `json:"rules"`
	} `json:"groups"`
}

// Rule is a recording or an alerting rule.
type Rule struct {
	Record      string            `json:"record,omitempty"`
	Alert       string            `json:"alert,omitempty"`
	Expr        string            `json:"expr"`
	For         string            `json:"for,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// RuleFiles reads every *.rules.yaml of dir, by file name.
func RuleFiles(dir string) (map[string]RulesFile, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.rules.yaml"))
	if err != nil || len(paths) == 0 {
		return nil, fmt.Errorf("no *.rules.yaml in %s (%v)", dir, err)
	}
	files := map[string]RulesFile{}
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		var f RulesFile
		if err := yaml.UnmarshalStrict(raw, &f); err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		files[filepath.Base(p)] = f
	}
	return files, nil
}

// Dashboard is what the check reads of a Grafana dashboard.
type Dashboard struct {
	Title         string  `json:"title"`
	SchemaVersion int     `json:"schemaVersion"`
	Panels        []Panel `json:"panels"`
	Templating    struct {
		List []struct {
			Name string `json:"name"`
			Type string `json:"type"`
		} `json:"list"`
	} `json:"templating"`
}

// Panel is a dashboard panel, or a row holding panels.
type Panel struct {
	ID         int             `json:"id"`
	Title      string          `json:"title"`
	Type       string          `json:"type"`
	Datasource json.RawMessage `json:"datasource"`
	Targets    []struct {
		Expr       string          `json:"expr"`
		Datasource json.RawMessage `json:"datasource"`
	} `json:"targets"`
	Panels []Panel `json:"panels"`
}

// ReadDashboard reads the Grafana dashboard at path.
func ReadDashboard(path string) (Dashboard, error) {
	var d Dashboard
	raw, err := os.ReadFile(path)
	if err != nil {
		return d, err
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		return d, fmt.Errorf("%s: %w", path, err)
	}
	return d, nil
}

// AllPanels is every panel of d, those inside rows included.
func (d Dashboard) AllPanels() []Panel {
	var all []Panel
	var walk func([]Panel)
	walk = func(ps []Panel) {
		for _, p := range ps {
			all = append(all, p)
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return all
}

// Use is one selection of a metric by a rule or a panel.
type Use struct {
	Metric string
	// Binary is the binary whose scrape job the selector names (APIServer or Agent).
	Binary string
	// Where names the rule or panel.
	Where string
}

// Uses lists the metrics that the rules files and the dashboard of dir select from the
// binaries. Series the rules record are not the binaries', nor are those Prometheus writes
// itself (up); every other selector must name its job (Binary).
func Uses(dir string) ([]Use, error) {
	files, err := RuleFiles(dir)
	if err != nil {
		return nil, err
	}
	recorded := map[string]bool{}
	type expr struct{ where, expr string }
	var exprs []expr
	for name, f := range files {
		for _, g := range f.Groups {
			for _, r := range g.Rules {
				if r.Record != "" {
					recorded[r.Record] = true
				}
				exprs = append(exprs, expr{fmt.Sprintf("%s: %s", name, r.Record+r.Alert), r.Expr})
			}
		}
	}
	d, err := ReadDashboard(filepath.Join(dir, "grafana-dashboard.json"))
	if err != nil {
		return nil, err
	}
	for _, p := range d.AllPanels() {
		for _, t := range p.Targets {
			exprs = append(exprs, expr{fmt.Sprintf("grafana-dashboard.json: panel %d %q", p.ID, p.Title), t.Expr})
		}
	}
	var uses []Use
	var errs []string
	for _, e := range exprs {
		sels, err := Selectors(e.expr)
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", e.where, err))
			continue
		}
		for _, s := range sels {
			if recorded[s.Metric] || generated[s.Metric] {
				continue
			}
			binary, ok := jobs[s.Job]
			if !ok {
				errs = append(errs, fmt.Sprintf("%s: %s selects no known job (job=%q): name gitops-apiserver or gitops-agent", e.where, s.Metric, s.Job))
				continue
			}
			uses = append(uses, Use{Metric: s.Metric, Binary: binary, Where: e.where})
		}
	}
	if len(errs) > 0 {
		sort.Strings(errs)
		return nil, fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	return uses, nil
}

// Selector is a metric selected by a PromQL expression, and the value of its job matcher.
type Selector struct {
	Metric, Job string
}

var (
	token      = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|` + "`[^`]*`" + `|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|[A-Za-z_:][A-Za-z0-9_:]*|[0-9][0-9.eE+-]*[a-z]*|\S`)
	jobMatcher = regexp.MustCompile(`(?:^|[{,\s])job\s*=\s*"([^"]*)"`)
	// keywords are PromQL's binary operators and modifiers spelt as words.
	keywords = map[string]bool{"and": true, "or": true, "unless": true, "by": true, "without": true, "on": true, "ignoring": true,
		"group_left": true, "group_right": true, "bool": true, "offset": true, "atan2": true, "inf": true, "nan": true, "Inf": true, "NaN": true}
	// labelLists are the keywords followed by a parenthesized list of label names.
	labelLists = map[string]bool{"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true}
)

// Selectors lists the metrics expr selects by name, with their job matcher. Function and
// aggregation names (words followed by "("), keywords, label names in by(...)/on(...) lists,
// strings, numbers and durations, and Grafana's variables are not metrics.
func Selectors(expr string) ([]Selector, error) {
	toks := token.FindAllString(expr, -1)
	var out []Selector
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		switch {
		case t == "{":
			// A selector without a name ({__name__=...}) is not used here.
			end := closing(toks, i, "{", "}")
			if end < 0 {
				return nil, fmt.Errorf("unbalanced { in %q", expr)
			}
			i = end
		case t == "[":
			end := closing(toks, i, "[", "]")
			if end < 0 {
				return nil, fmt.Errorf("unbalanced [ in %q", expr)
			}
			i = end
		case labelLists[t]:
			if i+1 < len(toks) && toks[i+1] == "(" {
				end := closing(toks, i+1, "(", ")")
				if end < 0 {
					return nil, fmt.Errorf("unbalanced ( in %q", expr)
				}
				i = end
			}
		case keywords[t]:
		case isIdent(t):
			if i+1 < len(toks) && (toks[i+1] == "(" || toks[i+1] == "by" || toks[i+1] == "without") {
				continue // a function, or an aggregation (sum by (x) (...))
			}
			sel := Selector{Metric: t}
			if i+1 < len(toks) && toks[i+1] == "{" {
				end := closing(toks, i+1, "{", "}")
				if end < 0 {
					return nil, fmt.Errorf("unbalanced { in %q", expr)
				}
				if m := jobMatcher.FindStringSubmatch(strings.Join(toks[i+1:end+1], " ")); m != nil {
					sel.Job = m[1]
				}
				i = end
			}
			out = append(out, sel)
		}
	}
	return out, nil
}

func isIdent(t string) bool {
	c := t[0]
	return c == '_' || c == ':' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

// closing is the index of the token closing the open one at i, or -1.
func closing(toks []string, i int, open, close string) int {
	depth := 0
	for j := i; j < len(toks); j++ {
		switch toks[j] {
		case open:
			depth++
		case close:
			depth--
			if depth == 0 {
				return j
			}
		}
	}
	return -1
}

// Exposition is what a /metrics page (Prometheus text format) holds: its metric families,
// with their types.
type Exposition map[string]string

// ParseExposition reads the families of a /metrics page: each "# TYPE" line, and each sample's
// name (a family without a TYPE line is "untyped").
func ParseExposition(r io.Reader) (Exposition, error) {
	e := Exposition{}
	s := bufio.NewScanner(r)
	s.Buffer(make([]byte, 1<<20), 1<<24)
	for s.Scan() {
		line := s.Text()
		if f := strings.Fields(line); len(f) >= 4 && f[0] == "#" && f[1] == "TYPE" {
			e[f[2]] = f[3]
			continue
		}
		if line == "" || line[0] == '#' {
			continue
		}
		name := line
		if i := strings.IndexAny(line, "{ "); i >= 0 {
			name = line[:i]
		}
		if _, ok := e[name]; !ok && !e.has(name) {
			e[name] = "untyped"
		}
	}
	return e, s.Err()
}

// has tells whether the page has a series named name: a family's own, or a histogram's or
// summary's _bucket, _count and _sum.
func (e Exposition) has(name string) bool {
	if _, ok := e[name]; ok {
		return true
	}
	for _, suffix := range []string{"_bucket", "_count", "_sum"} {
		base, ok := strings.CutSuffix(name, suffix)
		if !ok {
			continue
		}
		if t := e[base]; t == "histogram" || (t == "summary" && suffix != "_bucket") {
			return true
		}
	}
	return false
}

// Missing lists, one line each, the uses of binary's metrics that the exposition lacks.
func Missing(uses []Use, binary string, e Exposition) []string {
	var missing []string
	for _, u := range uses {
		if u.Binary == binary && !e.has(u.Metric) {
			missing = append(missing, fmt.Sprintf("%s (used by %s)", u.Metric, u.Where))
		}
	}
	slices.Sort(missing)
	return slices.Compact(missing)
}
