package dashboard

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/reinception/rein/internal/telemetry"
	"github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
	"github.com/reinception/rein/streams/natsserver"
)

// publishTurns stores n user turns of conversation conv through its own
// connection and publisher: another process, as far as the dashboard knows.
func publishTurns(t *testing.T, js *testutil.JS, identity, conv string, n int) {
	t.Helper()
	_, other := js.ConnectTCP(t, identity)
	pub := streams.NewPublisher(other, prometheus.NewRegistry(), streams.PublisherConfig{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := 1; i <= n; i++ {
		m := schemas.Meta{Tenant: tenant, Conversation: conv, Turn: i}
		ev, err := schemas.NewEvent(schemas.TypeTurn, fmt.Sprintf("turn-%s-%d", conv, i), "", m, schemas.Turn{Role: schemas.RoleUser, Text: "hello", Turn: i})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pub.Publish(ctx, bus.StreamTurns, bus.TurnSubject(tenant, conv, schemas.RoleUser), &ev); err != nil {
			t.Fatalf("publish: %v", err)
		}
	}
}

func flowOf(t *testing.T, o *Overview, stream string) Flow {
	t.Helper()
	for _, f := range o.Flows {
		if f.Stream == stream {
			return f
		}
	}
	t.Fatalf("no flow of %s in %+v (problems %v)", stream, o.Flows, o.Problems)
	return Flow{}
}

// The traffic figures are the deployment's, read from the streams: turns
// that two other processes published — one before this dashboard existed —
// are counted, though this process's counters never saw any of them; the
// window reaches back its whole span; "all" starts with this dashboard.
func TestFlowsCountEveryReplica(t *testing.T) {
	h := testutil.StartJetStream(t, "")
	publishTurns(t, h, natsserver.IdentityAdmin, "before", 4)

	reg := prometheus.NewRegistry() // this process: it decided nothing
	d, err := New(Config{CacheTTL: -1}, Deps{JS: h.JS, Gatherer: reg})
	if err != nil {
		t.Fatal(err)
	}
	publishTurns(t, h, natsserver.IdentityIngress, "after", 3)
	if _, err := h.JS.CreateOrUpdateConsumer(context.Background(), bus.StreamTurns, jetstream.ConsumerConfig{
		Durable: bus.DurableDetector, FilterSubject: bus.UserTurnsAll, AckPolicy: jetstream.AckExplicitPolicy,
	}); err != nil {
		t.Fatal(err)
	}

	o, err := d.OverviewFor(context.Background(), Query{Window: "1m"})
	if err != nil {
		t.Fatal(err)
	}
	if o.Decisions.Value != 0 {
		t.Fatalf("this process's counters saw %v decisions; the test needs them empty", o.Decisions.Value)
	}
	turns := flowOf(t, o, bus.StreamTurns)
	if turns.Messages.Value != 7 || turns.Rate.Text != "0.12/s" {
		t.Errorf("1m flow of %s: %+v, want 7 messages, 0.12/s", bus.StreamTurns, turns)
	}
	var sum int
	for v := range strings.FieldsSeq(turns.TrendText) {
		var n int
		fmt.Sscan(v, &n)
		sum += n
	}
	if sum != 7 || strings.Count(turns.Trend, ",") != trendPoints || turns.Direction != DirectionRising {
		t.Errorf("trend %q (%q), direction %s: want 12 buckets summing to 7, rising", turns.TrendText, turns.Trend, turns.Direction)
	}
	if det := flowOf(t, o, bus.StreamDetections); det.Messages.Value != 0 || det.Direction != DirectionIdle {
		t.Errorf("detections flow %+v", det)
	}
	if !strings.Contains(o.FlowCoverage, "every replica") {
		t.Errorf("flow coverage %q", o.FlowCoverage)
	}
	var lag *Consumer
	for i := range o.Consumers {
		if o.Consumers[i].Name == bus.DurableDetector {
			lag = &o.Consumers[i]
		}
	}
	if lag == nil || lag.Pending.Value != 7 || !strings.HasSuffix(lag.OldestPending.Text, "s") || lag.OldestPending.Value <= 0 || lag.OldestPending.Value > time.Since(d.hist.started).Seconds()+60 {
		t.Errorf("detector consumer %+v", lag)
	}

	all, err := d.OverviewFor(context.Background(), Query{})
	if err != nil {
		t.Fatal(err)
	}
	if f := flowOf(t, all, bus.StreamTurns); f.Messages.Value != 3 {
		t.Errorf("window all (since this dashboard started): %v turns, want the 3 stored since (%s)", f.Messages.Value, all.FlowCoverage)
	}
}

func TestDirection(t *testing.T) {
	for _, c := range []struct {
		b    []uint64
		want string
	}{
		{[]uint64{0, 0, 0, 0}, DirectionIdle},
		{[]uint64{1, 1, 5, 5}, DirectionRising},
		{[]uint64{5, 5, 1, 1}, DirectionFalling},
		{[]uint64{5, 4, 100, 5, 5}, DirectionSteady}, // the middle bucket is neither half
		{[]uint64{0, 1}, DirectionRising},
	} {
		if got := direction(c.b); got != c.want {
			t.Errorf("direction(%v) = %s, want %s", c.b, got, c.want)
		}
	}
	if _, err := StreamFlow(context.Background(), nil, "S", 0, time.Now(), 0, 2); !errors.Is(err, ErrBadQuery) {
		t.Errorf("zero span: %v", err)
	}
}

// publishDetections stores one detection per outcome given ("activated:<type>",
// "clear", "failed") for tenant tn through its own connection: another
// replica's detector, as far as the dashboard knows.
func publishDetections(t *testing.T, js *testutil.JS, tn, conv string, outcomes ...string) {
	t.Helper()
	_, other := js.ConnectTCP(t, natsserver.IdentityAdmin)
	pub := streams.NewPublisher(other, prometheus.NewRegistry(), streams.PublisherConfig{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i, oc := range outcomes {
		n := i + 1
		d := schemas.Detection{Turn: n, UserText: "x", Module: "rules", TaxonomyVersion: "1"}
		switch kind, errorType, _ := strings.Cut(oc, ":"); kind {
		case "activated":
			d.Rein, d.ErrorType, d.Reasoning = true, errorType, "r"
		case "failed":
			d.Failed, d.FailReason = true, "timeout"
		}
		ev, err := schemas.NewEvent(schemas.TypeDetection, fmt.Sprintf("detection.%s.%s.%d", tn, conv, n), "", schemas.Meta{Tenant: tn, Conversation: conv, Turn: n}, d)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pub.Publish(ctx, bus.StreamDetections, bus.DetectionSubject(tn, conv), &ev); err != nil {
			t.Fatalf("publish: %v", err)
		}
	}
}

// The "every replica" decisions are read from REIN_DETECTIONS: other
// replicas' detections, one stored before this dashboard existed, are
// counted though this process's counters saw none; filters apply; "all"
// is since the dashboard started.
func TestDeploymentDecisionsCountEveryReplica(t *testing.T) {
	h := testutil.StartJetStream(t, "")
	publishDetections(t, h, "acme", "before", "activated:anaphora", "clear")
	d, err := New(Config{CacheTTL: -1}, Deps{JS: h.JS, Gatherer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	publishDetections(t, h, "acme", "after", "activated:unsupported_domain", "clear", "failed")
	publishDetections(t, h, "globex", "after", "clear")

	for _, c := range []struct {
		q                                  Query
		decisions, judged, activated, fail float64
		rate                               string
	}{
		{Query{Window: "1m"}, 6, 5, 2, 1, "40.0%"},
		{Query{Window: "1m", Tenant: "globex"}, 1, 1, 0, 0, "0.0%"},
		{Query{Window: "1h", ErrorType: "anaphora"}, 6, 5, 1, 1, "20.0%"},
		{Query{}, 4, 3, 1, 1, "33.3%"}, // since the dashboard started
	} {
		o, err := d.OverviewFor(context.Background(), c.q)
		if err != nil {
			t.Fatal(err)
		}
		if o.Decisions.Value != 0 {
			t.Fatalf("this process's counters saw %v decisions", o.Decisions.Value)
		}
		dep := o.Deployment
		if dep.Decisions.Value != c.decisions || dep.Judged.Value != c.judged || dep.Activated.Value != c.activated ||
			dep.Failed.Value != c.fail || dep.ActivationRate.Text != c.rate || dep.Note != "" {
			t.Errorf("%+v: deployment %+v (problems %v)", c.q, dep, o.Problems)
		}
	}

	// Later detections are read incrementally.
	publishDetections(t, h, "acme", "later", "activated:anaphora")
	o, err := d.OverviewFor(context.Background(), Query{Window: "1m"})
	if err != nil {
		t.Fatal(err)
	}
	if o.Deployment.Decisions.Value != 7 || o.Deployment.Activated.Value != 3 {
		t.Errorf("after one more: %+v", o.Deployment)
	}
}

// The ledger's windows: within 15 minutes from the 5 s buckets, beyond
// from the minute buckets; what ages out is forgotten; tenants past the
// label limit count as one.
func TestLedgerTiers(t *testing.T) {
	now := time.Date(2026, 12, 4, 8, 0, 0, 0, time.UTC)
	l := newLedger(now.Add(-2 * time.Hour))
	put := func(ago time.Duration) {
		at := now.Add(-ago)
		for _, v := range []metricsView{l.fine.bucket(at), l.coarse.bucket(at)} {
			v.decisions[[2]string{"acme", "clear"}]++
		}
	}
	for _, ago := range []time.Duration{10 * time.Second, 50 * time.Second, 3 * time.Minute, 20 * time.Minute, 59 * time.Minute, 2 * time.Hour} {
		put(ago)
	}
	l.fine.forget(now)
	l.coarse.forget(now)
	for _, c := range []struct {
		span time.Duration
		want float64
	}{{time.Minute, 2}, {5 * time.Minute, 3}, {15 * time.Minute, 3}, {time.Hour, 5}} {
		v, _ := l.view(now.Add(-c.span), now)
		if got := v.decisions[[2]string{"acme", "clear"}]; got != c.want {
			t.Errorf("last %s: %v decisions, want %v", c.span, got, c.want)
		}
	}
	if len(l.fine.buckets) != 3 || len(l.coarse.buckets) != 4 { // 10 s and 50 s ago share a minute
		t.Errorf("kept %d fine and %d coarse buckets, want 3 and 4", len(l.fine.buckets), len(l.coarse.buckets))
	}
	for i := range 300 {
		l.tenant(fmt.Sprintf("t%d", i))
	}
	if l.tenant("t0") != "t0" || l.tenant("t299") != telemetry.OtherTenant || l.tenants.Len() != telemetry.MaxTenantLabels {
		t.Errorf("tenant cap: %d tenants", l.tenants.Len())
	}
}
