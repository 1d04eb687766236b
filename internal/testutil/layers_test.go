package testutil

import (
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"strings"
	"testing"
)

// layers ranks rein's packages, bottom first. An import must point to a
// strictly lower layer: the stages never import each other (the
// injector is a library the detector calls, below them), the ops
// tools (audit, dashboard, eval, the schema generator, which reads the
// stages' payload types) sit above the stages, the runtime that
// wires them above those, the bench and demo drivers above the runtime,
// cmd on top, and nothing below a stage imports one. internal/testutil serves tests only.
var layers = [][]string{
	{"streams/bus", "schemas", "internal/telemetry", "internal/convcache", "internal/heapgoal", "internal/localcluster", "deploy"},
	{"internal/llm", "internal/experiment"},
	{"streams", "inception", "agentworker/taubench"},
	{"inception/learned", "inception/planted"},
	{"inception/rules", "inception/llmmodule", "injector", "streams/consume", "streams/natsserver", "streams/ingress"},
	{"detector", "agentworker", "escalation", "internal/labels"},
	{"internal/app/audit", "internal/app/dashboard", "internal/app/eval", "inception/offline", "schemas/schemagen"},
	{"internal/app/pipeline", "internal/app/eval/run", "schemas/gen"},
	{"internal/app/bench", "internal/app/demo", "internal/app/eval/generate"},
	{"cmd/rein"},
}

const module = "github.com/reinception/rein/"

// testOnly tells the packages that serve tests only (internal/testutil
// and its stage contract suite, internal/testutil/stagetest): they have
// no layer, and no package imports them outside its tests.
func testOnly(pkg string) bool {
	return pkg == "internal/testutil" || strings.HasPrefix(pkg, "internal/testutil/")
}

// The import graph has no upward or sideways edge, and every package has
// a layer (a new one must be placed here).
func TestImportsPointDown(t *testing.T) {
	rank := map[string]int{}
	for i, l := range layers {
		for _, p := range l {
			rank[p] = i
		}
	}
	cmd := exec.Command("go", "list", "-json", "./...")
	cmd.Dir = RepoRoot(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		from := strings.TrimPrefix(p.ImportPath, module)
		if testOnly(from) {
			continue
		}
		r, ok := rank[from]
		if !ok {
			t.Errorf("package %s has no layer: place it in internal/testutil/layers_test.go", from)
			continue
		}
		for _, imp := range p.Imports {
			to, ours := strings.CutPrefix(imp, module)
			if !ours {
				continue
			}
			if testOnly(to) {
				t.Errorf("%s imports internal/testutil outside its tests", from)
				continue
			}
			if tr, ok := rank[to]; ok && tr >= r {
				t.Errorf("%s (layer %d) imports %s (layer %d): imports must point down", from, r, to, tr)
			}
		}
	}
}
