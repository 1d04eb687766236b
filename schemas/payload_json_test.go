package schemas

import (
	"encoding/json"
	"reflect"
	"strings"
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
		steps := Steps{Turn: 3, Steps: []Step{step, {Kind: s, Output: s}}}
		for _, v := range []any{turn, &turn, task, &task, Task{UserText: s}, step, &step, Step{Kind: s}, steps, &steps, Steps{Turn: 1}, Steps{Steps: []Step{}}} {
			checkPayload(t, v)
		}
	}
	for _, raw := range []string{`{"a":1}`, `{ "a": 1 }`, `{"a":"<"}`, "{\"a\":\"\u2028\"}", `null`, `{"a":`, `"x"`, "[1,\n2]"} {
		checkPayload(t, Step{Kind: "tool_call", Arguments: json.RawMessage(raw)})
		checkPayload(t, Steps{Turn: 2, Steps: []Step{{Kind: "reply", Output: "x"}, {Kind: "tool_call", Arguments: json.RawMessage(raw)}}})
	}
	if b, ok := appendPayload([]byte("kept"), Steps{Steps: []Step{{Kind: "reply"}, {Kind: "tool_call", Arguments: json.RawMessage(`{ "a": 1 }`)}}}); ok || string(b) != "kept" {
		t.Fatalf("a batch with a step json.Marshal rewrites: got %q, %v; want it declined, the buffer as it was", b, ok)
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
		checkPayload(t, Steps{Turn: n, Steps: []Step{{Turn: n, Step: 1, Kind: a, Name: b, Arguments: raw, Injected: flag}, {Turn: n, Step: 2, Kind: b, Output: a}}})
	})
}

// checkUnmarshal: UnmarshalPayload sets what json.Unmarshal sets, into a
// value that held something before, or leaves it to json.Unmarshal.
func checkUnmarshal(t *testing.T, data []byte) {
	t.Helper()
	prior := func() (*Turn, *Task, *Inception) {
		in := &Inception{Thought: "old", ErrorType: "old"}
		return &Turn{Role: "old", Text: "old", Turn: 9}, &Task{Turn: 9, UserText: "old", DetectionID: "old", Inception: in}, in
	}
	wantTurn, wantTask, wantIn := prior()
	errTurn := json.Unmarshal(data, wantTurn)
	errTask := json.Unmarshal(data, wantTask)
	gotTurn, gotTask, gotIn := prior()
	if readTurn(data, gotTurn) {
		if errTurn != nil || *gotTurn != *wantTurn {
			t.Fatalf("turn %q: read %+v, json.Unmarshal %+v (%v)", data, *gotTurn, *wantTurn, errTurn)
		}
	} else if *gotTurn != *func() *Turn { p, _, _ := prior(); return p }() {
		t.Fatalf("turn %q: declined but set %+v", data, *gotTurn)
	}
	if readTask(data, gotTask) {
		if errTask != nil || !reflect.DeepEqual(gotTask, wantTask) || *gotIn != *wantIn || (gotTask.Inception == gotIn) != (wantTask.Inception == wantIn) {
			t.Fatalf("task %q: read %+v %+v, json.Unmarshal %+v %+v (%v)", data, *gotTask, gotTask.Inception, *wantTask, wantTask.Inception, errTask)
		}
	}
}

func TestUnmarshalPayloadMatchesJSON(t *testing.T) {
	for _, s := range []string{
		`{"role":"user","text":"I'd like to cancel the one in May.","turn":3}`,
		` { "role" : "agent" , "text" : "café ☕" , "turn" : 0 } `,
		`{"role":"user","text":"x"}`, `{}`, `null`, `{"role":null}`, `{"Role":"user"}`, `{"role":"a","role":"b"}`,
		`{"text":"say \"hi\""}`, `{"turn":-1}`, `{"turn":1.5}`, `{"turn":1e2}`, `{"turn":01}`, `{"turn":9007199254740992}`,
		`{"role":"user"} x`, `{"role":"user",}`, "{\"text\":\"bad \xff\"}", "{\"text\":\"tab\there\"}",
		`{"turn":4,"user_text":"which one?","detection_id":"detection.acme.c1.4","inception":{"thought":"ask","error_type":"anaphora","recovery_tool":"ambiguity_report"}}`,
		`{"turn":4,"user_text":"x","inception":null}`, `{"inception":{"thought":"a"},"inception":{"error_type":"b"}}`,
		`{"inception":null,"inception":{"thought":"a"}}`, `{"inception":{"thought":"a"},"inception":null}`, `{"inception":{"other":1}}`,
	} {
		checkUnmarshal(t, []byte(s))
	}
}

func FuzzUnmarshalPayload(f *testing.F) {
	f.Add([]byte(`{"role":"user","text":"hi","turn":1}`))
	f.Add([]byte(`{"turn":4,"user_text":"x","detection_id":"d","inception":{"thought":"t","error_type":"e","recovery_tool":"r"}}`))
	f.Add([]byte(`{"inception":null,"inception":{"thought":"a"}}`))
	f.Fuzz(func(t *testing.T, data []byte) { checkUnmarshal(t, data) })
}

// filled is v with every exported field set to something non-zero, the
// pointers to filled values: a field added to a payload later is then in
// json.Marshal's output, and the hand-written writer and reader must
// carry it too (or decline the payload).
func filled(t *testing.T, v reflect.Value) {
	t.Helper()
	for i := range v.NumField() {
		f := v.Field(i)
		if !v.Type().Field(i).IsExported() {
			continue
		}
		switch {
		case f.Type() == reflect.TypeOf(json.RawMessage(nil)):
			f.SetBytes([]byte(`{"k":[1,"v"]}`))
		case f.Kind() == reflect.String:
			f.SetString("v" + v.Type().Field(i).Name)
		case f.Kind() == reflect.Int:
			f.SetInt(int64(i + 2))
		case f.Kind() == reflect.Bool:
			f.SetBool(true)
		case f.Kind() == reflect.Pointer && f.Type().Elem().Kind() == reflect.Struct:
			p := reflect.New(f.Type().Elem())
			filled(t, p.Elem())
			f.Set(p)
		case f.Kind() == reflect.Slice && f.Type().Elem().Kind() == reflect.Struct:
			e := reflect.New(f.Type().Elem()).Elem()
			filled(t, e)
			f.Set(reflect.Append(reflect.MakeSlice(f.Type(), 0, 2), e, e))
		default:
			t.Fatalf("%s.%s: a %s, which this test cannot fill: teach it, and check appendJSON and the readers carry it", v.Type(), v.Type().Field(i).Name, f.Type())
		}
	}
}

func TestHandWrittenPayloadsCarryEveryField(t *testing.T) {
	for _, v := range []any{&Turn{}, &Task{}, &Step{}, &Steps{}} {
		rv := reflect.ValueOf(v).Elem()
		filled(t, rv)
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := appendPayload(nil, v)
		if !ok || string(got) != string(want) {
			t.Errorf("%s: appendPayload wrote %s (%v), json.Marshal %s", rv.Type(), got, ok, want)
		}
		back := reflect.New(rv.Type())
		if err := UnmarshalPayload(want, back.Interface()); err != nil || !reflect.DeepEqual(back.Elem().Interface(), rv.Interface()) {
			t.Errorf("%s: UnmarshalPayload(%s) = %+v (%v), want %+v", rv.Type(), want, back.Elem().Interface(), err, rv.Interface())
		}
	}
}

// jsonEscapes counts what AppendJSONString adds: exactly for ASCII and
// U+2028/U+2029, so that a step's buffer is sized once.
func TestJSONEscapesCountsWhatTheWriterAdds(t *testing.T) {
	var all strings.Builder
	for c := range 0x80 {
		all.WriteByte(byte(c))
	}
	for _, s := range []string{"", "plain text", `{"a": "b\\c"}`, "<a href=\"x\">&amp;</a>", all.String(), "line\u2028sep\u2029end", "tab\there\r\n"} {
		if got, want := jsonEscapes(s), len(AppendJSONString(nil, s))-2-len(s); got != want {
			t.Errorf("jsonEscapes(%q) = %d, AppendJSONString adds %d", s, got, want)
		}
	}
	// Other characters after 0xE2 are overcounted, never under.
	if s := "€ and ★"; jsonEscapes(s) < len(AppendJSONString(nil, s))-2-len(s) {
		t.Errorf("jsonEscapes(%q) = %d undercounts", s, jsonEscapes(s))
	}
	// A tool's JSON output fits the buffer its step is given.
	st := Step{Turn: 1, Step: 2, Kind: "tool_result", Name: "get_user_details", CallID: "c1", Output: `{"a": "<b>", "c": ["d\n", "e"]}`}
	if b, ok := appendPayload(nil, st); !ok || len(b) > st.size() {
		t.Errorf("step of %d bytes in a buffer sized %d", len(b), st.size())
	}
}
