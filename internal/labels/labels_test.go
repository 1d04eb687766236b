package labels_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/reinception/rein/internal/labels"
	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
)

func TestMain(m *testing.M) { rtest.VerifyNoLeaks(m) }

// storeDetection stores the detection of one turn as the detector does.
func storeDetection(t *testing.T, h *rtest.JS, tenant, conv string, turn int, errType string) {
	t.Helper()
	d := schemas.Detection{Turn: turn, UserText: fmt.Sprintf("turn %d", turn), Module: "rules", ModelVersion: "typed@sha256:0123456789ab", TaxonomyVersion: "1"}
	if errType != "" {
		d.Rein, d.ErrorType, d.Reasoning = true, errType, "r"
	}
	meta := schemas.Meta{Tenant: tenant, Conversation: conv, Turn: turn}
	ev, err := schemas.NewEvent(schemas.TypeDetection, schemas.EventID("detection", tenant, conv, turn), "", meta, d)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := streams.NewPublisher(h.JS, nil, streams.PublisherConfig{}).Publish(context.Background(), bus.StreamDetections, bus.DetectionSubject(tenant, conv), &ev); err != nil {
		t.Fatal(err)
	}
}

func put(t *testing.T, h *rtest.JS, req labels.Request, now time.Time) (labels.Result, error) {
	t.Helper()
	return putQ(t, h, req, labels.QueueConfig{}, now)
}

func putQ(t *testing.T, h *rtest.JS, req labels.Request, q labels.QueueConfig, now time.Time) (labels.Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return labels.Put(ctx, h.JS, streams.NewPublisher(h.JS, nil, streams.PublisherConfig{}), req, q, now)
}

// A label is stored once per turn, labeller and content; a changed mind is
// stored and counts; each tenant reads its own labels only, even for a
// conversation id both tenants use.
func TestLabelsAreIdempotentAndTenantBound(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	storeDetection(t, h, "acme", "c1", 1, "anaphora")
	storeDetection(t, h, "globex", "c1", 1, "")
	now := time.Now()
	req := labels.Request{Tenant: "acme", Conversation: "c1", Turn: 1, Verdict: schemas.VerdictCorrect, Labeller: "ann"}
	r, err := put(t, h, req, now)
	if err != nil || r.Unchanged || r.Label.DetectedType != "anaphora" || !r.Label.Detected || r.Label.DetectionID != "detection.acme.c1.1" ||
		r.Label.ModelVersion != "typed@sha256:0123456789ab" {
		t.Fatalf("first label: %+v, %v", r, err)
	}
	if r, err := put(t, h, req, now); err != nil || !r.Unchanged {
		t.Fatalf("the same label again: %+v, %v; want unchanged", r, err)
	}
	if n := h.StreamMsgs(t, bus.StreamLabels); n != 1 {
		t.Fatalf("REIN_LABELS holds %d, want 1", n)
	}
	// The same label published twice (two replicas of a dashboard) is one message.
	ev, err := schemas.NewEvent(schemas.TypeLabel, schemas.LabelMsgID("acme", "c1", 1, r.Label), "", schemas.Meta{Tenant: "acme", Conversation: "c1", Turn: 1}, r.Label)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := streams.NewPublisher(h.JS, nil, streams.PublisherConfig{}).Publish(context.Background(), bus.StreamLabels, bus.LabelSubject("acme", "c1", 1, "ann"), &ev); err != nil {
		t.Fatal(err)
	}
	if n := h.StreamMsgs(t, bus.StreamLabels); n != 1 {
		t.Fatalf("a duplicate publish: REIN_LABELS holds %d, want 1", n)
	}
	req.Verdict, req.ErrorType = schemas.VerdictWrongType, "contradiction"
	if _, err := put(t, h, req, now); err != nil {
		t.Fatal(err)
	}
	if _, err := put(t, h, labels.Request{Tenant: "globex", Conversation: "c1", Turn: 1, Verdict: schemas.VerdictMissedError, ErrorType: "unsupported_action", Labeller: "bob"}, now); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	acme, err := labels.Read(ctx, h.JS, labels.Filter{Tenant: "acme"})
	if err != nil || len(acme) != 1 || acme[0].Label.Verdict != schemas.VerdictWrongType || acme[0].Tenant != "acme" {
		t.Fatalf("acme's labels: %+v, %v; want its last label only", acme, err)
	}
	globex, err := labels.Read(ctx, h.JS, labels.Filter{Tenant: "globex", Conversation: "c1"})
	if err != nil || len(globex) != 1 || globex[0].Tenant != "globex" || globex[0].Label.Labeller != "bob" {
		t.Fatalf("globex's labels: %+v, %v", globex, err)
	}
	all, err := labels.Read(ctx, h.JS, labels.Filter{})
	if err != nil || len(all) != 2 {
		t.Fatalf("every tenant: %d labels, %v", len(all), err)
	}
}

// A label that does not fit its detection, or names no stored turn, is
// refused with the reason.
func TestLabelChecks(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	storeDetection(t, h, "acme", "c1", 1, "anaphora")
	storeDetection(t, h, "acme", "c1", 2, "")
	now := time.Now()
	cases := []struct {
		req  labels.Request
		want error
	}{
		{labels.Request{Tenant: "acme", Conversation: "c1", Turn: 1, Verdict: schemas.VerdictMissedError, ErrorType: "anaphora", Labeller: "a"}, labels.ErrBadLabel},
		{labels.Request{Tenant: "acme", Conversation: "c1", Turn: 2, Verdict: schemas.VerdictFalseActivation, Labeller: "a"}, labels.ErrBadLabel},
		{labels.Request{Tenant: "acme", Conversation: "c1", Turn: 1, Verdict: schemas.VerdictWrongType, ErrorType: "anaphora", Labeller: "a"}, labels.ErrBadLabel},
		{labels.Request{Tenant: "acme", Conversation: "c1", Turn: 1, Verdict: schemas.VerdictWrongType, Labeller: "a"}, labels.ErrBadLabel},
		{labels.Request{Tenant: "acme", Conversation: "c1", Turn: 2, Verdict: schemas.VerdictCorrect, ErrorType: "anaphora", Labeller: "a"}, labels.ErrBadLabel},
		{labels.Request{Tenant: "acme", Conversation: "c1", Turn: 1, Verdict: "maybe", Labeller: "a"}, labels.ErrBadLabel},
		{labels.Request{Tenant: "acme", Conversation: "c1", Turn: 1, Verdict: schemas.VerdictCorrect, Labeller: "a.b"}, labels.ErrBadLabel},
		{labels.Request{Tenant: "acme.x", Conversation: "c1", Turn: 1, Verdict: schemas.VerdictCorrect, Labeller: "a"}, labels.ErrBadLabel},
		{labels.Request{Tenant: "globex", Conversation: "c1", Turn: 1, Verdict: schemas.VerdictCorrect, Labeller: "a"}, labels.ErrNoDetection},
		{labels.Request{Tenant: "acme", Conversation: "c1", Turn: 3, Verdict: schemas.VerdictCorrect, Labeller: "a"}, labels.ErrNoDetection},
	}
	for _, c := range cases {
		if _, err := put(t, h, c.req, now); !errors.Is(err, c.want) {
			t.Errorf("%+v: %v, want %v", c.req, err, c.want)
		}
	}
	if n := h.StreamMsgs(t, bus.StreamLabels); n != 0 {
		t.Errorf("refused labels stored: %d", n)
	}
}

// The queue is the same on every draw, holds every turn of a stratum
// smaller than its share, samples the others at the stated probability,
// waits for the day's end, and a label of a drawn turn records its draw.
func TestSamplerDrawsDeterministicStrata(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	for i := 1; i <= 200; i++ {
		storeDetection(t, h, "acme", fmt.Sprintf("c%d", i), 1, "")
	}
	for i := 1; i <= 3; i++ {
		storeDetection(t, h, "acme", fmt.Sprintf("u%d", i), 1, "unsupported_action")
	}
	for i := 1; i <= 40; i++ {
		storeDetection(t, h, "acme", fmt.Sprintf("a%d", i), 1, "anaphora")
	}
	storeDetection(t, h, "globex", "c1", 1, "anaphora")
	ctx := context.Background()
	today := time.Now().UTC().Truncate(24 * time.Hour)
	q := labels.QueueConfig{Tenant: "acme", Day: today, Budget: 20}
	if _, err := labels.Queue(ctx, h.JS, q, time.Now()); !errors.Is(err, labels.ErrDayNotOver) {
		t.Fatalf("today's queue: %v, want ErrDayNotOver", err)
	}
	tomorrow := today.Add(25 * time.Hour)
	first, err := labels.Queue(ctx, h.JS, q, tomorrow)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := labels.Queue(ctx, h.JS, q, tomorrow)
	if fmt.Sprint(first) != fmt.Sprint(again) || len(first) == 0 {
		t.Fatalf("two draws differ or are empty: %d, %d", len(first), len(again))
	}
	// Budget 20, half for clean turns: unsupported_action's share (5) holds
	// its 3 turns (π 1); the other 17 go 2:1 to clean and anaphora.
	want := map[string]float64{schemas.StratumClean: 17 * 2.0 / 3 / 200, "unsupported_action": 1, "anaphora": 17.0 / 3 / 40}
	got := map[string]int{}
	for _, it := range first {
		if it.Tenant != "acme" {
			t.Fatalf("another tenant's turn in acme's queue: %+v", it)
		}
		if math.Abs(it.Sample.Probability-want[it.Sample.Stratum]) > 1e-9 {
			t.Errorf("%s: π %v, want %v", it.Sample.Stratum, it.Sample.Probability, want[it.Sample.Stratum])
		}
		if it.Sample.Day != today.Format(time.DateOnly) {
			t.Errorf("day %s", it.Sample.Day)
		}
		got[it.Sample.Stratum]++
	}
	if got["unsupported_action"] != 3 || got[schemas.StratumClean] == 0 || got["anaphora"] == 0 {
		t.Errorf("strata drawn %v", got)
	}
	// Another key, another queue (of the same design).
	q2 := q
	q2.Key = "other"
	if other, _ := labels.Queue(ctx, h.JS, q2, tomorrow); fmt.Sprint(other) == fmt.Sprint(first) {
		t.Error("another key drew the same queue")
	}
	it := first[0]
	r, err := putQ(t, h, labels.Request{Tenant: "acme", Conversation: it.Conversation, Turn: 1, Verdict: schemas.VerdictCorrect, Labeller: "ann"}, q, tomorrow)
	if err != nil || r.Label.Sample == nil || *r.Label.Sample != it.Sample {
		t.Fatalf("label of a queued turn: %+v, %v; want its draw %+v", r.Label.Sample, err, it.Sample)
	}
	// A turn the queue left out is an ad hoc label.
	for i := 1; i <= 200; i++ {
		conv := fmt.Sprintf("c%d", i)
		if labels.Uniform(labels.DefaultKey, "acme", conv, 1) >= want[schemas.StratumClean] {
			r, err := putQ(t, h, labels.Request{Tenant: "acme", Conversation: conv, Turn: 1, Verdict: schemas.VerdictCorrect, Labeller: "ann"}, q, tomorrow)
			if err != nil || r.Label.Sample != nil {
				t.Fatalf("label outside the queue: %+v, %v", r.Label.Sample, err)
			}
			break
		}
	}
}

// Draw's allocation: a stratum smaller than its share is taken whole and
// its leftover goes to the others; with no clean turns the activated types
// share the whole budget.
func TestSamplerAllocation(t *testing.T) {
	p := labels.Draw(labels.QueueConfig{Budget: 10}, map[string]int{schemas.StratumClean: 2, "anaphora": 100})
	if p.Probability[schemas.StratumClean] != 1 || math.Abs(p.Probability["anaphora"]-0.08) > 1e-12 {
		t.Errorf("small clean stratum: %v", p.Probability)
	}
	p = labels.Draw(labels.QueueConfig{Budget: 10}, map[string]int{"anaphora": 20, "contradiction": 20})
	if p.Probability["anaphora"] != 0.25 || p.Probability["contradiction"] != 0.25 {
		t.Errorf("no clean turns: %v", p.Probability)
	}
	p = labels.Draw(labels.QueueConfig{Budget: 10, CleanShare: 0.8}, map[string]int{schemas.StratumClean: 100, "anaphora": 100})
	if p.Probability[schemas.StratumClean] != 0.08 || math.Abs(p.Probability["anaphora"]-0.02) > 1e-12 {
		t.Errorf("clean share 0.8: %v", p.Probability)
	}
}

func label(tenant, conv string, turn int, verdict, detected, right string, pi float64) labels.Stored {
	l := schemas.Label{Turn: turn, Verdict: verdict, ErrorType: right, Labeller: "ann", DetectionID: "d", Detected: detected != "", DetectedType: detected}
	if pi > 0 {
		l.Sample = &schemas.LabelSample{Day: "2026-12-01", Stratum: "x", Population: 1, Probability: pi}
	}
	return labels.Stored{Tenant: tenant, Conversation: conv, Label: l}
}

// Precision and recall are weighted by 1/π: one missed error among the
// clean turns drawn at π 0.01 stands for a hundred, and labels outside
// the queue are not counted.
func TestQualityIsHorvitzThompson(t *testing.T) {
	var ls []labels.Stored
	// 10 anaphora activations drawn at π 1: 8 right, 1 false, 1 of another type.
	for i := range 8 {
		ls = append(ls, label("acme", fmt.Sprintf("a%d", i), 1, schemas.VerdictCorrect, "anaphora", "", 1))
	}
	ls = append(ls, label("acme", "f", 1, schemas.VerdictFalseActivation, "anaphora", "", 1),
		label("acme", "w", 1, schemas.VerdictWrongType, "anaphora", "contradiction", 1))
	// 10 clean turns drawn at π 0.01 (standing for 1,000): one missed anaphora.
	for i := range 9 {
		ls = append(ls, label("acme", fmt.Sprintf("c%d", i), 1, schemas.VerdictCorrect, "", "", 0.01))
	}
	ls = append(ls, label("acme", "m", 1, schemas.VerdictMissedError, "", "anaphora", 0.01))
	// Ad hoc: not counted.
	ls = append(ls, label("acme", "x", 1, schemas.VerdictMissedError, "", "anaphora", 0))
	r := labels.Quality(ls)
	if r.Weighted != 20 || r.AdHoc != 1 || r.Turns != 20 {
		t.Fatalf("counts %+v", r)
	}
	ana, _ := r.Row("anaphora")
	if ana.Precision.Value != 0.8 || ana.Precision.Labels != 10 {
		t.Errorf("anaphora precision %+v, want 0.8 of 10", ana.Precision)
	}
	// Recall: 8 found of 8 + 100 missed (one clean label weighs 100).
	if math.Abs(ana.Recall.Value-8.0/108) > 1e-12 || ana.Recall.Labels != 9 {
		t.Errorf("anaphora recall %+v, want 8/108 of 9 labels", ana.Recall)
	}
	if !(ana.Recall.Lower < ana.Recall.Value && ana.Recall.Value < ana.Recall.Upper) {
		t.Errorf("interval %+v does not hold the estimate", ana.Recall)
	}
	all, _ := r.Row(labels.RowOverall)
	anyErr, _ := r.Row(labels.RowAnyError)
	if all.Precision.Value != 0.8 || anyErr.Precision.Value != 0.9 {
		t.Errorf("overall precision %v (want 0.8), any error %v (want 0.9)", all.Precision.Value, anyErr.Precision.Value)
	}
	if con, ok := r.Row("contradiction"); !ok || con.Recall.Value != 0 || con.Recall.Labels != 1 || con.Precision.Defined() {
		t.Errorf("contradiction %+v", con)
	}
}

// Wilson's interval matches the textbook values.
func TestWilson(t *testing.T) {
	lo, hi := labels.Wilson(0.8, 10)
	if math.Abs(lo-0.4902) > 1e-4 || math.Abs(hi-0.9433) > 1e-4 {
		t.Errorf("Wilson(0.8, 10) = %.4f..%.4f, want 0.4902..0.9433", lo, hi)
	}
	if lo, hi := labels.Wilson(0, 0); lo != 0 || hi != 1 {
		t.Errorf("no trials: %v..%v", lo, hi)
	}
}

// Two labellers of one turn: the turn counts once, with the latest label.
func TestQualityTakesTheLatestLabelOfATurn(t *testing.T) {
	early := label("acme", "c1", 1, schemas.VerdictFalseActivation, "anaphora", "", 1)
	late := label("acme", "c1", 1, schemas.VerdictCorrect, "anaphora", "", 1)
	early.Time, late.Time = time.Unix(100, 0), time.Unix(200, 0)
	for _, ls := range [][]labels.Stored{{early, late}, {late, early}} {
		r := labels.Quality(ls)
		row, _ := r.Row("anaphora")
		if r.Turns != 1 || row.Precision.Value != 1 || row.Precision.Labels != 1 {
			t.Errorf("turns %d, precision %+v: want the later label's 1 of 1", r.Turns, row.Precision)
		}
	}
}

// Few-shot examples are each tenant's own labelled turns, corrections
// first, bounded, with the detection's user text and the label's truth.
func TestFewShotTakesEachTenantsCorrectionsFirst(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	now := time.Now()
	storeDetection(t, h, "acme", "c1", 1, "")
	storeDetection(t, h, "acme", "c2", 1, "anaphora")
	storeDetection(t, h, "acme", "c3", 1, "anaphora")
	storeDetection(t, h, "acme", "c4", 2, "")
	storeDetection(t, h, "globex", "c1", 1, "")
	for _, r := range []labels.Request{
		{Tenant: "acme", Conversation: "c1", Turn: 1, Verdict: schemas.VerdictCorrect},
		{Tenant: "acme", Conversation: "c2", Turn: 1, Verdict: schemas.VerdictFalseActivation},
		{Tenant: "acme", Conversation: "c3", Turn: 1, Verdict: schemas.VerdictCorrect},
		{Tenant: "acme", Conversation: "c4", Turn: 2, Verdict: schemas.VerdictMissedError, ErrorType: "unsupported_action"},
		{Tenant: "globex", Conversation: "c1", Turn: 1, Verdict: schemas.VerdictMissedError, ErrorType: "anaphora"},
	} {
		r.Labeller = "ann"
		if _, err := put(t, h, r, now); err != nil {
			t.Fatal(err)
		}
	}
	ex, err := labels.FewShot(context.Background(), h.JS, 3)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ex["acme"] {
		text, _ := e.Input.LastUser()
		got = append(got, fmt.Sprintf("%s %q %v %s", e.ID, text, e.Rein, e.ErrorType))
	}
	want := []string{
		`label/acme/c4/2 "turn 2" true unsupported_action`,
		`label/acme/c2/1 "turn 1" false `,
		`label/acme/c3/1 "turn 1" true anaphora`,
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("acme's examples:\n%s\nwant\n%s", got, want)
	}
	if g := ex["globex"]; len(g) != 1 || g[0].ErrorType != "anaphora" || g[0].Input.Tenant != "globex" {
		t.Errorf("globex's examples: %+v", g)
	}
}

// With a DayCache, a day's population is read once: later draws of the
// day use it even if the stream says otherwise (a finished day gains no
// detections, so only a cache explains the same answer).
func TestDayCacheReadsADayOnce(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	ctx := context.Background()
	for i := range 3 {
		storeDetection(t, h, "acme", fmt.Sprintf("c%d", i), 1, "")
	}
	det, err := labels.FindDetection(ctx, h.JS, "acme", "c0", 1)
	if err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(48 * time.Hour)
	cached := labels.QueueConfig{Tenant: "acme", Days: &labels.DayCache{}}
	first, ok, err := labels.SampleOf(ctx, h.JS, cached, det, later)
	if err != nil || !ok || first.Population != 3 {
		t.Fatalf("first draw %+v %v %v, want the 3 clean turns", first, ok, err)
	}
	for i := 3; i < 6; i++ {
		storeDetection(t, h, "acme", fmt.Sprintf("c%d", i), 1, "")
	}
	if again, _, err := labels.SampleOf(ctx, h.JS, cached, det, later); err != nil || again != first {
		t.Errorf("cached draw %+v %v, want %+v", again, err, first)
	}
	if fresh, _, err := labels.SampleOf(ctx, h.JS, labels.QueueConfig{Tenant: "acme"}, det, later); err != nil || fresh.Population != 6 {
		t.Errorf("uncached draw %+v %v, want the 6 turns stored", fresh, err)
	}
}
