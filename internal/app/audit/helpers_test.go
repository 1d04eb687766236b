package audit

import (
	"context"
	"encoding/json"
	"strconv"

	"fmt"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"testing"
	"time"

	"github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
)

// t0 is the event time of the fixtures' first event.
var t0 = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

// ev builds one rein event with a fixed time for publishing.
func ev(t testing.TB, stream, subject, typ, id string, m schemas.Meta, at time.Time, data any) streams.Out {
	t.Helper()
	e, err := schemas.NewEvent(typ, id, "", m, data)
	if err != nil {
		t.Fatalf("event %s: %v", id, err)
	}
	e.SetTime(at)
	return streams.Out{Stream: stream, Subject: subject, Event: &e}
}

func turnOut(t testing.TB, tenant, conv string, turn int, role, text string, at time.Time) streams.Out {
	m := schemas.Meta{Tenant: tenant, Conversation: conv, Turn: turn}
	return ev(t, bus.StreamTurns, bus.TurnSubject(tenant, conv, role), schemas.TypeTurn,
		schemas.EventID("turn-"+role, tenant, conv, turn), m, at, schemas.Turn{Role: role, Text: text, Turn: turn})
}

func publish(t testing.TB, js *testutil.JS, outs ...streams.Out) {
	t.Helper()
	p := streams.NewPublisher(js.JS, nil, streams.PublisherConfig{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for len(outs) > 0 {
		n := min(len(outs), 1000)
		if _, err := p.PublishAll(ctx, outs[:n]...); err != nil {
			t.Fatalf("publish: %v", err)
		}
		outs = outs[n:]
	}
}

// bulkTurns publishes n turns spread over convs conversations of two
// tenants, round-robin, alternating user and agent turns. For speed it
// builds the binary-mode messages from one encoded template (the same
// headers streams.Encode writes) and publishes them asynchronously.
func bulkTurns(t testing.TB, js *testutil.JS, n, convs int) {
	t.Helper()
	tmpl, err := schemas.NewEvent(schemas.TypeTurn, "x", "", schemas.Meta{Tenant: "acme", Conversation: "c", Turn: 1},
		schemas.Turn{Role: schemas.RoleUser, Text: "x", Turn: 1})
	if err != nil {
		t.Fatal(err)
	}
	base, err := streams.Encode("rein.turns.acme.c.user", &tmpl)
	if err != nil {
		t.Fatal(err)
	}
	var futures []jetstream.PubAckFuture
	wait := func() { futures = awaitAcks(t, futures) }
	for i := range n {
		c := i % convs
		turn := i/convs + 1
		role := schemas.RoleUser
		if turn%2 == 0 {
			role = schemas.RoleAgent
		}
		tenant, conv := tenantOf(c), fmt.Sprintf("c%04d", c)
		id := schemas.EventID("turn-"+role, tenant, conv, turn)
		hdr := nats.Header{}
		for k, v := range base.Header {
			hdr[k] = v
		}
		for k, v := range map[string]string{"id": id, "subject": conv, "conversation": conv, "partitionkey": conv, "tenant": tenant,
			"turn": strconv.Itoa(turn), "time": t0.Add(time.Duration(i) * time.Millisecond).Format(time.RFC3339Nano)} {
			hdr.Set(bus.HeaderCEPrefix+k, v)
		}
		hdr.Set(bus.HeaderMsgID, id)
		data, _ := json.Marshal(schemas.Turn{Role: role, Text: fmt.Sprintf("message %d of conversation %d", turn, c), Turn: turn})
		f, err := js.JS.PublishMsgAsync(&nats.Msg{Subject: bus.TurnSubject(tenant, conv, role), Header: hdr, Data: data})
		if err != nil {
			t.Fatalf("publish: %v", err)
		}
		futures = append(futures, f)
		if len(futures) == 2000 {
			wait()
		}
	}
	wait()
}

func tenantOf(c int) string {
	if c%2 == 0 {
		return "acme"
	}
	return "globex"
}

// readAll collects copies of every record of a selection.
func readAll(t testing.TB, js *testutil.JS, sel Selection) []Record {
	t.Helper()
	var out []Record
	err := Read(context.Background(), js.JS, sel, nil, func(r *Record) error {
		out = append(out, *r)
		return nil
	})
	if err != nil {
		t.Fatalf("read %+v: %v", sel, err)
	}
	return out
}

// awaitAcks waits for every publish's acknowledgement, failing tb on an
// error or a minute without one, and returns futures emptied for reuse.
func awaitAcks(tb testing.TB, futures []jetstream.PubAckFuture) []jetstream.PubAckFuture {
	tb.Helper()
	for _, f := range futures {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			tb.Fatalf("publish: %v", err)
		case <-time.After(time.Minute):
			tb.Fatal("publish: no ack")
		}
	}
	return futures[:0]
}
