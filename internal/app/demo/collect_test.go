package demo

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
)

// Core NATS delivers at most once: events stored while the collector's
// connection was away (here: before it subscribed) are never heard, and a
// turn waits for them forever. Refill reads them from the streams, once
// each, timed when they were stored.
func TestCollectorRefillsWhatTheSubscriptionMissed(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	pub := streams.NewPublisher(h.JS, prometheus.NewRegistry(), streams.PublisherConfig{})
	ctx := context.Background()
	publish := func(stream, subject, typ, id string, data any) {
		t.Helper()
		ev, err := schemas.NewEvent(typ, id, "/test", schemas.Meta{Tenant: "acme", Conversation: "c1", Turn: 1}, data)
		if err == nil {
			_, err = pub.Publish(ctx, stream, subject, &ev)
		}
		if err != nil {
			t.Fatalf("publish %s: %v", id, err)
		}
	}
	publish(bus.StreamTasks, bus.TaskSubject("acme", "c1"), schemas.TypeTask, "task.acme.c1.1", schemas.Task{Turn: 1, UserText: "hi"})
	publish(bus.StreamSteps, bus.StepSubject("acme", "c1"), schemas.TypeStep, "step.acme.c1.1.1", schemas.Step{Turn: 1, Step: 1, Kind: schemas.StepReply, Output: "hello"})
	publish(bus.StreamTurns, bus.TurnSubject("acme", "c1", schemas.RoleAgent), schemas.TypeTurn, "turn.acme.c1.1-agent", schemas.Turn{Turn: 1, Role: schemas.RoleAgent, Text: "hello"})

	col, err := NewCollector(h.Conn, "acme")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(col.Close)
	answered := func(t *Turn) bool { return t.Reply != nil && len(t.Steps) > 0 }
	// A cancelled context: Wait only checks what the collector holds.
	now, cancel := context.WithCancel(ctx)
	cancel()
	if _, _, err := col.Wait(now, "c1", 1, answered); err == nil {
		t.Fatal("the collector heard events stored before it subscribed")
	}
	before := time.Now()
	n, err := col.Refill(ctx, h.JS, "c1")
	if err != nil || n != 3 {
		t.Fatalf("refill applied %d events (%v), want 3", n, err)
	}
	got, _, err := col.Wait(now, "c1", 1, answered)
	if err != nil {
		t.Fatalf("after the refill the turn is still not answered: %+v", got)
	}
	if got.Task == nil || got.TaskAt.IsZero() || got.RepliedAt.IsZero() || !got.RepliedAt.Before(before) {
		t.Errorf("refilled turn not timed by the stream: %+v", got)
	}

	// An event heard live and then read again counts once.
	publish(bus.StreamSteps, bus.StepSubject("acme", "c1"), schemas.TypeStep, "step.acme.c1.1.2", schemas.Step{Turn: 1, Step: 2, Kind: schemas.StepReply, Output: "again"})
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	if _, _, err := col.Wait(wctx, "c1", 1, func(t *Turn) bool { return len(t.Steps) == 2 }); err != nil {
		t.Fatalf("the live step was not heard: %v", err)
	}
	if n, err := col.Refill(ctx, h.JS, "c1"); err != nil || n != 0 {
		t.Fatalf("a second refill applied %d events (%v), want 0", n, err)
	}
	got, _, _ = col.Wait(now, "c1", 1, answered)
	if len(got.Steps) != 2 {
		t.Errorf("steps %+v, want each once", got.Steps)
	}

	// WaitRead does not wait on the subscription alone.
	late, err := NewCollector(h.Conn, "acme")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(late.Close)
	read := 0
	got, _, err = late.WaitRead(wctx, h.JS, "c1", 1, 50*time.Millisecond, answered, func(events int, err error) {
		if err != nil {
			t.Errorf("refill: %v", err)
		}
		read += events
	})
	if err != nil || read != 4 || len(got.Steps) != 2 {
		t.Errorf("WaitRead: %v, read %d events, want 4; turn %+v", err, read, got)
	}
}
