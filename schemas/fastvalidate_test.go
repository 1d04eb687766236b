package schemas

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// libraryValid is the reference: the library's own reading and check.
func libraryValid(t testing.TB, typ string, data []byte) bool {
	t.Helper()
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return false
	}
	return compiled[typ].Validate(inst) == nil
}

// fastTypes are the schemas the fast path must cover: every event type on
// a stage's hot path. A schema change that takes one out of the subset
// fails here rather than slowing every hop unnoticed.
var fastTypes = []string{TypeTurn, TypeDetection, TypeTask, TypeStep, TypeSteps, TypeEscalation, TypeReport,
	TypeUnanswered, TypeRelease, TypeRedrive, TypeFeedback, TypeLabel, TypeHandoffTimeout, DocSidecarAnswer, DocHandoffItem}

func TestFastCoversHotTypes(t *testing.T) {
	compileOnce.Do(compileAll)
	for _, typ := range fastTypes {
		if fast[typ] == nil {
			t.Errorf("%s: its schema is outside the fast validator's subset", typ)
		}
	}
}

// agree checks the fast verdict against the library's on one document:
// valid only when the library says valid, invalid only when it says
// invalid.
func agree(t testing.TB, typ string, data []byte) verdict {
	t.Helper()
	f := fast[typ]
	if f == nil {
		return vUnsure
	}
	got := fastCheck(f, data)
	want := libraryValid(t, typ, data)
	if got == vValid && !want || got == vInvalid && want {
		t.Errorf("%s %s: fast says %v, library says valid=%v", typ, data, got, want)
	}
	return got
}

func TestFastAgreesWithLibrary(t *testing.T) {
	compileOnce.Do(compileAll)
	cases := []struct {
		typ  string
		data string
		want verdict // what the fast path must answer
	}{
		{TypeTurn, `{"role":"user","text":"hi","turn":1}`, vValid},
		{TypeTurn, ` {"role":"agent","text":"x"} `, vValid},
		{TypeTurn, `{"role":"user","text":"hi","turn":1.0}`, vValid},
		{TypeTurn, `{"role":"user","text":"hi","turn":1e1}`, vValid},
		{TypeTurn, `{"role":"user","text":"hi","turn":1.5}`, vInvalid},
		{TypeTurn, `{"role":"user","text":"hi","turn":-1}`, vInvalid},
		{TypeTurn, `{"role":"user","text":"hi","turn":-0}`, vValid},
		{TypeTurn, `{"role":"user","text":"hi","turn":9007199254740991}`, vValid},
		{TypeTurn, `{"role":"user","text":"hi","turn":9007199254740992}`, vInvalid},
		{TypeTurn, `{"role":"user","text":"hi","turn":90071992547409910000}`, vInvalid},
		{TypeTurn, `{"role":"user","text":"hi","turn":"1"}`, vInvalid},
		{TypeTurn, `{"role":"bot","text":"hi"}`, vInvalid},
		{TypeTurn, `{"role":"user","text":""}`, vInvalid},
		{TypeTurn, `{"role":"user"}`, vInvalid},
		{TypeTurn, `{"role":"user","text":"hi","extra":1}`, vInvalid},
		{TypeTurn, `{"role":"us\u0065r","text":"a \"quoted\" word \u00e9 \ud83d\ude00"}`, vValid},
		{TypeTurn, `{"role":"user","text":"\ud83d"}`, vValid},
		{TypeTurn, `{"role":"user","text":"hi","role":"agent"}`, vUnsure},
		{TypeTurn, `{"rol\u0065":"user","text":"hi"}`, vUnsure},
		{TypeTurn, `{"role":"user","text":"hi"} x`, vUnsure},
		{TypeTurn, `{"role":"user","text":"hi",}`, vUnsure},
		{TypeTurn, `{"role":"user","text":"a	tab"}`, vUnsure},
		{TypeTurn, `[]`, vInvalid},
		{TypeTurn, `null`, vInvalid},
		{TypeTurn, ``, vUnsure},
		{TypeDetection, `{"turn":1,"user_text":"x","rein":false,"module":"rules","latency_ms":0.012,"tokens":0,"failed":false,"taxonomy_version":"v1"}`, vValid},
		{TypeDetection, `{"turn":1,"user_text":"x","rein":false,"module":"rules","latency_ms":1.2e-05,"tokens":0,"failed":false,"taxonomy_version":"v1"}`, vValid},
		{TypeDetection, `{"turn":1,"user_text":"x","rein":false,"module":"rules","latency_ms":-0.5,"tokens":0,"failed":false,"taxonomy_version":"v1"}`, vInvalid},
		{TypeDetection, `{"turn":1,"user_text":"x","rein":true,"module":"rules","latency_ms":1,"tokens":0,"failed":false,"taxonomy_version":"v1"}`, vInvalid},
		{TypeDetection, `{"turn":1,"user_text":"x","rein":true,"error_type":"anaphora","reasoning":"r","module":"rules","latency_ms":1,"tokens":0,"failed":false,"taxonomy_version":"v1"}`, vValid},
		{TypeDetection, `{"turn":1,"user_text":"x","rein":true,"error_type":"Anaphora","reasoning":"r","module":"rules","latency_ms":1,"tokens":0,"failed":false,"taxonomy_version":"v1"}`, vInvalid},
		{TypeDetection, `{"turn":1,"user_text":"x","rein":false,"module":"rules","latency_ms":1,"tokens":0,"failed":false,"taxonomy_version":"v1","arm":"control"}`, vValid},
		{TypeDetection, `{"turn":1,"user_text":"x","rein":false,"module":"rules","latency_ms":1,"tokens":0,"failed":false,"taxonomy_version":"v1","arm":"other"}`, vInvalid},
		{TypeTask, `{"turn":1,"user_text":"x","inception":null}`, vValid},
		{TypeTask, `{"turn":1,"user_text":"x","inception":{"thought":"t","error_type":"e","recovery_tool":"r"}}`, vValid},
		{TypeTask, `{"turn":1,"user_text":"x","inception":{"thought":"","error_type":"e","recovery_tool":"r"}}`, vInvalid},
		{TypeTask, `{"turn":1,"user_text":"x","inception":{"thought":"t","error_type":"e"}}`, vInvalid},
		{TypeTask, `{"turn":1,"user_text":"x","inception":"t"}`, vInvalid},
		{TypeTask, `{"turn":1,"user_text":"x"}`, vInvalid},
		{TypeStep, `{"turn":1,"step":0,"kind":"tool_call","name":"n","arguments":{"a":[1,{"b":null}],"a":true},"injected":false}`, vValid},
		{TypeStep, `{"turn":1,"step":0,"kind":"tool_call","arguments":{"a":[1,}},"injected":false}`, vUnsure},
		{TypeStep, `{"turn":1,"step":0,"kind":"nap","injected":false}`, vInvalid},
		{TypeSteps, `{"turn":1,"steps":[{"turn":1,"step":1,"kind":"tool_call","name":"n","arguments":{"a":1},"injected":false},{"turn":1,"step":2,"kind":"reply","output":"ok","injected":false}]}`, vValid},
		{TypeSteps, `{"turn":1,"steps":[{"turn":1,"step":1,"kind":"reply","injected":false}]}`, vValid},
		{TypeSteps, `{"turn":1,"steps":[]}`, vInvalid},
		{TypeSteps, `{"turn":1,"steps":[ ]}`, vInvalid},
		{TypeSteps, `{"turn":1,"steps":null}`, vInvalid},
		{TypeSteps, `{"turn":1,"steps":[{"turn":1,"step":1,"kind":"nap","injected":false}]}`, vInvalid},
		{TypeSteps, `{"turn":1,"steps":[{"turn":1,"step":1,"kind":"reply"}]}`, vInvalid},
		{TypeHandoffTimeout, `{"turn":1,"escalation_id":"e","deadline":"2026-05-01T10:00:00Z"}`, vValid},
		{TypeHandoffTimeout, `{"turn":1,"escalation_id":"e","deadline":"tomorrow"}`, vInvalid},
	}
	for _, c := range cases {
		if got := agree(t, c.typ, []byte(c.data)); got != c.want {
			t.Errorf("%s %s: fast says %v, want %v", c.typ, c.data, got, c.want)
		}
	}
}

// TestFastAcceptsProducedPayloads checks that what the stages produce takes
// the fast path, and that Validate's answer does not change with it.
func TestFastAcceptsProducedPayloads(t *testing.T) {
	compileOnce.Do(compileAll)
	for typ, v := range map[string]any{
		TypeTurn:      Turn{Role: RoleUser, Text: "Cancel <the> one & \"that\" one, é 😀", Turn: 7},
		TypeTask:      Task{Turn: 7, UserText: "x", Inception: &Inception{Thought: "t", ErrorType: "anaphora", RecoveryTool: ToolAmbiguityReport}},
		TypeDetection: Detection{Turn: 7, UserText: "x", Rein: true, ErrorType: "anaphora", Reasoning: "r", Module: "rules", LatencyMS: 1.5e-7, TaxonomyVersion: "v1"},
		TypeStep:      Step{Turn: 7, Step: 3, Kind: StepReply, Output: "done", Arguments: json.RawMessage(`{"x":[1,2.5,"y"]}`)},
		TypeSteps: Steps{Turn: 7, Steps: []Step{{Turn: 7, Step: 1, Kind: StepToolCall, Name: "get_user_details", CallID: "c1", Arguments: json.RawMessage(`{"user_id":"u"}`)},
			{Turn: 7, Step: 2, Kind: StepReply, Output: "done"}}},
		TypeEscalation: Escalation{Turn: 7, Summary: "s", Reason: ReasonTransfer},
		TypeReport:     Report{Turn: 7, Report: "r"},
		TypeUnanswered: Unanswered{Turn: 7, Reason: UnansweredSuperseded, SupersededBy: 8},
	} {
		raw, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if got := agree(t, typ, raw); got != vValid {
			t.Errorf("%s %s: fast says %v, want valid", typ, raw, got)
		}
	}
}

func (v verdict) String() string {
	switch v {
	case vValid:
		return "valid"
	case vInvalid:
		return "invalid"
	}
	return "unsure"
}

// FuzzFastValidate checks the fast verdict against the library's on any
// document, for every covered type.
func FuzzFastValidate(f *testing.F) {
	for _, s := range []string{
		`{"role":"user","text":"hi","turn":1}`,
		`{"turn":1,"user_text":"x","inception":{"thought":"t","error_type":"e","recovery_tool":"r"}}`,
		`{"turn":1,"user_text":"x","rein":true,"error_type":"anaphora","reasoning":"r","module":"rules","latency_ms":0.5,"tokens":0,"failed":false,"taxonomy_version":"v1"}`,
		`{"turn":1,"step":0,"kind":"tool_call","arguments":{"a":[1]},"injected":false}`,
		`{"kind":"satisfaction","score":5}`,
		`{"turn":1,"verdict":"wrong_type","labeller":"l","detection_id":"d","detected":true,"sample":{"day":"2026-05-01","stratum":"s","population":3,"probability":0.5}}`,
	} {
		f.Add(s)
	}
	compileOnce.Do(compileAll)
	f.Fuzz(func(t *testing.T, doc string) {
		for _, typ := range fastTypes {
			agree(t, typ, []byte(doc))
		}
	})
}

func TestFastFallsBackWithTheLibrarysError(t *testing.T) {
	err := Validate(TypeTurn, []byte(`{"role":"user","text":""}`))
	var ve *ValidationError
	if !errors.As(err, &ve) || ve.Field != "/text" {
		t.Fatalf("Validate = %v, want a ValidationError on /text", err)
	}
	if err := Validate(TypeTurn, []byte(`{"role":"user","text":"x","role":"agent"}`)); err != nil {
		t.Fatalf("a duplicate key the library accepts: %v", err)
	}
}
