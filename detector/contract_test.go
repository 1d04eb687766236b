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
	"github.com/reinception/rein/internal/testutil/stagetest"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
)

// The detector keeps the stage contract. Its collaborator is the
// inception module: an error or a panic there fails open (a detection
// marked failed), and a user turn delivered again after its detection
// was stored is not judged a second time.
func TestStageContract(t *testing.T) {
	features := stagetest.Features{Faults: true, FailOpen: true, ChecksStored: true}
	stagetest.Run(t, features, func(t *testing.T, h *rtest.JS, f *stagetest.Fault) stagetest.Stage {
		reg := prometheus.NewRegistry()
		module := &fakeModule{answer: func(ctx context.Context, _ inception.Input) (inception.Decision, error) {
			return inception.Decision{}, f.Hit(ctx)
		}}
		// A timeout past the suite's waits: a blocked module is released
		// by the suite, not by the deadline.
		st, err := detector.New(detector.Config{TaxonomyVersion: "test-1", Timeout: time.Minute, AckWait: 2 * time.Second}, detector.Deps{
			StageDeps: streams.StageDeps{JS: h.JS, Publisher: streams.NewPublisher(h.JS, reg, streams.PublisherConfig{}), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Registerer: reg},
			Module:    module,
			Tools:     func(string) ([]llm.Tool, error) { return []llm.Tool{{Name: "cancel_reservation"}}, nil },
		})
		if err != nil {
			t.Fatal(err)
		}
		return stagetest.Stage{
			Run:      st.Run,
			Consumer: st.ConsumerConfig(),
			Metrics:  reg,
			Publish: func(t *testing.T, conv string, turn int) {
				publishTurn(t, h, conv, schemas.RoleUser, turn, "I want to change my flight")
			},
			// A user turn without a turn number names no detection.
			PublishInvalid: func(t *testing.T, conv string, turn int) {
				ev, err := schemas.NewEvent(schemas.TypeTurn, schemas.EventID("turn", "acme", conv, turn)+"-user", "",
					schemas.Meta{Tenant: "acme", Conversation: conv}, schemas.Turn{Role: schemas.RoleUser, Text: "no number"})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := streams.NewPublisher(h.JS, nil, streams.PublisherConfig{}).Publish(context.Background(), bus.StreamTurns, bus.TurnSubject("acme", conv, schemas.RoleUser), &ev); err != nil {
					t.Fatal(err)
				}
			},
			Outputs: func(t *testing.T, conv string) []int {
				return stagetest.Turns(t, h, bus.StreamDetections, bus.DetectionSubject("acme", conv))
			},
		}
	})
}
