package injector_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	ptest "github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/reinception/rein/injector"
	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
)

// A fused stage builds tasks for the detector (Stage.Task) and consumes
// nothing itself; its sidecar responder still answers.
func TestFusedStageBuildsTasksAndConsumesNothing(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	reg := prometheus.NewRegistry()
	pub := streams.NewPublisher(h.JS, reg)
	st, err := injector.New(injector.Config{Fused: true, Sidecar: true, SidecarWait: 200 * time.Millisecond}, injector.Deps{
		StageDeps: streams.StageDeps{JS: h.JS, Publisher: pub, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Registerer: reg},
	})
	if err != nil {
		t.Fatal(err)
	}
	rtest.Run(t, "stage", st.Run)

	yes := schemas.Detection{Turn: 2, UserText: "cancel that one", Rein: true, ErrorType: "anaphora", Category: "ambiguous", Reasoning: "ask which"}
	no := schemas.Detection{Turn: 1, UserText: "hello"}
	for _, det := range []schemas.Detection{no, yes} {
		publishDetection(t, h, "f1", det, "")
		meta := schemas.Meta{Tenant: tenant, Conversation: "f1", Turn: det.Turn}
		out, stored, err := st.Task(meta, det, schemas.EventID("detection", tenant, "f1", det.Turn))
		if err != nil {
			t.Fatal(err)
		}
		if out.Stream != streams.StreamTasks || out.Subject != streams.TaskSubject(tenant, "f1") {
			t.Fatalf("task goes to %s %s", out.Stream, out.Subject)
		}
		if _, err := pub.PublishAll(context.Background(), out); err != nil {
			t.Fatal(err)
		}
		stored()
	}
	got := tasks(t, h)
	task := got[schemas.EventID("task", tenant, "f1", 2)]
	if len(got) != 2 || task.Inception == nil || task.Inception.RecoveryTool != schemas.ToolAmbiguityReport || task.Inception.Thought != "ask which" ||
		task.DetectionID != schemas.EventID("detection", tenant, "f1", 2) {
		t.Fatalf("tasks %+v", got)
	}
	if task := got[schemas.EventID("task", tenant, "f1", 1)]; task.Inception != nil || task.UserText != "hello" {
		t.Errorf("clear turn's task %+v", task)
	}
	if n := ptest.ToFloat64(sum(t, reg, "rein_injector_injections_total")); n != 1 {
		t.Errorf("injections = %v, want 1", n)
	}

	var a injector.Answer
	rtest.CheckFor(t, 5*time.Second, "sidecar answers", func() bool {
		a, err = injector.Ask(context.Background(), h.Conn, tenant, "f1", 2, time.Second)
		return err == nil
	})
	if a.Status != injector.StatusReady || a.Inception == nil {
		t.Errorf("sidecar answer %+v", a)
	}
	if _, err := h.JS.Consumer(context.Background(), streams.StreamDetections, streams.DurableInjector); !errors.Is(err, jetstream.ErrConsumerNotFound) {
		t.Errorf("a fused injector made its durable: %v", err)
	}
	if n := h.StreamMsgs(t, streams.StreamTasks); n != 2 {
		t.Errorf("tasks stored = %d, want only the 2 published through Task", n)
	}
}
