package consume

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/reinception/rein/internal/telemetry"
	"github.com/reinception/rein/streams"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Handler handles one decoded event. It never acks: the consume loop acks
// when it returns nil, retries when it returns an error, and dead-letters
// when the error wraps ErrPermanent or the retries are spent.
type Handler func(ctx context.Context, d streams.Decoded) error

// ConsumerConfig configures one stage's durable consumer.
type ConsumerConfig struct {
	Stage   string   // label and DLQ subject token
	Stream  string   // stream to consume
	Durable string   // durable consumer name
	Filter  []string // subject filters
	// MaxInFlight bounds the messages handled at once (default 4096,
	// at most MaxAckPending). Messages are scheduled by conversation: the
	// turns of one conversation are handled one at a time, in stream
	// order; a conversation waiting on a model holds one slot, and the
	// others go on (see schedule.go). Waiting for a slot costs a queued
	// message, not a thread.
	MaxInFlight int
	// MaxInFlightBytes bounds the bytes of the messages the consumer holds,
	// queued or being handled (default DefaultMaxInFlightBytes; a
	// replica's partitions share it). Past it the consume callback waits,
	// so the client asks the server for nothing more until handlers give
	// bytes back: back-pressure rather than a backlog in memory. A message
	// larger than the budget still runs, alone.
	MaxInFlightBytes int64
	// OnDeadLetter, when set, records the outcome of an input that is
	// about to be dead-lettered (it decoded, but its handler failed for
	// good: cause wraps ErrPermanent, or the attempts are spent), so that
	// no turn ends without one — e.g. the agent worker hands the
	// conversation to a human. It runs before the dead letter is stored;
	// when it fails the message is released and retried.
	OnDeadLetter func(ctx context.Context, d streams.Decoded, cause error) error
	// Outputs names the streams the stage publishes to. The consumer looks
	// them up when it starts, warns when one's duplicate window is shorter
	// than AckWait, and hands them to Stored.
	Outputs []string
	// RecheckAfter is the age (Decoded.Stored) past which an input is
	// checked against its stored outputs before it is handled, since their
	// ids may have left the duplicate window (default: half the window of
	// the first of Outputs; see RecheckAfter).
	RecheckAfter time.Duration
	// Stored, when set, tells what of an input's outputs is stored already
	// (perhaps by another replica whose ack the consumer's ack floor does
	// not show yet). It is the stage's one answer to "was this handled?",
	// asked by the loop in two places. The order gate asks it about a held
	// message's predecessor: StoredAll counts as decided, so a fail-over
	// holds only conversations whose earlier turn is really undecided
	// (without Stored the gate waits for the floor, or MaxHold). And before
	// the handler runs an input delivered before (Decoded.Delivered > 1) or
	// older than the recheck age: StoredAll acks it unhandled (outcome
	// "stored"), StoredSome is handed to the handler in Decoded.Outputs so
	// that it publishes only what is missing. An error is the handler's
	// (retried). It must answer StoredNone for an input it cannot read:
	// the handler rejects that.
	Stored func(ctx context.Context, out streams.OutputStreams, d streams.Decoded) (streams.Stored, error)
	// MaxHold bounds how long the order gate holds a message whose
	// conversation has an earlier message undecided (default 3×AckWait,
	// at least MinMaxHold): a dead holder's message is redelivered after
	// AckWait, but a live one may still be publishing its outputs through
	// a stream leader election (the publisher retries for DefaultRetryFor).
	MaxHold time.Duration
	// MaxAckPending bounds unacknowledged messages (default 4096).
	MaxAckPending int
	// AckWait is the redelivery timeout; long handlers send in-progress
	// heartbeats every AckWait/3 (default 30s).
	AckWait time.Duration
	// Attempts is how many times a failing handler runs before the message
	// is dead-lettered (default 5). Retries happen in place, with
	// exponential backoff from Backoff (default 100ms, capped at 5s), so the
	// conversation's later turns wait behind it and order holds. A handler
	// whose last attempt failed because JetStream could not serve it
	// (IsUnavailable: an output stream that took nothing through the
	// publisher's retries, a stream it reads without a leader) is not
	// dead-lettered: the message is handed back, redelivered after the
	// backoff, and tried again until the streams serve it.
	Attempts int
	Backoff  time.Duration
	// MaxBytes is the largest accepted body (default 256 KiB).
	MaxBytes int
	// Quarantine deletes an undecodable message from its source stream
	// once it is safely in the dead-letter stream, so that the source holds
	// only valid events. Set for the turns stream, which outsiders write.
	Quarantine bool
	// PinTTL is how long the server keeps the stage's pin on a replica
	// that stopped pulling (a crashed process) before a standby replica
	// takes over (default DefaultPinTTL). Live replicas pull at least every
	// PinTTL/3, so a shorter TTL never moves the pin off a live one.
	PinTTL time.Duration
	// ShutdownGrace bounds how long in-flight handlers may run after the
	// context is cancelled (default 10s); queued messages are released
	// for redelivery at once.
	ShutdownGrace time.Duration
}

// DefaultMaxInFlightBytes is the default ConsumerConfig.MaxInFlightBytes:
// thousands of rein's events of a few hundred bytes, or 256 of the
// largest accepted (DefaultMaxEventBytes).
const DefaultMaxInFlightBytes = 64 << 20

// MinMaxHold is the shortest default MaxHold: it outlasts a publish
// retried through a leader election (DefaultRetryFor) with room to spare.
// The cluster chaos test with a 3 s ack wait (a 9 s hold) saw holds expire
// while the earlier turn's holder was still storing its outputs, so that
// turn ended superseded.
const MinMaxHold = time.Minute

// priorityGroup is the pinned-client group every rein consumer uses: among
// several replicas of a stage, the server delivers to one pinned client at
// a time and fails over when it stops pulling, so per-conversation order
// holds across machines.
const priorityGroup = "rein"

// DefaultPinTTL is the default ConsumerConfig.PinTTL: a crashed replica's
// stage is taken over within about this long.
const DefaultPinTTL = 10 * time.Second

// pullExpiry is how long one pull request of a replica waits: a third of
// the pin TTL (at least a second), so a live replica renews its pull well
// within the TTL even when idle.
func (c ConsumerConfig) pullExpiry() time.Duration { return max(c.PinTTL/3, time.Second) }

func (c *ConsumerConfig) defaults() {
	if c.MaxAckPending == 0 {
		c.MaxAckPending = 4096
	}
	if c.PinTTL <= 0 {
		c.PinTTL = DefaultPinTTL
	}
	if c.MaxInFlight == 0 {
		c.MaxInFlight = c.MaxAckPending
	}
	if c.MaxInFlightBytes == 0 {
		c.MaxInFlightBytes = DefaultMaxInFlightBytes
	}
	if c.AckWait == 0 {
		c.AckWait = 30 * time.Second
	}
	if c.Attempts == 0 {
		c.Attempts = 5
	}
	if c.Backoff == 0 {
		c.Backoff = 100 * time.Millisecond
	}
	if c.MaxBytes == 0 {
		c.MaxBytes = streams.DefaultMaxEventBytes
	}
	if c.ShutdownGrace == 0 {
		c.ShutdownGrace = 10 * time.Second
	}
	if c.MaxHold == 0 {
		c.MaxHold = max(3*c.AckWait, MinMaxHold)
	}
}

// Validate checks the configuration after defaults are applied.
func (c ConsumerConfig) Validate() error {
	c.defaults()
	switch {
	case c.Stage == "" || c.Stream == "" || c.Durable == "":
		return fmt.Errorf("%w: consumer needs a stage, a stream and a durable name", streams.ErrInvalidConfig)
	case len(c.Filter) == 0:
		return fmt.Errorf("%w: consumer %s needs a subject filter", streams.ErrInvalidConfig, c.Durable)
	case c.MaxInFlight < 1 || c.MaxInFlight > c.MaxAckPending:
		return fmt.Errorf("%w: consumer %s: max in flight %d must be 1..%d (the max ack pending)", streams.ErrInvalidConfig, c.Durable, c.MaxInFlight, c.MaxAckPending)
	case c.MaxAckPending < 1 || c.MaxAckPending > 1<<20:
		return fmt.Errorf("%w: consumer %s: max ack pending %d must be 1..%d", streams.ErrInvalidConfig, c.Durable, c.MaxAckPending, 1<<20)
	case c.MaxInFlightBytes < 0:
		return fmt.Errorf("%w: consumer %s: max in-flight bytes %d must not be negative", streams.ErrInvalidConfig, c.Durable, c.MaxInFlightBytes)
	case c.Attempts < 1:
		return fmt.Errorf("%w: consumer %s: attempts must be at least 1", streams.ErrInvalidConfig, c.Durable)
	case c.AckWait < time.Second:
		return fmt.Errorf("%w: consumer %s: ack wait must be at least 1s", streams.ErrInvalidConfig, c.Durable)
	}
	return nil
}

// ConsumerDeps are a consumer's collaborators: its stage's (StageDeps);
// the publisher is for dead letters.
type ConsumerDeps = streams.StageDeps

// stageMetrics are the transport metrics shared by every stage.
type stageMetrics struct {
	messages      *prometheus.CounterVec
	handle        *prometheus.HistogramVec
	inFlight      *prometheus.GaugeVec
	inFlightBytes *prometheus.GaugeVec
	queued        *prometheus.GaugeVec
	conversations *prometheus.GaugeVec
	holds         *prometheus.CounterVec
	partitions    *prometheus.GaugeVec
	terminated    *prometheus.CounterVec
}

func newStageMetrics(reg prometheus.Registerer) stageMetrics {
	return stageMetrics{
		messages: telemetry.NewCounterVec(reg, telemetry.MStageMessages,
			"Messages handled by a stage, by outcome (ack, stored, retry, dlq, requeue, unavailable).", "stage", "outcome"),
		handle: telemetry.NewHistogramVec(reg, telemetry.MStageHandleSeconds,
			"Time from a message's delivery to its ack or dead letter.", telemetry.LatencyBuckets, "stage"),
		inFlight: telemetry.NewGaugeVec(reg, telemetry.MStageInFlight,
			"Messages a stage is handling now (bounded by its max in flight).", "stage"),
		inFlightBytes: telemetry.NewGaugeVec(reg, telemetry.MStageInFlightBytes,
			"Bytes of the messages a stage holds, queued or being handled (bounded by its max in-flight bytes).", "stage"),
		queued: telemetry.NewGaugeVec(reg, telemetry.MStageQueued,
			"Messages delivered to a stage and waiting for their conversation's earlier turn or an in-flight slot.", "stage"),
		conversations: telemetry.NewGaugeVec(reg, telemetry.MStageConversations,
			"Conversations a stage has work for now.", "stage"),
		partitions: telemetry.NewGaugeVec(reg, telemetry.MStagePartitions,
			"Partitions of the stage's input stream this replica works now (1 on a stream without partitions; 0 while its share is elsewhere).", "stage"),
		terminated: telemetry.NewCounterVec(reg, telemetry.MStageTerminated,
			"Messages terminated without a dead letter because the dead letter was refused through every attempt (not an outage), by why (too_large, refused); each stays in its stream.", "stage", "reason"),
		holds: telemetry.NewCounterVec(reg, telemetry.MStageOrderHolds,
			"Messages the order gate held until an earlier message of their conversation was decided (held), then let run (released, or timeout past MaxHold).", "stage", "outcome"),
	}
}

// Consumer runs one stage's consume loop.
type Consumer struct {
	cfg     ConsumerConfig
	deps    ConsumerDeps
	h       Handler
	m       stageMetrics
	outcome outcomes
	handle  prometheus.Observer
	span    string                // the handling span's name
	source  jetstream.Stream      // looked up by Run
	outs    streams.OutputStreams // cfg.Outputs, looked up by Run
	recheck time.Duration         // the age past which inputs are checked (cfg.RecheckAfter)
	budget  *byteBudget           // cfg.MaxInFlightBytes, shared by the durables

	mu     sync.Mutex
	scheds map[*scheduler]struct{} // of the running durables
}

// NewConsumer checks cfg and prepares a consumer; Run starts it.
func NewConsumer(cfg ConsumerConfig, deps ConsumerDeps, h Handler) (*Consumer, error) {
	cfg.defaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if deps.JS == nil || deps.Publisher == nil || h == nil {
		return nil, fmt.Errorf("%w: consumer %s needs JetStream, a publisher and a handler", streams.ErrInvalidConfig, cfg.Durable)
	}
	if deps.Logger == nil {
		deps.Logger = slog.Default()
	}
	// The stage's logger carries "stage" already (serve adds it); the loop
	// names its durable, so no line holds a key twice.
	deps.Logger = deps.Logger.With("consumer", cfg.Durable)
	c := &Consumer{cfg: cfg, deps: deps, h: h, m: newStageMetrics(deps.Registerer), scheds: map[*scheduler]struct{}{},
		budget: newByteBudget(cfg.MaxInFlightBytes)}
	o := func(name string) prometheus.Counter { return c.m.messages.WithLabelValues(cfg.Stage, name) }
	c.outcome = outcomes{ack: o("ack"), stored: o("stored"), retry: o("retry"), dlq: o("dlq"), requeue: o("requeue"), unavailable: o("unavailable")}
	c.handle = c.m.handle.WithLabelValues(cfg.Stage)
	c.span = "rein." + cfg.Stage
	return c, nil
}

// outcomes are the stage's rein_stage_messages_total children, resolved
// once rather than looked up per message.
type outcomes struct {
	ack, stored, retry, dlq, requeue, unavailable prometheus.Counter
}

// ConsumerConfigJS is the JetStream configuration of the durable consumer.
func (c ConsumerConfig) ConsumerConfigJS() jetstream.ConsumerConfig {
	c.defaults()
	cc := jetstream.ConsumerConfig{
		Durable:        c.Durable,
		AckPolicy:      jetstream.AckExplicitPolicy,
		AckWait:        c.AckWait,
		MaxDeliver:     -1, // the loop dead-letters; the server never drops
		MaxAckPending:  c.MaxAckPending,
		DeliverPolicy:  jetstream.DeliverAllPolicy,
		PriorityPolicy: jetstream.PriorityPolicyPinned,
		PriorityGroups: []string{priorityGroup},
		PinnedTTL:      c.PinTTL,
	}
	if len(c.Filter) == 1 {
		cc.FilterSubject = c.Filter[0]
	} else {
		cc.FilterSubjects = c.Filter
	}
	return cc
}

type job struct {
	msg       jetstream.Msg
	md        *jetstream.MsgMetadata // parsed once, by the delivery callback (nil when unparsable)
	at        time.Time              // delivered
	seq       uint64                 // stream sequence (0 when unknown)
	size      int64                  // bytes taken from the consumer's budget
	heldSince time.Time              // first held by the order gate
}

// Run consumes until ctx is cancelled, then stops pulling, lets in-flight
// handlers finish (up to ShutdownGrace) and releases queued messages for
// redelivery. It returns nil after a clean drain. On a partitioned stream
// (StreamPartitions > 1) it works the partitions this replica is assigned
// among the stage's live replicas (runGroup).
func (c *Consumer) Run(ctx context.Context) error {
	s, err := streams.LookupStream(ctx, c.deps.JS, c.cfg.Stream, lookupTimeout)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("consumer %s: %w", c.cfg.Durable, err)
	}
	c.source = s
	if c.outs, c.recheck, err = lookupOutputs(ctx, c.deps.JS, c.deps.Logger, c.cfg); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	slots := make(chan struct{}, c.cfg.MaxInFlight)
	if n := streams.PartitionsOf(s); n > 1 {
		return c.runGroup(ctx, n, slots)
	}
	c.m.partitions.WithLabelValues(c.cfg.Stage).Set(1)
	return c.runOne(ctx, c.cfg, slots)
}

// runOne consumes one durable (cfg's Durable and Filter) until ctx is
// cancelled, taking in-flight slots from slots (shared by a replica's
// partitions), then drains it and hands its pin over.
func (c *Consumer) runOne(ctx context.Context, cfg ConsumerConfig, slots chan struct{}) error {
	log := c.deps.Logger
	if cfg.Durable != c.cfg.Durable {
		log = log.With("partition_durable", cfg.Durable)
	}
	cons, err := streams.EnsureConsumer(ctx, c.deps.JS, cfg.Stream, cfg.ConsumerConfigJS(), log)
	if err != nil {
		if ctx.Err() != nil {
			return nil // cancelled before it started: nothing to drain
		}
		return fmt.Errorf("consumer %s on %s: %w", cfg.Durable, cfg.Stream, err)
	}
	// Handlers run under their own context so that shutdown lets them
	// finish; it is cancelled after the grace period.
	hctx, hcancel := context.WithCancel(context.WithoutCancel(ctx))
	defer hcancel()
	var stopping atomic.Bool

	inFlight := c.m.inFlight.WithLabelValues(cfg.Stage)
	gate := &orderGate{stage: cfg.Stage, stream: cfg.Stream, js: c.deps.JS, cons: cons, log: log,
		settled: c.storedAll, maxHold: cfg.MaxHold, recheck: min(time.Second, cfg.AckWait/3), holds: c.m.holds}
	gate.start(ctx, cons.CachedInfo())
	sched := newScheduler(slots, c.budget,
		func(key string, j *job) time.Duration {
			if stopping.Load() {
				return 0 // run releases it
			}
			return gate.hold(hctx, key, j)
		},
		func(key string, j job) {
			if stopping.Load() {
				c.release(j.msg)
				return
			}
			inFlight.Inc()
			defer inFlight.Dec()
			if c.process(hctx, j, &stopping) {
				gate.decided(key, j.seq)
			}
		})
	c.track(sched, true)
	defer c.track(sched, false)

	hbDone := make(chan struct{})
	go c.heartbeats(sched, hbDone)

	cc, err := cons.Consume(func(msg jetstream.Msg) {
		// Wait for room in the byte budget, keeping the message owned
		// meanwhile; a wait cut short by shutdown hands it back.
		size := msgBytes(msg.Subject(), msg.Headers(), msg.Data())
		if !c.budget.acquire(ctx, size, cfg.AckWait/3, func() { _ = msg.InProgress() }) {
			c.release(msg)
			return
		}
		j := job{msg: msg, at: time.Now(), size: size}
		if md, err := msg.Metadata(); err == nil {
			j.md, j.seq = md, md.Sequence.Stream
			gate.observe(md)
		}
		if !sched.push(c.key(msg.Subject()), j) {
			c.budget.release(size)
			c.release(msg) // delivered while draining
		}
	},
		jetstream.PullPriorityGroup(priorityGroup),
		jetstream.PullMaxMessages(min(cfg.MaxAckPending, 512)),
		jetstream.PullExpiry(cfg.pullExpiry()),
		jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
			if !errors.Is(err, jetstream.ErrNoHeartbeat) {
				log.Debug("consume", "err", err)
			}
		}))
	if err != nil {
		close(hbDone)
		sched.close()
		sched.wait()
		return fmt.Errorf("consume %s: %w", cfg.Durable, err)
	}
	log.Info("consumer started", "stream", cfg.Stream, "max_in_flight", cfg.MaxInFlight)

	<-ctx.Done()
	cc.Drain()
	select {
	case <-cc.Closed():
	case <-time.After(cfg.ShutdownGrace):
		cc.Stop()
	}
	stopping.Store(true)
	sched.close()
	done := make(chan struct{})
	go func() { sched.wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(cfg.ShutdownGrace):
		hcancel()
		<-done
	}
	close(hbDone)
	// Hand the pin over at once rather than after PinnedTTL, so a restarted
	// or standby replica takes over without waiting.
	uctx, ucancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer ucancel()
	if err := c.source.UnpinConsumer(uctx, cfg.Durable, priorityGroup); err != nil {
		log.Debug("unpin", "err", err)
	}
	log.Info("consumer drained")
	return nil
}

// track adds (or removes) a running durable's scheduler to those whose
// queues the stage's gauges sum.
func (c *Consumer) track(s *scheduler, add bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if add {
		c.scheds[s] = struct{}{}
	} else {
		delete(c.scheds, s)
	}
}

// depth sums the queues of the running durables.
func (c *Consumer) depth() (queued, conversations int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for s := range c.scheds {
		q, n := s.depth()
		queued, conversations = queued+q, conversations+n
	}
	return queued, conversations
}

// key is a message's conversation: <tenant>.<conv> from its subject.
func (c *Consumer) key(subject string) string {
	if k, ok := streams.ConversationKey(subject); ok {
		return k
	}
	return subject
}

// heartbeats keeps every message the consumer holds — handled, queued
// behind its conversation's earlier turn, or held by the order gate —
// owned, so that none is redelivered while it waits its turn.
// It also samples the queue gauges and trims the idle drainers.
func (c *Consumer) heartbeats(s *scheduler, done <-chan struct{}) {
	every := c.cfg.AckWait / 3
	queued, convs := c.m.queued.WithLabelValues(c.cfg.Stage), c.m.conversations.WithLabelValues(c.cfg.Stage)
	bytes := c.m.inFlightBytes.WithLabelValues(c.cfg.Stage)
	t := time.NewTicker(min(every, time.Second))
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-done:
			q, n := c.depth()
			queued.Set(float64(q))
			convs.Set(float64(n))
			held, _ := c.budget.inUse()
			bytes.Set(float64(held))
			return
		case now := <-t.C:
			q, n := c.depth()
			queued.Set(float64(q))
			convs.Set(float64(n))
			held, _ := c.budget.inUse()
			bytes.Set(float64(held))
			s.trim()
			if now.Sub(last) >= every {
				last = now
				s.each(now, every, func(m jetstream.Msg) { _ = m.InProgress() })
			}
		}
	}
}

// release hands a not-yet-handled message back for prompt redelivery.
func (c *Consumer) release(msg jetstream.Msg) {
	_ = msg.Nak()
	c.outcome.requeue.Inc()
}

// process decides, once, what happens to one message. It reports whether
// the message was decided (acked or dead-lettered) rather than released.
func (c *Consumer) process(ctx context.Context, j job, stopping *atomic.Bool) bool {
	msg := j.msg
	defer func() { c.handle.Observe(time.Since(j.at).Seconds()) }()
	d, err := streams.Decode(msg.Subject(), msg.Headers(), msg.Data(), c.cfg.MaxBytes)
	if err != nil {
		return c.deadLetter(ctx, msg, err.Error(), 1, true)
	}
	if md := j.md; md != nil {
		d.Sequence, d.Stored, d.Delivered = md.Sequence.Stream, md.Timestamp, md.NumDelivered
	}
	// One span per handling, the child of the span that stored the input;
	// its attributes are built only when it records (tracing is on).
	ctx, span := telemetry.Tracer().Start(telemetry.ContextWithTraceparent(ctx, d.Meta.Traceparent), c.span,
		trace.WithSpanKind(trace.SpanKindConsumer))
	if span.IsRecording() {
		span.SetAttributes(telemetry.AttrStage.String(c.cfg.Stage), telemetry.AttrTenant.String(d.Meta.Tenant),
			telemetry.AttrConversation.String(d.Meta.Conversation), telemetry.AttrTurn.Int(d.Meta.Turn))
	}
	defer span.End()
	backoff := c.cfg.Backoff
	for attempt := 1; ; attempt++ {
		var skipped bool
		skipped, err = c.safeHandle(ctx, d)
		if err == nil && skipped {
			_ = msg.Ack()
			c.outcome.stored.Inc()
			return true
		}
		if err != nil {
			span.RecordError(err)
		}
		switch {
		case err == nil:
			_ = msg.Ack()
			c.outcome.ack.Inc()
			return true
		case errors.Is(err, streams.ErrPermanent):
			span.SetStatus(codes.Error, "dead-lettered")
			if !c.recordOutcome(ctx, msg, d, err) {
				return false
			}
			return c.deadLetter(ctx, msg, err.Error(), attempt, false)
		case attempt >= c.cfg.Attempts && streams.IsUnavailable(err):
			// The input is fine; the streams it reads or writes are not.
			// Dead-lettering it would end its turn without its outputs (and
			// the dead-letter stream is most often on the same servers):
			// hand it back.
			span.SetStatus(codes.Error, "handed back: JetStream unavailable")
			c.deps.Logger.Error("JetStream could not serve the handler through every attempt (a stream without a leader, or answering nothing); handing the message back for redelivery",
				"subject", msg.Subject(), "attempts", attempt, "err", err)
			_ = msg.NakWithDelay(backoff)
			c.outcome.unavailable.Inc()
			return false
		case attempt >= c.cfg.Attempts:
			span.SetStatus(codes.Error, "dead-lettered")
			if !c.recordOutcome(ctx, msg, d, err) {
				return false
			}
			return c.deadLetter(ctx, msg, fmt.Sprintf("gave up after %d attempts: %v", attempt, err), attempt, false)
		}
		c.outcome.retry.Inc()
		c.deps.Logger.Warn("handler failed; retrying", "subject", msg.Subject(), "attempt", attempt, "err", err)
		if stopping.Load() || streams.Sleep(ctx, backoff) != nil {
			// Shutting down: leave it for redelivery rather than lose it.
			c.release(msg)
			return false
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// recordOutcome runs OnDeadLetter; on failure the message is released for
// redelivery (and false returned), since its turn would otherwise end with
// no outcome.
func (c *Consumer) recordOutcome(ctx context.Context, msg jetstream.Msg, d streams.Decoded, cause error) bool {
	if c.cfg.OnDeadLetter == nil {
		return true
	}
	err := func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("panic: %v", r)
			}
		}()
		return c.cfg.OnDeadLetter(ctx, d, cause)
	}()
	if err != nil {
		c.deps.Logger.Error("recording the outcome of a failed message failed; releasing it for redelivery",
			"subject", msg.Subject(), "err", err)
		_ = msg.NakWithDelay(c.cfg.Backoff)
		c.outcome.requeue.Inc()
		return false
	}
	return true
}

// safeHandle runs the handler, turning a panic into a permanent error so
// that bad input can never crash the process. An input delivered before,
// or older than the recheck age, is first checked against its stored
// outputs (ConsumerConfig.Stored): all stored, it is skipped unhandled.
func (c *Consumer) safeHandle(ctx context.Context, d streams.Decoded) (skipped bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = streams.Permanent(fmt.Errorf("handler panic: %v", r))
		}
	}()
	if c.cfg.Stored != nil && (d.Delivered > 1 || time.Since(d.Stored) > c.recheck) {
		st, err := c.cfg.Stored(ctx, c.outs, d)
		if err != nil {
			return false, fmt.Errorf("%s: are the outputs stored: %w", c.cfg.Stage, err)
		}
		if st == streams.StoredAll {
			c.deps.Logger.Debug("outputs stored already; acked unhandled", "subject", d.Subject, "seq", d.Sequence)
			return true, nil
		}
		d.Outputs = st
	}
	return false, c.h(ctx, d)
}

// storedAll is the order gate's question: are all of d's outputs stored?
func (c *Consumer) storedAll(ctx context.Context, d streams.Decoded) (bool, error) {
	if c.cfg.Stored == nil {
		return false, nil
	}
	st, err := c.cfg.Stored(ctx, c.outs, d)
	return st == streams.StoredAll, err
}

// deadLetter publishes the message to rein.dlq.<stage> with the reason and
// terminates it; an undecodable message is also deleted from a quarantined
// source stream. If the dead letter cannot be stored because JetStream is
// unavailable (an outage) the message is released for redelivery, so
// nothing is lost; if it is refused for any other reason through
// Attempts tries, the message is terminated unrecorded (left in its
// stream), counted in rein_stage_terminated_total and logged, rather than
// redelivered for ever.
func (c *Consumer) deadLetter(ctx context.Context, msg jetstream.Msg, reason string, attempts int, undecodable bool) bool {
	var seq uint64
	if md, err := msg.Metadata(); err == nil {
		seq = md.Sequence.Stream
	}
	backoff := c.cfg.Backoff
	for try := 1; ; try++ {
		err := streams.PublishDeadLetter(ctx, c.deps.Publisher, c.cfg.Stage, c.cfg.Stream, seq, attempts, msg.Subject(), msg.Headers(), msg.Data(), reason)
		if err == nil {
			break
		}
		if streams.IsUnavailable(err) || ctx.Err() != nil {
			c.deps.Logger.Error("dead letter failed; releasing for redelivery", "subject", msg.Subject(), "err", err)
			_ = msg.NakWithDelay(c.cfg.Backoff)
			c.outcome.requeue.Inc()
			return false
		}
		if try >= c.cfg.Attempts {
			why := deadLetterRefusal(err)
			c.deps.Logger.Error("dead letter refused through every attempt; terminating the message, which stays unhandled in its stream",
				"subject", msg.Subject(), "stream", c.cfg.Stream, "seq", seq, "why", why, "tries", try, "reason", reason, "err", err)
			_ = msg.Term()
			c.m.terminated.WithLabelValues(c.cfg.Stage, why).Inc()
			return true
		}
		c.deps.Logger.Warn("dead letter refused; trying again", "subject", msg.Subject(), "try", try, "err", err)
		if streams.Sleep(ctx, backoff) != nil {
			c.release(msg)
			return false
		}
		backoff = min(2*backoff, 5*time.Second)
	}
	_ = msg.Term()
	c.outcome.dlq.Inc()
	c.deps.Logger.Warn("dead-lettered", "subject", msg.Subject(), "reason", reason)
	if undecodable && c.cfg.Quarantine && c.source != nil && seq > 0 {
		if err := c.source.DeleteMsg(ctx, seq); err != nil && !streams.IsNotFound(err) {
			c.deps.Logger.Warn("quarantine delete failed", "stream", c.cfg.Stream, "seq", seq, "err", err)
		}
	}
	return true
}

// Why a dead letter was refused (rein_stage_terminated_total's reason).
const (
	refusedTooLarge = "too_large" // over the server's or the stream's size limit
	refusedOther    = "refused"   // any other lasting refusal
)

// deadLetterRefusal names, from a bounded set, why a dead letter was refused.
func deadLetterRefusal(err error) string {
	var apiErr *jetstream.APIError
	if errors.Is(err, nats.ErrMaxPayload) || (errors.As(err, &apiErr) && apiErr.ErrorCode == codeMessageTooLarge) {
		return refusedTooLarge
	}
	return refusedOther
}

// lookupTimeout bounds finding the stage's stream at start, as long as
// streams.EnsureConsumer waits for its durable.
const lookupTimeout = 90 * time.Second

// codeMessageTooLarge is the JetStream API error code of a message above
// the stream's max_msg_size.
const codeMessageTooLarge = 10054
