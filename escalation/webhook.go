package escalation

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	"github.com/cloudevents/sdk-go/v2/binding"
	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"
)

// HTTP content modes of the webhook sink.
const (
	ModeStructured = "structured" // the whole event as application/cloudevents+json
	ModeBinary     = "binary"     // ce-* headers, data as the body
)

// Webhook defaults.
const (
	DefaultWebhookAttempts = 5
	DefaultBackoffBase     = 500 * time.Millisecond
	DefaultBackoffMax      = 30 * time.Second
	DefaultWebhookTimeout  = 10 * time.Second
	DefaultBackoffJitter   = 0.2
)

// WebhookConfig configures a webhook sink.
type WebhookConfig struct {
	URL         string
	Mode        string        // ModeStructured (default) or ModeBinary
	Secret      []byte        // HMAC-SHA256 key; required
	Attempts    int           // total attempts, first included (default 5)
	BackoffBase time.Duration // delay before the second attempt (default 500ms)
	BackoffMax  time.Duration // cap of the doubling delay (default 30s)
	Jitter      float64       // fraction of random extra delay in [0,1) (default 0.2; negative: none)
	Timeout     time.Duration // per-attempt timeout (default 10s)

	HTTPClient *http.Client      // optional; its Transport is wrapped by the signer
	Now        func() time.Time  // optional clock for signatures
	Header     map[string]string // optional static headers (e.g. Authorization)
}

func (c *WebhookConfig) withDefaults() {
	if c.Mode == "" {
		c.Mode = ModeStructured
	}
	if c.Attempts == 0 {
		c.Attempts = DefaultWebhookAttempts
	}
	if c.BackoffBase == 0 {
		c.BackoffBase = DefaultBackoffBase
	}
	if c.BackoffMax == 0 {
		c.BackoffMax = DefaultBackoffMax
	}
	if c.Jitter == 0 {
		c.Jitter = DefaultBackoffJitter
	}
	if c.Jitter < 0 {
		c.Jitter = 0
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultWebhookTimeout
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

func (c *WebhookConfig) validate() error {
	u, err := url.Parse(c.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%w: webhook url %q must be an absolute http(s) URL", ErrInvalidConfig, c.URL)
	}
	if c.Mode != ModeStructured && c.Mode != ModeBinary {
		return fmt.Errorf("%w: webhook mode %q must be %q or %q", ErrInvalidConfig, c.Mode, ModeStructured, ModeBinary)
	}
	if len(c.Secret) == 0 {
		return fmt.Errorf("%w: webhook secret is empty", ErrInvalidConfig)
	}
	if c.Attempts < 1 {
		return fmt.Errorf("%w: webhook attempts %d must be at least 1", ErrInvalidConfig, c.Attempts)
	}
	if c.BackoffBase < 0 || c.BackoffMax < c.BackoffBase {
		return fmt.Errorf("%w: webhook backoff base %s / max %s", ErrInvalidConfig, c.BackoffBase, c.BackoffMax)
	}
	if c.Jitter >= 1 {
		return fmt.Errorf("%w: webhook jitter %g must be below 1", ErrInvalidConfig, c.Jitter)
	}
	if c.Timeout < 0 {
		return fmt.Errorf("%w: webhook timeout %s", ErrInvalidConfig, c.Timeout)
	}
	return nil
}

// Webhook delivers CloudEvents over HTTP with sdk-go's HTTP protocol,
// signed, with exponential-backoff retries.
type Webhook struct {
	name   string // the configured instance name (metrics, delivery state)
	cfg    WebhookConfig
	client cloudevents.Client
	m      *Metrics
	log    *slog.Logger
}

// NewWebhook builds a webhook sink. m and log may be nil.
func NewWebhook(cfg WebhookConfig, m *Metrics, log *slog.Logger) (*Webhook, error) {
	cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if m == nil {
		var err error
		if m, err = NewMetrics(nil); err != nil {
			return nil, err
		}
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	hc := http.Client{}
	if cfg.HTTPClient != nil {
		hc = *cfg.HTTPClient
	}
	next := hc.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	hc.Transport = &signer{next: next, secret: cfg.Secret, now: cfg.Now, static: cfg.Header}
	// Never follow a redirect: it would send the signed body and any static
	// Authorization header to wherever the receiver points. A 3xx is a
	// permanent delivery failure the operator must look at.
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	p, err := cehttp.New(cehttp.WithTarget(cfg.URL), cehttp.WithClient(hc))
	if err != nil {
		return nil, fmt.Errorf("%w: webhook protocol: %v", ErrInvalidConfig, err)
	}
	c, err := cloudevents.NewClient(p)
	if err != nil {
		return nil, fmt.Errorf("%w: webhook client: %v", ErrInvalidConfig, err)
	}
	return &Webhook{cfg: cfg, client: c, m: m, log: log}, nil
}

// Name is "webhook".
func (w *Webhook) Name() string {
	if w.name == "" {
		return SinkWebhook
	}
	return w.name
}

func (w *Webhook) setName(n string) { w.name = n }

// Close releases nothing; in-flight deliveries end with their context.
func (w *Webhook) Close() error { return nil }

// Deliver posts ev, retrying transient failures (network errors, timeouts,
// 408, 409, 425, 429 and 5xx) with exponential backoff. After the last
// attempt, or on a permanent refusal (other 4xx, an invalid event), it
// returns an error wrapping ErrDeliveryFailed and counts outcome "failed".
// A cancelled ctx returns ctx's error (the event stays pending upstream).
func (w *Webhook) Deliver(ctx context.Context, ev cloudevents.Event) error {
	start := time.Now()
	defer func() { w.m.SinkSeconds.WithLabelValues(w.Name()).Observe(time.Since(start).Seconds()) }()
	if err := ev.Validate(); err != nil {
		w.m.delivery(w.Name(), OutcomeFailed)
		return fmt.Errorf("%w: webhook: invalid event %q: %w", ErrDeliveryFailed, ev.ID(), err)
	}
	for attempt := 1; ; attempt++ {
		err := w.attempt(ctx, ev)
		if err == nil {
			w.m.delivery(w.Name(), OutcomeDelivered)
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("webhook: event %s: %w", ev.ID(), context.Cause(ctx))
		}
		permanent := isPermanent(err)
		if permanent || attempt >= w.cfg.Attempts {
			w.m.delivery(w.Name(), OutcomeFailed)
			msg := w.redact(err.Error())
			w.log.LogAttrs(ctx, slog.LevelWarn, "webhook delivery failed",
				slog.String("id", ev.ID()), slog.String("type", ev.Type()),
				slog.Int("attempts", attempt), slog.Bool("permanent", permanent), slog.String("err", msg))
			// The cause's text may hold the URL with its query string:
			// only the redacted text travels on (logs, dead letters).
			return fmt.Errorf("%w: webhook: event %s after %d attempt(s): %s", ErrDeliveryFailed, ev.ID(), attempt, msg)
		}
		w.m.delivery(w.Name(), OutcomeRetry)
		t := time.NewTimer(w.backoff(attempt))
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("webhook: event %s: %w", ev.ID(), context.Cause(ctx))
		case <-t.C:
		}
	}
}

// redact removes the webhook URL's query values (tokens some receivers
// take there) from a message, in its raw and escaped forms.
func (w *Webhook) redact(msg string) string {
	u, err := url.Parse(w.cfg.URL)
	if err != nil || u.RawQuery == "" {
		return msg
	}
	q := u.Query()
	for k := range q {
		q[k] = []string{"REDACTED"}
	}
	safe := *u
	safe.RawQuery = q.Encode()
	msg = strings.ReplaceAll(msg, w.cfg.URL, safe.String())
	msg = strings.ReplaceAll(msg, u.RawQuery, safe.RawQuery)
	for _, vs := range u.Query() {
		for _, v := range vs {
			if len(v) >= 4 {
				msg = strings.ReplaceAll(msg, v, "REDACTED")
				msg = strings.ReplaceAll(msg, url.QueryEscape(v), "REDACTED")
			}
		}
	}
	return msg
}

func (w *Webhook) attempt(ctx context.Context, ev cloudevents.Event) error {
	actx, cancel := context.WithTimeout(ctx, w.cfg.Timeout)
	defer cancel()
	actx = cehttp.WithCustomHeader(actx, http.Header{IdempotencyKeyHeader: []string{ev.ID()}})
	if w.cfg.Mode == ModeBinary {
		actx = binding.WithForceBinary(actx)
	} else {
		actx = binding.WithForceStructured(actx)
	}
	res := w.client.Send(actx, ev)
	if cloudevents.IsACK(res) {
		return nil
	}
	if res == nil {
		return errors.New("no result")
	}
	return res
}

// backoff is the delay after failed attempt n (1-based): base·2^(n-1),
// capped at max, plus up to Jitter of itself at random.
func (w *Webhook) backoff(n int) time.Duration {
	d := w.cfg.BackoffBase
	for i := 1; i < n && d < w.cfg.BackoffMax; i++ {
		d *= 2
	}
	d = min(d, w.cfg.BackoffMax)
	if w.cfg.Jitter > 0 && d > 0 {
		d += time.Duration(rand.Float64() * w.cfg.Jitter * float64(d))
	}
	return d
}

// isPermanent reports whether retrying cannot help: the receiver refused
// the request itself (a 4xx other than 408, 409, 425 and 429).
func isPermanent(err error) bool {
	var hr *cehttp.Result
	if errors.As(err, &hr) {
		switch {
		case hr.StatusCode == http.StatusRequestTimeout, hr.StatusCode == http.StatusConflict,
			hr.StatusCode == http.StatusTooEarly, hr.StatusCode == http.StatusTooManyRequests:
			return false
		case hr.StatusCode >= 300 && hr.StatusCode < 500:
			return true // a redirect (never followed) or a refusal
		}
	}
	return false
}

// signer is the HTTP transport that signs every request body.
type signer struct {
	next   http.RoundTripper
	secret []byte
	now    func() time.Time
	static map[string]string
}

func (s *signer) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		_ = req.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("read request body: %w", err)
		}
		body = b
	}
	out := req.Clone(req.Context())
	for k, v := range s.static {
		out.Header.Set(k, v)
	}
	out.Header.Set(SignatureHeader, Sign(s.secret, s.now(), body))
	out.Body = io.NopCloser(bytes.NewReader(body))
	out.ContentLength = int64(len(body))
	out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return s.next.RoundTrip(out)
}
