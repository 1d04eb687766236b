package pipeline

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/reinception/rein/escalation"
	"github.com/reinception/rein/injector"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/natsserver"
)

// runner is what every stage's New returns.
type runner interface {
	Run(ctx context.Context) error
}

// stage is one row of the wiring table.
type stage struct {
	// name is the stage's --stages name, metric label and DLQ token.
	name string
	// input is the stream it consumes: /readyz needs its leader.
	input string
	// identity is the NATS identity its connection uses, whose
	// permissions cover what it consumes and produces.
	identity string
	// build makes the stage from its configuration, on its connection.
	build func(rt *Process, s *Stages, l link) (runner, error)
}

// table is every stage of the pipeline, in data-flow order: the one place
// where a stage is wired to its stream, its identity and its constructor.
var table = []stage{
	{streams.StageDetector, streams.StreamTurns, natsserver.IdentityDetector, buildDetector},
	// The injector's tasks are stored by the detector (injector.Tasks);
	// this row is the sidecar responder, which answers from detections.
	{streams.StageInjector, streams.StreamDetections, natsserver.IdentityInjector, buildSidecar},
	{streams.StageAgentWorker, streams.StreamTasks, natsserver.IdentityAgentWorker, buildAgentWorker},
	{streams.StageEscalation, streams.StreamOutcomes, natsserver.IdentityEscalation, buildEscalation},
}

// StageOrder is the pipeline's stages in data-flow order.
func StageOrder() []string { return namesOf(table) }

// ResolveStages turns a --stages list ("all", "none" or stage names) into
// the stages to run, each once.
func ResolveStages(req []string) ([]string, error) {
	order := StageOrder()
	var out []string
	for _, s := range req {
		switch s = strings.TrimSpace(s); s {
		case "all":
			for _, n := range order {
				if !slices.Contains(out, n) {
					out = append(out, n)
				}
			}
		case "none", "":
		default:
			if !slices.Contains(order, s) {
				return nil, fmt.Errorf("--stages: unknown stage %q (known: %s)", s, strings.Join(order, ", "))
			}
			if !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	return out, nil
}

// rows are the table's rows of the named stages, in the order named.
func rows(names []string) ([]stage, error) {
	out := make([]stage, 0, len(names))
	for _, n := range names {
		i := slices.IndexFunc(table, func(st stage) bool { return st.name == n })
		if i < 0 {
			return nil, fmt.Errorf("stage %q: %w (known: %s)", n, streams.ErrInvalidConfig, strings.Join(StageOrder(), ", "))
		}
		out = append(out, table[i])
	}
	return out, nil
}

// Run builds the named stages (ResolveStages) from s and runs them until
// ctx is cancelled; the first stage to fail stops the others.
func (rt *Process) Run(ctx context.Context, s Stages, names []string) error {
	sel, err := rows(names)
	if err != nil {
		return err
	}
	return rt.run(ctx, &s, sel)
}

// run builds the stages of sel, each on its own connection, and runs them.
func (rt *Process) run(ctx context.Context, s *Stages, sel []stage) error {
	rt.experiments.Store(s.Given.Experiments)
	var inputs []string
	for _, st := range sel {
		// POST /v1/turns already requires REIN_TURNS.
		if st.input != streams.StreamTurns {
			inputs = append(inputs, st.input)
		}
	}
	rt.requireStreams(inputs...)
	runners := make([]runner, len(sel))
	for i, st := range sel {
		l, err := rt.stageLink(st.name, st.identity)
		if err != nil {
			return fmt.Errorf("stage %s: %w", st.name, err)
		}
		if runners[i], err = st.build(rt, s, l); err != nil {
			return fmt.Errorf("stage %s: %w", st.name, err)
		}
	}
	rt.Log.Info("rein serving", "stages", namesOf(sel), "http", rt.HTTP.Addr())
	g, gctx := errgroup.WithContext(ctx)
	// Run returns when ctx ends or a stage fails, even with no stages.
	g.Go(func() error { <-gctx.Done(); return nil })
	for i, r := range runners {
		g.Go(func() error {
			// A stage cut short by shutdown while starting is not a failure.
			if err := r.Run(gctx); err != nil && !(gctx.Err() != nil && errors.Is(err, context.Canceled)) {
				return fmt.Errorf("stage %s: %w", sel[i].name, err)
			}
			return nil
		})
	}
	err := g.Wait()
	rt.Log.Info("rein stopped")
	return err
}

// namesOf are the names of sel's stages.
func namesOf(sel []stage) []string {
	names := make([]string, len(sel))
	for i, st := range sel {
		names[i] = st.name
	}
	return names
}

// buildSidecar is the sidecar responder: the tasks themselves are built by
// the detector, so "injector" in --stages runs only the answers to
// rein.inception.get.
func buildSidecar(rt *Process, s *Stages, l link) (runner, error) {
	return injector.NewSidecar(s.Sidecar, l.deps(rt, streams.StageInjector))
}

// buildEscalation builds the escalation stage with its sinks; with none,
// events stay in REIN_OUTCOMES for platforms that consume them directly.
func buildEscalation(rt *Process, s *Stages, l link) (runner, error) {
	return escalation.New(s.Escalation, escalation.Deps{StageDeps: l.deps(rt, streams.StageEscalation)})
}
