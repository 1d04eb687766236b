package bench

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/reinception/rein/streams/bus"
)

func TestRawChainDeliversEveryMessage(t *testing.T) {
	res, err := RunRawChain(context.Background(), t.TempDir(), 2000, 512)
	if err != nil {
		t.Fatal(err)
	}
	if res.Msgs != 2000 || res.MsgsPerSec <= 0 || res.P99Ms < res.P50Ms {
		t.Fatalf("result %+v", res)
	}
}

func TestRawShapeStoresTheExtraMessages(t *testing.T) {
	for _, side := range [][]int{{0, 0, 5}, {1, 5}} {
		res, err := RunRawShape(context.Background(), t.TempDir(), 1000, 512, side, Headers{})
		if err != nil {
			t.Fatal(err)
		}
		want := uint64(0)
		for _, n := range side {
			want += uint64(n) * 1000
		}
		if res.Msgs != 1000 || res.MsgsPerSec <= 0 || res.SideMsgs != want {
			t.Fatalf("shape %v: result %+v, want %d side messages", side, res, want)
		}
	}
	if _, err := RunRawShape(context.Background(), t.TempDir(), 10, 512, nil, Headers{}); err == nil {
		t.Fatal("a shape without hops ran")
	}
}

// With a header template every message carries it with ids of its own:
// were the ids shared, the streams' duplicate window would drop all but
// one message per id and the run would never complete; a wrong expected
// stream would be refused.
func TestRawShapeWithHeaders(t *testing.T) {
	tmpl := nats.Header{
		"ce-specversion":         {"1.0"},
		"ce-id":                  {"turn-bench-b00001-1-user"},
		"ce-type":                {"dev.rein.turn.v1"},
		bus.HeaderMsgID:          {"turn-bench-b00001-1-user"},
		bus.HeaderExpectedStream: {"REIN_TURNS"},
	}
	res, err := RunRawShape(context.Background(), t.TempDir(), 1000, 512, []int{0, 0, 5}, Headers{Template: tmpl, Plain: 2})
	if err != nil {
		t.Fatal(err)
	}
	if res.Msgs != 1000 || res.SideMsgs != 5000 {
		t.Fatalf("result %+v", res)
	}
	if res.PayloadB >= 512 {
		t.Fatalf("payload %d B: the header bytes should come out of the message size", res.PayloadB)
	}
}
