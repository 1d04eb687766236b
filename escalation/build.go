package escalation

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/reinception/rein/streams"
)

// SinkDeps is what BuildSinks needs besides the configuration.
type SinkDeps struct {
	JetStream  jetstream.JetStream                      // required by handoff
	Publisher  *streams.Publisher                       // handoff publishes through it; default NewPublisher(JetStream, Registerer)
	Logger     *slog.Logger                             // default: discard
	Registerer prometheus.Registerer                    // used when Metrics is nil
	Metrics    *Metrics                                 // shared with the stage; built from Registerer when nil
	Transcript TranscriptFunc                           // handoff's transcript source
	OnTimeout  func(context.Context, cloudevents.Event) // handoff timeout hook (optional)
	HTTPClient *http.Client                             // webhook transport (optional)
	Getenv     func(string) string                      // default os.Getenv
	Now        func() time.Time                         // clock of webhook signatures and handoff deadlines (default: each config's own, else time.Now)
}

// BuildSinks validates the sinks of cfg and builds them in order, each
// under its configured name; webhook secrets are read from their
// environment variable or file here. On error, the sinks already built are
// closed. The caller closes the returned sinks.
func BuildSinks(cfg Config, deps SinkDeps) ([]Sink, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.defaults()
	if deps.Logger == nil {
		deps.Logger = slog.New(slog.DiscardHandler)
	}
	if deps.Getenv == nil {
		deps.Getenv = os.Getenv
	}
	if deps.Publisher == nil && deps.JetStream != nil {
		deps.Publisher = streams.NewPublisher(deps.JetStream, deps.Registerer)
	}
	m := deps.Metrics
	if m == nil {
		var err error
		if m, err = NewMetrics(deps.Registerer); err != nil {
			return nil, err
		}
	}
	var out []Sink
	fail := func(err error) ([]Sink, error) {
		for _, s := range out {
			_ = s.Close()
		}
		return nil, err
	}
	for i, sc := range cfg.Sinks {
		log := deps.Logger.With(slog.String("sink", sc.Name()), slog.String("kind", sc.Kind()))
		var (
			s   Sink
			err error
		)
		switch {
		case sc.Webhook != nil:
			wc := *sc.Webhook
			if err = wc.resolveSecret(deps.Getenv); err == nil {
				if wc.HTTPClient == nil {
					wc.HTTPClient = deps.HTTPClient
				}
				if deps.Now != nil {
					wc.Now = deps.Now
				}
				s, err = NewWebhook(wc, m, log)
			}
		case sc.JSONL != nil:
			s, err = NewJSONL(*sc.JSONL, m, log)
		case sc.Handoff != nil:
			hc := *sc.Handoff
			if hc.Transcript == nil {
				hc.Transcript = deps.Transcript
			}
			if hc.OnTimeout == nil {
				hc.OnTimeout = deps.OnTimeout
			}
			if deps.Now != nil {
				hc.Now = deps.Now
			}
			s, err = NewHandoff(deps.JetStream, deps.Publisher, hc, m, log)
		}
		if err != nil {
			return fail(fmt.Errorf("sinks[%d] (%s): %w", i, sc.Name(), err))
		}
		out = append(out, s)
	}
	return out, nil
}
