package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/reinception/rein/agentworker"
	"github.com/reinception/rein/internal/app/demo"
	"github.com/reinception/rein/internal/telemetry"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
	"github.com/reinception/rein/streams/natsserver"
)

// stuck describes, for a turn whose outcome did not come, where the turn
// is: what the collector heard of it, what each stream stores for the
// conversation in stream order, what each stage's durable holds, the
// agent worker's stored state, the consume loops' counters and gauges
// and the connections' reconnects. It is
// the error's text, so that the failure explains itself.
func (p *evalPipeline) stuck(conv string, turn int, seen *demo.Turn) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var b strings.Builder
	fmt.Fprintf(&b, "turn %d heard: detection %v, task %v, steps %s, reply %v, escalation %v, unanswered %v",
		turn, seen.Detection != nil, seen.Task != nil, stepKinds(seen.Steps), seen.Reply != nil, seen.Escalated != nil, seen.Unanswered != nil)
	b.WriteString("\nstored (type#seq:turn):")
	for _, stream := range []string{bus.StreamTurns, bus.StreamDetections, bus.StreamTasks, bus.StreamSteps, bus.StreamOutcomes} {
		var got []string
		err := streams.ReadStream(ctx, p.rt.JS, stream, streams.ReadOptions{Filters: bus.SubjectsFor(stream, evalTenant, conv)}, func(r streams.Raw) error {
			if r.Decoded == nil {
				got = append(got, fmt.Sprintf("undecodable#%d", r.Sequence))
				return nil
			}
			// dev.rein.detection.v1 → detection; a turn by its role.
			kind, _, _ := strings.Cut(strings.TrimPrefix(r.Decoded.Event.Type(), "dev.rein."), ".")
			if r.Decoded.Event.Type() == schemas.TypeTurn {
				kind = r.Subject[strings.LastIndexByte(r.Subject, '.')+1:]
			}
			got = append(got, fmt.Sprintf("%s#%d:%d", kind, r.Sequence, r.Decoded.Meta.Turn))
			return nil
		})
		if err != nil {
			got = append(got, "read: "+err.Error())
		}
		fmt.Fprintf(&b, "\n  %s %v", stream, got)
	}
	b.WriteString("\ndurables:")
	for _, stream := range natsserver.StreamNames {
		s, err := p.rt.JS.Stream(ctx, stream)
		if err != nil {
			continue
		}
		for info := range s.ListConsumers(ctx).Info() {
			fmt.Fprintf(&b, "\n  %s/%s: pending %d, ack pending %d, redelivered %d, delivered %d, ack floor %d, waiting pulls %d",
				stream, info.Name, info.NumPending, info.NumAckPending, info.NumRedelivered,
				info.Delivered.Stream, info.AckFloor.Stream, info.NumWaiting)
		}
	}
	switch st, ok, err := agentworker.LoadState(ctx, p.rt.JS, evalTenant, conv); {
	case err != nil:
		fmt.Fprintf(&b, "\nagent state: %v", err)
	case ok:
		fmt.Fprintf(&b, "\nagent state: status %s, turn %d, done %v, outcome %q, finished %v", st.Status, st.Turn, st.TurnDone, st.Outcome, st.Recent)
	default:
		b.WriteString("\nno agent state")
	}
	fmt.Fprintf(&b, "\nstages: %s", stageGauges(p.rt.Reg))
	fmt.Fprintf(&b, "\nconnections: %s", p.rt.Connections())
	return b.String()
}

// stageGauges lists the non-zero samples of the consume loops' metrics
// that tell a turn being handled from one queued behind its conversation
// or held by the order gate: messages by outcome, in flight, queued, and
// the gate's holds.
func stageGauges(g prometheus.Gatherer) string {
	mfs, err := g.Gather()
	if err != nil {
		return err.Error()
	}
	want := map[string]bool{telemetry.MStageMessages: true, telemetry.MStageInFlight: true,
		telemetry.MStageQueued: true, telemetry.MStageOrderHolds: true}
	var out []string
	for _, mf := range mfs {
		if !want[mf.GetName()] {
			continue
		}
		for _, m := range mf.GetMetric() {
			v := m.GetGauge().GetValue() + m.GetCounter().GetValue()
			if v == 0 {
				continue
			}
			labels := make([]string, 0, len(m.GetLabel()))
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetValue())
			}
			out = append(out, fmt.Sprintf("%s{%s} %g", strings.TrimPrefix(mf.GetName(), "rein_stage_"), strings.Join(labels, ","), v))
		}
	}
	return strings.Join(out, ", ")
}

// stepKinds lists the kinds of a turn's steps in the order heard.
func stepKinds(steps []schemas.Step) string {
	kinds := make([]string, len(steps))
	for i, s := range steps {
		kinds[i] = fmt.Sprintf("%d:%s", s.Step, s.Kind)
	}
	return "[" + strings.Join(kinds, " ") + "]"
}
