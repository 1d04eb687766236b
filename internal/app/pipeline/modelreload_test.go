package pipeline

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinception/rein/inception"
	"github.com/reinception/rein/inception/learned"
	"github.com/reinception/rein/inception/llmmodule"
	"github.com/reinception/rein/internal/testutil/inceptiontest"
)

// versionOfDecision is the model version the module in place records.
func versionOfDecision(t *testing.T, m inception.Module) string {
	t.Helper()
	d, err := m.Detect(context.Background(), inception.Input{Domain: "airline", Dialogue: inceptiontest.Dialogue("Hello there.")})
	if err != nil {
		t.Fatal(err)
	}
	return d.ModelVersion
}

// A promoted file is swapped in; a file that does not load is refused
// once and the model in place keeps judging; the cascade keeps its model
// module and takes the new gate.
func TestModelWatchSwapsOnlyWhatLoads(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "typed.json")
	write := func(b []byte) {
		t.Helper()
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	a := learned.DefaultTypedModel()
	data, err := a.Encode()
	if err != nil {
		t.Fatal(err)
	}
	write(data)
	mods := Modules{Module: inception.ModuleRules, TypedModel: path}
	key, err := modelKey("", path)
	if err != nil {
		t.Fatal(err)
	}
	m, tax, err := mods.Build(nil)
	if err != nil {
		t.Fatal(err)
	}
	w := newModelWatch(m, tax, mods, Stages{}, key, slog.New(slog.DiscardHandler))
	if err := w.check(); err != nil || versionOfDecision(t, w.live) != "typed@"+a.Version() {
		t.Fatalf("unchanged file: %v, %s", err, versionOfDecision(t, w.live))
	}
	write([]byte(`{"format": 9}`))
	if err := w.check(); err == nil {
		t.Fatal("a broken model file was taken")
	}
	if err := w.check(); err != nil {
		t.Errorf("the same broken file reported again: %v", err)
	}
	if v := versionOfDecision(t, w.live); v != "typed@"+a.Version() {
		t.Fatalf("after a broken file the module records %s", v)
	}
	b, err := learned.ParseGateModel(data)
	if err != nil {
		t.Fatal(err)
	}
	b.Threshold = 0.5
	nb, err := b.Encode()
	if err != nil {
		t.Fatal(err)
	}
	write(nb)
	if err := w.check(); err != nil || versionOfDecision(t, w.live) != "typed@"+b.Version() {
		t.Fatalf("promoted file: %v, %s", err, versionOfDecision(t, w.live))
	}

	// The cascade: a new gate around the same model module.
	gatePath := filepath.Join(dir, "gate.json")
	gd, err := learned.DefaultGateModel().Encode()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(gatePath, gd, 0o600); err != nil {
		t.Fatal(err)
	}
	model, err := llmmodule.NewLLM(llmmodule.LLMConfig{Client: inceptiontest.Answering(`{"rein":false,"error_type":null,"evidence":"","reasoning":""}`)})
	if err != nil {
		t.Fatal(err)
	}
	gate, err := Modules{}.Gate(tax)
	if err != nil {
		t.Fatal(err)
	}
	c, err := llmmodule.NewCascade(gate, model)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Modules{GateModel: gatePath}.withLearned(c, tax)
	if err != nil {
		t.Fatal(err)
	}
	if v := versionOfDecision(t, got); v != "gate@"+learned.DefaultGateModel().Version() {
		t.Errorf("promoted gate: the cascade records %q", v)
	}
}

// --few-shot-labels: the examples the detector read reach the llm
// module's prompt, for their tenant only.
func TestModulesPassFewShotExamples(t *testing.T) {
	t.Setenv("REIN_LLM_SCRIPT", filepath.Join("..", "..", "llm", "testdata", "airline_demo.yaml"))
	ex := map[string][]inception.Example{"acme": {{Input: inception.Input{Dialogue: inceptiontest.Dialogue("Please do a skyhop.")}, Rein: true, ErrorType: "unsupported_action"}}}
	m, _, err := Modules{Module: inception.ModuleLLM, Provider: "scripted", FewShot: 4, Examples: ex}.Build(nil)
	if err != nil {
		t.Fatal(err)
	}
	llmm, ok := m.(*llmmodule.LLMModule)
	if !ok {
		t.Fatalf("module %T", m)
	}
	acme := llmm.Request(inception.Input{Tenant: "acme", Domain: "airline"}).System
	globex := llmm.Request(inception.Input{Tenant: "globex", Domain: "airline"}).System
	if !strings.Contains(acme, "Please do a skyhop.") || strings.Contains(globex, "skyhop") {
		t.Errorf("acme's prompt has the example: %v; globex's: %v", strings.Contains(acme, "skyhop"), strings.Contains(globex, "skyhop"))
	}
}
