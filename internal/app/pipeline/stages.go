package pipeline

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/reinception/rein/streams"
)

// stageRunner is what every stage package's New returns.
type stageRunner interface {
	Run(ctx context.Context) error
}

// stageFactory builds a stage from the process's shared parts.
type stageFactory func(rt *Process) (stageRunner, error)

// stageOrder lists the pipeline's stages in data-flow order; stageFactories
// holds the ones this binary has (each registered from its own file).
var (
	stageOrder     = []string{streams.StageDetector, streams.StageInjector, streams.StageAgentWorker, streams.StageEscalation}
	stageFactories = map[string]stageFactory{}
)

func registerStage(name string, f stageFactory) { stageFactories[name] = f }

// StageOrder is the pipeline's stages in data-flow order.
func StageOrder() []string { return slices.Clone(stageOrder) }

// ResolveStages turns a --stages list ("all", "none" or stage names) into
// the stages to run, each once.
func ResolveStages(req []string) ([]string, error) {
	var out []string
	for _, s := range req {
		switch s = strings.TrimSpace(s); s {
		case "all":
			for _, n := range stageOrder {
				if _, ok := stageFactories[n]; ok && !slices.Contains(out, n) {
					out = append(out, n)
				}
			}
		case "none", "":
		default:
			if !slices.Contains(stageOrder, s) {
				return nil, fmt.Errorf("--stages: unknown stage %q (known: %s)", s, strings.Join(stageOrder, ", "))
			}
			if _, ok := stageFactories[s]; !ok {
				return nil, fmt.Errorf("--stages: stage %q is not built into this binary", s)
			}
			if !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	return out, nil
}

// Run builds the named stages (ResolveStages) with opts and runs them
// until ctx is cancelled; the first stage to fail stops the others.
func (rt *Process) Run(ctx context.Context, opts Stages, names []string) error {
	rt.stages = &opts
	rt.experiments.Store(opts.Experiments)
	runners := make([]stageRunner, 0, len(names))
	var inputs []string
	for _, n := range names {
		if in, ok := stageInput[n]; ok && in != streams.StreamTurns {
			inputs = append(inputs, in)
		}
	}
	rt.requireStreams(inputs...)
	for _, n := range names {
		f, ok := stageFactories[n]
		if !ok {
			return fmt.Errorf("stage %s: %w", n, ErrUnknownStage)
		}
		r, err := f(rt)
		if err != nil {
			return fmt.Errorf("stage %s: %w", n, err)
		}
		runners = append(runners, r)
	}
	rt.Log.Info("rein serving", "stages", names, "http", rt.HTTP.Addr())
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg       sync.WaitGroup
		once     sync.Once
		firstErr error
	)
	for i, r := range runners {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// A stage cut short by shutdown while starting is not a failure.
			if err := r.Run(ctx); err != nil && !(ctx.Err() != nil && errors.Is(err, context.Canceled)) {
				once.Do(func() { firstErr = fmt.Errorf("stage %s: %w", names[i], err) })
				cancel()
			}
		}()
	}
	<-ctx.Done()
	wg.Wait()
	rt.Log.Info("rein stopped")
	return firstErr
}
