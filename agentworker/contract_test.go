package agentworker_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/reinception/rein/agentworker"
	"github.com/reinception/rein/internal/llm"
	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/internal/testutil/stagetest"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
)

// The agent worker keeps the stage contract. Its collaborator is the
// model: a failed call is retried in place, a panic dead-letters the task
// (after OnDeadLetter hands the turn to a human), and a task delivered
// again after its reply was stored is not run a second time.
func TestStageContract(t *testing.T) {
	features := stagetest.Features{Faults: true, ChecksStored: true}
	stagetest.Run(t, features, func(t *testing.T, h *rtest.JS, f *stagetest.Fault) stagetest.Stage {
		reg := prometheus.NewRegistry()
		model := funcModel(func(ctx context.Context, _ llm.Request) (llm.Response, error) {
			if err := f.Hit(ctx); err != nil {
				return llm.Response{}, err
			}
			return llm.Response{Content: "Your flight is changed."}, nil
		})
		st, err := agentworker.New(agentworker.Config{SystemPrompt: prompt, AckWait: 2 * time.Second, ModelTimeout: time.Minute},
			agentworker.Deps{StageDeps: streams.StageDeps{JS: h.JS, Publisher: streams.NewPublisher(h.JS, reg, streams.PublisherConfig{}), Logger: quiet(), Registerer: reg}, Model: model})
		if err != nil {
			t.Fatal(err)
		}
		return stagetest.Stage{
			Run:      st.Run,
			Consumer: st.ConsumerConfig(),
			Metrics:  reg,
			Publish: func(t *testing.T, conv string, turn int) {
				publishTask(t, h, conv, turn, "I want to change my flight", nil)
			},
			// A turn is not a task.
			PublishInvalid: func(t *testing.T, conv string, turn int) {
				stagetest.PublishTurnOn(t, h, bus.StreamTasks, bus.TaskSubject(tenant, conv), tenant, conv, turn)
			},
			// The agent's replies.
			Outputs: func(t *testing.T, conv string) []int {
				return stagetest.Turns(t, h, bus.StreamTurns, bus.TurnSubject(tenant, conv, schemas.RoleAgent))
			},
		}
	})
}
