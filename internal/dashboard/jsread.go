package dashboard

import (
	"context"
	"fmt"
	"net/url"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
)

// readJetStreamState reads consumer lag and the dead-letter count from
// JetStream directly, for processes whose registry has no JetStream
// collector.
func readJetStreamState(ctx context.Context, js jetstream.JetStream, o *Overview) error {
	o.Consumers = nil
	for _, name := range streams.StreamNames {
		s, err := js.Stream(ctx, name)
		if err != nil {
			return fmt.Errorf("stream %s: %w", name, err)
		}
		info, err := s.Info(ctx)
		if err != nil {
			return fmt.Errorf("stream %s: %w", name, err)
		}
		if name == streams.StreamDLQ {
			o.DeadLetters = count("dead_letters", float64(info.State.Msgs))
		}
		lister := s.ListConsumers(ctx)
		for ci := range lister.Info() {
			o.Consumers = append(o.Consumers, Consumer{
				Stream: name, Name: ci.Name,
				Pending:       count("", float64(ci.NumPending)),
				AckPending:    count("", float64(ci.NumAckPending)),
				MaxAckPending: count("", float64(ci.Config.MaxAckPending)),
			})
		}
		if err := lister.Err(); err != nil {
			return fmt.Errorf("consumers of %s: %w", name, err)
		}
	}
	sortConsumers(o.Consumers)
	return nil
}

// conversationURL is the conversation view's path.
func conversationURL(tenant, conv string) string {
	return "/conversations/" + url.PathEscape(tenant) + "/" + url.PathEscape(conv)
}

// readRecentOutcomes returns the last n escalations and reports of
// REIN_OUTCOMES, newest first.
func readRecentOutcomes(ctx context.Context, js jetstream.JetStream, n int) ([]Outcome, error) {
	if n <= 0 {
		return nil, nil
	}
	s, err := js.Stream(ctx, streams.StreamOutcomes)
	if err != nil {
		return nil, fmt.Errorf("recent outcomes: %w", err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		return nil, fmt.Errorf("recent outcomes: %w", err)
	}
	if info.State.Msgs == 0 {
		return nil, nil
	}
	start := info.State.FirstSeq
	if info.State.LastSeq >= uint64(n) {
		start = max(start, info.State.LastSeq-uint64(n)+1)
	}
	var out []Outcome
	err = streams.ReadStream(ctx, js, streams.StreamOutcomes, streams.ReadOptions{StartSeq: start, StopSeq: info.State.LastSeq + 1}, func(r streams.Raw) error {
		if r.Decoded == nil {
			return nil
		}
		if oc, ok := outcomeOf(r.Decoded); ok {
			out = append(out, oc)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("recent outcomes: %w", err)
	}
	// Newest first.
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, nil
}

// outcomeOf turns an escalation or report event into an Outcome.
func outcomeOf(d *streams.Decoded) (Outcome, bool) {
	oc := Outcome{ID: d.Event.ID(), Time: d.Event.Time(), Tenant: d.Meta.Tenant, Conversation: d.Meta.Conversation,
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
