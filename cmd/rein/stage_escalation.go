package main

import (
	"github.com/reinception/rein/escalation"
	"github.com/reinception/rein/streams"
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
	sinks, err := sinksConfig(rt.file)
	if err != nil {
		return nil, err
	}
	return escalation.New(escalation.Config{Sinks: sinks, AckWait: rt.stages.ackWait, PinTTL: rt.stages.pinTTL}, escalation.Deps{
		StageDeps: streams.StageDeps{JS: l.js, Publisher: l.pub, Logger: rt.log.With("stage", "escalation"), Registerer: rt.reg},
	})
}

// sinksConfig decodes rein.yaml's `sinks:` section: one flat entry per sink,
// each checked against the keys of its type.
func sinksConfig(file *fileConfig) (escalation.SinksConfig, error) {
	var sinks escalation.SinksConfig
	if err := file.decodeSection("sinks", &sinks.Sinks); err != nil {
		return escalation.SinksConfig{}, err
	}
	return sinks, nil
}
