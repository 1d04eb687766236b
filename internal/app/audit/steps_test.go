package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
)

// batchedTurn is one activated turn of conversation acme/b1 whose agent
// steps are stored as singles or, batched, as one dev.rein.steps.v1 (the
// agent worker's StepEvents "turn"), each at the same time.
func batchedTurn(t *testing.T, batched bool) (*testutil.JS, []schemas.Step) {
	const tn, cv = "acme", "b1"
	h := testutil.StartJetStream(t, "")
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	m := schemas.Meta{Tenant: tn, Conversation: cv, Turn: 1}
	steps := []schemas.Step{
		{Turn: 1, Step: 1, Kind: schemas.StepThink, Name: schemas.ToolThink, CallID: "rein_think_1", Arguments: json.RawMessage(`{"thought":"Ask which one."}`), Injected: true},
		{Turn: 1, Step: 2, Kind: schemas.StepToolCall, Name: "cancel_reservation", CallID: "c1", Arguments: json.RawMessage(`{"reservation_id":"Q7RM2K"}`)},
		{Turn: 1, Step: 3, Kind: schemas.StepToolResult, Name: "cancel_reservation", CallID: "c1", Output: "cancelled\nwith a refund"},
		{Turn: 1, Step: 4, Kind: schemas.StepReply, Output: "Done."},
	}
	outs := []streams.Out{
		turnOut(t, tn, cv, 1, schemas.RoleUser, "Cancel that one.", at(0)),
		ev(t, bus.StreamDetections, bus.DetectionSubject(tn, cv), schemas.TypeDetection, schemas.EventID("detection", tn, cv, 1), m, at(1),
			schemas.Detection{Turn: 1, UserText: "Cancel that one.", Rein: true, ErrorType: "anaphora", Category: "ambiguous", Reasoning: "which one",
				Module: "rules", TaxonomyVersion: "1", Experiment: "e1", Arm: schemas.ArmTreatment}),
	}
	if batched {
		outs = append(outs, ev(t, bus.StreamSteps, bus.StepSubject(tn, cv), schemas.TypeSteps, schemas.StepsEventID(tn, cv, 1), m, at(3),
			schemas.Steps{Turn: 1, Steps: steps}))
	} else {
		for _, s := range steps {
			outs = append(outs, ev(t, bus.StreamSteps, bus.StepSubject(tn, cv), schemas.TypeStep, schemas.StepEventID(tn, cv, 1, s.Step), m, at(3), s))
		}
	}
	publish(t, h, append(outs, turnOut(t, tn, cv, 1, schemas.RoleAgent, "Done.", at(4)))...)
	return h, steps
}

// seqs are stream sequences in rendered text, where a batch and its
// singles differ.
var seqs = regexp.MustCompile(`#[0-9]+`)

func TestSummarizeBatchAsItsSteps(t *testing.T) {
	_, steps := batchedTurn(t, false)
	var want []string
	for _, s := range steps {
		b, _ := json.Marshal(s)
		kind, text := Summarize(schemas.TypeStep, b)
		if kind != KindStep {
			t.Fatalf("a step is %s", kind)
		}
		want = append(want, text)
	}
	b, _ := json.Marshal(schemas.Steps{Turn: 1, Steps: steps})
	if kind, text := Summarize(schemas.TypeSteps, b); kind != KindStep || text != strings.Join(want, "\n") {
		t.Errorf("batch: %s %q, want STEP %q", kind, text, strings.Join(want, "\n"))
	}
}

// The timeline shows a batch as the single steps it stands for: the same
// entries (ids, types, kinds, texts, data, detection links), but for
// their stream sequence.
func TestTimelineShowsABatchAsItsSteps(t *testing.T) {
	ctx := context.Background()
	var got [2][]Entry
	var text [2]string
	for i, batched := range []bool{false, true} {
		h, _ := batchedTurn(t, batched)
		es, err := Timeline(ctx, h.JS, "acme", "b1")
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := WriteTimeline(&b, "acme", "b1", es); err != nil {
			t.Fatal(err)
		}
		for j := range es {
			es[j].Sequence = 0
		}
		got[i], text[i] = es, seqs.ReplaceAllString(b.String(), "#")
	}
	a, _ := json.Marshal(got[0])
	b, _ := json.Marshal(got[1])
	if len(got[0]) != 7 || string(a) != string(b) {
		t.Errorf("timelines differ:\nsingles %s\nbatch   %s", a, b)
	}
	if text[0] != text[1] {
		t.Errorf("rendered timelines differ:\nsingles\n%s\nbatch\n%s", text[0], text[1])
	}
}

// Replay as text writes a line per step of a batch, as for the singles;
// as jsonl it writes the stored event as it is, one line, its data the
// batch.
func TestReplayOfABatch(t *testing.T) {
	ctx := context.Background()
	sel := Selection{Stream: bus.StreamSteps, Tenant: "acme", Conversation: "b1"}
	var text [2]string
	for i, batched := range []bool{false, true} {
		h, steps := batchedTurn(t, batched)
		var b bytes.Buffer
		if _, err := Replay(ctx, h.JS, sel, ReplayConfig{Format: FormatText, Out: &b}); err != nil {
			t.Fatal(err)
		}
		text[i] = seqs.ReplaceAllString(b.String(), "#")
		if !batched {
			continue
		}
		b.Reset()
		if n, err := Replay(ctx, h.JS, sel, ReplayConfig{Format: FormatJSONL, Out: &b}); err != nil || n.Written != 1 {
			t.Fatalf("jsonl: %+v, %v", n, err)
		}
		var line struct {
			Type, ID string
			Data     json.RawMessage
		}
		if err := json.Unmarshal(b.Bytes(), &line); err != nil {
			t.Fatal(err)
		}
		var back schemas.Steps
		if line.Type != schemas.TypeSteps || line.ID != schemas.StepsEventID("acme", "b1", 1) || schemas.Validate(schemas.TypeSteps, line.Data) != nil ||
			json.Unmarshal(line.Data, &back) != nil || len(back.Steps) != len(steps) {
			t.Errorf("jsonl line %s", b.Bytes())
		}
	}
	if strings.Count(text[0], " STEP ") != 4 || text[0] != text[1] {
		t.Errorf("text replays differ:\nsingles\n%s\nbatch\n%s", text[0], text[1])
	}
}

// An experiment counts the state-changing calls of a batch as of singles.
func TestExperimentCountsABatchsCalls(t *testing.T) {
	ctx := context.Background()
	for _, batched := range []bool{false, true} {
		h, _ := batchedTurn(t, batched)
		_, convs, err := ExperimentConversations(ctx, h.JS, "acme", "e1")
		if err != nil || len(convs) != 1 || convs[0].StateChanges != 1 {
			t.Errorf("batched %v: %+v, %v; want one state change", batched, convs, err)
		}
	}
}
