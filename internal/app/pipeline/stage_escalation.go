package pipeline

import (
	"github.com/reinception/rein/escalation"
	"github.com/reinception/rein/streams"
)

func init() { registerStage(streams.StageEscalation, newEscalationStage) }

// newEscalationStage builds the escalation stage with the sinks of its
// options; with none configured, events stay in REIN_OUTCOMES for
// platforms that consume them directly.
func newEscalationStage(rt *Process) (stageRunner, error) {
	l, err := rt.stageLink(streams.StageEscalation)
	if err != nil {
		return nil, err
	}
	return escalation.New(escalation.Config{Sinks: rt.stages.Sinks, AckWait: rt.stages.AckWait, PinTTL: rt.stages.PinTTL}, escalation.Deps{
		StageDeps: streams.StageDeps{JS: l.js, Publisher: l.pub, Logger: rt.Log.With("stage", streams.StageEscalation), Registerer: rt.Reg},
	})
}
