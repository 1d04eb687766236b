package generate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/reinception/rein/internal/app/eval"
)

// RejectedPath is the sibling file of out that holds the rejected
// openings: scenarios.jsonl → scenarios.rejected.jsonl.
func RejectedPath(out string) string {
	return strings.TrimSuffix(out, ".jsonl") + ".rejected.jsonl"
}

// Write writes the accepted scenarios, then the clean ones, to out, in the scenario format
// (eval.LoadScenarios reads it; a '#' header says how it was made), and
// the rejected openings, one JSON object with its reason per line, to
// RejectedPath(out). Neither file holds a time or anything else that
// differs between two generations of the same answers.
func Write(out string, o *Output, cfg Config) error {
	cfg.defaults()
	var acc bytes.Buffer
	fmt.Fprintf(&acc, "# rein eval scenarios generate: %s %s tasks, model %s, seed %d; %d accepted, %d rejected (%s), %d clean\n",
		cfg.Domain, cfg.Split, o.Model, cfg.Seed, len(o.Accepted), len(o.Rejected), filepath.Base(RejectedPath(out)), len(o.Clean))
	acc.WriteString("# Format: internal/app/eval/README.md. Task instructions are read from the τ-bench data at run time.\n")
	for _, s := range append(append([]eval.Scenario(nil), o.Accepted...), o.Clean...) {
		if err := jsonLine(&acc, s); err != nil {
			return err
		}
	}
	var rej bytes.Buffer
	for _, r := range o.Rejected {
		if err := jsonLine(&rej, r); err != nil {
			return err
		}
	}
	if err := os.WriteFile(out, acc.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write scenarios: %w", err)
	}
	if err := os.WriteFile(RejectedPath(out), rej.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write rejected openings: %w", err)
	}
	return nil
}

func jsonLine(b *bytes.Buffer, v any) error {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	return nil
}
