package llm

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/reinception/rein/internal/telemetry"
)

// Outcome label values of rein_model_requests_total.
const (
	OutcomeOK          = "ok"
	OutcomeError       = "error"
	OutcomeTimeout     = "timeout"
	OutcomeRateLimited = "rate_limited"
)

// Kind label values of rein_model_tokens_total.
const (
	TokenInput       = "input"
	TokenOutput      = "output"
	TokenCachedInput = "cached_input"
)

// latencyBuckets span a scripted call (microseconds) to a slow model (a minute).
var latencyBuckets = []float64{0.0001, 0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

type metrics struct {
	requests *prometheus.CounterVec
	tokens   *prometheus.CounterVec
	seconds  *prometheus.HistogramVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: telemetry.MModelRequests,
			Help: "Model provider HTTP attempts (each retry counts), by outcome: ok, error, timeout, rate_limited.",
		}, []string{"provider", "model", "purpose", "outcome"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: telemetry.MModelTokens,
			Help: "Tokens reported by model providers, by kind: input (cached included), output, cached_input.",
		}, []string{"provider", "model", "purpose", "kind"}),
		seconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    telemetry.MModelRequestSeconds,
			Help:    "Duration of one model provider attempt.",
			Buckets: latencyBuckets,
		}, []string{"provider", "purpose"}),
	}
	if reg == nil {
		return m, nil
	}
	var err error
	if m.requests, err = registerOrReuse(reg, m.requests); err != nil {
		return nil, err
	}
	if m.tokens, err = registerOrReuse(reg, m.tokens); err != nil {
		return nil, err
	}
	if m.seconds, err = registerOrReuse(reg, m.seconds); err != nil {
		return nil, err
	}
	return m, nil
}

// registerOrReuse registers c, or returns the identical collector a previous
// New already registered on reg.
func registerOrReuse[T prometheus.Collector](reg prometheus.Registerer, c T) (T, error) {
	err := reg.Register(c)
	if err == nil {
		return c, nil
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(T); ok {
			return existing, nil
		}
	}
	return c, fmt.Errorf("llm: register metrics: %w", err)
}

// series holds the label children of one (provider, model, purpose), so a
// call does no label hashing.
type series struct {
	ok, failed, timeout, limited prometheus.Counter
	input, output, cached        prometheus.Counter
	seconds                      prometheus.Observer
}

// seriesCache resolves children once per purpose.
type seriesCache struct {
	m               *metrics
	provider, model string
	byPurpose       sync.Map // purpose label → *series
}

func (c *seriesCache) get(purpose string) *series {
	purpose = purposeLabel(purpose)
	if s, ok := c.byPurpose.Load(purpose); ok {
		return s.(*series)
	}
	req := func(outcome string) prometheus.Counter {
		return c.m.requests.WithLabelValues(c.provider, c.model, purpose, outcome)
	}
	tok := func(kind string) prometheus.Counter {
		return c.m.tokens.WithLabelValues(c.provider, c.model, purpose, kind)
	}
	s := &series{
		ok: req(OutcomeOK), failed: req(OutcomeError), timeout: req(OutcomeTimeout), limited: req(OutcomeRateLimited),
		input: tok(TokenInput), output: tok(TokenOutput), cached: tok(TokenCachedInput),
		seconds: c.m.seconds.WithLabelValues(c.provider, purpose),
	}
	actual, _ := c.byPurpose.LoadOrStore(purpose, s)
	return actual.(*series)
}

func (s *series) observe(outcome string, d time.Duration, u Usage) {
	s.seconds.Observe(d.Seconds())
	switch outcome {
	case OutcomeOK:
		s.ok.Inc()
	case OutcomeTimeout:
		s.timeout.Inc()
	case OutcomeRateLimited:
		s.limited.Inc()
	default:
		s.failed.Inc()
	}
	if u.InputTokens > 0 {
		s.input.Add(float64(u.InputTokens))
	}
	if u.OutputTokens > 0 {
		s.output.Add(float64(u.OutputTokens))
	}
	if u.CachedInputTokens > 0 {
		s.cached.Add(float64(u.CachedInputTokens))
	}
}

// purposeLabel keeps the purpose label bounded: short lowercase identifiers
// pass, anything else becomes "other".
func purposeLabel(p string) string {
	if p == "" {
		return "unspecified"
	}
	if len(p) > 32 {
		return "other"
	}
	for _, r := range p {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '_' && r != '-' {
			return "other"
		}
	}
	return p
}
