package detector_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	ptest "github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/reinception/rein/detector"
	"github.com/reinception/rein/inception"
	"github.com/reinception/rein/internal/llm"
	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
)

// fakeModule records what it was shown and answers by a function.
type fakeModule struct {
	mu     sync.Mutex
	seen   [][]inception.Utterance
	answer func(ctx context.Context, in inception.Input) (inception.Decision, error)
}

func (f *fakeModule) Name() string { return "fake" }
func (f *fakeModule) Detect(ctx context.Context, in inception.Input) (inception.Decision, error) {
	f.mu.Lock()
	f.seen = append(f.seen, in.Dialogue)
	f.mu.Unlock()
	return f.answer(ctx, in)
}

func startStage(t *testing.T, h *rtest.JS, m inception.Module, reg prometheus.Registerer, timeout time.Duration) func() {
	t.Helper()
	st, err := detector.New(detector.Config{TaxonomyVersion: "test-1", Timeout: timeout}, detector.Deps{
		StageDeps: streams.StageDeps{JS: h.JS, Publisher: streams.NewPublisher(h.JS, reg, streams.PublisherConfig{}), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Registerer: reg},
		Module:    m,
		Tools:     func(string) ([]llm.Tool, error) { return []llm.Tool{{Name: "cancel_reservation"}}, nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	return rtest.Run(t, "stage", st.Run)
}

func publishTurn(t *testing.T, h *rtest.JS, conv, role string, turn int, text string) {
	t.Helper()
	ev, err := schemas.NewEvent(schemas.TypeTurn, schemas.EventID("turn", "acme", conv, turn)+"-"+role, "",
		schemas.Meta{Tenant: "acme", Conversation: conv, Turn: turn}, schemas.Turn{Role: role, Text: text, Turn: turn})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := streams.NewPublisher(h.JS, nil, streams.PublisherConfig{}).Publish(context.Background(), bus.StreamTurns, bus.TurnSubject("acme", conv, role), &ev); err != nil {
		t.Fatal(err)
	}
}

// detections reads REIN_DETECTIONS by event id.
func detections(t *testing.T, h *rtest.JS) map[string]schemas.Detection {
	t.Helper()
	out := map[string]schemas.Detection{}
	for _, e := range storedPayloads[schemas.Detection](t, h, bus.StreamDetections) {
		out[e.id] = e.data
	}
	return out
}

// payload is one stored event's id and data.
type payload[T any] struct {
	id   string
	data T
}

// storedPayloads reads a stream's events in order, each event's data
// decoded as T; an undecodable message fails the test.
func storedPayloads[T any](t *testing.T, h *rtest.JS, stream string) []payload[T] {
	t.Helper()
	var out []payload[T]
	err := streams.ReadStream(context.Background(), h.JS, stream, streams.ReadOptions{}, func(r streams.Raw) error {
		if r.Decoded == nil {
			t.Fatalf("undecodable message in %s at %d", stream, r.Sequence)
		}
		var v T
		if err := r.Decoded.Payload(&v); err != nil {
			return err
		}
		out = append(out, payload[T]{r.Decoded.Event.ID(), v})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestStagePublishesOneDetectionPerUserTurnWithSurfaceContext(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	reg := prometheus.NewRegistry()
	m := &fakeModule{answer: func(_ context.Context, in inception.Input) (inception.Decision, error) {
		if in.Dialogue[len(in.Dialogue)-1].Text == "cancel that one" {
			return inception.Decision{Rein: true, ErrorType: "anaphora", Category: "ambiguous", RecoveryTool: "ambiguity_report",
				Evidence: "that one", Reasoning: "plan"}, nil
		}
		return inception.Decision{}, nil
	}}
	stop := startStage(t, h, m, reg, time.Second)
	publishTurn(t, h, "c1", "user", 1, "hi, I have three bookings")
	publishTurn(t, h, "c1", "agent", 1, "Which one can I help with?")
	publishTurn(t, h, "c1", "user", 2, "cancel that one")
	rtest.CheckFor(t, 10*time.Second, "two detections", func() bool { return len(detections(t, h)) == 2 })
	ds := detections(t, h)
	d2 := ds["detection.acme.c1.2"]
	if !d2.Rein || d2.ErrorType != "anaphora" || d2.UserText != "cancel that one" || d2.TaxonomyVersion != "test-1" || d2.Module != "fake" {
		t.Errorf("turn 2 detection = %+v", d2)
	}
	if d1 := ds["detection.acme.c1.1"]; d1.Rein || d1.Failed {
		t.Errorf("turn 1 detection = %+v", d1)
	}
	m.mu.Lock()
	last := m.seen[len(m.seen)-1]
	m.mu.Unlock()
	if len(last) != 3 || last[1].Role != "agent" || last[2].Text != "cancel that one" {
		t.Errorf("surface context = %+v", last)
	}
	if got := ptest.ToFloat64(mustCounter(t, reg, "rein_detector_activations_total")); got != 1 {
		t.Errorf("activations = %v", got)
	}

	// Restart: a new stage instance rebuilds the context from the stream.
	stop()
	m2 := &fakeModule{answer: m.answer}
	startStage(t, h, m2, prometheus.NewRegistry(), time.Second)
	publishTurn(t, h, "c1", "user", 3, "thanks")
	rtest.CheckFor(t, 10*time.Second, "third detection", func() bool { return len(detections(t, h)) == 3 })
	m2.mu.Lock()
	defer m2.mu.Unlock()
	if got := m2.seen[0]; len(got) != 4 || got[0].Text != "hi, I have three bookings" {
		t.Errorf("rebuilt context = %+v", got)
	}
}

func mustCounter(t *testing.T, reg *prometheus.Registry, name string) prometheus.Collector {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			c := prometheus.NewCounter(prometheus.CounterOpts{Name: "x"})
			var sum float64
			for _, m := range mf.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
			c.Add(sum)
			return c
		}
	}
	t.Fatalf("metric %s not found", name)
	return nil
}

func TestStageFailsOpen(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	m := &fakeModule{answer: func(ctx context.Context, in inception.Input) (inception.Decision, error) {
		if in.Dialogue[len(in.Dialogue)-1].Text == "slow" {
			<-ctx.Done() // past the deadline
			return inception.Decision{}, ctx.Err()
		}
		return inception.Decision{}, errors.New("model returned 500")
	}}
	startStage(t, h, m, nil, 100*time.Millisecond)
	publishTurn(t, h, "f1", "user", 1, "slow")
	publishTurn(t, h, "f2", "user", 1, "boom")
	rtest.CheckFor(t, 10*time.Second, "two detections", func() bool { return len(detections(t, h)) == 2 })
	for id, d := range detections(t, h) {
		if d.Rein || !d.Failed || d.FailReason == "" {
			t.Errorf("%s: want a failed, non-activated detection, got %+v", id, d)
		}
	}
	if n := h.StreamMsgs(t, bus.StreamDLQ); n != 0 {
		t.Errorf("fail-open must not dead-letter; DLQ = %d", n)
	}
}

// instantModule is a fakeModule that says it never waits.
type instantModule struct{ fakeModule }

func (*instantModule) Instant() bool { return true }

// A module that judges from memory (inception.Instant), held in a Live
// or not, runs without a deadline, which could not interrupt it and
// costs a timer per turn; any other module gets the stage's timeout.
func TestOnlyModulesThatMayWaitGetADeadline(t *testing.T) {
	var mu sync.Mutex
	deadline := map[string]bool{}
	answer := func(name string) func(ctx context.Context, in inception.Input) (inception.Decision, error) {
		return func(ctx context.Context, in inception.Input) (inception.Decision, error) {
			_, ok := ctx.Deadline()
			mu.Lock()
			deadline[name] = ok
			mu.Unlock()
			return inception.Decision{}, nil
		}
	}
	for _, tc := range []struct {
		name string
		m    inception.Module
		want bool
	}{
		{"instant", &instantModule{fakeModule{answer: answer("instant")}}, false},
		{"plain", &fakeModule{answer: answer("plain")}, true},
		{"live", inception.NewLive(&instantModule{fakeModule{answer: answer("live")}}), false},
	} {
		h := rtest.StartJetStream(t, "")
		stop := startStage(t, h, tc.m, nil, time.Minute)
		publishTurn(t, h, "d1", "user", 1, "hello")
		rtest.CheckFor(t, 10*time.Second, tc.name+" detection", func() bool { return len(detections(t, h)) == 1 })
		stop()
		mu.Lock()
		if got, seen := deadline[tc.name]; !seen || got != tc.want {
			t.Errorf("%s module: called %v, with a deadline %v, want %v", tc.name, seen, got, tc.want)
		}
		mu.Unlock()
	}
}

// A module that panics on some input once took the turn to the dead
// letters (the consume loop turns a handler panic into a permanent
// failure): no detection, no task, no outcome. It must fail open like a
// module that errs.
func TestAModuleThatPanicsFailsOpen(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	m := &fakeModule{answer: func(ctx context.Context, in inception.Input) (inception.Decision, error) {
		if in.Dialogue[len(in.Dialogue)-1].Text == "crash it" {
			var ids []string
			_ = ids[3] // an index out of range, as a module bug would
		}
		return inception.Decision{}, nil
	}}
	startStage(t, h, m, nil, time.Second)
	publishTurn(t, h, "p1", "user", 1, "crash it")
	publishTurn(t, h, "p2", "user", 1, "hello")
	rtest.CheckFor(t, 10*time.Second, "two detections", func() bool {
		return len(detections(t, h)) == 2 || h.StreamMsgs(t, bus.StreamDLQ) > 0
	})
	if n := h.StreamMsgs(t, bus.StreamDLQ); n != 0 {
		t.Fatalf("a module panic dead-lettered the turn (DLQ = %d): it must fail open", n)
	}
	d := detections(t, h)[schemas.EventID("detection", "acme", "p1", 1)]
	if d.Rein || !d.Failed || !strings.Contains(d.FailReason, "panicked") {
		t.Errorf("the panicking turn's detection = %+v, want failed (module panicked), not activated", d)
	}
}

// TestFirstUserTurnAfterAGreetingSeesIt: an agent turn stored before a
// conversation's first user turn (a platform's greeting) is in that user
// turn's surface context, though the stage has never seen the
// conversation; a conversation that starts with its user turn is judged
// on that turn alone.
func TestFirstUserTurnAfterAGreetingSeesIt(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	m := &fakeModule{answer: func(context.Context, inception.Input) (inception.Decision, error) { return inception.Decision{}, nil }}
	publishTurn(t, h, "g", "agent", 1, "Welcome to the airline, how can I help?")
	startStage(t, h, m, prometheus.NewRegistry(), time.Second)
	publishTurn(t, h, "g", "user", 1, "cancel my flight")
	rtest.CheckFor(t, 10*time.Second, "a detection", func() bool { return len(detections(t, h)) == 1 })
	publishTurn(t, h, "n", "user", 1, "hello")
	rtest.CheckFor(t, 10*time.Second, "two detections", func() bool { return len(detections(t, h)) == 2 })
	m.mu.Lock()
	defer m.mu.Unlock()
	if got := m.seen[0]; len(got) != 2 || got[0].Role != "agent" || got[1].Text != "cancel my flight" {
		t.Errorf("surface context after a greeting = %+v", got)
	}
	if got := m.seen[1]; len(got) != 1 || got[0].Text != "hello" {
		t.Errorf("surface context of a first turn = %+v", got)
	}
}
