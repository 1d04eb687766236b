package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/streams/bus"
)

// TestReplayGoesOnPastMalformedMessages stores, between two events, a
// message that is no CloudEvent and an event whose JSON body is broken:
// jsonl leaves out the first and counts it in Skipped, keeps the second
// (its body as data_base64), and every line it writes is JSON; text shows
// both raw; neither stops.
func TestReplayGoesOnPastMalformedMessages(t *testing.T) {
	js := testutil.StartJetStream(t, "")
	ctx := context.Background()
	publish(t, js, turnOut(t, "acme", "c1", 1, "user", "first", t0))
	subj := bus.TurnSubject("acme", "c1", "user")
	if _, err := js.JS.Publish(ctx, subj, []byte("not an event")); err != nil {
		t.Fatal(err)
	}
	broken := nats.Header{"Ce-Specversion": {"1.0"}, "Ce-Id": {"broken"}, "Ce-Source": {"/x"}, "Ce-Type": {"dev.rein.turn.v1"},
		"Ce-Tenant": {"acme"}, "Ce-Conversation": {"c1"}, "Content-Type": {"application/json"}}
	if _, err := js.JS.PublishMsg(ctx, &nats.Msg{Subject: subj, Header: broken, Data: []byte(`{"role":"user","text":`)}); err != nil {
		t.Fatal(err)
	}
	publish(t, js, turnOut(t, "acme", "c1", 2, "user", "last", t0))

	var buf bytes.Buffer
	got, err := Replay(ctx, js.JS, Selection{Stream: bus.StreamTurns}, ReplayConfig{Out: &buf})
	if err != nil || got != (Replayed{Written: 3, Skipped: 1}) {
		t.Fatalf("jsonl replayed %+v, %v; want 3 written, 1 skipped", got, err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	for _, l := range lines {
		if !json.Valid([]byte(l)) {
			t.Fatalf("line is not JSON: %s", l)
		}
	}
	if len(lines) != 3 || !strings.Contains(lines[1], `"id":"broken"`) || !strings.Contains(lines[1], `"data_base64"`) ||
		!strings.Contains(lines[2], "last") {
		t.Fatalf("jsonl:\n%s", buf.String())
	}

	buf.Reset()
	got, err = Replay(ctx, js.JS, Selection{Stream: bus.StreamTurns}, ReplayConfig{Format: FormatText, Out: &buf})
	if err != nil || got.Written != 4 {
		t.Fatalf("text replayed %+v, %v; want 4", got, err)
	}
	for _, want := range []string{"not an event", `{"role":"user","text":`, "USER        last"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("transcript lacks %q:\n%s", want, buf.String())
		}
	}
}

func TestReplayConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		cfg  ReplayConfig
		want error
	}{
		{ReplayConfig{Out: &bytes.Buffer{}}, nil},
		{ReplayConfig{Format: FormatText, Out: &bytes.Buffer{}}, nil},
		{ReplayConfig{To: "replay"}, nil},
		{ReplayConfig{Format: "xml", Out: &bytes.Buffer{}}, ErrBadOutput},
		{ReplayConfig{}, ErrBadOutput},
		{ReplayConfig{To: "rein.x"}, ErrLivePrefix},
		{ReplayConfig{Format: "xml", To: "replay"}, ErrBadOutput},
	} {
		if err := tc.cfg.Validate(); !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
			t.Errorf("%+v: %v, want %v", tc.cfg, err, tc.want)
		}
	}
}

// TestTuneGC: a replay runs under the soft heap limit unless the operator
// set one (GOMEMLIMIT), and the previous settings come back after.
func TestTuneGC(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(before)
	debug.SetMemoryLimit(math.MaxInt64)
	restore := TuneGC()
	if got := debug.SetMemoryLimit(-1); got != ReplayHeapLimit {
		t.Errorf("limit %d, want %d", got, ReplayHeapLimit)
	}
	restore()
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("limit not restored: %d", got)
	}
	debug.SetMemoryLimit(1 << 30)
	defer TuneGC()()
	if got := debug.SetMemoryLimit(-1); got != 1<<30 {
		t.Errorf("the operator's limit became %d", got)
	}
}
