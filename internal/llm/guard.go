package llm

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sony/gobreaker/v2"

	"github.com/reinception/rein/internal/telemetry"
)

// ErrUnavailable is a call refused at once because the endpoint's circuit
// breaker is open: the endpoint failed repeatedly and is given a rest
// before it is tried again. Callers fail over without waiting (the
// detector fails open or falls back to its rules; the agent worker hands
// the turn to a human).
var ErrUnavailable = errors.New("llm: endpoint unavailable (circuit open)")

// Defaults of the guard (Config.Breaker*, Config.*InFlight).
const (
	DefaultBreakerFailures = 5
	DefaultBreakerCooldown = 10 * time.Second
	DefaultMaxInFlight     = 4096
	DefaultInitialInFlight = 64
)

// guard is what stands between rein and one model endpoint, around every
// attempt: an adaptive in-flight limit (AIMD: +1 per success while half
// the limit is in use, ×0.75 at most once a second on a 429/503/timeout, and no new attempt before a
// server's Retry-After) and a circuit breaker (open after
// BreakerFailures failed attempts in a row that are also half the calls
// of the last 10 s; three probes after BreakerCooldown; a 4xx — 429
// included, which the limit handles — does not count against the
// endpoint). Waiting for the limit costs the caller
// a goroutine, never a worker.
type guard struct {
	endpoint string
	cb       *gobreaker.CircuitBreaker[Response]
	lim      *aimd
	m        guardMetrics
}

type guardMetrics struct {
	available, inFlight, limit, queued prometheus.Gauge
	rejected                           prometheus.Counter
}

func newGuard(endpoint string, cfg Config, reg prometheus.Registerer) *guard {
	g := &guard{endpoint: endpoint}
	g.m = guardMetrics{
		available: telemetry.NewGaugeVec(reg, telemetry.MModelAvailable, "1 while the model endpoint's circuit breaker is closed or probing, 0 while it is open (calls refused at once).", "endpoint").WithLabelValues(endpoint),
		inFlight:  telemetry.NewGaugeVec(reg, telemetry.MModelInFlight, "Calls in flight to the model endpoint.", "endpoint").WithLabelValues(endpoint),
		limit:     telemetry.NewGaugeVec(reg, telemetry.MModelLimit, "The adaptive in-flight limit toward the model endpoint (AIMD).", "endpoint").WithLabelValues(endpoint),
		queued:    telemetry.NewGaugeVec(reg, telemetry.MModelQueued, "Calls waiting for the model endpoint's in-flight limit.", "endpoint").WithLabelValues(endpoint),
		rejected:  telemetry.NewCounterVec(reg, telemetry.MModelRejected, "Calls refused at once, by reason (breaker_open).", "endpoint", "reason").WithLabelValues(endpoint, "breaker_open"),
	}
	g.m.available.Set(1)
	g.lim = newAIMD(cfg.InitialInFlight, cfg.MaxInFlight, g.m)
	failures := uint32(cfg.BreakerFailures)
	g.cb = gobreaker.NewCircuitBreaker[Response](gobreaker.Settings{
		Name:        endpoint,
		MaxRequests: 3,                // probes let through while half-open
		Interval:    10 * time.Second, // the closed state's counts start afresh this often
		Timeout:     cfg.BreakerCooldown,
		// Open on BreakerFailures failures in a row that are also at least
		// half of the calls counted: with many calls in flight a few
		// unlucky ones in a row must not take a working endpoint out.
		ReadyToTrip: func(c gobreaker.Counts) bool {
			return c.ConsecutiveFailures >= failures && 2*c.TotalFailures >= c.Requests
		},
		IsSuccessful: func(err error) bool {
			// The request's own fault, the caller giving up, or a 429 (the
			// in-flight limit backs off for it) says nothing of whether the
			// endpoint is up.
			return err == nil || errors.Is(err, ErrRejected) || errors.Is(err, context.Canceled) || errors.Is(err, ErrRateLimited)
		},
		OnStateChange: func(_ string, _, to gobreaker.State) {
			if to == gobreaker.StateOpen {
				g.m.available.Set(0)
			} else {
				g.m.available.Set(1)
			}
		},
	})
	return g
}

// Available tells whether calls are let through (the breaker is not open).
func (g *guard) Available() bool { return g.cb.State() != gobreaker.StateOpen }

// do runs one attempt within the limit and the breaker.
func (g *guard) do(ctx context.Context, attempt func(context.Context) (Response, error)) (Response, error) {
	if g.cb.State() == gobreaker.StateOpen {
		g.m.rejected.Inc()
		return Response{}, fmt.Errorf("%s: %w", g.endpoint, ErrUnavailable)
	}
	if err := g.lim.acquire(ctx); err != nil {
		return Response{}, err
	}
	resp, err := g.cb.Execute(func() (Response, error) { return attempt(ctx) })
	var apiErr *APIError
	throttled := errors.As(err, &apiErr) && (apiErr.StatusCode == 429 || apiErr.StatusCode == 503)
	switch {
	case errors.Is(err, gobreaker.ErrOpenState), errors.Is(err, gobreaker.ErrTooManyRequests):
		g.lim.release(false, 0)
		g.m.rejected.Inc()
		return Response{}, fmt.Errorf("%s: %w", g.endpoint, ErrUnavailable)
	case throttled:
		g.lim.release(true, apiErr.RetryAfter)
	case err != nil && (errors.Is(err, ErrTimeout) || isNetTimeout(err) || errors.Is(err, context.DeadlineExceeded)):
		g.lim.release(true, 0)
	default:
		g.lim.release(false, 0)
	}
	return resp, err
}

// aimd is an adaptive in-flight limit: additive increase (one more slot
// per limit's worth of successes), multiplicative decrease on overload,
// and a pause until a server's Retry-After.
type aimd struct {
	mu       sync.Mutex
	limit    float64
	max      float64
	inFlight int
	waiters  int
	until    time.Time     // no new call before (a Retry-After the limit is at its floor for)
	cut      time.Time     // the last decrease: at most one per second
	wake     chan struct{} // closed and replaced when a slot frees
	m        guardMetrics
}

func newAIMD(initial, max int, m guardMetrics) *aimd {
	a := &aimd{limit: float64(min(initial, max)), max: float64(max), wake: make(chan struct{}), m: m}
	m.limit.Set(a.limit)
	return a
}

func (a *aimd) acquire(ctx context.Context) error {
	a.mu.Lock()
	for {
		wait := time.Until(a.until)
		if wait <= 0 && float64(a.inFlight) < a.limit {
			a.inFlight++
			a.m.inFlight.Set(float64(a.inFlight))
			a.mu.Unlock()
			return nil
		}
		wake := a.wake
		a.waiters++
		a.m.queued.Set(float64(a.waiters))
		a.mu.Unlock()
		var t *time.Timer
		var timer <-chan time.Time
		if wait > 0 {
			t = time.NewTimer(wait)
			timer = t.C
		}
		select {
		case <-wake:
		case <-timer:
		case <-ctx.Done():
			if t != nil {
				t.Stop()
			}
			a.mu.Lock()
			a.waiters--
			a.m.queued.Set(float64(a.waiters))
			a.mu.Unlock()
			return fmt.Errorf("llm: waiting for the endpoint's in-flight limit: %w", ctx.Err())
		}
		if t != nil {
			t.Stop()
		}
		a.mu.Lock()
		a.waiters--
		a.m.queued.Set(float64(a.waiters))
	}
}

// Availability is implemented by clients that know whether their endpoint
// takes calls now (the managed client: its circuit breaker).
type Availability interface{ Available() bool }

// IsAvailable tells whether c's endpoint takes calls; a client that cannot
// tell is taken as available.
func IsAvailable(c Client) bool {
	if a, ok := c.(Availability); ok {
		return a.Available()
	}
	return true
}

// release frees a slot and adapts the limit: overloaded (429, 503, a
// timeout) shrinks it by a quarter, at most once a second as AIMD backs
// off once per round trip, never below 1; a success while at least half
// the limit is in use grows it by one, up to max. A
// Retry-After is waited by the call's own retry (see managed.Chat); only
// once the limit is at its floor does it pause every new call until then.
func (a *aimd) release(overloaded bool, retryAfter time.Duration) {
	a.mu.Lock()
	a.inFlight--
	if overloaded {
		now := time.Now()
		if now.Sub(a.cut) >= time.Second {
			a.limit, a.cut = max(1, a.limit*0.75), now
		}
		if retryAfter > 0 && a.limit <= 1 {
			if u := now.Add(retryAfter); u.After(a.until) {
				a.until = u
			}
		}
	} else if float64(a.inFlight+1)*2 >= a.limit {
		// Grow only while the limit is being used (half of it in flight).
		a.limit = min(a.max, a.limit+1)
	}
	a.m.limit.Set(a.limit)
	a.m.inFlight.Set(float64(a.inFlight))
	close(a.wake)
	a.wake = make(chan struct{})
	a.mu.Unlock()
}
