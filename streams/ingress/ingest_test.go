package ingress_test

import (
	"context"
	"encoding/json"
	"errors"
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
	"github.com/reinception/rein/streams/ingress"
	"github.com/reinception/rein/streams/natsserver"
)

// subscribeDenied reports whether the server refuses nc a subscription
// to subject with a permissions violation.
func subscribeDenied(t *testing.T, nc *nats.Conn, subject string) bool {
	t.Helper()
	sub, err := nc.SubscribeSync(subject)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe() //nolint:errcheck // the server may have refused it already
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	err = nc.LastError()
	return err != nil && strings.Contains(strings.ToLower(err.Error()), "permissions violation") && strings.Contains(err.Error(), subject)
}

// TestATenantReadsOnlyItsOwnReplies: a tenant's key takes replies on its
// own inbox prefix only. On the code before it could subscribe to
// _INBOX.>, where it read every other tenant's ingest acks and inception
// blocks.
func TestATenantReadsOnlyItsOwnReplies(t *testing.T) {
	_, conns := bustest.StartIngest(t, "a", "b")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	js, err := jetstream.New(conns["b"])
	if err != nil {
		t.Fatal(err)
	}
	// b's own request is answered on b's inbox.
	if ack, err := js.PublishMsg(ctx, bustest.TurnMsg(t, bus.IngestSubject("b", "c1", schemas.RoleUser), "b", "c1", 1, schemas.RoleUser, "hello", "m1")); err != nil || ack.Stream != bus.StreamTurns {
		t.Fatalf("b's turn: %+v, %v", ack, err)
	}
	// a's request for b's tenant is refused by the server: the request
	// gets no answer (the publish is dropped, nobody responds) and the
	// connection's error says why, as docs/integration.md tells.
	ajs, err := jetstream.New(conns["a"])
	if err != nil {
		t.Fatal(err)
	}
	short, stop := context.WithTimeout(ctx, 500*time.Millisecond)
	_, err = ajs.PublishMsg(short, bustest.TurnMsg(t, bus.IngestSubject("b", "c2", schemas.RoleUser), "b", "c2", 1, schemas.RoleUser, "hello", "m2"))
	stop()
	if err == nil {
		t.Fatal("a's turn for tenant b was answered")
	}
	if last := conns["a"].LastError(); last == nil || !strings.Contains(last.Error(), `Permissions Violation for Publish to "rein.ingest.b.c2.user"`) {
		t.Errorf("a's refused request: %v, connection error %v, want the permissions violation", err, last)
	}
	// a may not listen where b's answers go, by any spelling.
	for _, subject := range []string{bus.InboxPrefix + ">", bus.TenantInbox("b") + ".>", bus.InboxPrefix + "*.*.*"} {
		if !subscribeDenied(t, conns["a"], subject) {
			t.Errorf("tenant a may subscribe to %s, where it reads other clients' replies", subject)
		}
	}
}

// TestTenantCannotAimIdsAtAnotherTenant: issue 32's two attacks, under
// tenant a's real identity and the real permission table. Tenant a
// spells b's turn id (turn.b.c1.1.user) and b's agent-reply id
// (turn.b.c1.1-agent); b's turn and the agent's reply to it are then
// stored all the same. On the code before, a's publish on its own turn
// subject with b's id was allowed, and b's turn (or reply) came back a
// duplicate that was never stored.
func TestTenantCannotAimIdsAtAnotherTenant(t *testing.T) {
	h, conns := bustest.StartIngest(t, "a", "b")
	attacker, victim := conns["a"], conns["b"]
	turnID := schemas.TurnMsgID("b", "c1", 1, schemas.RoleUser)
	replyID := schemas.EventID("turn", "b", "c1", 1) + "-" + schemas.RoleAgent
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	// The direct way into REIN_TURNS is closed, on every role.
	for _, c := range []struct{ role, id string }{{schemas.RoleUser, turnID}, {schemas.RoleAgent, replyID}} {
		m := bustest.TurnMsg(t, bus.TurnSubject("a", "x", c.role), "a", "x", 1, c.role, "forged", c.id)
		if !bustest.Denied(t, attacker, m) {
			t.Errorf("tenant a published on %s with id %s: want a permissions violation", m.Subject, c.id)
		}
	}
	// Through the ingest, the id a sets is not the one stored under.
	ajs, _ := jetstream.New(attacker)
	for i, c := range []struct{ role, id string }{{schemas.RoleUser, turnID}, {schemas.RoleAgent, replyID}} {
		ack, err := ajs.PublishMsg(ctx, bustest.TurnMsg(t, bus.IngestSubject("a", "x", c.role), "a", "x", 1, c.role, "forged", c.id))
		if err != nil || ack.Duplicate || ack.Stream != bus.StreamTurns {
			t.Fatalf("a's own turn %d through the ingest: %+v, %v", i, ack, err)
		}
	}
	if n := h.StreamMsgs(t, bus.StreamTurns); n != 2 {
		t.Fatalf("REIN_TURNS holds %d turns after a's, want its 2", n)
	}

	// b's user turn: stored, not a duplicate.
	bjs, _ := jetstream.New(victim)
	ack, err := bjs.PublishMsg(ctx, bustest.TurnMsg(t, bus.IngestSubject("b", "c1", schemas.RoleUser), "b", "c1", 1, schemas.RoleUser, "hello from b", "whatever"))
	if err != nil || ack.Duplicate {
		t.Fatalf("b's turn: %+v, %v — suppressed by a's id", ack, err)
	}
	// The agent worker's reply to it, under its own id: stored.
	_, ajw := h.ConnectAs(t, natsserver.IdentityAgentWorker, nil)
	reply, err := schemas.NewEvent(schemas.TypeTurn, replyID, schemas.Source, schemas.Meta{Tenant: "b", Conversation: "c1", Turn: 1},
		schemas.Turn{Role: schemas.RoleAgent, Text: "hello b", Turn: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := streams.NewPublisher(ajw, nil, streams.PublisherConfig{}).Publish(ctx, bus.StreamTurns, bus.TurnSubject("b", "c1", schemas.RoleAgent), &reply); err != nil {
		t.Fatalf("the agent's reply to b: %v", err)
	}
	s, err := h.JS.Stream(ctx, bus.StreamTurns)
	if err != nil {
		t.Fatal(err)
	}
	for _, role := range []string{schemas.RoleUser, schemas.RoleAgent} {
		if _, err := s.GetLastMsgForSubject(ctx, bus.TurnSubject("b", "c1", role)); err != nil {
			t.Errorf("b's %s turn is not stored: %v", role, err)
		}
	}
}

// TestIngestAnswersLikeJetStream: a turn sent to the ingest is stored
// once (the same turn again is a duplicate of the first), a different
// turn under the number is a 409 (dead-lettered), a turn whose ids
// disagree with the subject, or of a role other than user and agent, is
// refused and dead-lettered; a tenant reaches only its own subjects.
func TestIngestAnswersLikeJetStream(t *testing.T) {
	h, conns := bustest.StartIngest(t, "acme")
	nc := conns["acme"]
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	subj := bus.IngestSubject("acme", "c1", schemas.RoleUser)
	first, err := js.PublishMsg(ctx, bustest.TurnMsg(t, subj, "acme", "c1", 1, schemas.RoleUser, "hello", "m1"))
	if err != nil || first.Duplicate || first.Sequence == 0 {
		t.Fatalf("first: %+v, %v", first, err)
	}
	again, err := js.PublishMsg(ctx, bustest.TurnMsg(t, subj, "acme", "c1", 1, schemas.RoleUser, "hello", "m2"))
	if err != nil || !again.Duplicate || again.Sequence != first.Sequence {
		t.Fatalf("the same turn again: %+v, %v; want a duplicate of seq %d", again, err, first.Sequence)
	}
	refusals := []struct {
		name string
		msg  *nats.Msg
		code int
	}{
		{"another text under the number", bustest.TurnMsg(t, subj, "acme", "c1", 1, schemas.RoleUser, "something else", "m3"), 409},
		{"conversation disagrees with the subject", bustest.TurnMsg(t, subj, "acme", "c2", 1, schemas.RoleUser, "hi", "m4"), 400},
		{"role disagrees with the subject", bustest.TurnMsg(t, subj, "acme", "c1", 2, schemas.RoleAgent, "hi", "m5"), 400},
		{"not a cloudevent", &nats.Msg{Subject: subj, Data: []byte("hello")}, 400},
	}
	for _, c := range refusals {
		_, err := js.PublishMsg(ctx, c.msg)
		var apiErr *jetstream.APIError
		if !errors.As(err, &apiErr) || apiErr.Code != c.code {
			t.Errorf("%s: %v, want a JetStream API error with code %d", c.name, err, c.code)
		}
	}
	// A role other than user and agent: the tenant may not send it; the
	// ingest refuses it from anyone.
	sys := bustest.TurnMsg(t, bus.IngestSubject("acme", "c1", "system"), "acme", "c1", 3, schemas.RoleUser, "hi", "m6")
	if !bustest.Denied(t, nc, sys) {
		t.Error("acme sent a system turn: want a permissions violation")
	}
	sys = bustest.TurnMsg(t, bus.IngestSubject("acme", "c1", "system"), "acme", "c1", 3, schemas.RoleUser, "hi", "m7")
	r, err := h.Conn.RequestMsg(sys, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var ack ingress.IngestAck
	if err := json.Unmarshal(r.Data, &ack); err != nil || ack.Error == nil || ack.Error.Code != 400 || !strings.Contains(ack.Error.Description, "system") {
		t.Errorf("a system turn: %s, want a 400 naming the role", r.Data)
	}
	// Another tenant's subject, and the old turn subject.
	for _, subject := range []string{bus.IngestSubject("globex", "c1", schemas.RoleUser), bus.TurnSubject("acme", "c9", schemas.RoleUser)} {
		if !bustest.Denied(t, nc, bustest.TurnMsg(t, subject, "acme", "c9", 1, schemas.RoleUser, "hi", "m8")) {
			t.Errorf("acme published on %s: want a permissions violation", subject)
		}
	}
	if n := h.StreamMsgs(t, bus.StreamTurns); n != 1 {
		t.Errorf("REIN_TURNS holds %d turns, want 1", n)
	}
	// Each refusal the ingest saw is a dead letter with its reason.
	rtest.CheckFor(t, 10*time.Second, "five dead letters", func() bool { return h.StreamMsgs(t, bus.StreamDLQ) == 5 })
	reasons := map[string]bool{}
	if err := streams.ReadSubjectRaw(ctx, h.JS, bus.StreamDLQ, bus.DLQSubject(bus.StageIngress), 0, 0, func(r streams.Raw) error {
		var dl schemas.DeadLetter
		d, err := streams.Decode(r.Subject, r.Header, r.Data, 0)
		if err == nil {
			err = d.Payload(&dl)
		}
		if err != nil || dl.Reason == "" || dl.Stage != bus.StageIngress {
			t.Errorf("dead letter %s: %v", r.Data, err)
		}
		reasons[strings.SplitN(dl.Reason, ":", 2)[0]] = true
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !reasons[streams.ReasonConflictingDuplicate] || !reasons[streams.ErrUndecodable.Error()] {
		t.Errorf("dead-letter reasons %v", reasons)
	}
}
