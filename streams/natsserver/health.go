package natsserver

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/reinception/rein/streams"
)

// Peer is one replica of a stream other than its leader.
type Peer struct {
	Name    string `json:"name"`
	Current bool   `json:"current"`
	Offline bool   `json:"offline"`
	Lag     uint64 `json:"lag"` // operations behind the leader
}

// StreamStatus is a stream's replication state as its leader reports it.
type StreamStatus struct {
	Name     string `json:"name"`
	Replicas int    `json:"replicas"`
	Leader   string `json:"leader"`
	Peers    []Peer `json:"peers"`
	Info     *jetstream.StreamInfo
}

// Status asks JetStream for a stream's info and replication state. A
// stream without a leader is streams.ErrNoLeader (with the status so far); a
// cluster that does not answer within ctx's deadline, for example one
// without a meta leader, is ctx's error.
func Status(ctx context.Context, js jetstream.JetStream, name string) (StreamStatus, error) {
	st := StreamStatus{Name: name, Peers: []Peer{}}
	s, err := js.Stream(ctx, name)
	if err != nil {
		return st, fmt.Errorf("stream %s: %w", name, err)
	}
	info := s.CachedInfo()
	st.Info, st.Replicas = info, info.Config.Replicas
	if info.Cluster != nil {
		st.Leader = info.Cluster.Leader
		for _, r := range info.Cluster.Replicas {
			st.Peers = append(st.Peers, Peer{Name: r.Name, Current: r.Current, Offline: r.Offline, Lag: r.Lag})
		}
	}
	if st.Leader == "" {
		return st, fmt.Errorf("%w: %s", streams.ErrNoLeader, name)
	}
	return st, nil
}

// CheckWritable is a readiness probe: nil when every named stream answers
// within timeout and has a leader, else an error naming the first that
// does not.
func CheckWritable(ctx context.Context, js jetstream.JetStream, timeout time.Duration, names ...string) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for _, name := range names {
		if _, err := Status(ctx, js, name); err != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				return fmt.Errorf("%w: %s: JetStream did not answer within %s", streams.ErrNoLeader, name, timeout)
			}
			return err
		}
	}
	return nil
}
