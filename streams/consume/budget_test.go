package consume

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestByteBudgetWaitsUntilBytesAreGivenBack: takers past the budget wait
// until bytes come back, the bytes held never exceed the budget, a
// message larger than the budget goes alone, and a cancelled wait gives
// up without taking anything.
func TestByteBudgetWaitsUntilBytesAreGivenBack(t *testing.T) {
	synctest.Test(t, testByteBudget)
}

func testByteBudget(t *testing.T) {
	b := newByteBudget(100)
	ctx := context.Background()
	if !b.acquire(ctx, 60, 0, nil) || !b.acquire(ctx, 40, 0, nil) {
		t.Fatal("bytes within the budget were refused")
	}
	got := make(chan bool)
	go func() { got <- b.acquire(ctx, 30, 0, nil) }()
	synctest.Wait() // the taker is blocked, or done
	select {
	case <-got:
		t.Fatal("took 30 bytes with the budget spent")
	default:
	}
	b.release(40)
	if !<-got {
		t.Fatal("the waiter gave up")
	}
	if held, peak := b.inUse(); held != 90 || peak != 100 {
		t.Errorf("held %d, peak %d; want 90, 100", held, peak)
	}
	cctx, cancel := context.WithCancel(ctx)
	beats := make(chan struct{}, 10)
	go func() {
		got <- b.acquire(cctx, 50, time.Millisecond, func() { beats <- struct{}{} })
	}()
	<-beats // it waits, and heartbeats its message while it does
	cancel()
	if <-got {
		t.Fatal("a cancelled wait took the bytes")
	}
	b.release(90)
	if !b.acquire(ctx, 500, 0, nil) {
		t.Fatal("a message larger than the budget was refused with nothing held")
	}
	if held, _ := b.inUse(); held != 500 {
		t.Errorf("held %d, want 500", held)
	}
	b.release(500)

	// Many takers and givers at once: never more than the budget held.
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 200 {
				b.acquire(ctx, 30, 0, nil)
				b.release(30)
			}
		}()
	}
	wg.Wait()
	if held, peak := b.inUse(); held != 0 || peak > 500 {
		t.Errorf("held %d, peak %d after the rush", held, peak)
	}
}

// Giving bytes back with nobody waiting allocates nothing (it runs once per
// message; it used to make a channel each time).
func TestByteBudgetReleaseWithoutWaitersAllocatesNothing(t *testing.T) {
	b := newByteBudget(100)
	ctx := context.Background()
	if n := testing.AllocsPerRun(100, func() {
		b.acquire(ctx, 10, 0, nil)
		b.release(10)
	}); n != 0 {
		t.Fatalf("%v allocations per acquire and release, want 0", n)
	}
}
