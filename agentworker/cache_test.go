package agentworker_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/reinception/rein/agentworker"
	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/streams"
)

// TestStateCacheKeepsItsByteBudget: with room for many conversations by
// count but few by size, the cached states never add up past the byte
// budget (each measured again as its turn grows it), and every turn is
// still answered: a dropped state is read back when needed.
func TestStateCacheKeepsItsByteBudget(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	const budget = 16 << 10
	st, _ := startWorker(t, h, agentworker.Config{MaxConversations: 1000, MaxCacheBytes: budget},
		agentworker.Deps{StageDeps: streams.StageDeps{Registerer: prometheus.NewRegistry()}, Model: scripted(t)})
	long := strings.Repeat("my booking reference is in this long message; ", 40)
	const convs = 12
	for c := range convs {
		publishTask(t, h, fmt.Sprintf("cb%02d", c), 1, long, nil)
	}
	for turn := 2; turn <= 3; turn++ {
		for c := range convs {
			conv := fmt.Sprintf("cb%02d", c)
			rtest.CheckFor(t, wait, conv+" answered", func() bool { return len(agentTurns(t, h, conv)) == turn-1 })
			if b := agentworker.CacheBytes(st); b > budget {
				t.Fatalf("cache holds %d bytes, budget %d", b, budget)
			}
			publishTask(t, h, conv, turn, long, nil)
		}
	}
	for c := range convs {
		conv := fmt.Sprintf("cb%02d", c)
		rtest.CheckFor(t, wait, conv+" answered", func() bool { return len(agentTurns(t, h, conv)) == 3 })
	}
	settled(t, h)
	if b, n := agentworker.CacheBytes(st), agentworker.CacheLen(st); b > budget || b == 0 || n >= convs {
		t.Errorf("cache holds %d bytes in %d states; want at most %d bytes, fewer than %d states", b, n, budget, convs)
	}
}
