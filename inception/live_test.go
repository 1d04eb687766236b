package inception

import (
	"context"
	"testing"
)

// versioned decides clear, naming its version; block, when set, holds
// Detect until it is closed.
type versioned struct {
	v       string
	started chan struct{}
	block   chan struct{}
}

func (m versioned) Name() string { return "v" }
func (m versioned) Detect(context.Context, Input) (Decision, error) {
	if m.block != nil {
		close(m.started)
		<-m.block
	}
	return Decision{ModelVersion: m.v}, nil
}

// A turn in flight when a model is swapped finishes with the model it
// started with; the next turn gets the new one.
func TestLiveSwapsBetweenTurns(t *testing.T) {
	old := versioned{v: "old", started: make(chan struct{}), block: make(chan struct{})}
	l := NewLive(old)
	got := make(chan string)
	go func() {
		d, _ := l.Detect(context.Background(), Input{})
		got <- d.ModelVersion
	}()
	<-old.started
	l.Swap(versioned{v: "new"})
	close(old.block)
	if v := <-got; v != "old" {
		t.Errorf("the turn in flight was judged by %q, want old", v)
	}
	if d, _ := l.Detect(context.Background(), Input{}); d.ModelVersion != "new" {
		t.Errorf("the next turn was judged by %q, want new", d.ModelVersion)
	}
	if Current(l).(versioned).v != "new" || !l.NeedsContext(Input{}) {
		t.Error("Current or NeedsContext do not reach the module in place")
	}
}
