package main

import (
	"slices"

	"github.com/reinception/rein/injector"
	"github.com/reinception/rein/streams"
)

func init() { registerStage("injector", newInjectorStage) }

func newInjectorStage(rt *proc) (stageRunner, error) { return rt.injectorStage() }

// injectorStage builds the process's injector once: the detector's factory
// asks for it first when the two are fused.
func (rt *proc) injectorStage() (*injector.Stage, error) {
	if rt.injector != nil {
		return rt.injector, nil
	}
	l, err := rt.stageLink("injector")
	if err != nil {
		return nil, err
	}
	key, err := rt.taskKey()
	if err != nil {
		return nil, err
	}
	rt.injector, err = injector.New(injector.Config{Workers: rt.stages.workers, AckWait: rt.stages.ackWait, PinTTL: rt.stages.pinTTL, Sidecar: true, Fused: rt.fused()}, injector.Deps{
		StageDeps: streams.StageDeps{JS: l.js, Publisher: l.pub, Logger: rt.log.With("stage", "injector"), Registerer: rt.reg},
		TaskKey:   key,
	})
	return rt.injector, err
}

// fused reports whether the detector publishes the injector's tasks itself:
// both run in this process and --fuse-injector is on.
func (rt *proc) fused() bool {
	return rt.stages.fuseInjector && slices.Contains(rt.running, "detector") && slices.Contains(rt.running, "injector")
}
