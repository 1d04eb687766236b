package escalation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	"github.com/prometheus/client_golang/prometheus"

	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/internal/testutil/stagetest"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
)

// faultSink is a sink that does what the contract suite's Fault says.
type faultSink struct{ f *stagetest.Fault }

func (s faultSink) Name() string { return "fault" }
func (s faultSink) Kind() string { return KindWebhook }
func (s faultSink) Deliver(ctx context.Context, _ cloudevents.Event) error {
	return s.f.Hit(ctx)
}
func (s faultSink) Close() error { return nil }

// newContractStage is the escalation stage with a handoff sink (its items,
// deduplicated by event id, are the outputs) and, first, a sink that
// fails, panics or blocks as f says.
func newContractStage(t *testing.T, h *rtest.JS, f *stagetest.Fault, faultFirst bool) *Stage {
	t.Helper()
	reg := prometheus.NewRegistry()
	st, err := New(Config{AckWait: 2 * time.Second, Sinks: SinksConfig{Sinks: []SinkConfig{{Handoff: &HandoffConfig{Deadline: time.Hour, NoSweeper: true}}}}},
		Deps{StageDeps: streams.StageDeps{JS: h.JS, Publisher: streams.NewPublisher(h.JS, reg, streams.PublisherConfig{}), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Registerer: reg}})
	if err != nil {
		t.Fatal(err)
	}
	if faultFirst {
		st.sinks = append([]Sink{faultSink{f}}, st.sinks...)
	} else {
		st.sinks = append(st.sinks, faultSink{f})
	}
	return st
}

func publishOutcome(t *testing.T, h *rtest.JS, conv string, ev cloudevents.Event) {
	t.Helper()
	if _, err := streams.NewPublisher(h.JS, nil, streams.PublisherConfig{}).Publish(context.Background(), bus.StreamOutcomes, bus.EscalationSubject("acme", conv), &ev); err != nil {
		t.Fatal(err)
	}
}

// The escalation stage keeps the stage contract. Its collaborators are
// the sinks: a transient failure is retried in place, ErrDeliveryFailed
// dead-letters the event, a panic dead-letters it; an event delivered
// again is handed to the sinks again, which drop it by its id (the
// handoff sink by Nats-Msg-Id).
func TestStageContract(t *testing.T) {
	features := stagetest.Features{Faults: true, Final: fmt.Errorf("%w: the receiver refused it", ErrDeliveryFailed)}
	stagetest.Run(t, features, func(t *testing.T, h *rtest.JS, f *stagetest.Fault) stagetest.Stage {
		st := newContractStage(t, h, f, true)
		return stagetest.Stage{
			Run:      st.Run,
			Consumer: st.ConsumerConfig(),
			Publish: func(t *testing.T, conv string, turn int) {
				publishOutcome(t, h, conv, escalationEvent(t, "acme", conv, turn))
			},
			// A user turn is not an outcome.
			PublishInvalid: func(t *testing.T, conv string, turn int) {
				stagetest.PublishTurnOn(t, h, bus.StreamOutcomes, bus.EscalationSubject("acme", conv), "acme", conv, turn)
			},
			// REIN_HANDOFF is a work queue: read its items by direct get.
			Outputs: func(t *testing.T, conv string) []int {
				ctx := context.Background()
				stream, err := h.JS.Stream(ctx, bus.StreamHandoff)
				if err != nil {
					t.Fatal(err)
				}
				info, err := stream.Info(ctx)
				if err != nil {
					t.Fatal(err)
				}
				var turns []int
				for seq := info.State.FirstSeq; seq > 0 && seq <= info.State.LastSeq; seq++ {
					m, err := stream.GetMsg(ctx, seq)
					if err != nil || m.Subject != bus.HandoffSubject("acme", conv) {
						continue
					}
					var item HandoffItem
					if err := json.Unmarshal(m.Data, &item); err != nil {
						t.Fatalf("handoff item %d: %v", seq, err)
					}
					turns = append(turns, item.Turn)
				}
				return turns
			},
		}
	})
}

// An event dead-lettered after some sinks took it — its last attempt
// failed transiently, or a sink panicked — is forgotten: before, its entry
// in delivered (which sinks have it) stayed for the life of the process,
// one per dead letter.
func TestDeadLetteredEventIsForgotten(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault func(f *stagetest.Fault)
	}{
		{"transient failures until the attempts are spent", func(f *stagetest.Fault) { f.Fail(1000, errors.New("receiver down")) }},
		{"a sink panics", func(f *stagetest.Fault) { f.Panic(1) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := rtest.StartJetStream(t, "")
			f := stagetest.NewFault()
			tc.fault(f)
			// The handoff sink takes the event before the faulty one fails.
			st := newContractStage(t, h, f, false)
			rtest.Run(t, "escalation", st.Run)
			publishOutcome(t, h, "c1", escalationEvent(t, "acme", "c1", 1))
			rtest.CheckFor(t, 30*time.Second, "the event is dead-lettered", func() bool {
				return h.StreamMsgs(t, bus.StreamDLQ) == 1
			})
			h.WaitAcked(t, 30*time.Second, bus.StreamOutcomes, bus.DurableEscalation, h.StreamLastSeq(t, bus.StreamOutcomes))
			st.mu.Lock()
			defer st.mu.Unlock()
			if n := len(st.delivered); n != 0 {
				t.Fatalf("delivered holds %d events after the dead letter, want 0: %v", n, st.delivered)
			}
		})
	}
}
