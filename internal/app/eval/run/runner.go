package run

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/reinception/rein/agentworker/taubench"
	"github.com/reinception/rein/internal/app/eval"
	"github.com/reinception/rein/internal/llm"
)

// Summary is what a run did.
type Summary struct {
	// Played plays finished now, Resumed ones found finished, Failed ones
	// that could not be played (a rerun retries them).
	Played, Resumed, Failed int
}

// Run plays every scenario under every condition Trials times through
// pipelines started with deps.Start (one per condition and domain), and
// records each finished play in cfg.Dir. Plays already recorded there are
// skipped, so a killed run continues where it stopped. A play that fails
// is reported in the returned error after the others were played.
func Run(ctx context.Context, cfg Config, deps Deps) (Summary, error) {
	var sum Summary
	if err := cfg.Validate(); err != nil {
		return sum, err
	}
	cfg.defaults()
	switch {
	case deps.Start == nil:
		return sum, fmt.Errorf("%w: no pipeline starter", ErrInvalidConfig)
	case deps.Module == nil && containsRein(cfg.Conditions):
		return sum, fmt.Errorf("%w: the rein condition needs an inception module", ErrInvalidConfig)
	}
	log := deps.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	user := deps.User
	if user == nil {
		var err error
		if user, err = SimUser(); err != nil {
			return sum, err
		}
	}
	user = Estimating(user)
	tasks := eval.NewTaskSource(cfg.TauBench)
	if err := tasks.Check(cfg.Scenarios); err != nil {
		return sum, fmt.Errorf("%w: scenarios: %w", ErrInvalidConfig, err)
	}
	set, err := scenariosJSONL(cfg.Scenarios)
	if err != nil {
		return sum, err
	}
	rd, err := openRunDir(cfg.Dir, Manifest{
		Conditions: cfg.Conditions, Trials: cfg.Trials, Trigger: cfg.Trigger, PlantAt: cfg.PlantAt, MaxTurns: cfg.MaxTurns,
		Scenarios: len(cfg.Scenarios), Agent: cfg.AgentLabel, Inception: cfg.InceptionLabel, User: cfg.UserLabel, Note: cfg.Note,
		UserPrompt: cfg.UserPrompt, AgentTemperature: cfg.AgentTemperature, UserTemperature: cfg.UserTemperature,
	}, set)
	if err != nil {
		return sum, err
	}
	// No pipeline runs yet: storage found here is a killed run's, whether
	// or not this run needs that condition's pipeline again.
	if err := os.RemoveAll(filepath.Join(cfg.Dir, PipelinesDir)); err != nil {
		return sum, fmt.Errorf("clearing a killed run's pipelines: %w", err)
	}
	total := len(cfg.Conditions) * len(cfg.Scenarios) * cfg.Trials
	for _, c := range cfg.Conditions {
		for _, s := range cfg.Scenarios {
			for k := 1; k <= cfg.Trials; k++ {
				if rd.isDone(playKey{c, s.ID, k}) {
					sum.Resumed++
				}
			}
		}
	}
	deps.Progress.Begin(total, sum.Resumed)
	var errs []error
	for _, cond := range cfg.Conditions {
		for _, domain := range domainsOf(cfg.Scenarios) {
			var todo []eval.Scenario
			for _, s := range cfg.Scenarios {
				if s.Domain == domain && pendingTrials(rd, cond, s, cfg.Trials) > 0 {
					todo = append(todo, s)
				}
			}
			if len(todo) == 0 {
				continue
			}
			deps.Progress.Stage(cond + " · " + domain)
			played, failed, err := runPipeline(ctx, cfg, deps, user, tasks, rd, cond, domain, todo)
			sum.Played += played
			sum.Failed += failed
			if err != nil {
				errs = append(errs, err)
			}
			if ctx.Err() != nil {
				return sum, errors.Join(append(errs, ctx.Err())...)
			}
		}
	}
	_ = os.Remove(filepath.Join(cfg.Dir, PipelinesDir)) // when empty: every pipeline closed
	deps.Progress.Finish()
	log.Info("eval run finished", "played", sum.Played, "resumed", sum.Resumed, "failed", sum.Failed)
	return sum, errors.Join(errs...)
}

// runPipeline starts one condition's pipeline for one domain and plays
// the scenarios' pending trials on it, Concurrency scenarios at once.
func runPipeline(ctx context.Context, cfg Config, deps Deps, user llm.Client, tasks *eval.TaskSource, rd *runDir,
	cond, domain string, todo []eval.Scenario) (played, failed int, err error) {
	dataDir := filepath.Join(cfg.TauBench, domain)
	dom, err := taubench.Load(domain, dataDir)
	if err != nil {
		return 0, 0, fmt.Errorf("%s %s: %w", cond, domain, err)
	}
	policy, err := os.ReadFile(filepath.Join(dataDir, "policy.md"))
	if err != nil {
		return 0, 0, fmt.Errorf("%s %s: the agent's policy: %w", cond, domain, err)
	}
	tp := newTap()
	spec := Spec{Condition: cond, Domain: domain, DataDir: dataDir, SystemPrompt: string(policy),
		Module: silentModule{}, TaxonomyVersion: cfg.Taxonomy.Version}
	if cond == eval.ConditionNPI {
		spec.SystemPrompt = NPIPrompt(string(policy), cfg.Taxonomy)
	}
	if conditionUsesModule(cond) {
		spec.Module = triggerModule{inner: deps.Module, fixed: cfg.Trigger == TriggerFixed, tap: tp, atErrorTurn: cfg.PlantAt == PlantErrorTurn}
	}
	var agent llm.Client = simAgent{tap: tp}
	if deps.Agent != nil {
		agent = deps.Agent
	}
	agent = Estimating(temperatureClient{Client: agent, temperature: *cfg.AgentTemperature})
	if cond == eval.ConditionReinNoTool {
		agent = withholdClient{Client: agent, withheld: recoveryToolNames(cfg.Taxonomy)}
	}
	if cond == eval.ConditionSelfRefine {
		agent = refineClient{Client: agent, tap: tp, prompt: selfRefinePrompt(cfg.Taxonomy)}
	}
	spec.Agent = openingClient{Client: meterClient{Client: agent, tap: tp}, tap: tp}
	spec.StorageDir = filepath.Join(cfg.Dir, PipelinesDir, cond+"-"+domain)
	if err := os.RemoveAll(spec.StorageDir); err != nil {
		return 0, 0, fmt.Errorf("%s %s: %w", cond, domain, err)
	}
	pipe, err := deps.Start(ctx, spec)
	if err != nil {
		return 0, 0, fmt.Errorf("%s %s: starting the pipeline: %w", cond, domain, err)
	}
	defer func() {
		if cerr := pipe.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("%s %s: stopping the pipeline: %w", cond, domain, cerr)
		}
	}()
	pl := &player{pipe: pipe, tap: tp, user: userSim{client: user, prompt: cfg.UserPrompt, temperature: *cfg.UserTemperature}, domain: dom, maxTurns: cfg.MaxTurns, atErrorTurn: cfg.PlantAt == PlantErrorTurn}
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	queue := make(chan eval.Scenario)
	for range min(cfg.Concurrency, len(todo)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for s := range queue {
				for k := 1; k <= cfg.Trials; k++ {
					if rd.isDone(playKey{cond, s.ID, k}) || ctx.Err() != nil {
						continue
					}
					perr := playOne(ctx, cfg, pl, tasks, rd, cond, s, k)
					mu.Lock()
					if perr != nil {
						failed++
						errs = append(errs, perr)
					} else {
						played++
					}
					mu.Unlock()
					deps.Progress.Done(perr != nil)
				}
			}
		}()
	}
feed:
	for _, s := range todo {
		select {
		case queue <- s:
		case <-ctx.Done():
			break feed
		}
	}
	close(queue)
	wg.Wait()
	return played, failed, errors.Join(errs...)
}

func playOne(ctx context.Context, cfg Config, pl *player, tasks *eval.TaskSource, rd *runDir, cond string, s eval.Scenario, trial int) error {
	task, err := tasks.Task(s)
	if err != nil {
		return err
	}
	tctx, cancel := context.WithTimeout(ctx, cfg.TurnTimeout*time.Duration(cfg.MaxTurns))
	defer cancel()
	p, err := pl.play(tctx, cond, s, task, trial, cfg.TurnTimeout)
	if err != nil {
		return fmt.Errorf("%s: %w", cond, err)
	}
	return rd.record(p)
}

func pendingTrials(rd *runDir, cond string, s eval.Scenario, trials int) int {
	n := 0
	for k := 1; k <= trials; k++ {
		if !rd.isDone(playKey{cond, s.ID, k}) {
			n++
		}
	}
	return n
}

func domainsOf(set []eval.Scenario) []string {
	var out []string
	for _, d := range []string{taubench.Airline, taubench.Retail} {
		for _, s := range set {
			if s.Domain == d {
				out = append(out, d)
				break
			}
		}
	}
	return out
}

func containsRein(conds []string) bool {
	for _, c := range conds {
		if c == eval.ConditionRein {
			return true
		}
	}
	return false
}

// scenariosJSONL renders the scenario set as stored in the run directory.
func scenariosJSONL(set []eval.Scenario) ([]byte, error) {
	var b bytes.Buffer
	for _, s := range set {
		line, err := json.Marshal(s)
		if err != nil {
			return nil, fmt.Errorf("%w: scenario %s: %w", ErrInvalidConfig, s.ID, err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.Bytes(), nil
}
