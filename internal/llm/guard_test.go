package llm

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A failing endpoint opens the breaker: calls then fail without reaching
// the server, and rein_model_available and IsAvailable say so. The
// cooldown is longer than any run, so no timing decides the outcome; the
// cooldown and the probe that closes the breaker are
// TestBreakerCooldownOnAFakeClock's (on synctest's clock).
func TestBreakerOpensAgainstAFailingServer(t *testing.T) {
	srv := newFakeServer(t, reply{status: 500, body: `{"error":{"message":"down"}}`}, reply{status: 500, body: `{}`},
		reply{status: 500, body: `{}`})
	cfg := openAIConfig(srv.srv.URL)
	cfg.MaxRetries, cfg.BreakerFailures, cfg.BreakerCooldown, cfg.Endpoint = -1, 3, time.Hour, "inception"
	c, reg := newClient(t, cfg)
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		if _, err := c.Chat(ctx, Request{Purpose: PurposeInception, Messages: []Message{userMsg("hi")}}); !errors.Is(err, ErrServer) {
			t.Fatalf("call %d: %v, want a server error", i+1, err)
		}
	}
	_, err := c.Chat(ctx, Request{Purpose: PurposeInception, Messages: []Message{userMsg("hi")}})
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("with the breaker open: %v, want ErrUnavailable", err)
	}
	if n := len(srv.requests()); n != 3 {
		t.Fatalf("the server saw %d requests, want 3 (none while open)", n)
	}
	if v := metricValue(t, reg, "rein_model_available", map[string]string{"endpoint": "inception"}); v != 0 || IsAvailable(c) {
		t.Fatalf("rein_model_available = %v, IsAvailable %v while open", v, IsAvailable(c))
	}
}

// A 429 with Retry-After slows the sender: the retry does not go out
// before the server's time and the in-flight limit shrinks. (At the
// limit's floor a Retry-After holds back every new call:
// TestRetryAfterAtTheFloorOnAFakeClock.)
func TestRetryAfterSlowsTheSender(t *testing.T) {
	srv := newFakeServer(t, reply{status: 429, headers: map[string]string{"Retry-After-Ms": "400"}, body: `{"error":{"message":"slow down"}}`},
		reply{body: openAIStructuredBody})
	cfg := openAIConfig(srv.srv.URL)
	cfg.MaxRetries, cfg.Endpoint = 1, "agent"
	c, reg := newClient(t, cfg)
	ctx := context.Background()
	first := time.Now()
	if _, err := c.Chat(ctx, Request{Purpose: PurposeAgent, Messages: []Message{userMsg("hi")}}); err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(first); waited < 350*time.Millisecond {
		t.Fatalf("the retry went out after %s, before the server's Retry-After of 400ms", waited)
	}
	if lim := metricValue(t, reg, "rein_model_in_flight_limit", map[string]string{"endpoint": "agent"}); lim >= DefaultInitialInFlight {
		t.Fatalf("in-flight limit %v after a 429, want below %d", lim, DefaultInitialInFlight)
	}
}

// The adaptive limit bounds concurrency, shrinks on overload and grows
// back on success, within its bounds.
func TestAIMDLimit(t *testing.T) {
	g := newGuard("test", Config{InitialInFlight: 4, MaxInFlight: 8}, nil)
	var now, peak atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = g.do(context.Background(), func(context.Context) (Response, error) {
				n := now.Add(1)
				for {
					p := peak.Load()
					if n <= p || peak.CompareAndSwap(p, n) {
						break
					}
				}
				time.Sleep(time.Millisecond)
				now.Add(-1)
				return Response{}, nil
			})
		}()
	}
	wg.Wait()
	if p := peak.Load(); p > 8 {
		t.Fatalf("%d calls in flight at once, over the max of 8", p)
	}
	a := newAIMD(10, 20, g.m)
	for i := 0; i < 3; i++ {
		_ = a.acquire(context.Background())
		a.release(true, 0)
	}
	if a.limit >= 10 || a.limit < 1 {
		t.Fatalf("limit %v after 3 overloads from 10", a.limit)
	}
	low := a.limit
	for i := 0; i < 50; i++ {
		// Four calls at once: the limit is in use, so successes grow it.
		for j := 0; j < 4; j++ {
			_ = a.acquire(context.Background())
		}
		for j := 0; j < 4; j++ {
			a.release(false, 0)
		}
	}
	if a.limit <= low || a.limit > 20 {
		t.Fatalf("limit %v after 200 successes from %v (max 20)", a.limit, low)
	}
}
