package schemas

import (
	"encoding/json"
	"testing"
)

// hotPayloads are the payloads every turn's consumers validate: the user
// turn (detector), the task (agent worker), a detection, a step.
func hotPayloads(b *testing.B) map[string][]byte {
	b.Helper()
	out := map[string][]byte{}
	for typ, v := range map[string]any{
		TypeTurn: Turn{Role: RoleUser, Text: "I'd like to cancel the second reservation, the one in May.", Turn: 7},
		TypeTask: Task{Turn: 7, UserText: "I'd like to cancel the second reservation, the one in May.", DetectionID: "detection.acme.c-42.7",
			Inception: &Inception{Thought: "The user says 'the one in May' but has two May reservations.", ErrorType: "anaphora", RecoveryTool: ToolAmbiguityReport}},
		TypeDetection: Detection{Turn: 7, UserText: "I'd like to cancel the second reservation.", Module: "rules", LatencyMS: 0.012, Tokens: 0, TaxonomyVersion: "v1"},
		TypeStep:      Step{Turn: 7, Step: 2, Kind: StepToolCall, Name: "get_reservation_details", Arguments: json.RawMessage(`{"reservation_id":"Q7RM2K"}`)},
	} {
		raw, err := json.Marshal(v)
		if err != nil {
			b.Fatal(err)
		}
		out[typ] = raw
	}
	return out
}

func BenchmarkValidate(b *testing.B) {
	for typ, raw := range hotPayloads(b) {
		b.Run(typ, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := Validate(typ, raw); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
