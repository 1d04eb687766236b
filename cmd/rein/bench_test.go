package main

import (
	"context"
	"encoding/json"
	"testing"
)

// TestBenchSmallRun plays a small bench in waves and checks that every
// turn was answered and every figure the JSON promises is there.
func TestBenchSmallRun(t *testing.T) {
	out, err := runCLI(t, context.Background(), "bench", "--conversations", "30", "--turns", "2", "--active", "10",
		"--raw-msgs", "300", "--json")
	if err != nil {
		t.Fatalf("bench: %v\n%s", err, out)
	}
	var r benchResult
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("bench --json: %v\n%s", err, out)
	}
	if r.Turns != 60 || r.Conversations != 30 || r.Active != 10 || r.TurnsPerSec <= 0 || r.P99Ms < r.P50Ms {
		t.Errorf("result %+v", r)
	}
	// One tool call per turn: tool call, tool result and reply steps, and
	// two state records.
	if r.ShapeExtra != 5 {
		t.Errorf("extra stores per turn = %d, want 5", r.ShapeExtra)
	}
	// The injector is fused into the detector: two hops per turn.
	if r.Injector != "fused" || r.ShapeHops != 2 {
		t.Errorf("injector %q, %d hops; want fused, 2", r.Injector, r.ShapeHops)
	}
	// The ceiling chain carries a stored event's headers inside the same
	// message size.
	if r.ShapeHeaderBytes < 200 || r.ShapeHeaderBytes >= r.AvgEventBytes {
		t.Errorf("ceiling chain header bytes = %d of %d", r.ShapeHeaderBytes, r.AvgEventBytes)
	}
	if r.Raw3HopMsgsPerS <= 0 || r.RawShapePerS <= 0 || r.Ratio <= 0 || r.CeilingRatio <= 0 || r.PeakRSSMB <= 0 || r.AvgEventBytes <= 0 {
		t.Errorf("result %+v", r)
	}
}
