package escalation

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/reinception/rein/streams"
)

// SinksConfig is the `sinks:` section of rein.yaml:
//
//	sinks:
//	  - type: webhook
//	    url: https://cc.example.com/rein
//	    mode: structured        # or binary
//	    secret_env: REIN_WEBHOOK_SECRET   # or secret_file: /run/secrets/rein-webhook
//	    attempts: 5
//	    backoff_base: 500ms
//	    backoff_max: 30s
//	    timeout: 10s
//	  - type: jsonl
//	    path: ./data/audit.jsonl
//	    max_bytes: 134217728
//	    sync_interval: 200ms
//	  - type: handoff
//	    deadline: 5m
type SinksConfig struct {
	Sinks []SinkConfig `yaml:"sinks" json:"sinks"`
}

// SinkConfig is one sink. Type selects which of the other fields apply;
// zero values take the documented defaults.
type SinkConfig struct {
	Type string `yaml:"type" json:"type"` // webhook | jsonl | handoff
	// Name identifies this sink instance in metrics (the sink label) and
	// in the stage's per-sink delivery state: every instance gets every
	// event. Default: the type, then <type>-2, <type>-3, … in order.
	Name string `yaml:"name,omitempty" json:"name,omitempty"`

	// webhook
	URL         string            `yaml:"url,omitempty" json:"url,omitempty"`
	Mode        string            `yaml:"mode,omitempty" json:"mode,omitempty"`             // structured (default) | binary
	SecretEnv   string            `yaml:"secret_env,omitempty" json:"secret_env,omitempty"` // env var holding the HMAC secret
	SecretFile  string            `yaml:"secret_file,omitempty" json:"secret_file,omitempty"`
	Attempts    int               `yaml:"attempts,omitempty" json:"attempts,omitempty"`         // default 5
	BackoffBase time.Duration     `yaml:"backoff_base,omitempty" json:"backoff_base,omitempty"` // default 500ms
	BackoffMax  time.Duration     `yaml:"backoff_max,omitempty" json:"backoff_max,omitempty"`   // default 30s
	Timeout     time.Duration     `yaml:"timeout,omitempty" json:"timeout,omitempty"`           // per attempt, default 10s
	Headers     map[string]string `yaml:"headers,omitempty" json:"headers,omitempty"`           // extra static headers

	// jsonl
	Path         string        `yaml:"path,omitempty" json:"path,omitempty"`
	MaxBytes     int64         `yaml:"max_bytes,omitempty" json:"max_bytes,omitempty"`         // default 128 MiB
	SyncInterval time.Duration `yaml:"sync_interval,omitempty" json:"sync_interval,omitempty"` // default 200ms

	// handoff
	Deadline      time.Duration `yaml:"deadline,omitempty" json:"deadline,omitempty"`             // default 5m
	SweepInterval time.Duration `yaml:"sweep_interval,omitempty" json:"sweep_interval,omitempty"` // default deadline/4 in [10ms,5s]
}

// SinkDeps is what BuildSinks needs besides the configuration.
type SinkDeps struct {
	JetStream  jetstream.JetStream                      // required by handoff
	Publisher  *streams.Publisher                       // handoff's publishes (default: one without metrics)
	Logger     *slog.Logger                             // default: discard
	Registerer prometheus.Registerer                    // used when Metrics is nil
	Metrics    *Metrics                                 // shared with the stage; built from Registerer when nil
	Transcript TranscriptFunc                           // handoff's transcript source
	OnTimeout  func(context.Context, cloudevents.Event) // handoff timeout hook (optional)
	HTTPClient *http.Client                             // webhook transport (optional)
	Getenv     func(string) string                      // default os.Getenv
	Now        func() time.Time                         // default time.Now
}

// Validate checks every sink's configuration without touching the
// environment, the file system or the network. Errors wrap ErrInvalidConfig
// and name the sink by its position.
func (c SinksConfig) Validate() error {
	var errs []error
	paths := map[string]int{}
	handoffs := 0
	seen := map[string]int{}
	for i, n := range c.SinkNames() {
		if j, dup := seen[n]; dup {
			errs = append(errs, fmt.Errorf("%w: sinks[%d]: name %q already used by sinks[%d]", ErrInvalidConfig, i, n, j))
		}
		if !validSinkName(n) {
			errs = append(errs, fmt.Errorf("%w: sinks[%d]: name %q must be 1 to 64 letters, digits, '_' or '-'", ErrInvalidConfig, i, n))
		}
		seen[n] = i
	}
	for i, s := range c.Sinks {
		if err := s.validate(); err != nil {
			errs = append(errs, fmt.Errorf("sinks[%d]: %w", i, err))
			continue
		}
		switch s.Type {
		case SinkJSONL:
			p := filepath.Clean(s.Path)
			if j, dup := paths[p]; dup {
				errs = append(errs, fmt.Errorf("%w: sinks[%d]: jsonl path %q already used by sinks[%d]", ErrInvalidConfig, i, s.Path, j))
			}
			paths[p] = i
		case SinkHandoff:
			handoffs++
			if handoffs > 1 {
				errs = append(errs, fmt.Errorf("%w: sinks[%d]: only one handoff sink is allowed", ErrInvalidConfig, i))
			}
		}
	}
	return errors.Join(errs...)
}

func validSinkName(n string) bool {
	if n == "" || len(n) > 64 {
		return false
	}
	for _, c := range n {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func (s SinkConfig) validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s sink: %s", ErrInvalidConfig, s.Type, fmt.Sprintf(format, a...))
	}
	var foreign []string
	note := func(set bool, name string) {
		if set {
			foreign = append(foreign, name)
		}
	}
	webhookSet := func() {
		note(s.URL != "", "url")
		note(s.Mode != "", "mode")
		note(s.SecretEnv != "", "secret_env")
		note(s.SecretFile != "", "secret_file")
		note(s.Attempts != 0, "attempts")
		note(s.BackoffBase != 0, "backoff_base")
		note(s.BackoffMax != 0, "backoff_max")
		note(s.Timeout != 0, "timeout")
		note(len(s.Headers) != 0, "headers")
	}
	jsonlSet := func() {
		note(s.Path != "", "path")
		note(s.MaxBytes != 0, "max_bytes")
		note(s.SyncInterval != 0, "sync_interval")
	}
	handoffSet := func() {
		note(s.Deadline != 0, "deadline")
		note(s.SweepInterval != 0, "sweep_interval")
	}
	switch s.Type {
	case SinkWebhook:
		jsonlSet()
		handoffSet()
		if len(foreign) == 0 {
			wc := s.webhookConfig([]byte("validate"))
			wc.withDefaults()
			if err := wc.validate(); err != nil {
				return err
			}
			if (s.SecretEnv == "") == (s.SecretFile == "") {
				return bad("exactly one of secret_env and secret_file is required")
			}
		}
	case SinkJSONL:
		webhookSet()
		handoffSet()
		if s.Path == "" {
			return bad("path is required")
		}
		if s.MaxBytes < 0 || s.SyncInterval < 0 {
			return bad("max_bytes and sync_interval must not be negative")
		}
	case SinkHandoff:
		webhookSet()
		jsonlSet()
		if s.Deadline < 0 || s.SweepInterval < 0 {
			return bad("deadline and sweep_interval must not be negative")
		}
	case "":
		return fmt.Errorf("%w: sink type is required (%s, %s or %s)", ErrInvalidConfig, SinkWebhook, SinkJSONL, SinkHandoff)
	default:
		return fmt.Errorf("%w: unknown sink type %q (want %s, %s or %s)", ErrInvalidConfig, s.Type, SinkWebhook, SinkJSONL, SinkHandoff)
	}
	if len(foreign) > 0 {
		return bad("option(s) %s do not apply to this sink type", strings.Join(foreign, ", "))
	}
	return nil
}

func (s SinkConfig) webhookConfig(secret []byte) WebhookConfig {
	return WebhookConfig{
		URL: s.URL, Mode: s.Mode, Secret: secret, Attempts: s.Attempts,
		BackoffBase: s.BackoffBase, BackoffMax: s.BackoffMax, Timeout: s.Timeout, Header: s.Headers,
	}
}

// secret reads the webhook secret from the environment or a file
// (surrounding whitespace trimmed).
func (s SinkConfig) secret(getenv func(string) string) ([]byte, error) {
	var v string
	switch {
	case s.SecretEnv != "":
		v = getenv(s.SecretEnv)
		if strings.TrimSpace(v) == "" {
			return nil, fmt.Errorf("%w: webhook secret env var %s is unset or empty", ErrInvalidConfig, s.SecretEnv)
		}
	case s.SecretFile != "":
		b, err := os.ReadFile(s.SecretFile)
		if err != nil {
			return nil, fmt.Errorf("%w: webhook secret file: %w", ErrInvalidConfig, err)
		}
		v = string(b)
		if strings.TrimSpace(v) == "" {
			return nil, fmt.Errorf("%w: webhook secret file %s is empty", ErrInvalidConfig, s.SecretFile)
		}
	}
	secret := []byte(strings.TrimSpace(v))
	if len(secret) < MinSecretBytes {
		return nil, fmt.Errorf("%w: webhook signing secret has %d bytes; at least %d are required (for instance 32 random bytes, hex-encoded)",
			ErrInvalidConfig, len(secret), MinSecretBytes)
	}
	return secret, nil
}

// MinSecretBytes is the shortest webhook signing secret a sink config
// accepts: a short one can be guessed.
const MinSecretBytes = 32

// BuildSinks validates cfg and builds its sinks in order. On error, the
// sinks already built are closed. The caller closes the returned sinks.
func BuildSinks(cfg SinksConfig, deps SinkDeps) ([]Sink, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if deps.Logger == nil {
		deps.Logger = slog.New(slog.DiscardHandler)
	}
	if deps.Getenv == nil {
		deps.Getenv = os.Getenv
	}
	if deps.Now == nil {
		deps.Now = time.Now
	}
	m := deps.Metrics
	if m == nil {
		var err error
		if m, err = NewMetrics(deps.Registerer); err != nil {
			return nil, err
		}
	}
	names := cfg.SinkNames()
	var out []Sink
	fail := func(err error) ([]Sink, error) {
		for _, s := range out {
			_ = s.Close()
		}
		return nil, err
	}
	for i, sc := range cfg.Sinks {
		log := deps.Logger.With(slog.String("sink", sc.Type), slog.Int("index", i))
		var (
			s   Sink
			err error
		)
		switch sc.Type {
		case SinkWebhook:
			var secret []byte
			if secret, err = sc.secret(deps.Getenv); err == nil {
				wc := sc.webhookConfig(secret)
				wc.HTTPClient, wc.Now = deps.HTTPClient, deps.Now
				s, err = NewWebhook(wc, m, log)
			}
		case SinkJSONL:
			s, err = NewJSONL(JSONLConfig{Path: sc.Path, MaxBytes: sc.MaxBytes, SyncInterval: sc.SyncInterval}, m, log)
		case SinkHandoff:
			s, err = NewHandoff(deps.JetStream, HandoffConfig{Publisher: deps.Publisher,
				Deadline: sc.Deadline, SweepInterval: sc.SweepInterval,
				Transcript: deps.Transcript, OnTimeout: deps.OnTimeout, Now: deps.Now,
			}, m, log)
		}
		if err != nil {
			return fail(fmt.Errorf("sinks[%d] (%s): %w", i, sc.Type, err))
		}
		if n, ok := s.(interface{ setName(string) }); ok {
			n.setName(names[i])
		}
		out = append(out, s)
	}
	return out, nil
}

// SinkNames are the instance names of the configured sinks, in order: a
// sink's Name, else its type for the first of that type and <type>-<n>
// for the n-th.
func (c SinksConfig) SinkNames() []string {
	names := make([]string, len(c.Sinks))
	count := map[string]int{}
	for i, s := range c.Sinks {
		count[s.Type]++
		switch {
		case s.Name != "":
			names[i] = s.Name
		case count[s.Type] == 1:
			names[i] = s.Type
		default:
			names[i] = fmt.Sprintf("%s-%d", s.Type, count[s.Type])
		}
	}
	return names
}
