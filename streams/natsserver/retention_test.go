package natsserver_test

import (
	"testing"

	"github.com/reinception/rein/streams/bus"
	"github.com/reinception/rein/streams/natsserver"
)

// TestEveryStreamIsBoundedByDefault: no stream keeps data forever unless
// the operator says so. On the code before, every stream's MaxAge was 0
// (forever) with no size bound.
func TestEveryStreamIsBoundedByDefault(t *testing.T) {
	p := natsserver.DefaultProvision()
	for _, name := range natsserver.StreamNames {
		want := natsserver.DefaultMaxAge
		if name == bus.StreamLabels {
			want = natsserver.DefaultLabelMaxAge // operators' labels: bounded, but far longer
		}
		if got := p.StreamConfig(name).MaxAge; got != want {
			t.Errorf("%s: default max_age %v, want %v", name, got, want)
		}
	}
	// An override per stream keeps the others bounded …
	p.Streams = map[string]natsserver.StreamSettings{
		bus.StreamOutcomes: {KeepForever: true},
		bus.StreamSteps:    {MaxAge: 72 * 3600e9},
	}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	if got := p.StreamConfig(bus.StreamOutcomes).MaxAge; got != 0 {
		t.Errorf("keep_forever: max_age %v, want 0 (forever)", got)
	}
	if got := p.StreamConfig(bus.StreamSteps).MaxAge; got != 72*3600e9 {
		t.Errorf("REIN_STEPS max_age %v, want 72h", got)
	}
	if got := p.StreamConfig(bus.StreamTurns).MaxAge; got != natsserver.DefaultMaxAge {
		t.Errorf("REIN_TURNS max_age %v, want the default", got)
	}
	// … and defaults of max_age 0 keep everything, as before.
	p.Defaults.MaxAge = 0
	if got := p.StreamConfig(bus.StreamTurns).MaxAge; got != 0 {
		t.Errorf("defaults max_age 0: REIN_TURNS max_age %v, want forever", got)
	}
}
