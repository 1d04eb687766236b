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
