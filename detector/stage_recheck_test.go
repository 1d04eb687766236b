package detector_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/reinception/rein/detector"
	"github.com/reinception/rein/inception"
	"github.com/reinception/rein/injector"
	"github.com/reinception/rein/internal/llm"
	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
)

// A durable created anew reads REIN_TURNS from its start, past the
// duplicate window of the outputs' ids: a user turn older than RecheckAfter
// whose detection and task are stored is acked without a second inception
// call; one whose detection alone is stored has its task built from that
// detection; any other is judged as usual.
func TestOldTurnsWithStoredOutputsAreNotJudgedAgain(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	storeDecided(t, h, "both", 1, "-long-ago")
	storeDetection(t, h, "detection-only", 1, "-long-ago")
	publishTurn(t, h, "both", "user", 1, "cancel that one")
	publishTurn(t, h, "detection-only", "user", 1, "hello")
	publishTurn(t, h, "fresh", "user", 1, "hello")
	reg := prometheus.NewRegistry()
	// Every turn counts as old: stored over a nanosecond ago.
	m := startJudging(t, h, detector.Deps{StageDeps: streams.StageDeps{Registerer: reg}}, time.Nanosecond)
	h.WaitAcked(t, 10*time.Second, bus.StreamTurns, bus.DurableDetector, 3)
	if n := judgedTurns(m); n != 1 {
		t.Errorf("the module judged %d turns, want only the one without a detection", n)
	}
	if st, on := storedUnhandled(t, reg), unjudged(t, reg, detector.UnjudgedHandedOn); st != 1 || on != 1 {
		t.Errorf("stored unhandled %v, handed_on %v; want 1 and 1", st, on)
	}
	ds := detections(t, h)
	if _, again := ds[schemas.EventID("detection", "acme", "both", 1)]; again || len(ds) != 3 {
		t.Errorf("detections %v: want the two stored before and fresh's", ds)
	}
	// The missing task is built from the stored detection.
	tasks := map[string]schemas.Task{}
	for _, task := range storedTasks(t, h) {
		tasks[task.DetectionID] = task
	}
	if task, ok := tasks[schemas.EventID("detection", "acme", "detection-only", 1)+"-long-ago"]; !ok || task.UserText != "earlier" || len(tasks) != 3 {
		t.Errorf("tasks %+v: want detection-only's built from its stored detection, both's stored before, and fresh's", tasks)
	}
}

// storedTasks reads REIN_TASKS.
func storedTasks(t *testing.T, h *rtest.JS) []schemas.Task {
	t.Helper()
	var out []schemas.Task
	for _, e := range storedPayloads[schemas.Task](t, h, bus.StreamTasks) {
		out = append(out, e.data)
	}
	return out
}

// A user turn delivered again after a worker stopped mid-turn (its
// detection stored, its task not) is handed on as it was decided: no
// second inception call, whose answer could differ from the stored
// detection, and no second count in the activation metrics. A redelivered
// turn with nothing stored is judged as usual.
func TestRedeliveredTurnHandsOnItsStoredDecision(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	// The stopped worker's detection, under the turn's own id.
	ev, err := schemas.NewEvent(schemas.TypeDetection, schemas.EventID("detection", "acme", "cut", 1), "",
		schemas.Meta{Tenant: "acme", Conversation: "cut", Turn: 1},
		schemas.Detection{Turn: 1, UserText: "cancel that one", Module: "fake", TaxonomyVersion: "test-1", Rein: true,
			ErrorType: "anaphora", Category: "ambiguous", RecoveryTool: "ambiguity_report", Reasoning: "three bookings match"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := streams.NewPublisher(h.JS, nil, streams.PublisherConfig{}).Publish(context.Background(), bus.StreamDetections, bus.DetectionSubject("acme", "cut"), &ev); err != nil {
		t.Fatal(err)
	}
	publishTurn(t, h, "cut", "user", 1, "cancel that one")
	publishTurn(t, h, "lost", "user", 1, "hello")
	reg := prometheus.NewRegistry()
	st, m := newJudging(t, h, detector.Deps{StageDeps: streams.StageDeps{Registerer: reg}}, time.Hour)
	h.DeliverUnacked(t, bus.StreamTurns, st.ConsumerConfig().ConsumerConfigJS(), 2)
	rtest.Run(t, "stage", st.Run)
	h.WaitAcked(t, 10*time.Second, bus.StreamTurns, bus.DurableDetector, 2)
	if n := judgedTurns(m); n != 1 {
		t.Errorf("the module judged %d turns, want 1 (lost's)", n)
	}
	if n := unjudged(t, reg, detector.UnjudgedHandedOn); n != 1 {
		t.Errorf("unjudged{handed_on} = %v, want 1", n)
	}
	tasks := map[string]schemas.Task{}
	for _, task := range storedTasks(t, h) {
		tasks[task.DetectionID] = task
	}
	// The module would say "no error": the task must carry the stored
	// decision's inception.
	if cut := tasks[schemas.EventID("detection", "acme", "cut", 1)]; cut.Inception == nil || cut.Inception.ErrorType != "anaphora" || len(tasks) != 2 {
		t.Errorf("tasks %+v: want cut's from its stored detection (anaphora) and lost's", tasks)
	}
	if ds := detections(t, h); len(ds) != 2 || !ds[schemas.EventID("detection", "acme", "cut", 1)].Rein {
		t.Errorf("detections %+v: want cut's stored one kept and lost's", ds)
	}
}

// A publish that fails after the module answered is retried with that
// answer: the consume loop's retry does not ask the module again.
func TestFailedPublishIsRetriedWithTheSameDecision(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	// REIN_TASKS refuses every task until the first retry is seen.
	restore := refuseAll(t, h, bus.StreamTasks)
	reg := prometheus.NewRegistry()
	m := startJudging(t, h, detector.Deps{StageDeps: streams.StageDeps{Registerer: reg}}, time.Hour)
	publishTurn(t, h, "retry", "user", 1, "cancel that one")
	rtest.CheckFor(t, 30*time.Second, "the refused publish retried", func() bool {
		return counterValue(t, reg, "rein_stage_messages_total", map[string]string{"stage": bus.StageDetector, "outcome": "retry"}) >= 1
	})
	restore()
	h.WaitAcked(t, 30*time.Second, bus.StreamTurns, bus.DurableDetector, 1)
	if n := judgedTurns(m); n != 1 {
		t.Errorf("the module judged the turn %d times, want once", n)
	}
	if n := len(storedTasks(t, h)); n != 1 {
		t.Errorf("tasks stored = %d, want 1", n)
	}
	if n := h.StreamMsgs(t, bus.StreamDLQ); n != 0 {
		t.Errorf("dead letters = %d, want none", n)
	}
}

// startJudging runs a detector stage whose module says "no error" to every
// turn and records what it saw.
func startJudging(t *testing.T, h *rtest.JS, deps detector.Deps, recheckAfter time.Duration) *fakeModule {
	t.Helper()
	st, m := newJudging(t, h, deps, recheckAfter)
	rtest.Run(t, "stage", st.Run)
	return m
}

// newJudging builds that stage without running it.
func newJudging(t *testing.T, h *rtest.JS, deps detector.Deps, recheckAfter time.Duration) (*detector.Stage, *fakeModule) {
	t.Helper()
	m := &fakeModule{answer: func(context.Context, inception.Input) (inception.Decision, error) { return inception.Decision{}, nil }}
	deps.JS, deps.Publisher, deps.Module = h.JS, streams.NewPublisher(h.JS, nil, streams.PublisherConfig{}), m
	deps.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	if deps.Registerer == nil {
		deps.Registerer = prometheus.NewRegistry()
	}
	deps.Tools = func(string) ([]llm.Tool, error) { return []llm.Tool{{Name: "cancel_reservation"}}, nil }
	st, err := detector.New(detector.Config{TaxonomyVersion: "test-1", Timeout: time.Second, RecheckAfter: recheckAfter}, deps)
	if err != nil {
		t.Fatal(err)
	}
	return st, m
}

// storedUnhandled is rein_stage_messages_total{stage="detector",
// outcome="stored"} in reg: turns the consume loop acked unhandled because
// their outputs were all stored.
func storedUnhandled(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	return counterValue(t, reg, "rein_stage_messages_total", map[string]string{"stage": bus.StageDetector, "outcome": "stored"})
}

// unjudged is rein_detector_unjudged_turns_total{reason} in reg.
func unjudged(t *testing.T, reg *prometheus.Registry, reason string) float64 {
	t.Helper()
	return counterValue(t, reg, "rein_detector_unjudged_turns_total", map[string]string{"reason": reason})
}

// counterValue is the counter name{labels} in reg.
func counterValue(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metrics:
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if want, ok := labels[l.GetName()]; ok && want != l.GetValue() {
					continue metrics
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0 // not registered yet, or no such series
}

func judgedTurns(m *fakeModule) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.seen)
}

// resend stores a user turn again as a new message, as a platform's retry
// does (same turn, another message id).
func resend(t *testing.T, h *rtest.JS, conv string, turn int, text string) {
	t.Helper()
	ev, err := schemas.NewEvent(schemas.TypeTurn, schemas.EventID("turn", "acme", conv, turn)+"-user-resent", "",
		schemas.Meta{Tenant: "acme", Conversation: conv, Turn: turn}, schemas.Turn{Role: "user", Text: text, Turn: turn})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := streams.NewPublisher(h.JS, nil, streams.PublisherConfig{}).Publish(context.Background(), bus.StreamTurns, bus.TurnSubject("acme", conv, "user"), &ev); err != nil {
		t.Fatal(err)
	}
}

// An older turn sent again is known by its number too, whether the
// conversation is in memory or rebuilt from the stream after a restart.
func TestAnOlderTurnSentAgainIsNotJudgedAgain(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	reg := prometheus.NewRegistry()
	st, m := newJudging(t, h, detector.Deps{StageDeps: streams.StageDeps{Registerer: reg}}, time.Hour)
	stop := rtest.Run(t, "stage", st.Run)
	publishTurn(t, h, "older", "user", 1, "cancel that one")
	publishTurn(t, h, "older", "user", 2, "the one to Boston")
	publishTurn(t, h, "older", "user", 3, "yes")
	resend(t, h, "older", 1, "cancel that one")
	h.WaitAcked(t, 10*time.Second, bus.StreamTurns, bus.DurableDetector, 4)
	if n := judgedTurns(m); n != 3 {
		t.Errorf("the module judged %d turns, want 3: turn 1 sent again is not judged again", n)
	}
	if n := unjudged(t, reg, detector.UnjudgedSentAgain); n != 1 {
		t.Errorf("unjudged{sent_again} = %v, want 1", n)
	}
	// A restarted stage rebuilds the context from the stream, first copies
	// included.
	stop()
	st2, m2 := newJudging(t, h, detector.Deps{}, time.Hour)
	rtest.Run(t, "stage again", st2.Run)
	resend(t, h, "older", 2, "the one to Boston")
	publishTurn(t, h, "older", "user", 4, "thanks")
	h.WaitAcked(t, 10*time.Second, bus.StreamTurns, bus.DurableDetector, 6)
	if n := judgedTurns(m2); n != 1 {
		t.Errorf("the restarted stage judged %d turns, want 1 (turn 4)", n)
	}
	if ds := detections(t, h); len(ds) != 4 {
		t.Errorf("%d detections stored, want one per turn (4)", len(ds))
	}
}

// A turn whose first copy was dead-lettered with no detection stored is
// handled when it is sent again: the turn number alone does not make it a
// retry. (Its first copy's decision, never stored, is handed on.)
func TestADeadLetteredTurnSentAgainIsJudged(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	// REIN_DETECTIONS refuses every detection through the first copy's
	// attempts: it is dead-lettered with nothing stored.
	restore := refuseAll(t, h, bus.StreamDetections)
	m := startJudging(t, h, detector.Deps{}, time.Hour)
	publishTurn(t, h, "dlq", "user", 1, "cancel that one")
	h.WaitAcked(t, 30*time.Second, bus.StreamTurns, bus.DurableDetector, 1)
	if n := h.StreamMsgs(t, bus.StreamDLQ); n != 1 {
		t.Fatalf("dead letters = %d, want the first copy", n)
	}
	restore()
	resend(t, h, "dlq", 1, "cancel that one")
	h.WaitAcked(t, 10*time.Second, bus.StreamTurns, bus.DurableDetector, 2)
	if n := judgedTurns(m); n < 1 {
		t.Errorf("the module judged %d times", n)
	}
	if ds := detections(t, h); len(ds) != 1 {
		t.Errorf("detections %v, want the copy sent again's", ds)
	}
	if n := len(storedTasks(t, h)); n != 1 {
		t.Errorf("tasks stored = %d, want 1", n)
	}
}

// TestATurnSentAgainIsNotJudgedAgain: a platform that sends its last user
// turn again (a retry, as a new message) gets no second judgement and no
// second detection: past the duplicate window the detection's id would not
// drop it.
func TestATurnSentAgainIsNotJudgedAgain(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	m := startJudging(t, h, detector.Deps{}, 0)
	publishTurn(t, h, "again", "user", 1, "cancel that one")
	h.WaitAcked(t, 10*time.Second, bus.StreamTurns, bus.DurableDetector, 1)
	seen, err := h.Conn.SubscribeSync(bus.DetectionSubject("acme", "again"))
	if err != nil {
		t.Fatal(err)
	}
	resend(t, h, "again", 1, "cancel that one")
	h.WaitAcked(t, 10*time.Second, bus.StreamTurns, bus.DurableDetector, 2)
	if n := judgedTurns(m); n != 1 {
		t.Errorf("the module judged %d turns, want 1", n)
	}
	if n, _, _ := seen.Pending(); n != 0 {
		t.Errorf("the turn sent again published %d detections", n)
	}
	// The next turn is judged as usual.
	publishTurn(t, h, "again", "user", 2, "the one to Boston")
	h.WaitAcked(t, 10*time.Second, bus.StreamTurns, bus.DurableDetector, 3)
	if n := judgedTurns(m); n != 2 {
		t.Errorf("the module judged %d turns, want 2", n)
	}
}

// A user turn without a number (neither the turn extension nor data.turn)
// cannot name its detection, task and reply: it is dead-lettered with that
// reason, never acked silently, and the conversation goes on.
func TestAUserTurnWithoutANumberIsDeadLettered(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	m := startJudging(t, h, detector.Deps{}, time.Hour)
	ev, err := schemas.NewEvent(schemas.TypeTurn, "turn-acme-nonumber-user", "",
		schemas.Meta{Tenant: "acme", Conversation: "nonumber"}, schemas.Turn{Role: "user", Text: "cancel that one"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := streams.NewPublisher(h.JS, nil, streams.PublisherConfig{}).Publish(context.Background(), bus.StreamTurns, bus.TurnSubject("acme", "nonumber", "user"), &ev); err != nil {
		t.Fatal(err)
	}
	publishTurn(t, h, "nonumber", "user", 1, "the one to Boston")
	h.WaitAcked(t, 10*time.Second, bus.StreamTurns, bus.DurableDetector, 2)
	if n := judgedTurns(m); n != 1 {
		t.Errorf("the module judged %d turns, want 1 (the numbered one)", n)
	}
	var reasons []string
	for _, e := range storedPayloads[schemas.DeadLetter](t, h, bus.StreamDLQ) {
		reasons = append(reasons, e.data.Reason)
	}
	if len(reasons) != 1 || !strings.Contains(reasons[0], "turn number") {
		t.Errorf("dead letters %q, want one saying the turn number is missing", reasons)
	}
}

// A turn number already judged, stored again with other text (a platform
// publishing straight to NATS under its own message id), is a conflict:
// dead-lettered with reason conflicting_duplicate, neither judged again
// nor acked silently as a retry.
func TestAConflictingTurnSentAgainIsDeadLettered(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	reg := prometheus.NewRegistry()
	st, m := newJudging(t, h, detector.Deps{StageDeps: streams.StageDeps{Registerer: reg}}, time.Hour)
	rtest.Run(t, "stage", st.Run)
	publishTurn(t, h, "conflict", "user", 1, "cancel that one")
	publishTurn(t, h, "conflict", "user", 2, "the one to Boston")
	resend(t, h, "conflict", 2, "actually book me a hotel")
	resend(t, h, "conflict", 1, "cancel that one")
	h.WaitAcked(t, 10*time.Second, bus.StreamTurns, bus.DurableDetector, 4)
	if n := judgedTurns(m); n != 2 {
		t.Errorf("the module judged %d turns, want 2", n)
	}
	dls := storedPayloads[schemas.DeadLetter](t, h, bus.StreamDLQ)
	if len(dls) != 1 || !strings.HasPrefix(dls[0].data.Reason, streams.ReasonConflictingDuplicate) || !strings.Contains(string(dls[0].data.Data), "hotel") {
		t.Fatalf("dead letters %+v: want the conflicting copy of turn 2", dls)
	}
	if n := unjudged(t, reg, detector.UnjudgedSentAgain); n != 1 {
		t.Errorf("unjudged{sent_again} = %v, want 1 (turn 1's identical copy)", n)
	}
}

// storeDetection stores a detection of acme's conversation conv, turn,
// under its derived id plus idSuffix ("-long-ago": as if its own id had
// left the duplicate window).
func storeDetection(t *testing.T, h *rtest.JS, conv string, turn int, idSuffix string) {
	t.Helper()
	ev, err := schemas.NewEvent(schemas.TypeDetection, schemas.EventID("detection", "acme", conv, turn)+idSuffix, "",
		schemas.Meta{Tenant: "acme", Conversation: conv, Turn: turn},
		schemas.Detection{Turn: turn, UserText: "earlier", Module: "fake", TaxonomyVersion: "test-1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := streams.NewPublisher(h.JS, nil, streams.PublisherConfig{}).Publish(context.Background(), bus.StreamDetections, bus.DetectionSubject("acme", conv), &ev); err != nil {
		t.Fatal(err)
	}
}

// storeTask stores the task of conv's turn as the detector would, from a
// detection stored under the turn's id plus idSuffix.
func storeTask(t *testing.T, h *rtest.JS, conv string, turn int, idSuffix string) {
	t.Helper()
	tasks, err := injector.NewTasks(nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := tasks.Task(schemas.Meta{Tenant: "acme", Conversation: conv, Turn: turn}, schemas.Detection{Turn: turn, UserText: "earlier"},
		schemas.EventID("detection", "acme", conv, turn)+idSuffix)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := streams.NewPublisher(h.JS, nil, streams.PublisherConfig{}).PublishAll(context.Background(), out); err != nil {
		t.Fatal(err)
	}
}

// storeDecided stores a turn's detection and its task: every output.
func storeDecided(t *testing.T, h *rtest.JS, conv string, turn int, idSuffix string) {
	t.Helper()
	storeDetection(t, h, conv, turn, idSuffix)
	storeTask(t, h, conv, turn, idSuffix)
}

// refuseAll makes stream refuse every rein event (a 16-byte message size
// limit) until restore is called.
func refuseAll(t *testing.T, h *rtest.JS, stream string) (restore func()) {
	t.Helper()
	ctx := context.Background()
	st, err := h.JS.Stream(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	cfg := st.CachedInfo().Config
	small := cfg
	small.MaxMsgSize = 16
	if _, err := h.JS.UpdateStream(ctx, small); err != nil {
		t.Fatal(err)
	}
	return func() {
		t.Helper()
		if _, err := h.JS.UpdateStream(ctx, cfg); err != nil {
			t.Fatal(err)
		}
	}
}
