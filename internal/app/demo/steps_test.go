package demo

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/internal/testutil/bustest"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
)

// The collector takes a dev.rein.steps.v1 as the single steps it holds.
func TestCollectorTakesABatchAsItsSteps(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	pub := streams.NewPublisher(h.JS, prometheus.NewRegistry(), streams.PublisherConfig{})
	ctx := context.Background()
	steps := []schemas.Step{
		{Turn: 1, Step: 1, Kind: schemas.StepToolCall, Name: "get_user_details", CallID: "c1", Arguments: json.RawMessage(`{"user_id":"u1"}`)},
		{Turn: 1, Step: 2, Kind: schemas.StepToolResult, Name: "get_user_details", CallID: "c1", Output: "{}"},
		{Turn: 1, Step: 3, Kind: schemas.StepReply, Output: "hello"},
	}
	if _, err := pub.PublishAll(ctx, bustest.StepsBothWays(t, "acme", steps)...); err != nil {
		t.Fatal(err)
	}

	col, err := NewCollector(h.Conn, "acme")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(col.Close)
	now, cancel := context.WithCancel(ctx)
	cancel() // Wait only checks what the collector holds
	var got [2][]schemas.Step
	for i, conv := range []string{"single", "batch"} {
		if _, err := col.Refill(ctx, h.JS, conv); err != nil {
			t.Fatal(err)
		}
		turn, _, err := col.Wait(now, conv, 1, func(t *Turn) bool { return len(t.Steps) == len(steps) })
		if err != nil {
			t.Fatalf("%s: steps %+v", conv, turn.Steps)
		}
		got[i] = turn.Steps
	}
	if !reflect.DeepEqual(got[0], got[1]) {
		t.Errorf("singles %+v\nbatch   %+v", got[0], got[1])
	}
}
