package streams_test

import (
	"testing"
	"time"

	"github.com/reinception/rein/streams"
)

// A pooled timer that fired, or was stopped, must start clean: a stale
// tick would end the next publish's wait at once.
func TestAckTimerReuseCarriesNoStaleTick(t *testing.T) {
	// Due at once and never read: the stale tick to guard against.
	streams.ReleaseAckTimer(streams.AckTimer(0))
	for range 100 {
		tm := streams.AckTimer(time.Hour)
		select {
		case <-tm.C:
			t.Fatal("a reused timer fired at once")
		default:
		}
		streams.ReleaseAckTimer(tm)
	}
	tm := streams.AckTimer(time.Millisecond)
	defer streams.ReleaseAckTimer(tm)
	select {
	case <-tm.C:
	case <-time.After(10 * time.Second):
		t.Fatal("a reused timer never fired")
	}
}
