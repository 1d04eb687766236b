package consume

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/reinception/rein/streams"
)

// runGroup works a partitioned stream: it joins the stage's members, runs
// one durable (runOne) for each partition assigned to this replica, and
// every memberBeat renews its key, rereads the live members and starts or
// drains durables as the assignment changes. A partition given up is
// drained (in-flight handlers finish, queued messages are released, the
// pin is handed over) while the new owner already pulls, so the
// conversation's next message goes to the new owner only after this one is
// done with the earlier. On cancel it leaves the members first, so the
// others take its partitions while it drains.
func (c *Consumer) runGroup(ctx context.Context, n int, slots chan struct{}) error {
	m, err := joinMembers(ctx, c.deps.JS, c.cfg.Stage)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("consumer %s: %w", c.cfg.Durable, err)
	}
	log := c.deps.Logger.With("member", m.id)
	type running struct {
		cancel   context.CancelFunc
		done     chan struct{}
		draining bool
	}
	runs := map[int]running{}
	failed := make(chan error, n)
	start := func(p int) {
		if r, ok := runs[p]; ok {
			select {
			case <-r.done: // a drain ended: run it again
			default:
				return // running, or still draining: the next beat starts it
			}
		}
		cfg := c.cfg
		cfg.Durable, cfg.Filter = streams.PartitionDurable(c.cfg.Durable, p), partitionFilters(c.cfg.Filter, p)
		pctx, cancel := context.WithCancel(ctx)
		r := running{cancel: cancel, done: make(chan struct{})}
		runs[p] = r
		go func() {
			defer close(r.done)
			if err := c.runOne(pctx, cfg, slots); err != nil {
				failed <- err
			}
		}()
	}
	stopAll := func() {
		for _, r := range runs {
			r.cancel()
		}
		for _, r := range runs {
			<-r.done
		}
	}
	var owned []int
	apply := func(live []string) {
		want := assigned(m.id, live, n)
		if !slices.Equal(want, owned) {
			log.Info("partitions assigned", "partitions", want, "of", n, "members", max(len(live), 1))
			owned = want
			c.m.partitions.WithLabelValues(c.cfg.Stage).Set(float64(len(want)))
		}
		for p, r := range runs {
			select {
			case <-r.done:
				delete(runs, p)
				continue
			default:
			}
			if !r.draining && !slices.Contains(want, p) {
				r.cancel()
				r.draining = true
				runs[p] = r
			}
		}
		for _, p := range want {
			start(p)
		}
	}
	live, err := m.live(ctx)
	if err != nil {
		log.Warn("members: working every partition until they can be read", "err", err)
		live = nil
	}
	apply(live)

	t := time.NewTicker(memberBeat)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			if err := m.leave(lctx); err != nil {
				log.Warn("members: leaving", "err", err)
			}
			cancel()
			stopAll()
			return nil
		case err := <-failed:
			stopAll()
			return err
		case <-t.C:
			bctx, cancel := context.WithTimeout(ctx, memberBeat)
			if err := m.beat(bctx); err != nil {
				log.Warn("members", "err", err)
			}
			live, err := m.live(bctx)
			cancel()
			if err != nil {
				log.Warn("members: keeping the partitions held", "err", err)
				continue
			}
			apply(live)
		}
	}
}
