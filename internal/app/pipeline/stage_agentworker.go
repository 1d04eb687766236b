package pipeline

import (
	"cmp"
	_ "embed"
	"fmt"

	"github.com/reinception/rein/agentworker"
	"github.com/reinception/rein/agentworker/taubench"
	"github.com/reinception/rein/internal/llm"
	"github.com/reinception/rein/streams"
)

//go:embed sample-airline-policy.md
var sampleAirlinePolicy string

// buildAgentWorker builds the agent worker with the model Given, the
// scripted simulator, or the one Modules' model settings name; with none
// it runs in sidecar mode.
func buildAgentWorker(rt *Process, s *Stages, l link) (runner, error) {
	cfg := s.AgentWorker
	key, err := rt.taskKey()
	if err != nil {
		return nil, err
	}
	deps := agentworker.Deps{StageDeps: l.deps(rt, streams.StageAgentWorker), TaskKey: key}
	if cfg.Backend == agentworker.BackendNone {
		return agentworker.New(cfg, deps)
	}
	// Without a data dir the agent worker runs its domain's sample data
	// (agentworker falls back to it); the sample airline's policy is the
	// prompt unless one is given.
	if cfg.DataDir == "" && cfg.Backend != agentworker.BackendHTTP && cfg.SystemPromptFile == "" && cfg.SystemPrompt == "" &&
		cmp.Or(cfg.Domain, taubench.Airline) == taubench.Airline {
		cfg.SystemPrompt = sampleAirlinePolicy
	}
	switch {
	case s.Given.AgentModel != nil:
		deps.Model = s.Given.AgentModel
	case s.AgentScript != "":
		c, err := llm.New(llm.Config{Provider: llm.ProviderScripted, Script: s.AgentScript}, rt.Reg)
		if err != nil {
			return nil, err
		}
		deps.Model = c
	default:
		lc := s.Modules.LLMConfig()
		if lc.Provider == "" {
			// No model configured: rein still serves (detections, tasks and
			// the sidecar answers), and the platform runs its own agent.
			rt.Log.Warn("agentworker: no model configured (REIN_LLM_PROVIDER or --agent-script); running in sidecar mode, the platform's own agent consumes rein.tasks.>")
			cfg.Backend = agentworker.BackendNone
			return agentworker.New(cfg, deps)
		}
		lc.Endpoint = llm.PurposeAgent
		c, err := llm.New(lc, rt.Reg)
		if err != nil {
			return nil, fmt.Errorf("agent model: %w", err)
		}
		deps.Model = c
		rt.watchModel(llm.PurposeAgent, c)
	}
	return agentworker.New(cfg, deps)
}
