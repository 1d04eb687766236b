package pipeline

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/reinception/rein/streams/natsserver"
)

// readinessTimeout bounds one readiness probe's question to JetStream;
// readinessTTL is how long its answer is reused, so that probes arriving
// together ask once.
const (
	readinessTimeout = time.Second
	readinessTTL     = time.Second
)

var errNATSDisconnected = errors.New("not connected to NATS")

// requireStreams makes /readyz answer 503 while NATS is unreachable or one
// of the named streams has no leader (a node or the cluster's majority
// lost): the process could take turns but not store them.
func (rt *Process) requireStreams(names ...string) {
	if rt.HTTP == nil || len(names) == 0 {
		return
	}
	probe := func() error {
		if !rt.NC.IsConnected() {
			return errNATSDisconnected
		}
		return natsserver.CheckWritable(context.Background(), rt.JS, readinessTimeout, names...)
	}
	rt.HTTP.AddRequirement("streams", cached(probe, readinessTTL))
}

// cached answers fn's last result for ttl.
func cached(fn func() error, ttl time.Duration) func() error {
	var (
		mu   sync.Mutex
		at   time.Time
		last error
	)
	return func() error {
		mu.Lock()
		defer mu.Unlock()
		if time.Since(at) < ttl {
			return last
		}
		last, at = fn(), time.Now()
		return last
	}
}
