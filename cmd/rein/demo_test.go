package main

import (
	"context"
	"encoding/json"
	"testing"
)

// The offline demo (rules module, scripted agent) catches anaphora and the
// three unsupported types, and each ends in the right recovery tool.
// The injector runs fused into the detector by default, and as its own
// consumer with --fuse-injector=false: the outcome is the same.
func TestDemoOfflineJSON(t *testing.T) {
	t.Setenv("REIN_LLM_PROVIDER", "")
	for _, fuse := range []string{"true", "false"} {
		t.Run("fuse-injector="+fuse, func(t *testing.T) { demoOffline(t, "--fuse-injector="+fuse) })
	}
}

func demoOffline(t *testing.T, flags ...string) {
	args := append([]string{"demo", "--json", "--data-dir", t.TempDir(), "--nats-listen", freePort(t), "--http", freePort(t)}, flags...)
	out, err := runCLI(t, context.Background(), args...)
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, out)
	}
	var s demoSummary
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("demo --json: %v\n%s", err, out)
	}
	if s.Conversations != 8 || s.Turns != 10 || s.Decisions != s.Turns || s.Failed != 0 || s.DeadLetters != 0 {
		t.Errorf("summary %+v", s)
	}
	for _, typ := range []string{"anaphora", "unsupported_action", "unsupported_parameter", "unsupported_domain"} {
		if s.Activations[typ] == 0 {
			t.Errorf("no %s activation: %v", typ, s.Activations)
		}
	}
	unsupported := s.Activations["unsupported_action"] + s.Activations["unsupported_parameter"] + s.Activations["unsupported_domain"]
	ambiguous := s.Activations["anaphora"] + s.Activations["multiple_interpretation"] + s.Activations["contradiction"]
	// Every planted unsupported plan ends in a transfer, every ambiguous one in a report.
	if s.Escalations != unsupported || s.Reports != ambiguous || s.Injections != unsupported+ambiguous {
		t.Errorf("escalations %d reports %d injections %d for activations %v", s.Escalations, s.Reports, s.Injections, s.Activations)
	}
}
