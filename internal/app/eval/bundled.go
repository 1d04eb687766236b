package eval

import (
	"bytes"
	_ "embed"
	"fmt"
)

//go:embed scenarios/bundled.jsonl
var bundledJSONL []byte

// BundledJSONL returns the bundled scenario file as written.
func BundledJSONL() []byte { return bytes.Clone(bundledJSONL) }

// Bundled returns the hand-written scenario set shipped in the binary:
// two scenarios per error type per domain and three clean ones per domain.
// Their seen flags follow opts (see LoadOptions).
func Bundled(opts LoadOptions) []Scenario {
	s, err := LoadScenarios(bytes.NewReader(bundledJSONL), opts)
	if err != nil { // tested; cannot happen in a built binary
		panic(fmt.Sprintf("eval: bundled scenarios are invalid: %v", err))
	}
	return s
}
