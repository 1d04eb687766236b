package run

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/reinception/rein/inception"
	"github.com/reinception/rein/internal/app/eval"
	"github.com/reinception/rein/internal/llm"
)

// Config is one evaluation run.
type Config struct {
	// Scenarios to play (eval.Bundled or eval.LoadScenarios); required.
	Scenarios []eval.Scenario
	// Conditions to play, of eval.Conditions and eval.Ablations (default:
	// the four of eval.Conditions).
	Conditions []string
	// Trials is k, the plays of each scenario per condition (default 3:
	// one trial cannot tell an outcome from run-to-run noise).
	Trials int
	// Trigger is TriggerFixed (default) or TriggerDynamic.
	Trigger string
	// PlantAt is the fixed trigger's planting point: PlantOpening
	// (default) or PlantErrorTurn. Under TriggerDynamic it only decides
	// which turn's activation counts as the scenario's.
	PlantAt string
	// MaxTurns bounds the user turns of one conversation (default 12).
	MaxTurns int
	// Concurrency is how many scenarios one pipeline plays at once
	// (default 4); the trials of one scenario are played in turn.
	Concurrency int
	// TurnTimeout bounds the wait for one turn's outcome (default 2m).
	TurnTimeout time.Duration
	// TauBench is the τ-bench data directory (default
	// eval.DefaultTauBenchDir): tasks, domain data and policies.
	TauBench string
	// Dir is the run directory; required. A rerun in it resumes.
	Dir string
	// Taxonomy is what npi and self-refine tell the agent about (default
	// the embedded taxonomy); use the one rein's module runs with.
	Taxonomy *inception.Taxonomy
	// AgentLabel, InceptionLabel and UserLabel describe the models in
	// run.json ("provider model"); a resumed run must have the same.
	AgentLabel, InceptionLabel, UserLabel string
	// Note is stored in run.json for the report.
	Note string
	// UserPrompt names the user simulator's prompt: UserPromptTauBench
	// (default) or UserPromptRein.
	UserPrompt string
	// AgentTemperature and UserTemperature are sent with every agent and
	// user simulator call and recorded in run.json (defaults
	// DefaultAgentTemperature, DefaultUserTemperature).
	AgentTemperature, UserTemperature *float64
}

// Temperatures a run sends when none is given: a deterministic agent, as
// τ-bench runs it, and a user simulator at the providers' usual 1, so
// repeated trials meet varied customers.
const (
	DefaultAgentTemperature = 0.0
	DefaultUserTemperature  = 1.0
)

func (c *Config) defaults() {
	if len(c.Conditions) == 0 {
		c.Conditions = slices.Clone(eval.Conditions)
	}
	if c.Trials == 0 {
		c.Trials = 3
	}
	if c.Trigger == "" {
		c.Trigger = TriggerFixed
	}
	if c.PlantAt == "" {
		c.PlantAt = PlantOpening
	}
	if c.UserPrompt == "" {
		c.UserPrompt = UserPromptTauBench
	}
	if c.AgentTemperature == nil {
		t := DefaultAgentTemperature
		c.AgentTemperature = &t
	}
	if c.UserTemperature == nil {
		t := DefaultUserTemperature
		c.UserTemperature = &t
	}
	if c.MaxTurns == 0 {
		c.MaxTurns = 12
	}
	if c.Concurrency == 0 {
		c.Concurrency = 4
	}
	if c.TurnTimeout == 0 {
		c.TurnTimeout = 2 * time.Minute
	}
	if c.TauBench == "" {
		c.TauBench = eval.DefaultTauBenchDir
	}
	if c.Taxonomy == nil {
		c.Taxonomy = inception.DefaultTaxonomy()
	}
}

// Validate checks the configuration after defaults.
func (c Config) Validate() error {
	c.defaults()
	for _, cond := range c.Conditions {
		if !validCondition(cond) {
			return fmt.Errorf("%w: condition %q (want %s)", ErrInvalidConfig, cond, strings.Join(append(slices.Clone(eval.Conditions), eval.Ablations...), ", "))
		}
	}
	switch {
	case len(c.Scenarios) == 0:
		return fmt.Errorf("%w: no scenarios", ErrInvalidConfig)
	case c.Dir == "":
		return fmt.Errorf("%w: no run directory", ErrInvalidConfig)
	case c.Trials < 1:
		return fmt.Errorf("%w: trials %d must be at least 1", ErrInvalidConfig, c.Trials)
	case c.Trigger != TriggerFixed && c.Trigger != TriggerDynamic:
		return fmt.Errorf("%w: trigger %q (want fixed or dynamic)", ErrInvalidConfig, c.Trigger)
	case c.PlantAt != PlantOpening && c.PlantAt != PlantErrorTurn:
		return fmt.Errorf("%w: plant-at %q (want %s or %s)", ErrInvalidConfig, c.PlantAt, PlantOpening, PlantErrorTurn)
	case c.UserPrompt != UserPromptTauBench && c.UserPrompt != UserPromptRein:
		return fmt.Errorf("%w: user prompt %q (want %s or %s)", ErrInvalidConfig, c.UserPrompt, UserPromptTauBench, UserPromptRein)
	case *c.AgentTemperature < 0 || *c.UserTemperature < 0:
		return fmt.Errorf("%w: temperatures %g and %g must not be negative", ErrInvalidConfig, *c.AgentTemperature, *c.UserTemperature)
	case c.MaxTurns < 3:
		return fmt.Errorf("%w: max turns %d must be at least 3 (the opening has two user turns)", ErrInvalidConfig, c.MaxTurns)
	case c.Concurrency < 1:
		return fmt.Errorf("%w: concurrency %d must be at least 1", ErrInvalidConfig, c.Concurrency)
	case c.TurnTimeout < 0:
		return fmt.Errorf("%w: turn timeout %s is negative", ErrInvalidConfig, c.TurnTimeout)
	}
	return nil
}

// Deps are what a run plays with.
type Deps struct {
	// Start starts a pipeline (cmd/rein's runtime); required.
	Start Starter
	// Module is rein's inception module, required when the rein
	// condition is played; the trigger mode is applied around it.
	Module inception.Module
	// Agent is the agent's model; nil runs the offline agent simulator
	// (a scripted stand-in that follows a planted plan, see simAgent).
	Agent llm.Client
	// User is the user simulator's model; nil runs the scripted one
	// (SimUser).
	User llm.Client
	// Progress, when set, is told of every finished play.
	Progress *Progress
	// Logger (default: discard).
	Logger *slog.Logger
}
