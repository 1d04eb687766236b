package taubench

import (
	"context"
	"errors"
	"testing"
)

// FuzzToolCall: a model names a tool and writes its arguments, and the
// model is not trusted. Whatever it writes, a tool call on either domain
// returns an observation or an error and never panics (a panic would end
// the user's turn as failed instead of telling the model what was wrong);
// a refused call leaves the conversation's database as it was; and a call
// across which Writes stays the same left it as it was (the agent worker
// skips the state write after such a call), on a fresh session and on one
// the same call already ran on.
func FuzzToolCall(f *testing.F) {
	seeds := []struct {
		tool   uint8
		args   string
		retail bool
	}{
		{0, `{"reservation_id": "Q7RM2K"}`, false},
		{3, `{"user_id": "nora_quist_4821", "origin": "JFK", "destination": "LAX", "flight_type": "one_way", "cabin": "economy", "flights": [{"flight_number": "HAT001", "date": "2024-05-20"}], "passengers": [{"first_name": "A", "last_name": "B", "dob": "1990-01-01"}], "payment_methods": [{"payment_id": "credit_card_1", "amount": 100}], "total_baggages": 1, "nonfree_baggages": 0, "insurance": "no"}`, false},
		{7, `{"reservation_id": "Z3PLW8", "cabin": "business", "flights": [{"flight_number": 7, "date": null}], "payment_id": ""}`, false},
		{1, `{"order_id": "#W9000101", "item_ids": ["3092771845"], "new_item_ids": ["3092771846"], "payment_method_id": "gift_card_1"}`, true},
		{5, `{"user_id": "lena_okafor_5530"}`, true},
		{9, `{"order_id": "#W9000102", "reason": "no longer needed"}`, true},
		{2, `{"expression": "(2 + 3) * 4 / 0"}`, true},
		{4, `[1, 2]`, false},
		{6, `{"amount": 1e400, "user_id": {"a": 1}}`, false},
	}
	for _, s := range seeds {
		f.Add(s.tool, []byte(s.args), s.retail)
	}
	domains := map[bool]*Domain{false: sample(f, Airline), true: sample(f, Retail)}
	f.Fuzz(func(t *testing.T, tool uint8, args []byte, retail bool) {
		d := domains[retail]
		tools := d.Tools()
		name := tools[int(tool)%len(tools)].Name
		s := d.NewSession()
		unchangedUnlessWritten(t, s, name, args)
		unchangedUnlessWritten(t, s, name, args)
		before, err := d.NewSession().Marshal()
		if err != nil {
			t.Fatal(err)
		}
		s = d.NewSession()
		out, err := s.Call(context.Background(), name, args)
		if err != nil {
			var te *ToolError
			if errors.As(err, &te) && te.Msg == "" {
				t.Fatalf("%s(%q): a tool error without an observation", name, args)
			}
			after, merr := s.Marshal()
			if merr != nil {
				t.Fatal(merr)
			}
			if string(after) != string(before) {
				t.Fatalf("%s(%q) failed (%v) yet changed the database", name, args, err)
			}
			return
		}
		if out == "" && name != "think" {
			t.Fatalf("%s(%q): an empty observation", name, args)
		}
	})
}

// unchangedUnlessWritten runs one call on s and fails the test when the
// call changed s's marshalled state while its write count stayed.
func unchangedUnlessWritten(t *testing.T, s *Session, name string, args []byte) {
	t.Helper()
	before, err := s.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	w := s.Writes()
	_, cerr := s.Call(context.Background(), name, args)
	after, err := s.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if s.Writes() == w && string(after) != string(before) {
		t.Fatalf("%s(%q) (%v) changed the database without counting a write", name, args, cerr)
	}
}
