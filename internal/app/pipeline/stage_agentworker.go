package pipeline

import (
	_ "embed"
	"fmt"

	"github.com/reinception/rein/agentworker"
	"github.com/reinception/rein/agentworker/taubench"
	"github.com/reinception/rein/internal/llm"
	"github.com/reinception/rein/streams"
)

//go:embed sample-airline-policy.md
var sampleAirlinePolicy string

func init() { registerStage(streams.StageAgentWorker, newAgentWorkerStage) }

func newAgentWorkerStage(rt *Process) (stageRunner, error) {
	l, err := rt.stageLink(streams.StageAgentWorker)
	if err != nil {
		return nil, err
	}
	o := rt.stages
	cfg := agentworker.Config{
		Domain: o.Domain, DataDir: o.AgentData, SystemPromptFile: o.AgentPrompt,
		Backend: o.AgentBackend, MaxSteps: o.MaxSteps, Workers: o.Workers, Persist: o.AgentPersist, MaxConversations: o.AgentCache, MaxCacheBytes: int64(o.AgentCacheMiB) << 20, AckWait: o.AckWait, PinTTL: o.PinTTL, Speculate: o.Speculate,
		QuietPeriod: o.AgentQuietPeriod, HTTP: agentworker.HTTPConfig{URL: o.AgentToolURL, ToolsFile: o.AgentTools},
	}
	if o.AgentSystem != "" {
		cfg.SystemPrompt = o.AgentSystem
	}
	key, err := rt.taskKey()
	if err != nil {
		return nil, err
	}
	deps := agentworker.Deps{StageDeps: streams.StageDeps{JS: l.js, Publisher: l.pub, Logger: rt.Log.With("stage", streams.StageAgentWorker), Registerer: rt.Reg}, TaskKey: key}
	if cfg.Backend == agentworker.BackendNone {
		return agentworker.New(cfg, deps)
	}
	// Without a data dir the agent worker runs its domain's sample data
	// (agentworker falls back to it); the sample airline's policy is the
	// prompt unless one is given.
	if cfg.DataDir == "" && cfg.Backend != agentworker.BackendHTTP && cfg.SystemPromptFile == "" && o.Domain == taubench.Airline {
		cfg.SystemPrompt = sampleAirlinePolicy
	}
	switch {
	case o.AgentModel != nil:
		deps.Model = o.AgentModel
	case o.AgentScript != "":
		c, err := llm.New(llm.Config{Provider: llm.ProviderScripted, Script: o.AgentScript}, rt.Reg)
		if err != nil {
			return nil, err
		}
		deps.Model = c
	default:
		lc := o.Modules.LLMConfig()
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
