package audit

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/reinception/rein/schemas"
)

// The timeline names a human_path record and a release in words, as it
// does escalations, instead of a raw EVENT line.
func TestSummarizeHumanPathAndRelease(t *testing.T) {
	cases := []struct {
		typ       string
		data      any
		kind, has string
	}{
		{schemas.TypeUnanswered, schemas.Unanswered{Turn: 4, Reason: schemas.UnansweredHumanPath, EscalatedTurn: 2, HandoffReason: schemas.ReasonAgentUnavailable},
			KindUnanswered, "belongs to a human since turn 2 (agent_unavailable)"},
		{schemas.TypeUnanswered, schemas.Unanswered{Turn: 1, Reason: schemas.UnansweredSuperseded, SupersededBy: 3}, KindUnanswered, "superseded by turn 3"},
		{schemas.TypeRelease, schemas.Release{Turn: 2, Reason: schemas.ReleaseOperator, HandoffReason: schemas.ReasonAgentUnavailable, By: "alice"},
			KindRelease, "given back to the agent (operator by alice): the handoff of turn 2 (agent_unavailable) ends"},
	}
	for _, tc := range cases {
		b, err := json.Marshal(tc.data)
		if err != nil {
			t.Fatal(err)
		}
		kind, text := Summarize(tc.typ, b)
		if kind != tc.kind || !strings.Contains(text, tc.has) {
			t.Errorf("%s %s: %s %q, want %s containing %q", tc.typ, b, kind, text, tc.kind, tc.has)
		}
	}
}

// The timeline shows a detection's experiment arm (control says what it
// would have planted) and the platform's feedback.
func TestExperimentArmAndFeedbackInTheTimeline(t *testing.T) {
	cases := []struct {
		typ       string
		data      any
		kind, has string
	}{
		{schemas.TypeDetection, schemas.Detection{Turn: 2, Rein: true, ErrorType: "anaphora", Category: "ambiguous", Module: "rules", Experiment: "e1", Arm: schemas.ArmControl},
			KindDetection, "experiment e1, arm control (would have planted)"},
		{schemas.TypeDetection, schemas.Detection{Turn: 2, Module: "rules", Experiment: "e1", Arm: schemas.ArmTreatment}, KindDetection, "clear [rules] experiment e1, arm treatment"},
		{schemas.TypeFeedback, schemas.Feedback{Kind: schemas.FeedbackSatisfaction, Score: 4}, KindFeedback, "satisfaction 4/5"},
		{schemas.TypeFeedback, schemas.Feedback{Kind: schemas.FeedbackLabel, Label: "refund"}, KindFeedback, "label refund"},
	}
	for _, tc := range cases {
		b, err := json.Marshal(tc.data)
		if err != nil {
			t.Fatal(err)
		}
		kind, text := Summarize(tc.typ, b)
		if kind != tc.kind || !strings.Contains(text, tc.has) {
			t.Errorf("%s %s: %s %q, want %s containing %q", tc.typ, b, kind, text, tc.kind, tc.has)
		}
	}
}
