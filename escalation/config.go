package escalation

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	"github.com/goccy/go-yaml"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/reinception/rein/streams"
)

// SinksConfig is the `sinks:` section of rein.yaml, one flat entry per
// sink instance, its kind in `type` and that kind's keys beside it:
//
//	sinks:
//	  - type: webhook
//	    name: contact-center          # optional; default webhook, webhook-2, …
//	    url: https://cc.example.com/rein
//	    mode: structured              # or binary
//	    secret_env: REIN_WEBHOOK_SECRET   # or secret_file: /run/secrets/rein-webhook
//	    attempts: 5
//	    backoff_base: 500ms
//	    backoff_max: 30s
//	    timeout: 10s
//	    max_response_bytes: 4194304
//	  - type: jsonl
//	    path: ./data/audit.jsonl
//	    max_bytes: 134217728
//	    sync_interval: 200ms
//	  - type: handoff
//	    deadline: 5m
type SinksConfig struct {
	Sinks []SinkConfig `yaml:"sinks"`
}

// SinkConfig is one sink instance: exactly one member is set, the typed
// configuration of its kind (WebhookConfig, JSONLConfig, HandoffConfig).
// Zero values take the documented defaults.
type SinkConfig struct {
	Webhook *WebhookConfig
	JSONL   *JSONLConfig
	Handoff *HandoffConfig
}

// Kind is the kind of the member that is set ("" when none is).
func (s SinkConfig) Kind() string {
	switch {
	case s.Webhook != nil:
		return KindWebhook
	case s.JSONL != nil:
		return KindJSONL
	case s.Handoff != nil:
		return KindHandoff
	}
	return ""
}

// name is the configured name ("" when unset).
func (s SinkConfig) name() string {
	switch {
	case s.Webhook != nil:
		return s.Webhook.Name
	case s.JSONL != nil:
		return s.JSONL.Name
	case s.Handoff != nil:
		return s.Handoff.Name
	}
	return ""
}

// kinds counts the members that are set.
func (s SinkConfig) kinds() int {
	n := 0
	for _, set := range []bool{s.Webhook != nil, s.JSONL != nil, s.Handoff != nil} {
		if set {
			n++
		}
	}
	return n
}

// sinkKeys are the rein.yaml keys of each kind, from the yaml tags of its
// configuration: the decoder's one list of what belongs where.
var sinkKeys = map[string][]string{
	KindWebhook: yamlKeys[WebhookConfig](),
	KindJSONL:   yamlKeys[JSONLConfig](),
	KindHandoff: yamlKeys[HandoffConfig](),
}

func yamlKeys[T any]() []string {
	t := reflect.TypeFor[T]()
	var keys []string
	for i := range t.NumField() {
		k, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		if k != "" && k != "-" {
			keys = append(keys, k)
		}
	}
	return keys
}

// UnmarshalYAML decodes one flat `sinks:` entry: `type` selects the kind,
// every other key must be one of that kind's. A key of another kind, or of
// none, is an error naming it and the keys that do apply.
func (s *SinkConfig) UnmarshalYAML(b []byte) error {
	var entry map[string]any
	if err := yaml.Unmarshal(b, &entry); err != nil {
		return fmt.Errorf("%w: sink: %s", ErrInvalidConfig, yaml.FormatError(err, false, false))
	}
	kind := ""
	if t, ok := entry["type"]; ok {
		kind = fmt.Sprint(t)
	}
	*s = SinkConfig{}
	var into any
	switch kind {
	case KindWebhook:
		s.Webhook = new(WebhookConfig)
		into = s.Webhook
	case KindJSONL:
		s.JSONL = new(JSONLConfig)
		into = s.JSONL
	case KindHandoff:
		s.Handoff = new(HandoffConfig)
		into = s.Handoff
	case "":
		return fmt.Errorf("%w: sink type is required (%s, %s or %s)", ErrInvalidConfig, KindWebhook, KindJSONL, KindHandoff)
	default:
		return fmt.Errorf("%w: unknown sink type %q (want %s, %s or %s)", ErrInvalidConfig, kind, KindWebhook, KindJSONL, KindHandoff)
	}
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(entry)) {
		if k == "type" || slices.Contains(sinkKeys[kind], k) {
			continue
		}
		owner := ""
		for _, other := range []string{KindWebhook, KindJSONL, KindHandoff} {
			if slices.Contains(sinkKeys[other], k) {
				owner = other
				break
			}
		}
		if owner != "" {
			errs = append(errs, fmt.Errorf("%w: %s sink: option %s does not apply to this sink type (it is a %s option; a %s sink takes %s)",
				ErrInvalidConfig, kind, k, owner, kind, strings.Join(sinkKeys[kind], ", ")))
		} else {
			errs = append(errs, fmt.Errorf("%w: %s sink: unknown option %s (a %s sink takes %s)",
				ErrInvalidConfig, kind, k, kind, strings.Join(sinkKeys[kind], ", ")))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	// Every key was checked above; `type` is not a field of the kind's
	// configuration, so this decode is not strict.
	if err := yaml.Unmarshal(b, into); err != nil {
		return fmt.Errorf("%w: %s sink: %s", ErrInvalidConfig, kind, yaml.FormatError(err, false, false))
	}
	return nil
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
	for i, s := range c.Sinks {
		if n := s.kinds(); n != 1 {
			errs = append(errs, fmt.Errorf("%w: sinks[%d]: exactly one sink kind (%s, %s or %s) must be set, not %d",
				ErrInvalidConfig, i, KindWebhook, KindJSONL, KindHandoff, n))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
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
		var err error
		switch {
		case s.Webhook != nil:
			w := *s.Webhook
			w.withDefaults()
			if err = w.validate(); err == nil {
				err = w.validateSecretSource()
			}
		case s.JSONL != nil:
			if err = s.JSONL.validate(); err == nil {
				p := filepath.Clean(s.JSONL.Path)
				if j, dup := paths[p]; dup {
					err = fmt.Errorf("%w: jsonl path %q already used by sinks[%d]", ErrInvalidConfig, s.JSONL.Path, j)
				}
				paths[p] = i
			}
		case s.Handoff != nil:
			if err = s.Handoff.validate(); err == nil {
				if handoffs++; handoffs > 1 {
					err = fmt.Errorf("%w: only one handoff sink is allowed", ErrInvalidConfig)
				}
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("sinks[%d]: %w", i, err))
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

// BuildSinks validates cfg and builds its sinks in order, each under its
// instance name (SinkNames); webhook secrets are read here. On error, the
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
		m = NewMetrics(deps.Registerer)
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
		log := deps.Logger.With(slog.String("sink", names[i]), slog.String("kind", sc.Kind()))
		var (
			s   Sink
			err error
		)
		switch {
		case sc.Webhook != nil:
			wc := *sc.Webhook
			wc.Name = names[i]
			if wc.Secret, err = wc.secret(deps.Getenv); err == nil {
				if wc.HTTPClient == nil {
					wc.HTTPClient = deps.HTTPClient
				}
				if wc.Now == nil {
					wc.Now = deps.Now
				}
				s, err = NewWebhook(wc, m, log)
			}
		case sc.JSONL != nil:
			jc := *sc.JSONL
			jc.Name = names[i]
			s, err = NewJSONL(jc, m, log)
		case sc.Handoff != nil:
			hc := *sc.Handoff
			hc.Name = names[i]
			if hc.Publisher == nil {
				hc.Publisher = deps.Publisher
			}
			if hc.Transcript == nil {
				hc.Transcript = deps.Transcript
			}
			if hc.OnTimeout == nil {
				hc.OnTimeout = deps.OnTimeout
			}
			if hc.Now == nil {
				hc.Now = deps.Now
			}
			s, err = NewHandoff(deps.JetStream, hc, m, log)
		}
		if err != nil {
			return fail(fmt.Errorf("sinks[%d] (%s): %w", i, names[i], err))
		}
		out = append(out, s)
	}
	return out, nil
}

// SinkNames are the instance names of the configured sinks, in order: a
// sink's name, else its kind for the first of that kind and <kind>-<n>
// for the n-th.
func (c SinksConfig) SinkNames() []string {
	names := make([]string, len(c.Sinks))
	count := map[string]int{}
	for i, s := range c.Sinks {
		kind := s.Kind()
		count[kind]++
		switch {
		case s.name() != "":
			names[i] = s.name()
		case count[kind] == 1:
			names[i] = kind
		default:
			names[i] = fmt.Sprintf("%s-%d", kind, count[kind])
		}
	}
	return names
}
