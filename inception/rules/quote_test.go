package rules

import (
	"context"
	"strings"
	"testing"

	"github.com/reinception/rein/inception"
	"github.com/reinception/rein/internal/testutil/inceptiontest"
)

// The rules match on the lower-cased turn. When lower-casing changed the
// turn's length (a stray Windows-1252 apostrophe, an invalid byte, turns
// into a three-byte U+FFFD), the evidence was quoted from the lower-cased
// text, and the planted reasoning told the agent of reservation "zfa04y"
// where the user wrote ZFA04Y. It must quote what the user wrote.
func TestEvidenceIsQuotedAsTheUserWroteItWhateverLowerCasingDoes(t *testing.T) {
	m, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, last := range []string{
		"Can you book me a hotel in Paris for my trip ZFA04Y? I can\x92t wait.",
		"\u0130stanbul is where I land. Can you book me a hotel in Paris for my trip ZFA04Y?", // İ grows when lower-cased
		"\u212a is my initial. Can you book me a hotel in Paris for my trip ZFA04Y?",          // the Kelvin sign shrinks
	} {
		d, err := m.Detect(context.Background(), inceptiontest.AirlineInput(t, last))
		if err != nil {
			t.Fatal(err)
		}
		if !d.Rein || d.ErrorType != inception.TypeUnsupportedDomain {
			t.Fatalf("%q: got %+v, want unsupported_domain", last, d)
		}
		if !strings.Contains(d.Evidence, "Can you book me a hotel in Paris for my trip ZFA04Y") {
			t.Errorf("%q: evidence %q, want the user's sentence as written", last, d.Evidence)
		}
	}
}

func TestLowerOffsetsMapBackToTheUsersText(t *testing.T) {
	for _, text := range []string{"", "plain ascii", "I can\x92t", "\u0130stanbul", "\u212a9", "\xff\xfe", "Été"} {
		lower := strings.ToLower(text)
		off := lowerOffsets(text)
		if len(off) != len(lower)+1 || off[len(lower)] != len(text) {
			t.Fatalf("%q: %d offsets for %d lower-cased bytes", text, len(off), len(lower))
		}
		for j := 1; j < len(off); j++ {
			if off[j] < off[j-1] {
				t.Fatalf("%q: offsets go back at %d: %v", text, j, off)
			}
		}
	}
}
