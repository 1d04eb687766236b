package streams_test

import (
	"context"
	"fmt"
	"testing"

	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
)

// BenchmarkReadConversation: one conversation's turns read back from a
// REIN_TURNS holding 20,000 conversations of two turns each (a stage's
// cache miss at scale), by its literal subjects (what rein does) and, for
// comparison, with the wildcard filter rein.turns.<t>.<c>.> it used
// before, which makes the server test every message of the cached blocks
// it passes.
func BenchmarkReadConversation(b *testing.B) {
	h := rtest.StartJetStream(b, "")
	ctx := context.Background()
	const convs = 20000
	payload := make([]byte, 600)
	futures := 0
	for range 2 {
		for c := range convs {
			for _, role := range []string{"user", "agent"} {
				if _, err := h.JS.PublishAsync(bus.TurnSubject("acme", fmt.Sprintf("c%d", c), role), payload); err != nil {
					b.Fatal(err)
				}
				if futures++; futures%4096 == 0 {
					<-h.JS.PublishAsyncComplete()
				}
			}
		}
	}
	<-h.JS.PublishAsyncComplete()
	st, err := h.JS.Stream(ctx, bus.StreamTurns)
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		read func(conv string, fn func(streams.Raw) error) error
	}{
		{"literal", func(conv string, fn func(streams.Raw) error) error {
			return streams.ReadConversationTurns(ctx, h.JS, st, "acme", conv, 0, fn)
		}},
		{"wildcard", func(conv string, fn func(streams.Raw) error) error {
			return streams.ReadSubject(ctx, h.JS, bus.StreamTurns, bus.ConversationTurns("acme", conv), 0, 0, fn)
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			i := 0
			for b.Loop() {
				n := 0
				if err := tc.read(fmt.Sprintf("c%d", (i*7919)%convs), func(streams.Raw) error { n++; return nil }); err != nil || n != 4 {
					b.Fatalf("read %d turns: %v", n, err)
				}
				i++
			}
		})
	}
}
