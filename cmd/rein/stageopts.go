package main

import (
	"time"

	"github.com/spf13/pflag"

	"github.com/reinception/rein/inception"
	"github.com/reinception/rein/internal/llm"
	"github.com/reinception/rein/streams"
)

// stageOptions are the flags of the pipeline stages that serve and demo run.
type stageOptions struct {
	modules         moduleFlags
	domain          string
	detectorTimeout time.Duration
	workers         int

	agentPrompt, agentData, agentBackend, agentToolURL, agentTools, agentScript, agentPersist string
	maxSteps                                                                                  int
	// fuseInjector: the detector publishes each task with its detection
	// when both stages run in this process.
	fuseInjector bool
	// Conversations kept in memory per stage (0: the stage's default).
	detectorCache, agentCache int
	// ackWait overrides every stage's ack wait (0: the stages' defaults).
	ackWait time.Duration
	// pinTTL is how soon a standby replica takes over a crashed one's stage.
	pinTTL time.Duration
	// speculate: the agent worker starts each user turn's first model call
	// while the detector judges it.
	speculate bool
	// inceptionLatency (bench only) makes the inception module take this
	// long per turn: a simulator of an inception model's time.
	inceptionLatency time.Duration
	// agentModel, when set (demo, bench, eval), is the task agent's model.
	agentModel llm.Client
	// agentSystem, when set (eval), is the task agent's system prompt.
	agentSystem string
	// module, when set (eval), is the detector's inception module, with
	// taxonomyVersion recorded in its detections.
	module          inception.Module
	taxonomyVersion string
}

func (o *stageOptions) bind(fs *pflag.FlagSet, defaultModule string) {
	o.modules.bind(fs, defaultModule)
	fs.StringVar(&o.domain, "domain", "airline", "the agent's domain (airline or retail): its tools are shown to the inception module and run by the agent")
	fs.DurationVar(&o.detectorTimeout, "detector-timeout", 5*time.Second, "deadline of one inception call; past it the turn proceeds without injection")
	fs.IntVar(&o.workers, "workers", 0, "in-flight limit per stage: turns handled at once (0: the default, 4096; turns are scheduled by conversation, so a slow model call never blocks other conversations)")
	fs.StringVar(&o.agentPrompt, "agent-prompt", "", "the task agent's fixed system prompt file (default: policy.md in --agent-data, or the sample policy)")
	fs.StringVar(&o.agentData, "agent-data", "", "τ-bench-format data directory of --domain (default: the embedded sample data)")
	fs.StringVar(&o.agentBackend, "agent-backend", "domain", "tool backend: domain (built-in tools), http (POST each call to --agent-tool-url) or none (sidecar mode: the platform runs its own agent)")
	fs.StringVar(&o.agentToolURL, "agent-tool-url", "", "URL the http tool backend POSTs calls to")
	fs.StringVar(&o.agentPersist, "agent-persist", "step", "when the agent's conversation state is written to KV: step (after every tool result) or turn (once per turn; for the built-in domains, whose side effects live in that state)")
	fs.StringVar(&o.agentTools, "agent-tools", "", "OpenAI-style tool list of the http backend's tools")
	fs.StringVar(&o.agentScript, "agent-script", "", "run the task agent on the scripted simulator with this script (tests, demos, load benchmarks)")
	fs.BoolVar(&o.fuseInjector, "fuse-injector", true, "when the detector and the injector run in this process, the detector publishes each turn's task together with its detection (one delivery fewer per turn); false runs the injector as its own consumer of REIN_DETECTIONS")
	fs.IntVar(&o.maxSteps, "max-steps", 30, "model calls per turn before the turn escalates with reason max_steps")
	fs.IntVar(&o.detectorCache, "detector-cache", 0, "conversations whose surface context the detector keeps in memory (default 10,000); others are re-read from REIN_TURNS")
	fs.DurationVar(&o.pinTTL, "pin-ttl", streams.DefaultPinTTL, "how long a stage replica that stopped pulling (crashed) keeps its pin before a standby replica takes the stage over; live replicas renew their pull every third of it")
	fs.DurationVar(&o.ackWait, "ack-wait", 0, "how long a delivered turn stays owned without a heartbeat before it is redelivered: after a crash, how soon the restarted or standby process gets it (0: each stage's default, 30s or more)")
	fs.BoolVar(&o.speculate, "speculate", false, "speculative inception: the agent worker starts each user turn's first model call as soon as the turn is stored, while the detector judges it, and uses it when nothing is planted (clean turns stop waiting for the inception module; no tool runs before the decision)")
	fs.IntVar(&o.agentCache, "agent-cache", 0, "conversations whose agent state the agent worker keeps in memory (default 10,000); others are re-read from REIN_CONVERSATIONS")
}
