package schemagen_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reinception/rein/escalation"
	"github.com/reinception/rein/injector"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/schemas/schemagen"
)

const checkedIn = "../jsonschema"

// The checked-in schemas are exactly what the Go types generate: a type
// changed without `go generate ./schemas` fails here.
func TestCheckedInSchemasAreGenerated(t *testing.T) {
	docs, err := schemagen.Documents()
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, d := range docs {
		want = append(want, d.Name+".json")
		got, err := os.ReadFile(filepath.Join(checkedIn, d.Name+".json"))
		if err != nil {
			t.Errorf("%s: %v (run go generate ./schemas)", d.Name, err)
			continue
		}
		if !bytes.Equal(got, d.JSON) {
			t.Errorf("%s.json differs from what the Go types generate: run go generate ./schemas", d.Name)
		}
	}
	files, err := filepath.Glob(filepath.Join(checkedIn, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	var have []string
	for _, f := range files {
		have = append(have, filepath.Base(f))
	}
	slices.Sort(want)
	if !slices.Equal(have, want) {
		t.Errorf("files %v, generated %v", have, want)
	}
	if want := append(slices.Clone(schemas.AllTypes), schemas.AllDocuments...); len(docs) != len(want) {
		t.Errorf("%d documents for %d names", len(docs), len(want))
	}
}

// A Go type change shows in the generated schema (the comparison above
// can fail): Write into a directory, then compare a changed document.
func TestWriteRoundTrips(t *testing.T) {
	dir := t.TempDir()
	if err := schemagen.Write(dir); err != nil {
		t.Fatal(err)
	}
	docs, _ := schemagen.Documents()
	for _, d := range docs {
		got, err := os.ReadFile(filepath.Join(dir, d.Name+".json"))
		if err != nil || !bytes.Equal(got, d.JSON) {
			t.Errorf("%s: written file differs (%v)", d.Name, err)
		}
	}
	if err := schemagen.Write(filepath.Join(dir, "missing")); err == nil {
		t.Error("writing into a missing directory succeeded")
	}
}

// examples holds valid payloads of every schema, encoded from the Go types.
func examples() map[string][]any {
	ready := injector.Answer{Status: injector.StatusReady, Turn: 1, DetectionID: "detection.acme.c2.1",
		Inception: &schemas.Inception{Thought: "No tool can choose a seat; transfer to a human.", ErrorType: "unsupported_action", RecoveryTool: schemas.ToolTransfer}}
	created := time.Date(2026, 12, 4, 8, 0, 0, 0, time.UTC)
	return map[string][]any{
		schemas.TypeTurn: {schemas.Turn{Role: schemas.RoleUser, Text: "Please cancel that one.", Turn: 2}, schemas.Turn{Role: schemas.RoleAgent, Text: "Which one?"}},
		schemas.TypeDetection: {
			schemas.Detection{Turn: 2, UserText: "Please cancel that one.", Rein: true, ErrorType: "anaphora", Category: schemas.CategoryAmbiguous,
				RecoveryTool: schemas.ToolAmbiguityReport, Reasoning: "Which reservation?", Module: "rules", TaxonomyVersion: "1"},
			schemas.Detection{Turn: 3, UserText: "ok", Module: "llm", Failed: true, FailReason: "timeout", TaxonomyVersion: "1"},
		},
		schemas.TypeTask: {
			schemas.Task{Turn: 2, UserText: "x", Inception: &schemas.Inception{Thought: "t", ErrorType: "anaphora", RecoveryTool: schemas.ToolAmbiguityReport}},
			schemas.Task{Turn: 3, UserText: "y"},
		},
		schemas.TypeStep: {schemas.Step{Turn: 2, Step: 1, Kind: schemas.StepToolCall, Name: "think", Arguments: json.RawMessage(`{"thought":"t"}`), Injected: true}},
		schemas.TypeSteps: {schemas.Steps{Turn: 2, Steps: []schemas.Step{
			{Turn: 2, Step: 1, Kind: schemas.StepToolCall, Name: "get_user_details", CallID: "c1", Arguments: json.RawMessage(`{"user_id":"u"}`)},
			{Turn: 2, Step: 2, Kind: schemas.StepToolResult, Name: "get_user_details", CallID: "c1", Output: "{}"},
			{Turn: 2, Step: 3, Kind: schemas.StepReply, Output: "done"}}}},
		schemas.TypeEscalation:     {schemas.Escalation{Turn: 1, Summary: "hotel", Reason: schemas.ReasonTransfer}},
		schemas.TypeReport:         {schemas.Report{Turn: 2, Report: "which one?"}},
		schemas.TypeDeadLetter:     {schemas.DeadLetter{Stage: "detector", Reason: "bad", Subject: "rein.turns.a.b.user", Data: []byte{0xff}}, schemas.DeadLetter{Stage: "s", Reason: "r"}},
		schemas.TypeHandoffTimeout: {schemas.HandoffTimeout{Turn: 1, EscalationID: "escalation.acme.c1.1", Deadline: "2026-12-04T08:05:00Z"}},
		schemas.TypeUnanswered: {schemas.Unanswered{Turn: 2, Reason: schemas.UnansweredFailed, Detail: "model down"},
			schemas.Unanswered{Turn: 3, Reason: schemas.UnansweredHumanPath, EscalatedTurn: 2, HandoffReason: schemas.ReasonAgentUnavailable}},
		schemas.TypeRelease: {schemas.Release{Turn: 2, Reason: schemas.ReleaseQuietPeriod, HandoffReason: schemas.ReasonAgentUnavailable, By: "agentworker"}},
		schemas.TypeFeedback: {schemas.Feedback{Kind: schemas.FeedbackResolved}, schemas.Feedback{Kind: schemas.FeedbackSatisfaction, Score: 5},
			schemas.Feedback{Kind: schemas.FeedbackLabel, Label: "refund_issued", Note: "by the desk"}},
		schemas.TypeRedrive: {schemas.Redrive{DLQSequence: 1, Subject: "rein.tasks.a.b", Stream: "REIN_TASKS", NewSequence: 9}},
		schemas.TypeLabel: {schemas.Label{Turn: 2, Verdict: schemas.VerdictWrongType, ErrorType: "anaphora", Labeller: "ops-1", DetectionID: "detection.acme.c1.2",
			Detected: true, DetectedType: "contradiction", Module: "rules", Sample: &schemas.LabelSample{Day: "2026-12-04", Stratum: "contradiction", Population: 40, Probability: 0.25}},
			schemas.Label{Turn: 3, Verdict: schemas.VerdictCorrect, Labeller: "ops", DetectionID: "detection.acme.c1.3", Module: "llm"}},
		schemas.DocSidecarAnswer: {ready, injector.Answer{Status: injector.StatusNone, Turn: 1},
			injector.Answer{Status: injector.StatusInvalid, Error: "subject is not rein.inception.get.<tenant>.<conversation>.<turn>"}},
		schemas.DocHandoffItem: {escalation.HandoffItem{ID: "escalation.acme.c1.1", Tenant: "acme", Conversation: "c1", Turn: 1,
			ErrorType: "unsupported_domain", Reason: schemas.ReasonTransfer, Summary: "wants a hotel", Plan: "transfer",
			Transcript: []escalation.TranscriptLine{{Turn: 1, Role: schemas.RoleUser, Text: "a hotel?"}}, CreatedAt: created, Deadline: created.Add(5 * time.Minute)}},
	}
}

// Every schema accepts example payloads encoded from its Go type.
func TestExamplesOfEveryKindValidate(t *testing.T) {
	ex := examples()
	for _, name := range append(slices.Clone(schemas.AllTypes), schemas.AllDocuments...) {
		if len(ex[name]) == 0 {
			t.Errorf("no example of %s", name)
		}
		for _, v := range ex[name] {
			b, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			if err := schemas.Validate(name, b); err != nil {
				t.Errorf("%s %s: %v", name, b, err)
			}
		}
	}
}

// The constraints the post-processing adds hold: they refuse what they
// should, naming the field.
func TestPostProcessedConstraints(t *testing.T) {
	cases := []struct{ name, data, field string }{
		{schemas.DocSidecarAnswer, `{"status":"maybe","inception":null,"turn":1}`, "/status"},
		{schemas.DocSidecarAnswer, `{"status":"ready","inception":null,"turn":1}`, "/inception"},
		{schemas.DocSidecarAnswer, `{"status":"none","inception":{"thought":"t","error_type":"e","recovery_tool":"r"},"turn":1}`, "/inception"},
		{schemas.DocSidecarAnswer, `{"status":"none","turn":1}`, ""},
		{schemas.DocHandoffItem, `{"id":"e","tenant":"a","conversation":"c","turn":1,"reason":"r","summary":"s","transcript":[{"turn":1,"role":"robot","text":"x"}],"created_at":"2026-12-04T08:00:00Z","deadline":"2026-12-04T08:05:00Z"}`, "/transcript/0/role"},
		{schemas.DocHandoffItem, `{"id":"e","tenant":"a","conversation":"c","turn":1,"reason":"r","summary":"s","transcript":[],"created_at":"now","deadline":"2026-12-04T08:05:00Z"}`, "/created_at"},
		{schemas.DocHandoffItem, `{"id":"e","tenant":"a.b","conversation":"c","turn":1,"reason":"r","summary":"s","transcript":[],"created_at":"2026-12-04T08:00:00Z","deadline":"2026-12-04T08:05:00Z"}`, "/tenant"},
		{schemas.DocHandoffItem, `{"id":"e","tenant":"a","conversation":"c","turn":0,"reason":"r","summary":"s","transcript":[],"created_at":"2026-12-04T08:00:00Z","deadline":"2026-12-04T08:05:00Z"}`, "/turn"},
		{schemas.TypeDetection, `{"turn":1,"user_text":"x","rein":true,"module":"rules","latency_ms":0,"tokens":0,"failed":false,"taxonomy_version":"1"}`, ""},
		{schemas.TypeDetection, `{"turn":1,"user_text":"x","rein":true,"error_type":"Bad Type","reasoning":"r","module":"rules","latency_ms":0,"tokens":0,"failed":false,"taxonomy_version":"1"}`, "/error_type"},
		{schemas.TypeTurn, `{"role":"user","text":"` + strings.Repeat("a", schemas.MaxTextChars+1) + `"}`, "/text"},
		{schemas.TypeHandoffTimeout, `{"turn":1,"escalation_id":"e","deadline":"tomorrow"}`, "/deadline"},
		{schemas.TypeLabel, `{"turn":2,"verdict":"missed_error","labeller":"ops","detection_id":"d","detected":false}`, ""},
		{schemas.TypeLabel, `{"turn":2,"verdict":"correct","labeller":"a.b","detection_id":"d","detected":false}`, "/labeller"},
		{schemas.TypeLabel, `{"turn":2,"verdict":"correct","labeller":"ops","detection_id":"d","detected":false,"sample":{"day":"2026-12-04","stratum":"clean","population":9,"probability":0}}`, "/sample/probability"},
	}
	for _, c := range cases {
		err := schemas.Validate(c.name, []byte(c.data))
		var ve *schemas.ValidationError
		if !errors.As(err, &ve) {
			t.Errorf("%s %.120s: want a ValidationError, got %v", c.name, c.data, err)
			continue
		}
		if ve.Field != c.field {
			t.Errorf("%s %.120s: field %q, want %q (%v)", c.name, c.data, ve.Field, c.field, err)
		}
	}
	if schemas.Known(schemas.DocSidecarAnswer) || !schemas.Known(schemas.TypeTurn) {
		t.Error("Known must name event types only")
	}
}
