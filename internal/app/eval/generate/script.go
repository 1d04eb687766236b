package generate

import (
	_ "embed"
	"fmt"

	"github.com/reinception/rein/internal/llm"
)

//go:embed generator.yaml
var generatorScript []byte

// Script returns the scripted generator (generator.yaml beside this file):
// a deterministic simulator, not a model, that writes one generic opening
// per error type, for the offline path and tests.
func Script() (llm.Client, error) {
	s, err := llm.ParseScript(generatorScript)
	if err != nil {
		return nil, fmt.Errorf("generator script: %w", err)
	}
	return llm.NewScripted(s), nil
}
