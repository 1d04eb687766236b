package natsserver_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/internal/testutil/bustest"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
	"github.com/reinception/rein/streams/consume"
	"github.com/reinception/rein/streams/natsserver"
)

// TestEmbeddedServerRefusesUnauthenticated: neither a TCP client nor an
// in-process one gets in without a key, and a key the server does not
// know is refused too.
func TestEmbeddedServerRefusesUnauthenticated(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	if nc, err := nats.Connect(h.URL(), nats.MaxReconnects(0)); err == nil {
		nc.Close()
		t.Fatal("a TCP connection without credentials was accepted")
	} else if !errors.Is(err, nats.ErrAuthorization) {
		t.Errorf("TCP without credentials: %v, want an authorization violation", err)
	}
	if nc, err := natsserver.Connect(natsserver.ConnectConfig{InProcess: h.Server}); err == nil {
		nc.Close()
		t.Fatal("an in-process connection without credentials was accepted")
	}
	// A key generated elsewhere (another data dir) is unknown here.
	other, err := natsserver.EnsureKeyring(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if nc, err := natsserver.Connect(natsserver.ConnectConfig{URL: h.URL(), NkeyFile: other.SeedFile(natsserver.IdentityAdmin)}); err == nil {
		nc.Close()
		t.Fatal("an unknown nkey was accepted")
	}
	// The stage keys work over TCP as well as in-process.
	nc, err := natsserver.Connect(natsserver.ConnectConfig{URL: h.URL(), NkeyFile: h.Keys.SeedFile(natsserver.IdentityDetector)})
	if err != nil {
		t.Fatalf("detector over TCP: %v", err)
	}
	nc.Close()
}

// TestKeyringFiles: the keys directory is 0700 and every seed 0600; a
// second start reuses the keys; a seed others can read is refused.
func TestKeyringFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	k1, err := natsserver.EnsureKeyring(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir, natsserver.KeysDir(dir)} {
		if st, err := os.Stat(p); err != nil || st.Mode().Perm() != 0o700 {
			t.Errorf("%s: mode %v (%v), want 0700", p, st.Mode().Perm(), err)
		}
	}
	for _, id := range natsserver.Identities {
		st, err := os.Stat(k1.SeedFile(id))
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s seed: %v (%v), want 0600", id, st.Mode().Perm(), err)
		}
	}
	k2, err := natsserver.EnsureKeyring(dir)
	if err != nil {
		t.Fatal(err)
	}
	if k1.PublicKey(natsserver.IdentityAdmin) != k2.PublicKey(natsserver.IdentityAdmin) || k1.PublicKey(natsserver.IdentityAdmin) == "" {
		t.Error("a second start generated new keys")
	}
	if err := os.Chmod(k1.SeedFile(natsserver.IdentityDetector), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := natsserver.EnsureKeyring(dir); !errors.Is(err, streams.ErrInvalidConfig) {
		t.Errorf("a world-readable seed: %v, want ErrInvalidConfig", err)
	}
}

// can reports whether identity may publish (pub) or subscribe (!pub) to
// subject: a fresh connection tries it, and a permissions violation comes
// back before the flush's PONG.
func can(t *testing.T, h *rtest.JS, identity string, pub bool, subject string) bool {
	t.Helper()
	nc, _ := h.ConnectAs(t, identity, nil)
	defer nc.Close()
	var err error
	if pub {
		err = nc.Publish(subject, []byte("x"))
	} else {
		_, err = nc.SubscribeSync(subject)
	}
	if err != nil {
		t.Fatalf("%s: %v", identity, err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatalf("%s flush: %v", identity, err)
	}
	last := nc.LastError()
	if last != nil && !strings.Contains(strings.ToLower(last.Error()), "permissions violation") {
		t.Fatalf("%s %s: unexpected error %v", identity, subject, last)
	}
	return last == nil
}

func TestStagePermissions(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	const pub, sub = true, false
	cases := []struct {
		identity string
		pub      bool
		subject  string
		allowed  bool
	}{
		// The detector stores detections and their tasks, never turns.
		{natsserver.IdentityDetector, pub, bus.DetectionSubject("acme", "c1"), true},
		{natsserver.IdentityDetector, pub, bus.TaskSubject("acme", "c1"), true},
		{natsserver.IdentityDetector, pub, bus.TurnSubject("acme", "c1", schemas.RoleUser), false},
		{natsserver.IdentityDetector, pub, bus.StepSubject("acme", "c1"), false},
		{natsserver.IdentityDetector, pub, bus.DLQSubject(bus.StageDetector), true},
		{natsserver.IdentityDetector, pub, bus.DLQSubject(bus.StageAgentWorker), false},
		// The injector is the sidecar responder: it answers requests and
		// stores nothing, tasks included; it may not speak for the agent.
		{natsserver.IdentityInjector, pub, bus.TaskSubject("acme", "c1"), false},
		{natsserver.IdentityInjector, pub, bus.TurnSubject("acme", "c1", schemas.RoleAgent), false},
		{natsserver.IdentityInjector, sub, bus.InceptionAll, true},
		// It reads the detections with ordered consumers, and makes no
		// durable of its own.
		{natsserver.IdentityInjector, pub, "$JS.API.CONSUMER.CREATE." + bus.StreamDetections + "." + bus.DurableInjector + "." + bus.DetectionsAll, false},
		{natsserver.IdentityInjector, pub, "$JS.API.CONSUMER.CREATE." + bus.StreamDetections + ".ordered_1", true},
		{natsserver.IdentityInjector, sub, bus.TasksAll, false},
		// The agent worker answers as the agent, never as the user, and
		// plants no tasks.
		{natsserver.IdentityAgentWorker, pub, bus.TurnSubject("acme", "c1", schemas.RoleAgent), true},
		{natsserver.IdentityAgentWorker, pub, bus.TurnSubject("acme", "c1", schemas.RoleUser), false},
		{natsserver.IdentityAgentWorker, pub, bus.TaskSubject("acme", "c1"), false},
		{natsserver.IdentityAgentWorker, pub, bus.ConversationStateSubject("acme.c1"), true},
		{natsserver.IdentityAgentWorker, sub, bus.TurnsAll, false},
		// It says so when a turn goes unanswered, and its crash order gate
		// looks up a conversation's earlier task on the stream it consumes.
		{natsserver.IdentityAgentWorker, pub, bus.UnansweredSubject("acme", "c1"), true},
		{natsserver.IdentityAgentWorker, pub, "$JS.API.DIRECT.GET." + bus.StreamTasks, true},
		{natsserver.IdentityEscalation, pub, "$JS.API.DIRECT.GET." + bus.StreamOutcomes, true},
		{natsserver.IdentityEscalation, pub, bus.UnansweredSubject("acme", "c1"), false},
		// Escalation: handoff items, nothing of the pipeline.
		{natsserver.IdentityEscalation, pub, bus.HandoffSubject("acme", "c1"), true},
		{natsserver.IdentityEscalation, pub, bus.EscalationSubject("acme", "c1"), false},
		{natsserver.IdentityEscalation, pub, bus.TaskSubject("acme", "c1"), false},
		// Only the agent worker (and the admin's `rein handoff release`)
		// gives a handed-over conversation back to the agent: never a
		// tenant, nor the escalation stage.
		{natsserver.IdentityAgentWorker, pub, bus.ReleaseSubject("acme", "c1"), true},
		{natsserver.IdentityIngress, pub, bus.ReleaseSubject("acme", "c1"), false},
		{natsserver.IdentityEscalation, pub, bus.ReleaseSubject("acme", "c1"), false},
		{natsserver.IdentityReader, pub, bus.ReleaseSubject("acme", "c1"), false},
		{natsserver.IdentityReader, sub, bus.ReleaseSubject("acme", "c1"), true},
		// Ingress: user and agent turns only, and its own dead letters (a
		// conflict's 409 is answered once that is written).
		{natsserver.IdentityIngress, pub, bus.TurnSubject("acme", "c1", schemas.RoleUser), true},
		{natsserver.IdentityIngress, pub, bus.TurnSubject("acme", "c1", schemas.RoleAgent), true},
		{natsserver.IdentityIngress, pub, bus.TurnSubject("acme", "c1", "system"), false},
		{natsserver.IdentityIngress, pub, bus.DLQSubject(bus.StageIngress), true},
		{natsserver.IdentityIngress, pub, bus.DLQSubject(bus.StageDetector), false},
		{natsserver.IdentityIngress, sub, bus.IngestAll, true},
		{natsserver.IdentityIngress, pub, bus.TaskSubject("acme", "c1"), false},
		// A client may not pick a stored partition token itself.
		{natsserver.IdentityIngress, pub, bus.TurnSubject("acme", "c1", schemas.RoleUser) + ".3", false},
		{natsserver.IdentityIngress, sub, bus.DetectionsAll, false},
		// A duplicate Msg-Id is compared with the stored turn.
		{natsserver.IdentityIngress, pub, "$JS.API.DIRECT.GET." + bus.StreamTurns, true},
		{natsserver.IdentityIngress, pub, "$JS.API.DIRECT.GET." + bus.StreamTasks, false},
		// No stage may touch the JetStream API beyond its own needs.
		{natsserver.IdentityDetector, pub, "$JS.API.STREAM.DELETE." + bus.StreamTurns, false},
		{natsserver.IdentityDetector, pub, "$JS.API.STREAM.PURGE." + bus.StreamTurns, false},
		{natsserver.IdentityDetector, pub, "$JS.API.CONSUMER.CREATE." + bus.StreamTasks + "." + bus.DurableAgentWorker, false},
		{natsserver.IdentityAgentWorker, pub, "$JS.API.CONSUMER.MSG.NEXT." + bus.StreamTurns + "." + bus.DurableDetector, false},
		// The escalation stage reads a transcript with direct gets: no
		// consumer on REIN_TURNS at all, let alone a stage's durable.
		{natsserver.IdentityEscalation, pub, "$JS.API.DIRECT.GET." + bus.StreamTurns, true},
		{natsserver.IdentityEscalation, pub, "$JS.API.CONSUMER.CREATE." + bus.StreamTurns + ".ordered_1", false},
		{natsserver.IdentityEscalation, pub, "$JS.API.CONSUMER.CREATE." + bus.StreamTurns + "." + bus.DurableDetector, false},
		{natsserver.IdentityEscalation, pub, "$JS.API.CONSUMER.MSG.NEXT." + bus.StreamTurns + "." + bus.DurableDetector, false},
		// A reader of a stream (ordered consumers) may not take over a durable on it.
		{natsserver.IdentityReader, pub, "$JS.API.CONSUMER.CREATE." + bus.StreamTurns + ".ordered_1", true},
		{natsserver.IdentityReader, pub, "$JS.API.CONSUMER.CREATE." + bus.StreamTurns + "." + bus.DurableDetector, false},
		// A platform's event reader reads and publishes nothing.
		{natsserver.IdentityReader, sub, bus.DetectionsAll, true},
		{natsserver.IdentityReader, pub, "$JS.API.CONSUMER.CREATE." + bus.StreamOutcomes + ".ordered_1", true},
		{natsserver.IdentityReader, pub, bus.TurnSubject("acme", "c1", schemas.RoleUser), false},
		{natsserver.IdentityReader, pub, "$JS.API.CONSUMER.MSG.NEXT." + bus.StreamHandoff + "." + bus.DurableHandoffDesktops, false},
		// It may read the stages' lag (the operations view), not take them over.
		{natsserver.IdentityReader, pub, "$JS.API.CONSUMER.INFO." + bus.StreamTurns + "." + bus.DurableDetector, true},
		{natsserver.IdentityReader, pub, "$JS.API.CONSUMER.LIST." + bus.StreamTurns, true},
		{natsserver.IdentityReader, pub, "$JS.API.CONSUMER.DELETE." + bus.StreamTurns + "." + bus.DurableDetector, false},
		{natsserver.IdentityReader, pub, "$JS.ACK." + bus.StreamOutcomes + ".cc-platform.1.2.3.4.5.6.7", true},
		{natsserver.IdentityReader, pub, "$JS.ACK." + bus.StreamOutcomes + "." + bus.DurableEscalation + ".1.2.3.4.5.6.7", false},
		// A desktop claims handoff items and does nothing else.
		{natsserver.IdentityHandoffDesktop, pub, "$JS.API.CONSUMER.MSG.NEXT." + bus.StreamHandoff + "." + bus.DurableHandoffDesktops, true},
		{natsserver.IdentityHandoffDesktop, pub, "$JS.API.STREAM.MSG.DELETE." + bus.StreamHandoff, true},
		{natsserver.IdentityHandoffDesktop, pub, "$JS.API.STREAM.MSG.DELETE." + bus.StreamTurns, false},
		{natsserver.IdentityHandoffDesktop, pub, bus.TaskSubject("acme", "c1"), false},
		// Admin holds everything.
		{natsserver.IdentityAdmin, pub, bus.TaskSubject("acme", "c1"), true},
		// Labels come from operators (admin: rein label) only; readers
		// read them; no stage, ingress nor desktop writes one.
		{natsserver.IdentityAdmin, pub, bus.LabelSubject("acme", "c1", 2, "ops"), true},
		{natsserver.IdentityReader, sub, bus.LabelsAll, true},
		{natsserver.IdentityReader, pub, "$JS.API.DIRECT.GET." + bus.StreamLabels, true},
		{natsserver.IdentityReader, pub, bus.LabelSubject("acme", "c1", 2, "ops"), false},
		{natsserver.IdentityIngress, pub, bus.LabelSubject("acme", "c1", 2, "ops"), false},
		{natsserver.IdentityDetector, pub, bus.LabelSubject("acme", "c1", 2, "ops"), false},
		{natsserver.IdentityInjector, pub, bus.LabelSubject("acme", "c1", 2, "ops"), false},
		{natsserver.IdentityAgentWorker, pub, bus.LabelSubject("acme", "c1", 2, "ops"), false},
		{natsserver.IdentityEscalation, pub, bus.LabelSubject("acme", "c1", 2, "ops"), false},
		{natsserver.IdentityHandoffDesktop, pub, bus.LabelSubject("acme", "c1", 2, "ops"), false},
	}
	for _, c := range cases {
		verb := "subscribe"
		if c.pub {
			verb = "publish"
		}
		if got := can(t, h, c.identity, c.pub, c.subject); got != c.allowed {
			t.Errorf("%s %s %s: allowed %v, want %v", c.identity, verb, c.subject, got, c.allowed)
		}
	}
}

// TestTenantIngressBoundToItsTenant: a tenant's ingress identity sends
// its tenant's turns to the ingest, which stores them, and reaches nothing
// of another tenant's, nor any stream directly.
func TestTenantIngressBoundToItsTenant(t *testing.T) {
	if _, err := natsserver.AddTenantIngress(t.TempDir(), "not.a.tenant"); !errors.Is(err, streams.ErrInvalidConfig) {
		t.Errorf("bad tenant id: %v, want ErrInvalidConfig", err)
	}
	h, conns := bustest.StartIngest(t, "acme")
	nc := conns["acme"]
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	own := bustest.TurnMsg(t, bus.IngestSubject("acme", "c1", schemas.RoleUser), "acme", "c1", 1, schemas.RoleUser, "hello", "m1")
	if ack, err := js.PublishMsg(ctx, own); err != nil || ack.Stream != bus.StreamTurns {
		t.Fatalf("acme's own turn: %+v, %v", ack, err)
	}
	for _, subject := range []string{bus.IngestSubject("globex", "c1", schemas.RoleUser), bus.TurnSubject("globex", "c1", schemas.RoleUser),
		bus.TurnSubject("acme", "c1", schemas.RoleUser), bus.TaskSubject("acme", "c1"), bus.LabelSubject("acme", "c1", 1, "acme")} {
		if !bustest.Denied(t, nc, &nats.Msg{Subject: subject, Data: []byte("x")}) {
			t.Errorf("acme publishing on %s: want a permissions violation", subject)
		}
	}
	if n := h.StreamMsgs(t, bus.StreamTurns); n != 1 {
		t.Errorf("REIN_TURNS holds %d messages, want acme's one", n)
	}
}

// TestConsumeLoopUnderStageIdentity: a stage's consume loop works under its
// own identity: durable created, messages pulled and acked, reads (direct
// gets and ordered consumers), outputs stored, and an undecodable input
// dead-lettered and quarantined.
func TestConsumeLoopUnderStageIdentity(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	errs := make(chan error, 16)
	_, djs := h.ConnectAs(t, natsserver.IdentityDetector, errs)
	_, ejs := h.ConnectAs(t, natsserver.IdentityEscalation, errs)
	dpub := streams.NewPublisher(djs, nil, streams.PublisherConfig{})
	ctx := context.Background()
	handled := make(chan error, 4)
	c, err := consume.NewConsumer(consume.ConsumerConfig{Stage: bus.StageDetector, Stream: bus.StreamTurns,
		Durable: bus.DurableDetector, Filter: []string{bus.UserTurnsAll}, Quarantine: true, Attempts: 1},
		consume.ConsumerDeps{JS: djs, Publisher: dpub, Logger: bustest.Quiet},
		func(ctx context.Context, d streams.Decoded) error {
			// What the detector reads: the conversation's turns (batched
			// direct gets) and its last detection (a direct get) …
			n := 0
			if err := streams.ReadSubject(ctx, djs, bus.StreamTurns, bus.ConversationTurns(d.Meta.Tenant, d.Meta.Conversation), 0, 0,
				func(streams.Raw) error { n++; return nil }); err != nil || n == 0 {
				handled <- errors.Join(err, errors.New("no turns read"))
				return nil
			}
			det, err := djs.Stream(ctx, bus.StreamDetections)
			if err != nil {
				handled <- err
				return nil
			}
			if _, _, err := streams.LastTurn(ctx, det, bus.DetectionSubject(d.Meta.Tenant, d.Meta.Conversation)); err != nil {
				handled <- err
				return nil
			}
			// … and what it stores.
			o := bustest.TurnEvent(t, d.Meta.Tenant, d.Meta.Conversation, d.Meta.Turn, "detected")
			_, err = dpub.Publish(ctx, bus.StreamDetections, bus.DetectionSubject(d.Meta.Tenant, d.Meta.Conversation), o.Event)
			handled <- err
			return err
		})
	if err != nil {
		t.Fatal(err)
	}
	rtest.Run(t, "detector consumer", c.Run)
	bustest.PublishTurns(t, h, []streams.Out{*bustest.TurnEvent(t, "acme", "c1", 1, "cancel that one")})
	select {
	case err := <-handled:
		if err != nil {
			t.Fatalf("handler under the detector identity: %v", err)
		}
	case err := <-errs:
		t.Fatalf("detector connection: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the detector consumer handled nothing")
	}
	h.WaitAcked(t, 10*time.Second, bus.StreamTurns, bus.DurableDetector, 1)
	// An undecodable user turn: dead-lettered on the detector's DLQ subject
	// and deleted from REIN_TURNS, under the same identity.
	if _, err := h.JS.Publish(ctx, bus.TurnSubject("acme", "c1", schemas.RoleUser), []byte("not an event")); err != nil {
		t.Fatal(err)
	}
	rtest.CheckFor(t, 10*time.Second, "the bad turn dead-lettered and quarantined", func() bool {
		return h.StreamMsgs(t, bus.StreamDLQ) == 1 && h.StreamMsgs(t, bus.StreamTurns) == 1
	})
	// The escalation stage reads a transcript with direct gets.
	n := 0
	turns, err := ejs.Stream(ctx, bus.StreamTurns)
	if err == nil {
		err = streams.ReadConversationTurns(ctx, ejs, turns, "acme", "c1", 0, func(streams.Raw) error { n++; return nil })
	}
	if err != nil || n != 1 {
		t.Errorf("transcript read under the escalation identity: %d turns, %v", n, err)
	}
	select {
	case err := <-errs:
		t.Errorf("asynchronous error: %v", err)
	default:
	}
}
