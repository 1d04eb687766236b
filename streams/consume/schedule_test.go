package consume

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	rtest "github.com/reinception/rein/internal/testutil"
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

// idleDrainers is how many drainers wait for a conversation.
func idleDrainers(s *scheduler) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.idle)
}

// A conversation that gets work after another one ran dry is drained by
// the goroutine that drained the first (whose stack has grown already),
// not by a new one; a drainer idle through a whole trim period ends, one
// used in between stays.
func TestSchedulerReusesIdleDrainersAndTrimsThem(t *testing.T) {
	ran := make(chan string, 1)
	s := newScheduler(make(chan struct{}, 4), nil,
		func(string, *job) time.Duration { return 0 },
		func(key string, _ job) { ran <- key })
	defer func() { s.close(); s.wait() }()

	s.push("acme.a", job{seq: 1})
	if got := <-ran; got != "acme.a" {
		t.Fatalf("ran %q, want acme.a", got)
	}
	rtest.CheckFor(t, 5*time.Second, "the drainer of acme.a idles", func() bool { return idleDrainers(s) == 1 })
	s.push("acme.b", job{seq: 2})
	if got := <-ran; got != "acme.b" {
		t.Fatalf("ran %q, want acme.b", got)
	}
	rtest.CheckFor(t, 5*time.Second, "the drainer of acme.b idles", func() bool { return idleDrainers(s) == 1 })
	// Another drainer would be idle as well: acme.b found the idle one.
	if q, n := s.depth(); q != 0 || n != 0 {
		t.Fatalf("depth %d queued, %d conversations after both ran, want none", q, n)
	}

	s.trim() // the drainer was used since the scheduler started: it stays
	if n := idleDrainers(s); n != 1 {
		t.Fatalf("%d idle drainers after a trim following use, want 1", n)
	}
	s.push("acme.c", job{seq: 3}) // used again within the period
	<-ran
	rtest.CheckFor(t, 5*time.Second, "the drainer of acme.c idles", func() bool { return idleDrainers(s) == 1 })
	s.trim()
	if n := idleDrainers(s); n != 1 {
		t.Fatalf("%d idle drainers after a trim following use, want 1", n)
	}
	s.trim() // idle through the whole period: it ends
	if n := idleDrainers(s); n != 0 {
		t.Fatalf("%d idle drainers after a period unused, want 0", n)
	}
	ended := make(chan struct{})
	go func() { s.wait(); close(ended) }()
	select {
	case <-ended:
	case <-time.After(5 * time.Second):
		t.Fatal("the trimmed drainer did not end")
	}
	// A conversation after the trim gets a new drainer.
	s.push("acme.d", job{seq: 4})
	if got := <-ran; got != "acme.d" {
		t.Fatalf("ran %q, want acme.d", got)
	}
}

// Under concurrent pushes to many conversations, holds and trims, every
// message runs once, a conversation's messages run in stream order and
// never two at once, and close ends every drainer.
func TestSchedulerKeepsOrderWithReusedDrainers(t *testing.T) {
	const convs, perConv = 50, 40
	var mu sync.Mutex
	last := map[string]uint64{}
	running := map[string]bool{}
	var fails []string
	total := 0
	done := make(chan struct{})
	s := newScheduler(make(chan struct{}, 8), nil,
		func(_ string, j *job) time.Duration {
			// Hold every seventh message once, briefly, as the order gate may.
			if j.seq%7 == 0 && j.heldSince.IsZero() {
				j.heldSince = time.Now()
				return time.Millisecond
			}
			return 0
		},
		func(key string, j job) {
			mu.Lock()
			if running[key] {
				fails = append(fails, fmt.Sprintf("%s: two messages at once", key))
			}
			if j.seq <= last[key] {
				fails = append(fails, fmt.Sprintf("%s: seq %d after %d", key, j.seq, last[key]))
			}
			running[key], last[key] = true, j.seq
			mu.Unlock()
			deep(8)
			mu.Lock()
			running[key] = false
			total++
			if total == convs*perConv {
				close(done)
			}
			mu.Unlock()
		})
	stop := make(chan struct{})
	trimmed := make(chan struct{})
	go func() {
		defer close(trimmed)
		for {
			select {
			case <-stop:
				return
			default:
				s.trim()
				runtime.Gosched()
			}
		}
	}()
	var wg sync.WaitGroup
	for p := range 2 { // two pushers, as partitions share nothing but slots
		wg.Add(1)
		go func() {
			defer wg.Done()
			seq := uint64(0)
			for n := range perConv {
				for c := p; c < convs; c += 2 {
					seq = uint64(n*convs+c) + 1 // stream order across all conversations
					s.push(fmt.Sprintf("acme.c%d", c), job{seq: seq})
				}
			}
		}()
	}
	wg.Wait()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("not every message ran")
	}
	close(stop)
	<-trimmed
	s.close()
	s.wait()
	mu.Lock()
	defer mu.Unlock()
	if len(fails) > 0 {
		t.Fatalf("%d violations, first: %s", len(fails), fails[0])
	}
	if total != convs*perConv {
		t.Fatalf("%d messages ran, want %d", total, convs*perConv)
	}
}
