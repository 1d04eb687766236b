package escalation

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
)

// Handoff defaults.
const (
	DefaultHandoffDeadline = 5 * time.Minute
	maxSweepInterval       = 5 * time.Second
	minSweepInterval       = 10 * time.Millisecond
)

// TranscriptLine is one message of the surface dialogue.
type TranscriptLine struct {
	Turn int    `json:"turn"`
	Role string `json:"role"` // schemas.RoleUser or schemas.RoleAgent
	Text string `json:"text"`
}

// TranscriptFunc returns the surface dialogue of a conversation so far,
// oldest first. The caller of BuildSinks provides it.
type TranscriptFunc func(ctx context.Context, tenant, conv string) ([]TranscriptLine, error)

// HandoffItem is what a human-agent desktop receives: everything needed to
// take over the conversation informed.
type HandoffItem struct {
	ID           string           `json:"id"` // the escalation event id (idempotency key)
	Tenant       string           `json:"tenant"`
	Conversation string           `json:"conversation"`
	Turn         int              `json:"turn"`
	ErrorType    string           `json:"error_type,omitempty"` // detected error type
	Reason       string           `json:"reason"`               // why the agent escalated; human_path: the user wrote again after the handoff
	Summary      string           `json:"summary"`              // the agent's summary
	Plan         string           `json:"plan,omitempty"`       // the planted recovery reasoning
	DetectionID  string           `json:"detection_id,omitempty"`
	Traceparent  string           `json:"traceparent,omitempty"`
	Transcript   []TranscriptLine `json:"transcript"`
	CreatedAt    time.Time        `json:"created_at"`
	Deadline     time.Time        `json:"deadline"`

	// Sequence is the item's REIN_HANDOFF stream sequence (not serialised).
	Sequence uint64 `json:"-"`
}

// HandoffConfig configures the handoff sink; in rein.yaml it is a
// `type: handoff` entry of `sinks:` (at most one) with the keys tagged
// below. The untagged fields are for Go callers (BuildSinks fills them from
// SinkDeps when unset).
type HandoffConfig struct {
	// Name is the instance name (default "handoff").
	Name string `yaml:"name"`
	// Deadline is how long an item waits for a claim before it times out
	// (default 5m).
	Deadline time.Duration `yaml:"deadline"`
	// SweepInterval is how often unclaimed items are checked against their
	// deadline (default Deadline/4, clamped to [10ms, 5s]).
	SweepInterval time.Duration `yaml:"sweep_interval"`

	// Publisher stores the items and timeout events (retries, expected
	// stream, rein_published_total); default one without metrics.
	Publisher *streams.Publisher `yaml:"-"`
	// NoSweeper disables the background sweep; call Sweep yourself.
	NoSweeper bool `yaml:"-"`
	// Transcript supplies the dialogue so far; nil leaves it empty.
	Transcript TranscriptFunc `yaml:"-"`
	// OnTimeout, when set, is called with every handoff timeout event
	// after it is published (e.g. to deliver it to the other sinks).
	OnTimeout func(ctx context.Context, ev cloudevents.Event) `yaml:"-"`
	// Now is the clock (default time.Now).
	Now func() time.Time `yaml:"-"`
}

func (c *HandoffConfig) withDefaults() {
	if c.Name == "" {
		c.Name = KindHandoff
	}
	if c.Deadline == 0 {
		c.Deadline = DefaultHandoffDeadline
	}
	if c.SweepInterval == 0 {
		c.SweepInterval = min(max(c.Deadline/4, minSweepInterval), maxSweepInterval)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

func (c *HandoffConfig) validate() error {
	if c.Deadline < 0 || c.SweepInterval < 0 {
		return fmt.Errorf("%w: handoff sink: deadline %s and sweep_interval %s must not be negative", ErrInvalidConfig, c.Deadline, c.SweepInterval)
	}
	return nil
}

// Handoff publishes escalations as work items on REIN_HANDOFF, from which
// human-agent desktops claim them (see Claim). An item not claimed by its
// deadline is removed and dev.rein.handoff.timeout.v1 is published on
// rein.handoff.timeout.<tenant>.<conv> instead. Reports are skipped.
//
// Claim and timeout race for an item through JetStream's message delete:
// exactly one of them removes it, so an item is either claimed or timed
// out, never both.
type Handoff struct {
	js  jetstream.JetStream
	cfg HandoffConfig
	m   *Metrics
	log *slog.Logger

	sweepMu sync.Mutex    // one Sweep at a time
	pending []HandoffItem // removed items whose timeout event is not yet published

	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

// NewHandoff builds a handoff sink on js; REIN_HANDOFF must exist (see
// EnsureHandoffStream). Unless cfg.NoSweeper, it starts the deadline sweep,
// which Close stops. m and log may be nil.
func NewHandoff(js jetstream.JetStream, cfg HandoffConfig, m *Metrics, log *slog.Logger) (*Handoff, error) {
	if js == nil {
		return nil, fmt.Errorf("%w: handoff needs a JetStream connection", ErrInvalidConfig)
	}
	cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.Publisher == nil {
		cfg.Publisher = streams.NewPublisher(js, nil, streams.PublisherConfig{})
	}
	if m == nil {
		m = NewMetrics(nil)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	h := &Handoff{js: js, cfg: cfg, m: m, log: log, done: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	if cfg.NoSweeper {
		close(h.done)
	} else {
		go h.sweepLoop(ctx)
	}
	return h, nil
}

// Name is the instance name (HandoffConfig.Name, default "handoff").
func (h *Handoff) Name() string { return h.cfg.Name }

// Kind is KindHandoff.
func (h *Handoff) Kind() string { return KindHandoff }

// Close stops the deadline sweep. Items stay in the stream.
func (h *Handoff) Close() error {
	h.once.Do(func() {
		h.cancel()
		<-h.done
	})
	return nil
}

// Deliver turns an escalation, or the human_path record of a later user
// turn of a conversation handed to a human, into a handoff item with the
// transcript so far and publishes it (Nats-Msg-Id "handoff-<event id>", so
// redelivery makes no second item). Other events are skipped. A malformed
// event is final (ErrDeliveryFailed); a transcript or publish failure is
// transient.
func (h *Handoff) Deliver(ctx context.Context, ev cloudevents.Event) error {
	start := time.Now()
	defer func() { h.m.observe(h.Name(), KindHandoff, time.Since(start)) }()
	item, ok, err := handoffOf(ev)
	switch {
	case err != nil:
		h.m.delivery(h.Name(), KindHandoff, OutcomeFailed)
		return fmt.Errorf("%w: handoff: event %s: %w", ErrDeliveryFailed, ev.ID(), err)
	case !ok:
		h.m.delivery(h.Name(), KindHandoff, OutcomeSkipped)
		return nil
	}
	var lines []TranscriptLine
	if h.cfg.Transcript != nil {
		if lines, err = h.cfg.Transcript(ctx, item.Tenant, item.Conversation); err != nil {
			h.m.delivery(h.Name(), KindHandoff, OutcomeRetry)
			return fmt.Errorf("handoff: transcript of %s/%s: %w", item.Tenant, item.Conversation, err)
		}
	}
	if lines == nil {
		lines = []TranscriptLine{}
	}
	now := h.cfg.Now().UTC()
	item.Transcript, item.CreatedAt, item.Deadline = lines, now, now.Add(h.cfg.Deadline)
	body, err := json.Marshal(item)
	if err != nil {
		h.m.delivery(h.Name(), KindHandoff, OutcomeFailed)
		return fmt.Errorf("%w: handoff: encode item %s: %w", ErrDeliveryFailed, ev.ID(), err)
	}
	msg := &nats.Msg{Subject: bus.HandoffSubject(item.Tenant, item.Conversation), Data: body,
		Header: nats.Header{bus.HeaderMsgID: {"handoff-" + ev.ID()}}}
	_, err = h.cfg.Publisher.PublishMsg(ctx, bus.StreamHandoff, msg)
	if err != nil {
		h.m.delivery(h.Name(), KindHandoff, OutcomeRetry)
		return fmt.Errorf("handoff: publish item %s: %w", ev.ID(), err)
	}
	h.m.delivery(h.Name(), KindHandoff, OutcomeDelivered)
	return nil
}

// handoffOf is the item an event makes, without transcript and times: an
// escalation's, or a human_path record's (reason human_path, a summary
// naming the handoff it follows). ok is false for any other event.
func handoffOf(ev cloudevents.Event) (item HandoffItem, ok bool, err error) {
	var esc schemas.Escalation
	var u schemas.Unanswered
	switch ev.Type() {
	case schemas.TypeEscalation:
		err = schemas.Decode(&ev, &esc)
	case schemas.TypeUnanswered:
		if err = schemas.Decode(&ev, &u); err == nil && u.Reason != schemas.UnansweredHumanPath {
			return item, false, nil
		}
	default:
		return item, false, nil
	}
	if err != nil {
		return item, false, err
	}
	meta, err := schemas.MetaOf(&ev)
	if err != nil {
		return item, false, err
	}
	item = HandoffItem{ID: ev.ID(), Tenant: meta.Tenant, Conversation: meta.Conversation, Traceparent: meta.Traceparent}
	if ev.Type() == schemas.TypeEscalation {
		item.Turn, item.ErrorType, item.Reason, item.Summary = cmp.Or(esc.Turn, meta.Turn), esc.ErrorType, esc.Reason, esc.Summary
		item.Plan, item.DetectionID = esc.Thought, esc.DetectionID
		return item, true, nil
	}
	item.Turn, item.Reason = cmp.Or(u.Turn, meta.Turn), u.Reason
	item.Summary = fmt.Sprintf("The user wrote again (turn %d) in a conversation handed to a human at turn %d (%s); the agent does not answer it.",
		item.Turn, u.EscalatedTurn, cmp.Or(u.HandoffReason, "unknown reason"))
	return item, true, nil
}

func (h *Handoff) sweepLoop(ctx context.Context) {
	defer close(h.done)
	t := time.NewTicker(h.cfg.SweepInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := h.Sweep(ctx); err != nil && ctx.Err() == nil {
				h.log.Warn("handoff sweep failed", slog.Any("err", err))
			}
		}
	}
}

// Sweep times out every unclaimed item whose deadline has passed: it
// removes the item and publishes dev.rein.handoff.timeout.v1. It returns
// how many timeout events it published. A timeout event that fails to
// publish is retried on the next Sweep.
func (h *Handoff) Sweep(ctx context.Context) (int, error) {
	h.sweepMu.Lock()
	defer h.sweepMu.Unlock()
	stream, err := h.js.Stream(ctx, bus.StreamHandoff)
	if err != nil {
		return 0, fmt.Errorf("handoff sweep: %w", err)
	}
	now := h.cfg.Now()
	for seq := uint64(1); ; {
		raw, err := stream.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(bus.HandoffItems))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			break
		}
		if err != nil {
			return 0, fmt.Errorf("handoff sweep: read seq %d: %w", seq, err)
		}
		seq = raw.Sequence + 1
		var item HandoffItem
		if err := json.Unmarshal(raw.Data, &item); err != nil {
			h.log.Warn("handoff sweep: undecodable item left in place", slog.Uint64("seq", raw.Sequence), slog.Any("err", err))
			continue
		}
		if now.Before(item.Deadline) {
			continue
		}
		won, err := take(ctx, stream, raw.Sequence)
		if err != nil {
			return 0, fmt.Errorf("handoff sweep: %w", err)
		}
		if won {
			item.Sequence = raw.Sequence
			h.pending = append(h.pending, item)
		}
	}
	published := 0
	for len(h.pending) > 0 {
		if err := h.publishTimeout(ctx, h.pending[0]); err != nil {
			return published, err
		}
		h.pending = h.pending[1:]
		published++
	}
	return published, nil
}

// TimeoutEventID is the id of the timeout event of a handoff item.
func TimeoutEventID(escalationID string) string { return "handoff-timeout-" + escalationID }

func (h *Handoff) publishTimeout(ctx context.Context, item HandoffItem) error {
	ev, err := schemas.NewEvent(schemas.TypeHandoffTimeout, TimeoutEventID(item.ID), "",
		schemas.Meta{Tenant: item.Tenant, Conversation: item.Conversation, Turn: item.Turn, Traceparent: item.Traceparent},
		schemas.HandoffTimeout{Turn: item.Turn, EscalationID: item.ID, Deadline: item.Deadline.UTC().Format(time.RFC3339Nano)})
	if err != nil {
		return fmt.Errorf("handoff timeout event for %s: %w", item.ID, err)
	}
	msg, err := natsMsg(ctx, bus.HandoffTimeoutSubject(item.Tenant, item.Conversation), ev)
	if err != nil {
		return err
	}
	if _, err := h.cfg.Publisher.PublishMsg(ctx, bus.StreamHandoff, msg); err != nil {
		return fmt.Errorf("handoff: publish timeout %s: %w", ev.ID(), err)
	}
	h.m.HandoffTimeouts.Inc()
	h.log.Info("handoff item timed out unclaimed",
		slog.String("escalation", item.ID), slog.String("tenant", item.Tenant), slog.Time("deadline", item.Deadline))
	if h.cfg.OnTimeout != nil {
		h.cfg.OnTimeout(ctx, ev)
	}
	return nil
}

// take removes the message at seq. It reports false when the message is
// already gone (claimed or timed out by someone else).
func take(ctx context.Context, stream jetstream.Stream, seq uint64) (bool, error) {
	err := stream.DeleteMsg(ctx, seq)
	if err == nil {
		return true, nil
	}
	if errors.Is(err, jetstream.ErrMsgDeleteUnsuccessful) {
		if _, gerr := stream.GetMsg(ctx, seq); errors.Is(gerr, jetstream.ErrMsgNotFound) {
			return false, nil
		}
	}
	return false, fmt.Errorf("remove item seq %d: %w", seq, err)
}

// Claim takes the oldest unclaimed handoff item for a human-agent desktop,
// waiting up to wait for one (wait <= 0: don't wait). The item is removed
// from REIN_HANDOFF, so no other desktop gets it and it can no longer time
// out. It returns ErrNoHandoff when none arrived in time.
func Claim(ctx context.Context, js jetstream.JetStream, wait time.Duration) (*HandoffItem, error) {
	stream, err := js.Stream(ctx, bus.StreamHandoff)
	if err != nil {
		return nil, fmt.Errorf("claim: %w", err)
	}
	cons, err := stream.Consumer(ctx, bus.DurableHandoffDesktops)
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		// The stream was provisioned without the desktops' consumer.
		cons, err = ensureDesktopConsumer(ctx, stream, stream.CachedInfo().Config.Replicas)
	}
	if err != nil {
		return nil, fmt.Errorf("claim: consumer %s: %w", bus.DurableHandoffDesktops, err)
	}
	until := time.Now().Add(wait)
	for {
		item, got, err := claimBatch(ctx, stream, cons, until)
		if err != nil || item != nil {
			return item, err
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("claim: %w", context.Cause(ctx))
		}
		if !got && time.Until(until) < time.Millisecond {
			return nil, ErrNoHandoff
		}
	}
}

// noResponderPause is how long a claim waits before asking a consumer
// that did not answer again.
const noResponderPause = 50 * time.Millisecond

// noResponder reports a pull nobody answered: the consumer exists but
// does not take pulls yet (the stage starting beside this desktop has
// just created it). Nothing to claim now; Claim asks again within its wait.
func noResponder(err error) bool {
	return errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoStreamResponse)
}

// pauseForResponder waits a little before the next pull (at most until
// until, or ctx's end: Claim then returns).
func pauseForResponder(ctx context.Context, until time.Time) {
	select {
	case <-ctx.Done():
	case <-time.After(min(noResponderPause, max(time.Until(until), 0))):
	}
}

// claimBatch fetches at most one message (waiting until `until`) and tries
// to claim it. got reports whether a message was fetched at all.
func claimBatch(ctx context.Context, stream jetstream.Stream, cons jetstream.Consumer, until time.Time) (item *HandoffItem, got bool, err error) {
	var batch jetstream.MessageBatch
	if time.Until(until) < time.Millisecond {
		batch, err = cons.FetchNoWait(1)
	} else {
		fctx, cancel := context.WithDeadline(ctx, until)
		defer cancel()
		batch, err = cons.Fetch(1, jetstream.FetchContext(fctx))
	}
	if noResponder(err) {
		pauseForResponder(ctx, until)
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("claim: fetch: %w", err)
	}
	for msg := range batch.Messages() {
		got = true
		if item == nil && err == nil {
			item, err = claimOne(ctx, stream, msg)
		}
	}
	if err != nil || item != nil {
		return item, got, err
	}
	if berr := batch.Error(); noResponder(berr) {
		pauseForResponder(ctx, until)
		return nil, got, nil
	} else if berr != nil && !errors.Is(berr, jetstream.ErrNoMessages) &&
		!errors.Is(berr, context.DeadlineExceeded) && !errors.Is(berr, nats.ErrTimeout) {
		return nil, got, fmt.Errorf("claim: fetch: %w", berr)
	}
	return nil, got, nil
}

// claimOne claims one fetched message; nil, nil means it was lost to a
// timeout or another desktop.
func claimOne(ctx context.Context, stream jetstream.Stream, msg jetstream.Msg) (*HandoffItem, error) {
	md, err := msg.Metadata()
	if err != nil {
		return nil, fmt.Errorf("claim: %w", err)
	}
	var item HandoffItem
	if err := json.Unmarshal(msg.Data(), &item); err != nil {
		_ = msg.Term()
		return nil, fmt.Errorf("claim: undecodable item seq %d: %w", md.Sequence.Stream, err)
	}
	won, err := take(ctx, stream, md.Sequence.Stream)
	if err != nil {
		return nil, fmt.Errorf("claim: %w", err)
	}
	_ = msg.Ack() // clears the consumer's pending state; the item is already gone
	if !won {
		return nil, nil
	}
	item.Sequence = md.Sequence.Stream
	return &item, nil
}
