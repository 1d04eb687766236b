package natsserver

import (
	"fmt"
	"slices"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
)

// This file is the one table of what each rein identity may publish and
// subscribe to on NATS. It is built from the names in streams/bus only, so a
// subject renamed there is renamed here too.

// Identities: one per stage (the injector's is its sidecar responder's),
// the HTTP ingress, and admin for provisioning and the CLI tools.
const (
	IdentityDetector    = bus.StageDetector
	IdentityInjector    = bus.StageInjector
	IdentityAgentWorker = bus.StageAgentWorker
	IdentityEscalation  = bus.StageEscalation
	IdentityIngress     = bus.StageIngress
	IdentityAdmin       = "admin"
	// IdentityReader is for a platform's event consumers: it reads every
	// stream (ordered consumers, gets) and subscribes to rein's subjects,
	// and publishes nothing.
	IdentityReader = "reader"
	// IdentityHandoffDesktop is for human-agent desktops claiming handoff
	// items: the desktops' consumer on REIN_HANDOFF and deleting a claimed
	// item, nothing else.
	IdentityHandoffDesktop = "handoff-desktop"
)

// Identities lists every identity the embedded server knows, in a fixed order.
var Identities = []string{IdentityAdmin, IdentityIngress, IdentityDetector,
	IdentityInjector, IdentityAgentWorker, IdentityEscalation, IdentityReader, IdentityHandoffDesktop}

// JetStream API and reply subjects.
const (
	jsAPI   = "$JS.API"
	jsAck   = "$JS.ACK"
	inboxes = bus.InboxPrefix + ">"
	kvRoot  = "$KV." + bus.BucketConversations + ".>"
)

// durables names each stage's durable consumer and its stream: the readers
// of a stream (ordered consumers, whose names are generated) may create any
// consumer on it but these.
var durables = []struct{ stream, durable string }{
	{bus.StreamTurns, bus.DurableDetector},
	{bus.StreamDetections, bus.DurableInjector},
	{bus.StreamTasks, bus.DurableAgentWorker},
	{bus.StreamOutcomes, bus.DurableEscalation},
	{bus.StreamHandoff, bus.DurableHandoffDesktops},
}

// grant collects one identity's permissions.
type grant struct {
	pub, sub  []string
	responses bool
	// own are the durables this identity consumes; denied, the stages'
	// durables on the streams it reads (never its own).
	own, denied map[[2]string]bool
}

func (g *grant) publish(subjects ...string) { g.pub = append(g.pub, subjects...) }

// streamInfo allows looking a stream up (js.Stream, CachedInfo).
func (g *grant) streamInfo(streams ...string) {
	for _, s := range streams {
		g.publish(jsAPI + ".STREAM.INFO." + s)
	}
}

// get allows single and batched message gets on a stream (direct, and the
// API get where direct gets are off), and looking it up.
func (g *grant) get(streams ...string) {
	g.streamInfo(streams...)
	for _, s := range streams {
		g.publish(jsAPI+".DIRECT.GET."+s, jsAPI+".DIRECT.GET."+s+".>", jsAPI+".STREAM.MSG.GET."+s)
	}
}

// consume allows creating, reading and acknowledging one durable consumer
// (and, on a partitioned stream, its partitions' durables, with the
// stage's keys in the members bucket).
func (g *grant) consume(stream, durable string) {
	g.streamInfo(stream)
	if g.own == nil {
		g.own = map[[2]string]bool{}
	}
	for _, d := range stageDurables(stream, durable) {
		g.own[[2]string{stream, d}] = true
		c := stream + "." + d
		g.publish(
			jsAPI+".CONSUMER.CREATE."+c, jsAPI+".CONSUMER.CREATE."+c+".>",
			jsAPI+".CONSUMER.INFO."+c,
			jsAPI+".CONSUMER.MSG.NEXT."+c,
			jsAPI+".CONSUMER.UNPIN."+c,
			jsAck+"."+c+".>",
		)
	}
	if stage, ok := streams.PartitionedStage[durable]; ok {
		g.get(bus.StreamMembers)
		g.publish("$KV." + bus.BucketMembers + "." + stage + ".>")
	}
}

// stageDurables is a stage's durable and, when its stream can be
// partitioned, every partition's.
func stageDurables(stream, durable string) []string {
	out := []string{durable}
	if _, ok := streams.PartitionedStreams[stream]; ok {
		if _, ok := streams.PartitionedStage[durable]; ok {
			for p := range streams.MaxPartitions {
				out = append(out, streams.PartitionDurable(durable, p))
			}
		}
	}
	return out
}

// read allows consumers of the reader's own (ordered ones with generated
// names, or durables it names and acks) on a stream, denying the stages'
// durables and their acks. Listing the stream's consumers and reading
// their state (a stage's lag, for the operations view and metrics) is
// allowed: it changes nothing.
func (g *grant) read(stream string) {
	g.streamInfo(stream)
	for _, op := range []string{"CREATE", "INFO", "MSG.NEXT", "DELETE"} {
		g.publish(jsAPI + ".CONSUMER." + op + "." + stream + ".*")
	}
	g.publish(jsAPI+".CONSUMER.LIST."+stream, jsAPI+".CONSUMER.NAMES."+stream)
	g.publish(jsAPI+".CONSUMER.CREATE."+stream+".*.>", jsAck+"."+stream+".>")
	if g.denied == nil {
		g.denied = map[[2]string]bool{}
	}
	for _, d := range durables {
		if d.stream == stream {
			for _, name := range stageDurables(d.stream, d.durable) {
				g.denied[[2]string{d.stream, name}] = true
			}
		}
	}
}

// deny lists the API subjects of the durables denied to a reader, leaving
// out those the identity consumes itself (a deny wins over any allow).
func (g *grant) deny() []string {
	var out []string
	for d := range g.denied {
		if g.own[d] {
			continue
		}
		c := d[0] + "." + d[1]
		for _, op := range []string{"CREATE", "MSG.NEXT", "DELETE"} {
			out = append(out, jsAPI+".CONSUMER."+op+"."+c)
		}
		out = append(out, jsAPI+".CONSUMER.CREATE."+c+".>", jsAck+"."+c+".>")
	}
	return out
}

// deleteMsg allows removing single messages from a stream.
func (g *grant) deleteMsg(stream string) { g.publish(jsAPI + ".STREAM.MSG.DELETE." + stream) }

// client is what every JetStream client needs: account info and replies
// (publish acknowledgements, API responses, pulled messages) on its inbox.
func (g *grant) client() {
	g.publish(jsAPI + ".INFO")
	g.sub = append(g.sub, inboxes)
}

func detectorGrant(g *grant) {
	g.client()
	g.consume(bus.StreamTurns, bus.DurableDetector)
	g.deleteMsg(bus.StreamTurns) // quarantine of undecodable turns
	// Each detection is stored with its signed task (the injector's
	// library), and both are read back for the check of what is stored.
	g.get(bus.StreamTurns, bus.StreamDetections, bus.StreamTasks)
	g.publish(bus.DetectionsAll, bus.TasksAll, bus.DLQSubject(bus.StageDetector))
}

// injectorGrant is the sidecar responder's: requests in, answers to their
// reply subjects, the stored detections read, and a live look at a
// conversation's next detection. It stores nothing.
func injectorGrant(g *grant) {
	g.client()
	g.get(bus.StreamDetections)
	g.read(bus.StreamDetections)
	g.sub = append(g.sub, bus.InceptionAll, bus.DetectionsAll)
	g.responses = true
}

var grants = map[string]func(*grant){
	// Labels (REIN_LABELS) are published by admin only: rein label and,
	// behind its operator role, the dashboard; no stage nor tenant key.
	IdentityAdmin: func(g *grant) {
		g.publish(">")
		g.sub = append(g.sub, ">")
		g.responses = true
	},
	IdentityIngress: func(g *grant) {
		g.client()
		// A duplicate Msg-Id, or a turn number the conversation has used
		// already, is compared with the turn stored under it; feedback
		// with the feedback stored for its kind.
		g.get(bus.StreamTurns, bus.StreamFeedback)
		// User and agent turns (no other role), feedback, and the dead
		// letter of a conflict or of a refused NATS ingest message.
		g.publish(bus.UserTurnsAll, bus.AgentTurnsAll, bus.FeedbackAll, bus.DLQSubject(bus.StageIngress))
		// The NATS ingest: tenants' turns in (a queue group), one answer
		// to each.
		g.sub = append(g.sub, bus.IngestAll)
		g.responses = true
	},
	IdentityDetector:       detectorGrant,
	IdentityReader:         readerGrant,
	IdentityHandoffDesktop: handoffDesktopGrant,
	IdentityInjector:       injectorGrant,
	IdentityAgentWorker: func(g *grant) {
		g.client()
		g.consume(bus.StreamTasks, bus.DurableAgentWorker)
		g.get(bus.StreamTasks, bus.StreamTurns, bus.StreamSteps, bus.StreamOutcomes, bus.StreamConversations)
		g.publish(bus.AgentTurnsAll, bus.StepsAll, bus.EscalationsAll, bus.ReportsAll, bus.UnansweredAll, bus.ReleasesAll, kvRoot, bus.DLQSubject(bus.StageAgentWorker))
	},
	IdentityEscalation: func(g *grant) {
		g.client()
		g.consume(bus.StreamOutcomes, bus.DurableEscalation)
		g.get(bus.StreamOutcomes, bus.StreamTurns)
		// The handoff queue: items and deadline events in, claimed items
		// and expired deadlines out, the desktops' consumer ensured.
		g.get(bus.StreamHandoff)
		g.deleteMsg(bus.StreamHandoff)
		c := bus.StreamHandoff + "." + bus.DurableHandoffDesktops
		g.publish(jsAPI+".CONSUMER.CREATE."+c, jsAPI+".CONSUMER.CREATE."+c+".>", jsAPI+".CONSUMER.INFO."+c)
		g.publish(bus.HandoffItems, bus.HandoffTimeout, bus.DLQSubject(bus.StageEscalation))
	},
}

func readerGrant(g *grant) {
	g.client()
	for _, s := range StreamNames {
		g.get(s)
		g.read(s)
	}
	// Which replica works which partition (rein streams).
	g.get(bus.StreamMembers)
	// The conversations bucket's size, replicas and consumers (rein
	// streams), not its records: they are the agent worker's state.
	g.streamInfo(bus.StreamConversations)
	g.publish(jsAPI+".CONSUMER.LIST."+bus.StreamConversations, jsAPI+".CONSUMER.NAMES."+bus.StreamConversations)
	g.sub = append(g.sub, bus.TurnsAll, bus.DetectionsAll, bus.TasksAll, bus.StepsAll, bus.EscalationsAll, bus.ReportsAll, bus.UnansweredAll, bus.ReleasesAll, bus.DLQAll, bus.HandoffItems, bus.HandoffTimeout, bus.FeedbackAll, bus.LabelsAll)
}

func handoffDesktopGrant(g *grant) {
	g.client()
	g.consume(bus.StreamHandoff, bus.DurableHandoffDesktops)
	g.deleteMsg(bus.StreamHandoff)
}

// Permissions returns the NATS permissions of a rein identity.
func Permissions(identity string) (*server.Permissions, error) {
	fill, ok := grants[identity]
	if !ok {
		return nil, fmt.Errorf("%w: no NATS identity %q", streams.ErrInvalidConfig, identity)
	}
	var g grant
	fill(&g)
	return g.permissions(), nil
}

func (g *grant) permissions() *server.Permissions {
	p := &server.Permissions{
		Publish:   &server.SubjectPermission{Allow: dedupe(g.pub), Deny: dedupe(g.deny())},
		Subscribe: &server.SubjectPermission{Allow: dedupe(g.sub)},
	}
	if g.responses {
		// One answer per request, within the server's default expiry.
		p.Response = &server.ResponsePermission{MaxMsgs: 1}
	}
	return p
}

func dedupe(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	s = slices.Clone(s)
	slices.Sort(s)
	return slices.Compact(s)
}

// TenantIngressPermissions are the permissions of a platform connecting
// directly for one tenant: it may send that tenant's user and agent turns
// to rein's ingest (rein.ingest.<tenant>.<conv>.user|agent), which stores
// them under ids rein derives, and ask the sidecar for that tenant's
// inception blocks (rein.inception.get.<tenant>.>), and send its
// conversations' feedback (rein.ingest.<tenant>.<conv>.feedback); it receives the
// answers on its own inboxes only (TenantInbox), never on _INBOX.>, where
// it would read every other client's replies. It publishes into no
// stream: no Nats-Msg-Id of its choosing ever reaches JetStream. It needs
// no JetStream API either (account info would show every tenant's totals).
func TenantIngressPermissions(tenant string) (*server.Permissions, error) {
	if err := schemas.CheckIDs(tenant, "x"); err != nil {
		return nil, fmt.Errorf("%w: tenant ingress identity: %w", streams.ErrInvalidConfig, err)
	}
	var g grant
	g.sub = append(g.sub, bus.TenantInbox(tenant)+".>")
	g.publish(bus.TenantIngest(tenant, schemas.RoleUser), bus.TenantIngest(tenant, schemas.RoleAgent), bus.TenantIngest(tenant, bus.IngestFeedback), bus.TenantInception(tenant))
	return g.permissions(), nil
}

// TenantIngressUser is the embedded server's user entry of a tenant's
// ingress identity, the holder of the nkey whose public key is publicKey.
func TenantIngressUser(tenant, publicKey string) (*server.NkeyUser, error) {
	p, err := TenantIngressPermissions(tenant)
	if err != nil {
		return nil, err
	}
	return &server.NkeyUser{Nkey: publicKey, Permissions: p}, nil
}
