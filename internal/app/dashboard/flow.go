package dashboard

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/synadia-io/orbit.go/jetstreamext"

	"github.com/reinception/rein/streams/natsserver"
)

// Traffic figures are read from the streams themselves, not from this
// process's counters, so they cover every replica of every stage: JetStream
// numbers each stored message (the stream's sequence) and stamps its time,
// so the messages stored since t are lastSeq+1 − (the first sequence
// stored at or after t), one direct get per boundary, whichever process
// published them and whenever this one started. A message deleted since
// (a dead-lettered turn, a claimed handoff item) can make a boundary fall
// later, so those streams may count a little low; a window longer than the
// stream's retention counts what is retained.

// FlowStats is one stream's traffic over a span ending now.
type FlowStats struct {
	Stream string        `json:"stream"`
	Span   time.Duration `json:"-"`
	// Messages stored within the span, and per second.
	Messages  uint64  `json:"messages"`
	PerSecond float64 `json:"per_second"`
	// Buckets splits Messages over equal sub-spans, oldest first (empty
	// when asked for fewer than two).
	Buckets []uint64 `json:"buckets,omitempty"`
	// Direction compares the second half of the buckets with the first:
	// rising, falling, steady or idle (nothing stored); "" without buckets.
	Direction string `json:"direction,omitempty"`
}

// Directions of a flow's trend.
const (
	DirectionRising  = "rising"
	DirectionFalling = "falling"
	DirectionSteady  = "steady"
	DirectionIdle    = "idle"
)

// StreamFlow measures what stream stored in the span before now, split
// into buckets (0 or 1: no split). lastSeq is the stream's last sequence,
// read just before (stream info), so that messages stored after it are
// not counted in one bucket and missed by the total.
func StreamFlow(ctx context.Context, js jetstream.JetStream, stream string, lastSeq uint64, now time.Time, span time.Duration, buckets int) (FlowStats, error) {
	fs := FlowStats{Stream: stream, Span: span}
	if span <= 0 {
		return fs, fmt.Errorf("%w: flow span %s must be positive", ErrBadQuery, span)
	}
	n := max(buckets, 1)
	// bounds[i] is the first sequence stored at or after the i-th boundary.
	bounds := make([]uint64, n+1)
	bounds[n] = lastSeq + 1
	step := span / time.Duration(n)
	for i := n - 1; i >= 0; i-- {
		at := now.Add(-span + step*time.Duration(i))
		seq, err := firstSeqSince(ctx, js, stream, at, lastSeq)
		if err != nil {
			return fs, err
		}
		bounds[i] = min(seq, bounds[i+1])
	}
	fs.Messages = bounds[n] - bounds[0]
	fs.PerSecond = float64(fs.Messages) / span.Seconds()
	if buckets >= 2 {
		fs.Buckets = make([]uint64, n)
		for i := range n {
			fs.Buckets[i] = bounds[i+1] - bounds[i]
		}
		fs.Direction = direction(fs.Buckets)
	}
	return fs, nil
}

// firstSeqSince is the first sequence stream stored at or after t, or
// lastSeq+1 when it stored none.
func firstSeqSince(ctx context.Context, js jetstream.JetStream, stream string, t time.Time, lastSeq uint64) (uint64, error) {
	msgs, err := jetstreamext.GetBatch(ctx, js, stream, 1, jetstreamext.GetBatchStartTime(t))
	if err != nil {
		return 0, fmt.Errorf("flow of %s: %w", stream, err)
	}
	for m, err := range msgs {
		if errors.Is(err, jetstreamext.ErrNoMessages) {
			return lastSeq + 1, nil
		}
		if err != nil {
			return 0, fmt.Errorf("flow of %s since %s: %w", stream, t.UTC().Format(time.RFC3339), err)
		}
		return m.Sequence, nil
	}
	return lastSeq + 1, nil
}

// direction compares the later half of the buckets with the earlier one
// (the middle bucket of an odd count is left out): more than a fifth more
// is rising, a fifth less falling.
func direction(buckets []uint64) string {
	var early, late uint64
	half := len(buckets) / 2
	for i, b := range buckets {
		switch {
		case i < half:
			early += b
		case i >= len(buckets)-half:
			late += b
		}
	}
	switch {
	case early == 0 && late == 0:
		return DirectionIdle
	case float64(late) > 1.2*float64(early):
		return DirectionRising
	case float64(late) < 0.8*float64(early):
		return DirectionFalling
	}
	return DirectionSteady
}

// OldestPending is how long the oldest message a durable consumer has not
// had acknowledged has been in its stream (0 when it has none): the
// consumer's lag in time, the same for every replica of its stage.
func OldestPending(ctx context.Context, js jetstream.JetStream, ci *jetstream.ConsumerInfo, now time.Time) (time.Duration, error) {
	if ci.NumPending == 0 && ci.NumAckPending == 0 {
		return 0, nil
	}
	opts := []jetstreamext.GetBatchOpt{jetstreamext.GetBatchSeq(ci.AckFloor.Stream + 1)}
	if f := ci.Config.FilterSubject; f != "" {
		opts = append(opts, jetstreamext.GetBatchSubject(f))
	} else if len(ci.Config.FilterSubjects) == 1 {
		opts = append(opts, jetstreamext.GetBatchSubject(ci.Config.FilterSubjects[0]))
	}
	msgs, err := jetstreamext.GetBatch(ctx, js, ci.Stream, 1, opts...)
	if err != nil {
		return 0, fmt.Errorf("oldest pending of %s/%s: %w", ci.Stream, ci.Name, err)
	}
	for m, err := range msgs {
		if errors.Is(err, jetstreamext.ErrNoMessages) {
			return 0, nil
		}
		if err != nil {
			return 0, fmt.Errorf("oldest pending of %s/%s: %w", ci.Stream, ci.Name, err)
		}
		return max(now.Sub(m.Time), 0), nil
	}
	return 0, nil
}

// Flow is one stream's row of the overview's traffic table.
type Flow struct {
	Stream    string `json:"stream"`
	Messages  Count  `json:"messages"`
	Rate      Count  `json:"rate"` // per second, text "1.25/s"
	Direction string `json:"direction"`
	// Trend is the buckets as sparkline points, TrendText their values.
	Trend     string `json:"trend"`
	TrendText string `json:"trend_text"`
}

// readFlows measures every rein stream over [from, now] in trendPoints
// buckets.
func readFlows(ctx context.Context, js jetstream.JetStream, from, now time.Time) ([]Flow, error) {
	span := max(now.Sub(from), time.Millisecond)
	var out []Flow
	var errs []error
	for _, name := range natsserver.StreamNames {
		st, err := streamState(ctx, js, name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		fs, err := StreamFlow(ctx, js, name, st.LastSeq, now, span, trendPoints)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		f := Flow{Stream: name, Messages: count("", float64(fs.Messages)), Direction: fs.Direction}
		f.Rate = Count{Value: fs.PerSecond, Text: perSecond(fs.PerSecond)}
		f.Trend, f.TrendText = sparkline(fs.Buckets)
		out = append(out, f)
	}
	return out, errors.Join(errs...)
}

// perSecond formats a rate: "12/s", "1.25/s", "0.017/s".
func perSecond(v float64) string {
	switch {
	case v == 0:
		return "0/s"
	case v >= 10:
		return fmt.Sprintf("%.0f/s", v)
	case v >= 1:
		return fmt.Sprintf("%.2f/s", v)
	}
	return fmt.Sprintf("%.2g/s", v)
}

// sparkline draws counts as polyline points in the trend box (the largest
// at the top), and lists them.
func sparkline[N uint64 | float64](counts []N) (points, text string) {
	if len(counts) < 2 {
		return "", ""
	}
	var top float64
	for _, c := range counts {
		top = max(top, float64(c))
	}
	pts := make([]string, len(counts))
	vals := make([]string, len(counts))
	for i, c := range counts {
		y := float64(TrendHeight)
		if top > 0 {
			y = TrendHeight - float64(c)/top*TrendHeight
		}
		pts[i] = fmt.Sprintf("%.1f,%.1f", float64(i)*TrendWidth/float64(len(counts)-1), y)
		vals[i] = strconv.FormatFloat(float64(c), 'f', -1, 64)
	}
	return strings.Join(pts, " "), strings.Join(vals, " ")
}
