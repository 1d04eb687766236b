package dashboard

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
)

// The ledger counts the decisions of every replica from REIN_DETECTIONS,
// where each detector stores its decision for each user turn: by tenant and
// outcome (activated, clear, failed) and by tenant and error type, in
// buckets of ledgerBucket by the time each was stored. It reads only what
// was stored since its last refresh (batched direct gets by sequence, no
// consumer), starting ledgerKeep before the dashboard started, so every
// window up to an hour is whole from the first page.
const (
	ledgerBucket = 5 * time.Second
	// ledgerMaxRead bounds one refresh's reads; a ledger further behind
	// catches up over the next refreshes (and says so).
	ledgerMaxRead = 20000
)

// ledgerKeep is how far back the buckets reach: the longest window and a
// bucket.
var ledgerKeep = Windows[len(Windows)-2].Span + ledgerBucket

type ledger struct {
	mu      sync.Mutex
	started time.Time
	next    uint64                // the next sequence to read (0: not started)
	buckets map[int64]metricsView // bucket start (unix ns) → counts
	// sinceStart counts every decision stored at or after started (the
	// "all" window), whatever the buckets have forgotten.
	sinceStart metricsView
	// behind says the last refresh stopped at ledgerMaxRead.
	behind bool
}

func newLedger(started time.Time) *ledger {
	return &ledger{started: started, buckets: map[int64]metricsView{}, sinceStart: newMetricsView()}
}

// errLedgerFull stops a refresh at ledgerMaxRead.
var errLedgerFull = errors.New("ledger read limit")

// refresh reads the detections stored since the last refresh.
func (l *ledger) refresh(ctx context.Context, js jetstream.JetStream, now time.Time) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	st, err := streamState(ctx, js, streams.StreamDetections)
	if err != nil {
		return fmt.Errorf("decisions of every replica: %w", err)
	}
	last := st.LastSeq
	if l.next > last+1 {
		// Purged or recreated: start over.
		l.next, l.buckets, l.sinceStart = 0, map[int64]metricsView{}, newMetricsView()
	}
	if l.next == 0 {
		if l.next, err = firstSeqSince(ctx, js, streams.StreamDetections, l.started.Add(-ledgerKeep), last); err != nil {
			return fmt.Errorf("decisions of every replica: %w", err)
		}
	}
	read := 0
	l.behind = false
	err = streams.ReadSubjectRaw(ctx, js, streams.StreamDetections, streams.DetectionsAll, l.next, last+1, func(r streams.Raw) error {
		if read >= ledgerMaxRead {
			l.behind = true
			return errLedgerFull
		}
		read++
		l.next = r.Sequence + 1
		l.add(r)
		return nil
	})
	l.forget(now)
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
	views := []metricsView{l.bucket(r.Time)}
	if !r.Time.Before(l.started) {
		views = append(views, l.sinceStart)
	}
	for _, v := range views {
		v.decisions[[2]string{d.Meta.Tenant, outcome}]++
		if outcome == outcomeActivated {
			v.activations[[2]string{d.Meta.Tenant, det.ErrorType}]++
		}
	}
}

func (l *ledger) bucket(t time.Time) metricsView {
	k := t.Truncate(ledgerBucket).UnixNano()
	v, ok := l.buckets[k]
	if !ok {
		v = newMetricsView()
		l.buckets[k] = v
	}
	return v
}

// forget drops the buckets older than ledgerKeep.
func (l *ledger) forget(now time.Time) {
	cut := now.Add(-ledgerKeep).UnixNano()
	for k := range l.buckets {
		if k < cut {
			delete(l.buckets, k)
		}
	}
}

// view sums the decisions stored at or after from (to the bucket), or,
// with from zero, every one since the dashboard started.
func (l *ledger) view(from time.Time) (metricsView, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := newMetricsView()
	add := func(v metricsView) {
		for k, n := range v.decisions {
			out.decisions[k] += n
		}
		for k, n := range v.activations {
			out.activations[k] += n
		}
	}
	if from.IsZero() {
		add(l.sinceStart)
		return out, l.behind
	}
	start := from.Truncate(ledgerBucket).UnixNano()
	for k, v := range l.buckets {
		if k >= start {
			add(v)
		}
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
		d.Note = fmt.Sprintf("still reading %s (at most %d detections per refresh)", streams.StreamDetections, ledgerMaxRead)
	}
	return d
}
