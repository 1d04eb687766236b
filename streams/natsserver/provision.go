package natsserver

import (
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
)

// StreamSettings are the operator-tunable settings of one stream.
type StreamSettings struct {
	Replicas  int           `yaml:"replicas"`
	Memory    bool          `yaml:"memory"`     // memory storage instead of file
	MaxAge    time.Duration `yaml:"max_age"`    // 0 in defaults = keep forever; per stream, 0 = as the defaults
	MaxBytes  int64         `yaml:"max_bytes"`  // 0 = no size bound (see DefaultMaxAge)
	Duplicate time.Duration `yaml:"duplicates"` // Nats-Msg-Id dedupe window
	// KeepForever lifts the age bound (an audit stream kept whole); it
	// is the only way to say so per stream, where max_age 0 means "as
	// the defaults".
	KeepForever bool `yaml:"keep_forever"`
	// Durable is the audit profile: the server syncs every write to disk
	// (set sync_interval: always on the server; see doc.go) and, on a
	// cluster, three replicas.
	Durable bool `yaml:"durable"`
	// Placement puts the stream's replicas on servers of one cluster
	// and/or with all of the given server tags (nats-server server_tags).
	Placement Placement `yaml:"placement"`
}

// Placement selects the servers that hold a stream's replicas.
type Placement struct {
	Cluster string   `yaml:"cluster"`
	Tags    []string `yaml:"tags"`
}

func (p Placement) empty() bool { return p.Cluster == "" && len(p.Tags) == 0 }

// js is the JetStream form of the placement (nil when empty).
func (p Placement) js() *jetstream.Placement {
	if p.empty() {
		return nil
	}
	return &jetstream.Placement{Cluster: p.Cluster, Tags: append([]string(nil), p.Tags...)}
}

// ProvisionConfig holds defaults and per-stream overrides.
type ProvisionConfig struct {
	Defaults StreamSettings            `yaml:"defaults"`
	Streams  map[string]StreamSettings `yaml:"streams"`
	// KVTTL expires idle conversation state (default 24h).
	KVTTL time.Duration `yaml:"kv_ttl"`
	// KVReplicas is the conversations bucket's replicas; 0 takes
	// streams.REIN_CONVERSATIONS.replicas, else the defaults'.
	KVReplicas int `yaml:"kv_replicas"`
	// Partitions splits the streams every turn passes through
	// (PartitionedStreams) into this many partitions by conversation, so
	// that as many replicas of the detector, injector and agent worker can
	// work at once (partition.go). 0 or 1: one partition, one active
	// replica per stage. Fixed when the streams are created.
	Partitions int `yaml:"partitions"`
}

// MaxReplicas is the largest replica count any stream or the bucket asks
// for: more than 1 needs a JetStream cluster of at least that many servers.
func (p ProvisionConfig) MaxReplicas() int {
	n := p.settings(bus.BucketConversations).Replicas
	if p.KVReplicas > n {
		n = p.KVReplicas
	}
	for _, name := range StreamNames {
		n = max(n, p.settings(name).Replicas)
	}
	return n
}

// Override applies what flags and the environment say over the file:
// replicas > 0 sets every stream's replicas (per-stream values included),
// kvReplicas > 0 the bucket's, and tags, when given, every stream's and
// the bucket's placement tags.
func (p *ProvisionConfig) Override(replicas, kvReplicas int, tags []string) {
	if replicas > 0 {
		p.Defaults.Replicas = replicas
		for name, s := range p.Streams {
			s.Replicas = 0
			p.Streams[name] = s
		}
	}
	if kvReplicas > 0 {
		p.KVReplicas = kvReplicas
	}
	if len(tags) > 0 {
		p.Defaults.Placement.Tags = append([]string(nil), tags...)
		for name, s := range p.Streams {
			s.Placement.Tags = nil
			p.Streams[name] = s
		}
	}
}

// OverridePartitions applies --partitions over the file when n > 0.
func (p *ProvisionConfig) OverridePartitions(n int) {
	if n > 0 {
		p.Partitions = n
	}
}

// DefaultMaxAge bounds every stream by default: nothing is kept forever
// unless asked (keep_forever, or max_age 0 in the defaults). An age, not a
// size: JetStream reserves a stream's max_bytes against the server's whole
// store when the stream is created, so a size that fits one disk refuses
// to start on a smaller one; an age bounds the store under a bounded
// rate, and max_bytes stays for operators who know their disk.
const DefaultMaxAge = 30 * 24 * time.Hour

// DefaultProvision is the zero-setup configuration of rein serve.
func DefaultProvision() ProvisionConfig {
	return ProvisionConfig{
		Defaults: StreamSettings{Replicas: 1, Duplicate: 2 * time.Minute, MaxAge: DefaultMaxAge},
		KVTTL:    24 * time.Hour,
	}
}

// Validate checks the provisioning settings.
func (p ProvisionConfig) Validate() error {
	check := func(name string, s StreamSettings) error {
		if s.Replicas < 0 || s.Replicas > 5 {
			return fmt.Errorf("%w: streams.%s.replicas %d must be 1..5", streams.ErrInvalidConfig, name, s.Replicas)
		}
		if s.MaxAge < 0 || s.MaxBytes < 0 || s.Duplicate < 0 {
			return fmt.Errorf("%w: streams.%s: negative limits", streams.ErrInvalidConfig, name)
		}
		for _, tag := range s.Placement.Tags {
			if strings.TrimSpace(tag) == "" {
				return fmt.Errorf("%w: streams.%s.placement.tags: an empty tag", streams.ErrInvalidConfig, name)
			}
		}
		return nil
	}
	if p.Partitions < 0 || p.Partitions > streams.MaxPartitions {
		return fmt.Errorf("%w: streams.partitions %d must be 1..%d", streams.ErrInvalidConfig, p.Partitions, streams.MaxPartitions)
	}
	if p.KVReplicas < 0 || p.KVReplicas > 5 {
		return fmt.Errorf("%w: streams.kv_replicas %d must be 1..5", streams.ErrInvalidConfig, p.KVReplicas)
	}
	if err := check("defaults", p.Defaults); err != nil {
		return err
	}
	for name, s := range p.Streams {
		if _, ok := streamSubjects[name]; !ok && name != bus.BucketConversations && name != bus.BucketMembers {
			return fmt.Errorf("%w: streams.%s: no such rein stream", streams.ErrInvalidConfig, name)
		}
		if err := check(name, s); err != nil {
			return err
		}
	}
	return nil
}

// streamSubjects declares, once, what each stream stores.
var streamSubjects = map[string][]string{
	bus.StreamTurns:      {bus.TurnsAll},
	bus.StreamDetections: {bus.DetectionsAll},
	bus.StreamTasks:      {bus.TasksAll},
	bus.StreamSteps:      {bus.StepsAll},
	bus.StreamOutcomes:   {bus.EscalationsAll, bus.ReportsAll, bus.UnansweredAll, bus.ReleasesAll},
	bus.StreamDLQ:        {bus.DLQAll},
	bus.StreamHandoff:    {bus.HandoffItems, bus.HandoffTimeout},
	bus.StreamFeedback:   {bus.FeedbackAll},
	bus.StreamLabels:     {bus.LabelsAll},
}

// StreamNames lists rein's streams in pipeline order.
var StreamNames = []string{bus.StreamTurns, bus.StreamDetections, bus.StreamTasks, bus.StreamSteps, bus.StreamOutcomes, bus.StreamDLQ, bus.StreamHandoff, bus.StreamFeedback, bus.StreamLabels}

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
		s.KeepForever = s.KeepForever || o.KeepForever
		if o.Placement.Cluster != "" {
			s.Placement.Cluster = o.Placement.Cluster
		}
		if len(o.Placement.Tags) > 0 {
			s.Placement.Tags = o.Placement.Tags
		}
	}
	if s.Replicas == 0 {
		s.Replicas = 1
	}
	if s.KeepForever {
		s.MaxAge = 0
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
		// Every message bounded: an event, or a dead letter of one.
		MaxMsgSize: streams.MaxMessageBytes,
		Placement:  s.Placement.js(),
		// The partition token (partition.go), when partitions > 1.
		SubjectTransform: streams.SubjectTransform(name, p.Partitions),
	}
	if s.MaxBytes == 0 {
		cfg.MaxBytes = -1
	}
	if cfg.SubjectTransform != nil {
		// Partitioned: the stream takes the published form only, so that
		// no client stores a message under a partition token of its own
		// choosing (one conversation in two partitions has two holders).
		cfg.Subjects = []string{cfg.SubjectTransform.Source}
	}
	if s.Memory {
		cfg.Storage = jetstream.MemoryStorage
	}
	if name == bus.StreamLabels {
		labelRetention(&cfg, p.Defaults, p.Streams[name])
	}
	if name == bus.StreamHandoff {
		cfg.Retention = jetstream.WorkQueuePolicy
		// A late redelivered escalation must not become a second work item.
		cfg.Duplicates = max(cfg.Duplicates, time.Hour)
	}
	return cfg
}

// DefaultLabelMaxAge is REIN_LABELS' age bound unless its own settings
// say otherwise: labels are hours of operators' work and what detection
// quality is measured on, so the traffic's bound (DefaultMaxAge) is too
// short for them; still a bound, as every stream has one by default.
const DefaultLabelMaxAge = 2 * 365 * 24 * time.Hour

// labelRetention applies REIN_LABELS' own retention: its own max_age or
// keep_forever, else at least DefaultLabelMaxAge (for ever when the
// defaults keep everything); a size only when it sets one itself. A late
// retried label is still one message.
func labelRetention(cfg *jetstream.StreamConfig, defaults, own StreamSettings) {
	switch {
	case own.KeepForever || defaults.KeepForever || defaults.MaxAge == 0 && own.MaxAge == 0:
		cfg.MaxAge = 0
	case own.MaxAge != 0:
		cfg.MaxAge = own.MaxAge
	default:
		cfg.MaxAge = max(defaults.MaxAge, DefaultLabelMaxAge)
	}
	cfg.MaxBytes = own.MaxBytes
	if cfg.MaxBytes == 0 {
		cfg.MaxBytes = -1
	}
	cfg.Duplicates = max(cfg.Duplicates, time.Hour)
	if cfg.MaxAge > 0 {
		cfg.Duplicates = min(cfg.Duplicates, cfg.MaxAge)
	}
}

// ConversationHistory is how many values the conversations bucket keeps
// per key (the KV maximum): the agent worker appends a conversation's state
// records under one key, one subject per conversation in the server's
// index, and writes a snapshot often enough that the newest one and every
// record after it are always kept.
const ConversationHistory = 64

// kvConfig is the conversations bucket's configuration.
func (p ProvisionConfig) kvConfig() jetstream.KeyValueConfig {
	s := p.settings(bus.BucketConversations)
	if p.KVReplicas > 0 {
		s.Replicas = p.KVReplicas
	}
	ttl := p.KVTTL
	if ttl == 0 {
		ttl = 24 * time.Hour
	}
	return jetstream.KeyValueConfig{
		Bucket:    bus.BucketConversations,
		History:   ConversationHistory,
		TTL:       ttl,
		Replicas:  s.Replicas,
		Storage:   jetstream.FileStorage,
		Placement: s.Placement.js(),
	}
}

// membersConfig is the members bucket's configuration: a key lives
// memberTTL after its last renewal; membership is rebuilt from live
// replicas, so memory storage is enough.
func (p ProvisionConfig) membersConfig() jetstream.KeyValueConfig {
	s := p.settings(bus.BucketMembers)
	if p.KVReplicas > 0 {
		s.Replicas = p.KVReplicas
	}
	return jetstream.KeyValueConfig{
		Bucket:    bus.BucketMembers,
		History:   1,
		TTL:       streams.MemberTTL,
		Replicas:  s.Replicas,
		Storage:   jetstream.MemoryStorage,
		Placement: s.Placement.js(),
	}
}
