package streams

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// IsNotFound reports whether err says a stream, consumer or key is missing.
func IsNotFound(err error) bool {
	return errors.Is(err, jetstream.ErrStreamNotFound) || errors.Is(err, jetstream.ErrConsumerNotFound) ||
		errors.Is(err, jetstream.ErrKeyNotFound)
}

// JetStream API error codes provisioning reacts to (nats-server's
// jetstream_errors_generated.go).
const (
	codeNoSuitablePeers       = 10005 // no suitable peers for placement
	codeClusterNotAvailable   = 10008 // JetStream system temporarily unavailable
	codeClusterNotLeader      = 10009 // cluster can not handle request
	codeInsufficientResources = 10023 // insufficient resources
	codeNameInUse             = 10058 // stream name already in use with a different configuration
	codeReplicasNotSupported  = 10074 // replicas > 1 not supported in non-clustered mode
	codeNotEnabled            = 10076 // JetStream not enabled
)

// attemptTimeout bounds one provisioning request: a cluster without a
// meta leader does not answer at all.
const attemptTimeout = 5 * time.Second

func apiCode(err error) jetstream.ErrorCode {
	var api *jetstream.APIError
	if errors.As(err, &api) {
		return api.ErrorCode
	}
	return 0
}

// provisionTransient tells whether a provisioning error can pass: a cluster still
// starting, electing a leader or placing replicas, or another process
// creating the same stream at the same moment.
func provisionTransient(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrJetStreamNotEnabled) ||
		errors.Is(err, nats.ErrConnectionReconnecting) {
		return true
	}
	switch apiCode(err) {
	case codeNoSuitablePeers, codeClusterNotAvailable, codeClusterNotLeader, codeInsufficientResources,
		codeNameInUse, codeNotEnabled:
		return true
	}
	return false
}

// consumerCreateTimeout bounds creating a stage's durable consumer at
// start, retried as provisioning is.
const consumerCreateTimeout = 90 * time.Second

// EnsureConsumer creates or updates a durable consumer, retrying what a
// cluster that is starting, electing leaders or placing replicas answers,
// for up to 90 s, as Provision does for streams.
func EnsureConsumer(ctx context.Context, js jetstream.JetStream, stream string, cfg jetstream.ConsumerConfig, log *slog.Logger) (jetstream.Consumer, error) {
	ctx, cancel := context.WithTimeout(ctx, consumerCreateTimeout)
	defer cancel()
	var cons jetstream.Consumer
	err := Retry(ctx, log, stream, func(ctx context.Context) error {
		var err error
		cons, err = js.CreateOrUpdateConsumer(ctx, stream, cfg)
		return err
	})
	return cons, err
}

// LookupStream returns the named stream, retrying for up to within what a
// cluster electing a leader answers (a timeout, no responders, no leader),
// as a client of a cluster must; a stream that does not exist is an error
// at once.
func LookupStream(ctx context.Context, js jetstream.JetStream, name string, within time.Duration) (jetstream.Stream, error) {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	var s jetstream.Stream
	err := Retry(ctx, slog.New(slog.DiscardHandler), name, func(ctx context.Context) error {
		var err error
		s, err = js.Stream(ctx, name)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("stream %s: %w", name, err)
	}
	return s, nil
}

// Retry runs op with a per-attempt deadline until it succeeds, fails for
// good, or ctx ends, backing off between attempts: what a client of a cluster that is
// starting, electing leaders or placing replicas must do. log says what
// was retried.
func Retry(ctx context.Context, log *slog.Logger, what string, op func(context.Context) error) error {
	wait := 100 * time.Millisecond
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, attemptTimeout)
		err := op(actx)
		cancel()
		if err == nil {
			return nil
		}
		if code := apiCode(err); code == codeReplicasNotSupported {
			return fmt.Errorf("%w: %w (the server is not part of a JetStream cluster: set --stream-replicas 1 and --kv-replicas 1, or connect to a cluster of at least as many servers with --nats-url)", ErrReplicasUnavailable, err)
		}
		if !provisionTransient(err) {
			return err
		}
		if ctx.Err() != nil {
			if apiCode(err) == codeNoSuitablePeers || apiCode(err) == codeInsufficientResources {
				return fmt.Errorf("%w: %w (does the cluster have as many JetStream servers as replicas, with the placement tags, and room for the stream?)", ErrReplicasUnavailable, err)
			}
			return fmt.Errorf("gave up after %d attempts: %w", attempt, err)
		}
		log.Info("provisioning retried", "stream", what, "attempt", attempt, "err", err)
		// Jitter keeps processes that started together apart.
		if Sleep(ctx, wait/2+rand.N(wait/2+1)) != nil {
			return fmt.Errorf("gave up after %d attempts: %w", attempt, err)
		}
		wait = min(2*wait, 2*time.Second)
	}
}
