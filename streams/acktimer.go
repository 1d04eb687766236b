package streams

import (
	"sync"
	"time"
)

// ackTimers holds stopped timers for bounding the wait for an
// acknowledgement: every publish waits under one, and a fresh timer per
// publish is an allocation (and garbage) per message.
var ackTimers = sync.Pool{New: func() any {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return t
}}

// AckTimer returns a timer that fires after d, taken from a pool. Give it
// back with ReleaseAckTimer once no one waits on its channel.
func AckTimer(d time.Duration) *time.Timer {
	t := ackTimers.Get().(*time.Timer)
	t.Reset(d)
	return t
}

// ReleaseAckTimer stops t and returns it to the pool. Since Go 1.23 a
// stopped timer's channel holds no stale tick, so the next AckTimer's
// Reset starts it clean.
func ReleaseAckTimer(t *time.Timer) {
	t.Stop()
	ackTimers.Put(t)
}
