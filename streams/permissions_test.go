package streams_test

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
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
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
	if nc, err := streams.Connect(streams.ConnectConfig{InProcess: h.Server}); err == nil {
		nc.Close()
		t.Fatal("an in-process connection without credentials was accepted")
	}
	// A key generated elsewhere (another data dir) is unknown here.
	other, err := streams.EnsureKeyring(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if nc, err := streams.Connect(streams.ConnectConfig{URL: h.URL(), NkeyFile: other.SeedFile(streams.IdentityAdmin)}); err == nil {
		nc.Close()
		t.Fatal("an unknown nkey was accepted")
	}
	// The stage keys work over TCP as well as in-process.
	nc, err := streams.Connect(streams.ConnectConfig{URL: h.URL(), NkeyFile: h.Keys.SeedFile(streams.IdentityDetector)})
	if err != nil {
		t.Fatalf("detector over TCP: %v", err)
	}
	nc.Close()
}

// TestKeyringFiles: the keys directory is 0700 and every seed 0600; a
// second start reuses the keys; a seed others can read is refused.
func TestKeyringFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	k1, err := streams.EnsureKeyring(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir, streams.KeysDir(dir)} {
		if st, err := os.Stat(p); err != nil || st.Mode().Perm() != 0o700 {
			t.Errorf("%s: mode %v (%v), want 0700", p, st.Mode().Perm(), err)
		}
	}
	for _, id := range streams.Identities {
		st, err := os.Stat(k1.SeedFile(id))
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s seed: %v (%v), want 0600", id, st.Mode().Perm(), err)
		}
	}
	k2, err := streams.EnsureKeyring(dir)
	if err != nil {
		t.Fatal(err)
	}
	if k1.PublicKey(streams.IdentityAdmin) != k2.PublicKey(streams.IdentityAdmin) || k1.PublicKey(streams.IdentityAdmin) == "" {
		t.Error("a second start generated new keys")
	}
	if err := os.Chmod(k1.SeedFile(streams.IdentityDetector), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := streams.EnsureKeyring(dir); !errors.Is(err, streams.ErrInvalidConfig) {
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
		{streams.IdentityDetector, pub, streams.DetectionSubject("acme", "c1"), true},
		{streams.IdentityDetector, pub, streams.TaskSubject("acme", "c1"), true},
		{streams.IdentityDetector, pub, streams.TurnSubject("acme", "c1", schemas.RoleUser), false},
		{streams.IdentityDetector, pub, streams.StepSubject("acme", "c1"), false},
		{streams.IdentityDetector, pub, streams.DLQSubject(streams.StageDetector), true},
		{streams.IdentityDetector, pub, streams.DLQSubject(streams.StageAgentWorker), false},
		// The injector is the sidecar responder: it answers requests and
		// stores nothing, tasks included; it may not speak for the agent.
		{streams.IdentityInjector, pub, streams.TaskSubject("acme", "c1"), false},
		{streams.IdentityInjector, pub, streams.TurnSubject("acme", "c1", schemas.RoleAgent), false},
		{streams.IdentityInjector, sub, streams.InceptionAll, true},
		// It reads the detections with ordered consumers, and makes no
		// durable of its own.
		{streams.IdentityInjector, pub, "$JS.API.CONSUMER.CREATE." + streams.StreamDetections + "." + streams.DurableInjector + "." + streams.DetectionsAll, false},
		{streams.IdentityInjector, pub, "$JS.API.CONSUMER.CREATE." + streams.StreamDetections + ".ordered_1", true},
		{streams.IdentityInjector, sub, streams.TasksAll, false},
		// The agent worker answers as the agent, never as the user, and
		// plants no tasks.
		{streams.IdentityAgentWorker, pub, streams.TurnSubject("acme", "c1", schemas.RoleAgent), true},
		{streams.IdentityAgentWorker, pub, streams.TurnSubject("acme", "c1", schemas.RoleUser), false},
		{streams.IdentityAgentWorker, pub, streams.TaskSubject("acme", "c1"), false},
		{streams.IdentityAgentWorker, pub, streams.ConversationStateSubject("acme.c1"), true},
		{streams.IdentityAgentWorker, sub, streams.TurnsAll, false},
		// It says so when a turn goes unanswered, and its crash order gate
		// looks up a conversation's earlier task on the stream it consumes.
		{streams.IdentityAgentWorker, pub, streams.UnansweredSubject("acme", "c1"), true},
		{streams.IdentityAgentWorker, pub, "$JS.API.DIRECT.GET." + streams.StreamTasks, true},
		{streams.IdentityEscalation, pub, "$JS.API.DIRECT.GET." + streams.StreamOutcomes, true},
		{streams.IdentityEscalation, pub, streams.UnansweredSubject("acme", "c1"), false},
		// Escalation: handoff items, nothing of the pipeline.
		{streams.IdentityEscalation, pub, streams.HandoffSubject("acme", "c1"), true},
		{streams.IdentityEscalation, pub, streams.EscalationSubject("acme", "c1"), false},
		{streams.IdentityEscalation, pub, streams.TaskSubject("acme", "c1"), false},
		// Only the agent worker (and the admin's `rein handoff release`)
		// gives a handed-over conversation back to the agent: never a
		// tenant, nor the escalation stage.
		{streams.IdentityAgentWorker, pub, streams.ReleaseSubject("acme", "c1"), true},
		{streams.IdentityIngress, pub, streams.ReleaseSubject("acme", "c1"), false},
		{streams.IdentityEscalation, pub, streams.ReleaseSubject("acme", "c1"), false},
		{streams.IdentityReader, pub, streams.ReleaseSubject("acme", "c1"), false},
		{streams.IdentityReader, sub, streams.ReleaseSubject("acme", "c1"), true},
		// Ingress: user and agent turns only, and its own dead letters (a
		// conflict's 409 is answered once that is written).
		{streams.IdentityIngress, pub, streams.TurnSubject("acme", "c1", schemas.RoleUser), true},
		{streams.IdentityIngress, pub, streams.TurnSubject("acme", "c1", schemas.RoleAgent), true},
		{streams.IdentityIngress, pub, streams.TurnSubject("acme", "c1", "system"), false},
		{streams.IdentityIngress, pub, streams.DLQSubject(streams.StageIngress), true},
		{streams.IdentityIngress, pub, streams.DLQSubject(streams.StageDetector), false},
		{streams.IdentityIngress, sub, streams.IngestAll, true},
		{streams.IdentityIngress, pub, streams.TaskSubject("acme", "c1"), false},
		// A client may not pick a stored partition token itself.
		{streams.IdentityIngress, pub, streams.TurnSubject("acme", "c1", schemas.RoleUser) + ".3", false},
		{streams.IdentityIngress, sub, streams.DetectionsAll, false},
		// A duplicate Msg-Id is compared with the stored turn.
		{streams.IdentityIngress, pub, "$JS.API.DIRECT.GET." + streams.StreamTurns, true},
		{streams.IdentityIngress, pub, "$JS.API.DIRECT.GET." + streams.StreamTasks, false},
		// No stage may touch the JetStream API beyond its own needs.
		{streams.IdentityDetector, pub, "$JS.API.STREAM.DELETE." + streams.StreamTurns, false},
		{streams.IdentityDetector, pub, "$JS.API.STREAM.PURGE." + streams.StreamTurns, false},
		{streams.IdentityDetector, pub, "$JS.API.CONSUMER.CREATE." + streams.StreamTasks + "." + streams.DurableAgentWorker, false},
		{streams.IdentityAgentWorker, pub, "$JS.API.CONSUMER.MSG.NEXT." + streams.StreamTurns + "." + streams.DurableDetector, false},
		// A reader of a stream (ordered consumers) may not take over a durable on it.
		{streams.IdentityEscalation, pub, "$JS.API.CONSUMER.CREATE." + streams.StreamTurns + ".ordered_1", true},
		{streams.IdentityEscalation, pub, "$JS.API.CONSUMER.CREATE." + streams.StreamTurns + "." + streams.DurableDetector, false},
		{streams.IdentityEscalation, pub, "$JS.API.CONSUMER.MSG.NEXT." + streams.StreamTurns + "." + streams.DurableDetector, false},
		// A platform's event reader reads and publishes nothing.
		{streams.IdentityReader, sub, streams.DetectionsAll, true},
		{streams.IdentityReader, pub, "$JS.API.CONSUMER.CREATE." + streams.StreamOutcomes + ".ordered_1", true},
		{streams.IdentityReader, pub, streams.TurnSubject("acme", "c1", schemas.RoleUser), false},
		{streams.IdentityReader, pub, "$JS.API.CONSUMER.MSG.NEXT." + streams.StreamHandoff + "." + streams.DurableHandoffDesktops, false},
		// It may read the stages' lag (the operations view), not take them over.
		{streams.IdentityReader, pub, "$JS.API.CONSUMER.INFO." + streams.StreamTurns + "." + streams.DurableDetector, true},
		{streams.IdentityReader, pub, "$JS.API.CONSUMER.LIST." + streams.StreamTurns, true},
		{streams.IdentityReader, pub, "$JS.API.CONSUMER.DELETE." + streams.StreamTurns + "." + streams.DurableDetector, false},
		{streams.IdentityReader, pub, "$JS.ACK." + streams.StreamOutcomes + ".cc-platform.1.2.3.4.5.6.7", true},
		{streams.IdentityReader, pub, "$JS.ACK." + streams.StreamOutcomes + "." + streams.DurableEscalation + ".1.2.3.4.5.6.7", false},
		// A desktop claims handoff items and does nothing else.
		{streams.IdentityHandoffDesktop, pub, "$JS.API.CONSUMER.MSG.NEXT." + streams.StreamHandoff + "." + streams.DurableHandoffDesktops, true},
		{streams.IdentityHandoffDesktop, pub, "$JS.API.STREAM.MSG.DELETE." + streams.StreamHandoff, true},
		{streams.IdentityHandoffDesktop, pub, "$JS.API.STREAM.MSG.DELETE." + streams.StreamTurns, false},
		{streams.IdentityHandoffDesktop, pub, streams.TaskSubject("acme", "c1"), false},
		// Admin holds everything.
		{streams.IdentityAdmin, pub, streams.TaskSubject("acme", "c1"), true},
		// Labels come from operators (admin: rein label) only; readers
		// read them; no stage, ingress nor desktop writes one.
		{streams.IdentityAdmin, pub, streams.LabelSubject("acme", "c1", 2, "ops"), true},
		{streams.IdentityReader, sub, streams.LabelsAll, true},
		{streams.IdentityReader, pub, "$JS.API.DIRECT.GET." + streams.StreamLabels, true},
		{streams.IdentityReader, pub, streams.LabelSubject("acme", "c1", 2, "ops"), false},
		{streams.IdentityIngress, pub, streams.LabelSubject("acme", "c1", 2, "ops"), false},
		{streams.IdentityDetector, pub, streams.LabelSubject("acme", "c1", 2, "ops"), false},
		{streams.IdentityInjector, pub, streams.LabelSubject("acme", "c1", 2, "ops"), false},
		{streams.IdentityAgentWorker, pub, streams.LabelSubject("acme", "c1", 2, "ops"), false},
		{streams.IdentityEscalation, pub, streams.LabelSubject("acme", "c1", 2, "ops"), false},
		{streams.IdentityHandoffDesktop, pub, streams.LabelSubject("acme", "c1", 2, "ops"), false},
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
	if _, err := streams.AddTenantIngress(t.TempDir(), "not.a.tenant"); !errors.Is(err, streams.ErrInvalidConfig) {
		t.Errorf("bad tenant id: %v, want ErrInvalidConfig", err)
	}
	h, conns := startIngest(t, "acme")
	nc := conns["acme"]
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	own := turnMsg(t, streams.IngestSubject("acme", "c1", schemas.RoleUser), "acme", "c1", 1, schemas.RoleUser, "hello", "m1")
	if ack, err := js.PublishMsg(ctx, own); err != nil || ack.Stream != streams.StreamTurns {
		t.Fatalf("acme's own turn: %+v, %v", ack, err)
	}
	for _, subject := range []string{streams.IngestSubject("globex", "c1", schemas.RoleUser), streams.TurnSubject("globex", "c1", schemas.RoleUser),
		streams.TurnSubject("acme", "c1", schemas.RoleUser), streams.TaskSubject("acme", "c1"), streams.LabelSubject("acme", "c1", 1, "acme")} {
		if !denied(t, nc, &nats.Msg{Subject: subject, Data: []byte("x")}) {
			t.Errorf("acme publishing on %s: want a permissions violation", subject)
		}
	}
	if n := h.StreamMsgs(t, streams.StreamTurns); n != 1 {
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
	_, djs := h.ConnectAs(t, streams.IdentityDetector, errs)
	_, ejs := h.ConnectAs(t, streams.IdentityEscalation, errs)
	dpub := streams.NewPublisher(djs, nil)
	ctx := context.Background()
	handled := make(chan error, 4)
	c, err := streams.NewConsumer(streams.ConsumerConfig{Stage: streams.StageDetector, Stream: streams.StreamTurns,
		Durable: streams.DurableDetector, Filter: []string{streams.UserTurnsAll}, Quarantine: true, Attempts: 1},
		streams.ConsumerDeps{JS: djs, Publisher: dpub, Logger: quiet},
		func(ctx context.Context, d streams.Decoded) error {
			// What the detector reads: the conversation's turns (batched
			// direct gets) and its last detection (a direct get) …
			n := 0
			if err := streams.ReadSubject(ctx, djs, streams.StreamTurns, streams.ConversationTurns(d.Meta.Tenant, d.Meta.Conversation), 0, 0,
				func(streams.Raw) error { n++; return nil }); err != nil || n == 0 {
				handled <- errors.Join(err, errors.New("no turns read"))
				return nil
			}
			det, err := djs.Stream(ctx, streams.StreamDetections)
			if err != nil {
				handled <- err
				return nil
			}
			if _, _, err := streams.LastTurn(ctx, det, streams.DetectionSubject(d.Meta.Tenant, d.Meta.Conversation)); err != nil {
				handled <- err
				return nil
			}
			// … and what it stores.
			o := turnEvent(t, d.Meta.Tenant, d.Meta.Conversation, d.Meta.Turn, "detected")
			_, err = dpub.Publish(ctx, streams.StreamDetections, streams.DetectionSubject(d.Meta.Tenant, d.Meta.Conversation), o.Event)
			handled <- err
			return err
		})
	if err != nil {
		t.Fatal(err)
	}
	rtest.Run(t, "detector consumer", c.Run)
	publishTurns(t, h, []streams.Out{*turnEvent(t, "acme", "c1", 1, "cancel that one")})
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
	h.WaitAcked(t, 10*time.Second, streams.StreamTurns, streams.DurableDetector, 1)
	// An undecodable user turn: dead-lettered on the detector's DLQ subject
	// and deleted from REIN_TURNS, under the same identity.
	if _, err := h.JS.Publish(ctx, streams.TurnSubject("acme", "c1", schemas.RoleUser), []byte("not an event")); err != nil {
		t.Fatal(err)
	}
	rtest.CheckFor(t, 10*time.Second, "the bad turn dead-lettered and quarantined", func() bool {
		return h.StreamMsgs(t, streams.StreamDLQ) == 1 && h.StreamMsgs(t, streams.StreamTurns) == 1
	})
	// The escalation stage reads a transcript through an ordered consumer.
	n := 0
	if err := streams.ReadStream(ctx, ejs, streams.StreamTurns, streams.ReadOptions{Filters: []string{streams.ConversationTurns("acme", "c1")}},
		func(streams.Raw) error { n++; return nil }); err != nil || n != 1 {
		t.Errorf("ordered read under the escalation identity: %d turns, %v", n, err)
	}
	select {
	case err := <-errs:
		t.Errorf("asynchronous error: %v", err)
	default:
	}
}
