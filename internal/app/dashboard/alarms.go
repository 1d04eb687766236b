package dashboard

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/reinception/rein/streams/bus"
)

// readDeadLetters counts the messages in REIN_DLQ.
func readDeadLetters(ctx context.Context, js jetstream.JetStream) (float64, error) {
	st, err := streamState(ctx, js, bus.StreamDLQ)
	return float64(st.Msgs), err
}

// streamState reads a stream's state (messages, sequences).
func streamState(ctx context.Context, js jetstream.JetStream, name string) (jetstream.StreamState, error) {
	s, err := js.Stream(ctx, name)
	if err != nil {
		return jetstream.StreamState{}, fmt.Errorf("stream %s: %w", name, err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		return jetstream.StreamState{}, fmt.Errorf("stream %s: %w", name, err)
	}
	return info.State, nil
}

// alarms are the banners: dead letters added within AlarmWindow (against
// the count read at its start, or first read), and every model endpoint
// whose circuit breaker is open.
func (d *Dashboard) alarms(cur sample, now time.Time) []Alarm {
	var out []Alarm
	if cur.hasQ {
		base, ok := d.hist.at(now.Add(-d.cfg.AlarmWindow))
		if !ok || !base.hasQ {
			base.dlq, base.at, ok = d.hist.firstDLQ()
		}
		if ok && cur.dlq > base.dlq {
			n := cur.dlq - base.dlq
			out = append(out, Alarm{Kind: "dead_letters", Text: fmt.Sprintf(
				"%g new dead letter(s) since %s (%g in %s): turns or events could not be processed; inspect them with rein dlq list and put them back with rein dlq redrive",
				n, timeText(base.at), cur.dlq, bus.StreamDLQ)})
		}
	}
	for _, ep := range slices.Sorted(func(yield func(string) bool) {
		for ep := range cur.mv.models {
			if !yield(ep) {
				return
			}
		}
	}) {
		if cur.mv.models[ep] == 0 {
			out = append(out, Alarm{Kind: "model_unavailable", Text: fmt.Sprintf(
				"model endpoint %q is unavailable (circuit breaker open): detection falls back to the rules module or proceeds without injection, and turns the agent cannot answer go to a human",
				ep)})
		}
	}
	return out
}
