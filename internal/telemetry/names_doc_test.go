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

// TestEveryMetricIsDocumented: each metric name in names.go has its row in
// the operator's guide, so a new metric cannot ship unexplained (six
// shipped so in one change before this test).
func TestEveryMetricIsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/operating.md")
	if err != nil {
		t.Fatal(err)
	}
	f, err := parser.ParseFile(token.NewFileSet(), "names.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	ast.Inspect(f, func(node ast.Node) bool {
		lit, ok := node.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return true
		}
		name, err := strconv.Unquote(lit.Value)
		if err != nil || !strings.HasPrefix(name, "rein_") {
			return true
		}
		n++
		if !strings.Contains(string(doc), "`"+name+"`") {
			t.Errorf("metric %s is not in docs/operating.md's metrics table", name)
		}
		return true
	})
	if n < 20 {
		t.Fatalf("found %d metric names in names.go; the parse is wrong", n)
	}
}
