package pipeline

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinception/rein/inception"
)

// TestModulesGate: the cascade's gate takes the shipped classifier by
// name, another from a weights file, none by default, and refuses a file
// that is not a gate model with the flag's name in the error.
func TestModulesGate(t *testing.T) {
	tax := inception.DefaultTaxonomy()
	for _, spec := range []string{"", GateModelBuiltin} {
		g, err := Modules{GateModel: spec}.Gate(tax)
		if err != nil || g.Mode() != inception.RulesRecall {
			t.Fatalf("gate model %q: %v", spec, err)
		}
	}
	file := filepath.Join(t.TempDir(), "gate.json")
	data, err := inception.DefaultGateModel().Encode()
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
