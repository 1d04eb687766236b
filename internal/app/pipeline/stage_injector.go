package pipeline

import (
	"github.com/reinception/rein/injector"
	"github.com/reinception/rein/streams"
)

func init() { registerStage(streams.StageInjector, newInjectorStage) }

// newInjectorStage is the sidecar responder: the tasks themselves are
// built by the detector (injector.Tasks), so "injector" in --stages runs
// only the answers to rein.inception.get.
func newInjectorStage(rt *Process) (stageRunner, error) {
	l, err := rt.stageLink(streams.StageInjector)
	if err != nil {
		return nil, err
	}
	return injector.NewSidecar(injector.SidecarConfig{},
		streams.StageDeps{JS: l.js, Publisher: l.pub, Logger: rt.Log.With("stage", streams.StageInjector), Registerer: rt.Reg})
}
