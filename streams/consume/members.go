package consume

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
	"github.com/synadia-io/orbit.go/jetstreamext"
)

// The live replicas of a partitioned stage find each other in the members
// bucket (BucketMembers): each puts its key, <stage>.<id>, every
// memberBeat, and the bucket forgets a key streams.MemberTTL after its last put,
// so a crashed replica drops out by itself and a stopping one deletes its
// key. Every replica reads the stage's live keys every memberBeat and
// works the partitions assigned() gives it. A replica whose key lapsed
// (paused past the TTL) and came back works its partitions again; while
// two replicas pull one partition, the durable's pin still hands its
// messages to one of them.

// memberBeat is how often a replica renews its key and rereads the
// others' (streams.MemberTTL is how long a key outlives its last renewal).
const memberBeat = time.Second

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
	kv, err := js.KeyValue(ctx, bus.BucketMembers)
	if err != nil {
		return nil, fmt.Errorf("members bucket %s (provisioned with streams.partitions > 1): %w", bus.BucketMembers, err)
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

func (m *members) key() string { return bus.MemberKey(m.stage, m.id) }

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

// live lists the ids of the stage's live replicas, sorted (one batched
// direct get; see liveMembers).
func (m *members) live(ctx context.Context) ([]string, error) {
	ms, err := liveMembers(ctx, m.js, m.stage)
	return memberIDs(ms), err
}

func memberIDs(ms []Member) []string {
	ids := make([]string, len(ms))
	for i, m := range ms {
		ids[i] = m.ID
	}
	return ids
}

// Member is a live replica of a partitioned stage.
type Member struct {
	ID      string    `json:"id"`
	Host    string    `json:"host"`
	PID     int       `json:"pid"`
	Started time.Time `json:"started"`
}

// PartitionOwners tells, for a stage whose input stream has n partitions,
// which live replica works each partition (by the assignment every
// replica computes); a partition is missing while the stage has no live
// replica.
func PartitionOwners(ctx context.Context, js jetstream.JetStream, stage string, n int) (map[int]Member, error) {
	ms, err := liveMembers(ctx, js, stage)
	if err != nil || len(ms) == 0 {
		return nil, err
	}
	ids := memberIDs(ms)
	out := map[int]Member{}
	for _, m := range ms {
		for _, p := range assigned(m.ID, ids, n) {
			out[p] = m
		}
	}
	return out, nil
}

// ParsePartitionDurable splits a partition's durable name into the stage
// it belongs to and its partition (ok false for any other consumer).
func ParsePartitionDurable(name string) (stage string, partition int, ok bool) {
	i := strings.LastIndex(name, "-p")
	if i < 0 {
		return "", 0, false
	}
	stage, ok = streams.PartitionedStage[name[:i]]
	if !ok {
		return "", 0, false
	}
	p, err := strconv.Atoi(name[i+2:])
	if err != nil || p < 0 || streams.PartitionDurable(name[:i], p) != name {
		return "", 0, false
	}
	return stage, p, true
}

// liveMembers lists a stage's live replicas, sorted by id: those whose
// member key the bucket still holds (it drops a key memberTTL after its
// last renewal, by the server's clock).
func liveMembers(ctx context.Context, js jetstream.JetStream, stage string) ([]Member, error) {
	prefix := "$KV." + bus.BucketMembers + "." + stage + "."
	msgs, err := jetstreamext.GetLastMsgsFor(ctx, js, bus.StreamMembers, []string{prefix + "*"})
	if err != nil {
		if errors.Is(err, jetstreamext.ErrNoMessages) {
			return nil, nil
		}
		return nil, fmt.Errorf("members of %s: %w", stage, err)
	}
	var out []Member
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
		m := Member{ID: strings.TrimPrefix(msg.Subject, prefix)}
		var info memberInfo
		if json.Unmarshal(msg.Data, &info) == nil {
			m.Host, m.PID, m.Started = info.Host, info.PID, info.Started
		}
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b Member) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}
