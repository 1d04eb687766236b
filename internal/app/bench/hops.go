package bench

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/reinception/rein/internal/app/eval"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
)

// The legs of a turn's path, in order; their sum is the turn's end-to-end
// latency.
const (
	HopIngest = "publish_to_turn_stored"      // the bench's publish until REIN_TURNS stores the user turn
	HopDetect = "turn_stored_to_task_stored"  // the detector: delivery, decision, detection and task stored
	HopAgent  = "task_stored_to_reply_stored" // the agent worker: delivery, agent loop, reply stored
	HopNotify = "reply_stored_to_seen"        // the stored reply reaching the bench's subscription
)

var hopNames = [...]string{HopIngest, HopDetect, HopAgent, HopNotify}

// Hop is one leg's latency over the turns whose every instant is known.
type Hop struct {
	Name  string  `json:"hop"`
	P50Ms float64 `json:"p50_ms"`
	P99Ms float64 `json:"p99_ms"`
	// TailMeanMs is the leg's mean over the slowest turns (end to end at
	// or above the p99): the leg that holds the tail is the largest.
	TailMeanMs float64 `json:"tail_mean_ms"`
}

// unknown marks an instant a turn has no record of.
const unknown = time.Duration(math.MinInt64)

// Instants of a turn, in order; each leg ends at the next instant.
const (
	atPublished = iota
	atTurnStored
	atTaskStored
	atReplyStored
	atSeen
	instants
)

// turnClock holds each turn's instants as offsets from base, indexed by
// conversation and turn. The bench records the published and seen ones
// during the run (16 bytes a turn); the stored ones are read back from the
// streams afterwards.
type turnClock struct {
	base   time.Time
	turns  int // per conversation
	convs  int
	at     [instants][]time.Duration
	stored bool // the stored instants are allocated
}

func newTurnClock(base time.Time, convs, turns int) *turnClock {
	c := &turnClock{base: base, turns: turns, convs: convs}
	for _, i := range []int{atPublished, atSeen} {
		c.at[i] = filled(convs * turns)
	}
	return c
}

func filled(n int) []time.Duration {
	s := make([]time.Duration, n)
	for i := range s {
		s[i] = unknown
	}
	return s
}

// index is the slot of a conversation's turn, false for a turn the bench
// did not offer.
func (c *turnClock) index(conv string, turn int) (int, bool) {
	digits, ok := strings.CutPrefix(conv, "b")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(digits)
	if err != nil || n < 0 || n >= c.convs || turn < 1 || turn > c.turns || convName(n) != conv {
		return 0, false
	}
	return n*c.turns + turn - 1, true
}

// latencies are the end-to-end latencies of the turns seen.
func (c *turnClock) latencies() []time.Duration {
	lat := make([]time.Duration, 0, len(c.at[atSeen]))
	for i, s := range c.at[atSeen] {
		if s != unknown && c.at[atPublished][i] != unknown {
			lat = append(lat, s-c.at[atPublished][i])
		}
	}
	return lat
}

// sustainedMin is the shortest window seenPerSec measures: a shorter one
// says more about the ramp than about a steady rate.
const sustainedMin = 5 * time.Second

// seenPerSec is how many replies per second were seen from from to to
// (offsets from base); 0 when the window is shorter than sustainedMin.
func (c *turnClock) seenPerSec(from, to time.Duration) float64 {
	if to-from < sustainedMin {
		return 0
	}
	n := 0
	for _, s := range c.at[atSeen] {
		if s != unknown && s >= from && s <= to {
			n++
		}
	}
	return float64(n) / (to - from).Seconds()
}

// setStored records that a message of the turn was stored at t; the first
// record wins (a stage's output published again is not stored again).
func (c *turnClock) setStored(instant int, conv string, turn int, t time.Time) {
	i, ok := c.index(conv, turn)
	if !ok {
		return
	}
	if !c.stored {
		for _, k := range []int{atTurnStored, atTaskStored, atReplyStored} {
			c.at[k] = filled(len(c.at[atPublished]))
		}
		c.stored = true
	}
	if c.at[instant][i] == unknown {
		c.at[instant][i] = t.Sub(c.base)
	}
}

// hops is each leg's p50, p99 and mean over the slowest turns, over the
// turns whose five instants are all known, and how many those are.
func (c *turnClock) hops() ([]Hop, int) {
	if !c.stored {
		return nil, 0
	}
	var legs [len(hopNames)][]time.Duration
	var total []time.Duration
	for i := range c.at[atPublished] {
		complete := true
		for k := range instants {
			complete = complete && c.at[k][i] != unknown
		}
		if !complete {
			continue
		}
		for k := range legs {
			legs[k] = append(legs[k], c.at[k+1][i]-c.at[k][i])
		}
		total = append(total, c.at[atSeen][i]-c.at[atPublished][i])
	}
	if len(total) == 0 {
		return nil, 0
	}
	// The slowest turns, before Percentile sorts total in place.
	p99 := eval.Percentile(append([]time.Duration(nil), total...), 99)
	var tail []int
	for i, d := range total {
		if d >= p99 {
			tail = append(tail, i)
		}
	}
	hops := make([]Hop, len(legs))
	for k, leg := range legs {
		var sum time.Duration
		for _, i := range tail {
			sum += leg[i]
		}
		hops[k] = Hop{Name: hopNames[k], TailMeanMs: eval.Ms(sum) / float64(len(tail))}
		hops[k].P50Ms, hops[k].P99Ms = eval.Ms(eval.Percentile(leg, 50)), eval.Ms(eval.Percentile(leg, 99))
	}
	return hops, len(total)
}

// readStored reads, from the streams' own timestamps, when each bench
// turn's user turn, task and agent reply were stored. It runs after the
// load, so its reads cost the measured run nothing.
func readStored(ctx context.Context, js jetstream.JetStream, c *turnClock) error {
	roleInstant := map[string]int{schemas.RoleUser: atTurnStored, schemas.RoleAgent: atReplyStored}
	err := eachStored(ctx, js, bus.StreamTurns, []string{bus.TurnSubject(tenant, "*", schemas.RoleUser), bus.TurnSubject(tenant, "*", schemas.RoleAgent)},
		func(subject string, h nats.Header, t time.Time) {
			subj := streams.Unpartitioned(subject)
			if k, ok := roleInstant[subj[strings.LastIndexByte(subj, '.')+1:]]; ok {
				turn, _ := strconv.Atoi(h.Get(bus.HeaderCEPrefix + schemas.ExtTurn))
				c.setStored(k, h.Get(bus.HeaderCEPrefix+schemas.ExtConversation), turn, t)
			}
		})
	if err != nil {
		return err
	}
	return eachStored(ctx, js, bus.StreamTasks, []string{bus.TaskSubject(tenant, "*")}, func(_ string, h nats.Header, t time.Time) {
		turn, _ := strconv.Atoi(h.Get(bus.HeaderCEPrefix + schemas.ExtTurn))
		c.setStored(atTaskStored, h.Get(bus.HeaderCEPrefix+schemas.ExtConversation), turn, t)
	})
}

// eachStored calls fn with the subject, headers and stored time of every
// message of stream on filters, read by an ordered consumer that fetches
// headers only.
func eachStored(ctx context.Context, js jetstream.JetStream, stream string, filters []string, fn func(string, nats.Header, time.Time)) error {
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	for i, f := range filters {
		filters[i] = streams.StoredSubject(s, f)
	}
	cons, err := s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: filters, HeadersOnly: true})
	if err != nil {
		return fmt.Errorf("bench: reading %s: %w", stream, err)
	}
	for {
		batch, err := cons.Fetch(1000, jetstream.FetchMaxWait(2*time.Second))
		if err != nil {
			return fmt.Errorf("bench: reading %s: %w", stream, err)
		}
		n, pending := 0, uint64(1)
		for m := range batch.Messages() {
			md, err := m.Metadata()
			if err != nil {
				continue
			}
			n, pending = n+1, md.NumPending
			fn(m.Subject(), m.Headers(), md.Timestamp)
		}
		if err := batch.Error(); err != nil {
			return fmt.Errorf("bench: reading %s: %w", stream, err)
		}
		if n == 0 || pending == 0 {
			return nil
		}
	}
}
