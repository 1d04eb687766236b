package demo

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
)

// The collector takes a dev.rein.steps.v1 as the single steps it holds.
func TestCollectorTakesABatchAsItsSteps(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	pub := streams.NewPublisher(h.JS, prometheus.NewRegistry(), streams.PublisherConfig{})
	ctx := context.Background()
	publish := func(conv, typ, id string, data any) {
		t.Helper()
		ev, err := schemas.NewEvent(typ, id, "/test", schemas.Meta{Tenant: "acme", Conversation: conv, Turn: 1}, data)
		if err == nil {
			_, err = pub.Publish(ctx, bus.StreamSteps, bus.StepSubject("acme", conv), &ev)
		}
		if err != nil {
			t.Fatalf("publish %s: %v", id, err)
		}
	}
	steps := []schemas.Step{
		{Turn: 1, Step: 1, Kind: schemas.StepToolCall, Name: "get_user_details", CallID: "c1", Arguments: json.RawMessage(`{"user_id":"u1"}`)},
		{Turn: 1, Step: 2, Kind: schemas.StepToolResult, Name: "get_user_details", CallID: "c1", Output: "{}"},
		{Turn: 1, Step: 3, Kind: schemas.StepReply, Output: "hello"},
	}
	for _, s := range steps {
		publish("single", schemas.TypeStep, schemas.StepEventID("acme", "single", 1, s.Step), s)
	}
	publish("batch", schemas.TypeSteps, schemas.StepsEventID("acme", "batch", 1), schemas.Steps{Turn: 1, Steps: steps})

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
