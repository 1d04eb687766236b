package streams_test

import (
	"context"
	"fmt"
	"testing"

	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/internal/testutil/bustest"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
)

// TestStoredSubjectIsWhereTheServerStores: the subject rein computes for a
// message of a partitioned stream is the one the server's transform
// stores it under, for turns (a role token after the conversation) and
// detections, tasks, whatever the partition count. A wrong hash would send
// readers to a subject that holds nothing.
func TestStoredSubjectIsWhereTheServerStores(t *testing.T) {
	for _, n := range []int{1, 3, 7, 16} {
		t.Run(fmt.Sprintf("%d partitions", n), func(t *testing.T) {
			h := rtest.StartJetStream(t, "")
			if n > 1 {
				bustest.Partitioned(t, h, n)
			}
			ctx := context.Background()
			tokens := map[string]bool{}
			for i := range 40 {
				tenant, conv := fmt.Sprintf("t%d", i%3), fmt.Sprintf("c-%d", i*7919)
				for _, subj := range []string{bus.TurnSubject(tenant, conv, "user"), bus.TurnSubject(tenant, conv, "agent"),
					bus.DetectionSubject(tenant, conv), bus.TaskSubject(tenant, conv)} {
					ack, err := h.JS.Publish(ctx, subj, []byte("x"))
					if err != nil {
						t.Fatalf("publish %s: %v", subj, err)
					}
					st, err := h.JS.Stream(ctx, ack.Stream)
					if err != nil {
						t.Fatal(err)
					}
					m, err := st.GetMsg(ctx, ack.Sequence)
					if err != nil {
						t.Fatal(err)
					}
					if got := streams.StoredSubject(st, subj); got != m.Subject {
						t.Fatalf("StoredSubject(%s) = %s; the server stored it under %s", subj, got, m.Subject)
					}
					tokens[m.Subject[len(subj):]] = true
				}
			}
			if n > 1 && len(tokens) < 2 {
				t.Errorf("40 conversations all in one of %d partitions: %v", n, tokens)
			}
		})
	}
}

// TestReadConversationTurns: one conversation's user and agent turns in
// stored order, another's left out, up to a stop sequence, with and
// without partitions.
func TestReadConversationTurns(t *testing.T) {
	for _, n := range []int{1, 4} {
		t.Run(fmt.Sprintf("%d partitions", n), func(t *testing.T) {
			h := rtest.StartJetStream(t, "")
			if n > 1 {
				bustest.Partitioned(t, h, n)
			}
			ctx := context.Background()
			var seqs []uint64
			for _, m := range [][3]string{{"r", "user", "u1"}, {"o", "user", "x"}, {"r", "agent", "a1"}, {"r", "user", "u2"}, {"o", "agent", "y"}, {"r", "agent", "a2"}} {
				ack, err := h.JS.Publish(ctx, bus.TurnSubject("acme", m[0], m[1]), []byte(m[2]))
				if err != nil {
					t.Fatal(err)
				}
				seqs = append(seqs, ack.Sequence)
			}
			st, err := h.JS.Stream(ctx, bus.StreamTurns)
			if err != nil {
				t.Fatal(err)
			}
			read := func(stop uint64) string {
				var got []string
				if err := streams.ReadConversationTurns(ctx, h.JS, st, "acme", "r", stop, func(r streams.Raw) error {
					got = append(got, string(r.Data))
					return nil
				}); err != nil {
					t.Fatal(err)
				}
				return fmt.Sprint(got)
			}
			if got := read(0); got != "[u1 a1 u2 a2]" {
				t.Errorf("all turns = %s, want [u1 a1 u2 a2]", got)
			}
			if got := read(seqs[3]); got != "[u1 a1]" {
				t.Errorf("turns before u2 = %s, want [u1 a1]", got)
			}
		})
	}
}
