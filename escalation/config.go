package escalation

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/reinception/rein/streams"
)

// DefaultWorkers is the number of conversations delivered in parallel.
const DefaultWorkers = 16

// Config configures the escalation stage. In rein.yaml, Sinks is the
// `sinks:` section, one entry per sink, its kind in `type`:
//
//	sinks:
//	  - type: webhook
//	    name: contact-center           # optional; default webhook, webhook-2, …
//	    url: https://cc.example.com/rein
//	    mode: structured               # or binary
//	    secret_env: REIN_WEBHOOK_SECRET   # or secret_file: /run/secrets/rein-webhook (≥ 32 bytes)
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
type Config struct {
	Sinks []SinkConfig `yaml:"sinks"`
	// Workers is the number of conversations delivered in parallel
	// (default 16).
	Workers int `yaml:"workers"`
}

// SinkConfig is one named sink: exactly one of its members is set, and
// that member's Name is the sink's name.
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

// Name is the sink's configured name (after Config defaults, never empty).
func (s SinkConfig) Name() string {
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

func (s SinkConfig) setName(n string) {
	switch {
	case s.Webhook != nil:
		s.Webhook.Name = n
	case s.JSONL != nil:
		s.JSONL.Name = n
	case s.Handoff != nil:
		s.Handoff.Name = n
	}
}

// clone copies the member, so defaults never write into the caller's
// configuration.
func (s SinkConfig) clone() SinkConfig {
	if s.Webhook != nil {
		c := *s.Webhook
		s.Webhook = &c
	}
	if s.JSONL != nil {
		c := *s.JSONL
		s.JSONL = &c
	}
	if s.Handoff != nil {
		c := *s.Handoff
		s.Handoff = &c
	}
	return s
}

// members counts the members that are set.
func (s SinkConfig) members() int {
	n := 0
	for _, set := range []bool{s.Webhook != nil, s.JSONL != nil, s.Handoff != nil} {
		if set {
			n++
		}
	}
	return n
}

// UnmarshalYAML decodes one flat `sinks:` entry: `type` selects the kind,
// the other keys are that kind's fields (see WebhookConfig, JSONLConfig,
// HandoffConfig); a key of another kind, or an unknown one, is an error.
func (s *SinkConfig) UnmarshalYAML(b []byte) error {
	var head struct {
		Type string `yaml:"type"`
	}
	if err := yaml.Unmarshal(b, &head); err != nil {
		return fmt.Errorf("%w: sink: %w", ErrInvalidConfig, err)
	}
	*s = SinkConfig{}
	var err error
	switch head.Type {
	case KindWebhook:
		s.Webhook = new(WebhookConfig)
		err = decodeKind(b, s.Webhook)
	case KindJSONL:
		s.JSONL = new(JSONLConfig)
		err = decodeKind(b, s.JSONL)
	case KindHandoff:
		s.Handoff = new(HandoffConfig)
		err = decodeKind(b, s.Handoff)
	case "":
		return fmt.Errorf("%w: sink type is required (%s, %s or %s)", ErrInvalidConfig, KindWebhook, KindJSONL, KindHandoff)
	default:
		return fmt.Errorf("%w: unknown sink type %q (want %s, %s or %s)", ErrInvalidConfig, head.Type, KindWebhook, KindJSONL, KindHandoff)
	}
	if err != nil {
		return fmt.Errorf("%w: %s sink: %s", ErrInvalidConfig, head.Type, yaml.FormatError(err, false, false))
	}
	return nil
}

// decodeKind decodes b strictly into one kind's config, `type` aside.
func decodeKind[T any](b []byte, into *T) error {
	var entry yaml.MapSlice
	if err := yaml.Unmarshal(b, &entry); err != nil {
		return err
	}
	rest := make(yaml.MapSlice, 0, len(entry))
	for _, it := range entry {
		if k, ok := it.Key.(string); ok && k == "type" {
			continue
		}
		rest = append(rest, it)
	}
	rb, err := yaml.Marshal(rest)
	if err != nil {
		return err
	}
	return yaml.UnmarshalWithOptions(rb, into, yaml.Strict())
}

// defaults fills the defaults of the stage and of every sink, names
// included, on copies of the sink configurations. An unnamed sink is named
// after its kind, or <kind>-2, <kind>-3, … when that name is taken, in
// configuration order: the same configuration always yields the same
// names.
func (c *Config) defaults() {
	if c.Workers == 0 {
		c.Workers = DefaultWorkers
	}
	sinks := make([]SinkConfig, len(c.Sinks))
	taken := map[string]bool{}
	for i, s := range c.Sinks {
		sinks[i] = s.clone()
		if n := sinks[i].Name(); n != "" {
			taken[n] = true
		}
	}
	for _, s := range sinks {
		kind := s.Kind()
		if kind == "" || s.Name() != "" {
			continue
		}
		name := kind
		for n := 2; taken[name]; n++ {
			name = kind + "-" + strconv.Itoa(n)
		}
		taken[name] = true
		s.setName(name)
	}
	for _, s := range sinks {
		switch {
		case s.Webhook != nil:
			s.Webhook.defaults()
		case s.JSONL != nil:
			s.JSONL.defaults()
		case s.Handoff != nil:
			s.Handoff.defaults()
		}
	}
	c.Sinks = sinks
}

// validName is what a sink name may be: it is a metric label value and
// appears in logs.
var validName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// Validate applies the defaults to a copy of c and checks it, without
// touching the environment, the file system or the network (a webhook
// secret read from secret_env or secret_file is checked when the stage is
// built). Errors wrap ErrInvalidConfig and name the sink by its position.
func (c Config) Validate() error {
	c.defaults()
	if c.Workers < 0 {
		return fmt.Errorf("%w: workers %d must not be negative", ErrInvalidConfig, c.Workers)
	}
	var errs []error
	names := map[string]int{}
	paths := map[string]int{}
	handoff := -1
	for i, s := range c.Sinks {
		if n := s.members(); n != 1 {
			errs = append(errs, fmt.Errorf("%w: sinks[%d]: exactly one sink kind (%s, %s or %s) must be set, got %d",
				ErrInvalidConfig, i, KindWebhook, KindJSONL, KindHandoff, n))
			continue
		}
		name := s.Name()
		if !validName.MatchString(name) {
			errs = append(errs, fmt.Errorf("%w: sinks[%d]: name %q must be 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit",
				ErrInvalidConfig, i, name))
		} else if j, dup := names[name]; dup {
			errs = append(errs, fmt.Errorf("%w: sinks[%d]: name %q already used by sinks[%d]", ErrInvalidConfig, i, name, j))
		}
		names[name] = i
		var err error
		switch {
		case s.Webhook != nil:
			err = s.Webhook.validate()
		case s.JSONL != nil:
			if err = s.JSONL.validate(); err == nil {
				p := filepath.Clean(s.JSONL.Path)
				if j, dup := paths[p]; dup {
					err = fmt.Errorf("%w: jsonl path %q already used by sinks[%d]", ErrInvalidConfig, s.JSONL.Path, j)
				}
				paths[p] = i
			}
		case s.Handoff != nil:
			if err = s.Handoff.validate(); err == nil && handoff >= 0 {
				err = fmt.Errorf("%w: only one handoff sink is allowed (sinks[%d] is one)", ErrInvalidConfig, handoff)
			}
			handoff = i
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("sinks[%d] (%s): %w", i, name, err))
		}
	}
	return errors.Join(errs...)
}

// ConsumerConfig is the stage's durable consumer on REIN_OUTCOMES:
// escalations and reports, one conversation at a time, Workers
// conversations in parallel; the ack wait covers a webhook's retries
// (in-progress heartbeats keep a long delivery owned).
func (c Config) ConsumerConfig() streams.ConsumerConfig {
	c.defaults()
	return streams.ConsumerConfig{
		Stage: streams.StageEscalation, Stream: streams.StreamOutcomes, Durable: streams.DurableEscalation,
		Filter: []string{streams.EscalationsAll, streams.ReportsAll}, Workers: c.Workers,
		AckWait: 2 * time.Minute,
	}
}
