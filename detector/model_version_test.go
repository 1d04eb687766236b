package detector_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/reinception/rein/inception"
	rtest "github.com/reinception/rein/internal/testutil"
)

// Each detection names the module and the model version that produced
// it, so labels and quality can be told apart by model.
func TestDetectionRecordsModelVersion(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	m := &fakeModule{answer: func(context.Context, inception.Input) (inception.Decision, error) {
		return inception.Decision{Rein: true, ErrorType: "anaphora", Category: "ambiguous", RecoveryTool: "ambiguity_report",
			Reasoning: "plan", ModelVersion: "typed@sha256:0123456789ab"}, nil
	}}
	stop := startStage(t, h, m, prometheus.NewRegistry(), time.Second)
	defer stop()
	publishTurn(t, h, "c1", "user", 1, "cancel that one")
	rtest.CheckFor(t, 10*time.Second, "a detection", func() bool { return len(detections(t, h)) == 1 })
	if d := detections(t, h)["detection.acme.c1.1"]; d.Module != "fake" || d.ModelVersion != "typed@sha256:0123456789ab" {
		t.Errorf("detection %+v: want module fake, model version typed@sha256:0123456789ab", d)
	}
}
