package schemas

import (
	"encoding/json"
	"testing"
)

// tricky are strings encoding/json escapes in every way it has.
var tricky = []string{"", "plain", `say "hi" \ now`, "tab\there\nline\r\b\f", "\x00\x01\x1f\x7f", "<b>&amp;</b>",
	"café ☕ 𝄞", "\u2028 and \u2029", "bad \xff utf-8 \xe2\x80", "\xed\xa0\x80 surrogate", "I'd like to cancel the one in May."}

// checkPayload: appendPayload writes what json.Marshal writes, or declines.
func checkPayload(t *testing.T, v any) {
	t.Helper()
	want, err := json.Marshal(v)
	got, ok := appendPayload(nil, v)
	if !ok {
		return
	}
	if err != nil {
		t.Fatalf("appendPayload wrote %s where json.Marshal fails: %v", got, err)
	}
	if string(got) != string(want) {
		t.Fatalf("appendPayload\n got %s\nwant %s", got, want)
	}
}

func TestAppendPayloadMatchesMarshal(t *testing.T) {
	for _, s := range tricky {
		turn := Turn{Role: RoleUser, Text: s, Turn: 7}
		task := Task{Turn: 1 << 40, UserText: s, DetectionID: s, Inception: &Inception{Thought: s, ErrorType: s, RecoveryTool: s}}
		step := Step{Turn: 3, Step: -1, Kind: s, Name: s, CallID: s, Output: s, Injected: true, Arguments: json.RawMessage(`{"a":[1,2.5e3,null,true],"b":"x"}`)}
		for _, v := range []any{turn, &turn, task, &task, Task{UserText: s}, step, &step, Step{Kind: s}} {
			checkPayload(t, v)
		}
	}
	for _, raw := range []string{`{"a":1}`, `{ "a": 1 }`, `{"a":"<"}`, "{\"a\":\"\u2028\"}", `null`, `{"a":`, `"x"`, "[1,\n2]"} {
		checkPayload(t, Step{Kind: "tool_call", Arguments: json.RawMessage(raw)})
	}
	var nilTurn *Turn
	if _, ok := appendPayload(nil, nilTurn); ok {
		t.Fatal("a nil *Turn is json.Marshal's (null)")
	}
	if _, ok := appendPayload(nil, Step{Kind: "tool_call", Arguments: json.RawMessage(`{"a":1}`)}); !ok {
		t.Fatal("a step with plain arguments was declined")
	}
}

func FuzzAppendPayload(f *testing.F) {
	for _, s := range tricky {
		f.Add(s, s, 7, []byte(`{"reservation_id":"Q7RM2K"}`), true)
	}
	f.Fuzz(func(t *testing.T, a, b string, n int, raw []byte, flag bool) {
		var in *Inception
		if flag {
			in = &Inception{Thought: a, ErrorType: b, RecoveryTool: a + b}
		}
		checkPayload(t, Turn{Role: a, Text: b, Turn: n})
		checkPayload(t, &Task{Turn: n, UserText: a, DetectionID: b, Inception: in})
		checkPayload(t, Step{Turn: n, Step: n / 2, Kind: a, Name: b, CallID: a, Arguments: raw, Output: b, Injected: flag})
	})
}
