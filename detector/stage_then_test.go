package detector_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/reinception/rein/detector"
	"github.com/reinception/rein/inception"
	"github.com/reinception/rein/internal/llm"
	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
)

// Each detection's task (the injector's Tasks) is stored in one batch with
// it, signed, and counted as an injection when it plants a thought.
func TestTheTaskIsPublishedWithTheDetection(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	reg := prometheus.NewRegistry()
	key, err := schemas.NewTaskKey([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	module := &fakeModule{answer: func(_ context.Context, in inception.Input) (inception.Decision, error) {
		switch last := in.Dialogue[len(in.Dialogue)-1].Text; last {
		case "my booking please":
			return inception.Decision{Rein: true, ErrorType: "anaphora", Category: "ambiguous", Reasoning: "ask which booking"}, nil
		}
		return inception.Decision{}, nil
	}}
	st, err := detector.New(detector.Config{TaxonomyVersion: "test-1", Timeout: time.Second}, detector.Deps{
		StageDeps: streams.StageDeps{JS: h.JS, Publisher: streams.NewPublisher(h.JS, reg, streams.PublisherConfig{}), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Registerer: reg},
		Module:    module,
		Tools:     func(string) ([]llm.Tool, error) { return []llm.Tool{{Name: "cancel_reservation"}}, nil },
		TaskKey:   key,
	})
	if err != nil {
		t.Fatal(err)
	}
	rtest.Run(t, "stage", st.Run)
	publishTurn(t, h, "c1", "user", 1, "hello")
	publishTurn(t, h, "c1", "user", 2, "my booking please")

	taskCount := func() map[string]schemas.Task {
		out := map[string]schemas.Task{}
		if err := streams.ReadStream(context.Background(), h.JS, bus.StreamTasks, streams.ReadOptions{}, func(r streams.Raw) error {
			if err := key.Verify(r.Decoded.Event); err != nil {
				t.Errorf("task %s: %v", r.Decoded.Event.ID(), err)
			}
			var task schemas.Task
			if err := r.Decoded.Payload(&task); err != nil {
				return err
			}
			out[r.Decoded.Event.ID()] = task
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return out
	}
	rtest.CheckFor(t, 10*time.Second, "two tasks", func() bool { return len(taskCount()) == 2 })
	tasks := taskCount()
	for turn, text := range map[int]string{1: "hello", 2: "my booking please"} {
		id := schemas.EventID("task", "acme", "c1", turn)
		task := tasks[id]
		if task.UserText != text || task.DetectionID != schemas.EventID("detection", "acme", "c1", turn) || (task.Inception != nil) != (turn == 2) {
			t.Errorf("task %s = %+v", id, task)
		}
	}
	if n := counterValue(t, reg, "rein_injector_injections_total", map[string]string{"error_type": "anaphora"}); n != 1 {
		t.Errorf("injections = %v, want 1", n)
	}
	ds := detections(t, h)
	if len(ds) != 2 || streamMsgs(t, h, bus.StreamDLQ) != 0 {
		t.Errorf("detections %v (and %d dead letters): want one per turn", ds, streamMsgs(t, h, bus.StreamDLQ))
	}
}

func streamMsgs(t *testing.T, h *rtest.JS, name string) uint64 {
	t.Helper()
	s, err := h.JS.Stream(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Msgs
}
