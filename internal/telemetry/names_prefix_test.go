package telemetry

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"strings"
	"testing"
)

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
	retired := []string{"rein_llm_", "rein_agent_"}
	f, err := parser.ParseFile(token.NewFileSet(), "names.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	ast.Inspect(f, func(node ast.Node) bool {
		spec, ok := node.(*ast.ValueSpec)
		if !ok || len(spec.Names) != 1 || len(spec.Values) != 1 {
			return true
		}
		lit, ok := spec.Values[0].(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return true
		}
		name, err := strconv.Unquote(lit.Value)
		if err != nil || !strings.HasPrefix(name, "rein_") {
			return true
		}
		n++
		for _, old := range retired {
			if strings.HasPrefix(name, old) {
				t.Errorf("%s = %s: retired prefix %s", spec.Names[0].Name, name, old)
			}
		}
		for goPrefix, prefix := range families {
			if strings.HasPrefix(spec.Names[0].Name, goPrefix) && !strings.HasPrefix(name, prefix) {
				t.Errorf("%s = %s: its family's metrics begin %s", spec.Names[0].Name, name, prefix)
			}
		}
		return true
	})
	if n < 20 {
		t.Fatalf("found %d metric names in names.go; the parse is wrong", n)
	}
}
