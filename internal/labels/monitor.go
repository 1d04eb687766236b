package labels

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/reinception/rein/internal/telemetry"
)

// MonitorConfig is how often and over what the measured precision is
// exported.
type MonitorConfig struct {
	// Interval between two readings of REIN_LABELS (default 5m).
	Interval time.Duration
	// Window is how far back the judged traffic goes (default 30 days).
	Window time.Duration
	// Floor is exported as rein_label_precision_floor, for the alert rule
	// (default 0.8).
	Floor float64
}

// Defaults of MonitorConfig.
const (
	DefaultMonitorInterval = 5 * time.Minute
	DefaultMonitorWindow   = 30 * 24 * time.Hour
	DefaultPrecisionFloor  = 0.8
)

func (c MonitorConfig) withDefaults() MonitorConfig {
	if c.Interval == 0 {
		c.Interval = DefaultMonitorInterval
	}
	if c.Window == 0 {
		c.Window = DefaultMonitorWindow
	}
	if c.Floor == 0 {
		c.Floor = DefaultPrecisionFloor
	}
	return c
}

// Validate checks the settings.
func (c MonitorConfig) Validate() error {
	c = c.withDefaults()
	if c.Interval < time.Second || c.Window < 0 || c.Floor < 0 || c.Floor > 1 {
		return fmt.Errorf("%w: label monitor: interval %v (at least 1s), window %v, floor %v (0..1)", ErrBadLabel, c.Interval, c.Window, c.Floor)
	}
	return nil
}

// MonitorDeps are the monitor's collaborators.
type MonitorDeps struct {
	JS         jetstream.JetStream
	Registerer prometheus.Registerer
	Logger     *slog.Logger
	Now        func() time.Time
}

// Monitor exports each tenant's precision measured from labels as gauges.
type Monitor struct {
	cfg                       MonitorConfig
	deps                      MonitorDeps
	value, lower, upper, size *prometheus.GaugeVec
	// shown are the tenant label values with series now.
	shown map[string]bool
}

// NewMonitor registers the gauges; the floor is set at once.
func NewMonitor(cfg MonitorConfig, deps MonitorDeps) (*Monitor, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if deps.Now == nil {
		deps.Now = time.Now
	}
	if deps.Logger == nil {
		deps.Logger = slog.New(slog.DiscardHandler)
	}
	reg := deps.Registerer
	m := &Monitor{cfg: cfg, deps: deps,
		value: telemetry.NewGaugeVec(reg, telemetry.MLabelPrecision, "Detection precision measured from operators' labels (weighted by the review queue's probabilities; the type must match), per tenant.", "tenant"),
		lower: telemetry.NewGaugeVec(reg, telemetry.MLabelPrecisionLower, "Lower bound of the 95 % Wilson interval of rein_label_precision.", "tenant"),
		upper: telemetry.NewGaugeVec(reg, telemetry.MLabelPrecisionUpper, "Upper bound of the 95 % Wilson interval of rein_label_precision.", "tenant"),
		size:  telemetry.NewGaugeVec(reg, telemetry.MLabelPrecisionCount, "Labels behind rein_label_precision (activated turns of the review queue).", "tenant"),
	}
	telemetry.NewGaugeVec(reg, telemetry.MLabelPrecisionFloor, "The precision below which ReinMeasuredPrecisionBelowFloor fires.").WithLabelValues().Set(cfg.Floor)
	return m, nil
}

// Refresh reads the labels of the window and sets the gauges: one series
// per tenant with a defined precision, the tenants past
// telemetry.MaxTenantLabels pooled under telemetry.OtherTenant. It is not
// safe for concurrent use; Run calls it from one goroutine.
func (m *Monitor) Refresh(ctx context.Context) error {
	ls, err := Read(ctx, m.deps.JS, Filter{Since: m.deps.Now().Add(-m.cfg.Window)})
	if err != nil {
		return err
	}
	byTenant := map[string][]Stored{}
	for _, s := range ls {
		byTenant[s.Tenant] = append(byTenant[s.Tenant], s)
	}
	var names telemetry.TenantLabels
	pooled := map[string][]Stored{}
	for _, t := range slices.Sorted(maps.Keys(byTenant)) {
		l := names.Label(t)
		pooled[l] = append(pooled[l], byTenant[t]...)
	}
	// Series are set, then those of tenants gone deleted, never all
	// reset: a scrape in between would break the alert's for: period.
	set := map[string]bool{}
	for t, ls := range pooled {
		row, _ := Quality(ls).Row(RowOverall)
		p := row.Precision
		if !p.Defined() {
			continue
		}
		set[t] = true
		m.value.WithLabelValues(t).Set(p.Value)
		m.lower.WithLabelValues(t).Set(p.Lower)
		m.upper.WithLabelValues(t).Set(p.Upper)
		m.size.WithLabelValues(t).Set(float64(p.Labels))
	}
	for t := range m.shown {
		if !set[t] {
			for _, g := range []*prometheus.GaugeVec{m.value, m.lower, m.upper, m.size} {
				g.DeleteLabelValues(t)
			}
		}
	}
	m.shown = set
	return nil
}

// Run refreshes at once and then every Interval until ctx ends; a failed
// reading is logged and the gauges keep their last values.
func (m *Monitor) Run(ctx context.Context) error {
	t := time.NewTicker(m.cfg.Interval)
	defer t.Stop()
	for {
		if err := m.Refresh(ctx); err != nil && ctx.Err() == nil {
			m.deps.Logger.Warn("label precision not refreshed", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
