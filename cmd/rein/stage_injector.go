package main

import (
	"github.com/reinception/rein/injector"
)

func init() { registerStage("injector", newInjectorStage) }

func newInjectorStage(rt *proc) (stageRunner, error) {
	return injector.New(injector.Config{Workers: rt.stages.workers, Sidecar: true}, injector.Deps{
		JS: rt.js, Publisher: rt.pub, Logger: rt.log.With("stage", "injector"), Registerer: rt.reg,
	})
}
