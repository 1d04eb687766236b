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

// BenchmarkBuildToolResult times Build of a tool_result step whose output
// is a tool's JSON answer, with a quote every few bytes to escape.
func BenchmarkBuildToolResult(b *testing.B) {
	m := Meta{Tenant: "acme", Conversation: "c-42", Turn: 7}
	out := `{"reservation_id": "Q7RM2K", "user_id": "mia_li_3668", "origin": "JFK", "destination": "SEA", "flight_type": "round_trip", "cabin": "economy", ` +
		`"flights": [{"origin": "JFK", "destination": "SEA", "flight_number": "HAT136", "date": "2024-05-20", "price": 1011}, ` +
		`{"origin": "SEA", "destination": "JFK", "flight_number": "HAT021", "date": "2024-05-22", "price": 1068}], ` +
		`"passengers": [{"first_name": "Mia", "last_name": "Li", "dob": "1990-04-05"}], "payment_history": [{"payment_id": "credit_card_4421486", "amount": 2079}], ` +
		`"created_at": "2024-05-05T06:47:23", "total_baggages": 1, "nonfree_baggages": 0, "insurance": "no"}`
	step := Step{Turn: 7, Step: 3, Kind: "tool_result", Name: "get_reservation_details", CallID: "call_1", Output: out}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Build(TypeStep, "step.acme.c-42.7.3", "", m, step); err != nil {
			b.Fatal(err)
		}
	}
}
