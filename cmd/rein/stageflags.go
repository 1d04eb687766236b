package main

import (
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/pflag"

	"github.com/reinception/rein/agentworker"
	"github.com/reinception/rein/internal/app/pipeline"
	"github.com/reinception/rein/streams/consume"
)

// stageOptions are the flags of the pipeline stages that serve and demo
// run. Each flag fills a field of a stage's own Config in Stages; one that
// every stage shares fills it in each.
type stageOptions struct {
	pipeline.Stages
	// modules are the detector's module flags (Stages.Modules once run).
	modules moduleFlags
	// experiments is the holdout experiments file (docs/experiments.md).
	experiments string
	// The stages' cache budgets in MiB (their Configs count bytes).
	detectorCacheMiB, agentCacheMiB int
	// inFlightMiB bounds each stage's delivered messages in memory.
	inFlightMiB int
}

func (o *stageOptions) bind(fs *pflag.FlagSet, defaultModule string) {
	d, a, e := &o.Detector, &o.AgentWorker, &o.Escalation
	o.modules.bind(fs, defaultModule)
	sharedFlag(fs, "domain", "airline", "the agent's domain (airline or retail): its tools are shown to the inception module and run by the agent", parseString, &d.Domain, &a.Domain)
	fs.DurationVar(&d.Timeout, "detector-timeout", 5*time.Second, "deadline of one inception call; past it the turn proceeds without injection")
	sharedFlag(fs, "workers", 0, "in-flight limit per stage: turns handled at once (0: the default, 4096; turns are scheduled by conversation, so a slow model call never blocks other conversations)", strconv.Atoi, &d.Workers, &a.Workers)
	fs.StringVar(&a.SystemPromptFile, "agent-prompt", "", "the task agent's fixed system prompt file (default: policy.md in --agent-data, or the sample policy)")
	fs.StringVar(&a.DataDir, "agent-data", "", "τ-bench-format data directory of --domain (default: the embedded sample data)")
	fs.StringVar(&a.Backend, "agent-backend", "domain", "tool backend: domain (built-in tools), http (POST each call to --agent-tool-url) or none (sidecar mode: the platform runs its own agent)")
	fs.StringVar(&a.HTTP.URL, "agent-tool-url", "", "URL the http tool backend POSTs calls to")
	fs.StringVar(&a.Persist, "agent-persist", "step", "when the agent's conversation state is written to KV: step (after every tool result that changed the conversation's tool state, and at the turn's end) or turn (once per turn; for the built-in domains, whose side effects live in that state)")
	fs.DurationVar(&a.LiveStepsAfter, "agent-live-steps-after", agentworker.DefaultLiveStepsAfter, "a turn running longer than this publishes its steps as it goes, each after a state write that holds it (a read's step too, whose result is otherwise written with the turn's end); a quicker turn publishes them with its reply. Behind slow models a larger value saves a state write and a round of publishes per read (negative: every step as it goes)")
	fs.StringVar(&a.StepEvents, "agent-step-events", agentworker.StepEventsStep, "how the agent's steps are stored on rein.steps.<tenant>.<conv>: step (one dev.rein.step.v1 each) or turn (a turn that ends before --agent-live-steps-after stores them as one dev.rein.steps.v1; a longer one still stores single steps as it goes). turn stores two or more messages fewer per quick turn; subscribers must read both types")
	fs.StringVar(&a.HTTP.ToolsFile, "agent-tools", "", "OpenAI-style tool list of the http backend's tools")
	fs.StringVar(&o.AgentScript, "agent-script", "", "run the task agent on the scripted simulator with this script (tests, demos, load benchmarks)")
	fs.IntVar(&a.MaxSteps, "max-steps", 30, "model calls per turn before the turn escalates with reason max_steps")
	fs.IntVar(&d.MaxConversations, "detector-cache", 0, "conversations whose surface context the detector keeps in memory (default 100,000; --detector-cache-mib binds first); others are re-read from REIN_TURNS")
	fs.IntVar(&o.detectorCacheMiB, "detector-cache-mib", 0, "MiB of surface contexts the detector keeps in memory, least recently used dropped first (default 32)")
	sharedFlag(fs, "pin-ttl", consume.DefaultPinTTL, "how long a stage replica that stopped pulling (crashed) keeps its pin before a standby replica takes the stage over; live replicas renew their pull every third of it", time.ParseDuration, &d.PinTTL, &a.PinTTL, &e.PinTTL)
	sharedFlag(fs, "ack-wait", 0, "how long a delivered turn stays owned without a heartbeat before it is redelivered: after a crash, how soon the restarted or standby process gets it (0: each stage's default, 30s or more)", time.ParseDuration, &d.AckWait, &a.AckWait, &e.AckWait)
	fs.BoolVar(&a.Speculate, "speculate", false, "speculative inception: the agent worker starts each user turn's first model call as soon as the turn is stored, while the detector judges it, and uses it when nothing is planted (clean turns stop waiting for the inception module; no tool runs before the decision)")
	fs.DurationVar(&a.QuietPeriod, "agent-quiet-period", agentworker.DefaultQuietPeriod, "a conversation handed to a human because the agent could not answer (agent_unavailable) goes back to the agent at its first user turn after this long without such a failure, recorded as dev.rein.release.v1 (negative: never automatically; rein handoff release still can)")
	fs.IntVar(&o.modules.fewShot, "few-shot-labels", 0, "llm and cascade modules: show the model up to this many of each tenant's labelled turns (identifiers masked) in its prompt, read from REIN_LABELS when the detector starts; 0: none")
	fs.DurationVar(&o.ModelReload, "model-reload", 5*time.Second, "how often the detector reads --typed-model and --gate-model again (the files, and their paths when rein.yaml sets them): a changed model takes the next turns without a restart (docs/labels.md); 0: never")
	fs.StringVar(&o.experiments, "experiments", "", "holdout experiments file (per tenant: name, holdout fraction <= 0.5, killed); re-read every few seconds, so the kill switch needs no restart (docs/experiments.md)")
	fs.IntVar(&a.MaxConversations, "agent-cache", 0, "conversations whose agent state the agent worker keeps in memory (default 100,000; --agent-cache-mib binds first); others are re-read from REIN_CONVERSATIONS")
	fs.IntVar(&o.inFlightMiB, "in-flight-mib", 0, "MiB of delivered messages each stage holds, queued or being handled, before its consumer stops pulling (back-pressure instead of a growing backlog; default 64)")
	fs.IntVar(&o.agentCacheMiB, "agent-cache-mib", 0, "MiB of agent states the agent worker keeps in memory, least recently used dropped first (default 128)")
}

// runtime are the stages' configuration as the flags left it, with the
// module flags resolved.
func (o *stageOptions) runtime() pipeline.Stages {
	s := o.Stages
	s.Modules = o.modules.options()
	s.Detector.MaxCacheBytes, s.AgentWorker.MaxCacheBytes = int64(o.detectorCacheMiB)<<20, int64(o.agentCacheMiB)<<20
	inFlight := int64(o.inFlightMiB) << 20
	s.Detector.InFlightBytes, s.AgentWorker.InFlightBytes, s.Escalation.InFlightBytes = inFlight, inFlight, inFlight
	return s
}

// sharedValue is one flag that sets the same setting in several stages'
// configs.
type sharedValue[T int | string | time.Duration] struct {
	to    []*T
	parse func(string) (T, error)
}

// sharedFlag binds one flag to every field of to, each set to def first.
func sharedFlag[T int | string | time.Duration](fs *pflag.FlagSet, name string, def T, usage string, parse func(string) (T, error), to ...*T) {
	for _, p := range to {
		*p = def
	}
	fs.Var(&sharedValue[T]{to: to, parse: parse}, name, usage)
	// pflag's help leaves out a zero default of a type it does not know
	// only when it reads "0" or "": a zero duration reads "0s".
	if f := fs.Lookup(name); f.DefValue == "0s" {
		f.DefValue = "0"
	}
}

func (v *sharedValue[T]) Set(s string) error {
	x, err := v.parse(s)
	if err != nil {
		return err
	}
	for _, p := range v.to {
		*p = x
	}
	return nil
}

func (v *sharedValue[T]) String() string {
	if len(v.to) == 0 {
		return ""
	}
	return fmt.Sprint(*v.to[0])
}

// Type names the value as pflag's help does for its own kinds.
func (v *sharedValue[T]) Type() string {
	switch any(*new(T)).(type) {
	case int:
		return "int"
	case time.Duration:
		return "duration"
	}
	return "string"
}

func parseString(s string) (string, error) { return s, nil }
