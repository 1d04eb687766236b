package streams

import (
	"fmt"
	"testing"

	"github.com/reinception/rein/schemas"
)

// Sources are parsed once and then read from a bounded cache; a decode
// through the cache gives sdk-go's event every time, for a source seen
// before and for sources past the cache's bound.
func TestDecodeThroughTheSourceCacheMatchesSDK(t *testing.T) {
	for name, e := range equivCorpus(t) {
		msg, err := sdkEncode(equivSubject, e)
		if err != nil {
			t.Fatal(err)
		}
		if e.SpecVersion() != "1.0" {
			continue // sdk-go reads it
		}
		t.Run(name, func(t *testing.T) {
			for round := range 2 {
				for i := range schemas.MaxHeldSources + 20 {
					h := cloneHeader(msg.Header)
					h.Set("ce-source", fmt.Sprintf("/platform/%d?r=%d#x", i, i%3))
					if !checkDecodeEquivalence(t, equivSubject, h, msg.Data) {
						t.Fatalf("round %d, source %d: the direct reader declined", round, i)
					}
				}
			}
		})
	}
}
