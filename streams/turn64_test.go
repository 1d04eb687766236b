package streams_test

import (
	"errors"
	"math"
	"testing"

	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
)

// Turn numbers are 64-bit end to end: one past 2^31 survives encoding
// and decoding (it once wrapped through an int32), and one past the
// documented bound is refused with a clear error.
func TestTurnNumbersAbove32BitsRoundTrip(t *testing.T) {
	for _, turn := range []int{1, math.MaxInt32, math.MaxInt32 + 1, 1 << 40, schemas.MaxTurn} {
		meta := schemas.Meta{Tenant: "acme", Conversation: "c1", Turn: turn}
		ev, err := schemas.NewEvent(schemas.TypeTurn, schemas.EventID("turn", "acme", "c1", turn), "", meta,
			schemas.Turn{Role: schemas.RoleUser, Text: "hi", Turn: turn})
		if err != nil {
			t.Fatalf("turn %d: %v", turn, err)
		}
		subject := bus.TurnSubject("acme", "c1", schemas.RoleUser)
		msg, err := streams.Encode(subject, &ev)
		if err != nil {
			t.Fatalf("turn %d: encode: %v", turn, err)
		}
		d, err := streams.Decode(subject, msg.Header, msg.Data, 0)
		if err != nil {
			t.Fatalf("turn %d: decode: %v", turn, err)
		}
		var payload schemas.Turn
		if err := d.Payload(&payload); err != nil {
			t.Fatalf("turn %d: payload: %v", turn, err)
		}
		if d.Meta.Turn != turn || payload.Turn != turn {
			t.Fatalf("turn %d came back as extension %d, data %d", turn, d.Meta.Turn, payload.Turn)
		}
	}
}

func TestTurnNumbersPastTheBoundAreRefused(t *testing.T) {
	meta := schemas.Meta{Tenant: "acme", Conversation: "c1", Turn: schemas.MaxTurn + 1}
	_, err := schemas.NewEvent(schemas.TypeTurn, "x", "", meta, schemas.Turn{Role: schemas.RoleUser, Text: "hi", Turn: 1})
	if !errors.Is(err, schemas.ErrBadID) {
		t.Fatalf("turn past MaxTurn: err %v, want ErrBadID", err)
	}
	if _, err := schemas.ParseTurn("9007199254740992"); !errors.Is(err, schemas.ErrBadID) {
		t.Fatalf("ParseTurn past MaxTurn: err %v", err)
	}
	// The schema bounds data.turn the same way.
	if err := schemas.Validate(schemas.TypeTurn, []byte(`{"role":"user","text":"hi","turn":9007199254740992}`)); err == nil {
		t.Fatal("data.turn past MaxTurn accepted by the schema")
	}
}
