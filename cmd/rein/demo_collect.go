package main

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
)

// demoTurn is everything the pipeline did for one user turn.
type demoTurn struct {
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

// demoCollector gathers a tenant's events from a core NATS subscription
// (JetStream stores are also delivered to plain subscribers), keyed by
// conversation and turn.
type demoCollector struct {
	mu    sync.Mutex
	turns map[string]map[int]*demoTurn
	dlq   int
	// failed holds, per conversation, why its work was dead-lettered.
	failed map[string]string
	ch     chan struct{} // signalled on every event
	sub    []*nats.Subscription
}

func newDemoCollector(nc *nats.Conn, tenant string) (*demoCollector, error) {
	c := &demoCollector{turns: map[string]map[int]*demoTurn{}, failed: map[string]string{}, ch: make(chan struct{}, 1)}
	for _, subj := range []string{streams.TenantAll(tenant), streams.DLQAll} {
		s, err := nc.Subscribe(subj, c.onMsg)
		if err != nil {
			return nil, err
		}
		_ = s.SetPendingLimits(-1, -1)
		c.sub = append(c.sub, s)
	}
	return c, nc.Flush()
}

func (c *demoCollector) close() {
	for _, s := range c.sub {
		_ = s.Unsubscribe()
	}
}

func (c *demoCollector) turn(conv string, n int) *demoTurn {
	m := c.turns[conv]
	if m == nil {
		m = map[int]*demoTurn{}
		c.turns[conv] = m
	}
	t := m[n]
	if t == nil {
		t = &demoTurn{}
		m[n] = t
	}
	return t
}

func (c *demoCollector) onMsg(msg *nats.Msg) {
	now := time.Now()
	d, err := streams.Decode(msg.Subject, msg.Header, msg.Data, 0)
	c.mu.Lock()
	defer func() {
		c.mu.Unlock()
		select {
		case c.ch <- struct{}{}:
		default:
		}
	}()
	if err != nil {
		if msg.Header.Get("ce-type") == schemas.TypeDeadLetter {
			c.dlq++
			var dl schemas.DeadLetter
			if json.Unmarshal(msg.Data, &dl) == nil {
				if _, conv, ok := streams.SubjectIDs(dl.Subject); ok {
					c.failed[conv] = dl.Stage + ": " + dl.Reason
				}
			}
		}
		return
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
}

// wait blocks until cond (called under the lock) holds or ctx ends.
func (c *demoCollector) wait(ctx context.Context, cond func() bool) error {
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
