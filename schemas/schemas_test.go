package schemas_test

import (
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/schemas"
)

// samples holds one valid payload per event type; each is also a golden
// CloudEvent (structured JSON) in testdata/.
var samples = map[string]any{
	schemas.TypeTurn: schemas.Turn{Role: "user", Text: "Please cancel that one.", Turn: 2},
	schemas.TypeDetection: schemas.Detection{Turn: 2, UserText: "Please cancel that one.", Rein: true, ErrorType: "anaphora",
		Category: "ambiguous", RecoveryTool: "ambiguity_report", Evidence: "that one", Reasoning: "It is unclear which reservation is meant; call ambiguity_report, then ask.",
		Module: "rules", LatencyMS: 0.02, TaxonomyVersion: "rein-default-1", Experiment: "holdout-1", Arm: schemas.ArmControl},
	schemas.TypeTask: schemas.Task{Turn: 2, UserText: "Please cancel that one.", DetectionID: "detection.acme.c1.2",
		Inception: &schemas.Inception{Thought: "It is unclear which reservation is meant; call ambiguity_report, then ask.", ErrorType: "anaphora", RecoveryTool: "ambiguity_report"}},
	schemas.TypeStep: schemas.Step{Turn: 2, Step: 1, Kind: "think", Name: "think", CallID: "call_2_0_0", Arguments: json.RawMessage(`{"thought":"…"}`), Injected: true},
	schemas.TypeSteps: schemas.Steps{Turn: 2, Steps: []schemas.Step{
		{Turn: 2, Step: 1, Kind: "think", Name: "think", CallID: "rein_think_2", Arguments: json.RawMessage(`{"thought":"…"}`), Injected: true},
		{Turn: 2, Step: 2, Kind: "tool_call", Name: "ambiguity_report", CallID: "call_2_1_0", Arguments: json.RawMessage(`{"report":"which one?"}`)},
		{Turn: 2, Step: 3, Kind: "tool_result", Name: "ambiguity_report", CallID: "call_2_1_0", Output: "recorded"},
		{Turn: 2, Step: 4, Kind: "reply", Output: "Which reservation do you mean?"}}},
	schemas.TypeEscalation:     schemas.Escalation{Turn: 1, Summary: "wants a hotel", ErrorType: "unsupported_domain", Reason: schemas.ReasonTransfer},
	schemas.TypeReport:         schemas.Report{Turn: 2, Report: "which reservation?", ErrorType: "anaphora"},
	schemas.TypeDeadLetter:     schemas.DeadLetter{Stage: "detector", Reason: "body is not valid UTF-8", Subject: "rein.turns.acme.c1.user", Data: []byte{0xff}},
	schemas.TypeHandoffTimeout: schemas.HandoffTimeout{Turn: 1, EscalationID: "escalation.acme.c1.1", Deadline: "2026-12-02T15:00:00Z"},
	schemas.TypeUnanswered:     schemas.Unanswered{Turn: 2, Reason: schemas.UnansweredSuperseded, SupersededBy: 3},
	schemas.TypeRedrive:        schemas.Redrive{DLQSequence: 7, Subject: "rein.escalations.acme.c1", Stream: "REIN_OUTCOMES", NewSequence: 42},
	schemas.TypeRelease:        schemas.Release{Turn: 1, Reason: schemas.ReleaseOperator, HandoffReason: schemas.ReasonAgentUnavailable, By: "ops"},
	schemas.TypeLabel: schemas.Label{Turn: 2, Verdict: schemas.VerdictFalseActivation, Labeller: "ops", Note: "a plain request", DetectionID: "detection.acme.c1.2",
		Detected: true, DetectedType: "anaphora", Module: "rules", Sample: &schemas.LabelSample{Day: "2026-12-01", Stratum: "anaphora", Population: 12, Probability: 0.5}},
	schemas.TypeFeedback: schemas.Feedback{Kind: schemas.FeedbackSatisfaction, Score: 4, Note: "post-chat survey"},
}

func TestEverySchemaAcceptsItsSampleAndGolden(t *testing.T) {
	if len(samples) != len(schemas.AllTypes) {
		t.Fatalf("%d samples for %d types", len(samples), len(schemas.AllTypes))
	}
	for _, typ := range schemas.AllTypes {
		ev, err := schemas.NewEvent(typ, "id-"+typ, "/rein", schemas.Meta{Tenant: "acme", Conversation: "c1", Turn: 2}, samples[typ])
		if err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
		ev.SetTime(time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC))
		b, err := json.MarshalIndent(ev, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		rtest.Golden(t, typ+".json", b)
	}
}

func TestValidationNamesTheField(t *testing.T) {
	cases := []struct {
		typ, data, field string
	}{
		{schemas.TypeTurn, `{"role":"robot","text":"x"}`, "/role"},
		{schemas.TypeTurn, `{"role":"user"}`, ""},
		{schemas.TypeTurn, `{"role":"user","text":"x","extra":1}`, ""},
		{schemas.TypeDetection, `{"turn":1,"user_text":"x","rein":true,"module":"rules","latency_ms":0,"tokens":0,"failed":false,"taxonomy_version":"1"}`, ""},
		{schemas.TypeDetection, `{"turn":-1,"user_text":"x","rein":false,"module":"rules","latency_ms":0,"tokens":0,"failed":false,"taxonomy_version":"1"}`, "/turn"},
		{schemas.TypeTask, `{"turn":1,"user_text":"x","inception":{"thought":"","error_type":"a","recovery_tool":"b"}}`, "/inception"},
		{schemas.TypeStep, `{"turn":1,"step":1,"kind":"dance","injected":false}`, "/kind"},
		{schemas.TypeSteps, `{"turn":1,"steps":[{"turn":1,"step":1,"kind":"dance","injected":false}]}`, "/steps/0/kind"},
		{schemas.TypeSteps, `{"turn":1,"steps":[]}`, "/steps"},
		{schemas.TypeDetection, `{"turn":1,"user_text":"x","rein":false,"module":"rules","latency_ms":0,"tokens":0,"failed":false,"taxonomy_version":"1","arm":"placebo"}`, "/arm"},
		{schemas.TypeFeedback, `{"kind":"satisfaction","score":9}`, "/score"},
		{schemas.TypeFeedback, `{"kind":"satisfaction"}`, ""},
		{schemas.TypeFeedback, `{"kind":"label","label":"a.b"}`, "/label"},
	}
	for _, c := range cases {
		err := schemas.Validate(c.typ, []byte(c.data))
		var ve *schemas.ValidationError
		if !errors.As(err, &ve) {
			t.Errorf("%s %s: want a ValidationError, got %v", c.typ, c.data, err)
			continue
		}
		if !errors.Is(err, schemas.ErrInvalidPayload) || !strings.HasPrefix(ve.Field, c.field) || (c.field == "" && ve.Field != "") {
			t.Errorf("%s %s: field %q, want %q (%v)", c.typ, c.data, ve.Field, c.field, err)
		}
	}
	if err := schemas.Validate("dev.other", []byte(`{}`)); !errors.Is(err, schemas.ErrUnknownType) {
		t.Errorf("unknown type: %v", err)
	}
	if err := schemas.Validate(schemas.TypeTurn, []byte(`{"role":`)); !errors.Is(err, schemas.ErrMalformedJSON) {
		t.Errorf("malformed: %v", err)
	}
}

func TestValidID(t *testing.T) {
	for id, ok := range map[string]bool{
		"acme": true, "c-1_X": true, strings.Repeat("a", 128): true,
		"": false, strings.Repeat("a", 129): false, "a.b": false, "a*": false, "a>": false, "a b": false, "é": false,
	} {
		if schemas.ValidID(id) != ok {
			t.Errorf("ValidID(%q) = %v", id, !ok)
		}
	}
	if err := schemas.CheckIDs("acme", "a.b"); !errors.Is(err, schemas.ErrBadID) || !strings.Contains(err.Error(), "conversation") {
		t.Errorf("CheckIDs: %v", err)
	}
}

func TestMetaRoundTrip(t *testing.T) {
	ev, err := schemas.NewEvent(schemas.TypeTurn, "x", "", schemas.Meta{Tenant: "acme", Conversation: "c9", Turn: 7, Traceparent: "00-abc-def-01"},
		schemas.Turn{Role: "user", Text: "hi", Turn: 7})
	if err != nil {
		t.Fatal(err)
	}
	m, err := schemas.MetaOf(&ev)
	if err != nil || m.Tenant != "acme" || m.Conversation != "c9" || m.Turn != 7 || m.Traceparent != "00-abc-def-01" {
		t.Fatalf("meta %+v %v", m, err)
	}
	if ev.Subject() != "c9" || ev.Extensions()[schemas.ExtPartitionKey] != "c9" {
		t.Errorf("subject/partitionkey: %s %v", ev.Subject(), ev.Extensions())
	}
	if _, err := schemas.NewEvent(schemas.TypeTurn, "x", "", schemas.Meta{Tenant: "ac me", Conversation: "c"}, schemas.Turn{Role: "user", Text: "x"}); !errors.Is(err, schemas.ErrBadID) {
		t.Errorf("bad tenant accepted: %v", err)
	}
}

// TestBuildEventSkipsOnlyTheSchemaCheck: BuildEvent gives the same event
// as NewEvent for a valid payload, leaves schema errors to the consumers,
// and still refuses bad ids and unknown types.
func TestBuildEventSkipsOnlyTheSchemaCheck(t *testing.T) {
	m := schemas.Meta{Tenant: "acme", Conversation: "c1", Turn: 3}
	turn := schemas.Turn{Role: "user", Text: "hi", Turn: 3}
	a, err := schemas.NewEvent(schemas.TypeTurn, "x", "", m, turn)
	if err != nil {
		t.Fatal(err)
	}
	b, err := schemas.BuildEvent(schemas.TypeTurn, "x", "", m, turn)
	if err != nil {
		t.Fatal(err)
	}
	b.SetTime(a.Time())
	if a.String() != b.String() {
		t.Errorf("BuildEvent = %s, NewEvent = %s", b, a)
	}
	bad := schemas.Turn{Role: "robot", Text: "hi"}
	if _, err := schemas.NewEvent(schemas.TypeTurn, "x", "", m, bad); err == nil {
		t.Fatal("NewEvent accepted role robot")
	}
	ev, err := schemas.BuildEvent(schemas.TypeTurn, "x", "", m, bad)
	if err != nil {
		t.Fatalf("BuildEvent checked the schema: %v", err)
	}
	if err := schemas.Validate(schemas.TypeTurn, ev.Data()); err == nil {
		t.Error("the consumers' check would not catch it")
	}
	if _, err := schemas.BuildEvent("dev.rein.nope.v1", "x", "", m, turn); !errors.Is(err, schemas.ErrUnknownType) {
		t.Errorf("unknown type: %v", err)
	}
	if _, err := schemas.BuildEvent(schemas.TypeTurn, "x", "", schemas.Meta{Tenant: "ac me", Conversation: "c"}, turn); !errors.Is(err, schemas.ErrBadID) {
		t.Errorf("bad id: %v", err)
	}
}

// MaxTextChars is the turn schema's maxLength of text.
func TestMaxTextCharsMatchesSchema(t *testing.T) {
	b, err := os.ReadFile("jsonschema/" + schemas.TypeTurn + ".json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Properties struct {
			Text struct {
				MaxLength int `json:"maxLength"`
			} `json:"text"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Properties.Text.MaxLength != schemas.MaxTextChars {
		t.Errorf("schema maxLength %d, MaxTextChars %d", doc.Properties.Text.MaxLength, schemas.MaxTextChars)
	}
}

// Every JSON Schema describes exactly the fields of its Go type: a field
// added to one and not the other fails here (the schemas are what a
// platform in another language codes against).
func TestSchemasMatchTypes(t *testing.T) {
	for _, typ := range schemas.AllTypes {
		b, err := os.ReadFile("jsonschema/" + typ + ".json")
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Properties map[string]json.RawMessage `json:"properties"`
		}
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
		var schemaFields []string
		for k := range doc.Properties {
			schemaFields = append(schemaFields, k)
		}
		slices.Sort(schemaFields)
		goFields := jsonFields(reflect.TypeOf(samples[typ]))
		if !slices.Equal(schemaFields, goFields) {
			t.Errorf("%s: schema properties %v, Go fields %v", typ, schemaFields, goFields)
		}
	}
}

// jsonFields lists the JSON names of a struct's exported fields.
func jsonFields(rt reflect.Type) []string {
	var out []string
	for f := range rt.Fields() {
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}
