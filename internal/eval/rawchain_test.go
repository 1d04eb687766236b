package eval

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/reinception/rein/streams"
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
	res, err := RunRawShape(context.Background(), t.TempDir(), 1000, 512, 5, Headers{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Msgs != 1000 || res.MsgsPerSec <= 0 || res.SideMsgs != 5000 {
		t.Fatalf("result %+v", res)
	}
}

// With a header template every message carries it with ids of its own:
// were the ids shared, the streams' duplicate window would drop all but
// one message per id and the run would never complete; a wrong expected
// stream would be refused.
func TestRawShapeWithHeaders(t *testing.T) {
	tmpl := nats.Header{
		"ce-specversion":             {"1.0"},
		"ce-id":                      {"turn-bench-b00001-1-user"},
		"ce-type":                    {"dev.rein.turn.v1"},
		streams.HeaderMsgID:          {"turn-bench-b00001-1-user"},
		streams.HeaderExpectedStream: {"REIN_TURNS"},
	}
	res, err := RunRawShape(context.Background(), t.TempDir(), 1000, 512, 5, Headers{Template: tmpl, Plain: 2})
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
