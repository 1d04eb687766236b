package main

import (
	_ "embed"
	"fmt"

	"github.com/reinception/rein/agentworker"
	"github.com/reinception/rein/internal/llm"
	"github.com/reinception/rein/streams"
)

//go:embed demodata/airline-policy.md
var sampleAirlinePolicy string

func init() { registerStage("agentworker", newAgentWorkerStage) }

func newAgentWorkerStage(rt *proc) (stageRunner, error) {
	l, err := rt.stageLink("agentworker")
	if err != nil {
		return nil, err
	}
	o := rt.stages
	cfg := agentworker.Config{
		Domain: o.domain, DataDir: o.agentData, SystemPromptFile: o.agentPrompt,
		Backend: o.agentBackend, MaxSteps: o.maxSteps, Workers: o.workers, Persist: o.agentPersist, MaxConversations: o.agentCache, AckWait: o.ackWait, PinTTL: o.pinTTL, Speculate: o.speculate,
		HTTP: agentworker.HTTPConfig{URL: o.agentToolURL, ToolsFile: o.agentTools},
	}
	if o.agentSystem != "" {
		cfg.SystemPrompt = o.agentSystem
	}
	key, err := rt.taskKey()
	if err != nil {
		return nil, err
	}
	deps := agentworker.Deps{StageDeps: streams.StageDeps{JS: l.js, Publisher: l.pub, Logger: rt.log.With("stage", "agentworker"), Registerer: rt.reg}, TaskKey: key}
	if cfg.Backend == agentworker.BackendNone {
		return agentworker.New(cfg, deps)
	}
	// Without a data dir the agent worker runs its domain's sample data
	// (agentworker falls back to it); the sample airline's policy is the
	// prompt unless one is given.
	if cfg.DataDir == "" && cfg.Backend != agentworker.BackendHTTP && cfg.SystemPromptFile == "" && o.domain == "airline" {
		cfg.SystemPrompt = sampleAirlinePolicy
	}
	switch {
	case o.agentModel != nil:
		deps.Model = o.agentModel
	case o.agentScript != "":
		c, err := llm.New(llm.Config{Provider: llm.ProviderScripted, Script: o.agentScript}, rt.reg)
		if err != nil {
			return nil, err
		}
		deps.Model = c
	default:
		lc := o.modules.llmConfig()
		if lc.Provider == "" {
			// No model configured: rein still serves (detections, tasks and
			// the sidecar answers), and the platform runs its own agent.
			rt.log.Warn("agentworker: no model configured (REIN_LLM_PROVIDER or --agent-script); running in sidecar mode, the platform's own agent consumes rein.tasks.>")
			cfg.Backend = agentworker.BackendNone
			return agentworker.New(cfg, deps)
		}
		lc.Endpoint = llm.PurposeAgent
		c, err := llm.New(lc, rt.reg)
		if err != nil {
			return nil, fmt.Errorf("agent model: %w", err)
		}
		deps.Model = c
		rt.watchModel(llm.PurposeAgent, c)
	}
	return agentworker.New(cfg, deps)
}
