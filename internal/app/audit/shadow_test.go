package audit

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/reinception/rein/inception"
	"github.com/reinception/rein/inception/rules"
	"github.com/reinception/rein/internal/labels"
	"github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
)

// taxonomyWithout is the default taxonomy minus one error type.
func taxonomyWithout(t *testing.T, drop string) *inception.Taxonomy {
	t.Helper()
	var doc map[string]any
	if err := yaml.Unmarshal(inception.DefaultTaxonomyYAML(), &doc); err != nil {
		t.Fatal(err)
	}
	var kept []any
	for _, e := range doc["error_types"].([]any) {
		if e.(map[string]any)["name"] != drop {
			kept = append(kept, e)
		}
	}
	if len(kept) == len(doc["error_types"].([]any)) {
		t.Fatalf("no error type %s in the default taxonomy", drop)
	}
	doc["error_types"] = kept
	doc["version"] = "test-without-" + drop
	raw, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	tax, err := inception.ParseTaxonomy("without.yaml", raw)
	if err != nil {
		t.Fatal(err)
	}
	return tax
}

// shadowUserTexts mixes turns the default rules flag with several types
// and turns they leave clear.
var shadowUserTexts = []string{
	"Can you book me a hotel in Paris?",
	"I want to cancel or return my order.",
	"Hi, I need to change my flight.",
	"I also need a car rental at the airport.",
	"I want a price match on my ticket.",
	"Thanks, that's all.",
}

// recordWith publishes, for every user turn, the detection the module
// makes, as the detector stage would have recorded it.
func recordWith(t *testing.T, js *testutil.JS, m inception.Module, convs int) map[string]string {
	t.Helper()
	labels := map[string]string{}
	var outs []streams.Out
	i := 0
	for c := range convs {
		conv := fmt.Sprintf("s%02d", c)
		var dialogue []inception.Utterance
		for turn := 1; turn <= 3; turn++ {
			text := shadowUserTexts[i%len(shadowUserTexts)]
			i++
			at := t0.Add(time.Duration(c*10+turn) * time.Second)
			outs = append(outs, turnOut(t, "acme", conv, turn, schemas.RoleUser, text, at))
			dialogue = append(dialogue, inception.Utterance{Role: schemas.RoleUser, Text: text})
			dec, err := m.Detect(context.Background(), inception.Input{Tenant: "acme", Domain: "airline", Dialogue: dialogue})
			if err != nil {
				t.Fatal(err)
			}
			det := schemas.Detection{Turn: turn, UserText: text, Rein: dec.Rein, ErrorType: dec.ErrorType, Category: dec.Category,
				RecoveryTool: dec.RecoveryTool, Reasoning: dec.Reasoning, Module: m.Name(), TaxonomyVersion: dec.TaxonomyVersion}
			outs = append(outs, ev(t, streams.StreamDetections, streams.DetectionSubject("acme", conv), schemas.TypeDetection,
				schemas.EventID("detection", "acme", conv, turn), schemas.Meta{Tenant: "acme", Conversation: conv, Turn: turn}, at, det))
			labels[fmt.Sprintf("%s/%d", conv, turn)] = labelOf(dec.Rein, dec.Failed, dec.ErrorType)
			agent := "Let me check that for you."
			outs = append(outs, turnOut(t, "acme", conv, turn, schemas.RoleAgent, agent, at))
			dialogue = append(dialogue, inception.Utterance{Role: schemas.RoleAgent, Text: agent})
		}
	}
	publish(t, js, outs...)
	return labels
}

func TestShadow(t *testing.T) {
	js := testutil.StartJetStream(t, "")
	def, err := rules.New(rules.Config{})
	if err != nil {
		t.Fatal(err)
	}
	recorded := recordWith(t, js, def, 8)
	const drop = "unsupported_domain"
	var dropped, others int
	for _, l := range recorded {
		switch l {
		case drop:
			dropped++
		case LabelNone:
		default:
			others++
		}
	}
	if dropped < 2 || others < 2 {
		t.Fatalf("fixture too weak: %d %s, %d other activations", dropped, drop, others)
	}
	ctx := context.Background()

	t.Run("same taxonomy agrees everywhere", func(t *testing.T) {
		rep, err := Shadow(ctx, js.JS, ShadowConfig{Module: def})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Turns != len(recorded) || rep.Flips != 0 || rep.Agreements != rep.Turns || rep.Unrecorded != 0 {
			t.Fatalf("%+v", rep)
		}
	})

	t.Run("dropped type flips exactly its turns", func(t *testing.T) {
		m, err := rules.New(rules.Config{Taxonomy: taxonomyWithout(t, drop)})
		if err != nil {
			t.Fatal(err)
		}
		rep, err := Shadow(ctx, js.JS, ShadowConfig{Module: m})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Flips != dropped || rep.Agreements != len(recorded)-dropped || len(rep.Flipped) != dropped {
			t.Fatalf("flips %d, agreements %d, want %d and %d", rep.Flips, rep.Agreements, dropped, len(recorded)-dropped)
		}
		for _, f := range rep.Flipped {
			if f.Recorded != drop || f.Shadow == drop || recorded[fmt.Sprintf("%s/%d", f.Conversation, f.Turn)] != drop {
				t.Errorf("unexpected flip %+v", f)
			}
		}
		for _, r := range rep.Types {
			if r.Label == drop && (r.Recorded != dropped || r.Lost != dropped || r.Agree != 0 || r.Shadow != 0) {
				t.Errorf("row %+v", r)
			}
			if r.Label != drop && r.Lost != 0 {
				t.Errorf("row %+v lost turns", r)
			}
		}
		if rep.TaxonomyVersion != "test-without-"+drop {
			t.Errorf("taxonomy version %q", rep.TaxonomyVersion)
		}
	})

	t.Run("candidate against a live module, measured on labels", func(t *testing.T) {
		cand, err := rules.New(rules.Config{Taxonomy: taxonomyWithout(t, drop)})
		if err != nil {
			t.Fatal(err)
		}
		// Every turn labelled right as recorded, drawn with certainty, and
		// one turn outside the replay (another tenant's) the figures skip.
		var ls []labels.Stored
		for k, l := range recorded {
			conv, turnText, _ := strings.Cut(k, "/")
			turn, _ := strconv.Atoi(turnText)
			lab := schemas.Label{Turn: turn, Verdict: schemas.VerdictCorrect, Labeller: "ann", Detected: l != LabelNone,
				Sample: &schemas.LabelSample{Probability: 1}}
			if lab.Detected {
				lab.DetectedType = l
			}
			ls = append(ls, labels.Stored{Tenant: "acme", Conversation: conv, Label: lab})
		}
		ls = append(ls, labels.Stored{Tenant: "other", Conversation: "s00", Label: schemas.Label{Turn: 1, Verdict: schemas.VerdictMissedError,
			ErrorType: drop, Labeller: "ann", Sample: &schemas.LabelSample{Probability: 1}}})
		rep, err := Shadow(ctx, js.JS, ShadowConfig{Module: cand, Baseline: def, Labels: ls})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Baseline != def.Name() || rep.Flips != dropped || rep.Turns != len(recorded) || rep.Unrecorded != 0 {
			t.Fatalf("baseline %q, %d flips of %d turns (%d unrecorded), want %d flips", rep.Baseline, rep.Flips, rep.Turns, rep.Unrecorded, dropped)
		}
		recall := func(q, typ string) labels.Estimate {
			row, ok := rep.Quality[q].Row(typ)
			if !ok {
				t.Fatalf("%s: no row %s in %+v", q, typ, rep.Quality[q])
			}
			return row.Recall
		}
		if r := recall(QualityBaseline, drop); r.Value != 1 || r.Labels != dropped {
			t.Errorf("live recall of %s %+v, want 1 on %d labels", drop, r, dropped)
		}
		if r := recall(QualityShadow, drop); r.Value != 0 || r.Labels != dropped || r.Upper >= 1 {
			t.Errorf("candidate recall of %s %+v, want 0 on %d labels", drop, r, dropped)
		}
		// The recorded figures count the other tenant's miss too: no replay
		// is needed to know what was recorded.
		if r := recall(QualityRecorded, drop); r.Labels != dropped+1 {
			t.Errorf("recorded recall of %s %+v, want %d labels", drop, r, dropped+1)
		}
	})

	t.Run("conversation list and time range", func(t *testing.T) {
		m, _ := rules.New(rules.Config{Taxonomy: taxonomyWithout(t, drop)})
		rep, err := Shadow(ctx, js.JS, ShadowConfig{Module: m, TurnSelection: TurnSelection{Conversations: []ConvRef{{"acme", "s00"}, {"acme", "s03"}}}})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Turns != 6 {
			t.Fatalf("%d turns, want 6", rep.Turns)
		}
		for _, f := range rep.Flipped {
			if f.Conversation != "s00" && f.Conversation != "s03" {
				t.Errorf("flip outside the list: %+v", f)
			}
		}
		// Until before every stored turn judges nothing.
		rep, err = Shadow(ctx, js.JS, ShadowConfig{Module: m, TurnSelection: TurnSelection{Until: time.Now().Add(-time.Hour)}})
		if err != nil || rep.Turns != 0 {
			t.Fatalf("%v %+v", err, rep)
		}
	})

	t.Run("publishes nothing", func(t *testing.T) {
		if n := js.StreamMsgs(t, streams.StreamDetections); n != uint64(len(recorded)) {
			t.Fatalf("detections stream holds %d, want %d", n, len(recorded))
		}
	})
}
