package pipeline

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinception/rein/agentworker"
	"github.com/reinception/rein/detector"
	"github.com/reinception/rein/inception"
	"github.com/reinception/rein/inception/learned"
	"github.com/reinception/rein/inception/rules"
)

// TestModulesGate: the cascade's gate takes the shipped classifier by
// name, another from a weights file, none by default, and refuses a file
// that is not a gate model with the flag's name in the error.
func TestModulesGate(t *testing.T) {
	tax := inception.DefaultTaxonomy()
	for _, spec := range []string{"", GateModelBuiltin} {
		g, err := Modules{GateModel: spec}.Gate(tax)
		if err != nil || g.Mode() != rules.Recall {
			t.Fatalf("gate model %q: %v", spec, err)
		}
	}
	file := filepath.Join(t.TempDir(), "gate.json")
	data, err := learned.DefaultGateModel().Encode()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := (Modules{GateModel: file}).Gate(tax); err != nil {
		t.Fatalf("gate model file: %v", err)
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(`{"format": 2}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, spec := range []string{bad, filepath.Join(t.TempDir(), "missing.json")} {
		if _, err := (Modules{GateModel: spec}).Gate(tax); err == nil || !strings.Contains(err.Error(), "--gate-model") {
			t.Errorf("gate model %s: %v", spec, err)
		}
	}
}

// TestModulesProductCatalogue: the rules module, the gate and the
// cascade's fallback read the product catalogue TauBench names; a
// directory without one is refused with the flag's name; a retail
// agent's data directory gives the detector its catalogue.
func TestModulesProductCatalogue(t *testing.T) {
	dir := t.TempDir()
	catalogue := `{"1": {"name": "Trail Shoes", "variants": {"11": {"options": {"size": "8"}}, "12": {"options": {"size": "9"}}}}}`
	if err := os.WriteFile(filepath.Join(dir, "products.json"), []byte(catalogue), 0o600); err != nil {
		t.Fatal(err)
	}
	in := inception.Input{Tenant: "t", Domain: "retail", Dialogue: []inception.Utterance{{Role: inception.RoleUser, Text: "Please exchange my trail shoes for size 12."}}}
	for _, tc := range []struct {
		dir  string
		want bool
	}{{"", false}, {dir, true}} {
		m, _, err := Modules{Module: inception.ModuleRules, TauBench: tc.dir}.Build(nil)
		if err != nil {
			t.Fatal(err)
		}
		d, err := m.Detect(t.Context(), in)
		if err != nil {
			t.Fatal(err)
		}
		if d.Rein != tc.want || tc.want && d.ErrorType != inception.TypeUnsupportedParameter {
			t.Errorf("catalogue %q: %+v", tc.dir, d)
		}
		g, err := Modules{TauBench: tc.dir}.Gate(inception.DefaultTaxonomy())
		if err != nil {
			t.Fatal(err)
		}
		// The gate passes such a turn on its loose cues even without a
		// catalogue; with one it must pass it too.
		if gd, _ := g.Detect(t.Context(), in); tc.want && !gd.Rein {
			t.Errorf("gate, catalogue %q: %+v", tc.dir, gd)
		}
	}
	if _, _, err := (Modules{Module: inception.ModuleRules, TauBench: t.TempDir()}).Build(nil); err == nil || !strings.Contains(err.Error(), "--taubench") {
		t.Errorf("no products.json: %v", err)
	}
	if m := (&Stages{Detector: detector.Config{Domain: "retail"}, AgentWorker: agentworker.Config{DataDir: dir}}).detectorModules(); m.TauBench != dir {
		t.Errorf("retail agent data: %q", m.TauBench)
	}
	if m := (&Stages{Detector: detector.Config{Domain: "airline"}, AgentWorker: agentworker.Config{DataDir: dir}}).detectorModules(); m.TauBench != "" {
		t.Errorf("airline agent data: %q", m.TauBench)
	}
}
