package inception

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDefaultTaxonomy(t *testing.T) {
	tax := DefaultTaxonomy()
	want := map[string]string{
		TypeAnaphora: ToolAmbiguityReport, TypeMultipleInterpretation: ToolAmbiguityReport, TypeContradiction: ToolAmbiguityReport,
		TypeUnsupportedAction: ToolTransferToHuman, TypeUnsupportedParameter: ToolTransferToHuman, TypeUnsupportedDomain: ToolTransferToHuman,
	}
	if len(tax.ErrorTypes) != len(want) {
		t.Fatalf("got %d error types, want %d", len(tax.ErrorTypes), len(want))
	}
	for name, tool := range want {
		et, ok := tax.Type(name)
		if !ok {
			t.Fatalf("missing %s", name)
		}
		if et.RecoveryTool != tool || !strings.Contains(et.RecoveryPlan, EvidenceSlot) {
			t.Errorf("%s: tool %s, plan %q", name, et.RecoveryTool, et.RecoveryPlan)
		}
	}
	if tax.Version == "" || len(tax.RecoveryToolNames()) != 2 {
		t.Errorf("version %q, recovery tools %d", tax.Version, len(tax.RecoveryToolNames()))
	}
	for _, d := range []string{"airline", "retail"} {
		if _, ok := tax.Domains[d]; !ok {
			t.Errorf("no domain notes for %s", d)
		}
	}
}

func TestLoadTaxonomyRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tax.yaml")
	data := strings.Replace(string(DefaultTaxonomyYAML()), "version: rein-default-1", "version: acme-7", 1)
	data = strings.Replace(data, "  - name: contradiction\n    category: ambiguous", "  - name: contradiction\n    category: ambiguous", 1)
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	tax, err := LoadTaxonomy(path)
	if err != nil {
		t.Fatal(err)
	}
	if tax.Version != "acme-7" {
		t.Errorf("version %q", tax.Version)
	}
	if _, err := LoadTaxonomy(filepath.Join(t.TempDir(), "missing.yaml")); !errors.Is(err, ErrInvalidTaxonomy) {
		t.Errorf("missing file: %v", err)
	}
}

func TestInvalidTaxonomyNamesFieldAndLine(t *testing.T) {
	const tools = `recovery_tools:
  - name: ambiguity_report
    description: d
    parameters: {type: object}
`
	const good = `  - name: anaphora
    category: ambiguous
    definition: d
    recovery_plan: call ambiguity_report about "{evidence}"
    recovery_tool: ambiguity_report
`
	cases := []struct {
		name, doc, want string
	}{
		{"bad category", "version: v\n" + tools + "error_types:\n  - name: anaphora\n    category: vague\n", "t.yaml:8: error_types[0].category"},
		{"unknown recovery tool", "version: v\n" + tools + "error_types:\n" + strings.Replace(good, "recovery_tool: ambiguity_report", "recovery_tool: nope", 1), "t.yaml:11: error_types[0].recovery_tool"},
		{"missing version", tools + "error_types:\n" + good, ":1: version: is required"},
		{"unknown field", "version: v\ncolour: red\n" + tools, "t.yaml:2: colour"},
		{"bad cue regexp", "version: v\n" + tools + "error_types:\n" + good + "    cues: ['(unclosed']\n", "t.yaml:12: error_types[0].cues[0]"},
		{"plan without tool", "version: v\n" + tools + "error_types:\n" + strings.Replace(good, "call ambiguity_report about", "ask about", 1), "t.yaml:10: error_types[0].recovery_plan: must name"},
		{"extra placeholder", "version: v\n" + tools + "error_types:\n" + strings.Replace(good, "about", "about {user}", 1), "t.yaml:10: error_types[0].recovery_plan"},
		{"duplicate type", "version: v\n" + tools + "error_types:\n" + good + good, "t.yaml:12: error_types[1].name: duplicate"},
		{"bad schema", "version: v\nrecovery_tools:\n  - name: r\n    description: d\n    parameters: {type: 7}\n", "t.yaml:5: recovery_tools[0].parameters"},
		{"bad entity pattern", "version: v\n" + tools + "error_types:\n" + good + "domains:\n  airline:\n    entities:\n      - name: id\n        pattern: '[a-'\n", "t.yaml:16: domains.airline.entities[0].pattern"},
		{"syntax error", "version: [\n", "t.yaml:1:"},
		{"wrong type", "version: v\nerror_types: 3\n", "t.yaml:2:"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseTaxonomy("t.yaml", []byte(tc.doc))
			if !errors.Is(err, ErrInvalidTaxonomy) {
				t.Fatalf("err = %v, want ErrInvalidTaxonomy", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %q, want it to contain %q", err, tc.want)
			}
		})
	}
}
