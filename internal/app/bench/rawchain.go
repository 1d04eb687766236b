package bench

import (
	"context"
	"encoding/binary"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/reinception/rein/internal/app/eval"
	"github.com/reinception/rein/streams/bus"
	"github.com/reinception/rein/streams/natsserver"
)

// RawChainResult is the physical reference: what JetStream alone does on
// this machine through three consume → publish → ack hops.
type RawChainResult struct {
	Msgs       int     `json:"msgs"`
	PayloadB   int     `json:"payload_bytes"`
	MsgsPerSec float64 `json:"msgs_per_s"`
	P50Ms      float64 `json:"p50_ms"`
	P99Ms      float64 `json:"p99_ms"`
	// SideMsgs is what the last hop stored besides its output (RunRawShape).
	SideMsgs uint64 `json:"side_msgs,omitempty"`
}

// RunRawChain starts a fresh embedded server with file storage in dir and
// pushes n messages of payload bytes through streams A→B→C→D: each hop is a
// durable pull consumer on its own TCP connection that publishes to the
// next stream and acks its input once the downstream store is
// acknowledged — the same at-least-once order rein's stages use.
func RunRawChain(ctx context.Context, dir string, n, payload int) (RawChainResult, error) {
	return runChain(ctx, dir, n, payload, []int{0, 0, 0}, Headers{})
}

// RunRawShape is RunRawChain shaped like rein's pipeline: one hop per
// entry of side, hop i also storing side[i] messages in a side stream
// (rein's detections, steps and state records) before acking its input.
// With no application work at all, its throughput is the ceiling of
// rein's turns/s on this machine.
func RunRawShape(ctx context.Context, dir string, n, payload int, side []int, h Headers) (RawChainResult, error) {
	if len(side) < 1 || len(side) > 8 {
		return RawChainResult{}, fmt.Errorf("raw shape: %d hops, want 1..8", len(side))
	}
	return runChain(ctx, dir, n, payload, side, h)
}

// Headers is the header set a chain's messages carry: a real event's
// headers, copied into every message with its ids (ce-id, Nats-Msg-Id)
// made unique, so that the server parses, deduplicates and stores what it
// does for rein's events and the clients encode and decode them. The
// message keeps its total size: the payload shrinks by the header bytes.
type Headers struct {
	Template nats.Header
	// Plain is how many of the last hop's side messages carry no header
	// (rein's state records).
	Plain int
}

// size is the header's size on the wire, roughly ("k: v\r\n" per value).
func (h Headers) size() int {
	n := 0
	for k, vs := range h.Template {
		for _, v := range vs {
			n += len(k) + len(v) + 4
		}
	}
	return n
}

// msg builds a chain message for stream: data with the template's
// headers, ids unique to (tag, i) and the expected stream set to stream's,
// unless plain.
func (h Headers) msg(stream, tag string, i uint64, data []byte, plain bool) *nats.Msg {
	m := &nats.Msg{Subject: "bench." + stream, Data: data}
	if plain || len(h.Template) == 0 {
		return m
	}
	m.Header = make(nats.Header, len(h.Template))
	for k, v := range h.Template {
		m.Header[k] = v
	}
	for _, k := range []string{"ce-id", bus.HeaderMsgID} {
		if _, ok := m.Header[k]; ok {
			m.Header[k] = []string{tag + "-" + strconv.FormatUint(i, 10)}
		}
	}
	if _, ok := m.Header[bus.HeaderExpectedStream]; ok {
		m.Header[bus.HeaderExpectedStream] = []string{stream}
	}
	return m
}

func runChain(ctx context.Context, dir string, n, payload int, side []int, h Headers) (RawChainResult, error) {
	payload = max(payload-h.size(), 16)
	keys, users, err := natsserver.ServerAuth(dir)
	if err != nil {
		return RawChainResult{}, err
	}
	srv, err := natsserver.StartEmbedded(natsserver.ServerConfig{DataDir: dir, Listen: "127.0.0.1:0", Users: users})
	if err != nil {
		return RawChainResult{}, err
	}
	defer func() { srv.Shutdown(); srv.WaitForShutdown() }()
	conn := func() (*nats.Conn, jetstream.JetStream, error) {
		nc, err := natsserver.Connect(natsserver.ConnectConfig{URL: srv.ClientURL(), NkeyFile: keys.SeedFile(natsserver.IdentityAdmin)})
		if err != nil {
			return nil, nil, err
		}
		js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(4000))
		return nc, js, err
	}
	// names: the chain's streams BENCH_A, BENCH_B, … (one per hop and the
	// end), then the side stream.
	names := make([]string, 0, len(side)+2)
	for i := range len(side) + 1 {
		names = append(names, "BENCH_"+string(rune('A'+i)))
	}
	sideStream := "BENCH_SIDE"
	names = append(names, sideStream)
	last := names[len(side)]
	nc0, js0, err := conn()
	if err != nil {
		return RawChainResult{}, err
	}
	defer nc0.Close()
	for _, s := range names {
		if _, err := js0.CreateStream(ctx, jetstream.StreamConfig{Name: s, Subjects: []string{"bench." + s}, Storage: jetstream.FileStorage}); err != nil {
			return RawChainResult{}, fmt.Errorf("raw chain: %w", err)
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var stops []func()
	defer func() {
		for _, s := range stops {
			s()
		}
	}()
	sideTotal := 0
	for hop, extra := range side {
		var outs []output
		for e := range extra {
			plain := hop == len(side)-1 && e >= extra-h.Plain
			outs = append(outs, output{stream: sideStream, tag: "side" + strconv.Itoa(hop) + "-" + strconv.Itoa(e), plain: plain})
		}
		sideTotal += extra
		outs = append(outs, output{stream: names[hop+1], tag: names[hop+1]})
		stop, err := startHop(ctx, conn, names[hop], outs, h)
		if err != nil {
			return RawChainResult{}, err
		}
		stops = append(stops, stop)
	}
	// The end: record arrival latency.
	ncEnd, jsEnd, err := conn()
	if err != nil {
		return RawChainResult{}, err
	}
	defer ncEnd.Close()
	endCons, err := jsEnd.CreateOrUpdateConsumer(ctx, last, jetstream.ConsumerConfig{Durable: "end", AckPolicy: jetstream.AckExplicitPolicy, MaxAckPending: 10000})
	if err != nil {
		return RawChainResult{}, err
	}
	lat := make([]time.Duration, 0, n)
	var got atomic.Int64
	var lastArrival atomic.Int64
	var mu sync.Mutex
	allIn := make(chan struct{})
	base := time.Now()
	cc, err := endCons.Consume(func(m jetstream.Msg) {
		sent := time.Duration(binary.LittleEndian.Uint64(m.Data()[:8]))
		now := time.Since(base)
		mu.Lock()
		lat = append(lat, now-sent)
		mu.Unlock()
		_ = m.Ack()
		lastArrival.Store(int64(now))
		if got.Add(1) == int64(n) {
			close(allIn)
		}
	}, jetstream.PullMaxMessages(500))
	if err != nil {
		return RawChainResult{}, err
	}
	defer cc.Stop()

	ncPub, jsPub, err := conn()
	if err != nil {
		return RawChainResult{}, err
	}
	defer ncPub.Close()
	start := time.Since(base)
	buf := make([]byte, payload)
	for i := range buf[16:] {
		buf[16+i] = 'a' + byte(i%26)
	}
	for i := 0; i < n; i++ {
		b := make([]byte, payload)
		copy(b, buf)
		binary.LittleEndian.PutUint64(b[:8], uint64(time.Since(base)))
		binary.LittleEndian.PutUint64(b[8:16], uint64(i))
		m := h.msg(names[0], names[0], uint64(i), b, false)
		for {
			_, err := jsPub.PublishMsgAsync(m)
			if err == nil {
				break
			}
			select {
			case <-jsPub.PublishAsyncComplete():
			case <-ctx.Done():
				return RawChainResult{}, ctx.Err()
			}
		}
	}
	select {
	case <-allIn:
	case <-ctx.Done():
		return RawChainResult{}, ctx.Err()
	case <-time.After(5 * time.Minute):
		return RawChainResult{}, fmt.Errorf("raw chain: only %d of %d messages arrived", got.Load(), n)
	}
	end := time.Duration(lastArrival.Load())
	res := RawChainResult{Msgs: n, PayloadB: payload}
	if sideTotal > 0 {
		// The side messages may still be landing: the run ends when they
		// are all stored too.
		side, err := js0.Stream(ctx, sideStream)
		if err != nil {
			return res, err
		}
		for deadline := time.Now().Add(time.Minute); ; {
			info, err := side.Info(ctx)
			if err != nil {
				return res, err
			}
			if res.SideMsgs = info.State.Msgs; res.SideMsgs >= uint64(n*sideTotal) {
				break
			}
			if time.Now().After(deadline) {
				return res, fmt.Errorf("raw shape: %d of %d side messages stored", res.SideMsgs, n*sideTotal)
			}
			time.Sleep(time.Millisecond)
		}
		end = max(end, time.Since(base))
	}
	res.MsgsPerSec = float64(n) / (end - start).Seconds()
	mu.Lock()
	defer mu.Unlock()
	res.P50Ms, res.P99Ms = eval.Ms(eval.Percentile(lat, 50)), eval.Ms(eval.Percentile(lat, 99))
	return res, nil
}

// output is one message a hop publishes per input.
type output struct {
	stream, tag string
	plain       bool // without headers
}

// startHop consumes from stream and publishes each message to every
// output, acking the input once all outputs are stored.
func startHop(ctx context.Context, conn func() (*nats.Conn, jetstream.JetStream, error), stream string, next []output, h Headers) (func(), error) {
	nc, js, err := conn()
	if err != nil {
		return nil, err
	}
	cons, err := js.CreateOrUpdateConsumer(ctx, stream, jetstream.ConsumerConfig{Durable: "hop", AckPolicy: jetstream.AckExplicitPolicy, MaxAckPending: 10000})
	if err != nil {
		nc.Close()
		return nil, err
	}
	type pending struct {
		fs []jetstream.PubAckFuture
		m  jetstream.Msg
	}
	acks := make(chan pending, 10000)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for p := range acks {
			ok := true
			for _, f := range p.fs {
				select {
				case <-f.Ok():
				case <-f.Err():
					ok = false
				}
			}
			if ok {
				_ = p.m.Ack()
			} else {
				_ = p.m.Nak()
			}
		}
	}()
	cc, err := cons.Consume(func(m jetstream.Msg) {
		fs := make([]jetstream.PubAckFuture, 0, len(next))
		i := binary.LittleEndian.Uint64(m.Data()[8:16])
		for _, o := range next {
			out := h.msg(o.stream, o.tag, i, m.Data(), o.plain)
			for {
				f, err := js.PublishMsgAsync(out)
				if err == nil {
					fs = append(fs, f)
					break
				}
				select {
				case <-js.PublishAsyncComplete():
				case <-ctx.Done():
					return
				}
			}
		}
		acks <- pending{fs, m}
	}, jetstream.PullMaxMessages(500))
	if err != nil {
		nc.Close()
		return nil, err
	}
	return func() {
		cc.Stop()
		<-cc.Closed()
		close(acks)
		<-done
		nc.Close()
	}, nil
}
