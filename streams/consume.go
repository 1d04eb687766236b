package streams

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/reinception/rein/internal/telemetry"
)

// Handler handles one decoded event. It never acks: the consume loop acks
// when it returns nil, retries when it returns an error, and dead-letters
// when the error wraps ErrPermanent or the retries are spent.
type Handler func(ctx context.Context, d Decoded) error

// ConsumerConfig configures one stage's durable consumer.
type ConsumerConfig struct {
	Stage   string   // label and DLQ subject token
	Stream  string   // stream to consume
	Durable string   // durable consumer name
	Filter  []string // subject filters
	// Workers is the number of conversation partitions handled in
	// parallel (default 32). Turns of one conversation always go to the
	// same partition and are handled one at a time, in stream order.
	Workers int
	// MaxAckPending bounds unacknowledged messages (default 4096).
	MaxAckPending int
	// AckWait is the redelivery timeout; long handlers send in-progress
	// heartbeats every AckWait/3 (default 30s).
	AckWait time.Duration
	// Attempts is how many times a failing handler runs before the message
	// is dead-lettered (default 5). Retries happen in place, with
	// exponential backoff from Backoff (default 100ms, capped at 5s), so the
	// conversation's later turns wait behind it and order holds.
	Attempts int
	Backoff  time.Duration
	// MaxBytes is the largest accepted body (default 256 KiB).
	MaxBytes int
	// Quarantine deletes an undecodable message from its source stream
	// once it is safely in the dead-letter stream, so that the source holds
	// only valid events. Set for the turns stream, which outsiders write.
	Quarantine bool
	// ShutdownGrace bounds how long in-flight handlers may run after the
	// context is cancelled (default 10s); queued messages are released
	// for redelivery at once.
	ShutdownGrace time.Duration
}

// priorityGroup is the pinned-client group every rein consumer uses: among
// several replicas of a stage, the server delivers to one pinned client at
// a time and fails over when it stops pulling, so per-conversation order
// holds across machines.
const priorityGroup = "rein"

func (c *ConsumerConfig) defaults() {
	if c.Workers == 0 {
		c.Workers = 32
	}
	if c.MaxAckPending == 0 {
		c.MaxAckPending = 4096
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
		c.MaxBytes = DefaultMaxEventBytes
	}
	if c.ShutdownGrace == 0 {
		c.ShutdownGrace = 10 * time.Second
	}
}

// Validate checks the configuration after defaults are applied.
func (c ConsumerConfig) Validate() error {
	c.defaults()
	switch {
	case c.Stage == "" || c.Stream == "" || c.Durable == "":
		return fmt.Errorf("%w: consumer needs a stage, a stream and a durable name", ErrConfig)
	case len(c.Filter) == 0:
		return fmt.Errorf("%w: consumer %s needs a subject filter", ErrConfig, c.Durable)
	case c.Workers < 1 || c.Workers > 4096:
		return fmt.Errorf("%w: consumer %s: workers %d must be 1..4096", ErrConfig, c.Durable, c.Workers)
	case c.Attempts < 1:
		return fmt.Errorf("%w: consumer %s: attempts must be at least 1", ErrConfig, c.Durable)
	case c.AckWait < time.Second:
		return fmt.Errorf("%w: consumer %s: ack wait must be at least 1s", ErrConfig, c.Durable)
	}
	return nil
}

// ConsumerDeps are what a consumer needs from its process.
type ConsumerDeps struct {
	JS         jetstream.JetStream
	Publisher  *Publisher // for dead letters
	Logger     *slog.Logger
	Registerer prometheus.Registerer
}

// stageMetrics are the transport metrics shared by every stage.
type stageMetrics struct {
	messages *prometheus.CounterVec
	handle   *prometheus.HistogramVec
}

func newStageMetrics(reg prometheus.Registerer) stageMetrics {
	return stageMetrics{
		messages: telemetry.NewCounterVec(reg, telemetry.MStageMessages,
			"Messages handled by a stage, by outcome (ack, retry, dlq, requeue).", "stage", "outcome"),
		handle: telemetry.NewHistogramVec(reg, telemetry.MStageHandleSeconds,
			"Time from a message's delivery to its ack or dead letter.", telemetry.LatencyBuckets, "stage"),
	}
}

// Consumer runs one stage's consume loop.
type Consumer struct {
	cfg     ConsumerConfig
	deps    ConsumerDeps
	h       Handler
	m       stageMetrics
	outcome map[string]prometheus.Counter
	handle  prometheus.Observer
	seed    maphash.Seed
	source  jetstream.Stream
}

// NewConsumer checks cfg and prepares a consumer; Run starts it.
func NewConsumer(cfg ConsumerConfig, deps ConsumerDeps, h Handler) (*Consumer, error) {
	cfg.defaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if deps.JS == nil || deps.Publisher == nil || h == nil {
		return nil, fmt.Errorf("%w: consumer %s needs JetStream, a publisher and a handler", ErrConfig, cfg.Durable)
	}
	if deps.Logger == nil {
		deps.Logger = slog.Default()
	}
	c := &Consumer{cfg: cfg, deps: deps, h: h, m: newStageMetrics(deps.Registerer), seed: maphash.MakeSeed()}
	c.outcome = map[string]prometheus.Counter{}
	for _, o := range []string{"ack", "retry", "dlq", "requeue"} {
		c.outcome[o] = c.m.messages.WithLabelValues(cfg.Stage, o)
	}
	c.handle = c.m.handle.WithLabelValues(cfg.Stage)
	return c, nil
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
		PinnedTTL:      2 * c.AckWait,
	}
	if len(c.Filter) == 1 {
		cc.FilterSubject = c.Filter[0]
	} else {
		cc.FilterSubjects = c.Filter
	}
	return cc
}

type job struct {
	msg jetstream.Msg
	at  time.Time
}

// inflight is what a worker is handling now, for heartbeats.
type inflight struct {
	msg   jetstream.Msg
	since time.Time
}

// Run consumes until ctx is cancelled, then stops pulling, lets in-flight
// handlers finish (up to ShutdownGrace) and releases queued messages for
// redelivery. It returns nil after a clean drain.
func (c *Consumer) Run(ctx context.Context) error {
	cons, err := c.deps.JS.CreateOrUpdateConsumer(ctx, c.cfg.Stream, c.cfg.ConsumerConfigJS())
	if err != nil {
		if ctx.Err() != nil {
			return nil // cancelled before it started: nothing to drain
		}
		return fmt.Errorf("consumer %s on %s: %w", c.cfg.Durable, c.cfg.Stream, err)
	}
	if c.cfg.Quarantine {
		if c.source, err = c.deps.JS.Stream(ctx, c.cfg.Stream); err != nil {
			return fmt.Errorf("consumer %s: stream %s: %w", c.cfg.Durable, c.cfg.Stream, err)
		}
	}
	// Handlers run under their own context so that shutdown lets them
	// finish; it is cancelled after the grace period.
	hctx, hcancel := context.WithCancel(context.WithoutCancel(ctx))
	defer hcancel()
	var stopping atomic.Bool

	queues := make([]*partition, c.cfg.Workers)
	current := make([]atomic.Pointer[inflight], c.cfg.Workers)
	var wg sync.WaitGroup
	for i := range queues {
		queues[i] = newPartition()
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			for {
				j, ok := queues[i].pop()
				if !ok {
					return
				}
				if stopping.Load() {
					c.release(j.msg)
					continue
				}
				current[i].Store(&inflight{msg: j.msg, since: time.Now()})
				c.process(hctx, j, &stopping)
				current[i].Store(nil)
			}
		}(i)
	}

	hbDone := make(chan struct{})
	go c.heartbeats(current, hbDone)

	cc, err := cons.Consume(func(msg jetstream.Msg) {
		if !queues[c.partition(msg.Subject())].push(job{msg: msg, at: time.Now()}) {
			c.release(msg) // delivered while draining
		}
	},
		jetstream.PullPriorityGroup(priorityGroup),
		jetstream.PullMaxMessages(min(c.cfg.MaxAckPending, 512)),
		jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
			if !errors.Is(err, jetstream.ErrNoHeartbeat) {
				c.deps.Logger.Debug("consume", "stage", c.cfg.Stage, "err", err)
			}
		}))
	if err != nil {
		close(hbDone)
		for _, q := range queues {
			q.close()
		}
		wg.Wait()
		return fmt.Errorf("consume %s: %w", c.cfg.Durable, err)
	}
	c.deps.Logger.Info("consumer started", "stage", c.cfg.Stage, "stream", c.cfg.Stream, "durable", c.cfg.Durable, "workers", c.cfg.Workers)

	<-ctx.Done()
	cc.Drain()
	select {
	case <-cc.Closed():
	case <-time.After(c.cfg.ShutdownGrace):
		cc.Stop()
	}
	stopping.Store(true)
	for _, q := range queues {
		q.close()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(c.cfg.ShutdownGrace):
		hcancel()
		<-done
	}
	close(hbDone)
	// Hand the pin over at once rather than after PinnedTTL, so a restarted
	// or standby replica takes over without waiting.
	uctx, ucancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer ucancel()
	if s, err := c.deps.JS.Stream(uctx, c.cfg.Stream); err == nil {
		if err := s.UnpinConsumer(uctx, c.cfg.Durable, priorityGroup); err != nil {
			c.deps.Logger.Debug("unpin", "stage", c.cfg.Stage, "err", err)
		}
	}
	c.deps.Logger.Info("consumer drained", "stage", c.cfg.Stage)
	return nil
}

// partition maps a message to its conversation's worker.
func (c *Consumer) partition(subject string) int {
	key := subject
	if t, conv, ok := SubjectIDs(subject); ok {
		key = t + "." + conv
	}
	return int(maphash.String(c.seed, key) % uint64(c.cfg.Workers))
}

func (c *Consumer) heartbeats(current []atomic.Pointer[inflight], done <-chan struct{}) {
	every := c.cfg.AckWait / 3
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case now := <-t.C:
			for i := range current {
				if f := current[i].Load(); f != nil && now.Sub(f.since) >= every {
					_ = f.msg.InProgress()
				}
			}
		}
	}
}

// release hands a not-yet-handled message back for prompt redelivery.
func (c *Consumer) release(msg jetstream.Msg) {
	_ = msg.Nak()
	c.outcome["requeue"].Inc()
}

// process decides, once, what happens to one message.
func (c *Consumer) process(ctx context.Context, j job, stopping *atomic.Bool) {
	msg := j.msg
	defer func() { c.handle.Observe(time.Since(j.at).Seconds()) }()
	d, err := Decode(msg.Subject(), msg.Headers(), msg.Data(), c.cfg.MaxBytes)
	if err != nil {
		c.deadLetter(ctx, msg, err.Error(), 1, true)
		return
	}
	if md, err := msg.Metadata(); err == nil {
		d.Sequence, d.Stored, d.Delivered = md.Sequence.Stream, md.Timestamp, md.NumDelivered
	}
	backoff := c.cfg.Backoff
	for attempt := 1; ; attempt++ {
		err = c.safeHandle(ctx, d)
		switch {
		case err == nil:
			_ = msg.Ack()
			c.outcome["ack"].Inc()
			return
		case errors.Is(err, ErrPermanent):
			c.deadLetter(ctx, msg, err.Error(), attempt, false)
			return
		case attempt >= c.cfg.Attempts:
			c.deadLetter(ctx, msg, fmt.Sprintf("gave up after %d attempts: %v", attempt, err), attempt, false)
			return
		}
		c.outcome["retry"].Inc()
		c.deps.Logger.Warn("handler failed; retrying", "stage", c.cfg.Stage, "subject", msg.Subject(), "attempt", attempt, "err", err)
		if stopping.Load() || sleepCtx(ctx, backoff) != nil {
			// Shutting down: leave it for redelivery rather than lose it.
			c.release(msg)
			return
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// safeHandle runs the handler, turning a panic into a permanent error so
// that bad input can never crash the process.
func (c *Consumer) safeHandle(ctx context.Context, d Decoded) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = Permanent(fmt.Errorf("handler panic: %v", r))
		}
	}()
	return c.h(ctx, d)
}

// deadLetter publishes the message to rein.dlq.<stage> with the reason and
// terminates it; an undecodable message is also deleted from a quarantined
// source stream. If the dead letter cannot be stored the message is
// released for redelivery instead, so nothing is lost.
func (c *Consumer) deadLetter(ctx context.Context, msg jetstream.Msg, reason string, attempts int, undecodable bool) {
	var seq uint64
	if md, err := msg.Metadata(); err == nil {
		seq = md.Sequence.Stream
	}
	if err := PublishDeadLetter(ctx, c.deps.Publisher, c.cfg.Stage, c.cfg.Stream, seq, attempts, msg.Subject(), msg.Headers(), msg.Data(), reason); err != nil {
		c.deps.Logger.Error("dead letter failed; releasing for redelivery", "stage", c.cfg.Stage, "subject", msg.Subject(), "err", err)
		_ = msg.NakWithDelay(c.cfg.Backoff)
		c.outcome["requeue"].Inc()
		return
	}
	_ = msg.Term()
	c.outcome["dlq"].Inc()
	c.deps.Logger.Warn("dead-lettered", "stage", c.cfg.Stage, "subject", msg.Subject(), "reason", reason)
	if undecodable && c.source != nil && seq > 0 {
		if err := c.source.DeleteMsg(ctx, seq); err != nil && !IsNotFound(err) {
			c.deps.Logger.Warn("quarantine delete failed", "stream", c.cfg.Stream, "seq", seq, "err", err)
		}
	}
}
