package main

import (
	"github.com/reinception/rein/agentworker/domains"
	"github.com/reinception/rein/detector"
)

func init() { registerStage("detector", newDetectorStage) }

func newDetectorStage(rt *proc) (stageRunner, error) {
	l, err := rt.stageLink("detector")
	if err != nil {
		return nil, err
	}
	o := rt.stages
	o.modules.onClient = rt.watchModel
	m, tax, err := o.modules.build(rt.reg)
	if err != nil {
		return nil, err
	}
	deps := detector.Deps{
		JS: l.js, Publisher: l.pub, Logger: rt.log.With("stage", "detector"), Registerer: rt.reg,
		Module: m, Tools: domains.ToolCatalogue,
	}
	if rt.fused() {
		inj, err := rt.injectorStage()
		if err != nil {
			return nil, err
		}
		deps.Then, deps.ThenStored = inj.Task, inj.TaskStored
	}
	return detector.New(detector.Config{
		Domain: o.domain, Timeout: o.detectorTimeout, Workers: o.workers, TaxonomyVersion: tax.Version,
		MaxConversations: o.detectorCache, AckWait: o.ackWait,
	}, deps)
}
