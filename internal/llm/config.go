package llm

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Provider names accepted by Config.Provider (and returned by
// Client.Provider for the clients New builds).
const (
	ProviderOpenAI    = "openai"
	ProviderAnthropic = "anthropic"
	ProviderReplay    = "replay"
	ProviderScripted  = "scripted"
)

// Defaults applied by New when the corresponding Config field is zero.
const (
	DefaultMaxRetries     = 3
	DefaultTimeout        = 60 * time.Second // per attempt, network providers only
	DefaultRetryBaseDelay = 500 * time.Millisecond
	DefaultRetryMaxDelay  = 30 * time.Second
)

// Environment variables read by ConfigFromEnv.
const (
	EnvProvider   = "REIN_LLM_PROVIDER"
	EnvModel      = "REIN_LLM_MODEL"
	EnvBaseURL    = "REIN_LLM_BASE_URL"
	EnvAPIKey     = "REIN_LLM_API_KEY"
	// EnvAPIKeyFile names a file holding the key (a compose or Kubernetes
	// secret mounted as a file), so that it is in no process environment;
	// REIN_LLM_API_KEY wins when both are set.
	EnvAPIKeyFile = "REIN_LLM_API_KEY_FILE"
	EnvHeaders    = "REIN_LLM_HEADERS"
	EnvTimeout    = "REIN_LLM_TIMEOUT"
	EnvMaxRetries = "REIN_LLM_MAX_RETRIES"
	EnvScript     = "REIN_LLM_SCRIPT"
	EnvCassette   = "REIN_LLM_CASSETTE"
	EnvRecord     = "REIN_LLM_RECORD"
)

// Config selects and configures a model provider. The zero value of every
// optional field means "use the default".
type Config struct {
	// Provider is openai, anthropic, replay or scripted. When empty it is
	// inferred: scripted if Script is set, replay if Cassette is set.
	Provider string
	// Model is the model name sent to the server (openai, anthropic); for
	// replay it overrides the model label; for scripted it is ignored (the
	// script's name is the model label).
	Model string
	// BaseURL points the openai provider at any OpenAI-compatible server
	// (vLLM, Ollama, llama.cpp server, LiteLLM), e.g. http://127.0.0.1:8000/v1,
	// and the anthropic provider at a proxy. Empty means the vendor's API.
	BaseURL string
	// APIKey is the bearer key (openai) or x-api-key (anthropic). Optional
	// when BaseURL points at a local server.
	APIKey string
	// Headers are sent with every request (e.g. LiteLLM or gateway keys).
	Headers map[string]string
	// Timeout bounds one attempt (the caller's ctx bounds the whole call,
	// retries included). Zero means DefaultTimeout for openai/anthropic and
	// no per-attempt bound for replay/scripted.
	Timeout time.Duration
	// MaxRetries is how many times a failed attempt (429, 5xx, timeout,
	// connection error) is retried. Zero means DefaultMaxRetries; negative
	// means never retry.
	MaxRetries int
	// Record, when set, appends every successful request/response pair to
	// this JSONL cassette file (any provider but replay).
	Record string
	// Cassette is the JSONL file the replay provider answers from.
	Cassette string
	// Script is the YAML or JSON file driving the scripted simulator.
	Script string

	// RetryBaseDelay and RetryMaxDelay shape the exponential backoff
	// (base·2^attempt, capped, with jitter). Zero means the defaults.
	RetryBaseDelay time.Duration
	RetryMaxDelay  time.Duration
	// HTTPClient replaces the SDKs' HTTP client (custom transports, proxies).
	HTTPClient *http.Client

	// Endpoint names the endpoint in metrics (rein_model_available and
	// the in-flight gauges): a bounded, configured name such as "agent"
	// or "inception". Empty means "<provider>:<model>".
	Endpoint string
	// BreakerFailures consecutive failed attempts (5xx, 429, timeouts,
	// connection errors) open the endpoint's circuit breaker: calls then
	// fail at once with ErrUnavailable, until one probe after
	// BreakerCooldown succeeds. Zero means the defaults (5, 10s).
	BreakerFailures int
	BreakerCooldown time.Duration
	// InitialInFlight and MaxInFlight bound the calls in flight to the
	// endpoint: the limit starts at InitialInFlight and adapts (AIMD) up to
	// MaxInFlight, shrinking on 429/503/timeouts and pausing for a
	// server's Retry-After. Zero means the defaults (64, 4096).
	InitialInFlight int
	MaxInFlight     int
	// MaxResponseBytes bounds a response body from the provider (default
	// DefaultMaxResponseBytes); past it the call fails with
	// ErrResponseTooLarge.
	MaxResponseBytes int64

	// envErr records a value ConfigFromEnv could not parse; Validate reports it.
	envErr error
	// envLookup is set by ConfigFromEnv: the vendor key fallback is redone
	// when a flag changes Provider afterwards. keyFrom names the provider
	// whose vendor variable (OPENAI_API_KEY, ANTHROPIC_API_KEY) filled APIKey.
	envLookup func(string) (string, bool)
	keyFrom   string
}

// String renders the config for logs with the API key redacted.
func (c Config) String() string {
	key := ""
	if c.APIKey != "" {
		key = "***"
	}
	hdrs := make([]string, 0, len(c.Headers))
	for k := range c.Headers {
		hdrs = append(hdrs, k)
	}
	sort.Strings(hdrs)
	return fmt.Sprintf("llm.Config{provider=%s model=%s base_url=%s api_key=%s headers=%v timeout=%s max_retries=%d record=%s cassette=%s script=%s}",
		c.Provider, c.Model, c.BaseURL, key, hdrs, c.Timeout, c.MaxRetries, c.Record, c.Cassette, c.Script)
}

// ConfigFromEnv reads the REIN_LLM_* variables. The API key falls back to
// OPENAI_API_KEY or ANTHROPIC_API_KEY according to the provider. Values that
// do not parse are reported by Validate, not here.
func ConfigFromEnv() Config {
	return configFromLookup(os.LookupEnv)
}

func configFromLookup(lookup func(string) (string, bool)) Config {
	get := func(k string) string {
		v, _ := lookup(k)
		return strings.TrimSpace(v)
	}
	c := Config{
		Provider: strings.ToLower(get(EnvProvider)),
		Model:    get(EnvModel),
		BaseURL:  get(EnvBaseURL),
		APIKey:   get(EnvAPIKey),
		Script:   get(EnvScript),
		Cassette: get(EnvCassette),
		Record:   get(EnvRecord),
	}
	var errs []error
	if path := get(EnvAPIKeyFile); path != "" && c.APIKey == "" {
		b, err := os.ReadFile(path)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", EnvAPIKeyFile, err))
		}
		c.APIKey = strings.TrimSpace(string(b))
		if err == nil && c.APIKey == "" {
			errs = append(errs, fmt.Errorf("%s: %s is empty", EnvAPIKeyFile, path))
		}
	}
	c.envLookup = lookup
	c = c.withInferredProvider()
	if h := get(EnvHeaders); h != "" {
		hdrs, err := ParseHeaders(h)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", EnvHeaders, err))
		}
		c.Headers = hdrs
	}
	if t := get(EnvTimeout); t != "" {
		d, err := parseDurationOrSeconds(t)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", EnvTimeout, err))
		}
		c.Timeout = d
	}
	if r := get(EnvMaxRetries); r != "" {
		n, err := strconv.Atoi(r)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %q is not an integer", EnvMaxRetries, r))
		}
		c.MaxRetries = n
	}
	c.envErr = errors.Join(errs...)
	return c
}

// ParseHeaders parses "k=v,k=v" (as in REIN_LLM_HEADERS) into a map.
func ParseHeaders(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return out, fmt.Errorf("header %q is not key=value", part)
		}
		out[k] = strings.TrimSpace(v)
	}
	return out, nil
}

// parseDurationOrSeconds accepts a Go duration ("30s", "1m") or a plain
// number of seconds ("30", "2.5").
func parseDurationOrSeconds(s string) (time.Duration, error) {
	if d, err := time.ParseDuration(s); err == nil {
		return d, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is neither a duration nor a number of seconds", s)
	}
	return time.Duration(f * float64(time.Second)), nil
}

// vendorKeyVars are the API key variables of each vendor, used when
// REIN_LLM_API_KEY is not set.
var vendorKeyVars = map[string]string{ProviderOpenAI: "OPENAI_API_KEY", ProviderAnthropic: "ANTHROPIC_API_KEY"}

// withInferredProvider infers Provider from Script/Cassette and, for a
// config read by ConfigFromEnv, applies the vendor API key fallback for the
// provider finally chosen (flags may have changed it since), so one
// vendor's key is never sent to the other.
func (c Config) withInferredProvider() Config {
	if c.Provider == "" {
		switch {
		case c.Script != "":
			c.Provider = ProviderScripted
		case c.Cassette != "":
			c.Provider = ProviderReplay
		}
	}
	if c.envLookup == nil {
		return c
	}
	if c.keyFrom != "" && c.keyFrom != c.Provider {
		c.APIKey, c.keyFrom = "", ""
	}
	if v, ok := vendorKeyVars[c.Provider]; ok && c.APIKey == "" {
		if key, _ := c.envLookup(v); strings.TrimSpace(key) != "" {
			c.APIKey, c.keyFrom = strings.TrimSpace(key), c.Provider
		}
	}
	return c
}

// Validate reports every problem with the config, each naming its field.
func (c Config) Validate() error {
	c = c.withInferredProvider()
	var errs []error
	bad := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, a...)...))
	}
	if c.envErr != nil {
		errs = append(errs, fmt.Errorf("%w: %w", ErrInvalidConfig, c.envErr))
	}
	switch c.Provider {
	case ProviderOpenAI, ProviderAnthropic:
		if c.Model == "" {
			bad("provider %s needs a model (REIN_LLM_MODEL / --model)", c.Provider)
		}
		if c.BaseURL == "" && c.APIKey == "" {
			bad("provider %s needs an API key unless a base URL points at a local server", c.Provider)
		}
	case ProviderReplay:
		if c.Cassette == "" {
			bad("provider replay needs a cassette file (REIN_LLM_CASSETTE)")
		}
		if c.Record != "" {
			bad("record and replay cannot be combined")
		}
	case ProviderScripted:
		if c.Script == "" {
			bad("provider scripted needs a script file (REIN_LLM_SCRIPT)")
		}
	case "":
		bad("provider is required (openai, anthropic, replay, scripted)")
	default:
		bad("unknown provider %q (want openai, anthropic, replay, scripted)", c.Provider)
	}
	if c.BreakerFailures < 0 || c.BreakerCooldown < 0 || c.MaxInFlight < 0 || c.InitialInFlight < 0 || c.MaxResponseBytes < 0 {
		bad("breaker failures, breaker cooldown, in-flight limits and the response size limit must not be negative")
	}
	if c.BaseURL != "" {
		u, err := url.Parse(c.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("base URL %q is not an absolute http(s) URL", c.BaseURL)
		}
	}
	for k := range c.Headers {
		if strings.TrimSpace(k) == "" || strings.ContainsAny(k, " \t\r\n:") {
			bad("header name %q is invalid", k)
		}
	}
	if c.Timeout < 0 {
		bad("timeout %s is negative", c.Timeout)
	}
	if c.RetryBaseDelay < 0 || c.RetryMaxDelay < 0 {
		bad("retry delays must not be negative")
	}
	return errors.Join(errs...)
}

func (c Config) withDefaults() Config {
	c = c.withInferredProvider()
	if c.MaxRetries == 0 {
		c.MaxRetries = DefaultMaxRetries
	} else if c.MaxRetries < 0 {
		c.MaxRetries = 0
	}
	if c.Timeout == 0 && (c.Provider == ProviderOpenAI || c.Provider == ProviderAnthropic) {
		c.Timeout = DefaultTimeout
	}
	if c.RetryBaseDelay == 0 {
		c.RetryBaseDelay = DefaultRetryBaseDelay
	}
	if c.BreakerFailures == 0 {
		c.BreakerFailures = DefaultBreakerFailures
	}
	if c.BreakerCooldown == 0 {
		c.BreakerCooldown = DefaultBreakerCooldown
	}
	if c.MaxInFlight == 0 {
		c.MaxInFlight = DefaultMaxInFlight
	}
	if c.InitialInFlight == 0 {
		c.InitialInFlight = min(DefaultInitialInFlight, c.MaxInFlight)
	}
	if c.Endpoint == "" {
		c.Endpoint = c.Provider + ":" + c.Model
	}
	if c.MaxResponseBytes == 0 {
		c.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if c.RetryMaxDelay == 0 {
		c.RetryMaxDelay = DefaultRetryMaxDelay
	}
	if c.RetryMaxDelay < c.RetryBaseDelay {
		c.RetryMaxDelay = c.RetryBaseDelay
	}
	return c
}

// New builds the configured client: the provider, wrapped in the retry
// policy and metrics (registered on reg; nil reg means unregistered
// metrics), and, when cfg.Record is set, in a cassette recorder. Calling New
// several times with the same Registerer is safe: the metric collectors are
// shared.
func New(cfg Config, reg prometheus.Registerer) (Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	m, err := newMetrics(reg)
	if err != nil {
		return nil, err
	}
	cfg.HTTPClient = limitClient(cfg.HTTPClient, cfg.MaxResponseBytes)
	var base Client
	switch cfg.Provider {
	case ProviderOpenAI:
		base = NewOpenAI(cfg)
	case ProviderAnthropic:
		base = NewAnthropic(cfg)
	case ProviderReplay:
		r, err := OpenCassette(cfg.Cassette)
		if err != nil {
			return nil, err
		}
		if cfg.Model != "" {
			r.model = cfg.Model
		}
		base = r
	case ProviderScripted:
		s, err := LoadScript(cfg.Script)
		if err != nil {
			return nil, err
		}
		base = NewScripted(s)
	}
	var c Client = newManaged(base, cfg, m, newGuard(cfg.Endpoint, cfg, reg))
	if cfg.Record != "" {
		rec, err := NewRecorder(c, cfg.Record)
		if err != nil {
			return nil, err
		}
		c = rec
	}
	return c, nil
}
