package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reinception/rein/inception"
	"github.com/reinception/rein/inception/learned"
	"github.com/reinception/rein/inception/offline"
	"github.com/reinception/rein/inception/rules"
	"github.com/reinception/rein/internal/labels"
	"github.com/reinception/rein/internal/llm"
	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
)

// loopTenants: the replayed traffic is two tenants', one per domain.
var loopTenants = map[string]string{"airline": "air", "retail": "shop"}

// replayAsTraffic stores each corpus dialogue as a tenant's conversation
// (its turns in REIN_TURNS) with the detection m makes of its judged turn
// (REIN_DETECTIONS), the detector's path: the same module on the same
// dialogue. It returns each conversation's gold type ("" for clean).
func replayAsTraffic(t *testing.T, pub *streams.Publisher, m inception.Module, dialogues []inception.Example) map[string]string {
	t.Helper()
	ctx := context.Background()
	gold := map[string]string{}
	for _, e := range dialogues {
		tenant, conv := loopTenants[e.Input.Domain], e.ID
		turn := 0
		for _, u := range e.Input.Dialogue {
			if u.Role == inception.RoleUser {
				turn++
			}
			ev, err := schemas.NewEvent(schemas.TypeTurn, schemas.EventID("turn-"+u.Role, tenant, conv, turn), "",
				schemas.Meta{Tenant: tenant, Conversation: conv, Turn: turn}, schemas.Turn{Role: u.Role, Text: u.Text, Turn: turn})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := pub.Publish(ctx, bus.StreamTurns, bus.TurnSubject(tenant, conv, u.Role), &ev); err != nil {
				t.Fatal(err)
			}
		}
		in := e.Input
		in.Tenant = tenant
		dec, err := m.Detect(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		d := schemas.Detection{Turn: turn, UserText: in.Dialogue[len(in.Dialogue)-1].Text, Rein: dec.Rein, ErrorType: dec.ErrorType,
			Reasoning: dec.Reasoning, Module: m.Name(), TaxonomyVersion: dec.TaxonomyVersion, ModelVersion: dec.ModelVersion}
		ev, err := schemas.NewEvent(schemas.TypeDetection, schemas.EventID("detection", tenant, conv, turn), "", schemas.Meta{Tenant: tenant, Conversation: conv, Turn: turn}, d)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pub.Publish(ctx, bus.StreamDetections, bus.DetectionSubject(tenant, conv), &ev); err != nil {
			t.Fatal(err)
		}
		gold[tenant+"/"+conv] = e.ErrorType
	}
	return gold
}

// scriptedVerdict is what a labeller who knows the gold type says of a
// detection.
func scriptedVerdict(d labels.Detection, gold string) (verdict, typ string) {
	switch {
	case d.Rein && gold == d.ErrorType:
		return schemas.VerdictCorrect, ""
	case d.Rein && gold == "":
		return schemas.VerdictFalseActivation, ""
	case d.Rein:
		return schemas.VerdictWrongType, gold
	case gold != "":
		return schemas.VerdictMissedError, gold
	}
	return schemas.VerdictCorrect, ""
}

// The loop of docs/labels.md, offline: the corpus author the shipped
// models were not trained on (dev7) is replayed as two tenants' traffic,
// a scripted labeller labels the review queue of that day from the
// corpus's gold labels, rein train refits the typed classifier on the
// corpus's training splits plus those labels, and a later author (dev8),
// seen by neither model, is judged before and after. The test split is
// never read. Run with -v for the figures (docs/labels.md quotes them).
func TestLabelLoopBeforeAfter(t *testing.T) {
	t.Parallel()
	tau := filepath.Join("..", "..", "..", "shared", "taubench")
	if _, err := os.Stat(tau); err != nil {
		t.Skipf("the τ-bench data (../shared/taubench) the shipped model was trained with is missing: %v", err)
	}
	products, err := rules.LoadProductCatalogue(tau)
	if err != nil {
		t.Fatal(err)
	}
	shipped, err := rules.New(rules.Config{TypedModel: learned.DefaultTypedModel(), Products: products})
	if err != nil {
		t.Fatal(err)
	}
	src := &toolSource{cache: map[string][]llm.Tool{}}
	traffic, err := loadLabelled(filepath.Join(corpusDir, "dev7.jsonl"), "", src)
	if err != nil {
		t.Fatal(err)
	}
	later, err := loadLabelled(filepath.Join(corpusDir, "dev8.jsonl"), "", src)
	if err != nil {
		t.Fatal(err)
	}

	h := rtest.StartJetStream(t, "")
	ctx := context.Background()
	pub := streams.NewPublisher(h.JS, nil, streams.PublisherConfig{})
	gold := replayAsTraffic(t, pub, shipped, traffic)
	// The day's queue, drawn once the day is over, labelled in full.
	day := time.Now().UTC().Truncate(24 * time.Hour)
	now := day.Add(26 * time.Hour)
	q := labels.QueueConfig{Budget: labels.DefaultBudget, Day: day}
	queued := 0
	for _, tenant := range loopTenants {
		q.Tenant = tenant
		items, err := labels.Queue(ctx, h.JS, q, now)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range items {
			verdict, typ := scriptedVerdict(it.Detection, gold[tenant+"/"+it.Conversation])
			req := labels.Request{Tenant: tenant, Conversation: it.Conversation, Turn: it.Turn, Verdict: verdict, ErrorType: typ, Labeller: "script"}
			if _, err := labels.Put(ctx, h.JS, pub, req, q, now); err != nil {
				t.Fatal(err)
			}
		}
		queued += len(items)
	}
	ls, err := labels.Read(ctx, h.JS, labels.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	measured := labels.Quality(ls)
	if measured.Turns != queued || measured.AdHoc != 0 {
		t.Fatalf("%d labelled turns (%d outside the queue), want the %d queued", measured.Turns, measured.AdHoc, queued)
	}
	overall, _ := measured.Row(labels.RowOverall)

	out := filepath.Join(t.TempDir(), "typed.json")
	args := []string{"--corpus", corpusDir, "--taubench", tau, "--labels", "--nats-url", h.URL(), "--data-dir", h.Dir, "--tenant-domain", "shop=retail"}
	for _, tenant := range loopTenants {
		args = append(args, "--tenant", tenant)
	}
	retrained, text := train(t, out, args...)
	if want := learned.DefaultTypedModel().Training.Examples + queued; retrained.Training.Examples != want {
		t.Errorf("trained on %d turns, want the corpus's and the %d labelled (%s)", retrained.Training.Examples, queued, text)
	}
	after, err := rules.New(rules.Config{TypedModel: retrained, Products: products})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := rules.New(rules.Config{Products: products})
	if err != nil {
		t.Fatal(err)
	}
	score := func(m inception.Module, on []inception.Example) offline.EvalReport {
		r, err := offline.Evaluate(ctx, offline.EvalConfig{Module: m}, on)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	rules, before, afterR := score(plain, later), score(shipped, later), score(after, later)
	t.Logf("traffic: dev7 as tenants %v, %d turns; queue at budget %d: %d labelled; measured from them: precision %.3f [%.3f, %.3f], recall %.3f [%.3f, %.3f]",
		loopTenants, len(traffic), q.Budget, queued, overall.Precision.Value, overall.Precision.Lower, overall.Precision.Upper,
		overall.Recall.Value, overall.Recall.Lower, overall.Recall.Upper)
	var b strings.Builder
	fmt.Fprintf(&b, "\nlater author dev8 (%d turns): core recall, mean recall, erroneous detected, precision, clean false activations\n", len(later))
	for _, r := range []struct {
		name string
		r    offline.EvalReport
	}{{"rules alone", rules}, {"shipped typed (before)", before}, {"retrained with labels (after)", afterR}} {
		fmt.Fprintf(&b, "%-30s %.3f  %.3f  %5.1f%%  %5.1f%%  %4.1f%%\n", r.name, r.r.CoreRecall, r.r.MeanRecall, 100*r.r.Detected, 100*r.r.Precision, 100*r.r.CleanFalseActivation)
	}
	// The traffic itself, most of it now trained on: what the labels
	// taught, not how the model does on new wording.
	fmt.Fprintf(&b, "replayed traffic dev7 (%d turns, %d of them labelled and trained on)\n", len(traffic), queued)
	for _, r := range []struct {
		name string
		m    inception.Module
	}{{"shipped typed (before)", shipped}, {"retrained with labels (after)", after}} {
		rr := score(r.m, traffic)
		fmt.Fprintf(&b, "%-30s %.3f  %.3f  %5.1f%%  %5.1f%%  %4.1f%%\n", r.name, rr.CoreRecall, rr.MeanRecall, 100*rr.Detected, 100*rr.Precision, 100*rr.CleanFalseActivation)
	}
	t.Log(b.String())
	if afterR.Turns != before.Turns || afterR.Turns != len(later) {
		t.Fatalf("judged %d and %d of %d turns", before.Turns, afterR.Turns, len(later))
	}
}
