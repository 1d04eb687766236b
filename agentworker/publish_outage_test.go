package agentworker_test

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/reinception/rein/agentworker"
	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
)

// outageJS is a JetStream context whose asynchronous publishes to subjects
// under prefix fail, as if the stream's leader were gone, while down is set.
type outageJS struct {
	jetstream.JetStream
	prefix string
	down   atomic.Bool
	failed atomic.Int64
}

func (o *outageJS) PublishMsgAsync(msg *nats.Msg, opts ...jetstream.PublishOpt) (jetstream.PubAckFuture, error) {
	if o.down.Load() && strings.HasPrefix(msg.Subject, o.prefix) {
		o.failed.Add(1)
		return nil, nats.ErrNoResponders
	}
	return o.JetStream.PublishMsgAsync(msg, opts...)
}

// A turn that finished but whose reply could not be stored through every
// retry once went to the dead letters as "has its outcome already": its
// state said done, so the reply was never published. The turn must keep
// trying to publish it until the stream takes it.
func TestAReplyThatCouldNotBeStoredIsPublishedOnceTheStreamIsBack(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	reg := prometheus.NewRegistry()
	js := &outageJS{JetStream: h.JS, prefix: bus.TurnSubject(tenant, "outage", "agent")}
	js.down.Store(true)
	pub := streams.NewPublisher(js, nil, streams.PublisherConfig{RetryFor: 50 * time.Millisecond})
	startWorker(t, h, agentworker.Config{}, agentworker.Deps{StageDeps: streams.StageDeps{Registerer: reg, Publisher: pub}, Model: scripted(t)})
	publishTask(t, h, "outage", 1, "show reservation Q7RM2K", nil)

	// Wait until the handler has given up on the turn at least once: the
	// consumer then either dead-letters it or hands it back. (Five handler
	// attempts, each publish retried eight times with backoff: about 25 s.)
	rtest.CheckFor(t, 120*time.Second, "the turn given up on once", func() bool {
		return len(readAll(t, h, bus.StreamDLQ)) > 0 ||
			counter(t, reg, "rein_stage_messages_total", map[string]string{"stage": bus.StageAgentWorker, "outcome": "requeue"}) > 0 ||
			counter(t, reg, "rein_stage_messages_total", map[string]string{"stage": bus.StageAgentWorker, "outcome": "unavailable"}) > 0
	})
	if js.failed.Load() == 0 {
		t.Fatal("the reply's publish never failed: the outage did not apply")
	}
	js.down.Store(false)
	rtest.CheckFor(t, 2*wait, "the reply stored once the stream is back", func() bool {
		return len(agentTurns(t, h, "outage")) == 1
	})
	settled(t, h)
	if dls := readAll(t, h, bus.StreamDLQ); len(dls) != 0 {
		t.Errorf("dead letters %+v: the turn was answered, none expected", dls)
	}
}
