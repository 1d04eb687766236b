package detector_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/reinception/rein/detector"
	"github.com/reinception/rein/inception"
	"github.com/reinception/rein/internal/llm"
	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
)

// With Deps.Then (the injector fused into the detector), each detection's
// follower is stored with it and its stored callback runs once it is; a
// follower that cannot be built dead-letters the turn, detection and all.
func TestThenIsPublishedWithTheDetection(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	reg := prometheus.NewRegistry()
	var mu sync.Mutex
	stored := map[string]int{}
	then := func(meta schemas.Meta, det schemas.Detection, detectionID string) (streams.Out, func(), error) {
		if meta.Conversation == "broken" {
			return streams.Out{}, nil, errors.New("no task for this one")
		}
		task := schemas.Task{Turn: meta.Turn, UserText: det.UserText, DetectionID: detectionID}
		id := schemas.EventID("task", meta.Tenant, meta.Conversation, meta.Turn)
		ev, err := schemas.BuildEvent(schemas.TypeTask, id, "", meta, task)
		if err != nil {
			return streams.Out{}, nil, err
		}
		return streams.Out{Stream: streams.StreamTasks, Subject: streams.TaskSubject(meta.Tenant, meta.Conversation), Event: &ev},
			func() { mu.Lock(); stored[id]++; mu.Unlock() }, nil
	}
	st, err := detector.New(detector.Config{TaxonomyVersion: "test-1", Timeout: time.Second}, detector.Deps{
		StageDeps: streams.StageDeps{JS: h.JS, Publisher: streams.NewPublisher(h.JS, reg), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Registerer: reg},
		Module:    &fakeModule{answer: func(context.Context, inception.Input) (inception.Decision, error) { return inception.Decision{}, nil }},
		Tools:     func(string) ([]llm.Tool, error) { return []llm.Tool{{Name: "cancel_reservation"}}, nil },
		Then:      then,
	})
	if err != nil {
		t.Fatal(err)
	}
	rtest.Run(t, "stage", st.Run)
	publishTurn(t, h, "c1", "user", 1, "hello")
	publishTurn(t, h, "c1", "user", 2, "my booking please")
	publishTurn(t, h, "broken", "user", 1, "hello")

	taskCount := func() map[string]schemas.Task {
		out := map[string]schemas.Task{}
		if err := streams.ReadStream(context.Background(), h.JS, streams.StreamTasks, streams.ReadOptions{}, func(r streams.Raw) error {
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
	rtest.CheckFor(t, 10*time.Second, "two tasks and a dead letter", func() bool {
		return len(taskCount()) == 2 && streamMsgs(t, h, streams.StreamDLQ) == 1
	})
	tasks := taskCount()
	for turn, text := range map[int]string{1: "hello", 2: "my booking please"} {
		id := schemas.EventID("task", "acme", "c1", turn)
		task := tasks[id]
		if task.UserText != text || task.DetectionID != schemas.EventID("detection", "acme", "c1", turn) {
			t.Errorf("task %s = %+v", id, task)
		}
		mu.Lock()
		if stored[id] != 1 {
			t.Errorf("stored callback of %s ran %d times", id, stored[id])
		}
		mu.Unlock()
	}
	ds := detections(t, h)
	if len(ds) != 2 {
		t.Errorf("detections %v: the broken conversation's should be dead-lettered with its turn", ds)
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
