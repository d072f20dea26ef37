package monitoring

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

const runbookBase = "https://github.com/gitops-service/gitops-service/blob/main/docs/runbooks.md#"

func TestSelectors(t *testing.T) {
	for _, tc := range []struct {
		expr string
		want []Selector
	}{
		{`up{job="gitops-apiserver"} == 0`, []Selector{{"up", "gitops-apiserver"}}},
		{`sum by (le, verb) (rate(apiserver_request_sli_duration_seconds_bucket{job="$apiserver_job",verb!~"WATCH|CONNECT",le=~"1(\\.0)?"}[$__rate_interval]))`,
			[]Selector{{"apiserver_request_sli_duration_seconds_bucket", "$apiserver_job"}}},
		{`max by (job, instance, name) (workqueue_depth{job="gitops-agent"}) * on (job, instance, name) group_left ()
		  max by (job, instance, name) (label_replace(gitops_agent_controller_running{job="gitops-agent"}, "name", "$1", "controller", "(.+)") == 1)`,
			[]Selector{{"workqueue_depth", "gitops-agent"}, {"gitops_agent_controller_running", "gitops-agent"}}},
		{`time() - max(x:recorded:sum offset 5m) > bool 900 and on() vector(1)`, []Selector{{"x:recorded:sum", ""}}},
		{`histogram_quantile(0.99, sum(rate(a_bucket{result="committed", job = "j"}[5m])) without (instance)) > 1e-3 unless b`,
			[]Selector{{"a_bucket", "j"}, {"b", ""}}},
	} {
		got, err := Selectors(tc.expr)
		if err != nil {
			t.Errorf("%s: %v", tc.expr, err)
			continue
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s:\n got %v\nwant %v", tc.expr, got, tc.want)
		}
	}
}

func TestExposition(t *testing.T) {
	e, err := ParseExposition(strings.NewReader(`# HELP h_seconds A histogram.
# TYPE h_seconds histogram
h_seconds_bucket{le="1"} 1
h_seconds_sum 1
h_seconds_count 1
# TYPE s summary
s_sum 1
s_count 1
plain{a="b"} 3
`))
	if err != nil {
		t.Fatal(err)
	}
	uses := []Use{{"h_seconds_bucket", Agent, "r"}, {"h_seconds_count", Agent, "r"}, {"s_count", Agent, "r"}, {"plain", Agent, "r"},
		{"s_bucket", Agent, "r"}, {"absent_total", Agent, "r"}, {"absent_total", APIServer, "r"}}
	if got, want := Missing(uses, Agent, e), []string{"absent_total (used by r)", "s_bucket (used by r)"}; !slices.Equal(got, want) {
		t.Errorf("missing %v, want %v", got, want)
	}
}

// Every alert says how bad it is, what it means and where its runbook is, and has a promtool
// test in which it fires and one in which it stays silent.
func TestAlertsAreDocumentedAndTested(t *testing.T) {
	files, err := RuleFiles(Dir())
	if err != nil {
		t.Fatal(err)
	}
	anchors := runbookAnchors(t)
	fires, silent := promtoolCases(t)
	alerts := map[string]bool{}
	for name, f := range files {
		for _, g := range f.Groups {
			for _, r := range g.Rules {
				if r.Alert == "" {
					continue
				}
				if alerts[r.Alert] {
					t.Errorf("%s: alert %s is defined twice", name, r.Alert)
				}
				alerts[r.Alert] = true
				if s := r.Labels["severity"]; s != "critical" && s != "warning" && s != "info" {
					t.Errorf("%s: alert %s has severity %q, want critical, warning or info", name, r.Alert, s)
				}
				for _, a := range []string{"summary", "description", "runbook_url"} {
					if strings.TrimSpace(r.Annotations[a]) == "" {
						t.Errorf("%s: alert %s has no %s annotation", name, r.Alert, a)
					}
				}
				anchor, ok := strings.CutPrefix(r.Annotations["runbook_url"], runbookBase)
				if !ok || !anchors[anchor] {
					t.Errorf("%s: alert %s's runbook_url %q is not a section of docs/runbooks.md (%s<heading>)",
						name, r.Alert, r.Annotations["runbook_url"], runbookBase)
				}
				if anchor != strings.ToLower(r.Alert) {
					t.Errorf("%s: alert %s's runbook section is #%s, want #%s", name, r.Alert, anchor, strings.ToLower(r.Alert))
				}
				if !fires[r.Alert] {
					t.Errorf("%s: no test of artifacts/monitoring/tests expects alert %s to fire", name, r.Alert)
				}
				if !silent[r.Alert] {
					t.Errorf("%s: no test of artifacts/monitoring/tests expects alert %s to stay silent", name, r.Alert)
				}
			}
		}
	}
	for a := range fires {
		if !alerts[a] {
			t.Errorf("the tests expect alert %s, which no rules file defines", a)
		}
	}
}

// runbookAnchors are the GitHub anchors of docs/runbooks.md's headings.
func runbookAnchors(t *testing.T) map[string]bool {
	t.Helper()
	f, err := os.Open(filepath.Join(Dir(), "..", "..", "docs", "runbooks.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	anchors := map[string]bool{}
	notAnchor := regexp.MustCompile(`[^a-z0-9 _-]`)
	s := bufio.NewScanner(f)
	for s.Scan() {
		if h, ok := strings.CutPrefix(s.Text(), "#"); ok {
			h = strings.TrimSpace(strings.TrimLeft(h, "#"))
			anchors[strings.ReplaceAll(notAnchor.ReplaceAllString(strings.ToLower(h), ""), " ", "-")] = true
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return anchors
}

// promtoolCases are the alerts the promtool tests expect to fire, and to stay silent, at some
// evaluation.
func promtoolCases(t *testing.T) (fires, silent map[string]bool) {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(Dir(), "tests", "*.yaml"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no promtool tests in artifacts/monitoring/tests (%v)", err)
	}
	fires, silent = map[string]bool{}, map[string]bool{}
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var f struct {
			Tests []struct {
				AlertRuleTest []struct {
					Alertname string            `json:"alertname"`
					ExpAlerts []json.RawMessage `json:"exp_alerts"`
				} `json:"alert_rule_test"`
			} `json:"tests"`
		}
		if err := yaml.Unmarshal(raw, &f); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		for _, tc := range f.Tests {
			for _, a := range tc.AlertRuleTest {
				if len(a.ExpAlerts) > 0 {
					fires[a.Alertname] = true
				} else {
					silent[a.Alertname] = true
				}
			}
		}
	}
	return fires, silent
}

// The dashboard is plain dashboard JSON: a current schema, every query on the ${datasource}
// variable, and every metric it selects names the job of the binary that exports it.
func TestDashboard(t *testing.T) {
	d, err := ReadDashboard(filepath.Join(Dir(), "grafana-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	if d.SchemaVersion < 39 {
		t.Errorf("schemaVersion %d, want 39 or later", d.SchemaVersion)
	}
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v.Type
	}
	if vars["datasource"] != "datasource" || vars["apiserver_job"] == "" || vars["agent_job"] == "" {
		t.Errorf("template variables %v, want datasource (a data source), apiserver_job and agent_job", vars)
	}
	ids := map[int]bool{}
	queries := 0
	for _, p := range d.AllPanels() {
		if ids[p.ID] {
			t.Errorf("panel id %d is used twice", p.ID)
		}
		ids[p.ID] = true
		if p.Type == "row" {
			continue
		}
		if !onDatasourceVariable(p.Datasource) {
			t.Errorf("panel %q: datasource %s, want the ${datasource} variable", p.Title, p.Datasource)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			queries++
			if !onDatasourceVariable(tg.Datasource) {
				t.Errorf("panel %q: a query's datasource is %s, want the ${datasource} variable", p.Title, tg.Datasource)
			}
		}
	}
	if queries == 0 {
		t.Fatal("the dashboard has no query")
	}
	uses, err := Uses(Dir())
	if err != nil {
		t.Fatal(err)
	}
	byBinary := map[string]int{}
	for _, u := range uses {
		byBinary[u.Binary]++
	}
	if byBinary[APIServer] == 0 || byBinary[Agent] == 0 {
		t.Errorf("uses by binary %v: the rules and the dashboard should use metrics of both", byBinary)
	}
}

func onDatasourceVariable(raw json.RawMessage) bool {
	var ds struct{ Type, UID string }
	return json.Unmarshal(raw, &ds) == nil && ds.Type == "prometheus" && ds.UID == "${datasource}"
}
