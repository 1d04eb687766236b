package streams

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/synadia-io/orbit.go/jetstreamext"
)

// The live replicas of a partitioned stage find each other in the members
// bucket (BucketMembers): each puts its key, <stage>.<id>, every
// memberBeat, and the bucket forgets a key memberTTL after its last put,
// so a crashed replica drops out by itself and a stopping one deletes its
// key. Every replica reads the stage's live keys every memberBeat and
// works the partitions assigned() gives it. A replica whose key lapsed
// (paused past the TTL) and came back works its partitions again; while
// two replicas pull one partition, the durable's pin still hands its
// messages to one of them.

// memberBeat is how often a replica renews its key and rereads the
// others'; memberTTL is how long a key outlives its last renewal.
const (
	memberBeat = time.Second
	memberTTL  = 6 * time.Second
)

// memberInfo is a member key's value: who the replica is, for operators.
type memberInfo struct {
	Host    string    `json:"host"`
	PID     int       `json:"pid"`
	Started time.Time `json:"started"`
}

// members is one replica's membership in its stage.
type members struct {
	js        jetstream.JetStream
	kv        jetstream.KeyValue
	stage, id string
	value     []byte
}

// joinMembers opens the members bucket and puts this replica's key.
func joinMembers(ctx context.Context, js jetstream.JetStream, stage string) (*members, error) {
	kv, err := js.KeyValue(ctx, BucketMembers)
	if err != nil {
		return nil, fmt.Errorf("members bucket %s (provisioned with streams.partitions > 1): %w", BucketMembers, err)
	}
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("member id: %w", err)
	}
	host, _ := os.Hostname()
	v, _ := json.Marshal(memberInfo{Host: host, PID: os.Getpid(), Started: time.Now().UTC()})
	m := &members{js: js, kv: kv, stage: stage, id: hex.EncodeToString(b[:]), value: v}
	return m, m.beat(ctx)
}

func (m *members) key() string { return MemberKey(m.stage, m.id) }

// beat renews this replica's key.
func (m *members) beat(ctx context.Context) error {
	if _, err := m.kv.Put(ctx, m.key(), m.value); err != nil {
		return fmt.Errorf("renew member key %s: %w", m.key(), err)
	}
	return nil
}

// leave deletes this replica's key, so the others take its partitions
// without waiting for it to lapse.
func (m *members) leave(ctx context.Context) error {
	if err := m.kv.Delete(ctx, m.key()); err != nil {
		return fmt.Errorf("delete member key %s: %w", m.key(), err)
	}
	return nil
}

// live lists the ids of the stage's replicas whose keys are renewed
// within memberTTL, sorted (one batched direct get).
func (m *members) live(ctx context.Context) ([]string, error) {
	return LiveMembers(ctx, m.js, m.stage)
}

// LiveMembers lists the ids of a stage's live replicas, sorted: those
// whose member key the bucket still holds (it drops a key memberTTL after
// its last renewal, by the server's clock).
func LiveMembers(ctx context.Context, js jetstream.JetStream, stage string) ([]string, error) {
	prefix := "$KV." + BucketMembers + "." + stage + "."
	msgs, err := jetstreamext.GetLastMsgsFor(ctx, js, StreamMembers, []string{prefix + "*"})
	if err != nil {
		if errors.Is(err, jetstreamext.ErrNoMessages) {
			return nil, nil
		}
		return nil, fmt.Errorf("members of %s: %w", stage, err)
	}
	var ids []string
	for msg, err := range msgs {
		if errors.Is(err, jetstreamext.ErrNoMessages) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("members of %s: %w", stage, err)
		}
		if op := msg.Header.Get("KV-Operation"); op != "" {
			continue // left (a lapsed key the server has removed)
		}
		ids = append(ids, strings.TrimPrefix(msg.Subject, prefix))
	}
	slices.Sort(ids)
	return ids, nil
}
