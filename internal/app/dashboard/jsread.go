package dashboard

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
	"github.com/reinception/rein/streams/natsserver"
)

// readJetStreamState reads the lag of every durable consumer and the
// dead-letter count from JetStream. Ephemeral consumers (such as the
// ordered consumers of replay, audit and the conversation view) are left
// out: they come and go and say nothing about a stage's backlog.
func readJetStreamState(ctx context.Context, js jetstream.JetStream, o *Overview, now time.Time) error {
	o.Consumers = nil
	var errs []error
	for _, name := range natsserver.StreamNames {
		s, err := js.Stream(ctx, name)
		if err != nil {
			errs = append(errs, fmt.Errorf("stream %s: %w", name, err))
			continue
		}
		if name == bus.StreamDLQ {
			info, err := s.Info(ctx)
			if err != nil {
				errs = append(errs, fmt.Errorf("stream %s: %w", name, err))
				continue
			}
			o.DeadLetters = count("dead_letters", float64(info.State.Msgs))
		}
		lister := s.ListConsumers(ctx)
		for ci := range lister.Info() {
			if ci.Config.Durable == "" {
				continue
			}
			age, err := OldestPending(ctx, js, ci, now)
			if err != nil {
				errs = append(errs, err)
			}
			o.Consumers = append(o.Consumers, Consumer{
				Stream: name, Name: ci.Name,
				Pending:       count("", float64(ci.NumPending)),
				AckPending:    count("", float64(ci.NumAckPending)),
				MaxAckPending: count("", float64(ci.Config.MaxAckPending)),
				OldestPending: Count{Value: age.Seconds(), Text: age.Round(time.Second).String()},
			})
		}
		if err := lister.Err(); err != nil {
			errs = append(errs, fmt.Errorf("consumers of %s: %w", name, err))
		}
	}
	sortConsumers(o.Consumers)
	return errors.Join(errs...)
}

// conversationURL is the conversation view's path.
func conversationURL(tenant, conv string) string {
	return "/conversations/" + url.PathEscape(tenant) + "/" + url.PathEscape(conv)
}

// outcomeTail keeps the last escalations and reports of REIN_OUTCOMES,
// newest first. Each refresh fetches only the messages stored since the
// last one, by sequence (direct gets), so polling leaves no consumer
// behind on the server.
type outcomeTail struct {
	items   []Outcome
	lastSeq uint64
}

func (t *outcomeTail) refresh(ctx context.Context, js jetstream.JetStream, n int) error {
	if n <= 0 {
		t.items, t.lastSeq = nil, 0
		return nil
	}
	s, err := js.Stream(ctx, bus.StreamOutcomes)
	if err != nil {
		return fmt.Errorf("recent outcomes: %w", err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		return fmt.Errorf("recent outcomes: %w", err)
	}
	st := info.State
	if st.Msgs == 0 || st.LastSeq < t.lastSeq {
		// Empty, purged or recreated: start over.
		t.items, t.lastSeq = nil, 0
	}
	if st.Msgs == 0 || st.LastSeq == t.lastSeq {
		return nil
	}
	from := max(t.lastSeq+1, st.FirstSeq)
	if st.LastSeq >= uint64(n) {
		from = max(from, st.LastSeq-uint64(n)+1)
	}
	var fresh []Outcome
	for seq := from; seq <= st.LastSeq; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue // deleted or aged out
		}
		if err != nil {
			return fmt.Errorf("recent outcomes: get %d: %w", seq, err)
		}
		d, err := streams.Decode(m.Subject, m.Header, m.Data, 0)
		if err != nil {
			continue // not a rein event; the stream's consumer dead-letters it
		}
		d.Stored = m.Time
		if oc, ok := outcomeOf(&d); ok {
			fresh = append(fresh, oc)
		}
	}
	t.lastSeq = st.LastSeq
	for i, j := 0, len(fresh)-1; i < j; i, j = i+1, j-1 {
		fresh[i], fresh[j] = fresh[j], fresh[i]
	}
	t.items = append(fresh, t.items...)
	if len(t.items) > n {
		t.items = t.items[:n]
	}
	return nil
}

// outcomeOf turns an escalation or report event into an Outcome.
func outcomeOf(d *streams.Decoded) (Outcome, bool) {
	oc := Outcome{ID: d.Event.ID(), Time: d.Time(), Tenant: d.Meta.Tenant, Conversation: d.Meta.Conversation,
		Turn: d.Meta.Turn, URL: conversationURL(d.Meta.Tenant, d.Meta.Conversation)}
	oc.TimeText = timeText(oc.Time)
	switch d.Event.Type() {
	case schemas.TypeEscalation:
		var e schemas.Escalation
		if schemas.Decode(d.Event, &e) != nil {
			return oc, false
		}
		oc.Kind, oc.Turn, oc.ErrorType, oc.Reason, oc.Text = "escalation", e.Turn, e.ErrorType, e.Reason, e.Summary
	case schemas.TypeReport:
		var r schemas.Report
		if schemas.Decode(d.Event, &r) != nil {
			return oc, false
		}
		oc.Kind, oc.Turn, oc.ErrorType, oc.Text = "report", r.Turn, r.ErrorType, r.Report
	default:
		return oc, false
	}
	return oc, true
}
