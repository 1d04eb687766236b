package main

import (
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/reinception/rein/agentworker"
	"github.com/reinception/rein/streams/consume"
)

// Each stage flag fills its stage's own Config; a flag the stages share
// fills it in each, from the command line or the environment alike.
func TestServeStageFlagsFillEachStagesConfig(t *testing.T) {
	bind := func() (*cobra.Command, *stageOptions) {
		var so stageOptions
		cmd := &cobra.Command{Use: "serve"}
		so.bind(cmd.Flags(), "rules")
		return cmd, &so
	}

	_, so := bind()
	d, a, e := so.Detector, so.AgentWorker, so.Escalation
	if d.Domain != "airline" || a.Domain != "airline" || d.Timeout != 5*time.Second || a.MaxSteps != 30 ||
		a.Backend != agentworker.BackendDomain || a.Persist != agentworker.PersistStep || a.QuietPeriod != agentworker.DefaultQuietPeriod ||
		a.LiveStepsAfter != agentworker.DefaultLiveStepsAfter || a.StepEvents != agentworker.StepEventsStep {
		t.Errorf("defaults: detector %+v, agent worker %+v", d, a)
	}
	for _, pin := range []time.Duration{d.PinTTL, a.PinTTL, e.PinTTL} {
		if pin != consume.DefaultPinTTL {
			t.Errorf("default pin TTL %s, want %s in every stage", pin, consume.DefaultPinTTL)
		}
	}

	cmd, so := bind()
	t.Setenv("REIN_ACK_WAIT", "3s")
	if err := cmd.Flags().Parse([]string{"--domain", "retail", "--workers", "7", "--pin-ttl", "20s", "--detector-timeout", "2s",
		"--detector-cache", "11", "--agent-cache", "12", "--detector-cache-mib", "3", "--agent-cache-mib", "5", "--agent-data", "/data/retail", "--agent-prompt", "/p.md",
		"--agent-backend", "http", "--agent-tool-url", "http://tools", "--agent-tools", "/tools.json", "--agent-persist", "turn", "--agent-live-steps-after", "5s", "--agent-step-events", "turn",
		"--agent-script", "/s.yaml", "--max-steps", "9", "--speculate", "--agent-quiet-period", "-1s", "--experiments", "/x.yaml",
		"--model-reload", "7s", "--few-shot-labels", "4", "--in-flight-mib", "3"}); err != nil {
		t.Fatal(err)
	}
	if err := applySources(cmd, nil); err != nil {
		t.Fatal(err)
	}
	s := so.runtime()
	d, a, e = s.Detector, s.AgentWorker, s.Escalation
	if d.Domain != "retail" || d.Workers != 7 || d.PinTTL != 20*time.Second || d.AckWait != 3*time.Second ||
		d.Timeout != 2*time.Second || d.MaxConversations != 11 || d.MaxCacheBytes != 3<<20 {
		t.Errorf("detector %+v", d)
	}
	if a.Domain != "retail" || a.Workers != 7 || a.PinTTL != 20*time.Second || a.AckWait != 3*time.Second ||
		a.MaxConversations != 12 || a.MaxCacheBytes != 5<<20 || a.DataDir != "/data/retail" || a.SystemPromptFile != "/p.md" || a.Backend != agentworker.BackendHTTP ||
		a.HTTP.URL != "http://tools" || a.HTTP.ToolsFile != "/tools.json" || a.Persist != agentworker.PersistTurn ||
		a.MaxSteps != 9 || !a.Speculate || a.QuietPeriod != -time.Second || a.LiveStepsAfter != 5*time.Second || a.StepEvents != agentworker.StepEventsTurn {
		t.Errorf("agent worker %+v", a)
	}
	if e.PinTTL != 20*time.Second || e.AckWait != 3*time.Second || e.Workers != 0 {
		t.Errorf("escalation %+v (its workers are its own, not --workers)", e)
	}
	if s.AgentScript != "/s.yaml" || so.experiments != "/x.yaml" || s.Modules.Module != "rules" {
		t.Errorf("agent script %q, experiments %q, module %q", s.AgentScript, so.experiments, s.Modules.Module)
	}
	if in := int64(3 << 20); d.InFlightBytes != in || a.InFlightBytes != in || e.InFlightBytes != in {
		t.Errorf("in-flight bytes: detector %d, agent worker %d, escalation %d; want %d each", d.InFlightBytes, a.InFlightBytes, e.InFlightBytes, in)
	}
	if s.ModelReload != 7*time.Second || s.Modules.FewShot != 4 {
		t.Errorf("model reload %s, few-shot labels %d", s.ModelReload, s.Modules.FewShot)
	}
	if err := cmd.Flags().Set("workers", "many"); err == nil {
		t.Error("--workers many was accepted")
	}
}
