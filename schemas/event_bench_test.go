package schemas

import "testing"

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
