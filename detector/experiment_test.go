package detector_test

import (
	"context"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/reinception/rein/detector"
	"github.com/reinception/rein/inception"
	"github.com/reinception/rein/internal/experiment"
	"github.com/reinception/rein/internal/llm"
	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
)

// Both arms are judged alike and record their arm; a conversation keeps
// its first arm across a restart even when the draw changes, and the kill
// switch ends the holdout at once.
func TestExperimentArmRecordedAndKeptForTheConversation(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	var draw atomic.Value
	draw.Store(experiment.Assignment{Experiment: "e1", Arm: schemas.ArmControl})
	m := &fakeModule{answer: func(context.Context, inception.Input) (inception.Decision, error) {
		return inception.Decision{Rein: true, ErrorType: "anaphora", Category: "ambiguous", Reasoning: "ask which"}, nil
	}}
	start := func() func() {
		st, err := detector.New(detector.Config{TaxonomyVersion: "test-1", Timeout: time.Second}, detector.Deps{
			StageDeps: streams.StageDeps{JS: h.JS, Publisher: streams.NewPublisher(h.JS, nil, streams.PublisherConfig{}), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Registerer: prometheus.NewRegistry()},
			Module:    m,
			Tools:     func(string) ([]llm.Tool, error) { return nil, nil },
			Assign:    func(string, string) experiment.Assignment { return draw.Load().(experiment.Assignment) },
		})
		if err != nil {
			t.Fatal(err)
		}
		return rtest.Run(t, "stage", st.Run)
	}
	stop := start()
	publishTurn(t, h, "x1", "user", 1, "cancel that one")
	rtest.CheckFor(t, 10*time.Second, "turn 1 judged", func() bool { return len(detections(t, h)) == 1 })
	d1 := detections(t, h)["detection.acme.x1.1"]
	if !d1.Rein || d1.Arm != schemas.ArmControl || d1.Experiment != "e1" {
		t.Fatalf("turn 1: %+v", d1)
	}

	// The holdout fraction changed and the stage restarted: the draw now
	// says treatment, but the conversation stays in control.
	stop()
	draw.Store(experiment.Assignment{Experiment: "e1", Arm: schemas.ArmTreatment})
	start()
	publishTurn(t, h, "x1", "user", 2, "and that one")
	rtest.CheckFor(t, 10*time.Second, "turn 2 judged", func() bool { return len(detections(t, h)) == 2 })
	if d2 := detections(t, h)["detection.acme.x1.2"]; d2.Arm != schemas.ArmControl || d2.Experiment != "e1" || !d2.Rein {
		t.Fatalf("turn 2 after a restart: %+v", d2)
	}

	// Killed: no arm, so the injector plants.
	draw.Store(experiment.Assignment{})
	publishTurn(t, h, "x1", "user", 3, "this one")
	rtest.CheckFor(t, 10*time.Second, "turn 3 judged", func() bool { return len(detections(t, h)) == 3 })
	if d3 := detections(t, h)["detection.acme.x1.3"]; d3.Arm != "" || d3.Experiment != "" || !d3.Rein {
		t.Fatalf("turn 3 after the kill: %+v", d3)
	}
}
