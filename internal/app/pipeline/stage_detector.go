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

func init() { registerStage(streams.StageDetector, newDetectorStage) }

func newDetectorStage(rt *Process) (stageRunner, error) {
	l, err := rt.stageLink(streams.StageDetector)
	if err != nil {
		return nil, err
	}
	o := rt.stages
	o.Modules.OnClient = rt.watchModel
	m, taxVersion := o.Module, o.TaxonomyVersion
	var watch *modelWatch
	if m == nil {
		mods := o.detectorModules()
		if mods.FewShot > 0 && mods.Module != inception.ModuleRules {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
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
		m, taxVersion = built, tax.Version
		if o.ModelReload > 0 && keyErr == nil {
			watch = newModelWatch(built, tax, mods, *o, key, rt.Log.With("stage", streams.StageDetector))
			m = watch.live
		}
	}
	if o.InceptionLatency > 0 {
		m = delayedModule{Module: m, d: o.InceptionLatency}
	}
	key, err := rt.taskKey()
	if err != nil {
		return nil, err
	}
	deps := detector.Deps{
		StageDeps: streams.StageDeps{JS: l.js, Publisher: l.pub, Logger: rt.Log.With("stage", streams.StageDetector), Registerer: rt.Reg},
		Module:    m,
		Tools:     taubench.ToolCatalogue,
		TaskKey:   key,
	}
	if o.Experiments != nil {
		deps.Assign = o.Experiments.Assign
	}
	st, err := detector.New(detector.Config{
		Domain: o.Domain, Timeout: o.DetectorTimeout, Workers: o.Workers, TaxonomyVersion: taxVersion,
		MaxConversations: o.DetectorCache, AckWait: o.AckWait, PinTTL: o.PinTTL,
	}, deps)
	if err != nil || watch == nil {
		return st, err
	}
	return reloadingStage{stageRunner: st, watch: watch}, nil
}

// reloadingStage runs the detector and, beside it, the look for a
// promoted model.
type reloadingStage struct {
	stageRunner
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
	return s.stageRunner.Run(ctx)
}

// delayedModule is rein bench's stand-in for an inception model's time: a
// simulator, not a model, that waits d and then lets the configured module
// decide.
type delayedModule struct {
	inception.Module
	d time.Duration
}

func (m delayedModule) Detect(ctx context.Context, in inception.Input) (inception.Decision, error) {
	t := time.NewTimer(m.d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return inception.Decision{}, ctx.Err()
	}
	return m.Module.Detect(ctx, in)
}

// NeedsContext passes the wrapped module's answer through.
func (m delayedModule) NeedsContext(in inception.Input) bool {
	cf, ok := m.Module.(inception.ContextFree)
	return !ok || cf.NeedsContext(in)
}
