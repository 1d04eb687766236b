package natsserver_test

import (
	"slices"
	"testing"
	"time"

	"github.com/reinception/rein/streams/bus"
	"github.com/reinception/rein/streams/natsserver"
)

// REIN_LABELS keeps labels far longer than the defaults keep traffic
// (bounded all the same), for ever when the defaults keep everything; its
// own settings apply; it is provisioned, backed up and read like every
// rein stream.
func TestLabelStreamRetention(t *testing.T) {
	p := natsserver.DefaultProvision()
	p.Defaults.MaxAge, p.Defaults.MaxBytes = 720*time.Hour, 1<<30
	cfg := p.StreamConfig(bus.StreamLabels)
	if cfg.MaxAge != natsserver.DefaultLabelMaxAge || cfg.MaxBytes != -1 {
		t.Errorf("labels max_age %v max_bytes %d, want %v and no size bound", cfg.MaxAge, cfg.MaxBytes, natsserver.DefaultLabelMaxAge)
	}
	if cfg.Duplicates < time.Hour {
		t.Errorf("labels duplicate window %v, want at least an hour", cfg.Duplicates)
	}
	if !slices.Equal(cfg.Subjects, []string{bus.LabelsAll}) {
		t.Errorf("subjects %v", cfg.Subjects)
	}
	if turns := p.StreamConfig(bus.StreamTurns); turns.MaxAge != 720*time.Hour {
		t.Errorf("turns max_age %v: the defaults must still apply elsewhere", turns.MaxAge)
	}
	p.Defaults.MaxAge = 0
	if got := p.StreamConfig(bus.StreamLabels).MaxAge; got != 0 {
		t.Errorf("defaults keep everything: labels max_age %v, want for ever", got)
	}
	p.Defaults.MaxAge = 720 * time.Hour
	p.Streams = map[string]natsserver.StreamSettings{bus.StreamLabels: {KeepForever: true}}
	if got := p.StreamConfig(bus.StreamLabels).MaxAge; got != 0 {
		t.Errorf("keep_forever: labels max_age %v", got)
	}
	p.Streams = map[string]natsserver.StreamSettings{bus.StreamLabels: {MaxAge: 30 * time.Minute}}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	cfg = p.StreamConfig(bus.StreamLabels)
	if cfg.MaxAge != 30*time.Minute || cfg.Duplicates > cfg.MaxAge {
		t.Errorf("own max_age: %v, duplicates %v", cfg.MaxAge, cfg.Duplicates)
	}
	if !slices.Contains(natsserver.StreamNames, bus.StreamLabels) {
		t.Error("REIN_LABELS is not among the provisioned streams")
	}
	if got := bus.SubjectsFor(bus.StreamLabels, "acme", "c1"); !slices.Equal(got, []string{"rein.labels.acme.c1.>"}) {
		t.Errorf("SubjectsFor labels: %v", got)
	}
}
