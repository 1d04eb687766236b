package natsserver_test

import (
	"context"
	"fmt"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/reinception/rein/streams/bus"
	"github.com/reinception/rein/streams/natsserver"
)

// BenchmarkStore stores step events with rein's provisioning, a stage's
// identity and permissions, an in-process connection and a subject per
// conversation, and reports the process's CPU per stored message
// (cpu-ns/op) beside the wall time. alone: each waits for its
// acknowledgement before the next is sent, as at a steady rate;
// window=64: 64 are in flight, as in a backlog, where one write, one
// read and one wake-up serve many messages.
func BenchmarkStore(b *testing.B) {
	for _, window := range []int{1, 64} {
		for _, convs := range []int{1, 4000} {
			mode := "alone"
			if window > 1 {
				mode = fmt.Sprintf("window=%d", window)
			}
			b.Run(fmt.Sprintf("%s/conversations=%d", mode, convs), func(b *testing.B) { benchStore(b, convs, window) })
		}
	}
}

func benchStore(b *testing.B, convs, window int) {
	dir := b.TempDir()
	keys, users, err := natsserver.ServerAuth(dir)
	if err != nil {
		b.Fatal(err)
	}
	srv, err := natsserver.StartEmbedded(natsserver.ServerConfig{DataDir: dir, Users: users})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Shutdown()
	connect := func(id string) (*nats.Conn, jetstream.JetStream) {
		nc, err := natsserver.Connect(natsserver.ConnectConfig{InProcess: srv, NkeyFile: keys.SeedFile(id), Name: id})
		if err != nil {
			b.Fatal(err)
		}
		js, err := natsserver.NewJetStream(nc)
		if err != nil {
			b.Fatal(err)
		}
		return nc, js
	}
	admin, ajs := connect(natsserver.IdentityAdmin)
	defer admin.Close()
	ctx := context.Background()
	if err := natsserver.Provision(ctx, ajs, natsserver.DefaultProvision(), nil); err != nil {
		b.Fatal(err)
	}
	nc, js := connect(natsserver.IdentityAgentWorker)
	defer nc.Close()
	subjects := make([]string, convs)
	for i := range subjects {
		subjects[i] = bus.StepSubject("acme", "c"+strconv.Itoa(i))
	}
	// Headers of a stored event's size (≈ 360 B): CloudEvents attributes
	// and the id the server de-duplicates on.
	hdr := func(i int) nats.Header {
		return nats.Header{
			bus.HeaderMsgID:          {"step.acme.c" + strconv.Itoa(i%convs) + "." + strconv.Itoa(i)},
			bus.HeaderExpectedStream: {bus.StreamSteps},
			"ce-specversion":         {"1.0"},
			"ce-type":                {"dev.rein.step.v1"},
			"ce-source":              {"/rein/agentworker"},
			"ce-id":                  {"step.acme.c" + strconv.Itoa(i%convs) + "." + strconv.Itoa(i)},
			"ce-time":                {time.Now().UTC().Format(time.RFC3339Nano)},
			"ce-subject":             {"c" + strconv.Itoa(i%convs)},
			"ce-tenant":              {"acme"},
			"ce-conversation":        {"c" + strconv.Itoa(i%convs)},
			"ce-turn":                {strconv.Itoa(i)},
			"ce-partitionkey":        {"c" + strconv.Itoa(i%convs)},
			"content-type":           {"application/json"},
		}
	}
	body := make([]byte, 260)
	for i := range body {
		body[i] = 'x'
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	pending := make([]jetstream.PubAckFuture, 0, window)
	for i := 0; i < b.N; i++ {
		msg := &nats.Msg{Subject: subjects[i%convs], Header: hdr(i), Data: body}
		if window == 1 {
			if _, err := js.PublishMsg(ctx, msg); err != nil {
				b.Fatal(err)
			}
			continue
		}
		f, err := js.PublishMsgAsync(msg)
		if err != nil {
			b.Fatal(err)
		}
		if pending = append(pending, f); len(pending) == window || i == b.N-1 {
			for _, f := range pending {
				select {
				case <-f.Ok():
				case err := <-f.Err():
					b.Fatal(err)
				}
			}
			pending = pending[:0]
		}
	}
	b.StopTimer()
	b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
