package schemagen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/invopop/jsonschema"

	"github.com/reinception/rein/escalation"
	"github.com/reinception/rein/injector"
	"github.com/reinception/rein/schemas"
)

// IDBase prefixes every document's $id.
const IDBase = "https://schemas.rein.dev/"

// source is one schema document: the Go type it is derived from, what it
// describes, and the post-processing tags cannot express.
type source struct {
	name        string
	value       any
	description string
	// fromTags: required fields are those tagged `jsonschema:"required"`;
	// otherwise those encoding/json always writes (no omitempty).
	fromTags bool
	extend   func(*jsonschema.Schema)
}

func sources() []source {
	return []source{
		{schemas.TypeTurn, schemas.Turn{}, "One message of the surface dialogue.", true, nil},
		{schemas.TypeDetection, schemas.Detection{}, "The inception module's decision for one user turn.", true, activatedNamesItsError},
		{schemas.TypeTask, schemas.Task{}, "One agent work item: the user turn and the inception block, or null.", true, nil},
		{schemas.TypeStep, schemas.Step{}, "One element of the agent's internal context.", true, nil},
		{schemas.TypeSteps, schemas.Steps{}, "Every step of one agent turn that ended before its steps went live, in order, each as dev.rein.step.v1 carries it.", true, nil},
		{schemas.TypeEscalation, schemas.Escalation{}, "The conversation is handed to a human agent.", true, nil},
		{schemas.TypeReport, schemas.Report{}, "An ambiguity report recorded by the agent.", true, nil},
		{schemas.TypeDeadLetter, schemas.DeadLetter{}, "A message a stage could not handle, with the reason and the original message.", true, nil},
		{schemas.TypeHandoffTimeout, schemas.HandoffTimeout{}, "A handoff item nobody claimed before its deadline.", true, nil},
		{schemas.TypeUnanswered, schemas.Unanswered{}, "The explicit outcome of a user turn that gets no agent reply: superseded by a later turn, failed, or on the human path of a conversation handed to a human.", true, nil},
		{schemas.TypeRelease, schemas.Release{}, "A conversation handed to a human is given back to the agent (by an operator, or after the quiet period of an agent_unavailable handoff).", true, nil},
		{schemas.TypeRedrive, schemas.Redrive{}, "A dead letter put back on its original subject, once.", true, nil},
		{schemas.TypeLabel, schemas.Label{}, "A labeller's judgement of the detection of one user turn, with what the detection decided and, when the review queue chose the turn, its inclusion probability.", true, labelNamesTheRightType},
		{schemas.TypeFeedback, schemas.Feedback{}, "What the platform learnt of a conversation's outcome (resolved, abandoned, reopened, a 1-5 satisfaction score or a custom label); one per conversation and kind.", true, feedbackKinds},
		{schemas.DocSidecarAnswer, injector.Answer{}, "The reply to a sidecar request on rein.inception.get.{tenant}.{conversation}.{turn}: what to plant, if anything (an inception block when status is ready, null otherwise).", false, sidecarStatuses},
		{schemas.DocHandoffItem, escalation.HandoffItem{}, "A human-handoff work item on rein.handoff.items.{tenant}.{conversation} (work-queue stream REIN_HANDOFF), plain JSON.", false, transcriptRoles},
	}
}

// activatedNamesItsError: a detection with rein true carries error_type and reasoning.
func activatedNamesItsError(s *jsonschema.Schema) {
	props := jsonschema.NewProperties()
	props.Set("rein", &jsonschema.Schema{Const: true})
	s.If = &jsonschema.Schema{Properties: props}
	s.Then = &jsonschema.Schema{Required: []string{"error_type", "reasoning"}}
}

// labelNamesTheRightType: a wrong_type or missed_error label names the
// right error type.
func labelNamesTheRightType(s *jsonschema.Schema) {
	props := jsonschema.NewProperties()
	props.Set("verdict", &jsonschema.Schema{Enum: []any{schemas.VerdictWrongType, schemas.VerdictMissedError}})
	s.If = &jsonschema.Schema{Properties: props}
	s.Then = &jsonschema.Schema{Required: []string{"error_type"}}
}

// feedbackKinds: a satisfaction carries its score, a label its name.
func feedbackKinds(s *jsonschema.Schema) {
	when := func(kind string, field string) *jsonschema.Schema {
		props := jsonschema.NewProperties()
		props.Set("kind", &jsonschema.Schema{Const: kind})
		return &jsonschema.Schema{If: &jsonschema.Schema{Properties: props}, Then: &jsonschema.Schema{Required: []string{field}}}
	}
	s.AllOf = []*jsonschema.Schema{when(schemas.FeedbackSatisfaction, "score"), when(schemas.FeedbackLabel, "label")}
}

// sidecarStatuses: the answer's status is one of injector's five; its
// inception is a block when the status is ready and null otherwise.
func sidecarStatuses(s *jsonschema.Schema) {
	st, _ := s.Properties.Get("status")
	st.Enum = []any{injector.StatusReady, injector.StatusNone, injector.StatusTimeout, injector.StatusBusy, injector.StatusInvalid}
	block, _ := s.Properties.Get("inception")
	s.Properties.Set("inception", &jsonschema.Schema{OneOf: []*jsonschema.Schema{block, {Type: "null"}}})
	ready := jsonschema.NewProperties()
	ready.Set("status", &jsonschema.Schema{Const: injector.StatusReady})
	planted := jsonschema.NewProperties()
	planted.Set("inception", &jsonschema.Schema{Type: "object"})
	notReady := jsonschema.NewProperties()
	notReady.Set("inception", &jsonschema.Schema{Type: "null"})
	s.If = &jsonschema.Schema{Properties: ready}
	s.Then = &jsonschema.Schema{Properties: planted}
	s.Else = &jsonschema.Schema{Properties: notReady}
	turn, _ := s.Properties.Get("turn")
	turn.Minimum = json.Number("0")
	turn.Maximum = json.Number(fmt.Sprint(schemas.MaxTurn))
}

// idPattern is what schemas.ValidID accepts.
var idPattern = fmt.Sprintf("^[A-Za-z0-9_-]{1,%d}$", schemas.MaxIDLen)

// transcriptRoles: a transcript line's role is user or agent; the tenant
// and conversation are rein ids; turns are user turn numbers (from 1).
func transcriptRoles(s *jsonschema.Schema) {
	tr, _ := s.Properties.Get("transcript")
	role, _ := tr.Items.Properties.Get("role")
	role.Enum = []any{schemas.RoleUser, schemas.RoleAgent}
	for _, name := range []string{"tenant", "conversation"} {
		p, _ := s.Properties.Get(name)
		p.Pattern = idPattern
	}
	turn, _ := s.Properties.Get("turn")
	turn.Minimum, turn.Maximum = json.Number("1"), json.Number(fmt.Sprint(schemas.MaxTurn))
}

// Document is one generated schema file.
type Document struct {
	Name string // the event type or document name; the file is Name + ".json"
	JSON []byte
}

// Documents derives every schema, in catalogue order: the event types of
// schemas.AllTypes, then schemas.AllDocuments.
func Documents() ([]Document, error) {
	srcs := sources()
	if want := len(schemas.AllTypes) + len(schemas.AllDocuments); len(srcs) != want {
		return nil, fmt.Errorf("schemagen: %d sources for %d schema names", len(srcs), want)
	}
	out := make([]Document, 0, len(srcs))
	for _, src := range srcs {
		r := &jsonschema.Reflector{
			Anonymous:                  true,
			DoNotReference:             true,
			ExpandedStruct:             true,
			RequiredFromJSONSchemaTags: src.fromTags,
		}
		s := r.Reflect(src.value)
		s.ID = jsonschema.ID(IDBase + src.name + ".json")
		s.Title = src.name
		s.Description = src.description
		if src.extend != nil {
			src.extend(s)
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(s); err != nil {
			return nil, fmt.Errorf("schemagen: %s: %w", src.name, err)
		}
		out = append(out, Document{Name: src.name, JSON: buf.Bytes()})
	}
	return out, nil
}

// Write writes every document into dir as <name>.json, replacing what is
// there.
func Write(dir string) error {
	docs, err := Documents()
	if err != nil {
		return err
	}
	for _, d := range docs {
		if err := os.WriteFile(filepath.Join(dir, d.Name+".json"), d.JSON, 0o644); err != nil {
			return fmt.Errorf("schemagen: %w", err)
		}
	}
	return nil
}
