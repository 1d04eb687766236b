package main

import (
	"github.com/reinception/rein/injector"
)

func init() { registerStage("injector", newInjectorStage) }

func newInjectorStage(rt *proc) (stageRunner, error) {
	l, err := rt.stageLink("injector")
	if err != nil {
		return nil, err
	}
	return injector.New(injector.Config{Workers: rt.stages.workers, Sidecar: true}, injector.Deps{
		JS: l.js, Publisher: l.pub, Logger: rt.log.With("stage", "injector"), Registerer: rt.reg,
	})
}
