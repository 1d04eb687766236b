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
	"os"
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
	DefaultWebhookAttempts         = 5
	DefaultBackoffBase             = 500 * time.Millisecond
	DefaultBackoffMax              = 30 * time.Second
	DefaultWebhookTimeout          = 10 * time.Second
	DefaultBackoffJitter           = 0.2
	DefaultWebhookMaxResponseBytes = 4 << 20
)

// maxReasonChars bounds the failure text (a receiver's answer included)
// carried into logs and dead-letter reasons.
const maxReasonChars = 1024

// WebhookConfig configures one webhook sink; in rein.yaml it is a
// `type: webhook` entry of `sinks:` with the keys tagged below. The
// untagged fields are for Go callers.
type WebhookConfig struct {
	// Name is the instance name (default "webhook"; see
	// SinksConfig.SinkNames).
	Name string `yaml:"name"`
	URL  string `yaml:"url"`
	Mode string `yaml:"mode"` // ModeStructured (default) or ModeBinary
	// Where a configured sink reads its HMAC-SHA256 signing secret (exactly
	// one, at least MinSecretBytes once surrounding whitespace is trimmed):
	// the environment variable SecretEnv or the file SecretFile. A Go
	// caller may set Secret instead; NewWebhook needs Secret.
	SecretEnv  string `yaml:"secret_env"`
	SecretFile string `yaml:"secret_file"`
	Secret     []byte `yaml:"-"`

	Attempts    int           `yaml:"attempts"`     // total attempts, first included (default 5)
	BackoffBase time.Duration `yaml:"backoff_base"` // delay before the second attempt (default 500ms)
	BackoffMax  time.Duration `yaml:"backoff_max"`  // cap of the doubling delay (default 30s)
	Jitter      float64       `yaml:"-"`            // fraction of random extra delay in [0,1) (default 0.2; negative: none)
	Timeout     time.Duration `yaml:"timeout"`      // per-attempt timeout (default 10s)
	// Header holds static request headers (e.g. Authorization); their
	// values never appear in logs, errors or dead letters.
	Header map[string]string `yaml:"headers"`
	// MaxResponseBytes bounds how much of a receiver's answer is read
	// (default 4 MiB); a longer one fails the attempt with
	// ErrResponseTooLarge.
	MaxResponseBytes int64 `yaml:"max_response_bytes"`

	HTTPClient *http.Client     `yaml:"-"` // optional; its Transport is wrapped, its redirect policy replaced
	Now        func() time.Time `yaml:"-"` // optional clock for signatures
}

func (c *WebhookConfig) withDefaults() {
	if c.Name == "" {
		c.Name = KindWebhook
	}
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
	if c.MaxResponseBytes == 0 {
		c.MaxResponseBytes = DefaultWebhookMaxResponseBytes
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

// validate checks everything but the secret.
func (c *WebhookConfig) validate() error {
	u, err := url.Parse(c.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%w: webhook url %q must be an absolute http(s) URL", ErrInvalidConfig, redactURL(c.URL))
	}
	if c.Mode != ModeStructured && c.Mode != ModeBinary {
		return fmt.Errorf("%w: webhook mode %q must be %q or %q", ErrInvalidConfig, c.Mode, ModeStructured, ModeBinary)
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
	if c.MaxResponseBytes < 0 {
		return fmt.Errorf("%w: webhook max_response_bytes %d must not be negative", ErrInvalidConfig, c.MaxResponseBytes)
	}
	return nil
}

// MinSecretBytes is the shortest webhook signing secret a sink config
// accepts: a short one can be guessed.
const MinSecretBytes = 32

// validateSecretSource checks, without reading it, that a configured sink
// has exactly one source of its signing secret.
func (c *WebhookConfig) validateSecretSource() error {
	sources := 0
	for _, set := range []bool{c.SecretEnv != "", c.SecretFile != "", len(c.Secret) > 0} {
		if set {
			sources++
		}
	}
	if sources != 1 {
		return fmt.Errorf("%w: webhook sink: exactly one of secret_env and secret_file is required", ErrInvalidConfig)
	}
	if len(c.Secret) > 0 {
		return checkSecretLength(c.Secret)
	}
	return nil
}

// secret returns the signing secret of a configured sink: Secret, or the
// value of the environment variable or file (surrounding whitespace
// trimmed), at least MinSecretBytes long.
func (c *WebhookConfig) secret(getenv func(string) string) ([]byte, error) {
	if len(c.Secret) > 0 {
		if err := checkSecretLength(c.Secret); err != nil {
			return nil, err
		}
		return c.Secret, nil
	}
	var v string
	switch {
	case c.SecretEnv != "":
		v = getenv(c.SecretEnv)
		if strings.TrimSpace(v) == "" {
			return nil, fmt.Errorf("%w: webhook secret env var %s is unset or empty", ErrInvalidConfig, c.SecretEnv)
		}
	case c.SecretFile != "":
		b, err := os.ReadFile(c.SecretFile)
		if err != nil {
			return nil, fmt.Errorf("%w: webhook secret file: %w", ErrInvalidConfig, err)
		}
		v = string(b)
		if strings.TrimSpace(v) == "" {
			return nil, fmt.Errorf("%w: webhook secret file %s is empty", ErrInvalidConfig, c.SecretFile)
		}
	}
	secret := []byte(strings.TrimSpace(v))
	if err := checkSecretLength(secret); err != nil {
		return nil, err
	}
	return secret, nil
}

func checkSecretLength(secret []byte) error {
	if len(secret) < MinSecretBytes {
		return fmt.Errorf("%w: webhook signing secret has %d bytes; at least %d are required (for instance 32 random bytes, hex-encoded)",
			ErrInvalidConfig, len(secret), MinSecretBytes)
	}
	return nil
}

// Webhook delivers CloudEvents over HTTP with sdk-go's HTTP protocol,
// signed, with exponential-backoff retries. It never follows a redirect,
// reads a receiver's answer only up to MaxResponseBytes, and keeps the
// URL's query values and password, the static header values and the
// secret out of its logs and errors.
type Webhook struct {
	cfg    WebhookConfig
	client cloudevents.Client
	m      *Metrics
	log    *slog.Logger
	redact *strings.Replacer
}

// NewWebhook builds a webhook sink; cfg.Secret must be set. m and log may
// be nil.
func NewWebhook(cfg WebhookConfig, m *Metrics, log *slog.Logger) (*Webhook, error) {
	cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if len(cfg.Secret) == 0 {
		return nil, fmt.Errorf("%w: webhook secret is empty", ErrInvalidConfig)
	}
	if m == nil {
		m = NewMetrics(nil)
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
	hc.Transport = &transport{next: next, secret: cfg.Secret, now: cfg.Now, static: cfg.Header, maxBody: cfg.MaxResponseBytes}
	// Never follow a redirect: it would send the signed body and any static
	// Authorization header to wherever the receiver points. The transport
	// already answers a 3xx with an error; this keeps the client from
	// acting on one should a wrapped transport hand it up.
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	w := &Webhook{cfg: cfg, m: m, log: log, redact: newRedactor(cfg)}
	p, err := cehttp.New(cehttp.WithTarget(cfg.URL), cehttp.WithClient(hc))
	if err != nil {
		return nil, fmt.Errorf("%w: webhook protocol: %s", ErrInvalidConfig, w.scrub(err))
	}
	if w.client, err = cloudevents.NewClient(p); err != nil {
		return nil, fmt.Errorf("%w: webhook client: %s", ErrInvalidConfig, w.scrub(err))
	}
	return w, nil
}

// Name is the instance name (WebhookConfig.Name, default "webhook").
func (w *Webhook) Name() string { return w.cfg.Name }

// Kind is KindWebhook.
func (w *Webhook) Kind() string { return KindWebhook }

// Close releases nothing; in-flight deliveries end with their context.
func (w *Webhook) Close() error { return nil }

// Deliver posts ev, retrying transient failures (network errors, timeouts,
// an answer longer than MaxResponseBytes, 408, 409, 425, 429 and 5xx) with
// exponential backoff. After the last attempt, or on a permanent refusal
// (a redirect, another 4xx, an invalid event), it returns an error
// wrapping ErrDeliveryFailed and counts outcome "failed". A cancelled ctx
// returns ctx's error (the event stays pending upstream).
func (w *Webhook) Deliver(ctx context.Context, ev cloudevents.Event) error {
	start := time.Now()
	defer func() { w.m.observe(w.Name(), KindWebhook, time.Since(start)) }()
	if err := ev.Validate(); err != nil {
		w.m.delivery(w.Name(), KindWebhook, OutcomeFailed)
		return fmt.Errorf("%w: webhook %s: invalid event %q: %w", ErrDeliveryFailed, w.Name(), ev.ID(), err)
	}
	for attempt := 1; ; attempt++ {
		err := w.attempt(ctx, ev)
		if err == nil {
			w.m.delivery(w.Name(), KindWebhook, OutcomeDelivered)
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("webhook %s: event %s: %w", w.Name(), ev.ID(), context.Cause(ctx))
		}
		permanent := isPermanent(err)
		if permanent || attempt >= w.cfg.Attempts {
			w.m.delivery(w.Name(), KindWebhook, OutcomeFailed)
			reason := w.scrub(err)
			w.log.LogAttrs(ctx, slog.LevelWarn, "webhook delivery failed",
				slog.String("id", ev.ID()), slog.String("type", ev.Type()),
				slog.Int("attempts", attempt), slog.Bool("permanent", permanent), slog.String("err", reason))
			// The cause's text may hold the URL or a header value: only
			// the redacted text travels on (logs, dead letters), so the
			// cause is not wrapped.
			return fmt.Errorf("%w: webhook %s: event %s after %d attempt(s): %s", ErrDeliveryFailed, w.Name(), ev.ID(), attempt, reason)
		}
		w.m.delivery(w.Name(), KindWebhook, OutcomeRetry)
		t := time.NewTimer(w.backoff(attempt))
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("webhook %s: event %s: %w", w.Name(), ev.ID(), context.Cause(ctx))
		case <-t.C:
		}
	}
}

// scrub renders err without credentials, bounded in length.
func (w *Webhook) scrub(err error) string {
	s := w.redact.Replace(err.Error())
	if len(s) > maxReasonChars {
		s = strings.ToValidUTF8(s[:maxReasonChars], "") + "…(truncated)"
	}
	return s
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

// isPermanent reports whether retrying cannot help: a redirect (never
// followed), or the receiver refused the request itself (a 4xx other than
// 408, 409, 425 and 429).
func isPermanent(err error) bool {
	var re *redirectError
	if errors.As(err, &re) {
		return true
	}
	var hr *cehttp.Result
	if errors.As(err, &hr) {
		switch {
		case hr.StatusCode == http.StatusRequestTimeout, hr.StatusCode == http.StatusConflict,
			hr.StatusCode == http.StatusTooEarly, hr.StatusCode == http.StatusTooManyRequests:
			return false
		case hr.StatusCode >= 300 && hr.StatusCode < 500:
			return true
		}
	}
	return false
}

// redirectError is a 3xx answer, which the webhook never follows.
type redirectError struct{ status int }

func (e *redirectError) Error() string {
	return fmt.Sprintf("receiver answered %d %s; redirects are not followed (configure the final URL)",
		e.status, http.StatusText(e.status))
}

// transport signs every request body and sets the static headers; on the
// way back it refuses a redirect and reads the answer, at most maxBody
// bytes of it, before anything else (sdk-go reads a refusal's whole body
// into its error) can.
type transport struct {
	next    http.RoundTripper
	secret  []byte
	now     func() time.Time
	static  map[string]string
	maxBody int64
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
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
	for k, v := range t.static {
		out.Header.Set(k, v)
	}
	out.Header.Set(SignatureHeader, Sign(t.secret, t.now(), body))
	out.Body = io.NopCloser(bytes.NewReader(body))
	out.ContentLength = int64(len(body))
	out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	resp, err := t.next.RoundTrip(out)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		_ = resp.Body.Close()
		return nil, &redirectError{status: resp.StatusCode}
	}
	got, err := io.ReadAll(io.LimitReader(resp.Body, t.maxBody+1))
	_ = resp.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("read webhook response: %w", err)
	}
	if int64(len(got)) > t.maxBody {
		return nil, fmt.Errorf("%w (%d bytes), status %d", ErrResponseTooLarge, t.maxBody, resp.StatusCode)
	}
	resp.Body = io.NopCloser(bytes.NewReader(got))
	resp.ContentLength = int64(len(got))
	return resp, nil
}
