package eval

import (
	"bytes"
	"embed"
	"fmt"
)

// The bundled scenario files: quickFile, the 30 hand-written scenarios
// (`--quick`), and paperFile, the set near the paper's size (every filtered
// task × six error types), the default when it is present and holds a
// scenario.
const (
	quickFile = "scenarios/bundled.jsonl"
	paperFile = "scenarios/paper.jsonl"
)

//go:embed scenarios/*.jsonl
var bundledFS embed.FS

func bundledFile(name string) []byte {
	b, err := bundledFS.ReadFile(name)
	if err != nil {
		return nil
	}
	return b
}

// BundledJSONL returns the quick bundled scenario file (scenarios/bundled.jsonl)
// as written.
func BundledJSONL() []byte { return bytes.Clone(bundledFile(quickFile)) }

// BundledQuick returns the hand-written quick set shipped in the binary
// (`rein eval run --quick`): two scenarios per error type per domain and
// three clean ones per domain. Their seen flags follow opts (see
// LoadOptions).
func BundledQuick(opts LoadOptions) []Scenario {
	return mustLoad(quickFile, bundledFile(quickFile), opts)
}

// Bundled returns the default bundled set: scenarios/paper.jsonl when it
// is embedded and holds at least one scenario, BundledQuick otherwise.
// BundledName says which.
func Bundled(opts LoadOptions) []Scenario {
	name := BundledName()
	return mustLoad(name, bundledFile(name), opts)
}

// BundledName is the file Bundled reads: scenarios/paper.jsonl when it
// holds a scenario, else scenarios/bundled.jsonl. An embedded paper.jsonl
// that does not load is a build defect and panics (a test loads it).
func BundledName() string {
	if raw := bundledFile(paperFile); len(raw) > 0 && len(mustLoad(paperFile, raw, LoadOptions{})) > 0 {
		return paperFile
	}
	return quickFile
}

func mustLoad(name string, raw []byte, opts LoadOptions) []Scenario {
	s, err := LoadScenarios(bytes.NewReader(raw), opts)
	if err != nil { // tested; cannot happen in a built binary
		panic(fmt.Sprintf("eval: bundled scenarios %s are invalid: %v", name, err))
	}
	return s
}
