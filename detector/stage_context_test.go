package detector_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	ptest "github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/reinception/rein/detector"
	"github.com/reinception/rein/inception"
	"github.com/reinception/rein/inception/rules"
	"github.com/reinception/rein/internal/llm"
	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
)

const listing = "I found two reservations: ABC123 (Boston to Denver) and XYZ789 (Denver to Seattle). Which one would you like to cancel?"

// startRules runs the stage with the precise rules module.
func startRules(t *testing.T, h *rtest.JS, reg prometheus.Registerer) func() {
	t.Helper()
	m, err := rules.New(rules.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return startStage(t, h, m, reg, 0)
}

func fetches(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	return ptest.ToFloat64(mustCounter(t, reg, "rein_detector_context_fetches_total"))
}

func TestStageMergesAgentRepliesWhenAnaphoraNeedsThem(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	reg := prometheus.NewRegistry()
	startRules(t, h, reg)
	publishTurn(t, h, "c1", "user", 1, "I want to cancel a reservation.")
	publishTurn(t, h, "c1", "agent", 1, listing)
	publishTurn(t, h, "c1", "user", 2, "cancel that one")
	rtest.CheckFor(t, 10*time.Second, "two detections", func() bool { return len(detections(t, h)) == 2 })
	ds := detections(t, h)
	if d := ds["detection.acme.c1.2"]; !d.Rein || d.ErrorType != inception.TypeAnaphora {
		t.Errorf("turn 2: want anaphora (the agent's listing merged), got %+v", d)
	}
	if d := ds["detection.acme.c1.1"]; d.Rein || d.Failed {
		t.Errorf("turn 1 = %+v", d)
	}
	if n := fetches(t, reg); n < 1 {
		t.Errorf("context fetches = %v, want the agent reply read back", n)
	}
	if n := h.StreamMsgs(t, bus.StreamDLQ); n != 0 {
		t.Errorf("DLQ = %d", n)
	}
}

func TestStageReadsNoAgentReplyWhenNotNeeded(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	reg := prometheus.NewRegistry()
	startRules(t, h, reg)
	publishTurn(t, h, "c2", "user", 1, "I'd like to change the date of a reservation.")
	publishTurn(t, h, "c2", "agent", 1, "Sure. ABC123 or XYZ789? Which one?")
	publishTurn(t, h, "c2", "user", 2, "ABC123, to May 24 please.")
	publishTurn(t, h, "c2", "agent", 2, listing)
	publishTurn(t, h, "c2", "user", 3, "cancel that one from Boston") // resolved in the turn
	rtest.CheckFor(t, 10*time.Second, "three detections", func() bool { return len(detections(t, h)) == 3 })
	for id, d := range detections(t, h) {
		if d.Rein || d.Failed {
			t.Errorf("%s = %+v, want clear", id, d)
		}
	}
	if n := fetches(t, reg); n != 0 {
		t.Errorf("context fetches = %v, want none", n)
	}
}

// An undecodable agent reply stays out of the context; the turn is judged.
func TestStageSkipsUndecodableAgentReply(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	reg := prometheus.NewRegistry()
	m := &fakeModule{answer: func(context.Context, inception.Input) (inception.Decision, error) { return inception.Decision{}, nil }}
	startStage(t, h, m, reg, time.Second)
	publishTurn(t, h, "c3", "user", 1, "hello")
	if _, err := h.JS.PublishMsg(context.Background(), &nats.Msg{Subject: bus.TurnSubject("acme", "c3", "agent"), Data: []byte("not an event")}); err != nil {
		t.Fatal(err)
	}
	publishTurn(t, h, "c3", "agent", 1, "hi, how can I help?")
	publishTurn(t, h, "c3", "user", 2, "cancel it")
	rtest.CheckFor(t, 10*time.Second, "two detections", func() bool { return len(detections(t, h)) == 2 })
	m.mu.Lock()
	last := m.seen[len(m.seen)-1]
	m.mu.Unlock()
	want := []inception.Utterance{{Role: "user", Text: "hello"}, {Role: "agent", Text: "hi, how can I help?"}, {Role: "user", Text: "cancel it"}}
	if len(last) != len(want) || last[0] != want[0] || last[1] != want[1] || last[2] != want[2] {
		t.Errorf("surface context = %+v, want %+v", last, want)
	}
	if n := h.StreamMsgs(t, bus.StreamTurns); n != 4 {
		t.Errorf("REIN_TURNS = %d, want the four turns kept", n)
	}
}

// A durable made when the detector consumed every turn is narrowed to user
// turns; agent turns it still delivers are acked without effect.
func TestStageNarrowsAnOldDurable(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	st, err := detector.New(detector.Config{TaxonomyVersion: "test-1"}, detector.Deps{
		StageDeps: streams.StageDeps{JS: h.JS, Publisher: streams.NewPublisher(h.JS, nil, streams.PublisherConfig{})},
		Module:    &fakeModule{},
		Tools:     func(string) ([]llm.Tool, error) { return nil, nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	old := st.ConsumerConfig()
	old.Filter = []string{bus.TurnsAll}
	if _, err := h.JS.CreateOrUpdateConsumer(context.Background(), bus.StreamTurns, old.ConsumerConfigJS()); err != nil {
		t.Fatal(err)
	}
	publishTurn(t, h, "c4", "user", 1, "I want to cancel a reservation.")
	publishTurn(t, h, "c4", "agent", 1, listing)
	publishTurn(t, h, "c4", "user", 2, "cancel that one")
	startRules(t, h, prometheus.NewRegistry())
	rtest.CheckFor(t, 10*time.Second, "two detections", func() bool { return len(detections(t, h)) == 2 })
	if d := detections(t, h)["detection.acme.c4.2"]; !d.Rein || d.ErrorType != inception.TypeAnaphora {
		t.Errorf("turn 2 = %+v", d)
	}
	info, err := h.JS.Consumer(context.Background(), bus.StreamTurns, bus.DurableDetector)
	if err != nil {
		t.Fatal(err)
	}
	if f := info.CachedInfo().Config.FilterSubject; f != bus.UserTurnsAll {
		t.Errorf("durable filter = %q", f)
	}
	if n := h.StreamMsgs(t, bus.StreamTurns); n != 3 {
		t.Errorf("REIN_TURNS = %d", n)
	}
}
