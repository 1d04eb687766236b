package bench

import (
	"context"
	"reflect"
	"runtime"
	"testing"
	"time"

	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/streams/bus"
	"github.com/reinception/rein/streams/natsserver"
)

func TestWirePerTurnCountsWhatEachConnectionExchanged(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	_, js := h.ConnectAs(t, natsserver.IdentityDetector, nil)
	before := wireCounts(h.Server)
	// Three stores, each a publish in and its acknowledgement out.
	for _, conv := range []string{"c1", "c2", "c3"} {
		if _, err := js.Publish(context.Background(), bus.DetectionSubject("acme", conv), []byte("{}")); err != nil {
			t.Fatal(err)
		}
	}
	// The admin connection (the process's own, "driver") did nothing.
	want := []Wire{{Conn: natsserver.IdentityDetector, In: 1, Out: 1}}
	// The server may count an acknowledgement a moment after the client
	// has it: read until the counts settle, within a deadline.
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := wirePerTurn(before, wireCounts(h.Server), t.Name(), 3)
		if reflect.DeepEqual(got, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("per turn: %+v, want %+v", got, want)
		}
		runtime.Gosched()
	}
}

func TestWirePerTurnPutsTheDriverLast(t *testing.T) {
	before := map[string][2]int64{"p": {10, 10}, "p-detector": {0, 0}}
	after := map[string][2]int64{"p": {30, 50}, "p-detector": {20, 40}, "p-agentworker": {60, 60}, "p-idle": {0, 0}}
	got := wirePerTurn(before, after, "p", 10)
	want := []Wire{{Conn: "agentworker", In: 6, Out: 6}, {Conn: "detector", In: 2, Out: 4}, {Conn: "driver", In: 2, Out: 4}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if wirePerTurn(nil, after, "p", 10) != nil || wirePerTurn(before, after, "p", 0) != nil {
		t.Error("no reading, or no turns: nothing to report")
	}
}
