package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reinception/rein/agentworker/taubench"
	"github.com/reinception/rein/inception"
	"github.com/reinception/rein/inception/learned"
	"github.com/reinception/rein/inception/rules"
	"github.com/reinception/rein/internal/app/audit"
	"github.com/reinception/rein/internal/labels"
	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
)

// recordTurn stores one user turn, the agent's reply and the detection m
// makes of the turn, as serve would have.
func recordTurn(t *testing.T, pub *streams.Publisher, m inception.Module, tenant, conv string, turn int, text string) schemas.Detection {
	t.Helper()
	ctx := context.Background()
	meta := schemas.Meta{Tenant: tenant, Conversation: conv, Turn: turn}
	for _, role := range []string{schemas.RoleUser, schemas.RoleAgent} {
		body := text
		if role == schemas.RoleAgent {
			body = "Let me look into that."
		}
		ev, err := schemas.NewEvent(schemas.TypeTurn, schemas.EventID("turn-"+role, tenant, conv, turn), "", meta, schemas.Turn{Role: role, Text: body, Turn: turn})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pub.Publish(ctx, bus.StreamTurns, bus.TurnSubject(tenant, conv, role), &ev); err != nil {
			t.Fatal(err)
		}
		if role == schemas.RoleAgent {
			break
		}
	}
	tools, err := taubench.ToolCatalogue("airline")
	if err != nil {
		t.Fatal(err)
	}
	dec, err := m.Detect(ctx, inception.Input{Tenant: tenant, Domain: "airline", Tools: tools,
		Dialogue: []inception.Utterance{{Role: schemas.RoleUser, Text: text}}})
	if err != nil {
		t.Fatal(err)
	}
	d := schemas.Detection{Turn: turn, UserText: text, Rein: dec.Rein, ErrorType: dec.ErrorType, Reasoning: dec.Reasoning,
		Module: m.Name(), TaxonomyVersion: dec.TaxonomyVersion, ModelVersion: dec.ModelVersion}
	ev, err := schemas.NewEvent(schemas.TypeDetection, schemas.EventID("detection", tenant, conv, turn), "", meta, d)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pub.Publish(ctx, bus.StreamDetections, bus.DetectionSubject(tenant, conv), &ev); err != nil {
		t.Fatal(err)
	}
	return d
}

// train runs rein train with args, writing the typed model to out, and
// returns the model and what the command printed.
func train(t *testing.T, out string, args ...string) (*learned.GateModel, string) {
	t.Helper()
	text, err := runCLI(t, context.Background(), append([]string{"train", "--typed-out", out}, args...)...)
	if err != nil {
		t.Fatalf("train: %v\n%s", err, text)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	g, err := learned.ParseGateModel(data)
	if err != nil {
		t.Fatal(err)
	}
	return g, text
}

// skyhop is a tenant's own word for something its airline does not offer:
// the shipped models have never seen it.
var skyhopTurns = []string{
	"Please do a skyhop on reservation ABC123.", "I want the skyhop for my trip to Boston.", "Can you skyhop me onto the earlier one?",
	"Is a skyhop possible for reservation XYZ789?", "My daughter wants a skyhop too.", "Skyhop please, booking 4WQ150.",
	"I'd like to skyhop my return leg.", "Add a skyhop to my booking, thanks.", "We need a skyhop for both of us.",
	"Do the skyhop thing on my Denver flight.", "Skyhop for reservation HAT001.", "Can I get a skyhop before Friday?",
}

var plainTurns = []string{
	"I want to change my flight to next Tuesday, reservation ABC123.", "What is the baggage allowance on my booking?",
	"Please cancel reservation XYZ789, I got travel insurance.", "Can you check the status of flight HAT001?",
	"I'd like to book a one way flight from JFK to SFO on May 20.", "Thanks, that's all I needed.",
	"My user id is mia_li_3668.", "Please use the credit card ending in 7447.", "Two passengers, economy.",
	"Yes, go ahead with the change.", "How many checked bags do I have?", "What's the refund for the cancelled leg?",
}

// rein train --labels learns a tenant's own word from its labels: the
// shipped typed classifier misses "skyhop" turns; trained on the corpus
// plus acme's labels (missed errors, and correct clear turns), the model
// flags a skyhop turn it has not seen. Another tenant's labels, which say
// the opposite, are not read.
//
// rein shadow --candidate then compares the trained model with the live one
// on acme's recorded turns: it flips the skyhop turns, and the labels
// measure the candidate's recall above the live module's.
func TestTrainLearnsATenantsLabels(t *testing.T) {
	t.Parallel()
	h := rtest.StartJetStream(t, "")
	ctx := context.Background()
	pub := streams.NewPublisher(h.JS, nil, streams.PublisherConfig{})
	shipped, err := rules.New(rules.Config{TypedModel: learned.DefaultTypedModel()})
	if err != nil {
		t.Fatal(err)
	}
	// Labelled once the day is over, so the labels record the queue's draw.
	labelDay := time.Now().UTC().Truncate(24 * time.Hour).Add(26 * time.Hour)
	put := func(tenant, conv, verdict, typ string) {
		t.Helper()
		_, err := labels.Put(ctx, h.JS, pub, labels.Request{Tenant: tenant, Conversation: conv, Turn: 1, Verdict: verdict, ErrorType: typ, Labeller: "ann"},
			labels.QueueConfig{}, labelDay)
		if err != nil {
			t.Fatalf("label %s/%s: %v", tenant, conv, err)
		}
	}
	for i, text := range skyhopTurns {
		for _, tenant := range []string{"acme", "globex"} {
			conv := fmt.Sprintf("s%02d", i)
			if d := recordTurn(t, pub, shipped, tenant, conv, 1, text); d.Rein {
				t.Fatalf("the shipped model already flags %q: the fixture proves nothing", text)
			}
			if tenant == "acme" {
				put(tenant, conv, schemas.VerdictMissedError, "unsupported_action")
			} else {
				put(tenant, conv, schemas.VerdictCorrect, "")
			}
		}
	}
	for i, text := range plainTurns {
		conv := fmt.Sprintf("p%02d", i)
		if d := recordTurn(t, pub, shipped, "acme", conv, 1, text); !d.Rein {
			put("acme", conv, schemas.VerdictCorrect, "")
		}
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "typed.json")
	conn := []string{"--nats-url", h.URL(), "--data-dir", h.Dir}
	g, text := train(t, out, append([]string{"--corpus", corpusDir, "--labels", "--tenant", "acme"}, conn...)...)
	if !slices.Contains(g.Training.Sources, "labels:acme") || !strings.Contains(text, g.Version()) {
		t.Errorf("sources %v, output %q: want labels:acme and the version %s", g.Training.Sources, text, g.Version())
	}
	if n := learned.DefaultTypedModel().Training.Examples; g.Training.Examples <= n {
		t.Errorf("%d turns trained on, want the corpus's %d plus acme's labels", g.Training.Examples, n)
	}
	if !strings.Contains(text, fmt.Sprintf("labelled turns of tenant acme (%d erroneous)", len(skyhopTurns))) {
		t.Errorf("output: %s", text)
	}
	learned, err := rules.New(rules.Config{TypedModel: g})
	if err != nil {
		t.Fatal(err)
	}
	fresh := inception.Input{Tenant: "acme", Domain: "airline", Dialogue: []inception.Utterance{{Role: schemas.RoleUser, Text: "Could I get a skyhop on my flight tomorrow?"}}}
	if d, _ := shipped.Detect(ctx, fresh); d.Rein {
		t.Fatalf("the shipped model flags the fresh turn already: %+v", d)
	}
	if d, err := learned.Detect(ctx, fresh); err != nil || !d.Rein || d.ErrorType != "unsupported_action" || d.ModelVersion != "typed@"+g.Version() {
		t.Errorf("the trained model on a fresh skyhop turn: %+v, %v", d, err)
	}

	// rein shadow --candidate: the candidate flips acme's skyhop turns the
	// live module left clear, and the labels measure both.
	text, err = runCLI(t, ctx, append([]string{"shadow", "--tenant", "acme", "--typed-model", "builtin", "--candidate", out, "--json"}, conn...)...)
	if err != nil {
		t.Fatalf("shadow: %v\n%s", err, text)
	}
	var rep audit.ShadowReport
	if err := json.Unmarshal([]byte(text), &rep); err != nil {
		t.Fatalf("%v: %s", err, text)
	}
	flippedSkyhop := 0
	for _, f := range rep.Flipped {
		if strings.Contains(strings.ToLower(f.UserText), "skyhop") && f.Recorded == audit.LabelNone && f.Shadow == "unsupported_action" {
			flippedSkyhop++
		}
	}
	recall := func(q string) labels.Estimate {
		row, _ := rep.Quality[q].Row("unsupported_action")
		return row.Recall
	}
	if flippedSkyhop < len(skyhopTurns)/2 || rep.Turns != len(skyhopTurns)+len(plainTurns) {
		t.Errorf("%d skyhop turns flipped of %d turns judged: %+v", flippedSkyhop, rep.Turns, rep.Flipped)
	}
	if live, cand := recall(audit.QualityBaseline), recall(audit.QualityShadow); live.Value != 0 || cand.Value <= 0.5 || cand.Labels != len(skyhopTurns) {
		t.Errorf("labelled recall of unsupported_action: live %+v, candidate %+v", live, cand)
	}
	table, err := runCLI(t, ctx, append([]string{"shadow", "--tenant", "acme", "--typed-model", "builtin", "--candidate", out}, conn...)...)
	if err != nil || !strings.Contains(table, "candidate "+out+" (sha256:") || !strings.Contains(table, "DECIDED BY") {
		t.Errorf("shadow table: %v\n%s", err, table)
	}

	// The test split is never trained on; --labels needs its tenant.
	for _, bad := range [][]string{
		{"train", "--corpus", corpusDir, "--train-splits", "dev,test", "--typed-out", out},
		{"train", "--corpus", corpusDir, "--labels", "--typed-out", out},
	} {
		if _, err := runCLI(t, ctx, append(bad, conn...)...); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
}
