package streams

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// StreamSettings are the operator-tunable settings of one stream.
type StreamSettings struct {
	Replicas  int           `yaml:"replicas"`
	Memory    bool          `yaml:"memory"`     // memory storage instead of file
	MaxAge    time.Duration `yaml:"max_age"`    // 0 = keep forever
	MaxBytes  int64         `yaml:"max_bytes"`  // 0 = unlimited
	Duplicate time.Duration `yaml:"duplicates"` // Nats-Msg-Id dedupe window
	// Durable is the audit profile: the server syncs every write to disk
	// (set sync_interval: always on the server; see doc.go) and, on a
	// cluster, three replicas.
	Durable bool `yaml:"durable"`
}

// ProvisionConfig holds defaults and per-stream overrides.
type ProvisionConfig struct {
	Defaults StreamSettings            `yaml:"defaults"`
	Streams  map[string]StreamSettings `yaml:"streams"`
	// KVTTL expires idle conversation state (default 24h).
	KVTTL time.Duration `yaml:"kv_ttl"`
}

// DefaultProvision is the zero-setup configuration of rein serve.
func DefaultProvision() ProvisionConfig {
	return ProvisionConfig{
		Defaults: StreamSettings{Replicas: 1, Duplicate: 2 * time.Minute},
		KVTTL:    24 * time.Hour,
	}
}

// Validate checks the provisioning settings.
func (p ProvisionConfig) Validate() error {
	check := func(name string, s StreamSettings) error {
		if s.Replicas < 0 || s.Replicas > 5 {
			return fmt.Errorf("%w: streams.%s.replicas %d must be 1..5", ErrConfig, name, s.Replicas)
		}
		if s.MaxAge < 0 || s.MaxBytes < 0 || s.Duplicate < 0 {
			return fmt.Errorf("%w: streams.%s: negative limits", ErrConfig, name)
		}
		return nil
	}
	if err := check("defaults", p.Defaults); err != nil {
		return err
	}
	for name, s := range p.Streams {
		if _, ok := streamSubjects[name]; !ok && name != BucketConversations {
			return fmt.Errorf("%w: streams.%s: no such rein stream", ErrConfig, name)
		}
		if err := check(name, s); err != nil {
			return err
		}
	}
	return nil
}

// streamSubjects declares, once, what each stream stores.
var streamSubjects = map[string][]string{
	StreamTurns:      {TurnsAll},
	StreamDetections: {DetectionsAll},
	StreamTasks:      {TasksAll},
	StreamSteps:      {StepsAll},
	StreamOutcomes:   {EscalationsAll, ReportsAll, UnansweredAll},
	StreamDLQ:        {DLQAll},
	StreamHandoff:    {HandoffItems, HandoffTimeout},
}

// StreamNames lists rein's streams in pipeline order.
var StreamNames = []string{StreamTurns, StreamDetections, StreamTasks, StreamSteps, StreamOutcomes, StreamDLQ, StreamHandoff}

func (p ProvisionConfig) settings(name string) StreamSettings {
	s := p.Defaults
	if o, ok := p.Streams[name]; ok {
		if o.Replicas != 0 {
			s.Replicas = o.Replicas
		}
		s.Memory = s.Memory || o.Memory
		if o.MaxAge != 0 {
			s.MaxAge = o.MaxAge
		}
		if o.MaxBytes != 0 {
			s.MaxBytes = o.MaxBytes
		}
		if o.Duplicate != 0 {
			s.Duplicate = o.Duplicate
		}
		s.Durable = s.Durable || o.Durable
	}
	if s.Replicas == 0 {
		s.Replicas = 1
	}
	return s
}

// AnyDurable reports whether some stream asks for the durable profile, in
// which case the embedded server must sync every write.
func (p ProvisionConfig) AnyDurable() bool {
	if p.Defaults.Durable {
		return true
	}
	for _, s := range p.Streams {
		if s.Durable {
			return true
		}
	}
	return false
}

// StreamConfig returns the JetStream configuration of a rein stream.
func (p ProvisionConfig) StreamConfig(name string) jetstream.StreamConfig {
	s := p.settings(name)
	cfg := jetstream.StreamConfig{
		Name:        name,
		Subjects:    streamSubjects[name],
		Retention:   jetstream.LimitsPolicy,
		Storage:     jetstream.FileStorage,
		Replicas:    s.Replicas,
		MaxAge:      s.MaxAge,
		MaxBytes:    s.MaxBytes,
		Duplicates:  s.Duplicate,
		Discard:     jetstream.DiscardOld,
		AllowDirect: true,
	}
	if s.MaxBytes == 0 {
		cfg.MaxBytes = -1
	}
	if s.Memory {
		cfg.Storage = jetstream.MemoryStorage
	}
	if name == StreamHandoff {
		cfg.Retention = jetstream.WorkQueuePolicy
		// A late redelivered escalation must not become a second work item.
		cfg.Duplicates = max(cfg.Duplicates, time.Hour)
	}
	return cfg
}

// Provision creates or updates every rein stream and the conversations KV
// bucket. It is idempotent.
func Provision(ctx context.Context, js jetstream.JetStream, p ProvisionConfig) error {
	if err := p.Validate(); err != nil {
		return err
	}
	for _, name := range StreamNames {
		if _, err := js.CreateOrUpdateStream(ctx, p.StreamConfig(name)); err != nil {
			return fmt.Errorf("provision stream %s: %w", name, err)
		}
	}
	if _, err := ConversationsKV(ctx, js, p); err != nil {
		return err
	}
	return nil
}

// ConversationsKV creates or updates and returns the conversations bucket.
func ConversationsKV(ctx context.Context, js jetstream.JetStream, p ProvisionConfig) (jetstream.KeyValue, error) {
	s := p.settings(BucketConversations)
	ttl := p.KVTTL
	if ttl == 0 {
		ttl = 24 * time.Hour
	}
	cfg := jetstream.KeyValueConfig{
		Bucket:   BucketConversations,
		History:  ConversationHistory,
		TTL:      ttl,
		Replicas: s.Replicas,
		Storage:  jetstream.FileStorage,
	}
	kv, err := js.CreateOrUpdateKeyValue(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("provision KV %s: %w", BucketConversations, err)
	}
	return kv, nil
}

// ConversationHistory is how many values the conversations bucket keeps
// per key (the KV maximum): the agent worker appends a conversation's state
// records under one key, one subject per conversation in the server's
// index, and writes a snapshot often enough that the newest one and every
// record after it are always kept.
const ConversationHistory = 64

// IsNotFound reports whether err says a stream, consumer or key is missing.
func IsNotFound(err error) bool {
	return errors.Is(err, jetstream.ErrStreamNotFound) || errors.Is(err, jetstream.ErrConsumerNotFound) ||
		errors.Is(err, jetstream.ErrKeyNotFound)
}
