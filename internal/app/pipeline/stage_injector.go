package pipeline

import (
	"slices"

	"github.com/reinception/rein/injector"
	"github.com/reinception/rein/streams"
)

func init() { registerStage(streams.StageInjector, newInjectorStage) }

func newInjectorStage(rt *Process) (stageRunner, error) { return rt.injectorStage() }

// injectorStage builds the process's injector once: the detector's factory
// asks for it first when the two are fused.
func (rt *Process) injectorStage() (*injector.Stage, error) {
	if rt.injector != nil {
		return rt.injector, nil
	}
	l, err := rt.stageLink(streams.StageInjector)
	if err != nil {
		return nil, err
	}
	key, err := rt.taskKey()
	if err != nil {
		return nil, err
	}
	rt.injector, err = injector.New(injector.Config{Workers: rt.stages.Workers, AckWait: rt.stages.AckWait, PinTTL: rt.stages.PinTTL, Sidecar: true, Fused: rt.fused()}, injector.Deps{
		StageDeps: streams.StageDeps{JS: l.js, Publisher: l.pub, Logger: rt.Log.With("stage", streams.StageInjector), Registerer: rt.Reg},
		TaskKey:   key,
	})
	return rt.injector, err
}

// fused reports whether the detector publishes the injector's tasks itself:
// both run in this process and --fuse-injector is on.
func (rt *Process) fused() bool {
	return rt.stages.FuseInjector && slices.Contains(rt.running, streams.StageDetector) && slices.Contains(rt.running, streams.StageInjector)
}
