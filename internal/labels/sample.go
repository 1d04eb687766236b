package labels

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
)

// QueueConfig is how a review queue is drawn.
type QueueConfig struct {
	Tenant string
	// Day is the UTC day whose detections are drawn from (its midnight).
	Day time.Time
	// Budget is how many turns a day's queue holds on average (default 50).
	Budget int
	// CleanShare is the budget's share for turns rein did not activate on
	// (default 0.5); the rest is split equally between activated types.
	CleanShare float64
	// Key seeds the draw: the same key, the same queue (default "rein").
	Key string
	// Days, when set, keeps the populations of days already drawn, so
	// that labelling many turns of a day reads its detections once.
	Days *DayCache
}

// DayCache keeps the strata populations of finished days per tenant: a
// day over gains no detections, so its draw never changes. Safe for
// concurrent use; bounded (maxCachedDays).
type DayCache struct {
	mu sync.Mutex
	m  map[string]map[string]int
}

// maxCachedDays bounds a DayCache: tenants × days labelled lately.
const maxCachedDays = 1024

// population returns the tenant's population of q's day, from the cache
// or read (and kept).
func (c *DayCache) population(ctx context.Context, js jetstream.JetStream, q QueueConfig) (map[string]int, error) {
	if c == nil {
		dets, err := dayDetections(ctx, js, q)
		return Population(dets), err
	}
	k := q.Tenant + "/" + q.Day.Format(time.DateOnly)
	c.mu.Lock()
	pop, ok := c.m[k]
	c.mu.Unlock()
	if ok {
		return pop, nil
	}
	dets, err := dayDetections(ctx, js, q)
	if err != nil {
		return nil, err
	}
	pop = Population(dets)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxCachedDays {
		c.m = map[string]map[string]int{}
	}
	c.m[k] = pop
	return pop, nil
}

// Defaults of QueueConfig.
const (
	DefaultBudget     = 50
	DefaultCleanShare = 0.5
	DefaultKey        = "rein"
)

func (q QueueConfig) withDefaults() QueueConfig {
	if q.Budget == 0 {
		q.Budget = DefaultBudget
	}
	if q.CleanShare == 0 {
		q.CleanShare = DefaultCleanShare
	}
	if q.Key == "" {
		q.Key = DefaultKey
	}
	q.Day = q.Day.UTC().Truncate(24 * time.Hour)
	return q
}

// Validate checks the queue's settings.
func (q QueueConfig) Validate() error {
	q = q.withDefaults()
	if err := schemas.CheckIDs(q.Tenant, "x"); err != nil {
		return fmt.Errorf("%w: %w", ErrBadLabel, err)
	}
	if q.Budget < 1 {
		return fmt.Errorf("%w: budget %d must be at least 1", ErrBadLabel, q.Budget)
	}
	if q.CleanShare <= 0 || q.CleanShare >= 1 {
		return fmt.Errorf("%w: clean share %v must be between 0 and 1, both excluded", ErrBadLabel, q.CleanShare)
	}
	return nil
}

// Item is one turn of a review queue.
type Item struct {
	Detection
	Sample schemas.LabelSample
}

// Queue draws a tenant's review queue of one day, in stream order. The day
// must be over (now past its end).
func Queue(ctx context.Context, js jetstream.JetStream, q QueueConfig, now time.Time) ([]Item, error) {
	if err := q.Validate(); err != nil {
		return nil, err
	}
	q = q.withDefaults()
	if end := q.Day.Add(24 * time.Hour); now.Before(end) {
		return nil, fmt.Errorf("%w: %s ends at %s UTC", ErrDayNotOver, q.Day.Format(time.DateOnly), end.Format(time.DateTime))
	}
	dets, err := dayDetections(ctx, js, q)
	if err != nil {
		return nil, err
	}
	draw := Draw(q, Population(dets))
	var out []Item
	for _, d := range dets {
		if s, ok := draw.sample(q, d); ok {
			out = append(out, Item{Detection: d, Sample: s})
		}
	}
	return out, nil
}

// SampleOf tells whether the queue of the detection's day holds it, and
// with what draw; a detection of a day not yet over is in no queue.
func SampleOf(ctx context.Context, js jetstream.JetStream, q QueueConfig, d Detection, now time.Time) (schemas.LabelSample, bool, error) {
	q.Day = d.Stored
	if err := q.Validate(); err != nil {
		return schemas.LabelSample{}, false, err
	}
	q = q.withDefaults()
	if now.Before(q.Day.Add(24 * time.Hour)) {
		return schemas.LabelSample{}, false, nil
	}
	pop, err := q.Days.population(ctx, js, q)
	if err != nil {
		return schemas.LabelSample{}, false, err
	}
	s, ok := Draw(q, pop).sample(q, d)
	return s, ok, nil
}

// dayDetections reads the tenant's detections stored on the day, the last
// of each turn.
func dayDetections(ctx context.Context, js jetstream.JetStream, q QueueConfig) ([]Detection, error) {
	end := q.Day.Add(24 * time.Hour)
	idx := map[[2]string]int{}
	var out []Detection
	o := streams.ReadOptions{Filters: streams.SubjectsFor(streams.StreamDetections, q.Tenant, ""), StartAt: q.Day, Until: end}
	err := readDetections(ctx, js, o, func(d Detection) {
		if d.Tenant != q.Tenant || d.Stored.Before(q.Day) || !d.Stored.Before(end) {
			return
		}
		k := [2]string{d.Conversation, strconv.Itoa(d.Turn)}
		if i, ok := idx[k]; ok {
			out[i] = d
			return
		}
		idx[k] = len(out)
		out = append(out, d)
	})
	return out, err
}

// Population counts detections per stratum.
func Population(dets []Detection) map[string]int {
	n := map[string]int{}
	for _, d := range dets {
		n[d.Stratum()]++
	}
	return n
}

// Plan is a day's draw: each stratum's population and probability.
type Plan struct {
	Population  map[string]int
	Probability map[string]float64
}

// Draw splits the budget between the strata of a population (see the
// package documentation) and returns each stratum's probability.
func Draw(q QueueConfig, pop map[string]int) Plan {
	q = q.withDefaults()
	weight := map[string]float64{}
	var types []string
	for s, n := range pop {
		if n > 0 && s != schemas.StratumClean {
			types = append(types, s)
		}
	}
	slices.Sort(types)
	switch {
	case len(types) == 0:
		weight[schemas.StratumClean] = 1
	case pop[schemas.StratumClean] == 0:
		for _, t := range types {
			weight[t] = 1 / float64(len(types))
		}
	default:
		weight[schemas.StratumClean] = q.CleanShare
		for _, t := range types {
			weight[t] = (1 - q.CleanShare) / float64(len(types))
		}
	}
	// Water-filling: a stratum smaller than its share takes all its turns;
	// what it leaves goes to the others in proportion to their weights.
	p := Plan{Population: pop, Probability: map[string]float64{}}
	budget := float64(q.Budget)
	open := slices.Sorted(func(yield func(string) bool) {
		for s := range weight {
			if pop[s] > 0 && !yield(s) {
				return
			}
		}
	})
	for len(open) > 0 {
		var total float64
		for _, s := range open {
			total += weight[s]
		}
		var full []string
		for _, s := range open {
			if float64(pop[s]) <= budget*weight[s]/total {
				full = append(full, s)
			}
		}
		if len(full) == 0 {
			for _, s := range open {
				p.Probability[s] = budget * weight[s] / total / float64(pop[s])
			}
			break
		}
		for _, s := range full {
			p.Probability[s] = 1
			budget -= float64(pop[s])
		}
		open = slices.DeleteFunc(open, func(s string) bool { return slices.Contains(full, s) })
	}
	return p
}

// sample tells whether the plan draws d, and the record of it.
func (p Plan) sample(q QueueConfig, d Detection) (schemas.LabelSample, bool) {
	s := d.Stratum()
	pi := p.Probability[s]
	if pi <= 0 || Uniform(q.Key, d.Tenant, d.Conversation, d.Turn) >= pi {
		return schemas.LabelSample{}, false
	}
	return schemas.LabelSample{Day: q.Day.Format(time.DateOnly), Stratum: s, Population: p.Population[s], Probability: pi}, true
}

// Uniform is a turn's number in [0,1) for the draw: SHA-256 of the key
// and the turn's identity, so it is the same on every replica and run, and
// independent between turns.
func Uniform(key, tenant, conv string, turn int) float64 {
	h := sha256.New()
	for _, s := range []string{key, tenant, conv, strconv.Itoa(turn)} {
		h.Write([]byte(strconv.Itoa(len(s)) + ":" + s))
	}
	return float64(binary.BigEndian.Uint64(h.Sum(nil))>>11) / (1 << 53)
}

// Queued is a turn of a review queue and whether someone has labelled it.
type Queued struct {
	Item
	Labelled bool `json:"labelled"`
}

// Review draws a tenant's queue of one day (Queue) and marks the turns
// already labelled: what an operator has left to do.
func Review(ctx context.Context, js jetstream.JetStream, q QueueConfig, now time.Time) ([]Queued, error) {
	items, err := Queue(ctx, js, q, now)
	if err != nil {
		return nil, err
	}
	done, err := Read(ctx, js, Filter{Tenant: q.Tenant})
	if err != nil {
		return nil, err
	}
	labelled := map[string]bool{}
	for _, s := range done {
		labelled[s.Conversation+"/"+strconv.Itoa(s.Label.Turn)] = true
	}
	out := make([]Queued, 0, len(items))
	for _, it := range items {
		out = append(out, Queued{Item: it, Labelled: labelled[it.Conversation+"/"+strconv.Itoa(it.Turn)]})
	}
	return out, nil
}
