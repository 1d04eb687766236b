package streams_test

import (
	"testing"

	"github.com/reinception/rein/streams"
)

// TestEveryStreamIsBoundedByDefault: no stream keeps data forever unless
// the operator says so. On the code before, every stream's MaxAge was 0
// (forever) with no size bound.
func TestEveryStreamIsBoundedByDefault(t *testing.T) {
	p := streams.DefaultProvision()
	for _, name := range streams.StreamNames {
		if got := p.StreamConfig(name).MaxAge; got != streams.DefaultMaxAge {
			t.Errorf("%s: default max_age %v, want %v", name, got, streams.DefaultMaxAge)
		}
	}
	// An override per stream keeps the others bounded …
	p.Streams = map[string]streams.StreamSettings{
		streams.StreamOutcomes: {KeepForever: true},
		streams.StreamSteps:    {MaxAge: 72 * 3600e9},
	}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	if got := p.StreamConfig(streams.StreamOutcomes).MaxAge; got != 0 {
		t.Errorf("keep_forever: max_age %v, want 0 (forever)", got)
	}
	if got := p.StreamConfig(streams.StreamSteps).MaxAge; got != 72*3600e9 {
		t.Errorf("REIN_STEPS max_age %v, want 72h", got)
	}
	if got := p.StreamConfig(streams.StreamTurns).MaxAge; got != streams.DefaultMaxAge {
		t.Errorf("REIN_TURNS max_age %v, want the default", got)
	}
	// … and defaults of max_age 0 keep everything, as before.
	p.Defaults.MaxAge = 0
	if got := p.StreamConfig(streams.StreamTurns).MaxAge; got != 0 {
		t.Errorf("defaults max_age 0: REIN_TURNS max_age %v, want forever", got)
	}
}
