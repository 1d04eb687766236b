package consume

import (
	"sort"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// scheduler runs a consumer's deliveries by conversation. Each conversation
// with work has a queue, ordered by stream sequence, and one goroutine that
// drains it one message at a time; a conversation with nothing queued costs
// nothing. How many handlers run at once is bounded by a pool of in-flight
// slots (ConsumerConfig.MaxInFlight), taken per message and given back when
// the message is decided, so a conversation waiting on a model holds one
// slot and a goroutine, and never holds up another conversation — unlike a
// fixed set of workers that conversations are hashed onto.
//
// Order: a conversation's messages are handled strictly one at a time in
// stream order (a redelivered older message is queued ahead of later
// ones); before each, the order gate (order.go) may hold it until every
// earlier message of its subject is acked, which matters only after
// another holder of the consumer died with messages unacked.
type scheduler struct {
	slots  chan struct{} // in-flight handlers
	budget *byteBudget   // bytes held; each job's are given back once decided
	// hold tells how long a message must wait for earlier ones (0: run it
	// now); run decides one message.
	hold func(key string, j *job) time.Duration
	run  func(key string, j job)

	mu      sync.Mutex
	convs   map[string]*convQueue
	closed  bool
	wg      sync.WaitGroup
	waiting int // messages queued, not yet taken by their conversation
}

// convQueue is one conversation's waiting messages.
type convQueue struct {
	jobs    []job // ordered by stream sequence
	current *job  // being handled (heartbeats)
	wake    chan struct{}
}

// newScheduler makes a scheduler that takes its in-flight slots from
// slots (a stage's partitions share one pool).
func newScheduler(slots chan struct{}, budget *byteBudget, hold func(key string, j *job) time.Duration, run func(key string, j job)) *scheduler {
	return &scheduler{slots: slots, budget: budget, hold: hold, run: run, convs: map[string]*convQueue{}}
}

// push queues j on its conversation and starts the conversation's
// goroutine when it has none; it reports false once the scheduler is
// closed. It never blocks.
func (s *scheduler) push(key string, j job) bool {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return false
	}
	q, ok := s.convs[key]
	if !ok {
		q = &convQueue{wake: make(chan struct{}, 1)}
		s.convs[key] = q
		s.wg.Add(1)
		go s.drain(key, q)
	}
	if q.redelivered(j) {
		s.mu.Unlock()
		s.budget.release(j.size) // the copy held already counts
		return true
	}
	q.insert(j)
	s.waiting++
	s.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
	return true
}

// redelivered tells whether j is another delivery of a message the
// conversation holds already (its heartbeat came too late, and the server
// delivered it again after AckWait): a queued one takes the new delivery
// in its place, one being handled keeps its own (an ack names the stream
// sequence, so either delivery's ack settles the message). Either way the
// message runs once.
func (q *convQueue) redelivered(j job) bool {
	if j.seq == 0 {
		return false
	}
	if q.current != nil && q.current.seq == j.seq {
		return true
	}
	for i := range q.jobs {
		if q.jobs[i].seq == j.seq {
			q.jobs[i].msg, q.jobs[i].at = j.msg, j.at
			return true
		}
	}
	return false
}

// insert places j by stream sequence: deliveries arrive in order except
// redeliveries, which go ahead of the later messages already queued.
func (q *convQueue) insert(j job) {
	n := len(q.jobs)
	if n == 0 || q.jobs[n-1].seq <= j.seq {
		q.jobs = append(q.jobs, j)
		return
	}
	i := sort.Search(n, func(i int) bool { return q.jobs[i].seq > j.seq })
	q.jobs = append(q.jobs, job{})
	copy(q.jobs[i+1:], q.jobs[i:])
	q.jobs[i] = j
}

// drain handles the conversation's queue until it is empty, then removes
// the conversation (a later message starts a new goroutine).
func (s *scheduler) drain(key string, q *convQueue) {
	defer s.wg.Done()
	for {
		s.mu.Lock()
		if len(q.jobs) == 0 {
			delete(s.convs, key)
			s.mu.Unlock()
			return
		}
		j := q.jobs[0]
		q.jobs[0] = job{}
		q.jobs = q.jobs[1:]
		if len(q.jobs) == 0 {
			q.jobs = nil
		}
		s.waiting--
		q.current = &j
		s.mu.Unlock()

		if d := s.hold(key, &j); d > 0 {
			// Not its turn yet: wait, holding no slot, until the queue
			// changes (an earlier message arrives) or d passes.
			s.requeue(q, j, d)
			continue
		}
		s.slots <- struct{}{}
		s.run(key, j)
		<-s.slots
		s.budget.release(j.size)

		s.mu.Lock()
		q.current = nil
		s.mu.Unlock()
	}
}

// requeue puts j back at its place in the conversation's queue (the order
// gate holding it) and waits until the queue changes or d passes.
func (s *scheduler) requeue(q *convQueue, j job, d time.Duration) {
	s.mu.Lock()
	q.insert(j)
	s.waiting++
	q.current = nil
	s.mu.Unlock()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-q.wake:
	case <-t.C:
	}
}

// each calls fn for every message held (queued or being handled) whose
// delivery is older than age, for heartbeats.
func (s *scheduler) each(now time.Time, age time.Duration, fn func(jetstream.Msg)) {
	s.mu.Lock()
	var msgs []jetstream.Msg
	for _, q := range s.convs {
		if q.current != nil && now.Sub(q.current.at) >= age {
			msgs = append(msgs, q.current.msg)
		}
		for i := range q.jobs {
			if now.Sub(q.jobs[i].at) >= age {
				msgs = append(msgs, q.jobs[i].msg)
			}
		}
	}
	s.mu.Unlock()
	for _, m := range msgs {
		fn(m)
	}
}

// depth is the number of messages waiting for their conversation and the
// number of conversations with work.
func (s *scheduler) depth() (queued, conversations int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.waiting, len(s.convs)
}

// close stops accepting messages; conversations drain what they hold (the
// run func releases messages once the consumer is stopping) and wait
// returns when every conversation goroutine has ended.
func (s *scheduler) close() {
	s.mu.Lock()
	s.closed = true
	convs := make([]*convQueue, 0, len(s.convs))
	for _, q := range s.convs {
		convs = append(convs, q)
	}
	s.mu.Unlock()
	for _, q := range convs {
		select {
		case q.wake <- struct{}{}:
		default:
		}
	}
}

func (s *scheduler) wait() { s.wg.Wait() }
