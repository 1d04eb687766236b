package llm

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The breaker's cooldown on the bubble's clock: open after BreakerFailures
// failures in a row, calls refused without reaching the endpoint for the
// whole cooldown, then one probe let through whose success closes it.
// Nothing here depends on how fast the machine is.
func TestBreakerCooldownOnAFakeClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := prometheus.NewRegistry()
		g := newGuard("inception", Config{InitialInFlight: 4, MaxInFlight: 8, BreakerFailures: 3, BreakerCooldown: time.Minute}, reg)
		ctx := context.Background()
		calls := 0
		down := func(context.Context) (Response, error) { calls++; return Response{}, ErrServer }
		up := func(context.Context) (Response, error) { calls++; return Response{Content: "ok"}, nil }
		for i := 0; i < 3; i++ {
			if _, err := g.do(ctx, down); !errors.Is(err, ErrServer) {
				t.Fatalf("call %d: %v, want the endpoint's error", i+1, err)
			}
		}
		available := func() float64 {
			return metricValue(t, reg, "rein_model_available", map[string]string{"endpoint": "inception"})
		}
		if g.Available() || available() != 0 {
			t.Fatalf("after 3 failures: available %v, metric %v, want open", g.Available(), available())
		}
		time.Sleep(time.Minute - time.Second)
		if _, err := g.do(ctx, up); !errors.Is(err, ErrUnavailable) || calls != 3 {
			t.Fatalf("a second before the cooldown ends: %v after %d calls, want ErrUnavailable without a call", err, calls)
		}
		time.Sleep(2 * time.Second)
		if _, err := g.do(ctx, up); err != nil || calls != 4 {
			t.Fatalf("after the cooldown: %v after %d calls, want the probe through", err, calls)
		}
		if !g.Available() || available() != 1 {
			t.Fatalf("after a good probe: available %v, metric %v, want closed", g.Available(), available())
		}
	})
}

// At the in-flight limit's floor a Retry-After pauses every new call for
// exactly the server's time, on the bubble's clock.
func TestRetryAfterAtTheFloorOnAFakeClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGuard("floor", Config{InitialInFlight: 1, MaxInFlight: 4}, nil)
		ctx := context.Background()
		if err := g.lim.acquire(ctx); err != nil {
			t.Fatal(err)
		}
		g.lim.release(true, 300*time.Millisecond)
		start := time.Now()
		if err := g.lim.acquire(ctx); err != nil {
			t.Fatal(err)
		}
		if waited := time.Since(start); waited != 300*time.Millisecond {
			t.Fatalf("at the limit's floor a new call went out after %s, want the Retry-After of 300ms", waited)
		}
	})
}
