package main

import (
	"github.com/reinception/rein/escalation"
)

func init() { registerStage("escalation", newEscalationStage) }

// newEscalationStage builds the escalation stage from the `sinks:` section
// of rein.yaml; with none configured, events stay in REIN_OUTCOMES for
// platforms that consume them directly.
func newEscalationStage(rt *proc) (stageRunner, error) {
	l, err := rt.stageLink("escalation")
	if err != nil {
		return nil, err
	}
	var sinks escalation.SinksConfig
	if err := rt.file.decodeSection("sinks", &sinks.Sinks); err != nil {
		return nil, err
	}
	return escalation.New(escalation.Config{Sinks: sinks, AckWait: rt.stages.ackWait}, escalation.Deps{
		JS: l.js, Publisher: l.pub, Logger: rt.log.With("stage", "escalation"), Registerer: rt.reg,
	})
}
