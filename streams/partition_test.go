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
