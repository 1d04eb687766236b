package escalation

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	cejs "github.com/cloudevents/sdk-go/protocol/nats_jetstream/v2"
	cloudevents "github.com/cloudevents/sdk-go/v2"
	"github.com/cloudevents/sdk-go/v2/binding"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
)

func transcriptOf(_ context.Context, tenant, conv string) ([]TranscriptLine, error) {
	return []TranscriptLine{
		{Turn: 1, Role: schemas.RoleUser, Text: "I'd like a window seat on " + conv},
		{Turn: 1, Role: schemas.RoleAgent, Text: "Let me check that for " + tenant + "."},
	}, nil
}

func setupHandoff(t *testing.T, cfg HandoffConfig) (jetstream.JetStream, *Handoff, *Metrics) {
	t.Helper()
	js := startJetStream(t)
	if _, err := EnsureHandoffStream(testCtx(t), js, 1); err != nil {
		t.Fatal(err)
	}
	m, _ := newTestMetrics(t)
	h, err := NewHandoff(js, cfg, m, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	return js, h, m
}

func itemCount(t *testing.T, js jetstream.JetStream, filter string) uint64 {
	t.Helper()
	s, err := js.Stream(testCtx(t), bus.StreamHandoff)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(testCtx(t), jetstream.WithSubjectFilter(filter))
	if err != nil {
		t.Fatal(err)
	}
	var n uint64
	for _, c := range info.State.Subjects {
		n += c
	}
	return n
}

// timeoutEvents reads every handoff timeout event in the stream.
func timeoutEvents(t *testing.T, js jetstream.JetStream) []schemas.HandoffTimeout {
	t.Helper()
	s, err := js.Stream(testCtx(t), bus.StreamHandoff)
	if err != nil {
		t.Fatal(err)
	}
	var out []schemas.HandoffTimeout
	for seq := uint64(1); ; {
		raw, err := s.GetMsg(testCtx(t), seq, jetstream.WithGetMsgSubject(bus.HandoffTimeout))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		seq = raw.Sequence + 1
		ev, err := binding.ToEvent(testCtx(t), cejs.NewMessage(&nats.Msg{Subject: raw.Subject, Header: raw.Header, Data: raw.Data}))
		if err != nil {
			t.Fatalf("timeout message is not a CloudEvent: %v", err)
		}
		if ev.Type() != schemas.TypeHandoffTimeout {
			t.Fatalf("type %s", ev.Type())
		}
		var to schemas.HandoffTimeout
		if err := schemas.Decode(ev, &to); err != nil {
			t.Fatal(err)
		}
		if ev.ID() != TimeoutEventID(to.EscalationID) || raw.Header.Get(bus.HeaderMsgID) != ev.ID() {
			t.Fatalf("timeout id %s / msg id %s for escalation %s", ev.ID(), raw.Header.Get(bus.HeaderMsgID), to.EscalationID)
		}
		meta, err := schemas.MetaOf(ev)
		if err != nil || raw.Subject != bus.HandoffTimeoutSubject(meta.Tenant, meta.Conversation) {
			t.Fatalf("timeout subject %s, meta %+v (%v)", raw.Subject, meta, err)
		}
		out = append(out, to)
	}
}

func TestHandoffClaim(t *testing.T) {
	clock := rtest.NewClock(time.Date(2026, 12, 2, 15, 0, 0, 0, time.UTC))
	js, h, m := setupHandoff(t, HandoffConfig{Deadline: 10 * time.Minute, NoSweeper: true, Transcript: transcriptOf, Now: clock.Now})
	ev := escalationEvent(t, "acme", "conv-7", 3)
	for range 2 { // a redelivered escalation makes no second item
		if err := h.Deliver(testCtx(t), ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.Deliver(testCtx(t), reportEvent(t, "acme", "conv-7", 2)); err != nil {
		t.Fatal(err)
	}
	if n := itemCount(t, js, bus.HandoffItems); n != 1 {
		t.Fatalf("%d items queued, want 1", n)
	}
	if got := testutil.ToFloat64(m.SinkDeliveries.WithLabelValues(KindHandoff, KindHandoff, OutcomeSkipped)); got != 1 {
		t.Errorf("skipped = %v, want 1 (the report)", got)
	}

	item, err := Claim(testCtx(t), js, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	want := HandoffItem{
		ID: ev.ID(), Tenant: "acme", Conversation: "conv-7", Turn: 3,
		ErrorType: "unsupported_action", Reason: schemas.ReasonTransfer,
		Summary:     "user wants a window seat; seat selection is not offered",
		Plan:        "Seat selection is not a supported action; transfer to a human with a summary.",
		DetectionID: schemas.EventID("detection", "acme", "conv-7", 3),
		CreatedAt:   clock.Now(), Deadline: clock.Now().Add(10 * time.Minute),
	}
	lines, _ := transcriptOf(context.Background(), "acme", "conv-7")
	if item.ID != want.ID || item.Tenant != want.Tenant || item.Conversation != want.Conversation || item.Turn != want.Turn ||
		item.ErrorType != want.ErrorType || item.Reason != want.Reason || item.Summary != want.Summary || item.Plan != want.Plan ||
		item.DetectionID != want.DetectionID || !item.CreatedAt.Equal(want.CreatedAt) || !item.Deadline.Equal(want.Deadline) ||
		!slices.Equal(item.Transcript, lines) || item.Sequence == 0 {
		t.Fatalf("claimed\n %+v\nwant\n %+v with transcript %v", *item, want, lines)
	}
	if _, err := Claim(testCtx(t), js, 0); !errors.Is(err, ErrNoHandoff) {
		t.Fatalf("second claim: %v, want ErrNoHandoff", err)
	}
	if n := itemCount(t, js, bus.HandoffItems); n != 0 {
		t.Fatalf("%d items left after the claim", n)
	}
	// A claimed item never times out.
	clock.Advance(time.Hour)
	if n, err := h.Sweep(testCtx(t)); err != nil || n != 0 {
		t.Fatalf("sweep after claim: %d timeouts (%v), want 0", n, err)
	}
	if len(timeoutEvents(t, js)) != 0 || testutil.ToFloat64(m.HandoffTimeouts) != 0 {
		t.Fatal("a claimed item timed out")
	}
}

func TestHandoffTimeout(t *testing.T) {
	clock := rtest.NewClock(time.Date(2026, 12, 2, 15, 0, 0, 0, time.UTC))
	var (
		mu       sync.Mutex
		notified []cloudevents.Event
	)
	js, h, m := setupHandoff(t, HandoffConfig{
		Deadline: time.Minute, NoSweeper: true, Now: clock.Now,
		OnTimeout: func(_ context.Context, ev cloudevents.Event) { mu.Lock(); notified = append(notified, ev); mu.Unlock() },
	})
	first, second := escalationEvent(t, "acme", "c1", 1), escalationEvent(t, "globex", "c2", 4)
	if err := h.Deliver(testCtx(t), first); err != nil {
		t.Fatal(err)
	}
	clock.Advance(30 * time.Second)
	if err := h.Deliver(testCtx(t), second); err != nil {
		t.Fatal(err)
	}

	steps := []struct {
		advance      time.Duration
		wantNew      int
		wantTimeouts []string
	}{
		{0, 0, nil}, // nothing due yet
		{30 * time.Second, 1, []string{first.ID()}}, // first's deadline reached
		{10 * time.Second, 0, []string{first.ID()}}, // second not yet due
		{20 * time.Second, 1, []string{first.ID(), second.ID()}},
		{time.Hour, 0, []string{first.ID(), second.ID()}}, // never twice
	}
	for i, st := range steps {
		clock.Advance(st.advance)
		n, err := h.Sweep(testCtx(t))
		if err != nil || n != st.wantNew {
			t.Fatalf("step %d: sweep published %d (%v), want %d", i, n, err, st.wantNew)
		}
		var got []string
		for _, to := range timeoutEvents(t, js) {
			got = append(got, to.EscalationID)
		}
		if fmt.Sprint(got) != fmt.Sprint(st.wantTimeouts) {
			t.Fatalf("step %d: timeouts for %v, want %v", i, got, st.wantTimeouts)
		}
	}
	tos := timeoutEvents(t, js)
	if tos[0].Turn != 1 || tos[0].Deadline != "2026-12-02T15:01:00Z" {
		t.Errorf("timeout payload %+v", tos[0])
	}
	if got := testutil.ToFloat64(m.HandoffTimeouts); got != 2 {
		t.Errorf("rein_handoff_timeouts_total = %v, want 2", got)
	}
	mu.Lock()
	if len(notified) != 2 || notified[0].ID() != TimeoutEventID(first.ID()) {
		t.Errorf("OnTimeout saw %d events", len(notified))
	}
	mu.Unlock()
	// A timed-out item can no longer be claimed.
	if _, err := Claim(testCtx(t), js, 0); !errors.Is(err, ErrNoHandoff) {
		t.Fatalf("claim after timeout: %v, want ErrNoHandoff", err)
	}
}

// The background sweep emits the timeout on its own, with the real clock.
func TestHandoffBackgroundSweep(t *testing.T) {
	js, h, m := setupHandoff(t, HandoffConfig{Deadline: 20 * time.Millisecond, SweepInterval: 5 * time.Millisecond})
	ev := escalationEvent(t, "acme", "c1", 2)
	if err := h.Deliver(testCtx(t), ev); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the handoff timeout", func() bool { return testutil.ToFloat64(m.HandoffTimeouts) == 1 })
	tos := timeoutEvents(t, js)
	if len(tos) != 1 || tos[0].EscalationID != ev.ID() {
		t.Fatalf("timeouts %+v", tos)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
}

// Desktops claiming while the sweep times items out: every item ends
// exactly one way.
func TestHandoffClaimRacesTimeout(t *testing.T) {
	clock := rtest.NewClock(time.Date(2026, 12, 2, 15, 0, 0, 0, time.UTC))
	js, h, _ := setupHandoff(t, HandoffConfig{Deadline: time.Minute, NoSweeper: true, Now: clock.Now})
	const n = 40
	all := map[string]bool{}
	for i := range n {
		ev := escalationEvent(t, "acme", fmt.Sprintf("c%d", i), 1)
		all[ev.ID()] = true
		if err := h.Deliver(testCtx(t), ev); err != nil {
			t.Fatal(err)
		}
	}
	clock.Advance(2 * time.Minute)
	var (
		mu      sync.Mutex
		claimed []string
		wg      sync.WaitGroup
	)
	for range 4 {
		wg.Go(func() {
			for {
				item, err := Claim(testCtx(t), js, 0)
				if errors.Is(err, ErrNoHandoff) {
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				claimed = append(claimed, item.ID)
				mu.Unlock()
			}
		})
	}
	wg.Go(func() {
		if _, err := h.Sweep(testCtx(t)); err != nil {
			t.Error(err)
		}
	})
	wg.Wait()
	if _, err := h.Sweep(testCtx(t)); err != nil { // whatever the claimers left
		t.Fatal(err)
	}
	seen := map[string]string{}
	for _, id := range claimed {
		if seen[id] != "" {
			t.Fatalf("%s claimed twice", id)
		}
		seen[id] = "claimed"
	}
	for _, to := range timeoutEvents(t, js) {
		if seen[to.EscalationID] != "" {
			t.Fatalf("%s both %s and timed out", to.EscalationID, seen[to.EscalationID])
		}
		seen[to.EscalationID] = "timeout"
	}
	if len(seen) != n {
		t.Fatalf("%d items accounted for, want %d", len(seen), n)
	}
	t.Logf("%d claimed, %d timed out", len(claimed), n-len(claimed))
}

func TestHandoffDeliverErrors(t *testing.T) {
	failing := func(context.Context, string, string) ([]TranscriptLine, error) {
		return nil, errors.New("conversation store down")
	}
	_, h, m := setupHandoff(t, HandoffConfig{NoSweeper: true, Transcript: failing})
	err := h.Deliver(testCtx(t), escalationEvent(t, "acme", "c1", 1))
	if err == nil || errors.Is(err, ErrDeliveryFailed) {
		t.Fatalf("transcript failure: %v, want a transient error", err)
	}
	bad := escalationEvent(t, "acme", "c1", 1)
	bad.SetExtension(schemas.ExtTenant, "not a token!")
	if err := h.Deliver(testCtx(t), bad); !errors.Is(err, ErrDeliveryFailed) {
		t.Fatalf("bad tenant: %v, want ErrDeliveryFailed", err)
	}
	if err := bad.SetData(schemas.DataContentType, []byte(`{"turn":-1}`)); err != nil {
		t.Fatal(err)
	}
	bad.SetExtension(schemas.ExtTenant, "acme")
	if err := h.Deliver(testCtx(t), bad); !errors.Is(err, ErrDeliveryFailed) {
		t.Fatalf("bad payload: %v, want ErrDeliveryFailed", err)
	}
	if got := testutil.ToFloat64(m.SinkDeliveries.WithLabelValues(KindHandoff, KindHandoff, OutcomeFailed)); got != 2 {
		t.Errorf("failed = %v, want 2", got)
	}
}

func TestEnsureHandoffStreamIdempotent(t *testing.T) {
	js := startJetStream(t)
	for range 2 {
		s, err := EnsureHandoffStream(testCtx(t), js, 0)
		if err != nil {
			t.Fatal(err)
		}
		info, err := s.Info(testCtx(t))
		if err != nil {
			t.Fatal(err)
		}
		if info.Config.Retention != jetstream.WorkQueuePolicy || info.Config.Replicas != 1 ||
			!slices.Equal(info.Config.Subjects, []string{bus.HandoffItems, bus.HandoffTimeout}) {
			t.Fatalf("stream config %+v", info.Config)
		}
	}
	if _, err := NewHandoff(nil, HandoffConfig{}, nil, nil); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("nil JetStream: %v", err)
	}
}

// A stream provisioned without the desktops' consumer (streams.Provision
// alone) still lets desktops claim.
func TestClaimCreatesMissingConsumer(t *testing.T) {
	js := startJetStream(t)
	s, err := js.Stream(testCtx(t), bus.StreamHandoff)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteConsumer(testCtx(t), bus.DurableHandoffDesktops); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
		t.Fatal(err)
	}
	h, err := NewHandoff(js, HandoffConfig{NoSweeper: true}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	ev := escalationEvent(t, "acme", "c1", 1)
	if err := h.Deliver(testCtx(t), ev); err != nil {
		t.Fatal(err)
	}
	item, err := Claim(testCtx(t), js, 5*time.Second)
	if err != nil || item.ID != ev.ID() {
		t.Fatalf("claim: %+v, %v", item, err)
	}
}

// Items and timeout events go through the configured streams.Publisher, so
// they count in rein_published_total{stream="REIN_HANDOFF"}.
func TestHandoffPublishesThroughPublisher(t *testing.T) {
	js := startJetStream(t)
	if _, err := EnsureHandoffStream(testCtx(t), js, 1); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	clock := rtest.NewClock(time.Unix(1_700_000_000, 0))
	h, err := NewHandoff(js, HandoffConfig{Publisher: streams.NewPublisher(js, reg, streams.PublisherConfig{}), Deadline: time.Minute, NoSweeper: true, Now: clock.Now}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if err := h.Deliver(testCtx(t), escalationEvent(t, "acme", "p1", 1)); err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Minute)
	if n, err := h.Sweep(testCtx(t)); err != nil || n != 1 {
		t.Fatalf("sweep: %d, %v", n, err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	published := 0.0
	for _, f := range families {
		if f.GetName() != "rein_published_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "stream" && l.GetValue() == bus.StreamHandoff {
					published += m.GetCounter().GetValue()
				}
			}
		}
	}
	if published != 2 {
		t.Fatalf("rein_published_total{stream=%q} = %v, want 2 (the item and its timeout)", bus.StreamHandoff, published)
	}
}
