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
// The goroutines (drainers) are kept once their conversation has nothing
// left and take the next conversation that gets work: a fresh goroutine
// would grow its stack again through the handler's calls for every
// message, which cost about 6 % of the pipeline's CPU. Idle drainers are
// used last-in first-out, so the busy ones stay warm, and those left idle
// through a whole trim period (the heartbeat tick) end.
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
	waiting int        // messages queued, not yet taken by their conversation
	idle    []*drainer // waiting for a conversation, the last idled last
	lowIdle int        // fewest idle since the last trim: idle all along
}

// drainer is a goroutine that drains one conversation's queue at a time;
// the queue lives in it, so a conversation with work costs no allocation.
type drainer struct {
	q    convQueue
	next chan bool // true: drain q (set up by push); false: end
}

// convQueue is one conversation's waiting messages.
type convQueue struct {
	key  string
	jobs []job // ordered by stream sequence, from head on
	head int
	cur  job  // being handled or asked about (heartbeats, redeliveries)
	busy bool // cur is set
	wake chan struct{}
}

// maxKeptJobs is the largest queue array a drainer keeps for its next
// conversation; a larger one (a long backlog) goes to the collector.
const maxKeptJobs = 64

// newScheduler makes a scheduler that takes its in-flight slots from
// slots (a stage's partitions share one pool).
func newScheduler(slots chan struct{}, budget *byteBudget, hold func(key string, j *job) time.Duration, run func(key string, j job)) *scheduler {
	return &scheduler{slots: slots, budget: budget, hold: hold, run: run, convs: map[string]*convQueue{}}
}

// push queues j on its conversation and gives the conversation a drainer
// when it has none; it reports false once the scheduler is closed. It
// never blocks.
func (s *scheduler) push(key string, j job) bool {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return false
	}
	q, ok := s.convs[key]
	if !ok {
		q = s.start(key)
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

// start hands the conversation key to an idle drainer, or to a new one
// when none is idle. It must be called with mu held.
func (s *scheduler) start(key string) *convQueue {
	var d *drainer
	if n := len(s.idle); n > 0 {
		d = s.idle[n-1]
		s.idle[n-1] = nil
		s.idle = s.idle[:n-1]
		s.lowIdle = min(s.lowIdle, n-1)
	} else {
		d = &drainer{next: make(chan bool, 1)}
		d.q.wake = make(chan struct{}, 1)
		s.wg.Add(1)
		go s.work(d)
	}
	q := &d.q
	q.key = key
	select { // a wake-up left from the drainer's last conversation
	case <-q.wake:
	default:
	}
	s.convs[key] = q
	d.next <- true // buffered, and the drainer is idle: never blocks
	return q
}

// work is a drainer's life: drain each conversation it is given until the
// scheduler closes or trims it.
func (s *scheduler) work(d *drainer) {
	defer s.wg.Done()
	for d.idle() {
		if !s.drain(d) {
			return
		}
	}
}

// idlePad is the stack an idle drainer keeps in use. The collector halves
// the stack of a goroutine using less than a quarter of it, so a drainer
// idle in a shallow frame would lose the stack its handlers grew, and grow
// it again (runtime.copystack) on its next conversation. 8 KiB keeps
// stacks up to 32 KiB; in `rein bench --quick` it halved copystack's
// share again (≈ 3.3 % → 2.0 %; without reuse ≈ 4.5 %), while 16 KiB made
// it worse: stacks that large are shrunk while their handler waits.
const idlePad = 8 << 10

// idle waits for the drainer's next conversation (true) or its end
// (false), in a frame of idlePad bytes.
//
//go:noinline
func (d *drainer) idle() bool {
	var pad [idlePad]byte
	padStack(&pad)
	return <-d.next
}

// padStack keeps pad, and so the frame that holds it, from being
// optimised away.
//
//go:noinline
func padStack(*[idlePad]byte) {}

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
	if q.busy && q.cur.seq == j.seq {
		return true
	}
	for i := q.head; i < len(q.jobs); i++ {
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
	if n == q.head || q.jobs[n-1].seq <= j.seq {
		q.jobs = append(q.jobs, j)
		return
	}
	i := q.head + sort.Search(n-q.head, func(i int) bool { return q.jobs[q.head+i].seq > j.seq })
	q.jobs = append(q.jobs, job{})
	copy(q.jobs[i+1:], q.jobs[i:])
	q.jobs[i] = j
}

// next moves the first queued message to cur; it reports false when none
// is queued. It must be called with the scheduler's mu held.
func (q *convQueue) next() bool {
	if q.head == len(q.jobs) {
		return false
	}
	q.cur, q.busy = q.jobs[q.head], true
	q.jobs[q.head] = job{}
	q.head++
	if q.head == len(q.jobs) {
		q.head = 0
		q.jobs = q.jobs[:0]
		if cap(q.jobs) > maxKeptJobs {
			q.jobs = nil
		}
	}
	return true
}

// drain handles the drainer's conversation until its queue is empty, then
// removes the conversation (its next message starts it again) and idles
// the drainer. It reports false when the drainer must end instead.
func (s *scheduler) drain(d *drainer) bool {
	q := &d.q
	s.mu.Lock()
	for {
		if !q.next() {
			delete(s.convs, q.key)
			q.key = ""
			if s.closed || len(s.idle) >= cap(s.slots) {
				s.mu.Unlock()
				return false
			}
			s.idle = append(s.idle, d)
			s.mu.Unlock()
			return true
		}
		s.waiting--
		s.mu.Unlock()

		// Only this drainer writes cur; others read it under mu.
		if dur := s.hold(q.key, &q.cur); dur > 0 {
			// Not its turn yet: wait, holding no slot, until the queue
			// changes (an earlier message arrives) or dur passes.
			s.requeue(q, dur)
			s.mu.Lock()
			continue
		}
		s.slots <- struct{}{}
		s.run(q.key, q.cur)
		<-s.slots
		s.budget.release(q.cur.size)

		s.mu.Lock()
		q.cur, q.busy = job{}, false
	}
}

// requeue puts the current message back at its place in the
// conversation's queue (the order gate holding it) and waits until the
// queue changes or d passes.
func (s *scheduler) requeue(q *convQueue, d time.Duration) {
	s.mu.Lock()
	q.insert(q.cur)
	s.waiting++
	q.cur, q.busy = job{}, false
	s.mu.Unlock()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-q.wake:
	case <-t.C:
	}
}

// trim ends the drainers that stayed idle since the last trim; the
// heartbeat tick calls it.
func (s *scheduler) trim() {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.lowIdle
	for i := range n {
		s.idle[i].next <- false
		s.idle[i] = nil
	}
	s.idle = append(s.idle[:0], s.idle[n:]...)
	clear(s.idle[len(s.idle):cap(s.idle)])
	s.lowIdle = len(s.idle)
}

// each calls fn for every message held (queued or being handled) whose
// delivery is older than age, for heartbeats.
func (s *scheduler) each(now time.Time, age time.Duration, fn func(jetstream.Msg)) {
	s.mu.Lock()
	var msgs []jetstream.Msg
	for _, q := range s.convs {
		if q.busy && now.Sub(q.cur.at) >= age {
			msgs = append(msgs, q.cur.msg)
		}
		for i := q.head; i < len(q.jobs); i++ {
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

// close stops accepting messages and ends the idle drainers;
// conversations drain what they hold (the run func releases messages once
// the consumer is stopping) and wait returns when every drainer has ended.
func (s *scheduler) close() {
	s.mu.Lock()
	s.closed = true
	for i, d := range s.idle {
		d.next <- false
		s.idle[i] = nil
	}
	s.idle, s.lowIdle = nil, 0
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
