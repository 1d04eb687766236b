package injector_test

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/reinception/rein/injector"
	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/internal/testutil/stagetest"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
)

// The injector, run as a stage of its own (not fused into the detector),
// keeps the stage contract. It calls no collaborator (a detection's task
// is a pure function of it), so the fault-injection parts do not apply;
// its sidecar responder answers requests and consumes nothing, so it is
// not a stage under this contract.
func TestStageContract(t *testing.T) {
	stagetest.Run(t, stagetest.Features{ChecksStored: true}, func(t *testing.T, h *rtest.JS, _ *stagetest.Fault) stagetest.Stage {
		reg := prometheus.NewRegistry()
		st, err := injector.New(injector.Config{AckWait: 2 * time.Second}, injector.Deps{
			StageDeps: streams.StageDeps{JS: h.JS, Publisher: streams.NewPublisher(h.JS, reg), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Registerer: reg},
		})
		if err != nil {
			t.Fatal(err)
		}
		return stagetest.Stage{
			Run:      st.Run,
			Consumer: st.ConsumerConfig(),
			Metrics:  reg,
			Publish: func(t *testing.T, conv string, turn int) {
				publishDetection(t, h, conv, schemas.Detection{Turn: turn, UserText: "I want to change my flight"}, "")
			},
			// A turn is not a detection.
			PublishInvalid: func(t *testing.T, conv string, turn int) {
				stagetest.PublishTurnOn(t, h, streams.StreamDetections, streams.DetectionSubject(tenant, conv), tenant, conv, turn)
			},
			Outputs: func(t *testing.T, conv string) []int {
				return stagetest.Turns(t, h, streams.StreamTasks, streams.TaskSubject(tenant, conv))
			},
		}
	})
}
