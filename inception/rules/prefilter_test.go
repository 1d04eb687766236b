package rules

import (
	"testing"

	"github.com/reinception/rein/internal/testutil/inceptiontest"
)

// TestAirportStartsNeverHidesALegChain: where airportStarts sees fewer
// than two places a leg could start, airportPair finds fewer than two
// legs, so legChain may skip the expression there.
func TestAirportStartsNeverHidesALegChain(t *testing.T) {
	texts := []string{"JFK to LAX, then LAX to SEA, then SEA back to JFK", "JFK-LAX and LAX->SEA", "ABCD to EFG to HIJ",
		"fly JFK to LAX", "JFK to LAXX to SEA", "A JFK to LAX", "JFK  to LAX", "Can you show me reservation Q7RM2K?"}
	for _, dlg := range inceptiontest.TrajectoryTurns(t) {
		for _, u := range dlg {
			texts = append(texts, u.Text)
		}
	}
	multi := 0
	for _, text := range texts {
		legs := len(airportPair.FindAllStringIndex(text, -1))
		if legs >= 2 {
			multi++
		}
		if airportStarts(text) < 2 && legs >= 2 {
			t.Errorf("%q: %d legs, yet airportStarts %d", text, legs, airportStarts(text))
		}
	}
	if multi < 2 {
		t.Fatalf("only %d texts with two legs or more: the check proves nothing", multi)
	}
}
