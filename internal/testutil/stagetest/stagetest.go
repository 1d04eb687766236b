package stagetest

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/reinception/rein/internal/telemetry"
	"github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
	"github.com/reinception/rein/streams/consume"
)

// within bounds every wait of the suite: generous, since CI runs the
// packages in parallel on few cores; a passing run takes far less.
const within = 30 * time.Second

// Stage is one stage under the contract, as its adapter builds it.
type Stage struct {
	// Run is the stage's Run.
	Run func(ctx context.Context) error
	// Consumer is the stage's consumer configuration (its ConsumerConfig):
	// the suite reads its stage name, stream and durable, and plays a
	// second holder on its JetStream configuration. For
	// HeldSuccessorReleased its AckWait must be at most maxAckWait.
	Consumer consume.ConsumerConfig
	// Publish stores the stage's input for turn n of conversation conv.
	Publish func(t *testing.T, conv string, turn int)
	// PublishInvalid stores an input for turn n of conv that the stage
	// rejects for good (nil: the stage has none to offer).
	PublishInvalid func(t *testing.T, conv string, turn int)
	// Outputs is the turn of every output the stage stored for conv, in
	// store order (one entry per stored message).
	Outputs func(t *testing.T, conv string) []int
	// PerInput is how many outputs one handled input yields (default 1).
	PerInput int
	// Metrics is the registry the stage registers its metrics in (nil:
	// the parts that read the consume loop's counters are skipped).
	Metrics prometheus.Gatherer
}

// Features say which parts of the contract a stage has and how it keeps
// them.
type Features struct {
	// Faults: the adapter wires the suite's Fault into the collaborator
	// the stage's handler calls, so failures, panics and blocking can be
	// injected.
	Faults bool
	// FailOpen: the stage handles its collaborator's error or panic by
	// recording it in its outputs (the detector fails open) rather than
	// retrying the input or dead-lettering it.
	FailOpen bool
	// Final is an error the collaborator returns that the stage treats as
	// final: the input is dead-lettered with it as the reason (nil: none).
	Final error
	// ChecksStored: an input delivered again after its outputs were stored
	// is checked against them (ConsumerConfig.Stored), so the consume loop
	// acks it unhandled and the collaborator is not asked again.
	ChecksStored bool
}

// maxAckWait is the longest consumer ack wait HeldSuccessorReleased waits
// out: the abandoned input comes back after it.
const maxAckWait = 5 * time.Second

// NewStage builds the stage on h with f wired into its collaborator. It
// may be called more than once per test (a restart) with the same h and f.
type NewStage func(t *testing.T, h *testutil.JS, f *Fault) Stage

// Run runs the contract against the stage newStage builds, each part on
// a JetStream server of its own.
func Run(t *testing.T, features Features, newStage NewStage) {
	t.Helper()
	parts := []struct {
		name string
		run  func(t *testing.T, f Features, h *testutil.JS, fault *Fault, newStage NewStage)
	}{
		{"AckOnNil", ackOnNil},
		{"RetryInPlace", retryInPlace},
		{"PermanentDeadLetters", permanentDeadLetters},
		{"Panic", panics},
		{"NoDuplicateOnRedelivery", noDuplicateOnRedelivery},
		{"StoredSkipsHandler", storedSkipsHandler},
		{"HeldSuccessorReleased", heldSuccessorReleased},
		{"DrainOnCancel", drainOnCancel},
	}
	for _, p := range parts {
		t.Run(p.name, func(t *testing.T) {
			h := testutil.StartJetStream(t, "")
			p.run(t, features, h, NewFault(), newStage)
		})
	}
}

const conv = "contract"

func perInput(s Stage) int { return max(s.PerInput, 1) }

// start builds and runs the stage; stop cancels it and waits for Run.
func start(t *testing.T, h *testutil.JS, f *Fault, newStage NewStage) (Stage, func()) {
	t.Helper()
	s := newStage(t, h, f)
	return s, testutil.Run(t, s.Consumer.Stage, s.Run)
}

// waitOutputs waits until conv has n outputs and returns them.
func waitOutputs(t *testing.T, s Stage, n int) []int {
	t.Helper()
	var got []int
	testutil.CheckFor(t, within, "the stage's outputs are stored", func() bool {
		got = s.Outputs(t, conv)
		return len(got) >= n
	})
	if len(got) != n {
		t.Fatalf("outputs of %s: turns %v, want %d outputs", conv, got, n)
	}
	return got
}

// waitAcked waits until the stage's durable acked every input stored so far.
func waitAcked(t *testing.T, h *testutil.JS, s Stage) {
	t.Helper()
	h.WaitAcked(t, within, s.Consumer.Stream, s.Consumer.Durable, h.StreamLastSeq(t, s.Consumer.Stream))
}

// deadLetters are the reasons of the stage's dead letters of conv.
func deadLetters(t *testing.T, h *testutil.JS, stage string) []string {
	t.Helper()
	var reasons []string
	err := streams.ReadStream(context.Background(), h.JS, bus.StreamDLQ, streams.ReadOptions{Filters: []string{bus.DLQSubject(stage)}},
		func(r streams.Raw) error {
			if r.Decoded == nil {
				return nil
			}
			var dl schemas.DeadLetter
			if err := r.Decoded.Payload(&dl); err != nil {
				return err
			}
			if _, c, ok := streams.SubjectIDs(dl.Subject); ok && c == conv {
				reasons = append(reasons, dl.Reason)
			}
			return nil
		})
	if err != nil {
		t.Fatalf("read dead letters: %v", err)
	}
	return reasons
}

func noDeadLetters(t *testing.T, h *testutil.JS, s Stage) {
	t.Helper()
	if dl := deadLetters(t, h, s.Consumer.Stage); len(dl) > 0 {
		t.Fatalf("dead letters %q, want none", dl)
	}
}

// waitDeadLetter waits for a dead letter of conv whose reason holds want.
func waitDeadLetter(t *testing.T, h *testutil.JS, s Stage, want string) {
	t.Helper()
	var got []string
	testutil.CheckFor(t, within, "a dead letter with reason "+want, func() bool {
		got = deadLetters(t, h, s.Consumer.Stage)
		for _, r := range got {
			if strings.Contains(r, want) {
				return true
			}
		}
		return false
	})
}

// An input handled without error yields its outputs and is acked.
func ackOnNil(t *testing.T, _ Features, h *testutil.JS, f *Fault, newStage NewStage) {
	s, _ := start(t, h, f, newStage)
	s.Publish(t, conv, 1)
	waitOutputs(t, s, perInput(s))
	waitAcked(t, h, s)
	noDeadLetters(t, h, s)
}

// A collaborator's transient failure is retried in place (or recorded,
// fail-open); the input ends with its outputs and no dead letter.
func retryInPlace(t *testing.T, fs Features, h *testutil.JS, f *Fault, newStage NewStage) {
	if !fs.Faults {
		t.Skip("the stage has no collaborator to fail")
	}
	fails := 2
	if fs.FailOpen {
		fails = 1
	}
	f.Fail(fails, ErrInjected)
	s, _ := start(t, h, f, newStage)
	s.Publish(t, conv, 1)
	waitOutputs(t, s, perInput(s))
	waitAcked(t, h, s)
	noDeadLetters(t, h, s)
	switch hits := f.Hits(); {
	case fs.FailOpen && hits != 1:
		t.Errorf("collaborator called %d times, want 1: a fail-open stage records the failure rather than retrying", hits)
	case !fs.FailOpen && hits != fails+1:
		t.Errorf("collaborator called %d times, want %d: each failure retried in place, then success", hits, fails+1)
	}
}

// An input rejected for good, and a collaborator's final failure, are
// dead-lettered with a reason and acked.
func permanentDeadLetters(t *testing.T, fs Features, h *testutil.JS, f *Fault, newStage NewStage) {
	s, _ := start(t, h, f, newStage)
	if s.PublishInvalid == nil && (fs.Final == nil || !fs.Faults) {
		t.Skip("the stage has no input to reject and no final failure")
	}
	turn := 1
	if s.PublishInvalid != nil {
		s.PublishInvalid(t, conv, turn)
		waitDeadLetter(t, h, s, "")
		waitAcked(t, h, s)
		if out := s.Outputs(t, conv); len(out) > 0 {
			t.Fatalf("a rejected input has outputs %v", out)
		}
		for _, r := range deadLetters(t, h, s.Consumer.Stage) {
			if strings.TrimSpace(r) == "" {
				t.Fatal("a dead letter without a reason")
			}
		}
		turn++
	}
	if fs.Faults && fs.Final != nil {
		f.Fail(1, fs.Final)
		s.Publish(t, conv, turn)
		waitDeadLetter(t, h, s, fs.Final.Error())
		waitAcked(t, h, s)
		if hits := f.Hits(); hits != 1 {
			t.Errorf("collaborator called %d times, want 1: a final failure is not retried", hits)
		}
	}
}

// A panicking collaborator never crashes the process.
func panics(t *testing.T, fs Features, h *testutil.JS, f *Fault, newStage NewStage) {
	if !fs.Faults {
		t.Skip("the stage has no collaborator to panic")
	}
	f.Panic(1)
	s, _ := start(t, h, f, newStage)
	s.Publish(t, conv, 1)
	if fs.FailOpen {
		waitOutputs(t, s, perInput(s))
		waitAcked(t, h, s)
		noDeadLetters(t, h, s)
		return
	}
	waitDeadLetter(t, h, s, PanicValue)
	waitAcked(t, h, s)
	// The stage still works after the panic (in another conversation: the
	// dead-lettered turn's may now be a human's).
	next := conv + "-next"
	s.Publish(t, next, 1)
	testutil.CheckFor(t, within, "an input is handled after a panic", func() bool {
		return len(s.Outputs(t, next)) == perInput(s)
	})
}

// An input delivered again after its outputs were stored, to a durable
// made anew, yields no second output.
func noDuplicateOnRedelivery(t *testing.T, fs Features, h *testutil.JS, f *Fault, newStage NewStage) {
	s, hits := redeliverHandled(t, h, f, newStage)
	if out := s.Outputs(t, conv); len(out) != perInput(s) {
		t.Fatalf("outputs after redelivery: turns %v, want %d", out, perInput(s))
	}
	if fs.ChecksStored && f.Hits() != hits {
		t.Errorf("collaborator called %d more times on redelivery, want 0: stored outputs are handed on, not decided again", f.Hits()-hits)
	}
	noDeadLetters(t, h, s)
}

// An input delivered again whose outputs are all stored is acked by the
// consume loop without running the handler: the stage's
// ConsumerConfig.Stored answers all, and the loop counts it "stored".
func storedSkipsHandler(t *testing.T, fs Features, h *testutil.JS, f *Fault, newStage NewStage) {
	if !fs.ChecksStored {
		t.Skip("the stage does not check its stored outputs")
	}
	if s := newStage(t, h, f); s.Consumer.Stored == nil || s.Metrics == nil {
		t.Fatal("a stage that checks its stored outputs sets ConsumerConfig.Stored, and the adapter its Metrics")
	}
	s, _ := redeliverHandled(t, h, f, newStage)
	if n := stageMessages(t, s, "stored"); n != 1 {
		t.Errorf("rein_stage_messages_total{outcome=\"stored\"} = %v after the redelivery, want 1: the handler ran again", n)
	}
	if n := stageMessages(t, s, "ack"); n != 0 {
		t.Errorf("rein_stage_messages_total{outcome=\"ack\"} = %v after the redelivery, want 0", n)
	}
}

// redeliverHandled has the stage handle an input, then delivers it again to
// a stage started anew on a durable made anew, and waits until it is
// acked. It returns the new stage and the collaborator's calls before it.
func redeliverHandled(t *testing.T, h *testutil.JS, f *Fault, newStage NewStage) (Stage, int) {
	t.Helper()
	s, stop := start(t, h, f, newStage)
	s.Publish(t, conv, 1)
	waitOutputs(t, s, perInput(s))
	waitAcked(t, h, s)
	stop()
	hits := f.Hits()
	// A durable created anew reads the stream from its start, and a holder
	// that died after storing the outputs, before its ack, leaves the input
	// to be delivered again.
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	if err := h.JS.DeleteConsumer(ctx, s.Consumer.Stream, s.Consumer.Durable); err != nil {
		t.Fatalf("delete durable: %v", err)
	}
	h.DeliverUnacked(t, s.Consumer.Stream, s.Consumer.ConsumerConfigJS(), 1)
	s, _ = start(t, h, f, newStage)
	waitAcked(t, h, s)
	return s, hits
}

// stageMessages is the stage's rein_stage_messages_total of outcome.
func stageMessages(t *testing.T, s Stage, outcome string) float64 {
	t.Helper()
	mfs, err := s.Metrics.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() != telemetry.MStageMessages {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["stage"] == s.Consumer.Stage && labels["outcome"] == outcome {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// A conversation's later input waits behind an earlier one held by a
// holder that died, and runs once the earlier one is decided.
func heldSuccessorReleased(t *testing.T, _ Features, h *testutil.JS, f *Fault, newStage NewStage) {
	s := newStage(t, h, f)
	cc := s.Consumer
	if cc.AckWait <= 0 || cc.AckWait > maxAckWait {
		t.Fatalf("the adapter's consumer ack wait is %s: set it to at most %s, the abandoned input comes back after it", cc.AckWait, maxAckWait)
	}
	s.Publish(t, conv, 1)
	s.Publish(t, conv, 2)
	// A holder takes turn 1 and dies before deciding it.
	h.DeliverAbandoned(t, cc.Stream, cc.ConsumerConfigJS(), 1)
	testutil.Run(t, cc.Stage, s.Run)
	got := waitOutputs(t, s, 2*perInput(s))
	for i, turn := range got {
		if want := 1 + i/perInput(s); turn != want {
			t.Fatalf("outputs in turns %v: turn 2 ran before turn 1 was decided", got)
		}
	}
	waitAcked(t, h, s)
	noDeadLetters(t, h, s)
}

// Run returns nil after cancel, once the input in flight is finished.
func drainOnCancel(t *testing.T, fs Features, h *testutil.JS, f *Fault, newStage NewStage) {
	s := newStage(t, h, f)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	var release func()
	if fs.Faults {
		var entered <-chan struct{}
		entered, release = f.Block()
		defer release()
		s.Publish(t, conv, 1)
		select {
		case <-entered:
		case <-time.After(within):
			t.Fatal("the input never reached the collaborator")
		}
	} else {
		s.Publish(t, conv, 1)
		waitOutputs(t, s, perInput(s))
	}
	cancel()
	if release != nil {
		select {
		case err := <-done:
			t.Fatalf("Run returned (%v) while an input was in flight", err)
		default:
		}
		release()
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run after cancel: %v", err)
		}
	case <-time.After(within):
		t.Fatal("Run did not return after cancel")
	}
	if out := s.Outputs(t, conv); len(out) != perInput(s) {
		t.Fatalf("outputs after drain: turns %v, want %d: the input in flight was not finished", out, perInput(s))
	}
	waitAcked(t, h, s)
}

// ErrInjected is the transient failure Fault.Fail injects by default.
var ErrInjected = errors.New("stagetest: injected failure")

// PanicValue is what an injected panic panics with.
const PanicValue = "stagetest: injected panic"

// Fault is what the suite injects into a stage's collaborator: the
// adapter calls Hit where the collaborator starts its work and returns
// Hit's error as the collaborator's.
type Fault struct {
	mu      sync.Mutex
	hits    int
	fails   int
	err     error
	panics  int
	block   chan struct{}
	entered chan struct{}
}

// NewFault is a Fault that injects nothing until told.
func NewFault() *Fault { return &Fault{} }

// Hit is called by the collaborator; it panics, blocks or fails as told.
func (f *Fault) Hit(context.Context) error {
	f.mu.Lock()
	f.hits++
	switch {
	case f.panics > 0:
		f.panics--
		f.mu.Unlock()
		panic(PanicValue)
	case f.block != nil:
		block, entered := f.block, f.entered
		f.block = nil
		f.mu.Unlock()
		close(entered)
		<-block
		return nil
	case f.fails > 0:
		f.fails--
		err := f.err
		f.mu.Unlock()
		return err
	}
	f.mu.Unlock()
	return nil
}

// Fail makes the next n calls fail with err.
func (f *Fault) Fail(n int, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fails, f.err = n, err
}

// Panic makes the next n calls panic.
func (f *Fault) Panic(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.panics = n
}

// Block makes the next call wait until release is called; entered is
// closed when it starts waiting. release is idempotent.
func (f *Fault) Block() (entered <-chan struct{}, release func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	block, in := make(chan struct{}), make(chan struct{})
	f.block, f.entered = block, in
	var once sync.Once
	return in, func() { once.Do(func() { close(block) }) }
}

// Hits is how many times the collaborator was called.
func (f *Fault) Hits() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.hits
}

// Turns is the turn of every event stored on stream under subject, in
// store order: the usual Stage.Outputs of an adapter.
func Turns(t testing.TB, h *testutil.JS, stream, subject string) []int {
	t.Helper()
	var turns []int
	err := streams.ReadStream(context.Background(), h.JS, stream, streams.ReadOptions{Filters: []string{subject}}, func(r streams.Raw) error {
		if r.Decoded != nil {
			turns = append(turns, r.Decoded.Meta.Turn)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("read %s: %v", stream, err)
	}
	return turns
}

// PublishTurnOn stores a user turn (a valid event of the wrong type for
// any stage but the detector) for turn n of tenant's conv on stream under
// subject: the usual Stage.PublishInvalid of a stage that takes no turns.
func PublishTurnOn(t testing.TB, h *testutil.JS, stream, subject, tenant, conv string, turn int) {
	t.Helper()
	ev, err := schemas.NewEvent(schemas.TypeTurn, schemas.EventID("turn", tenant, conv, turn), "",
		schemas.Meta{Tenant: tenant, Conversation: conv, Turn: turn}, schemas.Turn{Role: schemas.RoleUser, Text: "not an input of this stage", Turn: turn})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := streams.NewPublisher(h.JS, nil, streams.PublisherConfig{}).Publish(context.Background(), stream, subject, &ev); err != nil {
		t.Fatal(err)
	}
}
