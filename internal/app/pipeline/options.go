package pipeline

import (
	"time"

	"github.com/reinception/rein/escalation"
	"github.com/reinception/rein/inception"
	"github.com/reinception/rein/internal/experiment"
	"github.com/reinception/rein/internal/llm"
)

// Stages are the options of the pipeline stages (the flags of `rein
// serve`); zero values take each stage's defaults.
type Stages struct {
	Modules         Modules
	Domain          string
	DetectorTimeout time.Duration
	Workers         int

	AgentPrompt, AgentData, AgentBackend, AgentToolURL, AgentTools, AgentScript, AgentPersist string
	MaxSteps                                                                                  int
	// Conversations kept in memory per stage (0: the stage's default).
	DetectorCache, AgentCache int
	// AckWait overrides every stage's ack wait (0: the stages' defaults).
	AckWait time.Duration
	// PinTTL is how soon a standby replica takes over a crashed one's stage.
	PinTTL time.Duration
	// Speculate: the agent worker starts each user turn's first model call
	// while the detector judges it.
	Speculate bool
	// AgentQuietPeriod: an agent_unavailable handoff goes back to the
	// agent after this long (0: the agent worker's default; negative:
	// never automatically).
	AgentQuietPeriod time.Duration
	// InceptionLatency (bench only) makes the inception module take this
	// long per turn: a simulator of an inception model's time.
	InceptionLatency time.Duration
	// AgentModel, when set (demo, bench, eval), is the task agent's model.
	AgentModel llm.Client
	// AgentSystem, when set (eval), is the task agent's system prompt.
	AgentSystem string
	// Module, when set (eval), is the detector's inception module, with
	// TaxonomyVersion recorded in its detections; otherwise Modules
	// builds it.
	Module          inception.Module
	TaxonomyVersion string
	// Sinks configure the escalation stage (rein.yaml's sinks section);
	// with none, events stay in REIN_OUTCOMES.
	Sinks escalation.SinksConfig
	// Experiments, when set, assigns holdout arms (the detector records
	// them; the injector plants nothing in control).
	Experiments *experiment.Assigner
	// ModelReload is how often the detector looks for a promoted model
	// (modelreload.go): the files Modules.GateModel and TypedModel name,
	// or, with ModelPaths, the paths it returns. 0: never.
	ModelReload time.Duration
	// ModelPaths, when set, says at each look where the gate and typed
	// models are now (rein.yaml read again); unset, Modules' paths.
	ModelPaths func() (gate, typed string, err error)
}
