package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinception/rein/inception"
	rtest "github.com/reinception/rein/internal/testutil"
)

// TestDetectTauBenchCatalogue: rein detect --taubench gives the rules the
// store's product catalogue (a size the product does not come in is an
// unsupported parameter, its values named in the reasoning); without it
// the turn is judged as before; a directory without products.json fails
// with the flag's name.
func TestDetectTauBenchCatalogue(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "products.json"), []byte(`{"1": {"name": "Trail Shoes", "variants": {"11": {"options": {"size": "8"}}, "12": {"options": {"size": "9"}}}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	input := writeFile(t, "in.jsonl", `{"id":"r1","domain":"retail","messages":[{"role":"user","content":"Please exchange my trail shoes for size 12."}]}`+"\n")
	for _, tc := range []struct {
		args []string
		want string
	}{{nil, ""}, {[]string{"--taubench", dir}, "unsupported_parameter"}} {
		stdout, stderr, err := runDetectCLI(t, append([]string{"--module", "rules", "--input", input}, tc.args...)...)
		if err != nil {
			t.Fatalf("%v: %v\n%s", tc.args, err, stderr)
		}
		var out detectOutput
		if err := json.Unmarshal([]byte(strings.TrimSpace(stdout)), &out); err != nil {
			t.Fatalf("%v: %v: %s", tc.args, err, stdout)
		}
		got := ""
		if out.ErrorType != nil {
			got = *out.ErrorType
		}
		if got != tc.want || tc.want != "" && !strings.Contains(out.Reasoning, "8, 9") {
			t.Errorf("%v: %+v", tc.args, out)
		}
	}
	if _, _, err := runDetectCLI(t, "--module", "rules", "--input", input, "--taubench", t.TempDir()); err == nil || !strings.Contains(err.Error(), "--taubench") {
		t.Errorf("no products.json: %v", err)
	}
}

// rein eval plays the rules with the store's catalogue when its τ-bench
// directory has one, as a retail detector stage does, and without one
// otherwise (an airline-only directory).
func TestEvalModuleReadsTheStoreCatalogue(t *testing.T) {
	if got := storeCatalogue(rtest.TauBench(t)); got != rtest.TauBench(t) {
		t.Errorf("storeCatalogue(τ-bench) = %q, want the directory", got)
	}
	airlineOnly := t.TempDir()
	if err := os.MkdirAll(filepath.Join(airlineOnly, "airline"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := storeCatalogue(airlineOnly); got != "" {
		t.Errorf("storeCatalogue(airline only) = %q, want none", got)
	}
	f := moduleFlags{module: "rules", tauBench: storeCatalogue(rtest.TauBench(t))}
	m, _, err := f.build(nil)
	if err != nil {
		t.Fatal(err)
	}
	d, err := m.Detect(context.Background(), inception.Input{Domain: "retail", Dialogue: []inception.Utterance{
		{Role: inception.RoleAgent, Text: "Your order has one pair of running shoes, size 9."},
		{Role: inception.RoleUser, Text: "Please exchange the running shoes for a size 11 pair."}}})
	if err != nil {
		t.Fatal(err)
	}
	if !d.Rein || d.ErrorType != inception.TypeUnsupportedParameter {
		t.Errorf("eval's module on a size the store does not sell: %+v, want unsupported_parameter", d)
	}
}
