package pipeline

import (
	"github.com/reinception/rein/agentworker/taubench"
	"github.com/reinception/rein/detector"
	"github.com/reinception/rein/streams"
)

// buildDetector builds the detector with the given module, or the one
// Modules build (its taxonomy's version then recorded in detections).
func buildDetector(rt *Process, s *Stages, l link) (runner, error) {
	cfg := s.Detector
	m := s.Given.Module
	if m == nil {
		mods := s.detectorModules()
		mods.OnClient = rt.watchModel
		built, tax, err := mods.Build(rt.Reg)
		if err != nil {
			return nil, err
		}
		m, cfg.TaxonomyVersion = built, tax.Version
	}
	key, err := rt.taskKey()
	if err != nil {
		return nil, err
	}
	deps := detector.Deps{
		StageDeps: l.deps(rt, streams.StageDetector),
		Module:    m,
		Tools:     taubench.ToolCatalogue,
		TaskKey:   key,
	}
	if s.Given.Experiments != nil {
		deps.Assign = s.Given.Experiments.Assign
	}
	return detector.New(cfg, deps)
}
