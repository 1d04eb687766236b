package pipeline

import (
	"time"

	"github.com/reinception/rein/agentworker"
	"github.com/reinception/rein/detector"
	"github.com/reinception/rein/escalation"
	"github.com/reinception/rein/inception"
	"github.com/reinception/rein/injector"
	"github.com/reinception/rein/internal/experiment"
	"github.com/reinception/rein/internal/llm"
)

// Stages configure the pipeline's stages: each stage's own Config, filled
// by cmd/rein's flags (zero values take the stage's defaults), what builds
// the detector's module and the agent's model, and what a driver hands in
// ready-made.
type Stages struct {
	Detector    detector.Config
	Sidecar     injector.SidecarConfig
	AgentWorker agentworker.Config
	// Escalation's sinks come from rein.yaml's sinks section; with none,
	// events stay in REIN_OUTCOMES.
	Escalation escalation.Config
	// Modules build the detector's inception module, unless Given.Module.
	Modules Modules
	// AgentScript runs the task agent on the scripted simulator with this
	// script; with neither it nor Given.AgentModel, Modules' model
	// settings choose the agent's model.
	AgentScript string
	// ModelReload is how often the detector looks for a promoted model
	// (modelreload.go): the files Modules.GateModel and TypedModel name,
	// or, with ModelPaths, the paths it returns. 0: never.
	ModelReload time.Duration
	// ModelPaths, when set, says at each look where the gate and typed
	// models are now (rein.yaml read again); unset, Modules' paths.
	ModelPaths func() (gate, typed string, err error)
	// Given are collaborators a driver (demo, bench, eval) builds itself;
	// no flag sets them.
	Given Given
}

// Given are the collaborators a driver hands the stages ready-made.
type Given struct {
	// Module is the detector's inception module (Detector.TaxonomyVersion
	// then names its taxonomy).
	Module inception.Module
	// AgentModel is the task agent's model.
	AgentModel llm.Client
	// Experiments assigns holdout arms: the detector records them and
	// plants nothing in control.
	Experiments *experiment.Assigner
}

// detectorModules are the detector's module options: a retail agent's
// data directory holds the store's product catalogue, which the rules
// then check option values against unless Modules.TauBench names one.
func (s *Stages) detectorModules() Modules {
	m := s.Modules
	if m.TauBench == "" && s.Detector.Domain == "retail" && s.AgentWorker.DataDir != "" {
		m.TauBench = s.AgentWorker.DataDir
	}
	return m
}
