package deploy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
)

const (
	rulesFile     = "prometheus/rules.yml"
	dashboardFile = "grafana/rein.json"
	namesFile     = "../internal/telemetry/names.go"
)

var ruleTestFiles = []string{"prometheus/rules_test.yml", "prometheus/rules_anomaly_test.yml"}

// exportedMetrics reads every rein_* string constant of internal/telemetry/names.go.
func exportedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), namesFile, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			for _, v := range spec.(*ast.ValueSpec).Values {
				lit, ok := v.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					continue
				}
				s, err := strconv.Unquote(lit.Value)
				if err == nil && strings.HasPrefix(s, "rein_") {
					out[s] = true
				}
			}
		}
	}
	if len(out) < 10 {
		t.Fatalf("found only %d metric names in %s", len(out), namesFile)
	}
	return out
}

var identRE = regexp.MustCompile(`[A-Za-z_:][A-Za-z0-9_:]*`)

// metricRefs returns the rein_* metric names referenced in s. Recording-rule
// names (level:metric:operations) contain colons and are not metrics.
func metricRefs(s string) []string {
	var out []string
	for _, id := range identRE.FindAllString(s, -1) {
		if strings.HasPrefix(id, "rein_") && !strings.Contains(id, ":") {
			out = append(out, id)
		}
	}
	return out
}

// known reports whether name is an exported metric or a series of an
// exported histogram (every duration is a _seconds histogram).
func known(exported map[string]bool, name string) bool {
	if exported[name] {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && exported[base] && strings.HasSuffix(base, "_seconds") {
			return true
		}
	}
	return false
}

func TestMetricRefs(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{`sum(rate(rein_detector_decisions_total{outcome="activated"}[5m]))`, []string{"rein_detector_decisions_total"}},
		{`tenant:rein_detector_activation_ratio:rate5m > 0`, nil},
		{`rein:detector_activations:rate5m / rein_x_total`, []string{"rein_x_total"}},
		{`histogram_quantile(0.99, sum by (le) (rate(rein_detector_inception_seconds_bucket[5m])))`, []string{"rein_detector_inception_seconds_bucket"}},
		{`stream="REIN_DLQ" and rein fails open`, nil},
	}
	for _, tc := range tests {
		if got := metricRefs(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("metricRefs(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
	exported := map[string]bool{"rein_a_seconds": true, "rein_b_total": true}
	for name, want := range map[string]bool{
		"rein_a_seconds": true, "rein_a_seconds_bucket": true, "rein_a_seconds_count": true,
		"rein_b_total": true, "rein_b_total_count": false, "rein_c_total": false,
	} {
		if got := known(exported, name); got != want {
			t.Errorf("known(%s) = %v, want %v", name, got, want)
		}
	}
}

// allStrings walks a decoded YAML/JSON document and returns every string in it.
func allStrings(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		var out []string
		for _, e := range x {
			out = append(out, allStrings(e)...)
		}
		return out
	case map[string]any:
		var out []string
		for k, e := range x {
			out = append(out, k)
			out = append(out, allStrings(e)...)
		}
		return out
	}
	return nil
}

func loadYAML(t *testing.T, path string) any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := yaml.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return v
}

func loadDashboard(t *testing.T) map[string]any {
	t.Helper()
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	return v
}

// Every rein_* metric the dashboard, the rules and the rule tests refer to
// is one rein exports.
func TestQueriedMetricsAreExported(t *testing.T) {
	exported := exportedMetrics(t)
	docs := map[string]any{dashboardFile: loadDashboard(t), rulesFile: loadYAML(t, rulesFile)}
	for _, f := range ruleTestFiles {
		docs[f] = loadYAML(t, f)
	}
	for path, doc := range docs {
		refs := 0
		for _, s := range allStrings(doc) {
			for _, name := range metricRefs(s) {
				refs++
				if !known(exported, name) {
					t.Errorf("%s refers to %s, which rein does not export (internal/telemetry/names.go)", path, name)
				}
			}
		}
		if refs == 0 {
			t.Errorf("%s refers to no rein metric at all", path)
		}
	}
}

type panel struct {
	ID      int    `json:"id"`
	Type    string `json:"type"`
	Title   string `json:"title"`
	GridPos struct {
		H, W, X, Y int
	} `json:"gridPos"`
	Datasource *struct {
		Type string `json:"type"`
		UID  string `json:"uid"`
	} `json:"datasource"`
	Targets []struct {
		Expr  string `json:"expr"`
		RefID string `json:"refId"`
	} `json:"targets"`
}

func panels(t *testing.T) []panel {
	t.Helper()
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		UID    string  `json:"uid"`
		Title  string  `json:"title"`
		Panels []panel `json:"panels"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	if d.UID == "" || d.Title == "" || len(d.Panels) == 0 {
		t.Fatalf("dashboard needs a uid, a title and panels")
	}
	return d.Panels
}

func TestDashboardWellFormed(t *testing.T) {
	ids := map[int]string{}
	for _, p := range panels(t) {
		if prev, dup := ids[p.ID]; dup || p.ID == 0 {
			t.Errorf("panel %q: id %d missing or already used by %q", p.Title, p.ID, prev)
		}
		ids[p.ID] = p.Title
		if p.Title == "" || p.GridPos.W <= 0 || p.GridPos.H <= 0 || p.GridPos.X+p.GridPos.W > 24 {
			t.Errorf("panel %d %q: bad title or gridPos %+v", p.ID, p.Title, p.GridPos)
		}
		if p.Type == "row" {
			continue
		}
		if p.Datasource == nil || p.Datasource.Type != "prometheus" || p.Datasource.UID != "${datasource}" {
			t.Errorf("panel %q: datasource must be the ${datasource} variable", p.Title)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no queries", p.Title)
		}
		refs := map[string]bool{}
		for _, tg := range p.Targets {
			if strings.TrimSpace(tg.Expr) == "" || tg.RefID == "" || refs[tg.RefID] {
				t.Errorf("panel %q: empty query or missing/duplicate refId %q", p.Title, tg.RefID)
			}
			refs[tg.RefID] = true
		}
	}
}

// The dashboard shows what operators were promised.
func TestDashboardCoverage(t *testing.T) {
	var exprs []string
	for _, p := range panels(t) {
		for _, tg := range p.Targets {
			exprs = append(exprs, tg.Expr)
		}
	}
	all := strings.Join(exprs, "\n")
	for what, needle := range map[string]string{
		"activation rate per error type": "sum by (error_type) (rate(rein_detector_activations_total",
		"decisions by outcome":           "sum by (outcome) (rate(rein_detector_decisions_total",
		"inception latency p50":          "histogram_quantile(0.5, sum by (le, module) (rate(rein_detector_inception_seconds_bucket",
		"inception latency p99":          "histogram_quantile(0.99, sum by (le, module) (rate(rein_detector_inception_seconds_bucket",
		"escalations":                    "rein_escalations_total",
		"reports":                        "rein_reports_total",
		"model tokens":                   "rein_model_tokens_total",
		"consumer lag":                   "rein_consumer_pending_messages",
		"dead letters by stage":          `rein_stage_messages_total{outcome="dlq"}`,
		"dead-letter stream":             `rein_stream_messages{stream="REIN_DLQ"}`,
	} {
		if !strings.Contains(all, needle) {
			t.Errorf("dashboard lacks %s (%s)", what, needle)
		}
	}
}

// promtool returns the promtool binary. When it is absent the test fails
// if REIN_REQUIRE_PROMTOOL=1 or CI is set (CI installs it and must run
// these tests), and skips otherwise.
func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		if promtoolRequired() {
			t.Fatal("promtool not on PATH, and REIN_REQUIRE_PROMTOOL or CI says these tests must run (apt-get install prometheus)")
		}
		t.Skip("promtool not on PATH; install Debian's prometheus package to run this test")
	}
	return p
}

// promtoolRequired reports whether the promtool tests must not skip.
func promtoolRequired() bool {
	return os.Getenv("REIN_REQUIRE_PROMTOOL") == "1" || os.Getenv("CI") != ""
}

func runPromtool(t *testing.T, args ...string) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), promtool(t), args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
}

func TestPrometheusRules(t *testing.T) {
	runPromtool(t, "check", "rules", rulesFile)
	runPromtool(t, append([]string{"test", "rules"}, ruleTestFiles...)...)
}

// Every dashboard query parses as PromQL: they are wrapped as recording
// rules (Grafana's variables replaced) and checked by promtool.
func TestDashboardQueriesParse(t *testing.T) {
	promtool(t) // skip early when absent
	repl := strings.NewReplacer("$__rate_interval", "5m", "$__range", "1h", "$tenant", ".*")
	var rules []map[string]string
	for _, p := range panels(t) {
		for i, tg := range p.Targets {
			rules = append(rules, map[string]string{
				"record": fmt.Sprintf("dashboard:panel%d_%d:check", p.ID, i),
				"expr":   repl.Replace(tg.Expr),
			})
		}
	}
	doc := map[string]any{"groups": []any{map[string]any{"name": "dashboard", "rules": rules}}}
	b, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "dashboard_rules.yml")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	runPromtool(t, "check", "rules", path)
}

// With REIN_REQUIRE_PROMTOOL=1 and no promtool on PATH, the promtool tests
// fail rather than skip: the test binary is run again with an empty PATH.
func TestPromtoolRequiredFails(t *testing.T) {
	if os.Getenv("REIN_PROMTOOL_CHILD") == "1" {
		t.Skip("child run")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	run := func(require string) (string, error) {
		cmd := exec.CommandContext(t.Context(), exe, "-test.run", "^TestPrometheusRules$", "-test.v")
		cmd.Env = []string{"PATH=" + t.TempDir(), "REIN_PROMTOOL_CHILD=1", "REIN_REQUIRE_PROMTOOL=" + require, "HOME=" + os.Getenv("HOME")}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run("1")
	if err == nil || !strings.Contains(out, "--- FAIL: TestPrometheusRules") || !strings.Contains(out, "REIN_REQUIRE_PROMTOOL") {
		t.Errorf("required and absent: err %v, want a failure naming REIN_REQUIRE_PROMTOOL:\n%s", err, out)
	}
	out, err = run("")
	if err != nil || !strings.Contains(out, "--- SKIP: TestPrometheusRules") {
		t.Errorf("not required and absent: err %v, want a skip:\n%s", err, out)
	}
}
