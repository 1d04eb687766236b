package pipeline

import (
	"context"
	"fmt"
	"time"

	"github.com/reinception/rein/agentworker/taubench"
	"github.com/reinception/rein/detector"
	"github.com/reinception/rein/inception"
	"github.com/reinception/rein/internal/labels"
	"github.com/reinception/rein/streams"
)

// buildDetector builds the detector with the given module, or the one
// Modules build (its taxonomy's version then recorded in detections),
// held in an inception.Live when the detector looks for promoted models.
func buildDetector(rt *Process, s *Stages, l link) (runner, error) {
	cfg := s.Detector
	m := s.Given.Module
	var watch *modelWatch
	if m == nil {
		mods := s.detectorModules()
		mods.OnClient = rt.watchModel
		if mods.FewShot > 0 && mods.Module != inception.ModuleRules {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			var err error
			mods.Examples, err = labels.FewShot(ctx, rt.JS, mods.FewShot)
			cancel()
			if err != nil {
				return nil, fmt.Errorf("--few-shot-labels: %w", err)
			}
		}
		// What the model files hold, read before building: a promotion in
		// between is caught at the first look.
		key, keyErr := modelKey(mods.GateModel, mods.TypedModel)
		built, tax, err := mods.Build(rt.Reg)
		if err != nil {
			return nil, err
		}
		m, cfg.TaxonomyVersion = built, tax.Version
		if s.ModelReload > 0 && keyErr == nil {
			watch = newModelWatch(built, tax, mods, *s, key, rt.Log.With("stage", streams.StageDetector))
			m = watch.live
		}
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
	st, err := detector.New(cfg, deps)
	if err != nil || watch == nil {
		return st, err
	}
	return reloadingStage{runner: st, watch: watch}, nil
}

// reloadingStage runs the detector and, beside it, the look for a
// promoted model.
type reloadingStage struct {
	runner
	watch *modelWatch
}

func (s reloadingStage) Run(ctx context.Context) error {
	wctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.watch.run(wctx)
	}()
	defer func() { stop(); <-done }()
	return s.runner.Run(ctx)
}
