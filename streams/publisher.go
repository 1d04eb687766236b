package streams

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/reinception/rein/internal/telemetry"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams/bus"
)

// Out is one event to publish: Event, or, when Event is nil, Built (a
// stage's own output, encoded without building its CloudEvent).
type Out struct {
	Stream  string
	Subject string
	Event   *event.Event
	Built   *schemas.Built
}

// Publisher publishes rein events to JetStream: Nats-Msg-Id = event id so
// the stream drops duplicates, the expected stream set so a message never
// lands in the wrong stream, and transient failures retried.
type Publisher struct {
	js        jetstream.JetStream
	published *prometheus.CounterVec
	// hijacked counts messages whose id another message took first.
	hijacked *prometheus.CounterVec
	attempts int
	backoff  time.Duration
	// ackTimeout bounds the wait for one attempt's acknowledgements: an
	// ack lost in a leader change or a reconnect would otherwise be waited
	// for forever (a handler without a deadline never returns, and its
	// conversation stalls). A retry is safe: the Msg-Id deduplicates.
	ackTimeout time.Duration
	// retryFor is how long transient failures are retried (at least
	// attempts times): long enough to outlast a stream leader election on a
	// cluster, when every attempt answers "no responders" at once.
	retryFor time.Duration
}

// DefaultRetryFor is how long a publish retries transient failures before
// it gives up: a JetStream cluster elects a new stream leader within a few
// seconds of losing one; this outlasts that with room to spare.
const DefaultRetryFor = 20 * time.Second

// DefaultAckTimeout is how long one publish attempt waits for its
// acknowledgements before it is retried.
const DefaultAckTimeout = 10 * time.Second

// PublisherConfig tunes a Publisher. The zero value is the default
// behaviour, so most callers pass PublisherConfig{}.
type PublisherConfig struct {
	// RetryFor is how long transient failures are retried; the attempts
	// are never fewer than eight. Zero (or negative) means DefaultRetryFor.
	RetryFor time.Duration
	// AckTimeout is how long one publish attempt waits for its
	// acknowledgements before it is retried. Zero (or negative) means
	// DefaultAckTimeout.
	AckTimeout time.Duration
}

// NewPublisher returns a publisher counting rein_published_total{stream} in
// reg, tuned by cfg (the zero PublisherConfig for the defaults).
func NewPublisher(js jetstream.JetStream, reg prometheus.Registerer, cfg PublisherConfig) *Publisher {
	p := &Publisher{
		js:        js,
		published: telemetry.NewCounterVec(reg, telemetry.MPublished, "Events published to JetStream, by stream.", "stream"),
		hijacked: telemetry.NewCounterVec(reg, telemetry.MPublishIDConflicts,
			"Messages not stored because another message on another subject, or another event, holds their id, by stream.", "stream"),
		attempts:   8,
		backoff:    50 * time.Millisecond,
		ackTimeout: DefaultAckTimeout,
		retryFor:   DefaultRetryFor,
	}
	if cfg.RetryFor > 0 {
		p.retryFor = cfg.RetryFor
	}
	if cfg.AckTimeout > 0 {
		p.ackTimeout = cfg.AckTimeout
	}
	return p
}

// Publish stores one event and returns its stream sequence.
func (p *Publisher) Publish(ctx context.Context, stream, subject string, ev *event.Event) (uint64, error) {
	seqs, err := p.PublishAll(ctx, Out{Stream: stream, Subject: subject, Event: ev})
	if err != nil {
		return 0, err
	}
	return seqs[0], nil
}

// PublishAll stores several events concurrently (pipelined) and waits for
// every acknowledgement. Sequences come back in the order of outs. A
// duplicate (same id within the window) is not an error: its original
// sequence is returned.
func (p *Publisher) PublishAll(ctx context.Context, outs ...Out) ([]uint64, error) {
	var bufsOf [smallBatch]*msgBuf
	var msgsOf [smallBatch]*nats.Msg
	bufs, msgs := bufsOf[:0], msgsOf[:0]
	if len(outs) > smallBatch {
		bufs, msgs = make([]*msgBuf, 0, len(outs)), make([]*nats.Msg, 0, len(outs))
	}
	bufs, msgs = bufs[:len(outs)], msgs[:len(outs)]
	// Under a span (tracing on), the events carry it as their traceparent,
	// so the next stage's span is its child.
	tp := telemetry.TraceparentOf(ctx)
	for i, o := range outs {
		b := pooledMsg()
		if err := encodeOut(b, o, tp); err != nil {
			return nil, err
		}
		bufs[i], msgs[i] = b, &b.msg
	}
	seqs, once, err := p.publishMsgsDup(ctx, outs, msgs, nil)
	if err == nil && once {
		// Every message was acknowledged on its only attempt: the client
		// is done with them, and they never left this call. A message
		// sent again may still be pending in the client as it was, so it
		// is left to the collector.
		for _, b := range bufs {
			b.release()
		}
	}
	return seqs, err
}

// PublishMsg stores a pre-encoded message (used by ingress and replay).
func (p *Publisher) PublishMsg(ctx context.Context, stream string, msg *nats.Msg) (uint64, error) {
	seqs, err := p.publishMsgs(ctx, []Out{{Stream: stream, Subject: msg.Subject}}, []*nats.Msg{msg})
	if err != nil {
		return 0, err
	}
	return seqs[0], nil
}

// publishOne stores one pre-encoded message and tells whether the stream
// took it as a duplicate of one stored before (whose sequence it returns).
func (p *Publisher) publishOne(ctx context.Context, stream string, msg *nats.Msg) (uint64, bool, error) {
	dups := make([]bool, 1)
	seqs, _, err := p.publishMsgsDup(ctx, []Out{{Stream: stream, Subject: msg.Subject}}, []*nats.Msg{msg}, dups)
	if err != nil {
		return 0, false, err
	}
	return seqs[0], dups[0], nil
}

func (p *Publisher) publishMsgs(ctx context.Context, outs []Out, msgs []*nats.Msg) ([]uint64, error) {
	seqs, _, err := p.publishMsgsDup(ctx, outs, msgs, nil)
	return seqs, err
}

// publishMsgsDup is publishMsgs, recording in dups (when not nil) which
// messages the stream reported as duplicates, and telling whether every
// message was sent in one attempt.
func (p *Publisher) publishMsgsDup(ctx context.Context, outs []Out, msgs []*nats.Msg, dups []bool) (seqs []uint64, once bool, err error) {
	seqs = make([]uint64, len(msgs))
	// A call stores a handful of messages: its bookkeeping fits arrays on
	// the stack.
	var dupsOf [smallBatch]bool
	var pendingOf [smallBatch]int
	var futuresOf [smallBatch]jetstream.PubAckFuture
	if dups == nil {
		dups = dupsOf[:0]
		if len(msgs) > smallBatch {
			dups = make([]bool, 0, len(msgs))
		}
		dups = dups[:len(msgs)]
	}
	pending := pendingOf[:0]
	if len(msgs) > smallBatch {
		pending = make([]int, 0, len(msgs))
	}
	for i := range msgs {
		pending = append(pending, i)
	}
	var lastErr error
	start := time.Now()
	attempt := 0
	for ; len(pending) > 0 && (attempt < p.attempts || time.Since(start) < p.retryFor); attempt++ {
		if attempt > 0 {
			if err := Sleep(ctx, p.backoff<<min(attempt-1, 5)); err != nil {
				return nil, false, fmt.Errorf("publish: %w (last error: %v)", err, lastErr)
			}
		}
		futures := futuresOf[:0]
		if len(pending) > smallBatch {
			futures = make([]jetstream.PubAckFuture, 0, len(pending))
		}
		futures = futures[:len(pending)]
		clear(futures)
		var failed []int
		acksBy := AckTimer(p.ackTimeout)
		for k, i := range pending {
			m := msgs[i]
			if attempt > 0 {
				// An earlier attempt's message may still be in the client's
				// hands (it resends one answered "no responders" on its
				// own), and publishing sets headers: a copy each time.
				m = retryCopy(m)
			}
			// The expected stream as a header rather than an option:
			// options cost an allocation per publish in the client.
			// PublishAll's messages carry it from encodeFor already.
			if m.Header == nil {
				m.Header = nats.Header{}
			}
			if v := m.Header[jetstream.ExpectedStreamHeader]; len(v) != 1 || v[0] != outs[i].Stream {
				m.Header.Set(jetstream.ExpectedStreamHeader, outs[i].Stream)
			}
			f, err := p.js.PublishMsgAsync(m)
			if err != nil {
				if !transient(err) {
					ReleaseAckTimer(acksBy)
					return nil, false, fmt.Errorf("publish to %s: %w", msgs[i].Subject, err)
				}
				lastErr = err
				failed = append(failed, i)
				continue
			}
			futures[k] = f
		}
		timedOut := false
		for k, i := range pending {
			f := futures[k]
			if f == nil {
				continue
			}
			took := func(ack *jetstream.PubAck) {
				seqs[i] = ack.Sequence
				dups[i] = ack.Duplicate
				if !ack.Duplicate {
					p.published.WithLabelValues(outs[i].Stream).Inc()
				}
			}
			if timedOut {
				// Past the bound, take what has been answered; only the
				// rest goes again.
				select {
				case ack := <-f.Ok():
					took(ack)
				default:
					failed = append(failed, i)
				}
				continue
			}
			select {
			case ack := <-f.Ok():
				took(ack)
			case err := <-f.Err():
				if !transient(err) {
					ReleaseAckTimer(acksBy)
					return nil, false, fmt.Errorf("publish to %s: %w", msgs[i].Subject, err)
				}
				lastErr = err
				failed = append(failed, i)
			case <-acksBy.C:
				// No answer within the bound: this one and the rest go
				// again (a copy stored meanwhile comes back a duplicate).
				timedOut = true
				lastErr = fmt.Errorf("%w: no acknowledgement within %s", jetstream.ErrAsyncPublishTimeout, p.ackTimeout)
				failed = append(failed, i)
			case <-ctx.Done():
				ReleaseAckTimer(acksBy)
				return nil, false, fmt.Errorf("publish to %s: %w", msgs[i].Subject, ctx.Err())
			}
		}
		ReleaseAckTimer(acksBy)
		pending = failed
	}
	if len(pending) > 0 {
		return nil, false, fmt.Errorf("publish to %s: gave up after %d attempts in %s: %w: %w%s", msgs[pending[0]].Subject, attempt,
			time.Since(start).Round(time.Millisecond), ErrUnavailable, lastErr, leaderHint(lastErr))
	}
	for i, dup := range dups {
		if dup {
			if err := p.checkDuplicate(ctx, outs[i].Stream, msgs[i], seqs[i]); err != nil {
				return nil, false, err
			}
		}
	}
	return seqs, attempt == 1, nil
}

// smallBatch is the most messages publishMsgsDup keeps track of without
// allocating.
const smallBatch = 8

// eventHeaders name what identifies a rein event in binary mode.
var eventHeaders = []string{bus.HeaderCEPrefix + "type", bus.HeaderCEPrefix + schemas.ExtTenant,
	bus.HeaderCEPrefix + schemas.ExtConversation, bus.HeaderCEPrefix + schemas.ExtTurn}

// checkDuplicate reads the message the stream says msg duplicates (only
// on this path: duplicates are rare) and tells whether it is msg's own
// earlier copy: on the same subject and, for a rein event, the same event
// (type, tenant, conversation, turn). Anything else is a message that took
// msg's id first; msg is then not stored, and the error (ErrIDHijack,
// permanent: no retry stores it while the id is in the window) says so.
// The dead-letter stream is not checked: only rein's stages write it,
// under ids nobody else can spell.
func (p *Publisher) checkDuplicate(ctx context.Context, stream string, msg *nats.Msg, seq uint64) error {
	if stream == bus.StreamDLQ {
		return nil
	}
	s, err := p.js.Stream(ctx, stream)
	if err != nil {
		return fmt.Errorf("publish to %s: duplicate check: %w", msg.Subject, err)
	}
	stored, err := s.GetMsg(ctx, seq)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		// The first copy was stored, then deleted (an operator, or a
		// limit): the id still dedupes, as before this check; nothing
		// another publisher wrote is hidden by it.
		return nil
	}
	if err != nil {
		return fmt.Errorf("publish to %s: duplicate check: read seq %d: %w", msg.Subject, seq, err)
	}
	why := ""
	switch {
	case stored.Subject != msg.Subject && Unpartitioned(stored.Subject) != msg.Subject:
		why = "it is stored on " + stored.Subject
	default:
		for _, h := range eventHeaders {
			if msg.Header.Get(h) != "" && stored.Header.Get(h) != msg.Header.Get(h) {
				why = fmt.Sprintf("the stored message's %s is %q, not %q", h, stored.Header.Get(h), msg.Header.Get(h))
				break
			}
		}
	}
	if why == "" {
		return nil
	}
	p.hijacked.WithLabelValues(stream).Inc()
	return Permanent(fmt.Errorf("publish to %s: %w: %s is taken by %s seq %d (%s)", msg.Subject, ErrIDHijack,
		msg.Header.Get(bus.HeaderMsgID), stream, seq, why))
}

// retryCopy is msg with a header of its own (the body is never written).
func retryCopy(msg *nats.Msg) *nats.Msg {
	h := make(nats.Header, len(msg.Header))
	for k, v := range msg.Header {
		h[k] = slices.Clone(v)
	}
	return &nats.Msg{Subject: msg.Subject, Header: h, Data: msg.Data}
}

// leaderHint says what an error left after every retry most likely means.
func leaderHint(err error) string {
	var apiErr *jetstream.APIError
	if errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoStreamResponse) || (errors.As(err, &apiErr) && apiErr.Code == 503) {
		return " (the stream answered nothing: it does not exist, or it has no leader — a cluster that lost a node's quorum, or an election that has not finished)"
	}
	if errors.Is(err, jetstream.ErrAsyncPublishTimeout) || errors.Is(err, nats.ErrTimeout) {
		return " (the stream took no message in time: its leader is overloaded or unreachable)"
	}
	return ""
}

// transient reports whether a publish error may succeed when retried.
func transient(err error) bool {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		// A wrong expected stream, a sealed stream or an oversize message
		// will never succeed; server-side errors (5xx-like) may.
		return apiErr.Code >= 500
	}
	return errors.Is(err, nats.ErrTimeout) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoStreamResponse) ||
		errors.Is(err, nats.ErrConnectionReconnecting) || errors.Is(err, jetstream.ErrTooManyStalledMsgs) ||
		errors.Is(err, jetstream.ErrAsyncPublishTimeout)
}

func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
