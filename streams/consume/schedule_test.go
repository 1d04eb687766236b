package consume

import (
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// delivery stands for one delivery of a message (the scheduler never calls
// its methods).
type delivery struct {
	jetstream.Msg
	n int
}

// A message the server delivers again while the conversation still holds
// it (its heartbeat was late: the order gate was holding it, or its handler
// was running) runs once. TestOrderHoldsAfterAHolderDies once saw a held
// turn handled twice under load this way.
func TestSchedulerRunsARedeliveredMessageOnce(t *testing.T) {
	for _, tc := range []struct {
		name string
		// held: the redelivery comes while the gate holds the first; else
		// while its handler runs.
		held bool
	}{{"while held", true}, {"while running", false}} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var ran []int // delivery numbers run
			holding := make(chan struct{})
			pushed := make(chan struct{}) // the redelivery is in
			running := make(chan struct{})
			finish := make(chan struct{})
			var holdOnce sync.Once
			s := newScheduler(make(chan struct{}, 4), nil,
				func(_ string, j *job) time.Duration {
					select {
					case <-pushed:
						return 0
					default:
					}
					if !tc.held {
						return 0
					}
					// Held until the redelivery is in (a hold also ends
					// when the queue changes: asked again, it holds again).
					holdOnce.Do(func() { close(holding) })
					return time.Hour
				},
				func(_ string, j job) {
					mu.Lock()
					ran = append(ran, j.msg.(delivery).n)
					first := len(ran) == 1
					mu.Unlock()
					if !tc.held && first {
						close(running)
						<-finish
					}
				})
			s.push("acme.c1", job{msg: delivery{n: 1}, seq: 7, at: time.Now()})
			if tc.held {
				<-holding
			} else {
				<-running
			}
			s.push("acme.c1", job{msg: delivery{n: 2}, seq: 7, at: time.Now()})
			close(pushed)
			if !tc.held {
				close(finish)
			}
			s.close()
			s.wait()
			mu.Lock()
			defer mu.Unlock()
			if len(ran) != 1 {
				t.Fatalf("deliveries run: %v, want one run of the message", ran)
			}
			if q, _ := s.depth(); q != 0 {
				t.Fatalf("%d messages left queued", q)
			}
		})
	}
}
