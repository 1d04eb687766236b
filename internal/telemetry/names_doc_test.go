package telemetry

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strconv"
	"strings"
	"testing"
)

// metricConst is one metric name constant of names.go.
type metricConst struct{ goName, name string }

// metricConsts parses names.go for its metric names (string constants
// beginning rein_), so that the tests read the file, not a copy of it.
func metricConsts(t *testing.T) []metricConst {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "names.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []metricConst
	ast.Inspect(f, func(node ast.Node) bool {
		spec, ok := node.(*ast.ValueSpec)
		if !ok || len(spec.Names) != 1 || len(spec.Values) != 1 {
			return true
		}
		lit, ok := spec.Values[0].(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return true
		}
		if name, err := strconv.Unquote(lit.Value); err == nil && strings.HasPrefix(name, "rein_") {
			out = append(out, metricConst{spec.Names[0].Name, name})
		}
		return true
	})
	if len(out) < 20 {
		t.Fatalf("found %d metric names in names.go; the parse is wrong", len(out))
	}
	return out
}

// TestEveryMetricIsDocumented: each metric name in names.go has its row in
// the operator's guide, so a new metric cannot ship unexplained (six
// shipped so in one change before this test).
func TestEveryMetricIsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/operating.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range metricConsts(t) {
		if !strings.Contains(string(doc), "`"+m.name+"`") {
			t.Errorf("metric %s is not in docs/operating.md's metrics table", m.name)
		}
	}
}

// A subject has one metric prefix: the constants of a family (by their Go
// name) all carry it, and no name uses a retired one (rein_llm_ for model
// calls, rein_agent_ for the agent worker, whose stage label is
// agentworker).
func TestMetricPrefixesNameTheirSubject(t *testing.T) {
	families := map[string]string{
		"MStage":       "rein_stage_",
		"MModel":       "rein_model_",
		"MDetector":    "rein_detector_",
		"MAgentWorker": "rein_agentworker_",
		"MConsumer":    "rein_consumer_",
		"MStream":      "rein_stream_",
		"MSink":        "rein_sink_",
		"MLabel":       "rein_label_",
	}
	for _, m := range metricConsts(t) {
		for _, old := range []string{"rein_llm_", "rein_agent_"} {
			if strings.HasPrefix(m.name, old) {
				t.Errorf("%s = %s: retired prefix %s", m.goName, m.name, old)
			}
		}
		for goPrefix, prefix := range families {
			if strings.HasPrefix(m.goName, goPrefix) && !strings.HasPrefix(m.name, prefix) {
				t.Errorf("%s = %s: its family's metrics begin %s", m.goName, m.name, prefix)
			}
		}
	}
}
