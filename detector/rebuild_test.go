package detector_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/reinception/rein/inception"
	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/internal/testutil/bustest"
	"github.com/reinception/rein/schemas"
)

// TestRebuildReadsTheConversationBySubject: a stage that has not seen a
// conversation rebuilds its surface context from REIN_TURNS in stored
// order, user and agent turns interleaved, other conversations' turns
// left out, with and without partitions; and every batched read names one
// literal subject. A wildcard filter makes the server test every message
// of each cached block it passes: at 15,000 active conversations that was
// 70 % of the process's CPU (docs/performance.md).
func TestRebuildReadsTheConversationBySubject(t *testing.T) {
	for _, n := range []int{1, 4} {
		t.Run(fmt.Sprintf("%d partitions", n), func(t *testing.T) {
			h := rtest.StartJetStream(t, "")
			if n > 1 {
				bustest.Partitioned(t, h, n)
			}
			var mu sync.Mutex
			var filters []string
			sub, err := h.Conn.Subscribe("$JS.API.DIRECT.GET.>", func(m *nats.Msg) {
				var req struct {
					NextFor string `json:"next_by_subj"`
					Batch   int    `json:"batch"`
				}
				if json.Unmarshal(m.Data, &req) == nil && req.Batch > 0 {
					mu.Lock()
					filters = append(filters, req.NextFor)
					mu.Unlock()
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Unsubscribe()

			m := &fakeModule{answer: func(context.Context, inception.Input) (inception.Decision, error) { return inception.Decision{}, nil }}
			stop := startStage(t, h, m, nil, time.Second)
			for _, turn := range [][4]string{
				{"r", "user", "1", "u1"}, {"o", "user", "1", "other 1"}, {"r", "agent", "1", "a1"},
				{"o", "agent", "1", "other reply"}, {"r", "user", "2", "u2"}, {"r", "agent", "2", "a2"},
			} {
				var k int
				fmt.Sscan(turn[2], &k)
				publishTurn(t, h, turn[0], turn[1], k, turn[3])
			}
			rtest.CheckFor(t, 10*time.Second, "three detections", func() bool { return len(detections(t, h)) == 3 })
			stop()

			// A new stage: its cache is empty, so turn 3 rebuilds.
			m2 := &fakeModule{answer: m.answer}
			startStage(t, h, m2, nil, time.Second)
			publishTurn(t, h, "r", "user", 3, "u3")
			rtest.CheckFor(t, 10*time.Second, "turn 3's detection", func() bool {
				_, ok := detections(t, h)[schemas.EventID("detection", "acme", "r", 3)]
				return ok
			})
			m2.mu.Lock()
			var got []string
			for _, u := range m2.seen[0] {
				got = append(got, u.Role+":"+u.Text)
			}
			m2.mu.Unlock()
			if want := "user:u1 agent:a1 user:u2 agent:a2 user:u3"; strings.Join(got, " ") != want {
				t.Errorf("rebuilt surface context = %q, want %q", strings.Join(got, " "), want)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(filters) == 0 {
				t.Fatal("no batched read seen: the test no longer watches the rebuild")
			}
			for _, f := range filters {
				if strings.ContainsAny(f, "*>") {
					t.Errorf("a batched read with the wildcard filter %q", f)
				}
			}
		})
	}
}
