package main

import (
	"fmt"

	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/natsserver"
)

// replicationConfig applies --stream-replicas, --kv-replicas and
// --placement-tags (flag > REIN_* > rein.yaml, as applySources set them)
// over the streams section, and refuses what the embedded server cannot
// hold: it is one server, so more than one replica would fail later or,
// worse, be quietly dropped.
func replicationConfig(f *serverFlags, p *natsserver.ProvisionConfig) error {
	if f.streamReplicas < 0 || f.kvReplicas < 0 {
		return fmt.Errorf("%w: --stream-replicas and --kv-replicas must be 1..5", streams.ErrInvalidConfig)
	}
	if f.partitions < 0 {
		return fmt.Errorf("%w: --partitions must be 1..%d", streams.ErrInvalidConfig, streams.MaxPartitions)
	}
	p.Override(f.streamReplicas, f.kvReplicas, f.placementTags)
	p.OverridePartitions(f.partitions)
	if err := p.Validate(); err != nil {
		return err
	}
	if f.nats.url == "" {
		if n := p.MaxReplicas(); n > 1 {
			return fmt.Errorf("%w: %d replicas asked, but the embedded NATS server is a single server: set --stream-replicas 1 (and --kv-replicas 1, or remove replicas from rein.yaml's streams section), or run against a JetStream cluster of at least %d servers with --nats-url", streams.ErrReplicasUnavailable, n, n)
		}
		if len(f.placementTags) > 0 {
			return fmt.Errorf("%w: --placement-tags needs a JetStream cluster (--nats-url); the embedded server has no tags", streams.ErrInvalidConfig)
		}
	}
	return nil
}
