package detector_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/reinception/rein/detector"
	"github.com/reinception/rein/internal/llm"
	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
)

// A durable created anew reads REIN_TURNS from its start, past the
// duplicate window of the outputs' ids: a user turn older than RecheckAfter
// whose detection (and, fused, whose task) is stored is acked without a
// second inception call; any other is judged as usual.
func TestOldTurnsWithStoredOutputsAreNotJudgedAgain(t *testing.T) {
	storeDetection := func(t *testing.T, h *rtest.JS, conv string, turn int) {
		t.Helper()
		// Stored under another message id, as if its own had left the window.
		ev, err := schemas.NewEvent(schemas.TypeDetection, schemas.EventID("detection", "acme", conv, turn)+"-long-ago", "",
			schemas.Meta{Tenant: "acme", Conversation: conv, Turn: turn},
			schemas.Detection{Turn: turn, UserText: "earlier", Module: "fake", TaxonomyVersion: "test-1"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := streams.NewPublisher(h.JS, nil).Publish(context.Background(), streams.StreamDetections, streams.DetectionSubject("acme", conv), &ev); err != nil {
			t.Fatal(err)
		}
	}
	// Every turn counts as old: stored over a nanosecond ago.
	run := func(t *testing.T, h *rtest.JS, deps detector.Deps) *fakeModule {
		return startJudging(t, h, deps, time.Nanosecond)
	}

	t.Run("detector alone", func(t *testing.T) {
		h := rtest.StartJetStream(t, "")
		storeDetection(t, h, "done", 1)
		publishTurn(t, h, "done", "user", 1, "cancel that one")
		publishTurn(t, h, "fresh", "user", 1, "hello")
		m := run(t, h, detector.Deps{})
		h.WaitAcked(t, 10*time.Second, streams.StreamTurns, streams.DurableDetector, 2)
		if n := judgedTurns(m); n != 1 {
			t.Errorf("the module judged %d turns, want only the one without a detection", n)
		}
		ds := detections(t, h)
		if _, again := ds[schemas.EventID("detection", "acme", "done", 1)]; again || len(ds) != 2 {
			t.Errorf("detections %v: want the stored one and fresh's", ds)
		}
	})

	t.Run("fused", func(t *testing.T) {
		h := rtest.StartJetStream(t, "")
		storeDetection(t, h, "both", 1)
		storeDetection(t, h, "detection-only", 1)
		publishTurn(t, h, "both", "user", 1, "cancel that one")
		publishTurn(t, h, "detection-only", "user", 1, "hello")
		m := run(t, h, detector.Deps{
			Then: func(meta schemas.Meta, det schemas.Detection, id string) (streams.Out, func(), error) {
				ev, err := schemas.BuildEvent(schemas.TypeTask, schemas.EventID("task", meta.Tenant, meta.Conversation, meta.Turn), "", meta,
					schemas.Task{Turn: meta.Turn, UserText: det.UserText, DetectionID: id})
				return streams.Out{Stream: streams.StreamTasks, Subject: streams.TaskSubject(meta.Tenant, meta.Conversation), Event: &ev}, func() {}, err
			},
			// Only "both" has its task stored too.
			ThenStored: func(_ context.Context, _, conv string, _ int) (bool, error) { return conv == "both", nil },
		})
		h.WaitAcked(t, 10*time.Second, streams.StreamTurns, streams.DurableDetector, 2)
		if n := judgedTurns(m); n != 1 {
			t.Errorf("the module judged %d turns, want only the one whose task is missing", n)
		}
		if n := h.StreamMsgs(t, streams.StreamTasks); n != 1 {
			t.Errorf("tasks stored = %d, want the missing one only", n)
		}
		if _, ok := detections(t, h)[schemas.EventID("detection", "acme", "detection-only", 1)]; !ok {
			t.Error("the turn whose task was missing was not judged and stored again")
		}
	})
}

// startJudging runs a detector stage whose module says "no error" to every
// turn and records what it saw.
func startJudging(t *testing.T, h *rtest.JS, deps detector.Deps, recheckAfter time.Duration) *fakeModule {
	t.Helper()
	m := &fakeModule{answer: func(context.Context, detector.Input) (detector.Decision, error) { return detector.Decision{}, nil }}
	deps.JS, deps.Publisher, deps.Module = h.JS, streams.NewPublisher(h.JS, nil), m
	deps.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	deps.Registerer = prometheus.NewRegistry()
	deps.Tools = func(string) ([]llm.Tool, error) { return []llm.Tool{{Name: "cancel_reservation"}}, nil }
	st, err := detector.New(detector.StageConfig{TaxonomyVersion: "test-1", Timeout: time.Second, RecheckAfter: recheckAfter}, deps)
	if err != nil {
		t.Fatal(err)
	}
	rtest.Run(t, "stage", st.Run)
	return m
}

func judgedTurns(m *fakeModule) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.seen)
}

// TestATurnSentAgainIsNotJudgedAgain: a platform that sends its last user
// turn again (a retry, as a new message) gets no second judgement and no
// second detection: past the duplicate window the detection's id would not
// drop it.
func TestATurnSentAgainIsNotJudgedAgain(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	m := startJudging(t, h, detector.Deps{}, 0)
	publishTurn(t, h, "again", "user", 1, "cancel that one")
	h.WaitAcked(t, 10*time.Second, streams.StreamTurns, streams.DurableDetector, 1)
	seen, err := h.Conn.SubscribeSync(streams.DetectionSubject("acme", "again"))
	if err != nil {
		t.Fatal(err)
	}
	ev, err := schemas.NewEvent(schemas.TypeTurn, schemas.EventID("turn", "acme", "again", 1)+"-user-resent", "",
		schemas.Meta{Tenant: "acme", Conversation: "again", Turn: 1}, schemas.Turn{Role: "user", Text: "cancel that one", Turn: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := streams.NewPublisher(h.JS, nil).Publish(context.Background(), streams.StreamTurns, streams.TurnSubject("acme", "again", "user"), &ev); err != nil {
		t.Fatal(err)
	}
	h.WaitAcked(t, 10*time.Second, streams.StreamTurns, streams.DurableDetector, 2)
	if n := judgedTurns(m); n != 1 {
		t.Errorf("the module judged %d turns, want 1", n)
	}
	if n, _, _ := seen.Pending(); n != 0 {
		t.Errorf("the turn sent again published %d detections", n)
	}
	// The next turn is judged as usual.
	publishTurn(t, h, "again", "user", 2, "the one to Boston")
	h.WaitAcked(t, 10*time.Second, streams.StreamTurns, streams.DurableDetector, 3)
	if n := judgedTurns(m); n != 2 {
		t.Errorf("the module judged %d turns, want 2", n)
	}
}
