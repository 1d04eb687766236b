package dashboard

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/reinception/rein/internal/telemetry"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
)

// The ledger counts the decisions of every replica from REIN_DETECTIONS,
// where each detector stores its decision for each user turn: by tenant and
// outcome (activated, clear, failed) and by tenant and error type, in
// buckets by the time each was stored. It reads only what was stored since
// its last refresh (batched direct gets by sequence, no consumer), starting
// an hour before the dashboard started, so every window up to an hour is
// whole from the first page.
//
// Memory is bounded like the detector's metrics: at most
// telemetry.MaxTenantLabels tenants (the rest count as
// telemetry.OtherTenant), and two resolutions — 5-second buckets for the
// last 15 minutes (the 1m, 5m and 15m windows, to 5 s) and 1-minute buckets
// for the hour (the 1h window, to a minute): 240 buckets, each holding only
// the tenants and error types it saw.
const (
	// ledgerMaxRead bounds one refresh's reads; a ledger further behind
	// catches up over the next refreshes (and says so).
	ledgerMaxRead = 20000
)

// tier is one resolution of the ledger's buckets.
type tier struct {
	width   time.Duration         // bucket width
	keep    time.Duration         // how far back it reaches
	buckets map[int64]metricsView // bucket start (unix ns) → counts
}

func (t *tier) bucket(at time.Time) metricsView {
	k := at.Truncate(t.width).UnixNano()
	v, ok := t.buckets[k]
	if !ok {
		v = newMetricsView()
		t.buckets[k] = v
	}
	return v
}

func (t *tier) forget(now time.Time) {
	cut := now.Add(-t.keep).UnixNano()
	for k := range t.buckets {
		if k < cut {
			delete(t.buckets, k)
		}
	}
}

// covers reports whether the tier reaches back to from.
func (t *tier) covers(from, now time.Time) bool { return !from.Before(now.Add(-t.keep + t.width)) }

func (t *tier) sum(from time.Time, into metricsView) {
	start := from.Truncate(t.width).UnixNano()
	for k, v := range t.buckets {
		if k >= start {
			into.add(v)
		}
	}
}

type ledger struct {
	mu      sync.Mutex
	started time.Time
	next    uint64 // the next sequence to read (0: not started)
	fine    tier   // 5 s buckets, 15 minutes
	coarse  tier   // 1 min buckets, the hour
	// sinceStart counts every decision stored at or after started (the
	// "all" window), whatever the buckets have forgotten.
	sinceStart metricsView
	tenants    telemetry.TenantLabels // the tenants counted by name
	// behind says the last refresh stopped at ledgerMaxRead.
	behind bool
	// convs is each recent conversation's latest decision (recentconv.go).
	convs map[[2]string]ConversationRow
}

func newLedger(started time.Time) *ledger {
	l := &ledger{started: started}
	l.reset()
	return l
}

func (l *ledger) reset() {
	l.next = 0
	l.fine = tier{width: 5 * time.Second, keep: 15*time.Minute + 10*time.Second, buckets: map[int64]metricsView{}}
	l.coarse = tier{width: time.Minute, keep: time.Hour + 2*time.Minute, buckets: map[int64]metricsView{}}
	l.sinceStart, l.tenants = newMetricsView(), telemetry.TenantLabels{}
	l.convs = nil
}

// tenant is t, or telemetry.OtherTenant past MaxTenantLabels tenants.
func (l *ledger) tenant(t string) string { return l.tenants.Label(t) }

// errLedgerFull stops a refresh at ledgerMaxRead.
var errLedgerFull = errors.New("ledger read limit")

// refresh reads the detections stored since the last refresh.
func (l *ledger) refresh(ctx context.Context, js jetstream.JetStream, now time.Time) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	st, err := streamState(ctx, js, bus.StreamDetections)
	if err != nil {
		return fmt.Errorf("decisions of every replica: %w", err)
	}
	last := st.LastSeq
	if l.next > last+1 {
		l.reset() // purged or recreated: start over
	}
	if l.next == 0 {
		if l.next, err = firstSeqSince(ctx, js, bus.StreamDetections, l.started.Add(-l.coarse.keep), last); err != nil {
			return fmt.Errorf("decisions of every replica: %w", err)
		}
	}
	read := 0
	l.behind = false
	err = streams.ReadSubjectRaw(ctx, js, bus.StreamDetections, bus.DetectionsAll, l.next, last+1, func(r streams.Raw) error {
		if read >= ledgerMaxRead {
			l.behind = true
			return errLedgerFull
		}
		read++
		l.next = r.Sequence + 1
		l.add(r)
		return nil
	})
	l.fine.forget(now)
	l.coarse.forget(now)
	if err != nil && !errors.Is(err, errLedgerFull) {
		return fmt.Errorf("decisions of every replica: %w", err)
	}
	return nil
}

// add counts one stored detection (messages that are not one are skipped:
// the injector dead-letters them).
func (l *ledger) add(r streams.Raw) {
	d, err := streams.Decode(r.Subject, r.Header, r.Data, 0)
	if err != nil || d.Event.Type() != schemas.TypeDetection {
		return
	}
	var det schemas.Detection
	if schemas.Decode(d.Event, &det) != nil {
		return
	}
	outcome := "clear"
	switch {
	case det.Failed:
		outcome = outcomeFailed
	case det.Rein:
		outcome = outcomeActivated
	}
	views := []metricsView{l.fine.bucket(r.Time), l.coarse.bucket(r.Time)}
	if !r.Time.Before(l.started) {
		views = append(views, l.sinceStart)
	}
	l.remember(d.Meta.Tenant, d.Meta.Conversation, d.Meta.Turn, r.Time, outcome, det.ErrorType)
	tn := l.tenant(d.Meta.Tenant)
	for _, v := range views {
		v.decisions[[2]string{tn, outcome}]++
		if outcome == outcomeActivated {
			v.activations[[2]string{tn, det.ErrorType}]++
		}
	}
}

// view sums the decisions stored at or after from (to its bucket: 5 s
// within the last 15 minutes, a minute beyond), or, with from zero, every
// one since the dashboard started.
func (l *ledger) view(from, now time.Time) (metricsView, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := newMetricsView()
	switch {
	case from.IsZero():
		out.add(l.sinceStart)
	case l.fine.covers(from, now):
		l.fine.sum(from, out)
	default:
		l.coarse.sum(from, out)
	}
	return out, l.behind
}

// Deployment is the decisions of every replica over the window, read from
// REIN_DETECTIONS (filtered like the rest of the overview).
type Deployment struct {
	Decisions      Count  `json:"decisions"`
	Judged         Count  `json:"judged"`
	Activated      Count  `json:"activated"`
	Failed         Count  `json:"failed"`
	ActivationRate Rate   `json:"activation_rate"` // activated / judged
	Note           string `json:"note,omitempty"`  // e.g. still catching up
}

func deploymentOf(v metricsView, f filter, behind bool) Deployment {
	total, activated, failed := v.totals(f)
	d := Deployment{Decisions: count("decisions", total), Judged: count("judged", total-failed),
		Activated: count("activated", activated), Failed: count("failed", failed), ActivationRate: rate(activated, total-failed)}
	if behind {
		d.Note = fmt.Sprintf("still reading %s (at most %d detections per refresh)", bus.StreamDetections, ledgerMaxRead)
	}
	return d
}
