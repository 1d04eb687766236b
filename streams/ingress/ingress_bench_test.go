package ingress_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/ingress"
)

// BenchmarkIngressTurn: rein's own CPU for one POST /v1/turns, binary
// mode, up to the JetStream publish (stubbed: JetStream's cost is the
// bench's raw reference, not this). Issue 38: the turn was decoded and
// schema-validated three times on this path.
func BenchmarkIngressTurn(b *testing.B) {
	// No rate limit: the path, not the limiter.
	in, err := ingress.New(ingress.Config{}, ingress.Deps{Registerer: prometheus.NewRegistry()})
	if err != nil {
		b.Fatal(err)
	}
	ingress.SetIngressPublish(in, func(_ context.Context, _ *streams.Publisher, m *nats.Msg) (streams.TurnResult, error) {
		return streams.TurnResult{Sequence: 1}, nil
	})
	body := `{"role":"user","text":"I would like to change the flight on reservation Z3PLW8 to the next day, and cancel the other one.","turn":1}`
	b.ReportAllocs()
	for b.Loop() {
		r := httptest.NewRequest(http.MethodPost, "/v1/turns", strings.NewReader(body))
		for k, v := range map[string]string{"ce-specversion": "1.0", "ce-id": "m1", "ce-source": "/platform", "ce-type": "dev.rein.turn.v1",
			"ce-tenant": "acme", "ce-conversation": "c1", "ce-turn": "1", "content-type": "application/json"} {
			r.Header.Set(k, v)
		}
		w := httptest.NewRecorder()
		in.ServeHTTP(w, r)
		if w.Code != http.StatusAccepted {
			b.Fatalf("%d %s", w.Code, w.Body)
		}
	}
}
