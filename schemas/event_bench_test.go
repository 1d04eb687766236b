package schemas

import (
	"encoding/json"
	"testing"
)

// BenchmarkBuildEvent times what a stage spends on each output before it is
// encoded: the payload marshalled and the CloudEvent's attributes set
// (BuildEvent, without the schema check consumers do), and NewEvent, which
// also checks the payload against its schema.
func BenchmarkBuildEvent(b *testing.B) {
	m := Meta{Tenant: "acme", Conversation: "c-42", Turn: 7}
	step := Step{Turn: 7, Step: 2, Kind: "tool_call", Name: "get_reservation_details", Arguments: []byte(`{"reservation_id":"Q7RM2K"}`)}
	for _, c := range []struct {
		name  string
		build func(typ, id, source string, m Meta, data any) error
	}{
		{"BuildEvent", func(typ, id, source string, m Meta, data any) error {
			_, err := BuildEvent(typ, id, source, m, data)
			return err
		}},
		{"NewEvent", func(typ, id, source string, m Meta, data any) error {
			_, err := NewEvent(typ, id, source, m, data)
			return err
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := c.build(TypeStep, "step-acme-c-42-7-2", "", m, step); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkUnmarshalPayload times reading a task's data, as the agent
// worker does for each task: json.Unmarshal, and UnmarshalPayload.
func BenchmarkUnmarshalPayload(b *testing.B) {
	data := []byte(`{"turn":4,"user_text":"I want to cancel that one, the trip in May.","detection_id":"detection.acme.c-42.4","inception":{"thought":"The user says that one without naming a reservation: report the ambiguity, then ask which reservation is meant.","error_type":"anaphora","recovery_tool":"ambiguity_report"}}`)
	for _, c := range []struct {
		name string
		read func([]byte, any) error
	}{{"json", json.Unmarshal}, {"UnmarshalPayload", UnmarshalPayload}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var t Task
				if err := c.read(data, &t); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
