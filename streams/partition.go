package streams

import (
	"fmt"
	"hash/fnv"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/reinception/rein/streams/bus"
)

// Partitions let several replicas of a stage work at once while each
// conversation keeps one holder. With streams.partitions N > 1, the streams
// every turn passes through (PartitionedStreams) store each message under
// its subject with one more token: the partition, 0..N-1, that the server's
// subject transform computes from the tenant and conversation tokens
// (partition(N, tenant, conversation)). The stage consuming such a stream
// has one durable per partition (PartitionDurable), each a pinned-client
// group, and its live replicas share the partitions between them (see
// members.go): a conversation's messages are all in one partition, so one
// replica handles them, in order, as with one durable.
//
// Only the stored subject changes: publishers and core NATS subscribers
// keep the subjects of streams/bus, and readers of a partitioned stream look a
// subject up with StoredSubject. The partition count is fixed when a
// stream is created (Provision refuses to change it on a stream holding
// messages: a conversation would move between partitions while its
// earlier turns are in flight).

// MaxPartitions bounds streams.partitions; the permission table names
// every partition's durable.
const MaxPartitions = 16

// PartitionedStreams are the streams that take the partition token when
// streams.partitions > 1, with the subject each transform applies to and
// how many tokens that subject has before the partition.
var PartitionedStreams = map[string]struct {
	source string
	tokens int
}{
	bus.StreamTurns:      {bus.TurnSubject("*", "*", "*"), 5},
	bus.StreamDetections: {bus.DetectionSubject("*", "*"), 4},
	bus.StreamTasks:      {bus.TaskSubject("*", "*"), 4},
}

// SubjectTransform is the stream transform adding the partition token, or
// nil when partitions <= 1 or the stream is not partitioned.
func SubjectTransform(stream string, partitions int) *jetstream.SubjectTransformConfig {
	ps, ok := PartitionedStreams[stream]
	if !ok || partitions <= 1 {
		return nil
	}
	dest := strings.TrimSuffix(ps.source, strings.Repeat(".*", ps.tokens-2))
	for i := 1; i <= ps.tokens-2; i++ {
		dest += fmt.Sprintf(".{{wildcard(%d)}}", i)
	}
	dest += fmt.Sprintf(".{{partition(%d,1,2)}}", partitions)
	return &jetstream.SubjectTransformConfig{Source: ps.source, Destination: dest}
}

var partitionArg = regexp.MustCompile(`\{\{\s*partition\(\s*(\d+)\s*,`)

// StreamPartitions reads a stream's partition count from its
// configuration: N from rein's transform, 1 when it has none.
func StreamPartitions(cfg jetstream.StreamConfig) int {
	if cfg.SubjectTransform == nil {
		return 1
	}
	m := partitionArg.FindStringSubmatch(cfg.SubjectTransform.Destination)
	if m == nil {
		return 1
	}
	n, err := strconv.Atoi(m[1])
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// PartitionsOf is StreamPartitions of a looked-up stream.
func PartitionsOf(s jetstream.Stream) int {
	if s == nil || s.CachedInfo() == nil {
		return 1
	}
	return StreamPartitions(s.CachedInfo().Config)
}

// StoredSubject is the subject under which stream s stores a message
// published on subject: the subject itself, or the subject with the
// partition token s's transform appends. The token is computed as the
// server's partition(N, 1, 2) computes it: FNV-1a (32 bits) of the tenant
// and conversation tokens written one after the other, modulo N.
//
// Readers look a conversation up with this literal subject, never with a
// wildcard: for a literal the server finds the messages from its subject
// index, while a wildcard filter makes it test every message of each
// cached block it passes (at 15,000 active conversations that was 70 %
// of the process's CPU, docs/performance.md).
func StoredSubject(s jetstream.Stream, subject string) string {
	return storedSubject(subject, PartitionsOf(s))
}

func storedSubject(subject string, partitions int) string {
	if partitions <= 1 {
		return subject
	}
	// rein.<kind>.<tenant>.<conversation>[.<role>]
	toks := strings.SplitN(subject, ".", 5)
	if len(toks) < 4 {
		return subject
	}
	if strings.ContainsAny(toks[2]+toks[3], "*>") {
		return subject + ".*" // a filter over conversations: any partition
	}
	h := fnv.New32a()
	h.Write([]byte(toks[2]))
	h.Write([]byte(toks[3]))
	return subject + "." + strconv.FormatUint(uint64(h.Sum32()%uint32(partitions)), 10)
}

// Unpartitioned is the subject a message was published on: its stored
// subject without the partition token.
func Unpartitioned(subject string) string {
	parts := strings.Split(subject, ".")
	if len(parts) < 2 || parts[0] != "rein" {
		return subject
	}
	for _, ps := range PartitionedStreams {
		if strings.HasPrefix(ps.source, "rein."+parts[1]+".") && len(parts) == ps.tokens+1 {
			return strings.Join(parts[:ps.tokens], ".")
		}
	}
	return subject
}

// PartitionDurable names partition p's durable of a stage's durable.
func PartitionDurable(durable string, p int) string { return durable + "-p" + strconv.Itoa(p) }

// partitionedStage is the stage of each durable that is split into
// partitions on a partitioned stream.
var PartitionedStage = map[string]string{
	bus.DurableDetector: bus.StageDetector, bus.DurableInjector: bus.StageInjector, bus.DurableAgentWorker: bus.StageAgentWorker,
}

// MemberTTL is how long a partitioned stage's key in the members bucket
// outlives its last renewal: a crashed replica drops out after it.
const MemberTTL = 6 * time.Second
