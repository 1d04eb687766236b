package main

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/reinception/rein/internal/app/demo"
)

// The offline demo (rules module, scripted agent) labels every scripted
// turn with the type it is written to show (all six types, the
// multiple-interpretation turn not taken for anaphora, the contradiction
// inside one utterance caught), and each ends in the right recovery tool.
func TestDemoOfflineJSON(t *testing.T) {
	t.Setenv("REIN_LLM_PROVIDER", "")
	demoOffline(t)
}

func demoOffline(t *testing.T, flags ...string) {
	args := append([]string{"demo", "--json", "--data-dir", t.TempDir(), "--nats-listen", freePort(t), "--http", freePort(t)}, flags...)
	out, err := runCLI(t, context.Background(), args...)
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, out)
	}
	var s demo.Summary
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("demo --json: %v\n%s", err, out)
	}
	if s.Conversations != 8 || s.Turns != 11 || s.Decisions != s.Turns || s.Failed != 0 || s.DeadLetters != 0 {
		t.Errorf("summary %+v", s)
	}
	// Every turn is labelled with the type it is written to show, and
	// every type of the default taxonomy is shown.
	if len(s.Mismatches) > 0 {
		t.Errorf("labelled otherwise than written: %v", s.Mismatches)
	}
	for _, typ := range []string{"anaphora", "multiple_interpretation", "contradiction", "unsupported_action", "unsupported_parameter", "unsupported_domain"} {
		if s.Activations[typ] != 1 {
			t.Errorf("%d %s activations, want 1: %v", s.Activations[typ], typ, s.Activations)
		}
	}
	want := map[string][]string{
		"anaphora": {"", "anaphora"}, "multiple-interpretation": {"multiple_interpretation"},
		"contradiction": {"", "contradiction"}, "clean-lookup": {"", ""}, "clean-baggage": {""},
	}
	for conv, labels := range want {
		if !slices.Equal(s.Labels[conv], labels) {
			t.Errorf("%s labelled %q, want %q", conv, s.Labels[conv], labels)
		}
	}
	unsupported := s.Activations["unsupported_action"] + s.Activations["unsupported_parameter"] + s.Activations["unsupported_domain"]
	ambiguous := s.Activations["anaphora"] + s.Activations["multiple_interpretation"] + s.Activations["contradiction"]
	// Every planted unsupported plan ends in a transfer, every ambiguous one in a report.
	if s.Escalations != unsupported || s.Reports != ambiguous || s.Injections != unsupported+ambiguous {
		t.Errorf("escalations %d reports %d injections %d for activations %v", s.Escalations, s.Reports, s.Injections, s.Activations)
	}
}
