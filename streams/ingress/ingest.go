package ingress

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/reinception/rein/internal/telemetry"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
)

// The NATS ingest: a platform holding a tenant's ingress identity sends
// each turn as a request to rein.ingest.<tenant>.<conv>.<role>, which no
// stream captures. rein's ingress (under its own identity, a queue group)
// checks the turn exactly as POST /v1/turns does, stores it with
// PublishTurn under the id rein derives, and answers as JetStream answers
// a publish, so that a client's js.publish works unchanged. A tenant's
// identity may publish into no stream: whatever Nats-Msg-Id it sets, it
// can never make another tenant's turn or reply a duplicate.

// IngestAck is the answer to a turn sent to the NATS ingest: JetStream's
// publish acknowledgement, or its API error (Error set).
type IngestAck struct {
	Stream    string       `json:"stream,omitempty"`
	Sequence  uint64       `json:"seq,omitempty"`
	Duplicate bool         `json:"duplicate,omitempty"`
	Error     *IngestError `json:"error,omitempty"`
}

// IngestError is a refusal in the JetStream API's shape: code is the HTTP
// status POST /v1/turns answers for the same turn (400, 409, 413, 503).
type IngestError struct {
	Code        int    `json:"code"`
	Description string `json:"description"`
}

// DefaultIngestWorkers is how many turns the NATS ingest stores at once
// in one process (its queue subscriptions).
const DefaultIngestWorkers = 16

// deadLetterPrefix bounds the body a refused ingest message keeps in its
// dead letter: enough to see what it was.
const deadLetterPrefix = 4096

// ListenNATS serves the NATS ingest on nc (the ingress identity's
// connection) with workers queue subscriptions, until stop is called (it
// drains them: turns received are still stored). The subscriptions are
// registered with the server when it returns. Each turn's store is bounded
// by the publisher's retry window.
func (in *Ingress) ListenNATS(nc *nats.Conn, workers int) (stop func(), err error) {
	if workers <= 0 {
		workers = DefaultIngestWorkers
	}
	var subs []*nats.Subscription
	stop = func() {
		for _, s := range subs {
			_ = s.Drain()
		}
	}
	for range workers {
		s, err := nc.QueueSubscribe(bus.IngestAll, bus.QueueIngest, func(m *nats.Msg) {
			in.serveNATS(context.Background(), m)
		})
		if err != nil {
			stop()
			return nil, fmt.Errorf("ingest: subscribe %s: %w", bus.IngestAll, err)
		}
		subs = append(subs, s)
	}
	if err := nc.Flush(); err != nil {
		stop()
		return nil, fmt.Errorf("ingest: %w", err)
	}
	if err := nc.LastError(); err != nil && strings.Contains(strings.ToLower(err.Error()), "permissions violation") {
		stop()
		return nil, fmt.Errorf("ingest: subscribe %s: %w", bus.IngestAll, err)
	}
	return stop, nil
}

// serveNATS handles one message of the ingest: checked and stored as
// the HTTP ingress does; a refusal is dead-lettered (stage ingress, with
// the reason) and answered with its code.
func (in *Ingress) serveNATS(ctx context.Context, m *nats.Msg) {
	o := in.offerNATS(ctx, m)
	in.requests.WithLabelValues("nats", o.outcome).Inc()
	if o.why != "" && !o.deadLettered {
		data := m.Data
		reason := o.why
		if len(data) > deadLetterPrefix {
			data = data[:deadLetterPrefix]
			reason += fmt.Sprintf(" (the first %d of %d bytes kept)", deadLetterPrefix, len(m.Data))
		}
		if err := streams.PublishDeadLetter(ctx, in.pub, bus.StageIngress, "", 0, 0, m.Subject, m.Header, data, reason); err != nil {
			o.why += fmt.Sprintf(" (and its dead letter failed: %v)", err)
		}
	}
	// Answers go to clients' inboxes only: a reply subject is the
	// sender's choice, and rein's identity must not publish elsewhere for it.
	if m.Reply == "" || !strings.HasPrefix(m.Reply, bus.InboxPrefix) {
		return
	}
	ack := IngestAck{Stream: o.stream, Sequence: o.res.Sequence, Duplicate: o.res.Duplicate}
	if o.why != "" {
		ack = IngestAck{Error: &IngestError{Code: o.code, Description: o.why}}
	}
	b, err := json.Marshal(ack)
	if err != nil {
		return
	}
	_ = m.Respond(b)
}

// offerNATS checks and stores one ingest message.
func (in *Ingress) offerNATS(ctx context.Context, m *nats.Msg) offer {
	if len(m.Data) > in.maxBytes {
		return refused(http.StatusRequestEntityTooLarge, "data", fmt.Errorf("%w: oversize: %d bytes exceeds the %d-byte limit", streams.ErrUndecodable, len(m.Data), in.maxBytes))
	}
	tokens := strings.Split(m.Subject, ".")
	if len(tokens) != 5 {
		return refused(http.StatusBadRequest, "", fmt.Errorf("%w: subject %s is not %s", streams.ErrUndecodable, m.Subject, bus.IngestSubject("<tenant>", "<conversation>", "<role>")))
	}
	if tokens[4] == bus.IngestFeedback {
		return in.offerFeedback(ctx, m)
	}
	if role := tokens[4]; role != schemas.RoleUser && role != schemas.RoleAgent {
		return refused(http.StatusBadRequest, "role", fmt.Errorf("%w: role %q in subject %s: only %s and %s turns and %s are taken", streams.ErrUndecodable, role, m.Subject, schemas.RoleUser, schemas.RoleAgent, bus.IngestFeedback))
	}
	// What every consumer checks, and that the subject's tenant and
	// conversation are the event's; check validates the data, once.
	d, err := streams.DecodeEnvelope(m.Subject, m.Header, m.Data, in.maxBytes)
	if err != nil {
		return refused(http.StatusBadRequest, fieldOf(err), err)
	}
	c, o := in.check(d.Event, kindTurn)
	if o.code != 0 {
		return o
	}
	if want := bus.IngestSubject(d.Meta.Tenant, d.Meta.Conversation, tokens[4]); c.subject != bus.TurnSubject(d.Meta.Tenant, d.Meta.Conversation, tokens[4]) {
		return refused(http.StatusBadRequest, "data/role", fmt.Errorf("%w: the turn's role does not match its subject (%s)", streams.ErrUndecodable, want))
	}
	tp, _ := schemas.Extension(d.Event, schemas.ExtTraceparent)
	parent, _ := tp.(string)
	return in.store(telemetry.ContextWithTraceparent(ctx, parent), d.Event, c, kindTurn)
}

// offerFeedback checks and stores a feedback event sent to
// rein.ingest.<tenant>.<conv>.feedback: the subject's tenant and
// conversation must be the event's (Decode checks them).
func (in *Ingress) offerFeedback(ctx context.Context, m *nats.Msg) offer {
	d, err := streams.DecodeEnvelope(m.Subject, m.Header, m.Data, in.maxBytes)
	if err != nil {
		return refused(http.StatusBadRequest, fieldOf(err), err)
	}
	c, o := in.check(d.Event, kindFeedback)
	if o.code != 0 {
		return o
	}
	tp, _ := schemas.Extension(d.Event, schemas.ExtTraceparent)
	parent, _ := tp.(string)
	return in.store(telemetry.ContextWithTraceparent(ctx, parent), d.Event, c, kindFeedback)
}
