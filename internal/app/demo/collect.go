package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
)

// Turn is everything the pipeline did for one user turn.
type Turn struct {
	User      string
	Sent      time.Time
	Detection *schemas.Detection
	Task      *schemas.Task
	TaskAt    time.Time
	Steps     []schemas.Step
	Reply     *schemas.Turn
	RepliedAt time.Time
	Escalated *schemas.Escalation
	Reports   []schemas.Report
	// Unanswered is set when the agent recorded the turn as failed.
	Unanswered *schemas.Unanswered
}

// Collector gathers a tenant's events from a core NATS subscription
// (JetStream stores are also delivered to plain subscribers), keyed by
// conversation and turn, and the dead letters of its conversations. Core
// NATS delivers at most once: a connection the server drops (a slow
// consumer) loses what was sent meanwhile, so Refill reads what the
// streams store. Each event counts once, by its id.
type Collector struct {
	tenant string
	mu     sync.Mutex
	seen   map[string]bool // events applied: type and id
	turns  map[string]map[int]*Turn
	dlq    int
	// failed holds, per conversation, why its work was dead-lettered.
	failed map[string]string
	ch     chan struct{} // signalled on every event
	sub    []*nats.Subscription
}

// NewCollector subscribes to the tenant's subjects and the dead letters;
// Close ends it.
func NewCollector(nc *nats.Conn, tenant string) (*Collector, error) {
	c := &Collector{tenant: tenant, seen: map[string]bool{}, turns: map[string]map[int]*Turn{}, failed: map[string]string{}, ch: make(chan struct{}, 1)}
	for _, subj := range []string{bus.TenantAll(tenant), bus.DLQAll} {
		s, err := nc.Subscribe(subj, c.onMsg)
		if err != nil {
			return nil, err
		}
		_ = s.SetPendingLimits(-1, -1)
		c.sub = append(c.sub, s)
	}
	return c, nc.Flush()
}

// Close unsubscribes.
func (c *Collector) Close() {
	for _, s := range c.sub {
		_ = s.Unsubscribe()
	}
}

func (c *Collector) turn(conv string, n int) *Turn {
	m := c.turns[conv]
	if m == nil {
		m = map[int]*Turn{}
		c.turns[conv] = m
	}
	t := m[n]
	if t == nil {
		t = &Turn{}
		m[n] = t
	}
	return t
}

func (c *Collector) onMsg(msg *nats.Msg) {
	c.apply(msg.Subject, msg.Header, msg.Data, time.Now())
}

// Refill reads what the streams store for conversation conv (its turns,
// detections, tasks, steps and outcomes) and the dead letters, and applies
// the events not heard yet, timed when they were stored. It returns how
// many it applied: events the subscription missed, or that were stored
// after it was made.
func (c *Collector) Refill(ctx context.Context, js jetstream.JetStream, conv string) (int, error) {
	n := 0
	for _, stream := range []string{bus.StreamTurns, bus.StreamDetections, bus.StreamTasks, bus.StreamSteps, bus.StreamOutcomes, bus.StreamDLQ} {
		var filters []string
		if stream != bus.StreamDLQ {
			filters = bus.SubjectsFor(stream, c.tenant, conv)
		}
		err := streams.ReadStream(ctx, js, stream, streams.ReadOptions{Filters: filters}, func(r streams.Raw) error {
			if c.apply(r.Subject, nats.Header(r.Header), r.Data, r.Time) {
				n++
			}
			return nil
		})
		if err != nil {
			return n, fmt.Errorf("refill %s from %s: %w", conv, stream, err)
		}
	}
	return n, nil
}

// apply records one event, heard at (or stored at) now, unless it was
// applied already; it reports whether it applied it.
func (c *Collector) apply(subject string, header nats.Header, data []byte, now time.Time) bool {
	d, err := streams.Decode(subject, header, data, 0)
	c.mu.Lock()
	defer func() {
		c.mu.Unlock()
		select {
		case c.ch <- struct{}{}:
		default:
		}
	}()
	key := header.Get("ce-type") + " " + header.Get("ce-id")
	if err == nil {
		key = d.Event.Type() + " " + d.Event.ID()
	}
	if key != " " {
		if c.seen[key] {
			return false
		}
		c.seen[key] = true
	}
	if err != nil {
		if header.Get("ce-type") == schemas.TypeDeadLetter {
			c.dlq++
			var dl schemas.DeadLetter
			if json.Unmarshal(data, &dl) == nil {
				if _, conv, ok := streams.SubjectIDs(dl.Subject); ok {
					c.failed[conv] = dl.Stage + ": " + dl.Reason
				}
			}
		}
		return true
	}
	conv, data := d.Meta.Conversation, d.Event.Data()
	switch d.Event.Type() {
	case schemas.TypeTurn:
		var t schemas.Turn
		if json.Unmarshal(data, &t) == nil && t.Role == schemas.RoleAgent {
			tt := c.turn(conv, t.Turn)
			tt.Reply, tt.RepliedAt = &t, now
		}
	case schemas.TypeDetection:
		var x schemas.Detection
		if json.Unmarshal(data, &x) == nil {
			c.turn(conv, x.Turn).Detection = &x
		}
	case schemas.TypeTask:
		var x schemas.Task
		if json.Unmarshal(data, &x) == nil {
			tt := c.turn(conv, x.Turn)
			tt.Task, tt.TaskAt = &x, now
		}
	case schemas.TypeStep:
		var x schemas.Step
		if json.Unmarshal(data, &x) == nil {
			tt := c.turn(conv, x.Turn)
			tt.Steps = append(tt.Steps, x)
		}
	case schemas.TypeSteps:
		// A quick turn's steps in one event: the same steps as singles.
		var x schemas.Steps
		if json.Unmarshal(data, &x) == nil {
			tt := c.turn(conv, x.Turn)
			tt.Steps = append(tt.Steps, x.Steps...)
		}
	case schemas.TypeEscalation:
		var x schemas.Escalation
		if json.Unmarshal(data, &x) == nil {
			c.turn(conv, x.Turn).Escalated = &x
		}
	case schemas.TypeUnanswered:
		var x schemas.Unanswered
		if json.Unmarshal(data, &x) == nil {
			c.turn(conv, x.Turn).Unanswered = &x
		}
	case schemas.TypeReport:
		var x schemas.Report
		if json.Unmarshal(data, &x) == nil {
			tt := c.turn(conv, x.Turn)
			tt.Reports = append(tt.Reports, x)
		}
	}
	return true
}

// Sent records that the user turn n of conv, saying text, is published now.
func (c *Collector) Sent(conv string, n int, text string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.turn(conv, n)
	t.User, t.Sent = text, time.Now()
}

// Wait blocks until done (called under the lock) holds for turn n of conv,
// the conversation's work is dead-lettered, or ctx ends. It returns a copy
// of the turn and why the conversation was dead-lettered ("" if not).
func (c *Collector) Wait(ctx context.Context, conv string, n int, done func(*Turn) bool) (Turn, string, error) {
	err := c.wait(ctx, func() bool { return c.failed[conv] != "" || done(c.turn(conv, n)) })
	c.mu.Lock()
	defer c.mu.Unlock()
	t := *c.turn(conv, n)
	t.Steps, t.Reports = slices.Clone(t.Steps), slices.Clone(t.Reports)
	return t, c.failed[conv], err
}

// RefillEvery is how long WaitRead's callers wait on the subscription
// before reading the streams.
const RefillEvery = 10 * time.Second

// WaitRead is Wait that does not rely on the subscription alone: after
// every period without done holding, it reads what the streams store for
// the conversation (Refill). missed, when set, is told how many events a
// read applied (when any) and its error.
func (c *Collector) WaitRead(ctx context.Context, js jetstream.JetStream, conv string, n int, every time.Duration,
	done func(*Turn) bool, missed func(events int, err error)) (Turn, string, error) {
	for {
		wctx, cancel := context.WithTimeout(ctx, every)
		t, why, err := c.Wait(wctx, conv, n, done)
		cancel()
		if err == nil || why != "" || ctx.Err() != nil {
			return t, why, err
		}
		events, err := c.Refill(ctx, js, conv)
		if missed != nil && (events > 0 || err != nil && ctx.Err() == nil) {
			missed(events, err)
		}
	}
}

// wait blocks until cond (called under the lock) holds or ctx ends.
func (c *Collector) wait(ctx context.Context, cond func() bool) error {
	for {
		c.mu.Lock()
		ok := cond()
		c.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-c.ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
