package natsserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
)

type provisioner struct {
	log *slog.Logger
}

// Provision creates or updates every rein stream and the conversations KV
// bucket. It is idempotent and safe to run from many processes at once on
// a fresh cluster: a request that times out or meets a cluster still
// electing leaders or placing replicas is retried with backoff until ctx
// ends. It never lowers the replicas of an existing stream, nor drops its
// placement: a process started with fewer replicas than the stream has
// keeps the stream's and logs it (lower them by hand: nats stream edit).
// Asking a single server for more than one replica fails with
// ErrReplicasUnavailable.
//
// log, when not nil, hears what was kept and what was retried.
func Provision(ctx context.Context, js jetstream.JetStream, p ProvisionConfig, log *slog.Logger) error {
	if err := p.Validate(); err != nil {
		return err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	pv := &provisioner{log: log}
	for _, name := range StreamNames {
		if err := pv.stream(ctx, js, p.StreamConfig(name)); err != nil {
			return fmt.Errorf("provision stream %s: %w", name, err)
		}
	}
	if _, err := pv.kv(ctx, js, p.kvConfig()); err != nil {
		return fmt.Errorf("provision KV %s: %w", bus.BucketConversations, err)
	}
	if p.Partitions > 1 {
		if _, err := pv.kv(ctx, js, p.membersConfig()); err != nil {
			return fmt.Errorf("provision KV %s: %w", bus.BucketMembers, err)
		}
	}
	return pv.retire(ctx, js)
}

// retiredDurables are durables no rein stage consumes with any more, by
// stream. The injector's went when the detector began storing each
// detection's task itself: left in place, it would pile up every
// detection as pending for ever.
var retiredDurables = map[string]string{bus.StreamDetections: bus.DurableInjector}

// retire deletes the retired durables, and their partitions'
// (<durable>-p<k>), where they exist.
func (pv *provisioner) retire(ctx context.Context, js jetstream.JetStream) error {
	for stream, durable := range retiredDurables {
		s, err := js.Stream(ctx, stream)
		if err != nil {
			return fmt.Errorf("provision: stream %s: %w", stream, err)
		}
		names := s.ConsumerNames(ctx)
		var retired []string
		for name := range names.Name() {
			if name == durable || strings.HasPrefix(name, durable+"-p") {
				retired = append(retired, name)
			}
		}
		if err := names.Err(); err != nil {
			return fmt.Errorf("provision: consumers of %s: %w", stream, err)
		}
		for _, name := range retired {
			if err := s.DeleteConsumer(ctx, name); err != nil && !streams.IsNotFound(err) {
				return fmt.Errorf("provision: delete the retired durable %s on %s: %w", name, stream, err)
			}
			pv.log.Info("deleted a retired durable consumer", "stream", stream, "durable", name)
		}
	}
	return nil
}

// stream creates want, or brings the existing stream to it without
// lowering its replicas or dropping its placement.
func (pv *provisioner) stream(ctx context.Context, js jetstream.JetStream, want jetstream.StreamConfig) error {
	return streams.Retry(ctx, pv.log, want.Name, func(ctx context.Context) error {
		s, err := js.Stream(ctx, want.Name)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			_, err = js.CreateStream(ctx, want)
			return err
		}
		if err != nil {
			return err
		}
		cur := s.CachedInfo().Config
		upd := cur
		upd.Subjects, upd.Retention, upd.Storage = want.Subjects, want.Retention, want.Storage
		upd.MaxAge, upd.MaxBytes, upd.Duplicates = want.MaxAge, want.MaxBytes, want.Duplicates
		upd.Discard, upd.AllowDirect = want.Discard, want.AllowDirect
		upd.MaxMsgSize = want.MaxMsgSize
		upd.Replicas, upd.Placement = pv.keep(want.Name, want.Replicas, cur.Replicas, want.Placement, cur.Placement)
		if upd.SubjectTransform, err = pv.partitions(s, want); err != nil {
			return err
		}
		if upd.SubjectTransform != nil { // kept: the published form only, as StreamConfig says
			upd.Subjects = []string{upd.SubjectTransform.Source}
		}
		if reflect.DeepEqual(upd, cur) {
			return nil
		}
		_, err = js.UpdateStream(ctx, upd)
		return err
	})
}

// kv creates or updates the bucket under the stream rules.
func (pv *provisioner) kv(ctx context.Context, js jetstream.JetStream, want jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	var kv jetstream.KeyValue
	err := streams.Retry(ctx, pv.log, "KV_"+want.Bucket, func(ctx context.Context) error {
		cfg := want
		s, err := js.Stream(ctx, "KV_"+want.Bucket)
		switch {
		case err == nil:
			cur := s.CachedInfo().Config
			cfg.Replicas, cfg.Placement = pv.keep(cur.Name, want.Replicas, cur.Replicas, want.Placement, cur.Placement)
		case !errors.Is(err, jetstream.ErrStreamNotFound):
			return err
		}
		kv, err = js.CreateOrUpdateKeyValue(ctx, cfg)
		return err
	})
	return kv, err
}

// partitions decides an existing stream's partition transform: the
// configured one on an empty stream; on a stream holding messages, the one
// it has (a process started without streams.partitions keeps them, as it
// keeps replicas), and a different count is an error: the conversations
// would move between partitions with earlier turns in flight.
func (pv *provisioner) partitions(s jetstream.Stream, want jetstream.StreamConfig) (*jetstream.SubjectTransformConfig, error) {
	info := s.CachedInfo()
	cur := info.Config
	have, asked := streams.StreamPartitions(cur), streams.StreamPartitions(want)
	switch {
	case have == asked, info.State.Msgs == 0:
		return want.SubjectTransform, nil
	case asked == 1:
		pv.log.Warn("stream keeps its partitions: rein never changes them on a stream holding messages",
			"stream", want.Name, "partitions", have)
		return cur.SubjectTransform, nil
	}
	return nil, fmt.Errorf("%w: stream %s holds %d messages in %d partitions; streams.partitions %d would move conversations between partitions (partitions are set on empty streams: drain, then delete the streams or start a new deployment)",
		streams.ErrInvalidConfig, want.Name, info.State.Msgs, have, asked)
}

// keep decides a stream's replicas and placement: never fewer replicas
// than it has, never its placement dropped for none.
func (pv *provisioner) keep(name string, want, cur int, wantP, curP *jetstream.Placement) (int, *jetstream.Placement) {
	r := want
	if cur > want {
		r = cur
		pv.log.Warn("stream keeps its replicas: rein never lowers them (lower them by hand: nats stream edit --replicas)",
			"stream", name, "replicas", cur, "configured", want)
	}
	if wantP == nil {
		wantP = curP
	}
	return r, wantP
}

// CheckProvisioned tells whether every rein stream exists, for a process
// that may not create them (its identity is not admin): an error names the
// first one missing and what to run. (The conversations bucket is the
// agent worker's to open: its identity may look it up, the reader's not.)
func CheckProvisioned(ctx context.Context, js jetstream.JetStream) error {
	for _, name := range StreamNames {
		if _, err := streams.LookupStream(ctx, js, name, 30*time.Second); err != nil {
			if errors.Is(err, jetstream.ErrStreamNotFound) {
				return fmt.Errorf("%w (run rein provision with the admin identity first: this process's identity may not create streams)", err)
			}
			return err
		}
	}
	return nil
}
