package consume

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/reinception/rein/streams"
	"github.com/synadia-io/orbit.go/jetstreamext"
)

// orderGate keeps a conversation's order across a crash. In steady state
// one process holds a consumer's deliveries (the pinned client) and handles
// each conversation in stream order, so order holds by construction. When a
// holder dies with messages unacked, the server redelivers those only after
// AckWait, while the next holder already receives the later messages: a
// conversation's turn 6 would run before its turn 5. The gate closes that
// window:
//
//   - It notices that deliveries may be outstanding elsewhere: at start
//     (the consumer's ack floor is below what it delivered) and whenever the
//     delivery sequence skips (another client received deliveries: a
//     fail-over to this replica, or this replica's own restart).
//   - While such a zone is open — until the ack floor reaches everything
//     delivered when it opened — each message is checked before it runs:
//     the previous message on its subject (one batch direct get, "last
//     message up to sequence n-1") must be acked (at or under the floor),
//     decided by this process, or settled: its outputs stored, as the
//     stage's ConsumerConfig.Stored tells (another replica decided it, but
//     the floor still waits on an unrelated earlier message). Otherwise the
//     message is held, costing no in-flight slot, until the earlier one is
//     redelivered and decided, the floor passes it, or MaxHold passes
//     (counted, logged: the consumer never stalls).
//
// Outside a zone the gate costs an atomic load per message.
type orderGate struct {
	stage, stream string
	js            jetstream.JetStream
	cons          jetstream.Consumer
	log           *slog.Logger
	settled       func(ctx context.Context, d streams.Decoded) (bool, error) // are all its outputs stored (ConsumerConfig.Stored)
	maxHold       time.Duration
	recheck       time.Duration // floor refresh while a zone is open
	holds         *prometheus.CounterVec

	open     atomic.Bool // a zone is open, or a skip was seen
	lastDSeq uint64      // delivery sequence last seen (delivery callback only)

	mu      sync.Mutex
	suspect bool              // a skip was seen: read the consumer's state
	zoneEnd uint64            // stream sequence delivered when the zone opened
	floor   uint64            // the consumer's ack floor, as last read
	readAt  time.Time         // when floor was read
	handled map[string]uint64 // conversation → highest sequence decided here, while open
	reading sync.Mutex        // one consumer-info request at a time
}

// start reads the consumer's state before the first delivery.
func (g *orderGate) start(ctx context.Context, info *jetstream.ConsumerInfo) {
	g.lastDSeq = info.Delivered.Consumer
	if info.AckFloor.Stream < info.Delivered.Stream {
		g.mu.Lock()
		g.openZone(info.Delivered.Stream, info.AckFloor.Stream)
		g.mu.Unlock()
		g.log.Info("messages of an earlier holder may be unacked: conversations are checked for order until they are",
			"ack_floor", info.AckFloor.Stream, "delivered", info.Delivered.Stream)
	}
}

// openZone must be called with mu held.
func (g *orderGate) openZone(end, floor uint64) {
	if end > g.zoneEnd {
		g.zoneEnd = end
	}
	g.floor, g.readAt = floor, time.Now()
	if g.handled == nil {
		g.handled = map[string]uint64{}
	}
	g.open.Store(true)
}

// observe is called by the delivery callback, in delivery order.
func (g *orderGate) observe(md *jetstream.MsgMetadata) {
	if md == nil {
		return
	}
	if md.Sequence.Consumer != g.lastDSeq+1 {
		g.mu.Lock()
		g.suspect = true
		if g.handled == nil {
			g.handled = map[string]uint64{}
		}
		g.mu.Unlock()
		g.open.Store(true)
	}
	g.lastDSeq = md.Sequence.Consumer
}

// decided records that this process acked or dead-lettered seq.
func (g *orderGate) decided(key string, seq uint64) {
	if !g.open.Load() {
		return
	}
	g.mu.Lock()
	if g.handled != nil && seq > g.handled[key] {
		g.handled[key] = seq
	}
	g.mu.Unlock()
}

// hold tells how long j must wait before it runs: 0 when every earlier
// message on its subject is decided.
func (g *orderGate) hold(ctx context.Context, key string, j *job) time.Duration {
	if !g.open.Load() || j.seq == 0 {
		return 0
	}
	floor, open := g.state(ctx)
	if !open || j.seq <= floor {
		return 0
	}
	prev, err := g.previous(ctx, j.msg.Subject(), j.seq)
	if err != nil {
		// Cannot tell: wait a little and ask again, within the bound.
		g.log.Warn("order check failed; holding the message", "subject", j.msg.Subject(), "err", err)
		return g.wait(j)
	}
	g.mu.Lock()
	done := prev == nil || prev.Sequence <= g.floor || prev.Sequence <= g.handled[key]
	g.mu.Unlock()
	if !done {
		done = g.settledElsewhere(ctx, key, prev)
	}
	if done {
		if !j.heldSince.IsZero() {
			g.holds.WithLabelValues(g.stage, "released").Inc()
		}
		return 0
	}
	return g.wait(j)
}

// settledElsewhere asks the stage whether prev's outputs are stored, and
// remembers a yes as a decision so that the conversation's later messages
// do not ask again.
func (g *orderGate) settledElsewhere(ctx context.Context, key string, prev *jetstream.RawStreamMsg) bool {
	d, err := streams.Decode(prev.Subject, prev.Header, prev.Data, 0)
	if err != nil {
		return false // whoever holds it dead-letters it: wait for the floor
	}
	d.Sequence, d.Stored = prev.Sequence, prev.Time
	ok, err := g.settled(ctx, d)
	if err != nil {
		g.log.Warn("order check: are the earlier message's outputs stored?", "subject", prev.Subject, "seq", prev.Sequence, "err", err)
		return false
	}
	if ok {
		g.decided(key, prev.Sequence)
	}
	return ok
}

// wait holds j for a recheck period, or lets it run once it has waited
// MaxHold.
func (g *orderGate) wait(j *job) time.Duration {
	now := time.Now()
	if j.heldSince.IsZero() {
		j.heldSince = now
		g.holds.WithLabelValues(g.stage, "held").Inc()
		g.log.Info("holding a message until the earlier one of its conversation is decided",
			"subject", j.msg.Subject(), "seq", j.seq)
	}
	if now.Sub(j.heldSince) >= g.maxHold {
		g.holds.WithLabelValues(g.stage, "timeout").Inc()
		g.log.Error("an earlier message of the conversation was not decided in time; running this one",
			"subject", j.msg.Subject(), "seq", j.seq, "held", now.Sub(j.heldSince))
		return 0
	}
	return g.recheck
}

// state returns the ack floor, reading the consumer's state when a skip
// was seen or the last read is older than the recheck period, and closes
// the zone once the floor has passed it.
func (g *orderGate) state(ctx context.Context) (floor uint64, open bool) {
	g.mu.Lock()
	stale := g.suspect || time.Since(g.readAt) >= g.recheck
	g.mu.Unlock()
	if stale && g.reading.TryLock() {
		info, err := g.cons.Info(ctx)
		g.reading.Unlock()
		g.mu.Lock()
		if err != nil {
			g.log.Warn("order check: consumer info", "err", err)
		} else {
			if g.suspect {
				g.suspect = false
				g.openZone(info.Delivered.Stream, info.AckFloor.Stream)
			}
			g.floor, g.readAt = info.AckFloor.Stream, time.Now()
			if g.floor >= g.zoneEnd {
				g.handled = nil
				g.open.Store(false)
			}
		}
		g.mu.Unlock()
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.floor, g.open.Load()
}

// previous returns the last message on subject before seq (nil when
// there is none).
func (g *orderGate) previous(ctx context.Context, subject string, seq uint64) (*jetstream.RawStreamMsg, error) {
	if seq <= 1 {
		return nil, nil
	}
	msgs, err := jetstreamext.GetLastMsgsFor(ctx, g.js, g.stream, []string{subject}, jetstreamext.GetLastMsgsUpToSeq(seq-1))
	if err != nil {
		if errors.Is(err, jetstreamext.ErrNoMessages) {
			return nil, nil
		}
		return nil, err
	}
	var last *jetstream.RawStreamMsg
	for m, err := range msgs {
		if err != nil {
			if errors.Is(err, jetstreamext.ErrNoMessages) {
				break
			}
			return nil, err
		}
		if m.Sequence < seq && (last == nil || m.Sequence > last.Sequence) {
			last = m
		}
	}
	return last, nil
}
