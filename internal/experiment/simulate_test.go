package experiment

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// With an agent that follows planted plans, a few thousand conversations
// find the effect on resolution among activated conversations: both the
// fixed interval and the always-valid sequence exclude 0.
func TestExperimentSimulationFindsTheEffect(t *testing.T) {
	convs := Simulate(SimConfig{Conversations: 4000, Holdout: 0.2, Activation: 0.3, FollowsPlans: true, Seed: 1})
	r := Analyze("sim", "sim", convs, Options{})
	m, ok := Find(r.Activated, PrimaryMetric)
	if !ok {
		t.Fatal("no primary metric")
	}
	if m.Low <= 0 || m.CS == nil || m.CS[0] <= 0 || m.P > r.Alpha {
		t.Errorf("effect not found: %+v", m)
	}
	if tool, _ := Find(r.Activated, "recovery_tool"); tool.Low <= 0 {
		t.Errorf("recovery-tool use did not rise: %+v", tool)
	}
	// Planting where rein acts lowers length, so the guard stays quiet.
	if turns, _ := Find(r.Activated, "user_turns"); turns.Flag != "" {
		t.Errorf("user_turns flagged: %+v", turns)
	}
	var text bytes.Buffer
	if err := r.WriteText(&text); err != nil || !strings.Contains(text.String(), "resolved") {
		t.Errorf("text report: %v\n%s", err, text.String())
	}
	if _, err := json.Marshal(r); err != nil {
		t.Errorf("JSON report: %v", err)
	}
}

// With an agent that ignores plans, the interval covers 0.
func TestExperimentSimulationIgnoredPlansShowNoEffect(t *testing.T) {
	convs := Simulate(SimConfig{Conversations: 4000, Holdout: 0.2, Activation: 0.3, FollowsPlans: false, Seed: 1})
	r := Analyze("sim", "sim", convs, Options{})
	m, _ := Find(r.Activated, PrimaryMetric)
	if m.Low > 0 || m.High < 0 || m.CS == nil || m.CS[0] > 0 || m.CS[1] < 0 {
		t.Errorf("an effect where there is none: %+v", m)
	}
}

// Peeking after every conversation, over 200 A/A experiments, the
// sequential test rejects no more often than alpha.
func TestExperimentAAFalsePositivesWithinAlpha(t *testing.T) {
	fpr := AA(200, SimConfig{Conversations: 2000, Holdout: 0.2, Activation: 0.3, Seed: 100}, Options{Alpha: 0.05})
	t.Logf("A/A false-positive rate over 200 experiments: %.3f", fpr)
	if fpr > 0.05 {
		t.Errorf("false-positive rate %.3f exceeds alpha 0.05", fpr)
	}
}

// A guard metric that moves the wrong way is flagged.
func TestExperimentGuardFlaggedWhenWorse(t *testing.T) {
	var convs []Conversation
	for i := range 400 {
		arm, turns := "treatment", 6+i%3
		if i%2 == 0 {
			arm, turns = "control", 3+i%3
		}
		convs = append(convs, Conversation{ID: string(rune('a' + i%26)), Arm: arm, Activated: true, UserTurns: turns})
	}
	r := Analyze("t", "e", convs, Options{})
	if m, _ := Find(r.Activated, "user_turns"); m.Flag != "worse" || m.Diff < 2.9 || m.Diff > 3.1 {
		t.Errorf("user_turns: %+v", m)
	}
	if m, _ := Find(r.Activated, "escalated"); m.Flag != "" {
		t.Errorf("escalated flagged: %+v", m)
	}
}

// The sample size still needed shrinks as conversations come in and
// grows for a smaller effect.
func TestExperimentNeededSampleSize(t *testing.T) {
	s := NewSeq(0.05, 0.05)
	// Proportion 0.5 in both arms, equal allocation, effect 0.1:
	// (1.96+0.84)^2 * (0.25/0.5+0.25/0.5) / 0.01 = 785.
	if got := s.Needed(0.1, 0.5); got < 780 || got > 790 {
		t.Errorf("needed %d, want about 785", got)
	}
	if s.Needed(0.05, 0.5) <= s.Needed(0.1, 0.5) {
		t.Error("a smaller effect needs no more conversations")
	}
	for i := range 200 {
		s.Add(i%2 == 0, float64(i/2%2))
	}
	if got := s.Needed(0.1, 0.5); got > 600 {
		t.Errorf("after 200 conversations still %d needed", got)
	}
}
