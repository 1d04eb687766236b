package llm

import (
	"context"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Faults makes a client behave like a real endpoint under strain, for
// load benchmarks: a simulator, not a model. Each call first waits a
// uniform extra delay in [0, Jitter], then fails with probability
// ErrorRate (an HTTP 503 APIError) or, with probability RateLimitRate,
// answers 429 with Retry-After RetryAfter; otherwise it is the wrapped
// client's call. Seeded, so runs repeat.
type Faults struct {
	Jitter        time.Duration
	ErrorRate     float64
	RateLimitRate float64
	RetryAfter    time.Duration
	Seed          uint64
}

// WithFaults wraps c with f (c itself when f injects nothing).
func WithFaults(c Client, f Faults) Client {
	if f.Jitter <= 0 && f.ErrorRate <= 0 && f.RateLimitRate <= 0 {
		return c
	}
	return &faulty{inner: c, f: f, rng: rand.New(rand.NewPCG(f.Seed, 1))}
}

type faulty struct {
	inner Client
	f     Faults
	mu    sync.Mutex
	rng   *rand.Rand
}

func (c *faulty) Provider() string { return c.inner.Provider() }
func (c *faulty) Model() string    { return c.inner.Model() }

func (c *faulty) Chat(ctx context.Context, req Request) (Response, error) {
	c.mu.Lock()
	var delay time.Duration
	if c.f.Jitter > 0 {
		delay = time.Duration(c.rng.Int64N(int64(c.f.Jitter) + 1))
	}
	p := c.rng.Float64()
	c.mu.Unlock()
	if delay > 0 {
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return Response{}, ctx.Err()
		}
	}
	switch {
	case p < c.f.ErrorRate:
		return Response{}, &APIError{Provider: c.inner.Provider(), StatusCode: http.StatusServiceUnavailable, Message: "simulated outage"}
	case p < c.f.ErrorRate+c.f.RateLimitRate:
		return Response{}, &APIError{Provider: c.inner.Provider(), StatusCode: http.StatusTooManyRequests, Message: "simulated rate limit", RetryAfter: c.f.RetryAfter}
	}
	return c.inner.Chat(ctx, req)
}

// Manage wraps any client in rein's retry policy, circuit breaker and
// adaptive in-flight limit, with metrics on reg, as New does for the
// providers it builds (cfg's retry, breaker and limit fields apply).
func Manage(c Client, cfg Config, reg prometheus.Registerer) (Client, error) {
	cfg.Provider = ProviderScripted // only for the defaults: no per-attempt timeout unless set
	cfg = cfg.withDefaults()
	m, err := newMetrics(reg)
	if err != nil {
		return nil, err
	}
	if cfg.Endpoint == ProviderScripted+":" {
		cfg.Endpoint = c.Provider() + ":" + c.Model()
	}
	return newManaged(c, cfg, m, newGuard(cfg.Endpoint, cfg, reg)), nil
}
